"""The contract between tailcut._core and the Python front: names, JSON shapes, exception classes."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest

import tailcut
from conftest import TINY
from tailcut import _core
from tailcut.config import load_config, to_json
from tailcut.results import FLOW_COLUMNS, PORT_COLUMNS


def test_version_matches_package_metadata() -> None:
    assert _core.version() == tailcut.__version__ == version("tailcut")


def test_schemes_json_shape() -> None:
    schemes = json.loads(_core.schemes())
    assert schemes and isinstance(schemes, list)
    for scheme in schemes:
        assert {"name", "kind", "description", "params"} <= set(scheme)
        assert scheme["kind"] in ("transport", "shim")
        assert scheme["params"], f"{scheme['name']} lists no parameters"
        for param in scheme["params"]:
            assert {"name", "default", "doc"} == set(param) and param["name"] and param["doc"], param
    assert "tcp" in {s["name"] for s in schemes}


def test_run_document_shape() -> None:
    document = json.loads(_core.run(to_json(load_config(TINY)), 1))
    assert {"flows", "ports", "runs", "resolved_config"} <= set(document)
    assert set(FLOW_COLUMNS) <= set(document["flows"])
    assert set(PORT_COLUMNS) <= set(document["ports"])
    lengths = {len(values) for values in document["flows"].values()}
    assert len(lengths) == 1 and lengths.pop() > 0  # every column has one value per flow
    for run in document["runs"]:
        assert {"scheme", "events", "packet_hops", "wall_seconds", "sim_end_ns", "conservation"} <= set(run)
        assert {"delivered", "dropped", "in_flight", "ok"} <= set(run["conservation"])


def test_keyword_arguments_and_none_progress() -> None:
    text = to_json(load_config(TINY))
    a = json.loads(_core.run(config_json=text, seed=None, progress=None))
    b = json.loads(_core.run(text))
    assert a["flows"] == b["flows"]  # runs[] differs only in wall_seconds


def test_invalid_json_is_config_error() -> None:
    with pytest.raises(tailcut.ConfigError):
        _core.validate("{not json")
    with pytest.raises(tailcut.ConfigError):
        _core.run("{not json")


def test_config_error_names_the_field_as_an_attribute() -> None:
    config = load_config(TINY)
    config["schemes"][0]["params"] = {"min_rto": "soon"}
    with pytest.raises(tailcut.ConfigError) as info:
        _core.validate(to_json(config))
    assert info.value.path == "schemes[0].params.min_rto"
    assert info.value.reason and str(info.value).startswith("schemes[0].params.min_rto: ")


def test_progress_none_return_means_continue() -> None:
    calls: list[float] = []
    text = to_json(load_config(TINY))
    _core.run(text, None, calls.append)  # list.append returns None: must not cancel
    assert all(0.0 <= f <= 1.0 for f in calls)
    assert calls == sorted(calls)
