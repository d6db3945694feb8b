"""``mipopt generate``: write a seeded generated instance (the IBM WPM set-up, the dense class)."""

from __future__ import annotations

import argparse

from mipopt.catalog import get_model
from mipopt.cli.common import EXIT_OK, BadInput, count, fraction, gpu_count, non_negative, print_json
from mipopt.cli.outputs import Outputs
from mipopt.io import write_json


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser("generate", help="write a seeded generated instance")
    kinds = p.add_subparsers(dest="workload", required=True, metavar="WORKLOAD")
    g = kinds.add_parser(
        "ibm",
        help="IBM WPM section 5.1: hosts of 8 GPUs, about 60%% of GPUs used, new work worth 60%% of compute",
        description="IBM WPM test case (Turkkan et al., section 5.1); see mipopt.workloads.ibm_instance.",
    )
    g.add_argument("--gpus", type=gpu_count, required=True, metavar="N", help="GPUs in the cluster")
    g.add_argument("--seed", type=non_negative, default=0, help="generator seed (default 0)")
    g.add_argument(
        "--used",
        type=fraction,
        default=0.6,
        metavar="FRACTION",
        help="share of GPUs with running workloads (default 0.6)",
    )
    g.add_argument(
        "--load",
        type=fraction,
        default=0.6,
        metavar="FRACTION",
        help="compute of the new workloads as a share of the cluster's compute slices (default 0.6)",
    )
    g.add_argument(
        "--load-basis",
        choices=["cluster", "free"],
        default="cluster",
        help="what --load is a share of: all compute slices (default, as the paper) or the free ones",
    )
    g.add_argument(
        "--pinned",
        type=fraction,
        default=0.0,
        metavar="FRACTION",
        help="share of running workloads pinned (default 0)",
    )
    g.add_argument("--model", default="A100-80GB", help="GPU model (default A100-80GB)")
    g.add_argument("--gpus-per-host", type=count, default=8, metavar="N", help="GPUs per host (default 8)")
    g.add_argument("--out", metavar="FILE", help="write the instance JSON (atomically); default: print it")
    g.set_defaults(func=run)
    d = kinds.add_parser(
        "dense",
        help="few hosts of 4-8 GPUs whose cpu and ram bind, some running workloads pinned",
        description="The dense class of the exact model; see mipopt.workloads.dense_instance.",
    )
    d.add_argument("--hosts", type=count, required=True, metavar="N", help="hosts")
    d.add_argument("--gpus-per-host", type=count, default=8, metavar="N", help="GPUs per host (default 8)")
    d.add_argument("--seed", type=non_negative, default=0, help="generator seed (default 0)")
    d.add_argument(
        "--models",
        default="A100-80GB",
        metavar="A[,B]",
        help="one GPU model, or two mixed on every host (default A100-80GB)",
    )
    d.add_argument("--out", metavar="FILE", help="write the instance JSON (atomically); default: print it")
    d.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from mipopt.instance import Instance, instance_to_dict
    from mipopt.workloads import dense_instance, ibm_instance

    outputs = Outputs()
    outputs.file("--out", args.out)
    inst: Instance
    if args.workload == "dense":
        models = [_model("--models", name) for name in args.models.split(",")]
        if len(models) > 2:
            raise BadInput(f"--models: one or two GPU models, got {len(models)}")
        try:
            inst = dense_instance(args.hosts, seed=args.seed, gpus_per_host=args.gpus_per_host, models=models)
        except ValueError as err:  # the size limit, named by its parameters
            raise BadInput(str(err).replace("hosts x gpus_per_host", "--hosts x --gpus-per-host")) from None
    else:
        inst = ibm_instance(
            args.gpus,
            seed=args.seed,
            used_fraction=args.used,
            load=args.load,
            load_basis=args.load_basis,
            model=_model("--model", args.model),
            gpus_per_host=args.gpus_per_host,
            pinned_fraction=args.pinned,
        )
    data = instance_to_dict(inst)
    if args.out is None:
        print_json(data)
        return EXIT_OK
    with outputs.writing() as staged:
        write_json(staged.path(args.out), data)
    used = len({w.placement.gpu for w in inst.running if w.placement})
    print(
        f"wrote {args.out}: {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs ({used} used), "
        f"{len(inst.running)} running and {len(inst.new)} new workloads"
    )
    return EXIT_OK


def _model(flag: str, name: str) -> str:
    try:
        return get_model(name).name
    except KeyError as err:
        raise BadInput(f"{flag}: {err.args[0]}") from None
