"""Generate ``docs/experiment-file.md``, the experiment-file reference, from the schema.

    python -m tailcut.reference docs/experiment-file.md     # run from a source checkout

Tables, keys, types, required keys and docs come from the Rust config types (:mod:`tailcut.rust_schema`
reads their source), defaults from their serde defaults (default functions evaluated, the ``[network]``
table's from the core's resolved config), scheme and shim parameters from the scheme registry
(``tailcut schemes``). ``tests/python/test_reference.py`` fails when the checked-in page differs from what
this writes, so the page cannot drift from the code.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tailcut.rust_schema import Field, Item, SchemaError, Variant, constant, function_body, read_items

# The Rust files that hold the experiment schema, relative to the repository root.
SCHEMA_FILES = (
    "crates/tailcut-sim/src/config.rs",
    "crates/tailcut-sim/src/topo/mod.rs",
    "crates/tailcut-sim/src/net/aqm.rs",
    "crates/tailcut-sim/src/net/queue.rs",
    "crates/tailcut-sim/src/net/link.rs",
    "crates/tailcut-sim/src/fault.rs",
    "crates/tailcut-sim/src/workload/config.rs",
)

# Value types the files spell as strings with units (crates/tailcut-proto/src/units.rs), and the few
# types with a hand-written deserialiser.
_SCALARS = {
    "Dur": ("time", '"10ms"'),
    "Bytes": ("size", '"64KB"'),
    "Rate": ("rate", '"10Gbps"'),
    "u8": ("integer", "1"),
    "u32": ("integer", "4"),
    "u64": ("integer", "1000"),
    "usize": ("integer", "4"),
    "f64": ("number", "0.5"),
    "bool": ("boolean", "true"),
    "String": ("string", '"name"'),
    "HostTsq": ('"linux" or size', '"128KB"'),
    "serde_json::Value": ("table", "{}"),
    "serde_json::Map<String, serde_json::Value>": ("table", "{}"),
}


def _ns(expr: str) -> int:
    """An integer literal expression of the config files: sums of products (``300 * 1_000_000_000``)."""
    total = 0
    for term in expr.replace("_", "").split("+"):
        product = 1
        for factor in term.split("*"):
            product *= int(factor)
        total += product
    return total


def _format(value: int, units: list[tuple[str, int]], base: str) -> str:
    for unit, k in units:
        if value >= k and value % k == 0:
            return f"{value // k}{unit}"
    return f"{value}{base}"


def format_duration(ns: int) -> str:
    return _format(ns, [("s", 10**9), ("ms", 10**6), ("us", 10**3)], "ns")


def format_bytes(b: int) -> str:
    return _format(b, [("GB", 10**9), ("MB", 10**6), ("KB", 10**3)], "B")


def format_rate(r: int) -> str:
    return _format(r, [("Tbps", 10**12), ("Gbps", 10**9), ("Mbps", 10**6), ("Kbps", 10**3)], "bps")


_DUR_CALLS = {"from_secs": 10**9, "from_millis": 10**6, "from_micros": 10**3, "from_nanos": 1}


def evaluate(expr: str, file: Path) -> str:
    """A default function's body as TOML (``Rate(1_000_000_000)`` -> ``"1Gbps"``)."""
    expr = re.sub(r"//[^\n]*", "", expr).strip()
    number = r"[0-9][0-9_]*(?:\s*[*+]\s*[0-9][0-9_]*)*"
    if re.fullmatch(r"[0-9][0-9_]*\.[0-9]+|" + number, expr):
        return str(_ns(expr)) if "." not in expr else expr
    if m := re.fullmatch(r"Rate\((" + number + r")\)", expr):
        return f'"{format_rate(_ns(m.group(1)))}"'
    if m := re.fullmatch(r"Bytes\((" + number + r")\)", expr):
        return f'"{format_bytes(_ns(m.group(1)))}"'
    if m := re.fullmatch(r"Dur\((" + number + r")\)", expr):
        return f'"{format_duration(_ns(m.group(1)))}"'
    if (m := re.fullmatch(r"Dur::(\w+)\((" + number + r")\)", expr)) and m.group(1) in _DUR_CALLS:
        return f'"{format_duration(_ns(m.group(2)) * _DUR_CALLS[m.group(1)])}"'
    if m := re.fullmatch(r'"([^"]*)"\.into\(\)', expr):
        return f'"{m.group(1)}"'
    if re.fullmatch(r"[A-Z][A-Z0-9_]*", expr) and (value := constant(file, expr)) is not None:
        return evaluate(value, file)
    raise SchemaError(f"{file}: cannot evaluate the default {expr!r}")


def _inner(ty: str, wrapper: str) -> str | None:
    prefix = f"{wrapper}<"
    return ty[len(prefix) : -1] if ty.startswith(prefix) and ty.endswith(">") else None


@dataclass
class Schema:
    items: dict[str, Item]
    # Anchors of the sections that document a tagged or field-holding type, by type name.
    anchors: dict[str, str]

    def type_name(self, ty: str) -> str:
        if (inner := _inner(ty, "Option")) is not None:
            return self.type_name(inner)
        if (inner := _inner(ty, "Vec")) is not None:
            return f"list of {self.type_name(inner)}"
        if m := re.fullmatch(r"\[(\w+); (\d+)\]", ty):
            return f"{m.group(2)} x {self.type_name(m.group(1))}"
        if ty in _SCALARS:
            return _SCALARS[ty][0]
        item = self.items.get(ty)
        if item is None:
            raise SchemaError(f"no reference type for {ty!r}")
        if item.kind == "enum" and not item.tagged:
            return "one of " + ", ".join(f'`"{v.name}"`' for v in item.variants)
        anchor = self.anchors.get(ty)
        shape = "table (`kind = ...`)" if item.tagged else "table"
        return f"[{shape}](#{anchor})" if anchor else shape

    def type_default(self, ty: str) -> str:
        """What ``#[serde(default)]`` gives a field of this type, as TOML (``-`` for absent)."""
        if ty.startswith("Option<"):
            return "-"
        if ty.startswith("Vec<"):
            return "[]"
        defaults = {"Dur": '"0s"', "Bytes": '"0B"', "bool": "false", "String": '""', "f64": "0"}
        if ty in defaults:
            return defaults[ty]
        if ty in ("u8", "u32", "u64", "usize"):
            return "0"
        if ty.startswith("serde_json::Map"):
            return "{}"
        item = self.items.get(ty)
        if item is not None and item.kind == "struct":
            return "{}"  # a table whose keys all take their defaults
        if item is not None and item.kind == "enum":
            chosen = [v for v in item.variants if v.is_default]
            if len(chosen) == 1:
                return f'{{ kind = "{chosen[0].name}" }}' if item.tagged else f'"{chosen[0].name}"'
        raise SchemaError(f"no default for type {ty!r}")

    def example(self, ty: str) -> str:
        if (inner := _inner(ty, "Option")) is not None:
            return self.example(inner)
        if (inner := _inner(ty, "Vec")) is not None:
            return f"[{self.example(inner)}]"
        if m := re.fullmatch(r"\[(\w+); (\d+)\]", ty):
            return "[" + ", ".join([self.example(m.group(1))] * int(m.group(2))) + "]"
        if ty == "[String; 2]":
            return '["a", "b"]'
        if ty in _SCALARS:
            return _SCALARS[ty][1]
        item = self.items[ty]
        if item.kind == "enum" and not item.tagged:
            return f'"{item.variants[-1].name}"'
        if item.tagged:
            return f'{{ kind = "{_example_variant(item).name}", ... }}'
        return "{ ... }"


def _example_variant(item: Item) -> Variant:
    with_fields = [v for v in item.variants if v.fields or v.newtype]
    return (with_fields or item.variants)[0]


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _default(schema: Schema, item: Item, f: Field, overrides: dict[str, Any]) -> str:
    if f.name in overrides:
        return overrides[f.name]
    if f.default == "required":
        return "**required**"
    if f.default.startswith("fn:"):
        return evaluate(function_body(item.file, f.default[3:]), item.file)
    return schema.type_default(f.type)


def field_rows(
    schema: Schema, item: Item, fields: list[Field], overrides: dict[str, Any] | None = None
) -> list[str]:
    rows = ["| key | type | default | example | description |", "| --- | --- | --- | --- | --- |"]
    for f in fields:
        default = _default(schema, item, f, overrides or {})
        example = (
            default if default not in ("**required**", "-", "[]", '""', "{}") else schema.example(f.type)
        )
        shown = default if default == "**required**" else f"`{default}`"
        rows.append(
            f"| `{f.name}` | {schema.type_name(f.type)} | {_cell(shown)} "
            f"| `{_cell(f'{f.name} = {example}')}` | {_cell(f.doc)} |"
        )
    return rows


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


def param_rows(params: list[dict[str, Any]]) -> list[str]:
    rows = ["| key | default | description |", "| --- | --- | --- |"]
    for p in params:
        default = _toml(p.get("default"))
        rows.append(f"| `{p['name']}` | `{_cell(default)}` | {_cell(p.get('doc') or '')} |")
    return rows


def github_anchor(title: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation but ``-`` and ``_`` dropped."""
    return re.sub(r"[^a-z0-9 _-]", "", title.lower()).replace(" ", "-")


@dataclass
class Section:
    title: str
    type: str
    intro: str

    @property
    def anchor(self) -> str:
        return github_anchor(self.title)


# The page's sections, in order: the table (as an experiment file spells it) and the Rust type.
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

HEADER = """# The experiment file

<!-- Generated by `python -m tailcut.reference docs/experiment-file.md` from the Rust config types and
the scheme registry; do not edit by hand (tests/python/test_reference.py checks it). -->

An experiment is one TOML file: a topology, switch queues, faults, a workload and the schemes to compare
(`experiments/quickstart.toml` is a small complete one). Every table rejects unknown keys, and an error
names the field (`topology.leaves: ...`). `tailcut validate FILE` checks a file without running it.

Units: times are strings such as `"10ms"`, `"25us"`, `"2s"` (or integer nanoseconds); sizes `"64KB"`,
`"1.5MB"`, `"512KiB"` (decimal KB/MB/GB, binary KiB/MiB/GiB, or integer bytes); rates `"10Gbps"`,
`"100Mbps"` (or integer bits/s). A default of `-` means the key is absent unless given. Relative file
paths (`topology.path`, `workload[].cdf`, `faults[].rates`) resolve against the experiment file's folder
(docs/simulator.md, "File paths in an experiment"). The examples show the shape of a value; the docs of
each key say which values make sense.
"""


def _load_schema(root: Path) -> Schema:
    items: dict[str, Item] = {}
    for rel in SCHEMA_FILES:
        items.update(read_items(root / rel))
    anchors = {s.type: s.anchor for s in SECTIONS}
    return Schema(items, anchors)


def _network_defaults() -> dict[str, str]:
    """``[network]``'s defaults as the core resolves them (its struct-level Default is Rust code)."""
    from tailcut.config import resolve

    probe = {
        "name": "probe",
        "topology": {"kind": "star", "hosts": 2},
        "workload": [
            {"name": "w", "pattern": {"kind": "all_to_all"}, "fixed": "1KB", "flows": 1, "load": 0.01}
        ],
        "schemes": [{"name": "tcp", "transport": "tcp"}],
    }
    return {k: _toml(v) for k, v in resolve(probe)["network"].items()}


def _variant_fields(schema: Schema, variant: Variant) -> tuple[Item | None, list[Field]]:
    if variant.newtype is None:
        return None, variant.fields
    item = schema.items[variant.newtype]
    return item, item.variants[0].fields


def _section(schema: Schema, section: Section, network: dict[str, str]) -> list[str]:
    item = schema.items[section.type]
    out = [f"## {section.title}", "", section.intro]
    if item.doc:
        out += ["", item.doc]
    out.append("")
    if item.kind == "struct":
        overrides = network if section.type == "SwitchQueues" else {}
        return [*out, *field_rows(schema, item, item.variants[0].fields, overrides), ""]
    for variant in item.variants:
        owner, fields = _variant_fields(schema, variant)
        doc = owner.doc if owner is not None else variant.doc
        default = " (the default)" if variant.is_default else ""
        out += [f'### `kind = "{variant.name}"`{default}', ""]
        if doc:
            out += [doc, ""]
        if fields:
            out += [*field_rows(schema, owner or item, fields), ""]
        else:
            out += ["No other keys.", ""]
    return out


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


def generate(root: Path, registry: list[dict[str, Any]] | None = None,
             network: dict[str, str] | None = None) -> str:  # fmt: skip
    """The page for the checkout at ``root`` (registry and network defaults from the installed core)."""
    from tailcut import _core

    schema = _load_schema(root)
    registry = registry if registry is not None else json.loads(_core.schemes())
    network = network if network is not None else _network_defaults()
    lines = [HEADER, "## Contents", ""]
    lines += [f"- [{s.title}](#{s.anchor})" for s in SECTIONS] + [
        "- [Scheme parameters](#scheme-parameters)",
        "",
    ]
    for section in SECTIONS:
        lines += _section(schema, section, network)
    lines += _registry_section(registry)
    return "\n".join(lines).rstrip() + "\n"


def find_root(start: Path) -> Path:
    """The source checkout holding ``start`` (the folder with the schema files)."""
    for folder in [start.resolve(), *start.resolve().parents]:
        if all((folder / rel).is_file() for rel in SCHEMA_FILES):
            return folder
    raise SchemaError(f"{start} is not inside a tailcut source checkout (no {SCHEMA_FILES[0]})")


def main(argv: list[str] | None = None, write: Callable[[Path, str], Any] = Path.write_text) -> int:
    args = sys.argv[1:] if argv is None else argv
    # An option is never an output path: `--help` once wrote the page into a file named "--help".
    if len(args) != 1 or args[0].startswith("-"):
        print("usage: python -m tailcut.reference docs/experiment-file.md", file=sys.stderr)
        return 0 if args in (["-h"], ["--help"]) else 2
    out = Path(args[0])
    write(out, generate(find_root(out.parent if out.parent != Path() else Path.cwd())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
