//! Forwarding tables: for every switch and destination address, the egress ports on shortest paths
//! (hop count) over links that are up. Hosts never forward.
//!
//! A host is a leaf: every path to one of its addresses enters through the switch its NIC is attached
//! to, so at every other switch the next hops toward the address are the next hops toward that switch.
//! The tables are therefore kept per (switch, destination switch) plus, per address, its attachment
//! switch and the port there that faces the NIC: O(switches^2 + addresses) entries rather than
//! O(nodes x addresses), which is what lets a star of a million hosts or a 1000-leaf leaf-spine be
//! routed at all. A switch's distinct hop sets are stored once.

use super::Network;
use crate::event::{NodeId, PortId};
use crate::hash::FxMap;
use crate::topo::NodeKind;
use std::collections::VecDeque;
use tailcut_proto::rng::mix64;
use tailcut_proto::{FiveTuple, Route};

/// Not a switch (a host), or an address no switch can reach.
const NONE: u32 = u32::MAX;

#[derive(Default)]
pub struct Routes {
    /// Node -> its index among switches (`NONE` for hosts) and its ECMP salt: one record, so that a
    /// hop reads both with one look-up (4 instructions per packet-hop on benchmark (a)).
    switch_index: Vec<(u32, u64)>,
    n_switches: usize,
    /// (start, len) into `ports`, indexed by `from_switch * n_switches + to_switch` (switch indices).
    index: Vec<(u32, u16)>,
    ports: Vec<PortId>,
    /// Per address: the switch index its NIC is attached to (`NONE` when the NIC is down or faces a
    /// host), and that switch's port toward the NIC (`NONE` when that direction is down).
    attach: Vec<(u32, PortId)>,
}

/// A link from one switch to another, as the route search reads it.
struct SwitchLink {
    port: PortId,
    /// The far switch's index.
    peer: u32,
    up: bool,
    reverse_up: bool,
}

impl Routes {
    pub fn compute(net: &Network) -> Routes {
        let n_nodes = net.nodes.len();
        let mut switch_index = vec![NONE; n_nodes];
        let mut switches = Vec::new();
        for (n, node) in net.nodes.iter().enumerate() {
            if node.kind == NodeKind::Switch {
                switch_index[n] = switches.len() as u32;
                switches.push(n as NodeId);
            }
        }
        let n_switches = switches.len();
        // The switch-to-switch links, per switch in port order, read once: the searches below touch
        // only these compact records, not the ports (a k = 16 fat-tree computed its tables in
        // 261 M instructions, 74 per packet-hop of a 5 ms run, reading ports).
        let mut adj_start = Vec::with_capacity(n_switches + 1);
        let mut adj = Vec::new();
        for &n in &switches {
            adj_start.push(adj.len());
            for &p in &net.nodes[n as usize].ports {
                let port = &net.ports[p as usize];
                let peer = switch_index[port.peer as usize];
                if peer != NONE {
                    adj.push(SwitchLink {
                        port: p,
                        peer,
                        up: port.is_up(),
                        // Traffic toward the search's destination crosses the link backwards.
                        reverse_up: net.ports[port.reverse as usize].is_up(),
                    });
                }
            }
        }
        adj_start.push(adj.len());
        let links = |sw: usize| &adj[adj_start[sw]..adj_start[sw + 1]];
        let mut index = vec![(0u32, 0u16); n_switches * n_switches];
        let mut ports = Vec::new();
        // Per source switch: hop set -> its start in `ports`, so that each distinct set is stored once.
        // Probed only (never iterated), so a fast hasher cannot change the tables.
        let mut stored: Vec<FxMap<Vec<PortId>, u32>> = vec![FxMap::default(); n_switches];
        let mut hops = Vec::new();
        let mut dist = vec![u32::MAX; n_switches];
        let mut frontier = VecDeque::new();
        for to in 0..n_switches {
            // BFS outward from the destination switch through switches only.
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[to] = 0;
            frontier.clear();
            frontier.push_back(to);
            while let Some(n) = frontier.pop_front() {
                for l in links(n) {
                    let m = l.peer as usize;
                    if l.reverse_up && dist[m] == u32::MAX {
                        dist[m] = dist[n] + 1;
                        frontier.push_back(m);
                    }
                }
            }
            for from in 0..n_switches {
                if from == to || dist[from] == u32::MAX {
                    continue;
                }
                hops.clear();
                for l in links(from) {
                    if l.up && dist[l.peer as usize].wrapping_add(1) == dist[from] {
                        hops.push(l.port);
                    }
                }
                let start = match stored[from].get(hops.as_slice()) {
                    Some(&s) => s,
                    None => {
                        let s = ports.len() as u32;
                        ports.extend_from_slice(&hops);
                        stored[from].insert(hops.clone(), s);
                        s
                    }
                };
                index[from * n_switches + to] = (start, hops.len() as u16);
            }
        }
        let attach = net
            .addrs
            .iter()
            .map(|&(_, nic)| {
                let port = &net.ports[nic as usize];
                let sw = switch_index[port.peer as usize];
                if !port.is_up() || sw == NONE {
                    return (NONE, NONE);
                }
                let down = port.reverse;
                (
                    sw,
                    if net.ports[down as usize].is_up() {
                        down
                    } else {
                        NONE
                    },
                )
            })
            .collect();
        let switch_index = switch_index
            .iter()
            .zip(&net.nodes)
            .map(|(&i, node)| (i, node.salt))
            .collect();
        Routes {
            switch_index,
            n_switches,
            index,
            ports,
            attach,
        }
    }

    /// Equal-cost egress ports at `node` toward `dst`.
    #[inline]
    pub fn next_hops(&self, node: NodeId, dst: tailcut_proto::Addr) -> &[PortId] {
        self.hops_and_salt(node, dst).0
    }

    /// The egress port a packet with `tuple` takes at switch `node` (`None`: no route), updating a
    /// source route's remaining label.
    #[inline(always)]
    pub fn egress(&self, node: NodeId, tuple: &FiveTuple, route: &mut Route) -> Option<PortId> {
        let (hops, salt) = self.hops_and_salt(node, tuple.dst);
        choose(hops, tuple, route, salt)
    }

    #[inline(always)]
    fn hops_and_salt(&self, node: NodeId, dst: tailcut_proto::Addr) -> (&[PortId], u64) {
        let (to, last) = &self.attach[dst.0 as usize];
        let (from, salt) = self.switch_index[node as usize];
        if *to == NONE || from == NONE {
            return (&[], salt);
        }
        if from == *to {
            let hops = if *last == NONE {
                &[]
            } else {
                std::slice::from_ref(last)
            };
            return (hops, salt);
        }
        let (s, l) = self.index[from as usize * self.n_switches + *to as usize];
        (&self.ports[s as usize..s as usize + l as usize], salt)
    }
}
/// ECMP hash of a 5-tuple under a switch's salt.
#[inline]
pub fn ecmp_hash(t: &FiveTuple, salt: u64) -> u64 {
    let a = ((t.src.0 as u64) << 32) | t.dst.0 as u64;
    let b = ((t.src_port as u64) << 16) | t.dst_port as u64 | ((t.proto as u64) << 40);
    mix64(mix64(a ^ salt) ^ b)
}

/// Picks the egress among `hops` for a packet, updating a source route's remaining label.
#[inline]
pub fn choose(hops: &[PortId], tuple: &FiveTuple, route: &mut Route, salt: u64) -> Option<PortId> {
    match hops.len() {
        0 => None,
        1 => Some(hops[0]),
        n => {
            let i = match route {
                Route::Ecmp => (ecmp_hash(tuple, salt) % n as u64) as usize,
                Route::Path(label) => {
                    let i = (*label % n as u32) as usize;
                    *label /= n as u32;
                    i
                }
            };
            Some(hops[i])
        }
    }
}
