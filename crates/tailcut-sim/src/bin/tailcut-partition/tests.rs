use crate::partition::*;
use tailcut_proto::Dur;
use tailcut_sim::fault::FaultAction;
use tailcut_sim::net::Network;
use tailcut_sim::run;
use tailcut_sim::topo::{self, SwitchQueues, TopologyConfig};

fn network(topology: &str) -> (TopologyConfig, Network) {
    let cfg: TopologyConfig = toml::from_str(topology).unwrap();
    let spec = topo::build(&cfg, &SwitchQueues::default()).unwrap();
    (cfg, Network::unrouted(&spec, 1))
}

/// Every node in exactly one partition, every partition used.
fn assert_covers(map: &PartitionMap, net: &Network) {
    map.check(net).unwrap();
    let members = map.members();
    assert_eq!(members.len(), map.parts as usize);
    let mut seen = vec![0u32; net.nodes.len()];
    for m in &members {
        assert!(!m.is_empty(), "{}: an empty partition", map.name);
        for &n in m {
            seen[n as usize] += 1;
        }
    }
    assert!(
        seen.iter().all(|&s| s == 1),
        "{}: a node in none or two",
        map.name
    );
}

fn hosts_per_part(map: &PartitionMap, net: &Network) -> Vec<usize> {
    let mut h = vec![0; map.parts as usize];
    for &n in &net.hosts {
        h[map.of_node[n as usize] as usize] += 1;
    }
    h
}

#[test]
fn every_map_covers_every_node_once() {
    for k in [4u32, 8] {
        let (cfg, net) = network(&format!("kind = \"fat_tree\"\nk = {k}"));
        let pods = PartitionMap::build(&MapKind::Pod, &cfg, &net).unwrap();
        assert_covers(&pods, &net);
        assert_eq!(pods.parts, k);
        assert!(hosts_per_part(&pods, &net)
            .iter()
            .all(|&h| h == (k * k / 4) as usize));
        let with_cores = PartitionMap::build(&MapKind::PodCore, &cfg, &net).unwrap();
        assert_covers(&with_cores, &net);
        assert_eq!(with_cores.parts, k + k / 2);
        for n in [1, 2, 3, k, 2 * k, k * k / 2, k * k * k / 4] {
            let parts = PartitionMap::build(&MapKind::Parts(n), &cfg, &net).unwrap();
            assert_covers(&parts, &net);
            let h = hosts_per_part(&parts, &net);
            let (lo, hi) = (h.iter().min().unwrap(), h.iter().max().unwrap());
            assert!(hi - lo <= 1, "parts-{n}: hosts per part {h:?}");
        }
        // Grown over the graph, k parts are the pods (their hosts), and cut no more links.
        let grown = PartitionMap::build(&MapKind::Parts(k), &cfg, &net).unwrap();
        for &h in &net.hosts {
            assert_eq!(grown.of_node[h as usize], pods.of_node[h as usize]);
        }
        assert!(grown.cut_links(&net).0 <= pods.cut_links(&net).0);
    }
    let (cfg, net) = network("kind = \"leaf_spine\"\nleaves = 6\nspines = 4\nhosts_per_leaf = 5");
    let leaves = PartitionMap::build(&MapKind::Leaf, &cfg, &net).unwrap();
    assert_covers(&leaves, &net);
    assert_eq!(hosts_per_part(&leaves, &net), vec![5; 6]);
    assert!(PartitionMap::build(&MapKind::Pod, &cfg, &net).is_err());
    let (cfg, net) = network("kind = \"star\"\nhosts = 7");
    assert_covers(
        &PartitionMap::build(&MapKind::Parts(3), &cfg, &net).unwrap(),
        &net,
    );
    assert!(PartitionMap::build(&MapKind::Parts(8), &cfg, &net).is_err());
}

#[test]
fn a_topology_file_is_cut_where_its_clusters_meet() {
    // Two clusters of a switch and 4 hosts, joined by one 5 us link: 2 parts cut that link only.
    let mut text = String::new();
    for s in 0..2 {
        text += &format!("[[node]]\nname = \"s{s}\"\nkind = \"switch\"\n");
    }
    for h in 0..8 {
        text += &format!("[[node]]\nname = \"h{h}\"\nkind = \"host\"\nrack = {}\n", h / 4);
    }
    for h in 0..8 {
        text += &format!(
            "[[link]]\na = \"h{h}\"\nb = \"s{}\"\nrate = \"10Gbps\"\ndelay = \"1us\"\n",
            h / 4
        );
    }
    text += "[[link]]\na = \"s0\"\nb = \"s1\"\nrate = \"10Gbps\"\ndelay = \"5us\"\n";
    let path = std::env::temp_dir().join(format!("tailcut-partition-{}.toml", std::process::id()));
    std::fs::write(&path, text).unwrap();
    let (cfg, net) = network(&format!("kind = \"file\"\npath = \"{}\"", path.display()));
    std::fs::remove_file(&path).ok();
    let map = PartitionMap::build(&MapKind::Parts(2), &cfg, &net).unwrap();
    assert_covers(&map, &net);
    assert_eq!(map.cut_links(&net), (1, 9));
    assert_eq!(map.lookahead(&net, &[]), Some(Dur::from_micros(5)));
    // A fault that shortens the cut link shortens the windows.
    let cut = (0..net.ports.len()).find(|&p| map.is_cut(&net, p)).unwrap() as u32;
    let fault = FaultAction::SetDelay {
        port: cut,
        delay: Dur::from_micros(2),
    };
    assert_eq!(
        map.lookahead(&net, &[(Dur::from_micros(10), fault)]),
        Some(Dur::from_micros(2))
    );
    let one = PartitionMap::build(&MapKind::Parts(1), &cfg, &net).unwrap();
    assert_eq!(one.lookahead(&net, &[]), None);
}

#[test]
fn bounds_of_known_windows() {
    // Two windows of four partitions: [4, 0, 0, 0] and [1, 1, 1, 1], no faults; 8 events.
    let rows = [4, 0, 0, 0, 1, 1, 1, 1];
    let global = [0, 0];
    let totals = [5, 1, 1, 1];
    // Two workers by LPT: {0} and {1, 2, 3}: windows take 4 and 3 -> 8 / 7.
    let assign = lpt(&totals, 2);
    assert_eq!(assign, vec![0, 1, 1, 1]);
    assert_eq!(static_time(&rows, &global, 4, &assign, 2), 7);
    // Per-window ideal: max(4, 2) + max(1, 2) = 6.
    assert_eq!(ideal_time(&rows, &global, 4, 2), 6);
    // Four workers: 4 + 1 either way; one worker: sequential.
    assert_eq!(static_time(&rows, &global, 4, &lpt(&totals, 4), 4), 5);
    assert_eq!(ideal_time(&rows, &global, 4, 4), 5);
    assert_eq!(static_time(&rows, &global, 4, &lpt(&totals, 1), 1), 8);
    // A fault is every worker's work.
    assert_eq!(ideal_time(&rows, &[1, 0], 4, 4), 6);
}

const SMALL: &str = r#"
name = "partition-count"
seed = 7
max_time = "3ms"
[topology]
kind = "fat_tree"
k = 4
link_delay = "1us"
[network]
buffer = "100KB"
aqm = { kind = "ecn", k = "30KB" }
[[workload]]
name = "websearch"
pattern = { kind = "all_to_all" }
cdf = "websearch"
load = 0.6
until = "3ms"
[[schemes]]
name = "dctcp"
transport = "dctcp"
params = { min_rto = "1ms" }
[[faults]]
kind = "link_down"
link = { between = ["agg0_0", "core0"] }
at = "1ms"
"#;

#[test]
fn counting_sees_every_event_and_changes_no_result() {
    let exp = tailcut_sim::api::parse_toml(SMALL).unwrap();
    let prep = run::prepare(&exp).unwrap();
    let plain = run::run_prepared(&prep, &mut |_| true).unwrap();
    let net = Network::unrouted(&prep.schemes[0].topology, prep.exp.seed);
    let maps: Vec<PartitionMap> = [MapKind::Pod, MapKind::PodCore, MapKind::Parts(8)]
        .iter()
        .map(|k| PartitionMap::build(k, &exp.topology, &net).unwrap())
        .collect();
    let mut counter = Counter::new(&net, maps, &prep.schemes[0].faults);
    let counted = run::run_counted(&prep, 0, &mut counter, &mut |_| true).unwrap();
    assert_eq!(format!("{:?}", plain.flows), format!("{:?}", counted.flows));
    assert_eq!(format!("{:?}", plain.ports), format!("{:?}", counted.ports));
    let events = plain.runs[0].events;
    assert!(events > 10_000, "a run with traffic: {events} events");
    assert_eq!(counter.events(), events);
    let reports = counter.reports(&[2, 4, 8], 0.0);
    for r in &reports {
        assert_eq!(r.events, events);
        assert_eq!(r.global_events, 1, "the fault");
        assert_eq!(r.part_totals.iter().sum::<u64>() + r.global_events, events);
        assert_eq!(r.lookahead, Some(Dur::from_micros(1)));
        assert!(r.barriers <= r.windows_spanned && r.windows_spanned <= 3000);
        assert!(r.arrivals <= plain.runs[0].packet_hops);
        assert!(r.cut_packets > 0 && r.cut_packets < r.arrivals);
        for b in &r.bounds {
            assert!(b.static_lpt >= 1.0 && b.static_lpt <= b.ideal + 1e-9, "{b:?}");
            assert!(b.ideal <= f64::from(b.workers.min(r.parts)) + 1e-9, "{b:?}");
        }
    }
    assert_eq!(counter.per_node().iter().sum::<u64>() + 1, events);
}
