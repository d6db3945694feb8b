"""``mipopt partitions``: the free partitions of GPUs with running workloads (WPM Algorithm 1)."""

from __future__ import annotations

import argparse

from mipopt.cli.common import EXIT_OK, instance_argument, print_json, read_instance


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("partitions", help="free partitions of GPUs with running workloads (WPM Alg. 1)")
    instance_argument(p)
    p.add_argument("--merged", action="store_true", help="merge adjacent partitions where Assumption 1 holds")
    p.add_argument("--json", action="store_true", help="machine-readable output")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.exact.preprocess import gpu_partitions

    inst = read_instance(args.instance)
    found = gpu_partitions(inst, merged=args.merged)
    if args.json:
        print_json(
            [
                {
                    "gpu": g.gpu,
                    "model": g.model.name,
                    "partitions": [
                        {
                            "profile" if q.profile is not None else "name": q.name,
                            "start": q.start,
                            "slots": q.slots,
                            "compute": q.compute,
                            "memory_gb": q.memory_gb,
                        }
                        for q in g.partitions
                    ],
                }
                for g in found
            ]
        )
        return EXIT_OK
    if not found:
        print("no GPU has running workloads")
        return EXIT_OK
    rows = [("gpu", "model", "occupied", "free partitions (name@start)")]
    for g in found:
        occupied = "".join("#" if g.fixed.mask >> s & 1 else "." for s in range(g.model.slots))
        parts = ", ".join(f"{q.name}@{q.start}" for q in g.partitions) or "-"
        rows.append((g.gpu, g.model.name, occupied, parts))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    for r in rows:
        print("  ".join(c.ljust(w) for c, w in zip(r[:3], widths, strict=True)) + "  " + r[3])
    return EXIT_OK
