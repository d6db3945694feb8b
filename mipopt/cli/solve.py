"""``mipopt solve``: place the new workloads of an instance, exactly or by a heuristic."""

from __future__ import annotations

import argparse
import signal
import sys
from typing import TYPE_CHECKING

from mipopt._signals import STOP_SIGNALS
from mipopt.cli.common import (
    EXIT_OK,
    FLAGS,
    BadInput,
    budget_arguments,
    flagged,
    print_json,
    print_written,
    read_instance,
    relative_gap,
    solver_arguments,
    wants_progress,
)
from mipopt.cli.outputs import Outputs
from mipopt.cli.plan import DEFAULT_SEMANTICS, SEMANTICS_METAVAR, check_plan_options, plan_to
from mipopt.cli.signals import EXIT_SIGNAL_BASE, signal_word
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Solution, Termination, solution_to_dict
from mipopt.instance.summary import value_text
from mipopt.io import write_json

if TYPE_CHECKING:
    from mipopt.exact.driver import StageEvent
    from mipopt.solvers.stop import StopFlag

#: Time kept back per workload to print and write a solution (0.6 s at 50,000 workloads).
OUTPUT_S_PER_WORKLOAD = 2e-5


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("solve", help="place the new workloads of an instance")
    p.add_argument("instance", nargs="?", help="an instance JSON file (see docs/formats.md)")
    p.add_argument(
        "--method",
        default="exact",
        help="a name of --list-methods (default: exact, a MIP model proven optimal): an IBM rule "
        "(ibm-initial, ...) or any online policy placing the new workloads in file order (ff, mfi, "
        "grmu:heavy=0.3, adapter(ff), ...)",
    )
    p.add_argument(
        "--list-methods",
        action="store_true",
        help="print every method, its kind, options and summary, and exit",
    )
    solver_arguments(
        p, time_limit="seconds for the whole command: reading, building, every stage, writing", wpm=True
    )
    p.set_defaults(model=None, solver=None, seed=None)  # unset: the method's own default, and not refused
    p.add_argument(
        "--use-case",
        choices=["initial", "compaction", "reconfiguration", "joint"],
        help="the WPM paper's questions, for wpm and grmu: initial (running workloads stay), compaction "
        "(running only, onto used GPUs), reconfiguration (running only, anywhere), joint (default: all may move)",
    )
    order = p.add_mutually_exclusive_group()
    order.add_argument(
        "--priority",
        choices=["hardware", "disruption", "paper"],
        help="a named objective: hardware (the default: lex:acceptance,hardware,migrations,restarts), "
        "disruption (lex:acceptance,restarts,hardware: running workloads stay unless a new one needs "
        "the room), paper (GRMU's Eqs. 3-5 alone)",
    )
    order.add_argument(
        "--objective",
        help="lex:NAME[@TOL],... or weighted:W1,W2,W3[,W4] over acceptance, hardware, migrations, "
        "restarts (default: lex:acceptance,hardware,migrations,restarts)",
    )
    budget_arguments(p, "every method that may move running workloads holds it")
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
    from mipopt import registry

    if args.list_methods:
        print(registry.methods_text())
        return EXIT_OK
    if args.instance is None:
        raise BadInput("solve: an instance file is needed (or --list-methods)")
    try:
        spec = registry.get_method(args.method, "--method")
    except InstanceError as err:
        raise BadInput(flagged(err)) from None
    given = {k: v for k, v in _options(args).items() if v is not None}
    refused = spec.refused({k: v for k, v in given.items() if k not in ("max_restarts", "max_moved_gb")})
    if refused:
        takes = (
            ", ".join(FLAGS[k] for k in spec.takes(given) if k in FLAGS and k != "warm_start") or "no options"
        )
        flag = "--priority" if refused[0] == "objective" and args.priority else FLAGS[refused[0]]
        what = f"{args.method} with --model wpm" if given.get("model") == "wpm" else args.method
        raise BadInput(f"{flag}: method {what} does not take {flag} (it takes: {takes})")
    if args.plan or args.semantics != DEFAULT_SEMANTICS:  # the check loads the planners (networkx)
        check_plan_options(args.semantics, "graph")
    outputs = Outputs([args.instance])
    outputs.file("--out", args.out)
    outputs.file("--plan", args.plan)
    inst = read_instance(args.instance)
    if spec.kind != "exact":
        return _finish(inst, _call(inst, spec.name, given), args, outputs, None)
    from mipopt.solvers.stop import catch_sigint

    # Ctrl-C and SIGTERM stop the solve, which keeps its best placement; until it is written and
    # printed, so that a stop while it is written still writes it
    with catch_sigint(signals=STOP_SIGNALS) as stop:
        return _finish(inst, _solve(inst, spec.name, given, args, stop), args, outputs, stop)


def _finish(
    inst: Instance, sol: Solution, args: argparse.Namespace, outputs: Outputs, stop: StopFlag | None
) -> int:
    """Plan (--plan), write the files, print the summary; the exit code (a stop's: 130, 143)."""
    plan = None
    if args.plan:  # parks are restarts too: the plan holds the budget the answer holds
        budget = {"max_restarts": args.max_restarts, "max_moved_gb": args.max_moved_gb}
        plan = plan_to(inst, sol, "--plan", args.semantics, "graph", None, **budget)
    with outputs.writing() as staged:
        if args.out:
            write_json(staged.path(args.out), solution_to_dict(sol))
        if plan is not None:
            write_json(staged.path(args.plan), plan.to_dict())
    if args.json:
        print_json(solution_to_dict(sol))
    else:
        print(sol.summary(inst, joint=stop is not None and args.use_case in (None, "joint")))
        if plan is not None:
            from mipopt.render.plan import plan_text

            print(f"\n{plan_text(inst, plan)}")
        print_written(args.out, args.plan)
    signum = stop.signum if stop is not None else None
    if signum is None and sol.termination is not Termination.INTERRUPTED:
        return EXIT_OK
    signum = signum or signal.SIGINT
    word = signal_word(signum)
    print(f"mipopt: {word}: the best placement found is above (status {sol.status.value})", file=sys.stderr)
    return EXIT_SIGNAL_BASE + signum


def _options(args: argparse.Namespace) -> dict[str, object]:
    """The options of :func:`mipopt.solve` the flags set (None: not given)."""
    return {
        "model": args.model,
        "solver": args.solver,
        "objective": args.objective or args.priority,
        "use_case": args.use_case,
        "time_limit_s": args.time_limit,
        "threads": args.threads,
        "seed": args.seed,
        "gap": args.gap,
        "max_restarts": args.max_restarts,
        "max_moved_gb": args.max_moved_gb,
    }


def _call(inst: Instance, method: str, options: dict[str, object]) -> Solution:
    from mipopt import registry

    try:
        return registry.solve(inst, method, **options)  # type: ignore[arg-type]
    except ValueError as err:  # the library names its parameters (InstanceError too); say the flag
        raise BadInput(flagged(err)) from None


def _solve(
    inst: Instance, method: str, options: dict[str, object], args: argparse.Namespace, stop: StopFlag
) -> Solution:
    """An exact solve under one deadline; ``stop`` (Ctrl-C, SIGTERM) ends it with the best placement found."""
    control: dict[str, object] = {}
    # the limit holds for the whole command: reading the instance and writing the answer count too
    if args.time_limit is not None:
        control["deadline"] = args.started + args.time_limit - OUTPUT_S_PER_WORKLOAD * len(inst.workloads)
    if wants_progress(args) and args.model != "wpm":
        control["progress"] = _print_stage
    return _call(inst, method, {**options, **control, "stop": stop})


def _print_stage(event: StageEvent) -> None:
    """One line per stage on stderr: what is being solved, with the incumbent and bound so far."""
    head = f"mipopt: {event.elapsed_s:7.1f} s  {event.stage:<11} {event.model:<10}"
    if not event.done:
        tail = f"started, incumbent {value_text(event.value)}"
    else:
        term = event.termination.value if event.termination is not None else "-"
        tail = f"{term}, value {value_text(event.value)}, bound {value_text(event.bound)}"
    print(f"{head} {tail}", file=sys.stderr, flush=True)
