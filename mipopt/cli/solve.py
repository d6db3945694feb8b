"""``mipopt solve``: place the new workloads of an instance, exactly or by a heuristic."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING

from mipopt.cli.common import (
    EXIT_INTERRUPTED,
    EXIT_OK,
    BadInput,
    flagged,
    instance_argument,
    num,
    print_json,
    print_written,
    read_instance,
    relative_gap,
    solver_arguments,
    wants_progress,
)
from mipopt.cli.plan import DEFAULT_SEMANTICS, SEMANTICS_METAVAR, check_plan_options, plan_to
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Solution, Termination, solution_to_dict
from mipopt.io import write_json

if TYPE_CHECKING:
    from mipopt.exact.driver import StageEvent

#: Time kept back per workload to print and write a solution (0.6 s at 50,000 workloads).
OUTPUT_S_PER_WORKLOAD = 2e-5


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("solve", help="place the new workloads of an instance")
    instance_argument(p)
    p.add_argument(
        "--method",
        default="exact",
        help="exact: a MIP model proven optimal (default); first-fit: hosts and GPUs in order, driver default "
        "start; ibm-first-fit, load-balanced: the IBM WPM baselines (GPUs and workloads by id / least utilized "
        "GPU first, arrival order; first free index from 0); ibm-initial, ibm-compaction, ibm-reconfiguration: "
        "the IBM WPM rule-based heuristics (section 4.2); any online policy of `mipopt simulate` "
        "(mfi, ff, grmu, adapter(ff), ...) placing the new workloads in file order",
    )
    solver_arguments(
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
        type=relative_gap,
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
        default=DEFAULT_SEMANTICS,
        metavar=SEMANTICS_METAVAR,
        help="of --plan's moves (default: %(default)s)",
    )
    p.add_argument("--json", action="store_true", help="print the solution JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    if args.plan or args.semantics != DEFAULT_SEMANTICS:  # the check loads the planners (networkx)
        check_plan_options(args.semantics, "graph")
    inst = read_instance(args.instance)
    sol = _solve_exact(inst, args) if args.method == "exact" else _solve_heuristic(inst, args)
    plan = plan_to(inst, sol, "--plan", args.semantics, "graph", None) if args.plan else None
    if args.out:
        write_json(args.out, solution_to_dict(sol))
    if plan is not None:
        write_json(args.plan, plan.to_dict())
    if args.json:
        print_json(solution_to_dict(sol))
    else:
        print(sol.summary(inst, joint=args.method == "exact" and args.use_case in (None, "joint")))
        if plan is not None:
            from mipopt.render.plan import plan_text

            print(f"\n{plan_text(inst, plan)}")
        print_written(args.out, args.plan)
    if sol.termination is Termination.INTERRUPTED:
        print("mipopt: interrupted: the best placement found is above (status feasible)", file=sys.stderr)
        return EXIT_INTERRUPTED
    return EXIT_OK


def _solve_heuristic(inst: Instance, args: argparse.Namespace) -> Solution:
    """A batch heuristic, or an online policy placing the new workloads in file order."""
    from mipopt.heuristics import BATCH

    if args.method in BATCH:
        return BATCH[args.method](inst)
    from mipopt.heuristics.policy import run_batch
    from mipopt.heuristics.registry import make_policy

    try:
        return run_batch(make_policy(args.method, "--method"), inst, seed=args.seed or 0)
    except InstanceError as err:
        raise BadInput(flagged(err)) from None


def _solve_exact(inst: Instance, args: argparse.Namespace) -> Solution:
    """An exact solve under one deadline; Ctrl-C stops it and keeps the best placement found."""
    from mipopt.exact.driver import solve_exact
    from mipopt.registry import default_portfolio
    from mipopt.solvers import SolverOptions
    from mipopt.solvers.stop import catch_sigint

    # the limit holds for the whole command: reading the instance and writing the answer count too
    deadline = None
    if args.time_limit is not None:
        deadline = args.started + args.time_limit - OUTPUT_S_PER_WORKLOAD * len(inst.workloads)
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
                portfolio=default_portfolio(),  # the warm start: the fast heuristics' best placement
                progress=_print_stage if wants_progress(args) else None,
            )
        except ValueError as err:  # the library names its parameters (InstanceError too); say the flag
            raise BadInput(flagged(err)) from None


def _print_stage(event: StageEvent) -> None:
    """One line per stage on stderr: what is being solved, with the incumbent and bound so far."""
    head = f"mipopt: {event.elapsed_s:7.1f} s  {event.stage:<11} {event.model:<10}"
    if not event.done:
        tail = f"started, incumbent {num(event.value)}"
    else:
        term = event.termination.value if event.termination is not None else "-"
        tail = f"{term}, value {num(event.value)}, bound {num(event.bound)}"
    print(f"{head} {tail}", file=sys.stderr, flush=True)
