//! The kernel's MTU of the route to each client address a server opened an association from, so
//! that an address is probed (a throwaway socket, `tailcut_sys::pmtu::route_mtu`) once, not for
//! every association it opens: forged openers come as fast as a peer can send them. Peers choose
//! their source addresses, so the table is bounded, forgetting the address probed longest ago.
//! A route's MTU that changes later (a smaller one learnt from ICMP) is not seen for an address
//! already remembered.

use std::collections::{HashMap, VecDeque};
use std::net::{IpAddr, SocketAddr};

/// Addresses remembered: far more client hosts than a server holds associations, in about 300 KB
/// when full.
pub const ROUTE_MTUS_REMEMBERED: usize = 4096;

/// Route MTUs by the client's IP address: the route is the address's, whatever the port (each of
/// a client's associations comes from a new one).
#[derive(Default)]
pub struct RouteMtus {
    mtus: HashMap<IpAddr, u32>,
    /// The remembered addresses, probed longest ago first.
    order: VecDeque<IpAddr>,
}

impl RouteMtus {
    /// The kernel's MTU of the route to `to`, probed only if its address was not; `None` if the
    /// kernel cannot say. A failed probe is not remembered: its cause (no free descriptor) may be
    /// gone by the next association.
    pub fn get(&mut self, to: SocketAddr) -> Option<u32> {
        self.get_or_probe(to, |to| tailcut_sys::pmtu::route_mtu(None, to).ok())
    }

    fn get_or_probe(&mut self, to: SocketAddr, probe: impl FnOnce(SocketAddr) -> Option<u32>) -> Option<u32> {
        let ip = to.ip();
        if let Some(&mtu) = self.mtus.get(&ip) {
            return Some(mtu);
        }
        let mtu = probe(to)?;
        if self.order.len() == ROUTE_MTUS_REMEMBERED {
            if let Some(old) = self.order.pop_front() {
                self.mtus.remove(&old);
            }
        }
        self.order.push_back(ip);
        self.mtus.insert(ip, mtu);
        Some(mtu)
    }
}

#[cfg(test)]
mod tests {
    use super::{RouteMtus, ROUTE_MTUS_REMEMBERED};
    use std::cell::Cell;
    use std::net::{Ipv4Addr, SocketAddr};

    fn addr(host: u32, port: u16) -> SocketAddr {
        SocketAddr::from((Ipv4Addr::from(0x0a00_0000 + host), port))
    }

    #[test]
    fn an_address_is_probed_once_whatever_its_port_and_the_oldest_goes_first() {
        let probes = Cell::new(0);
        let probe = |_| {
            probes.set(probes.get() + 1);
            Some(1500)
        };
        let mut m = RouteMtus::default();
        assert_eq!(m.get_or_probe(addr(0, 1), probe), Some(1500));
        assert_eq!(m.get_or_probe(addr(0, 2), probe), Some(1500));
        assert_eq!(probes.get(), 1);
        // A failed probe is tried again.
        assert_eq!(m.get_or_probe(addr(1, 1), |_| None), None);
        assert_eq!(m.get_or_probe(addr(1, 1), probe), Some(1500));
        assert_eq!(probes.get(), 2);
        // Filling the table forgets the address probed first, and only it.
        for h in 2..=ROUTE_MTUS_REMEMBERED as u32 {
            m.get_or_probe(addr(h, 1), probe);
        }
        assert_eq!(
            (m.mtus.len(), m.order.len()),
            (ROUTE_MTUS_REMEMBERED, ROUTE_MTUS_REMEMBERED)
        );
        let before = probes.get();
        m.get_or_probe(addr(1, 1), probe);
        assert_eq!(probes.get(), before);
        m.get_or_probe(addr(0, 1), probe);
        assert_eq!(probes.get(), before + 1);
    }

    /// The real probe reads loopback's MTU.
    #[test]
    fn the_loopback_route_has_an_mtu() {
        let mut m = RouteMtus::default();
        let lo = SocketAddr::from((Ipv4Addr::LOCALHOST, 9));
        assert!(m.get(lo).is_some_and(|mtu| mtu >= 576));
    }
}
