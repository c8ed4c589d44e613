//! Byte formats for running engines over real sockets.
//!
//! [`tcp_udp`] is the TCP-in-UDP encapsulation of a [`crate::TcpHeader`] for the TCP-family engines
//! (TCP/DCTCP, CP, MPTCP/FUSO). CloudBurst keeps its own Fig. 4 header (`cloudburst::header`) and
//! DCQUIC is QUIC. [`preamble`] names the association and path of every datagram of the UDP runtime.
//! See `docs/net.md` for the byte layouts.

pub mod preamble;
pub mod tcp_udp;
