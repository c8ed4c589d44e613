//! `cp_dctcp`: CP over DCTCP, payload cutting plus ECN marking at the experiment's K.

use super::cp::{cp_cfg, with_cp, CpParams, CP_DOCS};
use super::over_tcp::dctcp_cfg;
use super::{Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::ConfigError;

pub struct CpDctcp;

impl TcpScheme for CpDctcp {
    type Params = CpParams;

    fn name(&self) -> &'static str {
        "cp_dctcp"
    }

    fn description(&self) -> &'static str {
        "CP over DCTCP: payload cutting plus ECN marking at the experiment's K, PACK, precise fast retransmit"
    }

    fn tcp_defaults(&self) -> TcpConfig {
        cp_cfg(dctcp_cfg())
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
