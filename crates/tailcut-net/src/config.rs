//! Runtime configuration.

use crate::frame::{MAX_PATHS, PREAMBLE_BYTES};
use crate::io::MAX_DATAGRAM_BYTES;
use crate::stream::HEADER_BYTES;
use crate::tls::TlsConfig;
use std::net::{IpAddr, SocketAddr};
use tailcut_proto::cloudburst::{CloudBurstConfig, PathMode};
use tailcut_proto::dcquic::DcquicConfig;
use tailcut_proto::mptcp::MptcpConfig;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::units::Rate;
use tailcut_proto::{ConfigError, Dur};

/// A test hook: the runtime drops `rate` of its outgoing datagrams before they reach the socket,
/// sends `duplicate` of them twice, and holds `reorder` of them back until the next one has gone,
/// drawn from a seeded RNG (the same seed hits the same positions of the send sequence). With
/// `path`, only that path's datagrams are touched (rate 1: a black-holed path). With `after`, the
/// hook passes that many datagrams (of the paths it touches) untouched first: a fault that starts
/// mid-run.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct SendLoss {
    pub rate: f64,
    pub seed: u64,
    pub path: Option<u32>,
    pub duplicate: f64,
    pub reorder: f64,
    pub after: u64,
}

/// The scheme a client and server speak.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Scheme {
    /// CloudBurst's coded multipath messages (`cloudburst`).
    #[default]
    CloudBurst,
    /// tailcut's TCP engine over the TCP-in-UDP encapsulation (`tcp`): the like-for-like baseline,
    /// and the base of CP and DCTCP (`tcp.cp`, `tcp.congestion_control`).
    Tcp,
    /// MPTCP (`mptcp`): one sub-flow per path, Linux MPTCP's scheduler and recovery.
    Mptcp,
    /// FUSO (`fuso`): MPTCP whose idle sub-flows resend the worst sub-flow's oldest un-ACKed packet.
    Fuso,
    /// DCQUIC (`dcquic`): tailcut's QUIC engine in real mode (TLS 1.3, an ALPN), one stream per call,
    /// on plain QUIC datagrams that any QUIC v1 peer with the ALPN can exchange; the client's paths
    /// are its local addresses, which proactive migration moves between.
    Dcquic,
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(s: &str) -> Result<Scheme, String> {
        match s {
            "cloudburst" => Ok(Scheme::CloudBurst),
            "tcp" => Ok(Scheme::Tcp),
            "mptcp" => Ok(Scheme::Mptcp),
            "fuso" => Ok(Scheme::Fuso),
            "dcquic" => Ok(Scheme::Dcquic),
            _ => Err(format!(
                "unknown scheme '{s}' (cloudburst, tcp, mptcp, fuso, dcquic)"
            )),
        }
    }
}

/// Largest TCP-in-UDP header: 28 fixed bytes, four SACK blocks, the 16-byte DSS.
const TCP_UDP_MAX_HEADER: u32 = 28 + 4 * 8 + 16;

/// Where one client path goes: the local address its socket binds (which picks the interface, so the
/// host's routes choose the NIC) and the server address it sends to (on a multi-homed server, the
/// address on that NIC's network).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PathAddrs {
    pub local: IpAddr,
    pub remote: SocketAddr,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NetConfig {
    pub scheme: Scheme,
    /// A client's paths over several interfaces: path `i` uses entry `i` modulo their number, so
    /// paths are (interface x UDP source port) pairs. Empty: every path from the loopback or
    /// unspecified address to the address `Client::connect` is given. Ignored by servers (bind
    /// `0.0.0.0` to serve every interface; replies go to the address each path came from).
    pub path_addrs: Vec<PathAddrs>,
    /// The TCP engine's parameters (`Scheme::Tcp`). The runtime forces the handshake (the server
    /// learns the client's initial sequence number from its SYN) and `carry_bytes`.
    pub tcp: TcpConfig,
    /// The multipath layer of `Scheme::Mptcp` and `Scheme::Fuso` (each sub-flow runs `tcp`); FUSO
    /// switches its recovery on with the paper's defaults when `fuso` is unset. `subflows` is the
    /// number of client sockets (paths).
    pub mptcp: MptcpConfig,
    /// Largest request or response a stream scheme (TCP, DCQUIC) accepts; a peer announcing more is
    /// dropped.
    pub stream_max_message_bytes: u64,
    /// DCQUIC's engine parameters (`Scheme::Dcquic`; 0-RTT and tail FEC are simulator features).
    pub dcquic: DcquicConfig,
    /// DCQUIC's certificates, trusted roots, server name and ALPN.
    pub tls: TlsConfig,
    /// The task size a DCQUIC client picks its maximum packet size by (`dcquic.mps`): below
    /// `mps.large_task` the small-task MPS (9 KB), else the large-task one.
    pub dcquic_task_bytes: u64,
    /// Largest IP packet the network carries (DCQUIC's MPS is capped at it less 28 bytes of IPv4 and
    /// UDP headers). A client also asks the kernel for the path's MTU (`IP_MTU`) and takes the
    /// smaller.
    pub path_mtu: u32,
    /// A stream scheme's call without a response by then fails (the stream still delivers it later,
    /// and the response is then dropped as stale).
    pub stream_call_timeout: Dur,
    /// The CloudBurst engine's parameters. The runtime forces `carry_bytes` and explicit paths
    /// (path `i` is the client's `i`-th socket); `paths` is the number of client sockets.
    pub cloudburst: CloudBurstConfig,
    /// Most client associations a server keeps; beyond it the least recently active is dropped.
    pub max_associations: usize,
    /// A server drops an association that sent nothing for this long (a client that closes says so
    /// and is dropped at once); a stream-scheme client idle for half of it opens a new association
    /// before its next call rather than write into one the server may have dropped.
    pub association_idle_timeout: Dur,
    /// `SO_SNDBUF`/`SO_RCVBUF` asked for each socket.
    pub socket_buffer_bytes: usize,
    /// Master seed of the engines' RNGs and association ids.
    pub seed: u64,
    /// Before each sleep the runtime thread polls its sockets without sleeping for up to this long
    /// (busy-polling one core), so a datagram arriving meanwhile skips the wake-up latency. 0 (the
    /// default): always sleep.
    pub spin: Dur,
    pub send_loss: Option<SendLoss>,
}

impl Default for NetConfig {
    fn default() -> Self {
        NetConfig {
            scheme: Scheme::CloudBurst,
            path_addrs: Vec::new(),
            tcp: TcpConfig {
                // A 1500 B MTU: 1500 - 20 (IP) - 8 (UDP) - 12 (preamble) - the largest TCP-in-UDP header.
                mss_bytes: 1460 - 12 - TCP_UDP_MAX_HEADER,
                header_bytes: 40 + 12 + TCP_UDP_MAX_HEADER,
                // What one connection may hold above its cumulative ACK (and the window it offers):
                // a real socket buffer, not the simulator's 16 MB.
                rcv_window_bytes: 1 << 20,
                ..TcpConfig::default()
            },
            mptcp: MptcpConfig::default(),
            stream_max_message_bytes: 16 << 20,
            dcquic: DcquicConfig {
                // quinn sets up state for every stream the peer may open when a connection starts
                // (two hash maps of this many entries): the simulator's 1024 cost ~13% of a fresh
                // connection's CPU here (perf); quinn's own default is 100. Calls in flight per
                // connection beyond it wait for a stream.
                max_streams: 100,
                ..DcquicConfig::default()
            },
            tls: TlsConfig::default(),
            dcquic_task_bytes: 0,
            // Jumbo frames, as DCQUIC's MPS rule assumes (loopback, veth and TUN carry them).
            path_mtu: 9000,
            stream_call_timeout: Dur::from_millis(10_000),
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
            association_idle_timeout: Dur::from_millis(60_000),
            // Small on purpose: a slow receiver should drop surplus coded packets (the code is
            // rateless) rather than queue milliseconds of them in front of the next STOP.
            socket_buffer_bytes: 512 << 10,
            seed: 1,
            spin: Dur::ZERO,
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

    /// The TCP engine configuration the runtime actually uses.
    pub fn tcp_config(&self) -> TcpConfig {
        TcpConfig {
            handshake: true,
            carry_bytes: true,
            ..self.tcp.clone()
        }
    }

    /// The multipath configuration the runtime uses (`Scheme::Mptcp` never runs FUSO's recovery).
    pub fn mptcp_config(&self) -> MptcpConfig {
        match self.scheme {
            Scheme::Fuso => MptcpConfig {
                fuso: Some(self.mptcp.fuso.unwrap_or_default()),
                ofo_to_data_level: true,
                ..self.mptcp.clone()
            },
            _ => MptcpConfig {
                fuso: None,
                ..self.mptcp.clone()
            },
        }
    }

    /// Paths (client sockets) of an association.
    pub fn paths(&self) -> usize {
        match self.scheme {
            Scheme::CloudBurst => self.cloudburst.paths as usize,
            Scheme::Tcp => 1,
            Scheme::Mptcp | Scheme::Fuso => self.mptcp.subflows as usize,
            Scheme::Dcquic => self.path_addrs.len().max(1),
        }
    }

    /// Largest UDP payload DCQUIC may send: `path_mtu` less IPv4 and UDP headers.
    pub fn path_max_payload(&self) -> u16 {
        self.path_mtu.saturating_sub(28).min(u32::from(u16::MAX)) as u16
    }

    /// Largest datagram the runtime builds.
    pub fn max_datagram_bytes(&self) -> usize {
        match self.scheme {
            Scheme::CloudBurst => self.cloudburst.symbol_bytes as usize + 64,
            Scheme::Tcp | Scheme::Mptcp | Scheme::Fuso => {
                (self.tcp.mss_bytes + TCP_UDP_MAX_HEADER) as usize + PREAMBLE_BYTES
            }
            Scheme::Dcquic => usize::from(self.path_max_payload()),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.association_idle_timeout == Dur::ZERO {
            return Err(ConfigError::new("association_idle_timeout", "must be > 0"));
        }
        if self.scheme != Scheme::CloudBurst {
            self.validate_tcp()?;
        }
        if self.scheme == Scheme::Dcquic {
            self.dcquic.validate().map_err(|e| e.at("dcquic"))?;
            if !(1228..=65_535).contains(&self.path_mtu) {
                return Err(ConfigError::new(
                    "path_mtu",
                    format!(
                        "must be in 1228..=65535 (QUIC needs 1200 B of UDP payload), got {}",
                        self.path_mtu
                    ),
                ));
            }
            if self.path_addrs.len() > MAX_PATHS {
                return Err(ConfigError::new(
                    "path_addrs",
                    format!("at most {MAX_PATHS} paths per association"),
                ));
            }
        }
        if matches!(self.scheme, Scheme::Mptcp | Scheme::Fuso) {
            self.mptcp_config().validate().map_err(|e| e.at("mptcp"))?;
            if self.mptcp.subflows as usize > MAX_PATHS {
                return Err(ConfigError::new(
                    "mptcp.subflows",
                    format!("at most {MAX_PATHS} paths per association"),
                ));
            }
        }
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
        if self
            .path_addrs
            .iter()
            .any(|p| p.local.is_ipv4() != p.remote.is_ipv4())
        {
            return Err(ConfigError::new(
                "path_addrs",
                "a path's local and remote addresses must be of one family",
            ));
        }
        if self.spin > Dur::from_millis(1_000) {
            return Err(ConfigError::new("spin", "at most 1 s"));
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
            for (field, v) in [
                ("send_loss.duplicate", l.duplicate),
                ("send_loss.reorder", l.reorder),
            ] {
                if !(0.0..=1.0).contains(&v) {
                    return Err(ConfigError::new(field, format!("must be in [0, 1], got {v}")));
                }
            }
            if l.rate + l.duplicate + l.reorder > 1.0 {
                return Err(ConfigError::new(
                    "send_loss",
                    "rate + duplicate + reorder must be at most 1",
                ));
            }
        }
        Ok(())
    }

    fn validate_tcp(&self) -> Result<(), ConfigError> {
        if self.tcp.mss_bytes == 0 || self.max_datagram_bytes() > MAX_DATAGRAM_BYTES {
            return Err(ConfigError::new(
                "tcp.mss_bytes",
                format!("must be >= 1 and leave a datagram of at most {MAX_DATAGRAM_BYTES} bytes"),
            ));
        }
        if self.tcp.rcv_window_bytes < self.tcp.mss_bytes {
            return Err(ConfigError::new(
                "tcp.rcv_window_bytes",
                "must hold at least one segment",
            ));
        }
        if self.stream_max_message_bytes == 0 {
            return Err(ConfigError::new(
                "stream_max_message_bytes",
                "must be >= 1 (0 refuses every request)",
            ));
        }
        if self.stream_call_timeout == Dur::ZERO {
            return Err(ConfigError::new("stream_call_timeout", "must be > 0"));
        }
        if self.stream_max_message_bytes > u64::from(u32::MAX) - HEADER_BYTES as u64 {
            return Err(ConfigError::new(
                "stream_max_message_bytes",
                "at most 4 GiB (the frame header's length is 32 bits)",
            ));
        }
        Ok(())
    }

    /// Largest request or response.
    pub fn max_message_bytes(&self) -> u64 {
        match self.scheme {
            // Every CloudBurst message starts with its call's number (`cloudburst.rs`).
            Scheme::CloudBurst => self
                .engine_config()
                .max_message_bytes()
                .saturating_sub(crate::cloudburst::CALL_HEADER_BYTES),
            Scheme::Tcp | Scheme::Mptcp | Scheme::Fuso | Scheme::Dcquic => self.stream_max_message_bytes,
        }
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
        match self.scheme {
            Scheme::CloudBurst => cb.transmission_timeout.saturating_mul(2) + cb.decoder_timeout,
            Scheme::Tcp | Scheme::Mptcp | Scheme::Fuso | Scheme::Dcquic => self.stream_call_timeout,
        }
    }
}
