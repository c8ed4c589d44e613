//! Forwarding tables: for every switch and destination address, the egress ports on shortest paths
//! (hop count) over links that are up. Hosts never forward.

use super::Network;
use crate::event::{NodeId, PortId};
use crate::topo::NodeKind;
use std::collections::VecDeque;
use tailcut_proto::rng::mix64;
use tailcut_proto::{FiveTuple, Route};

#[derive(Default)]
pub struct Routes {
    n_addrs: usize,
    /// (start, len) into `ports`, indexed by `node * n_addrs + addr`.
    index: Vec<(u32, u16)>,
    ports: Vec<PortId>,
}

impl Routes {
    pub fn compute(net: &Network) -> Routes {
        let n_nodes = net.nodes.len();
        let n_addrs = net.addrs.len();
        let mut index = vec![(0u32, 0u16); n_nodes * n_addrs];
        let mut ports = Vec::new();
        let mut dist = vec![u32::MAX; n_nodes];
        let mut frontier = VecDeque::new();
        for (a, &(host, nic)) in net.addrs.iter().enumerate() {
            // BFS outward from the destination host through its NIC only (a multi-homed host is
            // reached through the NIC that owns the address).
            dist.iter_mut().for_each(|d| *d = u32::MAX);
            dist[host as usize] = 0;
            let first = net.ports[nic as usize].peer;
            if !net.ports[nic as usize].is_up() {
                continue;
            }
            dist[first as usize] = 1;
            frontier.clear();
            frontier.push_back(first);
            while let Some(n) = frontier.pop_front() {
                if net.nodes[n as usize].kind == NodeKind::Host {
                    continue;
                }
                for &p in &net.nodes[n as usize].ports {
                    let port = &net.ports[p as usize];
                    // Reverse direction must be up for traffic toward the destination.
                    if !net.ports[port.reverse as usize].is_up() {
                        continue;
                    }
                    let m = port.peer as usize;
                    if dist[m] == u32::MAX {
                        dist[m] = dist[n as usize] + 1;
                        frontier.push_back(m as NodeId);
                    }
                }
            }
            for (n, node) in net.nodes.iter().enumerate() {
                if node.kind == NodeKind::Host || dist[n] == u32::MAX {
                    continue;
                }
                let start = ports.len();
                for &p in &node.ports {
                    let port = &net.ports[p as usize];
                    let peer = port.peer as usize;
                    let peer_ok = net.nodes[peer].kind == NodeKind::Switch || peer == host as usize;
                    if port.is_up() && peer_ok && dist[peer] + 1 == dist[n] {
                        // A host peer is the destination only through the addressed NIC.
                        if peer == host as usize && p != net.ports[nic as usize].reverse {
                            continue;
                        }
                        ports.push(p);
                    }
                }
                index[n * n_addrs + a] = (start as u32, (ports.len() - start) as u16);
            }
        }
        Routes {
            n_addrs,
            index,
            ports,
        }
    }

    /// Equal-cost egress ports at `node` toward `dst`.
    pub fn next_hops(&self, node: NodeId, dst: tailcut_proto::Addr) -> &[PortId] {
        let (s, l) = self.index[node as usize * self.n_addrs + dst.0 as usize];
        &self.ports[s as usize..s as usize + l as usize]
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
