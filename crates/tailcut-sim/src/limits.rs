//! The ranges an experiment's values must fall in, checked before anything is built: a value outside
//! them is a `ConfigError` naming the field, never a division by zero or an overflow deep in a run.
//!
//! The bounds are physical (a link needs a positive rate), or keep integer arithmetic far from
//! overflow (nanosecond `u64` times wrap after 584 years; node and port ids are `u32`). Sizes that are
//! valid but too big for the machine are the resource estimate's business (`estimate.rs`).
//! docs/simulator.md, "Limits and errors", lists every bound.

use crate::config::Experiment;
use crate::fault::FaultConfig;
use crate::net::aqm::AqmConfig;
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
/// Smallest buffer: one full-size (1500-byte MTU) packet. A smaller queue drops every data packet, so
/// every flow of the run would end unfinished.
pub const MIN_BUFFER_BYTES: u64 = 1500;
/// Largest flow (or message): 1 PB, 80 s at the fastest link rate. Far above any datacenter flow, low
/// enough that byte counts times 8 (bits) or times a hop count stay within `u64` and `f64` is exact.
pub const MAX_FLOW_BYTES: u64 = 1_000_000_000_000_000;
/// Most schemes an experiment may list: each is a whole run of the workload, so 100,000 of them is a
/// generated file gone wrong, refused before any is resolved.
pub const MAX_SCHEMES: usize = 1_000;
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
    if b.0 < MIN_BUFFER_BYTES {
        return Err(ConfigError::new(
            path,
            format!(
                "must be at least {MIN_BUFFER_BYTES} bytes (one full-size packet), got {} bytes: a \
                 smaller queue drops every data packet",
                b.0
            ),
        ));
    }
    Ok(())
}

/// A flow's size in bytes: > 0 and at most [`MAX_FLOW_BYTES`].
pub fn flow_size(path: &str, bytes: u64) -> Result<(), ConfigError> {
    if bytes == 0 {
        return Err(ConfigError::new(path, "must be > 0 bytes"));
    }
    if bytes > MAX_FLOW_BYTES {
        return Err(ConfigError::new(
            path,
            format!("must be at most 1PB, got {bytes} bytes"),
        ));
    }
    Ok(())
}

/// The text of the file at `path`, refusing anything that is not a regular file before opening it: a
/// FIFO would block the read forever, a device could be endless. The error is the io error's text.
pub fn read_regular_file(path: &std::path::Path) -> std::io::Result<String> {
    // `metadata` follows symbolic links and never blocks on a FIFO (only opening it does).
    let meta = std::fs::metadata(path)?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a folder"
        } else {
            "not a regular file (a FIFO, socket or device)"
        };
        return Err(std::io::Error::other(format!("is {what}")));
    }
    std::fs::read_to_string(path)
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
    if exp.schemes.len() > MAX_SCHEMES {
        return Err(ConfigError::new(
            "schemes",
            format!(
                "{} schemes, more than the {MAX_SCHEMES} an experiment may run (each is a full run of \
                 the workload); split them into several experiments",
                exp.schemes.len()
            ),
        ));
    }
    if exp.max_time.0 == 0 {
        return Err(ConfigError::new("max_time", "must be > 0"));
    }
    time("max_time", exp.max_time)?;
    time("stall_timeout", exp.stall_timeout)?;
    topology(&exp.topology).map_err(|e| e.at("topology"))?;
    queues(&exp.network).map_err(|e| e.at("network"))?;
    // A set, not a scan of the earlier names (thousands of components must not be quadratic).
    let mut names = std::collections::HashSet::new();
    for (i, c) in exp.workload.iter().enumerate() {
        let here = format!("workload[{i}]");
        name(&format!("{here}.name"), &c.name)?;
        if !names.insert(c.name.as_str()) {
            return Err(ConfigError::new(
                format!("{here}.name"),
                format!(
                    "duplicate component name '{}' (results, applies_to and other_traffic tell \
                     components apart by name)",
                    c.name
                ),
            ));
        }
        time(&format!("{here}.start"), c.start)?;
        before_max_time(
            &format!("{here}.start"),
            c.start,
            exp.max_time,
            "no flow of it would start",
        )?;
        if let Some(u) = c.until {
            time(&format!("{here}.until"), u)?;
        }
        if c.request_bytes.0 > MAX_FLOW_BYTES {
            flow_size(&format!("{here}.request_bytes"), c.request_bytes.0)?;
        }
    }
    for (i, f) in exp.faults.iter().enumerate() {
        if let Some(at) = fault_start(f) {
            before_max_time(
                &format!("faults[{i}].at"),
                at,
                exp.max_time,
                "the fault would never happen",
            )?;
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

/// A time that must fall inside the run (`t < max_time`); `consequence` says what would go wrong.
fn before_max_time(path: &str, t: Dur, max_time: Dur, consequence: &str) -> Result<(), ConfigError> {
    if t >= max_time {
        return Err(ConfigError::new(
            path,
            format!("must be before max_time ({max_time}), got {t}: {consequence}"),
        ));
    }
    Ok(())
}

/// When a fault starts, if it has a start time.
fn fault_start(f: &FaultConfig) -> Option<Dur> {
    match f {
        FaultConfig::Loss { at, .. }
        | FaultConfig::LinkDown { at, .. }
        | FaultConfig::Degrade { at, .. }
        | FaultConfig::Delay { at, .. } => Some(*at),
        FaultConfig::RandomLossyLinks { .. } => None,
    }
}

/// An ECN marking threshold must lie below the queue's buffer, or no packet is ever marked.
fn ecn_k(path: &str, aqm: &AqmConfig, buffer: Bytes) -> Result<(), ConfigError> {
    let k = match aqm {
        AqmConfig::Ecn { k } => *k,
        AqmConfig::Trim { ecn_k: Some(k), .. } => *k,
        _ => return Ok(()),
    };
    if k.0 >= buffer.0 {
        return Err(ConfigError::new(
            path,
            format!(
                "must be below the buffer ({} bytes), got {} bytes: the queue never reaches it, so no \
                 packet would be marked",
                buffer.0, k.0
            ),
        ));
    }
    Ok(())
}

fn queues(q: &crate::topo::SwitchQueues) -> Result<(), ConfigError> {
    buffer("buffer", q.buffer)?;
    buffer("host_buffer", q.host_buffer)?;
    let k_path = |list: &str, aqm: &AqmConfig| {
        let field = if matches!(aqm, AqmConfig::Trim { .. }) {
            "ecn_k"
        } else {
            "k"
        };
        format!("{list}.{field}")
    };
    ecn_k(&k_path("aqm", &q.aqm), &q.aqm, q.buffer)?;
    ecn_k(&k_path("host_aqm", &q.host_aqm), &q.host_aqm, q.host_buffer)?;
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
        if let Some(a) = &c.aqm {
            let own = if i < q.classes.len() {
                q.buffer
            } else {
                q.host_buffer
            };
            ecn_k(&k_path(&format!("{list}[{k}].aqm"), a), a, c.limit.unwrap_or(own))?;
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fifo_or_a_folder_is_refused_before_it_is_opened() {
        let dir = std::env::temp_dir().join(format!("tailcut-limits-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let fifo = dir.join("sizes.cdf");
        let _ = std::fs::remove_file(&fifo);
        let made = std::process::Command::new("mkfifo").arg(&fifo).status();
        if made.is_ok_and(|s| s.success()) {
            // Opening it would block forever: no writer ever comes.
            let e = read_regular_file(&fifo).unwrap_err().to_string();
            assert!(e.contains("not a regular file"), "{e}");
        }
        let e = read_regular_file(&dir).unwrap_err().to_string();
        assert_eq!(e, "is a folder");
        assert!(read_regular_file(&dir.join("missing")).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
