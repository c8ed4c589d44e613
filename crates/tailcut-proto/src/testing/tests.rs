//! The harness's own rules, on a toy engine: message `m` of `n` bytes is `n` packets whose payload is
//! `[m, i]`, and each arrival is reported as `MessageReceived { msg: i }`, so event order is arrival order.

use super::*;

#[derive(Default)]
struct Toy {
    queue: Vec<[u8; 2]>,
    events: Vec<AppEvent>,
    /// Sends one packet (index 99) when the clock reaches it.
    send_at: Option<Time>,
    /// Asks for a timer at `now` forever: never quiet.
    livelock: Option<Time>,
}

impl Engine for Toy {
    fn send_message(&mut self, _: Time, msg: MsgId, len: u64) {
        self.queue.extend((0..len).rev().map(|i| [msg as u8, i as u8]));
    }
    fn expect_message(&mut self, _: MsgId, _: u64) {}
    fn handle_packet(&mut self, _: Time, _: &Packet, payload: &[u8]) {
        self.events.push(AppEvent::MessageReceived {
            msg: u64::from(payload[1]),
        });
    }
    fn handle_timeout(&mut self, now: Time) {
        if self.send_at.is_some_and(|t| t <= now) {
            self.send_at = None;
            self.queue.insert(0, [0, 99]);
        }
        if self.livelock.is_some() {
            self.livelock = Some(now);
        }
    }
    fn poll_transmit(&mut self, _: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        let p = self.queue.pop()?;
        payload.extend_from_slice(&p);
        Some(Packet {
            size_bytes: 1250,
            ..Packet::default()
        })
    }
    fn poll_timeout(&self) -> Option<Time> {
        self.send_at.or(self.livelock)
    }
    fn poll_event(&mut self) -> Option<AppEvent> {
        (!self.events.is_empty()).then(|| self.events.remove(0))
    }
    fn message_stats(&self, _: MsgId) -> Option<crate::MessageStats> {
        None
    }
}

fn toys() -> Harness<Toy> {
    Harness::new(Toy::default(), Toy::default())
}

/// (arrival time, index) of the packets engine 1 received.
fn arrivals(h: &Harness<Toy>) -> Vec<(Time, u64)> {
    h.events
        .iter()
        .filter_map(|&(t, side, ev)| match ev {
            AppEvent::MessageReceived { msg } if side == 1 => Some((t, msg)),
            _ => None,
        })
        .collect()
}

fn order(h: &Harness<Toy>) -> Vec<u64> {
    arrivals(h).into_iter().map(|a| a.1).collect()
}

#[test]
fn packets_arrive_after_the_one_way_delay_in_order() {
    let mut h = toys();
    h.send(0, 1, 3);
    h.run();
    let at = Time::ZERO + Dur::from_micros(10);
    assert_eq!(arrivals(&h), vec![(at, 0), (at, 1), (at, 2)]);
    assert_eq!(h.sent.len(), 3);
    assert!(h.sent.iter().all(|s| s.from == 0 && s.fate == Fate::Deliver));
    assert_eq!(h.sent[2].payload, vec![1, 2]);
}

#[test]
fn a_rate_spaces_arrivals_by_serialisation() {
    let mut h = toys();
    h.rate_bps = 1_000_000_000; // 1250 B: 10 us each
    h.send(0, 1, 2);
    h.run();
    let times: Vec<u64> = arrivals(&h).iter().map(|a| a.0 .0).collect();
    assert_eq!(times, vec![20_000, 30_000]);
}

/// Installs a fault script on a harness.
type Install = fn(&mut Harness<Toy>);

#[test]
fn scripted_faults_drop_delay_duplicate_and_reorder() {
    let cases: [(Install, Vec<u64>); 6] = [
        (|h| h.fault_from(0, drop_nth(1)), vec![0, 2, 3]),
        (
            |h| h.fault_from(0, drop_where(|w| w.payload[1] % 2 == 0)),
            vec![1, 3],
        ),
        (
            |h| h.fault_from(0, nth(0, Fate::Delay(Dur::from_micros(1)))),
            vec![1, 2, 3, 0],
        ),
        (|h| h.fault_from(0, nth(2, Fate::Duplicate)), vec![0, 1, 2, 2, 3]),
        (|h| h.fault_from(0, nth(1, Fate::Reorder)), vec![0, 2, 1, 3]),
        // The last packet held back still arrives when nothing else is left.
        (|h| h.fault_from(0, nth(3, Fate::Reorder)), vec![0, 1, 2, 3]),
    ];
    for (i, (install, want)) in cases.into_iter().enumerate() {
        let mut h = toys();
        install(&mut h);
        h.send(0, 1, 4);
        h.run();
        assert_eq!(order(&h), want, "case {i}");
    }
}

#[test]
fn faults_of_one_direction_leave_the_other_alone() {
    let mut h = toys();
    h.fault_from(1, drop_nth(0));
    h.send(0, 1, 1);
    h.send(1, 2, 1);
    h.run();
    assert_eq!(order(&h), vec![0]);
    assert_eq!(h.events_of(0), Vec::new());
    assert_eq!(h.sent_by(1).next().map(|s| s.fate), Some(Fate::Drop));
}

#[test]
fn the_first_fate_other_than_deliver_applies_and_every_script_sees_every_packet() {
    let mut h = toys();
    let seen = std::rc::Rc::new(std::cell::Cell::new(0));
    let counter = seen.clone();
    h.fault(drop_nth(0));
    h.fault(move |_| {
        counter.set(counter.get() + 1);
        Fate::Duplicate
    });
    h.send(0, 1, 2);
    h.run();
    assert_eq!(seen.get(), 2);
    assert_eq!(order(&h), vec![1, 1]);
}

#[test]
fn a_script_may_rewrite_the_packet() {
    let mut h = toys();
    h.fault(|w| {
        w.pkt.ecn = crate::packet::Ecn::Ce;
        Fate::Deliver
    });
    h.send(0, 1, 1);
    h.run();
    // The log keeps the packet as sent.
    assert_eq!(h.sent[0].pkt.ecn, crate::packet::Ecn::NotEct);
}

#[test]
fn responses_answer_requests() {
    let mut h = toys();
    h.rpc(0, 1, 3, 1);
    h.run();
    assert_eq!(h.received(1, 0), Some(Time(10_000)));
    // The answer's single packet has index 0 too, and reaches engine 0 one way later.
    assert_eq!(h.received(0, 0), Some(Time(20_000)));
    assert_eq!(h.sent_by(1).count(), 1);
}

#[test]
fn assert_silent_until_passes_while_nothing_is_sent() {
    let mut h = toys();
    h.eps[0].send_at = Some(Time(5_000_000));
    h.assert_silent_until(Time(4_999_999));
    assert_eq!(h.now, Time(4_999_999));
}

#[test]
#[should_panic(expected = "sent after")]
fn assert_silent_until_fails_when_something_is_sent() {
    let mut h = toys();
    h.eps[0].send_at = Some(Time(5_000_000));
    h.assert_silent_until(Time(5_000_000));
}

#[test]
#[should_panic(expected = "step limit 100 reached")]
fn an_engine_that_never_goes_quiet_fails_at_the_step_limit() {
    let mut h = toys();
    h.step_limit = 100;
    h.eps[0].livelock = Some(Time::ZERO);
    h.run();
}
