"""``tailcut testbed run``: the Python front over the Rust testbed binary.

The end-to-end test needs root, network namespaces and /dev/net/tun (as the Rust realnet tests do):
it skips with the reason where they are missing, unless ``TAILCUT_REQUIRE_REALNET=1`` (CI) makes that
a failure. The other tests need neither.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pytest

from conftest import realnet_or_skip
from tailcut import cli, testbed
from tailcut.outdir import OutputError
from tailcut.results import FLOW_COLUMNS, PORT_COLUMNS

ROOT = Path(__file__).resolve().parents[2]
EXPERIMENT = """
name = "tb"
seed = 2
max_time = "1s"
[topology]
kind = "star"
hosts = 3
host_rate = "100Mbps"
[[workload]]
name = "q"
pattern = { kind = "all_to_all" }
fixed = "20KB"
flows = 10
rate_per_host = 50
[[schemes]]
name = "linux"
transport = "tcp"
[testbed]
rto_min_us = 5000
# How long past max_time the run waits for flows still going: it ends with its last flow, so this
# bounds only a failing run (the default 2 s is within reach of a loaded machine).
grace = "120s"
"""


def test_binary_is_found_through_the_environment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(testbed.BINARY_ENV, str(tmp_path / "missing"))
    with pytest.raises(OutputError, match="no such file"):
        testbed.find_binary()


def test_unsupported_scheme_is_an_error_naming_the_field(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    exp = tmp_path / "e.toml"
    # pFabric needs priority-dropping switch queues: neither Linux nor tailcut's engines on UDP have them.
    exp.write_text(EXPERIMENT.replace('transport = "tcp"', 'transport = "pfabric"'))
    with pytest.raises(OutputError, match=r"schemes\[0\]\.transport: 'pfabric'"):
        testbed.run_to_dir(exp, tmp_path / "out")
    assert not (tmp_path / "out").exists(), "nothing written on failure"


def test_tables_become_parquet_with_the_simulator_columns(tmp_path: Path) -> None:
    flows_json = '{"flow_id": [0, 1], "fct_ns": [5, null], "completed": [true, false]}'
    (tmp_path / "flows.json").write_text(flows_json)
    (tmp_path / "ports.json").write_text('{"node": ["h0"], "tx_packets": [3]}')
    testbed.convert_tables(tmp_path)
    flows = pd.read_parquet(tmp_path / "flows.parquet")
    assert list(flows.columns[: len(FLOW_COLUMNS)]) == FLOW_COLUMNS
    assert flows["completed"].tolist() == [True, False]
    ports = pd.read_parquet(tmp_path / "ports.parquet")
    assert list(ports.columns[: len(PORT_COLUMNS)]) == PORT_COLUMNS
    assert not (tmp_path / "flows.json").exists()


def test_cli_runs_an_experiment_on_real_hosts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    realnet_or_skip()
    exp = tmp_path / "e.toml"
    exp.write_text(EXPERIMENT)
    out = tmp_path / "out"
    # Functional facts only: whether this machine kept the timing is the next test's subject.
    assert cli.main(["testbed", "run", str(exp), "--out", str(out), "--allow-invalid-timing"]) == 0
    flows = pd.read_parquet(out / "flows.parquet")
    assert len(flows) == 10
    assert flows["completed"].all()
    assert (flows["fct_ns"] > 0).all()
    assert (out / "ports.parquet").exists()
    # The simulator's summary layout, computed from the flows; what only a real run has beside it.
    summary = json.loads((out / "summary.json").read_text())["summary"]
    assert {r["size_class"] for r in summary} == {"small", "medium", "large", "all"}
    everything = next(r for r in summary if r["size_class"] == "all")
    assert everything["count"] == 10 and everything["unfinished"] == 0
    assert everything["timeout_fraction"] is None, "a kernel reports no per-flow timeouts"
    quality = json.loads((out / testbed.QUALITY_FILE).read_text())
    assert quality[0]["scheme"] == "linux" and "TcpExt.TCPTimeouts" in quality[0]["kernel"]
    assert "Real-time quality" in (out / "report.html").read_text()
    assert cli.main(["testbed", "run", str(exp), "--out", str(out)]) == 2, "no overwrite without --overwrite"
    # One experiment file in both worlds, drawn side by side.
    sim = tmp_path / "sim"
    assert cli.main(["run", str(exp), "--out", str(sim)]) == 0
    page = tmp_path / "both.html"
    assert cli.main(["report", str(sim), str(out), "--out", str(page)]) == 0
    text = page.read_text()
    assert "Summary: sim" in text and "Summary: out" in text
    assert text.count("Real-time quality") == 1, "only the testbed folder has a quality table"


def test_a_run_that_cannot_keep_its_timing_exits_3_and_says_so_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Thresholds nothing can meet (0) make the run invalid whatever the machine; huge ones, valid."""
    realnet_or_skip()
    exp = tmp_path / "zero.toml"
    exp.write_text(EXPERIMENT + 'max_lateness_rtt = 0\nmax_start_late = "0ns"\n')
    out = tmp_path / "invalid"
    assert cli.main(["testbed", "run", str(exp), "--out", str(out)]) == testbed.EXIT_INVALID_TIMING == 3
    assert "TIMING INVALID" in capsys.readouterr().err
    # The folder is complete and marked.
    assert len(pd.read_parquet(out / "flows.parquet")) == 10
    verdict = json.loads((out / testbed.QUALITY_FILE).read_text())[0]["timing"]
    assert verdict["valid"] is False and verdict["reasons"]
    page = (out / "report.html").read_text()
    assert page.index("TIMING INVALID") < page.index("<h2"), "the verdict is at the top of the report"
    assert testbed.quality_table(out).iloc[0]["timing"] == "INVALID"
    allowed = tmp_path / "allowed"
    assert cli.main(["testbed", "run", str(exp), "--out", str(allowed), "--allow-invalid-timing"]) == 0
    assert "accepted with --allow-invalid-timing" in capsys.readouterr().err
    assert testbed.invalid_timing(allowed), "accepted, still recorded as invalid"
    with pytest.raises(testbed.InvalidTimingError):
        testbed.run_to_dir(exp, tmp_path / "api")
    assert (tmp_path / "api" / "report.html").exists(), "the API writes the folder before raising"

    exp = tmp_path / "huge.toml"
    exp.write_text(EXPERIMENT + 'max_lateness_rtt = 1e9\nmax_start_late = "1000s"\n')
    out = tmp_path / "valid"
    assert cli.main(["testbed", "run", str(exp), "--out", str(out)]) == 0
    assert json.loads((out / testbed.QUALITY_FILE).read_text())[0]["timing"]["valid"] is True
    assert "Timing kept" in (out / "report.html").read_text()


def test_a_run_starved_of_cpu_is_refused(tmp_path: Path) -> None:
    """The machine made busy on purpose: the testbed and its agents (one process group) are stopped
    (SIGSTOP) 100 ms of every 110 ms while the run goes, as a starved machine would hold them. The flows
    start late and the fabric falls behind, the run's own measures see it, and it is refused (exit 3)
    with the reason, under the default thresholds. Only the direction is asserted: a loaded CI machine
    can only make it later."""
    realnet_or_skip()
    exp = tmp_path / "e.toml"
    exp.write_text(EXPERIMENT.replace("flows = 10", "flows = 60"))
    out = tmp_path / "starved"
    proc = subprocess.Popen(
        [*testbed.find_binary(), "run", str(exp), "--out", str(out)],
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGSTOP)
            time.sleep(0.1)
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGCONT)
            time.sleep(0.01)
        err = proc.stderr.read() if proc.stderr else ""
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGCONT)
        if proc.poll() is None:
            proc.kill()
        proc.wait()
    assert proc.returncode == testbed.EXIT_INVALID_TIMING, err
    assert "TIMING INVALID" in err and "--allow-invalid-timing" in err
    verdict = json.loads((out / testbed.QUALITY_FILE).read_text())[0]["timing"]
    assert verdict["valid"] is False
    assert verdict["start_late_p50_ns"] > verdict["max_start_late_p50_ns"], verdict


def test_timing_verdict_is_read_from_the_folder(tmp_path: Path) -> None:
    assert testbed.timing_verdicts(tmp_path) == [] and testbed.timing_banner_html(tmp_path) == ""
    timing = {"valid": False, "reasons": ["fabric lateness p99 1310.7 us > 10.0 us"], "base_rtt_ns": 100_000}
    schemes = [{"scheme": "a", "timing": timing}, {"scheme": "b", "timing": {"valid": True, "reasons": []}}]
    (tmp_path / testbed.QUALITY_FILE).write_text(json.dumps(schemes))
    assert testbed.invalid_timing(tmp_path) == ["a: fabric lateness p99 1310.7 us > 10.0 us"]
    banner = testbed.timing_banner_html(tmp_path)
    assert "TIMING INVALID" in banner and "a: fabric lateness p99 1310.7 us &gt; 10.0 us" in banner


def test_quality_table_reads_what_only_a_real_run_has(tmp_path: Path) -> None:
    lateness = {"events": 10, "mean_ns": 900, "p50_ns": 120, "p99_ns": 25_000, "max_ns": 3_000_000}
    scheme = {
        "scheme": "linux",
        "tun_tx_drops": 2,
        "fabric_drops": 7,
        "kernel": {"TcpExt.TCPTimeouts": 3, "Tcp.RetransSegs": 9},
        "fabric": {"lateness": lateness},
    }
    (tmp_path / testbed.QUALITY_FILE).write_text(json.dumps([scheme]))
    table = testbed.quality_table(tmp_path)
    assert table is not None
    row = table.iloc[0]
    assert (row["lateness p50"], row["lateness p99"], row["lateness max"]) == ("120 ns", "25.0 us", "3.00 ms")
    assert (row["TUN drops"], row["fabric drops"], row["TCPTimeouts"], row["RetransSegs"]) == (2, 7, 3, 9)
    assert testbed.quality_table(tmp_path / "elsewhere") is None
    # A scheme's own pieces: the BPF DCTCP's counters and the NIC shims'.
    scheme.update(congestion_control="tailcut_dctcp", dctcp={"ece_reductions": 5})
    scheme["fabric"]["shims"] = {"tracks_spoofed_acks": 4}
    (tmp_path / testbed.QUALITY_FILE).write_text(json.dumps([scheme]))
    row = testbed.quality_table(tmp_path).iloc[0]
    assert row["congestion control"] == "tailcut_dctcp"
    assert (row["dctcp ece_reductions"], row["shim tracks_spoofed_acks"]) == (5, 4)
