"""Benchmark: exact re-optimization online (``reopt``) against GRMU, MFI, MCC and FF (issue 16, section 1).

Every policy replays the same traces through :func:`mipopt.simulate` (default window: up to
the last arrival), with the same seed per trace:

* ``fbk``: the MFI paper's set-up (``--fbk``, default ``fbk``: 100 A100-80GB GPUs, uniform
  profiles, loaded to 100 % demand without departures; and
  ``fbk:lifetimes=saturate,demand=200``: lifetimes that saturate the cluster, up to 200 %
  demand, a steady state with departures), seeds ``--seeds``;
* ``alibaba``: the mapped Alibaba GPU trace 2023 (``--alibaba``, default one A100 per node
  and durations x 20,000, the README's example; 1,213 GPUs, 8,063 requests), once (the
  mapping draws nothing; its seed is the first of ``--seeds``). Skipped, with a message,
  when the trace is not at the path.

A row per (part, seed, policy): acceptance rate, accepted, hardware area and mean active
GPUs, migrations (every relocation, parks included), parks, drains and GB moved (memory of
every relocation, from the cluster's log, the planner's ``moved_memory_gb``), and for
``reopt`` its counters (:attr:`mipopt.heuristics.reopt.Reopt.stats`): re-optimizations, the
requests they placed, solve time in total, per re-optimization and at most, the solves the
time limit stopped before a proof (their answers depend on the machine's load, so a rerun may
differ), and whether the wall-clock budget ran out. ``runtime_s`` is the replay's wall time.

Usage::

    python -m benchmarks.bench_reopt [--parts fbk alibaba] [--seeds 0 1 2] [--fbk SPEC ...]
        [--alibaba SPEC] [--reopt SPEC] [--policies grmu mfi mcc ff]
        [--out-dir DIR] [--readme FILE] [--render] [--quick]

Rows go to ``OUT_DIR/reopt.csv``; the README section ``reopt`` is regenerated from the
latest run of each (part, workload, policy) of that file.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_reopt.py
    import _as_module  # noqa: F401

import argparse
import time
from typing import Any

import numpy as np

from benchmarks import common
from mipopt.heuristics.policies import make_policy
from mipopt.heuristics.reopt import Reopt
from mipopt.simulation import simulate
from mipopt.simulation.runs import make_trace
from mipopt.state import Cluster

ALIBABA = common.REPO_ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023"
ALIBABA_SPEC = "alibaba:path=../shared/data/alibaba-gpu-v2023,gpus_per_host=1,duration_scale=20000"
REOPT = "reopt:base=mfi,interval=24,time_limit=2"
#: The MFI paper's set-up as in its figures (no departures, up to 100 % demand), and in a steady state.
FBK = ("fbk", "fbk:lifetimes=saturate,demand=200")
OTHERS = ("grmu", "mfi", "mcc", "ff")
COLUMNS = (
    "part",
    "workload",
    "seed",
    "policy",
    "gpus",
    "arrived",
    "accepted",
    "acceptance_rate",
    "hardware_area",
    "mean_active_gpus",
    "migrations",
    "parking_moves",
    "disruptive_moves",
    "gb_moved",
    "reopts",
    "reopts_applied",
    "placed_by_reopt",
    "solve_s",
    "solve_mean_s",
    "solve_max_s",
    "unproven",
    "budget_exhausted",
    "runtime_s",
)


def replay(part: str, workload: str, seed: int, spec: str) -> dict[str, Any]:
    """One replay of ``workload`` (seed ``seed``) under the policy ``spec``: a row."""
    trace = make_trace(workload, seed)
    policy = make_policy(spec)
    clusters: list[Cluster] = []
    start = policy.start

    def keep(cluster: Cluster, rng: np.random.Generator) -> None:  # the replay's cluster, for its log
        clusters.append(cluster)
        start(cluster, rng)

    policy.start = keep  # type: ignore[method-assign]
    t0 = time.perf_counter()
    res = simulate(trace, policy, seed=seed)
    runtime = time.perf_counter() - t0
    [cluster] = clusters
    inst = cluster.instance
    gb = 0.0
    for r in cluster.log:
        profile = inst.profile_on(inst.workload(r.workload), inst.gpus[r.target[0]].model)
        gb += 0.0 if profile is None else profile.memory_gb
    s = res.summary
    stats = policy.stats if isinstance(policy, Reopt) else {}
    reopts = int(stats.get("reopts", 0))
    return {
        "part": part,
        "workload": workload,
        "seed": seed,
        "policy": spec,
        "gpus": len(inst.gpus),
        "arrived": s["arrived"],
        "accepted": s["accepted"],
        "acceptance_rate": f"{s['acceptance_rate']:.4f}",
        "hardware_area": f"{s['hardware_area']:.1f}",
        "mean_active_gpus": f"{s['mean_active_gpus']:.2f}",
        "migrations": s["migrations"],
        "parking_moves": s["parking_moves"],
        "disruptive_moves": s["disruptive_moves"],
        "gb_moved": f"{gb:.0f}",
        "reopts": reopts if stats else "",
        "reopts_applied": stats.get("reopts_applied", ""),
        "placed_by_reopt": stats.get("placed_by_reopt", ""),
        "solve_s": f"{stats['solve_s']:.2f}" if stats else "",
        "solve_mean_s": f"{stats['solve_s'] / reopts:.3f}" if reopts else "",
        "solve_max_s": f"{stats['solve_max_s']:.3f}" if stats else "",
        "unproven": stats.get("unproven", ""),
        "budget_exhausted": stats.get("budget_exhausted", ""),
        "runtime_s": f"{runtime:.2f}",
    }


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    jobs: list[tuple[str, str, int]] = []
    if "fbk" in args.parts:
        jobs += [("fbk", spec, seed) for spec in args.fbk for seed in args.seeds]
    if "alibaba" in args.parts:
        if (ALIBABA / "openb_pod_list_default.csv").is_file():
            jobs.append(("alibaba", args.alibaba, args.seeds[0]))
        else:
            common.progress(f"alibaba: left out, no Alibaba trace in {ALIBABA}")
    for part, workload, seed in jobs:
        for spec in [args.reopt, *args.policies]:
            row = replay(part, workload, seed, spec)
            common.progress(
                f"{part} seed {seed} {spec}: acceptance rate {float(row['acceptance_rate']):.4f}, "
                f"{row['migrations']} migrations, {row['reopts'] or 0} re-optimizations, {row['runtime_s']} s"
            )
            rows.append(row)
    return rows


def _mean(rows: list[dict[str, str]], column: str) -> float | None:
    values = [float(r[column]) for r in rows if r[column] != ""]
    return sum(values) / len(values) if values else None


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """Per (part, workload, policy) of the latest run: means over its seeds."""
    runs = common.latest(rows, lambda r: (r["part"], r["workload"], r["policy"]))
    keys = sorted(runs, key=lambda k: (k[0] != "fbk", k[1], not k[2].startswith("reopt"), k[2]))
    lines = []
    for key in keys:
        group = runs[key]
        part, workload, policy = key
        mean = {c: _mean(group, c) for c in COLUMNS if c not in ("part", "workload", "policy")}

        def text(column: str, fmt: str, mean: dict[str, float | None] = mean) -> str:
            value = mean[column]
            return "-" if value is None else format(value, fmt)

        reopts = mean["reopts"]
        solve = mean["solve_s"]
        per = "-" if not reopts or solve is None else f"{solve / reopts:.2f} s"
        lines.append(
            [
                part,
                f"`{workload}`",
                f"`{policy}`",
                len(group),
                f"{100 * (mean['acceptance_rate'] or 0):.2f} %",
                text("hardware_area", ",.0f"),
                text("mean_active_gpus", ".1f"),
                text("migrations", ".1f"),
                text("parking_moves", ".1f"),
                text("gb_moved", ",.0f"),
                text("reopts", ".1f"),
                text("placed_by_reopt", ".1f"),
                per,
                text("solve_max_s", ".2f"),
                text("unproven", ".1f"),
                text("runtime_s", ".1f"),
                group[0]["commit"],
            ]
        )
    header = [
        "Part",
        "Workload",
        "Policy",
        "Seeds",
        "Acceptance rate",
        "Hardware area",
        "Active GPUs",
        "Migrations",
        "Parks",
        "GB moved",
        "Re-opts",
        "Placed by re-opt",
        "Solve / re-opt",
        "Max solve",
        "Unproven",
        "Replay",
        "Commit",
    ]
    machine = rows[-1]["machine"] if rows else ""
    note = (
        f"_Generated by `benchmarks/bench_reopt.py` from {len(rows)} rows of `{source}`: the latest run of "
        "each (part, workload, policy), means over its seeds. Hardware area: the integral of GRMU's "
        "hardware (Eq. 4) over the window; migrations count every relocation (parks included); GB moved "
        "is the memory of every relocation; solve times are wall clock, one thread, on "
        f"{machine or 'the machine of the rows'} (shared with other jobs: upper bounds)._"
    )
    return f"{note}\n\n{common.markdown_table(header, lines, 'lllrrrrrrrrrrrrrl')}"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parts", nargs="+", choices=("fbk", "alibaba"), default=["fbk", "alibaba"])
    parser.add_argument("--seeds", nargs="+", type=int, default=[0, 1, 2], help="default 0 1 2")
    parser.add_argument(
        "--fbk", nargs="+", default=list(FBK), help=f"FBK workload specs (default {' '.join(FBK)})"
    )
    parser.add_argument(
        "--alibaba", default=ALIBABA_SPEC, help=f"Alibaba workload spec (default {ALIBABA_SPEC})"
    )
    parser.add_argument("--reopt", default=REOPT, help=f"the reopt policy spec (default {REOPT})")
    parser.add_argument(
        "--policies",
        nargs="*",
        default=list(OTHERS),
        help=f"policies to compare with (default {' '.join(OTHERS)})",
    )


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    from mipopt.errors import InstanceError

    for spec in [args.reopt, *args.policies]:
        try:
            make_policy(spec)
        except InstanceError as err:
            parser.error(str(err))
    if not isinstance(make_policy(args.reopt), Reopt):
        parser.error(f"--reopt must be a reopt spec, got {args.reopt!r}")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'part':<8} {'seed':>4} {'policy':<44} {'rate':>7} {'migr':>6} {'re-opts':>7} {'time':>8}")
    for r in rows:
        print(
            f"{r['part']:<8} {r['seed']:>4} {r['policy']:<44} {r['acceptance_rate']:>7} "
            f"{r['migrations']:>6} {r['reopts']!s:>7} {r['runtime_s']:>8}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("reopt.csv", COLUMNS, {"reopt": readme_table})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=(
        "--parts",
        "fbk",
        "--seeds",
        "0",
        "--fbk",
        "fbk:gpus=6",
        "--reopt",
        "reopt:base=mfi,interval=5,time_limit=1",
        "--policies",
        "mfi",
        "grmu",
    ),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
