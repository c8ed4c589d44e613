//! A deterministic TLS session-ticket store for 0-RTT resumption: one per client host.
//!
//! rustls' own `ClientSessionMemoryCache` would do, but its capacity eviction is an implementation
//! detail; this one is a `BTreeMap` of per-server FIFO queues with a fixed cap per server and no
//! eviction across servers, so which ticket a connection resumes with depends only on the order of
//! events in the run. Tickets are keyed by server name, and the engine names each server by its
//! address, so a host keeps separate tickets for each server it talks to.

use quinn_proto::rustls;
use rustls::client::{ClientSessionStore, Tls12ClientSessionValue, Tls13ClientSessionValue};
use rustls::pki_types::ServerName;
use rustls::NamedGroup;
use std::collections::{BTreeMap, VecDeque};
use std::sync::Mutex;

/// Tickets kept per server: the server sends two per connection (rustls' default) and each
/// resumption consumes one, so a few cover any pattern of back-to-back connections.
pub const TICKETS_PER_SERVER: usize = 8;

#[derive(Debug, Default)]
struct Entry {
    kx_hint: Option<NamedGroup>,
    tickets: VecDeque<Tls13ClientSessionValue>,
}

#[derive(Debug, Default)]
pub struct TicketStore {
    servers: Mutex<BTreeMap<String, Entry>>,
}

impl TicketStore {
    fn with<R>(&self, name: &ServerName<'_>, f: impl FnOnce(&mut Entry) -> R) -> R {
        let mut m = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        f(m.entry(name.to_str().into_owned()).or_default())
    }

    /// Tickets held for `server_name`.
    pub fn tickets(&self, server_name: &str) -> usize {
        let m = self.servers.lock().unwrap_or_else(|e| e.into_inner());
        m.get(server_name).map_or(0, |e| e.tickets.len())
    }
}

impl ClientSessionStore for TicketStore {
    fn set_kx_hint(&self, server_name: ServerName<'static>, group: NamedGroup) {
        self.with(&server_name, |e| e.kx_hint = Some(group));
    }

    fn kx_hint(&self, server_name: &ServerName<'_>) -> Option<NamedGroup> {
        self.with(server_name, |e| e.kx_hint)
    }

    // TLS 1.2 is disabled in our configs: nothing to keep.
    fn set_tls12_session(&self, _: ServerName<'static>, _: Tls12ClientSessionValue) {}

    fn tls12_session(&self, _: &ServerName<'_>) -> Option<Tls12ClientSessionValue> {
        None
    }

    fn remove_tls12_session(&self, _: &ServerName<'static>) {}

    fn insert_tls13_ticket(&self, server_name: ServerName<'static>, value: Tls13ClientSessionValue) {
        self.with(&server_name, |e| {
            if e.tickets.len() == TICKETS_PER_SERVER {
                e.tickets.pop_front();
            }
            e.tickets.push_back(value);
        });
    }

    /// Newest first (RFC 8446 C.4: use each ticket once; the newest carries the latest parameters).
    fn take_tls13_ticket(&self, server_name: &ServerName<'static>) -> Option<Tls13ClientSessionValue> {
        self.with(server_name, |e| e.tickets.pop_back())
    }
}
