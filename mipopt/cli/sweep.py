"""``mipopt sweep``: the Pareto front of acceptance, hardware and migrations (epsilon-constraint)."""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from mipopt.cli.common import (
    EXIT_OK,
    BadInput,
    ProgressBar,
    count,
    executor_argument,
    flagged,
    print_json,
    progress_argument,
    read_instance,
    solver_arguments,
)
from mipopt.cli.outputs import Outputs
from mipopt.errors import InstanceError

#: The names of --solutions' files: point-001.json, ...
SOLUTION_PREFIX = "point-"

if TYPE_CHECKING:
    from mipopt.exact.sweep import Front
    from mipopt.instance import Instance
    from mipopt.solvers import SolverOptions


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep", help="Pareto front of acceptance, hardware and migrations (epsilon-constraint)"
    )
    p.add_argument(
        "instances",
        nargs="+",
        metavar="instance",
        help="instance JSON files (see docs/formats.md); several need --out-dir and are swept as jobs of "
        "--executor",
    )
    solver_arguments(p, time_limit="seconds per point (over its stages)")
    p.add_argument(
        "--objectives",
        default="acceptance,hardware,migrations",
        help="2 or 3 objectives, the primary first (default: %(default)s)",
    )
    p.add_argument(
        "--max-points", type=count, metavar="N", help="stop after N distinct points (default: 100)"
    )
    p.add_argument("--out-dir", metavar="DIR", help="write DIR/NAME.front.csv and DIR/NAME.front.png")
    p.add_argument("--csv", metavar="FILE", help="write the front as CSV (atomically)")
    p.add_argument("--png", metavar="FILE", help="draw acceptance against hardware (atomically)")
    p.add_argument(
        "--solutions",
        metavar="DIR",
        help="write each point's solution JSON to DIR/point-NNN.json (an older front's point-*.json there go)",
    )
    p.add_argument("--json", action="store_true", help="print the front as JSON (several: a list)")
    executor_argument(p, "instances' sweeps")
    progress_argument(p, "progress bar")
    p.set_defaults(func=run)


def front_of(
    inst: Instance,
    model: str,
    solver: str,
    objectives: tuple[str, ...],
    options: SolverOptions,
    max_points: int,
) -> Front:
    """One job of ``mipopt sweep``: the front of one instance (:func:`mipopt.sweep`)."""
    from mipopt.registry import sweep

    return sweep(
        inst, model=model, solver=solver, objectives=objectives, options=options, max_points=max_points
    )


def _save_solutions(front: Front, staging: Path, directory: str) -> Front:
    """Write each point's solution into ``staging``; the front names them in ``directory``."""
    from dataclasses import replace

    saved = front.save_solutions(staging, prefix=SOLUTION_PREFIX)
    points = [
        replace(p, solution_file=str(Path(directory) / Path(p.solution_file or "").name))
        for p in saved.points
    ]
    return replace(saved, points=tuple(points))


def run(args: argparse.Namespace) -> int:
    from mipopt.exact.sweep import DEFAULT_MAX_POINTS, parse_objectives
    from mipopt.executors import run_jobs, runs_here
    from mipopt.registry import sweep
    from mipopt.solvers import SolverOptions

    if args.out_dir and (args.csv or args.png):
        raise BadInput("--out-dir: give either --out-dir or --csv/--png, not both")
    if len(args.instances) > 1:
        if not args.out_dir:
            raise BadInput("--out-dir: needed with several instances (each front goes to DIR/NAME.front.csv)")
        if args.solutions:
            raise BadInput("--solutions: only with one instance")
        stems = [Path(p).stem for p in args.instances]
        twice = sorted({s for s in stems if stems.count(s) > 1})
        if twice:
            raise BadInput(
                f"instance: two files named {twice[0]}.json would write the same front; rename one"
            )
    try:
        objectives = parse_objectives(args.objectives)
    except InstanceError as err:
        raise BadInput(flagged(err)) from None
    outputs = Outputs(args.instances)
    stems = [Path(p).stem for p in args.instances]
    outputs.directory(
        "--out-dir", args.out_dir, [f"{s}.front.{kind}" for s in stems for kind in ("csv", "png")]
    )
    outputs.file("--csv", args.csv)
    outputs.file("--png", args.png)
    outputs.directory("--solutions", args.solutions, stale=f"{SOLUTION_PREFIX}*.json")
    insts = [read_instance(path) for path in args.instances]
    options = SolverOptions(time_limit_s=args.time_limit, threads=args.threads, seed=args.seed)
    max_points = DEFAULT_MAX_POINTS if args.max_points is None else args.max_points
    with ProgressBar.for_args(args) as bar:
        try:
            if runs_here(args.executor, len(insts)):
                fronts = [
                    sweep(
                        inst,
                        model=args.model,
                        solver=args.solver,
                        objectives=objectives,
                        options=options,
                        progress=bar if bar.enabled else None,
                        max_points=max_points,
                    )
                    for inst in insts
                ]
            else:
                finished = 0

                def ended(i: int, front: Front) -> None:
                    nonlocal finished
                    finished += 1
                    bar.draw(finished / len(insts), f"{front.instance}: {len(front.points)} points")

                jobs = [(inst, args.model, args.solver, objectives, options, max_points) for inst in insts]
                fronts = run_jobs(front_of, jobs, args.executor, ended)
        except ValueError as err:  # InstanceError too
            raise BadInput(flagged(err)) from None
    results = []
    with outputs.writing() as staged:
        for path, front in zip(args.instances, fronts, strict=True):
            csv_path, png_path = args.csv, args.png
            if args.out_dir:
                csv_path, png_path = (
                    Path(args.out_dir) / f"{Path(path).stem}.front.{k}" for k in ("csv", "png")
                )
            written = []
            if args.solutions:
                front = _save_solutions(front, staged.directory(args.solutions), args.solutions)
                written.append(f"{len(front.points)} solutions in {args.solutions}")
            if csv_path:
                front.to_csv(staged.path(csv_path))
                written.append(str(csv_path))
            if png_path:
                front.plot(staged.path(png_path))
                written.append(str(png_path))
            results.append((front, written))
    if args.json:
        dicts = [front.to_dict() for front, _ in results]
        print_json(dicts[0] if len(dicts) == 1 else dicts)
    else:
        for k, (front, written) in enumerate(results):
            if k:
                print()
            print(front.table())
            for what in written:
                print(f"wrote {what}")
    return EXIT_OK
