//! The bytes that byte-exact checks put in a message (the two-engine harness, the simulator's
//! `check_bytes` mode): a stream seeded by the message id, so a byte lost, moved or taken from
//! another message shows.

use crate::engine::MsgId;

/// Appends the `len` bytes of message `msg` to `out`.
pub fn message_pattern(msg: MsgId, len: u64, out: &mut Vec<u8>) {
    let mut x = msg.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    out.extend((0..len).map(|_| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        (x >> 24) as u8
    }));
}

/// Whether `data` is message `msg`'s pattern of `len` bytes.
pub fn is_message_pattern(msg: MsgId, len: u64, data: &[u8]) -> bool {
    let mut want = Vec::with_capacity(len as usize);
    message_pattern(msg, len, &mut want);
    want == data
}
