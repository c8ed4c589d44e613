//! Switch queue settings a TCP-based transport needs, applied to the experiment's `network` section when
//! the scheme gives no `network` of its own.

use crate::net::aqm::AqmConfig;
use crate::net::queue::{ClassConfig, SchedConfig};
use crate::topo::SwitchQueues;
use tailcut_proto::units::Bytes;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchDefault {
    Unchanged,
    /// PIAS: `levels` strict-priority classes (packet class i -> queue i) at switches, unless the
    /// experiment already lists classes. Buffer and discipline (e.g. ECN at K) are kept. Host NICs get
    /// the same classes only with `host_priority`: the PIAS implementation marks DSCP at the host and
    /// leaves the NIC a FIFO, so the deployed scheme's hosts send in arrival order.
    PriorityClasses {
        levels: u8,
        host_priority: bool,
    },
    /// pFabric: priority-dropping queues (`aqm = pfabric`) of `buffer_bytes` per switch port, one
    /// class; host NICs send by priority too (`host_aqm = pfabric`, buffer unchanged).
    Pfabric {
        buffer_bytes: u64,
    },
    /// CP: payload-cutting switch ports (`aqm = trim`), buffer unchanged; an experiment's ECN marking
    /// threshold (`aqm = ecn`) is kept as the trimming queue's `ecn_k`. An experiment that already
    /// asks for `trim` keeps its own settings.
    Trim {
        header_bytes: u64,
        header_headroom: u64,
        priority_headers: bool,
    },
}

impl SwitchDefault {
    /// The experiment's queues with this default applied.
    pub fn apply(self, base: &SwitchQueues) -> SwitchQueues {
        match self {
            SwitchDefault::Unchanged => base.clone(),
            SwitchDefault::PriorityClasses {
                levels,
                host_priority,
            } if base.classes.is_empty() => {
                let classes: Vec<ClassConfig> = (0..levels)
                    .map(|i| ClassConfig {
                        classes: vec![i],
                        limit: None,
                        aqm: None,
                    })
                    .collect();
                let host_classes = if host_priority {
                    classes.clone()
                } else {
                    base.host_classes.clone()
                };
                SwitchQueues {
                    classes,
                    sched: SchedConfig::StrictPriority,
                    host_classes,
                    ..base.clone()
                }
            }
            SwitchDefault::PriorityClasses { .. } => base.clone(),
            SwitchDefault::Pfabric { buffer_bytes } => SwitchQueues {
                buffer: Bytes(buffer_bytes),
                aqm: AqmConfig::Pfabric,
                host_aqm: AqmConfig::Pfabric,
                classes: Vec::new(),
                sched: SchedConfig::StrictPriority,
                ..base.clone()
            },
            SwitchDefault::Trim { .. } if matches!(base.aqm, AqmConfig::Trim { .. }) => base.clone(),
            SwitchDefault::Trim {
                header_bytes,
                header_headroom,
                priority_headers,
            } => {
                let ecn_k = match base.aqm {
                    AqmConfig::Ecn { k } => Some(k),
                    _ => None,
                };
                SwitchQueues {
                    aqm: AqmConfig::Trim {
                        header_bytes: Bytes(header_bytes),
                        threshold: None,
                        header_headroom: Bytes(header_headroom),
                        priority_headers,
                        ecn_k,
                    },
                    ..base.clone()
                }
            }
        }
    }
}
