//! Runtime configuration.

use crate::frame::{MAX_PATHS, PREAMBLE_BYTES};
use crate::io::MAX_DATAGRAM_BYTES;
use tailcut_proto::cloudburst::{CloudBurstConfig, PathMode};
use tailcut_proto::units::Rate;
use tailcut_proto::{ConfigError, Dur};

/// A test hook: the runtime drops this share of its outgoing datagrams before they reach the socket,
/// drawn from a seeded RNG (the same seed drops the same positions of the send sequence). With
/// `path`, only that path's datagrams are dropped (rate 1: a black-holed path).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SendLoss {
    pub rate: f64,
    pub seed: u64,
    pub path: Option<u32>,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    /// The CloudBurst engine's parameters. The runtime forces `carry_bytes` and explicit paths
    /// (path `i` is the client's `i`-th socket); `paths` is the number of client sockets.
    pub cloudburst: CloudBurstConfig,
    /// Most client associations a server keeps; beyond it the least recently active is dropped.
    pub max_associations: usize,
    /// `SO_SNDBUF`/`SO_RCVBUF` asked for each socket.
    pub socket_buffer_bytes: usize,
    /// Master seed of the engines' RNGs and association ids.
    pub seed: u64,
    pub send_loss: Option<SendLoss>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            cloudburst: CloudBurstConfig {
                paths: 4,
                // A 1500 B MTU: 1500 - 20 (IP) - 8 (UDP) - 12 (preamble) - 12 (CloudBurst header).
                symbol_bytes: 1448,
                header_bytes: 52,
                // CloudBurst sends rounds at r x LINK_CAP until the STOP comes back, with no congestion
                // control: the rate must be one the receiver can absorb. 2 Gbit/s (a round of 4 every
                // 24 us) is what one receiving thread on a shared 2-vCPU VM kept up with on loopback;
                // at 10 Gbit/s its socket queue grew to milliseconds and STOPs came late.
                nic_rate: Rate(2_000_000_000),
                // Generous for a loaded host (a descheduled thread stalls for milliseconds), short
                // enough that a wire id comes back soon: ids rest `NetConfig::id_quarantine`
                // (46 ms here) after use, so one client completes at most ~5 500 calls/s.
                transmission_timeout: Dur::from_millis(20),
                decoder_timeout: Dur::from_millis(5),
                carry_bytes: true,
                // Fig. 4's header, one block per message: the runtime's framing, id quarantine and
                // tests are sized for messages of at most 64 packets (blocks not yet measured here).
                ..CloudBurstConfig::paper()
            },
            max_associations: 64,
            // Small on purpose: a slow receiver should drop surplus coded packets (the code is
            // rateless) rather than queue milliseconds of them in front of the next STOP.
            socket_buffer_bytes: 512 << 10,
            seed: 1,
            send_loss: None,
        }
    }
}

impl NetConfig {
    /// The engine configuration the runtime actually uses.
    pub fn engine_config(&self) -> CloudBurstConfig {
        CloudBurstConfig {
            carry_bytes: true,
            path_mode: PathMode::Explicit,
            ..self.cloudburst.clone()
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        self.engine_config().validate()?;
        let cb = &self.cloudburst;
        if cb.paths as usize > MAX_PATHS {
            return Err(ConfigError::new(
                "cloudburst.paths",
                format!("at most {MAX_PATHS} paths per association"),
            ));
        }
        if cb.symbol_bytes as usize + PREAMBLE_BYTES + cb.layout().header_bytes() > MAX_DATAGRAM_BYTES {
            return Err(ConfigError::new(
                "cloudburst.symbol_bytes",
                format!("a datagram holds at most {MAX_DATAGRAM_BYTES} bytes"),
            ));
        }
        if self.max_associations == 0 {
            return Err(ConfigError::new("max_associations", "must be >= 1"));
        }
        if let Some(l) = self.send_loss {
            // Losing everything on every path could never deliver anything.
            let max = if l.path.is_some() { 1.0 } else { 0.99 };
            if !(0.0..=max).contains(&l.rate) {
                return Err(ConfigError::new(
                    "send_loss.rate",
                    format!("must be in [0, {max}], got {}", l.rate),
                ));
            }
        }
        Ok(())
    }

    /// Largest request or response.
    pub fn max_message_bytes(&self) -> u64 {
        self.engine_config().max_message_bytes()
    }

    /// How long a client keeps a finished call's 8-bit CloudBurst message id unused. The server's
    /// engine remembers a delivered request id for `decoder_timeout` after its last packet (and answers
    /// it with STOP), and may keep sending an old response for up to `transmission_timeout`; an id reused
    /// sooner could be taken for the old message. Twice the transmission timeout covers a request that
    /// failed while its response was still being sent.
    pub fn id_quarantine(&self) -> Dur {
        let cb = &self.cloudburst;
        cb.transmission_timeout.saturating_mul(2) + cb.decoder_timeout + Dur::from_millis(1)
    }

    /// A call without a response by then fails.
    pub fn call_timeout(&self) -> Dur {
        let cb = &self.cloudburst;
        cb.transmission_timeout.saturating_mul(2) + cb.decoder_timeout
    }
}
