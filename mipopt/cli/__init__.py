"""The ``mipopt`` command.

Exit codes: 0 success; 1 a verified solution breaks a rule; 2 bad input (one
line naming the file, the JSON path and the rule).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, TextIO

from mipopt import __version__
from mipopt.catalog import GpuModel, builtin_models, get_model
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Solution, Termination, solution_to_dict
from mipopt.io import load_instance, load_solution, write_json

if TYPE_CHECKING:
    from mipopt.exact.driver import StageEvent
    from mipopt.exact.sweep import SweepProgress
    from mipopt.migrate import Plan

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C
#: Time kept back per workload to print and write a solution (0.6 s at 50,000 workloads).
OUTPUT_S_PER_WORKLOAD = 2e-5


class BadInput(Exception):
    """Bad input to report in one line and exit 2."""


#: The library's parameter names and the flags that set them.
FLAGS = {
    "objective": "--objective",
    "objectives": "--objectives",
    "model": "--model",
    "use_case": "--use-case",
    "policy": "--policy",
    "method": "--method",
    "methods": "--methods",
    "time_limit_s": "--time-limit",
    "threads": "--threads",
    "solver": "--solver",
    "workload": "--workload",
    "semantics": "--semantics",
    "max_points": "--max-points",
}


def _flagged(err: ValueError) -> str:
    """The library's error, naming the flag where the library names its parameter."""
    if isinstance(err, InstanceError) and err.path in FLAGS:
        return f"{FLAGS[err.path]}: {err.rule}"
    return str(err)


def _load_instance(path: str) -> Instance:
    try:
        return load_instance(path)
    except InstanceError as err:
        raise BadInput(f"{path}: {err}") from None


def _load_solution(path: str) -> Solution:
    try:
        return load_solution(path)
    except InstanceError as err:
        raise BadInput(f"{path}: {err}") from None


def _model(name: str) -> GpuModel:
    try:
        return get_model(name)
    except KeyError as err:
        raise BadInput(str(err.args[0])) from None


def _print_written(*paths: str | None) -> None:
    """After a summary, one line per file written."""
    written = [path for path in paths if path]
    if written:
        print()
    for path in written:
        print(f"wrote {path}")


def _print_json(data: object) -> None:
    print(json.dumps(data, indent=2))


# --- info


def _placements_text(profile_placements: list[tuple[int, int]]) -> str:
    starts = ",".join(str(s) for s, _ in profile_placements)
    return f"{{{starts}}}:{profile_placements[0][1]}"


def cmd_info(args: argparse.Namespace) -> int:
    if args.model is None:
        models = builtin_models()
        if args.json:
            _print_json([m.to_dict() for m in models.values()])
            return EXIT_OK
        print(f"{'model':<30} {'slots':>5} {'compute':>7} {'memory_gb':>9} {'profiles':>8}  placements")
        for m in models.values():
            status = sorted({p.placement_status for p in m.profiles})
            print(
                f"{m.name:<30} {m.slots:>5} {m.compute_slices:>7} {m.memory_gb:>9g} {len(m.profiles):>8}  {'/'.join(status)}"
            )
        print("\n`mipopt info MODEL` shows a model's profiles and legal placements.")
        return EXIT_OK
    m = _model(args.model)
    if args.json:
        _print_json(m.to_dict())
        return EXIT_OK
    print(f"{m.name}: {m.slots} memory slots, {m.compute_slices} compute slices, {m.memory_gb:g} GB")
    print(
        f"\n{'profile':<16} {'id':>3} {'compute':>7} {'slots':>5} {'memory_gb':>9} {'max':>4}  {'status':<10} -lgipp"
    )
    for p in m.profiles:
        alias = f"  (also {', '.join(p.aliases)})" if p.aliases else ""
        print(
            f"{p.name:<16} {p.id:>3} {p.compute:>7} {p.memory_slots:>5} {p.memory_gb:>9g} {p.max_instances:>4}"
            f"  {p.placement_status:<10} {_placements_text(list(p.placements))}{alias}"
        )
    w = 4
    print(
        f"\nlegal placements, one column per memory slot:\n{'':<16} "
        + "".join(str(s).ljust(w) for s in range(m.slots))
    )
    for p in m.profiles:
        if not p.base:
            continue
        line = [" "] * (m.slots * w)
        for start, size in p.placements:
            seg = f"[{start}".ljust(size * w - 1, "=") + "]"
            line[start * w : start * w + len(seg)] = seg
        print(f"{p.name:<16} " + "".join(line).rstrip())
    media = [p.name for p in m.profiles if p.media_extension]
    if media:
        print(f"\n+me profiles ({', '.join(media)}) share one media-engine set: at most one per GPU.")
    return EXIT_OK


# --- configs


def cmd_configs(args: argparse.Namespace) -> int:
    from mipopt.geometry.configs import config_stats

    stats = config_stats(_model(args.gpu))
    if args.json:
        _print_json(stats.to_dict())
        return EXIT_OK
    print(f"{stats.model}: configurations of one GPU over {', '.join(stats.profiles)}")
    rows = [
        ("configurations (including empty)", stats.configurations),
        ("terminal (nothing more fits)", stats.terminal),
        ("suboptimal (lower CC than the best arrangement)", stats.suboptimal),
        ("distinct multisets of instances", stats.multisets),
        ("reached by sequential default placement", stats.default_reachable),
        ("  of which suboptimal", stats.default_reachable_suboptimal),
        ("maximal layouts of the profile families", stats.maximal_layouts),
        ("  before driver R510 (no 4g beside 3g)", stats.maximal_layouts_pre_r510),
    ]
    for label, value in rows:
        print(f"  {label:<52} {value:>6}")
    return EXIT_OK


# --- validate, verify, show, solve


def cmd_validate(args: argparse.Namespace) -> int:
    inst = _load_instance(args.instance)
    print(
        f"{args.instance}: valid instance {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs, "
        f"{len(inst.running)} running and {len(inst.new)} new workloads"
    )
    return EXIT_OK


def cmd_verify(args: argparse.Namespace) -> int:
    from mipopt.verifier import verify

    inst = _load_instance(args.instance)
    sol = _load_solution(args.solution)
    report = verify(inst, sol)
    if args.json:
        _print_json(report.to_dict())
    elif report.valid:
        o = report.objectives
        print(f"valid: acceptance {o.acceptance:g}, hardware {o.hardware:g}, migrations {o.migrations:g}")
    else:
        for line in report.violations:
            print(line)
    return EXIT_OK if report.valid else EXIT_VIOLATION


def cmd_show(args: argparse.Namespace) -> int:
    from mipopt.render import placement as render

    inst = _load_instance(args.instance)
    if args.solution:
        sol = _load_solution(args.solution)
        placed = sol.placed()
        unknown = [w for w, (g, _) in placed.items() if not inst.has_workload(w) or not inst.has_gpu(g)]
        if unknown:
            raise BadInput(
                f"{args.solution}: placements name {unknown[0]!r}, unknown to {args.instance}; "
                "run `mipopt verify` for details"
            )
        title = f"{inst.name}: {sol.method}"
    else:
        placed = inst.current_placement()
        title = f"{inst.name}: current placement"
    try:
        print(render.text(inst, placed))
    except KeyError as err:
        raise BadInput(f"{args.solution}: {err.args[0]}; run `mipopt verify` for details") from None
    if args.png:
        render.png(inst, placed, args.png, title)
        print(f"wrote {args.png}")
    return EXIT_OK


def _num(value: float | None) -> str:
    return "-" if value is None else f"{value:g}"


def _summary(inst: Instance, sol: Solution, *, joint: bool = False) -> str:
    from mipopt.render import placement as render

    lines = [
        f"instance {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs, {len(inst.workloads)} workloads"
    ]
    lines.append(f"method: {sol.method}")
    lines.append(
        f"termination: {sol.termination.value}, status: {sol.status.value}, runtime {sol.runtime_s:.3f} s"
    )
    if sol.objectives is not None:
        o = sol.objectives
        lines.append(
            f"objectives: acceptance {o.acceptance:g}, hardware {o.hardware:g}, migrations {o.migrations:g}"
        )
    if sol.status.value != "optimal" and sol.bound is not None:
        gap = "-" if sol.gap is None else f"{sol.gap:.2%}"
        lines.append(f"unproven: bound {sol.bound:g}, gap {gap} (the first unproven stage's, in its units)")
    if sol.stages:
        lines.append("")
        lines.append(
            f"{'stage':<12} {'value':>10} {'bound':>10} {'gap':>8}  {'proven':<6} {'model':<10} {'time':>8}"
        )
        for st in sol.stages:
            gap = "-" if st.gap is None else f"{st.gap:.2%}"
            lines.append(
                f"{st.objective:<12} {_num(st.value):>10} {_num(st.bound):>10} {gap:>8}  "
                f"{'yes' if st.proven else 'no':<6} {st.model:<10} {st.runtime_s:>7.2f}s"
            )
    m = sol.metrics
    if m and inst.running:
        moved = int(m.get("moves_inter_host", 0) + m.get("moves_inter_gpu", 0))
        line = (
            f"moves: {moved} of {len(inst.running)} running workloads move to another GPU "
            f"({m.get('moved_memory_gb', 0.0):g} GB)"
        )
        if m.get("moves_intra_gpu"):
            line += f", {m['moves_intra_gpu']:g} change start on their own GPU"
        lines.append(line)
        if moved and joint:
            lines.append("  (--use-case initial keeps running workloads where they are)")
    lines.append("")
    lines.append(f"{'workload':<14} {'profile':<12} {'gpu':<14} {'start':>5}  note")
    where = sol.placement_of()
    for w in inst.workloads:
        a = where.get(w.id)
        if a is None:
            lines.append(f"{w.id:<14} {w.profile!s:<12} {'-':<14} {'-':>5}  rejected")
            continue
        if w.placement is None:
            note = "new"
        elif (w.placement.gpu, w.placement.start) == (a.gpu, a.start):
            note = "running, stays"
        else:
            note = f"running, moved from {w.placement.gpu}:{w.placement.start}"
        lines.append(f"{w.id:<14} {w.profile!s:<12} {a.gpu:<14} {a.start:>5}  {note}")
    m = sol.metrics
    if m:
        lines.append("")
        lines.append(
            f"accepted {m['accepted']:g}/{m['workloads']:g}, active hosts {m['active_hosts']:g}, "
            f"active GPUs {m['active_gpus']:g}, memory utilization {m['memory_utilization']:.0%}, "
            f"compute utilization {m['compute_utilization']:.0%}"
        )
    lines.append("")
    lines.append(render.text(inst, sol.placed()))
    return "\n".join(lines)


def cmd_solve(args: argparse.Namespace) -> int:
    from mipopt.heuristics import BATCH

    _check_plan_options(args.semantics, "graph", None)
    inst = _load_instance(args.instance)
    if args.method in BATCH:
        sol = BATCH[args.method](inst)
    elif args.method != "exact":  # an online policy in batch mode
        from mipopt.heuristics.policy import make_policy, run_batch

        try:
            sol = run_batch(make_policy(args.method, "--method"), inst, seed=args.seed or 0)
        except InstanceError as err:
            raise BadInput(_flagged(err)) from None
    else:
        sol = _solve_exact(inst, args)
    plan = _plan(inst, sol, "--plan", args.semantics, "graph", None) if args.plan else None
    if args.out:
        write_json(args.out, solution_to_dict(sol))
    if plan is not None:
        write_json(args.plan, plan.to_dict())
    if args.json:
        _print_json(solution_to_dict(sol))
    else:
        print(_summary(inst, sol, joint=args.method == "exact" and args.use_case in (None, "joint")))
        if plan is not None:
            from mipopt.render.plan import plan_text

            print(f"\n{plan_text(inst, plan)}")
        _print_written(args.out, args.plan)
    if sol.termination is Termination.INTERRUPTED:
        print("mipopt: interrupted: the best placement found is above (status feasible)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def _solve_exact(inst: Instance, args: argparse.Namespace) -> Solution:
    """An exact solve under one deadline; Ctrl-C stops it and keeps the best placement found."""
    from mipopt.exact.driver import solve_exact
    from mipopt.solvers import SolverOptions
    from mipopt.solvers.stop import catch_sigint

    if args.time_limit is not None and not args.time_limit > 0:  # also refuses nan
        raise BadInput(f"--time-limit: must be positive seconds, got {args.time_limit:g}")
    if args.gap is not None and not 0 <= args.gap < 1:
        raise BadInput(f"--gap: must be a relative gap in [0, 1), got {args.gap:g}")
    # the limit holds for the whole command: reading the instance and writing the answer count too
    deadline = None
    if args.time_limit is not None:
        deadline = args.started + args.time_limit - OUTPUT_S_PER_WORKLOAD * len(inst.workloads)
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    with catch_sigint() as stop:
        try:
            options = SolverOptions(
                time_limit_s=args.time_limit,
                threads=args.threads,
                seed=args.seed,
                mip_rel_gap=args.gap,
                stop=stop,
                deadline=deadline,
            )
            if args.model == "wpm":
                from mipopt.exact.wpm.solve import solve_wpm

                return solve_wpm(inst, use_case=args.use_case or "joint", solver=args.solver, options=options)
            return solve_exact(
                inst,
                model=args.model,
                solver=args.solver,
                objective=args.objective,
                options=options,
                use_case=args.use_case,
                progress=_print_stage if show else None,
            )
        except InstanceError as err:  # the library names its parameters; say the flag
            raise BadInput(_flagged(err)) from None
        except ValueError as err:
            raise BadInput(_flagged(err)) from None


def _print_stage(event: StageEvent) -> None:
    """One line per stage on stderr: what is being solved, with the incumbent and bound so far."""
    head = f"mipopt: {event.elapsed_s:7.1f} s  {event.stage:<11} {event.model:<10}"
    if not event.done:
        tail = f"started, incumbent {_num(event.value)}"
    else:
        term = event.termination.value if event.termination is not None else "-"
        tail = f"{term}, value {_num(event.value)}, bound {_num(event.bound)}"
    print(f"{head} {tail}", file=sys.stderr, flush=True)


# --- plan


def _check_plan_options(semantics: str, method: str, time_limit: float | None) -> None:
    from mipopt.migrate import METHODS, SEMANTICS

    if semantics not in SEMANTICS:
        raise BadInput(f"--semantics: must be one of {', '.join(SEMANTICS)}, got {semantics!r}")
    if method not in METHODS:
        raise BadInput(f"--method: must be one of {', '.join(METHODS)}, got {method!r}")
    if time_limit is not None and not time_limit > 0:  # also refuses nan
        raise BadInput(f"--time-limit: must be positive seconds, got {time_limit:g}")


def _plan(
    inst: Instance, target: Solution, target_name: str, semantics: str, method: str, time_limit: float | None
) -> Plan:
    """Plan to ``target``; a target that breaks a rule is reported naming ``target_name``."""
    from mipopt.migrate import plan_migration

    try:
        return plan_migration(
            inst,
            target,
            semantics=semantics,  # type: ignore[arg-type]  # checked by _check_plan_options
            method=method,  # type: ignore[arg-type]
            time_limit_s=30.0 if time_limit is None else time_limit,
        )
    except InstanceError as err:
        raise BadInput(f"{target_name}: {err.rule}" if err.path == "target" else str(err)) from None


def cmd_plan(args: argparse.Namespace) -> int:
    from mipopt.render.plan import format_operations, nvml_operations, plan_png, plan_text

    _check_plan_options(args.semantics, args.method, args.time_limit)
    inst = _load_instance(args.instance)
    target = _load_solution(args.target)
    plan = _plan(inst, target, args.target, args.semantics, args.method, args.time_limit)
    if args.out:
        write_json(args.out, plan.to_dict())
    if args.png:
        plan_png(inst, plan, args.png, title=f"{inst.name}: to {target.method}")
    if args.ops:
        ops = nvml_operations(inst, plan)
        if args.json:
            _print_json([{"round": i, "operations": o} for i, o in enumerate(ops, 1)])
        else:
            print(format_operations(ops) or "nothing to do: the current placement is the target")
    elif args.json:
        _print_json(plan.to_dict())
    else:
        print(plan_text(inst, plan))
    if not args.json:
        _print_written(args.out, args.png)
    return EXIT_OK


def cmd_partitions(args: argparse.Namespace) -> int:
    from mipopt.exact.preprocess import gpu_partitions

    inst = _load_instance(args.instance)
    found = gpu_partitions(inst, merged=args.merged)
    if args.json:
        _print_json(
            [
                {
                    "gpu": g.gpu,
                    "model": g.model.name,
                    "partitions": [
                        {
                            "profile" if q.profile is not None else "name": q.name,
                            "start": q.start,
                            "slots": q.slots,
                            "compute": q.compute,
                            "memory_gb": q.memory_gb,
                        }
                        for q in g.partitions
                    ],
                }
                for g in found
            ]
        )
        return EXIT_OK
    if not found:
        print("no GPU has running workloads")
        return EXIT_OK
    rows = [("gpu", "model", "occupied", "free partitions (name@start)")]
    for g in found:
        occupied = "".join("#" if g.fixed.mask >> s & 1 else "." for s in range(g.model.slots))
        parts = ", ".join(f"{q.name}@{q.start}" for q in g.partitions) or "-"
        rows.append((g.gpu, g.model.name, occupied, parts))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    return EXIT_OK


# --- sweep


class _ProgressBar:
    """A one-line text bar on stderr, redrawn in place after every solve of a sweep."""

    def __init__(self, stream: TextIO, width: int = 30) -> None:
        self.stream, self.width, self.drawn = stream, width, False

    def __call__(self, p: SweepProgress) -> None:
        self.draw(p.fraction, f"{p.solves} solves, {p.points} points  {p.message[:32]:<32}")

    def draw(self, fraction: float, text: str = "") -> None:
        filled = round(fraction * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {fraction:4.0%}  {text}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()


def cmd_sweep(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mipopt.exact.sweep import DEFAULT_MAX_POINTS, parse_objectives, sweep
    from mipopt.solvers import SolverOptions

    if args.out_dir and (args.csv or args.png):
        raise BadInput("--out-dir: give either --out-dir or --csv/--png, not both")
    if args.time_limit is not None and not args.time_limit > 0:  # also refuses nan
        raise BadInput(f"--time-limit: must be positive seconds, got {args.time_limit:g}")
    if args.threads is not None and args.threads < 1:
        raise BadInput(f"--threads: must be at least 1, got {args.threads}")
    if args.seed < 0:
        raise BadInput(f"--seed: must be non-negative, got {args.seed}")
    max_points = DEFAULT_MAX_POINTS if args.max_points is None else args.max_points
    if max_points < 1:
        raise BadInput(f"--max-points: must be at least 1, got {max_points}")
    try:
        objectives = parse_objectives(args.objectives)
    except InstanceError as err:
        raise BadInput(_flagged(err)) from None
    inst = _load_instance(args.instance)
    csv_path, png_path = args.csv, args.png
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = Path(args.instance).stem
        csv_path, png_path = out / f"{stem}.front.csv", out / f"{stem}.front.png"
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    bar = _ProgressBar(sys.stderr) if show else None
    options = SolverOptions(time_limit_s=args.time_limit, threads=args.threads, seed=args.seed)
    try:
        front = sweep(
            inst,
            model=args.model,
            solver=args.solver,
            objectives=objectives,
            options=options,
            progress=bar,
            max_points=max_points,
        )
    except (InstanceError, ValueError) as err:
        raise BadInput(_flagged(err)) from None
    finally:
        if bar is not None:
            bar.close()
    written = []
    if args.solutions:
        front = front.save_solutions(args.solutions)
        written.append(f"{len(front.points)} solutions in {args.solutions}")
    if csv_path:
        front.to_csv(csv_path)
        written.append(str(csv_path))
    if png_path:
        front.plot(png_path)
        written.append(str(png_path))
    if args.json:
        _print_json(front.to_dict())
    else:
        print(front.table())
        for what in written:
            print(f"wrote {what}")
    return EXIT_OK


# --- generate


def cmd_generate(args: argparse.Namespace) -> int:
    from mipopt.instance import instance_to_dict
    from mipopt.workloads import ibm_instance

    for option, value in (("--gpus", args.gpus), ("--gpus-per-host", args.gpus_per_host)):
        if value < 1:
            raise BadInput(f"{option}: must be at least 1, got {value}")
    if args.seed < 0:
        raise BadInput(f"--seed: must be non-negative, got {args.seed}")
    for option, value in (("--used", args.used), ("--load", args.load), ("--pinned", args.pinned)):
        if not 0 <= value <= 1:  # also refuses nan
            raise BadInput(f"{option}: must be a fraction in [0, 1], got {value:g}")
    try:
        model = get_model(args.model).name
    except KeyError as err:
        raise BadInput(f"--model: {err.args[0]}") from None
    inst = ibm_instance(
        args.gpus,
        seed=args.seed,
        used_fraction=args.used,
        load=args.load,
        load_basis=args.load_basis,
        model=model,
        gpus_per_host=args.gpus_per_host,
        pinned_fraction=args.pinned,
    )
    data = instance_to_dict(inst)
    if args.out is None:
        _print_json(data)
        return EXIT_OK
    write_json(args.out, data)
    used = len({w.placement.gpu for w in inst.running if w.placement})
    print(
        f"wrote {args.out}: {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs ({used} used), "
        f"{len(inst.running)} running and {len(inst.new)} new workloads"
    )
    return EXIT_OK


# --- simulate


def cmd_simulate(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mipopt.io import write_atomic
    from mipopt.simulation.runs import compare, plot_series, summary_table

    if args.runs < 1:
        raise BadInput(f"--runs: must be at least 1, got {args.runs}")
    options = {
        "bucket": args.bucket,
        "batch_interval": args.batch_interval,
        "queue_timeout": args.queue_timeout,
        "debug": args.debug,
    }
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    bar = _ProgressBar(sys.stderr) if show else None

    def progress(fraction: float) -> None:
        if bar is not None:
            bar.draw(fraction)

    try:
        series, summary = compare(
            args.workload, args.policy, runs=args.runs, seed=args.seed, progress=progress, **options
        )
    except (InstanceError, ValueError) as err:
        raise BadInput(_flagged(err)) from None
    finally:
        if bar is not None:
            bar.close()
    table = summary_table(summary)
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        for name, frame in (("series.csv", series), ("summary.csv", summary)):
            csv_text: str = frame.to_csv(index=False)

            def write(fh: TextIO, text: str = csv_text) -> None:
                fh.write(text)

            write_atomic(out / name, write, text=True)
        plot_series(series, out / "series.png")
    if args.json:
        _print_json(
            {"summary": summary.to_dict(orient="records"), "means": table.reset_index().to_dict("records")}
        )
    else:
        print(
            f"workload {args.workload}: {int(summary['arrived'].iloc[0])} requests per run, {args.runs} run(s)"
        )
        print(table.to_string(float_format=lambda v: f"{v:.4g}"))
        if args.out:
            print(f"\nwrote {args.out}/series.csv, summary.csv, series.png")
    return EXIT_OK


# --- bench


def cmd_bench(args: argparse.Namespace) -> int:
    from mipopt.compare import compare_methods, parse_methods, summarize, summary_table, write_csv

    if not args.instances and args.generate is None:
        raise BadInput("instance: give instance files or --generate ibm")
    if args.generate is None:
        for option, given in (
            ("--gpus", args.gpus),
            ("--seeds", args.seeds),
            ("--first-seed", args.first_seed),
        ):
            if given is not None:
                raise BadInput(f"{option}: only with --generate ibm")
    gpus = args.gpus or [8]
    seeds = 1 if args.seeds is None else args.seeds
    first_seed = args.first_seed or 0
    for option, value, least in (
        ("--gpus", min(gpus), 1),
        ("--seeds", seeds, 1),
        ("--first-seed", first_seed, 0),
    ):
        if value < least:
            raise BadInput(f"{option}: must be at least {least}, got {value}")
    if args.seed < 0:
        raise BadInput(f"--seed: must be non-negative, got {args.seed}")
    if args.time_limit is not None and not args.time_limit > 0:  # also refuses nan
        raise BadInput(f"--time-limit: must be positive seconds, got {args.time_limit:g}")
    if args.threads is not None and args.threads < 1:
        raise BadInput(f"--threads: must be at least 1, got {args.threads}")
    try:
        methods = parse_methods(args.methods)
    except InstanceError as err:
        raise BadInput(_flagged(err)) from None
    instances = [_load_instance(path) for path in args.instances]
    if args.generate is not None:
        from mipopt.workloads import ibm_instance

        instances += [ibm_instance(n, seed=s) for n in gpus for s in range(first_seed, first_seed + seeds)]
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    bar = _ProgressBar(sys.stderr) if show else None

    def progress(done: int, total: int, message: str) -> None:
        if bar is not None:
            bar.draw(done / total, message[:40].ljust(40))

    try:
        rows = compare_methods(
            instances,
            methods,
            solver=args.solver,
            time_limit_s=args.time_limit,
            threads=args.threads,
            seed=args.seed,
            progress=progress,
        )
    except InstanceError as err:
        raise BadInput(_flagged(err)) from None
    finally:
        if bar is not None:
            bar.close()
    if args.out:
        write_csv(args.out, rows)
    summaries = summarize(rows)
    if args.json:
        _print_json({"rows": [r.to_dict() for r in rows], "summary": [s.to_dict() for s in summaries]})
    else:
        print(summary_table(summaries))
        if args.out:
            print(f"\nwrote {args.out}")
    return EXIT_OK


#: mipopt.exact.models.MODELS' names (a test keeps them equal; importing it here would load Pyomo).
MODEL_NAMES = ("grmu", "grmu-slots", "grmu-paper")


def _solver_arguments(p: argparse.ArgumentParser, *, time_limit: str, wpm: bool = False) -> None:
    """--model, --solver, --time-limit, --threads and --seed, shared by solve and sweep."""
    p.add_argument(
        "--model",
        default="grmu",
        choices=[*MODEL_NAMES, *(["wpm"] if wpm else [])],
        help="formulation: grmu, the configuration model with staged proofs (default); grmu-slots, the "
        "tight model over start slots; grmu-paper, Eqs. 3-26 as printed"
        + ("; wpm, IBM's profit MIP (see --use-case)" if wpm else ""),
    )
    p.add_argument("--solver", default="highs", choices=["highs", "cpsat"], help="backend (default: highs)")
    p.add_argument("--time-limit", type=float, metavar="S", help=time_limit)
    p.add_argument("--threads", type=int, metavar="N")
    p.add_argument("--seed", type=int, default=0)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mipopt", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"mipopt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("info", help="GPU models, profiles and legal placements")
    p.add_argument("model", nargs="?", help="a model id, e.g. A100-40GB")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("configs", help="configuration statistics of one GPU (GRMU section 5.1)")
    p.add_argument("--gpu", required=True, metavar="MODEL", help="a model id, e.g. A100-40GB")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_configs)

    p = sub.add_parser("validate", help="check an instance file")
    p.add_argument("instance")
    p.set_defaults(func=cmd_validate)

    p = sub.add_parser("verify", help="check a solution against its instance")
    p.add_argument("instance")
    p.add_argument("solution")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_verify)

    p = sub.add_parser("show", help="draw the GPUs of an instance or a solution")
    p.add_argument("instance")
    p.add_argument("solution", nargs="?")
    p.add_argument("--png", metavar="FILE", help="also write a picture")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("solve", help="place the new workloads of an instance")
    p.add_argument("instance")
    p.add_argument(
        "--method",
        default="exact",
        help="exact: a MIP model proven optimal (default); first-fit: hosts and GPUs in order, driver default "
        "start; ibm-first-fit, load-balanced: the IBM WPM baselines (GPUs and workloads by id / least utilized "
        "GPU first, arrival order; first free index from 0); ibm-initial, ibm-compaction, ibm-reconfiguration: "
        "the IBM WPM rule-based heuristics (section 4.2); any online policy of `mipopt simulate` "
        "(mfi, ff, grmu, adapter(ff), ...) placing the new workloads in file order",
    )
    _solver_arguments(
        p, time_limit="seconds for the whole command: reading, building, every stage, writing", wpm=True
    )
    p.add_argument(
        "--use-case",
        choices=["initial", "compaction", "reconfiguration", "joint"],
        help="the WPM paper's questions, for wpm and grmu: initial (running workloads stay), compaction "
        "(running only, onto used GPUs), reconfiguration (running only, anywhere), joint (default: all may move)",
    )
    p.add_argument(
        "--objective",
        default="lex:acceptance,hardware,migrations",
        help="lex:NAME[@TOL],... or weighted:W1,W2,W3[,W4] (default: %(default)s)",
    )
    p.add_argument(
        "--gap",
        type=float,
        metavar="REL",
        help="stop each stage within this relative gap (termination gap_limit, status feasible; default 0: prove)",
    )
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help="a line per stage on stderr: incumbent, bound, elapsed time (default: on a terminal)",
    )
    p.add_argument("--out", metavar="FILE", help="write the solution JSON (atomically)")
    p.add_argument(
        "--plan",
        metavar="FILE",
        help="also plan the migration from the current placement to the solution (graph planner) and "
        "write the plan JSON (atomically); see `mipopt plan`",
    )
    p.add_argument(
        "--semantics",
        default="create-first",
        metavar="create-first|destroy-first",
        help="of --plan's moves (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the solution JSON")
    p.set_defaults(func=cmd_solve)

    p = sub.add_parser(
        "plan",
        help="ordered rounds of moves from an instance's current placement to a target solution",
        description="Plan the migration from INSTANCE's current placement to TARGET (a solution of "
        "INSTANCE): rounds of drains, moves and creates in which every instant obeys every rule; "
        "cycles of waits are broken by parking in free space, or by draining (named) where there is "
        "none. See docs/formats.md, Plans.",
    )
    p.add_argument("instance")
    p.add_argument("target", help="a solution of the instance (mipopt solve --out)")
    p.add_argument(
        "--semantics",
        default="create-first",
        metavar="create-first|destroy-first",
        help="create-first: a move creates its target before destroying its source (no downtime; "
        "default); destroy-first: every move drains its workload first",
    )
    p.add_argument(
        "--method",
        default="graph",
        metavar="graph|exact|auto",
        help="graph: dependency graph, any size (default); exact: time-indexed model, small plans; "
        "auto: exact for small plans",
    )
    p.add_argument("--time-limit", type=float, metavar="S", help="of the exact planner (default 30)")
    p.add_argument("--out", metavar="FILE", help="write the plan JSON (atomically)")
    p.add_argument("--json", action="store_true", help="print the plan JSON (with --ops: the operations)")
    p.add_argument("--ops", action="store_true", help="print the NVML-style operations of each round")
    p.add_argument("--png", metavar="FILE", help="draw the GPUs before and after each round (atomically)")
    p.set_defaults(func=cmd_plan)

    p = sub.add_parser(
        "sweep", help="Pareto front of acceptance, hardware and migrations (epsilon-constraint)"
    )
    p.add_argument("instance")
    _solver_arguments(p, time_limit="seconds per point (over its stages)")
    p.add_argument(
        "--objectives",
        default="acceptance,hardware,migrations",
        help="2 or 3 objectives, the primary first (default: %(default)s)",
    )
    p.add_argument("--max-points", type=int, metavar="N", help="stop after N distinct points (default: 100)")
    p.add_argument("--out-dir", metavar="DIR", help="write DIR/NAME.front.csv and DIR/NAME.front.png")
    p.add_argument("--csv", metavar="FILE", help="write the front as CSV (atomically)")
    p.add_argument("--png", metavar="FILE", help="draw acceptance against hardware (atomically)")
    p.add_argument(
        "--solutions", metavar="DIR", help="write each point's solution JSON to DIR/point-NNN.json"
    )
    p.add_argument("--json", action="store_true", help="print the front as JSON")
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="progress bar on stderr (default: only when stderr is a terminal)",
    )
    p.set_defaults(func=cmd_sweep)

    p = sub.add_parser("partitions", help="free partitions of GPUs with running workloads (WPM Alg. 1)")
    p.add_argument("instance")
    p.add_argument("--merged", action="store_true", help="merge adjacent partitions where Assumption 1 holds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=cmd_partitions)

    p = sub.add_parser("generate", help="write a seeded generated instance")
    kinds = p.add_subparsers(dest="workload", required=True, metavar="WORKLOAD")
    g = kinds.add_parser(
        "ibm",
        help="IBM WPM section 5.1: hosts of 8 GPUs, about 60%% of GPUs used, new work worth 60%% of compute",
        description="IBM WPM test case (Turkkan et al., section 5.1); see mipopt.workloads.ibm_instance.",
    )
    g.add_argument("--gpus", type=int, required=True, metavar="N", help="GPUs in the cluster")
    g.add_argument("--seed", type=int, default=0, help="generator seed (default 0)")
    g.add_argument(
        "--used", type=float, default=0.6, metavar="FRACTION", help="share of GPUs with running workloads"
    )
    g.add_argument(
        "--load",
        type=float,
        default=0.6,
        metavar="FRACTION",
        help="compute of the new workloads as a share of the cluster's compute slices (default 0.6)",
    )
    g.add_argument(
        "--load-basis",
        choices=["cluster", "free"],
        default="cluster",
        help="what --load is a share of: all compute slices (default, as the paper) or the free ones",
    )
    g.add_argument(
        "--pinned", type=float, default=0.0, metavar="FRACTION", help="share of running workloads pinned"
    )
    g.add_argument("--model", default="A100-80GB", help="GPU model (default A100-80GB)")
    g.add_argument("--gpus-per-host", type=int, default=8, metavar="N", help="GPUs per host (default 8)")
    g.add_argument("--out", metavar="FILE", help="write the instance JSON (atomically); default: print it")
    g.set_defaults(func=cmd_generate)
    p = sub.add_parser("simulate", help="replay arrivals and departures under online policies")
    p.add_argument(
        "--workload",
        required=True,
        metavar="SPEC",
        help="fbk[:distribution=uniform,gpus=100], poisson[:gpus=...,load=...], alibaba:path=DIR[,compress=...,host_fraction=...,gpus_per_host=...,duration_scale=...,departures=false]",
    )
    p.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="NAME",
        help="repeatable: ff, bf, mcc, mecc, grmu[:heavy=...], ff-agnostic, rr, bf-bi, wf-bi, mfi, lb, "
        "ibm-initial, adapter(<policy>)",
    )
    p.add_argument("--runs", type=int, default=1, help="traces of seeds S .. S+N-1 (default 1)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument(
        "--bucket", type=float, default=1.0, help="time-series row width in the trace's unit (default 1)"
    )
    p.add_argument("--batch-interval", type=float, help="decide arrivals at multiples of this interval")
    p.add_argument(
        "--queue-timeout", type=float, help="let rejected requests wait this long instead of dropping"
    )
    p.add_argument("--debug", action="store_true", help="verify the state after every event (slow)")
    p.add_argument("--out", metavar="DIR", help="write series.csv, summary.csv and series.png there")
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, help="progress bar (default: on a terminal)"
    )
    p.set_defaults(func=cmd_simulate)

    p = sub.add_parser(
        "bench",
        help="heuristics against the proven optimum: gaps in acceptance and hardware",
        description="Solve each instance with the tight GRMU model (lexicographic acceptance, hardware, "
        "migrations), run each heuristic on it, verify every solution, and print per method the mean "
        "acceptance and hardware gaps to the optimum, how often it reached the optimum and the median "
        "runtime. Rows of an unproven optimum compare against its incumbent; see mipopt.compare.",
    )
    p.add_argument("instances", nargs="*", metavar="instance", help="instance files (and/or --generate)")
    p.add_argument("--generate", choices=["ibm"], help="also generated instances: the IBM WPM set-up")
    p.add_argument("--gpus", type=int, nargs="+", metavar="N", help="generated sizes (default 8)")
    p.add_argument("--seeds", type=int, metavar="K", help="generated instances per size (default 1)")
    p.add_argument("--first-seed", type=int, metavar="S", help="generator seeds S .. S+K-1 (default 0)")
    p.add_argument(
        "--methods",
        default="all",
        metavar="LIST",
        help="comma-separated: any --method of `mipopt solve` (first-fit, ibm-initial, ff, mfi, adapter(ff), "
        "...), online:NAME for a policy named like a batch heuristic, exact-initial (running workloads "
        "fixed), or all (default: every heuristic placing new workloads)",
    )
    p.add_argument("--solver", default="highs", choices=["highs", "cpsat"], help="backend (default: highs)")
    p.add_argument(
        "--time-limit", type=float, default=60.0, metavar="S", help="per exact solve (default: 60)"
    )
    p.add_argument("--threads", type=int, metavar="N")
    p.add_argument("--seed", type=int, default=0, help="solver and policy seed (default 0)")
    p.add_argument("--out", metavar="FILE", help="write one row per (instance, method) as CSV (atomically)")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    p.add_argument(
        "--progress", action=argparse.BooleanOptionalAction, help="progress bar (default: on a terminal)"
    )
    p.set_defaults(func=cmd_bench)

    return parser


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()
    args = build_parser().parse_args(argv)
    args.started = started
    code = _run(args)
    from mipopt.solvers.stop import background_solves

    if background_solves():  # a stopped solver still unwinding: the answer is out, do not wait
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except BadInput as err:
        print(f"mipopt: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:  # `mipopt info | head`: the reader left, nothing is wrong
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except OSError as err:  # unwritable --out or --png
        target = err.filename or ""
        print(f"mipopt: error: cannot write {target}: {err.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
