"""Benchmark: ``mipopt validate`` and ``mipopt solve --time-limit`` on large IBM instances, wall
time and peak memory, and whether the solve keeps its limit (issue 24).

For each ``--gpus`` size (default 16,000) an IBM WPM instance (``mipopt generate ibm --gpus N
--seed S``: hosts of 8 A100-80GB, 60 % of GPUs used, new work worth 60 % of the compute) is
written to a temporary folder, then each command runs ``--runs`` times (default 3) in a fresh
process from the repository's root:

* ``mipopt validate FILE``;
* ``mipopt solve FILE --time-limit L --out OUT`` (default ``L`` 20 s).

A row per size and command holds the median, minimum and maximum wall time, the largest peak
resident memory (``ru_maxrss`` of the child, as the kernel reports it) and the 1-minute load
average when its runs began. A solve row also says whether the limit held: every run's wall time
within ``1.1 x L`` plus the interpreter's start (the median wall time of ``mipopt --version``,
measured in the same run: what a command takes before its clock starts), and what the answer
was (termination, new workloads placed).

Usage::

    python -m benchmarks.bench_scale [--gpus 16000 ...] [--runs 3] [--time-limit 20] [--seed 0]
        [--out-dir DIR] [--readme FILE] [--render] [--quick]

Rows go to ``OUT_DIR/scale.csv``; the README section ``scale`` is regenerated from all rows of
that file: the latest run of each size and command at each commit.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_scale.py
    import _as_module  # noqa: F401

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from benchmarks import common

#: The limit is held when a run's wall time is within this share of it, plus the interpreter's start.
SLACK = 1.1
#: A run killed after this many times its limit (a solve that ignores it must not hang the benchmark).
KILL_AFTER = 30.0
COLUMNS = (
    "gpus",
    "workloads",
    "seed",
    "command",
    "runs",
    "median_s",
    "min_s",
    "max_s",
    "peak_rss_mb",
    "limit_s",
    "start_s",
    "allowed_s",
    "held",
    "termination",
    "placed_new",
    "load_1min",
)


def start_time(runs: int) -> float:
    """Median wall time of ``mipopt --version``: the interpreter and the command line's imports."""
    times = [common.timed_process([*common.mipopt_command(), "--version"])[0] for _ in range(runs)]
    return common.median(times)


def timed(argv: list[str], runs: int, timeout_s: float) -> tuple[list[float], list[float]]:
    """Wall times and peak memories (MB) of ``runs`` fresh processes of ``argv``."""
    times, peaks = [], []
    for _ in range(runs):
        elapsed, peak = common.timed_process(argv, timeout_s)
        times.append(elapsed)
        peaks.append(peak)
    return times, peaks


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    from mipopt.workloads import ibm_instance

    mipopt = common.mipopt_command()
    start = start_time(args.runs)
    common.progress(f"mipopt --version: {start:.2f} s (the interpreter's start)")
    rows: list[dict[str, Any]] = []
    for gpus in args.gpus:
        with tempfile.TemporaryDirectory() as tmp:
            instance = Path(tmp) / f"ibm-{gpus}.json"
            inst = ibm_instance(gpus, seed=args.seed)
            inst.save(instance)
            base = {"gpus": gpus, "workloads": len(inst.workloads), "seed": args.seed}
            empty = dict.fromkeys(COLUMNS, "")

            load = os.getloadavg()[0]
            times, peaks = timed([*mipopt, "validate", str(instance)], args.runs, KILL_AFTER * 60)
            rows.append(empty | base | _timing("validate", times, peaks, load))
            common.progress(f"{gpus} GPUs, validate: median {common.median(times):.2f} s, load {load:.2f}")

            out = Path(tmp) / "solution.json"
            limit = args.time_limit
            argv = [*mipopt, "solve", str(instance), "--time-limit", f"{limit:g}", "--out", str(out)]
            load = os.getloadavg()[0]
            times, peaks = timed(argv, args.runs, KILL_AFTER * limit)
            answer = json.loads(out.read_text())
            allowed = SLACK * limit + start
            rows.append(
                empty
                | base
                | _timing(f"solve --time-limit {limit:g}", times, peaks, load)
                | {
                    "limit_s": f"{limit:g}",
                    "start_s": f"{start:.3f}",
                    "allowed_s": f"{allowed:.3f}",
                    "held": "yes" if max(times) <= allowed else "no",
                    "termination": answer["termination"],
                    "placed_new": answer["metrics"]["accepted_new"],
                }
            )
            common.progress(
                f"{gpus} GPUs, solve: median {common.median(times):.2f} s, max {max(times):.2f} s "
                f"(allowed {allowed:.2f} s), load {load:.2f}"
            )
    return rows


def _timing(command: str, times: list[float], peaks: list[float], load: float) -> dict[str, Any]:
    return {
        "command": command,
        "runs": len(times),
        "median_s": f"{common.median(times):.3f}",
        "min_s": f"{min(times):.3f}",
        "max_s": f"{max(times):.3f}",
        "peak_rss_mb": f"{max(peaks):.0f}",
        "load_1min": f"{load:.2f}",
    }


def _held(row: dict[str, str]) -> str:
    if not row["held"]:
        return "-"
    return f"{row['held']} (max {float(row['max_s']):.1f} s, allowed {float(row['allowed_s']):.1f} s)"


def _answer(row: dict[str, str]) -> str:
    if not row["termination"]:
        return "-"
    return f"{row['termination']}, {int(row['placed_new']):,} new placed"


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """Each size and command's latest run at each commit: by size, validate first, oldest first."""
    runs = common.latest(rows, lambda r: (r["commit"], r["gpus"], r["command"]))
    keys = sorted(runs, key=lambda k: (int(k[1]), k[2] != "validate", runs[k][0]["date"]))
    columns: list[common.Column[dict[str, str]]] = [
        common.Column("GPUs", lambda r: f"{int(r['gpus']):,}", "r"),
        common.Column("Workloads", lambda r: f"{int(r['workloads']):,}", "r"),
        common.Column("Command", lambda r: f"`mipopt {r['command']}`"),
        common.Column("Median", lambda r: f"{float(r['median_s']):.2f} s", "r"),
        common.Column("Min", lambda r: f"{float(r['min_s']):.2f} s", "r"),
        common.Column("Max", lambda r: f"{float(r['max_s']):.2f} s", "r"),
        common.Column("Runs", lambda r: r["runs"], "r"),
        common.Column("Peak memory", lambda r: f"{float(r['peak_rss_mb']):,.0f} MB", "r"),
        common.Column("Limit held (1.1 x limit + start)", _held),
        common.Column("Answer", _answer),
        common.Column("Load", lambda r: r["load_1min"], "r"),
        common.Column("Commit", lambda r: r["commit"]),
        common.Column("Machine", lambda r: r["machine"]),
    ]
    note = (
        f"_Generated by `benchmarks/bench_scale.py` from {len(rows)} rows of `{source}`: the latest run "
        "of each size and command at each commit. IBM instances (`mipopt generate ibm --gpus N --seed S`), "
        "fresh processes from the repository's root; median, min and max wall time of the runs, peak "
        "memory the largest `ru_maxrss`; load the 1-minute load average when the runs began._"
    )
    return f"{note}\n\n{common.table(columns, [runs[k][0] for k in keys])}"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpus", type=int, nargs="+", default=[16000], metavar="N", help="instance sizes (default 16000)"
    )
    parser.add_argument("--runs", type=int, default=3, help="fresh processes per command (default 3)")
    parser.add_argument(
        "--time-limit", type=float, default=20.0, metavar="S", help="solve's --time-limit (default 20)"
    )
    parser.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.runs < 1 or any(n < 8 for n in args.gpus):
        parser.error("--runs must be at least 1 and --gpus at least 8 (one host)")
    if not args.time_limit > 0:
        parser.error("--time-limit must be positive")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'GPUs':>7} {'command':<24} {'median':>8} {'max':>8} {'peak MB':>8} {'held':>5}")
    for row in rows:
        print(
            f"{row['gpus']:>7} {row['command']:<24} {row['median_s']:>8} {row['max_s']:>8} "
            f"{row['peak_rss_mb']:>8} {row['held'] or '-':>5}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("scale.csv", COLUMNS, {"scale": readme_table})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=("--gpus", "160", "--runs", "1", "--time-limit", "5"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
