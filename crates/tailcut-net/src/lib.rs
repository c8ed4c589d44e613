//! tailcut-net: tailcut's sans-IO engines on real UDP sockets.
//!
//! One runtime thread per [`Server`] or [`Client`] owns the sockets, the engines, a timer heap and the
//! drain loop of `docs/architecture.md`: after every input it drains `poll_transmit` until `None`
//! (datagrams queue per path and leave as one GSO send per path at the end of the wake-up),
//! `poll_event` until `None`, then reads `poll_timeout`. It sleeps in `epoll` with a `timerfd`
//! deadline (nanoseconds; `epoll_wait`'s milliseconds are too coarse for µs timers) and reads the
//! clock in one place ([`clock::Clock`]). Receives use GRO and `recvmmsg` (quinn-udp), with
//! `IP_RECVTOS` for ECN. A scheme is an experiment file's `[[schemes]]` entry, resolved by the scheme
//! layer ([`NetConfig::scheme`]): CloudBurst; tailcut's TCP engine (and MPTCP, FUSO) over the TCP-in-UDP
//! encapsulation with calls framed on its stream; DCQUIC on plain QUIC datagrams. Every engine carries
//! real bytes. Paths
//! are the client's UDP source ports, so an ECMP fabric spreads them. See `docs/net.md`.
//!
//! ```
//! use tailcut_net::{Client, NetConfig, Server};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let server = Server::bind("127.0.0.1:0".parse()?, NetConfig::default(), |req: &[u8], out: &mut Vec<u8>| {
//!     out.extend_from_slice(req) // the response
//! })?;
//! let client = Client::connect(server.local_addr(), NetConfig::default())?;
//! let reply = client.call(b"hello")?; // blocks; callable from several threads
//! assert_eq!(reply.bytes, b"hello");
//! println!("{:?}", reply.stats); // latency, id wait, the request's sender counters
//! # Ok(())
//! # }
//! ```

pub mod address_check;
pub mod call_window;
pub mod cli;
pub mod client;
mod client_echo;
pub mod client_scheme;
pub mod clock;
mod cloudburst;
pub mod codec;
pub mod config;
pub mod dcquic;
mod driver;
pub mod frame;
pub mod io;
pub mod kernel_tls;
pub mod open_loop;
pub mod quic_crypto;
pub mod quic_keys;
mod route_mtus;
mod runtime_thread;
pub mod server;
pub mod server_scheme;
pub mod stats;
pub mod stream;
mod tcp;
pub mod timers;
pub mod tls;
pub mod udp_floor;

pub use client::{CallError, CallStats, Client, ClosedLoopReport, Reply};
pub use config::{Family, NetConfig, PathAddrs, SendLoss};
pub use server::Server;
pub use stats::{ClientStats, DcquicStats, ServerStats};
pub use tailcut_scheme::{Network, SchemeSpec};
