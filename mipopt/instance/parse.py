"""JSON forms of instances and solutions (``docs/formats.md``, ``mipopt/schemas``).

Reading checks types and field rules and names the JSON path of the first
problem; the cross-reference rules are checked by :class:`Instance` itself.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from mipopt import _fields as f
from mipopt.catalog import GpuModel, builtin_models, model_from_dict
from mipopt.errors import InstanceError
from mipopt.instance.types import (
    FORMAT_VERSION,
    INSTANCE_FORMAT,
    REJECTION_CODES,
    SOLUTION_FORMAT,
    Assignment,
    Gpu,
    Host,
    IdleInstance,
    Instance,
    Objectives,
    Placement,
    Rejection,
    Solution,
    StageResult,
    Status,
    Termination,
    Workload,
)

_INSTANCE_OPTIONAL = ("name", "description", "custom_gpu_models", "expected", "idle", "notes")
_HOST_OPTIONAL = ("cpu", "ram_gb", "weight")
_WORKLOAD_OPTIONAL = (
    "profile",
    "memory_gb",
    "min_compute",
    "cpu",
    "ram_gb",
    "weight",
    "migration_weight",
    "gpu_models",
    "placement",
    "pinned",
)


#: The ``format`` tag of each mipopt document (the plan's is :data:`mipopt.migrate.plan.FORMAT`,
#: a layer above; a test keeps the two equal).
DOCUMENT_KINDS: dict[str, Literal["instance", "solution", "plan"]] = {
    INSTANCE_FORMAT: "instance",
    SOLUTION_FORMAT: "solution",
    "mipopt-plan": "plan",
}


def document_kind(data: Any) -> Literal["instance", "solution", "plan"] | None:
    """Which mipopt document parsed JSON is, from its ``format`` tag; None when it is none of them.

    Only the tag is read: the document may still be invalid.

    >>> document_kind({"format": "mipopt-solution", "version": 1, "placements": []})
    'solution'
    >>> document_kind([1, 2]) is None
    True
    """
    tag = data.get("format") if isinstance(data, dict) else None
    return DOCUMENT_KINDS.get(tag) if isinstance(tag, str) else None


def _check_format(data: Any, expected: str) -> None:
    """A document of another kind is refused by its tag, before its fields are read.

    Otherwise a solution read as an instance would be refused for a missing ``hosts``.
    """
    if isinstance(data, dict) and "format" in data and data["format"] != expected:
        raise InstanceError("format", f"must be {expected!r}, got {f.shown(data['format'])}")


def _header(d: dict[str, Any], expected: str) -> None:
    _check_format(d, expected)
    version = f.integer(d["version"], "version", minimum=1)
    if version != FORMAT_VERSION:
        raise InstanceError(
            "version", f"version {version} is not supported (this mipopt reads {FORMAT_VERSION})"
        )


def instance_from_dict(data: Any, default_name: str = "instance", *, source: Path | None = None) -> Instance:
    """Read an instance from its parsed JSON; ``source`` is the file it came from, if any
    (the instance remembers it: :meth:`Instance.save` never writes over it).

    Raises
    ------
    InstanceError
        Naming the JSON path and the rule, for the first problem found.
    """
    _check_format(data, INSTANCE_FORMAT)
    d = f.obj(data, "", ("format", "version", "hosts", "workloads"), _INSTANCE_OPTIONAL)
    _header(d, INSTANCE_FORMAT)
    name = f.string(d.get("name", default_name), "name")
    description = f.string(d.get("description", ""), "description", nonempty=False)
    if "expected" in d and not isinstance(d["expected"], dict):
        raise InstanceError("expected", f"must be an object, got {f.type_name(d['expected'])}")

    custom: dict[str, GpuModel] = {}
    builtin = builtin_models()
    for i, raw in enumerate(f.lst(d.get("custom_gpu_models", []), "custom_gpu_models")):
        path = f"custom_gpu_models[{i}]"
        model = model_from_dict(raw, path)
        if model.name in builtin:
            raise InstanceError(
                f"{path}.model", f"{f.shown(model.name)} is a built-in model; choose another name"
            )
        if model.name in custom:
            raise InstanceError(f"{path}.model", f"duplicate model {f.shown(model.name)}")
        custom[model.name] = model
    models = {**builtin, **custom}

    hosts: list[Host] = []
    gpus: list[Gpu] = []
    for i, raw in enumerate(f.lst(d["hosts"], "hosts")):
        path = f"hosts[{i}]"
        h = f.obj(raw, path, ("id", "gpus"), _HOST_OPTIONAL)
        hid = f.string(h["id"], f"{path}.id")
        gpu_ids = []
        for j, graw in enumerate(f.lst(h["gpus"], f"{path}.gpus")):
            gp = f"{path}.gpus[{j}]"
            g = f.obj(graw, gp, ("id", "model"), ("device_index", "uuid", "layout"))
            if "layout" in g and g["layout"] != "unknown":
                raise InstanceError(
                    f"{gp}.layout", f"must be 'unknown' (omit it when known), got {f.shown(g['layout'])}"
                )
            gid = f.string(g["id"], f"{gp}.id")
            mname = f.string(g["model"], f"{gp}.model")
            if mname not in models:
                raise InstanceError(
                    f"{gp}.model",
                    f"unknown GPU model {f.shown(mname)} (see `mipopt info`, or add custom_gpu_models)",
                )
            device = g.get("device_index")
            gpus.append(
                Gpu(
                    gid,
                    models[mname],
                    hid,
                    len(gpus),
                    device_index=None if device is None else f.integer(device, f"{gp}.device_index"),
                    uuid=None if g.get("uuid") is None else f.string(g["uuid"], f"{gp}.uuid"),
                    layout_known="layout" not in g,
                )
            )
            gpu_ids.append(gid)
        hosts.append(
            Host(
                hid,
                tuple(gpu_ids),
                cpu=_capacity(h, "cpu", path),
                ram_gb=_capacity(h, "ram_gb", path),
                weight=f.number(h.get("weight", 1.0), f"{path}.weight"),
            )
        )

    workloads = [
        _workload(raw, f"workloads[{k}]") for k, raw in enumerate(f.lst(d["workloads"], "workloads"))
    ]
    idle = tuple(_idle(raw, f"idle[{k}]") for k, raw in enumerate(f.lst(d.get("idle", []), "idle")))
    notes = tuple(f.string(n, f"notes[{i}]") for i, n in enumerate(f.lst(d.get("notes", []), "notes")))
    return Instance(
        name,
        tuple(hosts),
        tuple(gpus),
        tuple(workloads),
        tuple(custom.values()),
        description,
        idle,
        notes,
        _path=source,
    )


def _profile_key(profile: Any, path: str) -> str | int:
    """A profile name or ``-lgip`` id."""
    if isinstance(profile, bool) or not isinstance(profile, str | int):
        raise InstanceError(path, f"must be a profile name or id, got {f.type_name(profile)}")
    return f.integer(profile, path) if isinstance(profile, int) else f.string(profile, path)


def _idle(raw: Any, path: str) -> IdleInstance:
    d = f.obj(raw, path, ("gpu", "profile", "start"), ("gpu_instance_id",))
    gi = d.get("gpu_instance_id")
    return IdleInstance(
        f.string(d["gpu"], f"{path}.gpu"),
        _profile_key(d["profile"], f"{path}.profile"),
        f.integer(d["start"], f"{path}.start"),
        None if gi is None else f.integer(gi, f"{path}.gpu_instance_id"),
    )


def _capacity(h: dict[str, Any], key: str, path: str) -> float | None:
    value = h.get(key)
    return None if value is None else f.number(value, f"{path}.{key}")


def _workload(raw: Any, path: str) -> Workload:
    w = f.obj(raw, path, ("id",), _WORKLOAD_OPTIONAL)
    wid = f.string(w["id"], f"{path}.id")
    if "profile" in w and "memory_gb" in w:
        raise InstanceError(path, "give either profile or memory_gb, not both")
    if "profile" not in w and "memory_gb" not in w:
        raise InstanceError(f"{path}.profile", "missing required field (or give memory_gb instead)")
    profile = w.get("profile")
    memory_gb = min_compute = None
    if "profile" in w:  # a null profile is refused, not read as "no profile"
        profile = _profile_key(profile, f"{path}.profile")
        if "min_compute" in w:
            raise InstanceError(
                f"{path}.min_compute", "goes with memory_gb (a named profile has its own compute)"
            )
    else:
        memory_gb = f.number(w["memory_gb"], f"{path}.memory_gb", maximum=f.MAX_QUANTITY)
        if memory_gb <= 0:
            raise InstanceError(f"{path}.memory_gb", f"must be > 0, got {memory_gb:g}")
        if "min_compute" in w:
            min_compute = f.integer(w["min_compute"], f"{path}.min_compute", minimum=1)
    gpu_models = None
    if "gpu_models" in w:
        gp = f"{path}.gpu_models"
        gpu_models = tuple(f.string(m, f"{gp}[{i}]") for i, m in enumerate(f.lst(w["gpu_models"], gp)))
    placement = None
    if w.get("placement") is not None:
        pp = f"{path}.placement"
        p = f.obj(w["placement"], pp, ("gpu", "start"), ("gpu_instance_id", "profile"))
        gi = p.get("gpu_instance_id")
        placement = Placement(
            f.string(p["gpu"], f"{pp}.gpu"),
            f.integer(p["start"], f"{pp}.start"),
            None if gi is None else f.integer(gi, f"{pp}.gpu_instance_id"),
            None if p.get("profile") is None else f.string(p["profile"], f"{pp}.profile"),
        )
    return Workload(
        wid,
        profile,
        memory_gb=memory_gb,
        min_compute=min_compute,
        cpu=f.number(w.get("cpu", 0.0), f"{path}.cpu"),
        ram_gb=f.number(w.get("ram_gb", 0.0), f"{path}.ram_gb"),
        weight=f.number(w.get("weight", 1.0), f"{path}.weight"),
        migration_weight=f.number(w.get("migration_weight", 1.0), f"{path}.migration_weight"),
        gpu_models=gpu_models,
        placement=placement,
        pinned=f.boolean(w.get("pinned", False), f"{path}.pinned"),
    )


def instance_to_dict(inst: Instance) -> dict[str, Any]:
    """The JSON form; reading it back gives an equal instance."""
    out: dict[str, Any] = {"format": INSTANCE_FORMAT, "version": FORMAT_VERSION, "name": inst.name}
    if inst.description:
        out["description"] = inst.description
    if inst.custom_models:
        out["custom_gpu_models"] = [m.to_dict() for m in inst.custom_models]
    out["hosts"] = []
    for h in inst.hosts:
        hd: dict[str, Any] = {"id": h.id}
        if h.cpu is not None:
            hd["cpu"] = h.cpu
        if h.ram_gb is not None:
            hd["ram_gb"] = h.ram_gb
        hd["weight"] = h.weight
        hd["gpus"] = [_gpu_dict(inst.gpu(g)) for g in h.gpus]
        out["hosts"].append(hd)
    out["workloads"] = []
    for w in inst.workloads:
        wd: dict[str, Any] = {"id": w.id}
        if w.profile is not None:
            wd["profile"] = w.profile
        else:
            wd["memory_gb"] = w.memory_gb
            if w.min_compute is not None:
                wd["min_compute"] = w.min_compute
        wd |= {
            "cpu": w.cpu,
            "ram_gb": w.ram_gb,
            "weight": w.weight,
            "migration_weight": w.migration_weight,
        }
        if w.gpu_models is not None:
            wd["gpu_models"] = list(w.gpu_models)
        if w.placement is not None:
            wd["placement"] = {"gpu": w.placement.gpu, "start": w.placement.start}
            if w.placement.gpu_instance_id is not None:
                wd["placement"]["gpu_instance_id"] = w.placement.gpu_instance_id
            if w.placement.profile is not None:
                wd["placement"]["profile"] = w.placement.profile
        if w.pinned:
            wd["pinned"] = True
        out["workloads"].append(wd)
    if inst.idle:
        out["idle"] = [
            {"gpu": i.gpu, "profile": i.profile, "start": i.start}
            | ({} if i.gpu_instance_id is None else {"gpu_instance_id": i.gpu_instance_id})
            for i in inst.idle
        ]
    if inst.notes:
        out["notes"] = list(inst.notes)
    return out


def _gpu_dict(g: Gpu) -> dict[str, Any]:
    out: dict[str, Any] = {"id": g.id, "model": g.model.name}
    if g.device_index is not None:
        out["device_index"] = g.device_index
    if g.uuid is not None:
        out["uuid"] = g.uuid
    if not g.layout_known:
        out["layout"] = "unknown"
    return out


_SOLUTION_REQUIRED = ("format", "version", "placements")
_SOLUTION_OPTIONAL = (
    "instance",
    "method",
    "termination",
    "status",
    "rejected",
    "rejections",
    "runtime_s",
    "objectives",
    "bound",
    "gap",
    "metrics",
    "message",
    "stages",
)
_STAGE_FIELDS = ("objective", "value", "bound", "gap", "proven", "termination", "runtime_s")

#: What a solution file that does not say reads as (``docs/formats.md``, "Solutions written by
#: hand"): made by hand, proving nothing. ``completed`` is the termination of a method that ran
#: to its end without proving anything; ``feasible`` claims only what the verifier checks.
HAND_METHOD = "hand-written"
HAND_TERMINATION = Termination.COMPLETED
HAND_STATUS = Status.FEASIBLE


def solution_from_dict(data: Any) -> Solution:
    """Read a solution from its parsed JSON; only its shape is checked here.

    Only ``format``, ``version`` and ``placements`` are required, so a solution can be
    written by hand. Missing fields read as: ``instance`` ``""`` (not named, so not
    checked), ``method`` :data:`HAND_METHOD`, ``termination`` :data:`HAND_TERMINATION`,
    ``status`` :data:`HAND_STATUS`, no ``rejected`` (the verifier counts every new
    workload that is not placed as rejected), no ``objectives`` or ``metrics`` (nothing
    claimed), no ``rejections`` (why workloads are rejected: information, read and kept,
    never checked; :func:`mipopt.verifier.rejection_reasons` recomputes it). Whether the
    solution obeys the rules of an instance, and whether what it claims is true, is the
    verifier's question (:func:`mipopt.verifier.verify`).

    Raises
    ------
    InstanceError
        Naming the JSON path and the rule, for the first problem found
        (``placements[2].start: must be >= 0, got -4``).

    Examples
    --------
    >>> sol = solution_from_dict({"format": "mipopt-solution", "version": 1,
    ...     "placements": [{"workload": "w1", "gpu": "g0", "start": 4}]})
    >>> sol.method, sol.termination.value, sol.status.value, sol.rejected
    ('hand-written', 'completed', 'feasible', ())
    """
    _check_format(data, SOLUTION_FORMAT)
    d = f.obj(data, "", _SOLUTION_REQUIRED, _SOLUTION_OPTIONAL)
    _header(d, SOLUTION_FORMAT)
    term = _termination(d.get("termination", HAND_TERMINATION.value), "termination")
    status = f.choice(d.get("status", HAND_STATUS.value), "status", [s.value for s in Status])
    placements = []
    for i, raw in enumerate(f.lst(d["placements"], "placements")):
        path = f"placements[{i}]"
        p = f.obj(raw, path, ("workload", "gpu", "start"), ("profile",))
        placements.append(
            Assignment(
                f.identifier(p["workload"], f"{path}.workload"),
                f.identifier(p["gpu"], f"{path}.gpu"),
                f.integer(p["start"], f"{path}.start"),
                None if p.get("profile") is None else f.string(p["profile"], f"{path}.profile"),
            )
        )
    raw_rejected = f.lst(d.get("rejected", []), "rejected")
    rejected = tuple(f.identifier(r, f"rejected[{i}]") for i, r in enumerate(raw_rejected))
    objectives = None
    if d.get("objectives") is not None:
        o = f.obj(d["objectives"], "objectives", ("acceptance", "hardware", "migrations"), ("restarts",))
        acceptance, hardware, migrations = (
            f.number(o[k], f"objectives.{k}", minimum=None) for k in ("acceptance", "hardware", "migrations")
        )
        restarts = (
            None if "restarts" not in o else f.number(o["restarts"], "objectives.restarts", minimum=None)
        )
        objectives = Objectives(acceptance, hardware, migrations, restarts)
    raw_metrics = d.get("metrics") or {}
    if not isinstance(raw_metrics, dict):
        raise InstanceError("metrics", f"must be an object, got {f.type_name(raw_metrics)}")
    metrics = {
        f.identifier(k, f.join("metrics", k)): f.number(v, f.join("metrics", k), minimum=None)
        for k, v in raw_metrics.items()
    }
    stages = tuple(_stage(raw, f"stages[{i}]") for i, raw in enumerate(f.lst(d.get("stages", []), "stages")))
    raw_rejections = f.lst(d.get("rejections", []), "rejections")
    rejections = tuple(_rejection(raw, f"rejections[{i}]") for i, raw in enumerate(raw_rejections))
    return Solution(
        instance=f.identifier(d["instance"], "instance") if "instance" in d else "",
        method=f.identifier(d.get("method", HAND_METHOD), "method"),
        termination=term,
        status=Status(status),
        placements=tuple(placements),
        rejected=rejected,
        runtime_s=f.number(d.get("runtime_s", 0.0), "runtime_s"),
        objectives=objectives,
        bound=None if d.get("bound") is None else f.number(d["bound"], "bound", minimum=None),
        gap=None if d.get("gap") is None else f.number(d["gap"], "gap"),
        metrics=metrics,
        message=f.text(d.get("message", ""), "message"),
        stages=stages,
        rejections=rejections,
    )


def _rejection(raw: Any, path: str) -> Rejection:
    r = f.obj(raw, path, ("workload", "reason", "message"))
    code = f.choice(r["reason"], f"{path}.reason", REJECTION_CODES)
    return Rejection(
        f.identifier(r["workload"], f"{path}.workload"), code, f.text(r["message"], f"{path}.message")
    )


def _termination(value: Any, path: str) -> Termination:
    return Termination(f.choice(value, path, [t.value for t in Termination]))


def _stage(raw: Any, path: str) -> StageResult:
    s = f.obj(raw, path, _STAGE_FIELDS, ("model",))

    def number(key: str, minimum: float | None = None) -> float | None:
        return None if s[key] is None else f.number(s[key], f"{path}.{key}", minimum=minimum)

    if not isinstance(s["proven"], bool):
        raise InstanceError(f"{path}.proven", f"must be true or false, got {f.type_name(s['proven'])}")
    return StageResult(
        objective=f.identifier(s["objective"], f"{path}.objective"),
        value=number("value"),
        bound=number("bound"),
        gap=number("gap", 0.0),
        proven=s["proven"],
        termination=_termination(s["termination"], f"{path}.termination"),
        runtime_s=f.number(s["runtime_s"], f"{path}.runtime_s"),
        model=f.text(s.get("model", ""), f"{path}.model", lines=False),
    )


def _assignment_dict(a: Assignment) -> dict[str, Any]:
    out: dict[str, Any] = {"workload": a.workload, "gpu": a.gpu, "start": a.start}
    if a.profile is not None:
        out["profile"] = a.profile
    return out


def solution_to_dict(sol: Solution) -> dict[str, Any]:
    """The JSON form, every field written; reading it back gives an equal solution.

    ``instance`` is left out when the solution names none (a hand-written one), and
    ``rejections`` when the solution carries none (nobody asked why).
    """
    out: dict[str, Any] = {"format": SOLUTION_FORMAT, "version": FORMAT_VERSION}
    if sol.instance:
        out["instance"] = sol.instance
    out |= {
        "method": sol.method,
        "termination": sol.termination.value,
        "status": sol.status.value,
        "runtime_s": sol.runtime_s,
        "objectives": None if sol.objectives is None else sol.objectives.to_dict(),
        "bound": sol.bound,
        "gap": sol.gap,
        "placements": [_assignment_dict(a) for a in sol.placements],
        "rejected": list(sol.rejected),
        "metrics": dict(sol.metrics),
        "message": sol.message,
        "stages": [st.to_dict() for st in sol.stages],
    }
    if sol.rejections:
        out["rejections"] = [r.to_dict() for r in sol.rejections]
    return out
