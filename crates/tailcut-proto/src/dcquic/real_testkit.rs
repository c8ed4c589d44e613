//! Real-mode TLS configs and engine keys for tests and fuzz targets, built as a driver builds them but
//! with keys, connection IDs and the clock fixed by a seed, so a failing case replays. TLS randoms and
//! key shares still come from ring's provider (the operating system): a real-mode handshake's bytes
//! differ between runs. Not for a runtime: anyone who knows the seed knows the keys.
//!
//! The certificates are a test CA and a leaf it signed for [`SERVER_NAME`], and an unrelated root
//! (all valid until 2126, made with openssl, see `docs/dcquic.md`).

use super::real::{server_cid, ClientKeys, EndpointKeys, RealMode, ServerKeys};
use super::real::{ALPN, KEY_BYTES, SERVER_CID_BYTES};
use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use quinn_proto::rustls;
use quinn_proto::{ConnectionId, ConnectionIdGenerator, TimeSource};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, PrivatePkcs8KeyDer, UnixTime};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

/// The test CA.
pub const CA: &[u8] = include_bytes!("test_ca.der");
/// The leaf the CA signed for [`SERVER_NAME`], and its PKCS#8 key.
pub const LEAF: &[u8] = include_bytes!("test_leaf.der");
pub const LEAF_KEY: &[u8] = include_bytes!("test_leaf_key.der");
/// A root the leaf does not lead to.
pub const OTHER_ROOT: &[u8] = include_bytes!("test_other_root.der");
pub const SERVER_NAME: &str = "tailcut";

/// 2030-01-01, inside the certificates' validity.
const FIXED_SECS: u64 = 1_893_456_000;

/// A wall clock stopped inside the certificates' validity, for rustls and for quinn's tokens.
#[derive(Debug)]
struct FixedClock;

impl rustls::time_provider::TimeProvider for FixedClock {
    fn current_time(&self) -> Option<UnixTime> {
        Some(UnixTime::since_unix_epoch(Duration::from_secs(FIXED_SECS)))
    }
}

impl TimeSource for FixedClock {
    fn now(&self) -> SystemTime {
        UNIX_EPOCH + Duration::from_secs(FIXED_SECS)
    }
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// A client that trusts `roots` (DER) and offers `alpn`; webpki verifies the server.
pub fn client_config(roots: &[&[u8]], alpn: &[u8]) -> Arc<QuicClientConfig> {
    let mut store = rustls::RootCertStore::empty();
    for r in roots {
        store
            .add(CertificateDer::from(r.to_vec()))
            .expect("a test root is a trust anchor");
    }
    let mut cfg = rustls::ClientConfig::builder_with_details(provider(), Arc::new(FixedClock))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_root_certificates(store)
        .with_no_client_auth();
    cfg.alpn_protocols = vec![alpn.to_vec()];
    Arc::new(QuicClientConfig::try_from(cfg).expect("TLS 1.3 with an initial cipher suite"))
}

/// A server with the test leaf that accepts `alpn`, without session tickets (as a runtime's).
pub fn server_config(alpn: &[u8]) -> Arc<QuicServerConfig> {
    let key = PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(LEAF_KEY.to_vec()));
    let mut cfg = rustls::ServerConfig::builder_with_details(provider(), Arc::new(FixedClock))
        .with_protocol_versions(&[&rustls::version::TLS13])
        .expect("ring supports TLS 1.3")
        .with_no_client_auth()
        .with_single_cert(vec![CertificateDer::from(LEAF.to_vec())], key)
        .expect("the test key matches its leaf");
    cfg.alpn_protocols = vec![alpn.to_vec()];
    cfg.send_tls13_tickets = 0;
    Arc::new(QuicServerConfig::try_from(cfg).expect("TLS 1.3 with an initial cipher suite"))
}

/// Both sides with [`ALPN`], the client trusting the test CA; a 9000-byte MTU path, 1 MB messages.
pub fn mode() -> RealMode {
    RealMode {
        client: Some(client_config(&[CA], ALPN)),
        server: Some(server_config(ALPN)),
        server_name: SERVER_NAME.into(),
        path_max_payload: 8972,
        max_message_bytes: 1 << 20,
        max_buffered_bytes: 2 << 20,
    }
}

/// A ChaCha20 stream per (seed, purpose), so keys of one seed never share bytes.
fn stream(seed: u64, purpose: u64) -> ChaCha20Rng {
    let mut r = ChaCha20Rng::seed_from_u64(seed);
    r.set_stream(purpose);
    r
}

fn endpoint(seed: u64, route_key: Option<u32>) -> EndpointKeys {
    let mut r = stream(seed, 1);
    let mut rng_seed = [0u8; 32];
    r.fill_bytes(&mut rng_seed);
    let mut reset = [0u8; 64];
    r.fill_bytes(&mut reset);
    // One stream per generator quinn asks for (it asks once per endpoint).
    let made = AtomicU64::new(0);
    let cids = Arc::new(move || -> Box<dyn ConnectionIdGenerator> {
        let n = made.fetch_add(1, Ordering::Relaxed);
        Box::new(SeededCids {
            route_key,
            rng: stream(seed, 0x100 + n),
        })
    });
    EndpointKeys {
        rng_seed,
        reset_key: Arc::new(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &reset)),
        cids,
    }
}

/// A client's keys, all from `seed`.
pub fn client_keys(seed: u64) -> ClientKeys {
    let dcids = Mutex::new(stream(seed, 2));
    ClientKeys {
        endpoint: endpoint(seed, None),
        initial_dst_cid: Arc::new(move || {
            let mut b = [0u8; 20];
            dcids.lock().unwrap_or_else(|e| e.into_inner()).fill_bytes(&mut b);
            ConnectionId::new(&b)
        }),
    }
}

/// A server's keys, all from `seed`; its connection IDs begin with `route_key`.
pub fn server_keys(route_key: u32, seed: u64) -> ServerKeys {
    let mut token = [0u8; 64];
    stream(seed, 3).fill_bytes(&mut token);
    ServerKeys {
        endpoint: endpoint(seed, Some(route_key)),
        token_key: Arc::new(ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&token)),
        clock: Arc::new(FixedClock),
    }
}

/// 8-byte connection IDs from a seeded stream, behind a routing key on a server.
struct SeededCids {
    route_key: Option<u32>,
    rng: ChaCha20Rng,
}

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        match self.route_key {
            Some(key) => {
                let mut rest = [0u8; SERVER_CID_BYTES - KEY_BYTES];
                self.rng.fill_bytes(&mut rest);
                server_cid(key, rest)
            }
            None => {
                let mut b = [0u8; SERVER_CID_BYTES];
                self.rng.fill_bytes(&mut b);
                ConnectionId::new(&b)
            }
        }
    }

    fn cid_len(&self) -> usize {
        SERVER_CID_BYTES
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}
