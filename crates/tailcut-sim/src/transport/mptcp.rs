//! Registry entries `mptcp` and `fuso`: MPTCP (Linux v0.90 as the FUSO paper's baseline) and FUSO on
//! top of it (Chen et al., USENIX ATC'16). Sub-flows take every TCP parameter of `tcp`; the multipath
//! parameters are listed in `MPTCP_DOCS` / `FUSO_DOCS`.

use super::{
    cp_cfg, cp_switch, parse, to_map, validate_tcp, ConnSetup, CpParams, SwitchDefault, TransportInfo,
    CP_DOCS, TCP_DOCS,
};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tailcut_proto::mptcp::{FusoConfig, MptcpConfig, MptcpEndpoint};
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::units::Bytes;
use tailcut_proto::Engine;

/// An MPTCP-based transport: each sub-flow's TCP configuration (with the connection's total initial
/// window) and the multipath layer's.
#[derive(Clone, Debug, PartialEq)]
pub struct MptcpTransport {
    pub tcp: TcpConfig,
    pub cfg: MptcpConfig,
    /// `cp = true`: CP's payload-cutting switch ports, as the `cp` transport declares them.
    pub switch: SwitchDefault,
}

/// The registry's view of `MptcpConfig` (units on sizes; FUSO's weights flattened).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct MptcpParams {
    subflows: u32,
    coupled: bool,
    opportunistic_retransmit: bool,
    penalize: bool,
    dead_after_timeouts: u32,
    warmup: Bytes,
    ofo_to_data_level: bool,
    cp: bool,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct FusoParams {
    alpha: f64,
    beta: f64,
}

pub(super) const MPTCP_DOCS: &[(&str, &str)] = &[
    ("subflows", "sub-flows per connection, each its own 5-tuple (FUSO testbed: 4; simulation: 8)"),
    (
        "coupled",
        "coupled congestion avoidance, LIA (RFC 6356); slow start and decreases stay per sub-flow",
    ),
    (
        "opportunistic_retransmit",
        "Linux MPTCP: resend the data-level head on the scheduled sub-flow when the receive window blocks",
    ),
    (
        "penalize",
        "... and halve cwnd of slower sub-flows holding that head, once per their RTT",
    ),
    (
        "dead_after_timeouts",
        "consecutive RTOs after which a sub-flow is dead and its data reinjected on the others (0 = never)",
    ),
    (
        "warmup",
        "bytes each end sends before application data to open every sub-flow, then idle one RTO (paper: 100KB)",
    ),
    (
        "ofo_to_data_level",
        "receiver: sub-flow out-of-sequence segments go straight to the data-level buffer (FUSO Sec. 4.1)",
    ),
    (
        "cp",
        "CP on every sub-flow (issue #10): receiver PACKs for cut segments, precise retransmission, dupACK threshold inf, payload-cutting switches as transport cp; the switch_* parameters apply only with it",
    ),
];

pub(super) const FUSO_DOCS: &[(&str, &str)] = &[
    (
        "alpha",
        "weight of the overall loss rate in C_l (Sec. 3.2.1: 0.5)",
    ),
    ("beta", "weight of the latest loss rate in C_l (Sec. 3.2.1: 0.5)"),
];

fn defaults(fuso: bool) -> (TcpConfig, MptcpParams, FusoParams) {
    let c = if fuso {
        MptcpConfig::fuso()
    } else {
        MptcpConfig::default()
    };
    let f = FusoConfig::default();
    (
        TcpConfig::default(),
        MptcpParams {
            subflows: c.subflows,
            coupled: c.coupled,
            opportunistic_retransmit: c.opportunistic_retransmit,
            penalize: c.penalize,
            dead_after_timeouts: c.dead_after_timeouts,
            warmup: Bytes(c.warmup_bytes),
            ofo_to_data_level: c.ofo_to_data_level,
            cp: false,
        },
        FusoParams {
            alpha: f.alpha,
            beta: f.beta,
        },
    )
}

pub(super) fn registry() -> Vec<TransportInfo> {
    [
        (
            "mptcp",
            "MPTCP as Linux v0.90: sub-flows on their own 5-tuples, data sequence numbers, LIA, lowest-RTT scheduler, opportunistic retransmission, reinjection",
            false,
        ),
        (
            "fuso",
            "FUSO (Chen et al., ATC'16): MPTCP plus copies of the worst sub-flow's un-ACKed packets on the best sub-flow's spare cwnd, and the receiver change",
            true,
        ),
    ]
    .into_iter()
    .map(|(name, description, fuso)| {
        let (tcp, m, f) = defaults(fuso);
        let mut params = to_map(&tcp);
        params.extend(to_map(&m));
        params.extend(to_map(&CpParams::default()));
        let mut docs: Vec<(&str, &str)> = TCP_DOCS
            .iter()
            .map(|&(k, d)| match k {
                "initial_cwnd_segments" => (
                    k,
                    "the connection's total initial window, segments, split evenly over the sub-flows (at least 1 each)",
                ),
                _ => (k, d),
            })
            .collect();
        docs.extend_from_slice(MPTCP_DOCS);
        docs.extend_from_slice(CP_DOCS);
        if fuso {
            params.extend(to_map(&f));
            docs.extend_from_slice(FUSO_DOCS);
        }
        TransportInfo {
            name,
            description,
            params: Value::Object(params),
            docs,
        }
    })
    .collect()
}

pub(super) fn is_mptcp(name: &str) -> bool {
    matches!(name, "mptcp" | "fuso")
}

pub(super) fn resolve(name: &str, params: &Map<String, Value>) -> Result<MptcpTransport, String> {
    let fuso = name == "fuso";
    let (tcp, m, f) = defaults(fuso);
    let (mut m_map, mut f_map, mut cp_map) = (to_map(&m), to_map(&f), to_map(&CpParams::default()));
    let mut tcp_user = Map::new();
    for (k, v) in params {
        if m_map.contains_key(k) {
            m_map.insert(k.clone(), v.clone());
        } else if fuso && f_map.contains_key(k) {
            f_map.insert(k.clone(), v.clone());
        } else if cp_map.contains_key(k) {
            cp_map.insert(k.clone(), v.clone());
        } else {
            tcp_user.insert(k.clone(), v.clone());
        }
    }
    let m: MptcpParams = parse(m_map)?;
    // With CP the sub-flows start from CP's TCP defaults (SACK, dupACK threshold inf), as `cp` does.
    let mut tcp_map = to_map(&if m.cp { cp_cfg(tcp) } else { tcp });
    tcp_map.extend(tcp_user);
    let mut tcp: TcpConfig = parse(tcp_map)?;
    if !tcp.handshake && !params.contains_key("initial_rto") {
        // As for TCP (see `resolve`): without a handshake the first RTO is the minimum RTO.
        tcp.initial_rto = tcp.min_rto;
    }
    validate_tcp(&tcp).map_err(|e| format!("params.{e}"))?;
    if tcp.handshake {
        return Err("params.handshake: MPTCP sub-flows start established (no MP_CAPABLE / MP_JOIN handshake modelled)".into());
    }
    if tcp.tlp.is_some() || tcp.tcp_ir.is_some() || tcp.proactive || tcp.pias.is_some() {
        return Err("params: MPTCP sub-flows are plain TCP (no TLP, TCP-IR, Proactive or PIAS)".into());
    }
    let switch = if m.cp {
        if !tcp.sack {
            return Err("params.sack: CP's PACK is a SACK-format option; needs sack = true".into());
        }
        tcp.cp = true;
        cp_switch(&parse(cp_map)?)?
    } else {
        if let Some(k) = CP_DOCS.iter().map(|(k, _)| *k).find(|k| params.contains_key(*k)) {
            return Err(format!("params.{k}: only with cp = true"));
        }
        SwitchDefault::Unchanged
    };
    let f: FusoParams = parse(f_map)?;
    let cfg = MptcpConfig {
        subflows: m.subflows,
        coupled: m.coupled,
        opportunistic_retransmit: m.opportunistic_retransmit,
        penalize: m.penalize,
        dead_after_timeouts: m.dead_after_timeouts,
        warmup_bytes: m.warmup.0,
        ofo_to_data_level: m.ofo_to_data_level,
        fuso: fuso.then_some(FusoConfig {
            alpha: f.alpha,
            beta: f.beta,
        }),
    };
    cfg.validate().map_err(|e| format!("params.{e}"))?;
    Ok(MptcpTransport { tcp, cfg, switch })
}

impl MptcpTransport {
    pub(super) fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        s.pair(rng_sender, rng_receiver, |e| {
            MptcpEndpoint::new(
                self.tcp.clone(),
                self.cfg.clone(),
                e.tuple,
                e.isn_local,
                e.isn_peer,
                e.rng,
            )
        })
    }

    /// Ports each end of a connection uses: one per sub-flow, consecutive.
    pub(super) fn ports(&self) -> u16 {
        self.cfg.subflows as u16
    }
}

#[cfg(test)]
mod tests {
    use super::super::{resolve as resolve_any, Transport};
    use serde_json::json;

    #[test]
    fn fuso_defaults_and_errors_name_the_field() {
        let Transport::Mptcp(t) = resolve_any("fuso", &serde_json::Map::new()).unwrap() else {
            panic!()
        };
        assert_eq!(t.cfg.subflows, 4);
        assert!(t.cfg.ofo_to_data_level);
        let f = t.cfg.fuso.unwrap();
        assert_eq!((f.alpha, f.beta), (0.5, 0.5));
        let Transport::Mptcp(m) = resolve_any("mptcp", json!({"subflows": 8}).as_object().unwrap()).unwrap()
        else {
            panic!()
        };
        assert!(m.cfg.fuso.is_none() && !m.cfg.ofo_to_data_level && m.cfg.subflows == 8);
        let e = resolve_any("fuso", json!({"subflows": 0}).as_object().unwrap())
            .err()
            .unwrap();
        assert!(e.contains("subflows"), "{e}");
        let e = resolve_any("fuso", json!({"alpha": -1.0}).as_object().unwrap())
            .err()
            .unwrap();
        assert!(e.contains("alpha"), "{e}");
        let e = resolve_any("mptcp", json!({"alpha": 0.5}).as_object().unwrap())
            .err()
            .unwrap();
        assert!(e.contains("alpha"), "{e}");
        let e = resolve_any("mptcp", json!({"warmup": "lots"}).as_object().unwrap())
            .err()
            .unwrap();
        assert!(e.contains("warmup"), "{e}");
        let e = resolve_any("fuso", json!({"handshake": true}).as_object().unwrap())
            .err()
            .unwrap();
        assert!(e.contains("handshake"), "{e}");
    }

    #[test]
    fn cp_on_subflows_sets_cps_endpoint_and_switch_defaults() {
        use super::super::SwitchDefault;
        use crate::net::aqm::AqmConfig;
        for name in ["mptcp", "fuso"] {
            let Transport::Mptcp(t) = resolve_any(name, json!({"cp": true}).as_object().unwrap()).unwrap()
            else {
                panic!()
            };
            assert!(
                t.tcp.cp && t.tcp.sack && t.tcp.dupack_threshold == u32::MAX,
                "{name}"
            );
            assert!(
                matches!(t.switch, SwitchDefault::Trim { header_bytes: 66, .. }),
                "{name}"
            );
            let Transport::Mptcp(t) = resolve_any(name, &serde_json::Map::new()).unwrap() else {
                panic!()
            };
            assert!(!t.tcp.cp && t.switch == SwitchDefault::Unchanged && t.tcp.dupack_threshold == 3);
        }
        // The experiment's ECN K is kept as the trimming queue's ecn_k, as for `cp_dctcp`.
        let t = resolve_any(
            "fuso",
            json!({"cp": true, "dupack_threshold": 3}).as_object().unwrap(),
        )
        .unwrap();
        let Transport::Mptcp(m) = &t else { panic!() };
        assert_eq!(
            m.tcp.dupack_threshold, 3,
            "a user's dupACK threshold wins (hybrid)"
        );
        let base = crate::topo::SwitchQueues {
            aqm: AqmConfig::Ecn {
                k: tailcut_proto::units::Bytes(30_000),
            },
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
            let e = resolve_any("fuso", params.as_object().unwrap()).err().unwrap();
            assert!(e.contains(field), "{e}");
        }
    }

    #[test]
    fn every_parameter_is_documented_once() {
        // TCP's own scheme switches (set by other transports) are not parameters of these two.
        let switches = [
            "tlp",
            "tcp_ir",
            "proactive",
            "pias",
            "pfabric_priority",
            "pfabric_probe_after",
            "spray_paths",
        ];
        for info in super::registry() {
            let serde_json::Value::Object(params) = &info.params else {
                panic!("params of {} are not a table", info.name)
            };
            for k in params.keys().filter(|k| !switches.contains(&k.as_str())) {
                let n = info.docs.iter().filter(|(d, _)| d == k).count();
                assert_eq!(n, 1, "{}: {k}", info.name);
            }
        }
    }
}
