"""Malformed experiment files: each gets one error naming the offending field (the text comes from Rust)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import tailcut
from conftest import TINY
from tailcut.config import apply_overrides, load_config, to_toml

# (override applied to tiny.toml, text the error must contain: the field path as the core spells it).
MALFORMED = [
    pytest.param({"topology.leaves": 0}, "topology.leaves", id="leaves-zero"),
    pytest.param({"no_such_field": 1}, "no_such_field", id="unknown-top-level"),
    pytest.param({"network.buffer": "lots"}, "network.buffer", id="bad-size"),
    pytest.param({"workload.0.load": 2}, "workload[0].load", id="load-out-of-range"),
    pytest.param({"workload.0.cdf_typo": "x"}, "workload[0]", id="unknown-workload-field"),
    pytest.param({"schemes.0.transport": "nope"}, "schemes[0].transport", id="unknown-transport"),
    pytest.param({"faults.0.model.p": 1.5}, "faults[0].model", id="probability"),
    pytest.param({"max_time": "soon"}, "max_time", id="bad-duration"),
    pytest.param(
        {"topology.leaves": "many"},
        "topology.leaves",
        id="leaves-type",
    ),
    pytest.param(
        {"topology.host_rate": "fast"},
        "topology.host_rate",
        id="bad-rate",
    ),
]


def malformed_file(tmp_path: Path, override: dict) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(to_toml(apply_overrides(load_config(TINY), override)))
    return path


@pytest.mark.parametrize(("override", "field"), MALFORMED)
def test_validate_names_the_field(
    cli, tmp_path: Path, capsys: pytest.CaptureFixture[str], override, field
) -> None:
    assert cli("validate", malformed_file(tmp_path, override)) == 2
    assert field in capsys.readouterr().err


@pytest.mark.parametrize(("override", "field"), MALFORMED[:4])
def test_api_raises_config_error(override, field) -> None:
    with pytest.raises(tailcut.ConfigError, match=re.escape(field)) as info:
        tailcut.run(TINY, overrides=override)
    assert isinstance(info.value, ValueError)


def test_config_error_is_importable_from_package() -> None:
    assert issubclass(tailcut.ConfigError, ValueError)
    assert issubclass(tailcut.SimulationError, RuntimeError)
    assert tailcut.ConfigError.__module__ == "tailcut"
