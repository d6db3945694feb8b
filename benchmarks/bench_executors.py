"""Benchmark: the same grid of independent jobs on each executor, wall time and identical results.

Two grids, each run once per executor (``serial`` in this process, ``local:1`` and ``local:2``
process pools, a Dask ``LocalCluster`` of 2 processes with 1 thread each and, where Ray is
installed, a local Ray instance of 2 CPUs):

* ``simulate``: ``mipopt simulate --runs R`` on a Poisson stream, runs x policies replays as jobs
  (:func:`mipopt.simulation.runs.compare`);
* ``bench``: ``mipopt bench`` on generated IBM WPM instances, one job per instance with its two
  exact optima (one solver thread) and every method (:func:`mipopt.compare.compare_methods`).

``wall_s`` is what a user waits for: starting the executor (a pool, a cluster), the jobs and
shutting it down; ``start_s`` the start alone (a process pool starts with its first jobs, so 0).
Each executor's results, runtimes left out, are hashed (``digest``): a digest other than the
serial run's is a failure (:class:`common.Failed`) and nothing is written.

Usage::

    python -m benchmarks.bench_executors [--grids simulate bench] [--executors serial local:2 dask:local:2]
        [--runs 4] [--workload SPEC] [--instances 8] [--gpus 48] [--out-dir DIR] [--readme FILE]
        [--render] [--quick]
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_executors.py
    import _as_module  # noqa: F401

import argparse
import hashlib
import importlib.util
import json
import os
import time
from collections.abc import Callable
from typing import Any

from benchmarks import common
from mipopt.cli.common import executor_spec
from mipopt.compare import compare_methods
from mipopt.errors import InstanceError
from mipopt.executors import Executor, make_executor, parse_executor
from mipopt.simulation.runs import compare

GRIDS = ("simulate", "bench")
EXECUTORS = ("serial", "local:1", "local:2", "dask:local:2", "ray:local:2")
COLUMNS = [
    "grid",
    "setup",
    "jobs",
    "executor",
    "workers",
    "start_s",
    "wall_s",
    "speedup",
    "identical",
    "digest",
    "load_avg",
    "dask",
    "ray",
]


def available(spec: str) -> bool:
    """Whether the package an executor needs is installed."""
    kind = parse_executor(spec).kind
    package = {"dask": "distributed", "ray": "ray"}.get(kind)
    return package is None or importlib.util.find_spec(package) is not None


def digest(data: object) -> str:
    return hashlib.sha256(json.dumps(data, sort_keys=True, default=str).encode()).hexdigest()[:16]


def simulate_grid(args: argparse.Namespace) -> tuple[str, int, Callable[[Executor], str]]:
    setup = f"{args.workload}, {args.runs} runs x {len(args.policies)} policies ({', '.join(args.policies)})"

    def run(ex: Executor) -> str:
        series, summary = compare(args.workload, args.policies, runs=args.runs, seed=args.seed, executor=ex)
        timed = [c for c in summary if c.endswith("runtime_s")]
        return digest([series.to_csv(index=False), summary.drop(columns=timed).to_csv(index=False)])

    return setup, args.runs * len(args.policies), run


def bench_grid(args: argparse.Namespace) -> tuple[str, int, Callable[[Executor], str]]:
    from mipopt.workloads import ibm_instance

    seeds = range(args.seed, args.seed + args.instances)
    instances = [ibm_instance(args.gpus, seed=s) for s in seeds]
    methods = ["ff", "mfi", "grmu"]
    setup = (
        f"IBM WPM {args.gpus} GPUs, seeds {seeds[0]}-{seeds[-1]}: exact and exact-initial (HiGHS, 1 thread), "
        f"{', '.join(methods)}"
    )

    def run(ex: Executor) -> str:
        rows = compare_methods(instances, methods, time_limit_s=60, threads=1, seed=args.seed, executor=ex)
        if any(r.reference != "optimal" for r in rows):
            raise common.Failed("an exact solve hit the time limit: rows would depend on timing")
        return digest([{**r.to_dict(), "runtime_s": None} for r in rows])

    return setup, args.instances, run


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    versions = common.versions("dask", "ray")
    rows = []
    for grid in args.grids:
        setup, jobs, run = (simulate_grid if grid == "simulate" else bench_grid)(args)
        reference: tuple[str, float] | None = None
        for spec in args.executors:
            if not available(spec):
                common.progress(f"{grid}: {spec} left out (its package is not installed)")
                continue
            load = os.getloadavg()[0]
            t0 = time.perf_counter()
            try:
                ex = make_executor(spec)
            except InstanceError as err:
                raise common.Failed(f"--executors {spec}: {err.rule}") from None
            start = time.perf_counter() - t0
            with ex:
                workers = ex.workers
                found = run(ex)
            wall = time.perf_counter() - t0
            if reference is None:
                reference = (found, wall)
            elif found != reference[0]:
                raise common.Failed(f"{grid}: {spec} gave other results than {args.executors[0]} ({found})")
            common.progress(f"{grid} on {spec}: {wall:.2f} s (start {start:.2f} s), digest {found}")
            rows.append(
                {
                    "grid": grid,
                    "setup": setup,
                    "jobs": jobs,
                    "executor": spec,
                    "workers": workers,
                    "start_s": f"{start:.2f}",
                    "wall_s": f"{wall:.2f}",
                    "speedup": f"{reference[1] / wall:.2f}",
                    "identical": found == reference[0],
                    "digest": found,
                    "load_avg": f"{load:.2f}",
                    **versions,
                }
            )
    return rows


def readme_section(rows: list[common.CsvRow], source: str, args: object = None) -> str:
    if not rows:
        return "_No rows yet._"
    runs = common.latest(rows, lambda r: (r["grid"], r["setup"], r["executor"]))
    latest = [r for group in runs.values() for r in group]
    columns: list[common.Column[common.CsvRow]] = [
        common.Column("Grid", lambda r: r["grid"]),
        common.Column("Jobs", lambda r: r["jobs"], "r"),
        common.Column("Executor", lambda r: f"`{r['executor']}`"),
        common.Column("Workers", lambda r: r["workers"], "r"),
        common.Column("Start (s)", lambda r: r["start_s"], "r"),
        common.Column("Wall (s)", lambda r: r["wall_s"], "r"),
        common.Column("Speed-up", lambda r: f"{float(r['speedup']):.2f}x", "r"),
        common.Column("Same results", lambda r: "yes" if r["identical"] == "True" else "NO"),
        common.Column("Load before", lambda r: r["load_avg"], "r"),
    ]
    setups = dict.fromkeys(f"`{r['grid']}`: {r['setup']}" for r in latest)
    machines = sorted({r["machine"] for r in latest})
    commits = sorted({r["commit"] for r in latest})
    dates = sorted({r["date"] for r in latest})
    note = (
        f"_Generated by `benchmarks/bench_executors.py` from `{source}`: the latest run of each (grid, "
        f"executor), on {'; '.join(machines)} (commit {', '.join(commits)}, {dates[0]}"
        f"{' to ' + dates[-1] if len(dates) > 1 else ''}; Dask {latest[-1]['dask'] or '-'}, "
        f"Ray {latest[-1]['ray'] or '-'}). Wall time: start the executor, run every job, shut it down; "
        "speed-up: the first executor's wall time over this one's. Same results: the results without "
        "runtimes hash to the first executor's (a mismatch fails the run). Load before: the machine's "
        "1-minute load average when the executor started (other jobs share its CPUs: above the CPU "
        "count, the processes compete for them and no speed-up can show)._"
    )
    grids = "\n".join(f"- {s}" for s in setups)
    return f"{note}\n\n{grids}\n\n{common.table(columns, latest)}"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--grids", nargs="+", choices=GRIDS, default=list(GRIDS))
    parser.add_argument(
        "--executors",
        nargs="+",
        type=executor_spec,
        default=list(EXECUTORS),
        help="executor specs, the first the reference (default: %(default)s; those whose package is "
        "missing are left out)",
    )
    parser.add_argument("--runs", type=int, default=4, help="simulate grid: runs (default 4)")
    parser.add_argument(
        "--policies", nargs="+", default=["ff", "mfi", "grmu"], help="simulate grid: policies"
    )
    parser.add_argument(
        "--workload",
        default="poisson:gpus=64,horizon=1000",
        help="simulate grid: workload spec (default %(default)s)",
    )
    parser.add_argument("--instances", type=int, default=8, help="bench grid: IBM instances (default 8)")
    parser.add_argument("--gpus", type=int, default=48, help="bench grid: GPUs per instance (default 48)")
    parser.add_argument("--seed", type=int, default=0, help="first seed (default 0)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.runs < 1 or args.instances < 1 or args.gpus < 1:
        parser.error("--runs, --instances and --gpus must be at least 1")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    for r in rows:
        print(
            f"{r['grid']:<9} {r['executor']:<13} {r['workers']:>2} workers {r['wall_s']:>8} s "
            f"x{r['speedup']:<5} same: {r['identical']}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("executors.csv", COLUMNS, {"executors": readme_section})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=(
        "--runs",
        "2",
        "--workload",
        "poisson:gpus=16,horizon=50",
        "--instances",
        "2",
        "--gpus",
        "8",
        "--executors",
        "serial",
        "local:2",
        "dask:local:2",
    ),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
