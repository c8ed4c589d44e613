"""The headline table: per-seed comparisons, median [min-max], flips, and rows not run."""

from __future__ import annotations

import json

from tailcut.reproduce import headlines
from tailcut.reproduce.headlines import Below, Times, Value


def _doc(paper: str, entry: str, part: str, metric: str, values: dict[str, list]) -> dict:
    rows = [
        {"part": part, "scheme": scheme, "metrics": {metric: {"values": vals}}}
        for scheme, vals in values.items()
    ]
    return {
        "paper": paper,
        "seeds": 5,
        "groups": [{"title": "g", "entries": [{"label": entry, "seeds": [1, 2, 3, 4, 5], "rows": rows}]}],
    }


def test_reductions_are_per_seed_and_flips_are_flagged():
    doc = _doc("fuso", "e", "q", "p99_ms", {"fuso": [1, 1, 1, 3, 1], "tcp": [2, 4, 2, 2, 10]})
    docs = {"fuso": doc}
    below = headlines.figure(docs, Below("fuso", "e", "q", "p99_ms", "fuso", "tcp"))
    # Per seed: 50, 75, 50, -50, 90 -> median 50, and the sign differs in seed 4.
    assert below == "50% [-50 to 90] **flips**"
    assert (
        headlines.figure(docs, Times("fuso", "e", "q", "p99_ms", "fuso", "tcp")) == "2x [0.667-10] **flips**"
    )
    assert headlines.figure(docs, Value("fuso", "e", "q", "p99_ms", "tcp")) == "2 ms [2-10]"


def test_unfinished_baseline_and_missing_rows():
    doc = _doc("cp", "e", "q", "p99_ms", {"cp": [1, 1, 1, 1, 1], "tcp": ["inf", "inf", 2, 2, 2]})
    docs = {"cp": doc}
    assert headlines.figure(docs, Below("cp", "e", "q", "p99_ms", "cp", "tcp")) == "50% [50-100]"
    assert headlines.figure(docs, Below("cp", "other", "q", "p99_ms", "cp", "tcp")) == "not run"
    assert headlines.figure({}, Value("cp", "e", "q", "p99_ms", "cp")) == "not run"


def test_write_reads_the_documents_in_the_folder(tmp_path):
    doc = _doc("dcquic", "migration", "all", "mean_ms", {"dcquic": [1] * 5, "dctcp_reconnect": [100] * 5})
    (tmp_path / "dcquic.json").write_text(json.dumps(doc))
    (tmp_path / "unrelated.json").write_text("[1, 2]")
    page = headlines.write(tmp_path).read_text()
    assert "| DCQUIC, migration on path delay / failure (`migration`) |" in page
    assert "mean: 99% |" in page
    assert "not run" in page  # the other papers' rows
    assert "Made from pages of tailcut unknown, commit unknown;" in page  # a document without provenance
    doc["provenance"] = {"tailcut_version": "9.9.9", "tailcut_commit": "abc"}
    (tmp_path / "dcquic.json").write_text(json.dumps(doc))
    assert "Made from pages of tailcut 9.9.9, commit abc;" in headlines.write(tmp_path).read_text()
    assert headlines.write(tmp_path / "empty") is None


def test_paste_replaces_only_the_marked_table(tmp_path):
    page = tmp_path / "README.md"
    page.write_text(f"intro\n{headlines.START}\n| old |\n{headlines.END}\noutro\n")
    headlines.paste(page, "# Headline rows\n\n| paper, experiment | x |\n|---|---|\n")
    assert page.read_text() == (
        f"intro\n{headlines.START}\n| paper, experiment | x |\n|---|---|\n{headlines.END}\noutro\n"
    )
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    try:
        headlines.paste(bare, "| paper, experiment |\n")
    except ValueError as e:
        assert "bare.md" in str(e)
    else:
        raise AssertionError("a page without markers must be refused")


def test_page_json_has_no_strings_for_numbers_and_reads_back():
    """A reproduce page's JSON: infinities are null with their places listed, never "inf" (issue #43)."""
    import math

    from tailcut.reproduce.render import from_json, to_json

    figure = {"median": 2.0, "min": 1.0, "max": math.inf, "values": [1.0, math.inf, 2.0, math.nan]}
    text = to_json({"rows": [{"metrics": {"p99_ms": figure}}]})
    assert "inf" not in text.replace("infinite", "")
    plain = json.loads(text)["rows"][0]["metrics"]["p99_ms"]
    assert plain["max"] is None and plain["values"] == [1.0, None, 2.0, None]
    assert plain["infinite"] == {"stats": ["max"], "values": [1]}
    back = from_json(text)["rows"][0]["metrics"]["p99_ms"]
    assert back["max"] == math.inf and back["values"][:3] == [1.0, math.inf, 2.0]
    assert back["values"][3] is None  # NaN (no figure) stays null
    assert "infinite" not in back


def test_headlines_read_infinities_from_strict_pages(tmp_path):
    import math

    from tailcut.reproduce.render import from_json, to_json

    doc = _doc("cp", "e", "q", "p99_ms", {"cp": [1, 1, 1, 1, 1], "tcp": [math.inf, math.inf, 2, 2, 2]})
    docs = {"cp": from_json(to_json(doc))}
    # As with the "inf" strings of older pages (test_unfinished_baseline_and_missing_rows).
    assert headlines.figure(docs, Below("cp", "e", "q", "p99_ms", "cp", "tcp")) == "50% [50-100]"
    (tmp_path / "cp.json").write_text(to_json(doc))
    assert headlines.write(tmp_path) is not None  # write() reads the pages with from_json
