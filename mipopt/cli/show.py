"""``mipopt show``: draw the GPUs of an instance, or of a solution of it, as text or a picture,
with what the drawing does not show (GPUs of unknown layout, idle GPU instances, notes)."""

from __future__ import annotations

import argparse

from mipopt.cli.common import EXIT_OK, BadInput, instance_argument, read_instance, read_solution
from mipopt.cli.outputs import Outputs


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("show", help="draw the GPUs of an instance or a solution")
    instance_argument(p)
    p.add_argument("solution", nargs="?", help="a solution of the instance (default: its current placement)")
    p.add_argument("--png", metavar="FILE", help="also write a picture")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.instance.summary import state_text
    from mipopt.instance.view import gpus_text
    from mipopt.render import placement as render

    outputs = Outputs([args.instance, args.solution])
    outputs.file("--png", args.png)
    inst = read_instance(args.instance)
    if args.solution:
        sol = read_solution(args.solution)
        placed = sol.placed()
        unknown = [w for w, (g, _) in placed.items() if not inst.has_workload(w) or not inst.has_gpu(g)]
        if unknown:
            raise BadInput(
                f"{args.solution}: placements name {unknown[0]!r}, unknown to {args.instance}; "
                "run `mipopt verify` for details"
            )
        title = f"{inst.name}: {sol.method}"
        profiles = sol.profiles()
    else:
        placed = inst.current_placement()
        title = f"{inst.name}: current placement"
        profiles = {}
    try:
        print(gpus_text(inst, placed, profiles))
    except KeyError as err:
        raise BadInput(f"{args.solution}: {err.args[0]}; run `mipopt verify` for details") from None
    if state := state_text(inst):
        print(state)
    if args.png:
        with outputs.writing() as staged:
            render.png(inst, placed, staged.path(args.png), title, profiles)
        print(f"wrote {args.png}")
    return EXIT_OK
