"""``tailcut net serve`` and ``tailcut net bench``: real RPCs over UDP with a scheme of the runtime.

``bench`` runs echo RPCs against a server (one started in-process on 127.0.0.1 unless ``--server``
names one), in a closed loop (``--concurrency`` callers back to back) or as Poisson arrivals at
``--rate`` calls/s, with request sizes drawn from ``--size``. It prints the latency distribution per
size and, with ``--out``, writes ``flows.parquet`` with the simulator's flow columns (one row per
call: ``start_ns`` the call's arrival, ``fct_ns`` until its response, the request's sender counters;
calls without a response are kept, ``completed`` false) and ``net.json`` (the options and both ends'
counters). See ``docs/net.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from tailcut import _core
from tailcut.config import float_arg, int_arg, parse_bytes
from tailcut.outdir import atomic_dir, claim, write_marker
from tailcut.summary import percentile

# Range-checked numbers (the runtime's fields are unsigned): never an OverflowError traceback.
SEED = int_arg(0)
COUNT = int_arg(0)
# The testbed's bound on late flow starts, and its exit code for a run that did not keep its timing
# (docs/testbed.md, "Timing verdict"), read from the testbed's Rust definitions: a bench whose caller
# fell behind its Poisson arrivals measured this machine's scheduling as much as the network, and must
# not pass as valid.
MAX_START_LATE_US = _core.TESTBED_MAX_START_LATE_NS // 1000
EXIT_INVALID_TIMING = _core.TESTBED_EXIT_INVALID_TIMING


def size_list(text: str) -> list[int]:
    return [parse_bytes(s) for s in text.split(",") if s.strip()]


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``tailcut net serve`` and ``tailcut net bench``."""
    p = sub.add_parser(
        "net", help="serve or measure real RPCs over UDP with a scheme (the tailcut-net runtime)"
    )
    nsub = p.add_subparsers(dest="net_command", required=True)
    serve = nsub.add_parser("serve", help="an echo server of one scheme")
    serve.add_argument(
        "--bind", default="127.0.0.1:7000", help="address to serve on (default 127.0.0.1:7000)"
    )
    serve.add_argument(
        "--seconds",
        type=float_arg(0.0),
        default=0,
        help="stop after this long (default 0: until Ctrl-C)",
    )
    serve.add_argument(
        "--ca-out",
        type=Path,
        help="dcquic without --cert: write the throwaway CA's certificate (PEM) here, for clients' --ca "
        "(default: a new file in the temporary folder, whose path is printed)",
    )
    bench = nsub.add_parser("bench", help="closed-loop or Poisson echo RPCs; latency and flows.parquet")
    bench.add_argument(
        "--server", help="address of a running server of the same scheme (default: one in-process)"
    )
    bench.add_argument(
        "--size", type=size_list, default=[10_000], help="request sizes, drawn uniformly: 100B,10KB"
    )
    bench.add_argument("--count", type=COUNT, default=1000, help="calls measured (default 1000)")
    bench.add_argument(
        "--warmup", type=COUNT, default=100, help="calls before the measured ones (default 100)"
    )
    bench.add_argument("--load", choices=["closed", "poisson"], default="closed", help="arrival process")
    bench.add_argument(
        "--rate",
        type=float_arg(0.0, inclusive=False),
        default=1000.0,
        help="calls/s with --load poisson (default 1000)",
    )
    bench.add_argument("--concurrency", type=COUNT, default=1, help="callers at once (default 1)")
    bench.add_argument("--out", type=Path, help="result folder: flows.parquet and net.json")
    bench.add_argument(
        "--max-start-late-us",
        type=COUNT,
        default=MAX_START_LATE_US,
        help="Poisson load: a run whose calls started a median of more than this late (the caller fell "
        f"behind its arrivals) is invalid (default {MAX_START_LATE_US}, the testbed's max_start_late)",
    )
    bench.add_argument(
        "--allow-invalid-timing",
        action="store_true",
        help=f"exit 0 when the run did not keep its arrival schedule (otherwise exit {EXIT_INVALID_TIMING}; "
        "the result is written and marked either way)",
    )
    bench.add_argument("--overwrite", action="store_true", help="replace an earlier result in --out")
    for q in (serve, bench):
        q.add_argument(
            "--scheme",
            default="cloudburst",
            help="a scheme of the registry (tailcut schemes), with its defaults (default cloudburst); "
            "bench also takes the kernel baselines kernel-tcp and kernel-tls",
        )
        q.add_argument(
            "--experiment",
            type=Path,
            help="take the scheme from this experiment file's [[schemes]] entry named by --entry",
        )
        q.add_argument("--entry", help="the name of that [[schemes]] entry")
        q.add_argument(
            "--param",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="a scheme parameter over the entry's, as params writes it: min_rto=5ms, subflows=4, "
            'congestion_control={kind="dctcp"}, mps.negotiate=false (repeatable)',
        )
        q.add_argument(
            "--network-trims",
            action="store_true",
            help="the network's switches cut payloads instead of dropping (CP can run)",
        )
        q.add_argument(
            "--seed", type=SEED, default=1, help="seed of the engines and of the request sizes (default 1)"
        )
        q.add_argument("--spin-us", type=COUNT, help="busy-poll the sockets this long before each sleep")
        q.add_argument("--cert", help="dcquic server: certificate chain (PEM); without it a throwaway CA")
        q.add_argument("--key", help="dcquic server: private key (PEM)")
        q.add_argument("--ca", help="dcquic client: trusted root(s) (PEM)")
        q.add_argument("--server-name", help="dcquic: the certificate's name (default localhost)")
        q.add_argument("--task-bytes", type=COUNT, help="dcquic client: task size of the MPS rule")
        q.add_argument("--path-mtu", type=COUNT, help="dcquic: largest IP packet the path carries (9000)")
        q.add_argument(
            "--loss",
            type=float_arg(0.0),
            metavar="RATE",
            help="drop this fraction of each end's outgoing datagrams before the socket (0.01: 1%%), "
            "seeded by --seed: a test hook, not a network",
        )
        q.add_argument("--loss-path", type=COUNT, metavar="N", help="with --loss: only path N's datagrams")


def scheme_entry(args: argparse.Namespace) -> dict[str, Any]:
    """The scheme as an experiment file's ``[[schemes]]`` entry: ``--experiment FILE --entry NAME``
    or ``--scheme NAME``, with each ``--param`` laid over its ``params`` (dotted keys reach into
    tables). The flags are read by the runtime's own command line code (one reading for
    ``tailcut-net`` and ``tailcut net``); the runtime resolves the entry through the scheme layer."""
    from tailcut import _core

    argv = ["--scheme", args.scheme]
    if args.experiment is not None:
        argv += ["--experiment", str(args.experiment)]
    if args.entry is not None:
        argv += ["--entry", args.entry]
    for p in args.param:
        argv += ["--param", p]
    return json.loads(_core.net_scheme_entry(argv))


def scheme_label(args: argparse.Namespace) -> str:
    """The scheme's name in output: the entry's name, else its transport."""
    entry = scheme_entry(args)
    return str(entry.get("name") or entry["transport"])


def _options(args: argparse.Namespace) -> dict[str, Any]:
    keys = (
        "seed",
        "spin_us",
        "cert",
        "key",
        "ca",
        "server_name",
        "task_bytes",
        "path_mtu",
        "loss",
        "loss_path",
    )
    opts = {k: getattr(args, k) for k in keys if getattr(args, k) is not None}
    if args.network_trims:
        opts["trims"] = True
    return opts


def cmd(args: argparse.Namespace) -> int:
    from tailcut import net

    if args.net_command == "serve":
        with net.Server(args.bind, scheme_entry(args), **_options(args)) as s:
            if s.ca_pem:
                _throwaway_ca(s.ca_pem, args)
            print(f"serving {scheme_label(args)} echo RPCs on {s.address}", flush=True)
            deadline = time.monotonic() + args.seconds if args.seconds > 0 else None
            while deadline is None or time.monotonic() < deadline:
                time.sleep(min(10.0, args.seconds or 10.0))
                print(json.dumps(s.stats()), flush=True)
        return 0
    return bench(args)


def _throwaway_ca(ca_pem: str, args: argparse.Namespace) -> Path:
    """A DCQUIC server started without ``--cert`` made a CA of its own: clients trust nothing else, so
    its certificate is written where they can take it (``--ca-out``, else a new temporary file) and a
    warning on stderr says so, rather than leaving every remote client to fail its handshake."""
    import tempfile

    if args.ca_out is not None:
        path = Path(args.ca_out)
        try:
            path.write_text(ca_pem)
        except OSError as exc:
            reason = exc.strerror or exc
            raise OSError(f"--ca-out {path}: cannot write the CA certificate: {reason}") from None
    else:
        fd, name = tempfile.mkstemp(prefix="tailcut-net-ca-", suffix=".pem")
        with open(fd, "w") as f:
            f.write(ca_pem)
        path = Path(name)
    name = args.server_name or "localhost"
    print(
        f"tailcut: warning: no --cert/--key: this server uses a throwaway CA made just now and a "
        f"certificate for '{name}' it signed (for tests only). Its CA certificate is in {path}: pass "
        f"--ca {path} --server-name {name} to clients (tailcut net bench --server ...).",
        file=sys.stderr,
        flush=True,
    )
    return path


def _check(args: argparse.Namespace) -> None:
    if args.count < 1 or args.warmup < 0 or args.concurrency < 1:
        raise ValueError("--count and --concurrency must be >= 1, --warmup >= 0")
    if args.load == "poisson" and not args.rate > 0:
        raise ValueError("--rate must be > 0")
    if not args.size:
        raise ValueError("--size: give at least one size")


# Flags of the runtime that a kernel baseline cannot honour: refused, never ignored.
_NOT_FOR_KERNEL = (
    ("loss", "--loss", "loss cannot be injected into kernel TCP on loopback without root and netem"),
    (
        "loss_path",
        "--loss-path",
        "loss cannot be injected into kernel TCP on loopback without root and netem",
    ),
    ("experiment", "--experiment", "a kernel baseline is not a [[schemes]] entry"),
    ("param", "--param", "a kernel baseline has no scheme parameters"),
    ("network_trims", "--network-trims", "a runtime option"),
    ("spin_us", "--spin-us", "a runtime option"),
    ("task_bytes", "--task-bytes", "a dcquic option"),
    ("path_mtu", "--path-mtu", "a dcquic option"),
    ("cert", "--cert", "the in-process kernel-tls server makes its own certificate"),
    ("key", "--key", "the in-process kernel-tls server makes its own certificate"),
)


def _check_kernel(args: argparse.Namespace) -> None:
    """Refuses, naming it, each flag a kernel baseline (``--scheme kernel-tcp|kernel-tls``) cannot
    honour."""
    for attr, flag, why in _NOT_FOR_KERNEL:
        if getattr(args, attr) not in (None, False, []):
            raise ValueError(f"{flag}: not with --scheme {args.scheme} ({why})")
    if args.concurrency != 1:
        raise ValueError(f"--concurrency: {args.scheme} runs one connection, one call at a time (give 1)")
    if args.scheme == "kernel-tcp" and (args.ca or args.server_name):
        raise ValueError("--ca/--server-name: only with --scheme kernel-tls")


def bench(args: argparse.Namespace) -> int:
    from tailcut import net

    _check(args)
    kernel = args.scheme in net.KERNEL_BASELINES and args.experiment is None
    if kernel:
        _check_kernel(args)
    if args.out is not None:
        claim(args.out, "run", overwrite=args.overwrite)
    if kernel:
        return _bench_kernel(args)
    opts = _options(args)
    sizes, offsets, base, arrivals = _plan(args)
    entry = scheme_entry(args)
    local = None if args.server else net.Server(scheme=entry, **opts)
    address = args.server or (local.address if local else "")
    if local is not None and local.ca_pem and "ca" not in opts:
        opts = {**opts, "ca_pem": local.ca_pem}
    try:
        with net.Client(address, entry, **opts) as client:
            try:
                for i in range(args.warmup):
                    client.call(base[: sizes[i % len(sizes)]])
            except TimeoutError as exc:
                return _no_answer(address, args, f"the warm-up call timed out ({exc})")
            except ConnectionError as exc:
                return _refused(address, args, str(exc))
            rows, wrong = _run(client, sizes, offsets, base, arrivals, args.concurrency)
            ends = {"client": client.stats(), "server": local.stats() if local else None}
    finally:
        if local is not None:
            local.close()
    if not any(r["completed"] for r in rows):
        # No call answered: there is no measurement, only a server that did not answer, or a
        # connection it refused (whose reason says why, e.g. the certificate).
        refused = next((r["error"] for r in rows if r.get("error")), None)
        if refused is not None:
            return _refused(address, args, refused)
        return _no_answer(address, args, f"all {len(rows)} calls timed out")
    _print(args, rows)
    if args.loss is not None:
        dropped = _dropped(ends)
        where = "every path" if args.loss_path is None else f"path {args.loss_path}"
        print(
            f"  --loss {args.loss:g} on {where}: dropped {dropped['client']} client and "
            f"{dropped['server'] if dropped['server'] is not None else '(remote server: unknown)'} "
            "server datagrams"
        )
    return _finish(args, address, rows, wrong, ends, opts)


def _plan(args: argparse.Namespace) -> tuple[list[int], list[int], bytes, list[float] | None]:
    """The calls of a bench, the same for a scheme and a kernel baseline: each one's size, its offset into
    one random buffer (requests are slices of it, so every call's bytes differ and the echo is checked),
    the buffer, and the arrival times (None for a closed loop)."""
    rng = random.Random(args.seed)
    sizes = [rng.choice(args.size) for _ in range(args.count)]
    base = rng.randbytes(2 * max(args.size))
    offsets = [rng.randrange(max(args.size)) for _ in range(args.count)]
    return sizes, offsets, base, _arrivals(rng, args)


def _finish(
    args: argparse.Namespace, address: str, rows: list[dict[str, Any]], wrong: int, ends: dict, opts: dict
) -> int:
    """What every bench ends with: the result folder, then its verdicts (wrong echoes, then timing)."""
    if args.out is not None:
        _write(args, address, rows, ends, opts)
    if wrong:
        print(f"tailcut: {wrong} responses differ from their request (the server must echo)", file=sys.stderr)
        return 1
    return _timing_exit(args, rows)


def timing_verdict(rows: list[dict[str, Any]], max_start_late_ns: int) -> dict[str, Any]:
    """The testbed's rule on late starts, applied to a bench: invalid when the calls' lower-median start
    lateness is above the bound. A closed loop has no schedule to fall behind (``applies`` false)."""
    late = sorted(r["start_late_ns"] for r in rows if r.get("start_late_ns") is not None)
    p50 = _core.start_late_p50(late)
    if p50 is None:
        return {"valid": True, "applies": False, "reasons": []}
    p99 = late[min(len(late) - 1, len(late) * 99 // 100)]
    reasons = []
    if p50 > max_start_late_ns:
        reasons.append(
            f"calls started a median {p50 / 1e3:.1f} us after their arrival > "
            f"{max_start_late_ns / 1e3:.1f} us (--max-start-late-us): the caller fell behind its arrivals"
        )
    return {
        "valid": not reasons,
        "applies": True,
        "start_late_p50_ns": p50,
        "start_late_p99_ns": p99,
        "max_start_late_p50_ns": max_start_late_ns,
        "reasons": reasons,
    }


def _timing_exit(args: argparse.Namespace, rows: list[dict[str, Any]]) -> int:
    """0, or the testbed's exit code for a run that did not keep its timing (warned last, on stderr)."""
    verdict = timing_verdict(rows, args.max_start_late_us * 1000)
    if verdict["valid"]:
        return 0
    for r in verdict["reasons"]:
        print(f"WARNING: TIMING INVALID: {r}", file=sys.stderr)
    if args.allow_invalid_timing:
        print("WARNING: accepted with --allow-invalid-timing (net.json: timing)", file=sys.stderr)
        return 0
    print(
        f"WARNING: exit {EXIT_INVALID_TIMING}: rerun on a quieter machine or at a lower --rate, or pass "
        "--allow-invalid-timing to accept it (net.json: timing)",
        file=sys.stderr,
    )
    return EXIT_INVALID_TIMING


def _dropped(ends: dict) -> dict[str, int | None]:
    """Datagrams the loss hook dropped, per end (None: not seen, e.g. a remote server)."""
    return {end: (ends[end] or {}).get("dropped_by_hook") for end in ("client", "server")}


def _bench_kernel(args: argparse.Namespace) -> int:
    """``--scheme kernel-tcp|kernel-tls``: the same requests, rows, output and files as a scheme's
    bench, over the kernel's TCP (one connection, as ``tailcut-net bench``)."""
    from tailcut import net

    sizes, offsets, base, arrivals = _plan(args)
    try:
        client = net.KernelClient(args.scheme, args.server, args.server_name, args.ca)
    except ConnectionError as exc:
        return _refused(args.server or "127.0.0.1", args, str(exc))
    except OSError as exc:
        return _no_answer(args.server or "127.0.0.1", args, str(exc))
    address = client.server
    with client:
        try:
            for i in range(args.warmup):
                client.call(base[: sizes[i % len(sizes)]])
        except ConnectionError as exc:
            return _refused(address, args, str(exc))
        rows, wrong = _run(client, sizes, offsets, base, arrivals, 1)
        ends = {"client": client.stats(), "server": None}
    if not any(r["completed"] for r in rows):
        refused = next((r["error"] for r in rows if r.get("error")), "no call completed")
        return _refused(address, args, refused)
    _print(args, rows)
    opts = {k: v for k, v in {"seed": args.seed, "server_name": args.server_name, "ca": args.ca}.items() if v}
    return _finish(args, address, rows, wrong, ends, opts)


def _no_answer(address: str, args: argparse.Namespace, what: str) -> int:
    """A bench that measured nothing fails (exit 1) and writes no result."""
    print(
        f"tailcut: error: {scheme_label(args)} server {address} did not answer: {what}; is it running, on "
        "that port, with that scheme (and for DCQUIC, --ca and --server-name matching its certificate)?",
        file=sys.stderr,
    )
    return 1


def _refused(address: str, args: argparse.Namespace, reason: str) -> int:
    """The connection to the server ended before any answer, with its reason (exit 1, no result)."""
    print(f"tailcut: error: {scheme_label(args)} server {address}: {reason}", file=sys.stderr)
    return 1


def _arrivals(rng: random.Random, args: argparse.Namespace) -> list[float] | None:
    """Arrival times in seconds from the start, for Poisson load; None for a closed loop."""
    if args.load == "closed":
        return None
    t, out = 0.0, []
    for _ in range(args.count):
        t += rng.expovariate(args.rate)
        out.append(t)
    return out


def _run(
    client: Any, sizes: list[int], offsets: list[int], base: bytes, arrivals: list[float] | None, workers: int
):
    rows: list[dict[str, Any] | None] = [None] * len(sizes)
    wrong = 0
    lock = threading.Lock()
    t0 = time.monotonic_ns()

    def one(i: int, start_ns: int, start_late_ns: int | None = None) -> None:
        nonlocal wrong
        req = base[offsets[i] : offsets[i] + sizes[i]]
        row: dict[str, Any] = {"flow_id": i, "size_bytes": sizes[i], "start_ns": start_ns}
        if start_late_ns is not None:
            row["start_late_ns"] = start_late_ns
        try:
            reply, stats = client.call_stats(req)
        except TimeoutError:
            row.update(finish_ns=None, fct_ns=None, completed=False)
        except ConnectionError as exc:
            row.update(finish_ns=None, fct_ns=None, completed=False, error=str(exc))
        else:
            finish = time.monotonic_ns() - t0
            row.update(finish_ns=finish, fct_ns=finish - start_ns, completed=True)
            row.update({k: v for k, v in stats.items() if k != "latency_ns"})
            if reply != req:
                with lock:
                    wrong += 1
        rows[i] = row

    with ThreadPoolExecutor(max_workers=workers) as pool:
        if arrivals is None:
            nxt = iter(range(len(sizes)))

            def worker() -> None:
                while True:
                    with lock:
                        i = next(nxt, None)
                    if i is None:
                        return
                    one(i, time.monotonic_ns() - t0)

            for f in [pool.submit(worker) for _ in range(workers)]:
                f.result()
        else:
            futures = []
            for i, at in enumerate(arrivals):
                due = t0 + int(at * 1e9)
                delay = due - time.monotonic_ns()
                if delay > 0:
                    time.sleep(delay / 1e9)
                # How late the caller handed the call over: its own lag, not the network's (waiting for
                # a free caller after that is part of the call's time, as in any open-loop load).
                late = max(0, time.monotonic_ns() - due)
                futures.append(pool.submit(one, i, int(at * 1e9), late))
            for f in futures:
                f.result()
    return [r for r in rows if r is not None], wrong


def _print(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{scheme_label(args)}, {args.load} load, {len(rows)} calls")
    for size in sorted(set(args.size)):
        fct = sorted(r["fct_ns"] for r in rows if r["size_bytes"] == size and r["completed"])
        failed = sum(1 for r in rows if r["size_bytes"] == size and not r["completed"])
        if not fct:
            print(f"  {size:>9} B: no call completed ({failed} failed)")
            continue

        def q(per_mille: int, fct: list[int] = fct, failed: int = failed) -> float:
            # docs/metrics.md: a failed call is infinitely late (inf when the rank falls among them).
            return percentile(fct, failed, per_mille) / 1e3

        print(
            f"  {size:>9} B: p50 {q(500):9.1f} us  p99 {q(990):9.1f} us  p99.9 {q(999):9.1f} us"
            f"  max {fct[-1] / 1e3:9.1f} us  ({len(fct)} calls, {failed} failed)"
        )


def _write(
    args: argparse.Namespace, address: str, rows: list[dict[str, Any]], ends: dict, opts: dict
) -> None:
    import pandas as pd

    from tailcut.results import FLOW_COLUMNS

    frame = pd.DataFrame(rows)
    frame["scheme"] = scheme_label(args)
    frame["component"] = "rpc"
    frame["src"] = "client"
    frame["dst"] = address
    for col in FLOW_COLUMNS:
        if col not in frame.columns:
            frame[col] = None
    # The arrival lateness (Poisson load) is the run's own timing measure, kept beside the flow columns.
    frame = frame[FLOW_COLUMNS + [c for c in ("start_late_ns",) if c in frame.columns]]
    from tailcut.provenance import provenance, write_parquet

    stamp = provenance()
    with atomic_dir(args.out) as tmp:
        write_parquet(frame, tmp / "flows.parquet", stamp)
        meta = {
            **stamp,
            "scheme": scheme_entry(args),
            "load": args.load,
            "options": opts,
            "ends": ends,
            "dropped_by_loss": _dropped(ends),
            "timing": timing_verdict(rows, args.max_start_late_us * 1000),
        }
        (tmp / "net.json").write_text(json.dumps(meta, indent=2))
        write_marker(tmp, "run", source="net", **stamp)
