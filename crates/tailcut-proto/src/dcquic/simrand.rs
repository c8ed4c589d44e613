//! Seeded randomness for DCQUIC's TLS handshakes and connection ids: **for simulation and testbeds
//! only, never for real security.** Every "random" byte here is a function of the engine's seed, so
//! anyone who knows the seed knows every key.
//!
//! Why this exists: rustls and ring would draw the client and server randoms, the ECDHE key shares
//! and the session-ticket ids and nonces from OS entropy, and quinn-proto's connection-id generators
//! from `rand::rng()`, so two runs with the same seed put different bytes on the wire. An engine must
//! be deterministic, so all of it (and the initial destination connection id a client picks) comes
//! from a ChaCha20 stream keyed by a seed the engine draws from its own RNG ([`SimSeed`]), with one
//! stream per (purpose, connection).
//!
//! How the bytes reach rustls: its `CryptoProvider` holds its randomness and key-exchange groups as
//! `&'static` objects whose methods receive no context, so a per-connection generator cannot live in
//! them. Instead each quinn crypto session ([`SeededSession`]) owns its generator and lends it to a
//! thread-local slot for exactly the duration of each call into rustls; [`SimRandom`] and [`X25519`]
//! read the slot. Outside a lent scope the slot is empty and they fail (rustls then fails the
//! handshake with `FailedToGetRandomBytes`): the provider cannot be used unseeded, and a missed
//! draw shows up as a failed handshake, never as silently nondeterministic bytes.
//!
//! Key exchange is X25519 only, computed by `x25519-dalek` from a private key drawn from the stream
//! (ring's X25519 generates its own private key from OS entropy). Session tickets are stateful
//! (rustls' default with a session cache): their ids, nonces and age offsets come from
//! [`SimRandom`]; no ticket-encryption key exists.

use quinn_proto::crypto::{self, ExportKeyingMaterialError, KeyPair, Keys, PacketKey, Session};
use quinn_proto::rustls;
use quinn_proto::transport_parameters::TransportParameters;
use quinn_proto::{ConnectError, ConnectionId, ConnectionIdGenerator, Side, TransportError};
use rand::{RngCore, SeedableRng};
use rand_chacha::ChaCha20Rng;
use rustls::crypto::{ActiveKeyExchange, GetRandomFailed, SecureRandom, SharedSecret, SupportedKxGroup};
use rustls::{NamedGroup, PeerMisbehaved};
use std::any::Any;
use std::cell::RefCell;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The seed of one engine's handshake and connection-id randomness.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SimSeed([u8; 32]);

/// What a ChaCha20 stream is for: the stream number is `purpose << 48 | index`, so streams of
/// different purposes or connections never overlap.
#[derive(Clone, Copy, Debug)]
#[repr(u64)]
enum Purpose {
    ClientTls = 1,
    ServerTls = 2,
    ConnectionIds = 3,
    InitialDstCids = 4,
}

impl SimSeed {
    /// A seed drawn from the engine's RNG.
    pub fn draw(rng: &mut impl RngCore) -> SimSeed {
        let mut s = [0u8; 32];
        rng.fill_bytes(&mut s);
        SimSeed(s)
    }

    fn stream(self, purpose: Purpose, index: u64) -> Box<ChaCha20Rng> {
        let mut r = Box::new(ChaCha20Rng::from_seed(self.0));
        r.set_stream(((purpose as u64) << 48) | (index & ((1 << 48) - 1)));
        r
    }

    /// quinn's connection-id generator factory for the engine's endpoint.
    pub fn cid_generator(self) -> impl Fn() -> Box<dyn ConnectionIdGenerator> + Send + Sync + 'static {
        move || Box::new(SeededCids(self.stream(Purpose::ConnectionIds, 0)))
    }

    /// quinn's provider of the destination connection id a client's first Initial packet carries
    /// (20 bytes, as quinn's default, whose bytes come from `rand::rng()`).
    pub fn initial_dst_cid(self) -> Arc<dyn Fn() -> ConnectionId + Send + Sync> {
        let rng = Mutex::new(self.stream(Purpose::InitialDstCids, 0));
        Arc::new(move || {
            let mut b = [0u8; 20];
            rng.lock().unwrap_or_else(|e| e.into_inner()).fill_bytes(&mut b);
            ConnectionId::new(&b)
        })
    }
}

thread_local! {
    /// The generator of the crypto session rustls is running in, lent by [`lend`].
    static LENT: RefCell<Option<Box<ChaCha20Rng>>> = const { RefCell::new(None) };
}

/// Runs `f` with `home`'s generator in the slot, then puts it back (also on unwinding). Nested
/// lends restore the outer one.
fn lend<R>(home: &mut Option<Box<ChaCha20Rng>>, f: impl FnOnce() -> R) -> R {
    struct Restore<'a> {
        home: &'a mut Option<Box<ChaCha20Rng>>,
        outer: Option<Box<ChaCha20Rng>>,
    }
    impl Drop for Restore<'_> {
        fn drop(&mut self) {
            let outer = self.outer.take();
            *self.home = LENT.with(|s| s.replace(outer));
        }
    }
    let outer = LENT.with(|s| s.replace(home.take()));
    let _restore = Restore { home, outer };
    f()
}

/// Fills `buf` from the lent generator; fails when nothing is lent.
fn fill_lent(buf: &mut [u8]) -> Result<(), GetRandomFailed> {
    LENT.with(|s| match s.borrow_mut().as_mut() {
        Some(r) => {
            r.fill_bytes(buf);
            Ok(())
        }
        None => Err(GetRandomFailed),
    })
}

/// rustls' randomness in the simulation: the lent seeded stream. Not a secure random source.
#[derive(Debug)]
pub struct SimRandom;

impl SecureRandom for SimRandom {
    fn fill(&self, buf: &mut [u8]) -> Result<(), GetRandomFailed> {
        fill_lent(buf)
    }
}

/// X25519 with the ephemeral private key drawn from the lent seeded stream.
#[derive(Debug)]
pub struct X25519;

impl SupportedKxGroup for X25519 {
    fn start(&self) -> Result<Box<dyn ActiveKeyExchange>, rustls::Error> {
        let mut k = [0u8; 32];
        fill_lent(&mut k).map_err(|_| rustls::Error::FailedToGetRandomBytes)?;
        let secret = x25519_dalek::StaticSecret::from(k);
        let public = x25519_dalek::PublicKey::from(&secret);
        Ok(Box::new(X25519Share { secret, public }))
    }

    fn name(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

struct X25519Share {
    secret: x25519_dalek::StaticSecret,
    public: x25519_dalek::PublicKey,
}

impl ActiveKeyExchange for X25519Share {
    fn complete(self: Box<Self>, peer_pub_key: &[u8]) -> Result<SharedSecret, rustls::Error> {
        let peer: [u8; 32] = peer_pub_key
            .try_into()
            .map_err(|_| PeerMisbehaved::InvalidKeyShare)?;
        let shared = self.secret.diffie_hellman(&x25519_dalek::PublicKey::from(peer));
        // A low-order peer key gives an all-zero secret (RFC 7748 6.1): refuse it, as ring does.
        if !shared.was_contributory() {
            return Err(PeerMisbehaved::InvalidKeyShare.into());
        }
        Ok(SharedSecret::from(&shared.as_bytes()[..]))
    }

    fn pub_key(&self) -> &[u8] {
        self.public.as_bytes()
    }

    fn group(&self) -> NamedGroup {
        NamedGroup::X25519
    }
}

/// Connection ids from the seeded stream, 8 bytes like quinn's default generator (so packet sizes
/// are unchanged); no validation, as quinn's `RandomConnectionIdGenerator`.
struct SeededCids(Box<ChaCha20Rng>);

impl ConnectionIdGenerator for SeededCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0u8; 8];
        self.0.fill_bytes(&mut b);
        ConnectionId::new(&b)
    }

    fn cid_len(&self) -> usize {
        8
    }

    fn cid_lifetime(&self) -> Option<std::time::Duration> {
        None
    }
}

/// A client crypto config whose sessions draw from `seed` (stream per session, in start order).
pub struct SeededClient {
    inner: Arc<dyn crypto::ClientConfig>,
    seed: SimSeed,
    sessions: AtomicU64,
}

impl SeededClient {
    pub fn new(inner: Arc<dyn crypto::ClientConfig>, seed: SimSeed) -> Arc<SeededClient> {
        Arc::new(SeededClient {
            inner,
            seed,
            sessions: AtomicU64::new(0),
        })
    }
}

impl crypto::ClientConfig for SeededClient {
    fn start_session(
        self: Arc<Self>,
        version: u32,
        server_name: &str,
        params: &TransportParameters,
    ) -> Result<Box<dyn Session>, ConnectError> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed);
        let mut rng = Some(self.seed.stream(Purpose::ClientTls, n));
        // The ClientHello (random, key share, PSK) is built here.
        let inner = lend(&mut rng, || {
            self.inner.clone().start_session(version, server_name, params)
        })?;
        Ok(Box::new(SeededSession { inner, rng }))
    }
}

/// A server crypto config whose sessions draw from `seed` (stream per session, in start order).
pub struct SeededServer {
    inner: Arc<dyn crypto::ServerConfig>,
    seed: SimSeed,
    sessions: AtomicU64,
}

impl SeededServer {
    pub fn new(inner: Arc<dyn crypto::ServerConfig>, seed: SimSeed) -> Arc<SeededServer> {
        Arc::new(SeededServer {
            inner,
            seed,
            sessions: AtomicU64::new(0),
        })
    }
}

impl crypto::ServerConfig for SeededServer {
    fn initial_keys(&self, version: u32, dst_cid: &ConnectionId) -> Result<Keys, crypto::UnsupportedVersion> {
        self.inner.initial_keys(version, dst_cid)
    }

    fn retry_tag(&self, version: u32, orig_dst_cid: &ConnectionId, packet: &[u8]) -> [u8; 16] {
        self.inner.retry_tag(version, orig_dst_cid, packet)
    }

    fn start_session(self: Arc<Self>, version: u32, params: &TransportParameters) -> Box<dyn Session> {
        let n = self.sessions.fetch_add(1, Ordering::Relaxed);
        let mut rng = Some(self.seed.stream(Purpose::ServerTls, n));
        let inner = lend(&mut rng, || self.inner.clone().start_session(version, params));
        Box::new(SeededSession { inner, rng })
    }
}

/// A quinn crypto session that lends its generator to rustls around every call that advances the
/// handshake (the `&self` calls only read state, so they cannot draw).
struct SeededSession {
    inner: Box<dyn Session>,
    rng: Option<Box<ChaCha20Rng>>,
}

impl Session for SeededSession {
    fn initial_keys(&self, dst_cid: &ConnectionId, side: Side) -> Keys {
        self.inner.initial_keys(dst_cid, side)
    }

    fn handshake_data(&self) -> Option<Box<dyn Any>> {
        self.inner.handshake_data()
    }

    fn peer_identity(&self) -> Option<Box<dyn Any>> {
        self.inner.peer_identity()
    }

    fn early_crypto(&self) -> Option<(Box<dyn crypto::HeaderKey>, Box<dyn PacketKey>)> {
        self.inner.early_crypto()
    }

    fn early_data_accepted(&self) -> Option<bool> {
        self.inner.early_data_accepted()
    }

    fn is_handshaking(&self) -> bool {
        self.inner.is_handshaking()
    }

    fn read_handshake(&mut self, buf: &[u8]) -> Result<bool, TransportError> {
        // The server's random, key share and session tickets, the client's key-exchange completion.
        lend(&mut self.rng, || self.inner.read_handshake(buf))
    }

    fn transport_parameters(&self) -> Result<Option<TransportParameters>, TransportError> {
        self.inner.transport_parameters()
    }

    fn write_handshake(&mut self, buf: &mut Vec<u8>) -> Option<Keys> {
        lend(&mut self.rng, || self.inner.write_handshake(buf))
    }

    fn next_1rtt_keys(&mut self) -> Option<KeyPair<Box<dyn PacketKey>>> {
        lend(&mut self.rng, || self.inner.next_1rtt_keys())
    }

    fn is_valid_retry(&self, orig_dst_cid: &ConnectionId, header: &[u8], payload: &[u8]) -> bool {
        self.inner.is_valid_retry(orig_dst_cid, header, payload)
    }

    fn export_keying_material(
        &self,
        output: &mut [u8],
        label: &[u8],
        context: &[u8],
    ) -> Result<(), ExportKeyingMaterialError> {
        self.inner.export_keying_material(output, label, context)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use quinn_proto::crypto::ClientConfig as _;

    fn seed(b: u8) -> SimSeed {
        SimSeed([b; 32])
    }

    fn bytes<const N: usize>() -> Result<[u8; N], GetRandomFailed> {
        let mut b = [0u8; N];
        SimRandom.fill(&mut b).map(|()| b)
    }

    #[test]
    fn randomness_exists_only_while_lent_and_goes_back_home() {
        assert!(bytes::<8>().is_err());
        let mut expect = seed(1).stream(Purpose::ServerTls, 0);
        let mut other = seed(1).stream(Purpose::ServerTls, 1);
        let mut home = Some(seed(1).stream(Purpose::ServerTls, 0));
        let mut inner = Some(seed(1).stream(Purpose::ServerTls, 1));
        let (mut e, mut o) = ([0u8; 8], [0u8; 8]);
        lend(&mut home, || {
            expect.fill_bytes(&mut e);
            assert_eq!(bytes::<8>().unwrap(), e);
            // A nested lend shadows the outer generator and restores it.
            lend(&mut inner, || {
                other.fill_bytes(&mut o);
                assert_eq!(bytes::<8>().unwrap(), o);
            });
            expect.fill_bytes(&mut e);
            assert_eq!(bytes::<8>().unwrap(), e);
        });
        assert!(bytes::<8>().is_err());
        // Both generators came back, advanced by what was drawn.
        expect.fill_bytes(&mut e);
        assert_eq!(home.as_mut().unwrap().next_u64().to_le_bytes(), e);
        other.fill_bytes(&mut o);
        assert_eq!(inner.as_mut().unwrap().next_u64().to_le_bytes(), o);
        // Streams of other purposes, indices or seeds differ.
        let first = |s: SimSeed, p, i| s.stream(p, i).next_u64();
        let a = first(seed(1), Purpose::ClientTls, 0);
        assert_ne!(a, first(seed(1), Purpose::ServerTls, 0));
        assert_ne!(a, first(seed(1), Purpose::ClientTls, 1));
        assert_ne!(a, first(seed(2), Purpose::ClientTls, 0));
        assert_eq!(a, first(seed(1), Purpose::ClientTls, 0));
    }

    #[test]
    fn x25519_agrees_is_seeded_and_refuses_bad_peer_keys() {
        assert!(X25519.start().is_err(), "no key share without a lent generator");
        let mut rng = Some(seed(3).stream(Purpose::ClientTls, 0));
        let (a, b, a_again) = lend(&mut rng, || {
            let a = X25519.start().unwrap();
            let b = X25519.start().unwrap();
            (a, b, X25519.start().unwrap())
        });
        let mut rng = Some(seed(3).stream(Purpose::ClientTls, 0));
        let replay = lend(&mut rng, || X25519.start().unwrap());
        assert_eq!(a.pub_key(), replay.pub_key());
        assert_ne!(a.pub_key(), b.pub_key());
        let (pa, pb) = (a.pub_key().to_vec(), b.pub_key().to_vec());
        let sa = a.complete(&pb).unwrap();
        let sb = b.complete(&pa).unwrap();
        assert_eq!(sa.secret_bytes(), sb.secret_bytes());
        assert_eq!(sa.secret_bytes().len(), 32);
        // The all-zero point has low order (the secret would be all zeros); a key must be 32 bytes.
        assert!(a_again.complete(&[0u8; 32]).is_err());
        assert!(replay.complete(&pb[..31]).is_err());
    }

    #[test]
    fn connection_ids_are_seeded() {
        let gen = |s: SimSeed| {
            let mut g = s.cid_generator()();
            [g.generate_cid(), g.generate_cid()]
        };
        let a = gen(seed(4));
        assert_eq!(a, gen(seed(4)));
        assert_ne!(a[0], a[1]);
        assert_ne!(a, gen(seed(5)));
        assert_eq!(a[0].len(), 8);
        let init = |s: SimSeed| {
            let p = s.initial_dst_cid();
            [p(), p()]
        };
        let i = init(seed(4));
        assert_eq!(i, init(seed(4)));
        assert_ne!(i[0], i[1]);
        assert_eq!(i[0].len(), 20);
    }

    #[test]
    fn the_provider_refuses_to_start_a_handshake_unseeded() {
        let params = TransportParameters::read(Side::Server, &mut &[][..]).expect("empty parameters parse");
        let raw = super::super::crypto::client(None);
        // quinn unwraps rustls' FailedToGetRandomBytes: an unseeded client cannot even say hello.
        let unseeded = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            raw.clone().start_session(1, "tailcut", &params).is_ok()
        }));
        assert!(!matches!(unseeded, Ok(true)));
        let seeded = SeededClient::new(raw, seed(6));
        assert!(seeded.start_session(1, "tailcut", &params).is_ok());
    }
}
