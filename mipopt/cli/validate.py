"""``mipopt validate``: check an instance file."""

from __future__ import annotations

import argparse

from mipopt.cli.common import EXIT_OK, instance_argument, read_instance


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("validate", help="check an instance file")
    instance_argument(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    inst = read_instance(args.instance)
    print(
        f"{args.instance}: valid instance {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs, "
        f"{len(inst.running)} running and {len(inst.new)} new workloads"
    )
    return EXIT_OK
