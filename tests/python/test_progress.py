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
