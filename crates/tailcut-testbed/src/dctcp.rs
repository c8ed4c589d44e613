//! DCTCP for the testbed's hosts: these kernels have no `tcp_dctcp`, so a BPF struct_ops congestion
//! control (`bpf/dctcp.bpf.c`) is compiled, registered for the run and unregistered after it
//! (`docs/testbed.md`, "DCTCP").
//!
//! Both C files are built at run time with the machine's clang against its libbpf headers, into a
//! private temporary folder: the BPF object needs the run's gain `g` and a free CC name, and building
//! on the machine that loads it keeps a missing tool an error of the run ("DCTCP unavailable: ...")
//! rather than of the build. The loader holds the registration through a BPF link and is tied to the
//! calling thread, so the CC goes when the run ends, and when the emulator is killed.

use serde::{Deserialize, Serialize};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use tailcut_proto::ConfigError;
use tailcut_tracksd::bpf_build;

/// What `[testbed] congestion_control` names the BPF DCTCP by.
pub const CONFIG_NAME: &str = "dctcp";
/// The name the CC registers under, if it is free. Others get a digit appended (`tailcut_dctcp1`...).
pub const BASE_NAME: &str = "tailcut_dctcp";
/// RFC 8257 Sec. 4.2's recommended gain, the simulator's default too.
pub const DEFAULT_G: f64 = 1.0 / 16.0;
/// Alternative names tried when `tailcut_dctcp` is taken by another run.
const OTHER_NAMES: u32 = 9;
/// `g` is compiled in as a multiple of 2^-16 (`TAILCUT_DCTCP_G` in the BPF program).
const G_ONE: f64 = 65536.0;

const BPF_SOURCE: &str = include_str!("../bpf/dctcp.bpf.c");
const LOADER_SOURCE: &str = include_str!("../bpf/dctcp_loader.c");
const KERNEL_BTF: &str = "/sys/kernel/btf/vmlinux";
const AVAILABLE_CCS: &str = "/proc/sys/net/ipv4/tcp_available_congestion_control";
/// The loader's exit status when the name is taken.
const EXIT_NAME_TAKEN: i32 = 3;

/// The BPF program's counters over every connection that used the CC during its registration.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DctcpStats {
    /// Connections that started with the CC.
    pub connections: u64,
    /// Observation windows completed (one alpha update each, RFC 8257 Sec. 3.3).
    pub windows: u64,
    /// Of those, windows with at least one segment acknowledged with ECE.
    pub windows_marked: u64,
    /// Alpha updates that left alpha strictly between 0 and 1.
    pub alpha_inside: u64,
    /// Window reductions on ECE (entries into the kernel's CWR state).
    pub ece_reductions: u64,
    /// Of those, reductions that kept more than half the window (alpha < 1): what Reno never does.
    pub gentle_reductions: u64,
    /// Reductions for loss (fast recovery or timeout), which halve as Reno does.
    pub loss_reductions: u64,
    /// Reductions undone as spurious.
    pub undos: u64,
    /// Receiver side: flips of the CE state of arriving data.
    pub ce_changes: u64,
    /// Receiver side: delayed ACKs sent with the old ECE value before a flip.
    pub acks_flushed: u64,
    /// Sum of the alphas computed, in units of 2^-20 (see [`DctcpStats::mean_alpha`]).
    pub alpha_sum: u64,
}

impl DctcpStats {
    /// Mean of the alphas computed at the ends of windows, over every connection; `None` before the
    /// first window.
    pub fn mean_alpha(&self) -> Option<f64> {
        (self.windows > 0).then(|| self.alpha_sum as f64 / f64::from(1u32 << 20) / self.windows as f64)
    }
}

/// Checks `g` (the simulator's `congestion_control.g`, in (0, 1]) and returns it in the BPF program's
/// fixed point. The error is the value's (an empty path): the caller names the field.
pub fn g_fixed(g: f64) -> Result<u32, ConfigError> {
    if !(g > 0.0 && g <= 1.0) {
        return Err(ConfigError::new("", format!("must be in (0, 1], got {g}")));
    }
    Ok(((g * G_ONE).round() as u32).max(1))
}

/// Why DCTCP cannot run on this machine, or `Ok`. Cheap: no compilation.
pub fn available() -> Result<(), String> {
    let btf = std::fs::read(KERNEL_BTF).map_err(|e| {
        format!("DCTCP unavailable: the kernel exposes no BTF at {KERNEL_BTF} ({e}); it needs CONFIG_DEBUG_INFO_BTF")
    })?;
    if !contains(&btf, b"bpf_struct_ops_tcp_congestion_ops\0") {
        return Err(
            "DCTCP unavailable: this kernel cannot take BPF TCP congestion controls (no \
             bpf_struct_ops_tcp_congestion_ops in its BTF; needs CONFIG_BPF_JIT and CONFIG_BPF_SYSCALL, Linux >= 5.6; \
             struct_ops links need Linux >= 6.4)"
                .into(),
        );
    }
    bpf_build::toolchain("DCTCP")
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    hay.windows(needle.len()).any(|w| w == needle)
}

/// Whether a CC called `name` is registered now (by anyone).
pub fn registered(name: &str) -> bool {
    std::fs::read_to_string(AVAILABLE_CCS).is_ok_and(|s| s.split_whitespace().any(|n| n == name))
}

/// A registered DCTCP. Dropping it unregisters the CC (the loader sees its stdin close); a killed
/// emulator takes the loader with it, and the kernel drops the link with the loader's fds.
pub struct Dctcp {
    name: String,
    child: Child,
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
}

impl Dctcp {
    /// Builds and registers the CC with gain `g`, under `tailcut_dctcp` or, if another run holds that
    /// name, the first free of `tailcut_dctcp1`..`9`. Call it from a thread that outlives the run
    /// (PR_SET_PDEATHSIG is per thread).
    pub fn load(g: f64) -> Result<Dctcp, String> {
        let g = g_fixed(g).map_err(|e| format!("DCTCP gain g: {}", e.reason))?;
        available()?;
        let dir = bpf_build::private_dir("dctcp")?;
        let result = Self::build_and_load(&dir, g);
        // The running loader needs neither its binary nor the object any more; removing them now
        // leaves nothing on disk even if the emulator is killed.
        let _ = std::fs::remove_dir_all(&dir);
        result
    }

    fn build_and_load(dir: &Path, g: u32) -> Result<Dctcp, String> {
        let write = |name: &str, text: &str| {
            std::fs::write(dir.join(name), text)
                .map_err(|e| format!("DCTCP: {}: {e}", dir.join(name).display()))
        };
        write("dctcp.bpf.c", BPF_SOURCE)?;
        write("dctcp_loader.c", LOADER_SOURCE)?;
        let loader = dir.join("dctcp_loader");
        bpf_build::clang(
            Command::new("clang")
                .args(["-O2", "-Wall", "-o"])
                .arg(&loader)
                .arg(dir.join("dctcp_loader.c"))
                .arg("-lbpf"),
            "DCTCP loader (needs libbpf-dev)",
        )?;
        let names = std::iter::once(BASE_NAME.to_string())
            .chain((1..=OTHER_NAMES).map(|i| format!("{BASE_NAME}{i}")));
        for name in names {
            if registered(&name) {
                continue;
            }
            let obj = dir.join(format!("{name}.o"));
            bpf_build::compile_bpf(
                &dir.join("dctcp.bpf.c"),
                &obj,
                &[
                    format!("TAILCUT_DCTCP_NAME=\"{name}\""),
                    format!("TAILCUT_DCTCP_G={g}"),
                ],
                "DCTCP BPF program",
            )?;
            match start_loader(&loader, &obj)? {
                Some((child, stdin, stdout)) => {
                    return Ok(Dctcp {
                        name,
                        child,
                        stdin: Some(stdin),
                        stdout,
                    })
                }
                // Registered by another run between our check and our load.
                None => continue,
            }
        }
        Err(format!(
            "DCTCP: {BASE_NAME} and {BASE_NAME}1..{OTHER_NAMES} are all registered: {OTHER_NAMES} other runs use DCTCP"
        ))
    }

    /// The name the CC is registered under: what `TCP_CONGESTION` takes and returns.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// The BPF program's counters so far.
    pub fn stats(&mut self) -> Result<DctcpStats, String> {
        let stdin = self.stdin.as_mut().ok_or("DCTCP: unloaded")?;
        stdin
            .write_all(b"stats\n")
            .and_then(|()| stdin.flush())
            .map_err(|e| format!("DCTCP loader: {e}"))?;
        let mut line = String::new();
        self.stdout
            .read_line(&mut line)
            .map_err(|e| format!("DCTCP loader: {e}"))?;
        serde_json::from_str(&line).map_err(|e| format!("DCTCP loader: stats '{}': {e}", line.trim()))
    }
}

impl Drop for Dctcp {
    fn drop(&mut self) {
        // End of input: the loader closes its link, which unregisters the CC, and exits.
        drop(self.stdin.take());
        let _ = self.child.wait();
    }
}

type Running = (Child, ChildStdin, BufReader<ChildStdout>);

/// Starts the loader and waits for "ready". `None` when the name was taken.
fn start_loader(loader: &Path, obj: &Path) -> Result<Option<Running>, String> {
    let mut child = tailcut_sys::spawn::spawn_tied_to_thread(
        Command::new(loader)
            .arg(obj)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped()),
    )
    .map_err(|e| format!("DCTCP: cannot start the loader: {e}"))?;
    let stdin = child.stdin.take().expect("piped");
    let mut stdout = BufReader::new(child.stdout.take().expect("piped"));
    let mut line = String::new();
    let _ = stdout.read_line(&mut line);
    if line.trim() == "ready" {
        // Nothing else is written to stderr after "ready"; a full pipe cannot block the loader.
        return Ok(Some((child, stdin, stdout)));
    }
    drop(stdin);
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    let status = child.wait().map_err(|e| format!("DCTCP loader: {e}"))?;
    if status.code() == Some(EXIT_NAME_TAKEN) {
        return Ok(None);
    }
    Err(format!(
        "DCTCP: the kernel refused the BPF congestion control ({status}): {}",
        err.trim()
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gain_maps_to_the_programs_fixed_point_and_rejects_what_is_not_a_gain() {
        assert_eq!(g_fixed(DEFAULT_G), Ok(4096));
        assert_eq!(g_fixed(1.0), Ok(65536));
        assert_eq!(g_fixed(1e-9), Ok(1), "a tiny gain stays a gain");
        for bad in [0.0, -0.1, 1.5, f64::NAN] {
            assert!(g_fixed(bad).unwrap_err().reason.contains("(0, 1]"), "{bad}");
        }
    }

    #[test]
    fn names_fit_the_kernels_limit() {
        // TCP_CA_NAME_MAX is 16 bytes with the terminating NUL.
        assert!(format!("{BASE_NAME}{OTHER_NAMES}").len() <= 15);
    }

    #[test]
    fn stats_parse_the_loaders_line() {
        let line = r#"{"connections":2,"windows":40,"windows_marked":30,"alpha_inside":39,"ece_reductions":12,"gentle_reductions":11,"loss_reductions":0,"undos":0,"ce_changes":50,"acks_flushed":3,"alpha_sum":10485760}"#;
        let s: DctcpStats = serde_json::from_str(line).unwrap();
        assert_eq!((s.connections, s.ece_reductions), (2, 12));
        assert_eq!(s.mean_alpha(), Some(0.25));
    }
}
