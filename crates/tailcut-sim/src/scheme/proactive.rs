//! `proactive`: Proactive (Flach et al., SIGCOMM'13), every data packet sent twice.

use super::over_tcp::NoParams;
use super::{Doc, TcpScheme};
use crate::transport::{TcpTransport, Transport};
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

    fn build(&self, _: NoParams, mut t: TcpTransport) -> Result<Transport, ConfigError> {
        t.cfg.proactive = true;
        Ok(Transport::new(t))
    }
}
