"""What an operator runs to carry out a migration plan: nvidia-smi commands, an NVML script, a mig-parted config.

A plan's rounds (:mod:`mipopt.migrate.plan`) become :class:`Operation` records addressed the way
the machines are: host, GPU device index and UUID (where the instance knows them, as an import
from nvidia-smi does), profile id and placement start, and the GPU-instance id of instances that
``nvidia-smi mig -lgi`` reported when the state was read. Three forms are written from them:

``nvidia-smi`` (:func:`nvidia_smi_script`)
    A bash script. GPU instances are created at an explicit placement with
    ``nvidia-smi mig -i GPU -cgi PROFILE_ID:START -C`` (the ``-C`` makes the default compute
    instance), the form ``nvidia-smi mig -h`` documents as a "profile tuple": a profile name or
    id and an optional placement specifier, a colon and a placement start index. It needs a
    driver whose NVML has ``nvmlDeviceCreateGpuInstanceWithPlacement`` (R470 and newer; the
    R450/R460 drivers cannot place an instance at all). Instances are destroyed by id
    (``-gi ID -dci``, then ``-gi ID -dgi``); an instance the plan created, or one whose id was
    not imported, is found at run time by its profile id and start in ``-lgi``. The script
    first checks that every instance the plan expects is where the plan says, and stops if not.
``nvml-python`` (:func:`nvml_script`)
    A Python script over ``nvidia-ml-py`` (``pynvml``) doing the same with
    ``nvmlDeviceCreateGpuInstanceWithPlacement``; it only prints what it would do unless run
    with ``--apply``.
``mig-parted`` (:func:`mig_parted_config`)
    The final state as a mig-parted ``version: v1`` config, one named config per host. mig-parted
    creates instances without a placement (the driver picks the starts), so the layout it makes
    may differ from the plan's, and applying a config re-creates every MIG device of each GPU
    whose layout changes.

Both scripts execute the operations in the plan's order: per round, the drains, then every
creation, then the moves' sources destroyed. With several hosts, the scripts run everything from
one machine (``ssh`` to each host in the bash script; one NVML process per host, phase by phase,
for the Python one).
"""

from __future__ import annotations

import json
import shlex
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import yaml

from mipopt.catalog import Profile, products
from mipopt.errors import InstanceError
from mipopt.instance import Instance
from mipopt.migrate.plan import Plan, Spot
from mipopt.state.occupancy import MOVE_LABELS

__all__ = [
    "EMIT_FORMS",
    "PHASES",
    "Operation",
    "addressed_plan",
    "emit",
    "mig_parted_config",
    "nvidia_smi_script",
    "nvml_script",
    "plan_operations",
]

#: The phases of a round, in the order they run.
PHASES = ("drain", "create", "destroy")


@dataclass(frozen=True, slots=True)
class Operation:
    """One GPU-instance creation or destruction, addressed as the machine knows it.

    ``gpu_index`` is the GPU's ``nvidia-smi`` index on its host (the position among the host's
    GPUs when the instance does not record it: ``gpu_index_known`` says which); ``gpu_uuid`` is
    its UUID where known. ``gpu_instance_id`` is set on a destruction of an instance whose id
    ``nvidia-smi mig -lgi`` reported when the state was imported; otherwise the instance is found
    by ``profile_id`` and ``start``.
    """

    round: int
    phase: str  # drain | create | destroy
    op: str  # create | destroy
    workload: str
    host: str
    gpu: str
    gpu_index: int
    gpu_index_known: bool
    gpu_uuid: str | None
    profile: str
    profile_id: int
    start: int
    size: int
    gpu_instance_id: int | None
    comment: str

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def gpu_indices(instance: Instance) -> dict[str, int]:
    """GPU id -> its ``nvidia-smi`` index on its host: the recorded ``device_index``, else its
    position among the host's GPUs in the instance."""
    return {
        gid: pos if instance.gpu(gid).device_index is None else instance.gpu(gid).device_index  # type: ignore[misc]
        for h in instance.hosts
        for pos, gid in enumerate(h.gpus)
    }


def _profile(instance: Instance, workload: str, gpu: str) -> Profile:
    return instance.gpu(gpu).model.profile(instance.workload(workload).profile)


def plan_operations(instance: Instance, plan: Plan) -> tuple[Operation, ...]:
    """The operations of ``plan`` on ``instance``, in the order they run.

    Per round: phase ``drain`` destroys the drained instances, phase ``create`` creates every
    target (moves' targets, then new workloads and restores), phase ``destroy`` destroys the
    moves' sources. Operations of one phase do not depend on each other.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> plan = mipopt.plan_migration(inst, mipopt.solve(inst, "ff"))
    >>> [(o.round, o.op, o.workload, o.gpu, o.start) for o in plan_operations(inst, plan)][:2]
    [(1, 'create', 'batch-d', 'h1-g1', 0), (1, 'create', 'infer-e', 'h1-g0', 2)]
    """
    index = gpu_indices(instance)
    original = {
        w.id: (w.placement.gpu, w.placement.start, w.placement.gpu_instance_id)
        for w in instance.workloads
        if w.placement is not None
    }

    def op(number: int, phase: str, kind: str, workload: str, spot: Spot, comment: str) -> Operation:
        gpu = instance.gpu(spot[0])
        profile = _profile(instance, workload, spot[0])
        known = original.get(workload)
        gi = known[2] if kind == "destroy" and known is not None and known[:2] == spot else None
        return Operation(
            number,
            phase,
            kind,
            workload,
            gpu.host,
            gpu.id,
            index[gpu.id],
            gpu.device_index is not None,
            gpu.uuid,
            profile.name,
            profile.id,
            spot[1],
            profile.memory_slots,
            gi,
            comment,
        )

    out: list[Operation] = []
    for number, r in enumerate(plan.rounds, 1):
        for d in r.drains:
            out.append(op(number, "drain", "destroy", d.workload, d.source, "drain (down until restored)"))
        for mv in r.moves:
            why = "park (temporary, breaks a cycle of waits)" if mv.park else f"{MOVE_LABELS[mv.kind]} move"
            out.append(op(number, "create", "create", mv.workload, mv.target, f"{why} from {_at(mv.source)}"))
        for c in r.creates:
            why = "new request" if c.source is None else f"restore (drained from {_at(c.source)})"
            out.append(op(number, "create", "create", c.workload, c.target, why))
        for mv in r.moves:
            out.append(op(number, "destroy", "destroy", mv.workload, mv.source, f"moved to {_at(mv.target)}"))
    return tuple(out)


def _at(spot: Spot) -> str:
    return f"{spot[0]}:{spot[1]}"


def _rounds(n: int) -> str:
    return f"{n} round{'' if n == 1 else 's'}"


def addressed_plan(instance: Instance, plan: Plan) -> dict[str, Any]:
    """The plan's ``mipopt-plan`` JSON, each spot with its address, and the operations.

    Every ``from``/``to`` spot gains ``host``, ``gpu_index`` and ``gpu_uuid`` (where known), and a
    spot where a workload runs now its imported ``gpu_instance_id``; ``operations`` lists the
    :class:`Operation` records. :func:`mipopt.migrate.plan.plan_from_dict` and
    :func:`mipopt.verifier.verify_plan` read it like the plain form.
    """
    index = gpu_indices(instance)
    running = {
        (w.id, w.placement.gpu, w.placement.start): w.placement.gpu_instance_id
        for w in instance.workloads
        if w.placement is not None
    }

    def address(workload: str, spot: dict[str, Any]) -> None:
        gpu = instance.gpu(spot["gpu"])
        spot["host"] = gpu.host
        spot["gpu_index"] = index[gpu.id]
        if gpu.uuid is not None:
            spot["gpu_uuid"] = gpu.uuid
        gi = running.get((workload, spot["gpu"], spot["start"]))
        if gi is not None:
            spot["gpu_instance_id"] = gi

    data = plan.to_dict()
    for r in data["rounds"]:
        for item in (*r["drains"], *r["moves"], *r["creates"]):
            for key in ("from", "to"):
                if key in item:
                    address(item["workload"], item[key])
    data["operations"] = [o.to_dict() for o in plan_operations(instance, plan)]
    return data


def _expected(instance: Instance, operations: Sequence[Operation]) -> list[Operation]:
    """The running instances the plan touches, as the preflight check expects to find them."""
    seen: dict[str, Operation] = {}
    for o in operations:
        w = instance.workload(o.workload)
        if (
            o.op == "destroy"
            and w.placement is not None
            and (w.placement.gpu, w.placement.start) == (o.gpu, o.start)
        ):
            seen.setdefault(o.workload, o)
    return list(seen.values())


# --- nvidia-smi


_BASH_HEAD = """\
#!/usr/bin/env bash
# {title}
#
# Written by mipopt (`mipopt plan --emit nvidia-smi`). Target: NVIDIA driver R470 or newer, whose
# `nvidia-smi mig -cgi PROFILE_ID:START` creates a GPU instance at an explicit placement start
# (a "profile tuple" in `nvidia-smi mig -h`). R450/R460 cannot place instances.
#
# Dry run by default: prints each command. `bash THIS --apply` runs them, as root, in order,
# stopping at the first failure. Commands for another host go through `$MIPOPT_SSH HOST`
# (default: ssh); the local host is `$MIPOPT_LOCAL_HOST` (default: hostname -s).
# A round's phases run in order on every host: drains, creations, then the moves' sources destroyed.
set -euo pipefail

APPLY=0
[[ "${{1:-}}" == "--apply" ]] && APPLY=1
SSH="${{MIPOPT_SSH:-ssh}}"
LOCAL="${{MIPOPT_LOCAL_HOST:-$(hostname -s)}}"

# on HOST CMD...: run CMD on HOST (print it in a dry run)
on() {{
  local host="$1"; shift
  if [[ $APPLY == 0 ]]; then echo "[$host] $*"; return 0; fi
  if [[ "$host" == "$LOCAL" ]]; then "$@"; else $SSH "$host" "$(printf '%q ' "$@")"; fi
}}

# gi_at HOST GPU PROFILE_ID START: the id of the GPU instance of that profile at that start
# (read off `nvidia-smi mig -lgi`: | GPU  MIG NAME  PROFILE_ID  INSTANCE_ID  START:SIZE |)
gi_at() {{
  if [[ $APPLY == 0 ]]; then echo "GI@$4"; return 0; fi
  local id
  id=$(on "$1" nvidia-smi mig -i "$2" -lgi | awk -v p="$3" -v s="$4" \\
    '$1 == "|" && $3 == "MIG" && $5 == p && index($7, s ":") == 1 {{ print $6 }}')
  [[ -n "$id" ]] || {{ echo "no GPU instance of profile $3 at start $4 on $1 GPU $2" >&2; return 1; }}
  echo "$id"
}}

# expect HOST GPU PROFILE_ID START [GI_ID]: stop unless that instance is there (and has that id)
expect() {{
  local id
  id=$(gi_at "$1" "$2" "$3" "$4") || exit 1
  if [[ $# -ge 5 && $APPLY == 1 && "$id" != "$5" ]]; then
    echo "$1 GPU $2: the instance of profile $3 at start $4 is GI $id, not $5: the state changed" >&2
    exit 1
  fi
}}

# destroy HOST GPU GI_ID: its compute instances, then the GPU instance
destroy() {{
  on "$1" nvidia-smi mig -i "$2" -gi "$3" -dci
  on "$1" nvidia-smi mig -i "$2" -gi "$3" -dgi
}}
"""


def _gpu_arg(o: Operation) -> str:
    return o.gpu_uuid if o.gpu_uuid else str(o.gpu_index)


def nvidia_smi_script(instance: Instance, plan: Plan) -> str:
    """A bash script of ``nvidia-smi mig`` commands that carries out ``plan`` (module docstring).

    Each command line ends with a comment naming the operation and workload
    (``# create w1: inter-gpu move from h1-g0@4``), which :func:`read_nvidia_smi_script`
    in the tests reads back.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> plan = mipopt.plan_migration(inst, mipopt.solve(inst, "ff"))
    >>> print([l for l in nvidia_smi_script(inst, plan).splitlines() if "-cgi" in l][0])
    on h1 nvidia-smi mig -i 1 -cgi 5:0 -C  # create batch-d: new request
    """
    ops = plan_operations(instance, plan)
    title = f"mipopt plan for {instance.name}: {_rounds(len(plan.rounds))}, {len(ops)} operations"
    lines = [_BASH_HEAD.format(title=title)]
    expected = _expected(instance, ops)
    if expected:
        lines.append("# Before anything: the instances the plan moves or destroys are where it says.")
        for o in expected:
            gi = "" if o.gpu_instance_id is None else f" {o.gpu_instance_id}"
            lines.append(
                f"expect {shlex.quote(o.host)} {shlex.quote(_gpu_arg(o))} {o.profile_id} {o.start}{gi}"
                f"  # {o.workload}: {o.profile}"
            )
    if any(not o.gpu_index_known for o in ops):
        lines.append(
            "\n# NOTE: the instance does not record GPU device indices; each GPU's index is assumed to be"
            "\n# its position among its host's GPUs in the instance. Check with `nvidia-smi -L`."
        )
    current = None
    for o in ops:
        if (o.round, o.phase) != current:
            current = o.round, o.phase
            lines.append(f"\n# round {o.round}, {o.phase}")
        host, gpu = shlex.quote(o.host), shlex.quote(_gpu_arg(o))
        note = f"  # {o.op} {o.workload}: {o.comment}"
        if o.op == "create":
            lines.append(f"on {host} nvidia-smi mig -i {gpu} -cgi {o.profile_id}:{o.start} -C{note}")
        elif o.gpu_instance_id is not None:
            lines.append(f"destroy {host} {gpu} {o.gpu_instance_id}{note}")
        else:
            lines.append(f'destroy {host} {gpu} "$(gi_at {host} {gpu} {o.profile_id} {o.start})"{note}')
    if not ops:
        lines.append("# nothing to do: the current placement is the target")
    lines.append('\necho "done: plan applied" >&2' if ops else "")
    return "\n".join(lines).rstrip() + "\n"


# --- NVML (nvidia-ml-py)


_NVML_SCRIPT = '''\
#!/usr/bin/env python3
"""{title}

Written by mipopt (`mipopt plan --emit nvml-python`). Needs nvidia-ml-py (`pip install
nvidia-ml-py`), root, and a driver whose NVML has nvmlDeviceCreateGpuInstanceWithPlacement
(R470 and newer). Run it on each host the plan touches:

    python3 THIS [--host NAME] [--round N] [--phase drain|create|destroy] [--apply]

Without --apply it only prints what it would do. --host defaults to this machine's short host
name. With several hosts, run one phase at a time on every host before the next (a move's target
is created on one host before its source is destroyed on another); on a single host, run it whole.
It first checks that the instances the plan expects are where it says, and stops if not.
"""

import argparse
import ctypes
import socket
import sys

OPERATIONS = {operations}
EXPECTED = {expected}
PHASES = ("drain", "create", "destroy")


def device(nvml, op):
    if op["gpu_uuid"]:
        return nvml.nvmlDeviceGetHandleByUUID(op["gpu_uuid"])
    return nvml.nvmlDeviceGetHandleByIndex(op["gpu_index"])


def instances(nvml, handle, profile_id):
    """The GPU instances of one profile on a device: (handle, info) pairs."""
    count = ctypes.c_uint(0)
    found = (nvml.c_nvmlGpuInstance_t * 64)()
    nvml.nvmlDeviceGetGpuInstances(handle, profile_id, found, ctypes.byref(count))
    return [(found[i], nvml.nvmlGpuInstanceGetInfo(found[i])) for i in range(count.value)]


def find(nvml, op):
    """The GPU instance an operation names: by its imported id, else by profile and start."""
    handle = device(nvml, op)
    if op["gpu_instance_id"] is not None:
        gi = nvml.nvmlDeviceGetGpuInstanceById(handle, op["gpu_instance_id"])
        info = nvml.nvmlGpuInstanceGetInfo(gi)
        if info.profileId != op["profile_id"] or info.placement.start != op["start"]:
            sys.exit(f"{{op['host']}} GPU {{op['gpu_index']}}: GI {{op['gpu_instance_id']}} is not profile "
                     f"{{op['profile_id']}} at start {{op['start']}}: the state changed")
        return gi
    for gi, info in instances(nvml, handle, op["profile_id"]):
        if info.placement.start == op["start"]:
            return gi
    sys.exit(f"{{op['host']}} GPU {{op['gpu_index']}}: no GPU instance of profile {{op['profile_id']}} "
             f"at start {{op['start']}}")


def create(nvml, op):
    handle = device(nvml, op)
    placement = nvml.c_nvmlGpuInstancePlacement_t()
    placement.start = op["start"]
    placement.size = op["size"]
    gi = nvml.nvmlDeviceCreateGpuInstanceWithPlacement(handle, op["profile_id"], ctypes.byref(placement))
    # its default compute instance: all of the GPU instance's slices, engines shared
    ci_profile = getattr(nvml, f"NVML_COMPUTE_INSTANCE_PROFILE_{{op['compute']}}_SLICE")
    info = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, ci_profile, nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
    )
    nvml.nvmlGpuInstanceCreateComputeInstance(gi, info.id)


def destroy(nvml, op):
    gi = find(nvml, op)
    for name in dir(nvml):
        if not name.startswith("NVML_COMPUTE_INSTANCE_PROFILE_") or name.endswith("_COUNT"):
            continue
        try:
            info = nvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, getattr(nvml, name), nvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
            )
        except nvml.NVMLError:
            continue  # a compute-instance profile this GPU instance does not offer
        for ci in nvml.nvmlGpuInstanceGetComputeInstances(gi, info.id):
            nvml.nvmlComputeInstanceDestroy(ci)
    nvml.nvmlGpuInstanceDestroy(gi)


def describe(op):
    where = f"GPU {{op['gpu_uuid'] or op['gpu_index']}}"
    return (f"round {{op['round']}} {{op['phase']}}: {{op['op']}} {{op['profile']}} (id {{op['profile_id']}}) "
            f"at start {{op['start']}} on {{op['host']}} {{where}}  # {{op['workload']}}: {{op['comment']}}")


def main(argv=None, nvml=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default=socket.gethostname().split(".")[0])
    parser.add_argument("--round", type=int)
    parser.add_argument("--phase", choices=PHASES)
    parser.add_argument("--apply", action="store_true", help="act (default: only print)")
    args = parser.parse_args(argv)
    chosen = [
        op for op in OPERATIONS
        if op["host"] == args.host
        and (args.round is None or op["round"] == args.round)
        and (args.phase is None or op["phase"] == args.phase)
    ]
    if not any(op["host"] == args.host for op in OPERATIONS):
        print(f"nothing to do on host {{args.host!r}} (hosts: {{sorted({{op['host'] for op in OPERATIONS}})}})")
        return 0
    if not args.apply:
        for op in chosen:
            print(describe(op))
        print(f"dry run: {{len(chosen)}} operations; --apply to act")
        return 0
    if nvml is None:
        import pynvml as nvml
    nvml.nvmlInit()
    try:
        if args.round in (None, 1) and args.phase in (None, "drain"):
            for op in EXPECTED:
                if op["host"] == args.host:
                    find(nvml, op)
        for op in chosen:
            print(describe(op))
            (create if op["op"] == "create" else destroy)(nvml, op)
    finally:
        nvml.nvmlShutdown()
    print(f"done: {{len(chosen)}} operations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
'''


def nvml_script(instance: Instance, plan: Plan) -> str:
    """A Python script over ``pynvml`` that carries out ``plan``; dry run unless ``--apply``.

    Its ``OPERATIONS`` list holds :meth:`Operation.to_dict` records (plus the compute slices
    of each profile); ``main(argv, nvml)`` takes the NVML module, so it can run against a fake.
    """
    ops = plan_operations(instance, plan)
    records = [{**o.to_dict(), "compute": _profile(instance, o.workload, o.gpu).compute} for o in ops]
    expected = [
        {**o.to_dict(), "compute": _profile(instance, o.workload, o.gpu).compute}
        for o in _expected(instance, ops)
    ]
    title = f"mipopt plan for {instance.name}: {_rounds(len(plan.rounds))}, {len(ops)} operations."
    return _NVML_SCRIPT.format(title=title, operations=_literal(records), expected=_literal(expected))


def _literal(records: list[dict[str, Any]]) -> str:
    """A Python literal of records of str, int, bool and None, one per line."""
    if not records:
        return "[]"
    return "[\n" + "".join(f"    {r!r},\n" for r in records) + "]"


# --- mig-parted


MIG_PARTED_WARNING = (
    "mig-parted creates GPU instances without a placement: the driver picks each start, so the "
    "layout it makes may differ from the plan's, and applying a config re-creates every MIG device "
    "of each GPU whose layout changes (their workloads stop). Use --emit nvidia-smi or nvml-python "
    "to reach the plan's exact starts without disturbing the instances that stay."
)


def mig_parted_config(instance: Instance, final: dict[str, Spot]) -> str:
    """The state ``final`` (workload -> GPU, start) as a mig-parted ``version: v1`` config.

    One config per host, ``mipopt-HOST``; in it, one entry per group of that host's GPUs with
    the same model and profile counts, by device index and by the model's PCI device ids
    (``device-filter``) where the catalog knows them. Select one on a node with
    ``nvidia-mig-parted apply -f FILE -c mipopt-HOST`` (or the GPU operator's
    ``nvidia.com/mig.config`` label).
    """
    index = gpu_indices(instance)
    counts: dict[str, Counter[str]] = {g.id: Counter() for g in instance.gpus}
    for wid, (gpu, _) in final.items():
        counts[gpu][_profile(instance, wid, gpu).name] += 1
    pci = {p.model: list(p.pci_device_ids) for p in products() if p.pci_device_ids}
    configs: dict[str, list[dict[str, Any]]] = {}
    for h in instance.hosts:
        groups: dict[tuple[str, tuple[tuple[str, int], ...]], list[int]] = {}
        for gid in h.gpus:
            g = instance.gpu(gid)
            key = (g.model.name, tuple(sorted(counts[gid].items())))
            groups.setdefault(key, []).append(index[gid])
        entries = []
        for (model, layout), devices in groups.items():
            entry: dict[str, Any] = {"devices": sorted(devices)}
            if model in pci:
                entry["device-filter"] = list(pci[model])
            entry["mig-enabled"] = True
            entry["mig-devices"] = dict(layout)
            entries.append(entry)
        configs[f"mipopt-{h.id}"] = entries
    header = "".join(f"# {line}\n" for line in _wrap(f"WARNING: {MIG_PARTED_WARNING}"))
    header += f"# Written by mipopt (`mipopt plan --emit mig-parted`) for {instance.name}.\n"
    body = yaml.safe_dump({"version": "v1", "mig-configs": configs}, sort_keys=False, default_flow_style=None)
    return header + body


def _wrap(text: str, width: int = 96) -> list[str]:
    return textwrap.wrap(text, width)


#: The forms of ``mipopt plan --emit``.
EMIT_FORMS = ("nvidia-smi", "nvml-python", "mig-parted", "json")


def emit(instance: Instance, plan: Plan, form: str) -> str:
    """``plan`` in one of :data:`EMIT_FORMS`, as text.

    Raises
    ------
    InstanceError
        ``form: must be one of ...``.
    """
    if form == "nvidia-smi":
        return nvidia_smi_script(instance, plan)
    if form == "nvml-python":
        return nvml_script(instance, plan)
    if form == "mig-parted":
        return mig_parted_config(instance, dict(plan.final))
    if form == "json":
        return json.dumps(addressed_plan(instance, plan), indent=2) + "\n"
    raise InstanceError("form", f"must be one of {', '.join(EMIT_FORMS)}, got {form!r}")
