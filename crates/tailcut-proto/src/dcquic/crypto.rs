//! TLS 1.3 for DCQUIC: rustls with a shipped Ed25519 test identity, a pinned-certificate verifier and
//! seeded randomness. **Simulation and testbeds only: none of this is secure** (every key follows from
//! the run's seed, and the verifier accepts the one shipped certificate for any name).
//!
//! Why these choices:
//! - Ed25519 signatures are deterministic and always 64 bytes (ECDSA draws a nonce and its DER
//!   signatures vary by a byte or two).
//! - The provider is ring's cipher suites, signature verification and key loading, with its
//!   randomness and key exchange replaced by [`simrand`]'s seeded ones (X25519 only), so the
//!   handshake's bytes, not only its sizes, are the same in every run with the same seed. Its
//!   randomness exists only inside a session seeded by an engine ([`simrand::SeededClient`],
//!   [`simrand::SeededServer`]); the configs built here fail every handshake without one.
//! - The verifier pins the one test certificate instead of walking a chain: chain validation reads the
//!   wall clock (certificate validity), which an engine must not depend on.
//! - Both sides get a fixed [`TimeProvider`], so session-ticket ages never depend on the wall clock.

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::rustls;
use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::crypto::{verify_tls12_signature, verify_tls13_signature, CryptoProvider};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, ServerName, UnixTime};
use rustls::time_provider::TimeProvider;
use rustls::{DigitallySignedStruct, SignatureScheme};
use std::sync::Arc;

use super::simrand;
use super::tickets::TicketStore;

/// Sessions a server remembers for resumption (FIFO eviction beyond this; rustls preallocates it).
const SERVER_SESSIONS: usize = 1 << 14;

/// Self-signed Ed25519 certificate for the name [`SERVER_NAME`] (test identity, not a secret).
const CERT_DER: &[u8] = include_bytes!("cert.der");
/// Its PKCS#8 private key.
const KEY_DER: &[u8] = include_bytes!("key.der");
/// The server name clients ask for.
pub const SERVER_NAME: &str = "tailcut";

/// A wall clock frozen at one instant (2030-01-01): ticket ages are then always zero, which is what a
/// simulated run of milliseconds would see anyway.
#[derive(Debug)]
struct FixedTime;

impl TimeProvider for FixedTime {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(std::time::Duration::from_secs(
            1_893_456_000,
        )))
    }
}

#[derive(Debug)]
struct PinnedCert {
    provider: Arc<CryptoProvider>,
}

impl ServerCertVerifier for PinnedCert {
    fn verify_server_cert(
        &self,
        end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        if end_entity.as_ref() == CERT_DER {
            Ok(ServerCertVerified::assertion())
        } else {
            Err(rustls::Error::InvalidCertificate(
                rustls::CertificateError::UnknownIssuer,
            ))
        }
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls12_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        verify_tls13_signature(
            message,
            cert,
            dss,
            &self.provider.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.provider
            .signature_verification_algorithms
            .supported_schemes()
    }
}

/// ring's provider with seeded randomness and X25519 from [`simrand`] (ring's own key-exchange
/// groups generate their private keys from OS entropy, so none of them is offered).
fn provider() -> Arc<CryptoProvider> {
    Arc::new(CryptoProvider {
        kx_groups: vec![&simrand::X25519],
        secure_random: &simrand::SimRandom,
        ..rustls::crypto::ring::default_provider()
    })
}

/// The client's QUIC crypto configuration. With a ticket `store` it keeps session tickets there and
/// offers early data (0-RTT); without one, resumption is off. Its sessions need a seed: wrap it in a
/// [`simrand::SeededClient`].
pub(super) fn client(store: Option<Arc<TicketStore>>) -> Arc<QuicClientConfig> {
    let p = provider();
    let mut cfg = rustls::ClientConfig::builder_with_details(p.clone(), Arc::new(FixedTime))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 is supported by the ring provider")
        .dangerous()
        .with_custom_certificate_verifier(Arc::new(PinnedCert { provider: p }))
        .with_no_client_auth();
    match store {
        Some(store) => {
            cfg.enable_early_data = true;
            cfg.resumption = rustls::client::Resumption::store(store);
        }
        None => cfg.resumption = rustls::client::Resumption::disabled(),
    }
    Arc::new(QuicClientConfig::try_from(cfg).expect("TLS 1.3 with an initial cipher suite"))
}

/// The server's QUIC crypto configuration. `zero_rtt` issues session tickets and accepts early data.
/// Its sessions need a seed: wrap it in a [`simrand::SeededServer`].
pub(super) fn server(zero_rtt: bool) -> Arc<QuicServerConfig> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(KEY_DER.to_vec()));
    let mut cfg = rustls::ServerConfig::builder_with_details(provider(), Arc::new(FixedTime))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("TLS 1.3 is supported by the ring provider")
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(CERT_DER.to_vec())], key)
        .expect("the shipped Ed25519 key matches its certificate");
    if zero_rtt {
        // quinn requires u32::MAX (QUIC flow control bounds early data, not TLS). Tickets are
        // stateful (rustls' default: a seeded random id into a session cache, so no
        // ticket-encryption key, which rustls' `Ticketer` would draw from OS entropy and rotate by
        // the wall clock); 0-RTT takes the session out of the cache, which is the single-use
        // anti-replay rule. Eviction is FIFO, so deterministic.
        cfg.max_early_data_size = u32::MAX;
        cfg.session_storage = rustls::server::ServerSessionMemoryCache::new(SERVER_SESSIONS);
    } else {
        cfg.send_tls13_tickets = 0;
    }
    Arc::new(QuicServerConfig::try_from(cfg).expect("TLS 1.3 with an initial cipher suite"))
}
