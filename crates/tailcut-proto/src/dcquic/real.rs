//! DCQUIC on real sockets: TLS 1.3 with the operating system's randomness and real certificates, an
//! ALPN, messages delimited by their stream's FIN, and connection IDs a server can route by.
//!
//! The simulator's mode ([`super::crypto`], [`super::simrand`]) and this one share no source of
//! randomness: an engine built for real sockets draws every key, connection ID and TLS random from
//! the operating system (ring's `SystemRandom`, quinn's OS-seeded RNG) and reads the wall clock for
//! certificate validity; an engine built for the simulator draws them from its seed and never reads a
//! clock. Which one an engine is follows from how its [`super::Shared`] was built.

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::rustls;
use quinn_proto::{ConnectionId, ConnectionIdGenerator};
use ring::rand::{SecureRandom, SystemRandom};
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use std::time::Duration;

/// The certificate and key types [`Identity`] and [`RealMode`] take.
pub use rustls::pki_types;

/// The ALPN tailcut's RPC protocol uses unless told otherwise (QUIC requires one: RFC 9001 Sec. 8.1).
pub const ALPN: &[u8] = b"tailcut-rpc";

/// The application error code a connection is closed with when the peer sends a message over the
/// limit or holds too many bytes in incomplete messages.
pub const ERROR_TOO_LARGE: u32 = 0x101;

/// Bytes of a server connection ID: [`KEY_BYTES`] of routing key, then random bytes.
pub const SERVER_CID_BYTES: usize = 8;
/// Leading bytes of a server connection ID that name the connection's engine.
pub const KEY_BYTES: usize = 4;

/// A server's certificate chain and private key (DER).
pub struct Identity {
    pub certs: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// What a real-mode engine needs besides [`super::DcquicConfig`].
pub struct RealMode {
    /// Offered (client) or accepted (server) application protocols, in preference order.
    pub alpn: Vec<Vec<u8>>,
    /// The server's identity; `None` for a client-only endpoint.
    pub identity: Option<Identity>,
    /// The certificates a client trusts as roots (a private CA, or a self-signed server certificate
    /// given as its own root).
    pub roots: Vec<CertificateDer<'static>>,
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
    pub fn validate(&self) -> Result<(), String> {
        if self.alpn.is_empty() || self.alpn.iter().any(|a| a.is_empty() || a.len() > 255) {
            return Err("alpn: need at least one protocol name of 1..=255 bytes".into());
        }
        if u64::from(self.path_max_payload) < super::mps::MIN_MPS {
            return Err(format!(
                "path_max_payload: must be >= {} (QUIC's minimum), got {}",
                super::mps::MIN_MPS,
                self.path_max_payload
            ));
        }
        if self.max_message_bytes == 0 || self.max_buffered_bytes < self.max_message_bytes {
            return Err(format!(
                "max_buffered_bytes ({}) must be >= max_message_bytes ({}) > 0",
                self.max_buffered_bytes, self.max_message_bytes
            ));
        }
        if self.identity.is_none() && self.roots.is_empty() {
            return Err("roots: a client needs at least one trusted certificate".into());
        }
        Ok(())
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client's crypto: webpki verification against `roots`, TLS 1.3 only, no early data.
pub(super) fn client(m: &RealMode) -> Result<Arc<QuicClientConfig>, String> {
    let mut roots = rustls::RootCertStore::empty();
    for c in &m.roots {
        roots
            .add(c.clone())
            .map_err(|e| format!("roots: certificate not usable as a trust anchor: {e}"))?;
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(roots)
        .with_no_client_auth();
    cfg.alpn_protocols = m.alpn.clone();
    let q = QuicClientConfig::try_from(cfg).map_err(|e| e.to_string())?;
    Ok(Arc::new(q))
}

/// The server's crypto: its certificate chain, TLS 1.3 only, no session tickets (0-RTT is not offered
/// on real sockets).
pub(super) fn server(m: &RealMode) -> Result<Arc<QuicServerConfig>, String> {
    let Some(id) = &m.identity else {
        return Err("identity: a server needs a certificate and key".into());
    };
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(id.certs.clone(), id.key.clone_key())
        .map_err(|e| format!("identity: {e}"))?;
    cfg.alpn_protocols = m.alpn.clone();
    cfg.send_tls13_tickets = 0;
    let q = QuicServerConfig::try_from(cfg).map_err(|e| e.to_string())?;
    Ok(Arc::new(q))
}

/// A server engine's connection IDs: its routing key, then OS-random bytes, so the runtime finds a
/// connection's engine from the first bytes of any ID it issued, on any path (after a migration the
/// client uses a fresh ID from the same engine). The key makes a connection's IDs linkable by an
/// observer, which QUIC's ID rotation otherwise prevents: acceptable inside a datacenter, and what
/// QUIC-LB's plaintext mode does.
pub(super) struct RoutedCids {
    key: u32,
    rand: SystemRandom,
}

impl RoutedCids {
    pub(super) fn new(key: u32) -> RoutedCids {
        RoutedCids {
            key,
            rand: SystemRandom::new(),
        }
    }
}

impl ConnectionIdGenerator for RoutedCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0u8; SERVER_CID_BYTES];
        b[..KEY_BYTES].copy_from_slice(&self.key.to_be_bytes());
        // ring's SystemRandom fails only when the OS has no randomness: the bytes then stay zero,
        // which still routes (the key is intact) and leaves uniqueness to the key.
        let _ = self.rand.fill(&mut b[KEY_BYTES..]);
        ConnectionId::new(&b)
    }

    fn cid_len(&self) -> usize {
        SERVER_CID_BYTES
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// The routing key of a server connection ID.
pub fn cid_key(cid: &[u8]) -> Option<u32> {
    let b: [u8; KEY_BYTES] = cid.get(..KEY_BYTES)?.try_into().ok()?;
    Some(u32::from_be_bytes(b))
}
