"""tailcut: compare loss-recovery schemes on a deterministic packet-level datacenter simulator.

The simulator is Rust (``tailcut._core``); this package is the front people touch: experiment files, the
``tailcut`` command, sweeps over local processes or Ray, Parquet results and HTML reports.

Typical notebook use::

    import tailcut
    res = tailcut.run("experiments/quickstart.toml", overrides={"topology.leaves": 4})
    res.summary
"""

from tailcut._core import ConfigError, SimulationError
from tailcut._core import version as _core_version
from tailcut.results import Result
from tailcut.runner import run
from tailcut.summary import summarize
from tailcut.sweep import SweepResult, sweep

__version__ = _core_version()

__all__ = [
    "ConfigError",
    "Result",
    "SimulationError",
    "SweepResult",
    "__version__",
    "run",
    "summarize",
    "sweep",
]
