"""Generate ``docs/experiment-file.md``, the experiment-file reference, from the code.

    python -m tailcut.reference docs/experiment-file.md

Tables, keys, types, defaults, required keys and docs come from the JSON schema of the Rust config types
(``tailcut._core.experiment_schema()``: schemars derives it from the types, their serde attributes and doc
comments, defaults included), scheme and shim parameters from the scheme registry (``tailcut schemes``).
Both are read from the installed core, so reinstall it after changing the Rust code.
``tests/python/test_reference.py`` fails when the checked-in page differs from what this writes, so the
page cannot drift from the code.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

# The unit types' schemas (crates/tailcut-proto/src/units.rs) name their syntax with a format.
_UNIT_FORMATS = {"tailcut-time": "time", "tailcut-size": "size", "tailcut-rate": "rate"}

# Examples of plain values, where the schema gives none. A key's own default is its example when it has one.
_EXAMPLES = {"string": '"name"', "number": "0.5", "boolean": "true"}
_INTEGER_EXAMPLES = {"uint8": "1", "uint64": "1000"}  # by the schema's format; others 4

# Defaults that show nothing of a value's shape: the example column then shows one.
_SHAPELESS = ("**required**", "-", "[]", '""', "{}")


class SchemaError(ValueError):
    """A schema construct the page does not know how to render; names the key."""


def _toml(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, str):
        return json.dumps(value)
    if isinstance(value, dict):
        return "{ " + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    return str(value)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _one_line(doc: str) -> str:
    """A doc comment (schemars keeps its line breaks) as one line of a table cell."""
    return " ".join(doc.split())


def _paragraphs(doc: str) -> str:
    """A doc comment as Markdown paragraphs: lines of a paragraph joined, blank lines kept."""
    return "\n\n".join(_one_line(p) for p in re.split(r"\n\s*\n", doc.strip()) if p.strip())


def github_anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-`` and ``_`` dropped."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    return ref.rsplit("/", 1)[-1] if ref else None


def _without_null(schema: dict[str, Any]) -> dict[str, Any]:
    """The value schema of an ``Option`` (schemars allows ``null`` besides it); others as they are."""
    branches = schema.get("anyOf")
    if branches and {"type": "null"} in branches:
        rest = [b for b in branches if b != {"type": "null"}]
        return rest[0] if len(rest) == 1 else {**schema, "anyOf": rest}
    types = schema.get("type")
    if isinstance(types, list) and "null" in types:
        rest = [t for t in types if t != "null"]
        return {**schema, "type": rest[0] if len(rest) == 1 else rest}
    return schema


def _nullable(schema: dict[str, Any]) -> bool:
    return _without_null(schema) is not schema


def _variants(schema: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The variants of a ``kind``-tagged enum (tables with a constant ``kind``), else ``None``."""
    variants = schema.get("oneOf")
    if variants and all("kind" in v.get("properties", {}) for v in variants):
        return variants
    return None


def _kind(variant: dict[str, Any]) -> str:
    return variant["properties"]["kind"]["const"]


def _string_choices(schema: dict[str, Any]) -> list[str] | None:
    """The values of an enum of plain strings (``enum``, or a ``oneOf`` of documented constants)."""
    if "enum" in schema:
        return schema["enum"]
    variants = schema.get("oneOf")
    if variants and all(v.get("type") == "string" and "const" in v for v in variants):
        return [v["const"] for v in variants]
    return None


def _ordered_keys(schema: dict[str, Any]) -> list[str]:
    """Required keys first, in the order the Rust type declares them (schemars keeps that order in
    ``required``), then the others alphabetically (its ``properties`` are sorted: keeping their order
    needs serde_json's ``preserve_order``, which would reorder the resolved config the core writes)."""
    required = [k for k in schema.get("required", []) if k != "kind"]
    rest = sorted(k for k in schema.get("properties", {}) if k not in required and k != "kind")
    return required + rest


@dataclass
class Section:
    title: str
    type: str
    intro: str

    @property
    def anchor(self) -> str:
        return github_anchor(self.title)


# The page's sections, in order: the table (as an experiment file spells it) and the Rust type (its
# name in the schema's `$defs`; the root is `Experiment`).
SECTIONS = (
    Section("Top level", "Experiment", "Keys at the top of the file, outside any table."),
    Section("`[topology]`", "TopologyConfig", "The network's shape; `kind` picks one of:"),
    Section("`[network]`", "SwitchQueues", "Queues of every switch port and host NIC."),
    Section("Queue disciplines", "AqmConfig", "`network.aqm`, `network.host_aqm`, `classes[].aqm`."),
    Section("Traffic classes", "ClassConfig", "Each entry of `network.classes` / `host_classes`."),
    Section("Class scheduling", "SchedConfig", "`network.sched`."),
    Section("`[[faults]]`", "FaultConfig", "Scheduled link faults; `kind` picks one of:"),
    Section("Links", "LinkRef", "`faults[].link`: which link a fault hits."),
    Section("Loss models", "LossConfig", "`faults[].model` of a `loss` fault."),
    Section("`[[workload]]`", "WorkloadComponent", "One source of flows; several are merged."),
    Section("Traffic patterns", "Pattern", "`workload[].pattern`: who sends to whom."),
    Section("Incast jitter", "Jitter", "`workload[].pattern.jitter` of an `incast` pattern."),
    Section("`[[schemes]]`", "SchemeConfig", "Each scheme runs the same flows on its own copy."),
    Section("`[other_traffic]`", "OtherTraffic",
            "The transport of workload components a scheme's `applies_to` leaves out."),
)  # fmt: skip


class Schema:
    """The JSON schema of ``Experiment`` with what the page needs of it."""

    def __init__(self, root: dict[str, Any]) -> None:
        self.defs: dict[str, dict[str, Any]] = dict(root.get("$defs", {}))
        self.defs[root.get("title", "Experiment")] = {k: v for k, v in root.items() if k != "$defs"}
        self.anchors = {s.type: s.anchor for s in SECTIONS}
        self.default_kinds = self._default_kinds()

    def _default_kinds(self) -> dict[str, set[str]]:
        """For each tagged enum, the kinds that keys of its type default to (its variant "the default")."""
        kinds: dict[str, set[str]] = {}

        def visit(node: Any) -> None:
            if isinstance(node, dict):
                for prop in node.get("properties", {}).values():
                    name = _ref_name(_without_null(prop))
                    default = prop.get("default")
                    if name and isinstance(default, dict) and "kind" in default:
                        kinds.setdefault(name, set()).add(default["kind"])
                for value in node.values():
                    visit(value)
            elif isinstance(node, list):
                for value in node:
                    visit(value)

        visit(self.defs)
        return kinds

    def target(self, schema: dict[str, Any]) -> tuple[str | None, dict[str, Any]]:
        """A key's value schema, through ``Option`` and ``$ref``, with the type's name if it has one."""
        schema = _without_null(schema)
        name = _ref_name(schema)
        return (name, self.defs[name]) if name else (None, schema)

    def type_name(self, schema: dict[str, Any]) -> str:
        name, schema = self.target(schema)
        if schema.get("format") in _UNIT_FORMATS:
            return _UNIT_FORMATS[schema["format"]]
        if "const" in schema:
            return f"`{json.dumps(schema['const'])}`"
        if (choices := _string_choices(schema)) is not None:
            return "one of " + ", ".join(f"`{json.dumps(c)}`" for c in choices)
        if "anyOf" in schema:
            return " or ".join(self.type_name(b) for b in schema["anyOf"])
        if _variants(schema) is not None or "properties" in schema:
            shape = "table (`kind = ...`)" if _variants(schema) is not None else "table"
            anchor = self.anchors.get(name or "")
            return f"[{shape}](#{anchor})" if anchor else shape
        kind = schema.get("type")
        if kind == "array":
            item = self.type_name(schema["items"])
            n = schema.get("maxItems")
            return f"{n} x {item}" if n is not None and n == schema.get("minItems") else f"list of {item}"
        if kind == "object":
            return "table"
        if kind in ("string", "integer", "number", "boolean"):
            return kind
        raise SchemaError(f"no page type for the schema {schema}")

    def example(self, schema: dict[str, Any]) -> str:
        _, schema = self.target(schema)
        if schema.get("examples"):
            return _toml(schema["examples"][0])
        if "const" in schema:
            return _toml(schema["const"])
        if (choices := _string_choices(schema)) is not None:
            return _toml(choices[-1])
        if "anyOf" in schema:
            return self.example(schema["anyOf"][-1])
        if (variants := _variants(schema)) is not None:
            with_keys = [v for v in variants if len(v.get("properties", {})) > 1]
            return f'{{ kind = "{_kind((with_keys or variants)[0])}", ... }}'
        if "properties" in schema:
            return "{ ... }"
        kind = schema.get("type")
        if kind == "array":
            item = self.example(schema["items"])
            n = schema.get("maxItems")
            return "[" + ", ".join([item] * (n if n is not None and n == schema.get("minItems") else 1)) + "]"
        if kind == "object":
            return "{}"
        if kind == "integer":
            return _INTEGER_EXAMPLES.get(schema.get("format", ""), "4")
        if kind in _EXAMPLES:
            return _EXAMPLES[kind]
        raise SchemaError(f"no example for the schema {schema}")

    def default(self, key: str, prop: dict[str, Any], required: bool) -> str:
        """A key's default as TOML, ``**required**``, or ``-`` for a key absent unless given."""
        if required:
            return "**required**"
        if "default" not in prop:
            if not _nullable(prop):
                raise SchemaError(f"{key}: neither required, nor with a default, nor optional")
            return "-"
        value = prop["default"]
        _, target = self.target(prop)
        fields = target.get("properties", {})
        if (
            isinstance(value, dict)
            and fields
            and all(k in fields and fields[k].get("default") == v for k, v in value.items())
        ):
            return "{}"  # a table whose keys all take their defaults
        return _toml(value)

    def field_rows(self, schema: dict[str, Any]) -> list[str]:
        rows = ["| key | type | default | example | description |", "| --- | --- | --- | --- | --- |"]
        required = set(schema.get("required", []))
        for key in _ordered_keys(schema):
            prop = schema["properties"][key]
            default = self.default(key, prop, key in required)
            example = default if default not in _SHAPELESS else self.example(prop)
            shown = default if default == "**required**" else f"`{default}`"
            rows.append(
                f"| `{key}` | {self.type_name(prop)} | {_cell(shown)} "
                f"| `{_cell(f'{key} = {example}')}` | {_cell(_one_line(prop.get('description', '')))} |"
            )
        return rows

    def section(self, section: Section) -> list[str]:
        schema = self.defs[section.type]
        out = [f"## {section.title}", "", section.intro]
        if schema.get("description"):
            out += ["", _paragraphs(schema["description"])]
        out.append("")
        variants = _variants(schema)
        if variants is None:
            return [*out, *self.field_rows(schema), ""]
        defaults = self.default_kinds.get(section.type, set())
        for variant in variants:
            kind = _kind(variant)
            marker = " (the default)" if defaults == {kind} else ""
            out += [f'### `kind = "{kind}"`{marker}', ""]
            if variant.get("description"):
                out += [_paragraphs(variant["description"]), ""]
            if _ordered_keys(variant):
                out += [*self.field_rows(variant), ""]
            else:
                out += ["No other keys.", ""]
        return out


def param_rows(params: list[dict[str, Any]]) -> list[str]:
    rows = ["| key | default | description |", "| --- | --- | --- |"]
    for p in params:
        default = _toml(p.get("default"))
        rows.append(f"| `{p['name']}` | `{_cell(default)}` | {_cell(p.get('doc') or '')} |")
    return rows


HEADER = """# The experiment file

<!-- Generated by `python -m tailcut.reference docs/experiment-file.md` from the JSON schema of the Rust
config types (`tailcut._core.experiment_schema()`) and the scheme registry; do not edit by hand
(tests/python/test_reference.py checks it). -->

An experiment is one TOML file: a topology, switch queues, faults, a workload and the schemes to compare
(`experiments/quickstart.toml` is a small complete one). Every table rejects unknown keys, and an error
names the field (`topology.leaves: ...`). `tailcut validate FILE` checks a file without running it.

Units: times are strings such as `"10ms"`, `"25us"`, `"2s"` (or integer nanoseconds); sizes `"64KB"`,
`"1.5MB"`, `"512KiB"` (decimal KB/MB/GB, binary KiB/MiB/GiB, or integer bytes); rates `"10Gbps"`,
`"100Mbps"` (or integer bits/s). A default of `-` means the key is absent unless given. Relative file
paths (`topology.path`, `workload[].cdf`, `faults[].rates`) resolve against the experiment file's folder
(docs/simulator.md, "File paths in an experiment"). The examples show the shape of a value; the docs of
each key say which values make sense. Each table lists its required keys first, then the others in
alphabetical order.
"""


def _registry_section(registry: list[dict[str, Any]]) -> list[str]:
    out = [
        "## Scheme parameters",
        "",
        "`schemes[].params` of each `transport` (from the scheme registry, as `tailcut schemes NAME` shows"
        " them), then the host shims (`schemes[].shim = { kind = NAME, ... }`).",
        "",
    ]
    for entry in registry:
        how = (
            f'`shim = {{ kind = "{entry["name"]}" }}`'
            if entry.get("kind") == "shim"
            else f'`transport = "{entry["name"]}"`'
        )
        out += [f"### {entry['name']}", "", f"{how}: {entry.get('description', '')}", ""]
        params = entry.get("params", [])
        out += [*param_rows(params), ""] if params else ["No parameters.", ""]
    return out


def generate(schema: dict[str, Any] | None = None, registry: list[dict[str, Any]] | None = None) -> str:
    """The page for the given JSON schema of ``Experiment`` and scheme registry (by default the
    installed core's)."""
    from tailcut import _core

    schema = schema if schema is not None else json.loads(_core.experiment_schema())
    registry = registry if registry is not None else json.loads(_core.schemes())
    page = Schema(schema)
    lines = [HEADER, "## Contents", ""]
    lines += [f"- [{s.title}](#{s.anchor})" for s in SECTIONS] + [
        "- [Scheme parameters](#scheme-parameters)",
        "",
    ]
    for section in SECTIONS:
        lines += page.section(section)
    lines += _registry_section(registry)
    return "\n".join(lines).rstrip() + "\n"


def main(argv: list[str] | None = None, write: Callable[[Path, str], Any] = Path.write_text) -> int:
    args = sys.argv[1:] if argv is None else argv
    # An option is never an output path: `--help` once wrote the page into a file named "--help".
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m tailcut.reference docs/experiment-file.md", file=sys.stderr)
        return 0 if args in (["-h"], ["--help"]) else 2
    write(Path(args[0]), generate())
    return 0


if __name__ == "__main__":
    sys.exit(main())
