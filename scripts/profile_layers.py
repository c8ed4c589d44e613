"""Sums `callgrind_annotate` output (read on stdin) by simulator layer, per packet-hop (argv[1]).

Used by scripts/profile.sh. A line is charged to the layer of its source file; a standard-library line
to the layer of the function it was inlined into.
"""

import re
import sys

# (layer, pattern on a project source file), first match wins.
FILES = [
    ("event list", r"tailcut-sim/src/event\.rs"),
    ("event loop (dispatch)", r"tailcut-sim/src/sim/mod\.rs"),
    ("port driver (serve, arrive, forward)", r"tailcut-sim/src/sim/ports\.rs"),
    ("port queue (admission, ECN, FIFO)", r"tailcut-sim/src/net/(port|qdisc|queue|aqm)"),
    ("link (loss model)", r"tailcut-sim/src/net/link\.rs"),
    ("routing (ECMP)", r"tailcut-sim/src/net/routing\.rs"),
    ("packet arena", r"tailcut-sim/src/arena\.rs"),
    ("host (drain, deliver, TSQ)", r"tailcut-sim/src/(sim/host\.rs|topo/tsq\.rs)"),
    ("TCP RACK-TLP", r"tailcut-proto/src/tcp/rack\.rs"),
    ("TCP SACK scoreboard", r"tailcut-proto/src/tcp/scoreboard\.rs"),
    ("TCP congestion control", r"tailcut-proto/src/tcp/cc/"),
    ("TCP receiver", r"tailcut-proto/src/tcp/receiver\.rs"),
    ("TCP sender and endpoint", r"tailcut-proto/src/(tcp/|seq\.rs|packet\.rs|time\.rs)"),
    ("set-up, records, rest of tailcut", r"tailcut-"),
]

# Standard-library lines, by the function they were inlined into.
FUNCTIONS = [
    ("event list", r"tailcut_sim::event::"),
    ("port queue (admission, ECN, FIFO)", r"tailcut_sim::net::(port|qdisc)"),
    ("port driver (serve, arrive, forward)", r"sim::ports::"),
    ("packet arena", r"tailcut_sim::arena::"),
    ("host (drain, deliver, TSQ)", r"sim::host::"),
    ("TCP RACK-TLP", r"tailcut_proto::tcp::rack::"),
    ("TCP SACK scoreboard", r"tailcut_proto::tcp::scoreboard::"),
    ("TCP receiver", r"tailcut_proto::tcp::receiver::"),
    ("TCP sender and endpoint", r"tailcut_proto::"),
    ("event loop (dispatch)", r"tailcut_sim::sim::Sim::run|tailcut_sim::run::run_prepared"),
    ("set-up, records, rest of tailcut", r"tailcut"),
    ("allocator, libc, runtime", r""),
]

LINE = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+(\S+?):(.*?)(?: \[.*\])?$")
TOTAL = re.compile(r"^\s*([\d,]+) \([^)]*\)\s+PROGRAM TOTALS")


def layer(file, function):
    if not file.startswith("/rustc/") and file != "???":
        for name, pat in FILES:
            if re.search(pat, file):
                return name
        if "/glibc" in file or file.startswith("./"):
            return "allocator, libc, runtime"
    for name, pat in FUNCTIONS:
        if re.search(pat, function):
            return name
    return "allocator, libc, runtime"


def main():
    hops = int(sys.argv[1])
    sums, total = {}, 0
    for line in sys.stdin:
        t = TOTAL.match(line)
        if t:
            total = int(t.group(1).replace(",", ""))
            continue
        m = LINE.match(line)
        if not m:
            continue
        ir, file, function = int(m.group(1).replace(",", "")), m.group(2), m.group(3)
        name = layer(file, function)
        sums[name] = sums.get(name, 0) + ir
    print(f"{'layer':<40} {'instr/hop':>10} {'share':>7}")
    for name, ir in sorted(sums.items(), key=lambda kv: -kv[1]):
        print(f"{name:<40} {ir / hops:>10.1f} {100 * ir / total:>6.1f}%")
    print(f"{'total':<40} {total / hops:>10.1f} {100.0:>6.1f}%")


main()
