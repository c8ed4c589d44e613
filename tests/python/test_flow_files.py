"""Interoperation (issue #22 item 4): workloads read from htsim connection matrices and CSV flow lists run
end to end, and ``tailcut run`` writes the flow table as CSV beside the Parquet."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

import tailcut

EXPERIMENT = """
name = "from-file"
seed = 1
max_time = "1s"

[topology]
kind = "leaf_spine"
leaves = 2
spines = 2
hosts_per_leaf = 4
host_rate = "10Gbps"
fabric_rate = "40Gbps"
link_delay = "2us"

[[workload]]
name = "file"
pattern = {{ kind = "{kind}", path = "{path}" }}

[[schemes]]
name = "tcp"
transport = "tcp"
"""

# (src, dst, start_ns, size_bytes), deliberately not in start order.
FLOWS = [(0, 5, 20_000, 65_536), (3, 7, 0, 1_000), (6, 1, 7_500, 300_000), (2, 4, 7_500, 12_345)]


def _matrix() -> str:
    lines = [f"{s}->{d} id {i + 1} start {t * 1000} size {b}" for i, (s, d, t, b) in enumerate(FLOWS)]
    return "Nodes 8\nConnections 4\n" + "\n".join(lines) + "\n"


def _csv() -> str:
    return "src,dst,start,size\n" + "".join(f"{s},{d},{t}ns,{b}\n" for s, d, t, b in FLOWS)


def _experiment(folder: Path, kind: str, name: str, text: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_text(text)
    exp = folder / "exp.toml"
    exp.write_text(EXPERIMENT.format(kind=kind, path=name))
    return exp


@pytest.mark.parametrize(
    ("kind", "name", "text"), [("connection_matrix", "w.cm", _matrix()), ("flow_csv", "w.csv", _csv())]
)
def test_a_flow_file_runs_and_its_flows_appear(cli, tmp_path: Path, kind: str, name: str, text: str) -> None:
    # The flow file's path is relative to the experiment file's folder, not to the working directory
    # (the cli fixture's tmp_path).
    exp = _experiment(tmp_path / "exp", kind, name, text)
    assert cli("run", exp, "--out", tmp_path / "out") == 0
    flows = pd.read_parquet(tmp_path / "out" / "flows.parquet")
    got = sorted(zip(flows.src, flows.dst, flows.start_ns, flows.size_bytes, strict=True))
    assert got == sorted(FLOWS)
    assert flows.completed.all()
    # Numbered in start order; equal starts keep the file's order.
    ordered = flows.sort_values("flow_id")
    assert list(zip(ordered.src, ordered.dst, strict=True)) == [(3, 7), (6, 1), (2, 4), (0, 5)]


def test_run_writes_the_flow_table_as_csv_too(cli, tmp_path: Path) -> None:
    exp = _experiment(tmp_path, "flow_csv", "w.csv", _csv())
    assert cli("run", exp, "--out", tmp_path / "out") == 0
    parquet = pd.read_parquet(tmp_path / "out" / "flows.parquet")
    csv = pd.read_csv(tmp_path / "out" / "flows.csv")
    assert list(csv.columns) == list(parquet.columns)
    pd.testing.assert_frame_equal(csv, parquet, check_dtype=False)


def test_a_bad_line_is_one_error_naming_file_line_and_field(cli, tmp_path: Path, capsys) -> None:
    exp = _experiment(tmp_path, "connection_matrix", "w.cm", _matrix().replace("2->4", "2->9"))
    assert cli("validate", exp) == 2
    err = capsys.readouterr().err.strip().splitlines()
    # The file is named by its path resolved against the experiment's folder.
    assert err == [
        f"tailcut: error: workload[0].pattern.path: {tmp_path / 'w.cm'} line 6, field dst: host 9 is out "
        "of range (the topology has 8 hosts, 0..8)"
    ]
    assert cli("run", exp, "--out", tmp_path / "out") == 2
    assert capsys.readouterr().err.strip().splitlines()[-1] == err[0]
    assert not (tmp_path / "out").exists()
    with pytest.raises(tailcut.ConfigError, match=r"w\.cm line 6, field dst"):
        tailcut.run(exp)


def test_a_runs_flows_csv_runs_back_as_the_same_flows(cli, tiny: Path, tmp_path: Path) -> None:
    """`flows.csv` of `tailcut run` is a `flow_csv` file (issue #43): an experiment whose component names
    it runs exactly the flows of the first run (hosts, sizes, starts, ids), whatever the schemes."""
    from tailcut.config import load_config
    from tailcut.results import Result

    assert cli("run", tiny, "--out", tmp_path / "first") == 0
    csv = tmp_path / "first" / "flows.csv"
    again = load_config(tiny)
    again.pop("faults", None)
    again["schemes"] = again["schemes"][:1]
    component = again["workload"][0]["name"]
    again["workload"] = [{"name": component, "pattern": {"kind": "flow_csv", "path": str(csv)}}]
    replay = tailcut.run(again).flows
    first = Result.load(tmp_path / "first").flows
    first = first[first["scheme"] == again["schemes"][0]["name"]]
    columns = ["flow_id", "component", "src", "dst", "start_ns", "size_bytes"]
    pd.testing.assert_frame_equal(
        replay[columns].reset_index(drop=True), first[columns].reset_index(drop=True), check_dtype=False
    )
