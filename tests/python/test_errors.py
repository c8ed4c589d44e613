"""Malformed experiment files: each gets one error naming the offending field (the text comes from Rust)."""

from __future__ import annotations

from pathlib import Path

import pytest

import tailcut
from conftest import TINY
from tailcut.config import apply_overrides, load_config, to_toml

# (override applied to tiny.toml, field path the error must name). Keep in step with the real schema.
MALFORMED = [
    ({"topology.leaves": 0}, "topology.leaves"),
    ({"topology.leaves": "many"}, "topology.leaves"),
    ({"topology.link_rate": "fast"}, "topology.link_rate"),
    ({"schemes.0.name": "no-such-scheme"}, "name"),
    ({"no_such_field": 1}, "no_such_field"),
]


def malformed_file(tmp_path: Path, override: dict) -> Path:
    path = tmp_path / "bad.toml"
    path.write_text(to_toml(apply_overrides(load_config(TINY), override)))
    return path


@pytest.mark.parametrize(("override", "field"), MALFORMED, ids=[f for _, f in MALFORMED])
def test_validate_names_the_field(
    cli, tmp_path: Path, capsys: pytest.CaptureFixture[str], override, field
) -> None:
    assert cli("validate", malformed_file(tmp_path, override)) == 2
    assert field in capsys.readouterr().err


@pytest.mark.parametrize(("override", "field"), MALFORMED[:2], ids=[f for _, f in MALFORMED[:2]])
def test_api_raises_config_error(override, field) -> None:
    with pytest.raises(tailcut.ConfigError, match=field.replace(".", r"\.")) as info:
        tailcut.run(TINY, overrides=override)
    assert isinstance(info.value, ValueError)


def test_config_error_is_importable_from_package() -> None:
    assert issubclass(tailcut.ConfigError, ValueError)
    assert issubclass(tailcut.SimulationError, RuntimeError)
    assert tailcut.ConfigError.__module__ == "tailcut"
