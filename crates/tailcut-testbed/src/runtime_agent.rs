//! The workload agent's flows on tailcut's own engines: the UDP runtime (`tailcut-net`) inside the
//! host's namespace, for the schemes Linux does not run (FUSO, CP, CloudBurst, DCQUIC, and every TCP
//! extension of tailcut's engine). The plan, the start times and the output lines are the kernel
//! agent's (`agent.rs`); only the transport differs.
//!
//! A flow is one call of the runtime: the request is the 24-byte flow header (flow id, data bytes,
//! reply bytes) and the data, the response the reply (empty for a one-way flow, whose receipt
//! finishes it at the server, as the kernel agent's acceptor finishes one). Every byte is a pattern
//! of the flow id, checked by the side that receives it: a flow whose bytes arrive altered is an
//! `error`, never a finish. Each flow's client reports its request's counters, and the server a
//! request/response flow's response's once it was acknowledged (`Server::bind_observed`). A flow on a connection of its own opens a [`Client`] (a new association:
//! its handshake, if the scheme has one, is part of the flow) at its start; the flows of one
//! persistent connection share one client, their calls pipelined on it as the kernel agent writes
//! them one after another on its stream.

use crate::agent::{emit, Event, Out, PlannedFlow, HEADER};
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use tailcut_net::tls::TlsConfig;
use tailcut_net::{Client, NetConfig, PathAddrs, Server};
use tailcut_proto::rng::{derive_seed, Stream};
use tailcut_proto::MessageStats;
use tailcut_scheme::Network;
use tailcut_sys::clock::monotonic_ns;

/// How the agent runs its flows on the runtime: the scheme entry as the experiment file writes it
/// (resolved again here by the scheme layer for sockets, exactly as the orchestrator checked it).
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RuntimePlan {
    pub transport: String,
    pub params: serde_json::Map<String, serde_json::Value>,
    /// CloudBurst whose entry leaves `nic_rate` to the host: each host's plan sets its NIC's rate.
    pub nic_rate_from_host: bool,
    /// Whether the fabric's switch ports trim payloads (CP's switch half).
    pub trims: bool,
    /// Largest IP packet the hosts' NICs carry.
    pub mtu: u32,
    /// The run's seed: each client's engine seed derives from it and the flow id, the server's from
    /// it and the host.
    pub seed: u64,
    /// The host's index (for the server's seed).
    pub host: u32,
    /// Most client associations one server keeps: every flow's client may be open at once.
    pub max_associations: usize,
    /// A call without a response by then fails (stream schemes; CloudBurst gives a message up by its
    /// own transmission timeout).
    pub call_timeout_ns: u64,
    /// A client's paths are its host's NICs (DCQUIC, which migrates between them, as in the
    /// simulator) rather than UDP source ports from its first NIC.
    pub per_nic_paths: bool,
    /// DCQUIC's TLS material, generated per run by the orchestrator (DER); `None` for the others.
    pub tls: Option<TlsMaterial>,
}

/// A throwaway CA and the leaf it signed (`TlsConfig::generate`), for one run.
#[derive(Clone, Debug, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TlsMaterial {
    pub cert_chain: Vec<Vec<u8>>,
    pub key: Vec<u8>,
    pub roots: Vec<Vec<u8>>,
    pub server_name: String,
}

impl TlsMaterial {
    /// The material as `tailcut-net` takes it (both ends': chain, key and roots).
    pub fn config(&self) -> TlsConfig {
        TlsConfig {
            cert_chain: self.cert_chain.clone(),
            key: self.key.clone(),
            roots: self.roots.clone(),
            server_name: self.server_name.clone(),
            ..TlsConfig::default()
        }
    }

    /// Material whose leaf names `server_name`, which every client asks for whatever address it
    /// dials (the name is checked against the certificate, the address is not).
    pub fn generate(server_name: &str) -> Result<TlsMaterial, String> {
        let (t, _) = TlsConfig::generate(&[server_name.to_string()])?;
        Ok(TlsMaterial {
            cert_chain: t.cert_chain,
            key: t.key,
            roots: t.roots,
            server_name: t.server_name,
        })
    }
}

impl RuntimePlan {
    /// The plan of host `host`, whose NIC sends at `nic_bps`.
    pub fn for_host(&self, host: u32, nic_bps: u64) -> RuntimePlan {
        let mut p = RuntimePlan { host, ..self.clone() };
        if p.nic_rate_from_host {
            p.params.insert("nic_rate".into(), format!("{nic_bps}bps").into());
        }
        p
    }

    /// How long the orchestrator waits, once every flow is accounted for, for the counters of the
    /// responses whose servers have yet to make them final: `least` (a round trip or a
    /// retransmission after the client got its reply), or for CloudBurst until a response whose
    /// STOP and close were both lost is given up (a datagram a full TUN queue dropped, which no
    /// fabric counter sees), so its counters come.
    pub fn responses_settle(&self, least: std::time::Duration) -> std::time::Duration {
        let within = self
            .config(0, &[], 0)
            .ok()
            .and_then(|c| c.response_given_up_within())
            .map_or(std::time::Duration::ZERO, |d| {
                std::time::Duration::from_nanos(d.0) + least / 10
            });
        least.max(within)
    }

    /// The runtime's configuration for one end; `seed` is the engine seed, `paths` a client's
    /// (local address, server address) per path on a multi-NIC host (empty: the routes choose).
    pub fn config(
        &self,
        seed: u64,
        paths: &[(IpAddr, SocketAddr)],
        task_bytes: u64,
    ) -> Result<NetConfig, String> {
        let tls = self
            .tls
            .as_ref()
            .map_or_else(TlsConfig::default, TlsMaterial::config);
        let network = Network { trims: self.trims };
        NetConfig {
            network,
            path_addrs: paths
                .iter()
                .map(|&(local, remote)| PathAddrs { local, remote })
                .collect(),
            tls,
            dcquic_task_bytes: task_bytes,
            path_mtu: self.mtu,
            stream_call_timeout: tailcut_proto::Dur(self.call_timeout_ns),
            max_associations: self.max_associations,
            seed,
            ..NetConfig::default()
        }
        .scheme(&self.transport, &self.params)
        .map_err(|e| format!("scheme: {e}"))
    }
}

/// Byte `i` of flow `id`'s data (`tag` 0) or reply (`tag` 1): cheap, and different per flow, so a
/// byte delivered to the wrong flow or at the wrong offset is seen.
fn pattern_byte(id: u64, tag: u64, i: u64) -> u8 {
    (id.wrapping_mul(0x9e37_79b9_7f4a_7c15) ^ tag.wrapping_mul(0x5851_f42d) ^ i.wrapping_mul(0x2545_f491))
        as u8
        ^ (i >> 8) as u8
}

fn fill(out: &mut Vec<u8>, id: u64, tag: u64, n: u64) {
    out.extend((0..n).map(|i| pattern_byte(id, tag, i)));
}

fn intact(bytes: &[u8], id: u64, tag: u64) -> bool {
    bytes
        .iter()
        .enumerate()
        .all(|(i, &b)| b == pattern_byte(id, tag, i as u64))
}

/// The request of flow `f`: its header, then its data.
fn request(f: &PlannedFlow) -> Vec<u8> {
    let mut r = Vec::with_capacity(HEADER + f.data as usize);
    r.extend_from_slice(&f.id.to_be_bytes());
    r.extend_from_slice(&f.data.to_be_bytes());
    r.extend_from_slice(&f.reply.to_be_bytes());
    fill(&mut r, f.id, 0, f.data);
    r
}

/// A flow's `counters` line from a message's final counters.
fn counters(id: u64, response: bool, s: &MessageStats) -> Event {
    Event::Counters {
        id,
        response,
        timeouts: s.timeouts,
        fast_retransmits: s.fast_retransmits,
        retransmitted_bytes: s.retransmitted_bytes,
        redundant_bytes: s.redundant_bytes,
        sent_bytes: s.sent_bytes,
    }
}

/// The tag of a response that is no flow's data (a one-way flow's empty answer, a bad request).
const NO_FLOW: u64 = u64::MAX;

/// The server's side of every flow to this host: checks the request, finishes a one-way flow,
/// answers a request/response one, and reports each answer's counters once it was acknowledged.
pub fn serve(plan: &RuntimePlan, port: u16, out: &Out) -> Result<Server, String> {
    let cfg = plan.config(
        derive_seed(plan.seed, Stream::Engine, 1 << 48 | u64::from(plan.host)),
        &[],
        0,
    )?;
    let any = SocketAddr::from(([0, 0, 0, 0], port));
    let (out, sink) = (out.clone(), out.clone());
    let observe = move |tag: u64, stats: MessageStats| {
        if tag != NO_FLOW {
            emit(&sink, &counters(tag, true, &stats));
        }
    };
    Server::bind_observed(
        any,
        cfg,
        move |req: &[u8], resp: &mut Vec<u8>| answer(req, resp, &out),
        observe,
    )
    .map_err(|e| format!("agent: runtime server on {any}: {e}"))
}

/// Checks request `req`, finishes its flow if one-way, else writes its reply into `resp`; the tag
/// its response's counters go under.
fn answer(req: &[u8], resp: &mut Vec<u8>, out: &Out) -> u64 {
    let word = |i: usize| {
        req.get(i * 8..i * 8 + 8)
            .map(|b| u64::from_be_bytes(b.try_into().expect("8 bytes")))
    };
    let (Some(id), Some(data), Some(reply)) = (word(0), word(1), word(2)) else {
        let msg = format!("a request of {} bytes, shorter than a flow header", req.len());
        emit(out, &Event::Error { id: NO_FLOW, msg });
        return NO_FLOW;
    };
    let body = &req[HEADER..];
    if body.len() as u64 != data || !intact(body, id, 0) {
        let msg = format!(
            "request of {} bytes arrived altered (header says {data})",
            body.len()
        );
        emit(out, &Event::Error { id, msg });
        return NO_FLOW;
    }
    if reply == 0 {
        emit(
            out,
            &Event::Finish {
                id,
                t: monotonic_ns(),
            },
        );
        return NO_FLOW;
    }
    fill(resp, id, 1, reply);
    id
}

/// The persistent connections' clients, opened by their first flow.
pub type Shared = Arc<Mutex<HashMap<u32, Arc<Client>>>>;

/// Flow `f` from its start: opens its client (or takes its persistent connection's), calls, checks
/// the reply, and reports `start`, `port`, `finish` (request/response: on the reply) and `counters`
/// (one-way: the request's sender counters), or `error`.
pub fn run_flow(plan: &RuntimePlan, f: &PlannedFlow, shared: &Shared, out: &Out) {
    let t = monotonic_ns();
    emit(out, &Event::Start { id: f.id, t });
    let client = match client_for(plan, f, shared) {
        Ok(c) => c,
        Err(msg) => {
            emit(out, &Event::Error { id: f.id, msg });
            return;
        }
    };
    if let Some(a) = client.local_addrs().first() {
        emit(
            out,
            &Event::Port {
                id: f.id,
                port: a.port(),
            },
        );
    }
    match client.call(&request(f)) {
        Ok(reply) if reply.bytes.len() as u64 == f.reply && intact(&reply.bytes, f.id, 1) => {
            if f.reply > 0 {
                emit(
                    out,
                    &Event::Finish {
                        id: f.id,
                        t: monotonic_ns(),
                    },
                );
            }
            emit(out, &counters(f.id, false, &reply.stats.request));
        }
        Ok(reply) => emit(
            out,
            &Event::Error {
                id: f.id,
                msg: format!(
                    "reply of {} bytes arrived altered (expected {})",
                    reply.bytes.len(),
                    f.reply
                ),
            },
        ),
        Err(e) => emit(
            out,
            &Event::Error {
                id: f.id,
                msg: e.to_string(),
            },
        ),
    }
    if let Some(d) = client.stats().dcquic {
        emit(
            out,
            &Event::Migrations {
                conn: f.conn.map_or(1 << 40 | f.id, u64::from),
                total: d.migrations,
            },
        );
    }
    if f.conn.is_none() {
        // Its own association: closed, so the server frees it at once.
        if let Ok(c) = Arc::try_unwrap(client) {
            let _ = c.shutdown();
        }
    }
}

fn client_for(plan: &RuntimePlan, f: &PlannedFlow, shared: &Shared) -> Result<Arc<Client>, String> {
    let open = || -> Result<Arc<Client>, String> {
        let seed = derive_seed(
            plan.seed,
            Stream::Engine,
            f.conn.map_or(f.id, |c| 1 << 40 | u64::from(c)),
        );
        let cfg = plan.config(seed, &f.paths, f.data + f.reply)?;
        Client::connect(f.to, cfg)
            .map(Arc::new)
            .map_err(|e| format!("runtime client to {}: {e}", f.to))
    };
    let Some(c) = f.conn else {
        return open();
    };
    let mut conns = shared.lock().unwrap_or_else(|p| p.into_inner());
    if let Some(client) = conns.get(&c) {
        return Ok(client.clone());
    }
    let client = open()?;
    conns.insert(c, client.clone());
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn plan(transport: &str, params: serde_json::Value) -> RuntimePlan {
        RuntimePlan {
            transport: transport.into(),
            params: params.as_object().cloned().unwrap_or_default(),
            nic_rate_from_host: false,
            trims: false,
            mtu: 1500,
            seed: 1,
            host: 0,
            max_associations: 64,
            call_timeout_ns: 1_000_000_000,
            per_nic_paths: false,
            tls: None,
        }
    }

    #[test]
    fn a_cloudburst_run_waits_until_a_response_without_its_stop_is_given_up() {
        let least = Duration::from_secs(1);
        let cb = plan(
            "cloudburst",
            serde_json::json!({ "transmission_timeout": "1s", "decoder_timeout": "100ms" }),
        );
        // Given up within 2 t + decoder_timeout (`NetConfig::call_timeout`) and t of the server
        // host's own delay (`exclude_host_delay`, on sockets), then a margin.
        assert_eq!(cb.responses_settle(least), Duration::from_millis(3_200));
        // The socket defaults (t = 20 ms) give up well within the least wait.
        assert_eq!(
            plan("cloudburst", serde_json::json!({})).responses_settle(least),
            least
        );
        assert_eq!(plan("tcp", serde_json::json!({})).responses_settle(least), least);
    }
}
