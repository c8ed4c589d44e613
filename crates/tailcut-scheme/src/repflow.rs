//! `repflow`: RepFlow (Xu & Li, INFOCOM'14), small flows sent on two connections, the first to finish
//! counts. Its parameters serve `replicated_dctcp` too.

use super::{bad, Doc, TcpScheme};
use crate::{ReplicaPolicy, SchemeSpec, TcpParts, MAX_COPIES};
use serde::{Deserialize, Serialize};
use tailcut_proto::units::Bytes;
use tailcut_proto::ConfigError;

pub struct RepFlow;

/// How many connections carry a flow, and below which size.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReplicaParams {
    pub copies: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicate_below: Option<Bytes>,
}

pub const REPLICA_DOCS: &[Doc] = &[
    ("copies", "connections per replicated flow (RepFlow: 2), 1..=4"),
    (
        "replicate_below",
        "replicate flows smaller than this (RepFlow: 100KB); absent = every flow",
    ),
];

/// The transport with `p`'s replication.
pub fn replicated(p: ReplicaParams, mut t: TcpParts) -> Result<SchemeSpec, ConfigError> {
    if !(1..=MAX_COPIES).contains(&p.copies) {
        return bad("copies", format!("must be in 1..={MAX_COPIES}, got {}", p.copies));
    }
    t.replicas = ReplicaPolicy {
        copies: p.copies,
        below_bytes: p.replicate_below.map_or(u64::MAX, |b| b.0),
    };
    Ok(t.into_spec())
}

impl TcpScheme for RepFlow {
    type Params = ReplicaParams;

    fn name(&self) -> &'static str {
        "repflow"
    }

    fn description(&self) -> &'static str {
        "RepFlow (Xu & Li, INFOCOM'14): small flows sent on two connections, first to finish counts"
    }

    fn defaults(&self) -> ReplicaParams {
        ReplicaParams {
            copies: 2,
            replicate_below: Some(Bytes(100_000)),
        }
    }

    fn docs(&self) -> &'static [Doc] {
        REPLICA_DOCS
    }

    fn build(&self, p: ReplicaParams, t: TcpParts) -> Result<SchemeSpec, ConfigError> {
        replicated(p, t)
    }
}
