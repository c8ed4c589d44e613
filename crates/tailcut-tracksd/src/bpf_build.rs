//! Building BPF programs on the machine that loads them: the C source is compiled by the machine's
//! clang against its libbpf headers into a private temporary folder, removed once the object is
//! loaded. A missing tool is then an error of the run that needs BPF, with the package to install,
//! not of every build. Used by the agent's tc-BPF tap and the testbed's DCTCP.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// libbpf's helper definitions, which every program includes.
pub const LIBBPF_HEADER: &str = "/usr/include/bpf/bpf_helpers.h";

/// Checks that clang and the libbpf headers are there; `what` names the feature in the error.
pub fn toolchain(what: &str) -> Result<(), String> {
    match Command::new("clang")
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => {}
        r => {
            return Err(format!(
            "{what} unavailable: cannot run clang, which compiles its BPF program (Debian package clang): {}",
            match r {
                Ok(o) => String::from_utf8_lossy(&o.stderr).trim().to_string(),
                Err(e) => e.to_string(),
            }
        ))
        }
    }
    if !Path::new(LIBBPF_HEADER).exists() {
        return Err(format!(
            "{what} unavailable: {LIBBPF_HEADER} is missing (Debian package libbpf-dev)"
        ));
    }
    Ok(())
}

/// Compiles BPF C `source` to an object `out` (`-O2 -g -target bpf`, BTF included), with `defines`
/// as `-D` arguments.
pub fn compile_bpf(source: &Path, out: &Path, defines: &[String], what: &str) -> Result<(), String> {
    let mut cmd = Command::new("clang");
    cmd.args(["-O2", "-g", "-target", "bpf", "-Wall"])
        .arg(format!("-I/usr/include/{}-linux-gnu", std::env::consts::ARCH));
    for d in defines {
        cmd.arg(format!("-D{d}"));
    }
    cmd.arg("-c").arg(source).arg("-o").arg(out);
    clang(&mut cmd, what)
}

/// Runs a clang command; the error carries clang's message.
pub fn clang(cmd: &mut Command, what: &str) -> Result<(), String> {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("{what}: cannot run clang (Debian package clang): {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{what}: clang failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

/// A new folder only this user can read, under the temporary directory, named after `tag`.
pub fn private_dir(tag: &str) -> Result<PathBuf, String> {
    use std::os::unix::fs::DirBuilderExt;
    let base = std::env::temp_dir();
    for n in 0..1000 {
        let p = base.join(format!("tailcut-{tag}-{}-{n}", std::process::id()));
        // mkdir never follows a planted symlink: an existing path is an error, and we try the next.
        match std::fs::DirBuilder::new().mode(0o700).create(&p) {
            Ok(()) => return Ok(p),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(format!("{tag}: cannot create {}: {e}", p.display())),
        }
    }
    Err(format!("{tag}: no free folder name under {}", base.display()))
}
