//! A TLS 1.3 handshake model over any stream engine (TCP, DCTCP): the baseline DCQUIC is compared with
//! (DCQUIC Sec. 4.1: "DCTCP with TLS 1.3").
//!
//! TLS 1.3's full handshake costs one round trip after TCP's: the client sends its ClientHello, the
//! server answers with ServerHello .. Finished, and the client sends its Finished followed by its
//! application data. The model sends those flights as messages of the configured sizes on the
//! connection's own byte streams (so they are paced, lost and retransmitted like data), holds the
//! application's messages until the handshake allows them, and hides the flights from the application.
//! The server may send right after its flight (TLS 1.3's 0.5-RTT data); the client after the server's
//! flight has arrived. Cryptography itself is not modelled (its CPU cost is not part of the simulator).

use crate::engine::{AppEvent, Engine, MessageStats, MsgId};
use crate::packet::Packet;
use crate::time::Time;
use crate::units::Bytes;
use serde::{Deserialize, Serialize};
use std::collections::VecDeque;

/// Sizes of the handshake flights, bytes of TLS records. Defaults are those of the identity DCQUIC
/// uses (an Ed25519 self-signed certificate, an X25519 key share), approximately: a real deployment
/// with an RSA chain sends a server flight of several kilobytes.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsModel {
    pub tls_client_hello: Bytes,
    pub tls_server_flight: Bytes,
    pub tls_client_finished: Bytes,
}

impl Default for TlsModel {
    fn default() -> Self {
        TlsModel {
            tls_client_hello: Bytes(256),
            tls_server_flight: Bytes(700),
            tls_client_finished: Bytes(64),
        }
    }
}

impl TlsModel {
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        use crate::ConfigError;
        for (n, b) in [
            ("tls_client_hello", self.tls_client_hello),
            ("tls_server_flight", self.tls_server_flight),
            ("tls_client_finished", self.tls_client_finished),
        ] {
            if b.0 == 0 {
                return Err(ConfigError::new(n, "must be > 0"));
            }
            // A real flight is a few KB (tens with a certificate chain); a size past 16 MB is a typo
            // that would keep the handshake, and every flow behind it, running until max_time.
            if b.0 > 1 << 24 {
                return Err(ConfigError::new(
                    n,
                    format!("must be at most 16MiB, got {} bytes", b.0),
                ));
            }
        }
        Ok(())
    }
}

/// Message ids of the flights: outside any id the simulator hands out.
const CLIENT_HELLO: MsgId = u64::MAX - 2;
const SERVER_FLIGHT: MsgId = u64::MAX - 1;
const CLIENT_FINISHED: MsgId = u64::MAX;

fn is_flight(m: MsgId) -> bool {
    m >= CLIENT_HELLO
}

/// An engine with a TLS 1.3 handshake in front of its data.
pub struct TlsTcp {
    inner: Box<dyn Engine>,
    client: bool,
    tls: TlsModel,
    ready: bool,
    held: VecDeque<(MsgId, u64)>,
    events: VecDeque<AppEvent>,
    start: Time,
    /// Client: time from opening (SYN) to the server's flight received, i.e. when data may flow.
    handshake_ns: Option<u64>,
}

impl TlsTcp {
    /// `client` is the end that opens the connection; `inner` must not have sent anything yet.
    pub fn new(mut inner: Box<dyn Engine>, client: bool, tls: TlsModel, now: Time) -> TlsTcp {
        if client {
            inner.expect_message(SERVER_FLIGHT, tls.tls_server_flight.0);
            inner.send_message(now, CLIENT_HELLO, tls.tls_client_hello.0);
        } else {
            inner.expect_message(CLIENT_HELLO, tls.tls_client_hello.0);
            inner.expect_message(CLIENT_FINISHED, tls.tls_client_finished.0);
        }
        TlsTcp {
            inner,
            client,
            tls,
            ready: false,
            held: VecDeque::new(),
            events: VecDeque::new(),
            start: now,
            handshake_ns: None,
        }
    }

    /// Takes the inner engine's events, acting on the handshake's.
    fn pump(&mut self, now: Time) {
        while let Some(ev) = self.inner.poll_event() {
            match ev {
                AppEvent::Connected => {}
                AppEvent::MessageReceived { msg } if is_flight(msg) => match (self.client, msg) {
                    (true, SERVER_FLIGHT) => {
                        self.inner
                            .send_message(now, CLIENT_FINISHED, self.tls.tls_client_finished.0);
                        self.open(now);
                    }
                    (false, CLIENT_HELLO) => {
                        self.inner
                            .send_message(now, SERVER_FLIGHT, self.tls.tls_server_flight.0);
                        self.open(now);
                    }
                    _ => {}
                },
                AppEvent::MessageAcked { msg, .. } | AppEvent::MessageFailed { msg, .. }
                    if is_flight(msg) => {}
                other => self.events.push_back(other),
            }
        }
    }

    fn open(&mut self, now: Time) {
        self.ready = true;
        if self.client {
            self.handshake_ns = Some(now.saturating_sub(self.start).0);
        }
        self.events.push_back(AppEvent::Connected);
        while let Some((m, l)) = self.held.pop_front() {
            self.inner.send_message(now, m, l);
        }
    }
}

impl Engine for TlsTcp {
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        if self.ready {
            self.inner.send_message(now, msg, len_bytes);
        } else {
            self.held.push_back((msg, len_bytes));
        }
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.inner.expect_message(msg, len_bytes);
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        self.inner.handle_packet(now, pkt, payload);
        self.pump(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.inner.handle_timeout(now);
        self.pump(now);
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        self.inner.poll_transmit(now, payload)
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.inner.poll_timeout()
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        if self.held.iter().any(|h| h.0 == msg) {
            return Some(MessageStats::default());
        }
        self.inner.message_stats(msg)
    }

    fn release_memory(&mut self) {
        self.inner.release_memory();
    }

    fn probe(&self) -> Option<crate::engine::EngineProbe> {
        self.inner.probe()
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut c = self.inner.counters();
        if let Some(ns) = self.handshake_ns {
            c.push(("tls_handshakes", 1));
            c.push(("tls_handshake_ns", ns));
        }
        c
    }
}
