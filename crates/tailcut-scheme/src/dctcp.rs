//! `dctcp`: DCTCP (RFC 8257) over the same TCP.

use super::over_tcp::{dctcp_cfg, Plain};

pub const DCTCP: Plain = Plain {
    name: "dctcp",
    description: "DCTCP (RFC 8257) over the same TCP; needs ECN marking at switches (aqm = ecn)",
    base: dctcp_cfg,
    set: |_| {},
};

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
