"""Benchmark: every heuristic against the tight GRMU model's proven optimum of its own use case
on IBM batch snapshots.

For each size (default 8 and 80 GPUs) and seed, :func:`mipopt.workloads.ibm.ibm_instance`
generates a snapshot of the IBM WPM paper's set-up (about 60 % of the GPUs partly used,
new workloads worth 60 % of the cluster's compute; running workloads movable).
:func:`mipopt.compare.compare_methods` solves it twice with the tight GRMU model (lexicographic
acceptance, hardware, migrations; HiGHS; time limit per solve): the initial optimum
(``exact-initial``, running workloads fixed: the reference of every method that cannot move
them) and the joint optimum (``exact``, the reference of the methods that may). It runs every
batch heuristic and every online policy in batch mode on it (``all``), verifies every solution
and records the gaps to each method's reference, and on the joint optimum's row its gain over
the initial optimum (what migrations buy).

Usage::

    python -m benchmarks.bench_gap [--sizes 8 80] [--seeds 10 5] [--first-seed 0] [--time-limit 60]
        [--solver highs] [--methods all] [--threads N]
        [--out-dir DIR] [--readme FILE] [--render] [--quick]

``--seeds`` gives the snapshots per size, one number for every size or one per size. Rows go
to ``OUT_DIR/gap.csv``; the README section ``gap`` is regenerated from all rows of that file.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_gap.py
    import _as_module  # noqa: F401

import argparse
from typing import Any

from benchmarks import common
from mipopt.compare import COLUMNS as GAP_COLUMNS
from mipopt.compare import (
    EXACT,
    EXACT_INITIAL,
    GapRow,
    MethodSummary,
    compare_methods,
    parse_methods,
    summarize,
)
from mipopt.errors import InstanceError
from mipopt.exact.driver import DEFAULT_OBJECTIVE
from mipopt.registry import get_method
from mipopt.workloads.ibm import ibm_instance

COLUMNS = [
    "highspy",
    "ortools",
    "seed",
    "solver",
    "objective",
    "time_limit_s",
    "threads",
    *GAP_COLUMNS,
]


def seeds_per_size(args: argparse.Namespace) -> list[tuple[int, list[int]]]:
    """(GPUs, seeds) of every size, from ``--sizes``, ``--seeds`` and ``--first-seed``."""
    counts = args.seeds if len(args.seeds) > 1 else args.seeds * len(args.sizes)
    return [
        (gpus, list(range(args.first_seed, args.first_seed + n)))
        for gpus, n in zip(args.sizes, counts, strict=True)
    ]


def bench(args: argparse.Namespace) -> list[dict[str, Any]]:
    methods = parse_methods(args.methods)
    fixed = {
        **common.versions("highspy", "ortools"),
        "solver": args.solver,
        "objective": DEFAULT_OBJECTIVE,
        "time_limit_s": args.time_limit,
        "threads": args.threads,
    }
    rows = []
    for gpus, seeds in seeds_per_size(args):
        for seed in seeds:
            inst = ibm_instance(gpus, seed=seed)

            def progress(done: int, total: int, message: str) -> None:
                common.progress(f"[{done}/{total}] {message}")

            found = compare_methods(
                [inst],
                methods,
                solver=args.solver,
                time_limit_s=args.time_limit,
                threads=args.threads,
                seed=0,
                progress=progress,
            )
            rows += [{**fixed, "seed": seed, **r.to_dict()} for r in found]
            for ref in found[:2]:
                common.progress(
                    f"{gpus} GPUs seed {seed}: {ref.method} {ref.termination} in {ref.runtime_s:.2f} s, "
                    f"acceptance {ref.acceptance}, hardware {ref.hardware}, migrations {ref.migrations}"
                )
    return rows


def _order(s: MethodSummary) -> tuple[int, float, float, str]:
    """The joint and the initial optimum, then other exact variants, then heuristics closest first."""
    first = 0 if s.method == EXACT else 1 if s.method == EXACT_INITIAL else 2 if s.kind == "exact" else 3
    acc = s.mean_acceptance_gap_pct if s.mean_acceptance_gap_pct is not None else float("inf")
    hw = s.mean_hardware_gap_pct if s.mean_hardware_gap_pct is not None else float("inf")
    return first, acc, hw, s.method


def _pct(value: float | None, sign: str = "") -> str:
    return common.percent(value, 2, sign, scale=1.0)  # the gaps are in per cent already


def _named(method: str) -> bool:
    """Whether the registry still has a method of this name (``first-fit`` became ``ff``)."""
    try:
        get_method(method)
    except InstanceError:
        return False
    return True


def _references(gap_rows: list[GapRow], gpus: int, method: str, what: str) -> str:
    """How often one optimum was proven at one size, and in what time."""
    rows = [r for r in gap_rows if r.gpus == gpus and r.method == method]
    times = sorted(r.runtime_s for r in rows)
    proven = sum(bool(r.proven) for r in rows)
    text = (
        f"the {what} optimum (`{method}`) proven on {proven}/{len(rows)} in a median "
        f"{common.median(times):.2f} s (max {times[-1]:.2f} s)"
    )
    unproven = [r for r in rows if not r.proven]
    if unproven:
        worst = max((r.gap or 0.0) for r in unproven)
        text += (
            f", {len(unproven)} stopped at the limit (largest gap {100 * worst:.2f} %): the rows measured "
            "against it compare against its incumbent"
        )
    return text


def readme_tables(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """One table per size: each method's means over the seeds of its latest run, closest first; methods
    the registry no longer names (renamed or removed), and rows written before each method had its own
    reference (no ``reference_use_case``: every gap against the joint optimum), are left out."""
    chosen = [
        r
        for r in common.latest_rows(
            (r for r in rows if r.get("reference_use_case")), lambda r: (r["gpus"], r["method"])
        )
        if _named(r["method"])
    ]
    gap_rows = [GapRow.from_dict(r) for r in chosen]
    seeds: dict[tuple[int, str], set[int]] = {}
    for r in chosen:
        seeds.setdefault((int(r["gpus"]), r["method"]), set()).add(int(r["seed"]))
    meta = {(int(r["gpus"]), r["method"]): r for r in chosen}
    summaries = summarize(gap_rows)
    max_s: dict[tuple[int, str], float] = {}
    for g in gap_rows:
        max_s[g.gpus, g.method] = max(max_s.get((g.gpus, g.method), 0.0), g.runtime_s)
    columns: list[common.Column[MethodSummary]] = [
        common.Column("Method", lambda s: f"`{s.method}`"),
        common.Column("Kind", lambda s: s.kind),
        common.Column("Reference", lambda s: s.reference_use_case or "-"),
        common.Column("Runs", lambda s: s.runs, "r"),
        common.Column("Accepted", lambda s: f"{s.mean_accepted:.1f}", "r"),
        common.Column("Acceptance", lambda s: f"{s.mean_acceptance:.1f}", "r"),
        common.Column("Hardware", lambda s: f"{s.mean_hardware:.1f}", "r"),
        common.Column("Migrations", lambda s: f"{s.mean_migrations:.1f}", "r"),
        common.Column("Moves", lambda s: f"{s.mean_moves:.1f}", "r"),
        common.Column("Acceptance gap", lambda s: _pct(s.mean_acceptance_gap_pct), "r"),
        common.Column("Max acceptance gap", lambda s: _pct(s.max_acceptance_gap_pct), "r"),
        common.Column("Hardware gap", lambda s: _pct(s.mean_hardware_gap_pct, "+"), "r"),
        common.Column("Optimal acceptance", lambda s: f"{s.acceptance_optimal}/{s.runs}", "r"),
        common.Column("Optimal (lex)", lambda s: f"{s.optimal}/{s.runs}", "r"),
        common.Column("Median s", lambda s: f"{s.median_runtime_s:.3f}", "r"),
        common.Column("Max s", lambda s: f"{max_s[s.gpus, s.method]:.3f}", "r"),
    ]
    parts = [
        f"_Generated by `benchmarks/bench_gap.py` from `{source}`: the latest run of each (GPUs, method) the "
        "registry still names, means over its seeds. Reference: the optimum each method's gaps use, "
        "`initial` (`exact-initial`: running workloads stay where they run; for every method that cannot "
        "move them) or `joint` (`exact`: running workloads may move; for `grmu`, whose defragmentation moves "
        "them, and IBM's joint rule). Accepted: workloads placed (running included); acceptance: GRMU Eq. 3, "
        "the weighted count (weight = compute slices); hardware: Eq. 4, active hosts + active GPUs; "
        "migrations: Eq. 5; moves: running workloads moved (inside a GPU included, which Eq. 5 does not "
        "count). Acceptance gap: (optimum - acceptance) / optimum; hardware gap: hardware / optimum's - 1 "
        "(negative when a method accepts less and powers less). Optimal acceptance / Optimal (lex): runs "
        "reaching the proven reference's acceptance / all three objectives. What migrations buy: the joint "
        "optimum against the initial one, means over the seeds. Every solution passed the verifier._"
    ]
    for gpus in sorted({s.gpus for s in summaries}):
        block = sorted((s for s in summaries if s.gpus == gpus), key=_order)
        ref = next(s for s in block if s.method == EXACT)
        ref_rows = [r for r in gap_rows if r.gpus == gpus and r.method == EXACT]
        m = meta[gpus, EXACT]
        seed_list = sorted(seeds[gpus, EXACT])
        line = (
            f"**{gpus} GPUs**: {ref.runs} snapshots (seeds {seed_list[0]}-{seed_list[-1]}), "
            f"{sum(r.new for r in ref_rows) / len(ref_rows):.1f} new workloads on average; "
            f"{m['solver']}, {float(m['time_limit_s']):g} s limit per solve: "
            f"{_references(gap_rows, gpus, EXACT_INITIAL, 'initial')}; "
            f"{_references(gap_rows, gpus, EXACT, 'joint')}. "
            f"What migrations buy: acceptance {_pct(ref.mean_acceptance_gain_pct, '+')} "
            f"({ref.mean_acceptance_gain or 0.0:+.1f}), hardware {_pct(ref.mean_hardware_gain_pct, '+')}, "
            f"with {ref.mean_migrations:.1f} migrations and {ref.mean_moves:.1f} moves. "
            f"Commit {m['commit']}, {m['date'][:10]}, {m['machine']}."
        )
        parts.append(line)
        parts.append(common.table(columns, block))
    return "\n\n".join(parts)


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 80], help="GPUs per snapshot (8 80)")
    parser.add_argument(
        "--seeds", type=int, nargs="+", default=[10, 5], help="snapshots per size: one number or one per size"
    )
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first .. first+N-1 (default 0)")
    parser.add_argument("--time-limit", type=float, default=60.0, help="per exact solve (default 60)")
    parser.add_argument("--solver", choices=["highs", "cpsat"], default="highs")
    parser.add_argument("--threads", type=int, help="solver threads (default: the solver's)")
    parser.add_argument(
        "--methods",
        default="all",
        help="as `mipopt bench --methods` (all); exact and exact-initial always run",
    )


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if len(args.seeds) not in (1, len(args.sizes)):
        parser.error(f"--seeds: give one number or one per size ({len(args.sizes)}), got {len(args.seeds)}")


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("gap.csv", COLUMNS, {"gap": readme_tables})],
    arguments=arguments,
    measure=bench,
    check=check,
    quick=("--sizes", "2", "4", "--seeds", "2", "1"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
