//! CloudBurst over the runtime: what a call is to its engine on each side.
//!
//! A call's request and response are one message each under the same 8-bit wire id (the client's
//! [`NetConfig::id_quarantine`] keeps an id unused long enough that no late packet of an old message
//! is taken for a new one). Both messages start with the call's 64-bit number
//! ([`CALL_HEADER_BYTES`], the engine's message id: a per-client generation above the wire id), which
//! the 8-bit wire id cannot tell apart from an older call's, so that timing never decides:
//!
//! - the server hands a request to the handler at most once ([`CallWindow`]), even when late or
//!   duplicated packets make its engine decode it again after it forgot the message, or when the
//!   association was dropped and reopened while the server still remembers its window (the last
//!   4,096 dropped associations that had delivered a call: a flood of more than that many forged
//!   associations, each delivering a forged call, could flush a real one's);
//! - the client takes a response only if it carries its call's number, so a late response of an
//!   older call on the same wire id is dropped as stale, never returned as this call's.
//!
//! A response also proves that the server decoded the request: the client stops coding the request
//! then (an implicit STOP), so a call's request counters are final when the call returns.

use crate::call_window::CallWindow;
use crate::client_scheme::{CallEvent, ClientScheme};
use crate::config::NetConfig;
use crate::server_scheme::{Request, ServerScheme};
use crate::stats::ClientStats;
use crate::stats::ServerStats;
use std::collections::{BTreeMap, VecDeque};
use tailcut_proto::cloudburst::{CbHeader, CloudBurstConfig, CloudBurstEndpoint, Counters, Kind, TableSizes};
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::{AppEvent, Dur, Engine, FiveTuple, MessageStats, MsgId, Outgoing, Time};

/// The call number in front of every request and response (big endian).
pub const CALL_HEADER_BYTES: u64 = 8;

/// Associations a server remembers the call window of after dropping them, so that a reopened one
/// cannot deliver an old request again.
const REMEMBERED: usize = 4096;

/// The call number at the front of a message, and the bytes after it.
fn split_call(bytes: &[u8]) -> Option<(u64, &[u8])> {
    let (head, rest) = bytes.split_first_chunk::<{ CALL_HEADER_BYTES as usize }>()?;
    Some((u64::from_be_bytes(*head), rest))
}

pub struct ClientSide {
    engine: CloudBurstEndpoint,
    /// Free wire ids and the time each becomes usable, in that order (the quarantine is constant).
    free: VecDeque<(u8, Time)>,
    generation: u64,
    quarantine: Dur,
    /// The message being sent: call number, then the request (reused).
    frame: Vec<u8>,
}

impl ClientSide {
    pub fn new(cfg: &NetConfig, association: u64) -> Result<ClientSide, String> {
        let engine = CloudBurstEndpoint::new(
            cfg.engine_config(),
            FiveTuple::default(),
            stream(cfg.seed, Stream::Engine, association),
        )
        .map_err(|e| e.to_string())?;
        Ok(ClientSide {
            engine,
            free: (0..=255u8).map(|w| (w, Time::ZERO)).collect(),
            generation: 0,
            quarantine: cfg.id_quarantine(),
            frame: Vec::new(),
        })
    }
}

impl ClientScheme for ClientSide {
    type E = CloudBurstEndpoint;

    /// A new engine on the new association; call numbers go on from where they were, so a late
    /// response of the old association can never be taken for a new call (and datagrams of the
    /// old one no longer reach the engine: their preamble names it).
    fn reopen(&mut self, cfg: &NetConfig, association: u64, _now: Time) -> Result<(), String> {
        let generation = self.generation;
        *self = ClientSide::new(cfg, association)?;
        self.generation = generation;
        Ok(())
    }

    fn engine(&mut self) -> &mut CloudBurstEndpoint {
        &mut self.engine
    }

    fn engine_ref(&self) -> &CloudBurstEndpoint {
        &self.engine
    }

    fn host_delay(&mut self, total: Dur) {
        self.engine.note_host_delay(total);
    }

    /// The call's key is its engine message id: a generation above the 8-bit wire id.
    fn start(&mut self, now: Time, data: &[u8]) -> Option<u64> {
        let &(w, at) = self.free.front()?;
        if at > now {
            return None;
        }
        self.free.pop_front();
        self.generation += 1;
        let msg = self.generation << 8 | u64::from(w);
        self.frame.clear();
        self.frame.extend_from_slice(&msg.to_be_bytes());
        self.frame.extend_from_slice(data);
        self.engine.send_bytes(now, Outgoing::Message, msg, &self.frame);
        // The response travels under the same wire id in the other direction.
        self.engine.expect_message(msg, 0);
        Some(msg)
    }

    fn next_start(&self) -> Option<Time> {
        self.free.front().map(|&(_, at)| at)
    }

    fn on_event(&mut self, _now: Time, ev: AppEvent) -> Option<CallEvent> {
        match ev {
            AppEvent::MessageReceived { msg } => {
                let mut bytes = self.engine.take_bytes(msg)?;
                // A response of an older call on this wire id (or a forged one) is not this call's.
                if split_call(&bytes).is_none_or(|(call, _)| call != msg) {
                    return Some(CallEvent::Stale);
                }
                bytes.drain(..CALL_HEADER_BYTES as usize);
                Some(CallEvent::Response { key: msg, bytes })
            }
            AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                Some(CallEvent::RequestFinal { key: msg, stats })
            }
            AppEvent::Connected => None,
        }
    }

    /// The response came: the server decoded the request, so coding it further is waste.
    fn settle(&mut self, now: Time, key: u64) -> Option<MessageStats> {
        self.engine.acknowledge(now, key)
    }

    /// A block of the request STOPped, or a packet of the response came.
    fn last_progress(&self, key: u64) -> Option<Time> {
        self.engine.last_progress(key)
    }

    fn release(&mut self, now: Time, key: u64) {
        self.free.push_back((key as u8, now + self.quarantine));
    }

    fn publish(&self, stats: &mut ClientStats) {
        stats.tables = self.engine.table_sizes();
        stats.cloudburst = *self.engine.counters();
        stats.engine_malformed = self.engine.counters().malformed;
    }
}

pub struct ServerSide {
    engine_cfg: CloudBurstConfig,
    seed: u64,
    /// The call windows of associations dropped lately (those that had delivered a call), and their
    /// order, oldest first.
    remembered: BTreeMap<u64, CallWindow>,
    order: VecDeque<u64>,
}

impl ServerSide {
    pub fn new(cfg: &NetConfig) -> ServerSide {
        ServerSide {
            engine_cfg: cfg.engine_config(),
            seed: cfg.seed,
            remembered: BTreeMap::new(),
            order: VecDeque::new(),
        }
    }
}

/// Per association: which calls were delivered, and the response being framed (reused).
pub struct Calls {
    window: CallWindow,
    frame: Vec<u8>,
}

impl ServerScheme for ServerSide {
    type E = CloudBurstEndpoint;
    type State = Calls;

    /// Only a coded CloudBurst packet opens an association.
    fn opens(&self, bytes: &[u8]) -> bool {
        CbHeader::parse(self.engine_cfg.layout(), bytes).is_ok_and(|h| h.kind != Kind::Stop)
    }

    fn open(&mut self, id: u64, _now: Time) -> Option<(CloudBurstEndpoint, Calls)> {
        let e = CloudBurstEndpoint::new(
            self.engine_cfg.clone(),
            FiveTuple::default(),
            stream(self.seed, Stream::Engine, id),
        )
        .ok()?;
        // A reopened association goes on with its old window: its delivered calls stay refused and
        // its calls still in flight (not yet delivered) are taken.
        let window = self
            .remembered
            .get(&id)
            .cloned()
            .unwrap_or_else(|| CallWindow::new(0));
        let calls = Calls {
            window,
            frame: Vec::new(),
        };
        Some((e, calls))
    }

    /// Keeps the association's call window, so that reopening it refuses its delivered calls. One
    /// that delivered nothing has nothing to protect (and forged openers would flush the table).
    fn forget(&mut self, id: u64, st: &Calls) {
        if st.window.next_base() == 0 {
            return;
        }
        if self.remembered.insert(id, st.window.clone()).is_some() {
            self.order.retain(|&k| k != id);
        }
        self.order.push_back(id);
        while self.order.len() > REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.remembered.remove(&old);
            }
        }
    }

    fn request(&self, e: &mut CloudBurstEndpoint, st: &mut Calls, _now: Time, msg: MsgId) -> Request {
        let Some(mut data) = e.take_bytes(msg) else {
            return Request::None;
        };
        // The call number's low byte is its wire id; a message whose number says otherwise was not
        // framed by a client of this runtime.
        let Some(call) = split_call(&data)
            .map(|(call, _)| call)
            .filter(|&c| c as u8 == msg as u8)
        else {
            return Request::None;
        };
        // The window counts calls, which the number's generation (above the wire id) does.
        if !st.window.accept(call >> 8) {
            return Request::Duplicate;
        }
        data.drain(..CALL_HEADER_BYTES as usize);
        Request::Answer { key: call, data }
    }

    /// The response goes under the request's wire id (the client expects it there), behind the
    /// call's number.
    fn respond(&self, e: &mut CloudBurstEndpoint, st: &mut Calls, now: Time, key: u64, response: &[u8]) {
        st.frame.clear();
        st.frame.extend_from_slice(&key.to_be_bytes());
        st.frame.extend_from_slice(response);
        e.send_bytes(now, Outgoing::Message, key, &st.frame);
    }
    fn host_delay(e: &mut CloudBurstEndpoint, total: Dur) {
        e.note_host_delay(total);
    }

    fn publish<'a>(&self, engines: impl Iterator<Item = &'a CloudBurstEndpoint>, stats: &mut ServerStats) {
        let mut t = TableSizes::default();
        let mut cb = Counters::default();
        for e in engines {
            cb.merge(e.counters());
            t += e.table_sizes();
        }
        stats.tables = t;
        stats.cloudburst = cb;
        stats.engine_malformed = cb.malformed;
    }
}
