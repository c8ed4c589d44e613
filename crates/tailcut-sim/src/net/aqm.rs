//! Configuration of the queue disciplines (the experiment schema): drop-tail, ECN marking at a
//! threshold K (DCTCP), RED (drop or mark), random drop on overflow, pFabric, and CP's payload cutting.
//! Their rules live in `qdisc/`, one module each.

use serde::{Deserialize, Serialize};
use tailcut_proto::units::Bytes;
use tailcut_proto::ConfigError;

/// Admission / marking policy of a queue. Buffers are byte-limited; every discipline drops a packet
/// that does not fit (or, for random drop, a random one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[cfg_attr(feature = "schema", derive(schemars::JsonSchema))]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AqmConfig {
    /// Drop the arriving packet when the buffer is full.
    #[default]
    DropTail,
    /// DCTCP marking (Alizadeh et al. 2010, Sec. 3.1): mark an ECN-capable arriving packet CE when the
    /// instantaneous queue, counted in bytes before it, is at least `k`. Not-ECT packets are admitted
    /// unmarked; overflow drops as drop-tail.
    Ecn {
        /// Queue length, before the arriving packet, from which packets are marked.
        k: Bytes,
    },
    /// RED (Floyd & Jacobson 1993) with the "gentle" extension: EWMA of the queue with weight `w_q`,
    /// probability rising linearly from 0 at `min_th` to `max_p` at `max_th` and on to 1 at 2 `max_th`,
    /// spread by the inter-mark count. `mark` = true marks ECN-capable packets instead of dropping them
    /// (RED-ECN); not-ECT packets are then dropped.
    Red {
        /// Average queue at which marking or dropping starts.
        min_th: Bytes,
        /// Average queue at which the probability reaches `max_p`.
        max_th: Bytes,
        /// Probability at `max_th`.
        #[serde(default = "default_max_p")]
        max_p: f64,
        /// Weight of the latest queue length in the average.
        #[serde(default = "default_w_q")]
        w_q: f64,
        /// Mark ECN-capable packets instead of dropping them.
        #[serde(default)]
        mark: bool,
    },
    /// Random drop on overflow (Hashem 1989; ns-2's DropRand): when the arriving packet does not fit, a
    /// packet chosen uniformly from the queue and the arrival is dropped instead of the tail.
    RandomDrop,
    /// pFabric (Alizadeh et al., SIGCOMM'13, Sec. 4.2): packets carry a priority
    /// (`Packet::priority`, lower first). The port sends the earliest packet of the flow (5-tuple) that
    /// holds the highest-priority packet; when the buffer is full, the lowest-priority packet among the
    /// queued ones and the arrival is dropped (the arrival on a tie). Use a small buffer (the paper's
    /// 2 BDP, about 34 packets at 10 Gbps).
    Pfabric,
    /// CP, Cut Payload (Cheng et al., NSDI'14; htsim `CutPayloadQueue`): an arriving data packet that
    /// would take the queue above `threshold` (default: the buffer) is not dropped; its payload is cut
    /// and the header alone (`header_bytes`, `Packet::trimmed` set) is queued. A header may use
    /// `header_headroom` bytes beyond the buffer (the slides: "extra buffer < 1 packet size" while
    /// input < 13.1 x output); a header that does not fit even there is dropped. With
    /// `priority_headers` the headers wait in their own queue, served before data (NDP's
    /// CompositeQueue) and limited to `header_headroom`; by default they stay in the FIFO, as the
    /// slides' design does. `ecn_k` adds DCTCP marking at K (as `ecn`) for CP with DCTCP.
    Trim {
        /// Size of a cut packet (the header kept).
        #[serde(default = "default_trim_header")]
        header_bytes: Bytes,
        /// Queue length above which payloads are cut. Default: the buffer.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<Bytes>,
        /// Bytes beyond the buffer that cut headers may use.
        #[serde(default = "default_trim_headroom")]
        header_headroom: Bytes,
        /// Queue headers in their own queue, served before data.
        #[serde(default)]
        priority_headers: bool,
        /// Also mark ECN at this queue length (CP with DCTCP).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        ecn_k: Option<Bytes>,
    },
}

/// The slides' header size (Ethernet 14 + IP 20 + TCP 32 with timestamps).
pub fn default_trim_header() -> Bytes {
    Bytes(66)
}
/// One full packet of extra room for cut headers (the slides' "< 1 packet size").
pub fn default_trim_headroom() -> Bytes {
    Bytes(1500)
}

fn default_max_p() -> f64 {
    0.1
}
fn default_w_q() -> f64 {
    0.002
}

impl AqmConfig {
    /// Checks the thresholds and probabilities; the error's path is the field (relative to the AQM's
    /// table).
    pub fn validate(&self) -> Result<(), ConfigError> {
        match self {
            AqmConfig::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                ..
            } => {
                if min_th.0 >= max_th.0 {
                    return Err(ConfigError::new(
                        "min_th",
                        format!("must be below max_th ({}), got {}", max_th.0, min_th.0),
                    ));
                }
                if !(0.0..=1.0).contains(max_p) || *max_p == 0.0 {
                    return Err(ConfigError::new(
                        "max_p",
                        format!("must be in (0, 1], got {max_p}"),
                    ));
                }
                if !(0.0..=1.0).contains(w_q) || *w_q == 0.0 {
                    return Err(ConfigError::new("w_q", format!("must be in (0, 1], got {w_q}")));
                }
                Ok(())
            }
            AqmConfig::Trim { header_bytes, .. } => {
                if header_bytes.0 == 0 {
                    return Err(ConfigError::new("header_bytes", "must be > 0"));
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}
