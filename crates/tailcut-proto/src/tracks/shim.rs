//! The T-RACKs shim: Algorithm 1 (packet processing) in `on_egress` / `on_ingress`, Algorithm 2 (the
//! timer) in `handle_timeout`.

use super::config::{FakeSackBlock, RttSource, TracksConfig, TracksCounters};
use super::flow::{Episode, FlowEntry, FlowKey};
use crate::engine::{Direction, Shim, Verdict};
use crate::packet::{Addr, Packet, Proto, SackBlocks, TcpFlags};
use crate::rng::Rng;
use crate::seq::Seq;
use crate::time::{Dur, Time};
use rand::Rng as _;
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// T-RACKs at one host. See the module documentation of [`crate::tracks`].
pub struct Tracks {
    cfg: TracksConfig,
    rng: Rng,
    flows: BTreeMap<FlowKey, FlowEntry>,
    /// Active flows not (yet) long-lived: the only ones the timer scans, so a tick costs
    /// O(active small flows at this host).
    active: BTreeSet<FlowKey>,
    inject: VecDeque<(Direction, Packet)>,
    next_tick: Option<Time>,
    counters: TracksCounters,
    /// Bumped whenever a flow may have entered or left a recovery episode (see
    /// [`Tracks::episode_generation`]).
    episode_generation: u64,
}

/// A flow in a recovery episode, for a tap that drops its duplicate ACKs outside the shim (the
/// real-host agent's tc-BPF program): the data direction's 4-tuple and the cumulative ACK whose
/// repeats are the duplicates being dropped.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct RecoveringFlow {
    pub local: Addr,
    pub remote: Addr,
    pub local_port: u16,
    pub remote_port: u16,
    pub ack: Seq,
}

fn micros(t: Time) -> u32 {
    (t.0 / 1_000) as u32
}

impl Tracks {
    pub fn new(cfg: TracksConfig, rng: Rng) -> Tracks {
        Tracks {
            cfg,
            rng,
            flows: BTreeMap::new(),
            active: BTreeSet::new(),
            inject: VecDeque::new(),
            next_tick: None,
            counters: TracksCounters::default(),
            episode_generation: 0,
        }
    }

    pub fn counters(&self) -> TracksCounters {
        self.counters
    }

    pub fn config(&self) -> &TracksConfig {
        &self.cfg
    }

    /// Flows in the table (active or long-lived, not yet idle-expired).
    pub fn tracked_flows(&self) -> usize {
        self.flows.len()
    }

    /// Flows the timer scans.
    pub fn active_small_flows(&self) -> usize {
        self.active.len()
    }

    /// Changes whenever the set [`Tracks::recovering`] returns may have changed, so a caller
    /// mirroring it elsewhere rescans only then (episodes are rare; packets are not).
    pub fn episode_generation(&self) -> u64 {
        self.episode_generation
    }

    /// The flows in a recovery episode now: those whose real duplicate ACKs the shim drops.
    pub fn recovering(&self) -> impl Iterator<Item = RecoveringFlow> + '_ {
        self.active.iter().filter_map(|k| {
            let f = self.flows.get(k)?;
            f.episode?;
            Some(RecoveringFlow {
                local: Addr(k.src),
                remote: Addr(k.dst),
                local_port: k.src_port,
                remote_port: k.dst_port,
                ack: f.last_ack?,
            })
        })
    }

    /// Removes a flow's entry, noting an episode that ends with it.
    fn remove_flow(&mut self, key: &FlowKey) {
        if self.flows.remove(key).is_some_and(|f| f.episode.is_some()) {
            self.episode_generation += 1;
        }
        self.active.remove(key);
    }

    /// The timer fires on multiples of `tick`, like a jiffies timer.
    fn arm_tick(&mut self, now: Time) {
        let tick = self.cfg.tick.0;
        let t = Time((now.0 / tick + 1) * tick);
        if self.next_tick.is_none_or(|n| n > t) {
            self.next_tick = Some(t);
        }
    }

    /// What a SYN or SYN-ACK of a tracked flow announced (a hypervisor reads the SYN options, Sec.
    /// IV-C): its MSS, which caps the segment size the fake SACK block is aligned to, and whether it
    /// offered SACK; the flow uses SACK if both SYNs did, which then overrides the configured `sack`.
    /// `egress` says whether `pkt` left this host (the local SYN) or arrived (the peer's SYN-ACK).
    /// Packets of untracked flows are ignored. The simulator's packets carry no SYN options, so only
    /// a real-host agent calls this.
    pub fn note_syn_options(&mut self, pkt: &Packet, egress: bool, mss: Option<u16>, sack_permitted: bool) {
        let key = if egress {
            FlowKey::of_egress(pkt)
        } else {
            FlowKey::of_ingress(pkt)
        };
        let Some(f) = self.flows.get_mut(&key) else {
            return;
        };
        if let Some(m) = mss.filter(|&m| m > 0) {
            f.mss = Some(f.mss.map_or(u32::from(m), |old| old.min(u32::from(m))));
        }
        // The local SYN comes first; the SYN-ACK settles it.
        f.sack = Some(f.sack.unwrap_or(true) && sack_permitted);
    }

    /// Makes room for a new flow: drops the least recently active entry (ties: the smallest key, so
    /// the choice is deterministic). O(flows), paid only by a new flow arriving at a full table.
    fn evict_one(&mut self) {
        let victim = self
            .flows
            .iter()
            .min_by_key(|(k, f)| (f.active_time, **k))
            .map(|(k, _)| *k);
        if let Some(k) = victim {
            self.remove_flow(&k);
            self.counters.evicted += 1;
        }
    }

    /// beta = alpha * RTT + rand(RTT) (Algorithm 2 line 4), or the fixed beta.
    fn beta(&mut self, rtt: Dur) -> Dur {
        if let Some(b) = self.cfg.fixed_beta {
            return b;
        }
        let jitter = if rtt.0 > 0 {
            self.rng.random_range(0..rtt.0)
        } else {
            0
        };
        (rtt.mul_f64(self.cfg.alpha) + Dur(jitter)).max(self.cfg.beta_floor)
    }

    /// Queue one spoofed duplicate of the flow's last ACK toward the local sender (Sec. IV-C: same
    /// ACK number and window; timestamps kept consistent; a fake SACK block when SACK is on).
    fn spoof(&mut self, key: FlowKey, now: Time) {
        let (cfg_sack, fake_sack) = (self.cfg.sack, self.cfg.fake_sack);
        let block_mode = self.cfg.fake_sack_block;
        let gap = self.cfg.sack_gap_bytes;
        let Some(f) = self.flows.get_mut(&key) else {
            return;
        };
        let with_block = f.sack.unwrap_or(cfg_sack) && fake_sack;
        let (Some(mut pkt), Some(ack)) = (f.ack_template, f.last_ack) else {
            return;
        };
        let ep = f.episode.as_mut().expect("spoof only during an episode");
        ep.spoofed += 1;
        let k = ep.spoofed;
        let seg = f.segment_bytes().max(1);
        let snd_end = f.snd_end;
        let Some(h) = pkt.tcp_mut() else {
            return;
        };
        if h.flags.contains(TcpFlags::SYN) {
            // The template is the SYN-ACK: the receiver's next sequence is one past its SYN.
            h.seq = h.seq.wrapping_add(1);
        }
        h.ack = ack;
        h.payload_len = 0;
        h.flags = TcpFlags::ACK;
        // The receiver's clock is unknown: reuse its last value (RFC 7323 only needs it not to go
        // backwards); the echo is the last one the sender saw.
        h.ext = Default::default();
        h.sack = SackBlocks::default();
        if with_block {
            // Sec. IV-C: a gap after the last ACK, then a block. Our RFC 6675 sender counts an ACK as a
            // duplicate only if it SACKs a whole segment it had not seen SACKed, so the k-th spoofed
            // ACK's block ends k+1 segments after the ACK: each one SACKs one more segment
            // (docs/tracks.md discusses the cost of this white lie).
            let mut left = ack.wrapping_add(gap.min(seg));
            let mut right = ack.wrapping_add(seg.saturating_mul(k.saturating_add(1)));
            if block_mode == FakeSackBlock::Highest {
                // One lie only: the highest outstanding segment, the same on every spoofed ACK, so a
                // sender that later finds it missing detects reneging once, not once per ACK.
                right = snd_end;
                let top = Seq(snd_end.0.wrapping_sub(seg));
                if left.lt(top) {
                    left = top;
                }
            }
            if snd_end.lt(right) {
                right = snd_end;
            }
            if left.lt(right) {
                h.sack.push(left, right);
            }
        }
        pkt.size_bytes = pkt.size_bytes.saturating_sub(pkt.payload_len());
        pkt.trimmed = false;
        self.counters.spoofed_acks += 1;
        let _ = now;
        self.inject.push_back((Direction::ToHost, pkt));
    }

    /// Algorithm 2 for one flow; returns whether the flow stays in the active set.
    fn check_flow(&mut self, key: FlowKey, now: Time) -> bool {
        let (phi, min_rto, tick, idle) = (
            self.cfg.phi,
            self.cfg.min_rto,
            self.cfg.tick,
            self.cfg.idle_timeout,
        );
        let Some(f) = self.flows.get(&key) else {
            return false;
        };
        if f.long_lived {
            return false;
        }
        // Line 24: hard reset after a long idle period.
        if now - f.active_time >= idle {
            self.remove_flow(&key);
            return false;
        }
        if !f.outstanding() || f.ack_template.is_none() {
            return true;
        }
        let rtt = f.srtt;
        let rto_ref = f.rto_ref;
        let t = f.ack_time.max(f.active_time);
        let episode = f.episode;
        let parked = f.parked;
        let dupacks = f.dupacks;
        // A SACK sender ignores duplicates without a block, and every block tried against Linux
        // made it detect reneging: such flows are watched, never spoofed, when so configured.
        let skip = self.cfg.skip_sack_flows && f.sack.unwrap_or(self.cfg.sack);
        // Line 19: stop before the sender's own RTO would fire (the next tick would reach it).
        if now + tick >= rto_ref + min_rto {
            if let Some(f) = self.flows.get_mut(&key) {
                if f.episode.take().is_some() {
                    self.counters.gave_up += 1;
                    self.episode_generation += 1;
                }
                f.parked = true;
                f.dupacks = 0;
            }
            return true;
        }
        match episode {
            None if !parked && !skip => {
                let beta = self.beta(rtt);
                // Lines 7-12: no new ACK for beta since the last ACK or activity.
                if now - t >= beta {
                    if let Some(f) = self.flows.get_mut(&key) {
                        f.episode = Some(Episode {
                            started: now,
                            beta,
                            shift: 2,
                            spoofed: 0,
                            ts_at_start: f.last_ts_val,
                        });
                        // Karn: the segment in flight may now be sent twice.
                        f.timed = None;
                    }
                    self.episode_generation += 1;
                    self.counters.recoveries += 1;
                    for _ in 0..phi.saturating_sub(dupacks).max(1) {
                        self.spoof(key, now);
                    }
                }
            }
            Some(ep) => {
                // Lines 14-17: one more spoofed ACK each time beta << x has elapsed, x growing.
                let wait = ep.beta.saturating_mul(1u64 << ep.shift.min(40));
                if now - ep.started >= wait {
                    if let Some(e) = self.flows.get_mut(&key).and_then(|f| f.episode.as_mut()) {
                        e.shift += 1;
                    }
                    self.spoof(key, now);
                }
            }
            None => {}
        }
        true
    }

    fn on_ack(&mut self, key: FlowKey, now: Time, pkt: &Packet) -> Verdict {
        let gamma = self.cfg.gamma.map_or(u64::MAX, |b| b.0);
        let Some(f) = self.flows.get_mut(&key) else {
            return Verdict::Pass;
        };
        // Line 23: long-lived flows are not tracked any more.
        if f.long_lived {
            return Verdict::Pass;
        }
        let Some(h) = pkt.tcp() else {
            return Verdict::Pass;
        };
        if !h.flags.contains(TcpFlags::ACK) {
            return Verdict::Pass;
        }
        let pure = h.payload_len == 0 && !h.flags.contains(TcpFlags::SYN) && !h.flags.contains(TcpFlags::FIN);
        let is_new = match f.last_ack {
            None => true,
            Some(a) => a.lt(h.ack),
        };
        if is_new {
            // Lines 27-32.
            if let Some(prev) = f.last_ack {
                f.acked_bytes += u64::from(h.ack.0.wrapping_sub(prev.0));
            }
            match self.cfg.rtt_source {
                // RTT from the timestamp echo: our senders stamp microseconds of `now`.
                RttSource::Timestamps if h.ts_ecr != 0 => {
                    let sample_us = micros(now).wrapping_sub(h.ts_ecr);
                    if sample_us < (1 << 31) {
                        f.on_rtt_sample(Dur::from_micros(u64::from(sample_us)));
                    }
                }
                RttSource::Timestamps => {}
                RttSource::SeqAck => {
                    if let Some((end, sent)) = f.timed {
                        if !h.ack.lt(end) {
                            f.on_rtt_sample(now - sent);
                            f.timed = None;
                        }
                    }
                }
            }
            if let Some(ep) = f.episode.take() {
                self.episode_generation += 1;
                // Eifel-style (RFC 3522): the ACK echoes a segment sent strictly before the trigger
                // (the fast retransmission leaves at the trigger instant), so the original data
                // arrived and the recovery was not needed. With real hosts' timestamps the trigger
                // is the sender's own last stamp, so no unit is assumed.
                let echoed = h.ts_ecr;
                let trigger = match self.cfg.rtt_source {
                    RttSource::Timestamps => micros(ep.started),
                    RttSource::SeqAck => ep.ts_at_start,
                };
                if echoed != 0 && (echoed.wrapping_sub(trigger) as i32) < 0 {
                    self.counters.spurious_recoveries += 1;
                }
            }
            f.last_ack = Some(h.ack);
            f.ack_template = Some(*pkt);
            f.ack_time = now;
            f.rto_ref = now;
            f.dupacks = 0;
            f.parked = false;
            if f.snd_end.lt(h.ack) {
                f.snd_end = h.ack;
            }
            if f.acked_bytes >= gamma {
                f.long_lived = true;
                // No episode is left here: one would have ended at this new ACK just above.
                f.episode = None;
                self.active.remove(&key);
                self.counters.long_lived += 1;
            }
            return Verdict::Pass;
        }
        if pure && f.last_ack == Some(h.ack) && f.outstanding() {
            // Lines 34-38: a duplicate ACK; dropped while the shim is recovering.
            f.dupacks += 1;
            let passes = self.cfg.pass_sack_dupacks && !h.sack.is_empty();
            if f.episode.is_some() && !passes {
                self.counters.dupacks_dropped += 1;
                return Verdict::Drop;
            }
            // Keep the freshest window / timestamps for the spoofed copies.
            f.ack_template = Some(*pkt);
        }
        Verdict::Pass
    }
}

impl Shim for Tracks {
    /// Algorithm 1, outgoing handler: SYN or the first data of an inactive flow (re)activates the
    /// entry; data updates the highest sequence and the activity time.
    fn on_egress(&mut self, now: Time, pkt: &mut Packet) -> Verdict {
        let Some(h) = pkt.tcp() else {
            return Verdict::Pass;
        };
        if pkt.tuple.proto != Proto::Tcp {
            return Verdict::Pass;
        }
        let syn = h.flags.contains(TcpFlags::SYN) && !h.flags.contains(TcpFlags::ACK);
        let len = pkt.payload_len();
        let is_data = len > 0 || syn;
        if !is_data {
            return Verdict::Pass;
        }
        let key = FlowKey::of_egress(pkt);
        let end = h.seq.wrapping_add(len + u32::from(syn));
        let idle = self.cfg.idle_timeout;
        let fresh = syn || self.flows.get(&key).is_none_or(|f| now - f.active_time >= idle);
        if fresh {
            if self.cfg.max_flows > 0
                && !self.flows.contains_key(&key)
                && self.flows.len() >= self.cfg.max_flows
            {
                self.evict_one();
            }
            let old = self
                .flows
                .insert(key, FlowEntry::new(now, self.cfg.initial_rtt, h.seq));
            if old.is_some_and(|f| f.episode.is_some()) {
                self.episode_generation += 1;
            }
            self.active.insert(key);
        }
        let f = self.flows.get_mut(&key).expect("inserted above");
        if f.long_lived {
            // Still sending, so not idle: otherwise the entry would be reset (and the flow tracked
            // again) every `idle_timeout` while it runs.
            f.active_time = now;
            return Verdict::Pass;
        }
        if !f.outstanding() {
            f.rto_ref = now;
        }
        if self.cfg.rtt_source == RttSource::SeqAck {
            if f.snd_end.lt(end) {
                // New data: time it if nothing is being timed (one sample per RTT, RFC 6298 Sec. 3).
                if f.timed.is_none() && f.episode.is_none() {
                    f.timed = Some((end, now));
                }
            } else {
                // A retransmission: the next ACK is ambiguous (Karn).
                f.timed = None;
            }
        }
        if len > 0 {
            f.last_ts_val = h.ts_val;
        }
        if f.snd_end.lt(end) {
            f.snd_end = end;
        }
        f.seg_bytes = f.seg_bytes.max(len);
        f.active_time = now;
        f.parked = false;
        self.arm_tick(now);
        Verdict::Pass
    }

    /// Algorithm 1, incoming handler.
    fn on_ingress(&mut self, now: Time, pkt: &mut Packet) -> Verdict {
        if pkt.tuple.proto != Proto::Tcp || pkt.tcp().is_none() {
            return Verdict::Pass;
        }
        let key = FlowKey::of_ingress(pkt);
        self.on_ack(key, now, pkt)
    }

    /// Algorithm 2: scan the active small flows.
    fn handle_timeout(&mut self, now: Time) {
        if self.next_tick.is_none_or(|t| t > now) {
            return;
        }
        self.next_tick = None;
        let keys: Vec<FlowKey> = self.active.iter().copied().collect();
        for key in keys {
            if !self.check_flow(key, now) {
                self.active.remove(&key);
            }
        }
        // Keep ticking while a flow has data outstanding; otherwise wake for the idle expiry only.
        let mut wake: Option<Time> = None;
        for key in &self.active {
            let f = &self.flows[key];
            let t = if f.outstanding() {
                now + self.cfg.tick
            } else {
                f.active_time + self.cfg.idle_timeout
            };
            wake = Some(wake.map_or(t, |w: Time| w.min(t)));
        }
        if let Some(w) = wake {
            self.arm_tick(Time(w.0.saturating_sub(1).max(now.0)));
        }
    }

    fn poll_inject(&mut self, _now: Time) -> Option<(Direction, Packet)> {
        self.inject.pop_front()
    }

    fn poll_timeout(&self) -> Option<Time> {
        self.next_tick
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        self.counters.pairs()
    }
}
