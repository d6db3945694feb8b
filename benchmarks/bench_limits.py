"""Benchmark: work that input sizes imply stays within bounds (issue 24, part A2).

Two kinds of rows, each measured in a forked child process (``common.run_isolated``):

* ``import``: ``mipopt.interop.instance_from_nvidia_smi`` on a generated ``nvidia-smi -L`` of
  ``N`` GPUs (one ``7g.40gb`` MIG device each) and its ``mig -lgi``: wall time and peak memory.
  The duplicate-index check of ``-L`` and the per-GPU scans of the tables were quadratic (5,000
  GPUs: 1.9 s; 50,000 would have taken minutes); target: linear, 50,000 GPUs under 10 s.
* ``hindsight``: ``mipopt.exact.hindsight.hindsight_optimum`` of an FBK trace under a time limit:
  the wall time of the whole call against the limit (held: within 10 %), or the time it takes to
  refuse a trace whose model alone would take longer to build than the limit.

Usage::

    python -m benchmarks.bench_limits [--gpus 5000 20000 50000]
        [--hindsight 200:5 600:40 600:5] [--out-dir DIR] [--readme FILE] [--render] [--quick]

Rows go to ``OUT_DIR/limits.csv``; the README section ``limits`` is regenerated from all rows.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_limits.py
    import _as_module  # noqa: F401

import argparse
import resource
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks import common

COLUMNS = (
    "kind",  # import or hindsight
    "gpus",
    "requests",
    "limit_s",
    "wall_s",
    "held",  # hindsight: the wall time within 10 % of the limit (yes/no)
    "peak_rss_mb",
    "result",  # import: GPUs and workloads; hindsight: status value/bound, or the refusal
)
#: How far beyond its limit a time-limited call may end and still hold it.
SLACK = 1.1


def write_outputs(folder: Path, gpus: int) -> list[Path]:
    """``-L`` and ``-lgi`` of ``gpus`` A100-40GB GPUs with one ``7g.40gb`` instance each."""
    listing = []
    for i in range(gpus):
        listing.append(f"GPU {i}: NVIDIA A100-SXM4-40GB (UUID: GPU-{i:08x}-0000-0000-0000-000000000000)")
        listing.append(f"  MIG 7g.40gb Device 0: (UUID: MIG-{i:08x}-0000-0000-0000-000000000000)")
    rows = "".join(f"|   {i}  MIG 7g.40gb   0   0   0:8   |\n" for i in range(gpus))
    (folder / "L.txt").write_text("\n".join(listing) + "\n")
    (folder / "lgi.txt").write_text(f"| GPU instances: |\n|====|\n{rows}")
    return [folder / "L.txt", folder / "lgi.txt"]


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def measure_import(gpus: int) -> dict[str, Any]:
    from mipopt.interop import instance_from_nvidia_smi

    with tempfile.TemporaryDirectory() as folder:
        paths = write_outputs(Path(folder), gpus)

        def job() -> tuple[float, float, str]:
            t0 = time.perf_counter()
            inst = instance_from_nvidia_smi({"n1": paths})
            return (
                time.perf_counter() - t0,
                peak_rss_mb(),
                f"{len(inst.gpus)} GPUs, {len(inst.workloads)} workloads",
            )

        done = common.run_isolated(job, timeout_s=600)
    if done.value is None:
        raise common.Failed(f"import of {gpus} GPUs: {done.error}")
    wall, rss, result = done.value
    common.progress(f"import {gpus} GPUs: {wall:.2f} s, {rss:.0f} MB")
    return {
        "kind": "import",
        "gpus": gpus,
        "wall_s": f"{wall:.3f}",
        "peak_rss_mb": f"{rss:.0f}",
        "result": result,
    }


def measure_hindsight(gpus: int, limit: float) -> dict[str, Any]:
    from mipopt.errors import InstanceError
    from mipopt.exact.hindsight import hindsight_optimum
    from mipopt.workloads import fbk_trace

    trace = fbk_trace(gpus=gpus, seed=0, lifetimes="saturate", demand=300)

    def job() -> tuple[float, float, str]:
        t0 = time.perf_counter()
        try:
            r = hindsight_optimum(trace, time_limit_s=limit)
            result = f"{r.status.value} {r.value:g}/{r.bound:g}" if r.value is not None else r.status.value
        except InstanceError:
            result = "refused"
        return time.perf_counter() - t0, peak_rss_mb(), result

    done = common.run_isolated(job, timeout_s=max(60.0, 20 * limit))
    if done.value is None:
        raise common.Failed(f"hindsight of {gpus} GPUs: {done.error}")
    wall, rss, result = done.value
    held = "yes" if wall <= SLACK * limit else "no"
    common.progress(f"hindsight {gpus} GPUs, limit {limit:g} s: {wall:.2f} s ({result}), held: {held}")
    return {
        "kind": "hindsight",
        "gpus": gpus,
        "requests": len(trace.requests),
        "limit_s": limit,
        "wall_s": f"{wall:.3f}",
        "held": held,
        "peak_rss_mb": f"{rss:.0f}",
        "result": result,
    }


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    empty = dict.fromkeys(COLUMNS, "")
    rows = [empty | measure_import(n) for n in args.gpus]
    rows += [empty | measure_hindsight(gpus, limit) for gpus, limit in args.hindsight]
    return rows


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """The latest run of each case at each commit."""
    runs = common.latest(rows, lambda r: (r["commit"], r["kind"], r["gpus"], r["limit_s"]))
    lines = [group[-1] for group in runs.values()]
    columns: list[common.Column[dict[str, str]]] = [
        common.Column("Kind", lambda r: r["kind"]),
        common.Column("GPUs", lambda r: f"{int(r['gpus']):,}", "r"),
        common.Column("Requests", lambda r: f"{int(r['requests']):,}" if r["requests"] else "-", "r"),
        common.Column("Limit", lambda r: f"{float(r['limit_s']):g} s" if r["limit_s"] else "-", "r"),
        common.Column("Wall", lambda r: f"{float(r['wall_s']):.2f} s", "r"),
        common.Column("Held", lambda r: r["held"] or "-"),
        common.Column("Peak RSS", lambda r: f"{r['peak_rss_mb']} MB", "r"),
        common.Column("Result", lambda r: r["result"]),
        common.Column("Commit", lambda r: r["commit"]),
        common.Column("Date", lambda r: r["date"][:10]),
        common.Column("Machine", lambda r: r["machine"]),
    ]
    note = (
        f"_Generated by `benchmarks/bench_limits.py` from {len(rows)} rows of `{source}`: the latest run of "
        "each case at each commit. Held: the whole time-limited call ended within 10 % of its limit; a "
        "refused trace is refused before its model is built._"
    )
    return f"{note}\n\n{common.table(columns, lines)}"


def _hindsight_case(text: str) -> tuple[int, float]:
    gpus, _, limit = text.partition(":")
    return int(gpus), float(limit)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--gpus", type=int, nargs="+", default=[5000, 20000, 50000], help="GPUs of the -L files imported"
    )
    parser.add_argument(
        "--hindsight",
        type=_hindsight_case,
        nargs="+",
        default=[(200, 5.0), (600, 40.0), (600, 5.0)],
        metavar="GPUS:LIMIT",
        help="FBK traces (lifetimes=saturate, demand=300) and time limits (default 200:5 600:40 600:5)",
    )


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'kind':<10} {'GPUs':>7} {'limit':>7} {'wall':>8} {'held':>5}  result")
    for row in rows:
        limit = f"{row['limit_s']:g}" if row["limit_s"] != "" else "-"
        print(
            f"{row['kind']:<10} {row['gpus']:>7} {limit:>7} {row['wall_s']:>8} {row['held'] or '-':>5}  {row['result']}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("limits.csv", COLUMNS, {"limits": readme_table})],
    arguments=arguments,
    measure=measure,
    report=report,
    quick=("--gpus", "2000", "--hindsight", "40:5", "200:0.5"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
