//! CloudBurst parameters (Sec. III-B Algorithm 1, Sec. IV-A and IV-B) and their defaults.

use crate::config_error::ConfigError;
use crate::fec::DegreeDist;
use crate::time::Dur;
use crate::units::Rate;
use serde::{Deserialize, Serialize};

/// How coded packets are spread over paths (Sec. IV-B "Multipath routing").
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PathMode {
    /// XPath-like explicit paths: a round carries `Route::Path` 0..paths once each, in order from
    /// the round's first path, which starts at a per-message random path and advances each round.
    #[default]
    Explicit,
    /// ECMP: packet i of a round uses source port `base + i`, so switches hash it onto some path.
    Ecmp,
}

/// The erasure code.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Codec {
    /// LT code with the 64-bit coefficient vector in the header (the paper's).
    #[default]
    Lt,
    /// RaptorQ (RFC 6330) with the encoding symbol id in the header (our extension, see
    /// `header.rs`).
    Raptorq,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CloudBurstConfig {
    pub codec: Codec,
    /// LT degree distribution (see `docs/cloudburst.md` for the measurements behind the default).
    pub degree: DegreeDist,
    /// NUM_PATHS of Algorithm 1: packets per round, one per path.
    pub paths: u32,
    pub path_mode: PathMode,
    /// r of Algorithm 1: the share of the NIC one message uses.
    pub rate_share: f64,
    /// LINK_CAP of Algorithm 1 (the sending host's NIC rate).
    pub nic_rate: Rate,
    /// t of Algorithm 1: the sender gives up (MessageFailed) if no STOP came by then.
    pub transmission_timeout: Dur,
    /// The receiver drops a decoder (and the memory of a finished message) after this long without a
    /// packet of that message.
    pub decoder_timeout: Dur,
    /// Most messages one receiver decodes at once from its peer; the least recently active is
    /// evicted beyond it.
    pub max_decoders: u32,
    /// Packet class (DSCP) of every CloudBurst packet, so switches queue it apart (Sec. IV-B).
    pub class: u8,
    /// Source packet (symbol) size: 1500 - 20 (IP) - 8 (UDP) - 12 (CloudBurst header).
    pub symbol_bytes: u32,
    /// IP + UDP + CloudBurst header bytes per packet.
    pub header_bytes: u32,
    /// Carry real symbol bytes after the header (sockets; byte-exact delivery through
    /// `send_data`/`take_data`). Off in simulation, where only the header travels.
    pub carry_bytes: bool,
}

impl Default for CloudBurstConfig {
    fn default() -> Self {
        CloudBurstConfig {
            codec: Codec::Lt,
            degree: DegreeDist::default(),
            paths: 4,
            path_mode: PathMode::Explicit,
            rate_share: 1.0,
            nic_rate: Rate(1_000_000_000),
            transmission_timeout: Dur::from_millis(10),
            decoder_timeout: Dur::from_millis(10),
            max_decoders: 64,
            class: 1,
            symbol_bytes: 1460,
            header_bytes: 40,
            carry_bytes: false,
        }
    }
}

impl CloudBurstConfig {
    /// Checks the parameters; the error names the offending key.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let err = |path: &str, reason: String| Err(ConfigError::new(path, reason));
        if self.paths == 0 {
            return err("paths", "must be >= 1".into());
        }
        if !(self.rate_share > 0.0 && self.rate_share <= 1.0) {
            return err(
                "rate_share",
                format!("must be in (0, 1], got {}", self.rate_share),
            );
        }
        if self.nic_rate.0 == 0 {
            return err("nic_rate", "must be > 0".into());
        }
        if self.symbol_bytes == 0 {
            return err("symbol_bytes", "must be > 0".into());
        }
        if self.codec == Codec::Raptorq && self.symbol_bytes > u16::MAX as u32 {
            return err("symbol_bytes", "RaptorQ symbols are at most 65535 bytes".into());
        }
        if self.max_decoders == 0 {
            return err("max_decoders", "must be >= 1".into());
        }
        if self.transmission_timeout.0 == 0 {
            return err("transmission_timeout", "must be > 0".into());
        }
        if self.decoder_timeout.0 == 0 {
            return err("decoder_timeout", "must be > 0".into());
        }
        match self.degree {
            DegreeDist::Fixed { d: 0 } => err("degree.d", "must be >= 1".into()),
            DegreeDist::RobustSoliton { c, delta } if !(c > 0.0 && delta > 0.0 && delta < 1.0) => {
                err("degree", "robust soliton needs c > 0 and 0 < delta < 1".into())
            }
            DegreeDist::CappedSoliton { max: 0 } => err("degree.max", "must be >= 1".into()),
            _ => Ok(()),
        }
    }

    /// Largest message: 64 source packets, and the 18-bit size field.
    pub fn max_message_bytes(&self) -> u64 {
        (crate::fec::MAX_SOURCE_PACKETS as u64 * self.symbol_bytes as u64)
            .min(super::header::MAX_MESSAGE_BYTES as u64)
    }

    /// Inter-round delay of Sec. III-B: NUM_PATHS x PKT_SIZE / (r x LINK_CAP).
    pub fn round_gap(&self) -> Dur {
        let bits = self.paths as f64 * (self.symbol_bytes + self.header_bytes) as f64 * 8.0;
        Dur((bits * 1e9 / (self.rate_share * self.nic_rate.0 as f64)).round() as u64)
    }
}
