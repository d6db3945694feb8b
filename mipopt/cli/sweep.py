"""``mipopt sweep``: the Pareto front of acceptance, hardware and migrations (epsilon-constraint)."""

from __future__ import annotations

import argparse

from mipopt.cli.common import (
    EXIT_OK,
    BadInput,
    ProgressBar,
    count,
    flagged,
    instance_argument,
    print_json,
    progress_argument,
    read_instance,
    solver_arguments,
)
from mipopt.errors import InstanceError


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "sweep", help="Pareto front of acceptance, hardware and migrations (epsilon-constraint)"
    )
    instance_argument(p)
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
        "--solutions", metavar="DIR", help="write each point's solution JSON to DIR/point-NNN.json"
    )
    p.add_argument("--json", action="store_true", help="print the front as JSON")
    progress_argument(p, "progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from mipopt.exact.sweep import DEFAULT_MAX_POINTS, parse_objectives
    from mipopt.registry import sweep
    from mipopt.solvers import SolverOptions

    if args.out_dir and (args.csv or args.png):
        raise BadInput("--out-dir: give either --out-dir or --csv/--png, not both")
    try:
        objectives = parse_objectives(args.objectives)
    except InstanceError as err:
        raise BadInput(flagged(err)) from None
    inst = read_instance(args.instance)
    csv_path, png_path = args.csv, args.png
    if args.out_dir:
        out = Path(args.out_dir)
        out.mkdir(parents=True, exist_ok=True)
        stem = Path(args.instance).stem
        csv_path, png_path = out / f"{stem}.front.csv", out / f"{stem}.front.png"
    options = SolverOptions(time_limit_s=args.time_limit, threads=args.threads, seed=args.seed)
    with ProgressBar.for_args(args) as bar:
        try:
            front = sweep(
                inst,
                model=args.model,
                solver=args.solver,
                objectives=objectives,
                options=options,
                progress=bar if bar.enabled else None,
                max_points=DEFAULT_MAX_POINTS if args.max_points is None else args.max_points,
            )
        except ValueError as err:  # InstanceError too
            raise BadInput(flagged(err)) from None
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
        print_json(front.to_dict())
    else:
        print(front.table())
        for what in written:
            print(f"wrote {what}")
    return EXIT_OK
