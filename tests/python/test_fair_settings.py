"""`tailcut validate` shows, per scheme, the settings that decide a comparison and where each came from."""

from __future__ import annotations

import json
from pathlib import Path

from tailcut import _core
from tailcut.config import load_experiment, resolve
from tailcut.fair_settings import scheme_settings

REGISTRY = json.loads(_core.schemes())


def _settings(text: str) -> dict[str, dict[str, tuple[str, str]]]:
    raw = load_experiment(text)
    rows = scheme_settings(raw, resolve(raw), REGISTRY)
    return {name: {s.name: (s.value, s.source) for s in settings} for name, _, settings in rows}


BASE = """
name = "fair"
topology = { kind = "leaf_spine", leaves = 2, spines = 2, hosts_per_leaf = 2 }
[[workload]]
name = "q"
pattern = { kind = "all_to_all" }
fixed = "10KB"
load = 0.1
flows = 10
"""


def test_values_from_the_file_and_defaults_are_told_apart() -> None:
    got = _settings(
        BASE
        + '[[schemes]]\nname = "a"\ntransport = "tcp"\nparams = { min_rto = "5ms" }\n'
        + '[[schemes]]\nname = "b"\ntransport = "fuso"\n'
    )
    assert got["a"]["min_rto"] == ("5ms", "file")
    assert got["a"]["initial_cwnd_segments"] == ("10", "default")
    assert got["a"]["loss_detection"] == ("rack_tlp", "default")
    # The core's rule (without a handshake the initial RTO is the min RTO), as the core resolved it.
    assert got["a"]["initial_rto"] == ("5ms", "default: follows other settings")
    assert got["b"]["min_rto"] == ("200ms", "default")
    assert got["b"]["subflows"][1] == "default"
    assert "subflows" not in got["a"]
    assert got["a"]["host_tsq"] == ("linux", "default")


def test_host_tsq_comes_from_the_scheme_network_when_it_has_one() -> None:
    got = _settings(
        'network = { host_tsq = "128KB" }\n'
        + BASE
        + '[[schemes]]\nname = "a"\ntransport = "tcp"\n'
        + '[[schemes]]\nname = "b"\ntransport = "tcp"\nnetwork = { buffer = "64KB" }\n'
    )
    # A scheme's own network table replaces the experiment's whole: b runs with the default.
    assert got["a"]["host_tsq"] == ("128KB", "file")
    assert got["b"]["host_tsq"] == ("linux", "default")


def test_a_shim_shows_its_min_rto() -> None:
    got = _settings(
        BASE + '[[schemes]]\nname = "t"\ntransport = "tcp"\nshim = { kind = "tracks", alpha = 4 }\n'
    )
    assert got["t"]["shim.alpha"] == ("4.0", "file")  # as the core resolved it (a float)
    assert got["t"]["shim.min_rto"] == ("200ms", "default")


def test_validate_prints_the_settings(cli, capsys, tiny: Path) -> None:
    assert cli("validate", tiny) == 0
    out = capsys.readouterr().out
    block = out[out.index("settings that change results") :]
    assert "    tcp (transport tcp)" in block and "    dctcp (transport dctcp)" in block
    lines = [line.split() for line in block.splitlines()]
    assert ["min_rto", "5ms", "(file)"] in lines
    assert ["ecn", "true", "(default)"] in lines  # dctcp's
    assert ["host_tsq", "linux", "(default)"] in lines


def test_values_are_the_ones_the_core_resolved() -> None:
    got = _settings(
        BASE
        + '[[schemes]]\nname = "h"\ntransport = "tcp"\nparams = { handshake = true }\n'
        + '[[schemes]]\nname = "c"\ntransport = "cloudburst"\n'
        + '[[schemes]]\nname = "r"\ntransport = "cloudburst"\nparams = { nic_rate = "5Gbps" }\n'
    )
    assert got["h"]["initial_rto"] == ("1s", "default")
    assert got["h"]["delayed_ack"] == ("-", "default")
    assert got["c"]["nic_rate"] == ("each host's NIC rate", "default")
    assert got["r"]["nic_rate"] == ("5Gbps", "file")
