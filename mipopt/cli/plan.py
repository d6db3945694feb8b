"""``mipopt plan``: ordered rounds of moves from an instance's current placement to a target."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mipopt.cli.common import (
    EXIT_OK,
    BadInput,
    budget_arguments,
    flagged,
    instance_argument,
    positive_seconds,
    print_json,
    print_written,
    read_instance,
    read_solution,
)
from mipopt.cli.outputs import Outputs
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Solution
from mipopt.io import write_json, write_text

if TYPE_CHECKING:
    from mipopt.migrate import Plan

SEMANTICS_METAVAR = "create-first|destroy-first"
DEFAULT_SEMANTICS = "create-first"


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "plan",
        help="ordered rounds of moves from an instance's current placement to a target solution",
        description="Plan the migration from INSTANCE's current placement to TARGET (a solution of "
        "INSTANCE): rounds of drains, moves and creates in which every instant obeys every rule; "
        "cycles of waits are broken by parking in free space, or by draining (named) where there is "
        "none. See docs/formats.md, Plans.",
    )
    instance_argument(p, " with running workloads")
    p.add_argument("target", help="a solution of the instance (mipopt solve --out)")
    p.add_argument(
        "--semantics",
        default=DEFAULT_SEMANTICS,
        metavar=SEMANTICS_METAVAR,
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
    p.add_argument(
        "--time-limit", type=positive_seconds, metavar="S", help="of the exact planner (default 30)"
    )
    budget_arguments(p, "the plan's restarts are its moves, a park restarting its workload once more")
    p.add_argument("--out", metavar="FILE", help="write the plan JSON (atomically)")
    p.add_argument("--json", action="store_true", help="print the plan JSON (with --ops: the operations)")
    p.add_argument("--ops", action="store_true", help="print the GPU-instance operations of each round")
    p.add_argument(
        "--emit",
        metavar="nvidia-smi|nvml-python|mig-parted|json",
        help="print what an operator runs: a bash script of nvidia-smi commands, a Python script "
        "over NVML (pynvml), the final state as a mig-parted config, or the plan JSON with each "
        "operation's host, GPU index and UUID (see docs/interop.md)",
    )
    p.add_argument("--emit-file", metavar="FILE", help="write the --emit form to FILE (atomically) instead")
    p.add_argument("--png", metavar="FILE", help="draw the GPUs before and after each round (atomically)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.interop.emit import EMIT_FORMS, MIG_PARTED_WARNING, emit, plan_operations
    from mipopt.render.plan import format_operations, plan_png, plan_text

    check_plan_options(args.semantics, args.method)
    if args.emit is not None and args.emit not in EMIT_FORMS:
        raise BadInput(f"--emit: must be one of {', '.join(EMIT_FORMS)}, got {args.emit!r}")
    if args.emit_file and args.emit is None:
        raise BadInput("--emit-file: give --emit FORM too")
    outputs = Outputs([args.instance, args.target])
    for flag, path in (("--out", args.out), ("--png", args.png), ("--emit-file", args.emit_file)):
        outputs.file(flag, path)
    inst = read_instance(args.instance)
    target = read_solution(args.target)
    plan = plan_to(
        inst,
        target,
        args.target,
        args.semantics,
        args.method,
        args.time_limit,
        max_restarts=args.max_restarts,
        max_moved_gb=args.max_moved_gb,
    )
    text = emit(inst, plan, args.emit) if args.emit is not None else ""
    with outputs.writing() as staged:
        if args.out:
            write_json(staged.path(args.out), plan.to_dict())
        if args.png:
            plan_png(inst, plan, staged.path(args.png), title=f"{inst.name}: to {target.method}")
        if args.emit_file:
            script = args.emit in ("nvidia-smi", "nvml-python")
            write_text(staged.path(args.emit_file), text, executable=script)
    if args.emit is not None:
        if args.emit_file:
            print(f"wrote {args.emit_file}")
        else:
            print(text, end="")
        if args.emit == "mig-parted":
            print(f"mipopt: warning: {MIG_PARTED_WARNING}", file=sys.stderr)
    elif args.ops:
        ops = plan_operations(inst, plan)
        if args.json:
            print_json([o.to_dict() for o in ops])
        else:
            print(format_operations(ops) or "nothing to do: the current placement is the target")
    elif args.json:
        print_json(plan.to_dict())
    else:
        print(plan_text(inst, plan))
    if not args.json and args.emit is None:
        print_written(args.out, args.png)
    return EXIT_OK


def check_plan_options(semantics: str, method: str) -> None:
    """Refuse an unknown --semantics or --method before any file is read."""
    from mipopt.migrate import METHODS, SEMANTICS

    if semantics not in SEMANTICS:
        raise BadInput(f"--semantics: must be one of {', '.join(SEMANTICS)}, got {semantics!r}")
    if method not in METHODS:
        raise BadInput(f"--method: must be one of {', '.join(METHODS)}, got {method!r}")


def plan_to(
    inst: Instance,
    target: Solution,
    target_name: str,
    semantics: str,
    method: str,
    time_limit: float | None,
    *,
    max_restarts: int | None = None,
    max_moved_gb: float | None = None,
) -> Plan:
    """Plan to ``target`` within the budget; a target that breaks a rule is reported naming
    ``target_name``, a budget no plan fits naming its flag."""
    from mipopt.migrate import plan_migration

    try:
        return plan_migration(
            inst,
            target,
            semantics=semantics,  # type: ignore[arg-type]  # checked by check_plan_options
            method=method,  # type: ignore[arg-type]
            time_limit_s=30.0 if time_limit is None else time_limit,
            max_restarts=max_restarts,
            max_moved_gb=max_moved_gb,
        )
    except InstanceError as err:
        raise BadInput(f"{target_name}: {err.rule}" if err.path == "target" else flagged(err)) from None
