//! `doctor`: what the real-network tools need from this machine, checked one by one, each with what
//! needs it and how to get it. It reuses the checks the tools make before they run (`probe`,
//! `dctcp::available`, the BPF toolchain), so that doctor and a run never disagree.

use std::path::Path;
use std::process::{Command, Stdio};

/// One requirement: its verdict, what needs it, and the fix when it is missing.
pub struct Check {
    pub name: &'static str,
    pub needed_by: &'static str,
    /// Whether `tailcut testbed run` of a plain TCP experiment cannot go without it.
    pub required: bool,
    pub result: Result<String, String>,
    pub fix: &'static str,
}

fn tool(program: &str, arg: &str) -> Result<String, String> {
    match Command::new(program).arg(arg).stdin(Stdio::null()).output() {
        Ok(o) if o.status.success() => {
            let text = if o.stdout.is_empty() { o.stderr } else { o.stdout };
            Ok(String::from_utf8_lossy(&text)
                .lines()
                .next()
                .unwrap_or("")
                .trim()
                .to_string())
        }
        Ok(o) => Err(format!(
            "`{program} {arg}` failed: {}",
            String::from_utf8_lossy(&o.stderr).trim()
        )),
        Err(e) => Err(format!("cannot run {program}: {e}")),
    }
}

fn root() -> Result<String, String> {
    // The effective uid from /proc: no unsafe call for one number. It says why the namespace check
    // below fails when it does.
    let status = std::fs::read_to_string("/proc/self/status").map_err(|e| e.to_string())?;
    let euid = status
        .lines()
        .find_map(|l| l.strip_prefix("Uid:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .unwrap_or("?");
    if euid == "0" {
        Ok("running as root".into())
    } else {
        Err(format!("effective uid {euid}, not root"))
    }
}

fn file(path: &str, what: &str) -> Result<String, String> {
    if Path::new(path).exists() {
        Ok(path.to_string())
    } else {
        Err(format!("{path} is missing ({what})"))
    }
}

fn mptcp() -> Result<String, String> {
    match std::fs::read_to_string("/proc/sys/net/mptcp/enabled") {
        Ok(v) if v.trim() == "1" => Ok("net.mptcp.enabled = 1".into()),
        Ok(v) => Err(format!("net.mptcp.enabled = {}", v.trim())),
        Err(e) => Err(format!(
            "no MPTCP in this kernel (/proc/sys/net/mptcp/enabled: {e})"
        )),
    }
}

/// Every check, in the order a user fixes them.
pub fn checks() -> Vec<Check> {
    vec![
        Check {
            name: "root",
            needed_by: "testbed, tracks agent",
            required: true,
            result: root(),
            fix: "run as root (sudo), or in a container with CAP_NET_ADMIN and CAP_SYS_ADMIN",
        },
        Check {
            name: "namespaces + TUN + ip",
            needed_by: "testbed",
            required: true,
            result: crate::probe::probe().map(|()| "a network namespace with a TUN device was made".into()),
            fix: "root; /dev/net/tun (modprobe tun; docker: --device /dev/net/tun --cap-add NET_ADMIN); \
                  apt-get install iproute2",
        },
        Check {
            name: "clang + libbpf headers",
            needed_by: "testbed DCTCP, tracks agent's tc-BPF tap",
            required: false,
            result: tailcut_tracksd::bpf_build::toolchain("BPF").map(|()| "clang and libbpf-dev found".into()),
            fix: "apt-get install clang libbpf-dev",
        },
        Check {
            name: "BPF congestion control",
            needed_by: "testbed DCTCP (transport = \"dctcp\")",
            required: false,
            result: crate::dctcp::available().map(|()| "kernel BTF has struct_ops TCP congestion control".into()),
            fix: "a kernel with CONFIG_DEBUG_INFO_BTF, CONFIG_BPF_JIT (Linux >= 6.4), plus clang and libbpf-dev",
        },
        Check {
            name: "MPTCP",
            needed_by: "testbed mptcp and fuso's kernel baseline",
            required: false,
            result: mptcp(),
            fix: "sysctl -w net.mptcp.enabled=1 (Linux >= 5.6 with CONFIG_MPTCP)",
        },
        Check {
            name: "iptables (NFQUEUE)",
            needed_by: "tracks agent's NFQUEUE backend",
            required: false,
            result: tool("iptables", "-V"),
            fix: "apt-get install iptables",
        },
        Check {
            name: "kernel BTF",
            needed_by: "tracks agent's tc-BPF tap",
            required: false,
            result: file("/sys/kernel/btf/vmlinux", "CONFIG_DEBUG_INFO_BTF"),
            fix: "a kernel built with CONFIG_DEBUG_INFO_BTF",
        },
        Check {
            name: "tshark",
            needed_by: "tailcut trace's pcap check (optional)",
            required: false,
            result: tool("tshark", "--version"),
            fix: "apt-get install tshark",
        },
    ]
}

/// Prints the checks; `Err` when a required one failed (the message says how many).
pub fn run(args: &[String]) -> Result<(), String> {
    if let Some(extra) = args.first() {
        return Err(format!("doctor: unexpected argument '{extra}' (it takes none)"));
    }
    let all = checks();
    for c in &all {
        match &c.result {
            Ok(detail) => println!("ok       {:<24} {detail}", c.name),
            Err(why) => {
                let mark = if c.required { "MISSING" } else { "missing" };
                println!("{mark:<8} {:<24} {why}", c.name);
                println!("{:<8} {:<24} needed by: {}; fix: {}", "", "", c.needed_by, c.fix);
            }
        }
    }
    let missing = all.iter().filter(|c| c.required && c.result.is_err()).count();
    if missing > 0 {
        return Err(format!(
            "{missing} requirement(s) of the testbed missing: fix the MISSING lines above"
        ));
    }
    let optional = all.iter().filter(|c| c.result.is_err()).count();
    if optional > 0 {
        println!("the testbed runs here; {optional} optional piece(s) missing: see the lines above");
    } else {
        println!("everything the real-network tools use is here");
    }
    Ok(())
}
