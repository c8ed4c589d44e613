//! DCQUIC on real sockets: TLS 1.3 with real certificates, an ALPN, messages delimited by their
//! stream's FIN, and connection IDs a server can route by.
//!
//! The engine reads no OS entropy and no clock in this mode either: its driver builds the TLS configs
//! ([`RealMode`]) and draws each engine's keys, RNG seed and connection-ID generators
//! ([`ClientKeys`], [`ServerKeys`]); what those draw from (the operating system, on a runtime) is the
//! driver's choice. The simulator's mode ([`super::crypto`], [`super::simrand`]) shares none of it:
//! which mode an engine is in follows from how its [`super::Shared`] was built.

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::crypto::{HandshakeTokenKey, HmacKey};
use quinn_proto::{ConnectionId, ConnectionIdGenerator, TimeSource};
use std::sync::Arc;

/// The ALPN tailcut's RPC protocol uses unless told otherwise (QUIC requires one: RFC 9001 Sec. 8.1).
pub const ALPN: &[u8] = b"tailcut-rpc";

/// The application error code a connection is closed with when the peer sends a message over the
/// limit or holds too many bytes in incomplete messages.
pub const ERROR_TOO_LARGE: u32 = 0x101;

/// Bytes of a server connection ID: [`KEY_BYTES`] of routing key, then random bytes.
pub const SERVER_CID_BYTES: usize = 8;
/// Leading bytes of a server connection ID that name the connection's engine.
pub const KEY_BYTES: usize = 4;

/// What a real-mode engine needs besides [`super::DcquicConfig`], shared by a runtime's engines.
pub struct RealMode {
    /// The client's TLS (its roots, ALPN and provider); `None` for a server-only runtime.
    pub client: Option<Arc<QuicClientConfig>>,
    /// The server's TLS (its certificate, ALPN and provider); `None` for a client-only runtime.
    pub server: Option<Arc<QuicServerConfig>>,
    /// The name a client asks for and checks the server's certificate against.
    pub server_name: String,
    /// Largest UDP payload the path carries (the interface MTU less IP and UDP headers): the MPS a
    /// client picks by task size is capped at it, and a server offers it (the client's smaller choice
    /// then wins, QUIC's `max_udp_payload_size` being the minimum of the two).
    pub path_max_payload: u16,
    /// Largest message (stream) a peer may send; a stream beyond it closes the connection.
    pub max_message_bytes: u64,
    /// Largest sum of bytes of messages still arriving, per connection; beyond it the connection is
    /// closed (quinn's flow control bounds what it holds, this bounds what the engine has read out).
    pub max_buffered_bytes: u64,
}

impl RealMode {
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError;
        if u64::from(self.path_max_payload) < super::mps::MIN_MPS {
            return Err(ConfigError::new(
                "path_max_payload",
                format!(
                    "must be >= {} (QUIC's minimum), got {}",
                    super::mps::MIN_MPS,
                    self.path_max_payload
                ),
            ));
        }
        if self.max_message_bytes == 0 || self.max_buffered_bytes < self.max_message_bytes {
            return Err(ConfigError::new(
                "max_buffered_bytes",
                format!(
                    "({}) must be >= max_message_bytes ({}) > 0",
                    self.max_buffered_bytes, self.max_message_bytes
                ),
            ));
        }
        if self.client.is_none() && self.server.is_none() {
            return Err(ConfigError::new(
                "client",
                "need at least one TLS configuration (client or server)",
            ));
        }
        Ok(())
    }
}

/// quinn's factory of an endpoint's connection-ID generators.
pub type CidFactory = Arc<dyn Fn() -> Box<dyn ConnectionIdGenerator> + Send + Sync>;

/// The keys and randomness of one engine's quinn endpoint. One set per engine: the RNG seed in
/// particular must differ between connections, or their path challenges and greasing repeat.
pub struct EndpointKeys {
    /// Seeds quinn's endpoint RNG, from which each connection's RNG is seeded.
    pub rng_seed: [u8; 32],
    /// Signs stateless resets.
    pub reset_key: Arc<dyn HmacKey>,
    /// The endpoint's connection IDs.
    pub cids: CidFactory,
}

/// What a real-mode client engine draws on.
pub struct ClientKeys {
    pub endpoint: EndpointKeys,
    /// The destination connection ID of the client's first Initial.
    pub initial_dst_cid: Arc<dyn Fn() -> ConnectionId + Send + Sync>,
}

/// What a real-mode server engine draws on. Its connection IDs ([`EndpointKeys::cids`]) must follow
/// [`server_cid`]'s layout for a runtime to route by them ([`super::route`]).
pub struct ServerKeys {
    pub endpoint: EndpointKeys,
    /// Seals retry and address-validation tokens.
    pub token_key: Arc<dyn HandshakeTokenKey>,
    /// The wall clock tokens are stamped and checked with.
    pub clock: Arc<dyn TimeSource>,
}

/// A server connection ID: the routing key, then `rest` (random bytes). The key makes a connection's
/// IDs linkable by an observer, which QUIC's ID rotation otherwise prevents: acceptable inside a
/// datacenter, and what QUIC-LB's plaintext mode does.
pub fn server_cid(key: u32, rest: [u8; SERVER_CID_BYTES - KEY_BYTES]) -> ConnectionId {
    let mut b = [0u8; SERVER_CID_BYTES];
    b[..KEY_BYTES].copy_from_slice(&key.to_be_bytes());
    b[KEY_BYTES..].copy_from_slice(&rest);
    ConnectionId::new(&b)
}

/// The routing key of a server connection ID.
pub fn cid_key(cid: &[u8]) -> Option<u32> {
    let b: [u8; KEY_BYTES] = cid.get(..KEY_BYTES)?.try_into().ok()?;
    Some(u32::from_be_bytes(b))
}
