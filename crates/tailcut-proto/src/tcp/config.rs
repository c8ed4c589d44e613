//! TCP parameters. Every field is a named parameter with a documented default; the defaults follow
//! Linux where an RFC leaves the choice open, and experiments override them (e.g. min RTO 5 ms).

use crate::time::Dur;
use serde::{Deserialize, Serialize};

/// Congestion control run by the sender.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CongestionControl {
    /// RFC 5681 slow start / congestion avoidance with RFC 6582 NewReno (SACK-based recovery per
    /// RFC 6675 when SACK is on). Reacts to ECN-Echo like a loss, once per window (RFC 3168).
    #[default]
    NewReno,
    /// DCTCP (RFC 8257): alpha <- (1 - g) alpha + g F once per window of data; on ECN-Echo in a window,
    /// cwnd <- cwnd (1 - alpha / 2). Loss handling as NewReno.
    Dctcp {
        /// EWMA gain g (RFC 8257 recommends 1/16).
        #[serde(default = "default_dctcp_g")]
        g: f64,
    },
    /// Cubic (RFC 9438) as Linux's `net/ipv4/tcp_cubic.c` runs it, with Linux's HyStart (not RFC
    /// 9406 HyStart++, which Linux does not implement). Every default is Linux 6.x's module default,
    /// so `{ kind = "cubic" }` is a stock Linux host. ECN-Echo reduces like a loss (RFC 3168, with
    /// Cubic's beta as Linux does). `docs/tcp.md`, section "Cubic".
    Cubic(CubicConfig),
}

/// Cubic's parameters (Linux `tcp_cubic` module parameters; `docs/tcp.md`).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CubicConfig {
    /// Multiplicative decrease: ssthresh = cwnd * beta on a loss (RFC 9438 Sec. 4.6). Linux keeps it
    /// in 1/1024 units (`beta` = 717, 0.7002); the value is rounded to the nearest 1/1024.
    pub beta: f64,
    /// The cubic's scale C in segments / s^3 (RFC 9438 Sec. 4.2: 0.4). Linux keeps it as
    /// `bic_scale` = C * 1024 / 10 rounded (41, so C = 0.4004); the value is rounded the same way.
    pub c: f64,
    /// Fast convergence (RFC 9438 Sec. 4.7; Linux `fast_convergence` = 1): a loss before W_max was
    /// regained sets W_max = cwnd (1 + beta) / 2.
    pub fast_convergence: bool,
    /// The Reno-friendly region (RFC 9438 Sec. 4.3; Linux `tcp_friendliness` = 1): grow at least as
    /// fast as a Reno flow with the same beta would.
    pub tcp_friendliness: bool,
    /// Linux's HyStart (`hystart` = 1): leave slow start (ssthresh = cwnd) on an ACK train or an RTT
    /// increase instead of on the first loss.
    pub hystart: bool,
    /// HyStart's ACK-train detection (bit 1 of Linux `hystart_detect`).
    pub hystart_ack_train: bool,
    /// HyStart's delay-increase detection (bit 2 of Linux `hystart_detect`).
    pub hystart_delay: bool,
    /// HyStart runs only from this cwnd on, segments (Linux `hystart_low_window` = 16).
    pub hystart_low_window_segments: u32,
    /// Largest ACK spacing that still continues an ACK train (Linux `hystart_ack_delta_us` = 2000).
    pub hystart_ack_delta: Dur,
    /// The device's GSO size Linux's `hystart_ack_delay` cushion is computed from (`sk_gso_max_size`,
    /// 64 KB on a NIC without BIG TCP); 0 leaves the cushion out.
    pub gso_max_size_bytes: u32,
    /// The kernel's clock tick rate (CONFIG_HZ; 1000 on Fedora/RHEL/Debian, 250 on Ubuntu): Cubic's
    /// time is counted in jiffies, so its curve moves in steps of 1/hz seconds.
    pub hz: u32,
}

impl Default for CubicConfig {
    fn default() -> Self {
        CubicConfig {
            beta: 717.0 / 1024.0,
            c: 0.4,
            fast_convergence: true,
            tcp_friendliness: true,
            hystart: true,
            hystart_ack_train: true,
            hystart_delay: true,
            hystart_low_window_segments: 16,
            hystart_ack_delta: Dur::from_micros(2000),
            gso_max_size_bytes: 65_536,
            hz: 1000,
        }
    }
}

fn default_dctcp_g() -> f64 {
    1.0 / 16.0
}

/// How the sender decides that a segment is lost before the retransmission timer fires.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LossDetection {
    /// RACK-TLP (RFC 8985), Linux's loss detection since 4.18: a segment is lost when one sent
    /// after it was delivered and more than RTT + reordering window has passed since it was sent; a
    /// tail loss probe elicits the ACK that lets RACK see a tail loss. Needs SACK: without it the
    /// sender falls back to `dupthresh` with NewReno, as Linux does.
    #[default]
    RackTlp,
    /// RFC 6675 / RFC 5681 DupThresh: a segment is lost after `dupack_threshold` duplicate ACKs or
    /// that many segments SACKed above it (with limited transmit and early retransmit). The loss
    /// detection of the ns-2 TCP the papers' baselines used.
    Dupthresh,
}

/// When the RTO back-off ends after a timeout.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoBackoff {
    /// Linux with timestamps (on by default): the ACK of a retransmission yields a valid RTT
    /// sample measured from the retransmission's send time (its timestamp echo), which updates SRTT
    /// and ends the back-off (`tcp_ack_update_rtt`, `tcp_set_rto`).
    #[default]
    Linux,
    /// RFC 6298 Sec. 3 and 5.7 without timestamps (Karn): no RTT sample from an ACK that covers
    /// retransmitted data, and the doubled RTO is kept until data never retransmitted is ACKed.
    Karn,
}

/// How the retransmission timeout follows the RTT samples.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RtoEstimator {
    /// Linux (`tcp_rtt_estimator`, `__tcp_set_rto`): RTO = SRTT + RTTVAR, where RTTVAR is the
    /// largest mean deviation (times 4) seen over the last round trip, never below `min_rto` and
    /// decaying by at most a quarter per round trip; a falling RTT moves the deviation with a gain of
    /// 1/32 instead of 1/4. So the RTO stays at least `min_rto` above SRTT: a queue that builds up
    /// slowly never brings it within one sample's jump of the RTT.
    #[default]
    Linux,
    /// RFC 6298 Sec. 2: RTO = max(SRTT + 4 RTTVAR, `min_rto`), RTTVAR with gain 1/4 both ways.
    Rfc6298,
}

/// Which host the sender models where the RFCs leave the choice open. A profile sets the defaults of
/// the rules it names (below); a key given explicitly wins over its profile.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HostProfile {
    /// Current Linux (6.x): PRR, the RTO restarted by a retransmission of the first unacknowledged
    /// segment, Linux's RTO estimator, D-SACK, cwnd grown only while it limits the sender.
    #[default]
    Linux,
    /// The sender of the papers' simulators (ns-2): every reduction straight to ssthresh (RFC 6675),
    /// no PRR. Paper reproductions use it so that their baselines stay the ones the papers measured.
    Paper,
    /// Linux as the testbed's hosts run it (docs/testbed.md): the `linux` rules, plus what those
    /// hosts do that a datacenter model usually leaves out: the 3-way handshake, timers in jiffies
    /// at HZ = 250 (`timer_hz`) and the application's measured wake-ups (`host_delay`). The world
    /// the cross-check compares with Linux ("sim, this host").
    Testbed,
}

/// HZ of the testbed's kernels (`CONFIG_HZ_250`, Debian's default).
pub const TESTBED_HZ: u32 = 250;

/// The testbed agents' wake-ups, measured per packet with `experiments/testbed/fct_parts.py` on
/// `experiments/testbed/loss.toml` (1% loss, seeds 1-5, 2026-11-28; medians of 400 flows per run):
/// SYN-ACK in to first data out 78-131 us, last byte at the NIC to the agent's read 41-59 us. The
/// profile takes the middle of each range.
pub const TESTBED_HOST_DELAY: HostDelay = HostDelay {
    write_after_connect: Dur(100_000),
    read_after_arrival: Dur(50_000),
};

/// What the application on a host costs around the network (`host_delay`): the time its thread
/// takes to run after the kernel has something for it. Zero (the default) is an application that
/// is always running, as most datacenter simulations assume.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct HostDelay {
    /// From the connection's establishment (the SYN-ACK's arrival at the client) to the
    /// application's first write: `connect` returns and its thread wakes. Only connections with a
    /// handshake wait it; without one the flow starts with the write.
    pub write_after_connect: Dur,
    /// From a message's last byte reaching the host to the application having read it (softirq,
    /// the reading thread's wake-up, `read`): a flow finishes this much later, and a server answers
    /// a request this much later.
    pub read_after_arrival: Dur,
}

impl HostProfile {
    /// Whether the profile is a Linux host (`linux`, `testbed`): its rules are the kernel's, which
    /// the testbed's hosts run.
    pub fn is_linux(self) -> bool {
        self != HostProfile::Paper
    }

    /// Set every rule this profile governs on `cfg`, except those `given` says the user set.
    pub fn apply(self, cfg: &mut TcpConfig, given: impl Fn(&str) -> bool) {
        let linux = self.is_linux();
        let testbed = self == HostProfile::Testbed;
        if !given("prr") {
            cfg.prr = linux;
        }
        if !given("rto_restart_on_retransmit") {
            cfg.rto_restart_on_retransmit = linux;
        }
        if !given("rto_estimator") {
            cfg.rto_estimator = if linux {
                RtoEstimator::Linux
            } else {
                RtoEstimator::Rfc6298
            };
        }
        if !given("dsack") {
            cfg.dsack = linux;
        }
        if !given("cwnd_limited") {
            cfg.cwnd_limited = linux;
        }
        // Only `testbed` governs the handshake; the others keep the scheme's own default (DCQUIC's
        // TLS baseline opens with one).
        if !given("handshake") && testbed {
            cfg.handshake = true;
        }
        if !given("timer_hz") {
            cfg.timer_hz = if testbed { TESTBED_HZ } else { 0 };
        }
        if !given("host_delay") {
            cfg.host_delay = if testbed {
                TESTBED_HOST_DELAY
            } else {
                HostDelay::default()
            };
        }
    }
}

/// RACK-TLP parameters (RFC 8985), used when `loss_detection = "rack_tlp"`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct RackConfig {
    /// RFC 8985 Sec. 6.2 step 4: RACK.reo_wnd = RACK.min_RTT / `reo_wnd_min_rtt_divisor` (4 in the
    /// RFC and Linux `tcp_rack_reo_wnd`), capped at SRTT.
    pub reo_wnd_min_rtt_divisor: u32,
    /// Send tail loss probes (RFC 8985 Sec. 7; Linux `net.ipv4.tcp_early_retrans` = 3, its default).
    /// Off runs RACK alone (`tcp_early_retrans` = 0).
    pub tlp: bool,
    /// Added to the PTO of 2 SRTT when one segment is in flight, to wait out a delayed ACK (RFC 8985
    /// Sec. 7.2 WCDelAckT). Absent: the connection's `min_rto`, as Linux adds `tcp_rto_min_us`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tlp_delayed_ack_allowance: Option<Dur>,
    /// Added to the PTO of 2 SRTT when more than one segment is in flight (Linux
    /// `TCP_TIMEOUT_MIN_US`, 2 ms; RFC 8985 adds nothing).
    pub tlp_min_extra: Dur,
}

impl Default for RackConfig {
    fn default() -> Self {
        RackConfig {
            reo_wnd_min_rtt_divisor: 4,
            tlp: true,
            tlp_delayed_ack_allowance: None,
            tlp_min_extra: Dur::from_millis(2),
        }
    }
}

/// When the receiver acknowledges in-order data (`delayed_ack`). Absent from the configuration, every
/// segment is acknowledged at once.
///
/// In an experiment file the fixed rule is a time, `delayed_ack = "1ms"`, and Linux's is a table,
/// `delayed_ack = { kind = "linux" }` with any of [`LinuxDelayedAck`]'s keys overridden.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum DelayedAck {
    /// RFC 1122 Sec. 4.2.3.2 / RFC 5681 Sec. 4.2 with one fixed timer: ACK once more than one MSS is
    /// unacknowledged, or this long after the first unacknowledged segment.
    Fixed(Dur),
    /// Linux's receiver (`net/ipv4/tcp_input.c`, `tcp_output.c`): quick-ACK mode, the adaptive ATO and
    /// the delayed-ACK timer bounds (docs/tcp.md, "Delayed ACKs: fixed or Linux's").
    Linux(LinuxDelayedAck),
}

/// Linux's delayed-ACK constants, at HZ = 1000. Datacenter hosts lower them (e.g. the `rto_min` route
/// attribute lowers `delack_max` to `rto_min` - 1 ms since Linux 6.7, `tcp_delack_max`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LinuxDelayedAck {
    /// `TCP_ATO_MIN` (HZ / 25 = 40 ms): the ATO a connection starts from and returns to after
    /// quick-ACK mode; the ATO of back-to-back arrivals converges to it.
    pub ato_min: Dur,
    /// `TCP_DELACK_MIN` (HZ / 25 = 40 ms): an ATO above it is capped at max(SRTT, `delack_min`)
    /// (`tcp_send_delayed_ack`).
    pub delack_min: Dur,
    /// `TCP_DELACK_MAX` (HZ / 5 = 200 ms; per socket `icsk_delack_max`): the longest a delayed ACK
    /// waits.
    pub delack_max: Dur,
    /// `TCP_MAX_QUICKACKS` (16): the most segments acknowledged one by one on entering quick-ACK mode
    /// at the start of the data or after an idle period (`tcp_incr_quickack`).
    pub quickacks_max: u32,
}

impl Default for LinuxDelayedAck {
    fn default() -> Self {
        LinuxDelayedAck {
            ato_min: Dur::from_millis(40),
            delack_min: Dur::from_millis(40),
            delack_max: Dur::from_millis(200),
            quickacks_max: 16,
        }
    }
}

/// The table form of `delayed_ack`: `kind` is required, every other key defaults to Linux's.
#[derive(Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
struct DelayedAckTable {
    kind: DelayedAckKind,
    #[serde(default = "default_ato_min")]
    ato_min: Dur,
    #[serde(default = "default_delack_min")]
    delack_min: Dur,
    #[serde(default = "default_delack_max")]
    delack_max: Dur,
    #[serde(default = "default_quickacks_max")]
    quickacks_max: u32,
}

#[derive(Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
enum DelayedAckKind {
    Linux,
}

fn default_ato_min() -> Dur {
    LinuxDelayedAck::default().ato_min
}

fn default_delack_min() -> Dur {
    LinuxDelayedAck::default().delack_min
}

fn default_delack_max() -> Dur {
    LinuxDelayedAck::default().delack_max
}

fn default_quickacks_max() -> u32 {
    LinuxDelayedAck::default().quickacks_max
}

impl Serialize for DelayedAck {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match *self {
            // The time alone, as before the table form existed.
            DelayedAck::Fixed(d) => d.serialize(s),
            DelayedAck::Linux(l) => DelayedAckTable {
                kind: DelayedAckKind::Linux,
                ato_min: l.ato_min,
                delack_min: l.delack_min,
                delack_max: l.delack_max,
                quickacks_max: l.quickacks_max,
            }
            .serialize(s),
        }
    }
}

/// A time is the fixed rule, a table Linux's. The table is read through the deserializer's own map, so
/// an error names its key (`delayed_ack.ato_min`).
struct DelayedAckVisitor;

impl<'de> serde::de::Visitor<'de> for DelayedAckVisitor {
    type Value = DelayedAck;
    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a time such as \"1ms\" or a table such as { kind = \"linux\" }")
    }
    fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<DelayedAck, E> {
        Dur::deserialize(serde::de::value::StrDeserializer::new(v)).map(DelayedAck::Fixed)
    }
    fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<DelayedAck, E> {
        Dur::deserialize(serde::de::value::U64Deserializer::new(v)).map(DelayedAck::Fixed)
    }
    fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<DelayedAck, E> {
        Dur::deserialize(serde::de::value::I64Deserializer::new(v)).map(DelayedAck::Fixed)
    }
    fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<DelayedAck, E> {
        Dur::deserialize(serde::de::value::F64Deserializer::new(v)).map(DelayedAck::Fixed)
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, map: A) -> Result<DelayedAck, A::Error> {
        let t = DelayedAckTable::deserialize(serde::de::value::MapAccessDeserializer::new(map))?;
        let DelayedAckKind::Linux = t.kind;
        Ok(DelayedAck::Linux(LinuxDelayedAck {
            ato_min: t.ato_min,
            delack_min: t.delack_min,
            delack_max: t.delack_max,
            quickacks_max: t.quickacks_max,
        }))
    }
}

impl<'de> Deserialize<'de> for DelayedAck {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<DelayedAck, D::Error> {
        d.deserialize_any(DelayedAckVisitor)
    }
}

/// TCP endpoint configuration.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpConfig {
    /// Maximum segment size (payload bytes per segment).
    pub mss_bytes: u32,
    /// IP + TCP header bytes added to every segment on the wire (40 without options).
    pub header_bytes: u32,
    /// Initial congestion window in segments (RFC 6928: 10).
    pub initial_cwnd_segments: u32,
    /// Receive window the receiver advertises, in bytes.
    pub rcv_window_bytes: u32,
    /// Lower bound on the RTO (RFC 6298 (2.4) says 1 s; Linux uses 200 ms; datacenters 1-10 ms).
    pub min_rto: Dur,
    /// Upper bound on the RTO after back-off (RFC 6298 (2.5): at least 60 s).
    pub max_rto: Dur,
    /// RTO before the first RTT sample (RFC 6298 (2.1): 1 s).
    pub initial_rto: Dur,
    /// Selective acknowledgements (RFC 2018) and SACK-based loss recovery (RFC 6675).
    pub sack: bool,
    /// Loss detection: RACK-TLP (Linux's, the default) or RFC 6675 DupThresh.
    pub loss_detection: LossDetection,
    /// RACK-TLP parameters (with `loss_detection = "rack_tlp"`).
    pub rack: RackConfig,
    /// When a timeout's RTO back-off ends: at the ACK of the retransmission (Linux) or at the ACK of
    /// data never retransmitted (Karn, RFC 6298 without timestamps).
    pub rto_backoff: RtoBackoff,
    /// The host this sender models where the RFCs leave a choice (`HostProfile`): sets the defaults
    /// of `prr`, `rto_restart_on_retransmit`, `rto_estimator`, `dsack` and `cwnd_limited` (and, for
    /// `testbed`, of `handshake`, `timer_hz` and `host_delay`).
    pub host: HostProfile,
    /// Linux's timer granularity: timers run in jiffies at this HZ on the kernel's timer wheel
    /// (`tcp/jiffies.rs`): `min_rto` rounds up to whole jiffies and every timer fires at a tick, up
    /// to one bucket late. 0: exact timers. Default from `host` (250 for `testbed`, else 0).
    pub timer_hz: u32,
    /// The application's wake-ups around the network (`HostDelay`). Default from `host` (measured
    /// values for `testbed`, else none).
    pub host_delay: HostDelay,
    /// Proportional Rate Reduction (RFC 6937, Linux `tcp_cwnd_reduction`) for fast recovery with
    /// SACK: cwnd falls to ssthresh in proportion to what the ACKs deliver. Off: RFC 6675's cwnd =
    /// ssthresh at the start of recovery. Default from `host` (on for `linux`).
    pub prr: bool,
    /// Retransmitting the first unacknowledged segment restarts the retransmission timer (Linux
    /// `tcp_xmit_retransmit_queue`). Off: RFC 6298 Sec. 5, the timer restarts only on an ACK of new
    /// data or its own expiry. Default from `host` (on for `linux`).
    pub rto_restart_on_retransmit: bool,
    /// How the RTO follows the RTT (`RtoEstimator`): Linux's SRTT + max(4 mdev, `min_rto`) or RFC
    /// 6298's max(SRTT + 4 RTTVAR, `min_rto`). Default from `host` (`linux` for `linux`).
    pub rto_estimator: RtoEstimator,
    /// D-SACK (RFC 2883, Linux `tcp_dsack_set`): the receiver reports a segment it already had (below
    /// the cumulative ACK, or inside an out-of-order block) as the first SACK block of the ACK it
    /// triggers, and the sender reads it: undo of a reduction every retransmission of which was
    /// D-SACKed, RACK's reordering-window growth, the loss probe's loss check (`tcp/undo.rs`). Off:
    /// duplicates are ACKed without it, and nothing is undone. Default from `host` (on for `linux`).
    pub dsack: bool,
    /// cwnd grows only while it limits the sender (Linux `tcp_is_cwnd_limited`, checked by every
    /// congestion control's `cong_avoid`): cwnd filled within the last round trip, or in slow start
    /// below twice the most data in flight then. Off: every ACK of new data grows cwnd, so an
    /// application-limited connection (a persistent connection between requests) reaches any
    /// size. Default from `host` (on for `linux`).
    pub cwnd_limited: bool,
    /// Duplicate-ACK threshold that starts fast retransmit (RFC 5681: 3). `u32::MAX` disables
    /// dupACK-based loss detection (CP runs that way); it also switches RACK-TLP off, since
    /// schemes that set it want no loss detection but their own and the timer.
    pub dupack_threshold: u32,
    /// Limited transmit (RFC 3042): send new data on the first two duplicate ACKs.
    pub limited_transmit: bool,
    /// Early retransmit (RFC 5827): lower the dupACK threshold when fewer than 4 segments are
    /// outstanding and no new data can be sent.
    pub early_retransmit: bool,
    /// Delayed ACKs (RFC 1122 / RFC 5681 4.2): ACK every second full segment or after a fixed delay
    /// (`"1ms"`), or Linux's rules (`{ kind = "linux" }`). `None` acknowledges every segment at once.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub delayed_ack: Option<DelayedAck>,
    /// Model the three-way handshake (SYN, SYN-ACK, ACK) before data; off means the connection starts
    /// established, as most datacenter simulations do with persistent connections.
    pub handshake: bool,
    /// Restart from the initial window after an idle period longer than the RTO (RFC 5681 4.1 /
    /// Linux `tcp_slow_start_after_idle`).
    pub slow_start_after_idle: bool,
    /// Mark data packets ECN-capable (ECT(0)) and echo CE marks (RFC 3168). DCTCP requires it.
    pub ecn: bool,
    pub congestion_control: CongestionControl,
    /// Tail loss probe (set by the `tlp` transport, not a parameter of plain TCP).
    #[serde(skip)]
    pub tlp: Option<TlpConfig>,
    /// TCP-IR coded packets (set by the `tcp_ir` transport).
    #[serde(skip)]
    pub tcp_ir: Option<TcpIrConfig>,
    /// Proactive: send every data packet twice (set by the `proactive` transport).
    #[serde(skip)]
    pub proactive: bool,
    /// PIAS MLFQ tagging of `Packet::class` (set by the `pias` transport).
    #[serde(skip)]
    pub pias: Option<PiasConfig>,
    /// pFabric: `Packet::priority` = remaining bytes of the message (set by the `pfabric` transport).
    #[serde(skip)]
    pub pfabric_priority: bool,
    /// pFabric probe mode: after this many consecutive timeouts, send one-byte probes once per RTO
    /// until one is acknowledged (set by the `pfabric` transport).
    #[serde(skip)]
    pub pfabric_probe_after: Option<u32>,
    /// CP (Cheng et al., NSDI'14): the receiver answers a payload-cut segment with a PACK and the
    /// sender retransmits the segment a PACK names (set by the `cp` / `cp_dctcp` transports).
    #[serde(skip)]
    pub cp: bool,
    /// Per-packet spraying: data segment i carries source route `Route::Path(i mod spray_paths)` (the
    /// labels name distinct equal-cost paths, see `Route`); 0 keeps the connection's route (ECMP).
    /// ACKs keep the connection's route.
    #[serde(skip_serializing_if = "is_zero")]
    pub spray_paths: u32,
    /// Carry real payload bytes (set by drivers that move them: `tailcut-net`, byte-exact tests). The
    /// sender keeps the unacknowledged bytes and writes each segment's payload; the receiver
    /// reassembles them and hands each message over (`Engine::take_bytes`). Packets and timing are
    /// the same either way (`docs/net.md`).
    #[serde(skip)]
    pub carry_bytes: bool,
}

fn is_zero(v: &u32) -> bool {
    *v == 0
}

/// Tail loss probe (draft-dukkipati-tcpm-tcp-loss-probe-01 Sec. 2; RFC 8985 Sec. 7).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TlpConfig {
    /// Lower bound of the probe timeout (the draft's 10 ms; datacenter runs use less).
    pub pto_floor: Dur,
    /// Worst-case delayed-ACK timer (WCDelAckT, 200 ms in the draft), added when one segment is in
    /// flight.
    pub worst_case_delayed_ack: Dur,
}

impl Default for TlpConfig {
    fn default() -> Self {
        TlpConfig {
            pto_floor: Dur::from_millis(10),
            worst_case_delayed_ack: Dur::from_millis(200),
        }
    }
}

/// TCP-IR (Flach et al., SIGCOMM'13, Sec. 4): one XOR-coded packet per half-RTT bin of new data.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct TcpIrConfig {
    /// Most data segments one coded packet covers (the paper's block of at most 16).
    pub max_block_segments: u32,
}

impl Default for TcpIrConfig {
    fn default() -> Self {
        TcpIrConfig {
            max_block_segments: 16,
        }
    }
}

/// PIAS (Bai et al., NSDI'15, Sec. 3): a packet's class is the number of demotion thresholds at or
/// below the bytes of its message sent before it. Class 0 is the highest priority.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PiasConfig {
    /// Ascending demotion thresholds, bytes.
    pub thresholds_bytes: Vec<u64>,
}

impl PiasConfig {
    /// The MLFQ level of a packet whose first byte is `sent_bytes` into its message.
    pub fn level(&self, sent_bytes: u64) -> u8 {
        self.thresholds_bytes
            .iter()
            .take_while(|&&t| t <= sent_bytes)
            .count() as u8
    }
}

impl Default for TcpConfig {
    fn default() -> Self {
        TcpConfig {
            mss_bytes: 1460,
            header_bytes: 40,
            initial_cwnd_segments: 10,
            rcv_window_bytes: 16 << 20,
            min_rto: Dur::from_millis(200),
            max_rto: Dur::from_millis(60_000),
            initial_rto: Dur::from_millis(1_000),
            sack: true,
            loss_detection: LossDetection::RackTlp,
            rack: RackConfig::default(),
            rto_backoff: RtoBackoff::Linux,
            host: HostProfile::Linux,
            prr: true,
            rto_restart_on_retransmit: true,
            rto_estimator: RtoEstimator::Linux,
            dsack: true,
            cwnd_limited: true,
            timer_hz: 0,
            host_delay: HostDelay::default(),
            dupack_threshold: 3,
            limited_transmit: true,
            early_retransmit: true,
            delayed_ack: None,
            handshake: false,
            slow_start_after_idle: true,
            ecn: false,
            congestion_control: CongestionControl::NewReno,
            tlp: None,
            tcp_ir: None,
            proactive: false,
            pias: None,
            pfabric_priority: false,
            pfabric_probe_after: None,
            cp: false,
            spray_paths: 0,
            carry_bytes: false,
        }
    }
}
