//! The engine's messages on streams: queueing, opening and writing them, reading and delivering
//! the peer's, acknowledgements, failures, and 0-RTT's re-send.

use super::*;

impl DcquicEngine {
    /// Opens streams for queued messages while the peer's stream limit allows.
    pub(super) fn open_pending(&mut self, now: Time) {
        while let Some(&(msg, len, dir, _)) = self.pending.front() {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let Some(id) = conn.streams().open(dir) else {
                break;
            };
            let data = self.pending.pop_front().and_then(|q| q.3);
            let lost_at_open = conn.stats().path.lost_bytes;
            self.streams.insert(
                id,
                StreamState {
                    opened: now,
                    host_delay_at_open: self.excluded_host_delay(),
                    send: Some(SendSide {
                        msg,
                        len,
                        lost_at_open,
                        data,
                        ..SendSide::default()
                    }),
                    recv: RecvSide::default(),
                    rpc: dir == Dir::Bi,
                },
            );
            if dir == Dir::Bi {
                self.requests_out.insert(msg, id);
            }
            self.write(id);
        }
    }

    /// Writes as much of a stream's message as flow control and the send buffer take.
    pub(super) fn write(&mut self, id: StreamId) {
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        let Some(s) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        let mut stream = conn.send_stream(id);
        while s.written < s.len {
            let n = (s.len - s.written).min(tailfec::SPAN as u64) as usize;
            let bytes = match &s.data {
                Some(d) => &d[s.written as usize..s.written as usize + n],
                None => tailfec::payload(s.msg, s.written, n),
            };
            match stream.write(bytes) {
                Ok(k) if k > 0 => s.written += k as u64,
                _ => break,
            }
        }
        if s.written == s.len && !s.finished {
            s.finished = stream.finish().is_ok();
        }
        if s.finished && !s.repair_queued && s.len > 0 && self.shared.cfg.tail_fec {
            s.repair_queued = true;
            self.repairs_due.push((id, s.msg, s.len));
        }
    }

    /// Reads what quinn has for a stream. With tail FEC the read is unordered, so the engine knows which
    /// byte ranges arrived, and data of a stream already delivered from its parity (QUIC's retransmitted
    /// copy) is read and dropped: it holds flow-control credit.
    pub(super) fn read(&mut self, now: Time, id: StreamId) {
        let tail_fec = self.shared.cfg.tail_fec;
        let done = tail_fec && self.recv_done(id);
        let Some((_, conn)) = self.conn.as_mut() else {
            return;
        };
        let mtu = conn.current_mtu();
        let mut stream = conn.recv_stream(id);
        let Some(s) = self.streams.get_mut(&id) else {
            if done {
                if let Ok(mut chunks) = stream.read(false) {
                    while let Ok(Some(_)) = chunks.next(usize::MAX) {}
                    let _ = chunks.finalize();
                }
            }
            return;
        };
        if s.recv.fin {
            return;
        }
        let limits = tailfec::Limits::of(&self.shared.cfg);
        let mut fec = (tail_fec && !done).then(|| {
            self.fec_rx
                .entry(id)
                .or_insert_with(|| tailfec::TailRecv::new(limits))
        });
        if let (Some(f), Some((_, len))) = (fec.as_mut(), s.recv.msg) {
            if !f.has_window() {
                let k = self.shared.cfg.tail_fec_packets;
                f.set_window(len, len - tailfec::tail_len(len, k, mtu) as u64);
            }
        }
        let Ok(mut chunks) = stream.read(!tail_fec) else {
            return;
        };
        let limits = self
            .shared
            .real_mode()
            .map(|r| (r.max_message_bytes, r.max_buffered_bytes));
        let mut over = false;
        loop {
            match chunks.next(usize::MAX) {
                Ok(Some(c)) => {
                    s.recv.got += c.bytes.len() as u64;
                    if let Some(f) = fec.as_mut() {
                        f.add_data(c.offset, &c.bytes);
                    }
                    if let Some((max_message, max_buffered)) = limits {
                        self.buffered += c.bytes.len() as u64;
                        if s.recv.got > max_message || self.buffered > max_buffered {
                            over = true;
                            break;
                        }
                        s.recv.buf.extend_from_slice(&c.bytes);
                    }
                }
                Ok(None) => {
                    s.recv.fin = true;
                    break;
                }
                Err(_) => break,
            }
        }
        let _ = chunks.finalize();
        if over {
            self.counters.protocol_errors += 1;
            self.close(now, real::ERROR_TOO_LARGE, "message over the limit");
            return;
        }
        if limits.is_some() && s.recv.fin && s.recv.msg.is_none() {
            // The FIN delimits the message: a response on our request's stream is the request's id
            // with the low bit set, anything else is named by its stream.
            let msg = match &s.send {
                Some(x) if s.rpc => x.msg | 1,
                _ => u64::from(id),
            };
            s.recv.msg = Some((msg, s.recv.got));
        }
        if self.side == Side::Client && self.counters.first_bytes == 0 && s.recv.got > 0 {
            self.counters.first_bytes = 1;
            self.counters.first_byte_ns = now.saturating_sub(self.start).0;
        }
        if s.recv.fin {
            self.fec_rx.remove(&id);
            self.received(now, id);
        } else if tail_fec && !done {
            self.try_fec(now, id);
        }
    }

    /// A stream's receive side is complete (or was just framed): report the message, end the record.
    pub(super) fn received(&mut self, now: Time, id: StreamId) {
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let (Some(_), true, false) = (s.recv.msg, s.recv.fin, s.recv.reported) else {
            return;
        };
        self.deliver(now, id);
    }

    /// Reports a stream's message (complete, or rebuilt from its tail parity) and ends its record.
    pub(super) fn deliver(&mut self, now: Time, id: StreamId) {
        let excluded = self.excluded_host_delay();
        let Some(s) = self.streams.get_mut(&id) else {
            return;
        };
        let Some((msg, len)) = s.recv.msg else {
            return;
        };
        s.recv.reported = true;
        if self.shared.real_mode().is_some() {
            self.inbox.insert(msg, std::mem::take(&mut s.recv.buf));
        }
        self.events.push_back(AppEvent::MessageReceived { msg });
        if id.dir() == Dir::Bi && id.initiator() != self.side {
            self.requests_in.insert(msg, id);
        }
        if s.rpc {
            let rec = StreamRecord {
                id: id.index(),
                // Without the host's own delay, when asked to (`exclude_host_delay`).
                start: s.counted_from(excluded).min(now),
                end: now,
                // Rebuilt from the parity, the message is complete before all its bytes arrived.
                total_bytes: s.recv.got.max(len),
            };
            self.counters.streams_completed += 1;
            self.counters.stream_ns += now.saturating_sub(s.opened).0;
            if let Some(req) = s.send.as_ref().map(|x| x.msg) {
                self.requests_out.remove(&req);
            }
            if self.shared.cfg.migration.enabled && self.monitor.record(&rec) {
                self.migrate(now);
            }
        }
        self.gc(id);
    }

    pub(super) fn report_framed_late(&mut self, now: Time) {
        while let Some(id) = self.framed_late.pop() {
            self.received(now, id);
        }
    }

    /// Drops a stream's state once both of its sides are done.
    fn gc(&mut self, id: StreamId) {
        let Some(s) = self.streams.get(&id) else {
            return;
        };
        let send_done = s.send.as_ref().is_none_or(|x| x.acked);
        let has_recv = id.dir() == Dir::Bi || id.initiator() != self.side;
        let recv_done = !has_recv || s.recv.reported;
        // A peer's request stream stays until our response on it is acknowledged.
        let awaiting_response = id.dir() == Dir::Bi && id.initiator() != self.side && s.send.is_none();
        if send_done && recv_done && !awaiting_response {
            self.streams.remove(&id);
        }
    }

    pub(super) fn accept(&mut self, now: Time, dir: Dir) {
        loop {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let Some(id) = conn.streams().accept(dir) else {
                return;
            };
            let k = dir as usize;
            self.accepted[k] = self.accepted[k].max(id.index() + 1);
            let msg = self.expect[k].get(id.index() as usize).copied();
            self.streams.insert(
                id,
                StreamState {
                    opened: now,
                    host_delay_at_open: self.excluded_host_delay(),
                    send: None,
                    recv: RecvSide {
                        msg,
                        ..RecvSide::default()
                    },
                    rpc: false,
                },
            );
            self.read(now, id);
        }
    }

    /// Bytes of the connection's packets declared lost so far.
    pub(super) fn lost_bytes(&self) -> u64 {
        self.conn
            .as_ref()
            .map_or(0, |(_, conn)| conn.stats().path.lost_bytes)
    }

    pub(super) fn acked(&mut self, id: StreamId) {
        let lost_now = self.lost_bytes();
        let Some(send) = self.streams.get_mut(&id).and_then(|s| s.send.as_mut()) else {
            return;
        };
        if send.acked {
            return;
        }
        send.acked = true;
        let stats = send.stats(lost_now);
        self.events
            .push_back(AppEvent::MessageAcked { msg: send.msg, stats });
        if self.shared.real_mode().is_some() {
            if self.acked_stats.len() == ACKED_STATS {
                self.acked_stats.pop_front();
            }
            self.acked_stats.push_back((send.msg, stats));
        }
        self.gc(id);
    }

    /// The connection is over: every message not yet acknowledged failed, and stream state goes.
    pub(super) fn fail_all(&mut self) {
        let lost_now = self.lost_bytes();
        let mut failed: Vec<(StreamId, MsgId, MessageStats)> = self
            .streams
            .iter()
            .filter_map(|(&id, s)| {
                let x = s.send.as_ref().filter(|x| !x.acked)?;
                Some((id, x.msg, x.stats(lost_now)))
            })
            .collect();
        failed.sort_unstable_by_key(|f| f.0);
        let queued = self.pending.drain(..).map(|(msg, len, _, _)| {
            let stats = MessageStats {
                sent_bytes: len,
                ..MessageStats::default()
            };
            (msg, stats)
        });
        for (msg, stats) in failed.into_iter().map(|(_, m, st)| (m, st)).chain(queued) {
            self.events.push_back(AppEvent::MessageFailed { msg, stats });
        }
        self.streams.clear();
        self.fec_rx.clear();
        self.repairs_due.clear();
        self.buffered = self.inbox.values().map(|b| b.len() as u64).sum();
    }

    /// The server refused our 0-RTT data: quinn has dropped the streams we opened (and what we
    /// wrote on them) and will number new ones from 0 again. Re-open them in the same order, so they
    /// get the same ids, and write their messages again as 1-RTT data; what the application framed on
    /// them (the expected responses) stays.
    pub(super) fn zero_rtt_rejected(&mut self) {
        let ours: Vec<StreamId> = self
            .streams
            .keys()
            .copied()
            .filter(|id| id.initiator() == self.side)
            .collect();
        for id in ours {
            let Some((_, conn)) = self.conn.as_mut() else {
                return;
            };
            let reopened = conn.streams().open(id.dir());
            let Some(mut s) = self.streams.remove(&id) else {
                continue;
            };
            if let Some(x) = s.send.as_mut() {
                x.written = 0;
                x.finished = false;
                x.acked = false;
                x.repair_queued = false;
            }
            self.repairs_due.retain(|r| r.0 != id);
            self.fec_rx.remove(&id);
            s.recv.got = 0;
            s.recv.fin = false;
            match reopened {
                Some(new) => {
                    // Same id: quinn restarts numbering and we re-open in id order.
                    debug_assert_eq!(new, id);
                    if let Some(x) = s.send.as_ref() {
                        if id.dir() == Dir::Bi {
                            self.requests_out.insert(x.msg, new);
                        }
                    }
                    self.streams.insert(new, s);
                    self.write(new);
                }
                None => {
                    // The new stream limit is below the remembered one: queue it like a new message.
                    if let Some(x) = s.send {
                        self.requests_out.remove(&x.msg);
                        self.pending.push_back((x.msg, x.len, id.dir(), x.data));
                    }
                }
            }
        }
    }

    /// Queues a message for a stream of its own: bidirectional for a request (its response comes
    /// back on it), unidirectional otherwise.
    pub(super) fn queue_message(
        &mut self,
        now: Time,
        msg: MsgId,
        len_bytes: u64,
        dir: Dir,
        data: Option<Vec<u8>>,
    ) {
        self.pending.push_back((msg, len_bytes, dir, data));
        self.open_pending(now);
        self.process(now);
    }

    /// Frames the peer's next stream of kind `dir` (peers open streams in the order their
    /// application sends, so the k-th framed message is on the peer's k-th stream).
    pub(super) fn expect_on(&mut self, dir: Dir, msg: MsgId, len_bytes: u64) {
        // On real sockets a message is its stream, delimited by the FIN: nothing to frame.
        if self.shared.real_mode().is_some() {
            return;
        }
        let k = dir as usize;
        let idx = self.expect[k].len() as u64;
        self.expect[k].push((msg, len_bytes));
        let id = StreamId::new(self.peer_side(), dir, idx);
        if let Some(s) = self.streams.get_mut(&id) {
            s.recv.msg = Some((msg, len_bytes));
            if s.recv.fin {
                self.framed_late.push(id);
            }
        }
    }
}
