//! The transport registry: maps a scheme's `transport` name and parameters to engine factories.
//! Adding a scheme means adding a variant here and its engine in `tailcut-proto`.

use serde::Serialize;
use serde_json::{Map, Value};
use std::sync::Arc;
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::{CongestionControl, Role, TcpConfig, TcpEndpoint};
use tailcut_proto::{Engine, FiveTuple, Seq, Time};

/// A resolved transport.
#[derive(Clone)]
pub enum Transport {
    Tcp(TcpConfig),
    /// Engines from outside the registry (Rust users plugging in their own protocol, and tests).
    Custom(Arc<dyn EngineFactory>),
}

/// Builds the engines of one connection for a transport outside the registry.
pub trait EngineFactory: Send + Sync {
    /// (data-sender side, data-receiver side).
    fn connect(
        &self,
        setup: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>);
    /// (payload bytes per packet, header bytes per packet).
    fn framing(&self) -> (u64, u64);
}

/// What `tailcut schemes` lists.
#[derive(Serialize)]
pub struct TransportInfo {
    pub name: &'static str,
    pub description: &'static str,
    pub params: Value,
    pub docs: Vec<(&'static str, &'static str)>,
}

const TCP_DOCS: &[(&str, &str)] = &[
    ("mss_bytes", "maximum segment size, payload bytes"),
    ("header_bytes", "IP+TCP header bytes per segment on the wire"),
    (
        "initial_cwnd_segments",
        "initial congestion window, segments (RFC 6928)",
    ),
    ("rcv_window_bytes", "advertised receive window, bytes"),
    (
        "min_rto",
        "lower bound of the retransmission timeout (RFC 6298 2.4; Linux 200ms)",
    ),
    ("max_rto", "upper bound of the RTO after back-off"),
    (
        "initial_rto",
        "RTO before the first RTT sample (RFC 6298 2.1: 1s); defaults to min_rto when handshake is off",
    ),
    ("sack", "selective acknowledgements and RFC 6675 recovery"),
    (
        "dupack_threshold",
        "duplicate ACKs that start fast retransmit (RFC 5681)",
    ),
    ("limited_transmit", "RFC 3042 limited transmit"),
    ("early_retransmit", "RFC 5827 early retransmit"),
    ("delayed_ack", "delayed-ACK timeout; absent = ACK every segment"),
    ("handshake", "model the 3-way handshake"),
    (
        "slow_start_after_idle",
        "restart from the initial window after an idle RTO (RFC 5681 4.1)",
    ),
    ("ecn", "ECN-capable data and ECN echo (RFC 3168)"),
    (
        "congestion_control",
        "{ kind = \"new_reno\" } or { kind = \"dctcp\", g = 0.0625 }",
    ),
];

fn tcp_defaults(name: &str) -> Option<TcpConfig> {
    match name {
        "tcp" => Some(TcpConfig::default()),
        "dctcp" => Some(TcpConfig {
            ecn: true,
            congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
            ..TcpConfig::default()
        }),
        _ => None,
    }
}

pub const NAMES: &[(&str, &str)] = &[
    (
        "tcp",
        "TCP NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO",
    ),
    (
        "dctcp",
        "DCTCP (RFC 8257) over the same TCP; needs ECN marking at switches (aqm = ecn)",
    ),
];

/// Every registered transport with its default parameters.
pub fn registry() -> Vec<TransportInfo> {
    NAMES
        .iter()
        .map(|(name, description)| TransportInfo {
            name,
            description,
            params: serde_json::to_value(tcp_defaults(name).expect("registered")).expect("serialisable"),
            docs: TCP_DOCS.to_vec(),
        })
        .collect()
}

/// Resolves `transport` + `params` (user keys overlaid on the transport's defaults). Errors name the
/// offending key relative to the scheme.
pub fn resolve(name: &str, params: &Map<String, Value>) -> Result<Transport, String> {
    let base = tcp_defaults(name).ok_or_else(|| {
        let known: Vec<&str> = NAMES.iter().map(|(n, _)| *n).collect();
        format!(
            "transport: unknown transport '{name}' (known: {})",
            known.join(", ")
        )
    })?;
    let mut merged = match serde_json::to_value(&base).expect("serialisable") {
        Value::Object(m) => m,
        _ => unreachable!("TcpConfig serialises to a map"),
    };
    for (k, v) in params {
        merged.insert(k.clone(), v.clone());
    }
    let mut cfg: TcpConfig = serde_path_to_error::deserialize(Value::Object(merged))
        .map_err(|e| format!("params.{}: {}", e.path(), e.inner()))?;
    // Without a handshake the first flight has no RTT sample, and RFC 6298's 1 s initial RTO would turn
    // any loss in it into a 1 s stall that a real connection (sampled on its SYN) never sees. Datacenter
    // simulations set the initial RTO to the min RTO for this reason (ns-2: rtxcur_init_ = minrto_).
    if !cfg.handshake && !params.contains_key("initial_rto") {
        cfg.initial_rto = cfg.min_rto;
    }
    validate_tcp(&cfg).map_err(|e| format!("params.{e}"))?;
    Ok(Transport::Tcp(cfg))
}

fn validate_tcp(c: &TcpConfig) -> Result<(), String> {
    if c.mss_bytes == 0 {
        return Err("mss_bytes: must be > 0".into());
    }
    if c.initial_cwnd_segments == 0 {
        return Err("initial_cwnd_segments: must be >= 1".into());
    }
    if c.min_rto.0 == 0 || c.min_rto > c.max_rto {
        return Err(format!("min_rto: must be > 0 and <= max_rto, got {}", c.min_rto));
    }
    if c.dupack_threshold == 0 {
        return Err("dupack_threshold: must be >= 1".into());
    }
    if let CongestionControl::Dctcp { g } = c.congestion_control {
        if !(g > 0.0 && g <= 1.0) {
            return Err(format!("congestion_control.g: must be in (0, 1], got {g}"));
        }
        if !c.ecn {
            return Err("ecn: DCTCP needs ecn = true".into());
        }
    }
    Ok(())
}

/// Everything an engine factory needs for one connection.
pub struct ConnSetup {
    /// Data-sender side's tuple (sender -> receiver).
    pub tuple: FiveTuple,
    /// Whether the data sender opens the connection (false for request/response, where the client
    /// that receives the data opens it).
    pub sender_opens: bool,
    pub isn_sender: Seq,
    pub isn_receiver: Seq,
    pub now: Time,
}

impl Transport {
    /// Builds the two engines of a connection: (data-sender side, data-receiver side).
    pub fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        match self {
            Transport::Tcp(cfg) => {
                let (rs, rr) = if s.sender_opens {
                    (Role::Client, Role::Server)
                } else {
                    (Role::Server, Role::Client)
                };
                let a = TcpEndpoint::new(
                    cfg.clone(),
                    s.tuple,
                    rs,
                    s.isn_sender,
                    s.isn_receiver,
                    rng_sender,
                    s.now,
                );
                let b = TcpEndpoint::new(
                    cfg.clone(),
                    s.tuple.reversed(),
                    rr,
                    s.isn_receiver,
                    s.isn_sender,
                    rng_receiver,
                    s.now,
                );
                (Box::new(a), Box::new(b))
            }
            Transport::Custom(f) => f.connect(s, rng_sender, rng_receiver),
        }
    }

    /// (payload bytes per packet, header bytes per packet), for the ideal FCT.
    pub fn framing(&self) -> (u64, u64) {
        match self {
            Transport::Tcp(c) => (c.mss_bytes as u64, c.header_bytes as u64),
            Transport::Custom(f) => f.framing(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailcut_proto::Dur;

    fn tcp(params: serde_json::Value) -> TcpConfig {
        match resolve("tcp", params.as_object().unwrap()).unwrap() {
            Transport::Tcp(c) => c,
            Transport::Custom(_) => unreachable!(),
        }
    }

    #[test]
    fn initial_rto_follows_min_rto_only_without_a_handshake() {
        let c = tcp(serde_json::json!({ "min_rto": "5ms" }));
        assert_eq!(c.initial_rto, Dur::from_millis(5));
        let c = tcp(serde_json::json!({ "min_rto": "5ms", "handshake": true }));
        assert_eq!(c.initial_rto, Dur::from_millis(1000));
        let c = tcp(serde_json::json!({ "min_rto": "5ms", "initial_rto": "3s" }));
        assert_eq!(c.initial_rto, Dur::from_millis(3000));
    }

    #[test]
    fn dctcp_defaults_and_param_errors() {
        match resolve("dctcp", &Map::new()).unwrap() {
            Transport::Tcp(c) => {
                assert!(c.ecn && matches!(c.congestion_control, CongestionControl::Dctcp { .. }))
            }
            Transport::Custom(_) => unreachable!(),
        }
        let bad = serde_json::json!({ "ecn": false });
        assert!(resolve("dctcp", bad.as_object().unwrap())
            .err()
            .unwrap()
            .contains("ecn"));
        let bad = serde_json::json!({ "min_rtto": "5ms" });
        assert!(resolve("tcp", bad.as_object().unwrap())
            .err()
            .unwrap()
            .contains("min_rtto"));
    }
}
