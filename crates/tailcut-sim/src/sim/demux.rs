//! Which engine a packet that reaches a host belongs to, by its destination address and port.
//!
//! Ports are allocated per host from 1024 upwards (`Sim::alloc_ports`), so each address keeps a table
//! indexed by port: one look-up per delivered packet instead of hashing the pair (4 instructions per
//! packet-hop on benchmark (a)), and memory that follows the ports in use. A port below 1024 (never
//! allocated) still has its own slot: indices are the port minus 1024, wrapping.

use crate::event::EngineId;

const FIRST_PORT: u16 = 1024;
const NONE: EngineId = EngineId::MAX;

#[derive(Default)]
pub(super) struct Demux {
    by_addr: Vec<Vec<EngineId>>,
}

fn slot(port: u16) -> usize {
    usize::from(port.wrapping_sub(FIRST_PORT))
}

impl Demux {
    /// `e` receives what arrives for `(addr, port)`, replacing any earlier owner (ports wrap).
    pub(super) fn insert(&mut self, addr: u32, port: u16, e: EngineId) {
        let a = addr as usize;
        if self.by_addr.len() <= a {
            self.by_addr.resize_with(a + 1, Vec::new);
        }
        let t = &mut self.by_addr[a];
        let i = slot(port);
        if t.len() <= i {
            t.resize(i + 1, NONE);
        }
        t[i] = e;
    }

    #[inline]
    pub(super) fn get(&self, addr: u32, port: u16) -> Option<EngineId> {
        let e = *self.by_addr.get(addr as usize)?.get(slot(port))?;
        (e != NONE).then_some(e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_owners_by_address_and_port_and_nothing_else() {
        let mut d = Demux::default();
        d.insert(3, 1024, 7);
        d.insert(3, 1026, 8);
        d.insert(0, 80, 9);
        assert_eq!(d.get(3, 1024), Some(7));
        assert_eq!(d.get(3, 1025), None);
        assert_eq!(d.get(3, 1026), Some(8));
        assert_eq!(d.get(3, 1027), None);
        assert_eq!(d.get(0, 80), Some(9));
        assert_eq!(d.get(0, 1024), None);
        assert_eq!(d.get(1, 1024), None);
        assert_eq!(d.get(99, 1024), None);
        // A wrapped port changes hands.
        d.insert(3, 1024, 11);
        assert_eq!(d.get(3, 1024), Some(11));
    }
}
