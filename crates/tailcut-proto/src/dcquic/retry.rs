//! QUIC's stateless address validation for a real-mode server (RFC 9000 Sec. 8.1): a [`RetryGate`]
//! answers a connection's first Initial with a Retry and admits the Initial that comes back with its
//! token, holding nothing in between. A runtime asks it only while it must validate (a full server),
//! and gives the admitted Initial to a fresh engine, whose endpoint checks the same token again (the
//! engines and the gate share the token key and clock, [`real::ServerKeys`]) and puts the
//! `original_destination_connection_id` and `retry_source_connection_id` the client checks into its
//! transport parameters.
//!
//! The engine sees a connection's peer at an engine address, not at its real socket address, so the
//! token alone (which quinn binds to the address the endpoint sees) does not bind the real source.
//! The Retry's source connection ID does: the runtime hands the gate a tag of the real source address
//! (a MAC it can recompute), and the gate's connection IDs are [`RETRY_CID_BYTES`] bytes, a zero
//! routing key and that tag; the client must send its next Initial to that ID, and the runtime checks
//! the tag against the address it came from ([`retry_cid_tag`]).

use super::bridge::{sock, to_instant};
use super::real;
use super::Shared;
use crate::packet::Packet;
use crate::time::Time;
use quinn_proto::{
    ConnectionId, ConnectionIdGenerator, DatagramEvent, Endpoint, EndpointConfig, ServerConfig,
};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// Bytes of a Retry's source connection ID: a zero routing key (no engine ever has key 0), then the
/// tag of the real source address.
pub const RETRY_CID_BYTES: usize = real::KEY_BYTES + RETRY_TAG_BYTES;
/// Bytes of the source-address tag in a Retry's connection ID.
pub const RETRY_TAG_BYTES: usize = 16;

/// What the gate made of an opening datagram.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Gate {
    /// An Initial with a valid Retry token: its engine may open (the runtime still checks the
    /// connection ID's tag).
    Validated,
    /// The reply written is to go back to the source (a Retry; a version negotiation for an unknown
    /// version); nothing opens.
    Replied,
    /// Nothing opens and nothing is sent (not an Initial the server could accept, or a token that
    /// was already retried).
    Refused,
}

/// The tag a Retry connection ID carries, if `dcid` is one ([`RETRY_CID_BYTES`] bytes, zero key).
pub fn retry_cid_tag(dcid: &[u8]) -> Option<&[u8; RETRY_TAG_BYTES]> {
    if dcid.len() != RETRY_CID_BYTES || dcid[..real::KEY_BYTES] != [0; real::KEY_BYTES] {
        return None;
    }
    dcid[real::KEY_BYTES..].try_into().ok()
}

/// The Retry connection IDs: the tag the gate was last given.
struct TaggedCids(Arc<Mutex<[u8; RETRY_TAG_BYTES]>>);

impl ConnectionIdGenerator for TaggedCids {
    fn generate_cid(&mut self) -> ConnectionId {
        let mut b = [0u8; RETRY_CID_BYTES];
        b[real::KEY_BYTES..].copy_from_slice(&*self.0.lock().unwrap_or_else(|e| e.into_inner()));
        ConnectionId::new(&b)
    }

    fn cid_len(&self) -> usize {
        RETRY_CID_BYTES
    }

    fn cid_lifetime(&self) -> Option<Duration> {
        None
    }
}

/// A stateless quinn endpoint that only validates: it never accepts a connection.
pub struct RetryGate {
    shared: Arc<Shared>,
    endpoint: Endpoint,
    tag: Arc<Mutex<[u8; RETRY_TAG_BYTES]>>,
    scratch: Vec<u8>,
}

impl RetryGate {
    /// A gate for the real-mode server engines of `shared`, on their token key and clock
    /// (`keys.endpoint.cids` is not used: the gate's IDs are its own).
    pub fn new(shared: Arc<Shared>, keys: real::ServerKeys) -> Result<RetryGate, crate::ConfigError> {
        let Some(crypto) = shared.real_mode().and_then(|r| r.server.clone()) else {
            return Err(crate::ConfigError::new(
                "server",
                "a Retry gate needs a Shared::real with a server config",
            ));
        };
        let mut sc = ServerConfig::new(crypto, keys.token_key);
        sc.time_source(keys.clock);
        let tag = Arc::new(Mutex::new([0u8; RETRY_TAG_BYTES]));
        let cids = tag.clone();
        let mut ep_cfg = EndpointConfig::new(keys.endpoint.reset_key);
        ep_cfg.cid_generator(move || Box::new(TaggedCids(cids.clone())));
        let endpoint = Endpoint::new(
            Arc::new(ep_cfg),
            Some(Arc::new(sc)),
            false,
            Some(keys.endpoint.rng_seed),
        );
        Ok(RetryGate {
            shared,
            endpoint,
            tag,
            scratch: Vec::new(),
        })
    }

    /// Looks at the opening datagram `bytes`, which an engine would see as `pkt` (its engine
    /// addresses); a Retry carries `tag()` (of the real source address) in its connection ID,
    /// computed only when a Retry goes out (an HMAC the validated Initial does not need). The
    /// reply, if any, is written to `reply`.
    pub fn check(
        &mut self,
        now: Time,
        pkt: &Packet,
        bytes: &[u8],
        tag: impl FnOnce() -> [u8; RETRY_TAG_BYTES],
        reply: &mut Vec<u8>,
    ) -> Gate {
        let remote = sock(pkt.tuple.src, pkt.tuple.src_port);
        self.scratch.clear();
        let event = self.endpoint.handle(
            to_instant(self.shared.epoch, now),
            remote,
            None,
            None,
            bytes::BytesMut::from(bytes),
            &mut self.scratch,
        );
        match event {
            Some(DatagramEvent::NewConnection(incoming)) => {
                if incoming.remote_address_validated() {
                    self.endpoint.ignore(incoming);
                    return Gate::Validated;
                }
                *self.tag.lock().unwrap_or_else(|e| e.into_inner()) = tag();
                reply.clear();
                match self.endpoint.retry(incoming, reply) {
                    Ok(t) => {
                        reply.truncate(t.size);
                        Gate::Replied
                    }
                    Err(e) => {
                        self.endpoint.ignore(e.into_incoming());
                        Gate::Refused
                    }
                }
            }
            Some(DatagramEvent::Response(t)) => {
                reply.clear();
                reply.extend_from_slice(&self.scratch[..t.size]);
                Gate::Replied
            }
            Some(DatagramEvent::ConnectionEvent(..)) | None => Gate::Refused,
        }
    }
}
