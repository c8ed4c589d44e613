//! The real baseline for DCQUIC: TLS 1.3 (rustls, ring, the same certificates) over the kernel's
//! TCP, with the kernel-TCP baseline's framing (4-byte length, then the bytes). What a datacenter
//! RPC over TLS does without QUIC: a TCP handshake, then a TLS one, then the call.

use crate::tls::TlsConfig;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use rustls::{ClientConnection, ServerConnection, StreamOwned};
use std::io::{self, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, e.to_string())
}

pub fn server_config(t: &TlsConfig) -> io::Result<Arc<rustls::ServerConfig>> {
    let certs = t
        .cert_chain
        .iter()
        .map(|c| CertificateDer::from(c.clone()))
        .collect();
    let key = PrivateKeyDer::try_from(t.key.clone()).map_err(invalid)?;
    let cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(invalid)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(invalid)?;
    Ok(Arc::new(cfg))
}

pub fn client_config(t: &TlsConfig) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for c in &t.roots {
        roots.add(CertificateDer::from(c.clone())).map_err(invalid)?;
    }
    let cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(invalid)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    Ok(Arc::new(cfg))
}

/// Serves framed echo calls over TLS on every connection `l` accepts, one thread per connection,
/// until the listener fails.
pub fn serve_echo(l: TcpListener, cfg: Arc<rustls::ServerConfig>) {
    for s in l.incoming() {
        let Ok(s) = s else { return };
        let cfg = cfg.clone();
        std::thread::spawn(move || {
            let _ = s.set_nodelay(true);
            let Ok(conn) = ServerConnection::new(cfg) else {
                return;
            };
            let mut tls = StreamOwned::new(conn, s);
            let mut buf = Vec::new();
            loop {
                let mut len = [0u8; 4];
                if tls.read_exact(&mut len).is_err() {
                    return;
                }
                buf.resize(u32::from_be_bytes(len) as usize, 0);
                if tls.read_exact(&mut buf).is_err() {
                    return;
                }
                let mut out = Vec::with_capacity(4 + buf.len());
                out.extend_from_slice(&len);
                out.extend_from_slice(&buf);
                if tls.write_all(&out).and_then(|_| tls.flush()).is_err() {
                    return;
                }
            }
        });
    }
}

/// A TLS client connection to `to`: TCP connect, then the TLS handshake, finished before it returns.
pub struct Conn {
    tls: StreamOwned<ClientConnection, TcpStream>,
}

impl Conn {
    pub fn connect(to: SocketAddr, cfg: Arc<rustls::ClientConfig>, name: &str) -> io::Result<Conn> {
        let s = TcpStream::connect(to)?;
        s.set_nodelay(true)?;
        let name = ServerName::try_from(name.to_string()).map_err(invalid)?;
        let conn = ClientConnection::new(cfg, name).map_err(invalid)?;
        let mut tls = StreamOwned::new(conn, s);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(Conn { tls })
    }

    /// One framed call: sends `req`, reads the echo into `back` (as long as `req`).
    pub fn call(&mut self, req: &[u8], back: &mut [u8]) -> io::Result<()> {
        let mut out = Vec::with_capacity(4 + req.len());
        out.extend_from_slice(&(req.len() as u32).to_be_bytes());
        out.extend_from_slice(req);
        self.tls.write_all(&out)?;
        self.tls.flush()?;
        self.tls.read_exact(&mut [0u8; 4])?;
        self.tls.read_exact(back)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calls_over_tls_on_kernel_tcp_echo_byte_exact() {
        let (t, _) = TlsConfig::generate(&["localhost".into()]).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let cfg = server_config(&t).unwrap();
        std::thread::spawn(move || serve_echo(l, cfg));
        let mut c = Conn::connect(to, client_config(&t).unwrap(), "localhost").unwrap();
        for n in [1usize, 10_000, 100_000] {
            let req: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let mut back = vec![0u8; n];
            c.call(&req, &mut back).unwrap();
            assert_eq!(back, req);
        }
        let other = TlsConfig::generate(&["localhost".into()]).unwrap().0;
        assert!(Conn::connect(to, client_config(&other).unwrap(), "localhost").is_err());
    }
}
