//! What the runtime's integration tests share: a checkable response, and waiting for counters.
#![allow(dead_code)]

use serde_json::{json, Value};
use std::collections::HashMap;
use std::net::{SocketAddr, UdpSocket};
use tailcut_net::frame::{Control, Preamble, Token, SCHEME_CLOUDBURST};
use tailcut_net::tls::TlsConfig;
use tailcut_net::{Client, ClientStats, NetConfig, SendLoss, Server, ServerStats};
use tailcut_proto::cloudburst::{Block, CbHeader, Kind};

pub const LOOPBACK: &str = "127.0.0.1:0";

/// The response is a function of the request the client can check: the request reversed, then its
/// length, so a response paired with the wrong request or cut short fails.
pub fn answer(req: &[u8], out: &mut Vec<u8>) {
    out.extend(req.iter().rev());
    out.extend_from_slice(&(req.len() as u32).to_be_bytes());
}

pub fn expected(req: &[u8]) -> Vec<u8> {
    let mut v = Vec::new();
    answer(req, &mut v);
    v
}

/// `scheme` with timers for a shared, loaded machine and datacenter TCP: CloudBurst gives a message
/// up for good at its transmission timeout, so 1 s (and a 100 ms decoder timeout) survives a runtime
/// thread descheduled for hundreds of milliseconds (in CI beside other test binaries, 100 ms failed
/// calls); a 5 ms minimum RTO makes a lost TCP tail cost milliseconds, not Linux's 200; three
/// sub-flows for the multipath schemes; a generated certificate for DCQUIC.
pub fn loaded_machine_config(scheme: &str) -> NetConfig {
    loaded_machine_config_with(scheme, json!({}))
}

/// [`loaded_machine_config`] with more of the scheme's `params` (an experiment entry's keys).
pub fn loaded_machine_config_with(scheme: &str, more: Value) -> NetConfig {
    let mut params = match scheme {
        "cloudburst" => json!({"transmission_timeout": "1s", "decoder_timeout": "100ms"}),
        "mptcp" | "fuso" => json!({"min_rto": "5ms", "initial_rto": "20ms", "subflows": 3}),
        "dcquic" => json!({}),
        _ => json!({"min_rto": "5ms", "initial_rto": "20ms"}),
    };
    if let (Some(p), Value::Object(m)) = (params.as_object_mut(), more) {
        p.extend(m);
    }
    let mut cfg = NetConfig::default()
        .scheme_json(scheme, params)
        .unwrap_or_else(|e| panic!("{scheme}: {e}"));
    if scheme == "dcquic" {
        cfg.tls = TlsConfig::generate(&["localhost".into()]).unwrap().0;
    }
    cfg
}

/// One coded CloudBurst datagram that decodes alone into a request of call `call` (k = 1, LT's
/// set {0} is the source symbol itself), as association `association`'s client would send it.
pub fn one_packet_request(cfg: &NetConfig, association: u64, call: u64, body: &[u8]) -> Vec<u8> {
    let ecfg = cfg.engine_config();
    let mut msg = call.to_be_bytes().to_vec();
    msg.extend_from_slice(body);
    let mut d = Vec::new();
    Preamble {
        scheme: SCHEME_CLOUDBURST,
        path: 0,
        association,
    }
    .write(&mut d);
    CbHeader {
        packets: 1,
        message_bytes: msg.len() as u32,
        msg_id: call as u8,
        kind: Kind::Coded { set: 1 },
        block: Block::ONLY,
    }
    .emit_to_vec(ecfg.layout(), &mut d);
    msg.resize(ecfg.symbol_bytes as usize, 0);
    d.extend_from_slice(&msg);
    d
}

/// Waits (boundedly) until counters satisfy `ok`: a runtime thread publishes them a moment after the
/// responses that prove the work was done. The bound (60 s) is only reached by a failing test: on a
/// loaded machine a runtime thread can be descheduled for seconds.
pub fn eventually<T>(read: impl Fn() -> T, ok: impl Fn(&T) -> bool) -> T {
    eventually_within(60_000, read, ok)
}

/// [`eventually`] with a bound of `ms` milliseconds, for a test that goes on when it is reached.
pub fn eventually_within<T>(ms: u64, read: impl Fn() -> T, ok: impl Fn(&T) -> bool) -> T {
    for _ in 0..ms.div_ceil(10) {
        let st = read();
        if ok(&st) {
            return st;
        }
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    read()
}

pub fn settled(s: &Server, ok: impl Fn(&ServerStats) -> bool) -> ServerStats {
    eventually(|| s.stats(), ok)
}

/// The send hook that drops 2%, duplicates 2% and reorders 2% of a side's datagrams.
pub fn faults(seed: u64) -> Option<SendLoss> {
    Some(SendLoss {
        rate: 0.02,
        seed,
        path: None,
        duplicate: 0.02,
        reorder: 0.02,
        after: 0,
    })
}

/// `n` calls of `request(i)` from a client to an [`answer`] server, `cfg` on both ends with each
/// side's send hook (`hook(1)` the server's, `hook(2)` the client's); every response checked. Returns
/// both ends' counters once each has counted every call, and the requests' bytes sent again
/// (retransmitted or redundant).
pub fn calls_through(
    cfg: &NetConfig,
    hook: impl Fn(u64) -> Option<SendLoss>,
    n: u64,
    request: impl Fn(u64) -> Vec<u8>,
) -> (ServerStats, ClientStats, u64) {
    let scheme = cfg.scheme.transport;
    let with = |seed| NetConfig {
        send_loss: hook(seed),
        ..cfg.clone()
    };
    let s = Server::bind(LOOPBACK.parse().unwrap(), with(1), answer).unwrap();
    let c = Client::connect(s.local_addr(), with(2)).unwrap();
    let mut resent = 0;
    for i in 0..n {
        let req = request(i);
        let r = c.call(&req).unwrap_or_else(|e| {
            panic!(
                "{scheme:?} call {i} ({} B): {e}\n{:?}\n{:?}",
                req.len(),
                c.stats(),
                s.stats()
            )
        });
        assert_eq!(r.bytes, expected(&req), "{scheme:?} call {i}");
        resent += r.stats.request.retransmitted_bytes + r.stats.request.redundant_bytes;
    }
    let ss = settled(&s, |st| st.requests == n);
    let cs = eventually(|| c.stats(), |st| st.calls_completed == n);
    assert_eq!(ss.requests, n, "{scheme:?}\n{ss:?}\n{cs:?}");
    assert_eq!((cs.calls_completed, cs.calls_timed_out), (n, 0), "{scheme:?}");
    (ss, cs, resent)
}

/// Waits (at least a minute of sleeps) until the server has taken `sent` datagrams; panics if it
/// never does.
pub fn taken(s: &Server, sent: u64) {
    for _ in 0..300_000 {
        if s.stats().datagrams_in >= sent {
            return;
        }
        std::thread::sleep(std::time::Duration::from_micros(200));
    }
    panic!("the server took {} of {sent} datagrams", s.stats().datagrams_in);
}

/// A raw UDP peer that passes a loaded server's address check as a client does: it keeps the
/// cookies the server sends it and echoes them on its later datagrams of that association.
pub struct RawPeer {
    pub sock: UdpSocket,
    tokens: HashMap<u64, Token>,
}

impl RawPeer {
    pub fn bind() -> RawPeer {
        let sock = UdpSocket::bind(LOOPBACK).unwrap();
        sock.set_nonblocking(true).unwrap();
        RawPeer {
            sock,
            tokens: HashMap::new(),
        }
    }

    /// Sends the engine datagram `datagram` (its preamble first), wrapped in an echo if the server
    /// gave its association a cookie.
    pub fn send(&mut self, datagram: &[u8], to: SocketAddr) {
        self.absorb();
        let (p, rest) = Preamble::parse(datagram).expect("an engine datagram");
        let mut d = Vec::new();
        match self.tokens.get(&p.association) {
            Some(&token) => p.write_control(Control::Echo { token, bytes: rest }, &mut d),
            None => d.extend_from_slice(datagram),
        }
        self.sock.send_to(&d, to).unwrap();
    }

    /// Reads every datagram waiting, keeping the cookies' tokens.
    pub fn absorb(&mut self) {
        let mut b = vec![0u8; 65_536];
        while let Ok((n, _)) = self.sock.recv_from(&mut b) {
            if let Some((p, Control::Cookie(t))) = Preamble::parse_control(&b[..n]) {
                self.tokens.insert(p.association, t);
            }
        }
    }

    /// Sends `datagram` until the server has opened more than `opened` associations (a loaded
    /// server first answers with a cookie, which the next send echoes). Each send waits until the
    /// server took it, so none is left over to arrive after the association opened.
    pub fn open(&mut self, datagram: &[u8], s: &Server, opened: u64) {
        let association = Preamble::parse(datagram)
            .expect("an engine datagram")
            .0
            .association;
        for _ in 0..50 {
            let taken = s.stats().datagrams_in;
            self.send(datagram, s.local_addr());
            let st = eventually(|| s.stats(), |st| st.datagrams_in > taken);
            if st.associations_opened > opened {
                return;
            }
            for _ in 0..100 {
                self.absorb();
                if self.tokens.contains_key(&association) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(10));
            }
        }
        panic!("the server never opened the association: {:?}", s.stats());
    }
}
