use super::*;

const BASE: &str = r#"
name = "t"
[topology]
kind = "star"
hosts = 3
[[workload]]
name = "q"
pattern = { kind = "all_to_all" }
fixed = "10KB"
flows = 5
"#;

/// The kernel settings of the file's first scheme, on the stack [`stack`] gives it.
fn kernel_settings(
    exp: &Experiment,
    tb: &TestbedConfig,
) -> Result<(TestbedConfig, Option<f64>), ConfigError> {
    let st = stack(exp, tb, &exp.schemes[0])?;
    scheme_kernel_settings(tb, &exp.schemes[0], &st)
}

fn err(extra: &str) -> String {
    let text = format!("{BASE}{extra}");
    let (exp, tb) = match load(&text) {
        Ok(v) => v,
        Err(e) => return e.to_string(),
    };
    let hosts = Network::build(&topo::build(&exp.topology, &exp.network).unwrap(), 1)
        .hosts
        .len();
    match check(&exp, &tb, hosts) {
        Ok(_) => "no error".into(),
        Err(e) => e.to_string(),
    }
}

#[test]
fn kernel_schemes_and_testbed_section_load() {
    let text = format!(
        "{BASE}[[schemes]]\nname = \"a\"\ntransport = \"tcp\"\n[[schemes]]\nname = \"b\"\ntransport = \"mptcp\"\n\
         [testbed]\nrate_scale = 0.1\nrto_min_us = 5000\nsack = false\nsysctls = {{ \"net.ipv4.tcp_early_retrans\" = \"0\" }}\n"
    );
    let (exp, tb) = load(&text).unwrap();
    assert_eq!(exp.schemes.len(), 2);
    assert_eq!(tb.rate_scale, 0.1);
    let sysctls = tb.host_sysctls();
    assert!(sysctls.contains(&("net.ipv4.tcp_sack".into(), "0".into())));
    assert!(sysctls.contains(&("net.ipv4.tcp_rto_min_us".into(), "5000".into())));
    assert!(sysctls.contains(&("net.ipv4.tcp_early_retrans".into(), "0".into())));
    check(&exp, &tb, 3).unwrap();
}

#[test]
fn what_a_testbed_cannot_run_is_an_error_naming_the_field() {
    // Schemes Linux does not run go to tailcut's engines over UDP, which refuse what sockets cannot
    // give, naming the field.
    let e = err("[[schemes]]\nname = \"r\"\ntransport = \"repflow\"\n");
    assert!(
        e.starts_with("schemes[0].transport: 'repflow' sends a flow on several connections"),
        "{e}"
    );
    let e = err("[[schemes]]\nname = \"p\"\ntransport = \"pfabric\"\n");
    assert!(
        e.starts_with("schemes[0].transport: 'pfabric' needs pFabric's"),
        "{e}"
    );
    let e = err("[[schemes]]\nname = \"h\"\ntransport = \"fuso\"\nparams = { host_delay = { read_after_arrival = \"1us\" } }\n");
    assert!(
        e.starts_with("schemes[0].params.host_delay: the runtime's applications are real"),
        "{e}"
    );
    // CP's own queues without trimming: its switch half is missing.
    let e = err("[[schemes]]\nname = \"c\"\ntransport = \"cp\"\nnetwork = { buffer = \"100KB\" }\n");
    assert!(
        e.starts_with("schemes[0].transport: CP needs switch ports that cut payloads"),
        "{e}"
    );
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\nruntime = [\"tt\"]\n");
    assert!(
        e.starts_with("testbed.runtime[0]: no scheme is named 'tt' (the schemes: t)"),
        "{e}"
    );
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nshim = { kind = \"tracks\" }\n[testbed]\nruntime = [\"t\"]\n");
    assert!(
        e.starts_with("schemes[0].shim: the T-RACKs shim runs beside Linux's TCP"),
        "{e}"
    );
    // In testbed.runtime, tailcut's TCP takes every parameter the kernel's has no setting for.
    assert_eq!(
        err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = { mss_bytes = 1000 }\n[testbed]\nruntime = [\"t\"]\n"),
        "no error"
    );
    let e = err(
        "[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = { min_rto = \"5ms\", mss_bytes = 9000 }\n",
    );
    assert!(e.starts_with("schemes[0].params.mss_bytes"), "{e}");
    assert!(e.contains("or name the scheme in testbed.runtime"), "{e}");
    // A link faster than the fabric forwards in real time here, before any namespace is made.
    let fast = BASE.replace("hosts = 3", "hosts = 3\nhost_rate = \"10Gbps\"");
    let (exp, tb) = load(&format!("{fast}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n")).unwrap();
    let e = check(&exp, &tb, 3).unwrap_err().to_string();
    assert!(
        e.starts_with("topology: link h0-sw0 runs at 10Gbps after testbed.rate_scale = 1, faster than"),
        "{e}"
    );
    assert!(
        e.contains("testbed.max_link_rate = 2Gbps") && e.contains("(e.g. 0.20)"),
        "{e}"
    );
    let (exp, tb) = load(&format!(
        "{fast}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\nrate_scale = 0.1\n"
    ))
    .unwrap();
    check(&exp, &tb, 3).unwrap();
    // TCP + TLS 1.3 runs on Linux with rustls over each connection of its own.
    assert_eq!(
        err("[[schemes]]\nname = \"t\"\ntransport = \"tcp_tls13\"\n"),
        "no error"
    );
    let e =
        err("[[schemes]]\nname = \"t\"\ntransport = \"tcp_tls13\"\nparams = { tls_client_hello = 300 }\n");
    assert!(
        e.starts_with("schemes[0].params.tls_client_hello: the testbed runs the kernel's"),
        "{e}"
    );
    let pooled = BASE.replace("flows = 5", "flows = 5\nconnection = \"persistent\"");
    let (exp, tb) = load(&format!(
        "{pooled}[[schemes]]\nname = \"t\"\ntransport = \"tcp_tls13\"\n"
    ))
    .unwrap();
    let e = check(&exp, &tb, 3).unwrap_err().to_string();
    assert!(
        e.starts_with("workload[0].connection: 'tcp_tls13' opens a TLS connection per flow"),
        "{e}"
    );
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\nmax_hosts = 2\n");
    assert!(e.starts_with("topology: 3 hosts"), "{e}");
    let e =
        err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\ncongestion_control = \"vegas\"\n");
    assert!(
        e.starts_with("testbed.congestion_control: 'vegas' is neither built into"),
        "{e}"
    );
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\nrate_scal = 0.1\n");
    assert!(e.starts_with("testbed.rate_scal: unknown field"), "{e}");
    assert!(e.contains("expected one of `rate_scale`"), "{e}");
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\nsysctls = { \"kernel.pid_max\" = \"1\" }\n");
    assert!(e.starts_with("testbed.sysctls.kernel.pid_max"), "{e}");
}

#[test]
fn mptcp_subflows_map_to_port_endpoints_on_one_nic_hosts() {
    let scheme = |params: &str| {
        let text =
            format!("{BASE}[[schemes]]\nname = \"m\"\ntransport = \"mptcp\"\nparams = {{ {params} }}\n");
        let (exp, tb) = load(&text).unwrap();
        let s = exp.schemes[0].clone();
        // Star hosts have one NIC.
        mptcp_join_ports(&tb, &s, 1).map_err(|e| e.to_string())
    };
    // The simulator's default of 4 subflows: three ports after the agents'.
    assert_eq!(scheme("").unwrap(), vec![5501, 5502, 5503]);
    assert_eq!(scheme("subflows = 1").unwrap(), Vec::<u16>::new());
    assert_eq!(scheme("subflows = 2, coupled = false").unwrap(), vec![5501]);
    assert!(scheme("subflows = 10")
        .unwrap_err()
        .starts_with("params.subflows: must be an integer in 1..=9"));
    assert!(scheme("coupled = true")
        .unwrap_err()
        .starts_with("params.coupled: upstream Linux MPTCP"));
    // The scheme layer reads the entry first, as the simulator does: tcp has no subflows at all.
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = { subflows = 2 }\n");
    assert!(e.starts_with("schemes[0].params.subflows: unknown field"), "{e}");
    // A parameter of the simulator's TCP that the kernel has no setting for.
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = { dupack_threshold = 5 }\n");
    assert!(
        e.starts_with("schemes[0].params.dupack_threshold: the testbed runs the kernel's tcp"),
        "{e}"
    );
}

#[test]
fn a_tracks_shim_takes_the_real_host_defaults_and_the_hosts_sack() {
    let text = format!(
        "{BASE}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nshim = {{ kind = \"tracks\", alpha = 4 }}\n\
         [[schemes]]\nname = \"plain\"\ntransport = \"tcp\"\n[testbed]\nsack = false\n"
    );
    let (exp, tb) = load(&text).unwrap();
    check(&exp, &tb, 3).unwrap();
    let c = tb.shims[0].as_ref().expect("scheme 0 has a shim");
    assert_eq!(c.alpha, 4.0, "the file's key");
    assert_eq!(
        c.rtt_source,
        tailcut_proto::tracks::RttSource::SeqAck,
        "a real host's default"
    );
    assert!(!c.sack, "the hosts' tcp_sack");
    assert_eq!(tb.shims[1], None);
    let bad = |shim: &str| {
        let text = format!("{BASE}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nshim = {shim}\n");
        load(&text).unwrap_err().to_string()
    };
    let e = bad("{ kind = \"tracks\", alpah = 4 }");
    assert!(e.starts_with("schemes[0].shim.") && e.contains("alpah"), "{e}");
    let e = bad("{ kind = \"other\" }");
    assert!(e.starts_with("schemes[0].shim.kind"), "{e}");
    let e = bad("{ kind = \"tracks\", alpha = -1 }");
    assert!(e.starts_with("schemes[0].shim"), "{e}");
}

#[test]
fn persistent_flows_share_connections_round_robin_per_pair() {
    let text = BASE.replace(
        "flows = 5",
        "flows = 40\nrate_per_host = 100\nconnection = \"persistent\"\nconnections_per_pair = 2\n\
         [[workload]]\nname = \"p\"\npattern = { kind = \"all_to_all\" }\nfixed = \"1KB\"\nflows = 5\n\
         rate_per_host = 100",
    );
    let (exp, tb) = load(&format!("{text}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n")).unwrap();
    check(&exp, &tb, 3).unwrap();
    let info = HostInfo {
        rack: vec![0; 3],
        nic_rate_bps: vec![1_000_000_000; 3],
    };
    let flows = workload::generate(&exp.workload, &info, exp.seed).unwrap();
    let conns = persistent_connections(&exp, &flows);
    let mut seen: BTreeMap<(u32, u32), Vec<u32>> = BTreeMap::new();
    for (f, c) in flows.iter().zip(&conns) {
        if f.component == 1 {
            assert_eq!(*c, None, "a per-flow component opens its own connections");
            continue;
        }
        seen.entry((f.src, f.dst))
            .or_default()
            .push(c.expect("persistent"));
    }
    let mut all = BTreeMap::new();
    for (pair, cs) in &seen {
        // Alternating between the pair's two connections, in start order.
        for (i, c) in cs.iter().enumerate() {
            assert_eq!(*c, cs[i % 2], "{pair:?}: {cs:?}");
            if let Some(other) = all.insert(*c, *pair) {
                assert_eq!(other, *pair, "connection {c} belongs to one pair");
            }
        }
        if cs.len() > 1 {
            assert_ne!(cs[0], cs[1]);
        }
    }
    assert!(seen.values().any(|cs| cs.len() > 2));
}

#[test]
fn rate_scale_applies_to_links_and_degrade_faults() {
    let (exp, _) = load(&format!(
        "{BASE}[[faults]]\nkind = \"degrade\"\nlink = {{ between = [\"h0\", \"sw0\"] }}\nrate = \"500Mbps\"\n\
         [[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n"
    ))
    .unwrap();
    let mut spec = topo::build(&exp.topology, &exp.network).unwrap();
    let mut faults = exp.faults.clone();
    scale_rates(&mut spec, &mut faults, 0.1);
    assert!(spec.links.iter().all(|l| l.rate_bps == 100_000_000));
    let FaultConfig::Degrade { rate, .. } = &faults[0] else {
        panic!()
    };
    assert_eq!(rate.0, 50_000_000);
}

#[test]
fn min_rto_and_ecn_params_become_sysctls() {
    let (exp, tb) = load(&format!(
        "{BASE}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = {{ min_rto = \"5ms\", ecn = true }}\n"
    ))
    .unwrap();
    check(&exp, &tb, 3).unwrap();
    let (k, dctcp_g) = kernel_settings(&exp, &tb).unwrap();
    assert_eq!(k.rto_min_us, Some(5000));
    assert!(k.ecn);
    assert_eq!(dctcp_g, None);
}

/// The simulator's NewReno of the papers' baselines (no SACK, DupThresh recovery) is Linux with
/// `tcp_sack = 0` and RACK and TLP off, and the scheme's T-RACKs shim follows its SACK setting.
#[test]
fn sack_and_loss_detection_params_become_sysctls() {
    let (exp, tb) = load(&format!(
        "{BASE}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = {{ sack = false, loss_detection = \"dupthresh\" }}\n\
         shim = {{ kind = \"tracks\" }}\n"
    ))
    .unwrap();
    check(&exp, &tb, 3).unwrap();
    let (k, _) = kernel_settings(&exp, &tb).unwrap();
    let sysctls = k.host_sysctls();
    for (key, v) in [
        ("net.ipv4.tcp_sack", "0"),
        ("net.ipv4.tcp_recovery", "0"),
        ("net.ipv4.tcp_early_retrans", "0"),
    ] {
        assert!(
            sysctls.contains(&(key.into(), v.into())),
            "{key} = {v}: {sysctls:?}"
        );
    }
    assert!(!tb.shims[0].as_ref().unwrap().sack);
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = { loss_detection = \"fack\" }\n");
    assert!(e.starts_with("schemes[0].params.loss_detection"), "{e}");
}

#[test]
fn a_dctcp_scheme_runs_the_bpf_dctcp_with_the_simulators_gain() {
    let settings = |params: &str, testbed: &str| {
        let (exp, tb) = load(&format!(
            "{BASE}[[schemes]]\nname = \"d\"\ntransport = \"dctcp\"\nparams = {{ {params} }}\n{testbed}"
        ))
        .unwrap();
        check(&exp, &tb, 3)?;
        kernel_settings(&exp, &tb)
    };
    let (k, g) = settings("min_rto = \"5ms\"", "").unwrap();
    assert_eq!(k.congestion_control.as_deref(), Some("dctcp"));
    assert_eq!((k.rto_min_us, g), (Some(5000), Some(1.0 / 16.0)));
    let (_, g) = settings(
        "congestion_control = { kind = \"dctcp\", g = 0.125 }, ecn = true",
        "[testbed]\ncongestion_control = \"dctcp\"\n",
    )
    .unwrap();
    assert_eq!(g, Some(0.125));
    let e = settings("congestion_control = { kind = \"dctcp\", g = 2.0 }", "")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("schemes[0].params.congestion_control.g: must be in (0, 1]"),
        "{e}"
    );
    let e = settings("congestion_control = { kind = \"new_reno\" }", "")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("schemes[0].params.congestion_control.kind"), "{e}");
    let e = settings("congestion_control = { kind = \"dctcp\", gain = 0.1 }", "")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("schemes[0].params.congestion_control"), "{e}");
    assert!(e.contains("gain"), "{e}");
    let e = settings("ecn = false", "").unwrap_err().to_string();
    assert!(
        e.starts_with("schemes[0].params.ecn: DCTCP needs ecn = true"),
        "{e}"
    );
    let e = settings("mss_bytes = 9000", "").unwrap_err().to_string();
    assert!(e.starts_with("schemes[0].params.mss_bytes"), "{e}");
    assert!(e.contains("or name the scheme in testbed.runtime"), "{e}");
    let e = settings("", "[testbed]\ncongestion_control = \"cubic\"\n")
        .unwrap_err()
        .to_string();
    assert!(e.starts_with("schemes[0].transport: 'dctcp'"), "{e}");
    assert!(e.contains("cubic"), "{e}");
}

#[test]
fn testbed_dctcp_puts_the_bpf_dctcp_under_linux_tcp() {
    let (exp, tb) = load(&format!(
        "{BASE}[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n[testbed]\ncongestion_control = \"dctcp\"\n"
    ))
    .unwrap();
    check(&exp, &tb, 3).unwrap();
    let (k, g) = kernel_settings(&exp, &tb).unwrap();
    assert_eq!(
        (k.congestion_control.as_deref(), g),
        (Some("dctcp"), Some(1.0 / 16.0))
    );
    // The sim's congestion_control param stays an error for tcp: the file would not mean the same thing.
    let e = err("[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\nparams = { congestion_control = { kind = \"dctcp\" }, ecn = true }\n");
    assert!(e.starts_with("schemes[0].params.congestion_control"), "{e}");
}

#[test]
fn pcap_table_turns_capture_on_with_bounds() {
    const TCP: &str = "[[schemes]]\nname = \"t\"\ntransport = \"tcp\"\n";
    let (_, tb) = load(&format!("{BASE}{TCP}[testbed]\n")).unwrap();
    assert_eq!(tb.pcap, None, "no capture unless asked");
    let (_, tb) = load(&format!("{BASE}{TCP}[testbed.pcap]\n")).unwrap();
    assert_eq!(tb.pcap, Some(crate::config::PcapConfig::default()));
    let (_, tb) = load(&format!(
        "{BASE}{TCP}[testbed.pcap]\nsnaplen = 96\nmax_bytes = \"10MB\"\n"
    ))
    .unwrap();
    let p = tb.pcap.unwrap();
    assert_eq!((p.snaplen, p.max_bytes.0), (96, 10_000_000));
    for (bad, field) in [
        ("snaplen = 0", "testbed.pcap.snaplen"),
        ("max_bytes = 10", "testbed.pcap.max_bytes"),
        ("flows = [1]", "testbed.pcap"),
    ] {
        let e = load(&format!("{BASE}{TCP}[testbed.pcap]\n{bad}\n"))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with(field), "{e}");
    }
    // Names that differ only in what a file name cannot hold would share files.
    let e = err(
        "[[schemes]]\nname = \"a/b\"\ntransport = \"tcp\"\n[[schemes]]\nname = \"a b\"\ntransport = \"tcp\"\n\
         [testbed.pcap]\n",
    );
    assert!(e.starts_with("testbed.pcap: schemes 'a/b' and 'a b'"), "{e}");
    assert_eq!(capture_prefix("linux-cubic"), "linux-cubic.");
}

/// TLS and DCTCP on the kernel are read from the resolved scheme (its engine, its TCP's congestion
/// control), and a scheme on the runtime is never carried over the kernel's TLS.
#[test]
fn the_resolved_scheme_says_tls_and_dctcp() {
    let of = |transport: &str, testbed: &str| {
        let (exp, tb) = load(&format!(
            "{BASE}[[schemes]]\nname = \"s\"\ntransport = \"{transport}\"\n{testbed}"
        ))
        .unwrap();
        let st = stack(&exp, &tb, &exp.schemes[0]).unwrap();
        (st.stack.clone(), st.over_tls(), st.kernel_dctcp(&exp.schemes[0]))
    };
    assert_eq!(of("tcp", ""), (Stack::Kernel, false, false));
    assert_eq!(of("dctcp", ""), (Stack::Kernel, false, true));
    assert_eq!(of("tcp_tls13", ""), (Stack::Kernel, true, false));
    assert_eq!(of("dctcp_tls13", ""), (Stack::Kernel, true, true));
    assert_eq!(
        of("dctcp", "[testbed]\nruntime = [\"s\"]\n"),
        (Stack::Runtime, false, false)
    );
    assert_eq!(of("fuso", ""), (Stack::Runtime, false, false));
}

/// The runtime's plan comes from the scheme [`stack`] resolved: DCQUIC's paths are its host's NICs and
/// it gets a certificate; CloudBurst paces at its host's NIC unless its entry gives `nic_rate`; CP's
/// fabric trims.
#[test]
fn the_runtime_plan_follows_the_resolved_scheme() {
    let plan = |scheme: &str| {
        let (exp, tb) = load(&format!("{BASE}[[schemes]]\nname = \"s\"\n{scheme}\n")).unwrap();
        check(&exp, &tb, 3).unwrap();
        let st = stack(&exp, &tb, &exp.schemes[0]).unwrap();
        assert_eq!(st.stack, Stack::Runtime);
        runtime_plan(&exp, &tb, &exp.schemes[0], &st, 5).unwrap()
    };
    let p = plan("transport = \"dcquic\"");
    assert!(p.per_nic_paths && p.tls.is_some() && !p.nic_rate_from_host && !p.trims);
    let p = plan("transport = \"cloudburst\"");
    assert!(p.nic_rate_from_host && !p.per_nic_paths && p.tls.is_none());
    let p = plan("transport = \"cloudburst\"\nparams = { nic_rate = \"1Gbps\" }");
    assert!(!p.nic_rate_from_host);
    assert_eq!(p.params.get("nic_rate").and_then(|v| v.as_str()), Some("1Gbps"));
    let p = plan("transport = \"cp\"");
    assert!(p.trims && !p.per_nic_paths && !p.nic_rate_from_host);
}

/// The reconnecting clients run on Linux's TCP or DCTCP, with the base's kernel settings and the
/// scheme's own `reconnect_after` (its default when the entry leaves it); one-way flows, which the
/// simulator's client never stops watching, are refused at the workload's field.
#[test]
fn reconnect_schemes_run_on_the_kernel_with_their_base_and_reconnect_after() {
    let rpc = "[[workload]]\nname = \"c\"\npattern = { kind = \"all_to_all\" }\nfixed = \"10KB\"\n\
               request_bytes = \"1KB\"\nflows = 5\n";
    let one = |scheme: &str, params: &str| {
        let text = format!(
            "name = \"t\"\n[topology]\nkind = \"star\"\nhosts = 3\n{rpc}[[schemes]]\nname = \"s\"\n\
             transport = \"{scheme}\"\nparams = {{ {params} }}\n"
        );
        let (exp, tb) = load(&text).unwrap();
        check(&exp, &tb, 3).map(|_| (exp, tb))
    };
    let (exp, tb) = one(
        "dctcp_reconnect",
        "min_rto = \"200ms\", reconnect_after = \"250ms\"",
    )
    .unwrap();
    let s = &exp.schemes[0];
    let st = stack(&exp, &tb, s).unwrap();
    assert_eq!(st.stack, Stack::Kernel);
    assert_eq!(st.reconnect_after(), Some(Dur::from_millis(250)));
    let (k, g) = scheme_kernel_settings(&tb, s, &st).unwrap();
    assert_eq!(k.congestion_control.as_deref(), Some(crate::dctcp::CONFIG_NAME));
    assert_eq!((k.rto_min_us, g), (Some(200_000), Some(crate::dctcp::DEFAULT_G)));
    let (exp, tb) = one("tcp_reconnect", "").unwrap();
    let s = &exp.schemes[0];
    let st = stack(&exp, &tb, s).unwrap();
    assert_eq!(st.reconnect_after(), Some(Dur::from_millis(1000)));
    assert_eq!(
        scheme_kernel_settings(&tb, s, &st).unwrap().1,
        None,
        "no DCTCP under tcp_reconnect"
    );
    let (exp, tb) = one("dctcp", "").unwrap();
    assert_eq!(stack(&exp, &tb, &exp.schemes[0]).unwrap().reconnect_after(), None);
    let e = one("tcp_reconnect", "reconnect_after = \"0s\"")
        .unwrap_err()
        .to_string();
    assert!(
        e.starts_with("schemes[0].params.reconnect_after: must be > 0"),
        "{e}"
    );
    let e = one("tcp_reconnect", "max_rto = \"1s\"").unwrap_err().to_string();
    assert!(e.starts_with("schemes[0].params.max_rto"), "{e}");
    // BASE's component is one-way.
    let e = err("[[schemes]]\nname = \"r\"\ntransport = \"dctcp_reconnect\"\n");
    assert!(
        e.starts_with("workload[0].request_bytes: 'dctcp_reconnect' is an RPC client"),
        "{e}"
    );
}
