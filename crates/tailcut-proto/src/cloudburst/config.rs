//! CloudBurst parameters (Sec. III-B Algorithm 1, Sec. IV-A and IV-B) and their defaults.

use super::header::{full_block_packets, Layout, MAX_MESSAGE_BYTES};
use crate::config_error::ConfigError;
use crate::fec::DegreeDist;
use crate::time::Dur;
use crate::units::Rate;

/// Blocks one message may have (the 16-bit block index).
pub const MAX_BLOCKS: u64 = 1 << 16;
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
    /// `Engine::send_bytes`/`Engine::take_bytes`). Off in simulation, where only the header travels.
    pub carry_bytes: bool,
    /// Messages of any size (our extension): a message is cut into blocks of at most 64 source
    /// packets, each coded and STOPped as the paper's message, and every header carries the block
    /// word (16 bytes). Off: Fig. 4's 12-byte header, and messages over one block fail at once, as
    /// in the paper.
    pub multi_block: bool,
    /// Blocks of one message coded at once; the message's rate (r x LINK_CAP) is shared among
    /// them, and a block whose STOP arrives makes room for the next.
    pub block_window: u32,
    /// Receiver, with `carry_bytes`: bytes of partly received multi-block messages and of decoded
    /// messages not yet taken. Beyond it the oldest are dropped (counted), so a peer cannot make
    /// the receiver hold more.
    pub max_held_bytes: u64,
    /// Rounds may leave up to this late, together: the endpoint waits for a round until this less
    /// one round gap past its time, then sends every round due by then, each due a gap after the
    /// previous one's scheduled time (not after now), so a message's rate stays r x LINK_CAP and
    /// no round goes early (deployment, not the paper: on sockets each round otherwise costs a
    /// timer wake-up, `docs/net.md`). A round later than this restarts the schedule from now.
    /// 0: Algorithm 1's schedule exactly.
    pub pacing_quantum: Dur,
    /// A finished block's STOP is repeated for a further packet only if its last STOP went at
    /// least this long ago (deployment, not the paper: a receiver that fell behind finds a
    /// backlog of the block's surplus packets, and one STOP per packet doubled the datagrams it
    /// had to cope with, `docs/net.md`). 0: a STOP for every further packet.
    pub stop_repeat_gap: Dur,
    /// The sender's t counts without its host's own delay, the time its thread was late past its
    /// timer deadlines ([`super::CloudBurstEndpoint::note_host_delay`]), by at most t since the
    /// message's start or latest STOP ([`CloudBurstConfig::host_delay_allowance`]): a descheduled
    /// sender does not fail a message it could not send meanwhile (deployment, not the paper: a
    /// loaded host's runtime thread was descheduled for 24-208 ms within one 1 MB call,
    /// `docs/net.md`; the simulator's hosts have no such delay). false: t as Algorithm 1.
    pub exclude_host_delay: bool,
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
            symbol_bytes: 1456,
            header_bytes: 44,
            carry_bytes: false,
            multi_block: true,
            block_window: 8,
            max_held_bytes: 64 << 20,
            pacing_quantum: Dur::ZERO,
            stop_repeat_gap: Dur::ZERO,
            exclude_host_delay: false,
        }
    }
}

impl CloudBurstConfig {
    /// How far the host's own delay may move a message's t since its start or latest STOP: t with
    /// `exclude_host_delay`, nothing without. So an old message is sent for at most t + this (plus
    /// its window's share) after its last STOP.
    pub fn host_delay_allowance(&self) -> Dur {
        if self.exclude_host_delay {
            self.transmission_timeout
        } else {
            Dur::ZERO
        }
    }

    /// The paper's configuration: Fig. 4's 12-byte header, so 1460-byte symbols in 1500-byte
    /// packets, and messages of at most one block.
    pub fn paper() -> CloudBurstConfig {
        CloudBurstConfig {
            symbol_bytes: 1460,
            header_bytes: 40,
            multi_block: false,
            ..CloudBurstConfig::default()
        }
    }

    /// The wire layout this configuration sends and expects.
    pub fn layout(&self) -> Layout {
        Layout {
            codec: self.codec,
            blocks: self.multi_block,
        }
    }

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
        if self.multi_block && self.symbol_bytes > MAX_MESSAGE_BYTES {
            return err(
                "symbol_bytes",
                format!("with multi_block, at most {MAX_MESSAGE_BYTES} (a block's size field)"),
            );
        }
        if self.block_window == 0 {
            return err("block_window", "must be >= 1".into());
        }
        let min_header = (28 + self.layout().header_bytes()) as u32;
        if self.header_bytes < min_header {
            return err(
                "header_bytes",
                format!("must be >= {min_header} (IP + UDP + this layout's CloudBurst header)"),
            );
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

    /// Largest message: with `multi_block`, 2^16 full blocks; without, 64 source packets and the
    /// 18-bit size field.
    pub fn max_message_bytes(&self) -> u64 {
        if self.multi_block {
            MAX_BLOCKS * self.block_bytes()
        } else {
            (crate::fec::MAX_SOURCE_PACKETS as u64 * self.symbol_bytes as u64).min(MAX_MESSAGE_BYTES as u64)
        }
    }

    /// Bytes of a full block (every block of a message but its last).
    pub fn block_bytes(&self) -> u64 {
        full_block_packets(self.symbol_bytes) as u64 * self.symbol_bytes as u64
    }

    /// Blocks a message of `len_bytes` is cut into (an empty message is one block).
    pub fn blocks_of(&self, len_bytes: u64) -> u64 {
        if self.multi_block {
            len_bytes.div_ceil(self.block_bytes().max(1)).max(1)
        } else {
            1
        }
    }

    /// Inter-round delay of Sec. III-B: NUM_PATHS x PKT_SIZE / (r x LINK_CAP).
    pub fn round_gap(&self) -> Dur {
        let bits = self.paths as f64 * (self.symbol_bytes + self.header_bytes) as f64 * 8.0;
        Dur((bits * 1e9 / (self.rate_share * self.nic_rate.0 as f64)).round() as u64)
    }
}
