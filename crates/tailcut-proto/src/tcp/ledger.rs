//! Sender-side message accounting: which bytes of the send stream belong to which message, and the
//! per-message loss-recovery counters ([`MessageStats`]).
//!
//! Messages are contiguous and in stream order, so a binary search finds the first message a byte
//! range touches; charging a segment costs O(log m + messages it spans).

use crate::engine::{AppEvent, MessageStats, MsgId};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
struct SendMsg {
    id: MsgId,
    start: u64,
    end: u64,
    stats: MessageStats,
}

/// What a charge is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Charge {
    /// First transmission.
    New,
    /// Loss-recovery retransmission.
    Retransmit,
    /// A proactive copy or coded packet (`MessageStats::redundant_bytes`).
    Redundant,
}

#[derive(Debug, Default)]
pub(crate) struct SendLedger {
    msgs: VecDeque<SendMsg>,
    /// Handshake timeouts with no message to charge: a SYN or SYN-ACK lost before the application
    /// wrote (with `host_delay`, or on the server's side before its response). The next message
    /// waited behind them, so it carries them.
    unowned_timeouts: u32,
}

impl SendLedger {
    /// Register message `id` as stream bytes `[start, end)`. A zero-length message is acknowledged at
    /// once.
    pub(crate) fn push(&mut self, id: MsgId, start: u64, end: u64, events: &mut VecDeque<AppEvent>) {
        if start == end {
            events.push_back(AppEvent::MessageAcked {
                msg: id,
                stats: MessageStats::default(),
            });
            return;
        }
        let stats = MessageStats {
            timeouts: std::mem::take(&mut self.unowned_timeouts),
            ..MessageStats::default()
        };
        self.msgs.push_back(SendMsg {
            id,
            start,
            end,
            stats,
        });
    }

    fn first_touching(&self, offset: u64) -> usize {
        self.msgs.partition_point(|m| m.end <= offset)
    }

    /// Charge the payload bytes `[start, end)` sent now to the messages owning them.
    pub(crate) fn charge_bytes(&mut self, start: u64, end: u64, kind: Charge) {
        let mut i = self.first_touching(start);
        while i < self.msgs.len() && self.msgs[i].start < end {
            let m = &mut self.msgs[i];
            let n = end.min(m.end) - start.max(m.start);
            m.stats.sent_bytes += n;
            match kind {
                Charge::New => {}
                Charge::Retransmit => m.stats.retransmitted_bytes += n,
                Charge::Redundant => m.stats.redundant_bytes += n,
            }
            i += 1;
        }
    }

    fn owner_mut(&mut self, offset: u64) -> Option<&mut MessageStats> {
        let i = self.first_touching(offset);
        self.msgs
            .get_mut(i)
            .filter(|m| m.start <= offset)
            .map(|m| &mut m.stats)
    }

    /// A retransmission timeout while `offset` (snd_una) was the oldest unacknowledged byte.
    /// Data already acknowledged owns nothing: such a timeout (an MPTCP sub-flow's, on data another
    /// sub-flow delivered) delays no message.
    pub(crate) fn charge_timeout(&mut self, offset: u64) {
        if let Some(s) = self.owner_mut(offset) {
            s.timeouts += 1;
        }
    }

    /// A SYN or SYN-ACK timeout: charged to the message waiting behind it, or, when the application
    /// has not written yet, to the next message it writes.
    pub(crate) fn charge_handshake_timeout(&mut self, offset: u64) {
        match self.owner_mut(offset) {
            Some(s) => s.timeouts += 1,
            None => self.unowned_timeouts += 1,
        }
    }

    /// Fast retransmit / recovery started by retransmitting the segment at `offset`.
    pub(crate) fn charge_fast_retransmit(&mut self, offset: u64) {
        if let Some(s) = self.owner_mut(offset) {
            s.fast_retransmits += 1;
        }
    }

    /// Report every message that ends at or below the cumulative ACK `una`.
    pub(crate) fn ack_to(&mut self, una: u64, events: &mut VecDeque<AppEvent>) {
        while let Some(m) = self.msgs.front() {
            if m.end > una {
                break;
            }
            events.push_back(AppEvent::MessageAcked {
                msg: m.id,
                stats: m.stats,
            });
            self.msgs.pop_front();
        }
    }

    /// `[start, end)` of the message owning stream byte `offset`, if it is not yet acknowledged.
    pub(crate) fn bounds(&self, offset: u64) -> Option<(u64, u64)> {
        let i = self.first_touching(offset);
        self.msgs
            .get(i)
            .filter(|m| m.start <= offset)
            .map(|m| (m.start, m.end))
    }

    /// Charge `n` redundant bytes (a coded packet) to the message owning stream byte `offset`.
    pub(crate) fn charge_redundant_at(&mut self, offset: u64, n: u64) {
        if let Some(s) = self.owner_mut(offset) {
            s.sent_bytes += n;
            s.redundant_bytes += n;
        }
    }

    pub(crate) fn stats(&self, id: MsgId) -> Option<MessageStats> {
        self.msgs.iter().find(|m| m.id == id).map(|m| m.stats)
    }
}
