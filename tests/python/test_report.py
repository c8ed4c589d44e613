"""The run report holds the expected figures and the summary table."""

from __future__ import annotations

from html import escape

from tailcut.report import TITLE_CDF, TITLE_P99, TITLE_TIMEOUTS


def test_run_report_figures(tiny_result) -> None:
    out, result = tiny_result
    text = (out / "report.html").read_text()
    assert text.startswith("<!DOCTYPE html>")
    assert text.count("<svg") == 3
    for title in (TITLE_CDF, TITLE_P99, TITLE_TIMEOUTS):
        assert f"<figcaption>{escape(title)}</figcaption>" in text
        assert (
            escape(title, quote=False) in text[text.index("<svg") :]
        )  # the title is drawn in the figure too (SVG text)
    for scheme in result.flows["scheme"].unique():
        assert f">{scheme}<" in text  # legend entry / table cell
    assert "<table" in text and "p99 FCT" in text and "docs/metrics.md" in text
    assert 'src="http' not in text and 'href="http' not in text  # self-contained: nothing external


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
