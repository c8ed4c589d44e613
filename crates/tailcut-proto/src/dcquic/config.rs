//! DCQUIC's parameters ([`DcquicConfig`]): defaults, validation, and the quinn transport
//! configuration they make for one connection.

use crate::time::Dur;
use crate::units::Bytes;
use crate::ConfigError;
use quinn_proto::{AckFrequencyConfig, TransportConfig, VarInt};
use serde::{Deserialize, Serialize};
use std::sync::Arc;
use std::time::Duration;

use super::{CcKind, MigrationConfig, MpsConfig};

/// DCQUIC's parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DcquicConfig {
    pub congestion_control: CcKind,
    /// Initial congestion window, packets of the connection's MPS, before the byte limit below.
    pub initial_window_packets: u32,
    /// RFC 9002 Sec. 7.2: the initial window is `min(10 * max_datagram_size, max(14720,
    /// 2 * max_datagram_size))`, so with jumbo datagrams it is two of them, not ten; this is the
    /// 14720 (RFC 6928's 10 x 1460 B in bytes) of that rule. The window is
    /// [`DcquicConfig::initial_window_bytes`].
    pub initial_window_limit: Bytes,
    /// Mark packets ECN-capable and report CE counts (RFC 9000 Sec. 13.4).
    pub ecn: bool,
    pub mps: MpsConfig,
    /// Socket buffer: the receive windows (per stream and per connection) and the send buffer.
    pub socket_buffer: Bytes,
    /// RTT assumed before the first sample (RFC 9002's 333 ms is for the Internet; datacenter tuning).
    pub initial_rtt: Dur,
    /// IPv4 + UDP header bytes per datagram on the wire.
    pub header_bytes: u32,
    /// Streams each side may have open at once.
    pub max_streams: u32,
    pub migration: MigrationConfig,
    /// 0-RTT resumption: a client's second and later connections to a server send their requests
    /// with the first flight, on a session ticket from an earlier connection of the same host.
    pub zero_rtt: bool,
    /// Protect the tail of every message with an XOR parity sent as QUIC DATAGRAM frames
    /// ([`super::tailfec`]; not in the paper).
    pub tail_fec: bool,
    /// k: the protected tail is the message's last k chunks of one path MTU each (the parity is one
    /// chunk whatever k is).
    pub tail_fec_packets: u32,
    /// Each endpoint asks its peer for `ack_delay` and `ack_eliciting_threshold` through the
    /// ACK-frequency extension (draft-ietf-quic-ack-frequency, which quinn implements). Off, receivers
    /// follow RFC 9000: an ACK every second ack-eliciting packet, else after the 25 ms `max_ack_delay`,
    /// an Internet value that a lone packet of a small message waits out in full, 100x a datacenter RTT.
    /// Datacenter tuning, like `initial_rtt`: the paper is silent.
    pub ack_frequency: bool,
    /// The longest a receiver may hold an ACK (quinn clamps the request to at least its 1 ms timer
    /// granularity and at most max(RTT, 25 ms)).
    pub ack_delay: Dur,
    /// Ack-eliciting packets a receiver may take before it must ACK: RFC 9000's rule is 1 (an ACK every
    /// second packet); 0 ACKs every packet.
    pub ack_eliciting_threshold: u32,
}

impl Default for DcquicConfig {
    fn default() -> Self {
        DcquicConfig {
            congestion_control: CcKind::Cubic,
            initial_window_packets: 10,
            initial_window_limit: Bytes(14_720),
            ecn: true,
            mps: MpsConfig::default(),
            socket_buffer: Bytes(1_000_000),
            initial_rtt: Dur::from_millis(1),
            header_bytes: 28,
            max_streams: 1024,
            migration: MigrationConfig::default(),
            zero_rtt: false,
            tail_fec: false,
            tail_fec_packets: 4,
            ack_frequency: true,
            ack_delay: Dur::from_millis(1),
            ack_eliciting_threshold: 1,
        }
    }
}

impl DcquicConfig {
    pub fn validate(&self) -> Result<(), ConfigError> {
        self.congestion_control.validate()?;
        self.mps.validate()?;
        self.migration.validate()?;
        if self.initial_window_packets == 0 {
            return Err(ConfigError::new("initial_window_packets", "must be >= 1"));
        }
        if self.socket_buffer.0 < 16_384 || self.socket_buffer.0 > (1 << 40) {
            return Err(ConfigError::new(
                "socket_buffer",
                format!("must be in 16KB..=1TB, got {}", self.socket_buffer.0),
            ));
        }
        if self.initial_rtt.0 == 0 {
            return Err(ConfigError::new("initial_rtt", "must be > 0"));
        }
        if self.max_streams == 0 {
            return Err(ConfigError::new("max_streams", "must be >= 1"));
        }
        // quinn's timer granularity is 1 ms; 2^14 ms is RFC 9000's ceiling for max_ack_delay.
        if self.ack_delay.0 < 1_000_000 || self.ack_delay.0 >= (1 << 14) * 1_000_000 {
            return Err(ConfigError::new(
                "ack_delay",
                format!("must be in 1ms..16s, got {}", self.ack_delay),
            ));
        }
        if self.ack_eliciting_threshold > 1_000_000 {
            return Err(ConfigError::new(
                "ack_eliciting_threshold",
                format!("must be <= 1000000, got {}", self.ack_eliciting_threshold),
            ));
        }
        if !(1..=64).contains(&self.tail_fec_packets) {
            return Err(ConfigError::new(
                "tail_fec_packets",
                format!("must be in 1..=64, got {}", self.tail_fec_packets),
            ));
        }
        Ok(())
    }

    /// The initial congestion window at datagram size `mps` (RFC 9002 Sec. 7.2, with the number of
    /// packets and the byte limit as parameters).
    pub fn initial_window_bytes(&self, mps: u16) -> u64 {
        let mps = u64::from(mps);
        (u64::from(self.initial_window_packets) * mps).min(self.initial_window_limit.0.max(2 * mps))
    }

    pub(super) fn transport(&self, mps: u16) -> Arc<TransportConfig> {
        let mut t = TransportConfig::default();
        let win = VarInt::from_u64(self.socket_buffer.0).expect("validated");
        t.initial_mtu(mps)
            .min_mtu(1200)
            .mtu_discovery_config(None)
            .stream_receive_window(win)
            .receive_window(win)
            .send_window(self.socket_buffer.0)
            .initial_rtt(Duration::from_nanos(self.initial_rtt.0))
            .max_concurrent_bidi_streams(self.max_streams.into())
            .max_concurrent_uni_streams(self.max_streams.into())
            .enable_segmentation_offload(false)
            .congestion_controller_factory(self.congestion_control.factory(self.initial_window_bytes(mps)));
        if self.ack_frequency {
            let mut ack = AckFrequencyConfig::default();
            ack.max_ack_delay(Some(Duration::from_nanos(self.ack_delay.0)))
                .ack_eliciting_threshold(self.ack_eliciting_threshold.into());
            t.ack_frequency_config(Some(ack));
        }
        if self.tail_fec {
            // quinn enables the datagram extension by default (1.25 MB in, 1 MB out); with tail FEC the
            // repairs use it, sized like the stream buffers. Left untouched otherwise, so the
            // transport parameters (and the handshake's bytes) of plain DCQUIC stay as they were.
            let buf = self.socket_buffer.0 as usize;
            t.datagram_receive_buffer_size(Some(buf))
                .datagram_send_buffer_size(buf);
        }
        Arc::new(t)
    }
}
