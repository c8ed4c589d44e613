"""docs/experiment-file.md is generated from the schema and the registry, and matches the code."""

from __future__ import annotations

from pathlib import Path

import pytest

from tailcut.reference import evaluate, find_root, generate, main
from tailcut.rust_schema import SchemaError, read_items

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "experiment-file.md"


def test_the_checked_in_page_is_the_generated_one() -> None:
    # On failure: python -m tailcut.reference docs/experiment-file.md
    assert PAGE.read_text() == generate(ROOT)


def test_every_experiment_key_and_every_scheme_parameter_is_on_the_page() -> None:
    import json

    from tailcut import _core

    page = PAGE.read_text()
    for key in ("max_time", "stall_timeout", "host_tsq", "hosts_per_leaf", "round_interval", "applies_to"):
        assert f"| `{key}` |" in page
    for scheme in json.loads(_core.schemes()):
        assert f"### {scheme['name']}\n" in page
        for param in scheme["params"]:
            assert f"| `{param['name']}` |" in page


def test_defaults_are_evaluated_from_the_default_functions() -> None:
    page = PAGE.read_text()
    assert '| `max_time` | time | `"10s"` |' in page
    assert '| `stall_timeout` | time | `"300s"` |' in page
    assert '| `link_delay` | time | `"25us"` |' in page  # star
    assert '| `rates` | string | `"fuso-loss"` |' in page
    assert '| `buffer` | size | `"128KB"` |' in page  # [network], from the core


def test_a_new_field_changes_the_page(tmp_path: Path) -> None:
    root = tmp_path / "checkout"
    for rel in ("crates/tailcut-sim/src", "docs"):
        (root / rel).mkdir(parents=True)
    import shutil

    shutil.copytree(
        ROOT / "crates" / "tailcut-sim" / "src", root / "crates" / "tailcut-sim" / "src", dirs_exist_ok=True
    )
    config = root / "crates" / "tailcut-sim" / "src" / "config.rs"
    text = config.read_text().replace(
        "    pub topology: TopologyConfig,",
        "    /// A new knob.\n    #[serde(default)]\n    pub new_knob: u32,\n"
        "    pub topology: TopologyConfig,",
    )
    config.write_text(text)
    page = generate(root)
    assert "| `new_knob` | integer | `0` |" in page and page != PAGE.read_text()
    assert find_root(root / "docs") == root


def test_the_reader_refuses_what_it_does_not_know(tmp_path: Path) -> None:
    source = tmp_path / "x.rs"
    source.write_text("#[derive(Deserialize)]\npub struct X {\n    pub a: u32 = 4,\n}\n")
    with pytest.raises(SchemaError, match="cannot read field"):
        read_items(source)
    with pytest.raises(SchemaError, match="cannot evaluate"):
        evaluate("Rate::gbps(1)", source)


def test_default_expressions() -> None:
    here = Path(__file__)
    assert evaluate("Rate(10_000_000_000)", here) == '"10Gbps"'
    assert evaluate("Dur::from_millis(10_000)", here) == '"10s"'
    assert evaluate("Dur(300 * 1_000_000_000)", here) == '"300s"'
    assert evaluate("Bytes(1500)", here) == '"1500B"'
    assert evaluate("0.002", here) == "0.002"


def test_every_key_has_a_description() -> None:
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| `")]
    assert len(rows) > 200
    assert [row for row in rows if row.rstrip().endswith("|  |")] == []


def test_an_option_is_never_taken_for_the_output_file() -> None:
    written: list[Path] = []
    assert main(["--help"], write=lambda path, _text: written.append(path)) == 0
    assert main(["-x"], write=lambda path, _text: written.append(path)) == 2
    assert written == []
