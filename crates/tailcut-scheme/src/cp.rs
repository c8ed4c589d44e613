//! `cp`: CP (Cheng et al., NSDI'14), payload-cutting switches, a PACK from the receiver for every cut
//! packet and precise retransmission. Its parameters serve `cp_dctcp` and the multipath schemes'
//! `cp = true` too.

use super::{bad, Doc, TcpScheme};
use crate::{SchemeSpec, SwitchDefault, TcpParts, TRIM_HEADER_BYTES, TRIM_HEADER_HEADROOM};
use serde::{Deserialize, Serialize};
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::units::Bytes;
use tailcut_proto::ConfigError;

pub struct Cp;

/// The trimming switch ports CP needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CpParams {
    switch_header_bytes: Bytes,
    switch_header_headroom: Bytes,
    switch_priority_headers: bool,
}

impl Default for CpParams {
    fn default() -> Self {
        CpParams {
            switch_header_bytes: Bytes(TRIM_HEADER_BYTES),
            switch_header_headroom: Bytes(TRIM_HEADER_HEADROOM),
            switch_priority_headers: false,
        }
    }
}

pub const CP_DOCS: &[Doc] = &[
    (
        "switch_header_bytes",
        "size of a payload-cut packet at the switch (the slides: 66B)",
    ),
    (
        "switch_header_headroom",
        "bytes cut headers may use beyond the port buffer (the slides: < 1 packet, 1500B)",
    ),
    (
        "switch_priority_headers",
        "cut headers in their own strict-priority queue (NDP) instead of the FIFO (the slides)",
    ),
];

/// CP's endpoint defaults (Cheng et al., NSDI'14): SACK (the PACK is a SACK-format option) and no
/// dupACK-based loss detection at all, since cut packets are reported precisely ("DupACK = inf" in the
/// slides' out-of-order evaluation); limited and early retransmit follow from it.
pub fn cp_cfg(base: TcpConfig) -> TcpConfig {
    TcpConfig {
        sack: true,
        dupack_threshold: u32::MAX,
        ..base
    }
}

/// CP's switch default.
pub fn cp_switch(p: &CpParams) -> Result<SwitchDefault, ConfigError> {
    if p.switch_header_bytes.0 == 0 || p.switch_header_bytes.0 > 1500 {
        return bad(
            "switch_header_bytes",
            format!("must be in 1..=1500, got {}", p.switch_header_bytes.0),
        );
    }
    Ok(SwitchDefault::Trim {
        header_bytes: p.switch_header_bytes.0,
        header_headroom: p.switch_header_headroom.0,
        priority_headers: p.switch_priority_headers,
    })
}

/// CP on the TCP endpoint: trimming switches, PACKs; the PACK needs SACK.
pub fn with_cp(p: CpParams, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
    t.switch = cp_switch(&p)?;
    if !t.cfg.sack {
        return bad("sack", "CP's PACK is a SACK-format option; needs sack = true");
    }
    t.cfg.cp = true;
    Ok(t.into_spec())
}

impl TcpScheme for Cp {
    type Params = CpParams;

    fn name(&self) -> &'static str {
        "cp"
    }

    fn description(&self) -> &'static str {
        "CP (Cheng et al., NSDI'14): payload-cutting switches, PACK from the receiver, precise fast retransmit; NewReno, no dupACK threshold"
    }

    fn tcp_defaults(&self) -> TcpConfig {
        cp_cfg(TcpConfig::default())
    }

    fn defaults(&self) -> CpParams {
        CpParams::default()
    }

    fn docs(&self) -> &'static [Doc] {
        CP_DOCS
    }

    fn build(&self, p: CpParams, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        with_cp(p, t)
    }
}
