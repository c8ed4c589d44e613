"""The UDP runtime from Python (``tailcut.net``): real sockets on loopback, functional facts only."""

from __future__ import annotations

import random
import threading
import time
from pathlib import Path

import pytest

import tailcut
from tailcut import net

SCHEMES = ["cloudburst", "tcp", "mptcp", "fuso"]
# Datacenter timers for the stream schemes, as an experiment file's params write them.
FAST = {"params": {"min_rto": "5ms", "initial_rto": "20ms"}}
# CloudBurst gives a request up at its transmission timeout (20 ms by default), which a runtime
# thread descheduled on a loaded machine outlasts; these tests are not about that timer.
PATIENT = {"params": {"transmission_timeout": "1s", "decoder_timeout": "100ms"}}


def _options(scheme: str) -> dict:
    return FAST if scheme != "cloudburst" else PATIENT


def _eventually(done, seconds: float = 60) -> bool:
    """Polls ``done`` until it holds; False after ``seconds`` (a bound for a failure, generous
    because the machine is shared: a passing run never waits it out)."""
    deadline = time.monotonic() + seconds
    while not done():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


@pytest.mark.parametrize("scheme", SCHEMES)
def test_echo_calls_arrive_byte_exact(scheme: str) -> None:
    rng = random.Random(scheme)
    with (
        net.Server(scheme=scheme, **_options(scheme)) as s,
        net.Client(s.address, scheme=scheme, **_options(scheme)) as c,
    ):
        for _ in range(50):
            req = rng.randbytes(rng.randrange(0, 60_000))
            assert c.call(req) == req
        # The runtime publishes its counters a moment after the reply that proves the call done.
        assert _eventually(lambda: c.stats()["calls_completed"] >= 50)
        assert c.stats()["calls_completed"] == 50
        reply, seconds = c.call_timed(b"x")
        assert reply == b"x" and seconds > 0


@pytest.mark.parametrize("scheme", ["tcp", "cloudburst", "dcquic"])
def test_reconnect_opens_a_new_association_for_the_next_call(scheme: str) -> None:
    opts = _options(scheme) if scheme != "dcquic" else {}
    with net.Server(scheme=scheme, **opts) as s:
        trust = {"ca_pem": s.ca_pem} if scheme == "dcquic" else {}
        c = net.Client(s.address, scheme=scheme, **opts, **trust)
        for i in range(3):
            if i:
                c.reconnect()
            assert c.call(bytes([i]) * 2_000) == bytes([i]) * 2_000
        assert _eventually(lambda: s.stats()["associations_opened"] == 3)
        if scheme == "dcquic":
            assert c.stats()["dcquic_handshakes"] == 3
        c.close()


def test_a_python_handler_answers_from_several_calling_threads() -> None:
    # Calls release the GIL: the handler, which needs it on the server's thread, still runs.
    with (
        net.Server(scheme="tcp", handler=lambda r: r[::-1], **FAST) as s,
        net.Client(s.address, scheme="tcp", **FAST) as c,
    ):
        errors: list[str] = []

        def work(t: int) -> None:
            for i in range(50):
                req = bytes([t, i]) * (i + 1)
                if c.call(req) != req[::-1]:
                    errors.append(f"thread {t} call {i}")

        threads = [threading.Thread(target=work, args=(t,)) for t in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == []


def test_a_failing_handler_is_counted_and_the_server_goes_on() -> None:
    def handler(req: bytes) -> bytes:
        if req == b"boom":
            raise ValueError("boom")
        return req

    with (
        net.Server(scheme="tcp", handler=handler, **FAST) as s,
        net.Client(s.address, scheme="tcp", **FAST) as c,
    ):
        assert c.call(b"boom") == b""
        assert c.call(b"fine") == b"fine"
        # Published a moment after the replies, like every runtime counter.
        assert _eventually(lambda: s.stats()["handler_errors"] >= 1)
        assert s.stats()["handler_errors"] == 1


@pytest.mark.parametrize(
    ("options", "path"),
    [
        ({"scheme": "quic"}, "scheme.transport"),
        ({"params": {"mss_bytes": -1}}, "scheme.params.mss_bytes"),
        ({"mss": 1000}, "net.mss"),
        ({"colour": "red"}, "net.colour"),
        ({"params": {"subflows": 99}, "scheme": "fuso"}, "scheme.params.subflows"),
        ({"scheme": "pias"}, "scheme.transport"),
        ({"scheme": "cp"}, "scheme.transport"),
        ({"params": {"zero_rtt": True}, "scheme": "dcquic"}, "scheme.params.zero_rtt"),
        ({"scheme": {"transport": "tcp", "shim": {"kind": "tracks"}}}, "scheme.shim"),
        ({"path_mtu": 500, "scheme": "dcquic"}, "net.path_mtu"),
        ({"local_addrs": ["not-an-ip"], "scheme": "dcquic"}, "net.local_addrs"),
        ({"ca_pem": "no certificate here", "scheme": "dcquic"}, "net.ca_pem"),
        ({"cert": "/nonexistent/cert.pem", "scheme": "dcquic"}, "net.cert"),
        ({"loss": 1.5}, "net.loss"),
        ({"loss": -0.1}, "net.loss"),
        ({"loss": "1%"}, "net.loss"),
        # All of every path's datagrams could never deliver anything (one path black-holed can).
        ({"loss": 1.0}, "net.loss"),
        ({"loss_path": 0}, "net.loss_path"),
        ({"loss": 0.01, "loss_path": -1}, "net.loss_path"),
        ({"address_validation": "never"}, "net.address_validation"),
        ({"address_validation": 1}, "net.address_validation"),
    ],
)
def test_bad_options_raise_config_error_naming_the_option(options: dict, path: str) -> None:
    scheme = options.pop("scheme", "tcp")
    with pytest.raises(tailcut.ConfigError) as e:
        net.Server(scheme=scheme, **options)
    assert e.value.path == path


def test_bad_address_is_a_config_error() -> None:
    with pytest.raises(tailcut.ConfigError) as e:
        net.Client("not-an-address")
    assert e.value.path == "server"


@pytest.mark.parametrize(
    ("scheme", "load"),
    [("tcp", "closed"), ("fuso", "poisson"), ("cloudburst", "closed"), ("dcquic", "poisson")],
)
def test_net_bench_writes_the_simulator_flow_columns(tmp_path, scheme: str, load: str) -> None:
    import pandas as pd

    from tailcut.cli import main
    from tailcut.results import FLOW_COLUMNS

    out = tmp_path / "bench"
    argv = ["net", "bench", "--scheme", scheme, "--size", "100B,10KB", "--count", "60", "--warmup", "5"]
    argv += ["--load", load, "--rate", "2000", "--concurrency", "2", "--out", str(out)]
    # Functional facts only: whether this machine kept the arrival schedule is another test's subject.
    argv += ["--allow-invalid-timing"]
    if scheme in ("tcp", "fuso"):
        argv += ["--param", "min_rto=5ms"]
    if scheme == "cloudburst":
        argv += ["--param", "transmission_timeout=1s", "--param", "decoder_timeout=100ms"]
    assert main(argv) == 0
    flows = pd.read_parquet(out / "flows.parquet")
    # Poisson arrivals add how late each call was handed over, the bench's own timing measure.
    assert list(flows.columns) == FLOW_COLUMNS + (["start_late_ns"] if load == "poisson" else [])
    assert len(flows) == 60 and flows["completed"].all()
    assert set(flows["size_bytes"]) == {100, 10_000}
    assert (flows["fct_ns"] > 0).all()
    # Every call's request counters are final when it returns (CloudBurst's response ends its request).
    assert (flows["sent_bytes"] >= flows["size_bytes"]).all()
    assert (flows["finish_ns"] == flows["start_ns"] + flows["fct_ns"]).all()


def test_net_bench_rejects_bad_arguments(tmp_path) -> None:
    from tailcut.cli import main

    assert main(["net", "bench", "--count", "0", "--out", str(tmp_path / "x")]) == 2
    with pytest.raises(SystemExit):
        main(["net", "bench", "--size", "10XB"])


def test_net_bench_runs_an_experiment_files_entry_unchanged(tmp_path, capsys) -> None:
    """The ``[[schemes]]`` entry of an experiment file, as written, on real sockets; a scheme the
    runtime cannot run is refused naming the field, before any call."""
    from tailcut.cli import main

    exp = tmp_path / "exp.toml"
    exp.write_text(
        '[[schemes]]\nname = "FUSO, 3 paths"\ntransport = "fuso"\n'
        'params = { subflows = 3, min_rto = "5ms", initial_rto = "20ms" }\n\n'
        '[[schemes]]\nname = "pias"\ntransport = "pias"\n'
    )
    out = tmp_path / "bench"
    argv = ["net", "bench", "--experiment", str(exp), "--entry", "FUSO, 3 paths", "--count", "30"]
    assert main([*argv, "--warmup", "2", "--out", str(out)]) == 0
    import json

    meta = json.loads((out / "net.json").read_text())
    assert meta["scheme"]["transport"] == "fuso" and meta["scheme"]["params"]["subflows"] == 3
    capsys.readouterr()
    assert main(["net", "bench", "--experiment", str(exp), "--entry", "pias", "--count", "3"]) == 2
    assert "scheme.transport: 'pias' needs strict-priority switch classes" in capsys.readouterr().err
    assert main(["net", "bench", "--scheme", "tcp", "--param", "min_rtto=5ms", "--count", "3"]) == 2
    assert "scheme.params.min_rtto: unknown field" in capsys.readouterr().err


def _free_udp_port() -> int:
    import socket

    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_net_serve_dcquic_warns_of_its_throwaway_ca_and_writes_it_for_clients(tmp_path) -> None:
    """Without --cert a DCQUIC server makes a CA of its own: it says so on stderr and writes the CA's
    certificate to --ca-out, with which a client in another process (--server) gets its answers."""
    import os
    import subprocess
    import sys

    from tailcut.cli import main

    ca = tmp_path / "ca.pem"
    address = f"127.0.0.1:{_free_udp_port()}"
    serve = ["net", "serve", "--scheme", "dcquic", "--bind", address, "--seconds", "5", "--ca-out", str(ca)]
    env = {**os.environ, "PYTHONPATH": str(Path(tailcut.__file__).parent.parent)}
    server = subprocess.Popen(
        [sys.executable, "-m", "tailcut", *serve],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        # The CA is written before the server says it serves.
        assert server.stdout is not None
        assert server.stdout.readline().startswith("serving dcquic echo RPCs on")
        assert ca.read_text().startswith("-----BEGIN CERTIFICATE-----")
        bench = ["net", "bench", "--scheme", "dcquic", "--server", address, "--ca", str(ca)]
        assert main([*bench, "--count", "5", "--warmup", "1"]) == 0
        _, err = server.communicate(timeout=60)
    finally:
        server.kill()
    assert server.returncode == 0, err
    assert "warning: no --cert/--key: this server uses a throwaway CA" in err
    assert f"--ca {ca} --server-name localhost" in err


def test_net_serve_without_ca_out_writes_the_ca_to_a_printed_path(capfd) -> None:
    import re

    from tailcut.cli import main

    address = f"127.0.0.1:{_free_udp_port()}"
    assert main(["net", "serve", "--scheme", "dcquic", "--bind", address, "--seconds", "0.1"]) == 0
    err = capfd.readouterr().err
    m = re.search(r"Its CA certificate is in (\S+): pass --ca", err)
    assert m, err
    path = Path(m.group(1))
    try:
        assert path.read_text().startswith("-----BEGIN CERTIFICATE-----")
    finally:
        path.unlink()


@pytest.mark.parametrize("scheme", ["tcp", "fuso"])
def test_loss_option_drops_datagrams_and_calls_stay_byte_exact(scheme: str) -> None:
    rng = random.Random(scheme)
    lossy = {**FAST, "loss": 0.05, "seed": 7}
    if scheme == "fuso":
        # Loss on path 0 only. With segments sized from the path MTU (8,872 B) a request of up to
        # 30 KB fits in one sub-flow's initial window, so FUSO carried everything on another
        # sub-flow and path 0 saw nothing to drop; at 1,372-byte segments the requests spill over
        # every sub-flow, path 0 included.
        lossy["loss_path"] = 0
        lossy["params"] = {**FAST["params"], "mss_bytes": 1372}
    with net.Server(scheme=scheme, **lossy) as s, net.Client(s.address, scheme=scheme, **lossy) as c:
        for _ in range(100):
            req = rng.randbytes(rng.randrange(1, 30_000))
            assert c.call(req) == req
        assert _eventually(lambda: c.stats()["calls_completed"] >= 100)
        assert c.stats()["dropped_by_hook"] > 0
        assert s.stats()["dropped_by_hook"] > 0
    # Without the option nothing is dropped.
    with net.Server(scheme=scheme, **FAST) as s, net.Client(s.address, scheme=scheme, **FAST) as c:
        assert c.call(b"x" * 10_000) == b"x" * 10_000
        assert c.stats()["dropped_by_hook"] == 0


def test_net_bench_loss_reports_the_dropped_datagrams(tmp_path, capsys) -> None:
    import json

    import pandas as pd

    from tailcut.cli import main

    out = tmp_path / "lossy"
    argv = ["net", "bench", "--scheme", "tcp", "--param", "min_rto=5ms", "--count", "100", "--warmup", "5"]
    assert main([*argv, "--loss", "0.05", "--seed", "3", "--out", str(out)]) == 0
    assert "--loss 0.05 on every path: dropped" in capsys.readouterr().out
    meta = json.loads((out / "net.json").read_text())
    assert meta["options"]["loss"] == 0.05
    assert meta["dropped_by_loss"]["client"] > 0 and meta["dropped_by_loss"]["server"] > 0
    assert meta["ends"]["client"]["dropped_by_hook"] == meta["dropped_by_loss"]["client"]
    assert pd.read_parquet(out / "flows.parquet")["completed"].all()
    assert main([*argv, "--loss", "2"]) == 2
    assert "net.loss" in capsys.readouterr().err


@pytest.mark.parametrize("baseline", ["kernel-tcp", "kernel-tls"])
def test_kernel_baseline_echoes_byte_exact(baseline: str) -> None:
    rng = random.Random(baseline)
    with net.KernelClient(baseline) as c:
        for _ in range(30):
            req = rng.randbytes(rng.randrange(0, 100_000))
            reply, stats = c.call_stats(req)
            assert reply == req and stats["latency_ns"] > 0
        assert c.stats()["calls_completed"] == 30


@pytest.mark.parametrize("baseline", ["kernel-tcp", "kernel-tls"])
def test_net_bench_kernel_baseline_writes_the_flow_columns(tmp_path, capsys, baseline: str) -> None:
    import json

    import pandas as pd

    from tailcut.cli import main
    from tailcut.results import FLOW_COLUMNS

    out = tmp_path / baseline
    argv = ["net", "bench", "--scheme", baseline, "--size", "100B,10KB", "--count", "50", "--warmup", "5"]
    assert main([*argv, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert f"{baseline}, closed load, 50 calls" in printed and "10000 B: p50" in printed
    flows = pd.read_parquet(out / "flows.parquet")
    assert list(flows.columns) == FLOW_COLUMNS
    assert len(flows) == 50 and flows["completed"].all()
    assert set(flows["size_bytes"]) == {100, 10_000} and set(flows["scheme"]) == {baseline}
    assert (flows["fct_ns"] > 0).all()
    meta = json.loads((out / "net.json").read_text())
    assert meta["scheme"]["transport"] == baseline


@pytest.mark.parametrize(
    ("flags", "named"),
    [
        (["--loss", "0.01"], "--loss"),
        (["--loss", "0.01", "--loss-path", "0"], "--loss"),
        (["--param", "min_rto=5ms"], "--param"),
        (["--concurrency", "2"], "--concurrency"),
    ],
)
def test_net_bench_kernel_baseline_refuses_what_it_cannot_honour(tmp_path, capsys, flags, named) -> None:
    from tailcut.cli import main

    out = tmp_path / "never"
    assert main(["net", "bench", "--scheme", "kernel-tcp", *flags, "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"{named}:" in err and "kernel-tcp" in err
    assert not out.exists()


def test_net_bench_refuses_a_run_whose_caller_fell_behind_its_arrivals(tmp_path, monkeypatch, capsys) -> None:
    """The caller's loop starved on purpose (each of its sleeps 20 ms longer, as a busy machine would
    hold it): the calls start late, the bench says so last and exits 3, with the verdict in net.json;
    --allow-invalid-timing accepts it, still marked. Only the direction is asserted."""
    import json
    import time as real_time

    from tailcut import netcmd
    from tailcut.cli import main

    sleep = real_time.sleep
    monkeypatch.setattr(netcmd.time, "sleep", lambda s: sleep(s + 0.02))
    base = ["net", "bench", "--scheme", "tcp", "--load", "poisson", "--rate", "2000", "--count", "40"]
    out = tmp_path / "late"
    assert main([*base, "--out", str(out)]) == netcmd.EXIT_INVALID_TIMING == 3
    assert "TIMING INVALID: calls started a median" in capsys.readouterr().err
    timing = json.loads((out / "net.json").read_text())["timing"]
    assert timing["valid"] is False and timing["start_late_p50_ns"] > timing["max_start_late_p50_ns"]
    assert main([*base, "--out", str(tmp_path / "ok"), "--allow-invalid-timing"]) == 0
    assert "accepted with --allow-invalid-timing" in capsys.readouterr().err


def test_timing_verdict_applies_only_to_a_schedule() -> None:
    from tailcut.netcmd import timing_verdict

    assert timing_verdict([{"fct_ns": 5}], 1000) == {"valid": True, "applies": False, "reasons": []}
    rows = [{"start_late_ns": n} for n in (0, 10, 2000, 3000)]
    assert timing_verdict(rows, 1000)["start_late_p50_ns"] == 10, "the lower median"
    assert timing_verdict(rows, 1000)["valid"] is True
    assert timing_verdict(rows, 5)["valid"] is False
