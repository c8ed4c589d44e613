//! NewReno's congestion control (RFC 5681, RFC 6582): everything is the shared window arithmetic;
//! ECN-Echo halves like a loss (RFC 3168 Sec. 6.1.2, the trait's default).

use super::CongestionControl;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct NewReno;

impl CongestionControl for NewReno {}
