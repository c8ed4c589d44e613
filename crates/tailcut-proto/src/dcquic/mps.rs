//! Maximum packet size negotiation (DCQUIC Sec. 4.2): a connection's MPS (the UDP payload of its
//! packets) is chosen by the size of the task it carries. Sec. 4.2 finds 9 KB best for small tasks and
//! 5 KB for tasks of 1 MB and more; 1252 B is quinn's (and the paper's baseline) MPS without jumbo
//! frames.
//!
//! Both ends choose the same value and advertise it as QUIC's `max_udp_payload_size` transport
//! parameter, so the negotiated size is the smaller of the two; path MTU discovery is off, so the
//! connection sends at that size from its first 1-RTT packet (the network must carry it: the simulator's
//! links take any size, a real deployment needs jumbo frames).

use crate::units::Bytes;
use serde::{Deserialize, Serialize};

/// Smallest MPS QUIC allows (RFC 9000 Sec. 14: 1200 bytes of UDP payload).
pub const MIN_MPS: u64 = 1200;
/// Largest: a 9000-byte jumbo frame less IPv4 and UDP headers would be 8972; the paper counts 9 KB as
/// the MPS itself, so the bound is the UDP maximum.
pub const MAX_MPS: u64 = 65_527;

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MpsConfig {
    /// Choose the MPS by task size; off = `base` for every connection.
    pub negotiate: bool,
    /// MPS without negotiation (the paper's 1252 B).
    pub base: Bytes,
    /// MPS for tasks smaller than `large_task` (paper: 9 KB).
    pub small_task: Bytes,
    /// MPS for tasks of `large_task` bytes or more (paper: 5 KB).
    pub large_task_mps: Bytes,
    /// Task size from which a task is large (paper: 1 MB).
    pub large_task: Bytes,
}

impl Default for MpsConfig {
    fn default() -> Self {
        MpsConfig {
            negotiate: true,
            base: Bytes(1252),
            small_task: Bytes(9000),
            large_task_mps: Bytes(5000),
            large_task: Bytes(1_000_000),
        }
    }
}

impl MpsConfig {
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        for (name, v) in [
            ("base", self.base),
            ("small_task", self.small_task),
            ("large_task_mps", self.large_task_mps),
        ] {
            if !(MIN_MPS..=MAX_MPS).contains(&v.0) {
                return Err(crate::ConfigError::new(
                    format!("mps.{name}"),
                    format!("must be in {MIN_MPS}..={MAX_MPS}, got {}", v.0),
                ));
            }
        }
        Ok(())
    }

    /// The MPS of a connection whose task is `task_bytes` long.
    pub fn select(&self, task_bytes: u64) -> u16 {
        let b = if !self.negotiate {
            self.base
        } else if task_bytes >= self.large_task.0 {
            self.large_task_mps
        } else {
            self.small_task
        };
        b.0 as u16
    }
}
