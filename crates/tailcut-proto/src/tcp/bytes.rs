//! The bytes a TCP-family engine carries when its driver moves real payloads
//! (`TcpConfig::carry_bytes`: sockets, and the tests that check delivery byte for byte): the send
//! stream from its oldest unacknowledged byte, and the receiver's reassembly into messages.
//!
//! The simulator runs without them. No decision of an engine reads these buffers (segment sizes,
//! windows, loss recovery and message accounting are all made from offsets), so a connection sends
//! the same packets at the same times with or without bytes; the only difference is that a receiver
//! carrying bytes refuses a segment whose payload disagrees with its header or lies beyond its
//! buffer, which an honest peer never sends (`docs/net.md`, "Engines carrying bytes").

use crate::engine::MsgId;
use std::collections::VecDeque;

/// Appends `d[a..b]` to `out` (two slice copies, no per-byte loop).
fn extend_from_deque(out: &mut Vec<u8>, d: &VecDeque<u8>, a: usize, b: usize) {
    let (x, y) = d.as_slices();
    if a < x.len() {
        out.extend_from_slice(&x[a..b.min(x.len())]);
    }
    if b > x.len() {
        out.extend_from_slice(&y[a.saturating_sub(x.len())..b - x.len()]);
    }
}

/// XORs `d[a..a + dst.len()]` into `dst`.
fn xor_from_deque(dst: &mut [u8], d: &VecDeque<u8>, a: usize) {
    let (x, y) = d.as_slices();
    for (k, v) in dst.iter_mut().enumerate() {
        let i = a + k;
        *v ^= if i < x.len() { x[i] } else { y[i - x.len()] };
    }
}

/// The send stream's bytes at offsets `[base, base + buf.len())`.
#[derive(Debug, Default)]
pub(crate) struct SendBytes {
    base: u64,
    buf: VecDeque<u8>,
}

impl SendBytes {
    /// The application's next bytes.
    pub(crate) fn push(&mut self, data: &[u8]) {
        self.buf.extend(data);
    }

    /// `n` zero bytes the application did not write: a message given by length only, MPTCP's
    /// warm-up.
    pub(crate) fn push_zeros(&mut self, n: u64) {
        self.buf.resize(self.buf.len() + n as usize, 0);
    }

    /// Forgets the bytes below `offset`.
    pub(crate) fn release_to(&mut self, offset: u64) {
        let n = offset.saturating_sub(self.base).min(self.buf.len() as u64);
        self.buf.drain(..n as usize);
        self.base += n;
    }

    /// Bytes held (for memory bounds in tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.buf.len()
    }

    /// Appends stream bytes `[start, start + len)` to `out`. Bytes already released are written as
    /// zeros: they were acknowledged, so the peer holds them and drops a copy unread (an MPTCP
    /// sub-flow may resend a chunk its data level has acknowledged through another sub-flow). A
    /// sender never sends past what the application wrote; if it did, zeros would make the peer's
    /// bytes wrong, which the byte-exact tests catch.
    pub(crate) fn copy_to(&self, start: u64, len: u32, out: &mut Vec<u8>) {
        let end = start + u64::from(len);
        let released = self.base.clamp(start, end) - start;
        out.resize(out.len() + released as usize, 0);
        let from = start + released;
        let held_end = end.min(self.base + self.buf.len() as u64);
        if from < held_end {
            extend_from_deque(
                out,
                &self.buf,
                (from - self.base) as usize,
                (held_end - self.base) as usize,
            );
        }
        let missing = end - from.max(held_end);
        debug_assert_eq!(missing, 0, "segment [{start}, {end}) past the written stream");
        out.resize(out.len() + missing as usize, 0);
    }

    /// XORs stream bytes `[start, start + dst.len())` into `dst` (bytes not held count as zeros).
    pub(crate) fn xor_into(&self, start: u64, dst: &mut [u8]) {
        let end = start + dst.len() as u64;
        let from = start.max(self.base);
        let to = end.min(self.base + self.buf.len() as u64);
        if from < to {
            let k = (from - start) as usize;
            xor_from_deque(
                &mut dst[k..k + (to - from) as usize],
                &self.buf,
                (from - self.base) as usize,
            );
        }
    }
}

/// The receive side: bytes above the cumulative ACK (out of order), in-order bytes of messages not
/// complete yet, and complete messages the application has not taken.
#[derive(Debug)]
pub(crate) struct RecvBytes {
    /// Offset of `pending[0]`, the receiver's `rcv_nxt` as of the last [`RecvBytes::advance`].
    next: u64,
    /// Bytes of `[next, next + pending.len())`; only the ranges the receiver lists as received mean
    /// anything.
    pending: VecDeque<u8>,
    /// Offset of `inorder[0]`: the end of the last complete message.
    claimed: u64,
    /// In-order bytes `[claimed, next)`.
    inorder: VecDeque<u8>,
    /// The last `history` in-order bytes (below `next`) kept for TCP-IR's XOR rebuild.
    recent: VecDeque<u8>,
    history: usize,
    done: VecDeque<(MsgId, Vec<u8>)>,
    /// Bytes a sender may have beyond the last claimed or delivered byte.
    window: u64,
}

impl RecvBytes {
    pub(crate) fn new(window: u32) -> Self {
        RecvBytes {
            next: 0,
            pending: VecDeque::new(),
            claimed: 0,
            inorder: VecDeque::new(),
            recent: VecDeque::new(),
            history: 0,
            done: VecDeque::new(),
            window: u64::from(window),
        }
    }

    /// Keep the last `bytes` in-order bytes for rebuilding a lost segment from a coded one.
    pub(crate) fn keep_history(&mut self, bytes: usize) {
        self.history = bytes;
    }

    /// May `[start, end)` be stored? Everything the receiver holds for the peer (out-of-order bytes,
    /// and in-order bytes no expected message has claimed) stays within the window; `expected_end`
    /// is the end of the messages the application expects. A sender that keeps to the advertised
    /// window never exceeds it.
    pub(crate) fn acceptable(&self, end: u64, expected_end: u64) -> bool {
        end <= self.next.min(expected_end.max(self.claimed)) + self.window
    }

    /// Stores `data`, the bytes at stream offsets `[start, start + data.len())`; those below `next`
    /// are already in order and skipped. The caller checked [`RecvBytes::acceptable`].
    pub(crate) fn store(&mut self, start: u64, data: &[u8]) {
        let skip = self.next.saturating_sub(start);
        if skip >= data.len() as u64 {
            return;
        }
        let data = &data[skip as usize..];
        let off = (start + skip - self.next) as usize;
        if self.pending.len() < off + data.len() {
            self.pending.resize(off + data.len(), 0);
        }
        let (x, y) = self.pending.as_mut_slices();
        let first = x.len().saturating_sub(off).min(data.len());
        if first > 0 {
            x[off..off + first].copy_from_slice(&data[..first]);
        }
        let rest = &data[first..];
        if !rest.is_empty() {
            let at = off + first - x.len();
            y[at..at + rest.len()].copy_from_slice(rest);
        }
    }

    /// The receiver's cumulative ACK moved to `rcv_nxt`: those bytes are in order now.
    pub(crate) fn advance(&mut self, rcv_nxt: u64) {
        let n = rcv_nxt.saturating_sub(self.next) as usize;
        if n == 0 {
            return;
        }
        debug_assert!(self.pending.len() >= n, "in-order bytes never stored");
        if self.pending.len() < n {
            self.pending.resize(n, 0);
        }
        let (x, y) = self.pending.as_slices();
        let (x, y) = (&x[..n.min(x.len())], &y[..n - n.min(x.len())]);
        if self.history > 0 {
            self.recent.extend(x);
            self.recent.extend(y);
            let over = self.recent.len().saturating_sub(self.history);
            self.recent.drain(..over);
        }
        self.inorder.extend(x);
        self.inorder.extend(y);
        self.pending.drain(..n);
        self.next = rcv_nxt;
    }

    /// Message `msg`, the in-order bytes up to `end`, is complete.
    pub(crate) fn finish(&mut self, msg: MsgId, end: u64) {
        let n = (end.saturating_sub(self.claimed) as usize).min(self.inorder.len());
        let mut data = Vec::with_capacity(n);
        extend_from_deque(&mut data, &self.inorder, 0, n);
        self.inorder.drain(..n);
        self.claimed += n as u64;
        self.done.push_back((msg, data));
    }

    /// A message of no bytes is complete.
    pub(crate) fn finish_empty(&mut self, msg: MsgId) {
        self.done.push_back((msg, Vec::new()));
    }

    /// The bytes of complete message `msg`, once.
    pub(crate) fn take(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        let i = self.done.iter().position(|(m, _)| *m == msg)?;
        self.done.remove(i).map(|(_, d)| d)
    }

    /// XORs received bytes `[start, start + dst.len())` into `dst`: in-order ones from the history,
    /// out-of-order ones from the pending bytes. The caller knows which ranges were received.
    pub(crate) fn xor_into(&self, start: u64, dst: &mut [u8]) {
        let end = start + dst.len() as u64;
        let recent_base = self.next - self.recent.len() as u64;
        let lo = start.max(recent_base);
        let hi = end.min(self.next);
        if lo < hi {
            let k = (lo - start) as usize;
            xor_from_deque(
                &mut dst[k..k + (hi - lo) as usize],
                &self.recent,
                (lo - recent_base) as usize,
            );
        }
        let lo = start.max(self.next);
        let hi = end.min(self.next + self.pending.len() as u64);
        if lo < hi {
            let k = (lo - start) as usize;
            xor_from_deque(
                &mut dst[k..k + (hi - lo) as usize],
                &self.pending,
                (lo - self.next) as usize,
            );
        }
    }

    /// Bytes held in all buffers but the TCP-IR history (for memory bounds in tests).
    #[cfg(test)]
    pub(crate) fn held(&self) -> usize {
        self.pending.len() + self.inorder.len() + self.done.iter().map(|(_, d)| d.len()).sum::<usize>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn send_bytes_copy_released_and_held_ranges() {
        let mut s = SendBytes::default();
        s.push(&[1, 2, 3, 4, 5, 6]);
        s.release_to(2);
        let mut out = vec![9];
        s.copy_to(1, 4, &mut out);
        assert_eq!(out, vec![9, 0, 3, 4, 5]);
        let mut x = [0xff, 0xff, 0xff];
        s.xor_into(4, &mut x);
        assert_eq!(x, [0xff ^ 5, 0xff ^ 6, 0xff]);
    }

    #[test]
    fn out_of_order_bytes_become_messages_in_order() {
        let mut r = RecvBytes::new(100);
        r.store(3, &[4, 5, 6]);
        r.store(0, &[1, 2, 3, 4]);
        r.advance(6);
        r.finish(7, 2);
        r.finish(8, 6);
        assert_eq!(r.take(8), Some(vec![3, 4, 5, 6]));
        assert_eq!(r.take(7), Some(vec![1, 2]));
        assert_eq!(r.take(7), None);
        assert!(r.acceptable(106, 6));
        assert!(!r.acceptable(107, 6));
    }
}
