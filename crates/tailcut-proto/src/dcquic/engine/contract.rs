//! The [`Engine`] contract for [`DcquicEngine`]: packets in and out, timers, events, and the
//! application's sends and framing.

use super::*;

impl DcquicEngine {
    /// Keeps a stateless datagram quinn wrote to `scratch` (a refused handshake's close, a version
    /// negotiation, a reset) for the next `poll_transmit`: on real sockets only, at most
    /// [`STATELESS_QUEUE`] at once.
    fn stateless_out(&mut self, t: &quinn_proto::Transmit) {
        if self.shared.real_mode().is_some() && self.stateless.len() < STATELESS_QUEUE {
            let n = t.size.min(self.scratch.len());
            self.stateless
                .push_back((t.destination, self.scratch[..n].to_vec()));
        }
    }

    /// The packet of a datagram of `size` bytes to `to`.
    fn datagram(&self, to: SocketAddr, ecn: Option<EcnCodepoint>, size: usize) -> Packet {
        let tuple = FiveTuple {
            src: self.tuple.src,
            dst: addr_of(to),
            src_port: self.tuple.src_port,
            dst_port: to.port(),
            proto: Proto::Udp,
        };
        let ecn = match ecn {
            Some(EcnCodepoint::Ect0) | Some(EcnCodepoint::Ect1) if self.shared.cfg.ecn => Ecn::Ect0,
            Some(EcnCodepoint::Ce) => Ecn::Ce,
            _ => Ecn::NotEct,
        };
        Packet {
            tuple,
            size_bytes: size as u32 + self.shared.cfg.header_bytes,
            ecn,
            header: Header::Datagram {
                payload_len: size as u32,
            },
            ..Packet::default()
        }
    }

    /// Queues a message as the application asked (`data`: its bytes, on real sockets).
    pub(super) fn send(
        &mut self,
        now: Time,
        how: Outgoing,
        msg: MsgId,
        len_bytes: u64,
        data: Option<Vec<u8>>,
    ) {
        match how {
            Outgoing::Message => self.queue_message(now, msg, len_bytes, Dir::Uni, data),
            Outgoing::Request => self.queue_message(now, msg, len_bytes, Dir::Bi, data),
            Outgoing::Response { request } => {
                if let Some(id) = self.requests_in.remove(&request) {
                    let lost_at_open = self.lost_bytes();
                    if let Some(s) = self.streams.get_mut(&id) {
                        s.send = Some(SendSide {
                            msg,
                            len: len_bytes,
                            lost_at_open,
                            data,
                            ..SendSide::default()
                        });
                        self.write(id);
                        self.process(now);
                        return;
                    }
                }
                // The request's stream is gone: the response travels on a stream of its own.
                self.queue_message(now, msg, len_bytes, Dir::Uni, data);
            }
        }
    }
}

impl Engine for DcquicEngine {
    fn send_message(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        self.send(now, Outgoing::Message, msg, len_bytes, None);
    }

    fn send_request(&mut self, now: Time, msg: MsgId, len_bytes: u64) {
        self.send(now, Outgoing::Request, msg, len_bytes, None);
    }

    fn send_response(&mut self, now: Time, request: MsgId, msg: MsgId, len_bytes: u64) {
        self.send(now, Outgoing::Response { request }, msg, len_bytes, None);
    }

    /// The stream carries `data` itself (real sockets, or a simulation checking bytes).
    fn send_bytes(&mut self, now: Time, how: Outgoing, msg: MsgId, data: &[u8]) {
        self.send(now, how, msg, data.len() as u64, Some(data.to_vec()));
    }

    /// On real sockets: the bytes of a message delivered with `MessageReceived`.
    fn take_bytes(&mut self, msg: MsgId) -> Option<Vec<u8>> {
        let b = self.inbox.remove(&msg)?;
        self.buffered = self.buffered.saturating_sub(b.len() as u64);
        Some(b)
    }

    fn expect_message(&mut self, msg: MsgId, len_bytes: u64) {
        self.expect_on(Dir::Uni, msg, len_bytes);
    }

    fn expect_request(&mut self, msg: MsgId, len_bytes: u64) {
        self.expect_on(Dir::Bi, msg, len_bytes);
    }

    fn expect_response(&mut self, request: MsgId, msg: MsgId, len_bytes: u64) {
        if self.shared.real_mode().is_some() {
            return;
        }
        if let Some(&id) = self.requests_out.get(&request) {
            if let Some(s) = self.streams.get_mut(&id) {
                s.recv.msg = Some((msg, len_bytes));
                // A response already complete is reported at the next input (no `now` here).
                if s.recv.fin {
                    self.framed_late.push(id);
                }
                return;
            }
        }
        self.expect_on(Dir::Uni, msg, len_bytes);
    }

    fn handle_packet(&mut self, now: Time, pkt: &Packet, payload: &[u8]) {
        let remote = sock(pkt.tuple.src, pkt.tuple.src_port);
        let ecn = match pkt.ecn {
            Ecn::NotEct => None,
            Ecn::Ect0 => Some(EcnCodepoint::Ect0),
            Ecn::Ce => Some(EcnCodepoint::Ce),
        };
        let data = bytes::BytesMut::from(payload);
        self.scratch.clear();
        match self.endpoint.handle(
            to_instant(self.shared.epoch, now),
            remote,
            None,
            ecn,
            data,
            &mut self.scratch,
        ) {
            Some(DatagramEvent::ConnectionEvent(_, ev)) => {
                if let Some((_, c)) = self.conn.as_mut() {
                    c.handle_event(ev);
                }
            }
            Some(DatagramEvent::NewConnection(incoming)) => {
                if self.conn.is_none() && self.server_cfg.is_some() {
                    self.tuple.dst = pkt.tuple.src;
                    self.tuple.dst_port = pkt.tuple.src_port;
                    // A refused handshake (bad Initial, no common ALPN) leaves the server waiting for a
                    // good one; on real sockets the refusal goes back to the client.
                    match self.endpoint.accept(
                        incoming,
                        to_instant(self.shared.epoch, now),
                        &mut self.scratch,
                        self.server_cfg.clone(),
                    ) {
                        Ok((ch, c)) => self.conn = Some((ch, c)),
                        Err(e) => {
                            self.close_reason = Some(e.cause.to_string());
                            if let Some(t) = e.response {
                                self.stateless_out(&t);
                            }
                        }
                    }
                } else {
                    self.endpoint.ignore(incoming);
                }
            }
            // Stateless responses (version negotiation, resets) do not arise between simulated peers.
            Some(DatagramEvent::Response(t)) => self.stateless_out(&t),
            None => {}
        }
        self.report_framed_late(now);
        self.process(now);
    }

    fn handle_timeout(&mut self, now: Time) {
        self.report_framed_late(now);
        if self.quinn_timeout.is_some_and(|t| t <= now) {
            if let Some((_, c)) = self.conn.as_mut() {
                c.handle_timeout(to_instant(self.shared.epoch, now));
            }
        }
        if self.next_check.is_some_and(|t| t <= now) {
            self.next_check = None;
            self.check_migration(now);
        }
        self.process(now);
    }

    fn poll_transmit(&mut self, now: Time, payload: &mut Vec<u8>) -> Option<Packet> {
        if let Some((to, bytes)) = self.stateless.pop_front() {
            payload.extend_from_slice(&bytes);
            return Some(self.datagram(to, None, bytes.len()));
        }
        let at = to_instant(self.shared.epoch, now);
        let (_, conn) = self.conn.as_mut()?;
        let mut sent = conn.poll_transmit(at, 1, payload);
        if sent.is_none() && !self.repairs_due.is_empty() {
            // quinn has sent what it could of the messages: now their repairs.
            self.send_repairs();
            sent = self.conn.as_mut()?.1.poll_transmit(at, 1, payload);
        }
        let Some(t) = sent else {
            self.refresh_timeout(now);
            return None;
        };
        payload.truncate(t.size);
        Some(self.datagram(t.destination, t.ecn, t.size))
    }

    fn poll_timeout(&self) -> Option<Time> {
        match (self.quinn_timeout, self.next_check) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn poll_event(&mut self) -> Option<AppEvent> {
        self.events.pop_front()
    }

    fn message_stats(&self, msg: MsgId) -> Option<MessageStats> {
        self.streams
            .values()
            .filter_map(|s| s.send.as_ref())
            .find(|x| x.msg == msg)
            .map(|x| {
                let stats = x.stats(self.lost_bytes());
                MessageStats {
                    // Written so far, not the whole message: it did not finish.
                    sent_bytes: stats.sent_bytes - x.len + x.written,
                    ..stats
                }
            })
            .or_else(|| {
                self.pending
                    .iter()
                    .find(|p| p.0 == msg)
                    .map(|_| MessageStats::default())
            })
            .or_else(|| self.acked_stats.iter().rev().find(|a| a.0 == msg).map(|a| a.1))
    }

    fn counters(&self) -> Vec<(&'static str, u64)> {
        let c = self.counters();
        vec![
            ("dcquic_handshakes", c.handshakes),
            ("dcquic_handshake_ns", c.handshake_ns),
            ("dcquic_migrations", c.migrations),
            ("dcquic_rebinds", c.rebinds),
            ("dcquic_streams_completed", c.streams_completed),
            ("dcquic_stream_ns", c.stream_ns),
            ("dcquic_lost_packets", c.lost_packets),
            ("dcquic_0rtt_attempts", c.zero_rtt_attempts),
            ("dcquic_0rtt_accepted", c.zero_rtt_accepted),
            ("dcquic_first_byte_ns", c.first_byte_ns),
            ("dcquic_first_bytes", c.first_bytes),
            ("dcquic_fec_recovered", c.fec_recovered),
            ("dcquic_fec_recovered_bytes", c.fec_recovered_bytes),
            ("dcquic_fec_repairs", c.fec_repairs),
            ("dcquic_fec_repair_bytes", c.fec_repair_bytes),
            ("dcquic_protocol_errors", c.protocol_errors),
        ]
    }
}
