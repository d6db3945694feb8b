"""``mipopt import``: an instance from what a real cluster prints (nvidia-smi, Kubernetes objects)."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from mipopt._fields import name_problem
from mipopt.cli.common import EXIT_OK, BadInput, print_json, read_instance
from mipopt.cli.outputs import Outputs
from mipopt.errors import InstanceError
from mipopt.instance import Instance
from mipopt.io import write_json


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "import",
        help="build an instance from nvidia-smi outputs or Kubernetes objects of a real cluster",
        description="Build an instance from what a real cluster prints. See docs/interop.md.",
    )
    kinds = p.add_subparsers(dest="source", required=True, metavar="SOURCE")

    smi = kinds.add_parser(
        "nvidia-smi",
        help="outputs of nvidia-smi (-L, -q, -q -x, plain, mig -lgip/-lgipp/-lgi/-lci) per host",
        description="Read, per host, what nvidia-smi printed: GPUs and their models from -L, -q, "
        "-q -x or plain nvidia-smi; running GPU instances (profile id, start, GPU-instance id) from "
        "`nvidia-smi mig -lgi`; a model not in the catalog from `mig -lgip` and `-lgipp`. The form "
        "of each file is told by its text. Starts are never guessed.",
        epilog="examples:\n"
        "  mipopt import nvidia-smi --host node1 node1/L.txt node1/lgi.txt --out cluster.json\n"
        "  mipopt import nvidia-smi node1/ node2/ --cpu 64 --ram-gb 512 --out cluster.json\n"
        "  mipopt import nvidia-smi node1/ --merge cluster.json --out cluster2.json",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    smi.add_argument(
        "dirs", nargs="*", metavar="DIR", help="a directory per host, named after it, holding its outputs"
    )
    smi.add_argument(
        "--host",
        nargs="+",
        action="append",
        default=[],
        metavar=("NAME", "FILE"),
        help="a host and its files (a directory stands for its files); repeat for several hosts",
    )
    smi.add_argument(
        "--gpu-model", metavar="MODEL", help="the model of GPUs no file names (a lone -lgi output)"
    )
    _common(smi)
    smi.set_defaults(func=run_nvidia_smi)

    k8s = kinds.add_parser(
        "kubernetes",
        help="`kubectl get nodes -o json` and `kubectl get pods -A -o json`",
        description="Nodes with NVIDIA's GPU labels become hosts and GPUs (cpu and memory from "
        "allocatable, less what running pods request); pending pods requesting nvidia.com/mig-* "
        "become new workloads. Running MIG pods are listed, not invented: Kubernetes objects do not "
        "say which GPU and start a device was given (import the node's `nvidia-smi mig -lgi` for that).",
    )
    k8s.add_argument("--nodes", required=True, metavar="FILE", help="kubectl get nodes -o json")
    k8s.add_argument("--pods", metavar="FILE", help="kubectl get pods -A -o json")
    _common(k8s)
    k8s.set_defaults(func=run_kubernetes)


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--cpu", type=float, metavar="N", help="each host's cpu capacity (default: unlimited)")
    p.add_argument("--ram-gb", type=float, metavar="N", help="each host's ram capacity in GB")
    p.add_argument("--name", default="imported", help="the instance's name (default: imported)")
    p.add_argument(
        "--merge",
        metavar="INSTANCE",
        help="lay the import over this instance: its other hosts and new requests are kept",
    )
    p.add_argument("--out", metavar="FILE", help="write the instance JSON (atomically)")
    p.add_argument("--json", action="store_true", help="print the instance JSON")


#: The parameters of the importers and the flags that set them.
_FLAGS = {"gpu_model": "--gpu-model", "name": "--name"}


def _flagged(err: InstanceError) -> str:
    """The library's error, naming the flag where it names a parameter."""
    if err.path in _FLAGS:
        return f"{_FLAGS[err.path]}: {err.rule}"
    return str(err).replace("give gpu_model", "give --gpu-model")


def _hosts(args: argparse.Namespace) -> dict[str, list[Path]]:
    hosts: dict[str, list[Path]] = {}
    for entry in args.host:
        name, *files = entry
        if problem := name_problem(name):
            raise BadInput(f"--host: a host name {problem}")
        if not files:
            raise BadInput(f"--host: give a name and at least one file, got only {name!r}")
        if name in hosts:
            raise BadInput(f"--host: host {name!r} given twice")
        hosts[name] = [Path(f) for f in files]
    for d in map(Path, args.dirs):
        if not d.is_dir():
            raise BadInput(f"{d}: not a directory (files go after --host NAME)")
        name = d.resolve().name
        if problem := name_problem(name):
            path = str(d) if str(d).isprintable() else repr(str(d))
            raise BadInput(f"{path}: the directory's name is its host's, and a host name {problem}")
        if name in hosts:
            raise BadInput(f"{d}: host {name!r} given twice")
        hosts[name] = [d]
    if not hosts:
        raise BadInput("give a directory per host or --host NAME FILE...")
    return hosts


def run_nvidia_smi(args: argparse.Namespace) -> int:
    from mipopt.interop import instance_from_nvidia_smi

    hosts = _hosts(args)
    outputs = Outputs([f for files in hosts.values() for f in files] + [args.merge])
    outputs.file("--out", args.out)
    base = read_instance(args.merge) if args.merge else None
    try:
        inst = instance_from_nvidia_smi(
            hosts, gpu_model=args.gpu_model, cpu=args.cpu, ram_gb=args.ram_gb, name=args.name
        )
    except InstanceError as err:
        raise BadInput(_flagged(err)) from None
    return _finish(args, inst, base, outputs)


def run_kubernetes(args: argparse.Namespace) -> int:
    from mipopt.interop import instance_from_kubernetes

    outputs = Outputs([args.nodes, args.pods, args.merge])
    outputs.file("--out", args.out)
    base = read_instance(args.merge) if args.merge else None
    try:
        result = instance_from_kubernetes(args.nodes, args.pods, name=args.name)
    except InstanceError as err:
        raise BadInput(_flagged(err)) from None
    return _finish(args, result.instance, base, outputs)


def _finish(args: argparse.Namespace, inst: Instance, base: Instance | None, outputs: Outputs) -> int:
    """Merge, write and print the instance; its notes (the import's and the merge's) go to stderr."""
    from mipopt.instance.parse import instance_to_dict
    from mipopt.interop import merge_import

    notes = inst.notes
    if base is not None:
        try:
            inst, merged = merge_import(base, inst)
        except InstanceError as err:
            raise BadInput(f"--merge {args.merge}: {err}") from None
        notes += merged
    if args.out:
        with outputs.writing() as staged:
            write_json(staged.path(args.out), instance_to_dict(inst))
    if args.json:
        print_json(instance_to_dict(inst))
    else:
        print(import_summary(inst))
        if args.out:
            print(f"\nwrote {args.out}")
        else:
            print("\n(not written: give --out FILE, or --json to print it)")
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return EXIT_OK


def import_summary(inst: Instance) -> str:
    """Hosts, GPUs by model, GPU instances per GPU (running, or idle), GPUs of unknown layout,
    and the models built from -lgip/-lgipp."""
    running = Counter(w.placement.gpu for w in inst.workloads if w.placement is not None)
    counts = [
        (len(inst.hosts), "host"),
        (len(inst.gpus), "GPU"),
        (sum(running.values()), "running GPU instance"),
        (len(inst.new), "new request"),
    ]
    counts += [(n, what) for n, what in ((len(inst.idle), "idle GPU instance"),) if n]
    lines = [f"{inst.name}: " + ", ".join(f"{n} {what}{'' if n == 1 else 's'}" for n, what in counts)]
    for h in inst.hosts:
        models = Counter(inst.gpu(g).model.name for g in h.gpus)
        desc = ", ".join(f"{n} x {m}" for m, n in models.items()) or "no GPUs"
        caps = ", ".join(f"{k} {v:g}" for k, v in (("cpu", h.cpu), ("ram_gb", h.ram_gb)) if v is not None)
        lines.append(f"  {h.id}: {desc}" + (f" ({caps})" if caps else ""))
        for g in h.gpus:
            placed = [
                (w.placement.start, str(w.profile), "")
                for w in inst.workloads
                if w.placement is not None and w.placement.gpu == g
            ]
            placed += [(i.start, str(i.profile), " (idle)") for i in inst.idle if i.gpu == g]
            shown = " ".join(f"{p}@{s}{idle}" for s, p, idle in sorted(placed)) or "empty"
            lines.append(f"    {g}: {shown if inst.gpu(g).layout_known else 'layout unknown'}")
    for m in inst.custom_models:
        lines.append(f"custom model {m.name}: {m.source_note}")
    return "\n".join(lines)
