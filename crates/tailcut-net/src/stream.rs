//! Calls over a byte stream (TCP and the schemes built on it): each request and each response is a
//! 12-byte frame header, `call id (u64) | length (u32)`, big endian, then `length` bytes.
//!
//! The receiving engine learns message boundaries lazily: it always expects the next header (12
//! bytes); when one is complete, the body it announces and the header after it are expected next
//! (`docs/net.md`, "Engines carrying bytes"). Receive-side message ids are `2k` for the `k`-th header
//! and `2k + 1` for its body; they are the receiver's own and never travel.

use std::collections::VecDeque;
use tailcut_proto::{Engine, MsgId, Outgoing, Time};

pub const HEADER_BYTES: usize = 12;

/// The peer broke the framing: the association cannot be resynchronised.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Oversize {
    pub len: u64,
}

pub struct StreamFraming {
    max_message: u64,
    /// The call whose body is expected next.
    body_of: Option<u64>,
    frame: Vec<u8>,
    /// Messages sent and not yet acknowledged (call, frame bytes), in stream order, and their sum.
    unacked: VecDeque<(u64, u64)>,
    unacked_bytes: u64,
}

impl StreamFraming {
    /// Starts reading `engine`'s stream: the first header is expected.
    pub fn new(engine: &mut impl Engine, max_message: u64) -> StreamFraming {
        engine.expect_message(0, HEADER_BYTES as u64);
        StreamFraming {
            max_message,
            body_of: None,
            frame: Vec::new(),
            unacked: VecDeque::new(),
            unacked_bytes: 0,
        }
    }

    /// Queues call `call`'s `data` (a request or a response) as one message of `engine`'s stream,
    /// under the ledger id `call`.
    pub fn send(&mut self, engine: &mut impl Engine, now: Time, call: u64, data: &[u8]) {
        self.frame.clear();
        self.frame.extend_from_slice(&call.to_be_bytes());
        self.frame.extend_from_slice(&(data.len() as u32).to_be_bytes());
        self.frame.extend_from_slice(data);
        engine.send_bytes(now, Outgoing::Message, call, &self.frame);
        let len = self.frame.len() as u64;
        self.unacked.push_back((call, len));
        self.unacked_bytes += len;
    }

    /// The engine acknowledged (or gave up) the message sent for `call`: a stream acknowledges in
    /// order, so it and everything before it are done.
    pub fn acked(&mut self, call: u64) {
        if !self.unacked.iter().any(|&(c, _)| c == call) {
            return;
        }
        while let Some((c, len)) = self.unacked.pop_front() {
            self.unacked_bytes -= len;
            if c == call {
                break;
            }
        }
    }

    /// Bytes sent and not yet acknowledged: what a peer that does not read holds here.
    pub fn unacked_bytes(&self) -> u64 {
        self.unacked_bytes
    }

    /// Receive-side message `msg` of `engine` is complete: `Some((call, bytes))` when it was a body.
    pub fn on_received(
        &mut self,
        engine: &mut impl Engine,
        msg: MsgId,
    ) -> Result<Option<(u64, Vec<u8>)>, Oversize> {
        let Some(data) = engine.take_bytes(msg) else {
            return Ok(None);
        };
        if msg & 1 == 1 {
            return Ok(self.body_of.take().map(|call| (call, data)));
        }
        let (Some(call), Some(len)) = (data.first_chunk::<8>(), data.get(8..12)) else {
            return Ok(None);
        };
        let len = u64::from(u32::from_be_bytes([len[0], len[1], len[2], len[3]]));
        if len > self.max_message {
            return Err(Oversize { len });
        }
        self.body_of = Some(u64::from_be_bytes(*call));
        engine.expect_message(msg | 1, len);
        engine.expect_message(msg + 2, HEADER_BYTES as u64);
        Ok(None)
    }
}
