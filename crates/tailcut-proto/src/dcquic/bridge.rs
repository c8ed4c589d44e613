//! How the simulator's time and addresses map onto quinn-proto's std types (`Instant`,
//! `SocketAddr`, the server's wall clock), which an engine must speak without reading a clock.

use crate::packet::Addr;
use crate::time::Time;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

pub(super) fn to_instant(epoch: Instant, t: Time) -> Instant {
    epoch + Duration::from_nanos(t.0)
}

pub(super) fn to_time(epoch: Instant, i: Instant) -> Time {
    Time(i.saturating_duration_since(epoch).as_nanos() as u64)
}

/// quinn's server wall clock (retry and validation tokens), frozen: an engine reads no clock.
pub(super) struct FrozenClock;

impl quinn_proto::TimeSource for FrozenClock {
    fn now(&self) -> std::time::SystemTime {
        std::time::UNIX_EPOCH + Duration::from_secs(1_893_456_000)
    }
}

/// Simulated addresses as IPv4 (10.0.0.0/8 + the address number).
pub(super) fn sock(addr: Addr, port: u16) -> SocketAddr {
    SocketAddr::new(IpAddr::V4(Ipv4Addr::from(0x0A00_0000 | addr.0)), port)
}

pub(super) fn addr_of(s: SocketAddr) -> Addr {
    match s.ip() {
        IpAddr::V4(v4) => Addr(u32::from(v4) & 0x00FF_FFFF),
        IpAddr::V6(_) => Addr(u32::MAX),
    }
}
