//! Byte formats for running engines over real sockets.
//!
//! [`tcp_udp`] is the TCP-in-UDP encapsulation of a [`crate::TcpHeader`] for the TCP-family engines
//! (TCP/DCTCP, CP, MPTCP/FUSO). CloudBurst keeps its own Fig. 4 header (`cloudburst::header`) and
//! DCQUIC is QUIC. See `docs/net.md` for the byte layout.

pub mod tcp_udp;
