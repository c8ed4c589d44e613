//! `tcp`: TCP NewReno with SACK, the base every TCP-based scheme starts from.

use super::over_tcp::Plain;
use tailcut_proto::tcp::TcpConfig;

pub const TCP: Plain = Plain {
    name: "tcp",
    description: "TCP NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO",
    base: TcpConfig::default,
    set: |_| {},
};
