//! DCQUIC over the runtime: tailcut's DCQUIC engine in real mode (`tailcut_proto::dcquic::real`) on
//! plain QUIC datagrams, with no preamble, so any QUIC v1 implementation that speaks the ALPN is a
//! peer: a call is one bidirectional stream, the request written and finished by the client, the
//! response by the server.
//!
//! Addresses: the engine names endpoints by `Addr`. The server is [`SERVER_ADDR`]; path `i` is
//! `Addr(i + 1)`: on a client its `i`-th local socket (migration moves the connection between them,
//! so the datagrams of the chosen path leave from that socket), on a server the `i`-th source address
//! an association has been seen from (a migrated client appears at a new one, and quinn validates it).
//!
//! A server runs one engine per connection on one socket and finds a datagram's engine by its
//! destination connection ID ([`tailcut_proto::dcquic::route`]): server-issued IDs begin with the
//! association's routing key; a client's first flight, whose ID the client chose, is matched by that
//! ID until the handshake moves it to the server's.
//!
//! The runtime builds what is random or reads the clock and hands it to the engines: their TLS
//! configs ([`crate::quic_crypto`]) and each engine's keys ([`crate::quic_keys`]).

use crate::address_check::AddressCheck;
use crate::client_scheme::{CallEvent, ClientScheme};
use crate::codec::Codec;
use crate::config::NetConfig;
use crate::server_scheme::{AddressProof, Request, Routed, ServerScheme};
use crate::stats::{ClientStats, DcquicStats, ServerStats};
use crate::{quic_crypto, quic_keys};
use quinn_proto::crypto::HandshakeTokenKey;
use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;
use tailcut_proto::dcquic::retry::{retry_cid_tag, Gate, RetryGate};
use tailcut_proto::dcquic::route::{route, Route};
use tailcut_proto::dcquic::{real::cid_key, DcquicCounters, DcquicEngine, Shared};
use tailcut_proto::{
    Addr, AppEvent, Dur, Ecn, Engine, FiveTuple, Header, MsgId, Outgoing, Packet, Proto, Time,
};

/// The server's address inside the engines.
pub const SERVER_ADDR: Addr = Addr(0x00FF_0000);

/// The engine address of path `i`.
fn path_addr(i: usize) -> Addr {
    Addr(i as u32 + 1)
}

impl Codec for DcquicEngine {
    /// Never written: DCQUIC datagrams carry no preamble.
    const SCHEME: u8 = 0;
    const PREAMBLE: bool = false;

    /// The path is the non-server end of the packet.
    fn path_of(pkt: &Packet) -> usize {
        let a = if pkt.tuple.src == SERVER_ADDR {
            pkt.tuple.dst
        } else {
            pkt.tuple.src
        };
        (a.0 as usize).saturating_sub(1)
    }

    fn encode(_pkt: &Packet, payload: &[u8], out: &mut Vec<u8>) -> bool {
        out.extend_from_slice(payload);
        true
    }

    /// As the server sees it: from path `path`'s address.
    fn decode(bytes: &[u8], ecn: Ecn, path: u8) -> Option<(Packet, &[u8])> {
        Some((
            packet(path_addr(usize::from(path)), SERVER_ADDR, ecn, bytes.len()),
            bytes,
        ))
    }
}

fn packet(src: Addr, dst: Addr, ecn: Ecn, len: usize) -> Packet {
    Packet {
        tuple: FiveTuple {
            src,
            dst,
            src_port: 1,
            dst_port: 1,
            proto: Proto::Udp,
        },
        ecn,
        size_bytes: len as u32,
        header: Header::Datagram {
            payload_len: len as u32,
        },
        ..Packet::default()
    }
}

/// The engines' shared state for a runtime: real mode with the configuration's certificates.
pub fn shared(
    cfg: &NetConfig,
    epoch: std::time::Instant,
    path_max_payload: u16,
) -> Result<Arc<Shared>, String> {
    let tls = cfg.tls.quic().map_err(|e| format!("tls: {e}"))?;
    shared_with(cfg, tls, epoch, path_max_payload)
}

/// [`shared`] for a client: its roots only. A configuration that also holds a server's identity
/// (one `TlsConfig` for both ends) would otherwise parse the server's key for every client, 170 k
/// instructions of a fresh connection's set-up.
pub fn client_shared(
    cfg: &NetConfig,
    epoch: std::time::Instant,
    path_max_payload: u16,
) -> Result<Arc<Shared>, String> {
    let tls = quic_crypto::Tls {
        identity: None,
        ..cfg.tls.quic().map_err(|e| format!("tls: {e}"))?
    };
    shared_with(cfg, tls, epoch, path_max_payload)
}

fn shared_with(
    cfg: &NetConfig,
    tls: quic_crypto::Tls<'_>,
    epoch: std::time::Instant,
    path_max_payload: u16,
) -> Result<Arc<Shared>, String> {
    let mode = quic_crypto::real_mode(tls, path_max_payload, cfg.max_message_bytes())
        .map_err(|e| format!("dcquic: {e}"))?;
    Shared::real(cfg.dcquic_config(), epoch, mode)
        .map(Arc::new)
        .map_err(|e| format!("dcquic: {e}"))
}

/// The first datagram (its Initial) of a fresh client engine of `shared`: what a real client opens
/// a connection with, fresh keys and connection IDs each time. Tests and benchmarks forge openers
/// with it.
pub fn client_initial(shared: &Arc<Shared>) -> Result<Vec<u8>, String> {
    let tuple = FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 1,
        dst_port: 1,
        proto: Proto::Udp,
    };
    let keys = quic_keys::client()?;
    let mut c = DcquicEngine::real_client(shared.clone(), tuple, vec![Addr(1)], 0, keys, Time::ZERO)
        .map_err(|e| format!("dcquic: {e}"))?;
    let mut b = Vec::new();
    c.poll_transmit(Time::ZERO, &mut b)
        .ok_or_else(|| "dcquic: a fresh client sent nothing".to_string())?;
    Ok(b)
}

pub struct ClientSide {
    engine: DcquicEngine,
    shared: Arc<Shared>,
    paths: usize,
    task_bytes: u64,
    /// The next request's message id (even; its response is the id with the low bit set).
    next: u64,
    /// Connections opened after the first one ended.
    reconnects: u64,
    closed_counters: DcquicCounters,
    /// The host's delay so far, for a connection opened later (its engine starts from it).
    host_delay: Dur,
}

/// Adds the counters of a closed connection to a client's total; the others (rebinds, protocol
/// errors, ...) are the current connection's.
fn add_closed(total: &mut DcquicCounters, c: &DcquicCounters) {
    total.handshakes += c.handshakes;
    total.handshake_ns += c.handshake_ns;
    total.migrations += c.migrations;
    total.streams_completed += c.streams_completed;
    total.lost_packets += c.lost_packets;
}

impl ClientSide {
    pub fn new(cfg: &NetConfig, shared: Arc<Shared>, now: Time) -> Result<ClientSide, String> {
        let paths = cfg.paths();
        let engine = Self::connect(&shared, paths, cfg.dcquic_task_bytes, now)?;
        Ok(ClientSide {
            engine,
            shared,
            paths,
            task_bytes: cfg.dcquic_task_bytes,
            next: 0,
            reconnects: 0,
            closed_counters: Default::default(),
            host_delay: Dur::ZERO,
        })
    }

    fn connect(shared: &Arc<Shared>, paths: usize, task: u64, now: Time) -> Result<DcquicEngine, String> {
        let tuple = FiveTuple {
            src: path_addr(0),
            dst: SERVER_ADDR,
            src_port: 1,
            dst_port: 1,
            proto: Proto::Udp,
        };
        let local = (0..paths).map(path_addr).collect();
        DcquicEngine::real_client(shared.clone(), tuple, local, task, quic_keys::client()?, now)
            .map_err(|e| e.to_string())
    }

    /// A new connection in place of the current one (ended, or closed for `Client::reconnect`): its
    /// handshake starts with the next transmit, the old one's counters are kept, message ids go
    /// on, and the host's delay so far is not the new connection's streams'.
    fn replace_connection(&mut self, now: Time) -> Result<(), String> {
        let mut e = Self::connect(&self.shared, self.paths, self.task_bytes, now)?;
        e.note_host_delay(self.host_delay);
        let old = std::mem::replace(&mut self.engine, e);
        add_closed(&mut self.closed_counters, &old.counters());
        self.reconnects += 1;
        Ok(())
    }

    /// The engine's counters over every connection this client opened.
    pub fn counters(&self) -> DcquicCounters {
        let mut c = self.engine.counters();
        add_closed(&mut c, &self.closed_counters);
        c
    }
}

impl ClientScheme for ClientSide {
    type E = DcquicEngine;

    fn engine(&mut self) -> &mut DcquicEngine {
        &mut self.engine
    }

    fn host_delay(&mut self, total: Dur) {
        self.host_delay = total;
        self.engine.note_host_delay(total);
    }

    fn engine_ref(&self) -> &DcquicEngine {
        &self.engine
    }

    /// A connection that ended (the server closed it, an idle timeout, a refused handshake) is
    /// replaced by a new one for the next call.
    fn start(&mut self, now: Time, data: &[u8]) -> Option<u64> {
        if self.engine.is_closed() {
            let _ = self.replace_connection(now);
        }
        let key = self.next;
        self.next += 2;
        self.engine.send_bytes(now, Outgoing::Request, key, data);
        Some(key)
    }

    fn on_event(&mut self, _now: Time, ev: AppEvent) -> Option<CallEvent> {
        match ev {
            AppEvent::MessageReceived { msg } if msg & 1 == 1 => {
                let bytes = self.engine.take_bytes(msg)?;
                Some(CallEvent::Response { key: msg & !1, bytes })
            }
            // A stream the server opened: not a call's.
            AppEvent::MessageReceived { msg } => {
                self.engine.take_bytes(msg);
                None
            }
            AppEvent::MessageAcked { msg, stats } | AppEvent::MessageFailed { msg, stats } => {
                Some(CallEvent::RequestFinal { key: msg, stats })
            }
            AppEvent::Connected => None,
        }
    }

    /// The first Initial leaves now: the handshake is timed from here, not from when the client
    /// was built on the caller's thread (quinn stamps packets when they are polled, so its RTT
    /// samples were never affected).
    fn begin(&mut self, now: Time) {
        self.engine.restart_clock(now);
    }

    /// The reason quinn gave when the connection ended (a failed handshake names the certificate
    /// error; a peer's close its code and reason).
    fn failure(&self) -> Option<String> {
        self.engine
            .is_closed()
            .then(|| self.engine.close_reason().unwrap_or("closed").to_string())
    }

    /// QUIC's application close with code 0 (no error).
    fn close(&mut self, now: Time) {
        self.engine.close(now, 0, "");
    }

    /// A new connection, as for a connection that ended by itself ([`ClientSide::replace_connection`]).
    fn reopen(&mut self, _cfg: &NetConfig, _association: u64, now: Time) -> Result<(), String> {
        self.replace_connection(now)
    }

    fn publish(&self, stats: &mut ClientStats) {
        let c = self.counters();
        stats.dcquic = Some(DcquicStats {
            handshakes: c.handshakes,
            handshake_ns: c.handshake_ns,
            migrations: c.migrations,
            reconnects: self.reconnects,
            lost_packets: c.lost_packets,
            mps: self.engine.mps().unwrap_or(0),
            path: self.engine.local_addr().0.saturating_sub(1),
        });
        stats.protocol_errors = c.protocol_errors;
    }

    /// Every datagram from the server's address is QUIC (quinn checks it); it arrived on path `k`.
    fn decode(bytes: &[u8], ecn: Ecn, k: usize, _association: u64) -> Option<(Packet, &[u8])> {
        Some((packet(SERVER_ADDR, path_addr(k), ecn, bytes.len()), bytes))
    }
}

pub struct ServerSide {
    shared: Arc<Shared>,
    /// Client-chosen destination IDs of first flights, to the association they opened.
    initials: HashMap<Vec<u8>, u64>,
    next_key: u32,
    /// Seals every engine's tokens and the gate's.
    token_key: Arc<dyn HandshakeTokenKey>,
    /// QUIC's Retry, while the server validates addresses.
    gate: RetryGate,
    /// Tags the real source address a Retry's connection ID carries.
    tags: AddressCheck,
}

impl ServerSide {
    pub fn new(shared: Arc<Shared>) -> Result<ServerSide, String> {
        let token_key = quic_keys::token_key()?;
        let gate = RetryGate::new(shared.clone(), quic_keys::server(0, token_key.clone())?)
            .map_err(|e| e.to_string())?;
        Ok(ServerSide {
            shared,
            initials: HashMap::new(),
            next_key: 1,
            token_key,
            gate,
            tags: AddressCheck::new()?,
        })
    }
}

impl ServerScheme for ServerSide {
    type E = DcquicEngine;
    type State = ();

    /// By connection ID (see the module's documentation); only a full-size Initial opens one. A
    /// client ID that happens to begin with a live key is taken for that association's (a 2^-32
    /// chance per live association), whose engine ignores it; the client's retry then fails.
    fn route(&mut self, bytes: &[u8], live: &dyn Fn(u64) -> bool) -> Option<Routed> {
        let at = |id: u64, opens: bool| Routed {
            id,
            path: None,
            skip: 0,
            opens,
        };
        match route(bytes) {
            Route::Short { key } => live(u64::from(key)).then(|| at(u64::from(key), false)),
            Route::Long { dcid, opens } => {
                if let Some(&id) = self.initials.get(dcid) {
                    return live(id).then(|| at(id, false));
                }
                if let Some(key) = cid_key(dcid).filter(|k| dcid.len() == 8 && live(u64::from(*k))) {
                    return Some(at(u64::from(key), false));
                }
                if !opens {
                    return None;
                }
                let mut key = self.next_key;
                while key == 0 || live(u64::from(key)) {
                    key = key.wrapping_add(1);
                }
                self.next_key = key.wrapping_add(1);
                self.initials.insert(dcid.to_vec(), u64::from(key));
                Some(at(u64::from(key), true))
            }
            Route::Foreign => None,
        }
    }

    /// QUIC's Retry (RFC 9000 Sec. 8.1): an Initial without a token gets one, bound to its source by
    /// the Retry's connection ID ([`tailcut_proto::dcquic::retry`]); one that brings a valid token
    /// to an ID tagged with its own source address may open.
    fn check_address(
        &mut self,
        _id: u64,
        bytes: &[u8],
        from: SocketAddr,
        now: Time,
        reply: &mut Vec<u8>,
    ) -> AddressProof {
        let Route::Long { dcid, .. } = route(bytes) else {
            return AddressProof::Refused;
        };
        // What the engine of a new association would see: its first path.
        let pkt = DcquicEngine::decode(bytes, Ecn::NotEct, 0).map(|(p, _)| p);
        let gate = match pkt {
            Some(pkt) => {
                // The tag of `from` a Retry's connection ID carries.
                let tags = &self.tags;
                let tag = || tags.token(now, from, <DcquicEngine as Codec>::SCHEME, 0);
                self.gate.check(now, &pkt, bytes, tag, reply)
            }
            None => Gate::Refused,
        };
        // The Retry's tag (in the connection ID the client echoes) says the token came to `from`;
        // checked only for a token quinn validated.
        let tagged = || {
            retry_cid_tag(dcid)
                .is_some_and(|t| self.tags.valid(now, from, <DcquicEngine as Codec>::SCHEME, 0, t))
        };
        let proof = match gate {
            Gate::Validated if tagged() => AddressProof::Shown,
            Gate::Validated | Gate::Refused => AddressProof::Refused,
            Gate::Replied => AddressProof::Challenged,
        };
        if proof != AddressProof::Shown {
            // `route` noted the Initial's ID for the association it would have opened.
            self.initials.remove(dcid);
        }
        proof
    }

    fn open(&mut self, id: u64, now: Time) -> Option<(DcquicEngine, ())> {
        let tuple = FiveTuple {
            src: SERVER_ADDR,
            dst: path_addr(0),
            src_port: 1,
            dst_port: 1,
            proto: Proto::Udp,
        };
        let keys = quic_keys::server(id as u32, self.token_key.clone()).ok()?;
        let e = DcquicEngine::real_server(self.shared.clone(), tuple, keys, now).ok()?;
        Some((e, ()))
    }

    fn close(&self, e: &mut DcquicEngine, now: Time) {
        e.close(now, 0, "");
    }

    fn forget(&mut self, id: u64, _state: &()) {
        self.initials.retain(|_, v| *v != id);
    }

    fn finished(&self, e: &DcquicEngine, stats: &mut ServerStats) -> bool {
        if !e.is_done() {
            return false;
        }
        stats.associations_finished += 1;
        stats.protocol_errors += e.counters().protocol_errors;
        true
    }

    fn request(&self, e: &mut DcquicEngine, _st: &mut (), _now: Time, msg: MsgId) -> Request {
        match e.take_bytes(msg) {
            Some(data) => Request::Answer { key: msg, data },
            None => Request::None,
        }
    }

    /// A response goes out on the request's stream with the odd message id.
    fn response_msg(key: u64) -> MsgId {
        key | 1
    }

    fn respond(&self, e: &mut DcquicEngine, _st: &mut (), now: Time, key: u64, response: &[u8]) {
        e.send_bytes(
            now,
            Outgoing::Response { request: key },
            Self::response_msg(key),
            response,
        );
    }

    fn publish<'a>(&self, _engines: impl Iterator<Item = &'a DcquicEngine>, _stats: &mut ServerStats) {}
}
