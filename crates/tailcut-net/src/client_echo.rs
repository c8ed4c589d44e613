//! A client's side of the server's address check (`address_check.rs`): the token each lane's
//! datagrams echo until the server answers, and the association's first datagram, kept to repeat with
//! the token as soon as a cookie comes (the server opens nothing until then). A server's driver keeps
//! it empty.

use std::net::SocketAddr;
use tailcut_proto::wire::preamble::Token;

/// The association's first datagram: (lane, socket, destination, the engine's bytes).
type First = (usize, usize, SocketAddr, Vec<u8>);

#[derive(Default)]
pub struct ClientEcho {
    /// Per lane: a token is bound to the source address it was made for, so each socket of a
    /// multipath client has its own.
    tokens: Vec<Option<Token>>,
    /// Keep the association's first datagram (schemes with the preamble, where the cookie applies).
    keep_first: bool,
    /// One datagram per association, the opener (a SYN, a coded packet).
    first: Option<First>,
}

impl ClientEcho {
    pub fn new(lanes: usize) -> ClientEcho {
        ClientEcho {
            tokens: vec![None; lanes],
            ..ClientEcho::default()
        }
    }

    /// The token lane `lane`'s datagrams echo, if its server asked for one.
    pub fn token(&self, lane: usize) -> Option<Token> {
        self.tokens.get(lane).copied().flatten()
    }

    /// The server's token came to socket `k`.
    pub fn set(&mut self, k: usize, token: Token) {
        if let Some(t) = self.tokens.get_mut(k) {
            *t = Some(token);
        }
    }

    /// A datagram of the association was built: kept if it is the first and the association keeps it.
    pub fn sent(&mut self, lane: usize, sock: usize, to: SocketAddr, bytes: &[u8]) {
        if self.keep_first && self.first.is_none() {
            self.first = Some((lane, sock, to, bytes.to_vec()));
        }
    }

    /// The first datagram if it left by socket `k`: (lane, destination, the engine's bytes).
    pub fn first_on(&self, k: usize) -> Option<(usize, SocketAddr, &[u8])> {
        match &self.first {
            Some((lane, sock, to, bytes)) if *sock == k => Some((*lane, *to, bytes)),
            _ => None,
        }
    }

    /// The server answered: the association is open there, datagrams go plain, and nothing more is
    /// kept.
    pub fn heard(&mut self) {
        self.tokens.fill(None);
        self.keep_first = false;
        self.first = None;
    }

    /// A new association: keep its first datagram if `keep_first`, echo nothing yet.
    pub fn new_association(&mut self, keep_first: bool) {
        self.heard();
        self.keep_first = keep_first;
    }
}
