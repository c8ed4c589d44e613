//! `tcp`: TCP NewReno with SACK, the base every TCP-based scheme starts from.

use super::over_tcp::NoParams;
use super::{Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::ConfigError;

pub struct Tcp;

impl TcpScheme for Tcp {
    type Params = NoParams;

    fn name(&self) -> &'static str {
        "tcp"
    }

    fn description(&self) -> &'static str {
        "TCP NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO"
    }

    fn defaults(&self) -> NoParams {
        NoParams {}
    }

    fn docs(&self) -> &'static [Doc] {
        &[]
    }

    fn build(&self, _: NoParams, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        Ok(t.into_spec())
    }
}
