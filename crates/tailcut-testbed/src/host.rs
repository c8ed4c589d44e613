//! One emulated host: an anonymous network namespace with one TUN device per NIC. The namespace is
//! created by `unshare` in a helper thread and held only by file descriptors of this process (the
//! namespace fd and the TUN fds), and its programs die with the thread that started them, so nothing
//! outlives the emulator, whether it exits, panics or is killed.

use crate::netstat::Netstat;
use std::fs::File;
use std::io::{self, Write};
use std::net::Ipv4Addr;
use std::os::fd::{AsFd, OwnedFd};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;

/// How every host's namespace is set up.
#[derive(Clone, Debug)]
pub struct HostSetup {
    /// MTU of every NIC (bytes of IP packet).
    pub mtu: u32,
    /// `(name, value)` sysctls written in each namespace after the defaults below, e.g.
    /// `("net.ipv4.tcp_rto_min_us", "5000")`. Only `net.*` keys exist per namespace.
    pub sysctls: Vec<(String, String)>,
    /// Announce every NIC after the first as an MPTCP `signal` endpoint, and allow up to 8 subflows,
    /// so that Linux MPTCP opens one subflow per NIC pair.
    pub mptcp_endpoints: bool,
    /// Ports of the first address announced as MPTCP `signal` endpoints (ADD_ADDR with a port): a
    /// client joins one more subflow per port, from its one address to this one, on its own 5-tuple,
    /// which the fabric's ECMP hashes onto its own path. This is how the simulator's MPTCP finds paths
    /// on hosts with one NIC (its `subflows`), and how Linux MPTCP gets them without a second NIC.
    pub mptcp_join_ports: Vec<u16>,
    /// Packets the kernel may queue on each TUN for the emulator to read (the device's
    /// `txqueuelen`; Linux's default is 500). TUN has no backpressure: when the emulator thread is
    /// descheduled for a few milliseconds a full ring drops packets a real NIC would have held back
    /// (BQL, qdisc), so the default is large and the queueing happens in the host port's model.
    pub tun_queue_packets: u32,
}

impl Default for HostSetup {
    fn default() -> Self {
        HostSetup {
            mtu: 1500,
            sysctls: Vec::new(),
            mptcp_endpoints: false,
            mptcp_join_ports: Vec::new(),
            tun_queue_packets: 10_000,
        }
    }
}

/// Sysctls every host gets first. The TCP metrics cache would carry RTT, cwnd and reordering from one
/// flow to the next and make runs depend on their order (`docs/testbed.md`); IPv6 is off because the
/// fabric carries IPv4 only and router solicitations would be counted as rejects.
const BASE_SYSCTLS: [(&str, &str); 3] = [
    ("net.ipv4.tcp_no_metrics_save", "1"),
    ("net.ipv6.conf.all.disable_ipv6", "1"),
    ("net.ipv6.conf.default.disable_ipv6", "1"),
];

/// Every NIC plane's addresses (`addr.rs`: NIC k of every host on `10.(k+1).0.0/16`).
const CROSS_PLANE: &str = "10.0.0.0/8";
/// The routing table of a host's NIC k (k >= 1) is this plus k: packets from its address leave by it.
const SOURCE_TABLE: usize = 100;

/// A host's namespace: cheap to clone, usable from any thread.
#[derive(Clone)]
pub struct HostNs {
    pub name: String,
    /// IPv4 address of each NIC, in NIC order.
    pub ips: Vec<Ipv4Addr>,
    ns: Arc<OwnedFd>,
}

impl HostNs {
    /// Creates the namespace and its NICs: returns the host and one TUN file per NIC.
    pub fn create(name: &str, ips: &[Ipv4Addr], setup: &HostSetup) -> io::Result<(HostNs, Vec<File>)> {
        let ips_owned = ips.to_vec();
        let (ns, tuns) = std::thread::scope(|s| {
            s.spawn(|| -> io::Result<(OwnedFd, Vec<File>)> {
                let ns = tailcut_sys::netns::unshare_new()?;
                for (k, v) in BASE_SYSCTLS {
                    match write_sysctl(k, v) {
                        // A kernel built without IPv6 has nothing to turn off.
                        Err(e) if e.kind() == io::ErrorKind::NotFound && k.starts_with("net.ipv6.") => {}
                        r => r?,
                    }
                }
                for (k, v) in &setup.sysctls {
                    write_sysctl(k, v)?;
                }
                let mut tuns = Vec::new();
                let mut batch = String::from("link set dev lo up\n");
                for (k, ip) in ips_owned.iter().enumerate() {
                    let dev = crate::addr::AddrTable::ifname(k);
                    tuns.push(tailcut_sys::tun::open(&dev)?);
                    batch += &format!(
                        "link set dev {dev} mtu {} txqueuelen {} up\n",
                        setup.mtu, setup.tun_queue_packets
                    );
                    batch += &format!("addr add {ip}/{} dev {dev}\n", crate::addr::AddrTable::PREFIX);
                }
                // Another plane's address (a peer with fewer NICs) is reached by the first NIC, and a
                // multi-homed host's packets from its k-th address leave by its k-th NIC, as the
                // simulator's do: without these, a connection bound to a second address to a
                // one-NIC peer went out of the first NIC (the connected route to the peer's plane), and
                // the peer had no route back to the second address at all.
                if !ips_owned.is_empty() {
                    batch += &format!(
                        "route add {CROSS_PLANE} dev {}\n",
                        crate::addr::AddrTable::ifname(0)
                    );
                }
                for (k, ip) in ips_owned.iter().enumerate().skip(1) {
                    let (dev, table) = (crate::addr::AddrTable::ifname(k), SOURCE_TABLE + k);
                    batch += &format!("rule add from {ip} lookup {table}\n");
                    batch += &format!("route add {CROSS_PLANE} dev {dev} table {table}\n");
                }
                if setup.mptcp_endpoints || !setup.mptcp_join_ports.is_empty() {
                    batch += "mptcp limits set subflow 8 add_addr_accepted 8\n";
                }
                if setup.mptcp_endpoints {
                    for (k, ip) in ips_owned.iter().enumerate().skip(1) {
                        let dev = crate::addr::AddrTable::ifname(k);
                        batch += &format!("mptcp endpoint add {ip} dev {dev} signal\n");
                    }
                }
                if let Some(ip) = ips_owned.first() {
                    let dev = crate::addr::AddrTable::ifname(0);
                    for port in &setup.mptcp_join_ports {
                        batch += &format!("mptcp endpoint add {ip} dev {dev} port {port} signal\n");
                    }
                }
                // A child started from this thread is born in its namespace.
                run_ip_batch(&batch)?;
                Ok((ns, tuns))
            })
            .join()
            .map_err(|_| io::Error::other("namespace setup thread panicked"))?
        })?;
        Ok((
            HostNs {
                name: name.to_string(),
                ips: ips.to_vec(),
                ns: Arc::new(ns),
            },
            tuns,
        ))
    }

    /// Moves the calling thread into this host's namespace: sockets it opens afterwards are the
    /// host's.
    pub fn enter(&self) -> io::Result<()> {
        tailcut_sys::netns::enter(self.ns.as_fd())
    }

    /// Runs `f` on a helper thread inside the namespace and returns its result.
    pub fn run<T: Send>(&self, f: impl FnOnce() -> T + Send) -> io::Result<T> {
        std::thread::scope(|s| {
            s.spawn(|| {
                self.enter()?;
                Ok(f())
            })
            .join()
            .map_err(|_| io::Error::other("thread in the host namespace panicked"))?
        })
    }

    /// Starts `cmd` inside the namespace. It is killed when the calling thread exits: start
    /// programs from a thread that outlives them (the emulator's main thread).
    pub fn spawn(&self, cmd: &mut Command) -> io::Result<Child> {
        tailcut_sys::spawn::spawn_in_netns(cmd, self.ns.as_fd())
    }

    /// The namespace's SNMP and TcpExt/IpExt/MPTcpExt counters.
    pub fn netstat(&self) -> io::Result<Netstat> {
        self.run(Netstat::read_current)?
    }

    /// Packets the kernel dropped handing them to each NIC's TUN queue (the emulator did not read
    /// them in time: TUN has no backpressure), in NIC order.
    pub fn tun_tx_drops(&self) -> io::Result<Vec<u64>> {
        let n = self.ips.len();
        self.run(move || -> io::Result<Vec<u64>> {
            let dev = std::fs::read_to_string("/proc/thread-self/net/dev")?;
            (0..n)
                .map(|k| tx_dropped(&dev, &crate::addr::AddrTable::ifname(k)))
                .collect()
        })?
    }

    /// The namespace's inode (`/proc/PID/ns/net` names it as `net:[INODE]`), for leak checks.
    pub fn inode(&self) -> io::Result<u64> {
        use std::os::unix::fs::MetadataExt;
        Ok(File::from(self.ns.try_clone()?).metadata()?.ino())
    }
}

fn write_sysctl(name: &str, value: &str) -> io::Result<()> {
    if !name.starts_with("net.") || name.contains("..") || name.contains('/') {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("sysctl '{name}': only net.* keys are per namespace"),
        ));
    }
    let path = format!("/proc/sys/{}", name.replace('.', "/"));
    std::fs::write(&path, value).map_err(|e| io::Error::new(e.kind(), format!("sysctl {name}={value}: {e}")))
}

fn run_ip_batch(batch: &str) -> io::Result<()> {
    let mut child = Command::new("ip")
        .args(["-batch", "-"])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| io::Error::new(e.kind(), format!("cannot run `ip` (iproute2): {e}")))?;
    child.stdin.take().expect("piped").write_all(batch.as_bytes())?;
    let out = child.wait_with_output()?;
    if !out.status.success() {
        return Err(io::Error::other(format!(
            "ip -batch failed: {}\n{batch}",
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// The transmit `drop` column of `dev` in a /proc/net/dev listing.
fn tx_dropped(listing: &str, dev: &str) -> io::Result<u64> {
    for line in listing.lines() {
        if let Some((name, rest)) = line.split_once(':') {
            if name.trim() == dev {
                // Receive: bytes packets errs drop fifo frame compressed multicast; transmit: bytes
                // packets errs drop ...
                let cols: Vec<&str> = rest.split_whitespace().collect();
                return cols
                    .get(11)
                    .and_then(|c| c.parse().ok())
                    .ok_or_else(|| io::Error::other(format!("/proc/net/dev: bad line for {dev}")));
            }
        }
    }
    Err(io::Error::other(format!("/proc/net/dev: no device {dev}")))
}
