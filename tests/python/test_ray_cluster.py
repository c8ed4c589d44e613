"""A sweep on a real two-node Ray cluster, through ``--ray-address``.

The head runs in one network namespace (10.77.0.1), a worker node in a second one (10.77.0.2), joined by
a veth pair; each has one CPU, so the sweep's points spread over both. The worker node also runs in its
own mount namespace with the test's folder hidden under an empty tmpfs, as on another machine: the
experiment file, the CDF files it names (one anchored in the file, two given by ``--grid`` relative to the
working folder) and the sweep's output folder do not exist there, so a point placed on it works only if
its inputs are sent with it and its results sent back. The cluster uses Ray's token authentication (the
default of Ray's own ``ray.init()`` here), and the sweep's process is given the token but not
``RAY_AUTH_MODE``: the case that failed with "Failed to connect to Ray cluster at ..." before.

Checked: every point ran, on a node the worker itself recorded (Ray's node id and address, in
``sweep.json``), both nodes ran points, and every file of the result folder is byte-identical to the
same sweep on the local process pool (``wall_seconds`` in ``runs.json`` and the nodes in ``sweep.json``
apart). Needs root, ``ip netns`` and Ray; skips without them, unless ``TAILCUT_REQUIRE_REALNET=1`` (CI)
makes that a failure. Every process of the cluster is in one of the test's namespaces and is killed by
its id (``ip netns pids``); the namespaces are deleted, also when the test fails.
"""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import TINY

REQUIRE = os.environ.get("TAILCUT_REQUIRE_REALNET") == "1"
HEAD_IP, WORKER_IP = "10.77.0.1", "10.77.0.2"
PORT = 6379
ADDRESS = f"{HEAD_IP}:{PORT}"
# Generous: a loaded 2-core machine starts a Ray node in seconds, but sometimes in tens of them.
START_TIMEOUT = 120.0
SWEEP_TIMEOUT = 300


def unavailable(reason: str) -> None:
    """Skip, saying why; under ``TAILCUT_REQUIRE_REALNET=1`` (CI) fail instead (conftest.realnet_or_skip)."""
    if REQUIRE:
        pytest.fail(f"TAILCUT_REQUIRE_REALNET=1 but the Ray cluster test cannot run here: {reason}")
    pytest.skip(reason)


def run(*argv: str, check: bool = True, **kwargs) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, check=check, capture_output=True, text=True, **kwargs)


def ray_command() -> list[str]:
    """The ``ray`` command of this Python's environment."""
    script = Path(sys.executable).parent / "ray"
    return [str(script)] if script.exists() else [sys.executable, "-m", "ray.scripts.scripts"]


@dataclass
class Cluster:
    head_ns: str
    worker_ns: str
    env: dict[str, str]  # what a driver in the head namespace needs (the token, not RAY_AUTH_MODE)
    node_env: dict[str, str]  # the nodes' and `ray status`'s: the token and RAY_AUTH_MODE=token
    hidden: Path  # the folder the worker node cannot see
    logs: Path
    worker_pid: int

    def status(self) -> str:
        done = run(
            "ip",
            "netns",
            "exec",
            self.head_ns,
            *ray_command(),
            "status",
            f"--address={ADDRESS}",
            check=False,
            env=self.node_env,
            timeout=60,
        )
        return done.stdout + done.stderr


def active_nodes(status: str) -> set[str]:
    """The node ids under ``Active:`` in ``ray status``'s output."""
    section = status.split("Active:", 1)[1].split("Pending:", 1)[0] if "Active:" in status else ""
    return set(re.findall(r"node_([0-9a-f]{20,})", section))


def netns_pids(name: str) -> list[int]:
    done = run("ip", "netns", "pids", name, check=False)
    return [int(p) for p in done.stdout.split()] if done.returncode == 0 else []


def kill_namespace(name: str) -> None:
    """Kill every process in network namespace ``name`` (all of them started by this test), by id."""
    deadline = time.monotonic() + 30
    while pids := netns_pids(name):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        if time.monotonic() > deadline:
            raise AssertionError(f"processes {pids} in namespace {name} survive SIGKILL")
        time.sleep(0.2)


def logs_of(folder: Path) -> str:
    return "\n".join(
        f"--- {p.name}\n{p.read_text(errors='replace')[-3000:]}" for p in sorted(folder.glob("*.log"))
    )


def wait_for_nodes(cluster: Cluster, count: int, starters: list[subprocess.Popen]) -> set[str]:
    """Poll ``ray status`` until ``count`` nodes are active; fail at once if a ``ray start`` exited."""
    deadline = time.monotonic() + START_TIMEOUT
    status = ""
    while time.monotonic() < deadline:
        for proc in starters:
            if proc.poll() is not None:
                raise AssertionError(f"ray start exited with {proc.returncode}\n{logs_of(cluster.logs)}")
        status = cluster.status()
        nodes = active_nodes(status)
        if len(nodes) >= count:
            return nodes
        time.sleep(1)
    raise AssertionError(
        f"{count} Ray nodes not up after {START_TIMEOUT} s:\n{status}\n{logs_of(cluster.logs)}"
    )


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[Cluster]:
    if importlib.util.find_spec("ray") is None:
        unavailable("ray is not installed (pip install '.[ray]')")
    if os.geteuid() != 0:
        unavailable("needs root (network and mount namespaces)")
    for tool in ("ip", "unshare", "nsenter"):
        if shutil.which(tool) is None:
            unavailable(f"no {tool} command")
    tag = secrets.token_hex(3)
    head_ns, worker_ns = f"tcray-h-{tag}", f"tcray-w-{tag}"
    made: list[str] = []
    starters: list[subprocess.Popen] = []
    # Ray's socket paths must stay short: not under pytest's tmp_path.
    temp_dirs = [tempfile.mkdtemp(prefix="rt", dir="/tmp") for _ in range(2)]
    logs = tmp_path / "ray-logs"
    logs.mkdir()
    try:
        for ns in (head_ns, worker_ns):
            done = run("ip", "netns", "add", ns, check=False)
            if done.returncode != 0:
                unavailable(f"cannot create a network namespace: {done.stderr.strip()}")
            made.append(ns)
        run("ip", "link", "add", f"tch{tag}", "type", "veth", "peer", "name", f"tcw{tag}")
        for ns, link, ip in ((head_ns, f"tch{tag}", HEAD_IP), (worker_ns, f"tcw{tag}", WORKER_IP)):
            run("ip", "link", "set", link, "netns", ns)
            run("ip", "-n", ns, "addr", "add", f"{ip}/24", "dev", link)
            run("ip", "-n", ns, "link", "set", link, "up")
            run("ip", "-n", ns, "link", "set", "lo", "up")

        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_")}
        env.update(RAY_USAGE_STATS_ENABLED="0", RAY_AUTH_TOKEN=secrets.token_hex(32))
        node_env = {**env, "RAY_AUTH_MODE": "token"}
        common = ["--block", "--num-cpus=1", "--object-store-memory=200000000", "--disable-usage-stats"]
        head = [
            *ray_command(),
            "start",
            "--head",
            f"--node-ip-address={HEAD_IP}",
            f"--port={PORT}",
            "--include-dashboard=false",
            f"--temp-dir={temp_dirs[0]}",
            *common,
        ]
        # The worker node: its own mount namespace, with tmp_path (the experiment, its CDF files and the
        # sweep's output) under an empty tmpfs, as on another machine.
        hide = 'mount -t tmpfs tailcut-hidden "$0" && exec "$@"'
        worker = [
            "unshare",
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            hide,
            str(tmp_path),
            *ray_command(),
            "start",
            f"--address={ADDRESS}",
            f"--node-ip-address={WORKER_IP}",
            f"--temp-dir={temp_dirs[1]}",
            *common,
        ]
        cluster = Cluster(head_ns, worker_ns, env, node_env, tmp_path, logs, worker_pid=0)
        for name, ns, argv in (("head", head_ns, head), ("worker", worker_ns, worker)):
            with (logs / f"{name}.log").open("w") as log:
                starters.append(
                    subprocess.Popen(
                        ["ip", "netns", "exec", ns, *argv],
                        env=node_env,
                        stdin=subprocess.DEVNULL,
                        stdout=log,
                        stderr=subprocess.STDOUT,
                        start_new_session=True,
                    )
                )
            wait_for_nodes(cluster, 1 if name == "head" else 2, starters)
        cluster.worker_pid = starters[1].pid  # `ip netns exec`, `unshare` and `sh` exec: ray start's pid
        yield cluster
    finally:
        # Nothing of the cluster is kept, so no graceful stop (ray start --block takes half a minute on
        # SIGTERM here) and no `ray stop`, which kills every Ray process of the machine by name: each
        # process of ours, by id (the starters' groups, then whatever is left in the namespaces).
        for proc in starters:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout=30)
        for ns in made:
            kill_namespace(ns)  # anything left (workers in other process groups), by id
            run("ip", "netns", "del", ns, check=False)  # takes the veth pair with it
        for folder in temp_dirs:
            shutil.rmtree(folder, ignore_errors=True)
        leftover = [ns for ns in made if ns in run("ip", "netns", "list").stdout]
        assert not leftover, f"namespaces left behind: {leftover}"


def write_experiment(folder: Path) -> Path:
    """The tiny experiment with a background component whose CDF file sits beside the experiment file;
    the query component's CDF comes from ``--grid`` (two files, relative to the working folder)."""
    from tailcut.paths import PACKAGE_DATA

    folder.mkdir()
    cdf = (PACKAGE_DATA / "workloads" / "websearch.cdf").read_text()
    (folder / "q1.cdf").write_text(cdf)
    halved = []  # another distribution: every size halved
    for line in cdf.splitlines():
        value, _, rest = line.partition(" ")
        halved.append(f"{int(value) // 2} {rest}" if value.isdigit() and rest else line)
    (folder / "q2.cdf").write_text("\n".join(halved) + "\n")
    (folder / "cdfs").mkdir()
    (folder / "cdfs" / "bg.cdf").write_text(cdf)
    text = TINY.read_text().replace('cdf = "websearch"', 'cdf = "q1.cdf"')
    text += '\n[[workload]]\nname = "background"\npattern = { kind = "all_to_all" }\ncdf = "cdfs/bg.cdf"\n'
    text += "load = 0.1\nflows = 20\n"
    (folder / "exp.toml").write_text(text)
    return folder / "exp.toml"


def sweep_args(out: Path) -> list[str]:
    return [
        sys.executable,
        "-m",
        "tailcut",
        "sweep",
        "exp.toml",
        "--grid",
        "workload.0.cdf=q1.cdf,q2.cdf",
        "--seeds",
        "2",
        "--out",
        str(out),
    ]


def comparable(path: Path) -> bytes | object:
    """A result file as it must match between executors: ``runs.json`` without wall times and
    ``sweep.json`` without the nodes the points ran on; every other file byte for byte."""
    if path.name == "runs.json":
        return [{k: v for k, v in r.items() if k != "wall_seconds"} for r in json.loads(path.read_text())]
    if path.name == "sweep.json":
        meta = json.loads(path.read_text())
        meta["points"] = [{k: v for k, v in p.items() if k != "node"} for p in meta["points"]]
        return meta
    return path.read_bytes()


def tree(root: Path) -> dict[str, bytes | object]:
    return {p.relative_to(root).as_posix(): comparable(p) for p in sorted(root.rglob("*")) if p.is_file()}


def test_sweep_on_a_two_node_ray_cluster(cluster: Cluster, tmp_path: Path) -> None:
    experiment = write_experiment(tmp_path / "data")
    data = experiment.parent
    # The premise: the worker node does not see the experiment (its mount namespace hides tmp_path).
    seen = run(
        "nsenter", "-t", str(cluster.worker_pid), "-m", "--", "test", "-e", str(experiment), check=False
    )
    assert seen.returncode == 1, "the worker node should not see the test's files"

    remote_out = tmp_path / "ray"
    driver = run(
        "ip",
        "netns",
        "exec",
        cluster.head_ns,
        *sweep_args(remote_out),
        "--executor",
        "ray",
        "--ray-address",
        ADDRESS,
        check=False,
        cwd=data,
        env=cluster.env,
        timeout=SWEEP_TIMEOUT,
    )
    assert driver.returncode == 0, f"{driver.stdout}\n{driver.stderr}\n{logs_of(cluster.logs)}"
    assert "4 points: 4 ran, 0 already done, 0 failed" in driver.stdout

    local_out = tmp_path / "local"
    local = run(*sweep_args(local_out), "--jobs", "2", check=False, cwd=data, timeout=SWEEP_TIMEOUT)
    assert local.returncode == 0, f"{local.stdout}\n{local.stderr}"

    # (a) Where each point ran, as the Ray worker that ran it recorded it.
    points = json.loads((remote_out / "sweep.json").read_text())["points"]
    assert len(points) == 4 and all(p["error"] is None and not p["skipped"] for p in points)
    nodes = {p["node"]["node_id"]: p["node"]["ip"] for p in points}
    assert set(nodes.values()) == {HEAD_IP, WORKER_IP}, points
    assert set(nodes) == active_nodes(cluster.status()), "points ran on nodes that are not the cluster's"
    assert all(nodes[p["node"]["node_id"]] == p["node"]["ip"] for p in points)

    # (b) The same files as the local pool's sweep, byte for byte.
    remote_files, local_files = tree(remote_out), tree(local_out)
    assert sorted(remote_files) == sorted(local_files)
    different = [name for name in local_files if remote_files[name] != local_files[name]]
    assert not different, different
    # The grid's CDF files were read: the two differ, and so do their points.
    q1, q2 = (
        json.loads((remote_out / "points" / f"workload.0.cdf={q}__seed=1" / "summary.json").read_text())
        for q in ("q1.cdf", "q2.cdf")
    )
    assert q1["summary"] != q2["summary"]


def test_a_worker_with_another_tailcut_refuses_its_point() -> None:
    """A Ray worker whose tailcut is not the sweep's runs nothing and says so (here the sweep's build is
    faked; the worker's is this one)."""
    if importlib.util.find_spec("ray") is None:
        unavailable("ray is not installed (pip install '.[ray]')")
    import ray

    from tailcut.sweep import Point, _ray_point, run_point

    temp_dir = tempfile.mkdtemp(prefix="rt", dir="/tmp")  # Ray's session, removed afterwards
    try:
        ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False, _temp_dir=temp_dir)
        task = ray.remote(_ray_point).remote(run_point, ("0.0.0", "0000000"), {}, {}, {}, Point((), 1))
        outcome, node, files = ray.get(task)
    finally:
        ray.shutdown()
        shutil.rmtree(temp_dir, ignore_errors=True)
    assert files == {} and outcome.node == node and node["node_id"]
    assert "runs tailcut" in outcome.error and "tailcut 0.0.0 (commit 0000000)" in outcome.error
    assert "install the same tailcut wheel on every node" in outcome.error
