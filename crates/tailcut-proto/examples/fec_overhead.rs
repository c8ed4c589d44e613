//! Coding overhead of the LT degree distributions (docs/cloudburst.md, "Degree distribution").
//!
//! `cargo run --release -p tailcut-proto --example fec_overhead`
//!
//! For each K and loss rate: packets sent / K and packets received / K until the decoder finishes,
//! averaged over 300 seeds (RaptorQ: 100 seeds, 8-byte symbols). Fixed d = 5 cannot decode
//! 2 <= K <= 5 ("-").

use rand::{Rng as _, SeedableRng};
use tailcut_proto::fec::{
    DegreeDist, LtDecoder, LtEncoder, NoBytes, Progress, RaptorqDecoder, RaptorqEncoder,
};
use tailcut_proto::rng::Rng;

fn overhead(k: u32, dist: DegreeDist, loss: f64, runs: u64) -> (f64, f64) {
    let (mut sent, mut recv) = (0u64, 0u64);
    for s in 0..runs {
        let enc = LtEncoder::new(k, dist, s);
        let mut dec = LtDecoder::<NoBytes>::new(k);
        let mut r = Rng::seed_from_u64(s ^ 0x55);
        let mut i = 0;
        loop {
            let m = enc.mask(i);
            i += 1;
            if r.random::<f64>() < loss {
                continue;
            }
            if dec.add(m, NoBytes) == Progress::Decoded {
                break;
            }
        }
        sent += i;
        recv += dec.received() as u64;
    }
    let n = (runs * k as u64) as f64;
    (sent as f64 / n, recv as f64 / n)
}

/// The same for RaptorQ (RFC 6330), through the codec's byte decoder on 8-byte symbols.
fn raptorq_overhead(k: u32, loss: f64, runs: u64) -> (f64, f64) {
    let (mut sent, mut recv) = (0u64, 0u64);
    for s in 0..runs {
        let mut r = Rng::seed_from_u64(s ^ 0x55);
        let msg: Vec<u8> = (0..k * 8).map(|_| r.random()).collect();
        let enc = RaptorqEncoder::new(&msg, 8);
        let mut dec = RaptorqDecoder::new(msg.len(), 8);
        let mut i = 0;
        loop {
            let (esi, data) = enc.symbol(i);
            i += 1;
            if r.random::<f64>() < loss {
                continue;
            }
            recv += 1;
            if let Some(m) = dec.add(esi, data) {
                assert_eq!(m, &msg[..]);
                break;
            }
        }
        sent += i as u64;
    }
    let n = (runs * k as u64) as f64;
    (sent as f64 / n, recv as f64 / n)
}

fn main() {
    let dists = [
        ("systematic_random", DegreeDist::SystematicRandom),
        ("systematic", DegreeDist::Systematic),
        ("capped_soliton5", DegreeDist::CappedSoliton { max: 5 }),
        (
            "robust(0.1,0.5)",
            DegreeDist::RobustSoliton { c: 0.1, delta: 0.5 },
        ),
        ("fixed5", DegreeDist::Fixed { d: 5 }),
    ];
    println!("sent/K and received/K until decoded, mean of 300 runs");
    for loss in [0.0, 0.1, 0.2] {
        println!("loss {loss}");
        print!("{:>6}", "K");
        for (name, _) in dists {
            print!(" {name:>19}");
        }
        println!(" {:>19}", "raptorq");
        for k in [1u32, 2, 4, 8, 16, 32, 64] {
            print!("{k:>6}");
            for (_, d) in dists {
                if d == (DegreeDist::Fixed { d: 5 }) && (2..=5).contains(&k) {
                    print!(" {:>19}", "-");
                    continue;
                }
                let (s, r) = overhead(k, d, loss, 300);
                print!(" {:>19}", format!("{s:.3}/{r:.3}"));
            }
            let (s, r) = raptorq_overhead(k, loss, 100);
            println!(" {:>19}", format!("{s:.3}/{r:.3}"));
        }
    }
}
