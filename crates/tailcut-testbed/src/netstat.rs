//! The kernel's per-namespace protocol counters (/proc/net/snmp and /proc/net/netstat), read from a
//! thread inside the namespace (`nstat` keeps its history per user, not per namespace).

use std::collections::BTreeMap;
use std::io;

/// Counters by `Group.Name`, e.g. `TcpExt.TCPTimeouts`, `IpExt.InCEPkts`, `Udp.InDatagrams`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Netstat(pub BTreeMap<String, u64>);

impl Netstat {
    /// Reads the counters of the calling thread's namespace.
    pub fn read_current() -> io::Result<Netstat> {
        let mut out = BTreeMap::new();
        for file in ["/proc/thread-self/net/snmp", "/proc/thread-self/net/netstat"] {
            parse_into(&std::fs::read_to_string(file)?, &mut out);
        }
        Ok(Netstat(out))
    }

    /// A counter, 0 when the kernel does not report it.
    pub fn get(&self, key: &str) -> u64 {
        self.0.get(key).copied().unwrap_or(0)
    }
}

/// The files pair a header line (`Group: Name1 Name2 ...`) with a value line (`Group: v1 v2 ...`).
fn parse_into(text: &str, out: &mut BTreeMap<String, u64>) {
    let lines: Vec<&str> = text.lines().collect();
    for pair in lines.chunks(2) {
        let [names, values] = pair else { continue };
        let (Some((group, names)), Some((_, values))) = (names.split_once(':'), values.split_once(':'))
        else {
            continue;
        };
        for (n, v) in names.split_whitespace().zip(values.split_whitespace()) {
            // Some values are signed (Tcp MaxConn = -1); those are not counters.
            if let Ok(v) = v.parse() {
                out.insert(format!("{group}.{n}"), v);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_and_value_lines_pair_up() {
        let mut m = BTreeMap::new();
        parse_into("TcpExt: A B\nTcpExt: 1 2\nIpExt: InCEPkts\nIpExt: 7\n", &mut m);
        assert_eq!(m["TcpExt.B"], 2);
        assert_eq!(m["IpExt.InCEPkts"], 7);
    }
}
