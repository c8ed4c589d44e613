//! TCP: NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO, DCTCP.

mod config;

pub use config::{CongestionControl, TcpConfig};
