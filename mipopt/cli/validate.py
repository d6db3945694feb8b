"""``mipopt validate``: check an instance file (and say what another mipopt document is)."""

from __future__ import annotations

import argparse

from mipopt.cli.common import EXIT_OK, BadInput, instance_argument, print_json, read_instance
from mipopt.instance.summary import rejections_text
from mipopt.verifier import unplaceable

#: What to run on a mipopt document that is not an instance.
OTHER_DOCUMENTS = {
    "solution": "a solution, not an instance: check it against its instance with "
    "`mipopt verify INSTANCE {path}`",
    "plan": "a migration plan, not an instance: plans are checked when `mipopt plan` writes them",
}


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "validate",
        help="check an instance file, and say which workloads no method can ever place, and why",
    )
    instance_argument(p)
    p.add_argument(
        "--json",
        action="store_true",
        help="print {instance, valid, hosts, gpus, running, new, unplaceable: [{workload, reason, message}]}",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.errors import InstanceError
    from mipopt.instance.parse import document_kind
    from mipopt.io import read_json

    try:
        kind = document_kind(read_json(args.instance))
    except InstanceError:
        kind = None  # not JSON: read_instance says so, naming the position
    if kind in OTHER_DOCUMENTS:
        raise BadInput(f"{args.instance}: {OTHER_DOCUMENTS[kind].format(path=args.instance)}")
    inst = read_instance(args.instance)
    never = unplaceable(inst)  # information: the instance is valid all the same
    if args.json:
        print_json(
            {
                "instance": inst.name,
                "valid": True,
                "hosts": len(inst.hosts),
                "gpus": len(inst.gpus),
                "running": len(inst.running),
                "new": len(inst.new),
                "unplaceable": [r.to_dict() for r in never],
            }
        )
        return EXIT_OK
    print(
        f"{args.instance}: valid instance {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs, "
        f"{len(inst.running)} running and {len(inst.new)} new workloads"
    )
    if never:
        print(rejections_text(never, head="no method can place"))
    return EXIT_OK
