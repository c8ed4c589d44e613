//! `mptcp`: MPTCP as Linux v0.90 (the FUSO paper's baseline). Sub-flows take every TCP option of `tcp`;
//! the multipath parameters are listed in `MPTCP_DOCS`, CP's with `cp = true`. `fuso` resolves
//! through [`multipath`] too.

use super::cp::{cp_cfg, cp_switch, CpParams, CP_DOCS};
use super::over_tcp::{tcp_config, tcp_params, tcp_table};
use super::{bad, overlay, params_of, parse, split, to_map, Doc, Param, Scheme, TCP_DOCS};
use crate::{EngineSpec, SchemeSpec, SwitchDefault};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use tailcut_proto::mptcp::{FusoConfig, MptcpConfig};
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::units::Bytes;
use tailcut_proto::ConfigError;

pub struct Mptcp;

/// The registry's view of `MptcpConfig` (units on sizes; FUSO's weights apart).
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

impl MptcpParams {
    fn of(c: &MptcpConfig) -> MptcpParams {
        MptcpParams {
            subflows: c.subflows,
            coupled: c.coupled,
            opportunistic_retransmit: c.opportunistic_retransmit,
            penalize: c.penalize,
            dead_after_timeouts: c.dead_after_timeouts,
            warmup: Bytes(c.warmup_bytes),
            ofo_to_data_level: c.ofo_to_data_level,
            cp: false,
        }
    }
}

const MPTCP_DOCS: &[Doc] = &[
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
        "CP on every sub-flow: receiver PACKs for cut segments, precise retransmission, dupACK threshold inf, payload-cutting switches as transport cp; the switch_* parameters apply only with it",
    ),
];

/// TCP's options as sub-flows read them: the initial window is the connection's.
fn subflow_docs() -> Vec<Doc> {
    TCP_DOCS
        .iter()
        .map(|&(k, d)| match k {
            "initial_cwnd_segments" => (
                k,
                "the connection's total initial window, segments, split evenly over the sub-flows (at least 1 each)",
            ),
            _ => (k, d),
        })
        .collect()
}

/// The parameters of a multipath scheme with `defaults`, FUSO's after them if it has them.
pub fn multipath_params(defaults: &MptcpConfig, fuso: Option<(&FusoConfig, &[Doc])>) -> Vec<Param> {
    let mut all = tcp_params(&TcpConfig::default(), &subflow_docs());
    all.extend(params_of(&to_map(&MptcpParams::of(defaults)), MPTCP_DOCS));
    all.extend(params_of(&to_map(&CpParams::default()), CP_DOCS));
    if let Some((f, docs)) = fuso {
        all.extend(params_of(&to_map(f), docs));
    }
    all
}

/// Resolves a multipath scheme whose defaults are `defaults`; `fuso` holds FUSO's own parameter keys
/// (the others would be TCP's), read into `defaults.fuso`.
/// Also returns the `params` table with every parameter at its effective value (CP's only with `cp`).
pub fn multipath(
    params: &Map<String, Value>,
    defaults: MptcpConfig,
    fuso: Option<&[Doc]>,
) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
    let is = |docs: &[Doc], k: &str| docs.iter().any(|(n, _)| *n == k);
    let (m_user, rest) = split(params, |k| is(MPTCP_DOCS, k));
    let (f_user, rest) = split(&rest, |k| fuso.is_some_and(|d| is(d, k)));
    let (cp_user, tcp_user) = split(&rest, |k| is(CP_DOCS, k));
    let m: MptcpParams = parse(overlay(to_map(&MptcpParams::of(&defaults)), m_user))?;
    // With CP the sub-flows start from CP's TCP defaults (SACK, dupACK threshold inf), as `cp` does.
    let base = if m.cp {
        cp_cfg(TcpConfig::default())
    } else {
        TcpConfig::default()
    };
    let mut tcp = tcp_config(base, tcp_user, params)?;
    let mut filled = tcp_table(&tcp);
    filled.extend(to_map(&m));
    if tcp.handshake {
        // The `testbed` profile brings the handshake: say so rather than run without it.
        if !params.contains_key("handshake") {
            return bad(
                "host",
                "host = \"testbed\" includes the handshake, which MPTCP does not model (sub-flows start \
                 established); use host = \"linux\" with timer_hz = 250 and the host_delay you want",
            );
        }
        return bad(
            "handshake",
            "MPTCP sub-flows start established (no MP_CAPABLE / MP_JOIN handshake modelled)",
        );
    }
    let switch = if m.cp {
        if !tcp.sack {
            return bad("sack", "CP's PACK is a SACK-format option; needs sack = true");
        }
        tcp.cp = true;
        let cp: CpParams = parse(overlay(to_map(&CpParams::default()), cp_user))?;
        filled.extend(to_map(&cp));
        cp_switch(&cp)?
    } else {
        if let Some((k, _)) = CP_DOCS.iter().find(|(k, _)| params.contains_key(*k)) {
            return bad(k, "only with cp = true");
        }
        SwitchDefault::Unchanged
    };
    let fuso = match defaults.fuso {
        Some(f) => {
            let f: FusoConfig = parse(overlay(to_map(&f), f_user))?;
            filled.extend(to_map(&f));
            Some(f)
        }
        None => None,
    };
    let cfg = MptcpConfig {
        subflows: m.subflows,
        coupled: m.coupled,
        opportunistic_retransmit: m.opportunistic_retransmit,
        penalize: m.penalize,
        dead_after_timeouts: m.dead_after_timeouts,
        warmup_bytes: m.warmup.0,
        ofo_to_data_level: m.ofo_to_data_level,
        fuso,
    };
    cfg.validate().map_err(|e| e.at("params"))?;
    let spec = SchemeSpec {
        switch,
        ..SchemeSpec::of(EngineSpec::Mptcp { tcp, cfg })
    };
    Ok((spec, filled))
}

impl Scheme for Mptcp {
    fn name(&self) -> &'static str {
        "mptcp"
    }

    fn description(&self) -> &'static str {
        "MPTCP as Linux v0.90: sub-flows on their own 5-tuples, data sequence numbers, LIA, lowest-RTT scheduler, opportunistic retransmission, reinjection"
    }

    fn params(&self) -> Vec<Param> {
        multipath_params(&MptcpConfig::default(), None)
    }

    fn resolve_filled(
        &self,
        params: &Map<String, Value>,
    ) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
        multipath(params, MptcpConfig::default(), None)
    }
}
