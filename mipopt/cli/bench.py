"""``mipopt bench``: heuristics against the proven optimum of their own use case, as gaps in
acceptance and hardware; the joint optimum's gain over the initial one, with its migrations."""

from __future__ import annotations

import argparse

from mipopt.cli.common import (
    EXIT_OK,
    BadInput,
    ProgressBar,
    backend_arguments,
    executor_argument,
    flagged,
    gpu_count,
    non_negative,
    print_json,
    progress_argument,
    read_instance,
    run_count,
)
from mipopt.cli.outputs import Outputs
from mipopt.errors import InstanceError
from mipopt.limits import MAX_GPUS, beyond


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "bench",
        help="heuristics against the proven optimum: gaps in acceptance and hardware",
        description="Solve each instance twice with the tight GRMU model (lexicographic acceptance, "
        "hardware, migrations): the initial optimum (exact-initial: running workloads stay where they run) "
        "and the joint optimum (exact: running workloads may move). Run each method on it, verify every "
        "solution, and print per method which optimum its gaps use (ref.: initial for a method that cannot "
        "move running workloads, every online policy in batch but grmu and IBM's initial rules; joint for "
        "one that may: grmu, ibm-joint, ibm-compaction, ibm-reconfiguration), its mean acceptance, "
        "hardware, migrations (GRMU Eq. 5) and moves (running workloads moved, inside a GPU included), the "
        "mean acceptance and hardware gaps to that optimum, how often it reached it and the median runtime; "
        "then a line for what migrations buy, the joint optimum over the initial one. Gaps against an "
        "unproven optimum compare against its incumbent (reference=incumbent). --json and --out carry per "
        "row the columns of mipopt.compare.GapRow, among them may_move, moves, reference (optimal, "
        "incumbent, none), reference_use_case (initial, joint) and, on the exact row, acceptance_gain, "
        "acceptance_gain_pct, hardware_gain_pct; docs/methods.md lists them.",
    )
    p.add_argument("instances", nargs="*", metavar="instance", help="instance files (and/or --generate)")
    p.add_argument("--generate", choices=["ibm"], help="also generated instances: the IBM WPM set-up")
    p.add_argument("--gpus", type=gpu_count, nargs="+", metavar="N", help="generated sizes (default 8)")
    p.add_argument("--seeds", type=run_count, metavar="K", help="generated instances per size (default 1)")
    p.add_argument(
        "--first-seed", type=non_negative, metavar="S", help="generator seeds S .. S+K-1 (default 0)"
    )
    p.add_argument(
        "--methods",
        default="all",
        metavar="LIST",
        help="comma-separated names of `mipopt solve --list-methods` (ibm-initial, ff, mfi, grmu:heavy=0.3, "
        "adapter(ff), ...), or all (default: every heuristic placing new workloads); the references "
        "exact (joint) and exact-initial always run first",
    )
    backend_arguments(
        p, time_limit="per exact solve, each of the two optima (default: 60)", default_time_limit=60.0
    )
    p.add_argument("--out", metavar="FILE", help="write one row per (instance, method) as CSV (atomically)")
    p.add_argument("--json", action="store_true", help="print rows and summary as JSON")
    executor_argument(p, "instances (each with its two optima and every method)")
    progress_argument(p, "progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.compare import compare_methods, parse_methods, summarize, summary_table, write_csv

    if not args.instances and args.generate is None:
        raise BadInput("instance: give instance files or --generate ibm")
    if args.generate is None:
        for option, given in (
            ("--gpus", args.gpus),
            ("--seeds", args.seeds),
            ("--first-seed", args.first_seed),
        ):
            if given is not None:
                raise BadInput(f"{option}: only with --generate ibm")
    try:
        methods = parse_methods(args.methods)
    except InstanceError as err:
        raise BadInput(flagged(err)) from None
    outputs = Outputs(args.instances)
    outputs.file("--out", args.out)
    instances = [read_instance(path) for path in args.instances]
    if args.generate is not None:
        from mipopt.workloads import ibm_instance

        first_seed = args.first_seed or 0
        seeds = range(first_seed, first_seed + (args.seeds or 1))
        sizes = args.gpus or [8]
        # every generated instance is held at once: their GPUs in all are bounded as one instance's
        if sum(sizes) * len(seeds) > MAX_GPUS:
            raise BadInput(
                f"--gpus, --seeds: the generated instances hold {beyond(sum(sizes) * len(seeds), 'GPUs', MAX_GPUS)}"
            )
        instances += [ibm_instance(n, seed=s) for n in sizes for s in seeds]
    with ProgressBar.for_args(args) as bar:

        def progress(done: int, total: int, message: str) -> None:
            bar.draw(done / total, message[:40].ljust(40))

        try:
            rows = compare_methods(
                instances,
                methods,
                solver=args.solver,
                time_limit_s=args.time_limit,
                threads=args.threads,
                seed=args.seed,
                progress=progress,
                executor=args.executor,
            )
        except InstanceError as err:
            raise BadInput(flagged(err)) from None
    if args.out:
        with outputs.writing() as staged:
            write_csv(staged.path(args.out), rows)
    summaries = summarize(rows)
    if args.json:
        print_json({"rows": [r.to_dict() for r in rows], "summary": [s.to_dict() for s in summaries]})
    else:
        print(summary_table(summaries))
        if args.out:
            print(f"\nwrote {args.out}")
    return EXIT_OK
