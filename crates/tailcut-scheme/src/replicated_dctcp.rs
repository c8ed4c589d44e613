//! `replicated_dctcp`: DCTCP with every flow replicated on `copies` connections (CloudBurst's baseline).

use super::over_tcp::dctcp_cfg;
use super::repflow::{replicated, ReplicaParams, REPLICA_DOCS};
use super::{Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::ConfigError;

pub struct ReplicatedDctcp;

impl TcpScheme for ReplicatedDctcp {
    type Params = ReplicaParams;

    fn name(&self) -> &'static str {
        "replicated_dctcp"
    }

    fn description(&self) -> &'static str {
        "DCTCP with every flow replicated on `copies` connections (CloudBurst's baseline)"
    }

    fn tcp_defaults(&self) -> TcpConfig {
        dctcp_cfg()
    }

    fn defaults(&self) -> ReplicaParams {
        ReplicaParams {
            copies: 2,
            replicate_below: None,
        }
    }

    fn docs(&self) -> &'static [Doc] {
        REPLICA_DOCS
    }

    fn build(&self, p: ReplicaParams, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        replicated(p, t)
    }
}
