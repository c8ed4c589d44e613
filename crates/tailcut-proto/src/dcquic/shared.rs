//! What a transport's (or a runtime's) engines share: [`Shared`], the configuration and the crypto of
//! one of the two modes (seeded simulation, real sockets).

use crate::packet::Addr;
use crate::ConfigError;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::{crypto, real, tickets, DcquicConfig};

/// What the engines of one transport (simulator) or one runtime (real sockets) share: the
/// configuration, and the crypto of one of the two modes, which share no source of randomness.
pub struct Shared {
    pub cfg: DcquicConfig,
    pub(super) mode: Mode,
    /// The `Instant` simulated time is laid on, handed in by the driver: quinn-proto's time type is
    /// `std::time::Instant`, which cannot be built from a number, and an engine reads no clock. Only
    /// differences from it are used, so its value never affects a result.
    pub(super) epoch: Instant,
}

pub(super) enum Mode {
    /// Seeded, simulation only ([`crypto`], [`super::simrand`]): crypto configurations built once per
    /// transport (parsing the key and certificate is not free), and with `zero_rtt` the
    /// session-ticket store of each client host (one per transport, so one per run: tickets never
    /// cross runs).
    Sim {
        client: Arc<quinn_proto::crypto::rustls::QuicClientConfig>,
        server: Arc<quinn_proto::crypto::rustls::QuicServerConfig>,
        hosts: Mutex<BTreeMap<Addr, HostTickets>>,
    },
    /// Real sockets ([`real`]).
    Real(real::RealMode),
}

/// Per client host (its first address): its ticket store and the client config that uses it.
type HostTickets = (
    Arc<tickets::TicketStore>,
    Arc<quinn_proto::crypto::rustls::QuicClientConfig>,
);

impl Shared {
    /// The simulator's mode: seeded crypto, no clock.
    pub fn new(cfg: DcquicConfig, epoch: Instant) -> Shared {
        let server = crypto::server(cfg.zero_rtt);
        Shared {
            cfg,
            mode: Mode::Sim {
                client: crypto::client(None),
                server,
                hosts: Mutex::new(BTreeMap::new()),
            },
            epoch,
        }
    }

    /// Real sockets: the driver's TLS configs (`real`), messages delimited by their stream's FIN.
    /// `epoch` is the runtime clock's zero. 0-RTT and tail FEC are simulator features here and are
    /// refused.
    pub fn real(cfg: DcquicConfig, epoch: Instant, real: real::RealMode) -> Result<Shared, ConfigError> {
        cfg.validate()?;
        real.validate()?;
        if cfg.zero_rtt {
            return Err(ConfigError::new(
                "zero_rtt",
                "not available on real sockets (session tickets are simulated)",
            ));
        }
        if cfg.tail_fec {
            return Err(ConfigError::new("tail_fec", "not available on real sockets"));
        }
        Ok(Shared {
            cfg,
            mode: Mode::Real(real),
            epoch,
        })
    }

    pub(super) fn real_mode(&self) -> Option<&real::RealMode> {
        match &self.mode {
            Mode::Real(r) => Some(r),
            Mode::Sim { .. } => None,
        }
    }

    /// The client crypto config for connections from `host`: with 0-RTT, the host's own (its tickets).
    pub(super) fn client_for(&self, host: Addr) -> Arc<quinn_proto::crypto::rustls::QuicClientConfig> {
        let Mode::Sim { client, hosts, .. } = &self.mode else {
            unreachable!("simulated engines are built from a simulated Shared")
        };
        if !self.cfg.zero_rtt {
            return client.clone();
        }
        let mut m = hosts.lock().unwrap_or_else(|e| e.into_inner());
        m.entry(host)
            .or_insert_with(|| {
                let store = Arc::new(tickets::TicketStore::default());
                (store.clone(), crypto::client(Some(store)))
            })
            .1
            .clone()
    }

    /// Session tickets `host` holds for `server` (0 without `zero_rtt`).
    pub fn tickets(&self, host: Addr, server: Addr) -> usize {
        let Mode::Sim { hosts, .. } = &self.mode else {
            return 0;
        };
        let m = hosts.lock().unwrap_or_else(|e| e.into_inner());
        m.get(&host).map_or(0, |h| h.0.tickets(&server_name(server)))
    }
}

/// The name a client asks for: with 0-RTT, one per server address, so a host's tickets are kept per
/// server (the pinned-certificate verifier accepts any name).
pub(super) fn server_name(server: Addr) -> String {
    format!("h{}.{}", server.0, crypto::SERVER_NAME)
}
