//! Registry-wide rules: every parameter listed and documented, every listed parameter accepted.

use super::over_tcp::TCP_DOCS;
use super::{registry, resolve, to_map, SCHEMES};
use serde_json::{Map, Value};
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::Dur;

/// `tailcut schemes` is the parameters' only reference: one without a doc line cannot be looked up.
#[test]
fn every_parameter_of_every_scheme_and_shim_is_documented_once() {
    let all = registry();
    assert_eq!(all.len(), SCHEMES.len() + 1, "schemes and the T-RACKs shim");
    for info in &all {
        assert!(!info.description.is_empty(), "{}", info.name);
        for (i, p) in info.params.iter().enumerate() {
            assert!(
                !p.doc.is_empty(),
                "{}: `{}` has no documentation",
                info.name,
                p.name
            );
            assert!(
                info.params[..i].iter().all(|q| q.name != p.name),
                "{}: `{}` listed twice",
                info.name,
                p.name
            );
        }
    }
}

/// The registry's text is what users read (`tailcut schemes`, docs/experiment-file.md): no pointers into
/// the project's issues or design notes, no Rust paths.
#[test]
fn registry_text_has_no_internal_notes() {
    for info in registry() {
        let texts = std::iter::once(info.description).chain(info.params.iter().map(|p| p.doc));
        for text in texts {
            for note in ["issue #", "(seed ", "::", "TODO"] {
                assert!(!text.contains(note), "{}: {note:?} in {text:?}", info.name);
            }
        }
    }
}

/// Every TCP option, optional ones included, is listed (serialisation omits the unset optional ones, so
/// set them all).
#[test]
fn every_tcp_option_is_listed() {
    let full = TcpConfig {
        spray_paths: 4,
        delayed_ack: Some(Dur::from_millis(1)),
        ..TcpConfig::default()
    };
    for key in to_map(&full).keys() {
        assert!(
            TCP_DOCS.iter().any(|(n, _)| n == key),
            "TCP option `{key}` is not listed"
        );
    }
    let tcp = registry().into_iter().find(|s| s.name == "tcp").unwrap();
    let spray = tcp.params.iter().find(|p| p.name == "spray_paths").unwrap();
    assert_eq!(spray.default, Value::from(0));
}

/// A listed parameter is a real one: given alone at its default it is never an unknown key.
#[test]
fn every_listed_parameter_is_accepted() {
    for info in registry().iter().filter(|i| i.kind == "transport") {
        for p in info.params.iter().filter(|p| !p.name.contains('.')) {
            let mut m = Map::new();
            m.insert(p.name.clone(), p.default.clone());
            if let Err(e) = resolve(info.name, &m) {
                assert!(
                    !e.reason.contains("unknown field"),
                    "{}: `{}` = {}: {e}",
                    info.name,
                    p.name,
                    p.default
                );
            }
        }
        resolve(info.name, &Map::new()).unwrap_or_else(|e| panic!("{}: {e}", info.name));
    }
}

#[test]
fn unknown_transports_and_parameters_name_the_field() {
    let e = resolve("tcpp", &Map::new()).err().unwrap();
    assert_eq!(e.path, "transport");
    assert!(e.reason.contains("known: tcp, dctcp"), "{e}");
    let m: Map<String, Value> = serde_json::from_str(r#"{"min_rtto": "5ms"}"#).unwrap();
    let e = resolve("tcp", &m).err().unwrap();
    assert_eq!(e.path, "params.min_rtto");
    assert!(e.reason.contains("unknown field"), "{e}");
    let m: Map<String, Value> = serde_json::from_str(r#"{"copies": 9}"#).unwrap();
    assert_eq!(resolve("repflow", &m).err().unwrap().path, "params.copies");
}

#[test]
fn initial_rto_follows_min_rto_only_without_a_handshake() {
    let rto = |json: &str| {
        let m: Map<String, Value> = serde_json::from_str(json).unwrap();
        let cfg = super::over_tcp::tcp_config(TcpConfig::default(), m.clone(), &m).unwrap();
        cfg.initial_rto
    };
    assert_eq!(rto(r#"{"min_rto": "5ms"}"#), Dur::from_millis(5));
    assert_eq!(
        rto(r#"{"min_rto": "5ms", "handshake": true}"#),
        Dur::from_millis(1000)
    );
    assert_eq!(
        rto(r#"{"min_rto": "5ms", "initial_rto": "3s"}"#),
        Dur::from_millis(3000)
    );
}
