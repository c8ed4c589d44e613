//! Topology builders.

use super::*;
use tailcut_proto::{ConfigError, Dur};

struct Builder<'a> {
    spec: TopoSpec,
    q: &'a SwitchQueues,
}

impl<'a> Builder<'a> {
    fn node(&mut self, name: String, kind: NodeKind) -> u32 {
        self.spec.nodes.push(NodeSpec { name, kind });
        (self.spec.nodes.len() - 1) as u32
    }

    fn host(&mut self, rack: u32) -> u32 {
        let i = self.spec.host_rack.len();
        self.spec.host_rack.push(rack);
        self.node(format!("h{i}"), NodeKind::Host)
    }

    fn queue_of(&self, node: u32) -> (u64, PortQueueSpec) {
        if self.spec.nodes[node as usize].kind == NodeKind::Host {
            (self.q.host_buffer.0, self.q.host_queue())
        } else {
            (
                self.q.buffer.0,
                PortQueueSpec {
                    aqm: self.q.aqm.clone(),
                    classes: self.q.classes.clone(),
                    sched: self.q.sched.clone(),
                },
            )
        }
    }

    fn link(&mut self, a: u32, b: u32, rate_bps: u64, delay: Dur, tier: u8) {
        let (buffer_a, aqm_a) = self.queue_of(a);
        let (buffer_b, aqm_b) = self.queue_of(b);
        self.spec.links.push(LinkSpec {
            a,
            b,
            rate_bps,
            delay,
            buffer_a,
            buffer_b,
            aqm_a,
            aqm_b,
            tier,
        });
    }
}

fn positive(name: &str, v: u32) -> Result<(), ConfigError> {
    if v == 0 {
        Err(ConfigError::new(name, "must be >= 1, got 0"))
    } else {
        Ok(())
    }
}

/// Builds the topology. Errors name the offending field (relative to `topology`).
pub fn build(cfg: &TopologyConfig, q: &SwitchQueues) -> Result<TopoSpec, ConfigError> {
    let mut b = Builder {
        spec: TopoSpec::default(),
        q,
    };
    match cfg {
        TopologyConfig::Star(Star {
            hosts,
            host_rate,
            link_delay,
        }) => {
            positive("hosts", *hosts)?;
            let sw = b.node("sw0".into(), NodeKind::Switch);
            for _ in 0..*hosts {
                let h = b.host(0);
                b.link(h, sw, host_rate.0, *link_delay, 0);
            }
        }
        TopologyConfig::Dumbbell(Dumbbell {
            left,
            right,
            host_rate,
            bottleneck_rate,
            link_delay,
        }) => {
            positive("left", *left)?;
            positive("right", *right)?;
            let l = b.node("swl".into(), NodeKind::Switch);
            let r = b.node("swr".into(), NodeKind::Switch);
            for _ in 0..*left {
                let h = b.host(0);
                b.link(h, l, host_rate.0, *link_delay, 0);
            }
            for _ in 0..*right {
                let h = b.host(1);
                b.link(h, r, host_rate.0, *link_delay, 0);
            }
            b.link(l, r, bottleneck_rate.0, *link_delay, 1);
        }
        TopologyConfig::LeafSpine(LeafSpine {
            leaves,
            spines,
            hosts_per_leaf,
            host_rate,
            fabric_rate,
            oversubscription,
            link_delay,
        }) => {
            positive("leaves", *leaves)?;
            positive("spines", *spines)?;
            positive("hosts_per_leaf", *hosts_per_leaf)?;
            let fabric = match (fabric_rate, oversubscription) {
                (Some(r), None) => r.0,
                (None, Some(o)) if *o > 0.0 => {
                    (*hosts_per_leaf as f64 * host_rate.0 as f64 / (*spines as f64 * o)).round() as u64
                }
                (None, Some(o)) => {
                    return Err(ConfigError::new(
                        "oversubscription",
                        format!("must be > 0, got {o}"),
                    ))
                }
                (None, None) => host_rate.0,
                (Some(_), Some(_)) => {
                    return Err(ConfigError::new(
                        "fabric_rate",
                        "give fabric_rate or oversubscription, not both",
                    ))
                }
            };
            let spine_ids: Vec<u32> = (0..*spines)
                .map(|i| b.node(format!("spine{i}"), NodeKind::Switch))
                .collect();
            for l in 0..*leaves {
                let leaf = b.node(format!("leaf{l}"), NodeKind::Switch);
                for _ in 0..*hosts_per_leaf {
                    let h = b.host(l);
                    b.link(h, leaf, host_rate.0, *link_delay, 0);
                }
                for &s in &spine_ids {
                    b.link(leaf, s, fabric, *link_delay, 1);
                }
            }
        }
        TopologyConfig::FatTree(FatTree {
            k,
            hosts_per_edge,
            host_rate,
            fabric_rate,
            link_delay,
        }) => {
            if *k < 2 || k % 2 != 0 {
                return Err(ConfigError::new(
                    "k",
                    format!("must be an even number >= 2, got {k}"),
                ));
            }
            let half = k / 2;
            let hpe = hosts_per_edge.unwrap_or(half);
            positive("hosts_per_edge", hpe)?;
            let fabric = fabric_rate.map(|r| r.0).unwrap_or(host_rate.0);
            let cores: Vec<u32> = (0..half * half)
                .map(|i| b.node(format!("core{i}"), NodeKind::Switch))
                .collect();
            for p in 0..*k {
                let aggs: Vec<u32> = (0..half)
                    .map(|i| b.node(format!("agg{p}_{i}"), NodeKind::Switch))
                    .collect();
                for e in 0..half {
                    let edge = b.node(format!("tor{p}_{e}"), NodeKind::Switch);
                    for _ in 0..hpe {
                        let h = b.host(p * half + e);
                        b.link(h, edge, host_rate.0, *link_delay, 0);
                    }
                    for &a in &aggs {
                        b.link(edge, a, fabric, *link_delay, 1);
                    }
                }
                // Aggregation switch i of every pod connects to cores i*half .. (i+1)*half.
                for (i, &a) in aggs.iter().enumerate() {
                    for c in 0..half {
                        b.link(a, cores[(i as u32 * half + c) as usize], fabric, *link_delay, 2);
                    }
                }
            }
        }
        TopologyConfig::FusoTestbed(FusoTestbed { rate, link_delay }) => {
            let t0 = b.node("tor0".into(), NodeKind::Switch);
            let t1 = b.node("tor1".into(), NodeKind::Switch);
            for (rack, tor) in [(0, t0), (1, t1)] {
                for _ in 0..3 {
                    let h = b.host(rack);
                    b.link(h, tor, rate.0, *link_delay, 0);
                }
            }
            for _ in 0..3 {
                b.link(t0, t1, rate.0, *link_delay, 1);
            }
        }
        TopologyConfig::CloudburstTestbed(CloudburstTestbed { rate, link_delay }) => {
            let spines: Vec<u32> = (0..4)
                .map(|i| b.node(format!("spine{i}"), NodeKind::Switch))
                .collect();
            for l in 0..2 {
                let leaf = b.node(format!("leaf{l}"), NodeKind::Switch);
                for _ in 0..4 {
                    let h = b.host(l);
                    b.link(h, leaf, rate.0, *link_delay, 0);
                }
                for &s in &spines {
                    b.link(leaf, s, rate.0, *link_delay, 1);
                }
            }
        }
        TopologyConfig::File(File { path }) => {
            let mut spec = super::file::load(path, q)?;
            spec.host_tsq = q.host_tsq;
            return Ok(spec);
        }
    }
    b.spec.host_tsq = q.host_tsq;
    Ok(b.spec)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fat_tree_k8_has_128_hosts_and_80_switches() {
        let cfg: TopologyConfig = toml::from_str("kind = \"fat_tree\"\nk = 8").unwrap();
        let s = build(&cfg, &SwitchQueues::default()).unwrap();
        let hosts = s.nodes.iter().filter(|n| n.kind == NodeKind::Host).count();
        assert_eq!(hosts, 128);
        assert_eq!(s.nodes.len() - hosts, 80);
        // Host links 128 + edge-agg 8*4*4 + agg-core 8*4*4.
        assert_eq!(s.links.len(), 128 + 128 + 128);
    }

    #[test]
    fn fuso_simulation_fat_tree_shape() {
        let cfg: TopologyConfig =
            toml::from_str("kind = \"fat_tree\"\nk = 4\nhosts_per_edge = 8\nfabric_rate = \"40Gbps\"")
                .unwrap();
        let s = build(&cfg, &SwitchQueues::default()).unwrap();
        let hosts = s.nodes.iter().filter(|n| n.kind == NodeKind::Host).count();
        assert_eq!((hosts, s.nodes.len() - hosts), (64, 20));
    }

    #[test]
    fn bad_values_name_the_field() {
        let cfg: TopologyConfig = toml::from_str("kind = \"fat_tree\"\nk = 5").unwrap();
        assert_eq!(build(&cfg, &SwitchQueues::default()).err().unwrap().path, "k");
        let cfg: TopologyConfig =
            toml::from_str("kind = \"leaf_spine\"\nleaves = 0\nspines = 2\nhosts_per_leaf = 2").unwrap();
        assert_eq!(
            build(&cfg, &SwitchQueues::default()).err().unwrap().path,
            "leaves"
        );
    }
}
