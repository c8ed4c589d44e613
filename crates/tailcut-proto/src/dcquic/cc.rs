//! Congestion control for DCQUIC: quinn-proto's Cubic and NewReno, and a DCTCP-style controller
//! (RFC 8257) that reacts to the extent of ECN marking.
//!
//! quinn-proto tells a controller about ECN only as a congestion event with zero lost bytes, once per
//! ACK frame whose CE count went up, right after the `on_ack` calls of the packets that frame newly
//! acknowledged and its `on_end_acks`. The marked fraction per window is therefore derived as
//! (bytes newly acknowledged by ACK frames that raised the CE count) / (bytes acknowledged in the
//! window). That is exact when the receiver acknowledges every packet, and an upper bound otherwise
//! (a frame acknowledging two packets of which one was marked counts both); an exact count would need
//! the CE increment itself, which quinn-proto computes in `detect_ecn` but does not hand to the
//! controller.

use quinn_proto::congestion::{Controller, ControllerFactory, ControllerMetrics};
use quinn_proto::RttEstimator;
use serde::{Deserialize, Serialize};
use std::any::Any;
use std::sync::Arc;
use std::time::Instant;

/// The congestion controller of a DCQUIC connection.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum CcKind {
    /// quinn-proto's Cubic (RFC 9438).
    Cubic,
    /// quinn-proto's NewReno (RFC 9002 Sec. 7).
    NewReno,
    /// DCTCP-style: cwnd *= 1 - alpha / 2 once per window with marks, alpha = (1 - g) alpha + g F.
    Dctcp {
        #[serde(default = "default_g")]
        g: f64,
    },
}

fn default_g() -> f64 {
    1.0 / 16.0
}

impl CcKind {
    pub fn validate(&self) -> Result<(), crate::ConfigError> {
        if let CcKind::Dctcp { g } = self {
            if !(*g > 0.0 && *g <= 1.0) {
                return Err(crate::ConfigError::new(
                    "congestion_control.g",
                    format!("must be in (0, 1], got {g}"),
                ));
            }
        }
        Ok(())
    }

    /// The factory quinn-proto builds one controller per path from.
    pub fn factory(&self, initial_window: u64) -> Arc<dyn ControllerFactory + Send + Sync> {
        match self {
            CcKind::Cubic => {
                let mut c = quinn_proto::congestion::CubicConfig::default();
                c.initial_window(initial_window);
                Arc::new(c)
            }
            CcKind::NewReno => {
                let mut c = quinn_proto::congestion::NewRenoConfig::default();
                c.initial_window(initial_window);
                Arc::new(c)
            }
            CcKind::Dctcp { g } => Arc::new(DctcpConfig {
                g: *g,
                initial_window,
            }),
        }
    }
}

/// Builds [`Dctcp`] controllers.
#[derive(Clone, Debug)]
pub struct DctcpConfig {
    pub g: f64,
    pub initial_window: u64,
}

impl ControllerFactory for DctcpConfig {
    fn build(self: Arc<Self>, now: Instant, current_mtu: u16) -> Box<dyn Controller> {
        Box::new(Dctcp::new(self.g, self.initial_window, now, current_mtu))
    }
}

/// DCTCP (RFC 8257 Sec. 3.3) on quinn-proto's controller interface; growth as NewReno (slow start,
/// then one packet per window), loss as NewReno (halve once per recovery period).
#[derive(Clone, Debug)]
pub struct Dctcp {
    g: f64,
    initial: u64,
    mtu: u64,
    window: u64,
    ssthresh: u64,
    /// Estimated fraction of marked bytes (RFC 8257's alpha), starts at 1 as in Linux.
    alpha: f64,
    /// Bytes acknowledged in the current observation window and how many of them were marked.
    acked_in_window: u64,
    marked_in_window: u64,
    /// The observation window ends once `window_target` bytes have been acknowledged (one cwnd).
    window_target: u64,
    /// Bytes newly acknowledged by the ACK frame being processed (closed by `on_end_acks`).
    batch: u64,
    last_batch: u64,
    /// Whether the current window already reduced cwnd for marks (at most once per window).
    reduced_this_window: bool,
    recovery_start: Instant,
    ack_bytes_ca: u64,
}

impl Dctcp {
    pub fn new(g: f64, initial_window: u64, now: Instant, mtu: u16) -> Dctcp {
        Dctcp {
            g,
            initial: initial_window,
            mtu: mtu as u64,
            window: initial_window,
            ssthresh: u64::MAX,
            alpha: 1.0,
            acked_in_window: 0,
            marked_in_window: 0,
            window_target: initial_window,
            batch: 0,
            last_batch: 0,
            reduced_this_window: false,
            recovery_start: now,
            ack_bytes_ca: 0,
        }
    }

    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    fn min_window(&self) -> u64 {
        2 * self.mtu
    }

    /// Ends an observation window: fold its marked fraction into alpha.
    fn end_window(&mut self) {
        let f = if self.acked_in_window == 0 {
            0.0
        } else {
            (self.marked_in_window as f64 / self.acked_in_window as f64).min(1.0)
        };
        self.alpha = (1.0 - self.g) * self.alpha + self.g * f;
        self.acked_in_window = 0;
        self.marked_in_window = 0;
        self.window_target = self.window.max(self.mtu);
        self.reduced_this_window = false;
    }
}

impl Controller for Dctcp {
    fn on_ack(&mut self, _now: Instant, sent: Instant, bytes: u64, app_limited: bool, _rtt: &RttEstimator) {
        self.acked(sent, bytes, app_limited);
    }

    fn on_end_acks(&mut self, _now: Instant, _in_flight: u64, _app_limited: bool, _largest: Option<u64>) {
        self.end_acks();
    }

    fn on_congestion_event(&mut self, now: Instant, sent: Instant, persistent: bool, lost_bytes: u64) {
        self.congestion(now, sent, persistent, lost_bytes);
    }

    fn on_mtu_update(&mut self, new_mtu: u16) {
        self.mtu = new_mtu as u64;
        self.window = self.window.max(self.min_window());
    }

    fn window(&self) -> u64 {
        self.window
    }

    fn metrics(&self) -> ControllerMetrics {
        let mut m = ControllerMetrics::default();
        m.congestion_window = self.window;
        m.ssthresh = Some(self.ssthresh);
        m
    }

    fn clone_box(&self) -> Box<dyn Controller> {
        Box::new(self.clone())
    }

    fn initial_window(&self) -> u64 {
        self.initial
    }

    fn into_any(self: Box<Self>) -> Box<dyn Any> {
        self
    }
}

impl Dctcp {
    /// One packet of `bytes` sent at `sent` was newly acknowledged.
    pub fn acked(&mut self, sent: Instant, bytes: u64, app_limited: bool) {
        // A window ends at the first ACK frame after it filled, not inside `end_acks`: quinn reports
        // a frame's CE increase after `on_end_acks`, and those marks belong to the window they filled.
        if self.batch == 0 && self.acked_in_window >= self.window_target {
            self.end_window();
        }
        self.batch += bytes;
        self.acked_in_window += bytes;
        if app_limited || sent <= self.recovery_start {
            return;
        }
        if self.window < self.ssthresh {
            self.window += bytes;
        } else {
            self.ack_bytes_ca += bytes;
            if self.ack_bytes_ca >= self.window {
                self.ack_bytes_ca -= self.window;
                self.window += self.mtu;
            }
        }
    }

    /// The ACK frame's newly acknowledged packets are all reported.
    pub fn end_acks(&mut self) {
        self.last_batch = self.batch;
        self.batch = 0;
    }

    /// quinn's congestion event: ECN-CE when no bytes were lost, loss otherwise.
    pub fn congestion(&mut self, now: Instant, sent: Instant, persistent: bool, lost_bytes: u64) {
        if lost_bytes == 0 && !persistent {
            // ECN-CE: the ACK frame just processed carried new marks.
            self.marked_in_window += self.last_batch;
            self.last_batch = 0;
            if self.reduced_this_window {
                return;
            }
            // RFC 8257 3.3: alpha is updated at the end of each window; a window with marks reduces
            // cwnd once, by the alpha of the windows before it.
            self.window = ((self.window as f64 * (1.0 - self.alpha / 2.0)) as u64).max(self.min_window());
            self.ssthresh = self.window;
            self.reduced_this_window = true;
            return;
        }
        if sent <= self.recovery_start {
            return;
        }
        self.recovery_start = now;
        self.window = (self.window / 2).max(self.min_window());
        self.ssthresh = self.window;
        if persistent {
            self.window = self.min_window();
        }
    }
}
