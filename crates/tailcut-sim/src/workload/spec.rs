//! The generators' output: one flow (or request/response exchange) to start at a given time.

use tailcut_proto::Time;

/// One flow of the workload. A list of these, sorted by `start`, is what the simulator replays.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlowSpec {
    /// Dense 0..n in start order (ties: component index, then the component's own generation order).
    pub id: u64,
    /// Index of the workload component that produced it.
    pub component: u32,
    /// Host index of the DATA sender.
    pub src: u32,
    /// Host index of the data receiver.
    pub dst: u32,
    /// Data bytes `src` sends to `dst`.
    pub size_bytes: u64,
    /// When the flow starts (for request/response: when `dst` issues the request).
    pub start: Time,
    /// If nonzero: request/response. `dst` first sends a request of this many bytes to `src`, and `src` answers
    /// with `size_bytes`. 0: `src` just sends `size_bytes`.
    pub request_bytes: u64,
}
