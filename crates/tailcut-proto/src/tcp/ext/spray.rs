//! Per-packet spraying (`TcpConfig::spray_paths`, CP's out-of-order evaluation): data segment i takes
//! source route `Route::Path(i mod P)`; ACKs and other packets keep the connection's route.

use super::Extension;
use crate::packet::{Packet, Route};
use crate::tcp::endpoint::Conn;
use crate::tcp::sender::Transmission;
use crate::time::Time;

pub(crate) struct Spray {
    paths: u32,
    /// Data segments sent.
    sprayed: u32,
}

impl Spray {
    pub(super) fn new(paths: u32) -> Self {
        Spray { paths, sprayed: 0 }
    }
}

impl Extension for Spray {
    fn on_data_packet(&mut self, _c: &mut Conn, _now: Time, _tx: &Transmission, p: &mut Packet) {
        p.route = Route::Path(self.sprayed % self.paths);
        self.sprayed = self.sprayed.wrapping_add(1);
    }
}
