//! A CloudBurst endpoint's receive path (`handle_packet`) on what a misbehaving peer may send: raw
//! bytes, and well-formed headers with arbitrary fields, symbols and repeats. It never panics, and
//! never holds more heap than its limits allow (`docs/cloudburst.md`, "Limits").
//!
//! Input: byte 0 picks the config (codec, carrying bytes or not, the paper's Fig. 4 layout or
//! messages of any size in blocks); then records of `[op, a, b, c, d, e, f, len]` followed by `len`
//! bytes of payload or symbol.
#![no_main]

use libfuzzer_sys::fuzz_target;
use tailcut_proto::cloudburst::{
    Block, CbHeader, CloudBurstConfig, CloudBurstEndpoint, Codec, Kind, SIM_RAPTORQ_SYMBOL_BYTES,
};
use tailcut_proto::packet::{Addr, FiveTuple, Packet, Proto};
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::{Dur, Engine, Time};
use tailcut_proto_fuzz::{check_peak, reset_peak, Counting};

#[global_allocator]
static ALLOC: Counting = Counting;

/// Bytes the receiver may hold for the application here (`max_held_bytes`).
const HELD: u64 = 16 << 20;

/// Above what `max_decoders` decoders of 64 symbols each (~6 MB), `HELD` bytes of assemblies and
/// untaken messages, and the endpoint's tables can hold with the configs below.
const LIMIT: usize = 48 << 20;

fn drain(e: &mut CloudBurstEndpoint, now: Time) {
    let mut buf = Vec::new();
    while e.poll_transmit(now, &mut buf).is_some() {
        buf.clear();
    }
    while e.poll_event().is_some() {}
    while let Some(t) = e.poll_timeout() {
        if t > now {
            break;
        }
        e.handle_timeout(now);
        while e.poll_transmit(now, &mut buf).is_some() {
            buf.clear();
        }
        while e.poll_event().is_some() {}
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&sel, mut rest)) = data.split_first() else {
        return;
    };
    let base = if sel & 4 == 0 {
        CloudBurstConfig::default()
    } else {
        CloudBurstConfig::paper()
    };
    let cfg = CloudBurstConfig {
        codec: if sel & 1 == 0 { Codec::Lt } else { Codec::Raptorq },
        carry_bytes: sel & 2 != 0,
        max_held_bytes: HELD,
        ..base
    };
    let layout = cfg.layout();
    let tuple = FiveTuple {
        src: Addr(1),
        dst: Addr(2),
        src_port: 100,
        dst_port: 200,
        proto: Proto::Udp,
    };
    let base = reset_peak();
    {
        // A configuration the engine refuses is not a receive-path input.
        let Ok(mut e) = CloudBurstEndpoint::new(cfg.clone(), tuple, rng::stream(1, Stream::Engine, 0)) else {
            return;
        };
        let mut now = Time::ZERO;
        let pkt = Packet {
            tuple: tuple.reversed(),
            ..Packet::default()
        };
        let symbol = match (cfg.carry_bytes, cfg.codec) {
            (true, _) => cfg.symbol_bytes as usize,
            (false, Codec::Lt) => 0,
            (false, Codec::Raptorq) => SIM_RAPTORQ_SYMBOL_BYTES as usize,
        };
        let mut payload = Vec::new();
        while rest.len() >= 8 {
            let (r, tail) = rest.split_at(8);
            let n = (r[7] as usize).min(tail.len());
            let (body, tail) = tail.split_at(n);
            rest = tail;
            now += Dur::from_micros(r[0] as u64 >> 3);
            payload.clear();
            // Up to 64 repeats: one record can still complete any message (at most 64 source packets).
            let repeats = if r[0] & 4 != 0 { (r[6] & 63) as u32 + 1 } else { 1 };
            if r[0] & 3 == 0 {
                payload.extend_from_slice(body);
                e.handle_packet(now, &pkt, &payload);
                drain(&mut e, now);
                continue;
            }
            // A well-formed header whose size fields agree (check_size), so the decoders are reached.
            let packets = (r[1] % 64) + 1;
            // One record in four is full, as every block before a message's last must be.
            let full = packets as u32 * cfg.symbol_bytes;
            let message_bytes = if r[1] >> 6 == 3 {
                full
            } else {
                ((packets as u32 - 1) * cfg.symbol_bytes + 1 + r[2] as u32 * 5).min(full)
            };
            for i in 0..repeats {
                let kind = match (r[0] & 3, cfg.codec) {
                    (1, _) => Kind::Stop,
                    (_, Codec::Lt) => {
                        let set = u64::from_le_bytes([r[3], r[4], r[5], r[6], r[2], r[1], 0, 0])
                            .rotate_left(i)
                            & if packets == 64 {
                                u64::MAX
                            } else {
                                (1 << packets) - 1
                            };
                        if set == 0 {
                            Kind::Stop
                        } else {
                            Kind::Coded { set }
                        }
                    }
                    (_, Codec::Raptorq) => Kind::Symbol {
                        esi: (u32::from_le_bytes([r[3], r[4], r[5], 0]) + i) & 0xff_ffff,
                    },
                };
                // Blocks 0..=last of up to 8 and up to 256 blocks, the last one as often as any.
                let block = if cfg.multi_block {
                    let last = u16::from(r[4] >> 5) << (r[3] & 8);
                    Block {
                        index: (u16::from(r[5] >> 5) << (r[3] & 8)).min(last),
                        last,
                    }
                } else {
                    Block::ONLY
                };
                let h = CbHeader {
                    packets,
                    message_bytes,
                    msg_id: r[2] ^ (r[1] >> 6),
                    kind,
                    block,
                };
                payload.clear();
                h.emit_to_vec(layout, &mut payload);
                if !matches!(kind, Kind::Stop) {
                    payload.extend_from_slice(body);
                    payload.resize(
                        layout.header_bytes() + if r[0] & 8 == 0 { symbol } else { body.len() },
                        0x5a,
                    );
                }
                e.handle_packet(now, &pkt, &payload);
                drain(&mut e, now);
            }
            while e.take_bytes(u64::from(r[5])).is_some() {}
            assert!(e.held_bytes() <= HELD, "held {} bytes", e.held_bytes());
        }
    }
    check_peak(base, LIMIT, "cloudburst endpoint");
});
