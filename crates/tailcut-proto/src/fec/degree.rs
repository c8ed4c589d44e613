//! Degree distributions of the LT code (Luby, FOCS'02; CloudBurst Sec. III-A and IV-A).
//!
//! The paper recommends a fixed degree d = 5, but a fixed d > 1 never yields a degree-1 packet to start
//! decoding from and cannot cover K < d; the candidates here are measured in `docs/cloudburst.md`.

use rand::Rng as _;
use serde::{Deserialize, Serialize};

/// Largest degree of the coded (non-source) packets of [`DegreeDist::Systematic`] and of the capped
/// ideal soliton: the paper's d = 5.
pub const SYSTEMATIC_MAX_DEGREE: u32 = 5;

/// How many source packets a coded packet XORs.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DegreeDist {
    /// Every packet has degree min(d, K) (the paper's literal "d = 5").
    Fixed { d: u32 },
    /// Robust soliton (Luby 2002, Def. 11) with parameters c and delta.
    RobustSoliton { c: f64, delta: f64 },
    /// Ideal soliton (rho(1) = 1/K, rho(i) = 1/(i(i-1))) truncated at `max` with the tail mass on `max`.
    CappedSoliton { max: u32 },
    /// The K source packets first (degree 1, in order), then coded packets from the capped ideal
    /// soliton with cap [`SYSTEMATIC_MAX_DEGREE`].
    Systematic,
    /// The K source packets first, then coded packets whose set is uniform over the non-empty subsets
    /// (a random linear code over GF(2): any K + a few received packets decode). The default.
    #[default]
    SystematicRandom,
}

impl DegreeDist {
    /// Whether the first K packets are the source packets themselves.
    pub fn is_systematic(&self) -> bool {
        matches!(self, DegreeDist::Systematic | DegreeDist::SystematicRandom)
    }
}

impl DegreeDist {
    /// Cumulative distribution over degrees 1..=k (index i holds P(d <= i + 1)); empty for `Fixed`.
    pub(crate) fn cdf(&self, k: u32) -> Vec<f64> {
        let k = k.max(1) as usize;
        let mut p = vec![0.0f64; k];
        match *self {
            DegreeDist::Fixed { .. } | DegreeDist::SystematicRandom => return Vec::new(),
            DegreeDist::RobustSoliton { c, delta } => {
                let kf = k as f64;
                let s = (c * (kf / delta).ln() * kf.sqrt()).max(1.0);
                let spike = ((kf / s).floor() as usize).clamp(1, k);
                for (i, pi) in p.iter_mut().enumerate() {
                    let d = (i + 1) as f64;
                    let rho = if i == 0 { 1.0 / kf } else { 1.0 / (d * (d - 1.0)) };
                    let tau = if i + 1 < spike {
                        s / (kf * d)
                    } else if i + 1 == spike {
                        s * (s / delta).ln().max(0.0) / kf
                    } else {
                        0.0
                    };
                    *pi = rho + tau;
                }
            }
            DegreeDist::CappedSoliton { max } => capped_soliton(&mut p, k, max),
            DegreeDist::Systematic => capped_soliton(&mut p, k, SYSTEMATIC_MAX_DEGREE),
        }
        let total: f64 = p.iter().sum();
        let mut acc = 0.0;
        for v in p.iter_mut() {
            acc += *v / total;
            *v = acc;
        }
        if let Some(last) = p.last_mut() {
            *last = 1.0;
        }
        p
    }

    /// Draws a degree in 1..=k using a CDF from [`DegreeDist::cdf`].
    pub(crate) fn sample(&self, k: u32, cdf: &[f64], rng: &mut crate::rng::Rng) -> u32 {
        if let DegreeDist::Fixed { d } = *self {
            return d.clamp(1, k.max(1));
        }
        let u: f64 = rng.random();
        cdf.iter().position(|&c| u < c).map_or(k, |i| i as u32 + 1)
    }
}

fn capped_soliton(p: &mut [f64], k: usize, max: u32) {
    let cap = (max.max(1) as usize).min(k);
    for (i, pi) in p.iter_mut().enumerate().take(cap) {
        let d = (i + 1) as f64;
        *pi = if i == 0 {
            1.0 / k as f64
        } else {
            1.0 / (d * (d - 1.0))
        };
    }
    // The ideal soliton's mass above the cap goes to the cap.
    let head: f64 = p.iter().take(cap).sum();
    if cap < k {
        p[cap - 1] += (1.0 - head).max(0.0);
    }
}
