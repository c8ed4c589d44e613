//! Engines of TCP with a TLS 1.3 handshake before data (DCQUIC's baselines): each TCP endpoint wrapped in
//! the handshake model.

use super::{ConnSetup, EngineFactory, TcpTransport};
use tailcut_proto::rng::Rng;
use tailcut_proto::tcp::TcpConfig;
use tailcut_proto::tls13::{TlsModel, TlsTcp};
use tailcut_proto::Engine;

pub struct TlsTransport {
    pub inner: TcpTransport,
    pub tls: TlsModel,
}

impl EngineFactory for TlsTransport {
    fn connect(
        &self,
        s: &ConnSetup,
        rng_sender: Rng,
        rng_receiver: Rng,
    ) -> (Box<dyn Engine>, Box<dyn Engine>) {
        let (a, b) = self.inner.connect(s, rng_sender, rng_receiver);
        (
            Box::new(TlsTcp::new(a, s.sender_opens, self.tls.clone(), s.now)),
            Box::new(TlsTcp::new(b, !s.sender_opens, self.tls.clone(), s.now)),
        )
    }

    fn framing(&self) -> (u64, u64) {
        self.inner.framing()
    }

    fn tcp(&self) -> Option<&TcpConfig> {
        self.inner.tcp()
    }
}
