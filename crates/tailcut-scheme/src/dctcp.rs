//! `dctcp`: DCTCP (RFC 8257) over the same TCP.

use super::over_tcp::{dctcp_cfg, NoParams};
use super::{Doc, TcpScheme};
use crate::SchemeSpec;
use crate::TcpParts;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::ConfigError;

pub struct Dctcp;

impl TcpScheme for Dctcp {
    type Params = NoParams;

    fn name(&self) -> &'static str {
        "dctcp"
    }

    fn description(&self) -> &'static str {
        "DCTCP (RFC 8257) over the same TCP; needs ECN marking at switches (aqm = ecn)"
    }

    fn tcp_defaults(&self) -> TcpConfig {
        dctcp_cfg()
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

#[cfg(test)]
mod tests {
    use crate::resolve;
    use serde_json::{json, Map};
    use tailcut_proto::tcp::CongestionControl;

    #[test]
    fn dctcp_defaults_and_param_errors() {
        let t = resolve("dctcp", &Map::new()).unwrap();
        let c = t.engine.tcp().unwrap();
        assert!(c.ecn && matches!(c.congestion_control, CongestionControl::Dctcp { .. }));
        let e = resolve("dctcp", json!({ "ecn": false }).as_object().unwrap())
            .err()
            .unwrap();
        assert_eq!(e.path, "params.ecn");
    }
}
