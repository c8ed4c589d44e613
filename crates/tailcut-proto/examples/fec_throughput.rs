//! Codec throughput (docs/cloudburst.md, "Codec throughput").
//!
//! `cargo run --release -p tailcut-proto --example fec_throughput`
//!
//! Encode: building coded packets from the source packets (1460-byte symbols). Decode: feeding the
//! packets a receiver gets at 10% loss to the decoder until it finishes, including back substitution.
//! MB/s counts message bytes (K x 1460) per second of CPU time.

// A benchmark measures wall time; engines never do.
#![allow(clippy::disallowed_methods)]

use rand::{Rng as _, SeedableRng};
use std::hint::black_box;
use std::time::Instant;
use tailcut_proto::fec::{
    split_message, ByteSymbol, DegreeDist, LtDecoder, LtEncoder, Progress, RaptorqDecoder, RaptorqEncoder,
};
use tailcut_proto::rng::Rng;

const SYM: usize = 1460;

/// RaptorQ (RFC 6330, `raptorq` crate): encoder construction plus 1.5 K packets; decode from the
/// packets kept at 10% loss.
fn raptorq(k: usize) {
    let mut r = Rng::seed_from_u64(k as u64);
    let msg: Vec<u8> = (0..k * SYM).map(|_| r.random()).collect();
    let reps = (2_000 / k).max(20);
    let n = (3 * k / 2) as u32;
    let t = Instant::now();
    let mut kept = Vec::new();
    for _ in 0..reps {
        let enc = RaptorqEncoder::new(&msg, SYM as u16);
        kept.clear();
        for i in 0..n {
            let s = enc.symbol(i);
            if r.random::<f64>() >= 0.1 {
                kept.push(s);
            }
        }
    }
    let enc_s = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for _ in 0..reps {
        let mut dec = RaptorqDecoder::new(msg.len(), SYM as u16);
        let mut done = false;
        for (id, d) in &kept {
            if dec.add(*id, d.clone()).is_some() {
                done = true;
                break;
            }
        }
        assert!(done);
    }
    let dec_s = t.elapsed().as_secs_f64();
    let mb = (reps * k * SYM) as f64 / 1e6;
    println!(
        "RaptorQ K={k:2}: encode {:8.0} MB/s (of message, {n} coded pkts/msg), decode {:8.0} MB/s",
        mb / enc_s,
        mb / dec_s
    );
}

fn main() {
    for k in [4usize, 16, 64] {
        raptorq(k);
    }
    for dist in [
        DegreeDist::SystematicRandom,
        DegreeDist::Systematic,
        DegreeDist::Fixed { d: 5 },
    ] {
        for k in [4usize, 16, 64] {
            if dist == (DegreeDist::Fixed { d: 5 }) && k <= 5 {
                continue;
            }
            let mut r = Rng::seed_from_u64(k as u64);
            let msg: Vec<u8> = (0..k * SYM).map(|_| r.random()).collect();
            let src = split_message(&msg, SYM);
            let reps = (20_000 / k).max(50);
            // Encode: 1.5 K coded packets per message (about the paper's coding rate).
            let n_coded = (3 * k / 2) as u64;
            let t = Instant::now();
            for rep in 0..reps {
                let enc = LtEncoder::new(k as u32, dist, rep as u64);
                for i in 0..n_coded {
                    black_box(LtEncoder::encode(enc.mask(i), &src));
                }
            }
            let enc_s = t.elapsed().as_secs_f64();
            // Decode: pre-build the received packets, then time the decoder alone.
            let mut inputs: Vec<Vec<(u64, ByteSymbol)>> = Vec::new();
            for rep in 0..reps.min(200) {
                let enc = LtEncoder::new(k as u32, dist, rep as u64);
                let mut v = Vec::new();
                let mut i = 0;
                let mut probe = LtDecoder::<tailcut_proto::fec::NoBytes>::new(k as u32);
                loop {
                    let m = enc.mask(i);
                    i += 1;
                    if r.random::<f64>() < 0.1 {
                        continue;
                    }
                    v.push((m, LtEncoder::encode(m, &src).expect("in range")));
                    if probe.add(m, tailcut_proto::fec::NoBytes) == Progress::Decoded {
                        break;
                    }
                }
                inputs.push(v);
            }
            let t = Instant::now();
            let mut decoded = 0usize;
            for rep in 0..reps {
                let mut dec = LtDecoder::<ByteSymbol>::new(k as u32);
                for (m, y) in &inputs[rep % inputs.len()] {
                    dec.add(*m, y.clone());
                }
                decoded += black_box(dec.into_symbols()).is_some() as usize;
            }
            let dec_s = t.elapsed().as_secs_f64();
            assert_eq!(decoded, reps);
            let mb = (reps * k * SYM) as f64 / 1e6;
            println!(
                "{dist:?} K={k:2}: encode {:8.0} MB/s (of message, {n_coded} coded pkts/msg), decode {:8.0} MB/s",
                mb / enc_s,
                mb / dec_s
            );
        }
    }
}
