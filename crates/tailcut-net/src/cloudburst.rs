//! CloudBurst over the runtime: what a call is to its engine on each side.
//!
//! A call's request and response are one message each under the same 8-bit wire id (the client's
//! [`NetConfig::id_quarantine`] keeps an id unused long enough that no late packet of an old message
//! is taken for a new one), and the server hands a request to the handler once even if late packets
//! make its engine decode it again.

use crate::client::{CallEvent, ClientScheme, ClientStats};
use crate::config::NetConfig;
use crate::server::{Request, ServerScheme, ServerStats};
use std::collections::VecDeque;
use tailcut_proto::cloudburst::{CbHeader, CloudBurstConfig, CloudBurstEndpoint, Kind, TableSizes};
use tailcut_proto::rng::{stream, Stream};
use tailcut_proto::{AppEvent, Dur, Engine, FiveTuple, MsgId, Outgoing, Time};

pub struct ClientSide {
    engine: CloudBurstEndpoint,
    /// Free wire ids and the time each becomes usable, in that order (the quarantine is constant).
    free: VecDeque<(u8, Time)>,
    generation: u64,
    quarantine: Dur,
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
        })
    }
}

impl ClientScheme for ClientSide {
    type E = CloudBurstEndpoint;

    fn engine(&mut self) -> &mut CloudBurstEndpoint {
        &mut self.engine
    }

    fn engine_ref(&self) -> &CloudBurstEndpoint {
        &self.engine
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
        self.engine.send_bytes(now, Outgoing::Message, msg, data);
        // The response travels under the same wire id in the other direction.
        self.engine.expect_message(msg, 0);
        Some(msg)
    }

    fn next_start(&self) -> Option<Time> {
        self.free.front().map(|&(_, at)| at)
    }

    fn on_event(&mut self, _now: Time, ev: AppEvent) -> Option<CallEvent> {
        match ev {
            AppEvent::MessageReceived { msg } => Some(CallEvent::Response {
                key: msg,
                bytes: self.engine.take_bytes(msg).unwrap_or_default(),
            }),
            AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                Some(CallEvent::RequestFinal { key: msg, stats })
            }
            AppEvent::Connected => None,
        }
    }

    fn release(&mut self, now: Time, key: u64) {
        self.free.push_back((key as u8, now + self.quarantine));
    }

    fn publish(&self, stats: &mut ClientStats) {
        stats.tables = self.engine.table_sizes();
        stats.engine_malformed = self.engine.counters().malformed;
    }
}

pub struct ServerSide {
    cfg: NetConfig,
    engine_cfg: CloudBurstConfig,
}

impl ServerSide {
    pub fn new(cfg: &NetConfig) -> ServerSide {
        ServerSide {
            engine_cfg: cfg.engine_config(),
            cfg: cfg.clone(),
        }
    }
}

/// When each wire id's request was last handed to the handler.
pub struct Delivered([Option<Time>; 256]);

impl ServerScheme for ServerSide {
    type E = CloudBurstEndpoint;
    type State = Delivered;

    /// Only a coded CloudBurst packet opens an association.
    fn opens(&self, bytes: &[u8]) -> bool {
        CbHeader::parse(self.engine_cfg.layout(), bytes).is_ok_and(|h| h.kind != Kind::Stop)
    }

    fn open(&self, id: u64, _now: Time) -> Option<(CloudBurstEndpoint, Delivered)> {
        let e = CloudBurstEndpoint::new(
            self.engine_cfg.clone(),
            FiveTuple::default(),
            stream(self.cfg.seed, Stream::Engine, id),
        )
        .ok()?;
        Some((e, Delivered([None; 256])))
    }

    fn request(&self, e: &mut CloudBurstEndpoint, st: &mut Delivered, now: Time, msg: MsgId) -> Request {
        let Some(data) = e.take_bytes(msg) else {
            return Request::None;
        };
        let w = msg as u8 as usize;
        // A client reuses a wire id only after `id_quarantine` (> this), so a decode of the same id
        // sooner is the same request decoded again from late packets.
        let dedup = self.cfg.cloudburst.transmission_timeout + Dur::from_millis(1);
        if st.0[w].is_some_and(|t| now.saturating_sub(t) < dedup) {
            return Request::Duplicate;
        }
        st.0[w] = Some(now);
        Request::Answer { key: msg, data }
    }

    /// The response goes under the request's wire id: the client expects it there.
    fn respond(&self, e: &mut CloudBurstEndpoint, _st: &mut Delivered, now: Time, key: u64, response: &[u8]) {
        e.send_bytes(now, Outgoing::Message, key, response);
    }

    fn publish<'a>(&self, engines: impl Iterator<Item = &'a CloudBurstEndpoint>, stats: &mut ServerStats) {
        let mut t = TableSizes::default();
        let mut malformed = 0;
        for e in engines {
            let s = e.table_sizes();
            t.sending += s.sending;
            t.decoders += s.decoders;
            t.finished += s.finished;
            t.expected += s.expected;
            t.untaken += s.untaken;
            t.stops_queued += s.stops_queued;
            malformed += e.counters().malformed;
        }
        stats.tables = t;
        stats.engine_malformed = malformed;
    }
}
