//! `tcp`: TCP NewReno with SACK, the base every TCP-based scheme starts from.

use super::over_tcp::Plain;
use tailcut_proto::tcp::TcpConfig;

pub const TCP: Plain = Plain {
    name: "tcp",
    description: "TCP NewReno with SACK (RFC 6675), limited transmit, early retransmit, RFC 6298 RTO",
    base: TcpConfig::default,
    set: |_| {},
};

#[cfg(test)]
mod tests {
    use crate::resolve;
    use serde_json::{json, Value};
    use tailcut_proto::tcp::{CongestionControl, CubicConfig};
    use tailcut_proto::time::Dur;

    fn cc_of(params: Value) -> Result<CongestionControl, String> {
        resolve("tcp", params.as_object().unwrap())
            .map(|s| s.engine.tcp().unwrap().congestion_control)
            .map_err(|e| e.path)
    }

    /// `congestion_control = { kind = "cubic" }` resolves to Linux's defaults (tcp_cubic.c module
    /// parameters: beta 717/1024, bic_scale 41, fast convergence, TCP friendliness, HyStart with both
    /// detections, low window 16, ack delta 2000 us); ECN stays off and the DCTCP-only ECN check does
    /// not fire.
    #[test]
    fn cubic_resolves_with_linux_defaults() {
        let cc = cc_of(json!({ "congestion_control": { "kind": "cubic" } })).unwrap();
        let CongestionControl::Cubic(k) = cc else {
            panic!("{cc:?}")
        };
        assert_eq!(k, CubicConfig::default());
        assert_eq!(k.beta, 717.0 / 1024.0);
        assert_eq!(k.hystart_low_window_segments, 16);
        assert_eq!(k.hystart_ack_delta, Dur::from_micros(2000));
        let t = resolve(
            "tcp",
            json!({ "congestion_control": { "kind": "cubic" } })
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert!(!t.engine.tcp().unwrap().ecn);
        // With ECN on too (classic ECN, as Linux Cubic reacts to ECE).
        assert!(cc_of(json!({ "congestion_control": { "kind": "cubic" }, "ecn": true })).is_ok());
        // Over the dctcp scheme's base (ECN on) a Cubic override is accepted as well.
        assert!(resolve(
            "dctcp",
            json!({ "congestion_control": { "kind": "cubic", "hystart": false } })
                .as_object()
                .unwrap()
        )
        .is_ok());
        // Keys override one at a time.
        let cc = cc_of(
            json!({ "congestion_control": { "kind": "cubic", "beta": 0.5, "hystart_ack_delta": "1ms" } }),
        )
        .unwrap();
        assert_eq!(
            cc,
            CongestionControl::Cubic(CubicConfig {
                beta: 0.5,
                hystart_ack_delta: Dur::from_millis(1),
                ..CubicConfig::default()
            })
        );
        // The filled-in table resolves to the same spec.
        let (spec, filled) = crate::resolve_filled(
            "tcp",
            json!({ "congestion_control": { "kind": "cubic" } })
                .as_object()
                .unwrap(),
        )
        .unwrap();
        assert_eq!(resolve("tcp", &filled).unwrap(), spec);
    }

    /// Out-of-range Cubic parameters are refused naming the field.
    #[test]
    fn cubic_param_errors_name_the_field() {
        let err = |v: Value| cc_of(json!({ "congestion_control": v })).unwrap_err();
        assert_eq!(
            err(json!({ "kind": "cubic", "beta": 1.0 })),
            "params.congestion_control.beta"
        );
        assert_eq!(
            err(json!({ "kind": "cubic", "beta": 0.0 })),
            "params.congestion_control.beta"
        );
        assert_eq!(
            err(json!({ "kind": "cubic", "c": 0.0 })),
            "params.congestion_control.c"
        );
        assert_eq!(
            err(json!({ "kind": "cubic", "c": -1.0 })),
            "params.congestion_control.c"
        );
        assert_eq!(
            err(json!({ "kind": "cubic", "hystart_low_window_segments": 0 })),
            "params.congestion_control.hystart_low_window_segments"
        );
        assert_eq!(
            err(json!({ "kind": "cubic", "hz": 7 })),
            "params.congestion_control.hz"
        );
        // An unknown key is refused too.
        assert!(err(json!({ "kind": "cubic", "gamma": 1 })).starts_with("params"));
    }
}
