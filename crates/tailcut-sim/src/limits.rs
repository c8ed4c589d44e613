//! The ranges an experiment's values must fall in, checked before anything is built: a value outside
//! them is a `ConfigError` naming the field, never a division by zero or an overflow deep in a run.
//!
//! The bounds are physical (a link needs a positive rate), or keep integer arithmetic far from
//! overflow (nanosecond `u64` times wrap after 584 years; node and port ids are `u32`). Sizes that are
//! valid but too big for the machine are the resource estimate's business (`estimate.rs`).
//! docs/simulator.md, "Limits and errors", lists every bound.

use crate::config::Experiment;
use crate::topo::{CloudburstTestbed, Dumbbell, FatTree, File, FusoTestbed, LeafSpine, Star, TopologyConfig};
use tailcut_proto::units::{Bytes, Rate};
use tailcut_proto::{ConfigError, Dur};

/// Fastest link: 100 Tbps. Far above any datacenter link, low enough that bits-per-second products
/// stay within `u64`.
pub const MAX_RATE_BPS: u64 = 100_000_000_000_000;
/// Longest propagation delay of one link (and largest extra delay a fault adds): 10 s.
pub const MAX_DELAY: Dur = Dur(10_000_000_000);
/// Longest simulated time (`max_time`, fault and workload times): 100,000 s (~28 hours), so that any
/// time plus a backed-off timer stays far from `u64` nanosecond overflow.
pub const MAX_TIME: Dur = Dur(100_000 * 1_000_000_000);
/// Largest buffer: 1 TB.
pub const MAX_BUFFER_BYTES: u64 = 1 << 40;
/// Most nodes or links a topology may declare: node and port ids are `u32`, and every link has two
/// ports.
pub const MAX_ELEMENTS: u64 = 1 << 30;

pub fn rate(path: &str, r: Rate) -> Result<(), ConfigError> {
    if r.0 == 0 {
        return Err(ConfigError::new(
            path,
            "must be > 0 (a link needs a positive rate)",
        ));
    }
    if r.0 > MAX_RATE_BPS {
        return Err(ConfigError::new(
            path,
            format!("must be at most 100Tbps, got {} bps", r.0),
        ));
    }
    Ok(())
}

pub fn delay(path: &str, d: Dur) -> Result<(), ConfigError> {
    if d.0 == 0 {
        return Err(ConfigError::new(
            path,
            "must be > 0 (every link has a propagation delay)",
        ));
    }
    at_most(path, d, MAX_DELAY, "10s")
}

pub fn time(path: &str, t: Dur) -> Result<(), ConfigError> {
    at_most(path, t, MAX_TIME, "100000s")
}

fn at_most(path: &str, d: Dur, max: Dur, max_text: &str) -> Result<(), ConfigError> {
    if d > max {
        return Err(ConfigError::new(
            path,
            format!("must be at most {max_text}, got {d}"),
        ));
    }
    Ok(())
}

pub fn buffer(path: &str, b: Bytes) -> Result<(), ConfigError> {
    if b.0 == 0 {
        return Err(ConfigError::new(
            path,
            "must be > 0 bytes (a zero buffer drops every packet)",
        ));
    }
    if b.0 > MAX_BUFFER_BYTES {
        return Err(ConfigError::new(
            path,
            format!("must be at most 1TB, got {} bytes", b.0),
        ));
    }
    Ok(())
}

fn name(path: &str, s: &str) -> Result<(), ConfigError> {
    if s.trim().is_empty() {
        return Err(ConfigError::new(path, "must not be empty"));
    }
    Ok(())
}

/// Checks every value of `exp` that the sections' own validators do not (topology rates, delays and
/// counts, buffers, times, names).
pub fn check(exp: &Experiment) -> Result<(), ConfigError> {
    name("name", &exp.name)?;
    if exp.max_time.0 == 0 {
        return Err(ConfigError::new("max_time", "must be > 0"));
    }
    time("max_time", exp.max_time)?;
    time("stall_timeout", exp.stall_timeout)?;
    topology(&exp.topology).map_err(|e| e.at("topology"))?;
    queues(&exp.network).map_err(|e| e.at("network"))?;
    for (i, c) in exp.workload.iter().enumerate() {
        let here = format!("workload[{i}]");
        name(&format!("{here}.name"), &c.name)?;
        time(&format!("{here}.start"), c.start)?;
        if let Some(u) = c.until {
            time(&format!("{here}.until"), u)?;
        }
    }
    for (i, s) in exp.schemes.iter().enumerate() {
        name(&format!("schemes[{i}].name"), &s.name)?;
        if let Some(q) = &s.network {
            queues(q).map_err(|e| e.at(&format!("schemes[{i}].network")))?;
        }
    }
    Ok(())
}

fn queues(q: &crate::topo::SwitchQueues) -> Result<(), ConfigError> {
    buffer("buffer", q.buffer)?;
    buffer("host_buffer", q.host_buffer)?;
    for (i, c) in q.classes.iter().chain(&q.host_classes).enumerate() {
        let list = if i < q.classes.len() {
            "classes"
        } else {
            "host_classes"
        };
        let k = if i < q.classes.len() {
            i
        } else {
            i - q.classes.len()
        };
        if let Some(l) = c.limit {
            buffer(&format!("{list}[{k}].limit"), l)?;
        }
    }
    if matches!(q.host_tsq, crate::topo::HostTsq::Fixed(b) if b > MAX_BUFFER_BYTES) {
        return Err(ConfigError::new("host_tsq", "must be at most 1TB"));
    }
    Ok(())
}

fn topology(t: &TopologyConfig) -> Result<(), ConfigError> {
    match t {
        TopologyConfig::Star(Star {
            host_rate,
            link_delay,
            ..
        }) => {
            rate("host_rate", *host_rate)?;
            delay("link_delay", *link_delay)
        }
        TopologyConfig::Dumbbell(Dumbbell {
            host_rate,
            bottleneck_rate,
            link_delay,
            ..
        }) => {
            rate("host_rate", *host_rate)?;
            rate("bottleneck_rate", *bottleneck_rate)?;
            delay("link_delay", *link_delay)
        }
        TopologyConfig::LeafSpine(LeafSpine {
            spines,
            hosts_per_leaf,
            host_rate,
            fabric_rate,
            oversubscription,
            link_delay,
            ..
        }) => {
            rate("host_rate", *host_rate)?;
            if let Some(r) = fabric_rate {
                rate("fabric_rate", *r)?;
            }
            if let Some(o) = oversubscription {
                if !o.is_finite() || *o <= 0.0 {
                    return Err(ConfigError::new(
                        "oversubscription",
                        format!("must be a finite number > 0, got {o}"),
                    ));
                }
                // The fabric rate it implies must itself be a valid rate, not one rounded to 0 bps.
                let implied = f64::from(*hosts_per_leaf) * host_rate.0 as f64 / (f64::from(*spines) * o);
                if !(1.0..=MAX_RATE_BPS as f64).contains(&implied.round()) {
                    return Err(ConfigError::new(
                        "oversubscription",
                        format!("implies a fabric rate of {implied:.0} bps, outside 1 bps..100Tbps"),
                    ));
                }
            }
            delay("link_delay", *link_delay)
        }
        TopologyConfig::FatTree(FatTree {
            host_rate,
            fabric_rate,
            link_delay,
            ..
        }) => {
            rate("host_rate", *host_rate)?;
            if let Some(r) = fabric_rate {
                rate("fabric_rate", *r)?;
            }
            delay("link_delay", *link_delay)
        }
        TopologyConfig::FusoTestbed(FusoTestbed { rate: r, link_delay })
        | TopologyConfig::CloudburstTestbed(CloudburstTestbed { rate: r, link_delay }) => {
            rate("rate", *r)?;
            delay("link_delay", *link_delay)
        }
        TopologyConfig::File(File { path }) => name("path", path),
    }
}
