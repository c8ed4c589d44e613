//! The engine's side of tail FEC ([`super::super::tailfec`]): sending a message's tail parity as
//! DATAGRAM frames, and rebuilding a stream's tail from the parity the peer sent.

use super::*;

impl DcquicEngine {
    /// Queues the repair datagrams of the messages whose data quinn has sent: the XOR parity of each
    /// message's tail ([`tailfec`]), in pieces that fit a datagram.
    pub(super) fn send_repairs(&mut self) {
        let Some((_, conn)) = self.conn.as_mut() else {
            self.repairs_due.clear();
            return;
        };
        let k = self.shared.cfg.tail_fec_packets;
        for (id, msg, len) in self.repairs_due.drain(..) {
            let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
                continue;
            };
            // Already acknowledged (the data went out long before quinn was idle): nothing to protect.
            if send.acked || send.msg != msg {
                continue;
            }
            let Some(room) = conn
                .datagrams()
                .max_size()
                .and_then(|m| m.checked_sub(tailfec::HEADER))
            else {
                continue;
            };
            if room == 0 {
                continue;
            }
            let chunk = conn.current_mtu();
            let tail = tailfec::tail_len(len, k, chunk);
            tailfec::parity(msg, len - tail as u64, tail, chunk, &mut self.fec_scratch);
            for (j, piece) in self.fec_scratch.chunks(room).enumerate() {
                let h = tailfec::RepairHeader {
                    stream: id.into(),
                    len,
                    tail,
                    chunk,
                    piece: (j * room) as u32,
                };
                let mut d = Vec::with_capacity(tailfec::HEADER + piece.len());
                h.encode(&mut d);
                d.extend_from_slice(piece);
                let n = d.len() as u64;
                if conn.datagrams().send(d.into(), false).is_err() {
                    break;
                }
                send.repair_bytes += n;
                self.counters.fec_repairs += 1;
                self.counters.fec_repair_bytes += n;
            }
        }
    }

    /// Repair datagrams from the peer: keep each piece with its stream's receive state and try to
    /// rebuild the tail.
    pub(super) fn repairs_in(&mut self, now: Time) {
        loop {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let Some(d) = conn.datagrams().recv() else {
                return;
            };
            if !self.shared.cfg.tail_fec {
                continue;
            }
            let Some((h, piece)) = tailfec::RepairHeader::decode(&d) else {
                continue;
            };
            let Ok(v) = VarInt::from_u64(h.stream) else {
                continue;
            };
            let id = StreamId::from(v);
            // Only streams the peer sends on: its own, and the responses on our bidirectional ones.
            if id.initiator() == self.side && id.dir() == Dir::Uni {
                continue;
            }
            // A peer stream beyond QUIC's stream limit cannot exist yet: keeping state for it would
            // let a peer fill the table with streams it never opens.
            let limit = self.accepted[id.dir() as usize] + self.shared.cfg.max_streams as u64;
            if self.recv_done(id) || (id.initiator() != self.side && id.index() >= limit) {
                continue;
            }
            let limits = tailfec::Limits::of(&self.shared.cfg);
            let f = self
                .fec_rx
                .entry(id)
                .or_insert_with(|| tailfec::TailRecv::new(limits));
            if f.add_repair(h, piece) && !f.has_window() {
                f.set_window(h.len, h.tail_start());
            }
            self.try_fec(now, id);
        }
    }

    /// The receive side of stream `id` is delivered (or the stream is gone): repairs and late data for it
    /// are dropped.
    pub(super) fn recv_done(&self, id: StreamId) -> bool {
        match self.streams.get(&id) {
            Some(s) => s.recv.reported,
            None if id.initiator() == self.side => true,
            None => id.index() < self.accepted[id.dir() as usize],
        }
    }

    /// Delivers stream `id`'s message from its tail parity if the missing bytes allow it.
    pub(super) fn try_fec(&mut self, now: Time, id: StreamId) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let (Some((_msg, len)), false) = (s.recv.msg, s.recv.reported) else {
            return;
        };
        let Some(f) = self.fec_rx.get_mut(&id) else {
            return;
        };
        let Some(r) = f.try_recover(len, &mut self.fec_scratch) else {
            return;
        };
        self.counters.fec_recovered += 1;
        self.counters.fec_recovered_bytes += r.bytes;
        #[cfg(test)]
        if let Some((start, kept)) = f.kept() {
            self.fec_log.push((_msg, start, kept.to_vec()));
        }
        self.fec_rx.remove(&id);
        self.deliver(now, id);
    }
}
