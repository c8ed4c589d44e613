//! The stateless address check a server makes before it allocates an association while it is loaded
//! (`NetConfig::address_validation`): the runtime's SYN cookie for the schemes with its preamble
//! (TCP-in-UDP, MPTCP, FUSO, CloudBurst; DCQUIC uses QUIC's own Retry, `dcquic.rs`).
//!
//! A token is a MAC, under a key the server draws at start, of the source address, the scheme, the
//! association id and the current period of [`PERIOD`]; it is valid in its period and the next, so
//! between one and two periods. The server keeps nothing per token: a client echoes it, and the
//! server recomputes it. A source that does not receive at its address (a forged one) never learns
//! its token, so while the server checks it can open nothing and evict no one.

use ring::hmac;
use ring::rand::{SecureRandom, SystemRandom};
use std::net::{IpAddr, SocketAddr};
use tailcut_proto::wire::preamble::{Token, TOKEN_BYTES};
use tailcut_proto::{Dur, Time};

/// How long a token is good for (at least; at most twice): a client echoes it one round trip after
/// the server made it, and a replayed one is bound to the address it was made for anyway.
pub const PERIOD: Dur = Dur::from_millis(2_000);

pub struct AddressCheck {
    key: hmac::Key,
}

impl AddressCheck {
    /// A check under a fresh key from the operating system.
    pub fn new() -> Result<AddressCheck, String> {
        let mut secret = [0u8; 32];
        SystemRandom::new()
            .fill(&mut secret)
            .map_err(|_| "the operating system gave no random bytes".to_string())?;
        Ok(AddressCheck::with_secret(&secret))
    }

    pub fn with_secret(secret: &[u8]) -> AddressCheck {
        AddressCheck {
            key: hmac::Key::new(hmac::HMAC_SHA256, secret),
        }
    }

    /// The token of `from` opening association `id` of `scheme` at `now`.
    pub fn token(&self, now: Time, from: SocketAddr, scheme: u8, id: u64) -> Token {
        self.token_in(now.0 / PERIOD.0, from, scheme, id)
    }

    /// Whether `token` is what this server gave `from` for association `id` of `scheme`, in this
    /// period or the last. Compared in constant time.
    pub fn valid(&self, now: Time, from: SocketAddr, scheme: u8, id: u64, token: &Token) -> bool {
        let period = now.0 / PERIOD.0;
        [period, period.wrapping_sub(1)].iter().any(|&p| {
            let want = self.token_in(p, from, scheme, id);
            // Every byte is compared whatever the first difference (no early exit to time).
            want.iter().zip(token).fold(0u8, |d, (a, b)| d | (a ^ b)) == 0
        })
    }

    fn token_in(&self, period: u64, from: SocketAddr, scheme: u8, id: u64) -> Token {
        // Fixed-size input: address family, 16 bytes of address, port, scheme, id, period.
        let mut m = [0u8; 1 + 16 + 2 + 1 + 8 + 8];
        match from.ip() {
            IpAddr::V4(a) => {
                m[0] = 4;
                m[1..5].copy_from_slice(&a.octets());
            }
            IpAddr::V6(a) => {
                m[0] = 6;
                m[1..17].copy_from_slice(&a.octets());
            }
        }
        m[17..19].copy_from_slice(&from.port().to_be_bytes());
        m[19] = scheme;
        m[20..28].copy_from_slice(&id.to_be_bytes());
        m[28..36].copy_from_slice(&period.to_be_bytes());
        let tag = hmac::sign(&self.key, &m);
        let mut t = [0u8; TOKEN_BYTES];
        t.copy_from_slice(&tag.as_ref()[..TOKEN_BYTES]);
        t
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[test]
    fn a_token_holds_for_its_address_association_and_scheme_only() {
        let c = AddressCheck::with_secret(b"k");
        let from = addr("127.0.0.1:4000");
        let now = Time(5_000_000_000);
        let t = c.token(now, from, 2, 7);
        assert!(c.valid(now, from, 2, 7, &t));
        assert!(!c.valid(now, addr("127.0.0.1:4001"), 2, 7, &t), "another port");
        assert!(!c.valid(now, addr("127.0.0.2:4000"), 2, 7, &t), "another address");
        assert!(!c.valid(now, addr("[::1]:4000"), 2, 7, &t), "another family");
        assert!(!c.valid(now, from, 2, 8, &t), "another association");
        assert!(!c.valid(now, from, 1, 7, &t), "another scheme");
        let mut forged = t;
        forged[0] ^= 1;
        assert!(!c.valid(now, from, 2, 7, &forged));
        assert!(
            !AddressCheck::with_secret(b"other").valid(now, from, 2, 7, &t),
            "another server"
        );
    }

    #[test]
    fn a_token_lasts_between_one_and_two_periods() {
        let c = AddressCheck::with_secret(b"k");
        let from = addr("10.0.0.1:1");
        let start = Time(3 * PERIOD.0);
        let t = c.token(start, from, 1, 1);
        assert!(c.valid(start + Dur(PERIOD.0 - 1), from, 1, 1, &t));
        assert!(c.valid(start + Dur(2 * PERIOD.0 - 1), from, 1, 1, &t));
        assert!(!c.valid(start + Dur(2 * PERIOD.0), from, 1, 1, &t));
        // Made late in a period, it still lasts the next one whole.
        let late = Time(4 * PERIOD.0 - 1);
        let t = c.token(late, from, 1, 1);
        assert!(c.valid(late + PERIOD, from, 1, 1, &t));
    }
}
