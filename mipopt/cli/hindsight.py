"""``mipopt hindsight``: the most acceptance any placement reaches on a trace, knowing its future,
and the online policies' competitive ratios against it."""

from __future__ import annotations

import argparse

from mipopt.cli.common import EXIT_OK, BadInput, count, flagged, positive, print_json


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "hindsight", help="the hindsight optimum of a trace and the policies' competitive ratios"
    )
    p.add_argument(
        "--workload",
        required=True,
        metavar="SPEC",
        help="a workload of mipopt simulate, small: fbk:gpus=8,lifetimes=saturate,demand=300 or "
        "poisson:gpus=8,load=1.0,horizon=60",
    )
    p.add_argument("--seed", type=int, default=0, help="seed of the trace and the solver (default 0)")
    p.add_argument(
        "--migrations",
        choices=["free", "forbidden", "both"],
        default="free",
        help="free: alive instances re-arranged at every event; forbidden: an instance keeps its GPU "
        "and start (default free)",
    )
    p.add_argument(
        "--policy",
        action="append",
        default=[],
        metavar="SPEC",
        help="repeatable: its ratio; any policy of `mipopt simulate --help` (mfi, grmu:heavy=0.5, binpack, ...)",
    )
    p.add_argument(
        "--time-limit",
        type=positive,
        default=60.0,
        help="seconds per optimum, all included: building, warm starts, solving, decoding (default 60); a "
        "trace whose model alone takes longer to build is refused",
    )
    p.add_argument("--threads", type=count, metavar="N", help="solver threads (default: the solver's choice)")
    p.add_argument("--solver", choices=["highs", "cpsat"], default="highs", help="default highs")
    p.add_argument("--json", action="store_true", help="print the results as JSON")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.exact.hindsight import hindsight_optimum
    from mipopt.heuristics.policies import make_policy
    from mipopt.simulation import simulate
    from mipopt.simulation.runs import make_trace

    variants = ["free", "forbidden"] if args.migrations == "both" else [args.migrations]
    try:
        trace = make_trace(args.workload, args.seed)
        policies = [make_policy(p, "policy") for p in args.policy]
        results = [
            hindsight_optimum(
                trace,
                migrations=v,  # type: ignore[arg-type]
                time_limit_s=args.time_limit,
                threads=args.threads,
                solver=args.solver,
                seed=max(args.seed, 0),
            )
            for v in variants
        ]
    except ValueError as err:  # InstanceError too
        raise BadInput(flagged(err)) from None
    ratios = []
    for name, policy in zip(args.policy, policies, strict=True):
        acceptance = float(simulate(trace, policy, seed=args.seed).summary["acceptance"])
        ratios.append((name, acceptance, [acceptance / r.bound if r.bound else None for r in results]))
    if args.json:
        print_json(
            {
                "workload": args.workload,
                "seed": args.seed,
                "requests": len(trace.requests),
                "optima": [r.to_dict() | {"epochs": len(r.epochs)} for r in results],
                "policies": [
                    {
                        "policy": n,
                        "acceptance": a,
                        **{f"ratio_{v}": x for v, x in zip(variants, xs, strict=True)},
                    }
                    for n, a, xs in ratios
                ],
            }
        )
        return EXIT_OK
    print(
        f"workload {args.workload}, seed {args.seed}: {len(trace.requests)} requests, {len(trace.cluster.gpus)} GPUs"
    )
    for v, r in zip(variants, results, strict=True):
        gap = "" if r.proven or r.gap is None else f", gap {r.gap:.1%}"
        print(
            f"  migrations {v}: {r.status.value} {r.value:g} (bound {r.bound:g}{gap}), "
            f"{r.stats['epochs']} epochs, {r.runtime_s:.1f} s"
            if r.value is not None and r.bound is not None
            else f"  migrations {v}: no placement found ({r.message})"
        )
    if ratios:
        print(f"\n{'policy':<16} {'acceptance':>10} " + " ".join(f"{'ratio ' + v:>15}" for v in variants))
        for name, acceptance, xs in ratios:
            cells = " ".join(f"{'-' if x is None else f'{x:.3f}':>15}" for x in xs)
            print(f"{name:<16} {acceptance:>10g} {cells}")
        if not all(r.proven for r in results):
            print("(an optimum not proven: ratios are over its bound, so at least the value shown)")
    return EXIT_OK
