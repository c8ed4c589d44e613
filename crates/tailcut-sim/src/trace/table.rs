//! A trace as the columns of its events table (`events.parquet`): one row per event, every packet
//! header field in its own column, null where an event has no such field.

use super::{Event, Trace};
use crate::metrics::PortRecord;
use serde_json::{Map, Value};
use tailcut_proto::{Ecn, Header, Proto, Route, TcpFlags};

fn column<T: Into<Value>>(events: &[Event], f: impl Fn(&Event) -> T) -> Value {
    Value::Array(events.iter().map(|e| f(e).into()).collect())
}

/// tcpdump's letters for the flags set (`S`, `.` for ACK, `P`, `F`, `R`, `E`, `W`).
fn flag_letters(flags: TcpFlags) -> String {
    let mut s = String::new();
    for (bit, c) in [
        (TcpFlags::SYN, 'S'),
        (TcpFlags::FIN, 'F'),
        (TcpFlags::RST, 'R'),
        (TcpFlags::PSH, 'P'),
        (TcpFlags::ACK, '.'),
        (TcpFlags::ECE, 'E'),
        (TcpFlags::CWR, 'W'),
    ] {
        if flags.contains(bit) {
            s.push(c);
        }
    }
    s
}

/// `{column: [..]}` of every event; port names come from the traced run's port records (indexed by
/// port id).
pub fn columns(trace: &Trace, ports: &[PortRecord]) -> Map<String, Value> {
    let ev = &trace.events;
    let tcp = |e: &Event| e.packet.and_then(|p| p.tcp().copied());
    let names: Vec<(String, String)> = ports.iter().map(|p| (p.node.clone(), p.peer.clone())).collect();
    let mut m = Map::new();
    let mut put = |name: &str, v: Value| {
        m.insert(name.to_string(), v);
    };
    put("time_ns", column(ev, |e| e.time.0));
    put("kind", column(ev, |e| e.kind.name()));
    put("flow_id", column(ev, |e| e.flow));
    put(
        "direction",
        column(ev, |e| if e.forward { "data" } else { "ack" }),
    );
    put("port", column(ev, |e| e.port));
    put(
        "node",
        column(ev, |e| e.port.map(|p| names[p as usize].0.clone())),
    );
    put(
        "peer",
        column(ev, |e| e.port.map(|p| names[p as usize].1.clone())),
    );
    put("cause", column(ev, |e| e.cause.map(|c| c.name())));
    put("retransmission", column(ev, |e| e.retransmission));
    put("src_addr", column(ev, |e| e.packet.map(|p| p.tuple.src.0)));
    put("dst_addr", column(ev, |e| e.packet.map(|p| p.tuple.dst.0)));
    put("src_port", column(ev, |e| e.packet.map(|p| p.tuple.src_port)));
    put("dst_port", column(ev, |e| e.packet.map(|p| p.tuple.dst_port)));
    put(
        "proto",
        column(ev, |e| {
            e.packet.map(|p| match p.tuple.proto {
                Proto::Tcp => "tcp",
                Proto::Udp => "udp",
            })
        }),
    );
    put("size_bytes", column(ev, |e| e.packet.map(|p| p.size_bytes)));
    put("payload_bytes", column(ev, |e| e.packet.map(|p| p.payload_len())));
    put(
        "datagram",
        column(ev, |e| {
            e.packet.map(|p| matches!(p.header, Header::Datagram { .. }))
        }),
    );
    put("seq", column(ev, |e| tcp(e).map(|h| h.seq.0)));
    put("ack", column(ev, |e| tcp(e).map(|h| h.ack.0)));
    put("flags", column(ev, |e| tcp(e).map(|h| h.flags.0)));
    put(
        "flag_letters",
        column(ev, |e| tcp(e).map(|h| flag_letters(h.flags))),
    );
    put("window", column(ev, |e| tcp(e).map(|h| h.window)));
    put(
        "sack",
        column(ev, |e| {
            tcp(e).map(|h| {
                h.sack
                    .iter()
                    .map(|(l, r)| format!("{}-{}", l.0, r.0))
                    .collect::<Vec<_>>()
                    .join(",")
            })
        }),
    );
    put("ts_val", column(ev, |e| tcp(e).map(|h| h.ts_val)));
    put("ts_ecr", column(ev, |e| tcp(e).map(|h| h.ts_ecr)));
    put(
        "ecn",
        column(ev, |e| {
            e.packet.map(|p| match p.ecn {
                Ecn::NotEct => "not_ect",
                Ecn::Ect0 => "ect0",
                Ecn::Ce => "ce",
            })
        }),
    );
    put("trimmed", column(ev, |e| e.packet.map(|p| p.trimmed)));
    put(
        "path",
        column(ev, |e| {
            e.packet.and_then(|p| match p.route {
                Route::Ecmp => None,
                Route::Path(l) => Some(l),
            })
        }),
    );
    put("cwnd_bytes", column(ev, |e| e.probe.map(|p| p.cwnd_bytes)));
    // Null while ssthresh is still infinite (slow start before the first loss).
    put(
        "ssthresh_bytes",
        column(ev, |e| {
            e.probe.map(|p| p.ssthresh_bytes).filter(|&s| s != u64::MAX)
        }),
    );
    put("rto_ns", column(ev, |e| e.probe.map(|p| p.rto.0)));
    put(
        "srtt_ns",
        column(ev, |e| e.probe.and_then(|p| p.srtt).map(|d| d.0)),
    );
    put("timer_ns", column(ev, |e| e.timer.map(|t| t.0)));
    m
}
