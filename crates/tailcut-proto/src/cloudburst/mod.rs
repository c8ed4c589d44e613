//! CloudBurst (Sec. III): multipath, rateless-coded message delivery with no ACKs, no congestion
//! control and no retransmission timer. See `docs/cloudburst.md`.
//!
//! One [`CloudBurstEndpoint`] is one end of a messaging association; it sends (Algorithm 1) and
//! receives (Sec. III-B "Receiver operations") at once, as request/response needs both directions.
//! By default the endpoint carries no symbol bytes (simulation): the packet's out-of-band payload holds
//! the 12-byte header, LT decodes coefficient vectors only (the same elimination as the byte codec,
//! over [`crate::fec::NoBytes`]) and RaptorQ decodes tiny synthetic symbols (see `code.rs`). With
//! `carry_bytes`, every coded packet carries its real symbol after the header, as on a socket:
//! [`CloudBurstEndpoint::send_data`] sends bytes and [`CloudBurstEndpoint::take_data`] returns them.

mod code;
mod config;
pub mod header;

pub use code::{synthetic_message, SIM_RAPTORQ_SYMBOL_BYTES};
pub use config::{CloudBurstConfig, Codec, PathMode};
pub use header::{Header as CbHeader, HeaderError, Kind, HEADER_BYTES, MAX_ESI};

use crate::config_error::ConfigError;
use crate::engine::{AppEvent, Engine, MessageStats, MsgId};
use crate::packet::{FiveTuple, Header, Packet, Proto, Route};
use crate::rng::{mix64, Rng};
use crate::time::{Dur, Time};
use code::{symbol_len, InCode, Name, OutCode, Outcome};
use rand::Rng as _;
use std::collections::{BTreeMap, VecDeque};

/// Totals over the endpoint's life.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
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
}

impl Counters {
    /// Coded packets sent over source packets, for acknowledged messages (Fig. 14).
    pub fn coding_rate(&self) -> f64 {
        self.acked_coded_packets as f64 / self.acked_source_packets.max(1) as f64
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
}

/// A message being sent.
#[derive(Debug)]
struct OutMsg {
    msg: MsgId,
    wire_id: u8,
    len_bytes: u64,
    k: u32,
    code: OutCode,
    next_index: u64,
    /// Packets still to send in the current round.
    round_left: u32,
    next_round: Time,
    deadline: Time,
    next_path: u32,
    /// The path the next round starts on. Rounds start one path further each time, from a
    /// per-message random path: a round leaves back to back, so when the host queue (or any queue
    /// the burst meets) has room for only its first packet, a fixed start would put nearly every
    /// surviving packet of every message on path 0 (docs/cloudburst.md, "A degraded path").
    round_path: u32,
    sent_packets: u32,
}

/// A message being received.
#[derive(Debug)]
struct InMsg {
    packets: u8,
    message_bytes: u32,
    dec: InCode,
    first: Time,
    last: Time,
}

/// A message already delivered: further packets of it are answered with STOP.
#[derive(Debug)]
struct Done {
    packets: u8,
    message_bytes: u32,
    last: Time,
}

pub struct CloudBurstEndpoint {
    cfg: CloudBurstConfig,
    /// This end's outgoing tuple (to the peer).
    tuple: FiveTuple,
    seed: u64,
    round_gap: Dur,
    out: Vec<OutMsg>,
    cursor: usize,
    stops: VecDeque<CbHeader>,
    decoders: BTreeMap<u8, InMsg>,
    done: BTreeMap<u8, Done>,
    /// Wire id -> the application's id, from `expect_message`.
    expected: BTreeMap<u8, MsgId>,
    events: VecDeque<AppEvent>,
    counters: Counters,
    /// Decoded message bytes (`carry_bytes`) not yet taken, oldest first; at most `max_decoders`.
    received: VecDeque<(MsgId, Vec<u8>)>,
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
            expected: BTreeMap::new(),
            events: VecDeque::new(),
            counters: Counters::default(),
            received: VecDeque::new(),
        })
    }

    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    pub fn config(&self) -> &CloudBurstConfig {
        &self.cfg
    }

    /// Entries in the endpoint's tables, for drivers that must show their memory stays bounded under
    /// any peer input (every table is capped: decoders and untaken messages by `max_decoders`, the
    /// rest by the 256 wire ids or by what the application sends).
    pub fn table_sizes(&self) -> TableSizes {
        TableSizes {
            sending: self.out.len(),
            decoders: self.decoders.len(),
            finished: self.done.len(),
            expected: self.expected.len(),
            untaken: self.received.len(),
            stops_queued: self.stops.len(),
        }
    }

    /// Sends `data` as message `msg` (with `carry_bytes`; otherwise only its length counts).
    pub fn send_data(&mut self, now: Time, msg: MsgId, data: &[u8]) {
        self.start(now, msg, data.len() as u64, Some(data));
    }

    /// The bytes of a received message (with `carry_bytes`), once: the endpoint keeps the last
    /// `max_decoders` untaken messages.
    pub fn take_data(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        let i = self.received.iter().position(|(m, _)| *m == msg)?;
        self.received.remove(i).map(|(_, d)| d)
    }

    /// Algorithm 1 lines 1-3: refuse messages over 64 packets, arm the transmission timeout t.
    fn start(&mut self, now: Time, msg: MsgId, len_bytes: u64, data: Option<&[u8]>) {
        let sym = self.cfg.symbol_bytes as u64;
        if len_bytes > self.cfg.max_message_bytes() {
            self.counters.messages_failed += 1;
            self.events.push_back(AppEvent::MessageFailed {
                msg,
                stats: MessageStats::default(),
            });
            return;
        }
        let k = len_bytes.div_ceil(sym).max(1) as u32;
        let seed = mix64(self.seed ^ mix64(msg));
        let data = data.filter(|_| self.cfg.carry_bytes);
        let wire_id = msg as u8;
        self.out.push(OutMsg {
            msg,
            wire_id,
            len_bytes,
            k,
            code: OutCode::new(&self.cfg, k, seed, data, len_bytes as u32, wire_id),
            next_index: 0,
            round_left: 0,
            next_round: now,
            deadline: now + self.cfg.transmission_timeout,
            next_path: 0,
            round_path: (seed % u64::from(self.cfg.paths)) as u32,
            sent_packets: 0,
        });
    }

    fn stats_of(&self, m: &OutMsg) -> MessageStats {
        let sent_bytes = m.sent_packets as u64 * self.cfg.symbol_bytes as u64;
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
        for j in 0..n {
            let i = (self.cursor + j) % n;
            let gap = self.round_gap;
            let paths = self.cfg.paths;
            let m = &mut self.out[i];
            if m.deadline <= now {
                continue;
            }
            if m.round_left == 0 && m.next_round <= now {
                // Line 5: rounds start NUM_PATHS x PKT_SIZE / (r x LINK_CAP) apart.
                m.round_left = paths;
                m.next_round = now + gap;
                m.next_path = m.round_path;
                m.round_path = (m.round_path + 1) % paths;
            }
            if m.round_left == 0 {
                continue;
            }
            m.round_left -= 1;
            let path = m.next_path;
            m.next_path = (m.next_path + 1) % paths;
            // The header goes first; its name is known only once the symbol is written after it.
            let at = payload.len();
            payload.resize(at + HEADER_BYTES, 0);
            let name = m.code.next(m.next_index, payload);
            m.next_index += 1;
            m.sent_packets += 1;
            let h = CbHeader {
                packets: m.k as u8,
                message_bytes: m.len_bytes as u32,
                msg_id: m.wire_id,
                kind: match name {
                    Name::Set(set) => Kind::Coded { set },
                    Name::Esi(esi) => Kind::Symbol { esi },
                },
            };
            self.cursor = (i + 1) % n;
            self.counters.coded_packets_sent += 1;
            h.emit(self.cfg.codec, &mut payload[at..])
                .expect("header kind matches the codec");
            return Some(self.packet(path, self.cfg.symbol_bytes));
        }
        None
    }

    fn fail_expired(&mut self, now: Time) {
        let mut i = 0;
        while i < self.out.len() {
            if self.out[i].deadline <= now {
                let m = self.out.remove(i);
                let stats = self.stats_of(&m);
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
    }

    fn on_stop(&mut self, h: &CbHeader) {
        let Some(i) = self.out.iter().position(|m| {
            m.wire_id == h.msg_id && m.len_bytes == h.message_bytes as u64 && m.k == h.packets as u32
        }) else {
            return; // A repeated STOP of a message already finished.
        };
        let m = self.out.remove(i);
        if self.cursor >= self.out.len() {
            self.cursor = 0;
        }
        let stats = self.stats_of(&m);
        self.counters.messages_acked += 1;
        self.counters.acked_coded_packets += m.sent_packets as u64;
        self.counters.acked_source_packets += m.k as u64;
        self.events
            .push_back(AppEvent::MessageAcked { msg: m.msg, stats });
    }

    fn queue_stop(&mut self, h: &CbHeader) {
        self.stops.push_back(CbHeader {
            kind: Kind::Stop,
            ..*h
        });
    }

    /// Sec. III-B "Receiver operations".
    fn on_coded(&mut self, now: Time, h: &CbHeader, name: Name, symbol: &[u8]) {
        let want = symbol_len(self.cfg.codec, self.cfg.carry_bytes, self.cfg.symbol_bytes);
        if h.check_size(self.cfg.symbol_bytes).is_err() || symbol.len() != want {
            self.counters.malformed += 1;
            return;
        }
        if let Some(d) = self.done.get_mut(&h.msg_id) {
            if d.packets == h.packets && d.message_bytes == h.message_bytes {
                // The STOP was lost (or is in flight): STOP again for every further packet.
                d.last = now;
                self.queue_stop(h);
                return;
            }
        }
        let fresh = match self.decoders.get(&h.msg_id) {
            Some(d) => d.packets != h.packets || d.message_bytes != h.message_bytes,
            None => true,
        };
        if fresh {
            if self.decoders.len() >= self.cfg.max_decoders as usize && !self.decoders.contains_key(&h.msg_id)
            {
                let oldest = self
                    .decoders
                    .iter()
                    .min_by_key(|(id, d)| (d.last, **id))
                    .map(|(id, _)| *id);
                if let Some(id) = oldest {
                    self.decoders.remove(&id);
                    self.counters.decoders_evicted += 1;
                }
            }
            self.decoders.insert(
                h.msg_id,
                InMsg {
                    packets: h.packets,
                    message_bytes: h.message_bytes,
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
        let d = self.decoders.get_mut(&h.msg_id).expect("inserted");
        d.last = now;
        let carry = self.cfg.carry_bytes;
        match d.dec.add(name, symbol, h.message_bytes, h.msg_id, carry) {
            Outcome::Decoded(data) => {
                let first = d.first;
                self.decoders.remove(&h.msg_id);
                let took = now.saturating_sub(first);
                self.counters.messages_decoded += 1;
                self.counters.decode_time_total = self.counters.decode_time_total + took;
                self.counters.decode_time_max = self.counters.decode_time_max.max(took);
                self.done.insert(
                    h.msg_id,
                    Done {
                        packets: h.packets,
                        message_bytes: h.message_bytes,
                        last: now,
                    },
                );
                let msg = self.expected.remove(&h.msg_id).unwrap_or(h.msg_id as MsgId);
                if let Some(data) = data {
                    if self.received.len() >= self.cfg.max_decoders as usize {
                        self.received.pop_front();
                    }
                    self.received.push_back((msg, data));
                }
                self.events.push_back(AppEvent::MessageReceived { msg });
                self.queue_stop(h);
            }
            Outcome::Invalid => self.counters.malformed += 1,
            Outcome::Corrupt => {
                // Never expected; dropping the decoder lets the sender's next packets retry.
                self.counters.corrupt_decodes += 1;
                self.decoders.remove(&h.msg_id);
            }
            Outcome::Pending => {}
        }
    }
}

impl Engine for CloudBurstEndpoint {
    /// With `carry_bytes`, the message's bytes are zeros (use [`CloudBurstEndpoint::send_data`]).
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        if self.cfg.carry_bytes && len_bytes <= self.cfg.max_message_bytes() {
            let zeros = vec![0u8; len_bytes as usize];
            self.start(now, msg, len_bytes, Some(&zeros));
        } else {
            self.start(now, msg, len_bytes, None);
        }
    }

    /// Maps the 8-bit wire id back to the application's id, and forgets an older finished message
    /// with the same wire id.
    fn expect_message(&mut self, msg: MsgId, _len_bytes: u64) {
        self.expected.insert(msg as u8, msg);
        self.done.remove(&(msg as u8));
    }

    fn handle_packet(&mut self, now: Time, _pkt: &Packet, payload: &[u8]) {
        let h = match CbHeader::parse(self.cfg.codec, payload) {
            Ok(h) => h,
            Err(_) => {
                self.counters.malformed += 1;
                return;
            }
        };
        match h.kind {
            Kind::Stop => self.on_stop(&h),
            Kind::Coded { set } => self.on_coded(now, &h, Name::Set(set), &payload[HEADER_BYTES..]),
            Kind::Symbol { esi } => self.on_coded(now, &h, Name::Esi(esi), &payload[HEADER_BYTES..]),
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
            h.emit_to_vec(self.cfg.codec, payload);
            return Some(self.packet(path, 0));
        }
        self.fail_expired(now);
        self.next_coded(now, payload)
    }

    fn poll_timeout(&self) -> Option<Time> {
        let t = self.cfg.decoder_timeout;
        let send = self.out.iter().map(|m| {
            if m.round_left > 0 {
                Time::ZERO
            } else {
                m.next_round.min(m.deadline)
            }
        });
        let recv = self
            .decoders
            .values()
            .map(|d| d.last + t)
            .chain(self.done.values().map(|d| d.last + t));
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

#[cfg(test)]
mod tests;
