"""Benchmark: competitive ratios of the online policies against the hindsight optimum (issue 16, section 2).

For small traces whose arrivals and departures are all known (FBK streams and Poisson streams
of 8 to 32 GPUs, several seeds), the hindsight optimum (:func:`mipopt.exact.hindsight.hindsight_optimum`)
is the most acceptance any placement could reach over the whole trace, with migrations free
(alive instances re-arranged at every event) or forbidden (an instance keeps its GPU and start).
Each policy is replayed by the simulator on the same trace (its default window ends at the last
arrival, and every request is decided on arrival, so every request counts); its competitive
ratio on that trace is its acceptance over the optimum. A row is one (setting, seed, policy):
the policy's acceptance and both optima with their status, bound and solve time (the optimum is
solved once per trace and repeated on its policies' rows). Where an optimum is not proven within
the time limit the table divides by its bound instead (the ratio is then a lower bound) and marks
the cell. The forbidden variant's bound is the smaller of its model's bound and the free
optimum's bound (forbidding migrations never gains); it is solved only on settings of at most
``--forbidden-gpus`` GPUs (its slot model proves 8 GPUs and ~60 requests in seconds, not 16 GPUs
and ~115 requests in 120 s).

Usage::

    python -m benchmarks.bench_hindsight [--settings SPEC ...] [--seeds 5] [--policies P ...]
        [--time-limit 300] [--threads 1] [--forbidden-gpus 8] [--out-dir DIR] [--readme FILE]
        [--render] [--quick]
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_hindsight.py
    import _as_module  # noqa: F401

import argparse
import statistics
import time
from collections import defaultdict
from typing import Any

from benchmarks import common
from mipopt.exact.hindsight import hindsight_optimum
from mipopt.heuristics.policies import make_policy
from mipopt.simulation import simulate
from mipopt.simulation.runs import make_trace

#: The settings: workload specs of ``mipopt simulate`` (FBK lifetimes "saturate": departures
#: from the start; demand in percent of the cluster's memory slots, departures ignored).
SETTINGS = (
    "fbk:gpus=8,lifetimes=saturate,demand=300",
    "fbk:gpus=16,lifetimes=saturate,demand=300",
    "fbk:gpus=32,lifetimes=saturate,demand=300",
    "fbk:gpus=32,lifetimes=saturate,demand=800",
    "poisson:gpus=8,load=1.0,mean_lifetime=10,horizon=60",
    "poisson:gpus=16,load=1.0,mean_lifetime=10,horizon=60",
    "poisson:gpus=32,load=1.0,mean_lifetime=10,horizon=60",
)
POLICIES = ("ff", "bf", "mcc", "grmu", "mfi", "bf-bi", "ff-agnostic", "rr", "adapter(mfi)")
VARIANTS = ("free", "forbidden")
COLUMNS = (
    "setting",
    "seed",
    "gpus",
    "requests",
    "epochs",
    "policy",
    "acceptance",
    *(f"{v}_{c}" for v in VARIANTS for c in ("status", "value", "bound", "s")),
    "time_limit_s",
    "threads",
)


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    for setting in args.settings:
        for seed in range(args.seeds):
            trace = make_trace(setting, seed)
            gpus = len(trace.cluster.gpus)
            optimum: dict[str, dict[str, Any]] = {}
            epochs = ""
            for variant in VARIANTS:
                if variant == "forbidden" and gpus > args.forbidden_gpus:
                    optimum[variant] = {"status": "", "value": "", "bound": "", "s": ""}
                    continue
                t0 = time.perf_counter()
                result = hindsight_optimum(
                    trace, migrations=variant, time_limit_s=args.time_limit, threads=args.threads, seed=seed
                )
                elapsed = time.perf_counter() - t0
                epochs = str(result.stats["epochs"])
                optimum[variant] = {
                    "status": result.status.value,
                    "value": "" if result.value is None else f"{result.value:g}",
                    "bound": "" if result.bound is None else f"{result.bound:g}",
                    "s": f"{elapsed:.2f}",
                }
                common.progress(
                    f"{setting} seed {seed}: {variant} {result.status.value} {result.value} "
                    f"(bound {result.bound}) in {elapsed:.1f} s, {len(trace.requests)} requests"
                )
            if optimum["forbidden"]["bound"] and float(optimum["free"]["bound"]) < float(
                optimum["forbidden"]["bound"]
            ):
                # forbidding migrations never gains: the free optimum bounds the forbidden one
                optimum["forbidden"]["bound"] = optimum["free"]["bound"]
                if optimum["forbidden"]["value"] == optimum["forbidden"]["bound"]:
                    optimum["forbidden"]["status"] = "optimal"
            for policy in args.policies:
                summary = simulate(trace, make_policy(policy), seed=seed).summary
                rows.append(
                    {
                        "setting": setting,
                        "seed": seed,
                        "gpus": gpus,
                        "requests": len(trace.requests),
                        "epochs": epochs,
                        "policy": policy,
                        "acceptance": f"{summary['acceptance']:g}",
                        **{
                            f"{v}_{k}": optimum[v][k]
                            for v in VARIANTS
                            for k in ("status", "value", "bound", "s")
                        },
                        "time_limit_s": args.time_limit,
                        "threads": args.threads,
                    }
                )
                value = optimum["free"]["value"]
                if value and float(summary["acceptance"]) > float(optimum["free"]["bound"]) + 1e-9:
                    raise common.Failed(f"{setting} seed {seed}: {policy} beats the hindsight bound")
    return rows


def _ratio(row: dict[str, str], variant: str) -> tuple[float, bool] | None:
    """The policy's acceptance over the optimum (over the bound when not proven), and whether proven."""
    if not row[f"{variant}_bound"]:
        return None
    proven = row[f"{variant}_status"] == "optimal"
    bound = float(row[f"{variant}_bound"])
    return (float(row["acceptance"]) / bound if bound else 1.0), proven


def _cell(ratios: list[tuple[float, bool]]) -> str:
    if not ratios:
        return "-"
    values = [r for r, _ in ratios]
    mark = "" if all(p for _, p in ratios) else "*"
    return f"{statistics.mean(values):.3f} ({min(values):.3f}){mark}"


def _latest(rows: list[dict[str, str]]) -> list[dict[str, str]]:
    runs = common.latest(rows, lambda r: (r["setting"], r["seed"], r["policy"]))
    return [group[0] for group in runs.values()]


def _short(setting: str) -> str:
    return setting.replace(",lifetimes=saturate", "").replace(",mean_lifetime=10", "")


def ratio_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """Per policy and setting: mean (min) over seeds of acceptance / hindsight optimum."""
    latest = _latest(rows)
    settings = list(dict.fromkeys(r["setting"] for r in latest))
    policies = list(dict.fromkeys(r["policy"] for r in latest))
    out = [
        f"_Generated by `benchmarks/bench_hindsight.py` from {len(rows)} rows of `{source}` (the latest run "
        "of each setting, seed and policy). A cell is the mean (minimum) over seeds of the policy's "
        "acceptance over the hindsight optimum; `*`: some optimum of the cell not proven, divided by "
        "its bound (the ratio is then at least the value shown)._"
    ]
    for variant in VARIANTS:
        shown = [s for s in settings if any(r["setting"] == s and r[f"{variant}_bound"] for r in latest)]
        if not shown:
            continue
        cells: dict[tuple[str, str], list[tuple[float, bool]]] = defaultdict(list)
        for r in latest:
            ratio = _ratio(r, variant)
            if ratio is not None:
                cells[(r["policy"], r["setting"])].append(ratio)
        title = {
            "free": "Migrations free (alive instances re-arranged at every event)",
            "forbidden": "Migrations forbidden (an instance keeps its GPU and start)",
        }[variant]
        out.append(f"**{title}**")
        out.append(
            common.markdown_table(
                ["Policy", *(f"`{_short(s)}`" for s in shown)],
                [[p, *(_cell(cells[(p, s)]) for s in shown)] for p in policies],
                "l" + "r" * len(shown),
            )
        )
    return "\n\n".join(out)


def optimum_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """Per setting: sizes, how many optima were proven, solve times."""
    latest = _latest(rows)
    per_trace: dict[tuple[str, str], dict[str, str]] = {}
    for r in latest:
        per_trace.setdefault((r["setting"], r["seed"]), r)
    settings = list(dict.fromkeys(s for s, _ in per_trace))
    body = []
    for s in settings:
        traces = [r for (setting, _), r in per_trace.items() if setting == s]
        line = [
            f"`{_short(s)}`",
            traces[0]["gpus"],
            f"{statistics.mean(int(r['requests']) for r in traces):.0f}",
            f"{statistics.mean(int(r['epochs']) for r in traces):.0f}",
        ]
        for variant in VARIANTS:
            done = [r for r in traces if r[f"{variant}_status"]]
            if not done:
                line += ["-", "-", "-"]
                continue
            proven = sum(r[f"{variant}_status"] == "optimal" for r in done)
            gaps = [
                (float(r[f"{variant}_bound"]) - float(r[f"{variant}_value"])) / float(r[f"{variant}_value"])
                for r in done
                if r[f"{variant}_value"]
            ]
            times = [float(r[f"{variant}_s"]) for r in done]
            line += [
                f"{proven}/{len(done)}" + ("" if proven == len(done) else f" (gap ≤ {max(gaps):.1%})"),
                f"{statistics.mean(float(r[f'{variant}_value']) for r in done if r[f'{variant}_value']):.1f}",
                f"{statistics.median(times):.1f} / {max(times):.1f} s",
            ]
        body.append(line)
    machines = sorted({r["machine"] for r in latest})
    limits = sorted({r["time_limit_s"] for r in latest})
    note = (
        f"_The hindsight optima behind the ratios, per setting (seeds 0..n-1): GPUs, mean requests and "
        f"epochs (maximal sets of requests alive together), optima proven, mean optimum over the seeds "
        f"solved, median / max solve time (model building and decoding included; time limit {', '.join(limits)} s, "
        f"threads {', '.join(sorted({r['threads'] for r in latest}))}). Machine: {'; '.join(machines)}, "
        "shared with other jobs: times are upper bounds._"
    )
    header = ["Setting", "GPUs", "Requests", "Epochs", "Free proven", "Free optimum", "Free time",
              "Forbidden proven", "Forbidden optimum", "Forbidden time"]  # fmt: skip
    return f"{note}\n\n{common.markdown_table(header, body, 'lrrrrrrrrr')}"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--settings", nargs="+", default=list(SETTINGS), help="workload specs (default: the grid)"
    )
    parser.add_argument("--seeds", type=int, default=5, help="seeds 0..N-1 per setting (default 5)")
    parser.add_argument(
        "--policies", nargs="+", default=list(POLICIES), help="default: " + " ".join(POLICIES)
    )
    parser.add_argument("--time-limit", type=float, default=300.0, help="seconds per optimum (default 300)")
    parser.add_argument("--threads", type=int, default=1, help="solver threads (default 1)")
    parser.add_argument(
        "--forbidden-gpus",
        type=int,
        default=8,
        help="solve the forbidden variant on settings of at most this many GPUs (default 8)",
    )


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    if not args.time_limit > 0:
        parser.error("--time-limit must be positive")
    for policy in args.policies:
        try:
            make_policy(policy)
        except ValueError as err:
            parser.error(f"--policies: {err}")
    for setting in args.settings:
        try:
            make_trace(setting, 0)
        except ValueError as err:
            parser.error(f"--settings: {err}")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'setting':<55} {'seed':>4} {'policy':<14} {'acc':>6} {'free':>8} {'forbidden':>9}")
    for r in rows:
        print(
            f"{r['setting']:<55} {r['seed']:>4} {r['policy']:<14} {r['acceptance']:>6} "
            f"{r['free_value']:>8} {r['forbidden_value'] or '-':>9}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[
        common.Output(
            "hindsight.csv", COLUMNS, {"hindsight-ratios": ratio_table, "hindsight-optimum": optimum_table}
        )
    ],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=(
        "--settings",
        "fbk:gpus=4,lifetimes=saturate,demand=400",
        "--seeds",
        "2",
        "--policies",
        "ff",
        "mfi",
        "--time-limit",
        "60",
    ),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
