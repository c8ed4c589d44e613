//! Loss models of one direction of a link (applied as a packet leaves the port onto the wire).

use rand::Rng as _;
use serde::{Deserialize, Serialize};
use tailcut_proto::rng::Rng;

/// Packet loss on one direction of a link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum LossConfig {
    #[default]
    None,
    /// Independent loss with probability `p` per packet.
    Bernoulli {
        /// Loss probability of each packet, in [0, 1].
        p: f64,
    },
    /// Gilbert-Elliott two-state bursty loss: from Good go Bad with `p_good_to_bad`, from Bad go Good
    /// with `p_bad_to_good` (per packet); a packet is lost with `loss_good` / `loss_bad` in each state.
    /// Mean burst length is 1 / `p_bad_to_good` packets.
    GilbertElliott {
        /// Per-packet probability of going from Good to Bad.
        p_good_to_bad: f64,
        /// Per-packet probability of going from Bad to Good.
        p_bad_to_good: f64,
        /// Loss probability in the Good state.
        #[serde(default)]
        loss_good: f64,
        /// Loss probability in the Bad state.
        #[serde(default = "one")]
        loss_bad: f64,
    },
    /// Silently drops every packet while routing still uses the link (a black hole).
    Blackhole,
}

fn one() -> f64 {
    1.0
}

impl LossConfig {
    /// Checks the probabilities; the error's path is the field (relative to the model's table).
    pub fn validate(&self) -> Result<(), tailcut_proto::ConfigError> {
        let prob = |name: &str, v: f64| {
            if (0.0..=1.0).contains(&v) {
                Ok(())
            } else {
                Err(tailcut_proto::ConfigError::new(
                    name,
                    format!("must be a probability in [0, 1], got {v}"),
                ))
            }
        };
        match *self {
            LossConfig::Bernoulli { p } => prob("p", p),
            LossConfig::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                prob("p_good_to_bad", p_good_to_bad)?;
                prob("p_bad_to_good", p_bad_to_good)?;
                prob("loss_good", loss_good)?;
                prob("loss_bad", loss_bad)
            }
            _ => Ok(()),
        }
    }
}

/// A loss model with its state.
#[derive(Clone, Debug, Default)]
pub struct LossModel {
    pub config: LossConfig,
    bad: bool,
}

impl LossModel {
    pub fn new(config: LossConfig) -> LossModel {
        LossModel { config, bad: false }
    }

    /// Whether the next packet is lost. Draws from `rng` only when the model is random, so lossless links
    /// leave every random stream untouched.
    #[inline(always)]
    pub fn lose(&mut self, rng: &mut Rng) -> bool {
        // Every transmission asks: the lossless case is decided inline, the others out of line.
        match self.config {
            LossConfig::None => false,
            _ => self.lose_lossy(rng),
        }
    }

    fn lose_lossy(&mut self, rng: &mut Rng) -> bool {
        match self.config {
            LossConfig::None => false,
            LossConfig::Blackhole => true,
            LossConfig::Bernoulli { p } => rng.random::<f64>() < p,
            LossConfig::GilbertElliott {
                p_good_to_bad,
                p_bad_to_good,
                loss_good,
                loss_bad,
            } => {
                let flip = rng.random::<f64>();
                if self.bad {
                    if flip < p_bad_to_good {
                        self.bad = false;
                    }
                } else if flip < p_good_to_bad {
                    self.bad = true;
                }
                let p = if self.bad { loss_bad } else { loss_good };
                rng.random::<f64>() < p
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tailcut_proto::rng::{stream, Stream};

    #[test]
    fn bernoulli_rate_and_gilbert_elliott_bursts() {
        let mut r = stream(3, Stream::Link, 0);
        let mut m = LossModel::new(LossConfig::Bernoulli { p: 0.01 });
        let lost = (0..200_000).filter(|_| m.lose(&mut r)).count();
        assert!((1700..2300).contains(&lost), "{lost}");

        // Mean burst 1 / 0.25 = 4 packets, stationary bad share 0.01 / (0.01 + 0.25).
        let mut m = LossModel::new(LossConfig::GilbertElliott {
            p_good_to_bad: 0.01,
            p_bad_to_good: 0.25,
            loss_good: 0.0,
            loss_bad: 1.0,
        });
        let seq: Vec<bool> = (0..400_000).map(|_| m.lose(&mut r)).collect();
        let lost = seq.iter().filter(|&&x| x).count() as f64;
        let bursts = seq.windows(2).filter(|w| !w[0] && w[1]).count() as f64;
        let share = lost / seq.len() as f64;
        assert!((share - 0.01 / 0.26).abs() < 0.005, "{share}");
        assert!((lost / bursts - 4.0).abs() < 0.4, "{}", lost / bursts);
    }
}
