//! `tlp`: TCP with Tail Loss Probe (draft-dukkipati-tcpm-tcp-loss-probe, RFC 8985 Sec. 7).

use super::{bad, Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::tcp::TlpConfig;
use tailcut_proto::ConfigError;

pub struct Tlp;

impl TcpScheme for Tlp {
    type Params = TlpConfig;

    fn name(&self) -> &'static str {
        "tlp"
    }

    fn description(&self) -> &'static str {
        "TCP with Tail Loss Probe (draft-dukkipati-tcpm-tcp-loss-probe, RFC 8985 Sec. 7)"
    }

    fn defaults(&self) -> TlpConfig {
        TlpConfig::default()
    }

    fn docs(&self) -> &'static [Doc] {
        &[
            (
                "pto_floor",
                "lower bound of the probe timeout (draft-dukkipati-tcpm-tcp-loss-probe: 10ms)",
            ),
            (
                "worst_case_delayed_ack",
                "WCDelAckT added to 1.5 SRTT when one segment is in flight (draft: 200ms)",
            ),
        ]
    }

    fn build(&self, p: TlpConfig, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        if p.pto_floor.0 == 0 {
            return bad("pto_floor", "must be > 0");
        }
        if !t.cfg.sack {
            return bad("sack", "TLP needs sack = true");
        }
        t.cfg.tlp = Some(p);
        Ok(t.into_spec())
    }
}
