//! `tcp_ir`: TCP-IR (Flach et al., SIGCOMM'13), one XOR-coded packet per half-RTT bin of data.

use super::{bad, Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::tcp::TcpIrConfig;
use tailcut_proto::ConfigError;

pub struct TcpIr;

impl TcpScheme for TcpIr {
    type Params = TcpIrConfig;

    fn name(&self) -> &'static str {
        "tcp_ir"
    }

    fn description(&self) -> &'static str {
        "TCP-IR (Flach et al., SIGCOMM'13): one XOR-coded packet per half-RTT bin of data"
    }

    fn defaults(&self) -> TcpIrConfig {
        TcpIrConfig::default()
    }

    fn docs(&self) -> &'static [Doc] {
        &[(
            "max_block_segments",
            "most data segments one XOR-coded packet covers (Flach et al.: 16)",
        )]
    }

    fn build(&self, p: TcpIrConfig, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        if p.max_block_segments == 0 {
            return bad("max_block_segments", "must be >= 1");
        }
        t.cfg.tcp_ir = Some(p);
        Ok(t.into_spec())
    }
}
