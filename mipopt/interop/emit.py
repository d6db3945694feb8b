"""What an operator runs to carry out a migration plan: nvidia-smi commands, an NVML script, a mig-parted config.

A plan's rounds (:mod:`mipopt.migrate.plan`) become :class:`Operation` records addressed the way
the machines are: host, GPU device index and UUID (where the instance knows them, as an import
from nvidia-smi does), profile id and placement start, the GPU-instance id of instances that
``nvidia-smi mig -lgi`` reported, and the GPU's instances just before and after the operation.
Idle GPU instances of the instance are reused (a check, no change) or destroyed in round 1 where
the plan needs their slots. Three forms are written from them:

``nvidia-smi`` (:func:`nvidia_smi_script`)
    A bash script, run from one machine (other hosts through ``ssh``): GPU instances created at
    an explicit placement with ``nvidia-smi mig -i GPU -cgi PROFILE_ID:START -C`` (driver R470
    and newer), destroyed by id (``-gi ID -dci``, then ``-dgi``).
``nvml-python`` (:func:`nvml_script`)
    A Python script over ``nvidia-ml-py`` (``pynvml``), run on each host, doing the same with
    ``nvmlDeviceCreateGpuInstanceWithPlacement``.
``mig-parted`` (:func:`mig_parted_config`)
    The final state as a mig-parted ``version: v1`` config, one named config per host. mig-parted
    creates instances without a placement (the driver picks the starts), so the layout it makes
    may differ from the plan's, and applying a config re-creates every MIG device of each GPU
    whose layout changes.

The two scripts are templates shipped as package data (``templates/plan.sh``,
``templates/plan_nvml.py``); the plan goes into them as quoted data, never as code. Both are dry
runs unless given ``--apply``; under it, every operation checks its GPU's live state first (runs,
skips as done, or stops), every round checks the GPUs it touches before its first change, a
journal lets the same command resume after a failure, and a move runs the operator's
``--on-move`` hook between creating its target and destroying its source (``docs/interop.md``).
"""

from __future__ import annotations

import json
import shlex
import textwrap
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from importlib import resources
from typing import Any, Literal

import yaml

from mipopt.catalog import Profile, products
from mipopt.errors import InstanceError
from mipopt.instance import Instance
from mipopt.migrate.plan import Plan, Spot
from mipopt.state import Occupancy
from mipopt.state.idle import idle_fates, idle_profile
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

Phase = Literal["drain", "create", "destroy"]
#: The phases of a round, in the order they run.
PHASES: tuple[Phase, ...] = ("drain", "create", "destroy")
#: What an operation does: create or destroy a GPU instance, or check that an idle one is there
#: for a workload to reuse (nothing changes).
OpKind = Literal["create", "destroy", "reuse"]
#: Why: a drained workload, a move's target or source, a park, a new request, a restore, an idle
#: instance in the way.
Reason = Literal["drain", "move", "park", "new", "restore", "idle"]


@dataclass(frozen=True, slots=True)
class Operation:
    """One GPU-instance creation, destruction or reuse, addressed as the machine knows it.

    ``gpu_index`` is the GPU's ``nvidia-smi`` index on its host (the position among the host's
    GPUs when the instance does not record it: ``gpu_index_known`` says which); ``gpu_uuid`` is
    its UUID where known. ``gpu_instance_id`` is set on a destruction of an instance whose id
    ``nvidia-smi mig -lgi`` reported when the state was imported; otherwise the instance is found
    by ``profile_id`` and ``start``. ``before`` and ``after`` are the GPU's GPU instances
    (``PROFILE_ID:START``, by start) just before and after the operation, as the plan expects
    them: a script runs an operation where it finds ``before``, skips it where it finds
    ``after`` (done by an earlier run), and stops anywhere else. ``peer`` is the other end of a
    move (its target on the source's destroy, its source on the target's create).
    """

    round: int
    phase: Phase
    op: OpKind
    reason: Reason
    workload: str  # "" for an idle instance
    host: str
    gpu: str
    gpu_index: int
    gpu_index_known: bool
    gpu_uuid: str | None
    profile: str
    profile_id: int
    start: int
    size: int
    compute: int
    gpu_instance_id: int | None
    comment: str
    before: tuple[str, ...] = ()
    after: tuple[str, ...] = ()
    peer: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["before"], out["after"] = list(self.before), list(self.after)
        return out


def gpu_indices(instance: Instance) -> dict[str, int]:
    """GPU id -> its ``nvidia-smi`` index on its host: the recorded ``device_index``, else its
    position among the host's GPUs in the instance."""
    return {
        gid: pos if instance.gpu(gid).device_index is None else instance.gpu(gid).device_index  # type: ignore[misc]
        for h in instance.hosts
        for pos, gid in enumerate(h.gpus)
    }


def _profile(instance: Instance, workload: str, gpu: str) -> Profile:
    profile = instance.profile_on(instance.workload(workload), instance.gpu(gpu).model)
    assert profile is not None, f"{workload} cannot run on {gpu}"
    return profile


def _token(profile: Profile, start: int) -> str:
    return f"{profile.id}:{start}"


def _layout(tokens: Counter[str]) -> tuple[str, ...]:
    """A GPU's instances in the scripts' order: by start, then profile id."""
    items = sorted(tokens.elements(), key=lambda t: (int(t.split(":")[1]), int(t.split(":")[0])))
    return tuple(items)


def _idle_decisions(instance: Instance, plan: Plan) -> dict[int, str | None]:
    """Idle instance position -> the workload that reuses it, or None: destroy it in round 1;
    the ones left out are kept (:func:`mipopt.state.idle.idle_fates` over every instance the
    plan creates)."""
    passing = [(m.workload, *m.target) for r in plan.rounds for m in r.moves]
    passing += [(c.workload, *c.target) for r in plan.rounds for c in r.creates]
    fates = idle_fates(instance, plan.final, passing)
    return {k: d.workload for k, d in enumerate(fates) if d.fate != "keep"}


def _crowded(instance: Instance, ops: Sequence[Operation]) -> set[str]:
    """The GPUs where a create of ``ops`` breaks a rule beside the idle instances kept there,
    replayed on an :class:`~mipopt.state.Occupancy` (the placement rules' one home)."""
    occupancy = Occupancy(instance)
    held: list[tuple[str, str | int, int]] = [
        (w.placement.gpu, _profile(instance, w.id, w.placement.gpu).name, w.placement.start)
        for w in instance.running
        if w.placement
    ]
    held += [(i.gpu, i.profile, i.start) for i in instance.idle]
    for gpu, profile, start in held:
        model = instance.gpu(gpu).model
        occupancy.occupy(occupancy.position[gpu], model.profiles.index(model.profile(profile)), start, 0, 0)
    crowded: set[str] = set()
    for o in ops:
        if o.op == "reuse":
            continue
        k = occupancy.position[o.gpu]
        p = instance.gpu(o.gpu).model.profiles.index(instance.gpu(o.gpu).model.profile(o.profile_id))
        if o.op == "create" and not occupancy.fits_at(k, p, o.start, 0, 0):
            crowded.add(o.gpu)
        occupancy.occupy(k, p, o.start, 0, 0, sign=1 if o.op == "create" else -1)
    return crowded


def plan_operations(instance: Instance, plan: Plan) -> tuple[Operation, ...]:
    """The operations of ``plan`` on ``instance``, in the order they run.

    Per round: phase ``drain`` destroys the drained instances (in round 1, first, the idle
    instances the plan needs out of the way), phase ``create`` creates every target (moves'
    targets, then new workloads and restores; a target that is an idle instance of its
    profile is reused: checked, not created), phase ``destroy`` destroys the moves' sources.
    Operations of one phase do not depend on each other.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> plan = mipopt.plan_migration(inst, mipopt.solve(inst, "ff"))
    >>> [(o.round, o.op, o.workload, o.gpu, o.start) for o in plan_operations(inst, plan)][:2]
    [(1, 'create', 'batch-d', 'h1-g1', 0), (1, 'create', 'infer-e', 'h1-g0', 2)]
    """
    instance = instance.at_profiles(plan.final, plan.profiles)  # creates make the chosen profiles
    decisions = _idle_decisions(instance, plan)
    ops = _operations(instance, plan, decisions)
    crowded = _crowded(instance, ops) if instance.idle else set()  # only kept idle instances crowd
    if not crowded:
        return ops
    for k, idle in enumerate(instance.idle):
        if idle.gpu in crowded and decisions.get(k) is None:
            decisions[k] = None  # kept idle instances make room
    return _operations(instance, plan, decisions)


def _operations(instance: Instance, plan: Plan, decisions: dict[int, str | None]) -> tuple[Operation, ...]:
    index = gpu_indices(instance)
    original = {
        w.id: (w.placement.gpu, w.placement.start, w.placement.gpu_instance_id)
        for w in instance.workloads
        if w.placement is not None
    }
    layouts: dict[str, Counter[str]] = {g.id: Counter() for g in instance.gpus}
    for w in instance.running:
        assert w.placement is not None
        layouts[w.placement.gpu][_token(_profile(instance, w.id, w.placement.gpu), w.placement.start)] += 1
    for idle in instance.idle:
        layouts[idle.gpu][_token(idle_profile(instance, idle), idle.start)] += 1
    reused = {
        (w, instance.idle[k].gpu, instance.idle[k].start): k for k, w in decisions.items() if w is not None
    }

    def address(spot: Spot) -> dict[str, Any]:
        g = instance.gpu(spot[0])
        return {"host": g.host, "gpu": g.id, "gpu_index": index[g.id], "gpu_uuid": g.uuid, "start": spot[1]}

    def op(
        number: int,
        phase: Phase,
        kind: OpKind,
        reason: Reason,
        workload: str,
        spot: Spot,
        comment: str,
        *,
        profile: Profile | None = None,
        gi: int | None = None,
        peer: Spot | None = None,
    ) -> Operation:
        gpu = instance.gpu(spot[0])
        profile = profile or _profile(instance, workload, spot[0])
        known = original.get(workload)
        if kind == "destroy" and gi is None and known is not None and known[:2] == spot:
            gi = known[2]
        token = _token(profile, spot[1])
        before = _layout(layouts[gpu.id])
        if kind == "create":
            layouts[gpu.id][token] += 1
        elif kind == "destroy":
            layouts[gpu.id][token] -= 1
        return Operation(
            number,
            phase,
            kind,
            reason,
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
            profile.compute,
            gi,
            comment,
            before,
            _layout(+layouts[gpu.id]),
            None if peer is None else address(peer),
        )

    def target(
        number: int, reason: Reason, workload: str, spot: Spot, comment: str, peer: Spot | None
    ) -> Operation:
        k = reused.get((workload, *spot))
        if k is not None:
            idle = instance.idle[k]
            return op(
                number,
                "create",
                "reuse",
                reason,
                workload,
                spot,
                f"{comment}; reuses idle GPU instance",
                gi=idle.gpu_instance_id,
                peer=peer,
            )
        return op(number, "create", "create", reason, workload, spot, comment, peer=peer)

    out: list[Operation] = []
    for number, r in enumerate(plan.rounds, 1):
        if number == 1:
            for k, idle in enumerate(instance.idle):
                if k in decisions and decisions[k] is None:
                    spot, why = (idle.gpu, idle.start), "idle GPU instance (no workload) in the way"
                    profile = idle_profile(instance, idle)
                    out.append(
                        op(
                            number,
                            "drain",
                            "destroy",
                            "idle",
                            "",
                            spot,
                            why,
                            profile=profile,
                            gi=idle.gpu_instance_id,
                        )
                    )
        for d in r.drains:
            out.append(
                op(number, "drain", "destroy", "drain", d.workload, d.source, "drain (down until restored)")
            )
        for mv in r.moves:
            reason: Reason = "park" if mv.park else "move"
            why = "park (temporary, breaks a cycle of waits)" if mv.park else f"{MOVE_LABELS[mv.kind]} move"
            out.append(
                target(number, reason, mv.workload, mv.target, f"{why} from {_at(mv.source)}", mv.source)
            )
        for c in r.creates:
            if c.source is None:
                out.append(target(number, "new", c.workload, c.target, "new request", None))
            else:
                out.append(
                    target(
                        number,
                        "restore",
                        c.workload,
                        c.target,
                        f"restore (drained from {_at(c.source)})",
                        None,
                    )
                )
        for mv in r.moves:
            out.append(
                op(
                    number,
                    "destroy",
                    "destroy",
                    "move",
                    mv.workload,
                    mv.source,
                    f"moved to {_at(mv.target)}",
                    peer=mv.target,
                )
            )
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


def _template(name: str) -> str:
    """A script body shipped as package data (``mipopt/interop/templates``)."""
    return resources.files("mipopt.interop").joinpath("templates", name).read_text()


def _title(instance: Instance, plan: Plan, ops: Sequence[Operation]) -> str:
    # json.dumps: the name as one ASCII line whatever it holds
    return f"mipopt plan for {json.dumps(instance.name)}: {_rounds(len(plan.rounds))}, {len(ops)} operations"


# --- nvidia-smi


_BASH_FIELDS = (
    "round",
    "phase",
    "op",
    "reason",
    "workload",
    "host",
    "gpu",
    "profile_id",
    "start",
    "gpu_instance_id",
    "before",
    "after",
    "peer_host",
    "peer_gpu",
    "peer_start",
    "note",
)


def _gpu_arg(gpu_uuid: str | None, gpu_index: int) -> str:
    return gpu_uuid if gpu_uuid else str(gpu_index)


def _bash_args(o: Operation) -> list[str]:
    peer = o.peer or {}
    note = f"{o.op} {o.profile} at start {o.start} on {o.host} GPU {_gpu_arg(o.gpu_uuid, o.gpu_index)}"
    note += f" ({o.workload or 'idle'}: {o.comment})"
    return [
        str(o.round),
        o.phase,
        o.op,
        o.reason,
        o.workload,
        o.host,
        _gpu_arg(o.gpu_uuid, o.gpu_index),
        str(o.profile_id),
        str(o.start),
        "" if o.gpu_instance_id is None else str(o.gpu_instance_id),
        " ".join(o.before),
        " ".join(o.after),
        peer.get("host", ""),
        "" if not peer else _gpu_arg(peer["gpu_uuid"], peer["gpu_index"]),
        "" if not peer else str(peer["start"]),
        note,
    ]


def nvidia_smi_script(instance: Instance, plan: Plan) -> str:
    """A bash script of ``nvidia-smi mig`` commands that carries out ``plan`` (module docstring).

    The body is the package's ``templates/plan.sh``; the plan is appended as ``add_op`` lines
    whose every argument is quoted for bash (:func:`shlex.quote`), so no name of the instance is
    ever code. ``bash SCRIPT`` is a dry run; ``--apply`` acts (``bash SCRIPT --help``).

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> plan = mipopt.plan_migration(inst, mipopt.solve(inst, "ff"))
    >>> print([l for l in nvidia_smi_script(inst, plan).splitlines() if l.startswith("add_op ")][0])
    add_op 1 create create new batch-d h1 1 5 0 '' '' 5:0 '' '' '' 'create 4g.20gb at start 0 on h1 GPU 1 (batch-d: new request)'
    """
    ops = plan_operations(instance, plan)
    lines = [
        _template("plan.sh").rstrip("\n"),
        "",
        "# --- the plan (generated by mipopt; every value is quoted data)",
        f"TITLE={shlex.quote(_title(instance, plan, ops))}",
        f"INDEX_GUESSED={int(any(not o.gpu_index_known for o in ops))}",
    ]
    lines += ["add_op " + " ".join(shlex.quote(a) for a in _bash_args(o)) for o in ops]
    lines.append('main "$@"')
    return "\n".join(lines) + "\n"


# --- NVML (nvidia-ml-py)


def nvml_script(instance: Instance, plan: Plan) -> str:
    """A Python script over ``pynvml`` that carries out ``plan``; dry run unless ``--apply``.

    The body is the package's ``templates/plan_nvml.py``; the plan is one JSON document in a
    Python string literal (``repr``), read with :func:`json.loads`: data, never code. Its
    ``OPERATIONS`` are :meth:`Operation.to_dict` records; ``main(argv, nvml)`` takes the NVML
    module, so it can run against a fake.
    """
    ops = plan_operations(instance, plan)
    data = {"title": _title(instance, plan, ops), "phases": PHASES, "operations": [o.to_dict() for o in ops]}
    body = _template("plan_nvml.py")
    marker = "PLAN: dict = {}  # replaced by mipopt"
    assert marker in body
    return body.replace(marker, f"PLAN = json.loads({json.dumps(data, indent=1)!r})")


# --- mig-parted


MIG_PARTED_WARNING = (
    "mig-parted creates GPU instances without a placement: the driver picks each start, so the "
    "layout it makes may differ from the plan's, and applying a config re-creates every MIG device "
    "of each GPU whose layout changes (their workloads stop). Use --emit nvidia-smi or nvml-python "
    "to reach the plan's exact starts without disturbing the instances that stay."
)


def mig_parted_config(
    instance: Instance, final: dict[str, Spot], profiles: Mapping[str, str] | None = None
) -> str:
    """The state ``final`` (workload -> GPU, start) as a mig-parted ``version: v1`` config;
    ``profiles`` are those chosen for new memory-sized workloads (:attr:`Plan.profiles
    <mipopt.migrate.plan.Plan.profiles>`), the others take their default.

    One config per host, ``mipopt-HOST``; in it, one entry per group of that host's GPUs with
    the same model and profile counts, by device index and by the model's PCI device ids
    (``device-filter``) where the catalog knows them. Select one on a node with
    ``nvidia-mig-parted apply -f FILE -c mipopt-HOST`` (or the GPU operator's
    ``nvidia.com/mig.config`` label).
    """
    instance = instance.at_profiles(final, profiles or {})
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
    # json.dumps: the name as one ASCII line, whatever it holds
    header += f"# Written by mipopt (`mipopt plan --emit mig-parted`) for {json.dumps(instance.name)}.\n"
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
        return mig_parted_config(instance, dict(plan.final), plan.profiles)
    if form == "json":
        return json.dumps(addressed_plan(instance, plan), indent=2) + "\n"
    raise InstanceError("form", f"must be one of {', '.join(EMIT_FORMS)}, got {form!r}")
