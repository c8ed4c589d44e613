//! How far could one experiment run on many cores (issue #41)? A measurement, not an engine.
//!
//! A parallel engine would cut the network into partitions (a pod or a leaf each, or parts of a
//! graph partitioner) and synchronise them conservatively: windows one lookahead long (the smallest
//! propagation delay of a link whose ends are in different partitions), the packets crossing a cut
//! exchanged at each window's barrier. This module counts, while the sequential simulator runs as
//! always, which partition owns each event (the node that processes it) and which window it falls
//! in, and from those counts bounds the speed-up such an engine could reach: a window takes as long
//! as its most loaded worker, so the bound is
//!
//! ```text
//!   total events / sum over windows of (events of the most loaded worker in that window)
//! ```
//!
//! with every event costing the same. Two assignments of partitions to workers are reported: a static
//! one (LPT by each partition's total events), what an engine with fixed partitions gets, and the
//! per-window ideal, where a window takes max(its largest partition, its events / workers) as if
//! partitions could move between workers at every barrier for free. Neither counts the barriers
//! themselves or the exchange of packets (`barrier_cost` adds a fixed cost per barrier).
//!
//! The counting is the simulator's counted event loop (`Sim::run_counted`, generic over the counter
//! and instantiated only in this binary), so the ordinary loop, the `Sim` and every other binary have
//! no trace of it (docs/performance.md, "Parallel speed-up bound (issue #41)").

use std::collections::VecDeque;
use tailcut_proto::{Dur, Time};
use tailcut_sim::event::NodeId;
use tailcut_sim::fault::FaultAction;
use tailcut_sim::net::Network;
use tailcut_sim::sim::EventCount;
use tailcut_sim::topo::{NodeKind, TopologyConfig};

/// How to cut the network.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum MapKind {
    /// Fat-tree: one partition per pod, core switch `c` in pod `c mod k` (round-robin).
    Pod,
    /// Fat-tree: one partition per pod, and the core switches as k/2 partitions of their own (group
    /// `i`: the k/2 cores of aggregation switch `i` of every pod).
    PodCore,
    /// Leaf-spine: one partition per leaf with its hosts, spine `s` in leaf `s mod leaves`.
    Leaf,
    /// Any topology: `n` parts grown over the graph, balanced by host count ([`grow_parts`]).
    Parts(u32),
}

impl std::str::FromStr for MapKind {
    type Err = String;
    fn from_str(s: &str) -> Result<MapKind, String> {
        match s {
            "pod" => Ok(MapKind::Pod),
            "pod+core" => Ok(MapKind::PodCore),
            "leaf" => Ok(MapKind::Leaf),
            n => match n.parse::<u32>() {
                Ok(n) if n >= 1 => Ok(MapKind::Parts(n)),
                _ => Err(format!(
                    "partitions '{s}': expected pod, pod+core, leaf or a number of parts >= 1"
                )),
            },
        }
    }
}

/// Which partition every node (host or switch) is in.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionMap {
    /// What the map is (`pod`, `pod+core`, `leaf`, `parts-64`).
    pub name: String,
    /// Node -> its partition, `0..parts`.
    pub of_node: Vec<u32>,
    pub parts: u32,
}

impl PartitionMap {
    /// The map of `kind` over `net`, built from `topo` (the shape `pod` and `leaf` need).
    pub fn build(kind: &MapKind, topo: &TopologyConfig, net: &Network) -> Result<PartitionMap, String> {
        let map = match kind {
            MapKind::Pod | MapKind::PodCore => {
                let TopologyConfig::FatTree(f) = topo else {
                    return Err("partitions 'pod' need a fat_tree topology".into());
                };
                fat_tree_pods(f.k, *kind == MapKind::PodCore, net)?
            }
            MapKind::Leaf => {
                let leaves = match topo {
                    TopologyConfig::LeafSpine(l) => l.leaves,
                    TopologyConfig::CloudburstTestbed(_) => 2,
                    _ => return Err("partitions 'leaf' need a leaf_spine topology".into()),
                };
                leaf_spine_leaves(leaves, net)?
            }
            MapKind::Parts(n) => grow_parts(net, *n)?,
        };
        map.check(net)?;
        Ok(map)
    }

    /// Every node is in exactly one partition, `0..parts`, and no partition is empty.
    pub fn check(&self, net: &Network) -> Result<(), String> {
        if self.of_node.len() != net.nodes.len() {
            return Err(format!(
                "{}: {} nodes mapped, the network has {}",
                self.name,
                self.of_node.len(),
                net.nodes.len()
            ));
        }
        let mut size = vec![0usize; self.parts as usize];
        for (n, &p) in self.of_node.iter().enumerate() {
            let Some(s) = size.get_mut(p as usize) else {
                return Err(format!(
                    "{}: node {n} in partition {p} of {}",
                    self.name, self.parts
                ));
            };
            *s += 1;
        }
        if let Some(p) = size.iter().position(|&s| s == 0) {
            return Err(format!("{}: partition {p} is empty", self.name));
        }
        Ok(())
    }

    /// Whether port `p` (one direction of a link) crosses the cut.
    pub fn is_cut(&self, net: &Network, p: usize) -> bool {
        let port = &net.ports[p];
        self.of_node[port.node as usize] != self.of_node[port.peer as usize]
    }

    /// Links (port pairs) crossing the cut, and all links.
    pub fn cut_links(&self, net: &Network) -> (usize, usize) {
        let cut = (0..net.ports.len()).filter(|&p| self.is_cut(net, p)).count();
        (cut / 2, net.ports.len() / 2)
    }

    /// The windows' length: the smallest propagation delay of a port crossing the cut, at the start
    /// or as a fault sets it. `None` when nothing is cut (one partition: one window).
    pub fn lookahead(&self, net: &Network, faults: &[(Dur, FaultAction)]) -> Option<Dur> {
        let initial = (0..net.ports.len())
            .filter(|&p| self.is_cut(net, p))
            .map(|p| net.ports[p].delay());
        let set = faults.iter().filter_map(|(_, a)| match a {
            FaultAction::SetDelay { port, delay } if self.is_cut(net, *port as usize) => Some(*delay),
            _ => None,
        });
        initial.chain(set).min()
    }

    /// The nodes of each partition.
    #[cfg(test)]
    pub fn members(&self) -> Vec<Vec<NodeId>> {
        let mut m = vec![Vec::new(); self.parts as usize];
        for (n, &p) in self.of_node.iter().enumerate() {
            m[p as usize].push(n as NodeId);
        }
        m
    }
}

/// The numbers of a builder's node name after its `prefix`, `_`-separated (`agg3_1` -> [3, 1]).
fn numbers(name: &str, prefix: &str) -> Option<Vec<u32>> {
    let rest = name.strip_prefix(prefix)?;
    rest.split('_').map(|s| s.parse().ok()).collect()
}

/// Fat-tree pods from the builder's node names (`core{c}`, `agg{p}_{i}`, `tor{p}_{e}`, hosts by
/// rack: rack `p * k/2 + e`).
fn fat_tree_pods(k: u32, cores_apart: bool, net: &Network) -> Result<PartitionMap, String> {
    let half = k / 2;
    let host_of_node: std::collections::HashMap<NodeId, usize> =
        net.hosts.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut of_node = Vec::with_capacity(net.nodes.len());
    for (i, n) in net.nodes.iter().enumerate() {
        let part = if n.kind == NodeKind::Host {
            net.host_rack[host_of_node[&(i as NodeId)]] / half
        } else if let Some([c]) = numbers(&n.name, "core").as_deref() {
            if cores_apart {
                k + c / half
            } else {
                c % k
            }
        } else if let Some([p, _]) = numbers(&n.name, "agg").as_deref() {
            *p
        } else if let Some([p, _]) = numbers(&n.name, "tor").as_deref() {
            *p
        } else {
            return Err(format!("'{}' is not a fat-tree node name", n.name));
        };
        of_node.push(part);
    }
    Ok(PartitionMap {
        name: if cores_apart { "pod+core" } else { "pod" }.into(),
        of_node,
        parts: if cores_apart { k + half } else { k },
    })
}

/// Leaf-spine leaves from the builder's node names (`leaf{l}`, `spine{s}`, hosts by rack = leaf).
fn leaf_spine_leaves(leaves: u32, net: &Network) -> Result<PartitionMap, String> {
    let host_of_node: std::collections::HashMap<NodeId, usize> =
        net.hosts.iter().enumerate().map(|(i, &n)| (n, i)).collect();
    let mut of_node = Vec::with_capacity(net.nodes.len());
    for (i, n) in net.nodes.iter().enumerate() {
        let part = if n.kind == NodeKind::Host {
            net.host_rack[host_of_node[&(i as NodeId)]]
        } else if let Some([l]) = numbers(&n.name, "leaf").as_deref() {
            *l
        } else if let Some([s]) = numbers(&n.name, "spine").as_deref() {
            s % leaves
        } else {
            return Err(format!("'{}' is not a leaf-spine node name", n.name));
        };
        of_node.push(part);
    }
    Ok(PartitionMap {
        name: "leaf".into(),
        of_node,
        parts: leaves,
    })
}

/// A deterministic graph partitioner for any topology: `n` parts balanced by host count, grown over
/// the graph to keep links inside parts.
///
/// 1. Hosts: part `i` starts at the lowest-numbered unassigned host and takes the unassigned hosts
///    nearest to it (breadth-first over the whole graph, ties by host number) up to its share
///    (`hosts / n`, the first `hosts mod n` parts one more). On a fat-tree of k pods and n = k this
///    gives the pods; with a multiple of k, groups of racks of one pod.
/// 2. Switches, layer by layer outward from the hosts: a switch joins the part holding most of its
///    neighbours placed in earlier layers; ties go to the part with the fewest switch ports so far
///    (spreading core switches, whose neighbours are in every part), then the lowest part.
/// 3. Refinement: a switch moves to another part while that strictly lowers the number of cut links
///    (at most 8 passes).
pub fn grow_parts(net: &Network, n: u32) -> Result<PartitionMap, String> {
    let hosts = net.hosts.len();
    if n == 0 || n as usize > hosts {
        return Err(format!("{n} parts for {hosts} hosts: give 1 to {hosts}"));
    }
    let nodes = net.nodes.len();
    let neighbours: Vec<Vec<NodeId>> = net
        .nodes
        .iter()
        .map(|node| node.ports.iter().map(|&p| net.ports[p as usize].peer).collect())
        .collect();
    const NONE: u32 = u32::MAX;
    let mut of_node = vec![NONE; nodes];
    let mut host_index = vec![usize::MAX; nodes];
    for (i, &h) in net.hosts.iter().enumerate() {
        host_index[h as usize] = i;
    }
    // 1. Hosts.
    let mut next_seed = 0;
    for part in 0..n {
        let share = hosts / n as usize + usize::from((part as usize) < hosts % n as usize);
        while of_node[net.hosts[next_seed] as usize] != NONE {
            next_seed += 1;
        }
        // Breadth-first from the seed; hosts of one distance in host order.
        let mut dist = vec![u32::MAX; nodes];
        let seed = net.hosts[next_seed];
        dist[seed as usize] = 0;
        let mut queue = VecDeque::from([seed]);
        let mut layer: Vec<NodeId> = Vec::new();
        let mut layer_dist = 0;
        let mut taken = 0;
        let take = |layer: &mut Vec<NodeId>, of_node: &mut Vec<u32>, taken: &mut usize| {
            layer.sort_unstable_by_key(|&h| host_index[h as usize]);
            for &h in layer.iter() {
                if *taken < share && of_node[h as usize] == NONE {
                    of_node[h as usize] = part;
                    *taken += 1;
                }
            }
            layer.clear();
        };
        while let Some(v) = queue.pop_front() {
            let d = dist[v as usize];
            if d != layer_dist {
                take(&mut layer, &mut of_node, &mut taken);
                layer_dist = d;
            }
            if taken >= share {
                break;
            }
            if net.nodes[v as usize].kind == NodeKind::Host {
                layer.push(v);
            }
            for &w in &neighbours[v as usize] {
                if dist[w as usize] == u32::MAX {
                    dist[w as usize] = d + 1;
                    queue.push_back(w);
                }
            }
        }
        take(&mut layer, &mut of_node, &mut taken);
        if taken < share {
            // A disconnected graph: the rest of the share from the lowest unassigned hosts.
            for &h in &net.hosts {
                if taken < share && of_node[h as usize] == NONE {
                    of_node[h as usize] = part;
                    taken += 1;
                }
            }
        }
    }
    // 2. Switches, layer by layer (every switch of a layer decided on the previous layers).
    let mut ports_in = vec![0u64; n as usize];
    loop {
        let layer: Vec<usize> = (0..nodes)
            .filter(|&v| of_node[v] == NONE)
            .filter(|&v| neighbours[v].iter().any(|&w| of_node[w as usize] != NONE))
            .collect();
        if layer.is_empty() {
            break;
        }
        // Majorities from the previous layers; ties spread by the ports placed so far, this layer's
        // included (the cores of a fat-tree tie between every pod).
        let links: Vec<Vec<u32>> = layer
            .iter()
            .map(|&v| {
                let mut links = vec![0u32; n as usize];
                for &w in &neighbours[v] {
                    if of_node[w as usize] != NONE {
                        links[of_node[w as usize] as usize] += 1;
                    }
                }
                links
            })
            .collect();
        for (&v, links) in layer.iter().zip(&links) {
            let most = *links.iter().max().unwrap_or(&0);
            let p = (0..n)
                .filter(|&p| links[p as usize] == most)
                .min_by_key(|&p| (ports_in[p as usize], p))
                .unwrap_or(0);
            of_node[v] = p;
            ports_in[p as usize] += neighbours[v].len() as u64;
        }
    }
    // Nodes no host reaches (switches on their own) go to part 0.
    for p in of_node.iter_mut().filter(|p| **p == NONE) {
        *p = 0;
    }
    // 3. Refinement.
    for _ in 0..8 {
        let mut moved = false;
        for v in 0..nodes {
            if net.nodes[v].kind == NodeKind::Host {
                continue;
            }
            let mut links = vec![0u32; n as usize];
            for &w in &neighbours[v] {
                links[of_node[w as usize] as usize] += 1;
            }
            let here = links[of_node[v] as usize];
            let best = (0..n).max_by_key(|&p| (links[p as usize], std::cmp::Reverse(p)));
            if let Some(b) = best {
                if links[b as usize] > here {
                    of_node[v] = b;
                    moved = true;
                }
            }
        }
        if !moved {
            break;
        }
    }
    Ok(PartitionMap {
        name: format!("parts-{n}"),
        of_node,
        parts: n,
    })
}

/// The counts of one map while the simulation runs: events per partition per window.
struct MapCount {
    map: PartitionMap,
    /// The window length in ns (`u64::MAX`: nothing cut, one window).
    window_ns: u64,
    lookahead: Option<Dur>,
    cut_links: usize,
    links: usize,
    /// The windows holding events, in order, and their counts: `parts` per window in `rows`, and
    /// the events no partition owns (faults, which every partition would apply) in `global`.
    windows: Vec<u64>,
    rows: Vec<u32>,
    global: Vec<u32>,
    /// Packets that arrived over a cut link.
    cut_packets: u64,
}

/// The count of a run (`Sim::count_partitions`): every event's owner and window under each map.
pub struct Counter {
    maps: Vec<MapCount>,
    /// Events per node; `global` events have no node (faults).
    per_node: Vec<u64>,
    global: u64,
    events: u64,
    /// Packets that arrived at the far end of a link.
    arrivals: u64,
    switch: Vec<bool>,
}

impl Counter {
    pub fn new(net: &Network, maps: Vec<PartitionMap>, faults: &[(Dur, FaultAction)]) -> Counter {
        let maps = maps
            .into_iter()
            .map(|map| {
                let lookahead = map.lookahead(net, faults);
                let (cut_links, links) = map.cut_links(net);
                MapCount {
                    window_ns: lookahead.map_or(u64::MAX, |d| d.0.max(1)),
                    lookahead,
                    cut_links,
                    links,
                    map,
                    windows: Vec::new(),
                    rows: Vec::new(),
                    global: Vec::new(),
                    cut_packets: 0,
                }
            })
            .collect();
        Counter {
            maps,
            per_node: vec![0; net.nodes.len()],
            global: 0,
            events: 0,
            arrivals: 0,
            switch: net.nodes.iter().map(|n| n.kind == NodeKind::Switch).collect(),
        }
    }

    /// Events counted.
    #[cfg(test)]
    pub fn events(&self) -> u64 {
        self.events
    }

    /// Events per node (faults not included).
    #[cfg(test)]
    pub fn per_node(&self) -> &[u64] {
        &self.per_node
    }

    /// The report of every map, with the bound at each number of `workers` and `barrier_cost`
    /// events' worth of time per barrier.
    pub fn reports(&self, workers: &[u32], barrier_cost: f64) -> Vec<MapReport> {
        let switch_events: u64 = self
            .per_node
            .iter()
            .zip(&self.switch)
            .filter(|(_, &s)| s)
            .map(|(e, _)| e)
            .sum();
        self.maps
            .iter()
            .map(|m| {
                let parts = m.map.parts as usize;
                let mut totals = vec![0u64; parts];
                for row in m.rows.chunks_exact(parts) {
                    for (t, &c) in totals.iter_mut().zip(row) {
                        *t += u64::from(c);
                    }
                }
                let mut ws: Vec<u32> = workers.to_vec();
                if !ws.contains(&m.map.parts) {
                    ws.push(m.map.parts);
                }
                let bounds = ws
                    .iter()
                    .map(|&w| {
                        let assign = lpt(&totals, w);
                        Bound {
                            workers: w,
                            static_lpt: speedup(
                                self.events,
                                static_time(&m.rows, &m.global, parts, &assign, w),
                                m.windows.len(),
                                barrier_cost,
                            ),
                            ideal: speedup(
                                self.events,
                                ideal_time(&m.rows, &m.global, parts, w),
                                m.windows.len(),
                                barrier_cost,
                            ),
                            static_imbalance: imbalance(&totals, &assign, w),
                        }
                    })
                    .collect();
                let max_part = totals.iter().copied().max().unwrap_or(0);
                MapReport {
                    name: m.map.name.clone(),
                    parts: m.map.parts,
                    lookahead: m.lookahead,
                    cut_links: m.cut_links,
                    links: m.links,
                    events: self.events,
                    global_events: self.global,
                    switch_events,
                    windows_spanned: m.windows.last().map_or(0, |&w| {
                        if m.window_ns == u64::MAX {
                            1
                        } else {
                            w + 1
                        }
                    }),
                    barriers: m.windows.len() as u64,
                    arrivals: self.arrivals,
                    cut_packets: m.cut_packets,
                    largest_part_share: max_part as f64 / self.events.max(1) as f64,
                    part_totals: totals,
                    bounds,
                }
            })
            .collect()
    }
}

impl EventCount for Counter {
    /// One event at `t`, processed at `owner` (`None`: by every partition, a fault); `from` is the
    /// sending node of a packet arriving at `owner`.
    fn event(&mut self, t: Time, owner: Option<NodeId>, from: Option<NodeId>) {
        self.events += 1;
        match owner {
            Some(n) => self.per_node[n as usize] += 1,
            None => self.global += 1,
        }
        self.arrivals += u64::from(from.is_some());
        for m in &mut self.maps {
            let w = t.0 / m.window_ns;
            let parts = m.map.parts as usize;
            if m.windows.last() != Some(&w) {
                m.windows.push(w);
                m.rows.resize(m.rows.len() + parts, 0);
                m.global.push(0);
            }
            let base = m.rows.len() - parts;
            match owner {
                Some(n) => {
                    let p = m.map.of_node[n as usize];
                    m.rows[base + p as usize] += 1;
                    if let Some(f) = from {
                        m.cut_packets += u64::from(m.map.of_node[f as usize] != p);
                    }
                }
                None => {
                    if let Some(g) = m.global.last_mut() {
                        *g += 1;
                    }
                }
            }
        }
    }
}

/// The bound at one number of workers.
#[derive(Clone, Debug, PartialEq)]
pub struct Bound {
    pub workers: u32,
    /// Partitions assigned once, by LPT on their total events.
    pub static_lpt: f64,
    /// Each window balanced on its own: max(largest partition, events / workers).
    pub ideal: f64,
    /// Of the static assignment: the most loaded worker's total over the mean (1 = balanced).
    pub static_imbalance: f64,
}

/// What one map gives on one run.
#[derive(Clone, Debug)]
pub struct MapReport {
    pub name: String,
    pub parts: u32,
    pub lookahead: Option<Dur>,
    pub cut_links: usize,
    pub links: usize,
    pub events: u64,
    /// Events no partition owns (faults).
    pub global_events: u64,
    /// Events at switches (the rest at hosts, faults apart).
    pub switch_events: u64,
    /// Windows from time zero to the last event's.
    pub windows_spanned: u64,
    /// Windows with at least one event.
    pub barriers: u64,
    /// Packets that arrived at a link's far end, and those of them over a cut link.
    pub arrivals: u64,
    pub cut_packets: u64,
    /// The largest partition's share of all events.
    pub largest_part_share: f64,
    pub part_totals: Vec<u64>,
    pub bounds: Vec<Bound>,
}

/// Longest processing time first: partitions by total events, largest first, each to the worker
/// with the least so far (ties: lowest worker, lowest partition). Worker of each partition.
pub fn lpt(totals: &[u64], workers: u32) -> Vec<u32> {
    let mut order: Vec<usize> = (0..totals.len()).collect();
    order.sort_by_key(|&p| (std::cmp::Reverse(totals[p]), p));
    let mut load = vec![0u64; workers.max(1) as usize];
    let mut assign = vec![0u32; totals.len()];
    for p in order {
        let w = (0..load.len()).min_by_key(|&w| (load[w], w)).unwrap_or(0);
        assign[p] = w as u32;
        load[w] += totals[p];
    }
    assign
}

/// Parallel time (in events) with a fixed assignment: per window, the most loaded worker, plus the
/// window's global events (every worker applies them).
pub fn static_time(rows: &[u32], global: &[u32], parts: usize, assign: &[u32], workers: u32) -> u64 {
    let mut load = vec![0u64; workers.max(1) as usize];
    let mut time = 0;
    for (row, &g) in rows.chunks_exact(parts).zip(global) {
        load.fill(0);
        for (p, &c) in row.iter().enumerate() {
            load[assign[p] as usize] += u64::from(c);
        }
        time += load.iter().copied().max().unwrap_or(0) + u64::from(g);
    }
    time
}

/// Parallel time (in events) with each window balanced on its own: max(largest partition,
/// ceil(events / workers)), plus its global events.
pub fn ideal_time(rows: &[u32], global: &[u32], parts: usize, workers: u32) -> u64 {
    let w = u64::from(workers.max(1));
    rows.chunks_exact(parts)
        .zip(global)
        .map(|(row, &g)| {
            let sum: u64 = row.iter().map(|&c| u64::from(c)).sum();
            let max = row.iter().copied().max().map_or(0, u64::from);
            max.max(sum.div_ceil(w)) + u64::from(g)
        })
        .sum()
}

fn speedup(events: u64, time: u64, barriers: usize, barrier_cost: f64) -> f64 {
    let t = time as f64 + barrier_cost * barriers as f64;
    if t > 0.0 {
        events as f64 / t
    } else {
        1.0
    }
}

fn imbalance(totals: &[u64], assign: &[u32], workers: u32) -> f64 {
    let mut load = vec![0u64; workers.max(1) as usize];
    for (p, &t) in totals.iter().enumerate() {
        load[assign[p] as usize] += t;
    }
    let used = (workers as usize).min(totals.len()).max(1);
    let mean = totals.iter().sum::<u64>() as f64 / used as f64;
    let max = load.iter().copied().max().unwrap_or(0) as f64;
    if mean > 0.0 {
        max / mean
    } else {
        1.0
    }
}
