//! How the switch queue settings a scheme needs ([`SwitchDefault`], from the scheme layer) change the
//! experiment's `network` section when the scheme gives no `network` of its own.

use crate::net::aqm::AqmConfig;
use crate::net::queue::{ClassConfig, SchedConfig};
use crate::topo::SwitchQueues;
use tailcut_proto::units::Bytes;
use tailcut_scheme::SwitchDefault;

/// The experiment's queues with `d` applied. CloudBurst's class depends on its packet size, so its
/// transport applies it (`CloudBurstTransport::switch_queues`).
pub fn apply(d: SwitchDefault, base: &SwitchQueues) -> SwitchQueues {
    match d {
        SwitchDefault::Unchanged | SwitchDefault::CloudBurstClass { .. } => base.clone(),
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
