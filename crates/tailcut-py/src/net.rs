//! `tailcut._core.NetClient` / `NetServer`: the UDP runtime (`tailcut-net`) from Python. A call
//! releases the GIL while it waits; a Python request handler runs on the server's runtime thread and
//! takes the GIL for each request.

use crate::{config_error, ConfigError};
use pyo3::exceptions::{PyConnectionError, PyOSError, PyRuntimeError, PyTimeoutError};
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use serde_json::{Map, Value};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use tailcut_net::config::AddressValidation;
use tailcut_net::tls::{certs_in_pem, TlsConfig};
use tailcut_net::{CallError, Client, NetConfig, Network, PathAddrs, SendLoss, Server};
use tailcut_proto::Dur;
use tailcut_scheme::Entry;

/// Former options that are scheme parameters now, with the `params` key that replaces each.
const MOVED_TO_PARAMS: [(&str, &str); 11] = [
    ("paths", "paths"),
    ("symbol_bytes", "symbol_bytes"),
    ("nic_rate", "nic_rate"),
    ("subflows", "subflows"),
    ("mss", "mss_bytes"),
    ("min_rto_us", "min_rto (e.g. \"5ms\")"),
    ("initial_rto_us", "initial_rto"),
    ("dctcp", "the scheme dctcp"),
    ("transmission_timeout_us", "transmission_timeout"),
    ("decoder_timeout_us", "decoder_timeout"),
    ("migration", "migration = {enabled = ...}"),
];

/// The runtime configuration from `options_json`, a JSON object: `scheme` (a registry name, or a
/// whole `[[schemes]]` entry `{name, transport, params}`), `params` (laid over the entry's), and
/// the runtime's own keys below. A bad key or value raises `ConfigError` naming it (`net.<key>`,
/// `scheme.params.<key>`).
fn config(py: Python<'_>, options_json: &str) -> PyResult<NetConfig> {
    let bad = |key: &str, reason: String| {
        let path = format!("net.{key}");
        config_error(py, &path, &reason, format!("{path}: {reason}"))
    };
    let opts: Map<String, Value> =
        serde_json::from_str(options_json).map_err(|e| bad("", format!("not a JSON object: {e}")))?;
    let mut cfg = NetConfig::default();
    // The scheme entry, resolved once all keys are read (`trims` describes the network it needs).
    let mut entry = Entry {
        name: None,
        transport: "cloudburst".into(),
        params: Map::new(),
    };
    let mut params = Map::new();
    let text = |key: &str, v: &Value| {
        v.as_str()
            .map(str::to_string)
            .ok_or_else(|| bad(key, "must be a string".into()))
    };
    let (mut cert, mut key_file, mut ca) = (None, None, None);
    // `loss` and `loss_path`: `tailcut-net`'s `--loss` and `--loss-path` (the send hook
    // `SendLoss`, seeded by `seed` as `--loss` is by `--seed`).
    let (mut loss, mut loss_path) = (None, None);
    for (key, v) in &opts {
        let uint = || {
            v.as_u64()
                .ok_or_else(|| bad(key, format!("must be a non-negative integer, got {v}")))
        };
        // Fields narrower than u64: a value that does not fit is refused, not truncated.
        let uint32 = || {
            uint().and_then(|n| {
                u32::try_from(n).map_err(|_| bad(key, format!("must be at most {}, got {n}", u32::MAX)))
            })
        };
        match key.as_str() {
            "scheme" => match v {
                Value::String(s) => entry.transport = s.clone(),
                Value::Object(t) => {
                    entry = Entry::from_table(t).map_err(|e| {
                        let e = e.at("scheme");
                        config_error(py, &e.path, &e.reason, e.to_string())
                    })?
                }
                _ => return Err(bad(key, "must be a scheme name or a [[schemes]] entry".into())),
            },
            "params" => {
                params = v
                    .as_object()
                    .cloned()
                    .ok_or_else(|| bad(key, "must be a table of the scheme's parameters".into()))?
            }
            "trims" => {
                cfg.network = Network {
                    trims: v
                        .as_bool()
                        .ok_or_else(|| bad(key, "must be true or false".into()))?,
                }
            }
            "seed" => cfg.seed = uint()?,
            "call_timeout_ms" => cfg.stream_call_timeout = Dur::from_millis(uint()?),
            "spin_us" => cfg.spin = Dur::from_micros(uint()?),
            "association_idle_timeout_ms" => cfg.association_idle_timeout = Dur::from_millis(uint()?),
            "max_message_bytes" => cfg.stream_max_message_bytes = uint()?,
            "max_associations" => cfg.max_associations = uint()? as usize,
            "address_validation" => {
                let t = text(key, v)?;
                cfg.address_validation = AddressValidation::parse(&t)
                    .ok_or_else(|| bad(key, format!("must be \"under_load\" or \"always\", got \"{t}\"")))?
            }
            "cert" => cert = Some(PathBuf::from(text(key, v)?)),
            "key" => key_file = Some(PathBuf::from(text(key, v)?)),
            "ca" => ca = Some(PathBuf::from(text(key, v)?)),
            "ca_pem" => cfg.tls.roots = certs_in_pem(&text(key, v)?).map_err(|e| bad(key, e))?,
            "server_name" => cfg.tls.server_name = text(key, v)?,
            "alpn" => cfg.tls.alpn = vec![text(key, v)?.into_bytes()],
            "task_bytes" => cfg.dcquic_task_bytes = uint()?,
            "path_mtu" => cfg.path_mtu = uint32()?,
            "loss" => {
                loss =
                    Some(v.as_f64().ok_or_else(|| {
                        bad(key, format!("must be a number (a fraction: 0.01 is 1%), got {v}"))
                    })?)
            }
            "loss_path" => loss_path = Some(uint32()?),
            "local_addrs" => {
                let ips = v
                    .as_array()
                    .ok_or_else(|| bad(key, "must be a list of IP addresses".into()))?;
                for ip in ips {
                    let s = ip.as_str().unwrap_or_default();
                    let local = s
                        .parse()
                        .map_err(|_| bad(key, format!("'{ip}' is not an IP address")))?;
                    // The server address is filled in by the client.
                    let remote = SocketAddr::new(local, 0);
                    cfg.path_addrs.push(PathAddrs { local, remote });
                }
            }
            _ => {
                let moved = MOVED_TO_PARAMS.iter().find(|(old, _)| old == key);
                return Err(bad(
                    key,
                    match moved {
                        Some((_, new)) => format!(
                            "a scheme parameter: give it as an experiment file does, params = {{{new}}}"
                        ),
                        None => "unknown option".into(),
                    },
                ));
            }
        }
    }
    match (loss, loss_path) {
        (Some(rate), path) => {
            cfg.send_loss = Some(SendLoss {
                rate,
                seed: cfg.seed,
                path,
                ..SendLoss::default()
            })
        }
        (None, Some(_)) => {
            return Err(bad(
                "loss_path",
                "only with loss (the rate of that path's datagrams dropped)".into(),
            ))
        }
        (None, None) => {}
    }
    entry.overlay(&params);
    cfg = cfg.scheme(&entry.transport, &entry.params).map_err(|e| {
        let e = e.at("scheme");
        config_error(py, &e.path, &e.reason, e.to_string())
    })?;
    if cert.is_some() || key_file.is_some() || ca.is_some() {
        let t = TlsConfig::from_pem_files(cert.as_deref(), key_file.as_deref(), ca.as_deref())
            .map_err(|e| bad("cert", e))?;
        cfg.tls.cert_chain = t.cert_chain;
        cfg.tls.key = t.key;
        if ca.is_some() {
            cfg.tls.roots = t.roots;
        }
    }
    cfg.validate().map_err(|e| {
        // The send hook's fields are the options `loss` (its rate) and `loss_path`.
        let field = match e.path.as_str() {
            "send_loss" | "send_loss.rate" => "loss",
            other => other,
        };
        let path = format!("net.{field}");
        config_error(py, &path, &e.reason, format!("{path}: {}", e.reason))
    })?;
    Ok(cfg)
}

fn address(py: Python<'_>, what: &str, s: &str) -> PyResult<SocketAddr> {
    s.parse().map_err(|_| {
        config_error(
            py,
            what,
            "not an address like 127.0.0.1:7000",
            format!("{what}: '{s}' is not an address like 127.0.0.1:7000"),
        )
    })
}

/// A client of one scheme; `call` blocks without holding the GIL.
#[pyclass(module = "tailcut._core")]
pub struct NetClient {
    client: Option<Client>,
}

/// A call's error as the Python exception its kind maps to.
fn call_error(e: CallError) -> PyErr {
    match e {
        CallError::Timeout => PyTimeoutError::new_err(e.to_string()),
        CallError::TooLarge { .. } => ConfigError::new_err(e.to_string()),
        CallError::Closed => PyOSError::new_err(e.to_string()),
        CallError::Connection { .. } => PyConnectionError::new_err(e.to_string()),
        CallError::InFlight { .. } => PyRuntimeError::new_err(e.to_string()),
    }
}

#[pymethods]
impl NetClient {
    #[new]
    fn new(py: Python<'_>, server: &str, options_json: &str) -> PyResult<NetClient> {
        let mut cfg = config(py, options_json)?;
        let to = address(py, "server", server)?;
        for p in &mut cfg.path_addrs {
            p.remote = to;
        }
        let client = py
            .allow_threads(|| Client::connect(to, cfg))
            .map_err(|e| PyOSError::new_err(format!("connect to {to}: {e}")))?;
        Ok(NetClient { client: Some(client) })
    }

    /// Sends `request` and returns `(response, latency_ns, timeouts, fast_retransmits,
    /// retransmitted_bytes, redundant_bytes, sent_bytes)`: the last five are the request's sender
    /// counters (final if its acknowledgement came before the response).
    #[allow(clippy::type_complexity)]
    fn call<'py>(
        &self,
        py: Python<'py>,
        request: &[u8],
    ) -> PyResult<(Bound<'py, PyBytes>, u64, u32, u32, u64, u64, u64)> {
        let c = self
            .client
            .as_ref()
            .ok_or_else(|| PyOSError::new_err("the client is closed"))?;
        let reply = py.allow_threads(|| c.call(request)).map_err(call_error)?;
        let r = reply.stats.request;
        Ok((
            PyBytes::new(py, &reply.bytes),
            reply.stats.latency.0,
            r.timeouts,
            r.fast_retransmits,
            r.retransmitted_bytes,
            r.redundant_bytes,
            r.sent_bytes,
        ))
    }

    /// The client's counters as JSON.
    fn stats_json(&self) -> String {
        let Some(c) = self.client.as_ref() else {
            return "{}".into();
        };
        let s = c.stats();
        serde_json::json!({
            "calls_completed": s.calls_completed,
            "calls_timed_out": s.calls_timed_out,
            "calls_failed": s.calls_failed,
            "stale_responses": s.stale_responses,
            "datagrams_in": s.datagrams_in,
            "foreign_datagrams": s.foreign_datagrams,
            "datagrams_out": s.tx.datagrams,
            "sends": s.tx.sends,
            "send_errors": s.tx.send_errors,
            "protocol_errors": s.protocol_errors,
            "max_datagram": s.tx.max_datagram,
            "dropped_by_hook": s.dropped_by_hook,
            "host_delay_ns": s.host_delay_ns,
            "dcquic_handshakes": s.dcquic.map(|q| q.handshakes),
            "dcquic_handshake_ns": s.dcquic.map(|q| q.handshake_ns),
            "dcquic_migrations": s.dcquic.map(|q| q.migrations),
            "dcquic_reconnects": s.dcquic.map(|q| q.reconnects),
            "dcquic_mps": s.dcquic.map(|q| q.mps),
            "dcquic_path": s.dcquic.map(|q| q.path),
        })
        .to_string()
    }

    /// Ends the connection and opens a new one for the next call (`Client::reconnect`).
    fn reconnect(&self, py: Python<'_>) -> PyResult<()> {
        let c = self
            .client
            .as_ref()
            .ok_or_else(|| PyOSError::new_err("the client is closed"))?;
        py.allow_threads(|| c.reconnect()).map_err(call_error)
    }

    /// Stops the runtime thread.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.client.take() {
            Some(c) => py
                .allow_threads(|| c.shutdown())
                .map_err(|e| PyOSError::new_err(e.to_string())),
            None => Ok(()),
        }
    }
}

/// A server of one scheme: answers each request with `handler(request) -> bytes` (an echo without
/// a handler), on its runtime thread.
#[pyclass(module = "tailcut._core")]
pub struct NetServer {
    server: Option<Server>,
    handler_errors: Arc<AtomicU64>,
    ca_pem: Option<String>,
}

/// The `[[schemes]]` entry that `tailcut net`'s flags name (`--scheme`, `--experiment` with
/// `--entry`, `--param`), as JSON `{name, transport, params}`: the one reading of those flags,
/// shared with the `tailcut-net` command. A bad flag raises `ConfigError` whose `path` is the flag.
#[pyfunction]
pub fn net_scheme_entry(py: Python<'_>, args: Vec<String>) -> PyResult<String> {
    let e = tailcut_net::cli::scheme_entry(&args)
        .map_err(|e| config_error(py, &e.path, &e.reason, e.to_string()))?;
    let mut m = Map::new();
    if let Some(n) = e.name {
        m.insert("name".into(), n.into());
    }
    m.insert("transport".into(), e.transport.into());
    m.insert("params".into(), Value::Object(e.params));
    Ok(Value::Object(m).to_string())
}

/// A throwaway CA and a certificate it signed for `names`, as PEM text `(ca, cert, key)`: for tests
/// and peers such as aioquic that read certificate files. Not a deployment's PKI.
#[pyfunction]
pub fn generate_cert(names: Vec<String>) -> PyResult<(String, String, String)> {
    let (_, g) = TlsConfig::generate(&names).map_err(PyOSError::new_err)?;
    Ok((g.ca_pem, g.cert_pem, g.key_pem))
}

#[pymethods]
impl NetServer {
    #[new]
    #[pyo3(signature = (bind, options_json, handler=None))]
    fn new(py: Python<'_>, bind: &str, options_json: &str, handler: Option<PyObject>) -> PyResult<NetServer> {
        let mut cfg = config(py, options_json)?;
        // A DCQUIC server without a certificate gets a throwaway CA and leaf (its CA is `ca_pem`).
        let mut ca_pem = None;
        if cfg.family() == tailcut_net::Family::Dcquic && cfg.tls.cert_chain.is_empty() {
            let (t, g) = TlsConfig::generate(&[cfg.tls.server_name.clone()])
                .map_err(|e| PyOSError::new_err(format!("generating a certificate: {e}")))?;
            cfg.tls.cert_chain = t.cert_chain;
            cfg.tls.key = t.key;
            ca_pem = Some(g.ca_pem);
        }
        let at = address(py, "bind", bind)?;
        let errors = Arc::new(AtomicU64::new(0));
        let counted = errors.clone();
        let answer = move |req: &[u8], out: &mut Vec<u8>| match &handler {
            None => out.extend_from_slice(req),
            // A handler that raises or returns something other than bytes answers with nothing, and
            // is counted; the server goes on.
            Some(h) => Python::with_gil(|py| {
                let got = h
                    .call1(py, (PyBytes::new(py, req),))
                    .and_then(|r| r.extract::<Vec<u8>>(py));
                match got {
                    Ok(b) => out.extend_from_slice(&b),
                    Err(e) => {
                        counted.fetch_add(1, Ordering::Relaxed);
                        e.print(py);
                    }
                }
            }),
        };
        let server = py
            .allow_threads(|| Server::bind(at, cfg, answer))
            .map_err(|e| PyOSError::new_err(format!("bind {at}: {e}")))?;
        Ok(NetServer {
            server: Some(server),
            handler_errors: errors,
            ca_pem,
        })
    }

    /// The throwaway CA a DCQUIC server made for itself (no `cert` given), as PEM; clients trust it
    /// with `ca_pem`.
    #[getter]
    fn ca_pem(&self) -> Option<String> {
        self.ca_pem.clone()
    }

    /// The bound address, e.g. `127.0.0.1:41234`.
    #[getter]
    fn local_addr(&self) -> Option<String> {
        self.server.as_ref().map(|s| s.local_addr().to_string())
    }

    /// The server's counters as JSON.
    fn stats_json(&self) -> String {
        let Some(s) = self.server.as_ref() else {
            return "{}".into();
        };
        let st = s.stats();
        serde_json::json!({
            "requests": st.requests,
            "duplicate_requests": st.duplicate_requests,
            "responses_acked": st.responses_acked,
            "responses_failed": st.responses_failed,
            "datagrams_in": st.datagrams_in,
            "foreign_datagrams": st.foreign_datagrams,
            "associations": st.associations,
            "associations_opened": st.associations_opened,
            "associations_evicted": st.associations_evicted,
            "address_checks": st.address_checks,
            "addresses_validated": st.addresses_validated,
            "bad_tokens": st.bad_tokens,
            "amplification_limited": st.amplification_limited,
            "protocol_errors": st.protocol_errors,
            "associations_finished": st.associations_finished,
            "max_datagram": st.tx.max_datagram,
            "dropped_by_hook": st.dropped_by_hook,
            "handler_errors": self.handler_errors.load(Ordering::Relaxed),
        })
        .to_string()
    }

    /// Stops the runtime thread.
    fn close(&mut self, py: Python<'_>) -> PyResult<()> {
        match self.server.take() {
            Some(s) => py
                .allow_threads(|| s.shutdown())
                .map_err(|e| PyOSError::new_err(e.to_string())),
            None => Ok(()),
        }
    }
}

/// A connection of `tailcut-net bench`'s kernel baselines: `kernel-tcp` (kernel TCP with
/// TCP_NODELAY) or `kernel-tls` (TLS 1.3, rustls, over kernel TCP), framed echo calls (4-byte
/// length, then the bytes) exactly as that command makes them, to `server` or to an echo server this
/// starts on 127.0.0.1. Not a scheme of the runtime: no options, no loss hook.
#[pyclass(module = "tailcut._core")]
pub struct KernelClient {
    conn: std::sync::Mutex<Option<KernelConn>>,
    address: SocketAddr,
}

enum KernelConn {
    Tcp(std::net::TcpStream),
    Tls(Box<tailcut_net::kernel_tls::Conn>),
}

#[pymethods]
impl KernelClient {
    /// `baseline` is `kernel-tcp` or `kernel-tls`; `server` an address, or None for an in-process
    /// echo server. For `kernel-tls`, `server_name` and `ca` (a PEM file) as the runtime's options
    /// (an in-process server gets a throwaway certificate for `server_name`).
    #[new]
    #[pyo3(signature = (baseline, server=None, server_name=None, ca=None))]
    fn new(
        py: Python<'_>,
        baseline: &str,
        server: Option<&str>,
        server_name: Option<String>,
        ca: Option<PathBuf>,
    ) -> PyResult<KernelClient> {
        let to = server.map(|s| address(py, "server", s)).transpose()?;
        let listen = || -> PyResult<(std::net::TcpListener, SocketAddr)> {
            let l =
                std::net::TcpListener::bind("127.0.0.1:0").map_err(|e| PyOSError::new_err(e.to_string()))?;
            let a = l.local_addr().map_err(|e| PyOSError::new_err(e.to_string()))?;
            Ok((l, a))
        };
        let (conn, address) = match baseline {
            "kernel-tcp" => {
                let to = match to {
                    Some(a) => a,
                    None => {
                        let (l, a) = listen()?;
                        // Serves this client's one connection, then ends with it (as `tailcut-net`'s).
                        std::thread::spawn(move || {
                            if let Ok((s, _)) = l.accept() {
                                tailcut_net::cli::echo_framed(s);
                            }
                        });
                        a
                    }
                };
                let s = py
                    .allow_threads(|| std::net::TcpStream::connect(to))
                    .map_err(|e| PyOSError::new_err(format!("connect to {to}: {e}")))?;
                s.set_nodelay(true)
                    .map_err(|e| PyOSError::new_err(e.to_string()))?;
                (KernelConn::Tcp(s), to)
            }
            "kernel-tls" => {
                use tailcut_net::kernel_tls;
                let mut tls = match &ca {
                    Some(ca) => TlsConfig::from_pem_files(None, None, Some(ca))
                        .map_err(|e| config_error(py, "net.ca", &e, format!("net.ca: {e}")))?,
                    None => TlsConfig::default(),
                };
                if let Some(n) = server_name {
                    tls.server_name = n;
                }
                let to = match to {
                    Some(a) => a,
                    None => {
                        let (t, _) = TlsConfig::generate(&[tls.server_name.clone()])
                            .map_err(|e| PyOSError::new_err(format!("generating a certificate: {e}")))?;
                        let name = std::mem::take(&mut tls.server_name);
                        tls = TlsConfig {
                            server_name: name,
                            ..t
                        };
                        let (l, a) = listen()?;
                        let cfg =
                            kernel_tls::server_config(&tls).map_err(|e| PyOSError::new_err(e.to_string()))?;
                        std::thread::spawn(move || kernel_tls::serve_echo(l, cfg));
                        a
                    }
                };
                let ccfg = kernel_tls::client_config(&tls).map_err(|e| PyOSError::new_err(e.to_string()))?;
                let c = py
                    .allow_threads(|| kernel_tls::Conn::connect(to, ccfg, &tls.server_name))
                    .map_err(|e| PyConnectionError::new_err(format!("connect to {to}: {e}")))?;
                (KernelConn::Tls(Box::new(c)), to)
            }
            other => {
                let reason = "a kernel baseline is kernel-tcp or kernel-tls";
                return Err(config_error(
                    py,
                    "scheme",
                    reason,
                    format!("scheme: '{other}': {reason}"),
                ));
            }
        };
        Ok(KernelClient {
            conn: std::sync::Mutex::new(Some(conn)),
            address,
        })
    }

    /// The server's address.
    #[getter]
    fn server(&self) -> String {
        self.address.to_string()
    }

    /// Sends `request` and returns `(response, latency_ns)` (the call on this connection, measured
    /// around it); calls from several threads take turns on the one connection.
    fn call<'py>(&self, py: Python<'py>, request: &[u8]) -> PyResult<(Bound<'py, PyBytes>, u64)> {
        let mut back = vec![0u8; request.len()];
        let ns = py.allow_threads(|| {
            let mut g = self
                .conn
                .lock()
                .map_err(|_| PyOSError::new_err("the connection failed"))?;
            let c = g
                .as_mut()
                .ok_or_else(|| PyOSError::new_err("the client is closed"))?;
            let clock = tailcut_net::clock::Clock::start();
            match c {
                KernelConn::Tcp(s) => tailcut_net::cli::framed_call(s, request, &mut back),
                KernelConn::Tls(t) => t.call(request, &mut back),
            }
            .map_err(|e| PyConnectionError::new_err(e.to_string()))?;
            Ok::<u64, PyErr>(clock.now().0)
        })?;
        Ok((PyBytes::new(py, &back), ns))
    }

    /// Closes the connection.
    fn close(&self) {
        if let Ok(mut g) = self.conn.lock() {
            g.take();
        }
    }
}
