//! IPv6 addresses under the shim's 32-bit address type. The unchanged `Tracks` shim keys flows on
//! `Addr(u32)` (the simulator's hosts); on a real host an IPv6 connection's addresses are given
//! small ids instead, and the agent maps them back to build the spoofed ACK and the BPF tap's keys.
//!
//! Ids are taken from 0.0.0.0/8 (1 to 2^24 - 1), addresses that never occur as the source or
//! destination of a TCP packet on the wire (RFC 1122 Sec. 3.2.1.3: "this host on this network", a
//! source only while a host learns its address), so an id never equals a real IPv4 address.
//!
//! The table is bounded: when full, the least recently seen address gives its id to the new one. A
//! shim flow still holding the old id would then name the wrong peer; with the default capacity (two
//! addresses per shim flow, plus room) this only happens to a flow idle for longer than every other
//! address took to appear, and such a flow has nothing in flight to spoof for.

use std::collections::HashMap;
use tailcut_proto::Addr;

/// Ids are in 0.0.0.0/8: the top byte is zero.
const ID_LIMIT: u32 = 1 << 24;

pub struct V6Addrs {
    ids: HashMap<[u8; 16], u32>,
    /// Per id: the address and when it was last seen (a counter of lookups).
    addrs: HashMap<u32, ([u8; 16], u64)>,
    next: u32,
    capacity: usize,
    clock: u64,
    evicted: u64,
}

impl V6Addrs {
    /// A table of at most `capacity` addresses (at least 2, at most 2^24 - 1).
    pub fn new(capacity: usize) -> V6Addrs {
        V6Addrs {
            ids: HashMap::new(),
            addrs: HashMap::new(),
            next: 1,
            capacity: capacity.clamp(2, (ID_LIMIT - 1) as usize),
            clock: 0,
            evicted: 0,
        }
    }

    /// Whether `a` is an id of this kind rather than an IPv4 address.
    pub fn is_id(a: Addr) -> bool {
        a.0 != 0 && a.0 < ID_LIMIT
    }

    /// The id of `addr`, given a new one if needed.
    pub fn id(&mut self, addr: [u8; 16]) -> Addr {
        self.clock += 1;
        if let Some(&id) = self.ids.get(&addr) {
            if let Some(e) = self.addrs.get_mut(&id) {
                e.1 = self.clock;
            }
            return Addr(id);
        }
        let id = if self.ids.len() >= self.capacity {
            // O(capacity), paid only by a new address arriving at a full table.
            let (&victim, &(old, _)) = self
                .addrs
                .iter()
                .min_by_key(|(id, (_, seen))| (*seen, **id))
                .expect("a full table has entries");
            self.ids.remove(&old);
            self.evicted += 1;
            victim
        } else {
            let id = self.next;
            self.next += 1;
            id
        };
        self.ids.insert(addr, id);
        self.addrs.insert(id, (addr, self.clock));
        Addr(id)
    }

    /// The address with id `id`, if the table holds it.
    pub fn addr(&self, id: Addr) -> Option<[u8; 16]> {
        self.addrs.get(&id.0).map(|e| e.0)
    }

    /// Addresses held.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Ids reassigned because the table was full.
    pub fn evicted(&self) -> u64 {
        self.evicted
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn a(n: u8) -> [u8; 16] {
        let mut x = [0u8; 16];
        x[0] = 0xfd;
        x[15] = n;
        x
    }

    #[test]
    fn ids_are_stable_distinct_and_never_ipv4_addresses() {
        let mut t = V6Addrs::new(8);
        let (x, y) = (t.id(a(1)), t.id(a(2)));
        assert_ne!(x, y);
        assert_eq!(t.id(a(1)), x);
        assert!(V6Addrs::is_id(x) && V6Addrs::is_id(y));
        assert!(!V6Addrs::is_id(Addr(0x0a00_0001)), "10.0.0.1 is an IPv4 address");
        assert!(!V6Addrs::is_id(Addr(0)));
        assert_eq!(t.addr(x), Some(a(1)));
        assert_eq!(t.addr(Addr(0x0a00_0001)), None);
    }

    #[test]
    fn a_full_table_reassigns_the_least_recently_seen_id() {
        let mut t = V6Addrs::new(2);
        let x = t.id(a(1));
        let y = t.id(a(2));
        t.id(a(1));
        // a(2) is the least recently seen: a(3) takes its id.
        let z = t.id(a(3));
        assert_eq!(z, y);
        assert_eq!((t.addr(x), t.addr(z)), (Some(a(1)), Some(a(3))));
        assert_eq!((t.len(), t.evicted()), (2, 1));
        assert_eq!(
            t.id(a(2)),
            x,
            "a(2) comes back under the least recently seen id, a(1)'s"
        );
    }
}
