//! Engines of CloudBurst and the queues it needs: a small class of its own at switches and host NICs.

use super::{ConnSetup, EngineFactory, SwitchDefault};
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
    /// The queues it needs ([`SwitchDefault::CloudBurstClass`]: the class's share of a switch port's
    /// buffer, Sec. IV-B: 1%; WRR weights, Sec. V-C: 4:1; the host NIC's CloudBurst queue, see
    /// docs/cloudburst.md); anything else leaves the experiment's queues as they are.
    pub switch: SwitchDefault,
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
        let SwitchDefault::CloudBurstClass {
            share, wrr_weights, ..
        } = self.switch
        else {
            return base.clone();
        };
        let base = &self.host_queues(base);
        if !base.classes.is_empty() {
            return base.clone();
        }
        let limit = ((base.buffer.0 as f64 * share) as u64).max(3000);
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
                weights: wrr_weights.to_vec(),
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
        let host_queue_packets = match self.switch {
            SwitchDefault::CloudBurstClass {
                host_queue_packets, ..
            } => host_queue_packets,
            _ => 0,
        };
        if host_queue_packets == 0 || !base.host_classes.is_empty() {
            return base.clone();
        }
        let pkt = (self.cfg.symbol_bytes + self.cfg.header_bytes) as u64;
        let background: Vec<u8> = (0..=u8::MAX).filter(|&c| c != self.cfg.class).collect();
        SwitchQueues {
            host_classes: vec![
                ClassConfig {
                    classes: vec![self.cfg.class],
                    limit: Some(Bytes(host_queue_packets as u64 * pkt)),
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
