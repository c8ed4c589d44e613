//! T-RACKs parameters (paper Sec. IV-A inputs, Sec. V and VI defaults) and counters.

use crate::config_error::ConfigError;
use crate::time::Dur;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Parameters of the T-RACKs shim. Defaults follow the paper: alpha = 10 RTTs (Sec. IV-C, V-C),
/// phi = 3, gamma = 100 KB and a 1 ms timer (testbed, Sec. VI), TCP min RTO 200 ms, 1 s idle timeout.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, default)]
pub struct TracksConfig {
    /// RTTs without a new ACK before spoofing: beta = alpha * RTT + rand(0..RTT).
    pub alpha: f64,
    /// The senders' dupACK threshold: the first burst spoofs `phi - dupACKs already seen` ACKs.
    pub phi: u32,
    /// Acknowledged bytes after which a flow is long-lived and no longer tracked. `None` = infinity
    /// (the paper's simulations track every flow); written `gamma = "inf"` in configuration.
    #[serde(with = "gamma_serde")]
    #[cfg_attr(feature = "schema", schemars(schema_with = "gamma_serde::schema"))]
    pub gamma: Option<Bytes>,
    /// Period of the global timer that scans the active small flows (a jiffy-driven timer in the
    /// kernel module).
    pub tick: Dur,
    /// Fixed beta replacing `alpha * RTT + rand(RTT)` (the testbed's 4 ms). `None` = computed.
    pub fixed_beta: Option<Dur>,
    /// Lower bound of the computed beta.
    pub beta_floor: Dur,
    /// RTT assumed until the first sample (TCP timestamps echo).
    pub initial_rtt: Dur,
    /// The senders' minimum RTO. The shim cannot read the VM's TCP, so it is configured; the shim
    /// stops spoofing when the next tick would reach it (Algorithm 2 line 19).
    pub min_rto: Dur,
    /// A flow with no outgoing data for this long is removed (Algorithm 2 line 24).
    pub idle_timeout: Dur,
    /// Whether the senders use SACK (a hypervisor reads it from the SYN options; our packets carry no
    /// SACK-permitted option, so the simulator sets it from the scheme's TCP configuration).
    #[serde(skip)]
    pub sack: bool,
    /// Put the paper's fake SACK block on spoofed ACKs of SACK flows (Sec. IV-C), so that an RFC 6675
    /// sender counts them as duplicates. The block claims whole segments above the last ACK (a
    /// sender, like Linux, only credits whole segments); a claimed segment that was in fact lost is
    /// recovered by the sender's SACK-reneging handling (RFC 2018 Sec. 8, docs/tcp.md). `false`:
    /// spoofed ACKs carry no block and SACK senders ignore them. See docs/tracks.md.
    pub fake_sack: bool,
    /// Bytes between the last ACK and the left edge of the fake SACK block (the paper: 40 bytes).
    pub sack_gap_bytes: u32,
    /// Most flows the table holds; a new flow beyond it evicts the least recently active one (a real
    /// host sees arbitrary numbers of connections; the kernel module sizes its table the same way).
    /// 0 = unbounded (the simulator, whose flows are finite).
    pub max_flows: usize,
    /// Where RTT samples come from. See [`RttSource`].
    pub rtt_source: RttSource,
    /// Let duplicate ACKs that carry SACK blocks through during a recovery instead of dropping them
    /// (Algorithm 1 lines 34-38 drop every real dupACK). On real Linux a SACK-carrying dupACK may be
    /// the answer to a tail loss probe, and dropping it turned TLP recoveries into RTOs
    /// (docs/tracks.md, "On real hosts"). `false` is the paper's and the simulator's behaviour.
    pub pass_sack_dupacks: bool,
    /// Which segments the fake SACK block claims. See [`FakeSackBlock`].
    pub fake_sack_block: FakeSackBlock,
    /// Never spoof for flows that use SACK (they are still tracked). For senders that recover tail
    /// losses themselves (Linux: RACK and tail loss probes), where every fake block tried made Linux
    /// detect SACK reneging and time out, and plain duplicates are ignored (docs/tracks.md, "On real
    /// hosts"). `false`: the paper's behaviour.
    pub skip_sack_flows: bool,
}

/// The fake SACK block's extent (Sec. IV-C leaves it open beyond "a gap, then a block").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum FakeSackBlock {
    /// The k-th spoofed ACK claims the k+1 segments after the last ACK: each ACK SACKs one more whole
    /// segment, so an RFC 6675 sender counts every one as a duplicate.
    #[default]
    Growing,
    /// Every spoofed ACK claims only the highest outstanding segment: one lie, so a sender that finds
    /// that segment missing after all detects SACK reneging once (Linux then waits max(srtt/2, 10 ms)).
    Highest,
}

/// How the shim measures a flow's RTT (the input of beta).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum RttSource {
    /// The ACK's timestamp echo read as microseconds of the shim's clock: true of the simulator's
    /// TCP, whose senders stamp `now` in microseconds. Spurious recoveries are detected the same way.
    #[default]
    Timestamps,
    /// The shim's own timing of one segment at a time: the time from sending new data to the first
    /// ACK that covers it, never for retransmitted data or across a recovery (Karn's rule, RFC 6298
    /// Sec. 3). For real hosts, whose timestamps (Linux: 1 kHz with a random per-connection offset)
    /// are not the shim's clock. Spurious recoveries are then detected by comparing the echo with the
    /// sender's own timestamp at the trigger, which needs no unit.
    SeqAck,
}

impl Default for TracksConfig {
    fn default() -> Self {
        TracksConfig {
            alpha: 10.0,
            phi: 3,
            gamma: Some(Bytes(100_000)),
            tick: Dur::from_millis(1),
            fixed_beta: None,
            beta_floor: Dur::ZERO,
            initial_rtt: Dur::from_micros(100),
            min_rto: Dur::from_millis(200),
            idle_timeout: Dur::from_millis(1_000),
            sack: false,
            fake_sack: true,
            sack_gap_bytes: 40,
            max_flows: 0,
            rtt_source: RttSource::Timestamps,
            pass_sack_dupacks: false,
            fake_sack_block: FakeSackBlock::Growing,
            skip_sack_flows: false,
        }
    }
}

impl TracksConfig {
    /// Checks the parameters; the error names the field.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |path: &str, reason: String| Err(ConfigError::new(path, reason));
        if !(self.alpha.is_finite() && self.alpha >= 0.0) {
            return err("alpha", format!("must be finite and >= 0, got {}", self.alpha));
        }
        // beta = alpha x RTT + rand(RTT): at 0 the shim spoofs duplicate ACKs before the ACK of a
        // packet could have come back, treating every flow as lossy.
        if self.alpha == 0.0 && self.fixed_beta.is_none() {
            return err(
                "alpha",
                "must be > 0 (beta = alpha x RTT + rand(RTT): at 0 every flow is spoofed within one RTT); \
                 give fixed_beta to set beta directly"
                    .into(),
            );
        }
        if self.phi == 0 {
            return err("phi", "must be >= 1".into());
        }
        if self.tick.0 == 0 {
            return err("tick", "must be > 0".into());
        }
        if self.min_rto <= self.tick {
            return err("min_rto", "must exceed tick".into());
        }
        if self.idle_timeout.0 == 0 {
            return err("idle_timeout", "must be > 0".into());
        }
        Ok(())
    }
}

/// What one shim did. Summed over the hosts of a run in the run info.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct TracksCounters {
    /// Spoofed duplicate ACKs delivered to the local TCP.
    pub spoofed_acks: u64,
    /// Recovery episodes started (first burst of spoofed ACKs).
    pub recoveries: u64,
    /// Recoveries whose data had in fact arrived: the first new ACK after the trigger echoes a
    /// timestamp older than the trigger (Eifel-style detection, RFC 3522, seen from the shim).
    pub spurious_recoveries: u64,
    /// Episodes abandoned because the sender's min RTO was near (the RTO handles the loss).
    pub gave_up: u64,
    /// Real duplicate ACKs dropped while recovering.
    pub dupacks_dropped: u64,
    /// Flows marked long-lived (past gamma).
    pub long_lived: u64,
    /// Flows evicted from a full table (`max_flows`).
    pub evicted: u64,
}

impl TracksCounters {
    /// Name/value pairs, for the simulator's run info.
    pub fn pairs(&self) -> Vec<(&'static str, u64)> {
        vec![
            ("tracks_spoofed_acks", self.spoofed_acks),
            ("tracks_recoveries", self.recoveries),
            ("tracks_spurious_recoveries", self.spurious_recoveries),
            ("tracks_gave_up", self.gave_up),
            ("tracks_dupacks_dropped", self.dupacks_dropped),
            ("tracks_long_lived", self.long_lived),
            ("tracks_evicted", self.evicted),
        ]
    }
}

/// `gamma`: a size ("100KB", bytes) or "inf".
mod gamma_serde {
    use crate::units::Bytes;
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    pub fn serialize<S: Serializer>(v: &Option<Bytes>, s: S) -> Result<S::Ok, S::Error> {
        match v {
            Some(b) => b.serialize(s),
            None => s.serialize_str("inf"),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Bytes>, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Num(u64),
            Str(String),
        }
        match Raw::deserialize(d)? {
            Raw::Num(n) => Ok(Some(Bytes(n))),
            Raw::Str(s) if s == "inf" || s == "infinity" => Ok(None),
            Raw::Str(s) => crate::units::parse_bytes(&s)
                .map(|b| Some(Bytes(b)))
                .map_err(serde::de::Error::custom),
        }
    }

    /// What `deserialize` accepts ("infinity" too, left out here as a spelling of "inf").
    #[cfg(feature = "schema")]
    pub fn schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "anyOf": [{ "type": "string", "const": "inf" }, g.subschema_for::<Bytes>()],
        })
    }
}
