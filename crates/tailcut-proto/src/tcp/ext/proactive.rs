//! Proactive (Flach et al., SIGCOMM'13, Sec. 3): every data packet goes out twice, the copy right
//! after the original; the copy's bytes are redundant. Transport `proactive`.

use super::Extension;
use crate::packet::Packet;
use crate::tcp::endpoint::Conn;
use crate::tcp::ledger::Charge;
use crate::tcp::sender::Transmission;
use crate::time::Time;

#[derive(Default)]
pub(crate) struct Proactive {
    /// The copy of the data packet just sent, due next.
    copy: Option<Packet>,
}

impl Extension for Proactive {
    fn on_data_packet(&mut self, c: &mut Conn, _now: Time, tx: &Transmission, p: &mut Packet) {
        let end = tx.start + u64::from(tx.len_bytes);
        c.sender.ledger.charge_bytes(tx.start, end, Charge::Redundant);
        let st = &mut c.sender.stats;
        st.data_segments_sent += 1;
        st.payload_bytes_sent += u64::from(tx.len_bytes);
        self.copy = Some(*p);
    }

    fn poll_transmit(&mut self, _c: &mut Conn, _now: Time) -> Option<(Packet, Option<u64>)> {
        self.copy.take().map(|p| (p, None))
    }
}
