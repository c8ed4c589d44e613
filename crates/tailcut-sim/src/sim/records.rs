//! The records of a run: one per flow (with its ideal FCT on an idle path), one per port, the
//! conservation check, and the counters summed into the run info.

use super::app::{msg_id, replica_charged, FlowState, Part};
use super::Sim;
use crate::fault;
use crate::metrics::{Conservation, FlowRecord, PathInfo, PortRecord, RunInfo};
use tailcut_proto::time::serialization_time;
use tailcut_proto::MessageStats;

impl<const TRACED: bool> Sim<'_, TRACED> {
    fn path_info(&mut self, src: u32, dst: u32) -> PathInfo {
        if let Some(p) = self.paths.get(&(src, dst)) {
            return *p;
        }
        let dst_addr = self.net.host_addrs[dst as usize][0];
        let mut port = self.net.addrs[self.net.host_addrs[src as usize][0].0 as usize].1;
        let mut info = PathInfo {
            delay_ns: 0,
            bottleneck_bps: u64::MAX,
            inv_rate_sum: 0.0,
            hops: 0,
        };
        for _ in 0..64 {
            let p = &self.net.ports[port as usize];
            info.delay_ns += p.delay().0;
            info.bottleneck_bps = info.bottleneck_bps.min(p.rate_bps());
            info.inv_rate_sum += 1.0 / p.rate_bps() as f64;
            info.hops += 1;
            if p.peer == self.net.hosts[dst as usize] {
                break;
            }
            match self.net.routes.next_hops(p.peer, dst_addr).first() {
                Some(&next) => port = next,
                None => break,
            }
        }
        self.paths.insert((src, dst), info);
        info
    }

    /// The run's flow records (unfinished flows included, with their counters so far).
    pub fn flow_records(&mut self, scheme: &str, component_names: &[String]) -> Vec<FlowRecord> {
        let mut out = Vec::with_capacity(self.flows.len());
        for (i, spec) in self.flows.iter().enumerate() {
            let transport = &self.components[spec.component as usize].transport;
            let (mss, hdr) = transport.framing();
            let (stats, finish) = match self.flow_state.get(i) {
                Some(st) => (self.flow_stats(i, st), st.finish),
                None => (MessageStats::default(), None),
            };
            let fwd = self.path_info(spec.src, spec.dst);
            let mut ideal = fwd.ideal_ns(spec.size_bytes, mss, hdr);
            if spec.request_bytes > 0 {
                ideal += self
                    .path_info(spec.dst, spec.src)
                    .ideal_ns(spec.request_bytes, mss, hdr);
            }
            out.push(FlowRecord {
                flow_id: spec.id,
                scheme: scheme.to_string(),
                component: component_names[spec.component as usize].clone(),
                src: spec.src,
                dst: spec.dst,
                size_bytes: spec.size_bytes,
                request_bytes: spec.request_bytes,
                start_ns: spec.start.0,
                finish_ns: finish.map(|t| t.0),
                ideal_fct_ns: ideal,
                stats,
            });
        }
        out
    }

    /// A started flow's counters: the final ones of its messages plus, for messages still unfinished,
    /// their senders' counters so far.
    fn flow_stats(&self, f: usize, st: &FlowState) -> MessageStats {
        let mut per_copy = st.final_stats();
        for (copy, &c) in st.conns.iter().take(st.copies as usize).enumerate() {
            let conn = &self.conns[c as usize];
            for (part, sender) in [(Part::Request, conn.b), (Part::Data, conn.a)] {
                if st.is_final(copy, part) {
                    continue;
                }
                let engine = &self.engines[sender as usize].engine;
                if let Some(s) = engine.message_stats(msg_id(f, part)) {
                    per_copy[copy].add(&replica_charged(copy, s));
                }
            }
        }
        st.combine(&per_copy)
    }

    pub fn port_records(&self, scheme: &str) -> Vec<PortRecord> {
        self.net
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                let (node, peer) = fault::port_name(&self.net, i as u32);
                PortRecord {
                    scheme: scheme.to_string(),
                    node,
                    port: i as u32,
                    peer,
                    counters: *p.counters(),
                }
            })
            .collect()
    }

    /// Checks that every packet is accounted for; returns the counts either way.
    pub fn conservation(&self) -> Conservation {
        let mut c = self.cons;
        let queued: usize = self.net.ports.iter().map(|p| p.queued_packets()).sum();
        let on_wires = self.events.packets_on_wires();
        c.in_flight = self.arena.live() as u64;
        c.ok = c.injected == c.delivered + c.dropped + c.in_flight && queued + on_wires == self.arena.live();
        c
    }

    /// Every shim's counters, summed by name over hosts.
    pub fn shim_counters(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = std::collections::BTreeMap::new();
        for s in self.shims.iter().flatten() {
            for (k, v) in s.counters() {
                *m.entry(k.to_string()).or_insert(0) += v;
            }
        }
        m
    }

    /// Every engine's counters, summed by name, and how often the host-queue budget held one back.
    pub fn engine_counters(&self) -> std::collections::BTreeMap<String, u64> {
        let mut m = std::collections::BTreeMap::new();
        if self.tsq_on {
            m.insert("host_tsq_holds".to_string(), self.tsq_holds);
        }
        for e in &self.engines {
            for (k, v) in e.engine.counters() {
                *m.entry(k.to_string()).or_insert(0) += v;
            }
        }
        if let Some(c) = &self.byte_check {
            m.insert("app_bytes_intact_messages".to_string(), c.intact);
            m.insert("app_bytes_corrupt_messages".to_string(), c.corrupt);
            m.insert("app_bytes_uncarried_messages".to_string(), c.uncarried);
        }
        m
    }

    /// Number of hosts (shims are installed per host).
    pub fn host_count(&self) -> u32 {
        self.shims.len() as u32
    }

    /// The warning of a stalled run: what it saw and where it stopped.
    fn stop_warning(&self, scheme: &str) -> Option<String> {
        if self.stop_reason() != super::StopReason::Stalled {
            return None;
        }
        let unfinished = self.flows.len() - self.flows_finished;
        Some(format!(
            "scheme '{scheme}' stalled: no packet reached any host for {} s of simulated time with no flow \
             arrival or fault left to come (e.g. every path black-holed); the run ended at {:.3} s (max_time \
             not reached) with {unfinished} of {} flows unfinished (stall_timeout sets the window, 0s \
             turns the watchdog off)",
            self.stall_timeout().as_secs_f64(),
            self.now.0 as f64 / 1e9,
            self.flows.len()
        ))
    }

    pub fn run_info(&self, scheme: &str, wall_seconds: f64) -> RunInfo {
        RunInfo {
            scheme: scheme.to_string(),
            events: self.events.processed(),
            packet_hops: self.cons.packet_hops,
            wall_seconds,
            sim_end_ns: self.now.0,
            conservation: self.conservation(),
            flows_started: self.flows_started as u64,
            flows_finished: self.flows_finished as u64,
            stop_reason: self.stop_reason(),
            warning: self.stop_warning(scheme),
            shim_counters: self.shim_counters(),
            engine_counters: self.engine_counters(),
        }
    }
}

impl PathInfo {
    /// The FCT of a flow alone on an idle path, measured at the receiver: transmission at the
    /// bottleneck rate plus one-way propagation, plus the store-and-forward of one packet at every other
    /// hop.
    pub fn ideal_ns(&self, size: u64, mss: u64, hdr: u64) -> u64 {
        let pkts = size.div_ceil(mss).max(1);
        let wire = size + pkts * hdr;
        let first = size.min(mss) + hdr;
        let bottleneck = serialization_time(wire, self.bottleneck_bps).0 as f64;
        let sf = first as f64 * 8.0 * 1e9 * (self.inv_rate_sum - 1.0 / self.bottleneck_bps as f64);
        (bottleneck + sf.max(0.0)).round() as u64 + self.delay_ns
    }
}
