//! Tracing one flow (`tailcut trace`): a traced run is the untraced run (same flow and port records),
//! and its record shows a dropped packet at the port that dropped it and why, and the same bytes sent
//! again as a retransmission afterwards.

use tailcut_sim::run::{self, Prepared};
use tailcut_sim::trace::{Cause, Event, Kind, Trace};
use tailcut_sim::{api, Tables};

/// An incast into a small buffer: the switch port toward host 0 overflows, so flows lose packets.
fn incast(transport: &str, flows_per_sender: u32, buffer: &str) -> Prepared {
    let text = format!(
        r#"
name = "trace"
seed = 3
max_time = "2s"
[topology]
kind = "star"
hosts = 5
host_rate = "1Gbps"
link_delay = "5us"
[network]
buffer = "{buffer}"
[[workload]]
name = "incast"
pattern = {{ kind = "incast", receiver = 0, senders = [1, 2, 3, 4], flows_per_sender = {flows_per_sender} }}
fixed = "64KB"
[[schemes]]
name = "s"
transport = "{transport}"
params = {{ min_rto = "5ms" }}
"#
    );
    run::prepare(&api::parse_toml(&text).expect("valid experiment")).expect("prepares")
}

fn traced(prep: &Prepared, flows: &[u64], cap: usize) -> (Tables, Trace) {
    run::run_traced(prep, 0, (flows, cap), &mut |_| true).expect("runs")
}

/// The payload range `[start, end)` of a TCP packet, relative to nothing (wire sequence numbers).
fn range(ev: &Event) -> Option<(u32, u32)> {
    let p = ev.packet?;
    let h = p.tcp()?;
    (h.payload_len > 0).then(|| (h.seq.0, h.seq.0.wrapping_add(h.payload_len)))
}

#[test]
fn a_traced_run_has_the_untraced_runs_records() {
    let prep = incast("tcp", 2, "24KB");
    let plain = run::run_prepared(&prep, &mut |_| true).expect("runs");
    let (t, trace) = traced(&prep, &[0, 3, 5], 1_000_000);
    assert!(!trace.events.is_empty());
    assert_eq!(format!("{:?}", plain.flows), format!("{:?}", t.flows));
    assert_eq!(format!("{:?}", plain.ports), format!("{:?}", t.ports));
    assert_eq!(plain.runs[0].events, t.runs[0].events);
    // Only the chosen flows are recorded.
    let mut seen: Vec<u64> = trace.events.iter().map(|e| e.flow).collect();
    seen.dedup();
    seen.sort_unstable();
    seen.dedup();
    assert_eq!(seen, vec![0, 3, 5]);
}

#[test]
fn a_dropped_packet_shows_at_its_port_and_is_retransmitted() {
    let prep = incast("tcp", 2, "24KB");
    let plain = run::run_prepared(&prep, &mut |_| true).expect("runs");
    let lossy = plain
        .flows
        .iter()
        .find(|f| f.stats.retransmitted_bytes > 0)
        .expect("the incast makes some flow retransmit");
    let (t, trace) = traced(&prep, &[lossy.flow_id], 1_000_000);
    let ev = &trace.events;
    // The switch's port toward the receiver (host 0) is where the buffer overflows.
    let to_receiver = t
        .ports
        .iter()
        .find(|p| p.node == "sw0" && p.peer == "h0")
        .unwrap_or_else(|| {
            panic!(
                "no sw0 -> h0 port in {:?}",
                t.ports.iter().map(|p| (&p.node, &p.peer)).collect::<Vec<_>>()
            )
        })
        .port;
    let drops: Vec<&Event> = ev.iter().filter(|e| e.kind == Kind::Dropped).collect();
    assert!(!drops.is_empty(), "a flow that retransmitted lost something");
    for d in &drops {
        assert_eq!(d.port, Some(to_receiver), "{d:?}");
        assert_eq!(d.cause, Some(Cause::Overflow), "{d:?}");
        assert!(d.forward, "data, not ACKs, queue toward the receiver: {d:?}");
    }
    // Each dropped data segment: first sent before the drop (not as a retransmission), and its bytes
    // sent again later, as a retransmission.
    for d in drops.iter().filter(|d| range(d).is_some()) {
        let (start, _) = range(d).expect("data");
        let sends: Vec<&Event> = ev
            .iter()
            .filter(|e| {
                e.kind == Kind::Send && e.forward && range(e).is_some_and(|(s, x)| s <= start && start < x)
            })
            .collect();
        assert!(
            sends[0].time <= d.time && sends[0].retransmission == Some(false),
            "{sends:?}"
        );
        assert!(
            sends
                .iter()
                .any(|s| s.time > d.time && s.retransmission == Some(true)),
            "the segment at {start} dropped at {} ns was never retransmitted: {sends:?}",
            d.time.0
        );
    }
    // The engine's own retransmission count: each flagged send carries a probe whose counter grew.
    let flagged: u64 = ev
        .iter()
        .filter(|e| e.kind == Kind::Send && e.retransmission == Some(true))
        .map(|e| u64::from(e.packet.expect("sends carry packets").payload_len()))
        .sum();
    let flow = t
        .flows
        .iter()
        .find(|f| f.flow_id == lossy.flow_id)
        .expect("its record");
    assert_eq!(flagged, flow.stats.retransmitted_bytes);
    // The congestion window is sampled along the way and falls after the loss.
    let cwnd: Vec<u64> = ev
        .iter()
        .filter(|e| e.forward)
        .filter_map(|e| e.probe.map(|p| p.cwnd_bytes))
        .collect();
    let peak = cwnd.iter().copied().max().expect("samples");
    // ACKs are received by the data sender: its window is sampled there too.
    assert!(ev
        .iter()
        .any(|e| e.kind == Kind::Receive && !e.forward && e.probe.is_some_and(|p| p.cwnd_bytes == peak)));
    assert!(cwnd.iter().rev().take(3).any(|&c| c < peak), "{cwnd:?}");
}

#[test]
fn the_record_stops_at_its_cap_and_says_when() {
    let prep = incast("tcp", 2, "24KB");
    let (_, all) = traced(&prep, &[1], 1_000_000);
    assert!(all.truncated_at.is_none());
    let (_, capped) = traced(&prep, &[1], 10);
    assert_eq!(capped.events.len(), 10);
    assert_eq!(capped.truncated_at, Some(all.events[10].time));
}

#[test]
fn a_timeout_is_recorded_as_an_rto() {
    // More senders' flows into a smaller buffer: whole windows are lost, which only a timeout recovers.
    let prep = incast("tcp", 8, "12KB");
    let plain = run::run_prepared(&prep, &mut |_| true).expect("runs");
    let Some(f) = plain.flows.iter().find(|f| f.stats.timeouts > 0) else {
        panic!("no flow timed out; the incast should make one")
    };
    let (_, trace) = traced(&prep, &[f.flow_id], 1_000_000);
    let rtos = trace.events.iter().filter(|e| e.kind == Kind::Rto).count();
    assert_eq!(rtos as u32, f.stats.timeouts);
}

#[test]
fn a_tail_loss_probe_is_recorded_as_tlp_not_as_a_timer() {
    // TCP's default loss detection is RACK-TLP. Its probe timeout sends the probe only at the next
    // transmission opportunity, after the timer event is recorded: the trace must still call it `tlp`.
    let prep = incast("tcp", 2, "24KB");
    let plain = run::run_prepared(&prep, &mut |_| true).expect("runs");
    let ids: Vec<u64> = plain.flows.iter().map(|f| f.flow_id).collect();
    let (_, trace) = traced(&prep, &ids, 10_000_000);
    let ev = &trace.events;
    // Each probe timeout the senders counted is one `tlp` event of its flow, none a plain `timer`.
    let mut tlps = 0;
    for &f in &ids {
        let fired = ev
            .iter()
            .filter(|e| e.flow == f && e.forward)
            .filter_map(|e| e.probe.map(|p| p.probe_timeouts))
            .max()
            .unwrap_or(0);
        let recorded = ev.iter().filter(|e| e.flow == f && e.kind == Kind::Tlp).count() as u64;
        assert_eq!(recorded, fired, "flow {f}");
        tlps += recorded;
    }
    assert!(tlps > 0, "the incast makes some flow probe a tail loss");
    // Likewise RACK's reordering timer: `rack`, never an anonymous `timer`, at the data sender.
    for &f in &ids {
        let fired = ev
            .iter()
            .filter(|e| e.flow == f && e.forward)
            .filter_map(|e| e.probe.map(|p| p.reorder_timeouts))
            .max()
            .unwrap_or(0);
        let recorded = ev.iter().filter(|e| e.flow == f && e.kind == Kind::Rack).count() as u64;
        assert_eq!(recorded, fired, "flow {f}");
    }
    assert!(
        !ev.iter().any(|e| e.kind == Kind::Timer && e.forward),
        "a TCP data sender's timers are RTOs, probes or RACK's"
    );
    // The probe follows its timer at the same instant: a data segment sent by that flow's sender.
    for t in ev.iter().filter(|e| e.kind == Kind::Tlp) {
        assert!(t.forward, "{t:?}");
        assert!(
            ev.iter().any(|e| e.kind == Kind::Send
                && e.flow == t.flow
                && e.forward
                && e.time == t.time
                && range(e).is_some()),
            "no probe sent at the PTO {t:?}"
        );
    }
}
