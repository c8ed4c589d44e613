//! `proactive`: Proactive (Flach et al., SIGCOMM'13), every data packet sent twice.

use super::over_tcp::NoParams;
use super::{Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::ConfigError;

pub struct Proactive;

impl TcpScheme for Proactive {
    type Params = NoParams;

    fn name(&self) -> &'static str {
        "proactive"
    }

    fn description(&self) -> &'static str {
        "Proactive (Flach et al., SIGCOMM'13): every data packet sent twice"
    }

    fn defaults(&self) -> NoParams {
        NoParams {}
    }

    fn docs(&self) -> &'static [Doc] {
        &[]
    }

    fn build(&self, _: NoParams, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        t.cfg.proactive = true;
        Ok(t.into_spec())
    }
}
