//! The UDP runtime's (`tailcut-net`) 12-byte preamble in front of every engine datagram. It lives
//! here, with the other wire formats, because a trimming element (the testbed's fabric) must
//! recognise the datagrams it may cut.
//!
//! CloudBurst's own header (Fig. 4) names a message, not an association, and a multipath association
//! arrives from several source ports, so the server cannot key its engines on the 4-tuple (TCP over
//! the runtime uses the same preamble, so one server loop serves every scheme). The
//! preamble names the association (a random 64-bit id the client draws) and the path the datagram
//! took, so replies go back along the same path.
//!
//! ```text
//! | version (1) | scheme | path | control (0) | association id (u64, big endian) |
//! ```
//!
//! A datagram whose control byte is not 0 is a control datagram ([`Control`]): a close (the
//! preamble alone), or the stateless address check a loaded server makes before it allocates an
//! association, as QUIC's Retry does (RFC 9000 Sec. 8.1) and SYN cookies do for TCP: the server
//! answers an opening datagram with a cookie (a MAC of the source address and the association), and
//! the client repeats its datagrams wrapped in an echo of it until the server answers. A forged
//! source never sees the cookie, so it can open nothing while the server checks.
//!
//! ```text
//! close:  | version | scheme | path | 1 | association id |
//! cookie: | version | scheme | path | 2 | association id | token (16) |
//! echo:   | version | scheme | path | 3 | association id | token (16) | engine bytes |
//! ```

/// Preamble bytes.
pub const PREAMBLE_BYTES: usize = 12;
pub const VERSION: u8 = 1;
/// Scheme byte of CloudBurst datagrams.
pub const SCHEME_CLOUDBURST: u8 = 1;
/// Scheme byte of TCP-in-UDP datagrams (TCP, DCTCP and CP over the runtime).
pub const SCHEME_TCP: u8 = 2;
/// Scheme byte of MPTCP sub-flow datagrams (MPTCP and FUSO over the runtime).
pub const SCHEME_MPTCP: u8 = 3;

/// Whether datagrams of `scheme` carry a TCP-in-UDP segment after the preamble.
pub fn carries_tcp_udp(scheme: u8) -> bool {
    scheme == SCHEME_TCP || scheme == SCHEME_MPTCP
}
/// Most paths per association (the path byte is checked against it before it indexes anything).
pub const MAX_PATHS: usize = 16;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Preamble {
    pub scheme: u8,
    pub path: u8,
    pub association: u64,
}

/// Bytes of an address-check token.
pub const TOKEN_BYTES: usize = 16;
pub type Token = [u8; TOKEN_BYTES];

/// What a control datagram says about its association.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Control<'a> {
    /// The client is gone: the server may free the association now rather than when it idles out.
    Close,
    /// Server to client: echo this token to open the association (the server holds nothing meanwhile).
    Cookie(Token),
    /// Client to server: the cookie's token, and the engine bytes of the datagram this one carries.
    Echo { token: Token, bytes: &'a [u8] },
}

impl Control<'_> {
    fn byte(&self) -> u8 {
        match self {
            Control::Close => 1,
            Control::Cookie(_) => 2,
            Control::Echo { .. } => 3,
        }
    }
}

impl Preamble {
    /// A control datagram: this preamble with `control`'s byte, then its body (the token, and an
    /// echo's engine bytes).
    pub fn write_control(&self, control: Control<'_>, out: &mut Vec<u8>) {
        out.extend_from_slice(&[VERSION, self.scheme, self.path, control.byte()]);
        out.extend_from_slice(&self.association.to_be_bytes());
        match control {
            Control::Close => {}
            Control::Cookie(token) => out.extend_from_slice(&token),
            Control::Echo { token, bytes } => {
                out.extend_from_slice(&token);
                out.extend_from_slice(bytes);
            }
        }
    }

    /// A control datagram's preamble and what it says; `None` for anything else (an engine
    /// datagram, an unknown control, a close with bytes after the preamble, a cookie of another
    /// length or an echo without its token).
    pub fn parse_control(bytes: &[u8]) -> Option<(Preamble, Control<'_>)> {
        let (head, body) = bytes.split_first_chunk::<PREAMBLE_BYTES>()?;
        if head[0] != VERSION || usize::from(head[2]) >= MAX_PATHS {
            return None;
        }
        let control = match head[3] {
            1 if body.is_empty() => Control::Close,
            2 => Control::Cookie(*<&Token>::try_from(body).ok()?),
            3 => {
                let (token, bytes) = body.split_first_chunk::<TOKEN_BYTES>()?;
                Control::Echo { token: *token, bytes }
            }
            _ => return None,
        };
        let mut id = [0u8; 8];
        id.copy_from_slice(&head[4..]);
        let p = Preamble {
            scheme: head[1],
            path: head[2],
            association: u64::from_be_bytes(id),
        };
        Some((p, control))
    }

    pub fn write(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&[VERSION, self.scheme, self.path, 0]);
        out.extend_from_slice(&self.association.to_be_bytes());
    }

    /// The preamble and the engine's bytes after it; `None` for anything this runtime did not send.
    pub fn parse(bytes: &[u8]) -> Option<(Preamble, &[u8])> {
        let (head, rest) = bytes.split_first_chunk::<PREAMBLE_BYTES>()?;
        if head[0] != VERSION || head[3] != 0 || usize::from(head[2]) >= MAX_PATHS {
            return None;
        }
        let mut id = [0u8; 8];
        id.copy_from_slice(&head[4..]);
        Some((
            Preamble {
                scheme: head[1],
                path: head[2],
                association: u64::from_be_bytes(id),
            },
            rest,
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preamble_round_trips_and_rejects_foreign_bytes() {
        let p = Preamble {
            scheme: SCHEME_CLOUDBURST,
            path: 3,
            association: 0x0102_0304_0506_0708,
        };
        let mut b = Vec::new();
        p.write(&mut b);
        b.extend_from_slice(b"xyz");
        assert_eq!(Preamble::parse(&b), Some((p, &b"xyz"[..])));
        assert_eq!(Preamble::parse(&b[..11]), None);
        let mut bad = b.clone();
        bad[0] = 2;
        assert_eq!(Preamble::parse(&bad), None);
        let mut bad = b.clone();
        bad[2] = MAX_PATHS as u8;
        assert_eq!(Preamble::parse(&bad), None);
        // Control datagrams are the preamble alone, and never taken for engine datagrams.
        assert_eq!(Preamble::parse_control(&b), None);
        let mut c = Vec::new();
        p.write_control(Control::Close, &mut c);
        assert_eq!(Preamble::parse_control(&c), Some((p, Control::Close)));
        assert_eq!(Preamble::parse(&c), None);
        c.push(0);
        assert_eq!(Preamble::parse_control(&c), None);
        // A cookie is exactly its token; an echo is its token and any engine bytes.
        let token = [9u8; TOKEN_BYTES];
        let mut k = Vec::new();
        p.write_control(Control::Cookie(token), &mut k);
        assert_eq!(k.len(), PREAMBLE_BYTES + TOKEN_BYTES);
        assert_eq!(Preamble::parse_control(&k), Some((p, Control::Cookie(token))));
        assert_eq!(Preamble::parse_control(&k[..k.len() - 1]), None);
        k.push(0);
        assert_eq!(Preamble::parse_control(&k), None);
        let mut e = Vec::new();
        p.write_control(Control::Echo { token, bytes: b"syn" }, &mut e);
        assert_eq!(
            Preamble::parse_control(&e),
            Some((
                p,
                Control::Echo {
                    token,
                    bytes: &b"syn"[..]
                }
            ))
        );
        assert_eq!(Preamble::parse(&e), None);
        assert_eq!(
            Preamble::parse_control(&e[..PREAMBLE_BYTES + TOKEN_BYTES - 1]),
            None
        );
        let mut unknown = Vec::new();
        p.write(&mut unknown);
        unknown[3] = 7;
        assert_eq!(Preamble::parse_control(&unknown), None);
    }
}
