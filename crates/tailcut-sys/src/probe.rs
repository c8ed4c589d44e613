//! Whether this machine can run a testbed: root (or CAP_NET_ADMIN), network namespaces, TUN.

/// Set to `1` (CI does) to make an unusable machine a test failure instead of a skip.
pub const REQUIRE_ENV: &str = "TAILCUT_REQUIRE_REALNET";

/// `Ok` if a namespace with a TUN device can be made here, else the reason it cannot.
pub fn probe() -> Result<(), String> {
    std::thread::spawn(|| -> Result<(), String> {
        crate::netns::unshare_new().map_err(|e| {
            format!("cannot create a network namespace (unshare(CLONE_NEWNET): {e}); root or CAP_SYS_ADMIN is needed")
        })?;
        crate::tun::open("probe0").map_err(|e| format!("cannot create a TUN device (/dev/net/tun: {e})"))?;
        std::process::Command::new("ip")
            .arg("-V")
            .output()
            .map_err(|e| format!("cannot run `ip` from iproute2: {e}"))?;
        Ok(())
    })
    .join()
    .unwrap_or_else(|_| Err("probe thread panicked".into()))
}

/// The probe's verdict for a test: `true` to run it; `false` to skip it (a reason was printed).
/// Panics when the machine cannot run it and [`REQUIRE_ENV`] is `1`.
pub fn should_run(test: &str) -> bool {
    match probe() {
        Ok(()) => true,
        Err(reason) => {
            if std::env::var(REQUIRE_ENV).as_deref() == Ok("1") {
                panic!("{test}: {REQUIRE_ENV}=1 but this machine cannot run the testbed: {reason}");
            }
            eprintln!("SKIPPED {test}: {reason} (set {REQUIRE_ENV}=1 to fail instead)");
            false
        }
    }
}
