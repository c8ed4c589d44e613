//! `pias`: PIAS (Bai et al., NSDI'15), MLFQ class by bytes sent over DCTCP, strict-priority classes.

use super::over_tcp::dctcp_cfg;
use super::{bad, Doc, TcpScheme};
use crate::{SchemeSpec, SwitchDefault, TcpParts};
use serde::{Deserialize, Serialize};
use tailcut_proto::tcp::{PiasConfig, TcpConfig};
use tailcut_proto::units::Bytes;
use tailcut_proto::ConfigError;

pub struct Pias;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiasParams {
    thresholds: Vec<Bytes>,
    /// Idealised PIAS: host NICs also serve the priority classes strictly (a short flow overtakes
    /// the long flows' packets already queued in its own host). Off by default: the PIAS
    /// implementation only sets DSCP at the host and relies on the switches' priority queues.
    host_priority: bool,
}

impl TcpScheme for Pias {
    type Params = PiasParams;

    fn name(&self) -> &'static str {
        "pias"
    }

    fn description(&self) -> &'static str {
        "PIAS (Bai et al., NSDI'15): MLFQ class by bytes sent, DCTCP underneath, strict-priority switch classes"
    }

    fn tcp_defaults(&self) -> TcpConfig {
        dctcp_cfg()
    }

    fn defaults(&self) -> PiasParams {
        PiasParams {
            thresholds: vec![Bytes(95_000)],
            host_priority: false,
        }
    }

    fn docs(&self) -> &'static [Doc] {
        &[
            (
                "thresholds",
                "ascending MLFQ demotion thresholds, bytes of the message sent (levels = len + 1; default 95KB)",
            ),
            (
                "host_priority",
                "also serve the classes by strict priority in host NICs (idealised PIAS; default false: \
                 the implementation marks DSCP at the host and the NIC stays FIFO)",
            ),
        ]
    }

    fn build(&self, p: PiasParams, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        let th: Vec<u64> = p.thresholds.iter().map(|b| b.0).collect();
        if th.windows(2).any(|w| w[0] >= w[1]) || th.first() == Some(&0) {
            return bad("thresholds", "must be positive and strictly ascending");
        }
        if th.len() > 7 {
            return bad("thresholds", "at most 7 thresholds (8 levels)");
        }
        t.switch = SwitchDefault::PriorityClasses {
            levels: th.len() as u8 + 1,
            host_priority: p.host_priority,
        };
        t.cfg.pias = Some(PiasConfig { thresholds_bytes: th });
        Ok(t.into_spec())
    }
}
