"""``--set`` override parsing and dotted-path editing (pure Python, no simulator run)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tailcut.config import apply_overrides, load_config, parse_assignment, parse_value, set_path, to_toml


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("4", 4),
        ("-3", -3),
        ("0.5", 0.5),
        ("true", True),
        ("false", False),
        ('"quoted"', "quoted"),
        ("10Gbps", "10Gbps"),
        ("64KB", "64KB"),
        ("5ms", "5ms"),
        ("tcp", "tcp"),
        ("[1, 2]", [1, 2]),
        ('{a = 1, b = "x"}', {"a": 1, "b": "x"}),
        ("", ""),
        ("a b", "a b"),
    ],
)
def test_parse_value_is_toml_scalar_or_string(text: str, expected: object) -> None:
    assert parse_value(text) == expected


def test_parse_assignment_splits_at_first_equals() -> None:
    assert parse_assignment("workload.cdf=a=b") == ("workload.cdf", "a=b")
    assert parse_assignment(" topology.leaves = 4 ") == ("topology.leaves", 4)
    with pytest.raises(ValueError, match=r"key\.path=value"):
        parse_assignment("no-equals")
    with pytest.raises(ValueError, match=r"key\.path=value"):
        parse_assignment("=4")


def test_set_path_nested_tables_and_list_indices() -> None:
    cfg = {"topology": {"leaves": 2}, "schemes": [{"name": "tcp"}, {"name": "dctcp"}]}
    set_path(cfg, "topology.leaves", 8)
    set_path(cfg, "topology.link.rate", "40Gbps")  # missing tables are created
    set_path(cfg, "schemes.1.name", "fuso")
    set_path(cfg, "schemes.0.params.min_rto", "1ms")
    set_path(cfg, "schemes.2", {"name": "cp"})  # index == length appends
    assert cfg == {
        "topology": {"leaves": 8, "link": {"rate": "40Gbps"}},
        "schemes": [{"name": "tcp", "params": {"min_rto": "1ms"}}, {"name": "fuso"}, {"name": "cp"}],
    }


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("schemes.x.name", "indexes a list"),
        ("schemes.5.name", "past the end"),
        ("topology.leaves.deep", "not a table"),
        ("topology..leaves", "empty segment"),
    ],
)
def test_set_path_rejects_bad_paths(path: str, message: str) -> None:
    cfg = {"topology": {"leaves": 2}, "schemes": [{"name": "tcp"}]}
    with pytest.raises(ValueError, match=message):
        set_path(cfg, path, 1)


def test_apply_overrides_copies_and_accepts_strings_or_mapping() -> None:
    base = {"topology": {"leaves": 2}}
    assert apply_overrides(base, ["topology.leaves=4"]) == {"topology": {"leaves": 4}}
    assert apply_overrides(base, {"topology.leaves": "4"}) == {"topology": {"leaves": "4"}}  # typed as given
    assert base == {"topology": {"leaves": 2}}


def test_load_config_from_text_path_and_dict(tmp_path) -> None:
    text = 'name = "x"\n[topology]\nleaves = 3\n'
    file = tmp_path / "x.toml"
    file.write_text(text)
    assert (
        load_config(file)
        == load_config(str(file))
        == load_config(text)
        == {"name": "x", "topology": {"leaves": 3}}
    )
    d = {"a": {"b": 1}}
    loaded = load_config(d)
    loaded["a"]["b"] = 2
    assert d == {"a": {"b": 1}}


def test_to_toml_drops_nulls() -> None:
    assert to_toml({"a": None, "b": {"c": None, "d": 1}}) == "[b]\nd = 1\n"


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_integers_round_trip(value: int) -> None:
    assert parse_value(str(value)) == value


@given(st.from_regex(r"[0-9]{1,4}(KB|MB|ms|us|Gbps)", fullmatch=True))
def test_unit_values_stay_strings(text: str) -> None:
    assert parse_value(text) == text


@given(st.lists(st.integers(min_value=0, max_value=3), min_size=1, max_size=4), st.integers())
def test_set_then_read_back(path_parts: list[int], value: int) -> None:
    keys = [f"k{p}" for p in path_parts]
    cfg: dict = {}
    set_path(cfg, ".".join(keys), value)
    node = cfg
    for k in keys:
        node = node[k]
    assert node == value
