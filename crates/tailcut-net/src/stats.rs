//! The counters a client and a server publish (`Client::stats`, `Server::stats`): the loops count
//! datagrams and associations, each scheme adds its engine's counters ([`crate::client_scheme`],
//! [`crate::server_scheme`]). Here, below the loops and the schemes, so that neither imports the other.

use crate::io::TxCounters;
use tailcut_proto::cloudburst::{Counters, TableSizes};

/// Client-side totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ClientStats {
    pub calls_completed: u64,
    pub calls_timed_out: u64,
    /// Calls whose connection ended before their response (`CallError::Connection`).
    pub calls_failed: u64,
    /// Responses to calls already answered or timed out (duplicates or late ones), or not under
    /// their call's number (CloudBurst), dropped.
    pub stale_responses: u64,
    pub datagrams_in: u64,
    /// Datagrams that are not this association's (other preamble, scheme or id).
    pub foreign_datagrams: u64,
    pub dropped_by_hook: u64,
    /// How late the client's thread woke past its deadlines, summed, ns: the host's own delay (the
    /// thread descheduled or busy), which the network did not cause.
    pub host_delay_ns: u64,
    pub tx: TxCounters,
    /// CloudBurst's engine tables (zero for other schemes).
    pub tables: TableSizes,
    /// CloudBurst's engine counters: coded packets and STOPs sent, blocks decoded (zero for other
    /// schemes).
    pub cloudburst: Counters,
    pub engine_malformed: u64,
    /// A stream peer broke the framing (announced a message over the limit); the association's later
    /// calls time out.
    pub protocol_errors: u64,
    /// Cookies the server sent this client's association before opening it (it was full, or checks
    /// every client): each one costs a round trip.
    pub address_checks: u64,
    /// Associations opened anew after `association_idle_timeout / 2` without a datagram from the
    /// server (stream schemes).
    pub reopened: u64,
    /// DCQUIC's connection counters (`None` for other schemes).
    pub dcquic: Option<DcquicStats>,
}

/// Server-side totals.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ServerStats {
    pub requests: u64,
    /// Requests decoded again (packets that outlived the receiver's memory of the message, a
    /// duplicated datagram, an association reopened) or older than the association's call window,
    /// not handed to the handler.
    pub duplicate_requests: u64,
    pub responses_acked: u64,
    pub responses_failed: u64,
    pub datagrams_in: u64,
    /// Datagrams with no valid preamble or encoding, or that would open an association without
    /// opening a connection of the scheme (a coded CloudBurst packet, a TCP SYN).
    pub foreign_datagrams: u64,
    pub associations: u64,
    pub associations_opened: u64,
    pub associations_evicted: u64,
    /// Opening datagrams answered with an address check (a cookie, or DCQUIC's Retry) instead of an
    /// association: the server was full (or checks every opener), and their source had shown nothing.
    pub address_checks: u64,
    /// Associations opened by a source that showed it receives at its address (a valid echoed
    /// cookie or Retry token).
    pub addresses_validated: u64,
    /// Times an association's sending stopped at the amplification limit (three times what its
    /// client had sent before showing its address); a cookie then went to the client.
    pub amplification_limited: u64,
    /// Echoes whose token this server did not make for that source and association (forged, or
    /// older than two periods): taken as plain datagrams, which prove nothing.
    pub bad_tokens: u64,
    /// Associations whose client said it closed (a control datagram from one of its addresses).
    pub associations_closed: u64,
    /// Datagrams of an association its client closed that arrived after the close (a multipath
    /// client's last packets on another path than the close read first): dropped, never reopening it.
    pub after_close: u64,
    /// Associations dropped after `association_idle_timeout` without a datagram.
    pub associations_expired: u64,
    /// Associations whose connection ended (DCQUIC: closed by either end, or timed out).
    pub associations_finished: u64,
    /// Entries summed over every association's engine tables (CloudBurst).
    pub tables: TableSizes,
    /// CloudBurst's engine counters (coded packets and STOPs sent, blocks decoded, acknowledged
    /// messages' coded and source packets, ...) over the live associations (`Counters::merge`).
    pub cloudburst: Counters,
    pub engine_malformed: u64,
    /// Associations dropped because the peer broke the scheme's framing (a stream message over the
    /// limit) or stopped reading its responses (more than twice the largest message unacknowledged).
    pub protocol_errors: u64,
    pub dropped_by_hook: u64,
    pub tx: TxCounters,
}

/// DCQUIC's client counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DcquicStats {
    pub handshakes: u64,
    /// Summed over handshakes: from the first Initial to the handshake's completion.
    pub handshake_ns: u64,
    pub migrations: u64,
    pub reconnects: u64,
    pub lost_packets: u64,
    /// The current connection's maximum UDP payload.
    pub mps: u16,
    /// The path (local socket) the connection uses now.
    pub path: u32,
}
