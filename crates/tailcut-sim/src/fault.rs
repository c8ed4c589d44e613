//! Faults: per-link per-direction loss (Bernoulli, Gilbert-Elliott, black hole), link down/up and rate
//! degradation at scheduled times, and "make a fraction of links lossy with rates drawn from a
//! distribution, at given tiers" (FUSO Sec. 5.3).

use crate::limits;
use crate::net::link::LossConfig;
use crate::net::Network;
use crate::workload::EmpiricalCdf;
use rand::Rng as _;
use serde::{Deserialize, Serialize};
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::units::Rate;
use tailcut_proto::{ConfigError, Dur};

/// A link, named by its two end nodes (and which of several parallel links).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct LinkRef {
    /// The two end nodes, e.g. `["tor0", "tor1"]`; the forward direction is from the first to the
    /// second.
    pub between: [String; 2],
    /// Which of several parallel links between the two nodes (0 = first).
    #[serde(default)]
    pub index: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum Direction {
    #[default]
    Both,
    Forward,
    Backward,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum FaultConfig {
    /// Apply a loss model to a link from `at` (until `until`, if given).
    Loss {
        /// The link.
        link: LinkRef,
        /// Which direction: `both`, `forward` (from the first node to the second) or `backward`.
        #[serde(default)]
        direction: Direction,
        /// The loss model.
        model: LossConfig,
        /// Time the fault starts.
        #[serde(default)]
        at: Dur,
        /// Time the fault ends. Default: never.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<Dur>,
    },
    /// Take a link down at `at` (and up again at `until`). Routing reconverges at once around a down
    /// link (use a `blackhole` loss model for a failure routing does not see).
    LinkDown {
        /// The link.
        link: LinkRef,
        /// Time the fault starts.
        #[serde(default)]
        at: Dur,
        /// Time the fault ends. Default: never.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<Dur>,
    },
    /// Change a link's rate (both directions) at `at` (restored at `until`).
    Degrade {
        /// The link.
        link: LinkRef,
        /// The link's rate while degraded.
        rate: Rate,
        /// Time the fault starts.
        #[serde(default)]
        at: Dur,
        /// Time the fault ends. Default: never.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<Dur>,
    },
    /// Add `extra` to a link's propagation delay from `at` (until `until`): congestion or a failing
    /// switch on that path (DCQUIC Sec. 4.3's network damage simulator). Packets already on the wire
    /// keep their arrival time.
    Delay {
        /// The link.
        link: LinkRef,
        /// Which direction: `both`, `forward` (from the first node to the second) or `backward`.
        #[serde(default)]
        direction: Direction,
        /// Delay added to the link's propagation delay.
        extra: Dur,
        /// Time the fault starts.
        #[serde(default)]
        at: Dur,
        /// Time the fault ends. Default: never.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        until: Option<Dur>,
    },
    /// Make `fraction` of the links in `tiers` lossy (both directions), each with a Bernoulli loss rate
    /// drawn from `rates` (a distribution file or builtin name, e.g. "fuso-loss"). Lossy links are
    /// placed in tier i with probability `tier_weights[i]` (uniform if absent), uniformly within the tier.
    RandomLossyLinks {
        /// Fraction of the links in `tiers` made lossy, in [0, 1].
        fraction: f64,
        /// Link tiers to pick from (0 = host links, 1 = ToR/leaf uplinks, 2 = aggregation-core).
        tiers: Vec<u8>,
        /// Probability of placing a lossy link in each of `tiers`. Default: uniform.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        tier_weights: Option<Vec<f64>>,
        /// Distribution of the loss rates: builtin "fuso-loss" or a two-column file, relative to the
        /// experiment file's folder.
        #[serde(default = "fuso_loss")]
        rates: String,
    },
}

fn fuso_loss() -> String {
    "fuso-loss".into()
}

/// A state change applied at a time.
#[derive(Clone, Debug)]
pub enum FaultAction {
    SetLoss { port: u32, model: LossConfig },
    SetUp { link_ports: [u32; 2], up: bool },
    SetRate { link_ports: [u32; 2], rate_bps: u64 },
    SetDelay { port: u32, delay: Dur },
}

/// Resolves a link reference to its two ports (forward, backward).
pub fn resolve(net: &Network, l: &LinkRef) -> Result<[u32; 2], ConfigError> {
    let find = |name: &str| {
        net.nodes.iter().position(|n| n.name == name).ok_or_else(|| {
            // Name the valid nodes: built-in topologies name theirs by rule (docs/experiment-file.md).
            let valid = crate::topo::describe_node_names(net.nodes.iter().map(|n| n.name.as_str()));
            ConfigError::new(
                "link.between",
                format!("unknown node '{name}' (the topology's nodes: {valid})"),
            )
        })
    };
    let (a, b) = (find(&l.between[0])? as u32, find(&l.between[1])? as u32);
    let fwd: Vec<u32> = net.nodes[a as usize]
        .ports
        .iter()
        .copied()
        .filter(|&p| net.ports[p as usize].peer == b)
        .collect();
    let p = *fwd.get(l.index as usize).ok_or_else(|| {
        ConfigError::new(
            "link.index",
            format!(
                "{} links join '{}' and '{}', index {} is out of range",
                fwd.len(),
                l.between[0],
                l.between[1],
                l.index
            ),
        )
    })?;
    Ok([p, net.ports[p as usize].reverse])
}

/// The ranges of a fault's times, rates and delays (`limits.rs`); `until` must follow `at`.
fn check_values(f: &FaultConfig) -> Result<(), ConfigError> {
    let (at, until) = match f {
        FaultConfig::Loss { at, until, .. } | FaultConfig::LinkDown { at, until, .. } => (at, until),
        FaultConfig::Degrade { rate, at, until, .. } => {
            limits::rate("rate", *rate)?;
            (at, until)
        }
        FaultConfig::Delay { extra, at, until, .. } => {
            if *extra > limits::MAX_DELAY {
                return Err(ConfigError::new(
                    "extra",
                    format!("must be at most 10s, got {extra}"),
                ));
            }
            (at, until)
        }
        FaultConfig::RandomLossyLinks { tier_weights, .. } => {
            if let Some(w) = tier_weights {
                if let Some(k) = w.iter().position(|x| !x.is_finite()) {
                    return Err(ConfigError::new(
                        format!("tier_weights[{k}]"),
                        format!("must be a finite number, got {}", w[k]),
                    ));
                }
            }
            return Ok(());
        }
    };
    limits::time("at", *at)?;
    if let Some(u) = until {
        limits::time("until", *u)?;
        if u <= at {
            return Err(ConfigError::new(
                "until",
                format!("must be after at ({at}), got {u}"),
            ));
        }
    }
    Ok(())
}

/// Expands the fault list into timed actions; random placement uses the fault RNG stream. Error
/// paths start at `faults[i]`.
pub fn plan(
    faults: &[FaultConfig],
    net: &Network,
    seed: u64,
) -> Result<Vec<(Dur, FaultAction)>, ConfigError> {
    let mut out = Vec::new();
    for (i, f) in faults.iter().enumerate() {
        let here = format!("faults[{i}]");
        let ctx = |e: ConfigError| e.at(&here);
        let bad = |field: &str, reason: String| ConfigError::new(field, reason).at(&here);
        check_values(f).map_err(ctx)?;
        match f {
            FaultConfig::Loss {
                link,
                direction,
                model,
                at,
                until,
            } => {
                model.validate().map_err(|e| ctx(e.at("model")))?;
                let [fw, bw] = resolve(net, link).map_err(ctx)?;
                let ports: Vec<u32> = match direction {
                    Direction::Both => vec![fw, bw],
                    Direction::Forward => vec![fw],
                    Direction::Backward => vec![bw],
                };
                for p in ports {
                    out.push((
                        *at,
                        FaultAction::SetLoss {
                            port: p,
                            model: model.clone(),
                        },
                    ));
                    if let Some(u) = until {
                        out.push((
                            *u,
                            FaultAction::SetLoss {
                                port: p,
                                model: LossConfig::None,
                            },
                        ));
                    }
                }
            }
            FaultConfig::Delay {
                link,
                direction,
                extra,
                at,
                until,
            } => {
                let [fw, bw] = resolve(net, link).map_err(ctx)?;
                let ports: Vec<u32> = match direction {
                    Direction::Both => vec![fw, bw],
                    Direction::Forward => vec![fw],
                    Direction::Backward => vec![bw],
                };
                for p in ports {
                    let base = net.ports[p as usize].delay();
                    out.push((
                        *at,
                        FaultAction::SetDelay {
                            port: p,
                            delay: Dur(base.0.saturating_add(extra.0)),
                        },
                    ));
                    if let Some(u) = until {
                        out.push((*u, FaultAction::SetDelay { port: p, delay: base }));
                    }
                }
            }
            FaultConfig::LinkDown { link, at, until } => {
                let lp = resolve(net, link).map_err(ctx)?;
                out.push((
                    *at,
                    FaultAction::SetUp {
                        link_ports: lp,
                        up: false,
                    },
                ));
                if let Some(u) = until {
                    out.push((
                        *u,
                        FaultAction::SetUp {
                            link_ports: lp,
                            up: true,
                        },
                    ));
                }
            }
            FaultConfig::Degrade {
                link,
                rate,
                at,
                until,
            } => {
                if rate.0 == 0 {
                    return Err(bad("rate", "must be > 0 (use link_down to cut a link)".into()));
                }
                let lp = resolve(net, link).map_err(ctx)?;
                out.push((
                    *at,
                    FaultAction::SetRate {
                        link_ports: lp,
                        rate_bps: rate.0,
                    },
                ));
                if let Some(u) = until {
                    let orig = net.ports[lp[0] as usize].rate_bps();
                    out.push((
                        *u,
                        FaultAction::SetRate {
                            link_ports: lp,
                            rate_bps: orig,
                        },
                    ));
                }
            }
            FaultConfig::RandomLossyLinks {
                fraction,
                tiers,
                tier_weights,
                rates,
            } => {
                if !(0.0..=1.0).contains(fraction) {
                    return Err(bad("fraction", format!("must be in [0, 1], got {fraction}")));
                }
                let cdf = if rates == "fuso-loss" {
                    EmpiricalCdf::fuso_loss_rates()
                } else {
                    EmpiricalCdf::from_file(std::path::Path::new(rates))
                        .map_err(|e| bad("rates", e.to_string()))?
                };
                let (lo, hi) = (cdf.min_value(), cdf.max_value());
                if lo < 0.0 || hi > 1.0 {
                    return Err(bad(
                        "rates",
                        format!(
                            "{rates}: loss rates must be fractions in [0, 1], found values from {lo} to {hi}"
                        ),
                    ));
                }
                let weights = tier_weights.clone().unwrap_or_else(|| vec![1.0; tiers.len()]);
                if weights.len() != tiers.len()
                    || weights.iter().any(|w| *w < 0.0)
                    || weights.iter().sum::<f64>() <= 0.0
                {
                    return Err(bad(
                        "tier_weights",
                        "need one non-negative weight per tier, not all zero".into(),
                    ));
                }
                // Candidate links per tier, each named by its forward port (the lower port id).
                let mut by_tier: Vec<Vec<u32>> = tiers
                    .iter()
                    .map(|t| {
                        (0..net.ports.len() as u32)
                            .filter(|&p| {
                                let port = &net.ports[p as usize];
                                port.tier == *t && p < port.reverse
                            })
                            .collect()
                    })
                    .collect();
                let total: usize = by_tier.iter().map(Vec::len).sum();
                let n_lossy = (fraction * total as f64).round() as usize;
                let mut r = rng::stream(seed, Stream::Fault, i as u64);
                for _ in 0..n_lossy {
                    let avail: f64 = weights
                        .iter()
                        .zip(&by_tier)
                        .filter(|(_, v)| !v.is_empty())
                        .map(|(w, _)| w)
                        .sum();
                    if avail <= 0.0 {
                        break;
                    }
                    let mut x = r.random::<f64>() * avail;
                    let mut t = 0;
                    for (j, (w, v)) in weights.iter().zip(&by_tier).enumerate() {
                        if v.is_empty() {
                            continue;
                        }
                        t = j;
                        if x < *w {
                            break;
                        }
                        x -= w;
                    }
                    let k = r.random_range(0..by_tier[t].len());
                    let p = by_tier[t].swap_remove(k);
                    let rate = cdf.sample(&mut r);
                    for port in [p, net.ports[p as usize].reverse] {
                        out.push((
                            Dur::ZERO,
                            FaultAction::SetLoss {
                                port,
                                model: LossConfig::Bernoulli { p: rate },
                            },
                        ));
                    }
                }
            }
        }
    }
    Ok(out)
}

/// Applies an action; returns whether routing must be recomputed.
pub fn apply(net: &mut Network, a: &FaultAction) -> bool {
    match a {
        FaultAction::SetLoss { port, model } => {
            net.ports[*port as usize].set_loss(model.clone());
            false
        }
        FaultAction::SetUp { link_ports, up } => {
            for p in link_ports {
                net.ports[*p as usize].set_up(*up);
            }
            true
        }
        FaultAction::SetRate { link_ports, rate_bps } => {
            for p in link_ports {
                net.ports[*p as usize].set_rate(*rate_bps);
            }
            false
        }
        FaultAction::SetDelay { port, delay } => {
            net.ports[*port as usize].set_delay(*delay);
            false
        }
    }
}

/// Names of a port's ends, for reports.
pub fn port_name(net: &Network, p: u32) -> (String, String) {
    let port = &net.ports[p as usize];
    (
        net.nodes[port.node as usize].name.clone(),
        net.nodes[port.peer as usize].name.clone(),
    )
}
