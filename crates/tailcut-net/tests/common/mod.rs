//! What the runtime's integration tests share: a checkable response, and waiting for counters.
#![allow(dead_code)]

use tailcut_net::{Server, ServerStats};

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
/// responses that prove the work was done.
pub fn eventually<T>(read: impl Fn() -> T, ok: impl Fn(&T) -> bool) -> T {
    for _ in 0..500 {
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
