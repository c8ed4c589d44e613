//! The agent's TOML configuration: where to tap, and the shim's own parameters (the paper's alpha,
//! phi, gamma, tick, back-off and min RTO) in a `[tracks]` table read into the unchanged
//! `TracksConfig`.

use serde::Deserialize;
use tailcut_proto::tracks::{RttSource, TracksConfig};
use tailcut_proto::{ConfigError, Dur};

/// How the agent sees packets.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Backend {
    /// iptables `-j NFQUEUE`: packets wait in the kernel for the agent's verdict.
    #[default]
    Nfqueue,
    /// A BPF program on the NIC's tcx hooks: packets never wait; header copies reach the agent
    /// through a ring buffer and duplicate ACKs are dropped in the kernel (Linux >= 6.6, clang and
    /// libbpf-dev on the host).
    Bpf,
}

#[derive(Clone, Debug, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AgentConfig {
    /// The NIC whose TCP traffic is watched (data leaving on it, ACKs arriving on it).
    pub interface: String,
    #[serde(default)]
    pub backend: Backend,
    /// NFQUEUE queue number; also names the agent's iptables chains.
    #[serde(default = "default_queue")]
    pub queue: u16,
    /// Packets the kernel holds for the agent before fail-open accepts the rest.
    #[serde(default = "default_queue_max_len")]
    pub queue_max_len: u32,
    /// `backend = "bpf"`: size of the ring buffer of header copies (a power of two); when it is
    /// full, packets pass unseen and are counted (`tap_missed`).
    #[serde(default = "default_ring_bytes")]
    pub ring_bytes: tailcut_proto::units::Bytes,
    /// Whether the local senders use SACK: `None` reads `net.ipv4.tcp_sack` at start. The shim
    /// puts its fake SACK block on spoofed ACKs only for SACK senders.
    #[serde(default)]
    pub sack: Option<bool>,
    /// Period of the JSON counter lines.
    #[serde(default = "default_report_every")]
    pub report_every: Dur,
    /// The iptables program.
    #[serde(default = "default_iptables")]
    pub iptables: String,
    /// The ip6tables program (the same rules for IPv6).
    #[serde(default = "default_ip6tables")]
    pub ip6tables: String,
    /// Seed of the shim's beta jitter.
    #[serde(default)]
    pub seed: u64,
    /// The shim's parameters; gamma also becomes the kernel's `connbytes` cut-off. Keys not given
    /// take [`real_host_tracks`]'s values, not the simulator's defaults.
    #[serde(default = "real_host_tracks", deserialize_with = "over_real_host_defaults")]
    pub tracks: TracksConfig,
}

/// The shim's defaults on a real host: the paper's parameters, plus what differs from the
/// simulator's TCP:
/// - RTT from the shim's own seq/ack timing (Linux timestamps are not microseconds);
/// - SACK-carrying dupACKs passed (they may answer a tail loss probe);
/// - SACK flows are tracked but never spoofed: against Linux (RACK, TLP) every fake block tried
///   (growing, or the highest segment only) made the sender detect reneging and time out, and plain
///   duplicates are ignored by a SACK sender (docs/tracks.md, "On real hosts");
/// - a bounded flow table.
pub fn real_host_tracks() -> TracksConfig {
    TracksConfig {
        rtt_source: RttSource::SeqAck,
        pass_sack_dupacks: true,
        skip_sack_flows: true,
        max_flows: 65_536,
        ..TracksConfig::default()
    }
}

/// Reads the `[tracks]` table over [`real_host_tracks`].
fn over_real_host_defaults<'de, D: serde::Deserializer<'de>>(d: D) -> Result<TracksConfig, D::Error> {
    use serde::de::Error;
    tracks_over_real_host_defaults(toml::Table::deserialize(d)?).map_err(D::Error::custom)
}

/// The shim's parameters `given` (TOML keys of [`TracksConfig`]), the others from
/// [`real_host_tracks`]: what a shim beside a real Linux TCP runs with, here and in the testbed.
/// Error paths are the keys of `given` (`alpha`); inside serde (the `[tracks]` table) the error's text
/// becomes the message, after serde's own path.
pub fn tracks_over_real_host_defaults(given: toml::Table) -> Result<TracksConfig, ConfigError> {
    // The defaults are a TracksConfig, which serialises to a table: this is a bug if it fails, but a
    // bug reported as an error, not a panic in the agent.
    let defaults = toml::Value::try_from(real_host_tracks())
        .map_err(|e| ConfigError::new("", format!("the real-host defaults do not serialise: {e}")))?;
    let toml::Value::Table(mut table) = defaults else {
        return Err(ConfigError::new("", "the real-host defaults are not a table"));
    };
    table.extend(given);
    serde_path_to_error::deserialize(toml::Value::Table(table))
        .map_err(|e| ConfigError::new(e.path().to_string(), e.inner().to_string()))
}

fn default_queue() -> u16 {
    7
}
fn default_queue_max_len() -> u32 {
    4096
}
fn default_ring_bytes() -> tailcut_proto::units::Bytes {
    tailcut_proto::units::Bytes(4 << 20)
}
fn default_report_every() -> Dur {
    Dur::from_millis(1_000)
}
fn default_iptables() -> String {
    "iptables".into()
}
fn default_ip6tables() -> String {
    "ip6tables".into()
}

impl AgentConfig {
    /// Parses and checks a configuration; the error names the field.
    pub fn from_toml(text: &str) -> Result<AgentConfig, ConfigError> {
        let value: toml::Value = toml::from_str(text).map_err(|e| ConfigError::new("", e.message()))?;
        let cfg: AgentConfig = serde_path_to_error::deserialize(value)
            .map_err(|e| ConfigError::new(e.path().to_string(), e.inner().to_string()))?;
        cfg.validate()?;
        Ok(cfg)
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.interface.is_empty() || self.interface.len() > 15 || self.interface.contains(['/', ' ']) {
            return Err(ConfigError::new(
                "interface",
                format!("'{}' is not an interface name", self.interface),
            ));
        }
        if self.queue_max_len == 0 {
            return Err(ConfigError::new("queue_max_len", "must be > 0"));
        }
        let ring = self.ring_bytes.0;
        if !ring.is_power_of_two() || !(4096..=(1 << 30)).contains(&ring) {
            return Err(ConfigError::new(
                "ring_bytes",
                format!("{ring} bytes: must be a power of two from 4 KiB to 1 GiB"),
            ));
        }
        if self.tracks.max_flows > u32::MAX as usize {
            return Err(ConfigError::new(
                "tracks.max_flows",
                "must fit the kernel map (< 2^32)",
            ));
        }
        if self.report_every.0 == 0 {
            return Err(ConfigError::new("report_every", "must be > 0"));
        }
        if self.tracks.max_flows == 0 {
            return Err(ConfigError::new(
                "tracks.max_flows",
                "must be > 0 on a real host (memory must be bounded)",
            ));
        }
        self.tracks.validate().map_err(|e| e.at("tracks"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_papers_parameters_parse_into_the_shims_config() {
        let cfg = AgentConfig::from_toml(
            "interface = \"eth0\"\n[tracks]\nalpha = 5\ngamma = \"100KB\"\nfixed_beta = \"2ms\"\nmax_flows = 64\n",
        )
        .unwrap();
        assert_eq!(cfg.tracks.alpha, 5.0);
        assert_eq!(cfg.tracks.fixed_beta, Some(Dur::from_millis(2)));
        assert_eq!(cfg.queue, 7);
        // Real-host defaults where the file says nothing.
        assert_eq!(cfg.tracks.rtt_source, RttSource::SeqAck);
        assert!(cfg.tracks.pass_sack_dupacks);
        let bare = AgentConfig::from_toml("interface = \"eth0\"\n").unwrap();
        assert_eq!(bare.tracks, real_host_tracks());
        let sim =
            AgentConfig::from_toml("interface = \"eth0\"\n[tracks]\nrtt_source = \"timestamps\"\n").unwrap();
        assert_eq!(sim.tracks.rtt_source, RttSource::Timestamps);
    }

    #[test]
    fn the_example_file_is_valid() {
        let text = include_str!("../tracksd.example.toml");
        let cfg = AgentConfig::from_toml(text).unwrap();
        assert_eq!(cfg.tracks, real_host_tracks());
    }

    #[test]
    fn errors_name_the_field() {
        let e =
            AgentConfig::from_toml("interface = \"eth0\"\n[tracks]\nphi = 0\nmax_flows = 8\n").unwrap_err();
        assert!(e.to_string().contains("tracks.phi"), "{e}");
        let e = AgentConfig::from_toml("interface = \"a b\"\n[tracks]\nmax_flows = 8\n").unwrap_err();
        assert!(e.to_string().contains("interface"), "{e}");
        let e = AgentConfig::from_toml("interface = \"eth0\"\n[tracks]\nmax_flows = 0\n").unwrap_err();
        assert!(e.to_string().contains("max_flows"), "{e}");
        let e = AgentConfig::from_toml("interface = \"eth0\"\nring_bytes = \"3000B\"\n").unwrap_err();
        assert!(e.to_string().contains("ring_bytes"), "{e}");
        let e = AgentConfig::from_toml("interface = \"eth0\"\nbackend = \"xdp\"\n").unwrap_err();
        assert!(e.to_string().contains("backend"), "{e}");
        let bpf = AgentConfig::from_toml("interface = \"eth0\"\nbackend = \"bpf\"\n").unwrap();
        assert_eq!(bpf.backend, Backend::Bpf);
    }
}
