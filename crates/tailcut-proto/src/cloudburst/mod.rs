//! CloudBurst (Sec. III): multipath, rateless-coded message delivery with no ACKs, no congestion
//! control and no retransmission timer. See `docs/cloudburst.md`.
//!
//! One [`CloudBurstEndpoint`] is one end of a messaging association; it sends (Algorithm 1) and
//! receives (Sec. III-B "Receiver operations") at once, as request/response needs both directions.
//! By default the endpoint carries no symbol bytes (simulation): the packet's out-of-band payload holds
//! the 12-byte header, LT decodes coefficient vectors only (the same elimination as the byte codec,
//! over [`crate::fec::NoBytes`]) and RaptorQ decodes tiny synthetic symbols (see `code.rs`). With
//! `carry_bytes`, every coded packet carries its real symbol after the header, as on a socket:
//! [`Engine::send_bytes`] sends bytes and [`Engine::take_bytes`] returns them.
//! With `multi_block` (the default; our extension) a message of any size is cut into blocks of at
//! most 64 source packets, each coded, decoded and STOPped as the paper's message, a window of
//! them at once sharing the message's rate (`docs/cloudburst.md`, "Messages of any size").

mod assembly;
mod code;
mod config;
pub mod header;

pub use code::{synthetic_message, SIM_RAPTORQ_SYMBOL_BYTES};
pub use config::{CloudBurstConfig, Codec, PathMode, MAX_BLOCKS};
pub use header::{
    Block, Header as CbHeader, HeaderError, Kind, Layout, BLOCK_HEADER_BYTES, HEADER_BYTES, MAX_ESI,
};

use crate::config_error::ConfigError;
use crate::engine::{AppEvent, Engine, MessageStats, MsgId, Outgoing};
use crate::packet::{FiveTuple, Header, Packet, Proto, Route};
use crate::rng::{mix64, Rng};
use crate::time::{Dur, Time};
use assembly::{Assembled, Assemblies};
use code::{symbol_len, InCode, Name, OutCode, Outcome};
use rand::Rng as _;
use std::collections::{BTreeMap, VecDeque};
use std::ops::AddAssign;

/// Totals over the endpoint's life.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    pub messages_acked: u64,
    pub messages_failed: u64,
    /// Coded packets sent for acknowledged messages, and their source packets: the coding rate of
    /// Fig. 14 is their ratio.
    pub acked_coded_packets: u64,
    pub acked_source_packets: u64,
    pub coded_packets_sent: u64,
    pub stops_sent: u64,
    pub messages_decoded: u64,
    /// Sum and maximum of decode time (first coded packet to decode).
    pub decode_time_total: Dur,
    pub decode_time_max: Dur,
    pub decoders_expired: u64,
    pub decoders_evicted: u64,
    /// Packets whose header did not parse or did not fit the configuration.
    pub malformed: u64,
    /// Simulated RaptorQ messages decoded to bytes other than the sender's (must stay 0).
    pub corrupt_decodes: u64,
    /// Blocks decoded (a single-block message is one block).
    pub blocks_decoded: u64,
    /// Multi-block messages dropped at the receiver, idle past `decoder_timeout` with blocks
    /// missing.
    pub assemblies_expired: u64,
    /// Messages dropped at the receiver to stay within `max_held_bytes`.
    pub held_dropped: u64,
}

impl Counters {
    /// Coded packets sent over source packets, for acknowledged messages (Fig. 14).
    pub fn coding_rate(&self) -> f64 {
        self.acked_coded_packets as f64 / self.acked_source_packets.max(1) as f64
    }

    /// Takes `other`'s totals in, as if one endpoint had counted both: every count and the decode
    /// time summed, the longest decode time the longer. `other` is taken apart field by field so
    /// that a new field does not compile until it is merged here too.
    pub fn merge(&mut self, other: &Counters) {
        let Counters {
            messages_acked,
            messages_failed,
            acked_coded_packets,
            acked_source_packets,
            coded_packets_sent,
            stops_sent,
            messages_decoded,
            decode_time_total,
            decode_time_max,
            decoders_expired,
            decoders_evicted,
            malformed,
            corrupt_decodes,
            blocks_decoded,
            assemblies_expired,
            held_dropped,
        } = *other;
        self.messages_acked += messages_acked;
        self.messages_failed += messages_failed;
        self.acked_coded_packets += acked_coded_packets;
        self.acked_source_packets += acked_source_packets;
        self.coded_packets_sent += coded_packets_sent;
        self.stops_sent += stops_sent;
        self.messages_decoded += messages_decoded;
        self.decode_time_total = self.decode_time_total + decode_time_total;
        self.decode_time_max = self.decode_time_max.max(decode_time_max);
        self.decoders_expired += decoders_expired;
        self.decoders_evicted += decoders_evicted;
        self.malformed += malformed;
        self.corrupt_decodes += corrupt_decodes;
        self.blocks_decoded += blocks_decoded;
        self.assemblies_expired += assemblies_expired;
        self.held_dropped += held_dropped;
    }
}

/// Entry counts of an endpoint's tables (see [`CloudBurstEndpoint::table_sizes`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TableSizes {
    pub sending: usize,
    pub decoders: usize,
    pub finished: usize,
    pub expected: usize,
    pub untaken: usize,
    pub stops_queued: usize,
    /// Multi-block messages partly received.
    pub assemblies: usize,
}

/// Several endpoints' tables as one: each count summed. `other` is taken apart field by field so
/// that a new field does not compile until it is summed here too.
impl AddAssign for TableSizes {
    fn add_assign(&mut self, other: TableSizes) {
        let TableSizes {
            sending,
            decoders,
            finished,
            expected,
            untaken,
            stops_queued,
            assemblies,
        } = other;
        self.sending += sending;
        self.decoders += decoders;
        self.finished += finished;
        self.expected += expected;
        self.untaken += untaken;
        self.stops_queued += stops_queued;
        self.assemblies += assemblies;
    }
}

/// A block being coded: the paper's message.
#[derive(Debug)]
struct OutBlock {
    index: u16,
    len_bytes: u32,
    k: u32,
    code: OutCode,
    next_index: u64,
    sent_packets: u32,
}

/// A message being sent: its blocks in order, at most `block_window` coded at once.
#[derive(Debug)]
struct OutMsg {
    msg: MsgId,
    wire_id: u8,
    len_bytes: u64,
    seed: u64,
    /// Index of the last block.
    last_block: u16,
    /// The next block to start.
    next_block: u32,
    active: Vec<OutBlock>,
    /// The active block the next packet comes from (round-robin).
    next_active: usize,
    /// The message's bytes, kept for its later blocks (`carry_bytes`, more than one block).
    data: Option<Vec<u8>>,
    /// Packets still to send in the current round.
    round_left: u32,
    next_round: Time,
    next_path: u32,
    /// The path the next round starts on. Rounds start one path further each time, from a
    /// per-message random path: a round leaves back to back, so when the host queue (or any queue
    /// the burst meets) has room for only its first packet, a fixed start would put nearly every
    /// surviving packet of every message on path 0 (docs/cloudburst.md, "A degraded path").
    round_path: u32,
    /// Over all its blocks, and the source packets of the blocks STOPped.
    sent_packets: u64,
    stopped_source_packets: u64,
    /// The message's start or its latest block STOP, from which `deadline` is armed.
    progress: Time,
    /// t of Algorithm 1: the message fails if no STOP of any of its blocks came by then ([`arm`]).
    deadline: Time,
    /// How far the host's own delay moved `deadline` since it was armed (`exclude_host_delay`), at
    /// most [`CloudBurstConfig::host_delay_allowance`].
    extended: Dur,
}

impl OutMsg {
    fn deadline(&self) -> Time {
        self.deadline
    }
}

/// A block being received.
#[derive(Debug)]
struct InMsg {
    packets: u8,
    message_bytes: u32,
    last_block: u16,
    dec: InCode,
    first: Time,
    last: Time,
}

/// A block already decoded: further packets of it are answered with STOP.
#[derive(Debug)]
struct Done {
    packets: u8,
    message_bytes: u32,
    last_block: u16,
    last: Time,
    /// When its latest STOP was queued (`stop_repeat_gap`).
    stopped: Time,
}

/// Receiver tables are keyed by wire id and block index.
type BlockKey = (u8, u16);

pub struct CloudBurstEndpoint {
    cfg: CloudBurstConfig,
    /// This end's outgoing tuple (to the peer).
    tuple: FiveTuple,
    seed: u64,
    round_gap: Dur,
    out: Vec<OutMsg>,
    cursor: usize,
    stops: VecDeque<CbHeader>,
    decoders: BTreeMap<BlockKey, InMsg>,
    done: BTreeMap<BlockKey, Done>,
    assemblies: Assemblies,
    /// Wire id -> the application's id, from `expect_message`.
    expected: BTreeMap<u8, MsgId>,
    events: VecDeque<AppEvent>,
    counters: Counters,
    /// Decoded message bytes (`carry_bytes`) not yet taken, oldest first; at most `max_decoders`
    /// messages, and within `max_held_bytes` with the assemblies' bytes.
    received: VecDeque<(MsgId, Vec<u8>)>,
    received_bytes: u64,
    /// The host's delay so far, as the driver reported it (`note_host_delay`).
    host_delay: Dur,
}

impl CloudBurstEndpoint {
    /// `tuple` is this end's outgoing 5-tuple. The error names the configuration field it rejects.
    pub fn new(
        cfg: CloudBurstConfig,
        tuple: FiveTuple,
        mut rng: Rng,
    ) -> Result<CloudBurstEndpoint, ConfigError> {
        cfg.validate()?;
        Ok(CloudBurstEndpoint {
            round_gap: cfg.round_gap(),
            cfg,
            tuple,
            seed: rng.random(),
            out: Vec::new(),
            cursor: 0,
            stops: VecDeque::new(),
            decoders: BTreeMap::new(),
            done: BTreeMap::new(),
            assemblies: Assemblies::default(),
            expected: BTreeMap::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            received: VecDeque::new(),
            received_bytes: 0,
            host_delay: Dur::ZERO,
        })
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn config(&self) -> &CloudBurstConfig {
        &self.cfg
    }

    /// Entries in the endpoint's tables, for drivers that must show their memory stays bounded under
    /// any peer input (every table is capped: decoders and untaken messages by `max_decoders`,
    /// finished blocks by [`Self::max_done`], assemblies by the 256 wire ids, the sending side by
    /// what the application sends).
    pub fn table_sizes(&self) -> TableSizes {
        TableSizes {
            sending: self.out.len(),
            decoders: self.decoders.len(),
            finished: self.done.len(),
            expected: self.expected.len(),
            untaken: self.received.len(),
            stops_queued: self.stops.len(),
            assemblies: self.assemblies.len(),
        }
    }

    /// Bytes the receiver holds for the application: partly received multi-block messages and
    /// decoded messages not yet taken (`carry_bytes`); at most `max_held_bytes`.
    pub fn held_bytes(&self) -> u64 {
        self.assemblies.held_bytes() + self.received_bytes
    }

    /// When message `msg` last made progress at this end: as sent, its start or its latest block
    /// STOP (what re-arms its transmission timeout); as expected (`expect_message`), the latest
    /// packet of any of its blocks. `None` if this end holds nothing of it. A driver's own timeout
    /// counts from this, so that a long multi-block message fails when it stalls, not because it
    /// is long.
    pub fn last_progress(&self, msg: MsgId) -> Option<Time> {
        let sent = self.out.iter().find(|m| m.msg == msg).map(|m| m.progress);
        let id = msg as u8;
        let received = (self.expected.get(&id) == Some(&msg)).then(|| {
            let blocks = (id, 0)..=(id, u16::MAX);
            self.decoders
                .range(blocks.clone())
                .map(|(_, d)| d.last)
                .chain(self.done.range(blocks).map(|(_, d)| d.last))
                .chain(self.assemblies.last_heard(id))
                .max()
        });
        [sent, received.flatten()].into_iter().flatten().max()
    }

    /// Most finished blocks remembered (to repeat their STOP); the least recently active is
    /// forgotten beyond it.
    pub fn max_done(&self) -> usize {
        64 * self.cfg.max_decoders as usize
    }

    /// Algorithm 1 lines 1-3: refuse messages too large (over one block without `multi_block`, as
    /// the paper), start the first blocks, each arming its transmission timeout t.
    fn start(&mut self, now: Time, msg: MsgId, len_bytes: u64, data: Option<&[u8]>) {
        if len_bytes > self.cfg.max_message_bytes() {
            self.counters.messages_failed += 1;
            self.events.push_back(AppEvent::MessageFailed {
                msg,
                stats: MessageStats::default(),
            });
            return;
        }
        let blocks = self.cfg.blocks_of(len_bytes);
        let seed = mix64(self.seed ^ mix64(msg));
        let data = data.filter(|_| self.cfg.carry_bytes);
        let mut m = OutMsg {
            msg,
            wire_id: msg as u8,
            len_bytes,
            seed,
            last_block: (blocks - 1) as u16,
            next_block: 0,
            active: Vec::new(),
            next_active: 0,
            data: None,
            round_left: 0,
            next_round: now,
            next_path: 0,
            round_path: (seed % u64::from(self.cfg.paths)) as u32,
            sent_packets: 0,
            stopped_source_packets: 0,
            progress: now,
            deadline: now,
            extended: Dur::ZERO,
        };
        let window = (self.cfg.block_window as u64).min(blocks) as u32;
        for _ in 0..window {
            start_block(&self.cfg, &mut m, data);
        }
        arm(&self.cfg, self.round_gap, &mut m, now);
        if blocks > 1 {
            m.data = data.map(<[u8]>::to_vec);
        }
        self.out.push(m);
    }

    fn stats_of(&self, m: &OutMsg) -> MessageStats {
        let sent_bytes = m.sent_packets * self.cfg.symbol_bytes as u64;
        MessageStats {
            sent_bytes,
            redundant_bytes: sent_bytes.saturating_sub(m.len_bytes),
            ..MessageStats::default()
        }
    }

    /// Explicit path label or ECMP source port for the `i`-th packet of a round.
    fn route(&self, i: u32) -> (Route, u16) {
        match self.cfg.path_mode {
            PathMode::Explicit => (Route::Path(i), self.tuple.src_port),
            PathMode::Ecmp => (Route::Ecmp, self.tuple.src_port.wrapping_add(i as u16)),
        }
    }

    fn packet(&self, i: u32, payload_len: u32) -> Packet {
        let (route, src_port) = self.route(i);
        Packet {
            tuple: FiveTuple {
                src_port,
                proto: Proto::Udp,
                ..self.tuple
            },
            size_bytes: self.cfg.header_bytes + payload_len,
            class: self.cfg.class,
            route,
            header: Header::Datagram { payload_len },
            ..Packet::default()
        }
    }

    /// Algorithm 1 line 7-8: one coded packet of the next message with a round under way,
    /// round-robin over messages so concurrent messages interleave.
    fn next_coded(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        let n = self.out.len();
        let quantum = self.cfg.pacing_quantum;
        for j in 0..n {
            let i = (self.cursor + j) % n;
            let gap = self.round_gap;
            let paths = self.cfg.paths;
            let m = &mut self.out[i];
            if m.deadline() <= now {
                continue;
            }
            if m.round_left == 0 && m.next_round <= now {
                // Line 5: rounds start NUM_PATHS x PKT_SIZE / (r x LINK_CAP) apart. A round at most
                // `pacing_quantum` late keeps the schedule (the rounds due meanwhile follow it at
                // once); a later one restarts it from now, so a stalled sender does not catch up.
                m.round_left = paths;
                m.next_round = if now.saturating_sub(m.next_round) <= quantum {
                    m.next_round + gap
                } else {
                    now + gap
                };
                m.next_path = m.round_path;
                m.round_path = (m.round_path + 1) % paths;
            }
            if m.round_left == 0 {
                continue;
            }
            m.round_left -= 1;
            let path = m.next_path;
            m.next_path = (m.next_path + 1) % paths;
            let j = m.next_active % m.active.len();
            m.next_active = j + 1;
            let b = &mut m.active[j];
            // The header goes first; its name is known only once the symbol is written after it.
            let layout = self.cfg.layout();
            let at = payload.len();
            payload.resize(at + layout.header_bytes(), 0);
            let name = b.code.next(b.next_index, payload);
            b.next_index += 1;
            b.sent_packets += 1;
            m.sent_packets += 1;
            let h = CbHeader {
                packets: b.k as u8,
                message_bytes: b.len_bytes,
                msg_id: m.wire_id,
                kind: match name {
                    Name::Set(set) => Kind::Coded { set },
                    Name::Esi(esi) => Kind::Symbol { esi },
                },
                block: Block {
                    index: b.index,
                    last: m.last_block,
                },
            };
            self.cursor = (i + 1) % n;
            self.counters.coded_packets_sent += 1;
            h.emit(layout, &mut payload[at..])
                .expect("header matches the layout");
            return Some(self.packet(path, self.cfg.symbol_bytes));
        }
        None
    }

    fn fail_expired(&mut self, now: Time) {
        let mut i = 0;
        while i < self.out.len() {
            if self.out[i].deadline() <= now {
                let m = self.out.remove(i);
                // The transmission timeout fired: the flow's records count it as a timeout.
                let stats = MessageStats {
                    timeouts: 1,
                    ..self.stats_of(&m)
                };
                self.counters.messages_failed += 1;
                self.events
                    .push_back(AppEvent::MessageFailed { msg: m.msg, stats });
            } else {
                i += 1;
            }
        }
        if self.cursor >= self.out.len() {
            self.cursor = 0;
        }
    }

    fn expire_decoders(&mut self, now: Time) {
        let t = self.cfg.decoder_timeout;
        let before = self.decoders.len();
        self.decoders.retain(|_, d| d.last + t > now);
        self.counters.decoders_expired += (before - self.decoders.len()) as u64;
        self.done.retain(|_, d| d.last + t > now);
        self.counters.assemblies_expired += self.assemblies.expire(now, self.assembly_timeout()) as u64;
    }

    /// How long an assembly is kept without a packet of its message: `decoder_timeout`, but never
    /// less than twice t. Its blocks were STOPped as they decoded, so a sender that is still at the
    /// message (a descheduled sender, or one whose packets were all lost for a while, which gives the
    /// message up only t, plus its window's share, after its last STOP) will not send them again:
    /// dropping the assembly before then would leave the message acknowledged but never delivered,
    /// as a `decoder_timeout` of 5 ms did to calls on sockets (t = 20 ms there).
    fn assembly_timeout(&self) -> Dur {
        self.cfg
            .decoder_timeout
            .max(Dur(self.cfg.transmission_timeout.0.saturating_mul(2)))
    }

    /// The host's own delay so far, `total` (a driver's lateness past its timer deadlines, which
    /// only grows). With `exclude_host_delay` the delay added since the last note moves every
    /// message's t on by as much: time the sender could not run is not time its receiver failed
    /// to STOP in. By at most t since the message's start or latest STOP, so an old message is
    /// still sent for a bounded time after its last STOP (the peer's id quarantine counts on it).
    pub fn note_host_delay(&mut self, total: Dur) {
        let extra = total - self.host_delay;
        self.host_delay = self.host_delay.max(total);
        let cap = self.cfg.host_delay_allowance();
        if extra > Dur::ZERO {
            for m in &mut self.out {
                let add = extra.min(cap - m.extended);
                m.extended = m.extended + add;
                m.deadline += add;
            }
        }
    }

    /// A block's STOP; the message is acknowledged once every block is STOPped.
    fn on_stop(&mut self, now: Time, h: &CbHeader) {
        let found = self.out.iter().enumerate().find_map(|(i, m)| {
            if m.wire_id != h.msg_id || m.last_block != h.block.last {
                return None;
            }
            let j = m.active.iter().position(|b| {
                b.index == h.block.index && b.len_bytes == h.message_bytes && b.k == h.packets as u32
            })?;
            Some((i, j))
        });
        let Some((i, j)) = found else {
            return; // A repeated STOP of a block already finished.
        };
        let m = &mut self.out[i];
        let block = m.active.remove(j);
        m.stopped_source_packets += block.k as u64;
        if m.next_active > j {
            m.next_active -= 1;
        }
        if m.next_block <= m.last_block as u32 {
            let data = m.data.take();
            start_block(&self.cfg, m, data.as_deref());
            m.data = data;
            arm(&self.cfg, self.round_gap, m, now);
            return;
        }
        if !m.active.is_empty() {
            arm(&self.cfg, self.round_gap, m, now);
            return;
        }
        let m = self.out.remove(i);
        if self.cursor >= self.out.len() {
            self.cursor = 0;
        }
        let stats = self.stats_of(&m);
        self.counters.messages_acked += 1;
        self.counters.acked_coded_packets += m.sent_packets;
        self.counters.acked_source_packets += m.stopped_source_packets;
        self.events
            .push_back(AppEvent::MessageAcked { msg: m.msg, stats });
    }

    fn queue_stop(&mut self, h: &CbHeader) {
        self.stops.push_back(CbHeader {
            kind: Kind::Stop,
            ..*h
        });
    }

    /// Sec. III-B "Receiver operations", per block.
    fn on_coded(&mut self, now: Time, h: &CbHeader, name: Name, symbol: &[u8]) {
        let want = symbol_len(self.cfg.codec, self.cfg.carry_bytes, self.cfg.symbol_bytes);
        if h.check_size(self.cfg.symbol_bytes).is_err() || symbol.len() != want {
            self.counters.malformed += 1;
            return;
        }
        let key = (h.msg_id, h.block.index);
        // The sender is still at this message: its assembly is not idle, even while no block of it
        // decodes (under contention a window of blocks can take longer than `decoder_timeout`).
        self.assemblies.touch(now, h);
        if let Some(d) = self.done.get_mut(&key) {
            if d.packets == h.packets && d.message_bytes == h.message_bytes && d.last_block == h.block.last {
                // The STOP was lost (or is in flight): STOP again for every further packet, or
                // once per `stop_repeat_gap`. The packet itself is dropped without decoding.
                d.last = now;
                if now.saturating_sub(d.stopped) >= self.cfg.stop_repeat_gap {
                    d.stopped = now;
                    self.queue_stop(h);
                }
                return;
            }
        }
        let fresh = match self.decoders.get(&key) {
            Some(d) => {
                d.packets != h.packets || d.message_bytes != h.message_bytes || d.last_block != h.block.last
            }
            None => true,
        };
        if fresh {
            if self.decoders.len() >= self.cfg.max_decoders as usize
                && !self.decoders.contains_key(&key)
                && evict_least_recent(&mut self.decoders, |d| d.last)
            {
                self.counters.decoders_evicted += 1;
            }
            self.decoders.insert(
                key,
                InMsg {
                    packets: h.packets,
                    message_bytes: h.message_bytes,
                    last_block: h.block.last,
                    dec: InCode::new(
                        self.cfg.codec,
                        self.cfg.carry_bytes,
                        self.cfg.symbol_bytes,
                        h.packets as u32,
                        h.message_bytes,
                    ),
                    first: now,
                    last: now,
                },
            );
        }
        let d = self.decoders.get_mut(&key).expect("inserted");
        d.last = now;
        let carry = self.cfg.carry_bytes;
        match d
            .dec
            .add(name, symbol, h.message_bytes, h.msg_id, h.block.index, carry)
        {
            Outcome::Decoded(data) => {
                let first = d.first;
                self.decoders.remove(&key);
                let took = now.saturating_sub(first);
                self.counters.blocks_decoded += 1;
                self.counters.decode_time_total = self.counters.decode_time_total + took;
                self.counters.decode_time_max = self.counters.decode_time_max.max(took);
                self.remember_done(key, h, now);
                self.queue_stop(h);
                self.on_block(now, h, data);
            }
            Outcome::Invalid => self.counters.malformed += 1,
            Outcome::Corrupt => {
                // Never expected; dropping the decoder lets the sender's next packets retry.
                self.counters.corrupt_decodes += 1;
                self.decoders.remove(&key);
            }
            Outcome::Pending => {}
        }
    }

    fn remember_done(&mut self, key: BlockKey, h: &CbHeader, now: Time) {
        if self.done.len() >= self.max_done() && !self.done.contains_key(&key) {
            evict_least_recent(&mut self.done, |d| d.last);
        }
        self.done.insert(
            key,
            Done {
                packets: h.packets,
                message_bytes: h.message_bytes,
                last_block: h.block.last,
                last: now,
                stopped: now,
            },
        );
    }

    /// A decoded block: the message is delivered with its only block, or once the assembly of its
    /// blocks is complete.
    fn on_block(&mut self, now: Time, h: &CbHeader, data: Option<Vec<u8>>) {
        let data = if h.block.last == 0 {
            Some(data)
        } else {
            let limit = self.cfg.max_held_bytes.saturating_sub(self.received_bytes);
            match self.assemblies.add(now, h, data, limit) {
                Assembled::Pending { dropped } => {
                    self.counters.held_dropped += dropped as u64;
                    None
                }
                Assembled::Complete(data) => Some(data),
            }
        };
        let Some(data) = data else {
            return;
        };
        self.counters.messages_decoded += 1;
        let msg = self.expected.remove(&h.msg_id).unwrap_or(h.msg_id as MsgId);
        if let Some(data) = data {
            self.hold(msg, data);
        }
        self.events.push_back(AppEvent::MessageReceived { msg });
    }

    /// The application learnt that the peer decoded message `msg` (its response came): stop coding
    /// it, as its STOP would, and count it acknowledged. Returns its final counters, or `None` if it
    /// is no longer being sent (STOPped, failed or unknown); no event follows either way.
    pub fn acknowledge(&mut self, _now: Time, msg: MsgId) -> Option<MessageStats> {
        let i = self.out.iter().position(|m| m.msg == msg)?;
        let m = self.out.remove(i);
        if self.cursor >= self.out.len() {
            self.cursor = 0;
        }
        let stats = self.stats_of(&m);
        let unstopped: u64 = m.active.iter().map(|b| u64::from(b.k)).sum();
        self.counters.messages_acked += 1;
        self.counters.acked_coded_packets += m.sent_packets;
        self.counters.acked_source_packets += m.stopped_source_packets + unstopped;
        Some(stats)
    }

    /// Keeps a decoded message for `take_bytes`, dropping the oldest beyond `max_decoders` messages
    /// or `max_held_bytes`.
    fn hold(&mut self, msg: MsgId, data: Vec<u8>) {
        let len = data.len() as u64;
        while !self.received.is_empty()
            && (self.received.len() >= self.cfg.max_decoders as usize
                || self.held_bytes() + len > self.cfg.max_held_bytes)
        {
            if let Some((_, d)) = self.received.pop_front() {
                self.received_bytes -= d.len() as u64;
            }
        }
        if self.held_bytes() + len > self.cfg.max_held_bytes {
            self.counters.held_dropped += 1;
            return;
        }
        self.received_bytes += len;
        self.received.push_back((msg, data));
    }
}

impl Engine for CloudBurstEndpoint {
    /// With `carry_bytes`, the message's bytes are zeros (use [`Engine::send_bytes`]).
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        if self.cfg.carry_bytes && len_bytes <= self.cfg.max_message_bytes() {
            let zeros = vec![0u8; len_bytes as usize];
            self.start(now, msg, len_bytes, Some(&zeros));
        } else {
            self.start(now, msg, len_bytes, None);
        }
    }

    /// Sends `data` as message `msg` (with `carry_bytes`; otherwise only its length counts). The
    /// wire has no requests: every kind travels as a message.
    fn send_bytes(&mut self, now: Time, _how: Outgoing, msg: MsgId, data: &[u8]) {
        self.start(now, msg, data.len() as u64, Some(data));
    }

    /// The bytes of a received message (with `carry_bytes`), once: the endpoint keeps the last
    /// `max_decoders` untaken messages.
    fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        let i = self.received.iter().position(|(m, _)| *m == msg)?;
        let (_, d) = self.received.remove(i)?;
        self.received_bytes -= d.len() as u64;
        Some(d)
    }

    /// Maps the 8-bit wire id back to the application's id, and forgets an older finished message
    /// with the same wire id.
    fn expect_message(&mut self, msg: MsgId, _len_bytes: u64) {
        let id = msg as u8;
        self.expected.insert(id, msg);
        let old: Vec<BlockKey> = self
            .done
            .range((id, 0)..=(id, u16::MAX))
            .map(|(k, _)| *k)
            .collect();
        for k in old {
            self.done.remove(&k);
        }
        self.assemblies.forget(id);
    }

    fn handle_packet(&mut self, now: Time, _pkt: &Packet, payload: &[u8]) {
        let h = match CbHeader::parse(self.cfg.layout(), payload) {
            Ok(h) => h,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        let symbol = &payload[self.cfg.layout().header_bytes()..];
        match h.kind {
            Kind::Stop => self.on_stop(now, &h),
            Kind::Coded { set } => self.on_coded(now, &h, Name::Set(set), symbol),
            Kind::Symbol { esi } => self.on_coded(now, &h, Name::Esi(esi), symbol),
        }
    }

    fn handle_timeout(&mut self, now: Time) {
        self.fail_expired(now);
        self.expire_decoders(now);
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        if let Some(h) = self.stops.pop_front() {
            // Repeated STOPs rotate over the paths, so one dead path cannot swallow them all.
            let path = (self.counters.stops_sent % self.cfg.paths as u64) as u32;
            self.counters.stops_sent += 1;
            h.emit_to_vec(self.cfg.layout(), payload);
            return Some(self.packet(path, 0));
        }
        self.fail_expired(now);
        self.next_coded(now, payload)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let t = self.cfg.decoder_timeout;
        // With `pacing_quantum`, a round is waited for until the quantum less a gap past its time,
        // and the rounds due by then leave together: one wake-up per quantum, not per round, and
        // never a round before its time (a round sent early would be waste once STOP is in flight).
        let lag = Dur(self.cfg.pacing_quantum.0.saturating_sub(self.round_gap.0));
        let send = self.out.iter().map(|m| {
            if m.round_left > 0 {
                Time::ZERO
            } else {
                (m.next_round + lag).min(m.deadline())
            }
        });
        let recv = self
            .decoders
            .values()
            .map(|d| d.last + t)
            .chain(self.done.values().map(|d| d.last + t))
            .chain(self.assemblies.next_expiry(self.assembly_timeout()));
        send.chain(recv).min()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.out.iter().find(|m| m.msg == msg).map(|m| self.stats_of(m))
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = &self.counters;
        vec![
            ("cb_messages_acked", c.messages_acked),
            ("cb_messages_failed", c.messages_failed),
            ("cb_messages_decoded", c.messages_decoded),
            ("cb_blocks_decoded", c.blocks_decoded),
            ("cb_assemblies_expired", c.assemblies_expired),
            ("cb_held_dropped", c.held_dropped),
            ("cb_coded_packets_sent", c.coded_packets_sent),
            ("cb_acked_coded_packets", c.acked_coded_packets),
            ("cb_acked_source_packets", c.acked_source_packets),
            ("cb_stops_sent", c.stops_sent),
            ("cb_decoders_expired", c.decoders_expired),
            ("cb_decoders_evicted", c.decoders_evicted),
            ("cb_malformed", c.malformed),
        ]
    }
}

/// Removes the entry last active longest ago (ties: the lowest key); false if the map is empty.
fn evict_least_recent<V>(map: &mut BTreeMap<BlockKey, V>, last: impl Fn(&V) -> Time) -> bool {
    let oldest = map.iter().min_by_key(|(k, v)| (last(v), **k)).map(|(k, _)| *k);
    oldest.is_some_and(|k| map.remove(&k).is_some())
}

/// Arms t of Algorithm 1 from `now` (the message's start, or a block's STOP). A one-block message
/// has the paper's t. The active blocks of a longer one share its rate, so the first of them to be
/// STOPped has waited for the packets of the others as well: t is extended by the time the other
/// active blocks' source packets take at the message's rate, so the rule fails a message whose
/// receiver stops making progress, not one whose window of blocks is simply larger than t at a low
/// rate (docs/cloudburst.md, "Messages of any size").
fn arm(cfg: &CloudBurstConfig, round_gap: Dur, m: &mut OutMsg, now: Time) {
    let ks = m.active.iter().map(|b| u64::from(b.k));
    let others = ks.clone().sum::<u64>() - ks.min().unwrap_or(0);
    let share = Dur(round_gap.0.saturating_mul(others) / u64::from(cfg.paths.max(1)));
    m.progress = now;
    m.deadline = now + cfg.transmission_timeout + share;
    m.extended = Dur::ZERO;
}

/// Starts the message's next block; `data` is the whole message's bytes when carried.
fn start_block(cfg: &CloudBurstConfig, m: &mut OutMsg, data: Option<&[u8]>) {
    let index = m.next_block;
    m.next_block += 1;
    let at = index as u64 * cfg.block_bytes();
    let len_bytes = if m.last_block == 0 {
        m.len_bytes
    } else {
        (m.len_bytes - at).min(cfg.block_bytes())
    } as u32;
    let k = (len_bytes as u64).div_ceil(cfg.symbol_bytes as u64).max(1) as u32;
    // Block 0 keeps the single-block seed, so a message of one block codes as the paper's.
    let seed = if index == 0 {
        m.seed
    } else {
        mix64(m.seed ^ index as u64)
    };
    let bytes = data.map(|d| &d[at as usize..at as usize + len_bytes as usize]);
    m.active.push(OutBlock {
        index: index as u16,
        len_bytes,
        k,
        code: OutCode::new(cfg, k, seed, bytes, len_bytes, m.wire_id, index as u16),
        next_index: 0,
        sent_packets: 0,
    });
}

#[cfg(test)]
mod tests;
