//! The `tailcut-net` command's subcommands: `serve`, `bench` and `cert`. Flags are configuration
//! and fail as [`ConfigError`]s naming the flag (or the experiment file's field); the sockets and files
//! fail with the operating system's message.

use crate::kernel_tls;
use crate::tls::TlsConfig;
use crate::udp_floor;
use crate::{Client, Family, NetConfig, SendLoss, Server};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use tailcut_proto::flags::{present, value as flag, values};
use tailcut_proto::units::{format_bytes, parse_bytes};
use tailcut_proto::{ConfigError, Dur};
use tailcut_scheme::{Entry, Network};
use tailcut_sys::clock::monotonic_ns;

/// Why a subcommand stopped: a flag (or the experiment file it names) is wrong, or the sockets, files
/// or peer failed. Printed as the command's last words.
#[derive(Debug, thiserror::Error)]
pub enum CliError {
    #[error("{0}")]
    Config(#[from] ConfigError),
    /// The scheme entry's own fields (the path is relative to the entry).
    #[error("scheme '{name}': {error}")]
    Scheme { name: String, error: ConfigError },
    #[error("{0}")]
    Run(String),
}

impl From<String> for CliError {
    fn from(m: String) -> CliError {
        CliError::Run(m)
    }
}

impl From<&str> for CliError {
    fn from(m: &str) -> CliError {
        CliError::Run(m.to_string())
    }
}

/// Baselines of `bench` that are the kernel's stacks, not schemes of the registry (the Python front
/// reads this list through the extension: `tailcut.net.KERNEL_BASELINES`).
pub const KERNEL_BASELINES: [&str; 2] = ["kernel-tcp", "kernel-tls"];

/// `bench --scheme udp-floor`: the runtime's socket layer with no engine (`udp_floor`), what any
/// stack over UDP sockets pays at least. A measurement of this binary's, not a baseline to deploy.
pub const UDP_FLOOR: &str = "udp-floor";

/// A `--param key=value`'s value as an experiment file would write it: TOML (`4`, `true`,
/// `{ kind = "dctcp" }`, `"5ms"`), or else the bare text as a string (`5ms`, `2Gbps`).
fn param_value(text: &str) -> serde_json::Value {
    match toml::from_str::<toml::Table>(&format!("v = {text}")) {
        Ok(mut t) => t
            .remove("v")
            .and_then(|v| serde_json::to_value(v).ok())
            .unwrap_or_else(|| text.into()),
        Err(_) => text.into(),
    }
}

/// The scheme entry the flags name: `--experiment FILE --entry NAME` takes the `[[schemes]]` entry
/// of that name from an experiment file, `--scheme NAME` a registry scheme with its defaults; each
/// `--param key=value` (dotted keys reach into tables: `mps.negotiate=false`) is laid over its
/// `params`.
pub fn scheme_entry(args: &[String]) -> Result<Entry, ConfigError> {
    let mut e = match flag::<PathBuf>(args, "--experiment")? {
        Some(file) => {
            let in_file = |e: &dyn std::fmt::Display| {
                ConfigError::new("--experiment", format!("{}: {e}", file.display()))
            };
            let text = std::fs::read_to_string(&file).map_err(|e| in_file(&e))?;
            let doc: toml::Table = toml::from_str(&text).map_err(|e| in_file(&e))?;
            let doc = serde_json::to_value(doc).map_err(|e| in_file(&e))?;
            let schemes = doc["schemes"].as_array().cloned().unwrap_or_default();
            let names: Vec<&str> = schemes.iter().filter_map(|s| s["name"].as_str()).collect();
            let want: String = flag(args, "--entry")?.ok_or_else(|| {
                ConfigError::new("--entry", format!("missing (one of {})", names.join(", ")))
            })?;
            let (i, table) = schemes
                .iter()
                .enumerate()
                .find(|(_, s)| s["name"].as_str() == Some(&want))
                .ok_or_else(|| {
                    let has = names.join(", ");
                    ConfigError::new(
                        "--entry",
                        format!("no scheme named '{want}' in {} (it has {has})", file.display()),
                    )
                })?;
            let table = table.as_object().cloned().unwrap_or_default();
            Entry::from_table(&table).map_err(|e| in_file(&e.at(&format!("schemes[{i}]"))))?
        }
        None => Entry {
            name: None,
            transport: flag(args, "--scheme")?.unwrap_or_else(|| "cloudburst".into()),
            params: serde_json::Map::new(),
        },
    };
    for p in values(args, "--param")? {
        let (key, value) = p.split_once('=').ok_or_else(|| {
            ConfigError::new("--param", format!("'{p}': expected key=value, e.g. min_rto=5ms"))
        })?;
        let mut parts: Vec<&str> = key.split('.').collect();
        let last = parts.pop().unwrap_or_default();
        let mut table = &mut e.params;
        for part in parts {
            let slot = table
                .entry(part.to_string())
                .or_insert_with(|| serde_json::Value::Object(Default::default()));
            table = slot
                .as_object_mut()
                .ok_or_else(|| ConfigError::new("--param", format!("'{p}': params.{part} is not a table")))?;
        }
        table.insert(last.to_string(), param_value(value));
    }
    Ok(e)
}

/// The TLS flags: certificates, server name, ALPN.
fn tls_flags(args: &[String]) -> Result<TlsConfig, CliError> {
    let path = |name| flag::<PathBuf>(args, name);
    let (cert, key, ca) = (path("--cert")?, path("--key")?, path("--ca")?);
    let mut tls = TlsConfig::default();
    if cert.is_some() || key.is_some() || ca.is_some() {
        tls = TlsConfig::from_pem_files(cert.as_deref(), key.as_deref(), ca.as_deref())?;
    }
    if let Some(n) = flag(args, "--server-name")? {
        tls.server_name = n;
    }
    if let Some(a) = flag::<String>(args, "--alpn")? {
        tls.alpn = vec![a.into_bytes()];
    }
    Ok(tls)
}

/// The runtime configuration: the scheme entry, resolved by the scheme layer, and the runtime's own
/// flags.
fn config(args: &[String]) -> Result<NetConfig, CliError> {
    let e = scheme_entry(args)?;
    let mut cfg = NetConfig {
        network: Network {
            trims: present(args, "--network-trims"),
        },
        ..NetConfig::default()
    };
    cfg = cfg
        .scheme(&e.transport, &e.params)
        .map_err(|error| CliError::Scheme {
            name: e.name.clone().unwrap_or_else(|| e.transport.clone()),
            error,
        })?;
    cfg.tls = tls_flags(args)?;
    if let Some(b) = flag::<String>(args, "--task-bytes")? {
        cfg.dcquic_task_bytes = parse_bytes(&b).map_err(|e| e.at("--task-bytes"))?;
    }
    if let Some(m) = flag(args, "--path-mtu")? {
        cfg.path_mtu = m;
    }
    if let Some(d) = flag::<u64>(args, "--spin-us")?.map(Dur::from_micros) {
        cfg.spin = d;
    }
    if let Some(rate) = flag(args, "--loss")? {
        cfg.send_loss = Some(SendLoss {
            rate,
            seed: flag(args, "--seed")?.unwrap_or(1),
            path: flag(args, "--loss-path")?,
            ..SendLoss::default()
        });
    }
    cfg.validate()?;
    Ok(cfg)
}

fn echo(req: &[u8], out: &mut Vec<u8>) {
    out.extend_from_slice(req);
}

/// Without certificates a DCQUIC server makes a throwaway CA and leaf (for `--server-name`, else
/// localhost) and says so; `--ca-out` writes the CA for clients.
fn ensure_identity(cfg: &mut NetConfig, args: &[String]) -> Result<(), CliError> {
    if cfg.family() != Family::Dcquic || !cfg.tls.cert_chain.is_empty() {
        return Ok(());
    }
    let name = cfg.tls.server_name.clone();
    let (t, g) = TlsConfig::generate(std::slice::from_ref(&name))?;
    eprintln!(
        "tailcut-net: WARNING: no --cert/--key; using a throwaway CA and a certificate for '{name}' made \
         just now. For tests only: clients must trust that CA (--ca-out writes it)."
    );
    if let Some(p) = flag::<PathBuf>(args, "--ca-out")? {
        std::fs::write(&p, g.ca_pem).map_err(|e| format!("--ca-out {}: {e}", p.display()))?;
    }
    let alpn = std::mem::take(&mut cfg.tls.alpn);
    cfg.tls = TlsConfig { alpn, ..t };
    Ok(())
}

/// `tailcut-net cert --out DIR [--name NAME]...`: writes a throwaway CA (ca.pem) and a leaf for the
/// names (cert.pem, key.pem).
pub fn cert(args: &[String]) -> Result<(), CliError> {
    let out: PathBuf =
        flag(args, "--out")?.ok_or_else(|| ConfigError::new("--out", "missing (a directory)"))?;
    let mut names: Vec<String> = values(args, "--name")?.into_iter().map(String::from).collect();
    if names.is_empty() {
        names.push("localhost".into());
    }
    let (_, g) = TlsConfig::generate(&names)?;
    std::fs::create_dir_all(&out).map_err(|e| format!("--out {}: {e}", out.display()))?;
    for (file, text) in [
        ("ca.pem", &g.ca_pem),
        ("cert.pem", &g.cert_pem),
        ("key.pem", &g.key_pem),
    ] {
        let p = out.join(file);
        std::fs::write(&p, text).map_err(|e| format!("{}: {e}", p.display()))?;
    }
    eprintln!(
        "tailcut-net: wrote a throwaway CA and a certificate for {names:?} to {}: for tests only \
         (the key is in a plain file)",
        out.display()
    );
    Ok(())
}

pub fn serve(args: &[String]) -> Result<(), CliError> {
    let bind: SocketAddr = flag(args, "--bind")?.unwrap_or_else(|| ([127, 0, 0, 1], 7000).into());
    let mut cfg = config(args)?;
    ensure_identity(&mut cfg, args)?;
    let scheme = cfg.scheme.transport;
    let s = Server::bind(bind, cfg, echo).map_err(|e| format!("bind {bind}: {e}"))?;
    println!("serving {scheme} echo RPCs on {}", s.local_addr());
    loop {
        std::thread::sleep(std::time::Duration::from_secs(10));
        let st = s.stats();
        println!(
            "requests {} duplicates {} associations {} foreign datagrams {}",
            st.requests, st.duplicate_requests, st.associations, st.foreign_datagrams
        );
    }
}

pub fn bench(args: &[String]) -> Result<(), CliError> {
    let baseline = flag::<String>(args, "--scheme")?
        .filter(|s| KERNEL_BASELINES.contains(&s.as_str()) || s == UDP_FLOOR);
    // A registry scheme, from --scheme or an experiment's entry; checked before anything runs.
    let resolved = match &baseline {
        Some(_) => None,
        None => Some(config(args)?),
    };
    let scheme = match (&baseline, &resolved) {
        (Some(b), _) => b.clone(),
        (None, c) => c
            .as_ref()
            .map_or_else(String::new, |c| c.scheme.transport.to_string()),
    };
    let dcquic = resolved.as_ref().is_some_and(|c| c.family() == Family::Dcquic);
    let size = match flag::<String>(args, "--size")? {
        Some(s) => parse_bytes(&s).map_err(|e| e.at("--size"))? as usize,
        None => 10_000,
    };
    let count: usize = flag(args, "--count")?.unwrap_or(2_000);
    let warmup: usize = flag(args, "--warmup")?.unwrap_or(200);
    let think_us: u64 = flag(args, "--think-us")?.unwrap_or(0);
    let server: Option<SocketAddr> = flag(args, "--server")?;
    let inline = present(args, "--inline");
    let think = std::time::Duration::from_micros(think_us);
    let req: Vec<u8> = (0..size).map(|i| (i * 31 % 251) as u8).collect();
    let mut lat_ns = Vec::with_capacity(count);
    let mut engine_ns = Vec::with_capacity(count);
    let mut waited_ns = Vec::with_capacity(count);
    let fresh_client = present(args, "--fresh-client");
    let fresh = present(args, "--fresh") || fresh_client;
    if fresh_client && !dcquic {
        return Err(ConfigError::new("--fresh-client", "is for dcquic").into());
    }
    if fresh && !(dcquic || scheme == "kernel-tls") {
        return Err(ConfigError::new("--fresh", "is for dcquic and kernel-tls").into());
    }
    if let Some(rate) = flag::<f64>(args, "--poisson")? {
        if fresh || inline || think_us > 0 {
            return Err(
                ConfigError::new("--poisson", "takes neither --fresh, --inline nor --think-us").into(),
            );
        }
        let workers: usize = flag(args, "--workers")?.unwrap_or(16);
        let seed: u64 = flag(args, "--seed")?.unwrap_or(1);
        return bench_poisson(
            &scheme, resolved, &req, rate, warmup, count, workers, seed, server,
        );
    }
    // The process's CPU time from the first measured call to the end: both ends run here (the
    // kernel's loopback work is charged to the thread that sends), so this is CPU per call of the
    // whole exchange. 0 until the warm-up is over.
    let mut cpu_from = 0u64;
    let mut mark = |i: usize| {
        if i == warmup {
            cpu_from = tailcut_sys::clock::process_cpu_ns();
        }
    };
    match scheme.as_str() {
        _ if dcquic && fresh => {
            let mut cfg = resolved.clone().ok_or("no scheme")?;
            let local = match server {
                Some(_) => None,
                None => {
                    let (t, _) = TlsConfig::generate(&[cfg.tls.server_name.clone()])?;
                    let alpn = std::mem::take(&mut cfg.tls.alpn);
                    cfg.tls = TlsConfig { alpn, ..t };
                    Some(
                        Server::bind(([127, 0, 0, 1], 0).into(), cfg.clone(), echo)
                            .map_err(|e| e.to_string())?,
                    )
                }
            };
            let to = server
                .or(local.as_ref().map(Server::local_addr))
                .ok_or("no server")?;
            let mut handshake_ns = Vec::with_capacity(count);
            // --fresh: one client, a new connection (and handshake) per call on its runtime thread
            // and sockets, as the kernel baseline opens a new socket with the TLS configuration it
            // has. --fresh-client: a new client per call, its thread, sockets and configuration too.
            let mut kept: Option<Client> = None;
            for i in 0..warmup + count {
                mark(i);
                // Read before the reconnection: its handshake may be over and published before
                // `reconnect` returns.
                let before = kept
                    .as_ref()
                    .filter(|_| !fresh_client)
                    .and_then(|c| c.stats().dcquic)
                    .map_or(0, |q| q.handshake_ns);
                let t0 = monotonic_ns();
                let c = match &kept {
                    Some(c) if !fresh_client => {
                        Client::reconnect(c).map_err(|e| format!("call {i}: {e}"))?;
                        c
                    }
                    _ => kept.insert(Client::connect(to, cfg.clone()).map_err(|e| e.to_string())?),
                };
                let r = c.call(&req).map_err(|e| format!("call {i}: {e}"))?;
                let t1 = monotonic_ns();
                if r.bytes != req {
                    return Err(format!("call {i}: the echo differs from the request").into());
                }
                if i >= warmup {
                    lat_ns.push(t1 - t0);
                    engine_ns.push(r.stats.latency.0);
                    if let Some(q) = c.stats().dcquic {
                        handshake_ns.push(q.handshake_ns.saturating_sub(before));
                    }
                }
                if fresh_client {
                    kept = None;
                }
                std::thread::sleep(think);
            }
            let how = if fresh_client {
                "a new client (runtime thread, sockets, TLS configuration) and connection per call"
            } else {
                "a new connection per call on one client"
            };
            println!("dcquic {count} x {}, {how}", format_bytes(size as u64));
            print_dist("handshake (first Initial -> connected)", &mut handshake_ns);
        }
        "kernel-tls" => {
            let mut tls = tls_flags(args)?;
            let _server = match server {
                Some(_) => None,
                None => {
                    let (t, _) = TlsConfig::generate(&[tls.server_name.clone()])?;
                    tls = t;
                    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
                    let a = l.local_addr().map_err(|e| e.to_string())?;
                    let cfg = kernel_tls::server_config(&tls).map_err(|e| e.to_string())?;
                    std::thread::spawn(move || kernel_tls::serve_echo(l, cfg));
                    Some(a)
                }
            };
            let to = server.or(_server).ok_or("no server")?;
            let ccfg = kernel_tls::client_config(&tls).map_err(|e| e.to_string())?;
            let mut buf = vec![0u8; size];
            let mut handshake_ns = Vec::with_capacity(count);
            let mut conn = None;
            for i in 0..warmup + count {
                mark(i);
                let t0 = monotonic_ns();
                if fresh || conn.is_none() {
                    conn = Some(
                        kernel_tls::Conn::connect(to, ccfg.clone(), &tls.server_name)
                            .map_err(|e| format!("connect: {e}"))?,
                    );
                }
                let th = monotonic_ns();
                let c = conn.as_mut().ok_or("no connection")?;
                c.call(&req, &mut buf).map_err(|e| format!("call {i}: {e}"))?;
                let t1 = monotonic_ns();
                if buf != req {
                    return Err(format!("call {i}: the echo differs from the request").into());
                }
                if i >= warmup {
                    lat_ns.push(t1 - t0);
                    if fresh {
                        handshake_ns.push(th - t0);
                    }
                }
                if fresh {
                    conn = None;
                }
                std::thread::sleep(think);
            }
            let how = if fresh {
                "a new connection per call"
            } else {
                "one connection"
            };
            println!(
                "kernel TCP + TLS 1.3 (rustls) {count} x {}, {how}",
                format_bytes(size as u64)
            );
            print_dist("TCP connect + TLS handshake", &mut handshake_ns);
        }
        _ if baseline.is_none() => {
            let cfg = resolved.clone().ok_or("no scheme")?;
            let (c, local) = echo_client(cfg, server)?;
            if inline {
                // Calls issued by the runtime thread itself: no hop to and from this thread.
                let run = |n| c.closed_loop(&req, n).map_err(|e| e.to_string());
                run(warmup)?;
                mark(warmup);
                let rep = run(count)?;
                if rep.not_echoed > 0 {
                    return Err(format!("{} echoes differ from the request", rep.not_echoed).into());
                }
                for s in rep.calls {
                    engine_ns.push(s.latency.0);
                    waited_ns.push(s.waited_for_id.0);
                }
            } else {
                for i in 0..warmup + count {
                    mark(i);
                    let t0 = monotonic_ns();
                    let r = c.call(&req).map_err(|e| {
                        // What each end counted, to tell why the call failed.
                        eprintln!("client: {:?}", c.stats());
                        if let Some(s) = &local {
                            eprintln!("server: {:?}", s.stats());
                        }
                        format!("call {i}: {e}")
                    })?;
                    let t1 = monotonic_ns();
                    if r.bytes != req {
                        return Err(format!("call {i}: the echo differs from the request").into());
                    }
                    if i >= warmup {
                        lat_ns.push(t1 - t0);
                        engine_ns.push(r.stats.latency.0);
                        waited_ns.push(r.stats.waited_for_id.0);
                    }
                    std::thread::sleep(think);
                }
            }
            let st = c.stats();
            if let Some(q) = st.dcquic {
                println!(
                    "dcquic: {} handshake(s), {} migration(s), MPS {} B, {} lost packets",
                    q.handshakes, q.migrations, q.mps, q.lost_packets
                );
            }
            println!(
                "{scheme} {} x {}, {} paths: {} datagrams in {} sendmsg calls (GSO batches), {} dropped by --loss, {} timed out",
                count,
                format_bytes(size as u64),
                c.local_addrs().len(),
                st.tx.datagrams,
                st.tx.sends,
                st.dropped_by_hook,
                st.calls_timed_out
            );
            print_cloudburst(&st, local.as_ref());
        }
        "kernel-tcp" => {
            let (to, _server) = match server {
                Some(a) => (a, None),
                None => {
                    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
                    let a = l.local_addr().map_err(|e| e.to_string())?;
                    (a, Some(std::thread::spawn(move || tcp_echo(l))))
                }
            };
            let mut s = TcpStream::connect(to).map_err(|e| e.to_string())?;
            s.set_nodelay(true).map_err(|e| e.to_string())?;
            let mut buf = vec![0u8; size];
            timed_calls((warmup, count, think), &mut mark, &mut lat_ns, &mut || {
                framed_call(&mut s, &req, &mut buf).map_err(|e| e.to_string())?;
                Ok(buf == req)
            })?;
            println!(
                "kernel TCP (loopback, TCP_NODELAY) {} x {}",
                count,
                format_bytes(size as u64)
            );
        }
        UDP_FLOOR => {
            if server.is_some() {
                return Err(ConfigError::new("--server", "udp-floor runs its own echo server").into());
            }
            // The TCP family's segment at the default path MTU, so the datagrams match its rows.
            let segment = NetConfig::default().path_mss() as usize;
            let lo: SocketAddr = ([127, 0, 0, 1], 0).into();
            let end = udp_floor::FloorEnd::bind(lo, segment).map_err(|e| e.to_string())?;
            let to = end.local_addr().map_err(|e| e.to_string())?;
            std::thread::spawn(move || udp_floor::serve_echo(end));
            let mut c = udp_floor::FloorEnd::bind(lo, segment).map_err(|e| e.to_string())?;
            let mut back = Vec::with_capacity(size);
            timed_calls((warmup, count, think), &mut mark, &mut lat_ns, &mut || {
                c.send(to, &req)
                    .and_then(|()| c.receive(&mut back))
                    .map_err(|e| e.to_string())?;
                Ok(back == req)
            })?;
            println!(
                "udp floor (the runtime's sockets, no engine, {segment}-byte datagrams) {count} x {}",
                format_bytes(size as u64)
            );
        }
        other => return Err(ConfigError::new("--scheme", format!("unknown '{other}'")).into()),
    }
    let cpu_ns = tailcut_sys::clock::process_cpu_ns().saturating_sub(cpu_from);
    if cpu_from > 0 && count > 0 {
        println!(
            "cpu per call (both ends, user + system)     us: {:.1}",
            cpu_ns as f64 / count as f64 / 1e3
        );
    }
    print_dist("call (application thread)", &mut lat_ns);
    if !engine_ns.is_empty() {
        print_dist("engine (request sent -> response decoded)", &mut engine_ns);
        print_dist("wait for a free message id", &mut waited_ns);
    }
    Ok(())
}

/// `warmup + count` closed-loop calls of a baseline, `call` making one and saying whether the echo
/// came back intact; `mark` is told each call's index first, and the measured calls' latencies go
/// to `lat_ns`.
fn timed_calls(
    (warmup, count, think): (usize, usize, std::time::Duration),
    mark: &mut dyn FnMut(usize),
    lat_ns: &mut Vec<u64>,
    call: &mut dyn FnMut() -> Result<bool, String>,
) -> Result<(), CliError> {
    for i in 0..warmup + count {
        mark(i);
        let t0 = monotonic_ns();
        let intact = call().map_err(|e| format!("call {i}: {e}"))?;
        let t1 = monotonic_ns();
        if !intact {
            return Err(format!("call {i}: the echo differs from the request").into());
        }
        if i >= warmup {
            lat_ns.push(t1 - t0);
        }
        std::thread::sleep(think);
    }
    Ok(())
}

/// A client of `cfg`'s scheme to `server`, or without one to an echo server started here on
/// loopback with a throwaway identity (returned: it serves as long as it is kept).
fn echo_client(mut cfg: NetConfig, server: Option<SocketAddr>) -> Result<(Client, Option<Server>), CliError> {
    if server.is_none() {
        ensure_identity(&mut cfg, &[])?;
    }
    let local = match server {
        Some(_) => None,
        None => Some(Server::bind(([127, 0, 0, 1], 0).into(), cfg.clone(), echo).map_err(|e| e.to_string())?),
    };
    let to = server
        .or(local.as_ref().map(Server::local_addr))
        .ok_or("no server")?;
    let c = Client::connect(to, cfg).map_err(|e| e.to_string())?;
    Ok((c, local))
}

/// `tailcut-net bench --poisson RATE`: an open loop (`open_loop.rs`) of echo calls of `req` at
/// `rate` per second over `workers` threads: kernel TCP with one connection per worker, or a runtime
/// scheme with one client its workers share (its calls go out concurrently on one association).
#[allow(clippy::too_many_arguments)]
fn bench_poisson(
    scheme: &str,
    resolved: Option<NetConfig>,
    req: &[u8],
    rate: f64,
    warmup: usize,
    count: usize,
    workers: usize,
    seed: u64,
    server: Option<SocketAddr>,
) -> Result<(), CliError> {
    // The process's CPU clock when the first measured call starts (workers take arrivals in order).
    let cpu_from = AtomicU64::new(0);
    let mark = |i: usize| {
        if i == warmup {
            cpu_from.store(tailcut_sys::clock::process_cpu_ns(), Relaxed);
        }
    };
    let report = match (scheme, resolved) {
        ("kernel-tcp", _) => {
            let to = match server {
                Some(a) => a,
                None => {
                    let l = TcpListener::bind("127.0.0.1:0").map_err(|e| e.to_string())?;
                    let a = l.local_addr().map_err(|e| e.to_string())?;
                    std::thread::spawn(move || {
                        for s in l.incoming().flatten() {
                            std::thread::spawn(move || echo_framed(s));
                        }
                    });
                    a
                }
            };
            let mut conns = Vec::with_capacity(workers);
            for _ in 0..workers {
                let s = TcpStream::connect(to).map_err(|e| e.to_string())?;
                s.set_nodelay(true).map_err(|e| e.to_string())?;
                conns.push((s, vec![0u8; req.len()]));
            }
            let r = crate::open_loop::run(rate, warmup, count, seed, conns, &|(s, back), i| {
                mark(i);
                framed_call(s, req, back).map_err(|e| e.to_string())?;
                if back != req {
                    return Err("the echo differs from the request".into());
                }
                Ok(())
            })?;
            println!(
                "kernel TCP (loopback, TCP_NODELAY) {count} x {}, Poisson {rate}/s over {workers} connections",
                format_bytes(req.len() as u64)
            );
            r
        }
        (_, Some(cfg)) => {
            let (c, local) = echo_client(cfg, server)?;
            // A call that times out is counted (at infinite latency), not the end of the run: an
            // open loop under load is where they happen.
            let timed_out = std::sync::Mutex::new(Vec::new());
            let mut r = crate::open_loop::run(rate, warmup, count, seed, vec![(); workers], &|_, i| {
                mark(i);
                match c.call(req) {
                    Ok(r) if r.bytes != req => Err("the echo differs from the request".into()),
                    Ok(_) => Ok(()),
                    Err(crate::CallError::Timeout) => {
                        timed_out.lock().map_err(|e| e.to_string())?.push(i);
                        Ok(())
                    }
                    Err(e) => Err(e.to_string()),
                }
            })?;
            for i in timed_out.into_inner().map_err(|e| e.to_string())? {
                if let Some(l) = i.checked_sub(warmup).and_then(|k| r.latency_ns.get_mut(k)) {
                    *l = u64::MAX;
                }
            }
            let st = c.stats();
            println!(
                "{scheme} {count} x {}, Poisson {rate}/s over {workers} threads, {} paths: {} timed out (infinite latency)",
                format_bytes(req.len() as u64),
                c.local_addrs().len(),
                st.calls_timed_out
            );
            print_cloudburst(&st, local.as_ref());
            r
        }
        _ => {
            return Err(ConfigError::new(
                "--poisson",
                format!("runs kernel-tcp and the runtime's schemes, not '{scheme}'"),
            )
            .into())
        }
    };
    let cpu_ns = tailcut_sys::clock::process_cpu_ns().saturating_sub(cpu_from.into_inner());
    if count > 0 {
        println!(
            "cpu per call (both ends, user + system)     us: {:.1}",
            cpu_ns as f64 / count as f64 / 1e3
        );
        println!(
            "offered {rate:.0}/s, achieved {:.0}/s, {} of {count} calls started over 1 ms late",
            count as f64 / (report.span_ns.max(1) as f64 / 1e9),
            report.behind
        );
    }
    let mut lat = report.latency_ns;
    print_dist("call (arrival -> response)", &mut lat);
    Ok(())
}

/// CloudBurst's packets against what decoding needed, both ends (the server's if it runs here).
fn print_cloudburst(st: &crate::ClientStats, local: Option<&Server>) {
    let Some(sv) = local
        .map(Server::stats)
        .filter(|_| st.cloudburst.coded_packets_sent > 0)
    else {
        return;
    };
    let (c, s) = (st.cloudburst, sv.cloudburst);
    println!(
        "cloudburst packets: client {} coded + {} STOPs, server {} coded + {} STOPs; blocks decoded: server {}, client {}; coded per source packet: requests {:.2}, responses {:.2}",
        c.coded_packets_sent,
        c.stops_sent,
        s.coded_packets_sent,
        s.stops_sent,
        s.blocks_decoded,
        c.blocks_decoded,
        c.coding_rate(),
        s.coding_rate()
    );
}

/// Echo server for the kernel-TCP baseline: serves the first connection `l` accepts.
fn tcp_echo(l: TcpListener) {
    if let Ok((s, _)) = l.accept() {
        echo_framed(s);
    }
}

/// Answers each frame (4-byte big-endian length, then that many bytes) on `s` with the same frame,
/// until the peer closes: the kernel-TCP baseline's server side (also the testbed benchmark's).
pub fn echo_framed(mut s: TcpStream) {
    let _ = s.set_nodelay(true);
    let mut buf = Vec::new();
    loop {
        let mut len = [0u8; 4];
        if s.read_exact(&mut len).is_err() {
            return;
        }
        buf.resize(u32::from_be_bytes(len) as usize, 0);
        if s.read_exact(&mut buf).is_err() || s.write_all(&len).is_err() || s.write_all(&buf).is_err() {
            return;
        }
    }
}

/// One framed call on `s`: sends `req`, reads the echo into `back` (as long as `req`).
pub fn framed_call(s: &mut TcpStream, req: &[u8], back: &mut [u8]) -> std::io::Result<()> {
    s.write_all(&(req.len() as u32).to_be_bytes())?;
    s.write_all(req)?;
    s.read_exact(&mut [0u8; 4])?;
    s.read_exact(back)
}

/// Prints a latency distribution; `u64::MAX` is a call that never completed (infinite latency).
fn print_dist(what: &str, ns: &mut [u64]) {
    if ns.is_empty() {
        return;
    }
    ns.sort_unstable();
    let us = |v: u64| {
        if v == u64::MAX {
            f64::INFINITY
        } else {
            v as f64 / 1e3
        }
    };
    let q = |per_mille| us(tailcut_proto::stats::sample_percentile(ns, per_mille).unwrap_or_default());
    let mean = ns.iter().map(|&v| us(v)).sum::<f64>() / ns.len() as f64;
    println!(
        "{what:<44} us: p50 {:8.1}  p99 {:8.1}  p99.9 {:8.1}  max {:8.1}  mean {:8.1}",
        q(500),
        q(990),
        q(999),
        us(ns[ns.len() - 1]),
        mean
    );
}
