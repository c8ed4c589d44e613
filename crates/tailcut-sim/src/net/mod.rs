//! The network: nodes (hosts and switches), their ports (each the egress of one direction of a link),
//! and forwarding (per-switch ECMP on the 5-tuple, or source-chosen paths).

pub mod aqm;
pub mod link;
pub mod port;
pub mod qdisc;
pub mod queue;
pub mod routing;

pub use port::{Port, PortCounters};
pub use routing::Routes;

use crate::event::{NodeId, PortId};
use crate::topo::{HostTsq, NodeKind, TopoSpec};
use qdisc::PortQueue;
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::time::serialization_time;
use tailcut_proto::Addr;

pub struct Node {
    pub kind: NodeKind,
    pub name: String,
    pub ports: Vec<PortId>,
    /// Per-switch ECMP hash salt, so that successive switches do not make correlated choices.
    pub salt: u64,
}

pub struct Network {
    pub nodes: Vec<Node>,
    pub ports: Vec<Port>,
    /// Address -> (host node, NIC port).
    pub addrs: Vec<(NodeId, PortId)>,
    /// Host index -> node, and host index -> its addresses (one per NIC).
    pub hosts: Vec<NodeId>,
    pub host_addrs: Vec<Vec<Addr>>,
    pub host_rack: Vec<u32>,
    /// Per-engine budget of bytes in its host's NIC queue (TCP small queues).
    pub host_tsq: HostTsq,
    /// Host index -> rate of its fastest NIC (what a Linux host's TSQ limit scales with).
    pub host_nic_rate_bps: Vec<u64>,
    pub routes: Routes,
}

impl Network {
    pub fn build(spec: &TopoSpec, seed: u64) -> Network {
        let mut net = Network::unrouted(spec, seed);
        net.routes = Routes::compute(&net);
        net
    }

    /// The network without its forwarding tables, for what needs only its shape (host information,
    /// fault placement): the tables of a k = 16 fat-tree take ~70 M instructions to compute.
    pub fn unrouted(spec: &TopoSpec, seed: u64) -> Network {
        let mut nodes: Vec<Node> = spec
            .nodes
            .iter()
            .enumerate()
            .map(|(i, n)| Node {
                kind: n.kind,
                name: n.name.clone(),
                ports: Vec::new(),
                salt: rng::derive_seed(seed, Stream::Switch, i as u64),
            })
            .collect();
        let mut ports = Vec::with_capacity(spec.links.len() * 2);
        for l in &spec.links {
            let a_to_b = ports.len() as PortId;
            for (from, to, buffer, aqm) in
                [(l.a, l.b, l.buffer_a, &l.aqm_a), (l.b, l.a, l.buffer_b, &l.aqm_b)]
            {
                let id = ports.len() as PortId;
                let typical = serialization_time(1500, l.rate_bps).as_nanos();
                ports.push(Port::new(
                    from,
                    to,
                    if id == a_to_b { a_to_b + 1 } else { a_to_b },
                    l.tier,
                    l.rate_bps,
                    l.delay,
                    PortQueue::new(buffer, &aqm.aqm, &aqm.classes, &aqm.sched, typical),
                    rng::stream(seed, Stream::Port, id as u64),
                ));
                nodes[from as usize].ports.push(id);
            }
        }
        let mut hosts = Vec::new();
        let mut host_addrs = Vec::new();
        let mut host_nic_rate_bps = Vec::new();
        let mut addrs = Vec::new();
        for (i, n) in nodes.iter().enumerate() {
            if n.kind == NodeKind::Host {
                hosts.push(i as NodeId);
                let mut mine = Vec::new();
                for &p in &n.ports {
                    mine.push(Addr(addrs.len() as u32));
                    addrs.push((i as NodeId, p));
                }
                host_addrs.push(mine);
                let fastest = n.ports.iter().map(|&p| ports[p as usize].rate_bps());
                host_nic_rate_bps.push(fastest.max().unwrap_or(0));
            }
        }
        let mut host_of_node = vec![u32::MAX; nodes.len()];
        for (i, &n) in hosts.iter().enumerate() {
            host_of_node[n as usize] = i as u32;
        }
        for p in &mut ports {
            p.peer_host = host_of_node[p.peer as usize];
        }
        Network {
            nodes,
            ports,
            addrs,
            hosts,
            host_addrs,
            host_rack: spec.host_rack.clone(),
            host_tsq: spec.host_tsq,
            host_nic_rate_bps,
            routes: Routes::default(),
        }
    }

    pub fn recompute_routes(&mut self) {
        self.routes = Routes::compute(self);
    }

    pub fn host_count(&self) -> usize {
        self.hosts.len()
    }

    /// Host index -> its rack and NIC rate, for workload generation.
    pub fn host_info(&self) -> (Vec<u32>, Vec<u64>) {
        let rates = self
            .hosts
            .iter()
            .map(|&n| self.ports[self.nodes[n as usize].ports[0] as usize].rate_bps())
            .collect();
        (self.host_rack.clone(), rates)
    }
}
