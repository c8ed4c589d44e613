//! Schemes built on the TCP endpoint: every TCP option is a parameter of theirs, next to their own. A
//! [`TcpScheme`] declares its TCP defaults and its own parameters and builds its transport from the
//! resolved TCP transport; [`OverTcp`] makes it a registry [`Scheme`].

use super::{bad, overlay, params_of, parse, split, to_map, Doc, Param, Scheme};
use crate::SchemeSpec;
use crate::{EngineSpec, ReplicaPolicy, SwitchDefault};
use serde::de::DeserializeOwned;
use serde::Serialize;
use serde_json::{Map, Value};
use tailcut_proto::tcp::{CongestionControl, CubicConfig, DelayedAck, TcpConfig};
use tailcut_proto::{ConfigError, Dur};

/// A TCP-based scheme: its TCP defaults, its own parameters and what it does with them.
pub trait TcpScheme: Sync {
    /// The scheme's own parameters (not TCP's); `()`-like empty structs for schemes that have none.
    type Params: Serialize + DeserializeOwned;
    fn name(&self) -> &'static str;
    fn description(&self) -> &'static str;
    /// TCP's configuration before the user's keys are laid over it.
    fn tcp_defaults(&self) -> TcpConfig {
        TcpConfig::default()
    }
    fn defaults(&self) -> Self::Params;
    /// One line per parameter of `Params`, optional ones included.
    fn docs(&self) -> &'static [Doc];
    /// Checks the scheme's parameters against the resolved TCP configuration (`t.cfg`) and builds the
    /// transport, typically by setting the scheme's switches in `t.cfg` and its network needs in `t`.
    fn build(&self, p: Self::Params, t: TcpParts) -> Result<SchemeSpec, ConfigError>;
}

/// A TCP scheme being built: the endpoint's configuration, and the replication and switch queues the
/// scheme adds around it.
#[derive(Clone, Debug, PartialEq)]
pub struct TcpParts {
    pub cfg: TcpConfig,
    pub replicas: ReplicaPolicy,
    pub switch: SwitchDefault,
}

impl From<TcpConfig> for TcpParts {
    fn from(cfg: TcpConfig) -> Self {
        TcpParts {
            cfg,
            replicas: ReplicaPolicy::default(),
            switch: SwitchDefault::Unchanged,
        }
    }
}

impl TcpParts {
    /// The scheme of a plain TCP endpoint with these parts.
    pub fn into_spec(self) -> SchemeSpec {
        SchemeSpec {
            replicas: self.replicas,
            switch: self.switch,
            ..SchemeSpec::of(EngineSpec::Tcp(self.cfg))
        }
    }
}

/// A [`TcpScheme`] in the registry.
pub struct OverTcp<S>(pub S);

impl<S: TcpScheme> Scheme for OverTcp<S> {
    fn name(&self) -> &'static str {
        self.0.name()
    }

    fn description(&self) -> &'static str {
        self.0.description()
    }

    fn params(&self) -> Vec<Param> {
        let mut all = tcp_params(&self.0.tcp_defaults(), TCP_DOCS);
        all.extend(params_of(&to_map(&self.0.defaults()), self.0.docs()));
        all
    }

    fn resolve_filled(
        &self,
        params: &Map<String, Value>,
    ) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
        let docs = self.0.docs();
        let (own, tcp) = split(params, |k| docs.iter().any(|(n, _)| *n == k));
        let cfg = tcp_config(self.0.tcp_defaults(), tcp, params)?;
        let own: S::Params = parse(overlay(to_map(&self.0.defaults()), own))?;
        let mut filled = tcp_table(&cfg);
        filled.extend(to_map(&own));
        Ok((self.0.build(own, TcpParts::from(cfg))?, filled))
    }
}

/// Every TCP option of `cfg` at its value, as a `params` table (unset optional ones absent).
pub fn tcp_table(cfg: &TcpConfig) -> Map<String, Value> {
    let mut t = to_map(cfg);
    t.insert("spray_paths".into(), cfg.spray_paths.into());
    t
}

/// TCP's options with their defaults in `cfg`, documented by `docs` (the multipath schemes reword one).
pub fn tcp_params(cfg: &TcpConfig, docs: &[Doc]) -> Vec<Param> {
    // Serialisation leaves spraying out when it is off (the default), but it is a TCP option.
    params_of(&tcp_table(cfg), docs)
}

/// The TCP configuration: `user` (the user's TCP keys) laid over `base`, checked. `all` is the scheme's
/// whole `params` table.
pub fn tcp_config(
    base: TcpConfig,
    user: Map<String, Value>,
    all: &Map<String, Value>,
) -> Result<TcpConfig, ConfigError> {
    let mut merged = to_map(&base);
    merged.extend(user);
    let mut cfg: TcpConfig = parse(merged)?;
    // The host profile sets the rules it governs unless the user gave them (docs/tcp.md, "Host
    // profiles"); the base's values of those rules are the default profile's.
    cfg.host.apply(&mut cfg, |k| all.contains_key(k));
    // Without a handshake the first flight has no RTT sample, and RFC 6298's 1 s initial RTO would turn
    // any loss in it into a 1 s stall that a real connection (sampled on its SYN) never sees. Datacenter
    // simulations set the initial RTO to the min RTO for this reason (ns-2: rtxcur_init_ = minrto_).
    if !cfg.handshake && !all.contains_key("initial_rto") {
        cfg.initial_rto = cfg.min_rto;
    }
    validate(&cfg)?;
    Ok(cfg)
}

/// Largest `timer_hz`.
const MAX_TIMER_HZ: u32 = 10_000;
/// Longest application wake-up (`host_delay`).
const MAX_HOST_DELAY: Dur = Dur::from_millis(1_000);

/// Largest segment payload: a 65535-byte IP packet less 40 bytes of IP and TCP headers.
const MAX_MSS_BYTES: u32 = 65_495;

fn validate(c: &TcpConfig) -> Result<(), ConfigError> {
    if c.mss_bytes == 0 {
        return bad("mss_bytes", "must be > 0");
    }
    // An IP packet is at most 65535 bytes; the segment's IP and TCP headers take at least 40.
    if c.mss_bytes > MAX_MSS_BYTES {
        return bad(
            "mss_bytes",
            format!(
                "must be at most {MAX_MSS_BYTES} (an IP packet holds at most 65535 bytes), got {}",
                c.mss_bytes
            ),
        );
    }
    // A window below one segment lets no full segment through: every flow would stay unfinished.
    if c.rcv_window_bytes < c.mss_bytes {
        return bad(
            "rcv_window_bytes",
            format!(
                "must hold at least one segment (mss_bytes = {}), got {}",
                c.mss_bytes, c.rcv_window_bytes
            ),
        );
    }
    if c.initial_cwnd_segments == 0 {
        return bad("initial_cwnd_segments", "must be >= 1");
    }
    if c.min_rto.0 == 0 || c.min_rto > c.max_rto {
        return bad(
            "min_rto",
            format!("must be > 0 and <= max_rto, got {}", c.min_rto),
        );
    }
    if c.dupack_threshold == 0 {
        return bad("dupack_threshold", "must be >= 1");
    }
    // Kernels build with HZ between 100 and 1000; 10 000 (100 us jiffies) leaves room to explore.
    if c.timer_hz > MAX_TIMER_HZ {
        return bad(
            "timer_hz",
            format!(
                "must be 0 (exact timers) or at most {MAX_TIMER_HZ}, got {}",
                c.timer_hz
            ),
        );
    }
    // A wake-up is microseconds to milliseconds; an application asleep for seconds is a stalled host.
    for (key, d) in [
        ("host_delay.write_after_connect", c.host_delay.write_after_connect),
        ("host_delay.read_after_arrival", c.host_delay.read_after_arrival),
    ] {
        if d > MAX_HOST_DELAY {
            return bad(key, format!("must be at most 1s, got {d}"));
        }
    }
    if c.rack.reo_wnd_min_rtt_divisor == 0 {
        return bad("rack.reo_wnd_min_rtt_divisor", "must be >= 1");
    }
    if let Some(DelayedAck::Linux(l)) = c.delayed_ack {
        // A zero ATO would restart Linux's ACK engine on every segment (zero means "no data yet").
        if l.ato_min.0 == 0 {
            return bad("delayed_ack.ato_min", "must be > 0");
        }
        if l.delack_min.0 == 0 {
            return bad("delayed_ack.delack_min", "must be > 0");
        }
        if l.delack_max.0 == 0 {
            return bad(
                "delayed_ack.delack_max",
                "must be > 0 (leave delayed_ack out to acknowledge every segment at once)",
            );
        }
    }
    if let CongestionControl::Dctcp { g } = c.congestion_control {
        if !(g > 0.0 && g <= 1.0) {
            return bad("congestion_control.g", format!("must be in (0, 1], got {g}"));
        }
        if !c.ecn {
            return bad("ecn", "DCTCP needs ecn = true");
        }
    }
    if let CongestionControl::Cubic(k) = c.congestion_control {
        validate_cubic(&k)?;
    }
    Ok(())
}

/// Cubic's parameters: each must keep Linux's integer arithmetic meaningful (`tcp_cubic.c` keeps beta
/// in 1/1024 and C as `bic_scale` = C * 1024 / 10).
fn validate_cubic(k: &CubicConfig) -> Result<(), ConfigError> {
    // beta rounds to a whole 1/1024 in [1, 1023].
    if !(k.beta > 0.0 && k.beta < 1.0)
        || (k.beta * 1024.0).round() < 1.0
        || (k.beta * 1024.0).round() > 1023.0
    {
        return bad(
            "congestion_control.beta",
            format!(
                "must be in (0, 1) and at least 1/1024 from either end, got {}",
                k.beta
            ),
        );
    }
    // bic_scale = round(C * 102.4) >= 1; C above 1000 would overflow Linux's 32-bit scale.
    if !(k.c.is_finite() && (k.c * 102.4).round() >= 1.0 && k.c <= 1000.0) {
        return bad(
            "congestion_control.c",
            format!("must be in [0.005, 1000] (segments / s^3), got {}", k.c),
        );
    }
    if k.hystart && k.hystart_low_window_segments == 0 {
        return bad(
            "congestion_control.hystart_low_window_segments",
            "must be >= 1 (Linux: 16)",
        );
    }
    if !(100..=10_000).contains(&k.hz) {
        return bad(
            "congestion_control.hz",
            format!(
                "must be a kernel tick rate in [100, 10000] (CONFIG_HZ: 100, 250, 300 or 1000), got {}",
                k.hz
            ),
        );
    }
    Ok(())
}

/// DCTCP (RFC 8257) defaults: ECN on, g = 1/16.
pub fn dctcp_cfg() -> TcpConfig {
    TcpConfig {
        ecn: true,
        congestion_control: CongestionControl::Dctcp { g: 1.0 / 16.0 },
        ..TcpConfig::default()
    }
}

/// The parameters of a scheme that adds none to TCP's.
#[derive(Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NoParams {}

/// A scheme that adds no parameter to TCP's: a TCP base and the engine switches it turns on are all it
/// is (`tcp`, `dctcp`, `proactive`).
pub struct Plain {
    pub name: &'static str,
    pub description: &'static str,
    pub base: fn() -> TcpConfig,
    /// The scheme's switches, set on the resolved configuration (the user cannot turn them off).
    pub set: fn(&mut TcpConfig),
}

impl TcpScheme for Plain {
    type Params = NoParams;

    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn tcp_defaults(&self) -> TcpConfig {
        (self.base)()
    }

    fn defaults(&self) -> NoParams {
        NoParams {}
    }

    fn docs(&self) -> &'static [Doc] {
        &[]
    }

    fn build(&self, _: NoParams, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        (self.set)(&mut t.cfg);
        Ok(t.into_spec())
    }
}

/// What a handshake-level layer adds to a TCP base (a TLS 1.3 handshake, an application that
/// reconnects): its own parameters and the engine it makes of the resolved TCP. Defined once and
/// registered over TCP and over DCTCP ([`OnTcpBase`]).
pub trait Layer: Sync {
    type Params: Serialize + DeserializeOwned;
    fn defaults(&self) -> Self::Params;
    fn docs(&self) -> &'static [Doc];
    fn build(&self, p: Self::Params, t: TcpParts) -> Result<SchemeSpec, ConfigError>;
}

/// A [`Layer`] over one TCP base, with the 3-way handshake modelled: the layer's handshake (TLS) rides
/// on TCP's, and a reconnection is a new connection with its own.
pub struct OnTcpBase<L> {
    pub name: &'static str,
    pub description: &'static str,
    pub base: fn() -> TcpConfig,
    pub layer: L,
}

impl<L: Layer> TcpScheme for OnTcpBase<L> {
    type Params = L::Params;

    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn tcp_defaults(&self) -> TcpConfig {
        TcpConfig {
            handshake: true,
            ..(self.base)()
        }
    }

    fn defaults(&self) -> L::Params {
        self.layer.defaults()
    }

    fn docs(&self) -> &'static [Doc] {
        self.layer.docs()
    }

    fn build(&self, p: L::Params, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        self.layer.build(p, t)
    }
}

/// Every TCP option; `tcp_config` reads them.
pub const TCP_DOCS: &[Doc] = &[
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
    (
        "loss_detection",
        "\"rack_tlp\" (RFC 8985, Linux >= 4.18; needs sack) or \"dupthresh\" (RFC 6675 DupThresh, the ns-2 baselines')",
    ),
    (
        "rack",
        "RACK-TLP: { reo_wnd_min_rtt_divisor = 4, tlp = true, tlp_delayed_ack_allowance = min_rto, tlp_min_extra = \"2ms\" } (docs/tcp.md)",
    ),
    (
        "rto_backoff",
        "\"linux\" (an ACK of a retransmission gives an RTT sample and ends the back-off) or \"karn\" (RFC 6298 without timestamps)",
    ),
    (
        "host",
        "host profile: \"linux\" (current Linux), \"paper\" (the papers' ns-2 sender) or \"testbed\" (Linux as the testbed's hosts run it: linux plus handshake, timer_hz = 250 and the measured host_delay); sets the defaults of prr, rto_restart_on_retransmit, rto_estimator, dsack and cwnd_limited, and for testbed of handshake, timer_hz and host_delay (docs/tcp.md, Host profiles)",
    ),
    (
        "timer_hz",
        "Linux's timer granularity: timers in jiffies at this HZ on the kernel's timer wheel (min_rto rounded up to whole jiffies, every timer fired at a tick, up to one wheel bucket late); 0 = exact; default from host (250 for testbed)",
    ),
    (
        "host_delay",
        "the application's wake-ups: { write_after_connect = \"0s\" (from the handshake's end to the first write; only with handshake), read_after_arrival = \"0s\" (from a message's last byte to its read: the flow's end, a server's answer) }; default from host (testbed: 100us and 50us, measured on the testbed, docs/testbed.md)",
    ),
    (
        "rto_estimator",
        "\"linux\" (RTO = SRTT + max(4 mdev, min_rto), Linux tcp_rtt_estimator) or \"rfc6298\" (RTO = max(SRTT + 4 RTTVAR, min_rto)); default from host",
    ),
    (
        "rto_restart_on_retransmit",
        "retransmitting the first unacknowledged segment restarts the RTO (Linux tcp_xmit_retransmit_queue; RFC 6298 does not); default from host",
    ),
    (
        "prr",
        "Proportional Rate Reduction in fast recovery (RFC 6937, Linux tcp_cwnd_reduction; needs sack); default from host",
    ),
    (
        "cwnd_limited",
        "cwnd grows only while it limits the sender (Linux tcp_is_cwnd_limited): filled within the last round trip, or in slow start below twice the most data then in flight; off: every ACK of new data grows it, also when the application limits the sender; default from host",
    ),
    (
        "dsack",
        "D-SACK (RFC 2883): the receiver reports duplicates (Linux tcp_dsack_set) and the sender undoes reductions they prove spurious, grows RACK's reordering window and checks a loss probe's outcome (tcp_try_undo_dsack, tcp_rack_update_reo_wnd, tcp_process_tlp_ack); default from host",
    ),
    ("limited_transmit", "RFC 3042 limited transmit"),
    ("early_retransmit", "RFC 5827 early retransmit"),
    (
        "delayed_ack",
        "delayed ACKs: a fixed timeout (\"1ms\": ACK every second full segment or after it), or Linux's rules { kind = \"linux\", ato_min = \"40ms\", delack_min = \"40ms\", delack_max = \"200ms\", quickacks_max = 16 } (quick-ACK mode, adaptive ATO; docs/tcp.md); absent = ACK every segment",
    ),
    ("handshake", "model the 3-way handshake"),
    (
        "slow_start_after_idle",
        "restart from the initial window after an idle RTO (RFC 5681 4.1)",
    ),
    ("ecn", "ECN-capable data and ECN echo (RFC 3168)"),
    (
        "congestion_control",
        "{ kind = \"new_reno\" }, { kind = \"dctcp\", g = 0.0625 } or { kind = \"cubic\" } (Linux's tcp_cubic with HyStart; keys beta = 0.7002, c = 0.4, fast_convergence, tcp_friendliness, hystart, hystart_ack_train, hystart_delay, hystart_low_window_segments = 16, hystart_ack_delta = \"2ms\", gso_max_size_bytes = 65536, hz = 1000; docs/tcp.md)",
    ),
    (
        "spray_paths",
        "per-packet spraying: data segment i takes source-routed path i mod spray_paths (ACKs keep the connection's route); 0 = the connection's ECMP route",
    ),
];
