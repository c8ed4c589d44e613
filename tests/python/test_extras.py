"""Without the plot extra (matplotlib) the API runs and a report request names the extra."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import SWEEP_KEY, SWEEP_VALUES, TINY

# Run in a fresh interpreter in which `import matplotlib` fails, as on an install without [plot].
PRELUDE = "import sys; sys.modules['matplotlib'] = None\n"


def _python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", PRELUDE + code], capture_output=True, text=True, cwd=cwd, timeout=600
    )


def test_the_api_needs_no_plotting(tmp_path: Path) -> None:
    code = (
        "import tailcut\n"
        f"r = tailcut.run({str(TINY)!r})\n"
        f"s = tailcut.sweep({str(TINY)!r}, {{{SWEEP_KEY!r}: {list(SWEEP_VALUES)!r}}})\n"
        "print(len(r.flows), len(s.outcomes))\n"
    )
    done = _python(code, tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split()[1] == str(len(SWEEP_VALUES))


def test_a_report_without_the_extra_names_it_before_running(tmp_path: Path) -> None:
    code = f"from tailcut.cli import main\nsys.exit(main(['run', {str(TINY)!r}, '--out', 'out']))\n"
    done = _python(code, tmp_path)
    assert done.returncode == 2
    assert "pip install 'tailcut[plot]'" in done.stderr and "Traceback" not in done.stderr
    assert not (tmp_path / "out").exists()
