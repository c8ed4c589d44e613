//! Configuration of a port's traffic classes and of how they are served (the queue itself is
//! `qdisc::PortQueue`).

use super::aqm::AqmConfig;
use serde::{Deserialize, Serialize};
use tailcut_proto::units::Bytes;

/// How a port serves its classes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SchedConfig {
    /// Lower class index first.
    #[default]
    StrictPriority,
    /// Weighted round robin by packets: class i sends up to `weights[i]` packets per round.
    Wrr {
        /// Packets per round of each class, in class order.
        weights: Vec<u32>,
    },
}

/// One traffic class of a port.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct ClassConfig {
    /// Packet classes (DSCP-like values in `Packet::class`) mapped to this queue.
    pub classes: Vec<u8>,
    /// Byte limit of this class (it also shares the port buffer); absent = the port buffer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub limit: Option<Bytes>,
    /// Queue discipline of this class; absent = the port's discipline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub aqm: Option<AqmConfig>,
}
