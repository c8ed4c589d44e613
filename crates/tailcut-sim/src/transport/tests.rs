//! The simulator's engines and queues of resolved schemes: what each scheme's spec becomes on the
//! simulated network (CP's trimming ports, MPTCP's ports per end).

use super::Transport;
use serde_json::{Map, Value};
use tailcut_proto::ConfigError;

/// The scheme layer's resolution, as the simulator's transport.
fn resolve(name: &str, params: &Map<String, Value>) -> Result<Transport, ConfigError> {
    crate::scheme::resolve(name, params).map(Transport::from)
}

use crate::net::aqm::AqmConfig;
use crate::scheme::registry;
use crate::topo::SwitchQueues;
use serde_json::json;
use tailcut_proto::units::Bytes;

#[test]
fn cp_brings_a_trimming_queue_and_keeps_the_ecn_threshold() {
    let t = resolve("cp_dctcp", &Map::new()).unwrap();
    let c = t.tcp().unwrap();
    assert!(c.cp && c.sack && c.ecn);
    assert_eq!(c.dupack_threshold, u32::MAX);
    let base = SwitchQueues {
        aqm: AqmConfig::Ecn { k: Bytes(32_000) },
        ..SwitchQueues::default()
    };
    match t.switch_queues(&base).aqm {
        AqmConfig::Trim {
            header_bytes,
            header_headroom,
            priority_headers,
            ecn_k,
            threshold,
        } => {
            assert_eq!(header_bytes, Bytes(66));
            assert_eq!(header_headroom, Bytes(1500));
            assert!(!priority_headers);
            assert_eq!(ecn_k, Some(Bytes(32_000)));
            assert_eq!(threshold, None);
        }
        other => panic!("{other:?}"),
    }
    let e = resolve("cp", json!({ "sack": false }).as_object().unwrap())
        .err()
        .unwrap();
    assert_eq!(e.path, "params.sack");
}

fn error_path(name: &str, params: Value) -> String {
    resolve(name, params.as_object().unwrap()).err().unwrap().path
}

#[test]
fn fuso_defaults_and_errors_name_the_field() {
    let fuso = registry().into_iter().find(|s| s.name == "fuso").unwrap();
    let default = |n: &str| fuso.params.iter().find(|p| p.name == n).unwrap().default.clone();
    assert_eq!(default("subflows"), json!(4));
    assert_eq!(default("ofo_to_data_level"), json!(true));
    assert_eq!((default("alpha"), default("beta")), (json!(0.5), json!(0.5)));
    let t = resolve("fuso", &Map::new()).unwrap();
    assert_eq!(t.ports_per_end(), 4);
    let t = resolve("mptcp", json!({"subflows": 8}).as_object().unwrap()).unwrap();
    assert_eq!(t.ports_per_end(), 8);
    assert_eq!(error_path("fuso", json!({"subflows": 0})), "params.subflows");
    assert_eq!(error_path("fuso", json!({"alpha": -1.0})), "params.alpha");
    // FUSO's weights are no parameters of plain MPTCP.
    let e = resolve("mptcp", json!({"alpha": 0.5}).as_object().unwrap())
        .err()
        .unwrap();
    assert!(e.reason.contains("alpha"), "{e}");
    assert_eq!(error_path("mptcp", json!({"warmup": "lots"})), "params.warmup");
    assert_eq!(error_path("fuso", json!({"handshake": true})), "params.handshake");
}

#[test]
fn cp_on_subflows_sets_cps_endpoint_and_switch_defaults() {
    for name in ["mptcp", "fuso"] {
        let t = resolve(name, json!({"cp": true}).as_object().unwrap()).unwrap();
        let c = t.tcp().unwrap();
        assert!(c.cp && c.sack && c.dupack_threshold == u32::MAX, "{name}");
        let base = SwitchQueues::default();
        assert!(
            matches!(
                t.switch_queues(&base).aqm,
                AqmConfig::Trim {
                    header_bytes: Bytes(66),
                    ..
                }
            ),
            "{name}"
        );
        let t = resolve(name, &Map::new()).unwrap();
        let c = t.tcp().unwrap();
        assert!(!c.cp && c.dupack_threshold == 3);
        assert_eq!(t.switch_queues(&base), base);
    }
    // The experiment's ECN K is kept as the trimming queue's ecn_k, as for `cp_dctcp`; a user's
    // dupACK threshold wins (hybrid).
    let t = resolve(
        "fuso",
        json!({"cp": true, "dupack_threshold": 3}).as_object().unwrap(),
    )
    .unwrap();
    assert_eq!(t.tcp().unwrap().dupack_threshold, 3);
    let base = SwitchQueues {
        aqm: AqmConfig::Ecn { k: Bytes(30_000) },
        ..Default::default()
    };
    let q = t.switch_queues(&base);
    assert!(
        matches!(q.aqm, AqmConfig::Trim { ecn_k: Some(k), .. } if k.0 == 30_000),
        "{:?}",
        q.aqm
    );
    for (params, field) in [
        (json!({"switch_header_bytes": "66B"}), "switch_header_bytes"),
        (json!({"cp": true, "sack": false}), "sack"),
        (
            json!({"cp": true, "switch_header_bytes": "0B"}),
            "switch_header_bytes",
        ),
        (json!({"cp": "yes"}), "cp"),
    ] {
        assert_eq!(error_path("fuso", params), format!("params.{field}"));
    }
}
