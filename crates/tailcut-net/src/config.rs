//! Runtime configuration.

use crate::frame::{MAX_PATHS, PREAMBLE_BYTES};
use crate::io::MAX_DATAGRAM_BYTES;
use crate::stream::HEADER_BYTES;
use crate::tls::TlsConfig;
use serde_json::{Map, Value};
use std::net::{IpAddr, SocketAddr};
use std::sync::LazyLock;
use tailcut_proto::cloudburst::{CloudBurstConfig, PathMode};
use tailcut_proto::dcquic::DcquicConfig;
use tailcut_proto::mptcp::MptcpConfig;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::{ConfigError, Dur};
use tailcut_scheme::driver::{Family as DefaultFamily, SOCKET_DEFAULTS};
use tailcut_scheme::{resolve_for, Driver, EngineSpec, Network, SchemeSpec};

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

/// Largest TCP-in-UDP header: 28 fixed bytes, four SACK blocks, the 16-byte DSS.
const TCP_UDP_MAX_HEADER: u32 = 28 + 4 * 8 + 16;

/// What a path's MTU holds besides a TCP segment's payload: the TCP family's socket default
/// `header_bytes` (128 in `tailcut_scheme::driver::SOCKET_DEFAULTS`: IPv4 and UDP (28), the preamble
/// (12), the largest TCP-in-UDP header (76) and 12 bytes to spare), so a 1,500-byte path keeps the
/// 1,372-byte MSS the runtime always used there. The default, not the entry's own `header_bytes`:
/// that one only sets the bytes the engine counts per segment, while a datagram's real headers stay
/// the same, and a smaller value must not make segments outgrow the path. Read from the table once:
/// a server sizes the segments of every association it opens by it.
static SEGMENT_OVERHEAD: LazyLock<u32> = LazyLock::new(|| {
    SOCKET_DEFAULTS
        .iter()
        .find(|&&(family, key, ..)| family == DefaultFamily::Tcp && key == "header_bytes")
        .and_then(|&(_, _, value, _)| value.parse().ok())
        .expect("the TCP family's socket defaults give header_bytes as a number")
});

/// The smallest path MTU the TCP family sizes its segments by: IPv4's minimum MTU.
pub const MIN_PATH_MTU: u32 = 576;

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
    /// The scheme both ends run, resolved by the scheme layer from an experiment file's
    /// `[[schemes]]` entry ([`NetConfig::scheme`]): the same keys, units, defaults and errors as the
    /// simulator, with the socket defaults of `tailcut_scheme::driver::SOCKET_DEFAULTS`.
    pub scheme: SchemeSpec,
    /// What the network between the ends provides (CP needs trimming switch ports).
    pub network: Network,
    /// A client's paths over several interfaces: path `i` uses entry `i` modulo their number, so
    /// paths are (interface x UDP source port) pairs. Empty: every path from the loopback or
    /// unspecified address to the address `Client::connect` is given. Ignored by servers (bind
    /// `0.0.0.0` to serve every interface; replies go to the address each path came from).
    pub path_addrs: Vec<PathAddrs>,
    /// Largest request or response a stream scheme (TCP, DCQUIC) accepts; a peer announcing more is
    /// dropped.
    pub stream_max_message_bytes: u64,
    /// DCQUIC's certificates, trusted roots, server name and ALPN.
    pub tls: TlsConfig,
    /// The task size a DCQUIC client picks its maximum packet size by (`dcquic.mps`): below
    /// `mps.large_task` the small-task MPS (9 KB), else the large-task one.
    pub dcquic_task_bytes: u64,
    /// Largest IP packet the network carries (DCQUIC's MPS is capped at it less 28 bytes of IPv4 and
    /// UDP headers). A client also asks the kernel for the path's MTU (`IP_MTU`) and takes the
    /// smaller. The TCP family's MSS is sized from it too ([`NetConfig::tcp_config`]).
    pub path_mtu: u32,
    /// The TCP family's MSS is the largest segment a `path_mtu` packet holds, as Linux advertises its
    /// route's MTU less 40 bytes; [`NetConfig::scheme`] clears it when the entry sets `mss_bytes`,
    /// which then wins.
    pub mss_from_path: bool,
    /// A stream scheme's call without a response by then fails (the stream still delivers it later,
    /// and the response is then dropped as stale).
    pub stream_call_timeout: Dur,
    /// Most client associations a server keeps. A new one beyond it replaces the least recently
    /// active, preferring one whose client never showed it receives at its address, and only once
    /// the new client has shown it does ([`AddressValidation`]).
    pub max_associations: usize,
    /// When a server checks that an opening datagram's source receives at its address before it
    /// allocates anything for it.
    pub address_validation: AddressValidation,
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
    /// CloudBurst with its defaults on sockets.
    fn default() -> Self {
        let network = Network::default();
        NetConfig {
            scheme: resolve_for("cloudburst", &Map::new(), Driver::Sockets(network))
                .expect("the registry's defaults resolve"),
            network,
            path_addrs: Vec::new(),
            stream_max_message_bytes: 16 << 20,
            tls: TlsConfig::default(),
            dcquic_task_bytes: 0,
            // Jumbo frames, as DCQUIC's MPS rule assumes (loopback, veth and TUN carry them).
            path_mtu: 9000,
            mss_from_path: true,
            stream_call_timeout: Dur::from_millis(10_000),
            max_associations: 64,
            address_validation: AddressValidation::UnderLoad,
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

/// When a server checks an opener's address (a cookie it must echo; QUIC's Retry for DCQUIC), as
/// RFC 9000 Sec. 8.1 lets a QUIC server choose: the check costs a new client one round trip, and
/// without it a forged source could make the server replace a real client.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum AddressValidation {
    /// Once `max_associations` are held (the default): a new association then needs a checked
    /// address, and only that may replace another.
    #[default]
    UnderLoad,
    /// Before every new association.
    Always,
}

impl AddressValidation {
    pub fn parse(s: &str) -> Option<AddressValidation> {
        match s {
            "under_load" => Some(AddressValidation::UnderLoad),
            "always" => Some(AddressValidation::Always),
            _ => None,
        }
    }
}

/// The engine families the runtime runs: the scheme layer decides which one a scheme is, and refuses
/// the others for sockets.
pub use tailcut_scheme::driver::RuntimeFamily as Family;

impl NetConfig {
    /// `self` running `transport` with `params`, exactly as an experiment file's `[[schemes]]` entry
    /// writes them (`transport = "fuso"`, `params = { subflows = 4, min_rto = "5ms" }`). Errors name
    /// the entry's field (`params.min_rto`, `transport`); a scheme the runtime cannot run on
    /// `self.network` is refused with the reason.
    pub fn scheme(mut self, transport: &str, params: &Map<String, Value>) -> Result<NetConfig, ConfigError> {
        self.scheme = resolve_for(transport, params, Driver::Sockets(self.network))?;
        self.mss_from_path = !params.contains_key("mss_bytes");
        Ok(self)
    }

    /// [`NetConfig::scheme`] from a JSON object of parameters (tests and examples: `json!({...})`).
    pub fn scheme_json(self, transport: &str, params: Value) -> Result<NetConfig, ConfigError> {
        match params {
            Value::Object(m) => self.scheme(transport, &m),
            Value::Null => self.scheme(transport, &Map::new()),
            _ => Err(ConfigError::new("params", "must be a table")),
        }
    }

    /// The engine family of the scheme. A spec the runtime cannot run (the scheme layer refuses it
    /// when an entry is resolved; one built by hand reaches `validate`, which refuses it too) is
    /// given TCP's loop here so that the refusal, not this accessor, reports it.
    pub fn family(&self) -> Family {
        tailcut_scheme::driver::runtime_family(&self.scheme).unwrap_or(Family::Tcp)
    }

    /// The CloudBurst engine configuration the runtime actually uses: real bytes, and path `i` is
    /// the client's `i`-th socket.
    pub fn engine_config(&self) -> CloudBurstConfig {
        let base = match &self.scheme.engine {
            EngineSpec::CloudBurst { cfg, .. } => cfg.clone(),
            _ => CloudBurstConfig::paper(),
        };
        CloudBurstConfig {
            carry_bytes: true,
            path_mode: PathMode::Explicit,
            ..base
        }
    }

    /// The TCP engine configuration the runtime actually uses (each sub-flow's for MPTCP): the
    /// server learns the client's initial sequence number from its SYN, so there is always a
    /// handshake, and real bytes; the MSS from the path MTU unless the entry set `mss_bytes`.
    pub fn tcp_config(&self) -> TcpConfig {
        let base = self.scheme.engine.tcp().cloned().unwrap_or_default();
        TcpConfig {
            handshake: true,
            carry_bytes: true,
            mss_bytes: if self.mss_from_path {
                self.path_mss()
            } else {
                base.mss_bytes
            },
            ..base
        }
    }

    /// The TCP segment payload a `path_mtu` packet holds ([`NetConfig::mss_within`]). The runtime's
    /// CPU goes mostly per segment, not per byte (`docs/net.md`, "Loopback benchmark"), so segments
    /// are as large as the path allows.
    pub fn path_mss(&self) -> u32 {
        Self::mss_within(self.path_mtu)
    }

    /// The TCP segment payload a packet of `mtu` bytes holds: `mtu` less the TCP family's socket
    /// default `header_bytes` (see `SEGMENT_OVERHEAD`).
    pub fn mss_within(mtu: u32) -> u32 {
        mtu.saturating_sub(*SEGMENT_OVERHEAD)
    }

    /// The path MTU to size an association's segments by, given what the kernel knows of its route
    /// (`IP_MTU`; `None` if it cannot say): the smaller of the two, as Linux sizes the MSS it
    /// advertises by its route's MTU. A kernel MTU below [`MIN_PATH_MTU`] could not size a segment
    /// (`validate` refuses such a `path_mtu`), so `path_mtu` holds then.
    pub fn effective_path_mtu(&self, kernel: Option<u32>) -> u32 {
        match kernel {
            Some(k) if k >= MIN_PATH_MTU => self.path_mtu.min(k),
            _ => self.path_mtu,
        }
    }

    /// The multipath configuration (FUSO's recovery is on for `fuso` only).
    pub fn mptcp_config(&self) -> MptcpConfig {
        match &self.scheme.engine {
            EngineSpec::Mptcp { cfg, .. } => cfg.clone(),
            _ => MptcpConfig::default(),
        }
    }

    /// DCQUIC's engine parameters.
    pub fn dcquic_config(&self) -> DcquicConfig {
        match &self.scheme.engine {
            EngineSpec::Dcquic(c) => c.clone(),
            _ => DcquicConfig::default(),
        }
    }

    /// Paths (client sockets) of an association.
    pub fn paths(&self) -> usize {
        match self.family() {
            Family::CloudBurst => self.engine_config().paths as usize,
            Family::Tcp => 1,
            Family::Mptcp => self.mptcp_config().subflows as usize,
            Family::Dcquic => self.path_addrs.len().max(1),
        }
    }

    /// Largest UDP payload DCQUIC may send: `path_mtu` less IPv4 and UDP headers.
    pub fn path_max_payload(&self) -> u16 {
        self.path_mtu.saturating_sub(28).min(u32::from(u16::MAX)) as u16
    }

    /// Largest datagram the runtime builds.
    pub fn max_datagram_bytes(&self) -> usize {
        match self.family() {
            Family::CloudBurst => self.engine_config().symbol_bytes as usize + 64,
            Family::Tcp | Family::Mptcp => {
                (self.tcp_config().mss_bytes + TCP_UDP_MAX_HEADER) as usize + PREAMBLE_BYTES
            }
            Family::Dcquic => usize::from(self.path_max_payload()),
        }
    }

    pub fn validate(&self) -> Result<(), ConfigError> {
        if self.association_idle_timeout == Dur::ZERO {
            return Err(ConfigError::new("association_idle_timeout", "must be > 0"));
        }
        // A spec set by hand rather than by `scheme` is checked as the scheme layer checks it.
        tailcut_scheme::driver::check(&self.scheme, Driver::Sockets(self.network))?;
        let family = self.family();
        if family != Family::CloudBurst {
            self.validate_stream()?;
        }
        if family == Family::Dcquic {
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
        if family == Family::Mptcp && self.mptcp_config().subflows as usize > MAX_PATHS {
            return Err(ConfigError::new(
                "params.subflows",
                format!("at most {MAX_PATHS} paths (client sockets) per association"),
            ));
        }
        if family == Family::CloudBurst {
            let cb = self.engine_config();
            if cb.paths as usize > MAX_PATHS {
                return Err(ConfigError::new(
                    "params.paths",
                    format!("at most {MAX_PATHS} paths (client sockets) per association"),
                ));
            }
            if cb.symbol_bytes as usize + PREAMBLE_BYTES + cb.layout().header_bytes() > MAX_DATAGRAM_BYTES {
                return Err(ConfigError::new(
                    "params.symbol_bytes",
                    format!("a datagram holds at most {MAX_DATAGRAM_BYTES} bytes"),
                ));
            }
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

    /// The runtime's own limits of the stream schemes (the engines' parameters are the scheme
    /// layer's to check).
    fn validate_stream(&self) -> Result<(), ConfigError> {
        let family = self.family();
        if self.mss_from_path && matches!(family, Family::Tcp | Family::Mptcp) {
            // The largest UDP payload is 65,507 bytes.
            if !(MIN_PATH_MTU..=65_535).contains(&self.path_mtu) {
                return Err(ConfigError::new(
                    "path_mtu",
                    format!(
                        "must be in {MIN_PATH_MTU}..=65535 (the TCP family's MSS is sized from it), got {}",
                        self.path_mtu
                    ),
                ));
            }
            let window = self.tcp_config().rcv_window_bytes;
            if window < self.path_mss() {
                return Err(ConfigError::new(
                    "params.rcv_window_bytes",
                    format!(
                        "must hold one segment of the path's MSS ({} bytes for path_mtu {}; or set mss_bytes), got {window}",
                        self.path_mss(),
                        self.path_mtu
                    ),
                ));
            }
        }
        if self.family() != Family::Dcquic && self.max_datagram_bytes() > MAX_DATAGRAM_BYTES {
            return Err(ConfigError::new(
                "params.mss_bytes",
                format!(
                    "must leave a datagram of at most {MAX_DATAGRAM_BYTES} bytes (the TCP-in-UDP header and preamble take {})",
                    TCP_UDP_MAX_HEADER as usize + PREAMBLE_BYTES
                ),
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

    /// The DSCP of every datagram: CloudBurst's packet class (its own switch queue, Sec. IV-B, as
    /// the simulator's packets carry it), 0 for the others.
    pub fn dscp(&self) -> u8 {
        match self.family() {
            Family::CloudBurst => self.engine_config().class,
            Family::Tcp | Family::Mptcp | Family::Dcquic => 0,
        }
    }

    /// Largest request or response.
    pub fn max_message_bytes(&self) -> u64 {
        match self.family() {
            // Every CloudBurst message starts with its call's number (`cloudburst.rs`), and a
            // receiver holds at most `max_held_bytes` of messages being assembled or untaken.
            Family::CloudBurst => {
                let cb = self.engine_config();
                cb.max_message_bytes()
                    .min(if cb.multi_block {
                        cb.max_held_bytes
                    } else {
                        u64::MAX
                    })
                    .saturating_sub(crate::cloudburst::CALL_HEADER_BYTES)
            }
            Family::Tcp | Family::Mptcp | Family::Dcquic => self.stream_max_message_bytes,
        }
    }

    /// How long a client keeps a finished call's 8-bit CloudBurst message id unused. The server's
    /// engine remembers a delivered request id for `decoder_timeout` after its last packet (and answers
    /// it with STOP), and may keep sending an old response for up to `transmission_timeout` after its start or its
    /// latest block's STOP (and, with `exclude_host_delay`, for up to t more of the server host's
    /// own delay: `CloudBurstConfig::host_delay_allowance`); an id reused
    /// sooner could be taken for the old message. Twice the transmission timeout covers a request that
    /// failed while its response was still being sent.
    pub fn id_quarantine(&self) -> Dur {
        let cb = &self.engine_config();
        cb.transmission_timeout.saturating_mul(2)
            + cb.host_delay_allowance()
            + cb.decoder_timeout
            + Dur::from_millis(1)
    }

    /// A call without a response by then fails. CloudBurst counts it from the call's last progress
    /// (a block of its request STOPped, a packet of its response), so a message of many blocks is
    /// not failed for its length; and since an old response is sent for at most
    /// `transmission_timeout` after its last STOP, a call given up this long after its last
    /// progress has nothing of it left in flight when [`Self::id_quarantine`] starts.
    pub fn call_timeout(&self) -> Dur {
        let cb = &self.engine_config();
        match self.family() {
            Family::CloudBurst => cb.transmission_timeout.saturating_mul(2) + cb.decoder_timeout,
            Family::Tcp | Family::Mptcp | Family::Dcquic => self.stream_call_timeout,
        }
    }

    /// How long a server may keep sending a response whose client is gone without a word (its
    /// last acknowledgement and its close both lost) before the response is final, given up: a
    /// CloudBurst response is sent until its STOP or `transmission_timeout` (plus its window's
    /// share, plus up to t of its host's own delay with `exclude_host_delay`) after its last one,
    /// within [`Self::call_timeout`] and that allowance. `None` for the stream families,
    /// whose server holds such a response until the association's idle timeout, not a bound worth
    /// waiting for.
    pub fn response_given_up_within(&self) -> Option<Dur> {
        (self.family() == Family::CloudBurst)
            .then(|| self.call_timeout() + self.engine_config().host_delay_allowance())
    }
}
