//! FEC-protected message tails for DCQUIC (a combination the papers did not try: DCQUIC's streams with
//! CloudBurst-style forward error correction; see `docs/dcquic.md`, "DCQUIC with FEC-protected tails").
//!
//! QUIC repairs a lost packet once its loss is detected: by the packet threshold (three later packets
//! acknowledged), the time threshold (9/8 RTT after a later packet is acknowledged) or, for the last
//! packets of a burst, only by the probe timeout. The tail of a message is where that is slowest. With
//! `tail_fec`, the sender follows every message with an XOR parity of its tail, carried in QUIC DATAGRAM
//! frames, and a receiver missing one packet's worth of the tail rebuilds it and delivers the message
//! at once; QUIC still retransmits the bytes (the stream is reliable) and the late copy is ignored.
//!
//! The code, in the receiver's terms: the tail is the last `T = min(len, k * C)` bytes of the message,
//! `C` (the chunk) the sender's path MTU and `k` = `tail_fec_packets`. Parity byte `j` is the XOR of the
//! tail bytes whose offset from the tail's start is `j` modulo `C`, so the parity is `min(T, C)` bytes.
//! One QUIC packet carries fewer than `C` stream bytes, so the bytes one lost packet takes (wherever its
//! boundaries fall: the receiver cannot know how quinn cut the stream) lie in a window of at most `C`
//! bytes, all of distinct residues, and each is the parity byte of its residue XOR the present tail
//! bytes of that residue. Any set of missing tail bytes within one window of `C` bytes is recovered;
//! two losses further apart fall back to QUIC's retransmission.
//!
//! The parity of a full chunk is a little larger than one datagram can carry (a DATAGRAM frame has
//! about the overhead of a STREAM frame, plus our header), so it goes in pieces, each a datagram with a
//! [`RepairHeader`]; a missing byte needs only the piece holding its residue.
//!
//! A repair names its own sizes, so the receiver checks them against what its config lets an honest
//! sender use ([`Limits`]) before keeping anything: a peer cannot make a stream hold more than
//! `k` chunks of tail and one chunk of parity ("Limits" in `docs/dcquic.md`).

use super::DcquicConfig;
use crate::engine::MsgId;

/// Bytes of [`RepairHeader`] on the wire.
pub const HEADER: usize = 26;

/// The longest run of application bytes [`payload`] hands out at once.
pub const SPAN: usize = 16 * 1024;

const PERIOD: usize = 251;

/// The application bytes the engine writes: a period-251 permutation pattern shifted per message, so
/// bytes differ by offset and message and a reconstruction can be checked against what was sent.
static PATTERN: [u8; SPAN + PERIOD] = pattern();

const fn pattern() -> [u8; SPAN + PERIOD] {
    let mut p = [0u8; SPAN + PERIOD];
    let mut i = 0;
    while i < p.len() {
        // 157 is odd, so multiplication is a bijection on u8: the 251 values of a period are distinct.
        p[i] = ((i % PERIOD) as u8).wrapping_mul(157).wrapping_add(11);
        i += 1;
    }
    p
}

/// Message `msg`'s bytes `off..off + n` (`n <= SPAN`).
pub fn payload(msg: MsgId, off: u64, n: usize) -> &'static [u8] {
    debug_assert!(n <= SPAN);
    let start = ((off + msg.wrapping_mul(61)) % PERIOD as u64) as usize;
    &PATTERN[start..start + n]
}

/// What each repair datagram names: the stream, the message's length, the protected tail and chunk,
/// and where in the parity its piece goes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RepairHeader {
    pub stream: u64,
    /// The message's length (the stream's final size).
    pub len: u64,
    /// T: the protected tail is bytes `len - tail .. len`.
    pub tail: u32,
    /// C: parity byte j protects the tail bytes at offsets j mod C from the tail's start.
    pub chunk: u16,
    /// Offset of this datagram's piece in the parity (`min(tail, chunk)` bytes).
    pub piece: u32,
}

impl RepairHeader {
    pub fn tail_start(&self) -> u64 {
        self.len - self.tail as u64
    }

    pub fn parity_len(&self) -> usize {
        (self.tail as usize).min(self.chunk as usize)
    }

    pub fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.stream.to_le_bytes());
        out.extend_from_slice(&self.len.to_le_bytes());
        out.extend_from_slice(&self.tail.to_le_bytes());
        out.extend_from_slice(&self.chunk.to_le_bytes());
        out.extend_from_slice(&self.piece.to_le_bytes());
    }

    /// The header and its piece, or `None` for a datagram that is not a well-formed repair.
    pub fn decode(d: &[u8]) -> Option<(RepairHeader, &[u8])> {
        if d.len() < HEADER {
            return None;
        }
        let u64_at = |i: usize| u64::from_le_bytes(d[i..i + 8].try_into().expect("8 bytes"));
        let h = RepairHeader {
            stream: u64_at(0),
            len: u64_at(8),
            tail: u32::from_le_bytes(d[16..20].try_into().expect("4 bytes")),
            chunk: u16::from_le_bytes(d[20..22].try_into().expect("2 bytes")),
            piece: u32::from_le_bytes(d[22..26].try_into().expect("4 bytes")),
        };
        let piece = &d[HEADER..];
        let ok = h.chunk > 0
            && h.tail as u64 <= h.len
            && h.tail > 0
            && h.piece as usize + piece.len() <= h.parity_len();
        ok.then_some((h, piece))
    }
}

/// The tail's length for a message of `len` bytes, `k` chunks of `chunk` bytes.
pub fn tail_len(len: u64, k: u32, chunk: u16) -> u32 {
    len.min(k as u64 * chunk as u64) as u32
}

/// The parity of message `msg`'s tail `tail_start .. tail_start + tail`, into `out`.
pub fn parity(msg: MsgId, tail_start: u64, tail: u32, chunk: u16, out: &mut Vec<u8>) {
    let c = chunk as usize;
    out.clear();
    out.resize((tail as usize).min(c), 0);
    let mut i = 0usize;
    while i < tail as usize {
        // One run: up to the chunk's end, at most SPAN bytes of the pattern.
        let r = i % c;
        let n = (c - r).min(tail as usize - i).min(SPAN);
        for (o, b) in out[r..r + n]
            .iter_mut()
            .zip(payload(msg, tail_start + i as u64, n))
        {
            *o ^= b;
        }
        i += n;
    }
}

/// Inserts `lo..hi` into sorted, disjoint, non-adjacent ranges.
fn insert_range(v: &mut Vec<(u64, u64)>, lo: u64, hi: u64) {
    if lo >= hi {
        return;
    }
    let i = v.partition_point(|r| r.1 < lo);
    let mut j = i;
    let (mut a, mut b) = (lo, hi);
    while j < v.len() && v[j].0 <= hi {
        a = a.min(v[j].0);
        b = b.max(v[j].1);
        j += 1;
    }
    v.splice(i..j, std::iter::once((a, b)));
}

/// Disjoint byte ranges one stream's state tracks (of its data, or of its parity) before it gives up
/// recovery on that stream: a peer sending every other byte would otherwise grow them without end. Far
/// above an honest stream's gaps (one per lost packet of the flow-control window).
pub const MAX_RANGES: usize = 4096;

/// The most one stream's tail FEC may hold, from the receiver's config: the sender's chunk is its path
/// MTU, which QUIC keeps at or below the MPS this end advertised (path MTU discovery is off), and its
/// tail is at most `tail_fec_packets` chunks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    pub max_chunk: u16,
    pub max_tail: u32,
}

impl Limits {
    pub fn new(k: u32, max_chunk: u16) -> Limits {
        Limits {
            max_chunk,
            max_tail: k.saturating_mul(max_chunk as u32),
        }
    }

    /// The limits of an engine with this config (the largest MPS it may choose, whatever the task).
    pub fn of(cfg: &DcquicConfig) -> Limits {
        let m = &cfg.mps;
        let mps = if m.negotiate {
            m.small_task.0.max(m.large_task_mps.0)
        } else {
            m.base.0
        };
        Limits::new(cfg.tail_fec_packets, mps.min(u16::MAX as u64) as u16)
    }

    /// Whether an honest sender with this config could have written `h`.
    pub fn admit(&self, h: &RepairHeader) -> bool {
        h.chunk <= self.max_chunk && h.tail <= self.max_tail
    }

    /// The most [`TailRecv::held_bytes`] can reach: the kept tail, one chunk of parity, and two range
    /// lists of at most [`MAX_RANGES`] entries (twice that in capacity, as a `Vec` grows by doubling).
    pub fn max_held_bytes(&self) -> usize {
        self.max_tail as usize + self.max_chunk as usize + 2 * 2 * MAX_RANGES * 16
    }
}

/// The receive side of one stream under tail FEC: which bytes arrived, the tail's bytes, the parity.
#[derive(Debug)]
pub struct TailRecv {
    limits: Limits,
    /// Too many gaps (a misbehaving peer): everything was dropped and nothing more is kept; QUIC
    /// delivers the stream.
    abandoned: bool,
    /// Byte ranges of the stream received so far (sorted, merged).
    ranges: Vec<(u64, u64)>,
    /// The message's length and the start of the kept window, once known (framing or a repair).
    window: Option<(u64, u64)>,
    /// Tail bytes arrived before the window was known and were not kept: no recovery on this stream.
    window_missed: bool,
    /// Bytes `window.1 .. window.0` as received (zero where missing).
    kept: Vec<u8>,
    header: Option<RepairHeader>,
    parity: Vec<u8>,
    /// Ranges of the parity received.
    pieces: Vec<(u64, u64)>,
}

/// A reconstruction: the missing bytes it filled in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Recovered {
    pub bytes: u64,
}

impl TailRecv {
    pub fn new(limits: Limits) -> TailRecv {
        TailRecv {
            limits,
            abandoned: false,
            ranges: Vec::new(),
            window: None,
            window_missed: false,
            kept: Vec::new(),
            header: None,
            parity: Vec::new(),
            pieces: Vec::new(),
        }
    }

    /// Sets the window of bytes to keep, once the message's length is known. Tail bytes already read
    /// and dropped make this stream's repair useless. A window longer than [`Limits::max_tail`] (or
    /// reversed) is refused, keeping nothing: no honest sender protects more.
    pub fn set_window(&mut self, len: u64, start: u64) {
        if self.window.is_some() || self.window_missed {
            return;
        }
        if start > len || len - start > self.limits.max_tail as u64 {
            return;
        }
        if self.ranges.iter().any(|&(a, b)| a < len && b > start) {
            self.window_missed = true;
            return;
        }
        self.window = Some((len, start));
        self.kept = vec![0; (len - start) as usize];
    }

    pub fn has_window(&self) -> bool {
        self.window.is_some() || self.window_missed
    }

    /// Stream bytes `off..off + data.len()` arrived.
    pub fn add_data(&mut self, off: u64, data: &[u8]) {
        if self.abandoned {
            return;
        }
        let end = off + data.len() as u64;
        insert_range(&mut self.ranges, off, end);
        if self.ranges.len() > MAX_RANGES {
            self.abandon();
            return;
        }
        if let Some((len, start)) = self.window {
            let (a, b) = (off.max(start), end.min(len));
            if a < b {
                self.kept[(a - start) as usize..(b - start) as usize]
                    .copy_from_slice(&data[(a - off) as usize..(b - off) as usize]);
            }
        }
    }

    /// Drops everything kept and stops keeping: this stream recovers nothing.
    fn abandon(&mut self) {
        *self = TailRecv {
            abandoned: true,
            window_missed: true,
            ..TailRecv::new(self.limits)
        };
    }

    /// A repair piece arrived; `false` if it is dropped: it claims more than [`Limits`] allow, it
    /// contradicts an earlier one, or this stream was abandoned.
    pub fn add_repair(&mut self, h: RepairHeader, piece: &[u8]) -> bool {
        if self.abandoned || !self.limits.admit(&h) {
            return false;
        }
        match self.header {
            None => {
                self.header = Some(RepairHeader { piece: 0, ..h });
                self.parity = vec![0; h.parity_len()];
            }
            Some(old) if old != (RepairHeader { piece: 0, ..h }) => return false,
            Some(_) => {}
        }
        let p = h.piece as usize;
        self.parity[p..p + piece.len()].copy_from_slice(piece);
        insert_range(&mut self.pieces, p as u64, (p + piece.len()) as u64);
        if self.pieces.len() > MAX_RANGES {
            self.abandon();
            return false;
        }
        true
    }

    /// Heap bytes this stream's state holds (at most [`Limits::max_held_bytes`]).
    pub fn held_bytes(&self) -> usize {
        let range = std::mem::size_of::<(u64, u64)>();
        self.kept.capacity()
            + self.parity.capacity()
            + (self.ranges.capacity() + self.pieces.capacity()) * range
    }

    /// The repair's header, once one piece arrived.
    pub fn header(&self) -> Option<RepairHeader> {
        self.header
    }

    /// Rebuilds the missing tail bytes of a message of `len` bytes if the parity allows it: everything
    /// before the tail arrived, the missing bytes lie within one chunk-long window, and the parity
    /// pieces of their residues arrived. `scratch` is reused for the parity.
    pub fn try_recover(&mut self, len: u64, scratch: &mut Vec<u8>) -> Option<Recovered> {
        let h = self.header?;
        let (wlen, wstart) = self.window?;
        let ts = h.tail_start();
        if h.len != len || wlen != len || wstart > ts {
            return None;
        }
        // The missing bytes lie in lo..hi: from the end of the prefix received in order to the start
        // of the range holding the message's end (or the end). Everything before the tail arrived.
        let lo = match self.ranges.first() {
            Some(&(0, end)) => end,
            _ => 0,
        };
        if lo < ts || lo >= len {
            return None; // a loss before the tail, or complete (QUIC delivers it)
        }
        let hi = match self.ranges.last() {
            Some(&(start, end)) if end >= len => start,
            _ => len,
        };
        let chunk = h.chunk as u64;
        if hi - lo > chunk {
            return None;
        }
        let missing = |o: u64| !self.ranges.iter().any(|&(a, b)| a <= o && o < b);
        let have_piece = |r: u64| self.pieces.iter().any(|&(a, b)| a <= r && r < b);
        let mut bytes = 0;
        for o in lo..hi {
            if missing(o) {
                if !have_piece((o - ts) % chunk) {
                    return None;
                }
                bytes += 1;
            }
        }
        scratch.clear();
        scratch.extend_from_slice(&self.parity);
        let c = chunk as usize;
        let tail = &mut self.kept[(ts - wstart) as usize..];
        // Missing bytes are zero in `kept`, so XOR-ing the whole tail adds only the present ones.
        for (i, b) in tail.iter().enumerate() {
            scratch[i % c] ^= b;
        }
        for o in lo..hi {
            if missing(o) {
                let i = (o - ts) as usize;
                tail[i] = scratch[i % c];
            }
        }
        insert_range(&mut self.ranges, lo, hi);
        Some(Recovered { bytes })
    }

    /// The kept window (start offset, bytes), for checking a reconstruction.
    pub fn kept(&self) -> Option<(u64, &[u8])> {
        self.window.map(|(_, s)| (s, &self.kept[..]))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Limits = Limits {
        max_chunk: 9000,
        max_tail: 4 * 9000,
    };

    fn msg_bytes(msg: MsgId, off: u64, n: usize) -> Vec<u8> {
        let mut v = Vec::new();
        let mut i = 0;
        while i < n {
            let k = (n - i).min(SPAN);
            v.extend_from_slice(payload(msg, off + i as u64, k));
            i += k;
        }
        v
    }

    #[test]
    fn header_round_trips_and_rejects_bad_pieces() {
        let h = RepairHeader {
            stream: 5,
            len: 20_000,
            tail: 9000,
            chunk: 4500,
            piece: 4000,
        };
        let mut v = Vec::new();
        h.encode(&mut v);
        assert_eq!(v.len(), HEADER);
        v.extend_from_slice(&[1; 500]);
        let (d, p) = RepairHeader::decode(&v).unwrap();
        assert_eq!((d, p.len()), (h, 500));
        v.push(0); // the piece now runs past the parity's 4500 bytes
        assert!(RepairHeader::decode(&v).is_none());
        assert!(RepairHeader::decode(&v[..10]).is_none());
    }

    /// Receives message `msg` of `len` bytes cut into `pkt`-byte packets, dropping `lost`, with the
    /// parity in pieces of `piece` bytes; returns the outcome and whether the tail is right.
    fn run(len: u64, pkt: u64, chunk: u16, k: u32, lost: &[u64], piece: usize) -> (Option<Recovered>, bool) {
        let msg = 6;
        let tail = tail_len(len, k, chunk);
        let ts = len - tail as u64;
        let mut par = Vec::new();
        parity(msg, ts, tail, chunk, &mut par);
        let mut r = TailRecv::new(LIMITS);
        r.set_window(len, ts);
        for (i, off) in (0..len).step_by(pkt as usize).enumerate() {
            if lost.contains(&(i as u64)) {
                continue;
            }
            let n = pkt.min(len - off) as usize;
            r.add_data(off, &msg_bytes(msg, off, n));
        }
        for (j, p) in par.chunks(piece).enumerate() {
            let h = RepairHeader {
                stream: 0,
                len,
                tail,
                chunk,
                piece: (j * piece) as u32,
            };
            assert!(r.add_repair(h, p));
        }
        let out = r.try_recover(len, &mut Vec::new());
        let (s, kept) = r.kept().unwrap();
        (out, kept == &msg_bytes(msg, s, kept.len())[..])
    }

    #[test]
    fn one_lost_packet_anywhere_in_the_tail_is_rebuilt() {
        // 10 packets of 1000 B, chunk 1100 (packets never line up with chunks), tail 4 chunks.
        for lost in 6..10 {
            let (r, ok) = run(10_000, 1000, 1100, 4, &[lost], 700);
            assert_eq!(r, Some(Recovered { bytes: 1000 }), "lost {lost}");
            assert!(ok, "lost {lost}");
        }
        // A short last packet, and a message shorter than one chunk (the parity is a copy).
        assert_eq!(
            run(9_500, 1000, 1100, 4, &[9], 700).0,
            Some(Recovered { bytes: 500 })
        );
        let (r, ok) = run(800, 1000, 1100, 4, &[0], 2000);
        assert_eq!((r, ok), (Some(Recovered { bytes: 800 }), true));
    }

    #[test]
    fn losses_outside_the_tail_or_two_in_it_are_left_to_quic() {
        // The tail is bytes 5600..10000; packet 5 (5000..6000) is partly before it, packet 2 wholly.
        assert_eq!(run(10_000, 1000, 1100, 4, &[5], 700).0, None);
        assert_eq!(run(10_000, 1000, 1100, 4, &[2], 700).0, None);
        assert_eq!(run(10_000, 1000, 1100, 4, &[7, 9], 700).0, None);
        // Nothing missing: nothing to do.
        assert_eq!(run(10_000, 1000, 1100, 4, &[], 700).0, None);
    }

    #[test]
    fn a_missing_parity_piece_only_matters_for_its_residues() {
        let len = 10_000u64;
        let (chunk, k, msg) = (1100u16, 4u32, 6u64);
        let tail = tail_len(len, k, chunk);
        let ts = len - tail as u64;
        let mut par = Vec::new();
        parity(msg, ts, tail, chunk, &mut par);
        let attempt = |lost: u64| {
            let mut r = TailRecv::new(LIMITS);
            r.set_window(len, ts);
            for off in (0..len).step_by(1000) {
                if off / 1000 != lost {
                    r.add_data(off, &msg_bytes(msg, off, 1000));
                }
            }
            // Only the first piece (residues 0..600) arrives.
            let h = RepairHeader {
                stream: 0,
                len,
                tail,
                chunk,
                piece: 0,
            };
            r.add_repair(h, &par[..600]);
            r.try_recover(len, &mut Vec::new())
        };
        // ts = 5600. Packet 9 (9000..10000) has residues (3400..4400) % 1100 = 100..1100: needs piece 2.
        assert_eq!(attempt(9), None);
        // A 100 B loss at residues 0..100 needs only the first piece.
        let mut r = TailRecv::new(LIMITS);
        r.set_window(len, ts);
        r.add_data(0, &msg_bytes(msg, 0, 5600));
        r.add_data(5700, &msg_bytes(msg, 5700, 4300));
        r.add_repair(
            RepairHeader {
                stream: 0,
                len,
                tail,
                chunk,
                piece: 0,
            },
            &par[..600],
        );
        assert_eq!(
            r.try_recover(len, &mut Vec::new()),
            Some(Recovered { bytes: 100 })
        );
        let (s, kept) = r.kept().unwrap();
        assert_eq!(kept, &msg_bytes(msg, s, kept.len())[..]);
    }

    #[test]
    fn tail_bytes_read_before_the_window_was_known_disable_recovery() {
        let mut r = TailRecv::new(LIMITS);
        r.add_data(9000, &[0; 1000]);
        r.set_window(10_000, 5600);
        assert!(r.kept().is_none() && r.has_window());
    }

    proptest::proptest! {
        /// Whatever the packet cut and the losses: a rebuild gives the bytes sent, and a message that
        /// lost one packet (no longer than a chunk) inside its tail is always rebuilt.
        #[test]
        fn rebuilt_bytes_are_the_sent_ones(
            len in 1u64..40_000,
            chunk in 200u16..3000,
            k in 1u32..6,
            pkt_frac in 0.3f64..1.0,
            lost in proptest::collection::vec(0u64..60, 0..3),
            piece in 100usize..4000,
        ) {
            let pkt = ((chunk as f64 * pkt_frac) as u64).max(1);
            let (r, ok) = run(len, pkt, chunk, k, &lost, piece);
            if r.is_some() {
                proptest::prop_assert!(ok);
            }
            let ts = len - tail_len(len, k, chunk) as u64;
            let mut lost_in = lost.clone();
            lost_in.sort_unstable();
            lost_in.dedup();
            lost_in.retain(|&i| i * pkt < len);
            if lost_in.len() == 1 && lost_in[0] * pkt >= ts {
                proptest::prop_assert!(r.is_some() && ok);
            }
        }
    }

    /// The fuzzer's find: a 36-byte datagram claiming a 1.6 GB tail made the stream allocate it.
    #[test]
    fn a_repair_claiming_more_than_the_config_allows_is_dropped() {
        let mut d = Vec::new();
        let h = RepairHeader {
            stream: 0,
            len: 1_677_721_600,
            tail: 1_677_721_600,
            chunk: 1200,
            piece: 0,
        };
        h.encode(&mut d);
        d.extend_from_slice(&[7; 10]);
        assert_eq!(d.len(), 36);
        let (h, piece) = RepairHeader::decode(&d).unwrap();
        let mut r = TailRecv::new(LIMITS);
        assert!(!r.add_repair(h, piece));
        r.set_window(h.len, h.tail_start());
        assert!(!r.has_window() && r.header().is_none());
        assert_eq!(r.held_bytes(), 0);
        // A chunk above the MPS is refused too; the largest honest repair is kept.
        let over = RepairHeader {
            tail: 9001,
            chunk: 9001,
            len: 9001,
            ..h
        };
        assert!(!r.add_repair(over, &[0; 10]));
        let max = RepairHeader {
            tail: 36_000,
            chunk: 9000,
            len: 50_000,
            ..h
        };
        assert!(r.add_repair(max, &[0; 10]));
        r.set_window(max.len, max.tail_start());
        assert!(r.has_window());
        assert!(r.held_bytes() <= LIMITS.max_held_bytes());
    }

    #[test]
    fn a_stream_with_too_many_gaps_is_abandoned() {
        let mut r = TailRecv::new(LIMITS);
        r.set_window(100_000, 64_000);
        for i in 0..MAX_RANGES as u64 {
            r.add_data(2 * i, &[1]);
        }
        assert!(r.kept().is_some());
        r.add_data(2 * MAX_RANGES as u64, &[1]);
        assert!(r.kept().is_none() && r.has_window());
        assert_eq!(r.held_bytes(), 0);
        r.add_data(0, &[0; 100_000]);
        assert_eq!(r.held_bytes(), 0);
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(256))]

        /// Arbitrary repairs, stream data and framing from a misbehaving peer: never a panic, and
        /// never more held than the limits allow (`fuzz/fuzz_targets/dcquic_tailfec.rs` does the same
        /// under libFuzzer, on raw datagrams).
        #[test]
        fn arbitrary_input_stays_within_the_limits(
            k in 1u32..=64,
            mps in 1200u16..=65_527,
            ops in proptest::collection::vec(
                (0u8..4, 0u64..1 << 33, proptest::num::u32::ANY, proptest::num::u16::ANY, 0usize..70_000),
                0..48,
            ),
        ) {
            let limits = Limits::new(k, mps);
            let mut r = TailRecv::new(limits);
            let mut scratch = Vec::new();
            for (op, n, tail, chunk, m) in ops {
                match op {
                    0 => {
                        let h = RepairHeader { stream: 0, len: n, tail, chunk, piece: (m / 2) as u32 };
                        let mut d = Vec::new();
                        h.encode(&mut d);
                        d.resize(HEADER + m % 1500, 0x5a);
                        if let Some((h, piece)) = RepairHeader::decode(&d) {
                            if r.add_repair(h, piece) && !r.has_window() {
                                r.set_window(h.len, h.tail_start());
                            }
                        }
                    }
                    1 => r.add_data(n, &vec![1; m % 3000]),
                    2 => r.set_window(n, n.saturating_sub(tail as u64)),
                    _ => {
                        let _ = r.try_recover(n, &mut scratch);
                    }
                }
                proptest::prop_assert!(r.held_bytes() <= limits.max_held_bytes());
            }
        }
    }

    #[test]
    fn ranges_merge() {
        let mut v = Vec::new();
        for (a, b) in [(10, 20), (30, 40), (0, 5), (20, 30), (5, 10), (50, 60), (45, 55)] {
            insert_range(&mut v, a, b);
        }
        assert_eq!(v, vec![(0, 40), (45, 60)]);
    }
}
