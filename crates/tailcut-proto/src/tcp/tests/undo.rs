//! The sender's use of D-SACK (RFC 2883; Linux `tcp_input.c`), scripted: a spurious fast
//! retransmission is undone once its D-SACK arrives, RACK's reordering window grows after it, and a
//! loss probe's outcome decides whether the window is reduced (`tcp_process_tlp_ack`). Each test
//! also runs the `paper` host's sender (`dsack` off), which ignores D-SACK.

use super::harness::{test_cfg, Fate, MSS};
use super::rack::{warm_then, ONE_WAY};
use crate::tcp::{RtoBackoff, TcpConfig};
use crate::time::Dur;

fn cfg(dsack: bool) -> TcpConfig {
    TcpConfig { dsack, ..test_cfg() }
}

/// Linux `tcp_try_undo_dsack` (late D-SACK, after the recovery ended): the first of ten segments
/// arrives 800 us late, beyond RACK's window of min_RTT / 4 (about 500 us), so it is retransmitted
/// spuriously and the window reduced. The retransmission reaches the receiver after the original,
/// is D-SACKed, and the sender restores the window it had before; without D-SACK it keeps the
/// reduced one.
#[test]
fn a_spurious_fast_retransmit_is_undone_by_its_dsack() {
    let late = |dsack| warm_then(cfg(dsack), ONE_WAY, 10, &[0], Fate::Delay(Dur::from_micros(800)));
    let h = late(true);
    let (st, rx) = (h.eps[0].stats(), h.eps[1].stats());
    assert_eq!(
        (st.fast_retransmits, rx.duplicate_segments, st.spurious_undos),
        (1, 1, 1)
    );
    // ssthresh goes back to what it was before the reduction: unset (slow start).
    let (undone, undone_ss) = (h.eps[0].cwnd_bytes(), h.eps[0].ssthresh_bytes());
    assert_eq!(undone_ss, u64::MAX);
    let h = late(false);
    assert_eq!(
        (h.eps[0].stats().fast_retransmits, h.eps[0].stats().spurious_undos),
        (1, 0)
    );
    let kept = h.eps[0].cwnd_bytes();
    assert!(undone > kept, "undone {undone} kept {kept}");
    assert!(h.eps[0].ssthresh_bytes() < u64::MAX);
}

/// RFC 8985 Sec. 6.2 step 4 / Linux `tcp_rack_update_reo_wnd`: once reordering was seen (a first
/// round of three segments whose first is 300 us late: fewer than DupThresh SACKed above it, so
/// inside the window), a D-SACK of a spurious
/// retransmission (a second round 800 us late, beyond min_RTT / 4) doubles the window, so a third
/// round 800 us late is no longer taken for a loss. Without D-SACK it is retransmitted again.
/// Karn's rule keeps min_RTT at the true round trip: under `rto_backoff = "linux"` the ACK of the
/// spuriously retransmitted segment gives a sample timed from the retransmission (Linux would time
/// it from the original's timestamp echo), a min_RTT of tens of microseconds that shrinks the window
/// (a known difference, `docs/tcp.md`).
#[test]
fn the_reordering_window_grows_after_a_dsack() {
    for (dsack, expected) in [(true, 1), (false, 2)] {
        let cfg = TcpConfig {
            rto_backoff: RtoBackoff::Karn,
            ..cfg(dsack)
        };
        let mut h = warm_then(cfg, ONE_WAY, 3, &[0], Fate::Delay(Dur::from_micros(300)));
        assert_eq!(h.eps[0].stats().fast_retransmits, 0);
        for round in 0..2u64 {
            let first = (4 + 10 * round) * MSS;
            h.set_fault(move |c| match c.info.offset {
                Some(o) if c.from == 0 && c.info.copy == 0 && o == first => {
                    Fate::Delay(Dur::from_micros(800))
                }
                _ => Fate::Deliver,
            });
            h.send(0, 3 + round, 10 * MSS);
            h.run();
        }
        assert_eq!(h.eps[1].rcv_nxt(), 24 * MSS);
        assert_eq!(h.eps[0].stats().fast_retransmits, expected, "dsack {dsack}");
    }
}

/// Linux `tcp_process_tlp_ack`: the last segment of a message is lost and the loss probe (its
/// retransmission) repairs it; the next ACK beyond the probe, with no D-SACK of it, proves the
/// loss, and the window is reduced once. When the last segment was only late (both copies
/// arrive), the probe is D-SACKed and nothing is reduced.
#[test]
fn a_loss_probe_that_repaired_a_loss_reduces_the_window() {
    let short = Dur::from_micros(10);
    for (fate, reductions, dsacked) in [(Fate::Drop, 1, 0), (Fate::Delay(Dur::from_millis(7)), 0, 1)] {
        let mut h = warm_then(cfg(true), short, 10, &[9], fate);
        assert_eq!(h.eps[0].stats().tlp_probes, 1);
        h.set_fault(|_| Fate::Deliver);
        h.send(0, 3, 2 * MSS);
        h.run();
        let st = h.eps[0].stats();
        assert_eq!(st.tlp_loss_reductions, reductions, "{fate:?}");
        assert_eq!(h.eps[1].stats().duplicate_segments, dsacked, "{fate:?}");
        assert_eq!(st.timeouts, 0);
    }
    // The paper host's sender ends the episode at the probe's ACK without reducing.
    let mut h = warm_then(cfg(false), short, 10, &[9], Fate::Drop);
    h.send(0, 3, 2 * MSS);
    h.run();
    assert_eq!(h.eps[0].stats().tlp_loss_reductions, 0);
}
