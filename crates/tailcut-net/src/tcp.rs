//! TCP over the runtime (and CP or DCTCP through its configuration): tailcut's TCP engine, unchanged,
//! over the TCP-in-UDP encapsulation, with calls framed on its byte stream (`stream.rs`).
//!
//! The client opens the connection with a SYN (the server learns its initial sequence number there),
//! pipelines calls on the one stream, and matches responses by the call id in their frame header.
//! The server answers in order.

use crate::client::{CallEvent, ClientScheme};
use crate::config::NetConfig;
use crate::server::{Request, ServerScheme, ServerStats};
use crate::stream::StreamFraming;
use tailcut_proto::rng::{derive_seed, Stream};
use tailcut_proto::tcp::{Role, TcpConfig, TcpEndpoint};
use tailcut_proto::wire::tcp_udp;
use tailcut_proto::{AppEvent, FiveTuple, MsgId, Seq, TcpFlags, Time};

pub struct ClientSide {
    engine: TcpEndpoint,
    framing: StreamFraming,
    next: u64,
}

impl ClientSide {
    pub fn new(cfg: &NetConfig, association: u64) -> ClientSide {
        let isn = Seq(derive_seed(cfg.seed, Stream::Engine, association) as u32);
        let mut engine = TcpEndpoint::new(cfg.tcp_config(), FiveTuple::default(), Role::Client, isn, Seq(0));
        let framing = StreamFraming::new(&mut engine, cfg.max_message_bytes());
        ClientSide {
            engine,
            framing,
            next: 0,
        }
    }
}

impl ClientScheme for ClientSide {
    type E = TcpEndpoint;

    fn engine(&mut self) -> &mut TcpEndpoint {
        &mut self.engine
    }

    fn engine_ref(&self) -> &TcpEndpoint {
        &self.engine
    }

    fn start(&mut self, now: Time, data: &[u8]) -> Option<u64> {
        let key = self.next;
        self.next += 1;
        self.framing.send(&mut self.engine, now, key, data);
        Some(key)
    }

    fn on_event(&mut self, _now: Time, ev: AppEvent) -> Option<CallEvent> {
        match ev {
            AppEvent::MessageReceived { msg } => match self.framing.on_received(&mut self.engine, msg) {
                Ok(Some((key, bytes))) => Some(CallEvent::Response { key, bytes }),
                Ok(None) => None,
                Err(_) => Some(CallEvent::Broken),
            },
            AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                Some(CallEvent::RequestFinal { key: msg, stats })
            }
            AppEvent::Connected => None,
        }
    }
}

pub struct ServerSide {
    tcp: TcpConfig,
    seed: u64,
    max_message: u64,
}

impl ServerSide {
    pub fn new(cfg: &NetConfig) -> ServerSide {
        ServerSide {
            tcp: cfg.tcp_config(),
            seed: cfg.seed,
            max_message: cfg.max_message_bytes(),
        }
    }
}

impl ServerScheme for ServerSide {
    type E = TcpEndpoint;
    type State = StreamFraming;

    /// Only a SYN opens an association, as a listening socket.
    fn opens(&self, bytes: &[u8]) -> bool {
        tcp_udp::parse(bytes).is_ok_and(|s| {
            let f = s.header.flags;
            f.contains(TcpFlags::SYN) && !f.contains(TcpFlags::ACK)
        })
    }

    fn open(&self, id: u64) -> Option<(TcpEndpoint, StreamFraming)> {
        let isn = Seq(derive_seed(self.seed, Stream::Engine, !id) as u32);
        let mut e = TcpEndpoint::new(self.tcp.clone(), FiveTuple::default(), Role::Server, isn, Seq(0));
        let framing = StreamFraming::new(&mut e, self.max_message);
        Some((e, framing))
    }

    fn request(&self, e: &mut TcpEndpoint, st: &mut StreamFraming, _now: Time, msg: MsgId) -> Request {
        match st.on_received(e, msg) {
            Ok(Some((key, data))) => Request::Answer { key, data },
            Ok(None) => Request::None,
            Err(_) => Request::Broken,
        }
    }

    fn respond(&self, e: &mut TcpEndpoint, st: &mut StreamFraming, now: Time, key: u64, response: &[u8]) {
        st.send(e, now, key, response);
    }

    fn publish<'a>(&self, _engines: impl Iterator<Item = &'a TcpEndpoint>, _stats: &mut ServerStats) {}
}
