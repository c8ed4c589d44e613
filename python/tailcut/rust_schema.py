"""Read the experiment schema from the Rust config types' source: structs, ``kind``-tagged enums, their
fields' types, serde defaults and doc comments.

The reference page (:mod:`tailcut.reference`) is generated from this, so a field added, renamed, retyped
or re-documented in Rust changes the page, and the test that compares the page with the checked-in copy
fails until it is regenerated. The reader knows the subset of Rust the config files use (derive'd serde
types, ``#[serde(default)]``, ``#[serde(default = "fn")]`` with simple bodies); anything else raises, so
a new construct is noticed rather than dropped.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path


class SchemaError(ValueError):
    """Source the reader does not understand; names the file and item."""


@dataclass
class Field:
    name: str
    type: str
    doc: str
    # "required", "type" (the type's own default: 0, empty, none), or "fn:NAME" (a default function).
    default: str


@dataclass
class Variant:
    """A struct, or one variant of a ``kind``-tagged enum (``fields`` empty for a unit variant)."""

    name: str
    doc: str
    fields: list[Field] = field(default_factory=list)
    # A newtype variant (`Star(Star)`) names the struct holding its fields.
    newtype: str | None = None
    is_default: bool = False


@dataclass
class Item:
    name: str
    doc: str
    kind: str  # "struct" or "enum"
    variants: list[Variant]
    struct_default: bool  # `#[serde(default)]` on the struct: every field falls back to Default
    tagged: bool  # enum with `#[serde(tag = "kind")]` (or the kind_tagged! macro)
    file: Path


_ITEM = re.compile(
    r"((?:^[ \t]*///[^\n]*\n|^[ \t]*#\[[^\n]*\]\n)*)^pub (struct|enum) (\w+)\s*(\{|;|\()", re.MULTILINE
)


def snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _docs(block: str) -> str:
    lines = [m.group(1) for m in re.finditer(r"^[ \t]*/// ?([^\n]*)$", block, re.MULTILINE)]
    return " ".join(line.strip() for line in lines).strip()


_ATTR = re.compile(r"#\[((?:[^\[\]]|\[[^\]]*\])*)\]", re.DOTALL)


def _attrs(block: str) -> str:
    return " ".join(re.sub(r"\s+", " ", a) for a in _ATTR.findall(block))


def _code(entry: str) -> str:
    """An entry without its attributes and comments."""
    lines = _ATTR.sub("", entry).splitlines()
    return "\n".join(line for line in lines if not line.strip().startswith("//")).strip()


def _body(text: str, open_at: int) -> str:
    """The text between the brace at ``open_at`` and its match."""
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "{":
            depth += 1
        elif text[i] == "}":
            depth -= 1
            if depth == 0:
                return text[open_at + 1 : i]
    raise SchemaError("unbalanced braces")


def _split_top(body: str) -> list[str]:
    """Split a struct or enum body at top-level commas, keeping each entry's doc and attribute lines
    (commas and brackets inside comments do not count)."""
    parts, depth, current = [], 0, []
    for line in body.splitlines(keepends=True):
        if line.strip().startswith("//"):
            current.append(line)
            continue
        start = 0
        for i, ch in enumerate(line):
            if ch in "{([<":
                depth += 1
            elif ch in "})]>":
                depth -= 1
            elif ch == "," and depth == 0:
                current.append(line[start:i])
                parts.append("".join(current))
                current, start = [], i + 1
        current.append(line[start:])
    parts.append("".join(current))
    return [p for p in parts if p.strip()]


def _field_default(attrs: str, ty: str, struct_default: bool) -> str:
    match = re.search(r'default\s*=\s*"(\w+)"', attrs)
    if match:
        return f"fn:{match.group(1)}"
    if re.search(r"\bdefault\b", attrs) or struct_default or ty.startswith("Option<"):
        return "type"
    return "required"


def _fields(body: str, struct_default: bool, where: str) -> list[Field]:
    fields = []
    for entry in _split_top(body):
        code = _code(entry)
        match = re.fullmatch(r"\s*(?:pub(?:\(crate\))? )?(\w+)\s*:\s*([\w:<>\[\];, ]+?)\s*", code, re.DOTALL)
        if match is None:
            if not code.strip():
                continue
            raise SchemaError(f"{where}: cannot read field {code.strip()!r}")
        attrs = _attrs(entry)
        if re.search(r"serde\([^)]*\bskip\b(?!_)", attrs):
            continue  # never read from a file
        name = match.group(1)
        rename = re.search(r'rename\s*=\s*"(\w+)"', attrs)
        ty = re.sub(r"\s+", " ", match.group(2))
        fields.append(
            Field(
                rename.group(1) if rename else name,
                ty,
                _docs(entry),
                _field_default(attrs, ty, struct_default),
            )
        )
    return fields


def _variants(body: str, where: str) -> list[Variant]:
    variants = []
    for entry in _split_top(body):
        code = _code(entry)
        if not code:
            continue
        name = re.match(r"(\w+)", code)
        if name is None:
            raise SchemaError(f"{where}: cannot read variant {code!r}")
        # The variant's own doc and attributes are the lines before its name; its fields keep theirs.
        lines, leading = entry.splitlines(), []
        while lines and (not lines[0].strip() or lines[0].strip().startswith(("//", "#["))):
            leading.append(lines.pop(0))
        own = "\n".join(leading)
        variant = Variant(snake(name.group(1)), _docs(own), is_default="default" in _attrs(own).split())
        raw = "\n".join(lines).strip()
        rest = raw[len(name.group(1)) :].strip()
        if rest.startswith("{"):
            variant.fields = _fields(_body(rest, 0), False, f"{where}::{name.group(1)}")
        elif rest.startswith("("):
            variant.newtype = rest[1:-1].strip()
        variants.append(variant)
    return variants


def read_items(path: Path) -> dict[str, Item]:
    """Every public struct and enum of one Rust file that serde reads."""
    text = path.read_text()
    items = {}
    tagged_by_macro = set(re.findall(r"kind_tagged!\((\w+)", text))
    for match in _ITEM.finditer(text):
        head, kind, name, opener = match.groups()
        attrs = _attrs(head)
        if "Deserialize" not in attrs and name not in tagged_by_macro:
            continue
        if opener != "{":
            raise SchemaError(f"{path}: {name}: tuple structs are not read")
        body = _body(text, match.end() - 1)
        struct_default = bool(re.search(r"serde\((?:[^)]*, )?default\b", attrs))
        if kind == "struct":
            variants = [Variant(snake(name), _docs(head), _fields(body, struct_default, f"{path}: {name}"))]
        else:
            variants = _variants(body, f"{path}: {name}")
        tagged = 'tag = "kind"' in attrs or name in tagged_by_macro
        items[name] = Item(name, _docs(head), kind, variants, struct_default, tagged, path)
    return items


def function_body(path: Path, name: str) -> str:
    """The expression a default function returns (its whole body, which the config files keep to one)."""
    text = path.read_text()
    match = re.search(rf"\bfn {name}\(\)\s*->\s*[\w:<>]+\s*\{{", text)
    if match is None:
        raise SchemaError(f"{path}: default function {name} not found")
    return _body(text, match.end() - 1).strip()


def constant(path: Path, name: str) -> str | None:
    """The value expression of ``const NAME: T = value;`` in ``path``, if there is one."""
    match = re.search(rf"\bconst {name}\s*:\s*[\w:<>]+\s*=\s*([^;]+);", path.read_text())
    return match.group(1).strip() if match else None
