//! Per-stream bookkeeping of an engine: a message's send side (its counters), its receive side,
//! and a message waiting for a stream.

use crate::engine::{MessageStats, MsgId};
use crate::time::{Dur, Time};
use quinn_proto::Dir;

/// A message waiting for a stream: its id, length, stream kind and (real sockets) its bytes.
pub(super) type Queued = (MsgId, u64, Dir, Option<Vec<u8>>);

#[derive(Debug, Default)]
pub(super) struct SendSide {
    pub(super) msg: MsgId,
    pub(super) len: u64,
    pub(super) written: u64,
    pub(super) finished: bool,
    pub(super) acked: bool,
    /// Tail FEC: the repair is queued (or sent), and its bytes on the wire (headers included).
    pub(super) repair_queued: bool,
    pub(super) repair_bytes: u64,
    /// The connection's lost bytes (quinn's `PathStats::lost_bytes`) when the message was opened.
    pub(super) lost_at_open: u64,
    /// The application's bytes (real sockets); without them the stream carries
    /// [`super::tailfec::payload`]'s.
    pub(super) data: Option<Vec<u8>>,
}

impl SendSide {
    /// The message's counters given the connection's lost bytes now. quinn does not attribute
    /// retransmissions to streams, so the bytes the connection lost while the message was in flight
    /// stand for its retransmitted bytes (QUIC resends the frames of a lost packet): exact for one
    /// message at a time on a connection (the per-flow connections of the compare suite), an upper
    /// bound when messages overlap; whole packets, headers and ACK frames included.
    pub(super) fn stats(&self, lost_now: u64) -> MessageStats {
        let retransmitted = lost_now.saturating_sub(self.lost_at_open);
        MessageStats {
            sent_bytes: self.len + self.repair_bytes + retransmitted,
            retransmitted_bytes: retransmitted,
            redundant_bytes: self.repair_bytes,
            ..MessageStats::default()
        }
    }
}

#[derive(Debug, Default)]
pub(super) struct RecvSide {
    /// The message this side carries, once the application has framed it.
    pub(super) msg: Option<(MsgId, u64)>,
    pub(super) got: u64,
    pub(super) fin: bool,
    pub(super) reported: bool,
    /// The bytes read so far (real sockets), in order.
    pub(super) buf: Vec<u8>,
}

#[derive(Debug)]
pub(super) struct StreamState {
    pub(super) opened: Time,
    /// The client host's delay so far when the stream opened (`migration.exclude_host_delay`).
    pub(super) host_delay_at_open: Dur,
    pub(super) send: Option<SendSide>,
    pub(super) recv: RecvSide,
    /// Opened by us as a request: its FIN-bearing response ends a stream record.
    pub(super) rpc: bool,
}

impl StreamState {
    /// When the stream's time counts from, `excluded` the host's delay to leave out so far
    /// (`migration.exclude_host_delay`; zero otherwise): its opening, shifted by the host's delay
    /// while it was open.
    pub(super) fn counted_from(&self, excluded: Dur) -> Time {
        self.opened + Dur(excluded.0.saturating_sub(self.host_delay_at_open.0))
    }
}
