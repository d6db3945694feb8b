"""Benchmark: the exact models on generated instances of the IBM WPM set-up.

For each size (GPUs) and seed, :func:`mipopt.workloads.ibm_instance` generates a
test case as the IBM WPM paper does (section 5.1: hosts of 8 A100-80GB GPUs,
about 60 % of the GPUs partly used by running workloads, new workloads worth
60 % of the cluster's compute slices). Each (model, solver) pair then solves it
with :func:`mipopt.exact.solve_exact` under a time limit, lexicographically by
default (acceptance, then hardware, then migrations), and the verifier checks
every solution.

Targets (issue 3), for the tight model (``grmu``) with HiGHS: 80 GPUs proven
optimal in at most 2 s (median over the seeds); 1,000 GPUs proven optimal in at
most 60 s (every seed). The paper form (``grmu-paper``) has O(|N|^2 |GPUs|)
ordering binaries: it runs only up to ``--paper-max-gpus`` GPUs, in increasing
size, and stops (per solver) after the first size at which no seed is proven
optimal within the time limit; the README table says where it stopped. It
also runs at the smaller ``--paper-sizes`` (default 2 and 4 GPUs), so that the
table shows where it stops finishing even when that is below the smallest size.

Every run happens in a child process with a hard wall-clock limit
(``--hard-limit``, default twice the time limit plus 120 s) and a memory limit
(``--memory-limit-gb``), so that a model whose build explodes is recorded as an
error instead of taking the machine down. The model build is timed on its own
first (``build_s``, the same :func:`mipopt.formulations.build` call
``solve_exact`` makes); ``solve_s`` is the rest of ``runtime_s``.

Usage::

    python benchmarks/bench_exact.py [--sizes 8 80 400 1000] [--seeds 3]
        [--models grmu grmu-paper] [--solvers highs cpsat] [--time-limit 60]
        [--paper-sizes 2 4] [--paper-max-gpus 8] [--objective lex:acceptance,hardware,migrations]
        [--threads N] [--out-dir benchmarks/results] [--readme benchmarks/README.md]

Each run appends rows to ``OUT_DIR/exact.csv`` and regenerates the table between
``<!-- exact:begin -->`` and ``<!-- exact:end -->`` in the README from all rows
of that file.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import multiprocessing as mp
import os
import resource
import time
import traceback
from collections import defaultdict
from collections.abc import Sequence
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

import common

from mipopt.exact import parse_objective, solve_exact
from mipopt.formulations import MODELS, build
from mipopt.instance import Status
from mipopt.solvers import SolverOptions
from mipopt.verify import verify
from mipopt.workloads import ibm_instance

SECTION = "exact"
CSV_NAME = "exact.csv"
SIZES = (8, 80, 400, 1000)
SOLVERS = ("highs", "cpsat")
PAPER = "grmu-paper"
TIGHT = "grmu"
DEFAULT_OBJECTIVE = "lex:acceptance,hardware,migrations"
#: (GPUs, model, solver) -> (statistic, seconds): the issue's targets, on proven runs.
TARGETS = {(80, TIGHT, "highs"): ("median", 2.0), (1000, TIGHT, "highs"): ("max", 60.0)}

COLUMNS = (
    "commit",
    "date",
    "machine",
    "python",
    "highspy",
    "ortools",
    "gpus",
    "hosts",
    "seed",
    "running",
    "new",
    "model",
    "solver",
    "objective",
    "time_limit_s",
    "threads",
    "termination",
    "status",
    "runtime_s",
    "build_s",
    "solve_s",
    "acceptance",
    "hardware",
    "migrations",
    "bound",
    "gap",
    "variables",
    "constraints",
    "valid",
    "violations",
    "message",
)


# --- one run, in a child process ----------------------------------------------


def run_one(gpus: int, seed: int, model: str, solver: str, args: argparse.Namespace) -> dict[str, Any]:
    """Generate the instance, time the build, solve, verify; the run's own columns of a row."""
    inst = ibm_instance(gpus, seed=seed)
    row: dict[str, Any] = {"hosts": len(inst.hosts), "running": len(inst.running), "new": len(inst.new)}
    t0 = time.perf_counter()
    built = build(model, inst)
    row["build_s"] = time.perf_counter() - t0
    row["variables"] = built.stats.get("variables", built.model.nvariables())
    row["constraints"] = built.stats.get("constraints", built.model.nconstraints())
    del built
    options = SolverOptions(time_limit_s=args.time_limit, threads=args.threads)
    sol = solve_exact(inst, model=model, solver=solver, objective=args.objective, options=options)
    row.update(
        termination=sol.termination.value,
        status=sol.status.value,
        runtime_s=sol.runtime_s,
        solve_s=max(sol.runtime_s - row["build_s"], 0.0),
        bound=sol.bound,
        gap=sol.gap,
        message=sol.message,
    )
    if sol.status is not Status.NONE:
        report = verify(inst, sol)
        row.update(report.objectives.to_dict())
        row["valid"] = report.valid
        row["violations"] = len(report.violations)
    return row


def _child(conn: Connection, gpus: int, seed: int, model: str, solver: str, args: argparse.Namespace) -> None:
    if args.memory_limit_gb:
        limit = int(args.memory_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        conn.send(run_one(gpus, seed, model, solver, args))
    except MemoryError:
        conn.send({"error": f"out of memory (limit {args.memory_limit_gb:g} GB)"})
    except Exception as err:
        last = traceback.extract_tb(err.__traceback__)[-1]
        conn.send({"error": f"{type(err).__name__}: {err} ({Path(last.filename).name}:{last.lineno})"})
    finally:
        conn.close()


def run_isolated(gpus: int, seed: int, model: str, solver: str, args: argparse.Namespace) -> dict[str, Any]:
    """:func:`run_one` in a forked child under the hard time and memory limits."""
    ctx = mp.get_context("fork")
    parent, child = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    proc = ctx.Process(target=_child, args=(child, gpus, seed, model, solver, args))
    proc.start()
    child.close()
    result: dict[str, Any] | None = None
    if parent.poll(args.hard_limit):
        try:
            result = parent.recv()
        except EOFError:  # the child died before sending
            result = None
    elapsed = time.perf_counter() - t0
    if proc.is_alive() and result is None:
        proc.kill()
        message = f"killed at the hard limit ({args.hard_limit:g} s)"
    else:
        message = ""
    proc.join()
    if result is None:
        message = message or f"child process died (exit code {proc.exitcode})"
        result = {"error": message}
    if "error" in result:
        return {"termination": "error", "status": "none", "runtime_s": elapsed, "message": result["error"]}
    return result


# --- the run plan -------------------------------------------------------------


def bench(args: argparse.Namespace, run: dict[str, str]) -> list[dict[str, Any]]:
    versions = {"highspy": _version("highspy"), "ortools": _version("ortools")}
    plan = [
        (gpus, model, solver)
        for gpus in sorted(set(args.sizes) | set(args.paper_sizes))
        for model in args.models
        for solver in args.solvers
        if (gpus <= args.paper_max_gpus if model == PAPER else gpus in args.sizes)
    ]
    total = len(plan) * len(args.seeds)
    stopped: dict[tuple[str, str], int] = {}  # (model, solver) -> the size at which no seed was proven
    rows: list[dict[str, Any]] = []
    done = 0
    for gpus, model, solver in plan:
        if (model, solver) in stopped:
            done += len(args.seeds)
            common.progress(
                f"[{done}/{total}] {gpus} GPUs {model}/{solver}: skipped "
                f"(no seed proven at {stopped[model, solver]} GPUs)"
            )
            continue
        proven = 0
        for seed in args.seeds:
            inst = ibm_instance(gpus, seed=seed)  # for the error rows; the child generates its own
            result = run_isolated(gpus, seed, model, solver, args)
            row: dict[str, Any] = dict.fromkeys(COLUMNS)
            row.update(run)
            row.update(versions)
            row.update(
                hosts=len(inst.hosts),
                running=len(inst.running),
                new=len(inst.new),
                gpus=gpus,
                seed=seed,
                model=model,
                solver=solver,
                objective=args.objective,
                time_limit_s=args.time_limit,
                threads=args.threads,
            )
            row.update(result)
            row = _formatted(row)
            rows.append(row)
            proven += row["status"] == "optimal"
            done += 1
            gap = f", gap {_pct(row['gap'])}" if row["status"] == "feasible" else ""
            common.progress(
                f"[{done}/{total}] {gpus} GPUs seed {seed} {model}/{solver}: {row['termination']} "
                f"{float(row['runtime_s']):.2f} s{gap}"
                + (f" ({row['message']})" if row["status"] == "none" else "")
            )
        if model == PAPER and proven == 0:
            stopped[model, solver] = gpus
    return rows


def _formatted(row: dict[str, Any]) -> dict[str, Any]:
    out = dict(row)
    for key in ("runtime_s", "build_s", "solve_s"):
        if out[key] is not None:
            out[key] = f"{out[key]:.3f}"
    for key in ("bound", "gap"):
        if out[key] is not None:
            out[key] = f"{out[key]:.6g}"
    for key in ("acceptance", "hardware", "migrations"):
        if out[key] is not None:
            out[key] = f"{out[key]:g}"
    return out


def _version(package: str) -> str:
    try:
        return importlib.metadata.version(package)
    except importlib.metadata.PackageNotFoundError:
        return ""


# --- the README table ---------------------------------------------------------


def _seconds(value: float) -> str:
    return f"{value:.2f} s" if value < 10 else f"{value:.1f} s"


def _pct(value: str | float | None) -> str:
    if value in (None, ""):
        return "-"
    v = float(value)
    return "inf" if math.isinf(v) else f"{100 * v:.2f} %"


def target_verdict(key: tuple[int, str, str], times: list[float | None], limit: float) -> str:
    """PASS/FAIL against the issue's target for this (GPUs, model, solver), or ``-`` without one.

    ``times`` holds each run's time to a proven optimum, None where it was not proven;
    an unproven run counts as slower than any limit.
    """
    if key not in TARGETS:
        return "-"
    stat, bound = TARGETS[key]
    unproven = sum(t is None for t in times)
    if stat == "max" and unproven:
        return f"FAIL ({unproven}/{len(times)} not proven within {limit:g} s; target <= {bound:g} s)"
    ranked = sorted(math.inf if t is None else t for t in times)
    value = ranked[-1] if stat == "max" else common.median(ranked)
    if math.isinf(value):
        return f"FAIL ({stat} not proven within {limit:g} s; target <= {bound:g} s)"
    verdict = "PASS" if value <= bound else "FAIL"
    sign = "<=" if value <= bound else ">"
    return f"{verdict} ({stat} {_seconds(value)} {sign} {bound:g} s)"


def readme_table(rows: list[dict[str, str]], source: str) -> str:
    """The latest run of each (GPUs, model, solver) in ``rows``, as a markdown table and notes."""
    latest: dict[tuple[int, str, str], list[dict[str, str]]] = {}
    for row in rows:
        key = (int(row["gpus"]), row["model"], row["solver"])
        if key not in latest or row["date"] > latest[key][0]["date"]:
            latest[key] = [row]
        elif row["date"] == latest[key][0]["date"]:
            latest[key].append(row)
    model_order = {m: i for i, m in enumerate(MODELS)}
    solver_order = {s: i for i, s in enumerate(SOLVERS)}
    keys = sorted(
        latest, key=lambda k: (k[0], model_order.get(k[1], 99), k[1], solver_order.get(k[2], 99), k[2])
    )
    header = [
        "GPUs", "Model", "Solver", "Runs", "Proven", "Median to optimum", "Max to optimum",
        "Max gap at limit", "Variables", "Constraints", "Valid", "Limit", "Target (tight + HiGHS)",
        "Commit", "Date",
    ]  # fmt: skip
    table_rows = []
    for key in keys:
        group = latest[key]
        gpus, model, solver = key
        limit = float(group[0]["time_limit_s"])
        times = [float(r["runtime_s"]) if r["status"] == "optimal" else None for r in group]
        proven = [t for t in times if t is not None]
        gaps = [float(r["gap"]) for r in group if r["status"] == "feasible" and r["gap"] != ""]
        unsolved = sum(r["status"] == "none" for r in group)
        gap_text = _pct(max(gaps)) if gaps else "-"
        if unsolved:
            gap_text += f" ({unsolved} without solution)"
        sizes = [(int(r["variables"]), int(r["constraints"])) for r in group if r["variables"]]
        checked = [r for r in group if r["valid"] != ""]
        table_rows.append(
            [
                f"{gpus:,}",
                model,
                solver,
                len(group),
                len(proven),
                _seconds(common.median(proven)) if proven else "-",
                _seconds(max(proven)) if proven else "-",
                gap_text,
                f"{int(common.median(v for v, _ in sizes)):,}" if sizes else "-",
                f"{int(common.median(c for _, c in sizes)):,}" if sizes else "-",
                f"{sum(r['valid'] == 'True' for r in checked)}/{len(checked)}",
                f"{limit:g} s",
                target_verdict(key, times, limit),
                group[0]["commit"],
                group[0]["date"][:10],
            ]
        )
    table = common.markdown_table(header, table_rows, align="rllrrrrrrrrrlll")
    note = (
        f"_Generated by `benchmarks/bench_exact.py` from {len(rows)} rows of `{source}`: the latest run "
        "of each (GPUs, model, solver); times are wall-clock seconds from the call of `solve_exact` to "
        "its return (model build, warm start and all lexicographic stages), over the seeds of that "
        "run; the gap at the limit is that of the lexicographic stage the time limit stopped (later "
        "stages are not run; the CSV's `message` names each stage's outcome); variables and constraints are medians over "
        "the seeds._"
    )
    return f"{note}\n\n{table}\n\n{_paper_note(latest)}"


def _paper_note(latest: dict[tuple[int, str, str], list[dict[str, str]]]) -> str:
    """Where the paper form stops finishing, per solver."""
    lines = []
    for solver in sorted({k[2] for k in latest if k[1] == PAPER}, key=lambda s: SOLVERS.index(s)):
        runs = sorted((k[0], g) for k, g in latest.items() if k[1] == PAPER and k[2] == solver)
        parts = []
        for gpus, group in runs:
            proven = sum(r["status"] == "optimal" for r in group)
            parts.append(f"{proven}/{len(group)} proven at {gpus:,} GPUs")
        finished = [gpus for gpus, group in runs if all(r["status"] == "optimal" for r in group)]
        failed = [gpus for gpus, group in runs if not any(r["status"] == "optimal" for r in group)]
        if failed:
            verdict = f"stops finishing at {min(failed):,} GPUs"
        elif finished:
            verdict = f"finishes up to {max(finished):,} GPUs, the largest size run"
        else:
            verdict = "finishes only some seeds"
        lines.append(f"- `{PAPER}` with {solver}: {'; '.join(parts)}: {verdict}.")
    if not lines:
        return "_The paper form was not run._"
    return (
        "Paper form (`grmu-paper`), run in increasing size until no seed is proven optimal:\n\n"
        + "\n".join(lines)
    )


# --- command line -------------------------------------------------------------


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=list(SIZES), help="GPUs per instance (default 8 80 400 1000)"
    )
    parser.add_argument("--seeds", type=int, default=3, help="seeds per size: 0 .. N-1 (default 3)")
    parser.add_argument(
        "--models",
        nargs="+",
        default=[TIGHT, PAPER],
        choices=list(MODELS),
        help="formulations (default both)",
    )
    parser.add_argument(
        "--solvers", nargs="+", default=list(SOLVERS), choices=list(SOLVERS), help="backends (default both)"
    )
    parser.add_argument("--time-limit", type=float, default=60.0, metavar="S", help="per run (default 60)")
    parser.add_argument(
        "--paper-sizes",
        type=int,
        nargs="*",
        default=[2, 4],
        metavar="N",
        help="extra sizes for the paper form only, to find where it stops finishing (default 2 4)",
    )
    parser.add_argument(
        "--paper-max-gpus",
        type=int,
        default=8,
        metavar="N",
        help="largest size the paper form is run at (default 8; its build grows as |N|^2 |GPUs|)",
    )
    parser.add_argument(
        "--objective", default=DEFAULT_OBJECTIVE, help="as `mipopt solve` (default %(default)s)"
    )
    parser.add_argument(
        "--threads", type=int, default=None, metavar="N", help="solver threads (default: its own)"
    )
    parser.add_argument(
        "--hard-limit",
        type=float,
        default=None,
        metavar="S",
        help="kill a run after S s (default 2 x limit + 120)",
    )
    parser.add_argument(
        "--memory-limit-gb",
        type=float,
        default=None,
        metavar="GB",
        help="address-space limit of each run (default 3/4 of the machine's memory; 0 for none)",
    )
    parser.add_argument("--out-dir", type=Path, default=common.BENCH_DIR / "results")
    parser.add_argument("--readme", type=Path, default=common.BENCH_DIR / "README.md")
    args = parser.parse_args(argv)
    if any(n < 1 for n in [*args.sizes, *args.paper_sizes]) or args.seeds < 1:
        parser.error("--sizes, --paper-sizes and --seeds must be at least 1")
    if not args.time_limit > 0:
        parser.error("--time-limit must be positive")
    if args.threads is not None and args.threads < 1:
        parser.error("--threads must be at least 1")
    try:
        args.objective = str(parse_objective(args.objective))
    except ValueError as err:
        parser.error(str(err))
    args.seeds = list(range(args.seeds))
    if args.hard_limit is None:
        args.hard_limit = 2 * args.time_limit + 120
    if args.memory_limit_gb is None:
        total = common.memory_gib()
        args.memory_limit_gb = 0.75 * total if total else 0
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    run = common.run_info()
    rows = bench(args, run)

    csv_path = args.out_dir / CSV_NAME
    common.append_rows(csv_path, COLUMNS, rows)
    source = os.path.relpath(csv_path.resolve(), args.readme.resolve().parent)
    common.replace_section(args.readme, SECTION, readme_table(common.read_rows(csv_path), source))

    summary: dict[tuple[int, str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        summary[row["gpus"], row["model"], row["solver"]].append(row)
    print(f"{'GPUs':>6} {'model':<11} {'solver':<6} {'proven':>7} {'median s':>9} {'max s':>8}  valid")
    for (gpus, model, solver), group in summary.items():
        times = [float(r["runtime_s"]) for r in group if r["status"] == "optimal"]
        med = f"{common.median(times):.2f}" if times else "-"
        top = f"{max(times):.2f}" if times else "-"
        valid = sum(r["valid"] is True for r in group)
        print(
            f"{gpus:>6} {model:<11} {solver:<6} {len(times):>3}/{len(group):<3} {med:>9} {top:>8}  {valid}/{len(group)}"
        )
    print(f"appended {len(rows)} rows to {csv_path}; updated {args.readme}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
