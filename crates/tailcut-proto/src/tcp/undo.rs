//! The sender's side of D-SACK (RFC 2883) as Linux uses it: telling a duplicate report from an
//! ordinary SACK block (`tcp_check_dsack`), discarding dubious ones (`tcp_dsack_seen`), and the undo
//! bookkeeping of a window reduction that D-SACKs prove spurious (`tcp_init_undo`,
//! `undo_marker` / `undo_retrans`, `tcp_undo_cwnd_reduction`).
//!
//! A reduction is spurious when every segment retransmitted since it began is reported back as a
//! duplicate: the originals had arrived, so nothing was lost. Linux then restores the window it had
//! before (RFC 3517/6675 leave undo out; Linux has done it since 2.4, Eifel, RFC 3522).

/// A D-SACK the sender accepted: how many segments it reports duplicated, and where it ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Dsack {
    pub(crate) dup_segs: u64,
    pub(crate) end: u64,
    /// It names exactly the loss probe's segment (Linux `FLAG_DSACK_TLP`).
    pub(crate) of_probe: bool,
}

/// What undoing a reduction restores (Linux `prior_cwnd`, `prior_ssthresh`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Prior {
    pub(crate) cwnd_bytes: u64,
    /// `None` when the window was already being reduced for ECN (congestion proven): Linux's
    /// `prior_ssthresh = 0` then makes the undo leave cwnd and ssthresh alone.
    pub(crate) ssthresh_bytes: Option<u64>,
}

/// One reduction that may still be undone (Linux `undo_marker` non-zero).
#[derive(Clone, Copy, Debug)]
struct Marker {
    /// snd_una when the reduction began: D-SACKs of data below it are too old to count.
    snd_una: u64,
    /// Retransmissions not yet reported as duplicates; `None` before the first one (Linux's -1),
    /// so a reduction without a retransmission is never undone by this count.
    retrans: Option<u64>,
    prior: Prior,
}

/// D-SACK accounting for one sender.
#[derive(Clone, Debug, Default)]
pub(crate) struct Undo {
    /// Segments retransmitted over the connection (Linux `total_retrans`).
    total_retrans: u64,
    /// Segments reported duplicated (Linux `dsack_dups`); a D-SACK that would make this exceed
    /// `total_retrans` is not the sender's doing (a network duplicate) and is ignored.
    dsack_dups: u64,
    marker: Option<Marker>,
}

impl Undo {
    /// Linux `tcp_check_dsack`: the first block is a D-SACK if it lies below the cumulative ACK, or
    /// inside the second block (RFC 2883 Sec. 4). `tcp_dsack_seen` then drops a range longer than
    /// the largest window the peer offered and one the sender's retransmissions cannot explain.
    /// `probe_end` is the loss probe's end while a probe episode is open.
    pub(crate) fn check(
        &mut self,
        first: (u64, u64),
        second: Option<(u64, u64)>,
        ack: u64,
        mss_bytes: u64,
        max_window_bytes: u64,
        probe_end: Option<u64>,
    ) -> Option<Dsack> {
        let (start, end) = first;
        let is_dsack = start < ack || second.is_some_and(|(s1, e1)| start >= s1 && end <= e1);
        if !is_dsack || start >= end {
            return None;
        }
        let len = end - start;
        if len > max_window_bytes {
            return None;
        }
        let dup_segs = len.div_ceil(mss_bytes.max(1));
        let of_probe = len <= mss_bytes && probe_end == Some(end);
        self.dsack_dups += dup_segs;
        if self.dsack_dups > self.total_retrans {
            return None;
        }
        Some(Dsack {
            dup_segs,
            end,
            of_probe,
        })
    }

    /// Count a D-SACK against the reduction's retransmissions (Linux's "dumb counting" in
    /// `tcp_check_dsack` and `tcp_sacktag_one`): only duplicates of data at or above the marker.
    pub(crate) fn on_dsack(&mut self, d: Dsack) {
        if let Some(m) = self.marker.as_mut() {
            if d.end > m.snd_una {
                if let Some(r) = m.retrans.as_mut() {
                    *r = r.saturating_sub(d.dup_segs);
                }
            }
        }
    }

    /// A segment was retransmitted. `counts_for_undo` is false for a loss probe: Linux sends it
    /// through `__tcp_retransmit_skb`, which counts `total_retrans` but not `undo_retrans`.
    pub(crate) fn on_retransmit(&mut self, counts_for_undo: bool) {
        self.total_retrans += 1;
        if counts_for_undo {
            if let Some(m) = self.marker.as_mut() {
                m.retrans = Some(m.retrans.map_or(1, |r| r + 1));
            }
        }
    }

    /// Linux `tcp_init_undo`: a reduction begins at `snd_una`; `retrans_out` retransmissions are
    /// already in flight.
    pub(crate) fn begin(&mut self, snd_una: u64, retrans_out: u64, prior: Prior) {
        self.marker = Some(Marker {
            snd_una,
            retrans: (retrans_out > 0).then_some(retrans_out),
            prior,
        });
    }

    /// Whether a reduction is still open to undo (Linux `undo_marker != 0`).
    #[cfg(test)]
    pub(crate) fn pending(&self) -> bool {
        self.marker.is_some()
    }

    /// A reduction is open and every retransmission since it began came back D-SACKed (Linux
    /// `undo_marker && !undo_retrans`): checked on every ACK, so kept to one comparison.
    #[inline]
    pub(crate) fn all_dsacked(&self) -> bool {
        matches!(self.marker, Some(Marker { retrans: Some(0), .. }))
    }

    /// ECN proved congestion (Linux `tcp_enter_cwr`): the reduction under way may not be undone.
    pub(crate) fn forget(&mut self) {
        self.marker = None;
    }

    /// Linux `tcp_may_undo` without timestamps: every retransmission came back as a duplicate.
    /// Returns what to restore and closes the marker.
    pub(crate) fn take_if_spurious(&mut self) -> Option<Prior> {
        match self.marker {
            Some(Marker {
                retrans: Some(0),
                prior,
                ..
            }) => {
                self.marker = None;
                Some(prior)
            }
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u64 = 1000;

    fn undo_with_retransmits(n: u64) -> Undo {
        let mut u = Undo::default();
        u.begin(
            10_000,
            0,
            Prior {
                cwnd_bytes: 20 * MSS,
                ssthresh_bytes: Some(15 * MSS),
            },
        );
        for _ in 0..n {
            u.on_retransmit(true);
        }
        u
    }

    /// RFC 2883 Sec. 4.1.1: a block below the cumulative ACK is a D-SACK.
    #[test]
    fn block_below_ack_is_dsack() {
        let mut u = undo_with_retransmits(1);
        let d = u.check((10_000, 11_000), None, 12_000, MSS, 1 << 20, None);
        assert_eq!(d.map(|d| d.dup_segs), Some(1));
    }

    /// RFC 2883 Sec. 4.1.2: a first block inside the second is a D-SACK; one that is not is an
    /// ordinary SACK block.
    #[test]
    fn block_inside_second_is_dsack() {
        let mut u = undo_with_retransmits(2);
        let inside = u.check(
            (14_000, 15_000),
            Some((13_000, 16_000)),
            12_000,
            MSS,
            1 << 20,
            None,
        );
        assert!(inside.is_some());
        let apart = u.check(
            (17_000, 18_000),
            Some((13_000, 16_000)),
            12_000,
            MSS,
            1 << 20,
            None,
        );
        assert!(apart.is_none());
    }

    /// Linux `tcp_dsack_seen`: duplicates the sender never retransmitted (a network duplicate)
    /// and ranges wider than the peer's largest window are ignored.
    #[test]
    fn dubious_dsacks_are_ignored() {
        let mut u = undo_with_retransmits(0);
        assert!(u
            .check((10_000, 11_000), None, 12_000, MSS, 1 << 20, None)
            .is_none());
        let mut u = undo_with_retransmits(5);
        assert!(u
            .check((10_000, 15_000), None, 16_000, MSS, 4 * MSS, None)
            .is_none());
    }

    /// Linux `tcp_try_undo_dsack`: undone once every retransmission is D-SACKed, not before; a
    /// reduction with no retransmission at all (`undo_retrans` = -1) is not undone by D-SACK.
    #[test]
    fn undo_after_every_retransmission_is_dsacked() {
        let mut u = undo_with_retransmits(2);
        let d = u
            .check((10_000, 11_000), None, 13_000, MSS, 1 << 20, None)
            .unwrap();
        u.on_dsack(d);
        assert!(u.take_if_spurious().is_none());
        let d = u
            .check((11_000, 12_000), None, 13_000, MSS, 1 << 20, None)
            .unwrap();
        u.on_dsack(d);
        assert_eq!(u.take_if_spurious().map(|p| p.cwnd_bytes), Some(20 * MSS));
        assert!(!u.pending());
        let mut none = undo_with_retransmits(0);
        assert!(none.take_if_spurious().is_none());
    }

    /// A D-SACK of data below the reduction's start counts for nothing; a loss probe's
    /// retransmission is not one the undo waits for.
    #[test]
    fn old_dsacks_and_probes_do_not_count() {
        let mut u = undo_with_retransmits(1);
        u.on_retransmit(false);
        let d = u.check((8_000, 9_000), None, 12_000, MSS, 1 << 20, None).unwrap();
        u.on_dsack(d);
        assert!(u.take_if_spurious().is_none());
        let d = u
            .check((10_000, 11_000), None, 12_000, MSS, 1 << 20, Some(11_000))
            .unwrap();
        assert!(d.of_probe);
        u.on_dsack(d);
        assert!(u.take_if_spurious().is_some());
    }
}
