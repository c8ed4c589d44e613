//! The traffic patterns driven by arrival processes: who drives each process and how it picks the
//! other end of each flow.

use super::config::{Pattern, WorkloadComponent};
use super::draw;
use super::generate::{intersect, without, Ctx};
use super::WorkloadError;
use tailcut_proto::rng::Rng;

/// The other end of a driving host's flows.
#[derive(Clone, Debug)]
pub(super) enum Peer {
    Fixed {
        src: u32,
        dst: u32,
    },
    /// Uniform over `dsts` without `src`: one list shared by every sender (a per-sender copy without
    /// itself would be O(hosts^2), 40 GB for a 100,000-host all-to-all). `skip` is `src`'s position in
    /// `dsts`, if it is there.
    RandomDst {
        src: u32,
        dsts: std::rc::Rc<[u32]>,
        skip: Option<usize>,
    },
    RandomSrc {
        dst: u32,
        srcs: Vec<u32>,
    },
}

impl Peer {
    pub(super) fn draw(&self, rng: &mut Rng) -> (u32, u32) {
        match self {
            Peer::Fixed { src, dst } => (*src, *dst),
            Peer::RandomDst { src, dsts, skip } => {
                // The same draw as over the list without `src`: index i of that list is i or i + 1 here.
                let i = draw::index(rng, dsts.len() - usize::from(skip.is_some()));
                let i = if skip.is_some_and(|k| i >= k) { i + 1 } else { i };
                (*src, dsts[i])
            }
            Peer::RandomSrc { dst, srcs } => (srcs[draw::index(rng, srcs.len())], *dst),
        }
    }
}

/// One arrival process: a driving host (whose NIC rate sets the load) and how it picks the other end.
#[derive(Clone, Debug)]
pub(super) struct Unit {
    pub(super) driver: u32,
    pub(super) peer: Peer,
}

/// Patterns with explicit hosts take no `client_hosts` / `server_hosts` (they would be silently ignored).
fn reject_host_filters(c: &WorkloadComponent, cx: &Ctx, why: &str) -> Result<(), WorkloadError> {
    if c.client_hosts.is_some() {
        return Err(cx.err("client_hosts", format!("not used: {why}")));
    }
    if c.server_hosts.is_some() {
        return Err(cx.err("server_hosts", format!("not used: {why}")));
    }
    Ok(())
}

/// Builds the arrival units of a pattern (not incast).
pub(super) fn units(c: &WorkloadComponent, cx: &Ctx, rng: &mut Rng) -> Result<Vec<Unit>, WorkloadError> {
    let clients = match &c.client_hosts {
        Some(l) => Some(cx.host_list("client_hosts", l)?),
        None => None,
    };
    let servers = match &c.server_hosts {
        Some(l) => Some(cx.host_list("server_hosts", l)?),
        None => None,
    };
    let mut out = Vec::new();
    match &c.pattern {
        Pattern::AllToAll { hosts } => {
            let hosts = match hosts {
                Some(l) => cx.host_list("pattern.hosts", l)?,
                None => cx.all_hosts(),
            };
            let senders = intersect(&hosts, servers.as_ref());
            let receivers = intersect(&hosts, clients.as_ref());
            random_dst_units(cx, senders, &receivers, &mut out)?;
        }
        Pattern::OneToAll { clients: cl } => {
            if c.client_hosts.is_some() {
                return Err(cx.err(
                    "client_hosts",
                    "not used by one_to_all: list the clients in pattern.clients",
                ));
            }
            let cl = cx.host_list("pattern.clients", cl)?;
            let all = cx.all_hosts();
            let pool = servers.unwrap_or(all);
            for d in cl {
                let srcs = without(&pool, d);
                if srcs.is_empty() {
                    return Err(cx.err(
                        "pattern.clients",
                        format!("client {d} has no server other than itself"),
                    ));
                }
                out.push(Unit {
                    driver: d,
                    peer: Peer::RandomSrc { dst: d, srcs },
                });
            }
        }
        Pattern::RackToRack { src_rack, dst_rack } => {
            let in_rack = |r: u32| -> Vec<u32> {
                cx.all_hosts()
                    .into_iter()
                    .filter(|&h| cx.hosts.rack[h as usize] == r)
                    .collect()
            };
            let (src_hosts, dst_hosts) = (in_rack(*src_rack), in_rack(*dst_rack));
            if src_hosts.is_empty() {
                return Err(cx.err("pattern.src_rack", format!("no host is in rack {src_rack}")));
            }
            if dst_hosts.is_empty() {
                return Err(cx.err("pattern.dst_rack", format!("no host is in rack {dst_rack}")));
            }
            let senders = intersect(&src_hosts, servers.as_ref());
            let receivers = intersect(&dst_hosts, clients.as_ref());
            random_dst_units(cx, senders, &receivers, &mut out)?;
        }
        Pattern::Pairs { pairs } => {
            reject_host_filters(c, cx, "pairs lists its hosts")?;
            if pairs.is_empty() {
                return Err(cx.err("pattern.pairs", "must not be empty"));
            }
            for (k, &[s, d]) in pairs.iter().enumerate() {
                cx.host(&format!("pattern.pairs[{k}][0]"), s)?;
                cx.host(&format!("pattern.pairs[{k}][1]"), d)?;
                if s == d {
                    return Err(cx.err(
                        &format!("pattern.pairs[{k}]"),
                        format!("host {s} sends to itself"),
                    ));
                }
                out.push(Unit {
                    driver: s,
                    peer: Peer::Fixed { src: s, dst: d },
                });
            }
        }
        Pattern::Permutation { hosts } => {
            reject_host_filters(c, cx, "permutation takes pattern.hosts")?;
            let hosts = match hosts {
                Some(l) => cx.host_list("pattern.hosts", l)?,
                None => cx.all_hosts(),
            };
            if hosts.len() < 2 {
                return Err(cx.err("pattern.hosts", "a permutation needs at least 2 hosts"));
            }
            let dsts = draw::derangement(rng, &hosts);
            for (&s, d) in hosts.iter().zip(dsts) {
                out.push(Unit {
                    driver: s,
                    peer: Peer::Fixed { src: s, dst: d },
                });
            }
        }
        Pattern::Incast { .. } | Pattern::ConnectionMatrix { .. } | Pattern::FlowCsv { .. } => {
            unreachable!("incast and flow files have no arrival units")
        }
    }
    if out.is_empty() {
        return Err(cx.err("pattern", "no host can send: check server_hosts / client_hosts"));
    }
    Ok(out)
}

/// One unit per sender, each sending to a random receiver other than itself.
fn random_dst_units(
    cx: &Ctx,
    senders: Vec<u32>,
    receivers: &[u32],
    out: &mut Vec<Unit>,
) -> Result<(), WorkloadError> {
    let dsts: std::rc::Rc<[u32]> = receivers.into();
    // Position of each host in `dsts` (a host list has no repeats), so that finding a sender there is
    // O(1) rather than a scan per sender.
    let top = dsts.iter().chain(&senders).max().map_or(0, |&h| h as usize + 1);
    let mut position = vec![None; top];
    for (k, &d) in dsts.iter().enumerate() {
        position[d as usize] = Some(k);
    }
    for s in senders {
        let skip = position[s as usize];
        if dsts.len() - usize::from(skip.is_some()) == 0 {
            return Err(cx.err("pattern", format!("sender {s} has no receiver other than itself")));
        }
        out.push(Unit {
            driver: s,
            peer: Peer::RandomDst {
                src: s,
                dsts: dsts.clone(),
                skip,
            },
        });
    }
    Ok(())
}
