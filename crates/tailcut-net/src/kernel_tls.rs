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
    let mut cfg = rustls::ServerConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(invalid)?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(invalid)?;
    // No session tickets, as DCQUIC's server on sockets sends none (`quic_crypto::server`): a
    // "fresh" call is then a full handshake (certificate signed and verified) on both stacks. With
    // rustls' default tickets this baseline resumed every fresh connection after the first and
    // skipped both, which made DCQUIC's fresh row look 2.8x slower than a like-for-like 2x.
    cfg.send_tls13_tickets = 0;
    Ok(Arc::new(cfg))
}

pub fn client_config(t: &TlsConfig) -> io::Result<Arc<rustls::ClientConfig>> {
    let mut roots = rustls::RootCertStore::empty();
    for c in &t.roots {
        roots.add(CertificateDer::from(c.clone())).map_err(invalid)?;
    }
    let mut cfg = rustls::ClientConfig::builder_with_provider(provider())
        .with_protocol_versions(&[&rustls::version::TLS13])
        .map_err(invalid)?
        .with_root_certificates(roots)
        .with_no_client_auth();
    // Nor resumption against another server that would send tickets: see `server_config`.
    cfg.resumption = rustls::client::Resumption::disabled();
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
    tls: TlsStream,
}

impl Conn {
    pub fn connect(to: SocketAddr, cfg: Arc<rustls::ClientConfig>, name: &str) -> io::Result<Conn> {
        let s = TcpStream::connect(to)?;
        s.set_nodelay(true)?;
        Ok(Conn {
            tls: TlsStream::client(s, cfg, name)?,
        })
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

/// Both ends' TLS 1.3 settings for one set of certificates: what a host that both connects and
/// accepts (a testbed agent) needs.
#[derive(Clone)]
pub struct TlsContext {
    client: Arc<rustls::ClientConfig>,
    server: Arc<rustls::ServerConfig>,
    name: String,
}

impl TlsContext {
    /// `t` must have a server's chain and key and a client's roots (as [`TlsConfig::generate`] gives).
    pub fn new(t: &TlsConfig) -> io::Result<TlsContext> {
        Ok(TlsContext {
            client: client_config(t)?,
            server: server_config(t)?,
            name: t.server_name.clone(),
        })
    }

    /// The client end on the connected socket `s`, handshake done.
    pub fn connect(&self, s: TcpStream) -> io::Result<TlsStream> {
        TlsStream::client(s, self.client.clone(), &self.name)
    }

    /// The server end on the accepted socket `s`.
    pub fn accept(&self, s: TcpStream) -> io::Result<TlsStream> {
        TlsStream::server(s, self.server.clone())
    }
}

/// One end of a connection over a kernel TCP socket, as a byte stream: TLS 1.3 over the socket, or
/// the bare socket (`Plain`), so that a program carrying both kinds has one type. The testbed's kernel
/// agent carries its flows over it, over TLS for the `tcp_tls13` / `dctcp_tls13` schemes.
pub enum TlsStream {
    Client(Box<StreamOwned<ClientConnection, TcpStream>>),
    Server(Box<StreamOwned<ServerConnection, TcpStream>>),
    /// No TLS: the socket's bytes as they are.
    Plain(TcpStream),
}

impl TlsStream {
    /// `s` as a connection with `tls` carries its bytes: over TLS when `tls` is given (the client end
    /// when `connecting`, its handshake finished before this returns; the server end otherwise, its
    /// handshake on the first read), or bare.
    pub fn on(s: TcpStream, tls: Option<&TlsContext>, connecting: bool) -> io::Result<TlsStream> {
        match tls {
            None => Ok(TlsStream::Plain(s)),
            Some(t) if connecting => t.connect(s),
            Some(t) => t.accept(s),
        }
    }

    /// The client end on the connected socket `s`, its handshake finished before it returns (as
    /// [`Conn::connect`]: the handshake's round trip is part of what a caller measures).
    pub fn client(s: TcpStream, cfg: Arc<rustls::ClientConfig>, name: &str) -> io::Result<TlsStream> {
        let name = ServerName::try_from(name.to_string()).map_err(invalid)?;
        let conn = ClientConnection::new(cfg, name).map_err(invalid)?;
        let mut tls = StreamOwned::new(conn, s);
        while tls.conn.is_handshaking() {
            tls.conn.complete_io(&mut tls.sock)?;
        }
        Ok(TlsStream::Client(Box::new(tls)))
    }

    /// The server end on the accepted socket `s`; the handshake runs on the first read.
    pub fn server(s: TcpStream, cfg: Arc<rustls::ServerConfig>) -> io::Result<TlsStream> {
        let conn = ServerConnection::new(cfg).map_err(invalid)?;
        Ok(TlsStream::Server(Box::new(StreamOwned::new(conn, s))))
    }

    /// The TCP socket under the TLS connection (its `TCP_INFO`, its ports).
    pub fn tcp(&self) -> &TcpStream {
        match self {
            TlsStream::Client(t) => &t.sock,
            TlsStream::Server(t) => &t.sock,
            TlsStream::Plain(s) => s,
        }
    }

    /// Ends this side's sending: TLS's close_notify (over TLS), then the TCP FIN; the peer reads to
    /// the end.
    pub fn close_write(&mut self) -> io::Result<()> {
        match self {
            TlsStream::Client(t) => t.conn.send_close_notify(),
            TlsStream::Server(t) => t.conn.send_close_notify(),
            TlsStream::Plain(_) => {}
        }
        self.flush()?;
        self.tcp().shutdown(std::net::Shutdown::Write)
    }
}

impl Read for TlsStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        match self {
            TlsStream::Client(t) => t.read(buf),
            TlsStream::Server(t) => t.read(buf),
            TlsStream::Plain(s) => s.read(buf),
        }
    }
}

impl Write for TlsStream {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        match self {
            TlsStream::Client(t) => t.write(buf),
            TlsStream::Server(t) => t.write(buf),
            TlsStream::Plain(s) => s.write(buf),
        }
    }

    fn flush(&mut self) -> io::Result<()> {
        match self {
            TlsStream::Client(t) => t.flush(),
            TlsStream::Server(t) => t.flush(),
            TlsStream::Plain(s) => s.flush(),
        }
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

    /// A stream's bytes cross intact, and the writer's close reaches the reader as the end.
    #[test]
    fn a_tls_stream_carries_bytes_and_its_close() {
        let (t, _) = TlsConfig::generate(&["localhost".into()]).unwrap();
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let scfg = server_config(&t).unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut tls = TlsStream::server(s, scfg).unwrap();
            let mut got = Vec::new();
            tls.read_to_end(&mut got).unwrap();
            got
        });
        let s = TcpStream::connect(to).unwrap();
        let mut c = TlsStream::client(s, client_config(&t).unwrap(), "localhost").unwrap();
        let data: Vec<u8> = (0..100_000u32).map(|i| i as u8).collect();
        c.write_all(&data).unwrap();
        c.close_write().unwrap();
        assert_eq!(server.join().unwrap(), data);
    }

    /// Both kinds through [`TlsStream::on`]: bytes cross intact both ways and each side's close ends
    /// the other's stream; a peer expecting TLS cannot read a bare stream.
    #[test]
    fn on_carries_bytes_with_and_without_tls() {
        let (t, _) = TlsConfig::generate(&["localhost".into()]).unwrap();
        let ctx = TlsContext::new(&t).unwrap();
        let data: Vec<u8> = (0..50_000u32).map(|i| (i % 251) as u8).collect();
        for tls in [None, Some(&ctx)] {
            let l = TcpListener::bind("127.0.0.1:0").unwrap();
            let to = l.local_addr().unwrap();
            let (ctx2, answer) = (tls.cloned(), data[..100].to_vec());
            let server = std::thread::spawn(move || {
                let (s, _) = l.accept().unwrap();
                let mut end = TlsStream::on(s, ctx2.as_ref(), false).unwrap();
                assert_eq!(matches!(end, TlsStream::Plain(_)), ctx2.is_none());
                let mut got = Vec::new();
                end.read_to_end(&mut got).unwrap();
                end.write_all(&answer).unwrap();
                end.close_write().unwrap();
                got
            });
            let s = TcpStream::connect(to).unwrap();
            let mut c = TlsStream::on(s, tls, true).unwrap();
            assert_eq!(c.tcp().peer_addr().unwrap(), to);
            c.write_all(&data).unwrap();
            c.close_write().unwrap();
            let mut back = Vec::new();
            c.read_to_end(&mut back).unwrap();
            assert_eq!(server.join().unwrap(), data);
            assert_eq!(back, data[..100]);
        }
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let to = l.local_addr().unwrap();
        let server = std::thread::spawn(move || {
            let (s, _) = l.accept().unwrap();
            let mut end = TlsStream::on(s, Some(&ctx), false).unwrap();
            end.read_to_end(&mut Vec::new())
        });
        let mut c = TlsStream::on(TcpStream::connect(to).unwrap(), None, true).unwrap();
        // The server may refuse before the close: only what it read matters.
        let _ = c.write_all(&data[..100]).and_then(|()| c.close_write());
        assert!(server.join().unwrap().is_err(), "bare bytes are no TLS record");
    }
}
