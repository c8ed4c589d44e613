//! How many of a connection end's bytes may wait in its host's NIC queue (`network.host_tsq`): Linux's
//! TCP small queues for TCP engines, the socket send buffer for UDP ones. docs/simulator.md, "TCP small
//! queues".

use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use tailcut_proto::units::{format_bytes, parse_bytes};

/// `net.ipv4.tcp_limit_output_bytes` since Linux 6.16 (4 MB; 1 MB from 5.x, 256 KB from 4.1), which
/// since the same release caps every flow, paced or not ("tcp: always use tcp_limit_output_bytes
/// limitation").
pub const TCP_LIMIT_OUTPUT_BYTES: u64 = 4 << 20;

/// `sk_pacing_shift` (10): TSQ lets a socket queue `pacing_rate >> 10` bytes, about 1 ms of its rate.
pub const SK_PACING_SHIFT: u32 = 10;

/// The floor of Linux's limit, `2 * skb->truesize`: with TSO a bulk sender's skbs are 64 KB (the GSO
/// maximum) at the rates the simulator runs, so two of them.
pub const TSQ_FLOOR_BYTES: u64 = 2 * 65_536;

/// `net.core.wmem_default`, the send buffer of a UDP socket that does not set `SO_SNDBUF`: the kernel
/// blocks the sender while this many bytes of its datagrams are not yet sent by the device.
pub const UDP_SNDBUF_BYTES: u64 = 212_992;

/// The `host_tsq` setting.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum HostTsq {
    /// A Linux host: TCP engines get TSQ's limit at their host's NIC rate ([`tcp_limit`]), other
    /// engines the default UDP send buffer ([`UDP_SNDBUF_BYTES`]).
    #[default]
    Linux,
    /// The same fixed budget for every engine; `0` turns the limit off (the hosts of ns-2, which hand
    /// every packet their window allows to the NIC at once).
    Fixed(u64),
}

impl HostTsq {
    /// Whether any engine is ever held back.
    pub fn is_on(self) -> bool {
        self != HostTsq::Fixed(0)
    }

    /// The budget of one engine on a host whose fastest NIC runs at `nic_rate_bps`; `u64::MAX` when off.
    pub fn budget(self, nic_rate_bps: u64, tcp: bool) -> u64 {
        match self {
            HostTsq::Fixed(0) => u64::MAX,
            HostTsq::Fixed(b) => b,
            HostTsq::Linux if tcp => tcp_limit(nic_rate_bps),
            HostTsq::Linux => UDP_SNDBUF_BYTES,
        }
    }
}

/// Linux's TSQ limit (`tcp_small_queue_check`, net/ipv4/tcp_output.c):
/// `min(max(2 * truesize, pacing_rate >> sk_pacing_shift), tcp_limit_output_bytes)`. The pacing rate
/// stands at the NIC's line rate: a flow that fills its NIC (the only one that can queue there) paces
/// at 1.2x (congestion avoidance) to 2x (slow start) its delivery rate, and that rate falls as flows
/// share the NIC, so the line rate is a middle value, not an engine-exact one.
pub fn tcp_limit(nic_rate_bps: u64) -> u64 {
    let pacing_bytes_per_s = nic_rate_bps / 8;
    (pacing_bytes_per_s >> SK_PACING_SHIFT).clamp(TSQ_FLOOR_BYTES, TCP_LIMIT_OUTPUT_BYTES)
}

impl Serialize for HostTsq {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            HostTsq::Linux => s.serialize_str("linux"),
            HostTsq::Fixed(b) => s.serialize_str(&format_bytes(*b)),
        }
    }
}

impl<'de> Deserialize<'de> for HostTsq {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<HostTsq, D::Error> {
        d.deserialize_any(HostTsqVisitor)
    }
}

struct HostTsqVisitor;

impl Visitor<'_> for HostTsqVisitor {
    type Value = HostTsq;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("\"linux\", a size such as \"128KB\", or integer bytes (0 = off)")
    }

    fn visit_str<E: de::Error>(self, v: &str) -> Result<HostTsq, E> {
        if v == "linux" {
            return Ok(HostTsq::Linux);
        }
        parse_bytes(v).map(HostTsq::Fixed).map_err(E::custom)
    }

    fn visit_u64<E: de::Error>(self, v: u64) -> Result<HostTsq, E> {
        Ok(HostTsq::Fixed(v))
    }

    fn visit_i64<E: de::Error>(self, v: i64) -> Result<HostTsq, E> {
        u64::try_from(v)
            .map(HostTsq::Fixed)
            .map_err(|_| E::custom("host_tsq must not be negative"))
    }
}

/// What a file may write: `deserialize` by hand accepts "linux" or a size (`Bytes`' syntax).
#[cfg(feature = "schema")]
impl schemars::JsonSchema for HostTsq {
    fn schema_name() -> std::borrow::Cow<'static, str> {
        "HostTsq".into()
    }
    fn schema_id() -> std::borrow::Cow<'static, str> {
        "tailcut_sim::topo::HostTsq".into()
    }
    fn json_schema(g: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "description": "\"linux\" (Linux's limits), or a size every engine may keep in its NIC queue (0 = no limit).",
            "anyOf": [
                { "type": "string", "const": "linux" },
                g.subschema_for::<tailcut_proto::units::Bytes>(),
            ],
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn linux_limit_is_about_one_ms_of_line_rate_between_the_floor_and_the_sysctl() {
        // 1 Gbps: 125e6 >> 10 = 122070 B, below two 64 KB skbs.
        assert_eq!(tcp_limit(1_000_000_000), 131_072);
        assert_eq!(tcp_limit(10_000_000_000), 1_220_703);
        assert_eq!(tcp_limit(100_000_000_000), 4 << 20);
        assert_eq!(HostTsq::Linux.budget(10_000_000_000, false), 212_992);
        assert_eq!(HostTsq::Fixed(0).budget(10_000_000_000, true), u64::MAX);
        assert_eq!(HostTsq::Fixed(5).budget(10_000_000_000, false), 5);
        assert!(!HostTsq::Fixed(0).is_on() && HostTsq::Linux.is_on());
    }

    #[test]
    fn parses_linux_sizes_and_zero_and_names_bad_values() {
        #[derive(Deserialize)]
        struct T {
            v: HostTsq,
        }
        let p = |s: &str| toml::from_str::<T>(&format!("v = {s}")).map(|t| t.v);
        assert_eq!(p("\"linux\"").unwrap(), HostTsq::Linux);
        assert_eq!(p("\"128KB\"").unwrap(), HostTsq::Fixed(128_000));
        assert_eq!(p("0").unwrap(), HostTsq::Fixed(0));
        assert!(p("-1").is_err());
        assert!(p("\"fast\"").is_err());
    }
}
