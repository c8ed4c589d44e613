//! The agent's iptables and ip6tables rules: its own two chains per family (data on OUTPUT, ACKs on
//! INPUT) jumped to from the built-in chains, so install and removal never touch anyone else's
//! rules.
//!
//! - `--queue-bypass`: with no process bound to the queue the kernel accepts the packets, so a dead
//!   agent passes traffic.
//! - Only the configured interface is matched: the agent's own spoofed ACKs arrive on `lo` and are
//!   not queued again.
//! - gamma is enforced in the kernel with `connbytes` (bytes of both directions): packets of flows
//!   past it never reach user space. The shim then sees no more ACKs of such a flow; if it spoofs an
//!   ACK for it, that ACK is below the sender's snd_una and Linux ignores it as an old ACK.
//!
//! A crashed agent leaves its rules behind (harmless thanks to the bypass); the next start removes
//! them first, and `tailcut-tracksd --uninstall` removes them by hand.

use std::io;
use std::process::Command;

/// What the rules match and where they send it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Rules {
    pub interface: String,
    pub queue: u16,
    /// Kernel cut-off of tracked flows in bytes (both directions, headers included); `None` = all.
    pub gamma_bytes: Option<u64>,
    /// The iptables program (`iptables`, or a path).
    pub iptables: String,
    /// The ip6tables program, for the same rules on IPv6.
    pub ip6tables: String,
}

impl Rules {
    fn chain(&self, dir: &str) -> String {
        format!("TAILCUT_TRACKS_{dir}_{}", self.queue)
    }

    /// The programs of both families.
    fn programs(&self) -> [&str; 2] {
        [&self.iptables, &self.ip6tables]
    }

    fn run(prog: &str, args: &[&str]) -> io::Result<bool> {
        let out = Command::new(prog)
            .arg("-w")
            .args(args)
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run `{prog}`: {e}")))?;
        Ok(out.status.success())
    }

    fn must(prog: &str, args: &[&str]) -> io::Result<()> {
        let out = Command::new(prog)
            .arg("-w")
            .args(args)
            .output()
            .map_err(|e| io::Error::new(e.kind(), format!("cannot run `{prog}`: {e}")))?;
        if out.status.success() {
            Ok(())
        } else {
            Err(io::Error::other(format!(
                "`{prog} {}` failed: {}",
                args.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )))
        }
    }

    /// The two rule specifications: (built-in chain, own chain, match arguments).
    fn specs(&self) -> [(&'static str, String, Vec<String>); 2] {
        let mut tail: Vec<String> = vec!["-p".into(), "tcp".into()];
        if let Some(g) = self.gamma_bytes {
            tail.extend(
                [
                    "-m",
                    "connbytes",
                    "--connbytes",
                    &format!("0:{g}"),
                    "--connbytes-dir",
                    "both",
                ]
                .map(String::from),
            );
            tail.extend(["--connbytes-mode", "bytes"].map(String::from));
        }
        tail.extend(
            [
                "-j",
                "NFQUEUE",
                "--queue-num",
                &self.queue.to_string(),
                "--queue-bypass",
            ]
            .map(String::from),
        );
        let with = |flag: &str| {
            let mut v = vec![flag.to_string(), self.interface.clone()];
            v.extend(tail.iter().cloned());
            v
        };
        [
            ("OUTPUT", self.chain("OUT"), with("-o")),
            ("INPUT", self.chain("IN"), with("-i")),
        ]
    }

    /// Removes the jumps and chains of a previous run with the same queue (after a crash), then
    /// installs fresh ones.
    pub fn install(&self) -> io::Result<()> {
        self.remove()?;
        let installed = self.programs().into_iter().try_for_each(|prog| {
            for (builtin, chain, spec) in self.specs() {
                Self::must(prog, &["-N", &chain])?;
                let mut args = vec!["-A", &chain];
                args.extend(spec.iter().map(String::as_str));
                Self::must(prog, &args)?;
                Self::must(prog, &["-I", builtin, "-j", &chain])?;
            }
            Ok(())
        });
        if installed.is_err() {
            // Nothing half-installed: the first family's rules go if the second's fail.
            let _ = self.remove();
        }
        installed
    }

    /// Removes the jumps and the chains of both families; absent ones are not an error.
    pub fn remove(&self) -> io::Result<()> {
        for prog in self.programs() {
            for (builtin, chain, _) in self.specs() {
                // A crash between two installs could leave two jumps: delete until none is left.
                while Self::run(prog, &["-D", builtin, "-j", &chain])? {}
                let _ = Self::run(prog, &["-F", &chain])?;
                let _ = Self::run(prog, &["-X", &chain])?;
            }
        }
        Ok(())
    }
}
