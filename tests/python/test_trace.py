"""`tailcut trace` on the tiny experiment: the traced run is the untraced one, the folder holds the events,
plots and a pcap, bad input is named, and tshark's TCP analysis agrees with the recorded retransmissions."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from conftest import TINY
from tailcut.trace import select_flows, trace

REQUIRE_TSHARK = os.environ.get("TAILCUT_REQUIRE_REALNET") == "1"


@pytest.fixture(scope="module")
def lossy(tmp_path_factory: pytest.TempPathFactory):
    """The tiny experiment's TCP scheme traced on the first flows that retransmitted, written out."""
    from tailcut.trace import write_trace

    result = trace(TINY, where="retransmitted_bytes > 0", limit=2, scheme="tcp")
    out = tmp_path_factory.mktemp("trace") / "t"
    write_trace(result, out)
    return result, out


def test_traced_flow_table_equals_the_untraced_run(lossy) -> None:
    import tailcut

    result, _ = lossy
    plain = tailcut.run(TINY).flows
    plain = plain[plain["scheme"] == "tcp"].reset_index(drop=True)
    pd.testing.assert_frame_equal(plain, result.flows.reset_index(drop=True))


def test_where_picks_matching_flows_and_records_only_them(lossy) -> None:
    result, _ = lossy
    flows = result.flows.set_index("flow_id")
    assert len(result.flow_ids) == 2
    assert all(flows.loc[f, "retransmitted_bytes"] > 0 for f in result.flow_ids)
    assert set(result.events["flow_id"]) == set(result.flow_ids)
    assert result.truncated_at_ns is None


def test_events_account_for_the_flows_retransmissions_and_losses(lossy) -> None:
    result, _ = lossy
    ev = result.events
    for f in result.flow_ids:
        mine = ev[ev["flow_id"] == f]
        sends = mine[(mine["kind"] == "send") & (mine["direction"] == "data")]
        retx = sends[sends["retransmission"].fillna(False).astype(bool)]
        record = result.flows.set_index("flow_id").loc[f]
        assert int(retx["payload_bytes"].sum()) == int(record["retransmitted_bytes"])
        drops = mine[mine["kind"] == "dropped"]
        # tiny.toml loses packets only on the leaf0-spine0 link, at random.
        assert len(drops) > 0
        assert set(drops["cause"]) == {"random_loss"}
        assert all({n, p} == {"leaf0", "spine0"} for n, p in zip(drops["node"], drops["peer"], strict=True))
        assert mine["cwnd_bytes"].notna().any() and mine["rto_ns"].notna().any()
        assert (mine["time_ns"].diff().dropna() >= 0).all()


def test_folder_holds_table_csv_plots_and_pcap(lossy) -> None:
    result, out = lossy
    assert len(pd.read_parquet(out / "events.parquet")) == len(result.events)
    assert len(pd.read_csv(out / "events.csv")) == len(result.events)
    for f in result.flow_ids:
        assert (out / "plots" / f"flow-{f}.png").stat().st_size > 1000
        assert (out / "plots" / f"flow-{f}.svg").exists()
    pcap = (out / "trace.pcap").read_bytes()
    assert pcap[:4] == bytes.fromhex("4d3cb2a1")  # nanosecond pcap, little-endian


def test_cli_trace_by_flow_id(cli, tiny: Path, tmp_path: Path, capsys) -> None:
    assert cli("trace", tiny, "--flow", "3", "--scheme", "dctcp", "--out", tmp_path / "o") == 0
    events = pd.read_parquet(tmp_path / "o" / "events.parquet")
    assert set(events["flow_id"]) == {3}
    assert {"send", "queued", "transmit", "receive"} <= set(events["kind"])
    assert "traced scheme dctcp, flows 3" in capsys.readouterr().out
    # The same folder again needs --overwrite, as `tailcut run` does.
    assert cli("trace", tiny, "--flow", "3", "--scheme", "dctcp", "--out", tmp_path / "o") == 2
    assert "already holds a result" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--flow", "0"], "scheme: the experiment has several schemes; choose one of tcp, dctcp"),
        (["--flow", "0", "--scheme", "cubic"], "scheme: no scheme named 'cubic'"),
        (["--flow", "99999", "--scheme", "tcp"], "flow: no flow 99999"),
        (["--where", "timeouts > 1e9", "--scheme", "tcp"], "--where: no flow of"),
        (["--where", "no_such_column > 0", "--scheme", "tcp"], "--where: cannot evaluate"),
        (["--where", "timeouts >", "--scheme", "tcp"], "--where: cannot evaluate"),
        (["--flow", "0", "--scheme", "tcp", "--max-trace-events", "0"], "max_events: must be at least 1"),
    ],
)
def test_bad_input_is_named_without_a_traceback(cli, tiny: Path, capsys, args, message) -> None:
    assert cli("trace", tiny, *args, "--out", "o") == 2
    err = capsys.readouterr().err
    assert message in err and "Traceback" not in err
    assert not Path("o").exists()


# An incast into a small buffer (as crates/tailcut-sim/tests/sim/trace.rs): whole tails are lost, which
# TCP's RACK-TLP probes (tiny.toml's random losses are all repaired by SACK and RACK's reordering timer).
INCAST = """
name = "incast"
seed = 3
max_time = "2s"
[topology]
kind = "star"
hosts = 5
host_rate = "1Gbps"
link_delay = "5us"
[network]
buffer = "24KB"
[[workload]]
name = "incast"
pattern = { kind = "incast", receiver = 0, senders = [1, 2, 3, 4], flows_per_sender = 2 }
fixed = "64KB"
[[schemes]]
name = "tcp"
transport = "tcp"
params = { min_rto = "5ms" }
"""


def test_a_tail_loss_probe_is_labelled_tlp_and_marked_on_the_plot(tmp_path: Path) -> None:
    """TCP's RACK-TLP probe timeout is a `tlp` event, not a `timer` (issue #43): the probe leaves only
    after the timer is recorded. Its flow's diagram marks it, and RTOs, in the legend."""
    from tailcut.trace_plot import plot_flow

    exp = tmp_path / "incast.toml"
    exp.write_text(INCAST)
    result = trace(exp, flows=range(8))
    ev = result.events
    tlp = ev[ev["kind"] == "tlp"]
    assert len(tlp) > 0, ev["kind"].value_counts()
    # Every timer of a data sender is named: an RTO, a probe timeout or RACK's reordering timer.
    assert not ((ev["kind"] == "timer") & (ev["direction"] == "data")).any()
    # A probe timeout is the data sender's, and the probe (a data segment) leaves at the same instant.
    assert set(tlp["direction"]) == {"data"}
    sends = ev[(ev["kind"] == "send") & (ev["direction"] == "data") & (ev["payload_bytes"] > 0)]
    for f, t in zip(tlp["flow_id"], tlp["time_ns"], strict=True):
        assert ((sends["flow_id"] == f) & (sends["time_ns"] == t)).any(), (f, t)
    flow = int(tlp["flow_id"].iloc[0])
    labels = plot_flow(ev, flow, tmp_path / "f")
    assert "TLP fired" in labels
    mine = ev[ev["flow_id"] == flow]
    assert ("RTO fired" in labels) == bool((mine["kind"] == "rto").any())
    assert (tmp_path / "f.png").stat().st_size > 1000


def test_the_cap_stops_the_record_and_says_so() -> None:
    result = trace(TINY, flows=[0], scheme="tcp", max_events=5)
    assert len(result.events) == 5
    assert result.truncated_at_ns is not None
    assert "cap of 5 events" in result.warnings()[0]


def test_select_flows_limits_and_orders() -> None:
    flows = pd.DataFrame({"flow_id": [4, 7, 9], "timeouts": [1, 0, 2]})
    assert select_flows(flows, "timeouts > 0", None) == [4, 9]
    assert select_flows(flows, "timeouts > 0", 1) == [4]
    with pytest.raises(ValueError, match="--limit"):
        select_flows(flows, "timeouts > 0", 0)


def _tshark(pcap: Path, fields: list[str], display_filter: str = "") -> list[list[str]]:
    cmd = ["tshark", "-o", "ip.check_checksum:TRUE", "-r", str(pcap), "-T", "fields", "-E", "separator=|"]
    for f in fields:
        cmd += ["-e", f]
    if display_filter:
        cmd += ["-Y", display_filter]
    out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
    return [line.split("|") for line in out.splitlines() if line]


def test_tshark_tcp_analysis_matches_the_recorded_retransmissions(lossy) -> None:
    if shutil.which("tshark") is None:
        if REQUIRE_TSHARK:
            pytest.fail(
                "tshark is not installed (apt-get install tshark): TAILCUT_REQUIRE_REALNET=1 needs it"
            )
        pytest.skip("tshark is not installed")
    result, out = lossy
    pcap = out / "trace.pcap"
    sends = result.events[result.events["kind"] == "send"]
    rows = _tshark(pcap, ["frame.len", "ip.len", "tcp.len", "tcp.seq_raw", "tcp.options.sack_le"])
    assert len(rows) == len(sends)
    # Lengths: the real ones (IP total length = headers + payload), not the truncated capture.
    assert [int(r[2]) for r in rows] == [int(p) for p in sends["payload_bytes"]]
    assert [int(r[3]) for r in rows] == [int(s) for s in sends["seq"]]
    sacks = sum(1 for r in rows if r[4])
    assert sacks == int((sends["sack"].fillna("") != "").sum()) and sacks > 0
    # Wireshark calls a segment below the highest sequence number seen "out-of-order" rather than a
    # retransmission when it comes within its RTT threshold (3 ms without a handshake) of that highest
    # segment, as datacenter retransmissions do. Captured at the sender's NIC, where nothing reorders,
    # both mean a retransmission.
    flagged = (
        "tcp.analysis.retransmission || tcp.analysis.fast_retransmission || "
        "tcp.analysis.spurious_retransmission || tcp.analysis.out_of_order"
    )
    seen = {int(r[0]) for r in _tshark(pcap, ["frame.number"], f"tcp.len > 0 && ({flagged})")}
    retx = sends["retransmission"].fillna(False).astype(bool).to_numpy()
    recorded = {i + 1 for i, r in enumerate(retx) if r}
    assert len(recorded) >= len(result.flow_ids)
    assert seen == recorded, f"tshark flags frames {sorted(seen)}, the trace {sorted(recorded)}"
    # Each flow's count, as the flow table has it: the retransmitted bytes of its flagged frames.
    for f in result.flow_ids:
        mine = sends.reset_index(drop=True)
        mine = mine[(mine["flow_id"] == f) & (mine.index + 1).isin(seen)]
        row = result.flows.set_index("flow_id").loc[f]
        assert int(mine["payload_bytes"].sum()) == int(row["retransmitted_bytes"])
    # IPv4 header checksums verified (TCP's cannot be: the zero payload is not stored).
    assert {r[0] for r in _tshark(pcap, ["ip.checksum.status"])} == {"1"}
