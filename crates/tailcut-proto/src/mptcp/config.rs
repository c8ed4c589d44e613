//! MPTCP and FUSO parameters. Sub-flow TCP parameters come from the transport's `TcpConfig`.

use serde::{Deserialize, Serialize};

/// FUSO (Sec. 3.2.1): C_l = alpha * lossrate + beta * lossrate_last.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct FusoConfig {
    /// Weight of the sub-flow's overall loss rate (retransmitted / transmitted packets).
    pub alpha: f64,
    /// Weight of the most recent loss rate (1 / packets sent since, and including, the last
    /// retransmission).
    pub beta: f64,
}

impl Default for FusoConfig {
    fn default() -> Self {
        // Sec. 4.2: alpha = beta = 0.5.
        FusoConfig {
            alpha: 0.5,
            beta: 0.5,
        }
    }
}

/// The multipath layer.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct MptcpConfig {
    /// Sub-flows per connection (the FUSO testbed: 4; the large-scale simulation: 8).
    pub subflows: u32,
    /// Coupled congestion avoidance (LIA, RFC 6356); off = each sub-flow grows as plain TCP.
    pub coupled: bool,
    /// Linux MPTCP's opportunistic retransmission: when the data-level receive window blocks new
    /// data, resend the data-level head on the sub-flow the scheduler picked.
    pub opportunistic_retransmit: bool,
    /// ... and halve the window of the slower sub-flows that hold that head (once per their RTT).
    pub penalize: bool,
    /// A sub-flow with this many consecutive RTOs is deemed dead: its outstanding data is reinjected
    /// onto the other sub-flows and it gets no new data until it makes progress again (0 = never).
    pub dead_after_timeouts: u32,
    /// Bytes each end sends first, before any application data, to open and warm every sub-flow; the
    /// application's data then waits one idle RTO so the windows restart from the initial window
    /// (the paper's 100 KB warm-up). 0 = no warm-up.
    pub warmup_bytes: u64,
    /// FUSO's receiver change (Sec. 4.1): a segment out of sequence at sub-flow level goes straight
    /// into the data-level buffer instead of waiting in the sub-flow's out-of-order queue.
    pub ofo_to_data_level: bool,
    /// FUSO's multipath loss recovery (Algorithm 1); absent = plain MPTCP.
    pub fuso: Option<FusoConfig>,
}

impl Default for MptcpConfig {
    fn default() -> Self {
        MptcpConfig {
            subflows: 4,
            coupled: true,
            opportunistic_retransmit: true,
            penalize: true,
            dead_after_timeouts: 3,
            warmup_bytes: 0,
            ofo_to_data_level: false,
            fuso: None,
        }
    }
}

impl MptcpConfig {
    /// Plain MPTCP with FUSO and its receiver change switched on (paper defaults).
    pub fn fuso() -> Self {
        MptcpConfig {
            ofo_to_data_level: true,
            fuso: Some(FusoConfig::default()),
            ..MptcpConfig::default()
        }
    }

    /// Errors name the offending field.
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError;
        if !(1..=32).contains(&self.subflows) {
            return Err(ConfigError::new(
                "subflows",
                format!("must be in 1..=32, got {}", self.subflows),
            ));
        }
        if let Some(f) = self.fuso {
            for (n, v) in [("alpha", f.alpha), ("beta", f.beta)] {
                if !(v.is_finite() && v >= 0.0) {
                    return Err(ConfigError::new(
                        n,
                        format!("must be a finite number >= 0, got {v}"),
                    ));
                }
            }
        }
        Ok(())
    }
}
