//! End-to-end tests of the network core with a paced test engine: conservation, determinism, ECMP
//! spreading, explicit paths, link faults and queue overflow.

use crate::common;

use tailcut_proto::{Dur, Time};
use tailcut_sim::fault::{self, FaultConfig, LinkRef};
use tailcut_sim::net::link::LossConfig;
use tailcut_sim::net::Network;
use tailcut_sim::sim::{ComponentRun, ConnMode, Sim};
use tailcut_sim::topo::{self, SwitchQueues, TopologyConfig};
use tailcut_sim::workload::FlowSpec;

fn leaf_spine(leaves: u32, spines: u32, hosts: u32, seed: u64) -> (Network, SwitchQueues, TopologyConfig) {
    let cfg: TopologyConfig = toml::from_str(&format!(
        "kind = \"leaf_spine\"\nleaves = {leaves}\nspines = {spines}\nhosts_per_leaf = {hosts}\nhost_rate = \"10Gbps\"\nfabric_rate = \"10Gbps\""
    ))
    .unwrap();
    let q = SwitchQueues::default();
    let spec = topo::build(&cfg, &q).unwrap();
    (Network::build(&spec, seed), q, cfg)
}

/// Flows from every host of rack 0 to every host of rack 1.
fn cross_rack_flows(hosts: u32, size: u64) -> Vec<FlowSpec> {
    let mut v = Vec::new();
    for s in 0..hosts {
        for d in hosts..2 * hosts {
            let id = v.len() as u64;
            v.push(FlowSpec {
                id,
                component: 0,
                src: s,
                dst: d,
                size_bytes: size,
                start: Time(id * 100),
                request_bytes: 0,
            });
        }
    }
    v
}

fn run(
    net: Network,
    flows: &[FlowSpec],
    comps: &[ComponentRun],
    faults: &[FaultConfig],
    seed: u64,
) -> Sim<'static> {
    let faults = fault::plan(faults, &net, seed).unwrap();
    // The flows and components outlive the sim in every test; leak them to keep the helper simple.
    let flows: &'static [FlowSpec] = Box::leak(flows.to_vec().into_boxed_slice());
    let comps: &'static [ComponentRun] = Box::leak(
        comps
            .iter()
            .map(|c| ComponentRun {
                transport: c.transport.clone(),
                conn_mode: c.conn_mode,
            })
            .collect::<Vec<_>>()
            .into_boxed_slice(),
    );
    let mut sim = Sim::new(net, flows, comps, faults, seed, Dur::from_millis(100));
    sim.run(&mut |_| true).unwrap();
    sim
}

fn spine_tx(sim: &Sim) -> Vec<u64> {
    // Bytes sent by leaf0 toward each spine.
    let net = &sim.net;
    let leaf0 = net.nodes.iter().position(|n| n.name == "leaf0").unwrap() as u32;
    net.nodes[leaf0 as usize]
        .ports
        .iter()
        .filter(|&&p| {
            net.nodes[net.ports[p as usize].peer as usize]
                .name
                .starts_with("spine")
        })
        .map(|&p| net.ports[p as usize].counters().tx_packets)
        .collect()
}

#[test]
fn every_packet_is_accounted_for_under_loss() {
    let (net, _, _) = leaf_spine(2, 2, 4, 1);
    let flows = cross_rack_flows(4, 50_000);
    let comps = [ComponentRun {
        transport: common::paced(1_500, false),
        conn_mode: ConnMode::PerFlow,
    }];
    let faults: Vec<FaultConfig> = vec![FaultConfig::Loss {
        link: LinkRef {
            between: ["leaf0".into(), "spine0".into()],
            index: 0,
        },
        direction: fault::Direction::Both,
        model: LossConfig::Bernoulli { p: 0.05 },
        at: Dur::ZERO,
        until: None,
    }];
    let sim = run(net, &flows, &comps, &faults, 3);
    let c = sim.conservation();
    assert!(c.ok, "{c:?}");
    assert!(c.dropped > 0, "5% loss must drop packets: {c:?}");
    assert_eq!(c.injected, c.delivered + c.dropped + c.in_flight);
}

#[test]
fn same_seed_same_results_and_different_seed_differs() {
    let go = |seed| {
        let (net, _, _) = leaf_spine(2, 4, 4, seed);
        let flows = cross_rack_flows(4, 30_000);
        let comps = [ComponentRun {
            transport: common::paced(1_200, false),
            conn_mode: ConnMode::PerFlow,
        }];
        let sim = run(net, &flows, &comps, &[], seed);
        let mut s = sim;
        let recs = s.flow_records("x", &["c".into()]);
        (recs.iter().map(|r| r.finish_ns).collect::<Vec<_>>(), spine_tx(&s))
    };
    assert_eq!(go(11), go(11));
    assert_ne!(go(11).1, go(12).1, "ECMP salts derive from the seed");
}

#[test]
fn ecmp_spreads_flows_across_equal_cost_paths() {
    let (net, _, _) = leaf_spine(2, 4, 8, 1);
    let flows = cross_rack_flows(8, 14_600);
    let comps = [ComponentRun {
        transport: common::paced(1_200, false),
        conn_mode: ConnMode::PerFlow,
    }];
    let sim = run(net, &flows, &comps, &[], 5);
    let tx = spine_tx(&sim);
    let total: u64 = tx.iter().sum();
    assert_eq!(tx.len(), 4);
    for t in &tx {
        // 64 flows over 4 paths: each path should carry between 1/8 and 3/8 of the packets.
        assert!(*t * 8 >= total && *t * 8 <= 3 * total, "uneven spread {tx:?}");
    }
}

#[test]
fn explicit_path_labels_pin_paths() {
    let (net, _, _) = leaf_spine(2, 4, 1, 1);
    // One flow; its label is its source port (1024), and 1024 % 4 == 0 -> spine0 only.
    let flows = vec![FlowSpec {
        id: 0,
        component: 0,
        src: 0,
        dst: 1,
        size_bytes: 100_000,
        start: Time(0),
        request_bytes: 0,
    }];
    let comps = [ComponentRun {
        transport: common::paced(1_200, true),
        conn_mode: ConnMode::PerFlow,
    }];
    let sim = run(net, &flows, &comps, &[], 5);
    let tx = spine_tx(&sim);
    assert!(tx[0] > 0 && tx[1..].iter().all(|&t| t == 0), "{tx:?}");
}

#[test]
fn link_down_reroutes_and_blackhole_does_not() {
    let down = FaultConfig::LinkDown {
        link: LinkRef {
            between: ["leaf0".into(), "spine1".into()],
            index: 0,
        },
        at: Dur::ZERO,
        until: None,
    };
    let (net, _, _) = leaf_spine(2, 2, 4, 1);
    let flows = cross_rack_flows(4, 20_000);
    // 16 concurrent flows at 0.5 Gbps fit the remaining 10 Gbps spine link: no congestion loss.
    let comps = [ComponentRun {
        transport: common::paced(24_000, false),
        conn_mode: ConnMode::PerFlow,
    }];
    let mut sim = run(net, &flows, &comps, &[down], 1);
    assert_eq!(spine_tx(&sim)[1], 0);
    assert!(sim
        .flow_records("x", &["c".into()])
        .iter()
        .all(|r| r.finish_ns.is_some()));

    let hole = FaultConfig::Loss {
        link: LinkRef {
            between: ["leaf0".into(), "spine1".into()],
            index: 0,
        },
        direction: fault::Direction::Forward,
        model: LossConfig::Blackhole,
        at: Dur::ZERO,
        until: None,
    };
    let (net, _, _) = leaf_spine(2, 2, 4, 1);
    let mut sim = run(net, &flows, &comps, &[hole], 1);
    let unfinished = sim
        .flow_records("x", &["c".into()])
        .iter()
        .filter(|r| r.finish_ns.is_none())
        .count();
    assert!(
        unfinished > 0,
        "a black hole that routing ignores must strand some flows"
    );
    assert!(sim.conservation().ok);
}

#[test]
fn incast_overflows_a_drop_tail_buffer() {
    let cfg: TopologyConfig = toml::from_str("kind = \"star\"\nhosts = 9\nhost_rate = \"1Gbps\"").unwrap();
    let q = SwitchQueues {
        buffer: tailcut_proto::units::Bytes(30_000),
        ..SwitchQueues::default()
    };
    let net = Network::build(&topo::build(&cfg, &q).unwrap(), 1);
    let flows: Vec<FlowSpec> = (1..9)
        .map(|s| FlowSpec {
            id: s as u64 - 1,
            component: 0,
            src: s,
            dst: 0,
            size_bytes: 64_000,
            start: Time(0),
            request_bytes: 0,
        })
        .collect();
    // Line-rate senders (12 us per 1500 B at 1 Gbps): 8 of them overflow the receiver's port.
    let comps = [ComponentRun {
        transport: common::paced(12_000, false),
        conn_mode: ConnMode::PerFlow,
    }];
    let sim = run(net, &flows, &comps, &[], 1);
    let recs = sim.port_records("x");
    let to_h0 = recs.iter().find(|r| r.node == "sw0" && r.peer == "h0").unwrap();
    assert!(to_h0.counters.dropped_overflow > 0);
    assert!(to_h0.counters.max_occupancy_bytes <= 30_000);
    assert!(sim.conservation().ok);
}

/// A shim that counts what it sees, drops every ingress packet after `drop_after`, and at `inject_at`
/// injects one datagram up to the host carrying `inject_bytes` for the local engine.
struct TestShim {
    seen_egress: std::rc::Rc<std::cell::Cell<u32>>,
    seen_ingress: u32,
    drop_after: u32,
    inject_at: Time,
    injected: bool,
    template: Option<tailcut_proto::Packet>,
    pending: Option<tailcut_proto::Packet>,
}

impl tailcut_proto::Shim for TestShim {
    fn on_egress(&mut self, _now: Time, _pkt: &mut tailcut_proto::Packet) -> tailcut_proto::Verdict {
        self.seen_egress.set(self.seen_egress.get() + 1);
        tailcut_proto::Verdict::Pass
    }
    fn on_ingress(&mut self, _now: Time, pkt: &mut tailcut_proto::Packet) -> tailcut_proto::Verdict {
        self.seen_ingress += 1;
        self.template.get_or_insert(*pkt);
        if self.seen_ingress > self.drop_after {
            tailcut_proto::Verdict::Drop
        } else {
            tailcut_proto::Verdict::Pass
        }
    }
    fn handle_timeout(&mut self, _now: Time) {
        if !self.injected {
            self.injected = true;
            self.pending = self.template;
        }
    }
    fn poll_inject(&mut self, _now: Time) -> Option<(tailcut_proto::Direction, tailcut_proto::Packet)> {
        self.pending.take().map(|p| (tailcut_proto::Direction::ToHost, p))
    }
    fn poll_timeout(&self) -> Option<Time> {
        (!self.injected).then_some(self.inject_at)
    }
}

#[test]
fn a_host_shim_sees_drops_and_injects_packets() {
    let (net, _, _) = leaf_spine(2, 2, 1, 1);
    // 10 packets of 1460 B from h0 to h1; the shim on h1 passes 9 and drops the last, then at 1 ms
    // injects a copy of the first one up to the engine, which completes the message then.
    let flows = vec![FlowSpec {
        id: 0,
        component: 0,
        src: 0,
        dst: 1,
        size_bytes: 14_600,
        start: Time(0),
        request_bytes: 0,
    }];
    let comps = [ComponentRun {
        transport: common::paced(2_000, false),
        conn_mode: ConnMode::PerFlow,
    }];
    let flows: &'static [FlowSpec] = Box::leak(flows.into_boxed_slice());
    let comps: &'static [ComponentRun] = Box::leak(Box::new(comps));
    let mut sim = Sim::new(net, flows, comps, Vec::new(), 1, Dur::from_millis(5));
    let egress = std::rc::Rc::new(std::cell::Cell::new(0));
    sim.set_shim(
        1,
        Box::new(TestShim {
            seen_egress: egress.clone(),
            seen_ingress: 0,
            drop_after: 9,
            inject_at: Time(1_000_000),
            injected: false,
            template: None,
            pending: None,
        }),
    );
    sim.run(&mut |_| true).unwrap();
    let c = sim.conservation();
    assert_eq!(c.shim_dropped, 1);
    assert_eq!(c.shim_injected, 1);
    assert_eq!(egress.get(), 0, "the receiver's paced engine sends nothing");
    assert!(c.ok);
    assert_eq!(sim.flow_records("x", &["c".into()])[0].finish_ns, Some(1_000_000));
}

#[test]
fn a_degraded_link_slows_the_flows_that_cross_it() {
    let go = |faults: &[FaultConfig]| {
        let (net, _, _) = leaf_spine(2, 1, 1, 1);
        let flows = vec![FlowSpec {
            id: 0,
            component: 0,
            src: 0,
            dst: 1,
            size_bytes: 1_000_000,
            start: Time(0),
            request_bytes: 0,
        }];
        // Line rate at 10 Gbps: 1.2 us per 1500 B packet.
        let comps = [ComponentRun {
            transport: common::paced(1_200, false),
            conn_mode: ConnMode::PerFlow,
        }];
        let mut sim = run(net, &flows, &comps, faults, 1);
        (
            sim.flow_records("x", &["c".into()])[0].finish_ns,
            sim.conservation(),
        )
    };
    let (fast, _) = go(&[]);
    let degrade = FaultConfig::Degrade {
        link: LinkRef {
            between: ["leaf0".into(), "spine0".into()],
            index: 0,
        },
        rate: tailcut_proto::units::Rate(1_000_000_000),
        at: Dur::ZERO,
        until: None,
    };
    let (slow, c) = go(&[degrade]);
    // The paced sender overruns a 1 Gbps hop: the flow loses packets and never completes, and the ones
    // that pass take 10x longer to serialise.
    assert!(fast.is_some());
    assert!(slow.is_none() || slow.unwrap() > 5 * fast.unwrap());
    assert!(c.ok && c.dropped > 0);
}

#[test]
fn random_lossy_links_pick_the_fraction_in_the_tiers_with_rates_from_the_distribution() {
    let cfg: TopologyConfig = toml::from_str("kind = \"fat_tree\"\nk = 4\nhosts_per_edge = 8").unwrap();
    let net = Network::build(&topo::build(&cfg, &SwitchQueues::default()).unwrap(), 1);
    let f = FaultConfig::RandomLossyLinks {
        fraction: 0.25,
        tiers: vec![1, 2],
        tier_weights: None,
        rates: "fuso-loss".into(),
    };
    let plan = fault::plan(&[f], &net, 9).unwrap();
    // Tiers 1 and 2 of a k = 4 fat-tree have 16 + 16 links; a quarter of them, both directions each.
    assert_eq!(plan.len(), 2 * 8);
    for (_, a) in &plan {
        let fault::FaultAction::SetLoss {
            port,
            model: LossConfig::Bernoulli { p },
        } = a
        else {
            panic!("{a:?}")
        };
        assert!(
            (0.01..=0.60).contains(p),
            "rate {p} outside the FUSO distribution"
        );
        assert!([1, 2].contains(&net.ports[*port as usize].tier));
    }
    assert_eq!(
        fault::plan(
            &[FaultConfig::RandomLossyLinks {
                fraction: 0.25,
                tiers: vec![1, 2],
                tier_weights: None,
                rates: "fuso-loss".into()
            }],
            &net,
            9
        )
        .unwrap()
        .len(),
        plan.len()
    );
}

#[test]
fn fuso_testbed_has_three_parallel_paths_between_its_tors() {
    let cfg: TopologyConfig = toml::from_str("kind = \"fuso_testbed\"").unwrap();
    let net = Network::build(&topo::build(&cfg, &SwitchQueues::default()).unwrap(), 1);
    assert_eq!(net.host_count(), 6);
    let tor0 = net.nodes.iter().position(|n| n.name == "tor0").unwrap() as u32;
    let tor1 = net.nodes.iter().position(|n| n.name == "tor1").unwrap();
    let up: Vec<_> = net.nodes[tor0 as usize]
        .ports
        .iter()
        .filter(|&&p| net.ports[p as usize].peer as usize == tor1)
        .collect();
    assert_eq!(up.len(), 3);
    // Host 0 (rack 0) to host 3 (rack 1): ECMP over the three parallel links.
    assert_eq!(net.routes.next_hops(tor0, net.host_addrs[3][0]).len(), 3);
}
