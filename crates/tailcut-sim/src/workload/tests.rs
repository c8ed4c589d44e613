//! Tests of the workload generators.

use super::*;
use tailcut_proto::rng::{self, Stream};
use tailcut_proto::units::Bytes;
use tailcut_proto::{Dur, Time};

fn hosts(n: usize, per_rack: usize, bps: u64) -> HostInfo {
    HostInfo {
        rack: (0..n).map(|i| (i / per_rack) as u32).collect(),
        nic_rate_bps: vec![bps; n],
    }
}

fn component(toml_body: &str) -> WorkloadComponent {
    let text = format!("[[workload]]\n{toml_body}");
    let mut f = WorkloadFile::from_toml(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
    f.workload.remove(0)
}

fn parse_err(text: &str) -> CdfError {
    EmpiricalCdf::parse(text, "t.cdf").unwrap_err()
}

// ---- CDF parsing ----

#[test]
fn cdf_rejects_non_numeric() {
    let e = parse_err("# c\n1 0\nabc 0.5\n2 1\n");
    assert_eq!(e.line, Some(3));
    assert!(e.to_string().starts_with("t.cdf line 3:"), "{e}");
    assert!(e.message.contains("'abc'"), "{e}");
}

#[test]
fn cdf_rejects_wrong_column_count() {
    let e = parse_err("1 0\n2 0.5 7\n3 1\n");
    assert_eq!(e.line, Some(2));
    assert!(e.message.contains("expected 2 columns"), "{e}");
}

#[test]
fn cdf_rejects_probability_outside_unit_interval_and_mentions_percent() {
    let e = parse_err("1 0\n2 50\n3 100\n");
    assert_eq!(e.line, Some(2));
    assert!(
        e.message.contains("outside [0, 1]") && e.message.contains("percent"),
        "{e}"
    );
    assert_eq!(parse_err("1 -0.1\n2 1\n").line, Some(1));
}

#[test]
fn cdf_rejects_decreasing_probability() {
    let e = parse_err("1 0\n2 0.6\n\n3 0.5\n4 1\n");
    assert_eq!(e.line, Some(4));
    assert!(e.message.contains("must not decrease"), "{e}");
}

#[test]
fn cdf_rejects_decreasing_values() {
    let e = parse_err("1 0\n5 0.6\n3 0.7\n4 1\n");
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("values must not decrease"), "{e}");
}

#[test]
fn cdf_requires_last_probability_one() {
    let e = parse_err("1 0\n2 0.5\n3 0.99\n");
    assert_eq!(e.line, Some(3));
    assert!(e.message.contains("last probability must be 1"), "{e}");
    // Within 1e-9 is accepted.
    assert!(EmpiricalCdf::parse("1 0\n2 0.9999999999\n", "t").is_ok());
}

#[test]
fn cdf_accepts_a_byte_order_mark() {
    // Spreadsheet exports write one; the file must read like the same text without it.
    let plain = EmpiricalCdf::parse("10 0\n20 1\n", "t").unwrap();
    assert_eq!(EmpiricalCdf::parse("\u{feff}10 0\n20 1\n", "t").unwrap(), plain);
    let path = std::env::temp_dir().join(format!("tailcut-bom-{}.cdf", std::process::id()));
    std::fs::write(&path, b"\xef\xbb\xbf# size cdf\r\n10 0\r\n20 1\r\n").unwrap();
    let from_file = EmpiricalCdf::from_file(&path);
    std::fs::remove_file(&path).unwrap();
    assert_eq!(from_file.unwrap(), plain);
}

#[test]
fn cdf_requires_two_points() {
    let e = parse_err("# only\n5 1\n");
    assert!(e.message.contains("at least 2 points"), "{e}");
    assert!(parse_err("").message.contains("found 0"));
}

#[test]
fn flow_size_cdf_rejects_negative_sizes_and_missing_files() {
    assert!(FlowSizeCdf::parse("-5 0\n10 1\n", "neg")
        .unwrap_err()
        .message
        .contains(">= 0"));
    let e = FlowSizeCdf::load("/nonexistent/x.cdf").unwrap_err();
    assert!(
        e.to_string().contains("/nonexistent/x.cdf") && e.message.contains("cannot read"),
        "{e}"
    );
}

// ---- builtin distributions ----

#[test]
fn builtin_means_are_the_exact_piecewise_linear_means() {
    // Sum over segments of probability step x midpoint (computed by hand from the files).
    let ws = FlowSizeCdf::load("websearch").unwrap();
    assert!(
        (ws.mean_bytes() - 1_711_250.0).abs() < 1e-3,
        "{}",
        ws.mean_bytes()
    );
    let dm = FlowSizeCdf::load("datamining").unwrap();
    assert!(
        (dm.mean_bytes() - 12_658_207.6).abs() < 1e-3,
        "{}",
        dm.mean_bytes()
    );
    // README: 54% of web-search flows and 82% of data-mining flows are under 100 KB (linear interp.).
    assert!(
        (ws.cdf().cdf(100_000.0) - 0.5417).abs() < 1e-3,
        "{}",
        ws.cdf().cdf(100_000.0)
    );
    assert!(
        (dm.cdf().cdf(100_000.0) - 0.8231).abs() < 1e-3,
        "{}",
        dm.cdf().cdf(100_000.0)
    );
}

#[test]
fn fuso_loss_distribution_matches_its_construction() {
    let c = EmpiricalCdf::fuso_loss_rates();
    assert_eq!(c.min_value(), 0.01);
    assert_eq!(c.max_value(), 0.60);
    assert!((c.cdf(0.10) - 0.81).abs() < 1e-12);
    assert!((c.mean() - 0.0404875).abs() < 1e-9, "{}", c.mean());
}

#[test]
fn atom_at_first_value_is_sampled_and_counted_in_the_mean() {
    let dm = FlowSizeCdf::load("datamining").unwrap();
    assert_eq!(dm.cdf().quantile(0.05), 180.0);
    assert_eq!(dm.cdf().quantile(0.0), 180.0);
    let c = EmpiricalCdf::parse("10 0.5\n20 1\n", "t").unwrap();
    assert_eq!(c.mean(), 0.5 * 10.0 + 0.5 * 15.0);
    assert_eq!(c.quantile(0.25), 10.0);
    assert_eq!(c.quantile(0.75), 15.0);
}

#[test]
fn sampling_matches_the_cdf() {
    let ws = FlowSizeCdf::load("websearch").unwrap();
    let mut r = rng::stream(42, Stream::Workload, 0);
    let n = 200_000;
    let mut xs: Vec<u64> = (0..n).map(|_| ws.sample_bytes(&mut r)).collect();
    xs.sort_unstable();
    for q in [0.1, 0.25, 0.5, 0.53, 0.65, 0.75, 0.9, 0.99] {
        let empirical = xs[(q * n as f64) as usize] as f64;
        // Compare in probability space: F(empirical quantile) ~ q (DKW: 0.005 is > 4 sigma here).
        let f = ws.cdf().cdf(empirical);
        assert!((f - q).abs() < 0.005, "q {q}: F({empirical}) = {f}");
    }
    let mean = xs.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
    assert!((mean / ws.mean_bytes() - 1.0).abs() < 0.03, "mean {mean}");
}

#[test]
fn truncation_conditions_on_the_range() {
    let ws = FlowSizeCdf::load("websearch").unwrap();
    let small = ws.truncated(None, Some(100_000)).unwrap();
    let c = small.cdf();
    assert_eq!(c.max_value(), 100_000.0);
    // Renormalised: F_small(x) = F(x) / F(100 KB) inside the range.
    let f100 = ws.cdf().cdf(100_000.0);
    for x in [5_000.0, 20_000.0, 50_000.0, 90_000.0] {
        assert!((c.cdf(x) - ws.cdf().cdf(x) / f100).abs() < 1e-12, "x {x}");
    }
    let mut r = rng::stream(1, Stream::Workload, 0);
    assert!((0..20_000).all(|_| small.sample_bytes(&mut r) <= 100_000));

    let mid = ws.truncated(Some(100_000), Some(10_000_000)).unwrap();
    assert_eq!(mid.cdf().min_value(), 100_000.0);
    assert_eq!(mid.cdf().max_value(), 10_000_000.0);
    let mut r = rng::stream(2, Stream::Workload, 0);
    assert!((0..20_000)
        .map(|_| mid.sample_bytes(&mut r))
        .all(|x| (100_000..=10_000_000).contains(&x)));

    assert!(ws
        .truncated(Some(40_000_000), None)
        .unwrap_err()
        .contains("no probability mass"));
    // An atom at the bound is kept: data-mining conditioned on <= 180 B is exactly 180 B.
    let dm = FlowSizeCdf::load("datamining")
        .unwrap()
        .truncated(None, Some(180))
        .unwrap();
    assert_eq!(dm.mean_bytes(), 180.0);
}

// ---- generators ----

#[test]
fn poisson_load_gives_the_configured_bytes_per_host() {
    let h = hosts(8, 4, 10_000_000_000);
    let c = component(
        "name = \"bg\"\npattern = { kind = \"all_to_all\" }\ncdf = \"websearch\"\nload = 0.6\nuntil = \"2s\"",
    );
    let flows = generate(&[c], &h, 7).unwrap();
    let secs = 2.0;
    let expected = 0.6 * 10e9 / 8.0 * secs;
    let mut bytes = [0f64; 8];
    for f in &flows {
        assert_ne!(f.src, f.dst);
        bytes[f.src as usize] += f.size_bytes as f64;
    }
    let total: f64 = bytes.iter().sum();
    assert!(
        (total / (8.0 * expected) - 1.0).abs() < 0.05,
        "total {total} vs {}",
        8.0 * expected
    );
    // Flow counts are tight; bytes per host are heavy-tailed, so the per-host check is looser.
    let n_expected = 8.0 * 0.6 * 10e9 / (8.0 * 1_711_250.0) * secs;
    assert!(
        (flows.len() as f64 / n_expected - 1.0).abs() < 0.03,
        "{} vs {n_expected}",
        flows.len()
    );
    for (i, b) in bytes.iter().enumerate() {
        assert!((b / expected - 1.0).abs() < 0.25, "host {i}: {b} vs {expected}");
    }
}

#[test]
fn poisson_load_with_fixed_sizes_is_exact_in_expectation() {
    let h = hosts(4, 2, 1_000_000_000);
    let c = component(
        "name = \"q\"\npattern = { kind = \"one_to_all\", clients = [3] }\nserver_hosts = [0, 1, 2]\n\
         fixed = \"10KB\"\nload = 0.5\nflows = 20000\nrequest_bytes = \"1.5KB\"",
    );
    let flows = generate(&[c], &h, 3).unwrap();
    assert_eq!(flows.len(), 20_000);
    assert!(flows
        .iter()
        .all(|f| f.dst == 3 && f.src < 3 && f.request_bytes == 1500 && f.size_bytes == 10_000));
    // Client 3's downlink: 0.5 Gbps of 10 KB flows = 6250 flows/s.
    let span = flows.last().unwrap().start.as_nanos() as f64 * 1e-9;
    let rate = flows.len() as f64 / span;
    assert!((rate / 6250.0 - 1.0).abs() < 0.03, "rate {rate}");
}

#[test]
fn rate_per_host_and_choices() {
    let h = hosts(8, 4, 1_000_000_000);
    let c = component(
        "name = \"cb\"\npattern = { kind = \"rack_to_rack\", src_rack = 0, dst_rack = 1 }\n\
         choices = [\"5KB\", \"10KB\", \"20KB\", \"50KB\", \"93KB\"]\nrate_per_host = 1000\nuntil = \"1s\"",
    );
    let flows = generate(&[c], &h, 11).unwrap();
    assert!(
        (flows.len() as f64 / 4000.0 - 1.0).abs() < 0.05,
        "{}",
        flows.len()
    );
    assert!(flows.iter().all(|f| f.src < 4 && f.dst >= 4));
    for s in [5_000, 10_000, 20_000, 50_000, 93_000] {
        let k = flows.iter().filter(|f| f.size_bytes == s).count();
        assert!((k as f64 / flows.len() as f64 - 0.2).abs() < 0.03, "{s}: {k}");
    }
    assert!(flows.iter().all(|f| f.start < Time(1_000_000_000)));
}

#[test]
fn incast_shape_with_uniform_jitter() {
    let h = hosts(16, 8, 1_000_000_000);
    let c = component(
        "name = \"incast\"\nfixed = \"64KB\"\nstart = \"1ms\"\n\
         pattern = { kind = \"incast\", receiver = 0, fanout = 10, rounds = 3, round_interval = \"100ms\", \
         jitter = { kind = \"uniform\", max = \"50us\" } }",
    );
    let flows = generate(&[c], &h, 5).unwrap();
    assert_eq!(flows.len(), 30);
    let senders: std::collections::BTreeSet<u32> = flows.iter().map(|f| f.src).collect();
    assert_eq!(senders.len(), 10);
    assert!(!senders.contains(&0));
    for r in 0..3u64 {
        let base = 1_000_000 + r * 100_000_000;
        let round: Vec<_> = flows
            .iter()
            .filter(|f| f.start.0 >= base && f.start.0 < base + 100_000_000)
            .collect();
        assert_eq!(round.len(), 10);
        assert!(round
            .iter()
            .all(|f| f.dst == 0 && f.size_bytes == 64_000 && f.start.0 <= base + 50_000));
        let s: std::collections::BTreeSet<u32> = round.iter().map(|f| f.src).collect();
        assert_eq!(s, senders);
    }
    let ids: Vec<u64> = flows.iter().map(|f| f.id).collect();
    assert_eq!(ids, (0..30).collect::<Vec<_>>());
}

#[test]
fn incast_exponential_gaps_and_random_order() {
    // T-RACKs CASE 1: 20 flows of 14.6 KB, gaps of mean one packet time (12 us at 1 Gbps), 5 rounds of 3 s.
    let h = hosts(21, 21, 1_000_000_000);
    let c = component(
        "name = \"case1\"\nfixed = 14600\n\
         pattern = { kind = \"incast\", receiver = 20, senders = [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19], \
         rounds = 5, round_interval = \"3s\", jitter = { kind = \"exponential_gaps\", mean = \"12us\" } }",
    );
    let flows = generate(&[c], &h, 9).unwrap();
    assert_eq!(flows.len(), 100);
    let mut gaps = Vec::new();
    let mut orders = Vec::new();
    for r in 0..5u64 {
        let base = r * 3_000_000_000;
        let round: Vec<_> = flows.iter().filter(|f| f.start.0 / 3_000_000_000 == r).collect();
        assert_eq!(round.len(), 20);
        assert_eq!(round[0].start.0, base, "first flow starts at the round start");
        gaps.extend(round.windows(2).map(|w| (w[1].start.0 - w[0].start.0) as f64));
        orders.push(round.iter().map(|f| f.src).collect::<Vec<_>>());
    }
    let mean_gap = gaps.iter().sum::<f64>() / gaps.len() as f64;
    assert!((mean_gap / 12_000.0 - 1.0).abs() < 0.3, "mean gap {mean_gap}");
    assert!(
        orders.windows(2).any(|w| w[0] != w[1]),
        "sender order is reshuffled per round"
    );
}

#[test]
fn permutation_is_a_derangement() {
    for seed in 0..20 {
        let h = hosts(9, 3, 1_000_000_000);
        let c = component("name = \"perm\"\npattern = { kind = \"permutation\" }\nfixed = \"1MB\"");
        let flows = generate(&[c], &h, seed).unwrap();
        assert_eq!(flows.len(), 9);
        let mut srcs: Vec<u32> = flows.iter().map(|f| f.src).collect();
        let mut dsts: Vec<u32> = flows.iter().map(|f| f.dst).collect();
        assert!(flows.iter().all(|f| f.src != f.dst && f.start == Time::ZERO));
        srcs.sort_unstable();
        dsts.sort_unstable();
        assert_eq!(srcs, (0..9).collect::<Vec<_>>());
        assert_eq!(dsts, (0..9).collect::<Vec<_>>());
    }
}

#[test]
fn pairs_with_and_without_arrivals() {
    let h = hosts(4, 2, 1_000_000_000);
    let once =
        component("name = \"p\"\npattern = { kind = \"pairs\", pairs = [[0, 2], [1, 3]] }\nfixed = 1000");
    let f = generate(&[once], &h, 1).unwrap();
    assert_eq!(
        f.iter().map(|f| (f.src, f.dst)).collect::<Vec<_>>(),
        vec![(0, 2), (1, 3)]
    );
    let poisson = component(
        "name = \"p\"\npattern = { kind = \"pairs\", pairs = [[0, 2]] }\nfixed = 1000\nrate_per_host = 100\nflows = 50",
    );
    let f = generate(&[poisson], &h, 1).unwrap();
    assert_eq!(f.len(), 50);
    assert!(f.windows(2).all(|w| w[0].start <= w[1].start));
}

fn mixed() -> Vec<WorkloadComponent> {
    vec![
        component("name = \"bg\"\npattern = { kind = \"all_to_all\" }\ncdf = \"datamining\"\nload = 0.3\nflows = 500"),
        component(
            "name = \"q\"\npattern = { kind = \"all_to_all\" }\ncdf = \"websearch\"\nmax_size = \"100KB\"\n\
             rate_per_host = 2000\nuntil = \"50ms\"",
        ),
        component("name = \"i\"\nfixed = \"64KB\"\nstart = \"10ms\"\npattern = { kind = \"incast\", receiver = 1, fanout = 5 }"),
    ]
}

#[test]
fn generation_is_deterministic_and_components_are_independent() {
    let h = hosts(16, 4, 10_000_000_000);
    let a = generate(&mixed(), &h, 99).unwrap();
    assert_eq!(a, generate(&mixed(), &h, 99).unwrap());
    assert_ne!(a, generate(&mixed(), &h, 100).unwrap());
    assert!(a
        .windows(2)
        .all(|w| (w[0].start, w[0].component) <= (w[1].start, w[1].component)));
    assert!(a.iter().enumerate().all(|(i, f)| f.id == i as u64));

    // Reordering components changes only their stream index; a component at the same index is unchanged.
    let mut m = mixed();
    m.swap(1, 2);
    let b = generate(&m, &h, 99).unwrap();
    let key = |fs: &[FlowSpec], c: u32| -> Vec<(u32, u32, u64, Time)> {
        fs.iter()
            .filter(|f| f.component == c)
            .map(|f| (f.src, f.dst, f.size_bytes, f.start))
            .collect()
    };
    assert_eq!(key(&a, 0), key(&b, 0));
    // Removing a component leaves the others' flows unchanged.
    let c = generate(&mixed()[..1], &h, 99).unwrap();
    assert_eq!(key(&a, 0), key(&c, 0));
}

// ---- configuration errors ----

fn gen_err(body: &str) -> String {
    let h = hosts(8, 4, 1_000_000_000);
    let ok = component("name = \"ok\"\npattern = { kind = \"permutation\" }\nfixed = 1");
    generate(&[ok, component(body)], &h, 0).unwrap_err().to_string()
}

#[test]
fn errors_name_the_field_path() {
    let e = gen_err("name = \"x\"\npattern = { kind = \"all_to_all\" }\nfixed = 1\nload = 1.5\nflows = 1");
    assert_eq!(e, "workload[1].load: must be in (0, 1], got 1.5");
    let e = gen_err("name = \"x\"\npattern = { kind = \"incast\", receiver = 70, fanout = 3 }\nfixed = 1");
    assert!(
        e.starts_with("workload[1].pattern.receiver: host 70 is out of range"),
        "{e}"
    );
    let e = gen_err("name = \"x\"\npattern = { kind = \"all_to_all\" }\nclient_hosts = [1, 9]\nfixed = 1\nload = 0.1\nflows = 1");
    assert!(e.starts_with("workload[1].client_hosts[1]: host 9"), "{e}");
    let e = gen_err("name = \"x\"\npattern = { kind = \"all_to_all\" }\nfixed = 1\nload = 0.5");
    assert!(e.contains("need flows or until"), "{e}");
    let e = gen_err(
        "name = \"x\"\npattern = { kind = \"all_to_all\" }\nfixed = 1\ncdf = \"websearch\"\nflows = 1",
    );
    assert!(e.contains("exactly one of cdf, fixed, choices"), "{e}");
    let e = gen_err(
        "name = \"x\"\npattern = { kind = \"all_to_all\" }\ncdf = \"nope.cdf\"\nload = 0.1\nflows = 1",
    );
    assert!(e.starts_with("workload[1].cdf: nope.cdf: cannot read"), "{e}");
    let e = gen_err("name = \"x\"\npattern = { kind = \"pairs\", pairs = [[2, 2]] }\nfixed = 1");
    assert!(e.starts_with("workload[1].pattern.pairs[0]"), "{e}");
    let e = gen_err(
        "name = \"x\"\npattern = { kind = \"incast\", receiver = 0, fanout = 3, rounds = 2 }\nfixed = 1",
    );
    assert!(
        e.starts_with("workload[1].pattern.round_interval: required"),
        "{e}"
    );
    let e =
        gen_err("name = \"x\"\npattern = { kind = \"permutation\" }\nfixed = 1\nconnections_per_pair = 2");
    assert!(e.starts_with("workload[1].connections_per_pair"), "{e}");
    let e = gen_err(
        "name = \"x\"\npattern = { kind = \"all_to_all\" }\nfixed = 1\nrate_per_host = 1e9\nuntil = \"100s\"",
    );
    assert!(
        e.starts_with("workload[1]: about 800000000000 flows expected"),
        "{e}"
    );
    let e = gen_err("name = \"x\"\npattern = { kind = \"permutation\" }\nfixed = 1\nflows = 0");
    assert!(e.starts_with("workload[1].flows: must be at least 1"), "{e}");
}

#[test]
fn serde_rejects_unknown_keys_with_their_path() {
    let e = WorkloadFile::from_toml(
        "[[workload]]\nname = \"x\"\npattern = { kind = \"all_to_all\" }\nlod = 0.5\n",
    )
    .unwrap_err();
    assert!(e.contains("lod") && e.contains("unknown field"), "{e}");
    let e = WorkloadFile::from_toml(
        "[[workload]]\nname = \"x\"\npattern = { kind = \"incast\", receiver = 0, fanuot = 3 }\nfixed = 1\n",
    )
    .unwrap_err();
    assert!(e.contains("fanuot"), "{e}");
    let e =
        WorkloadFile::from_toml("[[workload]]\nname = \"x\"\npattern = { kind = \"ring\" }\n").unwrap_err();
    assert!(e.contains("ring"), "{e}");
}

#[test]
fn config_units_and_connection_parse() {
    let c = component(
        "name = \"x\"\npattern = { kind = \"all_to_all\" }\nfixed = \"64KB\"\nstart = \"5ms\"\n\
         connection = \"persistent\"\nconnections_per_pair = 4\nrate_per_host = 10\nuntil = \"1s\"",
    );
    assert_eq!(c.fixed, Some(Bytes(64_000)));
    assert_eq!(c.start, Dur::from_millis(5));
    assert_eq!(c.persistent_connections_per_pair(), Some(4));
    let d = component("name = \"x\"\npattern = { kind = \"all_to_all\" }\nfixed = 1");
    assert_eq!(d.connection, Connection::PerFlow);
    assert_eq!(d.persistent_connections_per_pair(), None);
}

#[test]
fn host_filters_that_would_be_ignored_are_errors() {
    let e = gen_err("name = \"x\"\npattern = { kind = \"permutation\" }\nserver_hosts = [1, 2]\nfixed = 1");
    assert!(e.starts_with("workload[1].server_hosts: not used"), "{e}");
    let e = gen_err(
        "name = \"x\"\npattern = { kind = \"pairs\", pairs = [[0, 1]] }\nclient_hosts = [1]\nfixed = 1",
    );
    assert!(e.starts_with("workload[1].client_hosts: not used"), "{e}");
    let e = gen_err(
        "name = \"x\"\npattern = { kind = \"incast\", receiver = 0, senders = [1, 2] }\nserver_hosts = [1]\nfixed = 1",
    );
    assert!(e.starts_with("workload[1].server_hosts: not used"), "{e}");
}

proptest::proptest! {
    /// Inverse transform and CDF agree on any valid polyline, atoms included, and truncation keeps the
    /// samples inside the range.
    #[test]
    fn quantile_inverts_the_cdf(
        steps in proptest::collection::vec((0u32..1000, 0u32..1000), 1..12),
        u in 0.0f64..1.0,
        lo_q in 0.0f64..0.5,
    ) {
        let mut x = 0.0;
        let mut p = 0.0;
        let total: f64 = steps.iter().map(|&(_, dp)| dp as f64).sum::<f64>().max(1.0);
        let mut text = String::from("0 0\n");
        for &(dx, dp) in &steps {
            x += dx as f64;
            p += dp as f64 / total;
            text.push_str(&format!("{x} {}\n", p.min(1.0)));
        }
        text.push_str(&format!("{} 1\n", x + 1.0));
        let c = EmpiricalCdf::parse(&text, "prop").unwrap();
        let q = c.quantile(u);
        proptest::prop_assert!(q >= c.min_value() && q <= c.max_value());
        proptest::prop_assert!(c.cdf(q) >= u - 1e-9, "F({}) = {} < {}", q, c.cdf(q), u);
        proptest::prop_assert!(c.quantile(u / 2.0) <= q);
        let lo = c.quantile(lo_q);
        if let Ok(t) = c.truncated(Some(lo), None) {
            proptest::prop_assert!(t.quantile(u) >= lo);
            proptest::prop_assert!(t.mean() >= lo - 1e-9 && t.mean() <= c.max_value() + 1e-9);
        }
    }
}

#[test]
fn incast_with_several_flows_per_sender() {
    // CloudBurst Sec. V incast: 4 senders, 90 KB messages, N concurrent flows (here 3 per sender).
    let h = hosts(8, 4, 1_000_000_000);
    let c = component(
        "name = \"cb\"\nfixed = \"90KB\"\npattern = { kind = \"incast\", receiver = 0, senders = [4, 5, 6, 7], flows_per_sender = 3 }",
    );
    let flows = generate(&[c], &h, 1).unwrap();
    assert_eq!(flows.len(), 12);
    for s in 4..8 {
        assert_eq!(flows.iter().filter(|f| f.src == s).count(), 3);
    }
}

#[test]
fn the_documented_example_parses_and_generates() {
    let text = "[[workload]]\nname = \"query\"\npattern = { kind = \"one_to_all\", clients = [3, 4, 5] }\n\
                server_hosts = [0, 1, 2]\ncdf = \"websearch\"\nmax_size = \"100KB\"\nload = 0.01\n\
                request_bytes = \"100B\"\nuntil = \"10s\"\n";
    let f = WorkloadFile::from_toml(text).unwrap();
    let flows = generate(&f.workload, &hosts(6, 3, 1_000_000_000), 0).unwrap();
    assert!(!flows.is_empty());
    assert!(flows
        .iter()
        .all(|f| f.src < 3 && f.dst >= 3 && f.size_bytes <= 100_000 && f.request_bytes == 100));
}
