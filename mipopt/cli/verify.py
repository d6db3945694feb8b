"""``mipopt verify``: check a solution against its instance, its placement and every claim it makes
(status, bound and gap, stages, rejection reasons, objectives and metrics); exit 1 with one line
per broken rule or claim, 2 when a file cannot be read."""

from __future__ import annotations

import argparse

from mipopt.cli.common import (
    EXIT_OK,
    EXIT_VIOLATION,
    instance_argument,
    print_json,
    read_instance,
    read_solution,
)


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("verify", help="check a solution's placement and every claim it makes")
    instance_argument(p)
    p.add_argument("solution", help="a solution of the instance (mipopt solve --out)")
    p.add_argument(
        "--json",
        action="store_true",
        help="print the report (metrics, violations, broken claims with their rules) as JSON",
    )
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.verifier import verify

    inst = read_instance(args.instance)
    sol = read_solution(args.solution)
    report = verify(inst, sol)
    if args.json:
        print_json(report.to_dict())
    elif report.valid:
        o = report.objectives
        print(f"valid: acceptance {o.acceptance:g}, hardware {o.hardware:g}, migrations {o.migrations:g}")
    else:
        for line in report.violations:
            print(line)
    return EXIT_OK if report.valid else EXIT_VIOLATION
