//! DCQUIC's TLS on real sockets: the rustls configs a runtime hands its engines
//! ([`tailcut_proto::dcquic::real::RealMode`]). TLS 1.3 only, ring's provider (its randoms and key
//! shares come from the operating system), webpki verification of the server against the client's
//! roots at the wall clock's time, and no session tickets (0-RTT is not offered on real sockets).

use quinn_proto::crypto::rustls::{QuicClientConfig, QuicServerConfig};
use rustls_pki_types::{CertificateDer, PrivateKeyDer};
use std::sync::Arc;
use tailcut_proto::dcquic::real::RealMode;

/// A server's certificate chain (leaf first) and private key.
pub struct Identity {
    pub certs: Vec<CertificateDer<'static>>,
    pub key: PrivateKeyDer<'static>,
}

/// What the engines of a runtime share on real sockets besides the limits: the ALPN, the server's
/// identity (`None` for a client), the client's roots, the name a client asks for.
pub struct Tls<'a> {
    pub alpn: &'a [Vec<u8>],
    pub identity: Option<Identity>,
    pub roots: Vec<CertificateDer<'static>>,
    pub server_name: &'a str,
}

/// The engines' real mode: a client config when there are roots, a server config when there is an
/// identity. Errors name the field at fault.
pub fn real_mode(tls: Tls<'_>, path_max_payload: u16, max_message_bytes: u64) -> Result<RealMode, String> {
    if tls.alpn.is_empty() || tls.alpn.iter().any(|a| a.is_empty() || a.len() > 255) {
        return Err("alpn: need at least one protocol name of 1..=255 bytes".into());
    }
    if tls.identity.is_none() && tls.roots.is_empty() {
        return Err("roots: a client needs at least one trusted certificate".into());
    }
    let client = if tls.roots.is_empty() {
        None
    } else {
        Some(client(&tls.roots, tls.alpn)?)
    };
    let server = match &tls.identity {
        Some(id) => Some(server(id, tls.alpn)?),
        None => None,
    };
    Ok(RealMode {
        client,
        server,
        server_name: tls.server_name.to_string(),
        path_max_payload,
        max_message_bytes,
        max_buffered_bytes: max_message_bytes.saturating_mul(2),
    })
}

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

/// The client's crypto: webpki verification against `roots`, no early data.
pub fn client(roots: &[CertificateDer<'static>], alpn: &[Vec<u8>]) -> Result<Arc<QuicClientConfig>, String> {
    let mut store = rustls::RootCertStore::empty();
    for c in roots {
        store
            .add(c.clone())
            .map_err(|e| format!("roots: certificate not usable as a trust anchor: {e}"))?;
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_root_certificates(store)
        .with_no_client_auth();
    cfg.alpn_protocols = alpn.to_vec();
    let q = QuicClientConfig::try_from(cfg).map_err(|e| e.to_string())?;
    Ok(Arc::new(q))
}

/// The server's crypto: its certificate chain.
pub fn server(id: &Identity, alpn: &[Vec<u8>]) -> Result<Arc<QuicServerConfig>, String> {
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(|e| e.to_string())?
        .with_no_client_auth()
        .with_single_cert(id.certs.clone(), id.key.clone_key())
        .map_err(|e| format!("identity: {e}"))?;
    cfg.alpn_protocols = alpn.to_vec();
    cfg.send_tls13_tickets = 0;
    let q = QuicServerConfig::try_from(cfg).map_err(|e| e.to_string())?;
    Ok(Arc::new(q))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tls::TlsConfig;

    #[test]
    fn a_bad_alpn_or_a_client_without_roots_is_refused() {
        let (mut t, _) = TlsConfig::generate(&["localhost".into()]).unwrap();
        assert!(real_mode(t.quic().unwrap(), 1452, 1 << 20).is_ok());
        t.alpn = vec![Vec::new()];
        let e = real_mode(t.quic().unwrap(), 1452, 1 << 20).err().unwrap();
        assert!(e.starts_with("alpn"), "{e}");
        t.alpn.clear();
        assert!(real_mode(t.quic().unwrap(), 1452, 1 << 20).is_err());
        let client = TlsConfig::default();
        let e = real_mode(client.quic().unwrap(), 1452, 1 << 20).err().unwrap();
        assert!(e.starts_with("roots"), "{e}");
    }
}
