//! Incast: N senders to one receiver in synchronised rounds (FUSO Sec. 4.2, CP, T-RACKs Sec. V-A,
//! CloudBurst Sec. V).

use super::config::{Jitter, Pattern, WorkloadComponent};
use super::draw;
use super::generate::{without, Ctx, RawFlow, Sizes, MAX_FLOWS_PER_COMPONENT};
use super::WorkloadError;
use tailcut_proto::rng::Rng;
use tailcut_proto::{Dur, Time};

pub(super) fn incast(
    c: &WorkloadComponent,
    cx: &Ctx,
    rng: &mut Rng,
    sizes: &Sizes,
    start: Time,
) -> Result<Vec<RawFlow>, WorkloadError> {
    let Pattern::Incast {
        receiver,
        senders,
        fanout,
        flows_per_sender,
        rounds,
        round_interval,
        jitter,
    } = &c.pattern
    else {
        unreachable!()
    };
    if c.load.is_some() || c.rate_per_host.is_some() {
        return Err(cx.err(
            "",
            "incast starts its flows in rounds: load / rate_per_host do not apply",
        ));
    }
    if c.client_hosts.is_some() {
        return Err(cx.err(
            "client_hosts",
            "not used by incast: the receiver is pattern.receiver",
        ));
    }
    let receiver = cx.host("pattern.receiver", *receiver)?;
    let senders = match (senders, fanout) {
        (Some(l), None) => {
            if c.server_hosts.is_some() {
                return Err(cx.err(
                    "server_hosts",
                    "not used by incast with pattern.senders (only with fanout)",
                ));
            }
            let l = cx.host_list("pattern.senders", l)?;
            if l.contains(&receiver) {
                return Err(cx.err("pattern.senders", format!("contains the receiver {receiver}")));
            }
            l
        }
        (None, Some(n)) => {
            let pool = match &c.server_hosts {
                Some(l) => cx.host_list("server_hosts", l)?,
                None => cx.all_hosts(),
            };
            let mut pool = without(&pool, receiver);
            if *n == 0 || *n as usize > pool.len() {
                return Err(cx.err(
                    "pattern.fanout",
                    format!(
                        "must be in 1..={} (hosts available besides the receiver), got {n}",
                        pool.len()
                    ),
                ));
            }
            draw::shuffle(rng, &mut pool);
            pool.truncate(*n as usize);
            pool
        }
        _ => return Err(cx.err("pattern", "give exactly one of senders, fanout")),
    };
    if *flows_per_sender == 0 {
        return Err(cx.err("pattern.flows_per_sender", "must be at least 1"));
    }
    if *rounds == 0 {
        return Err(cx.err("pattern.rounds", "must be at least 1"));
    }
    let interval = match round_interval {
        Some(d) if d.0 > 0 => *d,
        Some(_) => return Err(cx.err("pattern.round_interval", "must be > 0")),
        None if *rounds > 1 => return Err(cx.err("pattern.round_interval", "required when rounds > 1")),
        None => Dur::ZERO,
    };
    match jitter {
        Jitter::ExponentialGaps { mean } if mean.0 == 0 => {
            return Err(cx.err("pattern.jitter.mean", "must be > 0"))
        }
        _ => {}
    }
    let total = senders.len() as u64 * *flows_per_sender as u64 * *rounds as u64;
    if total > MAX_FLOWS_PER_COMPONENT {
        return Err(cx.err(
            "pattern",
            format!("{total} flows is more than {MAX_FLOWS_PER_COMPONENT}"),
        ));
    }
    // Stops one past the memory budget (`Ctx::budget`): the estimate refuses the component then, and
    // must not find 50 million flows already allocated.
    let mut out = Vec::with_capacity(total.min(cx.budget.saturating_add(1)) as usize);
    'rounds: for r in 0..*rounds as u64 {
        let round_start = start + interval.saturating_mul(r);
        let mut order: Vec<u32> = Vec::with_capacity(senders.len() * *flows_per_sender as usize);
        for _ in 0..*flows_per_sender {
            order.extend_from_slice(&senders);
        }
        draw::shuffle(rng, &mut order);
        let mut gap_ns = 0.0;
        for (k, &s) in order.iter().enumerate() {
            if out.len() as u64 > cx.budget {
                break 'rounds;
            }
            let offset = match jitter {
                Jitter::None => Dur::ZERO,
                Jitter::Uniform { max } => Dur((draw::unit_f64(rng) * max.0 as f64).round() as u64),
                Jitter::ExponentialGaps { mean } => {
                    if k > 0 {
                        gap_ns += draw::exponential(rng, mean.0 as f64);
                    }
                    Dur(gap_ns.round() as u64)
                }
            };
            out.push(RawFlow {
                start: round_start + offset,
                src: s,
                dst: receiver,
                size_bytes: sizes.sample(rng),
            });
        }
    }
    Ok(out)
}
