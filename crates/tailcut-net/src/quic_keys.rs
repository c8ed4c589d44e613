//! Each DCQUIC engine's keys and randomness on real sockets, drawn here from the operating system
//! (ring's `SystemRandom`) or left to quinn's own OS-seeded generators: the engine only receives them
//! ([`tailcut_proto::dcquic::real::ClientKeys`], [`ServerKeys`]). One set per engine, so no two
//! connections share a key or an RNG stream.

use quinn_proto::crypto::HandshakeTokenKey;
use quinn_proto::{
    ConnectionId, ConnectionIdGenerator, HashedConnectionIdGenerator, RandomConnectionIdGenerator,
    StdSystemTime,
};
use ring::rand::{SecureRandom, SystemRandom};
use std::sync::Arc;
use std::time::Duration;
use tailcut_proto::dcquic::real::{
    server_cid, CidFactory, ClientKeys, EndpointKeys, ServerKeys, KEY_BYTES, SERVER_CID_BYTES,
};

/// Bytes of the destination ID a client's first Initial carries (quinn's default, QUIC's maximum).
const INITIAL_DCID_BYTES: usize = 20;
/// Bytes of secret behind the reset and token keys (quinn's own defaults draw as many).
const SECRET_BYTES: usize = 64;

fn random<const N: usize>(rng: &SystemRandom) -> Result<[u8; N], String> {
    let mut b = [0u8; N];
    rng.fill(&mut b)
        .map_err(|_| "the operating system gave no random bytes".to_string())?;
    Ok(b)
}

fn endpoint(rng: &SystemRandom, cids: CidFactory) -> Result<EndpointKeys, String> {
    let reset: [u8; SECRET_BYTES] = random(rng)?;
    Ok(EndpointKeys {
        rng_seed: random(rng)?,
        reset_key: Arc::new(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &reset)),
        cids,
    })
}

/// A client engine's keys. Its connection IDs route nowhere, so they and its first destination ID are
/// quinn's default kinds.
pub fn client() -> Result<ClientKeys, String> {
    let rng = SystemRandom::new();
    let cids =
        Arc::new(|| -> Box<dyn ConnectionIdGenerator> { Box::<HashedConnectionIdGenerator>::default() });
    Ok(ClientKeys {
        endpoint: endpoint(&rng, cids)?,
        initial_dst_cid: Arc::new(|| RandomConnectionIdGenerator::new(INITIAL_DCID_BYTES).generate_cid()),
    })
}

/// The key a server's Retry and validation tokens are sealed with: one per server, shared by its
/// engines and its Retry gate, so a token the gate made opens an engine.
pub fn token_key() -> Result<Arc<dyn HandshakeTokenKey>, String> {
    let token: [u8; SECRET_BYTES] = random(&SystemRandom::new())?;
    Ok(Arc::new(
        ring::hkdf::Salt::new(ring::hkdf::HKDF_SHA256, &[]).extract(&token),
    ))
}

/// A server engine's keys; its connection IDs begin with `route_key`, which the runtime routes by.
pub fn server(route_key: u32, token_key: Arc<dyn HandshakeTokenKey>) -> Result<ServerKeys, String> {
    let rng = SystemRandom::new();
    let cids = Arc::new(move || -> Box<dyn ConnectionIdGenerator> { Box::new(RoutedCids::new(route_key)) });
    Ok(ServerKeys {
        endpoint: endpoint(&rng, cids)?,
        token_key,
        // Tokens expire by the wall clock (quinn's default).
        clock: Arc::new(StdSystemTime),
    })
}

/// A server engine's connection IDs: its routing key, then OS-random bytes, so the runtime finds a
/// connection's engine from the first bytes of any ID it issued, on any path (after a migration the
/// client uses a fresh ID from the same engine).
struct RoutedCids {
    key: u32,
    rand: SystemRandom,
}

impl RoutedCids {
    fn new(key: u32) -> RoutedCids {
        RoutedCids {
            key,
            rand: SystemRandom::new(),
        }
    }
}

impl ConnectionIdGenerator for RoutedCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut rest = [0u8; SERVER_CID_BYTES - KEY_BYTES];
        // ring's SystemRandom fails only when the OS has no randomness: the bytes then stay zero,
        // which still routes (the key is intact) and leaves uniqueness to the key.
        let _ = self.rand.fill(&mut rest);
        server_cid(self.key, rest)
    }

    fn cid_len(&self) -> usize {
        SERVER_CID_BYTES
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::Clock;
    use crate::config::NetConfig;
    use crate::tls::TlsConfig;
    use tailcut_proto::dcquic::real::cid_key;

    /// Two clients built alike by the runtime send different first datagrams: their randomness is the
    /// operating system's (a simulated pair with one seed sends identical ones, the engine's tests).
    #[test]
    fn real_engines_share_no_randomness() {
        let (tls, _) = TlsConfig::generate(&["localhost".into()]).unwrap();
        let cfg = NetConfig {
            tls,
            ..NetConfig::default()
        };
        let shared = crate::dcquic::shared(&cfg, Clock::start().instant_epoch(), 1452).unwrap();
        let first = || crate::dcquic::client_initial(&shared).unwrap();
        let (a, b) = (first(), first());
        assert_eq!(a.len(), b.len());
        assert_ne!(a, b);
    }

    #[test]
    fn a_servers_connection_ids_carry_its_routing_key_and_differ() {
        let mut g = RoutedCids::new(0xC0FF_EE01);
        let (a, b) = (g.generate_cid(), g.generate_cid());
        assert_eq!(a.len(), SERVER_CID_BYTES);
        assert_eq!((cid_key(&a), cid_key(&b)), (Some(0xC0FF_EE01), Some(0xC0FF_EE01)));
        assert_ne!(a, b);
    }
}
