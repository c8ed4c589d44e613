//! Engines of CloudBurst and the queues it needs: a small class of its own at switches and host NICs.

use super::{ConnSetup, EngineFactory};
use crate::net::aqm::AqmConfig;
use crate::net::queue::{ClassConfig, SchedConfig};
use crate::topo::SwitchQueues;
use tailcut_proto::cloudburst::{CloudBurstConfig, CloudBurstEndpoint};
use tailcut_proto::rng::Rng;
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::Engine;

/// CloudBurst's endpoint configuration plus the queues it needs.
#[derive(Clone, Debug, PartialEq)]
pub struct CloudBurstTransport {
    /// Validated when the scheme was resolved.
    pub cfg: CloudBurstConfig,
    /// LINK_CAP is each host's own NIC rate, unless the experiment set `nic_rate`.
    pub nic_rate_from_host: bool,
    /// Byte limit of the CloudBurst switch class as a share of the port buffer (Sec. IV-B: 1%),
    /// at least two full packets; used when the experiment lists no classes.
    pub switch_queue_share: f64,
    /// WRR weights (background, CloudBurst) of that default (Sec. V-C friendliness: 4:1).
    pub wrr_weights: [u32; 2],
    /// Host NIC: CloudBurst packets first, in a queue of this many packets (0 = the host NIC
    /// unchanged); used when the experiment lists no host classes. See docs/cloudburst.md.
    pub host_queue_packets: u32,
}

impl EngineFactory for CloudBurstTransport {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            let mut cfg = self.cfg.clone();
            if self.nic_rate_from_host && e.nic_bps > 0 {
                cfg.nic_rate = Rate(e.nic_bps);
            }
            cfg.carry_bytes |= e.carry_bytes;
            CloudBurstEndpoint::new(cfg, e.tuple, e.rng)
                .expect("the cloudburst scheme validates its configuration")
        })
    }

    fn framing(&self) -> (u64, u64) {
        (self.cfg.symbol_bytes as u64, self.cfg.header_bytes as u64)
    }

    /// Sec. IV-B / V: CloudBurst packets in a class of their own with a tiny drop-tail limit, WRR
    /// against everything else, unless the experiment lists classes itself.
    fn switch_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        let base = &self.host_queues(base);
        if !base.classes.is_empty() {
            return base.clone();
        }
        let limit = ((base.buffer.0 as f64 * self.switch_queue_share) as u64).max(3000);
        let background: Vec<u8> = (0..=u8::MAX).filter(|&c| c != self.cfg.class).collect();
        SwitchQueues {
            classes: vec![
                ClassConfig {
                    classes: background,
                    limit: None,
                    aqm: None,
                },
                ClassConfig {
                    classes: vec![self.cfg.class],
                    limit: Some(Bytes(limit)),
                    aqm: Some(AqmConfig::DropTail),
                },
            ],
            sched: SchedConfig::Wrr {
                weights: self.wrr_weights.to_vec(),
            },
            ..base.clone()
        }
    }
}

impl CloudBurstTransport {
    /// Several messages of one host (each paced at share r) can together exceed its NIC; a real
    /// sender's socket buffer is bounded, and a STOP must not wait behind coded packets. So hosts
    /// serve CloudBurst packets first from a queue of `host_queue_packets` and drop the excess
    /// (coded packets are interchangeable; a lost STOP is repeated).
    fn host_queues(&self, base: &SwitchQueues) -> SwitchQueues {
        if self.host_queue_packets == 0 || !base.host_classes.is_empty() {
            return base.clone();
        }
        let pkt = (self.cfg.symbol_bytes + self.cfg.header_bytes) as u64;
        let background: Vec<u8> = (0..=u8::MAX).filter(|&c| c != self.cfg.class).collect();
        SwitchQueues {
            host_classes: vec![
                ClassConfig {
                    classes: vec![self.cfg.class],
                    limit: Some(Bytes(self.host_queue_packets as u64 * pkt)),
                    aqm: Some(AqmConfig::DropTail),
                },
                ClassConfig {
                    classes: background,
                    limit: None,
                    aqm: None,
                },
            ],
            ..base.clone()
        }
    }
}
