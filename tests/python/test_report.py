"""The run report holds the expected figures and tables: CCDFs of FCT and slowdown on log-log axes,
percentiles by flow size, the summary, n/m where an engine does not count a figure, and what made it."""

from __future__ import annotations

import math
import re
from html import escape

import numpy as np
import pandas as pd

from tailcut.report import (
    RUN_TITLES,
    TITLE_BY_SIZE,
    by_size_table,
    fct_ccdf_figure,
    run_report_html,
    slowdown_ccdf_figure,
)


def test_run_report_figures(tiny_result) -> None:
    out, result = tiny_result
    text = (out / "report.html").read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("<svg") == len(RUN_TITLES) == 6
    for title in RUN_TITLES:
        assert f"<figcaption>{escape(title)}</figcaption>" in text
        assert (
            escape(title, quote=False) in text[text.index("<svg") :]
        )  # the title is drawn in the figure too (SVG text)
    for scheme in result.flows["scheme"].unique():
        assert f">{scheme}<" in text  # legend entry / table cell
    assert "<table" in text and "p99 FCT" in text and "docs/metrics.md" in text
    assert 'src="http' not in text and 'href="http' not in text  # self-contained: nothing external
    # Percentiles of FCT and slowdown per size class, in a table of their own.
    assert f"{escape(TITLE_BY_SIZE)}: run" in text
    for header in ("p50 FCT", "p99 FCT", "p99.9 FCT", "p50 slowdown", "p99 slowdown", "p99.9 slowdown"):
        assert f"<th>{header}</th>" in text
    # Tables are never cut at a fixed width: each scrolls in its own box if it must.
    assert "max-width: 1100px; }" not in text.split("</style>")[0].split("body {")[1].split("}")[0]
    assert text.count("<div class='table'><table") == text.count("<table")


def test_run_report_says_what_made_it(tiny_result) -> None:
    from tailcut.provenance import provenance

    out, result = tiny_result
    text = (out / "report.html").read_text()
    made = provenance(result.config)
    line = text.split("<p class='provenance'>")[1].split("</p>")[0]
    assert f"seed {result.config['seed']}" in line
    assert f"config digest {made['config_digest']}" in line
    assert f"tailcut {made['tailcut_version']}" in line
    assert f"commit {made['tailcut_commit'] or 'unknown'}" in line


def test_ccdfs_are_log_log_and_keep_unfinished_flows() -> None:
    flows = pd.DataFrame(
        {
            "scheme": ["a"] * 4,
            "size_bytes": [1_000, 2_000, 3_000, 4_000],
            "fct_ns": [1e4, 2e4, 1e6, math.nan],
            "slowdown": [1.0, 2.0, 50.0, math.nan],
            "completed": [True, True, True, False],
        }
    )
    for fig in (fct_ccdf_figure({"r": flows}), slowdown_ccdf_figure({"r": flows})):
        ax = fig.axes[0]
        assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
        (line,) = ax.get_lines()
        # P(X > x) over all four flows: the unfinished one keeps the tail at 1/4 instead of 0.
        assert np.allclose(line.get_ydata(), [0.75, 0.5, 0.25])
        assert line.get_label() == "a (1 unfinished)"
        low, high = ax.get_xlim()
        fig.canvas.draw()  # type: ignore[attr-defined]
        shown = [t.get_text() for t in ax.get_xticklabels() if low <= t.get_position()[0] <= high]
        assert 2 <= len(shown) <= 7 and len(shown) == len(set(shown)), shown  # few, distinct ticks


def test_percentiles_by_size_count_unfinished_as_late() -> None:
    sizes = [10_000] * 9 + [500_000, 2_000_000]
    flows = pd.DataFrame(
        {
            "scheme": ["a"] * 11,
            "size_bytes": sizes,
            "fct_ns": [float(i) * 1e3 for i in range(1, 10)] + [math.nan, 5e6],
            "slowdown": [float(i) for i in range(1, 10)] + [math.nan, 3.0],
            "completed": [True] * 9 + [False, True],
        }
    )
    table = by_size_table(flows).set_index("size_class")
    assert table.loc["small", "count"] == 9 and table.loc["small", "p50_fct_ns"] == 5e3
    assert table.loc["small", "p99_slowdown"] == 9.0
    assert math.isinf(table.loc["medium", "p50_fct_ns"]) and table.loc["medium", "unfinished"] == 1
    assert table.loc["large", "p99_slowdown"] == 3.0
    assert table.loc["all", "count"] == 11 and math.isinf(table.loc["all", "p99_fct_ns"])


def test_uncounted_timeouts_read_n_m_never_zero(tiny_result) -> None:
    """DCQUIC's engine counts no timeouts (tailcut.summary.NOT_MEASURED): its cells read n/m, not 0%."""
    from tailcut.results import Result
    from tailcut.summary import NOT_MEASURED, not_measured

    _, result = tiny_result
    config = {**result.config, "schemes": [dict(s) for s in result.config["schemes"]]}
    config["schemes"][1]["transport"] = "dcquic"  # the run's second scheme, as a DCQUIC run labels it
    quic = config["schemes"][1]["name"]
    assert not_measured(config) == {quic: NOT_MEASURED["dcquic"]}
    page = run_report_html({"r": Result(result.flows, result.ports, result.runs, config)})
    summary = page.split("<h2>Summary: r</h2>")[1].split("</table>")[0]
    headers = re.findall(r"<th>(.*?)</th>", summary)
    rows = [re.findall(r"<td>(.*?)</td>", r) for r in summary.split("<tr>") if "<td>" in r]
    timeouts = {(r[0], r[1]): r[headers.index("flows with a timeout")] for r in rows}
    assert [v for (scheme, _), v in timeouts.items() if scheme == quic] == ["n/m"] * 4
    assert all(v != "n/m" for (scheme, cls), v in timeouts.items() if scheme != quic and cls == "all")
    assert "Not measured (n/m)" in page and NOT_MEASURED["dcquic"]["timeout_fraction"] in page
    assert ">n/m<" in page.split("<figcaption>Timeout fraction")[1].split("</figure>")[0]  # on the bars too


def test_report_numbers_read_in_units() -> None:
    import math

    import pandas as pd

    from tailcut import display
    from tailcut.report import display_table

    assert display.time_ns(331_800) == "332 us"
    assert display.time_ns(1_234_567) == "1.23 ms"
    assert display.time_ns(999_600) == "1.00 ms"  # rounded before the unit is chosen
    assert display.time_ns(math.inf) == "inf (unfinished)"
    assert display.time_ns(math.nan) == "-"
    assert display.size_bytes(93_440) == "93.4 KB"
    assert display.fraction(0.0215) == "2.15%"
    row = pd.DataFrame([{"scheme": "tcp", "count": 3, "p99_fct_ns": 3.318e5, "timeout_fraction": 0.5}])
    shown = display_table(row)
    assert list(shown.columns) == ["scheme", "count", "p99 FCT", "flows with a timeout"]
    assert shown.iloc[0].tolist() == ["tcp", 3, "332 us", "50.0%"]
    assert "e+" not in shown.to_html()


def test_half_failing_scheme_never_reads_best(cli, tmp_path, capsys) -> None:
    import math

    from conftest import DATA
    from tailcut.results import Result

    assert cli("run", DATA / "half_failing.toml", "--out", tmp_path / "run") == 0
    err = capsys.readouterr().err
    assert "warning: cloudburst: 20 of 40 flows unfinished (medium 20)" in err
    result = Result.load(tmp_path / "run")
    overall = result.summary[result.summary["size_class"] == "all"].set_index("scheme")
    assert math.isinf(overall.loc["cloudburst", "p99_fct_ns"])
    assert overall.loc["cloudburst", "p99_fct_ns"] > overall.loc["tcp", "p99_fct_ns"]
    page = (tmp_path / "run" / "report.html").read_text()
    assert "cloudburst (20 unfinished)" in page  # legend of the bar figures
    assert "inf (unfinished)" in page  # summary table cell

    sweep_args = ("--grid", "topology.hosts=3,4", "--out", tmp_path / "sw")
    assert cli("sweep", DATA / "half_failing.toml", *sweep_args) == 0
    assert "warning: cloudburst (topology.hosts=3, seed=1)" in capsys.readouterr().err
    assert "cloudburst (40 unfinished)" in (tmp_path / "sw" / "report.html").read_text()
