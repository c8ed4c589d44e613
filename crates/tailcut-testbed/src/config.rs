//! The `[testbed]` section of an experiment file: what only a real run has. Every key is optional;
//! unknown keys are errors.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::{ConfigError, Dur};

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TestbedConfig {
    /// Every link rate (and every `degrade` fault's rate) is multiplied by this. One core forwards
    /// about 1 Gbit/s of 1500 B packets in total (`docs/testbed.md`), so 1-10 Gbit/s topologies need
    /// e.g. 0.1 to keep the port model on time. Buffers and delays are not scaled. Default 1.
    pub rate_scale: f64,
    /// MTU of every host NIC in bytes. Default 1500.
    pub mtu: u32,
    /// Congestion control set on every socket (`TCP_CONGESTION`): "reno", "cubic" or "bbr" (built into
    /// these kernels), or "dctcp": tailcut's BPF DCTCP, registered for the run (`crate::dctcp`).
    /// Default: the namespace's default (bbr on these machines).
    pub congestion_control: Option<String>,
    /// `net.ipv4.tcp_rto_min_us` in every host (Linux default 200000; timers tick every 4 ms at
    /// HZ = 250). Default: the kernel's.
    pub rto_min_us: Option<u64>,
    /// `net.ipv4.tcp_sack`. Default true (the kernel's default).
    pub sack: bool,
    /// `net.ipv4.tcp_ecn`: 1 requests ECN on outgoing connections. Default 0 (the kernel's 2 only
    /// accepts it).
    pub ecn: bool,
    /// More `net.*` sysctls for every host, e.g. `{ "net.ipv4.tcp_early_retrans" = "0" }`.
    pub sysctls: BTreeMap<String, String>,
    /// Busy-poll the fabric when its next event is nearer than this (avoids the VM's late timer
    /// wake-ups). Default 60 us.
    pub spin: Dur,
    /// Largest fabric lateness p99 of a run whose timing counts as kept, as a fraction of the base RTT
    /// (the smallest round-trip propagation delay between two hosts). Default 0.1.
    pub max_lateness_rtt: f64,
    /// Largest median flow-start lateness of the agents of a run whose timing counts as kept.
    /// Default 1 ms.
    pub max_start_late: Dur,
    /// Time allowed after the experiment's `max_time` for flows to finish before the run stops.
    /// Default 2 s.
    pub grace: Dur,
    /// Fastest link (after `rate_scale`) the fabric may emulate: its one thread forwards about
    /// 2.1 Gbit/s of 1500 B packets through the full port model on this machine class
    /// (`docs/testbed.md`, "Forwarding capacity"), so a faster link's packets would leave as the CPU
    /// lets them, not at the link's rate. Measure another machine with `tailcut-testbed bench` and
    /// raise it there. Default 2Gbps.
    pub max_link_rate: Rate,
    /// Most hosts (namespaces plus one agent each) a run may create. Default 32.
    pub max_hosts: u32,
    /// Port every workload agent listens on. Default 5500.
    pub port: u16,
    /// `[testbed.pcap]`: capture what the hosts send and receive into `--out`'s `pcap/` folder. Its
    /// presence (even empty) turns capture on. Default: no capture.
    pub pcap: Option<PcapConfig>,
    /// Schemes, by name, that run on tailcut's own engines over UDP (`tailcut-net`) although Linux
    /// runs their transport (`tcp`, `mptcp`, `dctcp`): tailcut's TCP beside Linux's on the same
    /// hosts. Every other transport runs there anyway. Default: none.
    pub runtime: Vec<String>,
    /// Per scheme (in file order), the T-RACKs shim its `shim` table asks for, read over the real-host
    /// defaults of `tailcut-tracksd` (`experiment::load` fills it; not a `[testbed]` key).
    #[serde(skip)]
    pub shims: Vec<Option<tailcut_proto::tracks::TracksConfig>>,
}

/// Bounds of the packet captures (`docs/testbed.md`, "Packet captures").
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct PcapConfig {
    /// Bytes kept of each packet. Default 128: IPv4 plus TCP headers with every option take at most
    /// 120, which is all Wireshark's TCP analysis reads.
    pub snaplen: u32,
    /// Largest size of each capture file; later packets are counted in `testbed.json`, not written.
    /// Default 256MB.
    pub max_bytes: Bytes,
}

impl Default for PcapConfig {
    fn default() -> Self {
        PcapConfig {
            snaplen: 128,
            max_bytes: Bytes(256_000_000),
        }
    }
}

impl Default for TestbedConfig {
    fn default() -> Self {
        TestbedConfig {
            rate_scale: 1.0,
            mtu: 1500,
            congestion_control: None,
            rto_min_us: None,
            sack: true,
            ecn: false,
            sysctls: BTreeMap::new(),
            spin: Dur::from_micros(60),
            max_lateness_rtt: 0.1,
            max_start_late: Dur::from_millis(1),
            grace: Dur::from_millis(2000),
            max_link_rate: Rate(2_000_000_000),
            max_hosts: 32,
            port: 5500,
            pcap: None,
            runtime: Vec::new(),
            shims: Vec::new(),
        }
    }
}

/// The congestion controls these kernels have built in (`CONFIG_TCP_CONG_*`; no modules).
pub const BUILT_IN_CCS: [&str; 3] = ["reno", "cubic", "bbr"];

impl TestbedConfig {
    /// The thresholds of the timing verdict.
    pub fn timing_bounds(&self) -> crate::timing::TimingBounds {
        crate::timing::TimingBounds {
            max_lateness_rtt: self.max_lateness_rtt,
            max_start_late_ns: self.max_start_late.0,
        }
    }

    /// Checks values; error paths are relative to the `[testbed]` table (`mtu`, `pcap.snaplen`).
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !(self.rate_scale > 0.0 && self.rate_scale.is_finite()) {
            return Err(ConfigError::new(
                "rate_scale",
                format!("must be > 0, got {}", self.rate_scale),
            ));
        }
        if !(self.max_lateness_rtt >= 0.0 && self.max_lateness_rtt.is_finite()) {
            return Err(ConfigError::new(
                "max_lateness_rtt",
                format!("must be a finite number >= 0, got {}", self.max_lateness_rtt),
            ));
        }
        if !(576..=65_535).contains(&self.mtu) {
            return Err(ConfigError::new(
                "mtu",
                format!("must be in [576, 65535], got {}", self.mtu),
            ));
        }
        if let Some(cc) = &self.congestion_control {
            if !BUILT_IN_CCS.contains(&cc.as_str()) && cc != crate::dctcp::CONFIG_NAME {
                return Err(ConfigError::new(
                    "congestion_control",
                    format!(
                        "'{cc}' is neither built into this kernel nor tailcut's BPF DCTCP; \
                         use reno, cubic, bbr or dctcp"
                    ),
                ));
            }
        }
        for k in self.sysctls.keys() {
            if !k.starts_with("net.") {
                return Err(ConfigError::new(
                    format!("sysctls.{k}"),
                    "only net.* sysctls are per namespace",
                ));
            }
        }
        if self.max_hosts == 0 {
            return Err(ConfigError::new("max_hosts", "must be > 0"));
        }
        if let Some(p) = &self.pcap {
            // pcap readers reject larger snaplens (libpcap's MAXIMUM_SNAPLEN).
            if !(1..=262_144).contains(&p.snaplen) {
                return Err(ConfigError::new(
                    "pcap.snaplen",
                    format!("must be in [1, 262144], got {}", p.snaplen),
                ));
            }
            if p.max_bytes.0 < crate::pcap::FILE_HEADER {
                return Err(ConfigError::new(
                    "pcap.max_bytes",
                    format!(
                        "must hold at least the {}-byte file header, got {}",
                        crate::pcap::FILE_HEADER,
                        p.max_bytes.0
                    ),
                ));
            }
        }
        Ok(())
    }

    /// The sysctls every host gets, in order.
    pub fn host_sysctls(&self) -> Vec<(String, String)> {
        let mut v = vec![
            ("net.ipv4.tcp_sack".to_string(), u8::from(self.sack).to_string()),
            ("net.ipv4.tcp_ecn".to_string(), u8::from(self.ecn).to_string()),
        ];
        if let Some(us) = self.rto_min_us {
            v.push(("net.ipv4.tcp_rto_min_us".into(), us.to_string()));
        }
        v.extend(self.sysctls.iter().map(|(k, val)| (k.clone(), val.clone())));
        v
    }
}
