"""The headline table: each paper's headline claim beside ours, over seeds, from the papers' documents.

Every figure is computed per seed from the ``OUT/<paper>.json`` documents that :func:`tailcut.reproduce.
reproduce` writes, then shown as median [min-max] over the seeds; a comparison whose sign differs between
seeds is marked **flips**. One code path for the README's and ``docs/results.md``'s headline rows: they
are copied from ``OUT/headlines.md``, never typed.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Below:
    """``scheme``'s ``metric`` relative to ``baseline``'s, per seed: ``1 - scheme / baseline`` (% below)."""

    paper: str
    entry: str
    part: str
    metric: str
    scheme: str
    baseline: str


@dataclass(frozen=True)
class Times:
    """How many times lower ``scheme``'s ``metric`` is than ``baseline``'s, per seed."""

    paper: str
    entry: str
    part: str
    metric: str
    scheme: str
    baseline: str


@dataclass(frozen=True)
class Value:
    """``scheme``'s ``metric`` itself, per seed, in the metric's unit (``_ms``: ms, ``_mbps``: Mbps)."""

    paper: str
    entry: str
    part: str
    metric: str
    scheme: str


Claim = Below | Times | Value


@dataclass(frozen=True)
class Headline:
    experiment: str
    paper_says: str
    claims: tuple[tuple[str, Claim], ...]  # (what the figure is, how to compute it)


def _f(entry: str, part: str, metric: str, scheme: str, baseline: str) -> Below:
    return Below("fuso", entry, part, metric, scheme, baseline)


HEADLINES: tuple[Headline, ...] = (
    Headline(
        "FUSO, random loss 4% on one of 3 paths (`net_loss_4`)",
        "p99 < 2.4 ms; up to 82.3% below TCP / TLP / MPTCP / RepFlow / Proactive",
        (
            ("FUSO p99", Value("fuso", "net_loss_4", "queries", "p99_ms", "fuso")),
            ("below TCP", _f("net_loss_4", "queries", "p99_ms", "fuso", "tcp")),
            ("below TLP", _f("net_loss_4", "queries", "p99_ms", "fuso", "tlp")),
            ("below MPTCP", _f("net_loss_4", "queries", "p99_ms", "fuso", "mptcp")),
            ("below Proactive", _f("net_loss_4", "queries", "p99_ms", "fuso", "proactive")),
        ),
    ),
    Headline(
        "FUSO, random loss 0.125% on one of 3 paths (`net_loss_0p125`)",
        "FUSO below every baseline",
        (
            ("FUSO p99", Value("fuso", "net_loss_0p125", "queries", "p99_ms", "fuso")),
            ("below TCP", _f("net_loss_0p125", "queries", "p99_ms", "fuso", "tcp")),
            ("below MPTCP", _f("net_loss_0p125", "queries", "p99_ms", "fuso", "mptcp")),
        ),
    ),
    Headline(
        "FUSO, fat-tree with lossy links, web-search at 50% (`fattree_websearch_50`)",
        "p99 29.2-87.4% below TCP, MPTCP, TLP, TCP-IR",
        tuple(
            (f"below {name}", _f("fattree_websearch_50", "queries", "p99_ms", "fuso", base))
            for name, base in (("TCP", "tcp"), ("MPTCP", "mptcp"), ("TLP", "tlp"), ("TCP-IR", "tcp_ir"))
        ),
    ),
    Headline(
        "FUSO, fat-tree with lossy links, data-mining at 50% (`fattree_datamining_50`)",
        "p99 below TCP, MPTCP, TLP, TCP-IR",
        tuple(
            (f"below {name}", _f("fattree_datamining_50", "queries", "p99_ms", "fuso", base))
            for name, base in (("TCP", "tcp"), ("MPTCP", "mptcp"), ("TLP", "tlp"), ("TCP-IR", "tcp_ir"))
        ),
    ),
    Headline(
        "FUSO, incast of 70 senders (`incast_70`)",
        "MPTCP times out above 44 senders; FUSO < 51.2 ms at 70",
        (
            ("TCP p99", Value("fuso", "incast_70", "queries", "p99_ms", "tcp")),
            ("MPTCP p99", Value("fuso", "incast_70", "queries", "p99_ms", "mptcp")),
            ("FUSO p99", Value("fuso", "incast_70", "queries", "p99_ms", "fuso")),
        ),
    ),
    Headline(
        "T-RACKs, dumbbell incast of 20 flows, NewReno (`case1_20`)",
        "small-flow p95 ~15x lower",
        (
            ("drop-tail", Times("tracks", "case1_20", "small", "p95_ms", "droptail+tracks", "droptail")),
            ("RED/ECN", Times("tracks", "case1_20", "small", "p95_ms", "red_ecn+tracks", "red_ecn")),
        ),
    ),
    Headline(
        "T-RACKs, same with SACK senders (`case1_20_sack`)",
        "(the paper's senders are NewReno)",
        (("drop-tail", Times("tracks", "case1_20_sack", "small", "p95_ms", "droptail+tracks", "droptail")),),
    ),
    Headline(
        "T-RACKs, spine-leaf web-search at 30% / 90% load (`spine_leaf_30`, `spine_leaf_90`)",
        "lower small-flow FCT and fewer RTOs at every load",
        (
            (
                "mean, 30%",
                Below("tracks", "spine_leaf_30", "small", "mean_ms", "droptail+tracks", "droptail"),
            ),
            (
                "mean, 90%",
                Below("tracks", "spine_leaf_90", "small", "mean_ms", "droptail+tracks", "droptail"),
            ),
            (
                "timeouts, 90%",
                Below("tracks", "spine_leaf_90", "small", "timeout_fraction", "droptail+tracks", "droptail"),
            ),
        ),
    ),
    Headline(
        "CloudBurst, 4-path testbed at 2000 requests/s (`testbed_2000`)",
        "p99 63.69% below DCTCP, 60.06% below PIAS",
        (
            (
                "LT below DCTCP",
                Below("cloudburst", "testbed_2000", "rr all", "p99_ms", "cloudburst", "dctcp"),
            ),
            ("LT below PIAS", Below("cloudburst", "testbed_2000", "rr all", "p99_ms", "cloudburst", "pias")),
        ),
    ),
    Headline(
        "CloudBurst, 144-host leaf-spine (`leafspine_2000`)",
        "p99 40.12% below DCTCP, 24% below pFabric",
        (
            (
                "LT below DCTCP",
                Below("cloudburst", "leafspine_2000", "rr all", "p99_ms", "cloudburst", "dctcp"),
            ),
            (
                "LT below pFabric",
                Below("cloudburst", "leafspine_2000", "rr all", "p99_ms", "cloudburst", "pfabric"),
            ),
        ),
    ),
    Headline(
        "CP, incast of N x 64 KB (`incast_N64`, `incast_N250`)",
        "no goodput cliff up to 250 senders",
        (
            ("CP 64 KB headroom, N = 64", Value("cp", "incast_N64", "incast", "goodput_mbps", "cp_64k")),
            ("CP 64 KB headroom, N = 250", Value("cp", "incast_N250", "incast", "goodput_mbps", "cp_64k")),
            ("TCP, N = 64", Value("cp", "incast_N64", "incast", "goodput_mbps", "tcp")),
        ),
    ),
    Headline(
        "CP, query completion (`qct`)",
        "p99 / p99.9 6.6-76.6% lower",
        (
            ("p99 below TCP", Below("cp", "qct", "query", "p99_ms", "cp", "tcp")),
            ("p99.9 below TCP", Below("cp", "qct", "query", "p999_ms", "cp", "tcp")),
            ("p99 below DCTCP", Below("cp", "qct", "query", "p99_ms", "cp_dctcp", "dctcp")),
        ),
    ),
    Headline(
        "DCQUIC, set-up + 10 KB / 100 KB RPC vs DCTCP + TLS 1.3 (`rpc`)",
        "49.59-73.02% lower",
        (
            ("10 KB mean", Below("dcquic", "rpc", "rpc10k", "mean_ms", "dcquic", "dctcp_tls13")),
            ("100 KB mean", Below("dcquic", "rpc", "rpc100k", "mean_ms", "dcquic", "dctcp_tls13")),
        ),
    ),
    Headline(
        "DCQUIC, MPS negotiation (`mps`)",
        "task completion 9.17-63.2% lower",
        (("web-search mean", Below("dcquic", "mps", "websearch", "mean_ms", "mps_negotiated", "mps1252")),),
    ),
    Headline(
        "DCQUIC, migration on path delay / failure (`migration`)",
        "67.92% below application-level reconnection",
        (("mean", Below("dcquic", "migration", "all", "mean_ms", "dcquic", "dctcp_reconnect")),),
    ),
)


def _per_seed(docs: dict[str, dict], paper: str, entry: str, part: str, metric: str, scheme: str) -> dict:
    """seed -> value of one figure, or {} where the paper, entry, part or scheme was not run."""
    for group in docs.get(paper, {}).get("groups", []):
        for item in group["entries"]:
            if item["label"] != entry:
                continue
            for row in item.get("rows", []):
                if row["part"] == part and row["scheme"] == scheme and metric in row["metrics"]:
                    values = zip(item["seeds"], row["metrics"][metric]["values"], strict=False)
                    # Infinity is a float (from_json), or "inf" in a document read as plain JSON.
                    return {s: float(v) for s, v in values if v is not None}
    return {}


def _compute(docs: dict[str, dict], claim: Claim) -> tuple[list[float], bool]:
    """The claim's per-seed values (seeds both sides have) and whether a comparison flips sign."""
    mine = _per_seed(docs, claim.paper, claim.entry, claim.part, claim.metric, claim.scheme)
    if isinstance(claim, Value):
        return list(mine.values()), False
    base = _per_seed(docs, claim.paper, claim.entry, claim.part, claim.metric, claim.baseline)
    seeds = sorted(set(mine) & set(base))
    out = []
    for s in seeds:
        a, b = mine[s], base[s]
        if isinstance(claim, Below):
            out.append(_below(a, b))
        else:
            out.append(b / a if a > 0 else math.inf if b > 0 else 1.0)
    pivot = 0.0 if isinstance(claim, Below) else 1.0
    return out, any(v > pivot for v in out) and any(v < pivot for v in out)


def _below(a: float, b: float) -> float:
    if math.isinf(b):
        return 100.0 if not math.isinf(a) else 0.0  # the baseline never finished, we did
    if b == 0:
        return 0.0 if a == 0 else -math.inf
    return 100.0 * (1.0 - a / b)


def _num(v: float) -> str:
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _unit(claim: Claim) -> str:
    if isinstance(claim, Below):
        return "%"
    if isinstance(claim, Times):
        return "x"
    if claim.metric.endswith("_ms"):
        return " ms"
    return " Mbps" if claim.metric.endswith("_mbps") else ""


def figure(docs: dict[str, dict], claim: Claim) -> str:
    values, flips = _compute(docs, claim)
    if not values:
        return "not run"
    unit = _unit(claim)
    med, lo, hi = statistics.median(values), min(values), max(values)
    sep = " to " if lo < 0 else "-"  # "[-9.2--5.5]" would read as a typo
    text = f"{_num(med)}{unit}" if lo == hi else f"{_num(med)}{unit} [{_num(lo)}{sep}{_num(hi)}]"
    if len(values) < 5:
        text += f" ({len(values)} seeds)"
    return text + (" **flips**" if flips else "")


def markdown(docs: dict[str, dict]) -> str:
    seeds = sorted({d.get("seeds", 0) for d in docs.values()})
    lines = [
        "# Headline rows",
        "",
        "Each paper's headline beside ours: median [min-max] over the seeds of each paper's page "
        f"({', '.join(map(str, seeds))} seeds), computed per seed (a reduction is `1 - ours / baseline` "
        "in each seed); **flips**: the comparison's sign differs between seeds. Generated by "
        "`tailcut reproduce all --seeds 5` (`make reproduce`); the pages beside this one have every table.",
        "",
        _made_by(docs),
        "",
        "| paper, experiment | paper's headline | ours |",
        "|---|---|---|",
    ]
    for h in HEADLINES:
        ours = "; ".join(f"{what}: {figure(docs, claim)}" for what, claim in h.claims)
        lines.append(f"| {h.experiment} | {h.paper_says} | {ours} |")
    return "\n".join(lines) + "\n"


def _made_by(docs: dict[str, dict]) -> str:
    """The tailcut version(s) and commit(s) the paper pages were made by ("unknown" when a page does not
    say); each page lists its entries' seeds and config digests."""
    made: dict[str, list[str]] = {}
    for paper, doc in sorted(docs.items()):
        p = doc.get("provenance") or {}
        version, commit = p.get("tailcut_version") or "unknown", p.get("tailcut_commit") or "unknown"
        key = f"tailcut {version}, commit {commit}"
        made.setdefault(key, []).append(paper)
    if len(made) == 1:
        return f"Made from pages of {next(iter(made))}; each page lists its seeds and config digests."
    parts = "; ".join(f"{key} ({', '.join(papers)})" for key, papers in made.items())
    return f"Made from pages of different builds: {parts}; each page lists its seeds and config digests."


START, END = "<!-- headlines:start -->", "<!-- headlines:end -->"


def paste(page: Path, headlines_md: str) -> None:
    """Replace the table between ``START`` and ``END`` in ``page`` (README.md, docs/results.md) with the
    table of ``headlines_md``; a page without both markers is an error naming it."""
    from tailcut.outdir import write_text_atomic

    text = Path(page).read_text()
    if START not in text or END not in text:
        raise ValueError(f"{page}: no {START} ... {END} markers to put the headline table between")
    table = headlines_md[headlines_md.index("| paper, experiment") :]
    before, rest = text.split(START, 1)
    after = rest.split(END, 1)[1]
    write_text_atomic(Path(page), f"{before}{START}\n{table}{END}{after}")


def write(out: Path) -> Path | None:
    """``OUT/headlines.md`` from the documents in ``OUT``; None when there is none."""
    from tailcut.outdir import write_text_atomic
    from tailcut.reproduce.render import from_json

    docs = {}
    for path in sorted(Path(out).glob("*.json")):
        try:
            doc = from_json(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(doc, dict) and "groups" in doc and "paper" in doc:
            docs[doc["paper"]] = doc
    if not docs:
        return None
    target = Path(out) / "headlines.md"
    write_text_atomic(target, markdown(docs))
    return target


if __name__ == "__main__":
    # python -m tailcut.reproduce.headlines OUT PAGE...: paste OUT/headlines.md's table into each PAGE.
    import sys

    if len(sys.argv) < 3:
        sys.exit("usage: python -m tailcut.reproduce.headlines OUT PAGE...")
    written = write(Path(sys.argv[1]))
    if written is None:
        sys.exit(f"{sys.argv[1]}: no paper documents (run tailcut reproduce first)")
    for page in sys.argv[2:]:
        paste(Path(page), written.read_text())
