"""Benchmark: mipopt's policies on MIGBench's trace, beside the schedulers operators run (issue 25).

MIGBench (FouoF/MIG-scheduler-benchmark) published runs of the real HAMi v2.10.0, HAMi master and
NVIDIA DRA v0.5.0 schedulers on one trace, its "full control-plane v3" trace (500 memory-sized jobs,
56 of them at time 0, on 2 nodes x 4 H100-80GB). This benchmark replays the same trace
(``../shared/migbench/``, byte for byte) with MIGBench's semantics (``migbench:path=...``: smallest
fitting profile of {1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb}, runtime from the profile's compute percent,
create 250 ms, delete 100 ms, backfill passes, an unbounded queue) under mipopt's policies, with the
queue retried oldest first (``fifo``) and newest first (``newest``, how the real schedulers' published
waits behave), and sets every metric of MIGBench's summary beside the published rows.

What placement alone could buy is bounded three ways (:mod:`mipopt.simulation.bounds`): the same
replays on GPUs without start constraints (``any-start``: a profile may begin at any memory slot),
a replay without geometry (``capacity``: compute slices and memory slots as pools, first fit), and the
makespan floor of the trace (no replay ends before its latest job, or before the cluster has held
every job's instance for its life).

MIGBench's generated workloads (``poisson``, ``burst``, ``profile-skew``, ``adversarial``;
:mod:`mipopt.workloads.migbench_models`) give further traces of the same shape.

All metrics are in the trace's virtual time (ms) and do not depend on the machine; ``runtime_s`` (the
replay's wall time) and ``load`` (the 1-minute load average when the run started) do. Rows go to
``results/migbench.csv``, the sections ``migbench-v3`` and ``migbench-generated`` of
``benchmarks/README.md`` are generated from them, and ``results/migbench.png`` draws the v3 trace.

Usage::

    python -m benchmarks.bench_migbench [--jobs N] [--policies P ...] [--kinds K ...] [--seeds S ...]
        [--trace FILE] [--published FILE] [--out-dir DIR] [--readme FILE] [--render] [--quick]
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_migbench.py
    import _as_module  # noqa: F401

import argparse
import csv
import math
import os
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks import common
from mipopt.simulation.runs import METRIC_COLUMNS

SHARED = common.REPO_ROOT.parent / "shared" / "migbench"
TRACE = SHARED / "full-control-plane-v3-trace.jsonl"
PUBLISHED = SHARED / "published-results.csv"
POLICIES = ("ff:start=lowest", "binpack", "spread", "mfi", "bf-bi", "grmu", "reopt")
ORDERS = ("fifo", "newest")
KINDS = ("poisson", "burst", "profile-skew", "adversarial")
#: MIGBench's summary, in its order (mipopt's names).
METRICS = ("completed", *METRIC_COLUMNS)
#: Policies replayed on the published trace's NVIDIA geometry only (reopt: minutes per replay).
SLOW = ("reopt",)
COLUMNS = ("trace", "seed", "jobs", "geometry", "policy", "queue_order", *METRICS, "runtime_s", "load")
#: The published backends, as the tables name them.
BACKENDS = {
    "hami-release-v2.10.0": "HAMi v2.10.0",
    "hami-master-6c17a8f": "HAMi master",
    "nvidia-dra-v0.5.0": "NVIDIA DRA v0.5.0",
}
#: published-results.csv's column of each metric.
PUBLISHED_COLUMNS = {
    "completed": "completed",
    "makespan": "makespan_ms",
    "throughput_per_hour": "throughput_per_hour",
    "mean_wait": "mean_wait_ms",
    "p50_wait": "p50_wait_ms",
    "p95_wait": "p95_wait_ms",
    "p99_wait": "p99_wait_ms",
    "gpc_utilization": "gpc_utilization",
    "memory_utilization": "memory_utilization",
    "peak_gpc_utilization": "peak_gpc_utilization",
    "physical_fragmentation": "physical_fragmentation",
    "stranded_capacity": "stranded_capacity",
    "request_fragmentation": "request_fragmentation",
    "backlogged_time_fraction": "backlogged_time_fraction",
    "creates": "mig_creates",
    "deletes": "mig_deletes",
}
#: Metrics where less is better (the others: more is better), for "which policy does best".
LOWER_IS_BETTER = {
    "makespan",
    "mean_wait",
    "p50_wait",
    "p95_wait",
    "p99_wait",
    "physical_fragmentation",
    "stranded_capacity",
    "request_fragmentation",
}


def load_average() -> float:
    return os.getloadavg()[0]


def wait_until_quiet(max_load: float, patience_s: float) -> float:
    """Wait up to ``patience_s`` for the 1-minute load to fall under ``max_load``; the load then."""
    deadline = time.monotonic() + patience_s
    load = load_average()
    while load >= max_load and time.monotonic() < deadline:
        common.progress(f"load {load:.2f} >= {max_load}: waiting for a quiet machine")
        time.sleep(min(30.0, max(1.0, deadline - time.monotonic())))
        load = load_average()
    return load


def trace_label(trace: Any) -> str:
    """The ``trace`` column: a generated trace's kind; ``v3`` for MIGBench's published trace (the file
    :data:`TRACE` names, wherever it lies), whose rows the v3 table sets beside the published ones;
    any other file's name, so that its rows never pass for the v3 trace's."""
    meta = trace.meta if isinstance(trace.meta, dict) else {}
    if "kind" in meta:
        return str(meta["kind"])
    name = Path(str(meta.get("path", ""))).name
    return "v3" if name == TRACE.name else name or "file"


def _row(
    trace: Any, seed: int, geometry: str, policy: str, order: str, values: dict[str, Any]
) -> dict[str, Any]:
    row: dict[str, Any] = {
        "trace": trace_label(trace),
        "seed": seed,
        "jobs": len(trace.requests),
        "geometry": geometry,
        "policy": policy,
        "queue_order": order,
    }
    for column in (*METRICS, "runtime_s"):
        value = values.get(column, "")
        row[column] = (
            "" if value == "" or value is None else repr(float(value)) if isinstance(value, float) else value
        )
    return row


def replay_trace(
    trace: Any, seed: int, policies: Sequence[str], load: float, slow: bool = False
) -> list[dict[str, Any]]:
    """Every policy and queue order on ``trace`` and on its any-start twin (the :data:`SLOW` ones
    only on ``trace`` and only when ``slow``), the capacity replays and the floor."""
    from mipopt.heuristics.policies import make_policy
    from mipopt.simulation import simulate
    from mipopt.simulation.bounds import any_start_trace, capacity_replay, makespan_floor

    rows = []
    for geometry, replayed in (("nvidia", trace), ("any-start", any_start_trace(trace))):
        for order in ORDERS:
            for policy in policies:
                if policy in SLOW and (geometry != "nvidia" or not slow):
                    continue
                t0 = time.perf_counter()
                res = simulate(
                    replayed, make_policy(policy), seed=seed, queue_timeout=math.inf, queue_order=order
                )
                values = {
                    **res.summary,
                    "completed": res.summary.get("completed", res.summary.get("accepted")),
                }
                values["runtime_s"] = time.perf_counter() - t0
                rows.append(_row(trace, seed, geometry, policy, order, values))
                common.progress(
                    f"{rows[-1]['trace']}:{seed} {geometry} {order} {policy}: makespan {values['makespan']:,.0f} ms, "
                    f"mean wait {values['mean_wait']:,.0f} ms ({values['runtime_s']:.1f} s)"
                )
    for order in ORDERS:
        t0 = time.perf_counter()
        values = capacity_replay(trace, order)
        values["runtime_s"] = time.perf_counter() - t0
        rows.append(_row(trace, seed, "capacity", "first-fit", order, values))
    floor = makespan_floor(trace)
    rows.append(_row(trace, seed, "floor", "-", "-", {"makespan": floor["floor"]}))
    for row in rows:
        row["load"] = f"{load:.2f}"
    return rows


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    from mipopt.workloads.migbench import migbench_trace
    from mipopt.workloads.migbench_models import migbench_generated

    load = wait_until_quiet(args.max_load, args.patience)
    common.progress(f"load average {load:.2f} on {common.machine_description()}")
    rows = []
    if args.trace is not None:
        trace = migbench_trace(args.trace, jobs=args.jobs)
        rows += replay_trace(trace, 0, args.policies, load, slow=True)
    for kind in args.kinds:
        for seed in args.seeds:
            generated = migbench_generated(
                kind, jobs=args.jobs or 500, prefill=min(56, args.jobs or 500), seed=seed
            )
            rows += replay_trace(generated, seed, args.policies, load)
    if args.figure:
        plot(rows, args.out_dir / "migbench.png", args.published)
    return rows


# --- reading rows and the published file back ----------------------------------------------------


def published_rows(path: Path) -> list[dict[str, str]]:
    """The published control-plane rows on the v3 trace, one per backend (empty when the file is absent)."""
    if not path.is_file():
        return []
    with path.open(newline="") as fh:
        found = [r for r in csv.DictReader(fh) if r["experiment"].startswith("full-control-plane-v3")]
    return [
        {"name": BACKENDS.get(r["backend"], r["backend"]), **{m: r[c] for m, c in PUBLISHED_COLUMNS.items()}}
        for r in found
    ]


def _number(value: str) -> float | None:
    return float(value) if value not in ("", None) else None


def _ms(unit: float, digits: int = 1) -> Callable[[str], str]:
    def cell(value: str) -> str:
        x = _number(value)
        return "" if x is None else f"{x / unit:,.{digits}f}"

    return cell


def _share(value: str) -> str:
    x = _number(value)
    return "" if x is None else f"{x:.3f}"


def _count(value: str) -> str:
    x = _number(value)
    return "" if x is None else f"{x:,.0f}"


#: Columns of the v3 table: metric, header, cell.
SHOWN: tuple[tuple[str, str, Callable[[str], str]], ...] = (
    ("makespan", "Makespan (h)", _ms(3_600_000, 3)),
    ("throughput_per_hour", "Jobs/h", lambda v: "" if not v else f"{float(v):.2f}"),
    ("mean_wait", "Mean wait (min)", _ms(60_000)),
    ("p50_wait", "p50 wait (min)", _ms(60_000)),
    ("p95_wait", "p95 wait (min)", _ms(60_000)),
    ("p99_wait", "p99 wait (min)", _ms(60_000)),
    ("gpc_utilization", "GPC util.", _share),
    ("memory_utilization", "Memory util.", _share),
    ("physical_fragmentation", "Phys. frag.", _share),
    ("stranded_capacity", "Stranded", _share),
    ("request_fragmentation", "Req. frag.", _count),
    ("backlogged_time_fraction", "Backlogged", _share),
)


def _latest(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    return common.latest_rows(
        rows, lambda r: (r["trace"], r["seed"], r["jobs"], r["geometry"], r["policy"], r["queue_order"])
    )


def _label(row: dict[str, str]) -> str:
    if row["geometry"] == "floor":
        return "floor of the trace (bound)"
    if row["geometry"] == "capacity":
        return f"no geometry, first fit, {row['queue_order']}"
    where = "" if row["geometry"] == "nvidia" else ", any start"
    return f"mipopt `{row['policy']}`, {row['queue_order']}{where}"


def v3_table(rows: list[dict[str, str]], source: str, args: Any = None) -> str:
    """The v3 trace: the published rows, every policy and order, the bounds."""
    v3 = [r for r in _latest(rows) if r["trace"] == "v3"]
    if not v3:
        return "_No run of the v3 trace yet._"
    most = max(int(r["jobs"]) for r in v3)
    full = [r for r in v3 if int(r["jobs"]) == most]
    published = published_rows(getattr(args, "published", PUBLISHED) if args is not None else PUBLISHED)
    columns = [common.Column("Scheduler", lambda r: r["name"])] + [
        common.Column(header, lambda r, m=metric, f=fmt: f(r.get(m, "")), "r")
        for metric, header, fmt in SHOWN
    ]
    items = [{**p, "name": f"**{p['name']}** (published)"} for p in published]
    items += [{**r, "name": _label(r)} for r in full if r["geometry"] == "nvidia"]
    items += [{**r, "name": _label(r)} for r in full if r["geometry"] != "nvidia"]
    when = sorted({r["date"][:16] for r in full})
    note = (
        f"_Generated by `benchmarks/bench_migbench.py` from `{source}`: "
        + ("the v3 trace (all 500 jobs)" if most == 500 else f"the v3 trace's first {most} jobs")
        + ", the latest run of each setting ("
        f"{when[-1]} UTC, commit {full[-1]['commit']}, {full[-1]['machine']}, load {full[-1]['load']} at the "
        "start). The published rows: MIGBench's `outputs/full-control-plane-v3-summary.csv` at commit "
        "25d569dd (`../shared/migbench/published-results.csv`). Times in the trace's virtual time; "
        "utilization and fragmentation time-weighted over [30 s, last arrival]._"
    )
    return f"{note}\n\n{common.table(columns, items)}"


def best_table(rows: list[dict[str, str]], source: str, args: Any = None) -> str:
    """Per workload and metric: the best mipopt policy and queue order on NVIDIA's geometry (by the
    mean over the workload's seeds) and its change against ff:start=lowest with FIFO."""
    latest = [r for r in _latest(rows) if r["geometry"] == "nvidia"]
    workloads = list(dict.fromkeys((r["trace"], r["jobs"]) for r in latest))
    if not workloads:
        return "_No runs yet._"
    metrics = (
        "makespan", "mean_wait", "p50_wait", "p95_wait", "p99_wait", "gpc_utilization",
        "physical_fragmentation", "request_fragmentation",
    )  # fmt: skip
    header, columns = ["Metric"], []
    for trace, jobs in workloads:
        group = [r for r in latest if (r["trace"], r["jobs"]) == (trace, jobs)]
        seeds = sorted({r["seed"] for r in group}, key=int)
        header.append(
            f"{trace} ({jobs} jobs)"
            if trace == "v3"
            else f"{trace} ({len(seeds)} seed{'s' * (len(seeds) > 1)}, {jobs} jobs)"
        )
        settings: dict[tuple[str, str], list[dict[str, str]]] = {}
        for r in group:
            settings.setdefault((r["policy"], r["queue_order"]), []).append(r)
        # a setting counts where it ran on every seed (reopt runs on the published trace only)
        columns.append({k: v for k, v in settings.items() if len(v) == len(seeds)})
    lines = []
    for metric in metrics:
        cells = [metric]
        for settings in columns:
            means = {
                k: sum(float(r[metric]) for r in v) / len(v)
                for k, v in settings.items()
                if all(r[metric] for r in v)
            }
            base = means.get(("ff:start=lowest", "fifo"))
            if not means or base is None:
                cells.append("")
                continue
            pick = min if metric in LOWER_IS_BETTER else max
            (policy, order), value = pick(means.items(), key=lambda kv: kv[1])
            change = (
                "±0 %"
                if value == base
                else (f"{(value - base) / base:+.1%}" if base else f"{value - base:+g}")
            )
            cells.append(f"`{policy}` {order} ({change})")
        lines.append(cells)
    note = (
        f"_Generated by `benchmarks/bench_migbench.py` from `{source}`: per workload, the mipopt policy and "
        "queue order with the best mean over the workload's seeds of each metric on NVIDIA's geometry, and "
        "its change against `ff:start=lowest` with FIFO (MIGBench's first fit). Lower is better for "
        "makespan, waits and fragmentation; higher for utilization. `reopt` runs on the published trace only._"
    )
    return f"{note}\n\n{common.markdown_table(header, lines, 'l' * len(header))}"


def plot(rows: list[dict[str, Any]], path: Path, published: Path) -> None:
    """Mean and p50 wait and makespan on the v3 trace: published schedulers, mipopt policies, bounds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from mipopt.io import write_atomic

    v3 = [r for r in rows if r["trace"] == "v3"]
    if not v3:
        return
    pub = published_rows(published)
    fig, axes = plt.subplots(1, 3, figsize=(15, 5.5), sharey=True)
    labels = [p["name"] for p in pub] + [
        _label({k: str(v) for k, v in r.items()}).replace("`", "") for r in v3
    ]
    for ax, (metric, title, unit) in zip(
        axes,
        (
            ("mean_wait", "mean wait (min)", 60_000),
            ("p50_wait", "p50 wait (min)", 60_000),
            ("makespan", "makespan (h)", 3_600_000),
        ),
        strict=True,
    ):
        values = [float(p[metric]) / unit for p in pub] + [
            float(r[metric]) / unit if r[metric] != "" else math.nan for r in v3
        ]
        colors = ["tab:red"] * len(pub) + [
            "tab:blue" if r["geometry"] == "nvidia" else "tab:gray" for r in v3
        ]
        ax.barh(range(len(values)), values, color=colors)
        ax.set_title(title, fontsize=10)
        ax.grid(axis="x", alpha=0.3)
        if metric == "makespan":
            lo = min(v for v in values if not math.isnan(v))
            ax.set_xlim(lo * 0.97, max(v for v in values if not math.isnan(v)) * 1.005)
    axes[0].set_yticks(range(len(labels)), labels, fontsize=7)
    axes[0].invert_yaxis()
    fig.suptitle(
        "MIGBench v3 trace (500 jobs, 2 x 4 H100-80GB): published schedulers (red), mipopt on NVIDIA geometry "
        "(blue), bounds (gray)",
        fontsize=10,
    )
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=100), text=False)
    plt.close(fig)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--trace", type=Path, default=TRACE, help=f"MIGBench trace (default {TRACE})")
    parser.add_argument(
        "--published", type=Path, default=PUBLISHED, help=f"published rows (default {PUBLISHED})"
    )
    parser.add_argument(
        "--jobs", type=int, default=None, help="replay the first N jobs of each trace (default all)"
    )
    parser.add_argument(
        "--policies", nargs="+", default=list(POLICIES), help="default: " + " ".join(POLICIES)
    )
    parser.add_argument("--kinds", nargs="*", choices=KINDS, default=list(KINDS), help="generated workloads")
    parser.add_argument("--seeds", nargs="+", type=int, default=[1], help="seeds of the generated workloads")
    parser.add_argument("--no-figure", dest="figure", action="store_false", help="do not draw migbench.png")
    parser.add_argument("--max-load", type=float, default=1.5, help="wait for a load average under this")
    parser.add_argument("--patience", type=float, default=0.0, help="seconds to wait for it (default 0)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.jobs is not None and args.jobs < 1:
        parser.error("--jobs must be at least 1")
    if args.trace is not None and not args.trace.is_file():
        parser.error(f"--trace: no file {args.trace}")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(
        f"{'trace':<14} {'geometry':<10} {'order':<7} {'policy':<16} {'makespan h':>10} {'mean wait min':>14}"
    )
    for r in rows:
        mean_wait = f"{float(r['mean_wait']) / 60_000:.1f}" if r["mean_wait"] != "" else "-"
        print(
            f"{r['trace'] + ':' + str(r['seed']):<14} {r['geometry']:<10} {r['queue_order']:<7} {r['policy']:<16} "
            f"{float(r['makespan']) / 3_600_000:>10.3f} {mean_wait:>14}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[
        common.Output("migbench.csv", COLUMNS, {"migbench-v3": v3_table, "migbench-generated": best_table})
    ],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=(
        "--jobs",
        "60",
        "--policies",
        "ff:start=lowest",
        "binpack",
        "--kinds",
        "burst",
        "--max-load",
        "1e9",
    ),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
