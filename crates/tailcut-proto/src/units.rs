//! Human units in configuration: times ("5ms", "250us"), sizes ("64KB", "1MiB") and rates ("10Gbps").
//!
//! Plain integers are accepted too and mean nanoseconds, bytes and bits per second. Decimal prefixes
//! are powers of 1000 (KB = 1000 B) and binary ones powers of 1024 (KiB = 1024 B), as in the papers'
//! tables; serialisation writes the exact value in the largest unit that divides it.
//!
//! The parsers see only the value, not where it came from, so their errors are [`ConfigError`]s with an
//! empty path: the caller names the field with [`ConfigError::at`] (`--task-bytes`, `link[0].rate`),
//! and inside serde the message is the reason alone (serde names the field).

use crate::config_error::ConfigError;
use crate::time::Dur;
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;

fn split_number(s: &str) -> Option<(f64, &str)> {
    let s = s.trim();
    let end = s
        .char_indices()
        .find(|(_, c)| !(c.is_ascii_digit() || *c == '.' || *c == 'e' || *c == '-' || *c == '+'))
        .map(|(i, _)| i)
        .unwrap_or(s.len());
    let (num, unit) = s.split_at(end);
    let v: f64 = num.parse().ok()?;
    Some((v, unit.trim()))
}

/// A value the parsers refuse: the whole input (empty path) and why.
fn invalid(reason: String) -> ConfigError {
    ConfigError::new("", reason)
}

fn scaled(v: f64, scale: f64, what: &str, s: &str) -> Result<u64, ConfigError> {
    let x = v * scale;
    if !x.is_finite() || x < 0.0 || x > u64::MAX as f64 {
        return Err(invalid(format!("{what} '{s}' is out of range")));
    }
    let r = x.round();
    if (r - x).abs() > 1e-6 * x.max(1.0) {
        return Err(invalid(format!(
            "{what} '{s}' is not a whole number of the base unit"
        )));
    }
    Ok(r as u64)
}

/// Parses a time span: ns, us, ms, s (also "µs").
pub fn parse_duration(s: &str) -> Result<Dur, ConfigError> {
    let (v, unit) =
        split_number(s).ok_or_else(|| invalid(format!("invalid time '{s}': expected e.g. \"5ms\"")))?;
    let scale = match unit {
        "" | "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => {
            return Err(invalid(format!(
                "invalid time unit in '{s}': use ns, us, ms or s"
            )))
        }
    };
    scaled(v, scale, "time", s).map(Dur)
}

/// Parses a size in bytes: B, KB, MB, GB (powers of 1000), KiB, MiB, GiB (powers of 1024).
pub fn parse_bytes(s: &str) -> Result<u64, ConfigError> {
    let (v, unit) =
        split_number(s).ok_or_else(|| invalid(format!("invalid size '{s}': expected e.g. \"64KB\"")))?;
    let scale = match unit {
        "" | "B" => 1.0,
        "KB" | "kB" => 1e3,
        "MB" => 1e6,
        "GB" => 1e9,
        "KiB" => 1024.0,
        "MiB" => 1024.0 * 1024.0,
        "GiB" => 1024.0 * 1024.0 * 1024.0,
        _ => {
            return Err(invalid(format!(
                "invalid size unit in '{s}': use B, KB, MB, GB, KiB, MiB or GiB"
            )))
        }
    };
    scaled(v, scale, "size", s)
}

/// Parses a rate in bits per second: bps, Kbps, Mbps, Gbps, Tbps.
pub fn parse_rate(s: &str) -> Result<u64, ConfigError> {
    let (v, unit) =
        split_number(s).ok_or_else(|| invalid(format!("invalid rate '{s}': expected e.g. \"10Gbps\"")))?;
    let scale = match unit {
        "" | "bps" => 1.0,
        "Kbps" | "kbps" => 1e3,
        "Mbps" => 1e6,
        "Gbps" => 1e9,
        "Tbps" => 1e12,
        _ => {
            return Err(invalid(format!(
                "invalid rate unit in '{s}': use bps, Kbps, Mbps, Gbps or Tbps"
            )))
        }
    };
    scaled(v, scale, "rate", s)
}

pub fn format_duration(d: Dur) -> String {
    let ns = d.0;
    for (unit, k) in [("s", 1_000_000_000u64), ("ms", 1_000_000), ("us", 1_000)] {
        if ns >= k && ns.is_multiple_of(k) {
            return format!("{}{unit}", ns / k);
        }
    }
    format!("{ns}ns")
}

pub fn format_bytes(b: u64) -> String {
    for (unit, k) in [("GB", 1_000_000_000u64), ("MB", 1_000_000), ("KB", 1_000)] {
        if b >= k && b.is_multiple_of(k) {
            return format!("{}{unit}", b / k);
        }
    }
    format!("{b}B")
}

pub fn format_rate(r: u64) -> String {
    for (unit, k) in [
        ("Tbps", 1_000_000_000_000u64),
        ("Gbps", 1_000_000_000),
        ("Mbps", 1_000_000),
        ("Kbps", 1_000),
    ] {
        if r >= k && r.is_multiple_of(k) {
            return format!("{}{unit}", r / k);
        }
    }
    format!("{r}bps")
}

/// A serde visitor that accepts a unit string or a non-negative integer. A refused value becomes
/// serde's error with the parser's reason as its message (the parsers' paths are empty), so serde's
/// own path names the field.
struct UnitVisitor<F>(F, &'static str);

impl<'de, T, F: Fn(&str) -> Result<T, ConfigError>> Visitor<'de> for UnitVisitor<F> {
    type Value = T;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str(self.1)
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<T, E> {
        (self.0)(v).map_err(E::custom)
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<T, E> {
        (self.0)(&v.to_string()).map_err(E::custom)
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<T, E> {
        if v < 0 {
            return Err(E::custom(format!("negative value {v}")));
        }
        self.visit_u64(v as u64)
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<T, E> {
        (self.0)(&v.to_string()).map_err(E::custom)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_duration(*self))
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Dur, D::Error> {
        d.deserialize_any(UnitVisitor(
            parse_duration,
            "a time such as \"5ms\" or integer nanoseconds",
        ))
    }
}

/// A byte count that deserialises from "64KB" etc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Bytes(pub u64);

impl Serialize for Bytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_bytes(self.0))
    }
}

impl<'de> Deserialize<'de> for Bytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Bytes, D::Error> {
        d.deserialize_any(UnitVisitor(
            |s: &str| parse_bytes(s).map(Bytes),
            "a size such as \"64KB\" or integer bytes",
        ))
    }
}

/// A rate in bits per second that deserialises from "10Gbps" etc.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Rate(pub u64);

impl Serialize for Rate {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format_rate(self.0))
    }
}

impl<'de> Deserialize<'de> for Rate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Rate, D::Error> {
        d.deserialize_any(UnitVisitor(
            |s: &str| parse_rate(s).map(Rate),
            "a rate such as \"10Gbps\" or integer bits/s",
        ))
    }
}

/// What an experiment file may write for each unit type, for the generated reference page. The
/// formats are named `tailcut-*` because JSON Schema's own `time` format is a time of day; the page
/// prints them as "time", "size" and "rate".
#[cfg(feature = "schema")]
mod schema {
    use super::{Bytes, Dur, Rate};
    use schemars::{json_schema, JsonSchema, Schema, SchemaGenerator};
    use std::borrow::Cow;

    /// A unit type's schema: a string with a unit, or an integer in the base unit.
    macro_rules! unit_schema {
        ($ty:ty, $id:literal, $format:literal, $example:literal, $description:literal) => {
            impl JsonSchema for $ty {
                fn schema_name() -> Cow<'static, str> {
                    stringify!($ty).into()
                }
                fn schema_id() -> Cow<'static, str> {
                    $id.into()
                }
                fn json_schema(_: &mut SchemaGenerator) -> Schema {
                    json_schema!({
                        "description": $description,
                        "type": ["string", "integer"],
                        "format": $format,
                        "minimum": 0,
                        "examples": [$example],
                    })
                }
            }
        };
    }

    unit_schema!(
        Dur,
        "tailcut_proto::time::Dur",
        "tailcut-time",
        "10ms",
        "A time: a number with a unit (ns, us or µs, ms, s), e.g. \"10ms\" or \"1.5us\", or integer nanoseconds."
    );
    unit_schema!(
        Bytes,
        "tailcut_proto::units::Bytes",
        "tailcut-size",
        "64KB",
        "A size: a number with a unit (B; KB, MB, GB, powers of 1000; KiB, MiB, GiB, powers of 1024), e.g. \"64KB\" or \"1.5MB\", or integer bytes."
    );
    unit_schema!(
        Rate,
        "tailcut_proto::units::Rate",
        "tailcut-rate",
        "10Gbps",
        "A rate: a number of bits per second with a unit (bps, Kbps, Mbps, Gbps, Tbps), e.g. \"10Gbps\", or integer bits per second."
    );
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_units_papers_use() {
        assert_eq!(parse_duration("5ms"), Ok(Dur(5_000_000)));
        assert_eq!(parse_duration("250us"), Ok(Dur(250_000)));
        assert_eq!(parse_duration("1.5ms"), Ok(Dur(1_500_000)));
        assert_eq!(parse_bytes("64KB"), Ok(64_000));
        assert_eq!(parse_bytes("128KiB"), Ok(131_072));
        assert_eq!(parse_rate("10Gbps"), Ok(10_000_000_000));
        let e = parse_duration("5xs").unwrap_err();
        assert!(e.path.is_empty() && e.reason.contains("unit"), "{e}");
        assert_eq!(
            e.at("--spin").to_string(),
            "--spin: invalid time unit in '5xs': use ns, us, ms or s"
        );
        assert!(parse_bytes("1.5B").is_err());
    }

    #[test]
    fn formatting_round_trips() {
        for ns in [0u64, 1, 999, 1000, 5_000_000, 1_500_000, 3_000_000_000] {
            assert_eq!(parse_duration(&format_duration(Dur(ns))), Ok(Dur(ns)));
        }
        for b in [0u64, 1460, 64_000, 100_000_000] {
            assert_eq!(parse_bytes(&format_bytes(b)), Ok(b));
        }
    }
}
