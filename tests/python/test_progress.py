"""Run stages and a sweep's simulated-time progress (tailcut.progress)."""

from __future__ import annotations

from tailcut.progress import SweepProgress, point_weight, run_stage


def test_run_stage_names_the_scheme_being_simulated() -> None:
    schemes = ["tcp", "dctcp", "fuso"]
    assert run_stage(schemes, 0.0) == "tcp (1/3)"
    assert run_stage(schemes, 0.5) == "dctcp (2/3)"
    assert run_stage(schemes, 0.999) == "fuso (3/3)"
    assert run_stage(schemes, 1.0) == "writing results"


def test_point_weight_is_schemes_times_max_time() -> None:
    assert point_weight({"schemes": [{}, {}], "max_time": "500ms"}) == 1.0
    assert point_weight({"schemes": [{}], "max_time": "2s"}) == 2.0


def test_sweep_progress_counts_simulated_time_and_never_goes_back() -> None:
    seen: list[float] = []
    tracker = SweepProgress({"a": 1.0, "b": 3.0}, seen.append)
    tracker.update("b", 0.5)
    tracker.update("a", 0.5)
    tracker.update("a", 0.25)  # a stale report from a queue
    tracker.finished("b")
    tracker.update("unknown", 0.5)
    assert seen == [0.375, 0.5, 0.5, 0.875]
    assert tracker.seconds == 3.5


def test_log_bar_prints_a_line_per_item_and_a_fraction_every_interval() -> None:
    import io

    from tailcut.progress import LogBar

    items = io.StringIO()
    with LogBar(total=3, unit="cell", file=items) as bar:
        for _ in range(3):
            bar.update(1)
        bar.write("FAILED x: boom")
    assert items.getvalue().splitlines() == [
        "1/3 cells done",
        "2/3 cells done",
        "3/3 cells done",
        "FAILED x: boom",
    ]

    now = [0.0]
    fraction = io.StringIO()
    with LogBar(
        total=100, desc="tcp (1/2)", file=fraction, percent=True, interval=30, clock=lambda: now[0]
    ) as b:
        for _ in range(1000):  # the core reports every 100 ms: 100 s of updates
            now[0] += 0.1
            b.update(0.1)
    lines = fraction.getvalue().splitlines()
    assert 3 <= len(lines) <= 5, lines  # one per 30 s, and the final one
    assert lines[-1] == "tcp (1/2): 100%"
    assert "\r" not in fraction.getvalue()


def test_a_run_logged_to_a_file_prints_a_few_lines_not_a_redraw_per_tick(cli, tiny, capsys) -> None:
    """stderr is not a terminal here (captured): the progress is whole lines, no carriage returns."""
    assert cli("run", tiny, "--out", "out") == 0
    err = capsys.readouterr().err
    assert "\r" not in err
    assert len(err.splitlines()) <= 5, err
    assert "100%" in err


def test_bar_is_tqdm_on_a_terminal_only() -> None:
    import io

    from tailcut.progress import LogBar, bar

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    assert isinstance(bar(total=3, file=io.StringIO()), LogBar)
    on_terminal = bar(total=3, file=Terminal())
    assert not isinstance(on_terminal, LogBar)
    on_terminal.close()
