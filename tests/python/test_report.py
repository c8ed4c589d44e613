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
    assert "<table" in text and "p99_fct_ns" in text
    assert 'src="http' not in text and 'href="http' not in text  # self-contained: nothing external
