//! Tests of the flow-file workloads: htsim connection matrices and CSV flow lists.

use super::*;
use proptest::prelude::*;
use proptest::test_runner::{Config, FileFailurePersistence, RngSeed};
use std::path::PathBuf;
use tailcut_proto::Time;

fn flow(src: u32, dst: u32, start_ns: u64, size_bytes: u64) -> FileFlow {
    FileFlow {
        src,
        dst,
        start_ns,
        size_bytes,
    }
}

fn matrix(text: &str) -> Result<Vec<FileFlow>, FlowFileError> {
    htsim_matrix::parse(text, "m.cm", 16)
}

fn csv(text: &str) -> Result<Vec<FileFlow>, FlowFileError> {
    flow_csv::parse(text, "f.csv", 16)
}

/// Asserts the error is on `line`, blames `field`, and its text says so and contains `words`.
fn assert_err(e: FlowFileError, line: usize, field: &str, words: &str) {
    assert_eq!(e.line, Some(line), "{e}");
    assert_eq!(e.field.as_deref(), (!field.is_empty()).then_some(field), "{e}");
    let shown = e.to_string();
    assert!(shown.starts_with(&format!("{} line {line}", e.file)), "{shown}");
    if !field.is_empty() {
        assert!(shown.contains(&format!("field {field}:")), "{shown}");
    }
    assert!(shown.contains(words), "wanted '{words}' in: {shown}");
}

// ---- htsim connection matrices ----

#[test]
fn matrix_reads_htsim_lines_with_header_comments_and_bom() {
    let text = "\u{feff}# permutation\nNodes 16\nConnections 3\n\n0->5 id 1 start 0 size 65536\n\
                3->5 start 2500000 id 2 size 1000 prio 7\n15->0   id 3  size 9000 start 1499.6\n";
    assert_eq!(
        matrix(text).unwrap(),
        vec![
            flow(0, 5, 0, 65_536),
            flow(3, 5, 2_500, 1_000),
            flow(15, 0, 1, 9_000)
        ]
    );
}

#[test]
fn matrix_refuses_bad_lines_naming_line_and_field() {
    let cases: &[(&str, usize, &str, &str)] = &[
        ("0->x start 0 size 5\n", 1, "dst", "'x' is not a host index"),
        (
            "Nodes 16\n-1->2 start 0 size 5\n",
            2,
            "src",
            "'-1' is not a host index",
        ),
        (
            "0->16 start 0 size 5\n",
            1,
            "dst",
            "host 16 is out of range (the topology has 16 hosts",
        ),
        (
            "Nodes 4\n0->7 start 0 size 5\n",
            2,
            "dst",
            "not below the header's Nodes 4",
        ),
        ("0->1 start 0 size 0\n", 1, "size", "must be > 0 bytes"),
        ("0->1 start 0 size -5\n", 1, "size", "must be > 0 bytes"),
        (
            "0->1 start 0 size 1.5\n",
            1,
            "size",
            "not a whole number of bytes",
        ),
        ("0->1 start -3 size 5\n", 1, "start", "non-negative"),
        (
            "0->1 start soon size 5\n",
            1,
            "start",
            "not a number of picoseconds",
        ),
        ("0->1 size 5\n", 1, "start", "missing"),
        ("0->1 start 0\n", 1, "size", "missing"),
        ("0->1 start 0 size\n", 1, "size", "needs a value"),
        ("0->1 start 0 size 5 colour red\n", 1, "colour", "unknown token"),
        ("0->1 start 0 size 5 id 0\n", 1, "id", "positive integer"),
        ("0->1 id 4 trigger 2 size 5\n", 1, "trigger", "not supported"),
        ("2->2 start 0 size 5\n", 1, "dst", "sends to itself"),
        ("Triggers 1\n", 1, "Triggers", "not supported"),
        ("Nodes many\n", 1, "Nodes", "not a non-negative integer"),
        ("hello world\n", 1, "", "neither a header"),
        (
            "Connections 2\n0->1 start 0 size 5\n",
            1,
            "Connections",
            "says 2 connections, the file lists 1",
        ),
    ];
    for &(text, line, field, words) in cases {
        let e = matrix(text).expect_err(text);
        assert_eq!(e.file, "m.cm");
        assert_err(e, line, field, words);
    }
}

// ---- CSV flow lists ----

#[test]
fn csv_reads_columns_in_any_order_with_units_bom_and_crlf() {
    let text = "\u{feff}start, size ,src,DST\r\n# a comment\r\n2.5us,64KB,3,5\r\n\r\n0,65536,0,5\r\n1s,1MiB,15,0\r\n";
    assert_eq!(
        csv(text).unwrap(),
        vec![
            flow(3, 5, 2_500, 64_000),
            flow(0, 5, 0, 65_536),
            flow(15, 0, 1_000_000_000, 1_048_576)
        ]
    );
}

#[test]
fn csv_refuses_bad_lines_naming_line_and_field() {
    let h = "src,dst,start,size\n";
    let cases: &[(String, usize, &str, &str)] = &[
        (format!("{h}a,1,0us,5\n"), 2, "src", "'a' is not a host index"),
        (format!("{h}0,99,0us,5\n"), 2, "dst", "host 99 is out of range"),
        (format!("{h}0,1,0us,0\n"), 2, "size", "must be > 0 bytes"),
        (format!("{h}0,1,0us,-7\n"), 2, "size", "must be > 0 bytes"),
        (format!("{h}0,1,0us,5 parsecs\n"), 2, "size", "invalid size unit"),
        (format!("{h}0,1,-1us,5\n"), 2, "start", "negative"),
        (format!("{h}0,1,10,5\n"), 2, "start", "has no unit"),
        (format!("{h}0,1,3 weeks,5\n"), 2, "start", "invalid time unit"),
        (format!("{h}\n0,1,0us\n"), 3, "", "expected 4 fields"),
        (format!("{h}1,1,0us,5\n"), 2, "dst", "sends to itself"),
        (
            "src,dst,start\n".to_string(),
            1,
            "header",
            "column 'size' is missing",
        ),
        (
            "src,dst,start,size,prio\n".to_string(),
            1,
            "header",
            "unknown column 'prio'",
        ),
        ("src,src,start,size\n".to_string(), 1, "header", "appears twice"),
    ];
    for (text, line, field, words) in cases {
        let e = csv(text).expect_err(text);
        assert_eq!(e.file, "f.csv");
        assert_err(e, *line, field, words);
    }
    let e = csv("# only a comment\n").unwrap_err();
    assert_eq!(
        (e.line, e.to_string()),
        (None, "f.csv: no header line (src,dst,start,size)".into())
    );
}

#[test]
fn csv_reads_tailcuts_own_flow_table_back() {
    // As `tailcut run` writes flows.csv: every column of the flow table, one row per flow and scheme,
    // starts in bare nanoseconds.
    let text = "flow_id,scheme,component,src,dst,size_bytes,sent_bytes,start_ns,finish_ns,fct_ns\n\
                0,tcp,q,3,5,64000,64000,2500,9000,6500\n\
                1,tcp,q,0,5,65536,65536,0,,\n\
                0,dctcp,q,3,5,64000,64000,2500,8000,5500\n\
                1,dctcp,q,0,5,65536,65536,0,7000,7000\n";
    assert_eq!(
        csv(text).unwrap(),
        vec![flow(3, 5, 2_500, 64_000), flow(0, 5, 0, 65_536)],
        "each flow once, starts in ns, the other columns ignored"
    );
    let e = csv("flow_id,src,dst,start_ns\n0,1,2,5\n").unwrap_err();
    assert_err(e, 1, "header", "column 'size_bytes' is missing");
    let e = csv("flow_id,src,dst,start_ns,size_bytes\n0,1,2,5us,9\n").unwrap_err();
    assert_err(e, 2, "start_ns", "not a whole number of nanoseconds");
}

// ---- as a workload component ----

/// A file in the system temp folder, named after the test so parallel tests do not share it.
fn side_file(name: &str, text: &str) -> PathBuf {
    let path = std::env::temp_dir().join(format!("tailcut-{}-{name}", std::process::id()));
    std::fs::write(&path, text).unwrap();
    path
}

fn file_component(kind: &str, path: &std::path::Path, extra: &str) -> WorkloadComponent {
    let text = format!(
        "[[workload]]\nname = \"f\"\npattern = {{ kind = \"{kind}\", path = {:?} }}\n{extra}",
        path.display().to_string()
    );
    WorkloadFile::from_toml(&text).unwrap().workload.remove(0)
}

fn hosts(n: usize) -> HostInfo {
    HostInfo {
        rack: vec![0; n],
        nic_rate_bps: vec![1_000_000_000; n],
    }
}

#[test]
fn a_file_component_yields_its_flows_in_start_order_beside_generated_ones() {
    let path = side_file(
        "order.cm",
        "0->1 id 1 start 5000000 size 100\n2->3 id 2 start 1000000 size 200\n1->0 id 3 start 1000000 size 300\n",
    );
    let poisson = WorkloadFile::from_toml(
        "[[workload]]\nname = \"p\"\npattern = { kind = \"pairs\", pairs = [[0, 3]] }\nfixed = \"1KB\"\nstart = \"3us\"\n",
    )
    .unwrap()
    .workload
    .remove(0);
    let flows = generate(
        &[file_component("connection_matrix", &path, ""), poisson],
        &hosts(4),
        1,
    )
    .unwrap();
    let got: Vec<_> = flows
        .iter()
        .map(|f| (f.id, f.component, f.src, f.dst, f.start, f.size_bytes))
        .collect();
    // Unsorted in the file; equal starts keep the file's order.
    assert_eq!(
        got,
        vec![
            (0, 0, 2, 3, Time(1_000), 200),
            (1, 0, 1, 0, Time(1_000), 300),
            (2, 1, 0, 3, Time(3_000), 1_000),
            (3, 0, 0, 1, Time(5_000), 100),
        ]
    );
    std::fs::remove_file(path).unwrap();
}

#[test]
fn a_file_component_refuses_generator_fields_and_reports_the_file() {
    let path = side_file("fields.csv", "src,dst,start,size\n0,1,0us,5\n");
    for (extra, field) in [
        ("fixed = \"1KB\"", "workload[0].fixed"),
        ("load = 0.1", "workload[0].load"),
        ("start = \"1ms\"", "workload[0].start"),
        ("flows = 3", "workload[0].flows"),
        ("connections_per_pair = 2", "workload[0].connections_per_pair"),
    ] {
        let e = generate(&[file_component("flow_csv", &path, extra)], &hosts(4), 1).unwrap_err();
        assert_eq!(e.path, field, "{extra}: {e}");
    }
    let e = generate(&[file_component("flow_csv", &path, "")], &hosts(1), 1).unwrap_err();
    assert_eq!(e.path, "workload[0].pattern.path");
    assert!(
        e.reason.contains("line 2, field dst: host 1 is out of range"),
        "{e}"
    );
    let missing = std::path::Path::new("/nonexistent/flows.csv");
    let e = generate(&[file_component("flow_csv", missing, "")], &hosts(4), 1).unwrap_err();
    assert_eq!(e.path, "workload[0].pattern.path");
    assert!(e.reason.starts_with("/nonexistent/flows.csv: cannot read"), "{e}");
    let empty = side_file("empty.cm", "Nodes 4\nConnections 0\n");
    let e = generate(&[file_component("connection_matrix", &empty, "")], &hosts(4), 1).unwrap_err();
    assert!(e.reason.contains("lists no flows"), "{e}");
    std::fs::remove_file(path).unwrap();
    std::fs::remove_file(empty).unwrap();
}

// ---- properties ----

/// Fixed seed and no failure files: the same cases on every run, so a failure is reproducible and CI
/// never meets a case a developer did not.
fn stable(cases: u32) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(0x7461_696c),
        failure_persistence: Some(Box::new(FileFailurePersistence::Off)),
        ..Config::default()
    }
}

fn flows_strategy() -> impl Strategy<Value = Vec<FileFlow>> {
    proptest::collection::vec(
        (0u32..16, 1u32..16, 0u64..10_000_000_000, 1u64..1u64 << 40),
        0..40,
    )
    .prop_map(|v| {
        v.into_iter()
            .map(|(src, k, start_ns, size)| flow(src, (src + k) % 16, start_ns, size))
            .collect()
    })
}

proptest! {
    #![proptest_config(stable(256))]

    /// Writing flows in htsim's format and reading them back gives the same flows.
    #[test]
    fn matrix_round_trips(flows in flows_strategy()) {
        let mut text = format!("Nodes 16\nConnections {}\n", flows.len());
        for (i, f) in flows.iter().enumerate() {
            text += &format!("{}->{} id {} start {} size {}\n", f.src, f.dst, i + 1, f.start_ns * 1000, f.size_bytes);
        }
        prop_assert_eq!(matrix(&text).unwrap(), flows);
    }

    /// Writing flows as CSV and reading them back gives the same flows.
    #[test]
    fn csv_round_trips(flows in flows_strategy()) {
        let mut text = "src,dst,start,size\n".to_string();
        for f in &flows {
            text += &format!("{},{},{}ns,{}\n", f.src, f.dst, f.start_ns, f.size_bytes);
        }
        prop_assert_eq!(csv(&text).unwrap(), flows);
    }

    /// Any text, and text built from the formats' own tokens, gives flows or an error, never a panic.
    #[test]
    fn arbitrary_text_never_panics(
        noise in "\\PC{0,200}",
        soup in proptest::collection::vec(
            prop_oneof![
                Just("->"), Just(" "), Just(","), Just("\n"), Just("start"), Just("size"), Just("id"),
                Just("Nodes"), Just("Connections"), Just("src,dst,start,size\n"), Just("-"), Just("us"),
                Just("\u{feff}"), Just("1e400"), Just("18446744073709551616"), Just("0"), Just("7"),
                Just("NaN"), Just("#"), Just("\r\n"), Just("µs"), Just("KiB"),
            ],
            0..60,
        ),
    ) {
        let soup: String = soup.concat();
        for text in [noise.as_str(), soup.as_str()] {
            let _ = matrix(text);
            let _ = csv(text);
        }
    }
}
