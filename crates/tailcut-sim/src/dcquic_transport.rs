//! Registry entries for DCQUIC (`dcquic`) and its TCP baselines with a TLS 1.3 handshake
//! (`tcp_tls13`, `dctcp_tls13`).

use crate::transport::{self, ConnSetup, EngineFactory, Transport, TransportInfo};
use serde_json::{Map, Value};
use std::sync::Arc;
use tailcut_proto::dcquic::{DcquicConfig, DcquicEngine, Shared};
use tailcut_proto::reconnect::Reconnect;
use tailcut_proto::rng::Rng;
use tailcut_proto::tls13::{TlsModel, TlsTcp};
use tailcut_proto::Engine;

pub const DCQUIC: &str = "dcquic";
pub const TLS_SCHEMES: [(&str, &str); 2] = [("tcp_tls13", "tcp"), ("dctcp_tls13", "dctcp")];
pub const RECONNECT_SCHEMES: [(&str, &str); 2] = [("tcp_reconnect", "tcp"), ("dctcp_reconnect", "dctcp")];

const RECONNECT_DOCS: &[(&str, &str)] = &[(
    "reconnect_after",
    "the client reconnects from its next NIC when an RPC has made no progress this long (DCQUIC Sec. 4.3's application-level reconnection)",
)];

#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
struct ReconnectParams {
    reconnect_after: tailcut_proto::Dur,
}

impl Default for ReconnectParams {
    fn default() -> Self {
        ReconnectParams {
            reconnect_after: tailcut_proto::Dur::from_millis(1000),
        }
    }
}

struct ReconnectFactory {
    cfg: tailcut_proto::tcp::TcpConfig,
    reconnect_after: tailcut_proto::Dur,
}

impl EngineFactory for ReconnectFactory {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            Reconnect::new(
                self.cfg.clone(),
                e.tuple,
                e.opens,
                e.addrs.to_vec(),
                e.isn_local,
                e.isn_peer,
                self.reconnect_after,
                s.now,
            )
        })
    }

    fn framing(&self) -> (u64, u64) {
        (self.cfg.mss_bytes as u64, self.cfg.header_bytes as u64)
    }
}

const DCQUIC_DOCS: &[(&str, &str)] = &[
    (
        "congestion_control",
        "{ kind = \"cubic\" } | { kind = \"new_reno\" } (quinn-proto's) | { kind = \"dctcp\", g = 0.0625 } (ECN-fraction, needs aqm = ecn)",
    ),
    ("initial_window_packets", "initial congestion window, packets of the connection's MPS"),
    ("ecn", "send ECT(0) and react to CE counts (RFC 9000 13.4)"),
    ("mps", "maximum packet size negotiation (Sec. 4.2): the table of the mps.* keys below"),
    ("mps.negotiate", "choose the maximum packet size by task size (Sec. 4.2); off = mps.base"),
    ("mps.base", "MPS without negotiation (paper: 1252B)"),
    ("mps.small_task", "MPS for tasks below mps.large_task (paper: 9KB)"),
    ("mps.large_task_mps", "MPS for tasks of mps.large_task or more (paper: 5KB)"),
    ("mps.large_task", "task size from which a task is large (paper: 1MB)"),
    ("socket_buffer", "socket buffer: stream and connection receive windows and the send buffer"),
    ("initial_rtt", "RTT before the first sample (RFC 9002: 333ms; datacenter default 1ms)"),
    ("header_bytes", "IPv4 + UDP header bytes per datagram"),
    ("max_streams", "concurrent streams per direction"),
    ("migration", "proactive connection migration (Sec. 3.4.1): the table of the migration.* keys below"),
    ("migration.enabled", "proactive connection migration at the client (Sec. 3.4.1)"),
    ("migration.long_window", "W: long-term window of streams (paper: 50)"),
    ("migration.short_window", "w: short-term window of streams (paper: 10)"),
    ("migration.alpha", "alpha: fluctuation threshold on the per-byte completion-time ratio (paper: 2)"),
    (
        "migration.check_interval",
        "how often in-flight RPCs are checked (their elapsed time is a lower bound on completion)",
    ),
    (
        "zero_rtt",
        "0-RTT resumption: a client host keeps session tickets per server (deterministic store) and sends its requests with the first flight of later connections",
    ),
    (
        "tail_fec",
        "not in the paper: after each message, an XOR parity of its tail in QUIC DATAGRAM frames; a receiver missing at most one MTU of the tail rebuilds it and delivers at once (QUIC still retransmits)",
    ),
    (
        "tail_fec_packets",
        "k: the protected tail is the message's last k chunks of one path MTU (the parity is one MTU whatever k; 4 covers the last packets QUIC's 3-packet threshold cannot declare lost, plus one)",
    ),
];

const TLS_DOCS: &[(&str, &str)] = &[
    ("tls_client_hello", "ClientHello bytes (first client flight)"),
    (
        "tls_server_flight",
        "ServerHello .. Finished bytes (certificate and its verify included)",
    ),
    ("tls_client_finished", "client Finished bytes"),
];

struct DcquicFactory {
    shared: Arc<Shared>,
}

impl EngineFactory for DcquicFactory {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            DcquicEngine::new(
                self.shared.clone(),
                e.tuple,
                e.opens,
                e.addrs.to_vec(),
                s.size_bytes,
                e.rng,
                s.now,
            )
        })
    }

    fn framing(&self) -> (u64, u64) {
        let c = &self.shared.cfg;
        let mps = if c.mps.negotiate {
            c.mps.small_task.0
        } else {
            c.mps.base.0
        };
        (mps, c.header_bytes as u64)
    }
}

struct TlsTcpFactory {
    inner: Transport,
    tls: TlsModel,
}

impl EngineFactory for TlsTcpFactory {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        let (a, b) = self.inner.connect(s, rng_sender, rng_receiver);
        (
            Box::new(TlsTcp::new(a, s.sender_opens, self.tls.clone(), s.now)),
            Box::new(TlsTcp::new(b, !s.sender_opens, self.tls.clone(), s.now)),
        )
    }

    fn framing(&self) -> (u64, u64) {
        self.inner.framing()
    }
}

/// Deep overlay: tables merge key by key, anything else replaces.
fn overlay(base: &mut Map<String, Value>, over: &Map<String, Value>) {
    for (k, v) in over {
        match (base.get_mut(k), v) {
            (Some(Value::Object(b)), Value::Object(o)) => overlay(b, o),
            _ => {
                base.insert(k.clone(), v.clone());
            }
        }
    }
}

fn to_map<T: serde::Serialize>(v: &T) -> Map<String, Value> {
    match serde_json::to_value(v).expect("serialisable") {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

fn parse<T: serde::de::DeserializeOwned>(m: Map<String, Value>) -> Result<T, String> {
    serde_path_to_error::deserialize(Value::Object(m))
        .map_err(|e| format!("params.{}: {}", e.path(), e.inner()))
}

/// The `Instant` the DCQUIC engines lay simulated time on (quinn-proto's time type cannot be built from a
/// number). The driver reads the clock once for it; only differences from it are used, so it never
/// affects a result (as `run::WallClock`, the other allowed read).
fn quic_epoch() -> std::time::Instant {
    #[allow(clippy::disallowed_methods)]
    std::time::Instant::now()
}

/// Resolves `dcquic`, `tcp_tls13` or `dctcp_tls13`; `None` for any other name.
pub fn resolve(name: &str, params: &Map<String, Value>) -> Option<Result<Transport, String>> {
    if name == DCQUIC {
        let mut m = to_map(&DcquicConfig::default());
        overlay(&mut m, params);
        return Some(parse::<DcquicConfig>(m).and_then(|cfg| {
            cfg.validate().map_err(|e| format!("params.{e}"))?;
            Ok(Transport::Custom(Arc::new(DcquicFactory {
                shared: Arc::new(Shared::new(cfg, quic_epoch())),
            })))
        }));
    }
    if let Some((_, base)) = RECONNECT_SCHEMES.iter().find(|(n, _)| *n == name) {
        let mut own = to_map(&ReconnectParams::default());
        let mut rest = Map::new();
        for (k, v) in params {
            if own.contains_key(k) {
                own.insert(k.clone(), v.clone());
            } else {
                rest.insert(k.clone(), v.clone());
            }
        }
        return Some((|| {
            let p: ReconnectParams = parse(own)?;
            if p.reconnect_after.0 == 0 {
                return Err("params.reconnect_after: must be > 0".into());
            }
            rest.entry("handshake").or_insert(Value::Bool(true));
            match transport::resolve(base, &rest)? {
                Transport::Tcp(t) => Ok(Transport::Custom(Arc::new(ReconnectFactory {
                    cfg: t.cfg,
                    reconnect_after: p.reconnect_after,
                }))),
                _ => Err("transport: reconnecting TCP needs a TCP base".into()),
            }
        })());
    }
    let (_, base) = TLS_SCHEMES.iter().find(|(n, _)| *n == name)?;
    let mut tls = to_map(&TlsModel::default());
    let mut rest = Map::new();
    for (k, v) in params {
        if tls.contains_key(k) {
            tls.insert(k.clone(), v.clone());
        } else {
            rest.insert(k.clone(), v.clone());
        }
    }
    Some((|| {
        let tls: TlsModel = parse(tls)?;
        tls.validate().map_err(|e| format!("params.{e}"))?;
        let mut rest = rest;
        // The TLS handshake rides on TCP's: it needs the 3-way handshake modelled.
        rest.entry("handshake").or_insert(Value::Bool(true));
        let inner = transport::resolve(base, &rest)?;
        Ok(Transport::Custom(Arc::new(TlsTcpFactory { inner, tls })))
    })())
}

/// The registry entries of this module.
pub fn registry() -> Vec<TransportInfo> {
    let mut out = vec![TransportInfo {
        name: DCQUIC,
        description: "DCQUIC (seed 004): QUIC (quinn-proto) with RPCs as streams, MPS by task size, pluggable CC, proactive connection migration",
        params: Value::Object(to_map(&DcquicConfig::default())),
        docs: DCQUIC_DOCS.to_vec(),
    }];
    for (name, base) in RECONNECT_SCHEMES {
        let description = if base == "tcp" {
            "TCP RPC client that reconnects from its next NIC at application level (DCQUIC Sec. 4.3 baseline)"
        } else {
            "DCTCP RPC client that reconnects from its next NIC at application level (DCQUIC Sec. 4.3 baseline)"
        };
        let extra = to_map(&ReconnectParams::default());
        out.push(over_tcp(name, base, description, extra, RECONNECT_DOCS));
    }
    for (name, base) in TLS_SCHEMES {
        let description = if base == "tcp" {
            "TCP with its 3-way handshake plus a TLS 1.3 handshake (one more round trip and its bytes) before data"
        } else {
            "DCTCP with its 3-way handshake plus a TLS 1.3 handshake (one more round trip and its bytes) before data"
        };
        out.push(over_tcp(
            name,
            base,
            description,
            to_map(&TlsModel::default()),
            TLS_DOCS,
        ));
    }
    out
}

/// A registry entry for a scheme layered over a built-in TCP transport: the base's parameters and docs
/// (with the handshake on, which both layers need) plus the layer's own.
fn over_tcp(
    name: &'static str,
    base: &str,
    description: &'static str,
    extra: Map<String, Value>,
    extra_docs: &[(&'static str, &'static str)],
) -> TransportInfo {
    let info = transport::builtin_registry()
        .into_iter()
        .find(|t| t.name == base)
        .expect("base registered");
    let mut params = match info.params {
        Value::Object(m) => m,
        _ => Map::new(),
    };
    params.insert("handshake".into(), Value::Bool(true));
    params.extend(extra);
    let mut docs = info.docs;
    docs.extend_from_slice(extra_docs);
    TransportInfo {
        name,
        description,
        params: Value::Object(params),
        docs,
    }
}
