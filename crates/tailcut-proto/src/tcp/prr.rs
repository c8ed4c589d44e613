//! Proportional Rate Reduction (RFC 6937), as Linux's `tcp_cwnd_reduction` runs it: during a window
//! reduction the sender sends in proportion to what the ACKs report delivered, so cwnd falls from its
//! value at the start of the reduction to ssthresh over about one round trip, instead of dropping to
//! ssthresh at once (RFC 6675 Sec. 5 step (4.2)) and sending nothing until pipe has drained below it.
//!
//! Why it matters to tailcut: without PRR a sender that enters recovery with pipe far above ssthresh
//! (an incast burst whose losses are only seen a round trip later) holds every transmission, then
//! sends the whole difference in one burst when pipe falls under ssthresh, into the same full port.
//! PRR paces the retransmissions with the ACK clock. Linux runs it for every reduction: fast recovery
//! (`TCP_CA_Recovery`) and the ECN reaction (`TCP_CA_CWR`).
//!
//! Units are bytes; where Linux adds one packet we add one MSS.

/// The state of one reduction (Linux `tcp_init_cwnd_reduction`: `prior_cwnd`, `prr_delivered`,
/// `prr_out`).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Prr {
    /// cwnd when the reduction started (RFC 6937 RecoverFS; Linux uses `prior_cwnd`, not pipe).
    prior_cwnd: u64,
    /// Bytes the receiver reported delivered (cumulatively or by SACK) since the start.
    delivered: u64,
    /// Bytes sent (new data and retransmissions) since the start.
    out: u64,
}

impl Prr {
    /// Start a reduction from `cwnd_bytes` (Linux `tcp_init_cwnd_reduction`).
    pub(crate) fn start(cwnd_bytes: u64) -> Self {
        Prr {
            prior_cwnd: cwnd_bytes.max(1),
            delivered: 0,
            out: 0,
        }
    }

    /// Count a transmission during the reduction (Linux adds to `prr_out` in `tcp_event_new_data_sent`
    /// and `tcp_retransmit_skb`).
    pub(crate) fn on_sent(&mut self, len_bytes: u64) {
        self.out += len_bytes;
    }

    /// One ACK during the reduction (Linux `tcp_cwnd_reduction`, 5.12 and later): the new cwnd, or
    /// `None` when the ACK reported nothing delivered (cwnd stays).
    ///
    /// - `newly_delivered`: bytes this ACK newly cumulatively ACKed or SACKed (`newly_acked_sacked`);
    /// - `pipe`: bytes in flight after the ACK (RFC 6675 pipe, Linux `tcp_packets_in_flight`);
    /// - `una_advanced`, `newly_lost`: the ACK moved snd_una (`FLAG_SND_UNA_ADVANCED`), the ACK marked
    ///   segments lost (`rs->losses`).
    pub(crate) fn on_ack(
        &mut self,
        newly_delivered: u64,
        pipe: u64,
        ssthresh: u64,
        mss: u64,
        una_advanced: bool,
        newly_lost: bool,
    ) -> Option<u64> {
        if newly_delivered == 0 {
            return None;
        }
        self.delivered += newly_delivered;
        let sndcnt = if pipe > ssthresh {
            // RFC 6937 Sec. 3.1, proportional part: send ssthresh / RecoverFS of what was delivered,
            // rounded up (`DIV_ROUND_UP(ssthresh * prr_delivered, prior_cwnd) - prr_out`). Linux
            // counts packets, so it rounds up to a whole segment: so do we.
            let target = u128::from(ssthresh) * u128::from(self.delivered);
            let target = target.div_ceil(u128::from(self.prior_cwnd)) as u64;
            target.next_multiple_of(mss.max(1)).saturating_sub(self.out)
        } else {
            // Slow-start reduction bound (PRR-SSRB): grow back towards ssthresh no faster than slow
            // start, at least what this ACK delivered; one more segment when the ACK advanced
            // snd_una without revealing a new loss (the RFC 6937bis refinement Linux runs).
            let mut s = self.delivered.saturating_sub(self.out).max(newly_delivered);
            if una_advanced && !newly_lost {
                s += mss;
            }
            s.min(ssthresh - pipe)
        };
        // Linux: force the fast retransmit on entering recovery (`prr_out ? 0 : 1`).
        let sndcnt = if self.out == 0 { sndcnt.max(mss) } else { sndcnt };
        Some(pipe + sndcnt)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    /// RFC 6937 Sec. 3.1's example shape: 20 segments in flight, one lost, ssthresh = 10. Each
    /// duplicate ACK delivers one segment; PRR sends one segment for every two delivered while pipe
    /// is above ssthresh (ssthresh / RecoverFS = 1/2), where RFC 6675 would send nothing for the
    /// first ten ACKs and then one per ACK.
    #[test]
    fn proportional_part_sends_half_of_what_is_delivered() {
        let mut p = Prr::start(20 * MSS);
        let ssthresh = 10 * MSS;
        let mut pipe = 19 * MSS; // one segment lost, 19 in flight
        let mut sent = Vec::new();
        for _ in 0..8 {
            pipe -= MSS; // one more segment delivered by SACK
            let cwnd = p.on_ack(MSS, pipe, ssthresh, MSS, false, false).unwrap();
            let n = cwnd.saturating_sub(pipe) / MSS;
            p.on_sent(n * MSS);
            pipe += n * MSS;
            sent.push(n);
        }
        // First ACK: the forced fast retransmit; then ceil(10 * d / 20) - out.
        assert_eq!(sent, vec![1, 0, 1, 0, 1, 0, 1, 0]);
    }

    /// Linux `tcp_cwnd_reduction`: once pipe is at or below ssthresh, send at most what brings pipe
    /// back to ssthresh, and at least what this ACK delivered (+1 segment when snd_una advanced and
    /// nothing new was lost).
    #[test]
    fn reduction_bound_below_ssthresh() {
        let mut p = Prr::start(20 * MSS);
        p.on_sent(MSS);
        // A partial ACK delivering 3 segments, pipe at 4 below ssthresh 10: delivered (3) - out (1)
        // = 2 < newly delivered 3, so 3, plus one for the advanced snd_una = 4, within ssthresh - pipe = 6.
        assert_eq!(
            p.on_ack(3 * MSS, 4 * MSS, 10 * MSS, MSS, true, false),
            Some(8 * MSS)
        );
        // The same ACK revealing a new loss gets no extra segment.
        let mut q = Prr::start(20 * MSS);
        q.on_sent(MSS);
        assert_eq!(
            q.on_ack(3 * MSS, 4 * MSS, 10 * MSS, MSS, true, true),
            Some(7 * MSS)
        );
        // Never above ssthresh.
        let mut r = Prr::start(20 * MSS);
        r.on_sent(MSS);
        assert_eq!(
            r.on_ack(9 * MSS, 8 * MSS, 10 * MSS, MSS, true, false),
            Some(10 * MSS)
        );
    }

    /// An ACK that reports nothing delivered leaves cwnd alone (Linux returns early).
    #[test]
    fn nothing_delivered_changes_nothing() {
        let mut p = Prr::start(10 * MSS);
        assert_eq!(p.on_ack(0, 9 * MSS, 5 * MSS, MSS, false, false), None);
    }
}
