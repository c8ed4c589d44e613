"""docs/experiment-file.md is generated from the schema and the registry, and matches the code."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from tailcut import _core
from tailcut.reference import SchemaError, generate, main

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "experiment-file.md"


@pytest.fixture(scope="module")
def schema() -> dict[str, Any]:
    return json.loads(_core.experiment_schema())


def test_the_checked_in_page_is_the_generated_one() -> None:
    # On failure: reinstall the core, then python -m tailcut.reference docs/experiment-file.md
    assert PAGE.read_text() == generate()


def test_every_experiment_key_and_every_scheme_parameter_is_on_the_page() -> None:
    page = PAGE.read_text()
    for key in ("max_time", "stall_timeout", "host_tsq", "hosts_per_leaf", "round_interval", "applies_to"):
        assert f"| `{key}` |" in page
    for scheme in json.loads(_core.schemes()):
        assert f"### {scheme['name']}\n" in page
        for param in scheme["params"]:
            assert f"| `{param['name']}` |" in page


def test_defaults_show_in_the_files_units() -> None:
    page = PAGE.read_text()
    assert '| `max_time` | time | `"10s"` |' in page
    # Left out of the resolved config at its default, but the schema still states it.
    assert '| `stall_timeout` | time | `"300s"` |' in page
    assert '| `link_delay` | time | `"25us"` |' in page  # star
    assert '| `host_rate` | rate | `"10Gbps"` |' in page  # leaf_spine
    assert '| `rates` | string | `"fuso-loss"` |' in page
    assert '| `buffer` | size | `"128KB"` |' in page  # [network], from SwitchQueues' Default
    assert '| `host_tsq` | `"linux"` or size | `"linux"` |' in page
    assert '| `request_bytes` | size | `"0B"` |' in page


def test_the_unit_types_say_what_a_file_may_write(schema: dict[str, Any]) -> None:
    defs = schema["$defs"]
    for name, fmt, example in (
        ("Dur", "tailcut-time", "10ms"),
        ("Bytes", "tailcut-size", "64KB"),
        ("Rate", "tailcut-rate", "10Gbps"),
    ):
        assert defs[name]["type"] == ["string", "integer"]
        assert defs[name]["format"] == fmt and defs[name]["examples"] == [example]
    assert {"type": "string", "const": "linux"} in defs["HostTsq"]["anyOf"]


def test_a_new_key_changes_the_page(schema: dict[str, Any]) -> None:
    changed = copy.deepcopy(schema)
    changed["properties"]["new_knob"] = {
        "description": "A new knob.",
        "type": "integer",
        "format": "uint32",
        "default": 0,
    }
    page = generate(changed, registry=[])
    assert "| `new_knob` | integer | `0` | `new_knob = 0` | A new knob. |" in page
    assert page != generate(schema, registry=[])


def test_a_required_key_shows_required_and_comes_first(schema: dict[str, Any]) -> None:
    page = generate(schema, registry=[])
    top = page.split("## Top level")[1].split("## `[topology]`")[0]
    rows = [line.split("|")[1].strip() for line in top.splitlines() if line.startswith("| `")]
    # Required keys in declaration order, then the others alphabetically.
    assert rows[:4] == ["`name`", "`topology`", "`workload`", "`schemes`"]
    assert rows[4:] == sorted(rows[4:])
    assert "| `name` | string | **required** |" in top


def test_a_tagged_enums_variants_become_sections(schema: dict[str, Any]) -> None:
    page = generate(schema, registry=[])
    kinds = [v["properties"]["kind"]["const"] for v in schema["$defs"]["TopologyConfig"]["oneOf"]]
    assert kinds[:2] == ["star", "dumbbell"]
    for kind in kinds:
        assert f'### `kind = "{kind}"`\n' in page
    # A variant that keys default to is marked; one only ever written out (a loss fault's model) is not.
    assert '### `kind = "drop_tail"` (the default)' in page
    assert '### `kind = "none"` (the default)' in page  # incast jitter
    assert page.count('### `kind = "none"`') == 2
    assert "No other keys." in page.split('### `kind = "random_drop"`')[1]


def test_a_table_default_of_all_key_defaults_shows_as_empty(schema: dict[str, Any]) -> None:
    page = generate(schema, registry=[])
    assert "| `network` | [table](#network) | `{}` |" in page
    changed = copy.deepcopy(schema)
    changed["properties"]["network"]["default"]["buffer"] = "1MB"
    assert '`{ aqm = { kind = "drop_tail" }, buffer = "1MB",' in generate(changed, registry=[])


def test_a_key_neither_required_nor_defaulted_nor_optional_is_refused(schema: dict[str, Any]) -> None:
    changed = copy.deepcopy(schema)
    del changed["properties"]["seed"]["default"]
    with pytest.raises(SchemaError, match="seed"):
        generate(changed, registry=[])


def test_every_key_has_a_description() -> None:
    rows = [line for line in PAGE.read_text().splitlines() if line.startswith("| `")]
    assert len(rows) > 200
    assert [row for row in rows if row.rstrip().endswith("|  |")] == []


def test_an_option_is_never_taken_for_the_output_file() -> None:
    written: list[Path] = []
    assert main(["--help"], write=lambda path, _text: written.append(path)) == 0
    assert main(["-x"], write=lambda path, _text: written.append(path)) == 2
    assert written == []
