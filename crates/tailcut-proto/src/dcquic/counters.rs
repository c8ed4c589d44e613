//! [`DcquicCounters`]: what one engine counts.

/// Counters of one engine.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DcquicCounters {
    pub handshakes: u64,
    /// Client side: from `connect` to quinn's `Connected`, summed.
    pub handshake_ns: u64,
    pub migrations: u64,
    pub rebinds: u64,
    pub streams_completed: u64,
    pub stream_ns: u64,
    pub lost_packets: u64,
    /// Client side: connections that sent 0-RTT data (a ticket was at hand), and those the server
    /// accepted it on.
    pub zero_rtt_attempts: u64,
    pub zero_rtt_accepted: u64,
    /// Client side: from `connect` to the first response byte, summed over `first_bytes` connections.
    pub first_byte_ns: u64,
    pub first_bytes: u64,
    /// Tail FEC: messages delivered from the parity before QUIC repaired them, the bytes rebuilt, and
    /// the repair datagrams sent with their payload bytes.
    pub fec_recovered: u64,
    pub fec_recovered_bytes: u64,
    pub fec_repairs: u64,
    pub fec_repair_bytes: u64,
    /// Real sockets: connections closed because the peer sent a message over the limit or held too
    /// many bytes in messages not yet complete.
    pub protocol_errors: u64,
}
