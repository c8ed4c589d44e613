"""The real-network commands that come with the package: ``tailcut-testbed`` and ``tailcut-tracksd``.

They run inside the extension module (``tailcut._core.testbed_main``, the same code as the
cargo-built ``tailcut-testbed`` binary), so ``pip install tailcut`` alone gives the testbed and the
T-RACKs agent. ``python -m tailcut.native testbed ARGS`` is how ``tailcut testbed run`` starts it, and
how the testbed starts its workload agents inside the hosts; this module imports nothing heavy, so an
agent costs an interpreter and the extension, not pandas.
"""

from __future__ import annotations

import signal
import sys
from pathlib import Path

from tailcut import _core

USAGE = "usage: python -m tailcut.native testbed ARGS... | tracksd ARGS..."
# The agent's annotated configuration (every key, the real-host defaults; a Rust test parses it).
TRACKSD_EXAMPLE = Path(__file__).resolve().parent / "data" / "tracksd" / "tracksd.example.toml"
TRACKSD_CONFIG = "/etc/tailcut/tracksd.toml"


def systemd_unit() -> str:
    """A systemd unit for the agent on a real host, running this installation's ``tailcut-tracksd``.

    SIGTERM makes the agent remove its rules (docs/tracks.md, "Life cycle"); a crash leaves them, with
    the queue's bypass keeping traffic flowing, and ``ExecStopPost`` removes them then."""
    exe = Path(sys.prefix) / "bin" / "tailcut-tracksd"
    return f"""[Unit]
Description=tailcut T-RACKs agent (spoofed duplicate ACKs before the RTO; docs/tracks.md)
After=network-online.target
Wants=network-online.target

[Service]
ExecStartPre={exe} --check {TRACKSD_CONFIG}
ExecStart={exe} {TRACKSD_CONFIG}
ExecStopPost={exe} --uninstall {TRACKSD_CONFIG}
Restart=on-failure
KillSignal=SIGTERM

[Install]
WantedBy=multi-user.target
"""


def self_command() -> list[str]:
    """The command line that runs ``tailcut-testbed`` from this package (its subcommand follows)."""
    return [sys.executable, "-m", "tailcut.native", "testbed"]


def run_testbed(args: list[str]) -> int:
    # Python catches SIGINT (and leaves it to Python code that never runs while Rust works) and ignores
    # SIGPIPE; the command must see them as the binary does: Ctrl-C stops it, and the tracksd agent
    # blocks and reads the termination signals itself.
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    program, *prefix = self_command()
    return _core.testbed_main(args, program, prefix)


def testbed() -> None:
    """The ``tailcut-testbed`` console script."""
    sys.exit(run_testbed(sys.argv[1:]))


def tracksd() -> None:
    """The ``tailcut-tracksd`` console script: the T-RACKs agent (docs/tracks.md). Two more options than
    the cargo-built binary, for an installed package whose files are not in sight:
    ``--example-config`` prints the annotated configuration, ``--systemd-unit`` a unit running it."""
    args = sys.argv[1:]
    if args == ["--example-config"]:
        sys.stdout.write(TRACKSD_EXAMPLE.read_text())
        sys.exit(0)
    if args == ["--systemd-unit"]:
        sys.stdout.write(systemd_unit())
        sys.exit(0)
    sys.exit(run_testbed(["tracksd", *args]))


def main(argv: list[str]) -> int:
    if argv[:1] == ["testbed"]:
        return run_testbed(argv[1:])
    if argv[:1] == ["tracksd"]:
        return run_testbed(argv)
    print(USAGE, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
