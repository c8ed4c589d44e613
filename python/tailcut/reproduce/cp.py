"""CP (``docs/results-cp.md``), per scheme and workload component: goodput (the component's completed
bytes over the time from its first start to its last finish), mean / p99 / p99.9 completion time,
timeouts (count and flows), retransmitted bytes over the flows' sizes, and per scheme the payload cuts
and overflow + AQM drops summed over all switch ports. The incast files are swept over fan-out N: the
star gets N + 1 hosts and the incast N senders, except in a file whose incast lists its senders
(``incast_4senders``), where the hosts stay and each sender opens N / senders connections."""

from __future__ import annotations

from tailcut.reproduce.measures import fct_figures, schemes_in_order
from tailcut.reproduce.paper import Entry, Group, Metric, Paper, Row, RunTables

NS_PER_S = 1e9


def _fanout(stem: str, n: int) -> Entry:
    overrides = (("topology.hosts", n + 1), ("workload.0.pattern.fanout", n))
    return Entry(f"{stem}_N{n}", f"experiments/cp/{stem}.toml", overrides)


def _on_senders(stem: str, n: int, senders: int) -> Entry:
    """A fan-out point of a file whose incast lists its senders: the topology stays, each sender opens
    N / senders connections (so N must divide)."""
    if n % senders:
        raise ValueError(f"{stem}: fan-out {n} is not a multiple of its {senders} senders")
    overrides = (("workload.0.pattern.flows_per_sender", n // senders),)
    return Entry(f"{stem}_N{n}", f"experiments/cp/{stem}.toml", overrides)


def _entry(stem: str) -> Entry:
    return Entry(stem, f"experiments/cp/{stem}.toml")


def rows(tables: RunTables, _entry: Entry) -> list[Row]:
    flows, ports = tables.flows, tables.ports
    components = list(dict.fromkeys(flows["component"])) if len(flows) else []
    out = []
    for scheme in schemes_in_order(tables):
        mine = flows[flows["scheme"] == scheme]
        own_ports = ports[ports["scheme"] == scheme] if len(ports) else ports
        cut = float(own_ports["trimmed"].sum()) if len(own_ports) else 0.0
        dropped = (
            float((own_ports["dropped_overflow"] + own_ports["dropped_aqm"]).sum()) if len(own_ports) else 0.0
        )
        for component in components:
            part = mine[mine["component"] == component]
            if not len(part):
                continue
            done = part[part["completed"].astype(bool)]
            first = float(part["start_ns"].min())
            last = float(done["finish_ns"].max()) if len(done) else first
            values = fct_figures(part)
            values["goodput_mbps"] = float(done["size_bytes"].sum()) * 8 / max(last - first, 1.0) * 1e3
            values["timeouts"] = float(part["timeouts"].sum())
            values["timeout_flows"] = float((part["timeouts"] > 0).sum())
            size = max(float(part["size_bytes"].sum()), 1.0)
            values["rtx"] = float(part["retransmitted_bytes"].sum()) / size
            values["cut"] = cut
            values["dropped"] = dropped
            out.append(Row(scheme, component, values))
    return out


def baseline(scheme: str, schemes: list[str]) -> str | None:
    """CP against the TCP it runs over: NewReno TCP, or DCTCP for the ``cp_dctcp`` variants; the
    spraying file against TCP with spraying."""
    for candidate in ("tcp_iw2" if scheme.endswith("iw2") else None, "tcp_spray", "tcp"):
        if candidate and candidate in schemes and scheme.startswith("cp"):
            if "dctcp" in scheme:
                dctcp = "dctcp_spray" if "dctcp_spray" in schemes else "dctcp"
                return dctcp if dctcp in schemes else None
            return candidate
    return None


PAPER = Paper(
    name="cp",
    title="CP (docs/results-cp.md)",
    groups=(
        Group("Incast: the throughput cliff", tuple(_fanout("incast", n) for n in (8, 32, 64, 128, 250))),
        Group("Incast, initial window 2", tuple(_fanout("incast_variants", n) for n in (32, 64, 128, 250))),
        # N = 248 rather than 250 so that it divides by the 4 senders.
        Group(
            "Incast on 4 physical senders (input <= 4 x output, within the slides' 13.1 x)",
            tuple(_on_senders("incast_4senders", n, 4) for n in (8, 32, 64, 128, 248)),
        ),
        Group("Outcast / unfairness", (_entry("outcast"),)),
        Group("Out-of-order under per-packet spraying", (_entry("reorder"),)),
        # The slides' claim here is the queries' completion time, not goodput.
        Group("Query completion time", (_entry("qct"),), main="p99_ms", higher_is_better=False),
    ),
    rows=rows,
    metrics=(
        Metric("goodput_mbps", "goodput Mbps", "{:.0f}"),
        Metric("mean_ms", "mean ms"),
        Metric("p99_ms", "p99 ms"),
        Metric("p999_ms", "p99.9 ms"),
        Metric("timeouts", "timeouts", "{:.0f}"),
        Metric("rtx", "rtx / size", "{:.2%}"),
        Metric("unfinished", "unfinished", "{:.0f}"),
        Metric("cut", "cuts", "{:.0f}"),
        Metric("dropped", "drops", "{:.0f}"),
    ),
    main="goodput_mbps",
    higher_is_better=True,
    baseline=baseline,
)
