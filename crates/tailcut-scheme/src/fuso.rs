//! `fuso`: FUSO (Chen et al., ATC'16), MPTCP plus copies of the worst sub-flow's un-ACKed packets on the
//! best sub-flow's spare window, and its receiver change.

use super::mptcp::{multipath, multipath_params};
use super::{Doc, Param, Scheme};
use crate::SchemeSpec;
use serde_json::{Map, Value};
use tailcut_proto::mptcp::{FusoConfig, MptcpConfig};
use tailcut_proto::ConfigError;

pub struct Fuso;

const FUSO_DOCS: &[Doc] = &[
    (
        "alpha",
        "weight of the overall loss rate in C_l (Sec. 3.2.1: 0.5)",
    ),
    ("beta", "weight of the latest loss rate in C_l (Sec. 3.2.1: 0.5)"),
];

impl Scheme for Fuso {
    fn name(&self) -> &'static str {
        "fuso"
    }

    fn description(&self) -> &'static str {
        "FUSO (Chen et al., ATC'16): MPTCP plus copies of the worst sub-flow's un-ACKed packets on the best sub-flow's spare cwnd, and the receiver change"
    }

    fn params(&self) -> Vec<Param> {
        multipath_params(&MptcpConfig::fuso(), Some((&FusoConfig::default(), FUSO_DOCS)))
    }

    fn resolve_filled(
        &self,
        params: &Map<String, Value>,
    ) -> Result<(SchemeSpec, Map<String, Value>), ConfigError> {
        multipath(params, MptcpConfig::fuso(), Some(FUSO_DOCS))
    }
}
