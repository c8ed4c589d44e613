//! Queue disciplines applied when a packet arrives at a switch port: drop-tail, ECN marking at a
//! threshold K (DCTCP), RED (drop or mark), random drop on overflow, pFabric, and CP's payload cutting.

use serde::{Deserialize, Serialize};
use tailcut_proto::units::Bytes;

/// Admission / marking policy of a queue. Buffers are byte-limited; every discipline drops a packet
/// that does not fit (or, for random drop, a random one).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AqmConfig {
    /// Drop the arriving packet when the buffer is full.
    #[default]
    DropTail,
    /// DCTCP marking (Alizadeh et al. 2010, Sec. 3.1): mark an ECN-capable arriving packet CE when the
    /// instantaneous queue, counted in bytes before it, is at least `k`. Not-ECT packets are admitted
    /// unmarked; overflow drops as drop-tail.
    Ecn { k: Bytes },
    /// RED (Floyd & Jacobson 1993) with the "gentle" extension: EWMA of the queue with weight `w_q`,
    /// probability rising linearly from 0 at `min_th` to `max_p` at `max_th` and on to 1 at 2 `max_th`,
    /// spread by the inter-mark count. `mark` = true marks ECN-capable packets instead of dropping them
    /// (RED-ECN); not-ECT packets are then dropped.
    Red {
        min_th: Bytes,
        max_th: Bytes,
        #[serde(default = "default_max_p")]
        max_p: f64,
        #[serde(default = "default_w_q")]
        w_q: f64,
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
        #[serde(default = "default_trim_header")]
        header_bytes: Bytes,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        threshold: Option<Bytes>,
        #[serde(default = "default_trim_headroom")]
        header_headroom: Bytes,
        #[serde(default)]
        priority_headers: bool,
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
    pub fn validate(&self) -> Result<(), String> {
        match self {
            AqmConfig::Red {
                min_th,
                max_th,
                max_p,
                w_q,
                ..
            } => {
                if min_th.0 >= max_th.0 {
                    return Err(format!(
                        "min_th ({}) must be below max_th ({})",
                        min_th.0, max_th.0
                    ));
                }
                if !(0.0..=1.0).contains(max_p) || *max_p == 0.0 {
                    return Err(format!("max_p must be in (0, 1], got {max_p}"));
                }
                if !(0.0..=1.0).contains(w_q) || *w_q == 0.0 {
                    return Err(format!("w_q must be in (0, 1], got {w_q}"));
                }
                Ok(())
            }
            AqmConfig::Trim { header_bytes, .. } => {
                if header_bytes.0 == 0 {
                    return Err("header_bytes must be > 0".into());
                }
                Ok(())
            }
            _ => Ok(()),
        }
    }
}

/// Running RED state of one queue.
#[derive(Clone, Debug, Default)]
pub struct RedState {
    pub avg_bytes: f64,
    /// Packets since the last mark/drop (RED's `count`), -1 when below min_th.
    pub count: i64,
    /// When the queue went idle, for the idle-time correction of the average.
    pub idle_since_ns: Option<u64>,
}

/// RED's decision for one arrival. `q_bytes` is the instantaneous queue; `tx_time_ns` the time to send
/// a typical packet, used to age the average across idle periods (Floyd & Jacobson Sec. 4).
pub fn red_should_signal(
    st: &mut RedState,
    cfg: (u64, u64, f64, f64),
    q_bytes: u64,
    now_ns: u64,
    tx_time_ns: u64,
    u: f64,
) -> bool {
    let (min_th, max_th, max_p, w_q) = cfg;
    if let Some(idle) = st.idle_since_ns.take() {
        let m = (now_ns.saturating_sub(idle) / tx_time_ns.max(1)) as i32;
        st.avg_bytes *= (1.0 - w_q).powi(m.min(1_000_000));
    }
    st.avg_bytes = (1.0 - w_q) * st.avg_bytes + w_q * q_bytes as f64;
    let avg = st.avg_bytes;
    let (min_th, max_th) = (min_th as f64, max_th as f64);
    if avg < min_th {
        st.count = -1;
        return false;
    }
    st.count += 1;
    let pb = if avg < max_th {
        max_p * (avg - min_th) / (max_th - min_th)
    } else if avg < 2.0 * max_th {
        max_p + (1.0 - max_p) * (avg - max_th) / max_th
    } else {
        1.0
    };
    let denom = 1.0 - st.count as f64 * pb;
    let pa = if denom <= 0.0 { 1.0 } else { pb / denom };
    if u < pa {
        st.count = 0;
        true
    } else {
        false
    }
}
