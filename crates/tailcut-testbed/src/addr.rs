//! The address table: the simulator's `Addr(i)` (one per host NIC, in network order) to an IPv4
//! address and interface name. NIC k of host h is `10.(k+1).hi.lo/16` with `hi.lo` = h + 1, named
//! `tc{k}` inside the host's namespace: every host's k-th NIC is on one /16 (a "plane"), so the
//! connected route sends traffic for a peer's k-th address out of the k-th NIC (what MPTCP subflows
//! over distinct NICs need) without policy routing.

use std::collections::HashMap;
use std::net::Ipv4Addr;
use tailcut_proto::{Addr, ConfigError};
use tailcut_sim::net::Network;

/// Host numbers fit in two octets.
pub const MAX_HOSTS: usize = 65_534;
/// NIC planes fit in the second octet (10.1 .. 10.255).
pub const MAX_NICS: usize = 255;

pub struct AddrTable {
    /// Address index -> (host index, NIC index within the host, IPv4).
    entries: Vec<(usize, usize, Ipv4Addr)>,
    /// IPv4 -> address index; probed per packet, never iterated.
    by_ip: HashMap<u32, Addr>,
}

impl AddrTable {
    /// Errors are at `topology`: a network too large for the address plan.
    pub fn new(net: &Network) -> Result<AddrTable, ConfigError> {
        if net.hosts.len() > MAX_HOSTS {
            return Err(ConfigError::new(
                "topology",
                format!("{} hosts, the testbed supports {MAX_HOSTS}", net.hosts.len()),
            ));
        }
        let mut entries = vec![(0, 0, Ipv4Addr::UNSPECIFIED); net.addrs.len()];
        let mut by_ip = HashMap::new();
        for (h, addrs) in net.host_addrs.iter().enumerate() {
            if addrs.len() > MAX_NICS {
                return Err(ConfigError::new(
                    "topology",
                    format!(
                        "host {h} has {} NICs, the testbed supports {MAX_NICS}",
                        addrs.len()
                    ),
                ));
            }
            for (k, a) in addrs.iter().enumerate() {
                let n = h + 1;
                let ip = Ipv4Addr::new(10, k as u8 + 1, (n >> 8) as u8, n as u8);
                entries[a.0 as usize] = (h, k, ip);
                by_ip.insert(u32::from(ip), *a);
            }
        }
        Ok(AddrTable { entries, by_ip })
    }

    #[inline]
    pub fn lookup(&self, ip: u32) -> Option<Addr> {
        self.by_ip.get(&ip).copied()
    }

    pub fn ip(&self, a: Addr) -> Ipv4Addr {
        self.entries[a.0 as usize].2
    }

    /// The host and NIC index owning `a`.
    pub fn owner(&self, a: Addr) -> (usize, usize) {
        let (h, k, _) = self.entries[a.0 as usize];
        (h, k)
    }

    /// The interface name of NIC `k` inside its host's namespace.
    pub fn ifname(k: usize) -> String {
        format!("tc{k}")
    }

    /// Prefix length of every plane.
    pub const PREFIX: u8 = 16;
}
