//! A host shim at a NIC port of the emulated fabric: T-RACKs beside the host's unmodified Linux TCP,
//! as the simulator runs it at a host's port. The per-packet path is the T-RACKs agent's own
//! (`tailcut_tracksd::agent::shim_packet`: parse, the unchanged shim, its verdict), and spoofed ACKs
//! are the agent's bytes (`tailcut_tracksd::wire::spoofed_ack`), written into the host's TUN as if
//! they had arrived from the network. What differs from the agent is only where packets come from:
//! the fabric sees every packet of the NIC already, so no tap and no raw socket are needed.

use serde::Serialize;
use std::collections::BTreeMap;
use tailcut_proto::engine::{Direction, Shim};
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::tracks::{Tracks, TracksConfig};
use tailcut_proto::Time;
use tailcut_tracksd::addr6::V6Addrs;
use tailcut_tracksd::agent::{shim_packet, AgentCounters};
use tailcut_tracksd::tap::TapDir;

/// The shim of one NIC.
pub struct NicShim {
    tracks: Tracks,
    counters: AgentCounters,
    /// The agent's IPv6 address ids; the fabric carries IPv4 only, so it stays empty.
    addrs: V6Addrs,
}

/// What a shim wants written after it saw a packet or its timer fired.
pub enum Injection {
    /// IPv4 bytes for the host's own TUN (a spoofed ACK to its TCP).
    ToHost(Vec<u8>),
    /// IPv4 bytes to send out of the NIC into the fabric.
    ToNetwork(Vec<u8>),
}

impl NicShim {
    /// The shim of host `host` (its RNG stream is the simulator's for that host).
    pub fn new(cfg: &TracksConfig, seed: u64, host: u32) -> NicShim {
        NicShim {
            tracks: Tracks::new(cfg.clone(), rng::stream(seed, Stream::Shim, u64::from(host))),
            counters: AgentCounters::default(),
            addrs: V6Addrs::new(2),
        }
    }

    /// A packet the host sent (`egress`) or is about to receive; whether it may pass.
    pub fn packet(&mut self, now: Time, egress: bool, bytes: &[u8]) -> bool {
        let dir = if egress { TapDir::Egress } else { TapDir::Ingress };
        shim_packet(
            &mut self.tracks,
            &mut self.counters,
            &mut self.addrs,
            now,
            dir,
            bytes,
        )
    }

    pub fn handle_timeout(&mut self, now: Time) {
        self.tracks.handle_timeout(now);
    }

    pub fn poll_timeout(&self) -> Option<Time> {
        self.tracks.poll_timeout()
    }

    /// The host's TUN refused an injected packet (its ring was full): counted as an injection error.
    pub fn write_failed(&mut self) {
        self.counters.injected = self.counters.injected.saturating_sub(1);
        self.counters.inject_errors += 1;
    }

    /// The shim's next packet to inject, as bytes. A packet the agent's writer cannot build (no
    /// TCP header) is counted and skipped.
    pub fn poll_inject(&mut self, now: Time) -> Option<Injection> {
        while let Some((dir, pkt)) = self.tracks.poll_inject(now) {
            let Some(bytes) = tailcut_tracksd::wire::spoofed_ack(&pkt, &self.addrs) else {
                self.counters.inject_errors += 1;
                continue;
            };
            self.counters.injected += 1;
            return Some(match dir {
                Direction::ToHost => Injection::ToHost(bytes),
                Direction::ToNetwork => Injection::ToNetwork(bytes),
            });
        }
        None
    }
}

/// The shims' counters summed over NICs: the agent's (`agent.*`) and the shim's own.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ShimReport(pub BTreeMap<String, u64>);

impl ShimReport {
    pub fn add(&mut self, s: &NicShim) {
        let a = s.counters;
        let agent = [
            ("agent.egress_packets", a.egress_packets),
            ("agent.ingress_packets", a.ingress_packets),
            ("agent.malformed", a.malformed),
            ("agent.not_tcp", a.not_tcp),
            ("agent.dropped", a.dropped),
            ("agent.injected", a.injected),
            ("agent.inject_errors", a.inject_errors),
        ];
        for (k, v) in agent.into_iter().chain(Shim::counters(&s.tracks)) {
            *self.0.entry(k.to_string()).or_default() += v;
        }
    }
}
