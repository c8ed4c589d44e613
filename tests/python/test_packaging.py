"""The package ships its type information (PEP 561): a ``py.typed`` marker beside its modules, which
maturin packs with everything under ``python/tailcut`` (``python-source = "python"``)."""

from __future__ import annotations

from pathlib import Path

import tomllib

import tailcut

ROOT = Path(__file__).resolve().parents[2]


def test_py_typed_marker_is_in_the_package() -> None:
    assert (Path(tailcut.__file__).parent / "py.typed").is_file()


def test_maturin_packs_the_whole_python_source() -> None:
    tool = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["maturin"]
    assert tool["python-source"] == "python" and tool["module-name"].startswith("tailcut.")
    # Nothing excludes the marker from the wheel.
    assert "py.typed" not in str(tool.get("exclude", ""))
