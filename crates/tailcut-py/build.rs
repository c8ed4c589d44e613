//! Bakes the commit this extension is built from into it (`tailcut._core.build_commit()`), so that
//! every output names the code that made it (python/tailcut/provenance.py). `$TAILCUT_COMMIT` wins (a
//! build outside a checkout, such as from an sdist); otherwise `git`, with `+dirty` when tracked files
//! differ from the commit; with neither, nothing is set and the commit reads as unknown.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
}

fn git_commit() -> Option<String> {
    // A new commit moves the branch's ref and rewrites the index; an edit shows in the index once
    // staged. (A rebuild for every unstaged edit would cost more than a stale `+dirty` is worth.)
    let branch = git(&["rev-parse", "--symbolic-full-name", "HEAD"]);
    for name in ["HEAD", "index"].into_iter().chain(branch.as_deref()) {
        if let Some(path) = git(&["rev-parse", "--git-path", name]) {
            println!("cargo:rerun-if-changed={path}");
        }
    }
    let head = git(&["rev-parse", "--short=12", "HEAD"])?;
    let dirty = git(&["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(if dirty { format!("{head}+dirty") } else { head })
}

fn main() {
    println!("cargo:rerun-if-env-changed=TAILCUT_COMMIT");
    let commit = std::env::var("TAILCUT_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(git_commit);
    if let Some(commit) = commit {
        println!("cargo:rustc-env=TAILCUT_COMMIT={commit}");
    }
}
