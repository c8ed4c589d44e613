//! `pfabric`: pFabric (Alizadeh et al., SIGCOMM'13), priority = remaining bytes, priority-dropping
//! switch queues, line-rate start.

use super::{bad, Doc, TcpScheme};
use crate::{SchemeSpec, SwitchDefault, TcpParts};
use serde::{Deserialize, Serialize};
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::units::Bytes;
use tailcut_proto::{ConfigError, Dur};

pub struct Pfabric;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PfabricParams {
    switch_buffer: Bytes,
    probe_after_timeouts: u32,
}

impl TcpScheme for Pfabric {
    type Params = PfabricParams;

    fn name(&self) -> &'static str {
        "pfabric"
    }

    fn description(&self) -> &'static str {
        "pFabric (Alizadeh et al., SIGCOMM'13): priority = remaining bytes, priority-dropping switch queues, line-rate start"
    }

    /// Alizadeh et al. Sec. 4.3 / 5: line-rate start (IW = BDP, 17 packets here), SACK but no fast
    /// retransmit (losses are detected by timeouts only), a small RTO from the first packet on; no
    /// restart after idle.
    fn tcp_defaults(&self) -> TcpConfig {
        TcpConfig {
            initial_cwnd_segments: 17,
            dupack_threshold: u32::MAX,
            min_rto: Dur::from_millis(1),
            initial_rto: Dur::from_millis(1),
            slow_start_after_idle: false,
            ..TcpConfig::default()
        }
    }

    fn defaults(&self) -> PfabricParams {
        PfabricParams {
            switch_buffer: Bytes(51_000),
            probe_after_timeouts: 5,
        }
    }

    fn docs(&self) -> &'static [Doc] {
        &[
            (
                "switch_buffer",
                "per-port pFabric queue used when the scheme gives no network (34 x 1500B = 51KB, about 2 BDP)",
            ),
            (
                "probe_after_timeouts",
                "consecutive timeouts after which the flow sends one-byte probes once per RTO (probe mode)",
            ),
        ]
    }

    fn build(&self, p: PfabricParams, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        if p.switch_buffer.0 < 1500 {
            return bad(
                "switch_buffer",
                format!(
                    "must hold at least one 1500-byte packet, got {}",
                    p.switch_buffer.0
                ),
            );
        }
        if p.probe_after_timeouts == 0 {
            return bad("probe_after_timeouts", "must be >= 1");
        }
        t.switch = SwitchDefault::Pfabric {
            buffer_bytes: p.switch_buffer.0,
        };
        t.cfg.pfabric_priority = true;
        t.cfg.pfabric_probe_after = Some(p.probe_after_timeouts);
        Ok(t.into_spec())
    }
}
