//! DCQUIC tail FEC's receive side on what a misbehaving peer may send: repair datagrams as raw bytes
//! (the path of `DcquicEngine::repairs_in`), stream data at any offset, and framing. It never panics
//! and never holds more than `Limits::max_held_bytes` (`docs/dcquic.md`, "Limits").
//!
//! Input: bytes 0..2 pick the config's `tail_fec_packets` and MPS; then records of `[op, a, b, len]`
//! followed by `len` bytes: a datagram, stream data at offset `a, b` (scaled), or a framed length.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::dcquic::tailfec::{Limits, RepairHeader, TailRecv};
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

fuzz_target!(|data: &[u8]| {
    let Some((cfg, mut rest)) = data.split_first_chunk::<3>() else {
        return;
    };
    let k = 1 + (cfg[0] % 64) as u32;
    let mps = (1200 + u16::from_le_bytes([cfg[1], cfg[2]]) as u32 % (65_527 - 1200 + 1)) as u16;
    let limits = Limits::new(k, mps);
    let base = reset_peak();
    {
        let mut r = TailRecv::new(limits);
        let mut scratch = Vec::new();
        while let Some((rec, tail)) = rest.split_first_chunk::<4>() {
            let n = (rec[3] as usize).min(tail.len());
            let (body, tail) = tail.split_at(n);
            rest = tail;
            let at = u16::from_le_bytes([rec[1], rec[2]]) as u64;
            match rec[0] % 4 {
                0 => {
                    if let Some((h, piece)) = RepairHeader::decode(body) {
                        if r.add_repair(h, piece) && !r.has_window() {
                            r.set_window(h.len, h.tail_start());
                        }
                    }
                }
                1 => r.add_data(at << (rec[0] >> 3), body),
                2 => {
                    let len = at << (rec[0] >> 3);
                    r.set_window(len, len.saturating_sub(k as u64 * body.len() as u64 * 64));
                }
                _ => {
                    let _ = r.try_recover(at << (rec[0] >> 3), &mut scratch);
                }
            }
            assert!(r.held_bytes() <= limits.max_held_bytes());
        }
    }
    // The state, plus the scratch parity (one chunk) and slack for the range lists' growth.
    check_peak(
        base,
        limits.max_held_bytes() + 2 * mps as usize,
        "tail FEC receive",
    );
});
