//! What the runtime's integration tests share: a checkable response, and waiting for counters.
#![allow(dead_code)]

use tailcut_net::{Client, ClientStats, NetConfig, SendLoss, Server, ServerStats};

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

/// Waits (boundedly) until counters satisfy `ok`: a runtime thread publishes them a moment after the
/// responses that prove the work was done. The bound (60 s) is only reached by a failing test: on a
/// loaded machine a runtime thread can be descheduled for seconds.
pub fn eventually<T>(read: impl Fn() -> T, ok: impl Fn(&T) -> bool) -> T {
    for _ in 0..6_000 {
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
    let scheme = cfg.scheme;
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
