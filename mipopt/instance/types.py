"""Frozen instance and solution types.

An :class:`Instance` is validated when built: every cross-reference and every
rule the running workloads must already obey is checked in ``__post_init__``,
so a value built by :func:`mipopt.instance.instance_from_dict`, by
:class:`mipopt.instance.InstanceBuilder` or by ``dataclasses.replace`` is valid.
Errors are :class:`mipopt.errors.InstanceError` naming the JSON path.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum
from functools import cache
from math import isfinite
from numbers import Integral, Real
from operator import attrgetter
from pathlib import Path

from mipopt._fields import MAX_QUANTITY, name_problem, number, shown, text_problem
from mipopt.catalog import GpuModel, Profile, builtin_models
from mipopt.errors import InstanceError, ParameterTypeError

INSTANCE_FORMAT = "mipopt-instance"
SOLUTION_FORMAT = "mipopt-solution"
FORMAT_VERSION = 1


#: A variant of a base profile (``1g.10gb+me``, ``1g.24gb+gfx``, ``2g.48gb-me``): never chosen for memory alone.
_VARIANT = re.compile(r"^\d+g\.\d+gb.")


@cache
def fitting_profiles(
    model: GpuModel, memory_gb: float, min_compute: int | None = None
) -> tuple[Profile, ...]:
    """The profiles of ``model`` with at least ``memory_gb`` and ``min_compute`` compute slices,
    smallest first (compute slices, then memory, then name), variants left out
    (:meth:`Instance.profiles_on`).

    >>> from mipopt.catalog import get_model
    >>> [p.name for p in fitting_profiles(get_model("A100-40GB"), 10)]
    ['1g.10gb', '2g.10gb', '3g.20gb', '4g.20gb', '7g.40gb']
    >>> [p.name for p in fitting_profiles(get_model("A100-40GB"), 10, 3)]
    ['3g.20gb', '4g.20gb', '7g.40gb']
    """
    fit = [
        p
        for p in model.profiles
        if p.memory_gb >= memory_gb
        and p.compute >= (min_compute or 0)
        and not p.media_extension
        and not _VARIANT.match(p.name)
    ]
    return tuple(sorted(fit, key=lambda p: (p.compute, p.memory_gb, p.name)))


@dataclass(frozen=True, slots=True)
class Gpu:
    """One physical GPU. ``index`` is its global position (hosts in order, then GPUs).

    ``device_index`` and ``uuid`` say how the GPU is addressed on its host (``nvidia-smi -i``,
    NVML handles), when known: an imported cluster has them, a hand-written instance need not.
    ``layout_known`` is False for a GPU that holds MIG devices at places nobody has read (a
    Kubernetes node's labels say it is partitioned; its ``nvidia-smi mig -lgi`` was not
    merged): no method places anything on it, since its free slots are unknown.
    """

    id: str
    model: GpuModel
    host: str
    index: int
    device_index: int | None = None
    uuid: str | None = None
    layout_known: bool = True


@dataclass(frozen=True, slots=True)
class Host:
    """A machine. ``cpu``/``ram_gb`` are capacities, None for unlimited; ``weight`` is b_j of GRMU Eq. 4."""

    id: str
    gpus: tuple[str, ...]
    cpu: float | None = None
    ram_gb: float | None = None
    weight: float = 1.0


@dataclass(frozen=True, slots=True)
class Placement:
    """Where an instance sits: a GPU and a start slot.

    ``profile`` is the profile a memory-sized workload (:attr:`Workload.memory_gb`) runs at,
    one of :meth:`Instance.profiles_on` for the GPU's model; when not given it runs at the
    smallest of them. A workload that names its profile may repeat it here, nothing else.
    ``gpu_instance_id`` is the GPU-instance id the driver gave the running instance
    (``nvidia-smi mig -lgi``), when known; it names the instance but is not part of where it
    sits, so two placements at the same GPU and start are equal whatever their ids.
    """

    gpu: str
    start: int
    gpu_instance_id: int | None = field(default=None, compare=False)
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class IdleInstance:
    """A GPU instance that exists on a GPU but that no workload uses.

    Methods see its slots as free: one may reuse it for a new workload of its profile at
    its start (the plan then does nothing there) or let the plan destroy it, which
    interrupts nobody. ``gpu_instance_id`` is the id ``nvidia-smi mig -lgi`` gave it.
    """

    gpu: str
    profile: str | int
    start: int
    gpu_instance_id: int | None = None


@dataclass(frozen=True, slots=True)
class Workload:
    """A request for one GPU instance.

    ``profile`` is a profile name (or ``-lgip`` id) of the model the workload lands
    on. A memory-sized workload gives ``memory_gb`` instead (and optionally
    ``min_compute``, compute slices): the method chooses a profile of at least that
    memory and compute on the GPU it picks (:meth:`Instance.profiles_on`); exactly one of
    ``profile`` and ``memory_gb`` is given. ``gpu_models`` optionally restricts the models; ``weight`` is a_i of GRMU
    Eq. 3 and ``migration_weight`` is delta_i of Eq. 5. A workload with a
    ``placement`` is running now and stays placed; ``pinned`` ones may not move.
    """

    id: str
    profile: str | int | None
    cpu: float = 0.0
    ram_gb: float = 0.0
    weight: float = 1.0
    migration_weight: float = 1.0
    gpu_models: tuple[str, ...] | None = None
    placement: Placement | None = None
    pinned: bool = False
    memory_gb: float | None = None
    min_compute: int | None = None

    @property
    def running(self) -> bool:
        return self.placement is not None

    @property
    def memory_sized(self) -> bool:
        """Sized by memory (``memory_gb``): the method chooses the profile."""
        return self.profile is None

    @property
    def sizing(self) -> str | int | tuple[float | None, int | None, tuple[str, str] | None]:
        """What decides the profiles it may take on each model, besides ``gpu_models``: its
        profile; or its memory, its minimum compute and, running at a chosen profile, where and
        at which. Workloads of equal sizing and ``gpu_models`` take the same profiles on every
        model (a key for caches over identical requests)."""
        if self.profile is not None:
            return self.profile
        run = self.placement
        held = None if run is None or run.profile is None else (run.gpu, run.profile)
        return (self.memory_gb, self.min_compute, held)

    @property
    def size(self) -> str:
        """What the workload asks for, in words: its profile, or ``>=20gb`` (``>=20gb,2g``)."""
        if self.profile is not None:
            return str(self.profile)
        extra = "" if self.min_compute is None else f",{self.min_compute}g"
        return f">={self.memory_gb:g}gb{extra}"


@dataclass(frozen=True, slots=True)
class Instance:
    """A cluster (hosts with GPUs) and its workloads, running and new.

    Build with :func:`mipopt.instance.instance_from_dict` or
    :class:`mipopt.instance.InstanceBuilder`; both end here, where the
    cross-references and the rules of the running state are checked.

    An instance read by :func:`mipopt.load_instance` remembers its file (``_path``, kept
    through ``dataclasses.replace``, neither written nor compared), so that :meth:`save`
    never writes over it.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> [h.id for h in inst.hosts], inst.gpu("h2-g0").model.name
    (['h1', 'h2'], 'H100-80GB')
    >>> inst.current_placement()["llm-c"], inst.workload("llm-c").pinned
    (('h2-g0', 4), True)
    """

    name: str
    hosts: tuple[Host, ...]
    gpus: tuple[Gpu, ...]
    workloads: tuple[Workload, ...]
    custom_models: tuple[GpuModel, ...] = ()
    description: str = ""
    idle: tuple[IdleInstance, ...] = ()
    notes: tuple[str, ...] = ()
    _gpu: dict[str, Gpu] = field(init=False, repr=False, compare=False)
    _host: dict[str, Host] = field(init=False, repr=False, compare=False)
    _workload: dict[str, Workload] = field(init=False, repr=False, compare=False)
    _models: dict[str, GpuModel] = field(init=False, repr=False, compare=False)
    _running: tuple[Workload, ...] = field(init=False, repr=False, compare=False)
    _new: tuple[Workload, ...] = field(init=False, repr=False, compare=False)
    _path: Path | None = field(default=None, kw_only=True, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_gpu", {g.id: g for g in self.gpus})
        object.__setattr__(self, "_models", {g.model.name: g.model for g in self.gpus})
        object.__setattr__(self, "_host", {h.id: h for h in self.hosts})
        object.__setattr__(self, "_workload", {w.id: w for w in self.workloads})
        # read once per GPU by the models' warm starts: a scan each time was quadratic
        object.__setattr__(self, "_running", tuple(w for w in self.workloads if w.running))
        object.__setattr__(self, "_new", tuple(w for w in self.workloads if not w.running))
        _check(self)

    # --- lookups

    def gpu(self, gpu_id: str) -> Gpu:
        return self._gpu[gpu_id]

    def host(self, host_id: str) -> Host:
        return self._host[host_id]

    def workload(self, workload_id: str) -> Workload:
        return self._workload[workload_id]

    def has_gpu(self, gpu_id: str) -> bool:
        return gpu_id in self._gpu

    def has_workload(self, workload_id: str) -> bool:
        return workload_id in self._workload

    @property
    def models(self) -> dict[str, GpuModel]:
        """The models of this instance's GPUs, by name (a copy, since the instance is frozen)."""
        return dict(self._models)

    def profile_on(self, workload: Workload, model: GpuModel) -> Profile | None:
        """The profile ``workload`` takes on ``model`` by default, or None when it cannot run there.

        Its own profile; for a memory-sized workload the smallest of :meth:`profiles_on`,
        except that a running one keeps the profile it runs at (:attr:`Placement.profile`) on
        a GPU of its GPU's model. So a method that places every workload at this profile
        places memory-sized ones at the smallest that fits, as HAMi and MIGBench choose.

        Examples
        --------
        >>> import mipopt
        >>> inst = mipopt.load_instance("instances/memory_sized.json")
        >>> h100 = inst.gpu("h1-g0").model
        >>> inst.profile_on(inst.workload("chat-12gb"), h100).name
        '1g.20gb'
        """
        if workload.profile is not None:
            if workload.gpu_models is not None and model.name not in workload.gpu_models:
                return None
            return model.find(workload.profile)
        running = workload.placement
        if (
            running is not None
            and running.profile is not None
            and self._gpu[running.gpu].model.name == model.name
        ):
            return model.find(running.profile)
        fitting = self.profiles_on(workload, model)
        return fitting[0] if fitting else None

    def moved_to(self, workload: Workload, gpu_id: str, start: int) -> Placement:
        """The placement of ``workload`` run at ``gpu_id:start`` instead, at the profile it takes
        there by default (:meth:`profile_on`): for a memory-sized one, named in the placement, so
        that an instance built with it keeps the profile (a running one keeps its own on its
        GPU's model).

        >>> import mipopt
        >>> inst = mipopt.load_instance("instances/memory_sized.json")
        >>> inst.moved_to(inst.workload("train-35gb"), "h2-g0", 0)
        Placement(gpu='h2-g0', start=0, gpu_instance_id=None, profile='7g.40gb')
        """
        if not workload.memory_sized:
            return Placement(gpu_id, start)
        profile = self.profile_on(workload, self._gpu[gpu_id].model)
        return Placement(gpu_id, start, profile=None if profile is None else profile.name)

    def profiles_on(self, workload: Workload, model: GpuModel) -> tuple[Profile, ...]:
        """Every profile ``workload`` may take on ``model``, smallest first; ``()`` where it cannot run.

        ``(own,)`` for a workload that names its profile. For a memory-sized one, every
        profile of the model with at least ``memory_gb`` of memory (the catalog's nominal
        :attr:`Profile.memory_gb`) and ``min_compute`` compute slices, ordered by compute
        slices, then memory, then name. Media and graphics variants (``+me``, ``+gfx``,
        ``-me``) are left out: they hold engines of which a GPU has one set, which a request
        for memory does not ask for.

        Examples
        --------
        >>> import mipopt
        >>> inst = mipopt.load_instance("instances/memory_sized.json")
        >>> h100 = inst.gpu("h1-g0").model
        >>> [p.name for p in inst.profiles_on(inst.workload("chat-12gb"), h100)]
        ['1g.20gb', '2g.20gb', '3g.40gb', '4g.40gb', '7g.80gb']
        """
        if workload.gpu_models is not None and model.name not in workload.gpu_models:
            return ()
        if workload.profile is not None:
            own = model.find(workload.profile)
            return () if own is None else (own,)
        return fitting_profiles(model, workload.memory_gb or 0.0, workload.min_compute)

    def at_profiles(self, placed: Mapping[str, tuple[str, int]], profiles: Mapping[str, str]) -> Instance:
        """This instance with each new memory-sized workload of ``profiles`` asking for the
        profile chosen for it, by name, on the model of the GPU ``placed`` puts it on.

        Code that knows one profile per workload and model (the migration planner, the plan's
        verifier, the emitters) then creates the chosen profile. A running memory-sized
        workload moves at the profile it runs at (:meth:`profile_on`: on another model, the
        smallest that fits), so its entry must be that one. The instance itself when no
        workload changes.

        Raises
        ------
        InstanceError
            Naming ``profiles.ID`` for a workload the instance does not have, that ``placed``
            leaves out, or whose profile does not fit it there (or changes a running one's).

        Examples
        --------
        >>> import mipopt
        >>> inst = mipopt.load_instance("instances/memory_sized.json")
        >>> fixed = inst.at_profiles({"chat-12gb": ("h1-g0", 0)}, {"chat-12gb": "2g.20gb"})
        >>> w = fixed.workload("chat-12gb")
        >>> w.profile, w.gpu_models, fixed.profile_on(w, fixed.gpu("h1-g0").model).name
        ('2g.20gb', ('H100-80GB',), '2g.20gb')
        """
        changed: dict[str, Workload] = {}
        for wid, name in profiles.items():
            path = f"profiles.{wid}"
            if wid not in self._workload or wid not in placed or placed[wid][0] not in self._gpu:
                raise InstanceError(path, f"{wid!r} is not a workload placed on a GPU of {self.name!r}")
            w = self._workload[wid]
            model = self._gpu[placed[wid][0]].model
            chosen = model.find(name)
            default = self.profile_on(w, model)
            if chosen is not None and chosen == default:
                continue
            fitting = self.profiles_on(w, model)
            if chosen is None or chosen not in fitting:
                may = ", ".join(p.name for p in fitting) or "none"
                raise InstanceError(path, f"{name!r} does not fit {wid!r} on {model.name} ({w.size}: {may})")
            if w.running:
                raise InstanceError(
                    path,
                    f"running {wid!r} would change its profile to {chosen.name} on {model.name}; it moves at "
                    f"{default.name if default else '?'}, the profile it runs at (or the smallest that fits)",
                )
            changed[wid] = replace(
                w, profile=chosen.name, memory_gb=None, min_compute=None, gpu_models=(model.name,)
            )
        if not changed:
            return self
        return replace(self, workloads=tuple(changed.get(w.id, w) for w in self.workloads))

    @property
    def running(self) -> tuple[Workload, ...]:
        return self._running

    def current_placement(self) -> dict[str, tuple[str, int]]:
        """Where the running workloads are now: workload id -> (GPU id, start)."""
        return {w.id: (w.placement.gpu, w.placement.start) for w in self.workloads if w.placement}

    @property
    def new(self) -> tuple[Workload, ...]:
        return self._new

    @property
    def unknown_layout(self) -> tuple[str, ...]:
        """The ids of the GPUs whose layout is unknown (:attr:`Gpu.layout_known`)."""
        return tuple(g.id for g in self.gpus if not g.layout_known)

    def placeable(self) -> Instance:
        """This instance without the GPUs of unknown layout: what a method may place on.

        Hosts keep their cpu and ram; a host left with no GPU stays, empty. The instance
        itself when every layout is known.
        """
        if not self.unknown_layout:
            return self
        hosts = tuple(
            replace(h, gpus=tuple(g for g in h.gpus if self._gpu[g].layout_known)) for h in self.hosts
        )
        gpus = [g for g in self.gpus if g.layout_known]
        return replace(self, hosts=hosts, gpus=tuple(replace(g, index=i) for i, g in enumerate(gpus)))

    # --- files

    def to_json(self) -> str:
        """The instance as ``mipopt-instance`` JSON text (docs/formats.md), as :meth:`save` writes it.

        Examples
        --------
        >>> import json, mipopt
        >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
        >>> json.loads(inst.to_json())["format"], mipopt.instance.instance_from_dict(json.loads(inst.to_json())) == inst
        ('mipopt-instance', True)
        """
        from mipopt.instance.parse import instance_to_dict
        from mipopt.io import json_text

        return json_text(instance_to_dict(self))

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path`` atomically (a reader never sees half a file).

        Raises
        ------
        InstanceError
            Naming ``path`` when it is the file this instance was read from: write to another.

        Examples
        --------
        >>> import mipopt, tempfile, pathlib
        >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     inst.save(pathlib.Path(tmp, "copy.json"))
        ...     mipopt.load_instance(pathlib.Path(tmp, "copy.json")) == inst
        True
        >>> inst.save("instances/grmu_fig2b.json")
        Traceback (most recent call last):
        ...
        mipopt.errors.InstanceError: path: instances/grmu_fig2b.json is the file the instance was read from; write it to another file
        """
        from mipopt.instance.parse import instance_to_dict
        from mipopt.io import save_json

        save_json(path, instance_to_dict(self), read_from=self._path)


def _check(inst: Instance) -> None:
    """Names, quantities, cross-references, then the rules the running state must obey."""
    _check_names(inst)
    _check_quantities(inst)
    _check_hosts(inst)
    _check_workloads(inst)
    _check_running(inst)


def _check_names(inst: Instance) -> None:
    """Every name is one printable line that no shell, terminal or YAML reader misreads
    (:func:`mipopt._fields.name_problem`); the description and notes are printable lines."""
    checks: list[tuple[str, str]] = [("name", inst.name)]
    for i, h in enumerate(inst.hosts):
        checks.append((f"hosts[{i}].id", h.id))
        for j, gid in enumerate(h.gpus):
            checks.append((f"hosts[{i}].gpus[{j}].id", gid))
            g = inst._gpu.get(gid)
            if g is not None and g.uuid is not None:
                checks.append((f"hosts[{i}].gpus[{j}].uuid", g.uuid))
    for k, w in enumerate(inst.workloads):
        checks.append((f"workloads[{k}].id", w.id))
        if isinstance(w.profile, str):
            checks.append((f"workloads[{k}].profile", w.profile))
        if w.placement is not None and w.placement.profile is not None:
            checks.append((f"workloads[{k}].placement.profile", w.placement.profile))
        for m, name in enumerate(w.gpu_models or ()):
            checks.append((f"workloads[{k}].gpu_models[{m}]", name))
    checks += _model_names(inst)
    for path, value in checks:
        problem = name_problem(value) if isinstance(value, str) else "must be a string"
        if problem:
            raise InstanceError(path, problem)
    texts = [("description", inst.description)] + [(f"notes[{i}]", n) for i, n in enumerate(inst.notes)]
    for path, value in texts:
        problem = text_problem(value)
        if problem:
            raise InstanceError(path, problem)


def _model_names(inst: Instance) -> list[tuple[str, str]]:
    """The names a model not built in brings (custom_gpu_models, or a GpuModel given to a GPU
    from Python): its own, its profiles' and their aliases."""
    builtin = builtin_models()
    models = {f"custom_gpu_models[{i}]": m for i, m in enumerate(inst.custom_models)}
    custom = {m.name for m in inst.custom_models}
    for i, h in enumerate(inst.hosts):
        for j, gid in enumerate(h.gpus):
            g = inst._gpu.get(gid)
            if g is not None and g.model.name not in custom and builtin.get(g.model.name) is not g.model:
                custom.add(g.model.name)
                models[f"hosts[{i}].gpus[{j}].model"] = g.model
    checks = []
    for path, m in models.items():
        checks.append((path if path.endswith(".model") else f"{path}.model", m.name))
        for k, prof in enumerate(m.profiles):
            checks.append((f"{path}.profiles[{k}].name", prof.name))
            checks += [(f"{path}.profiles[{k}].aliases[{a}]", alias) for a, alias in enumerate(prof.aliases)]
    return checks


def _check_quantities(inst: Instance) -> None:
    """Every cpu, ram_gb and weight is a finite number from 0 to :data:`mipopt._fields.MAX_QUANTITY`,
    so that no sum of them (an objective, a host's load) overflows. The common case is checked
    at C speed; a failing group is read again to name the value."""
    groups = (
        ("hosts", inst.hosts, ("cpu", "ram_gb", "weight")),
        ("workloads", inst.workloads, ("cpu", "ram_gb", "weight", "migration_weight")),
    )
    for group, items, attrs in groups:
        for attr in attrs:
            optional = group == "hosts" and attr != "weight"  # a host's cpu, ram: None is unlimited
            values = list(map(attrgetter(attr), items))
            if optional:
                values = [x for x in values if x is not None]
            # (bools and numpy numbers are not int nor float: read again; a nan or inf sums to one)
            if {*map(type, values)} <= {float, int} and (
                not values or (min(values) >= 0 and max(values) <= MAX_QUANTITY and isfinite(sum(values)))
            ):
                continue
            for i, item in enumerate(items):
                x = getattr(item, attr)
                if not (optional and x is None):
                    number(
                        float(x) if isinstance(x, Real) and not isinstance(x, bool | int) else x,
                        f"{group}[{i}].{attr}",
                        maximum=MAX_QUANTITY,
                    )


def _check_hosts(inst: Instance) -> None:
    """Unique host and GPU ids, every GPU listed with its own host."""
    host_index: dict[str, int] = {}
    for i, h in enumerate(inst.hosts):
        if h.id in host_index:
            raise InstanceError(f"hosts[{i}].id", f"duplicate id {h.id!r} (also hosts[{host_index[h.id]}])")
        host_index[h.id] = i
    gpu_path: dict[str, str] = {}
    # duplicates first: with a repeated id, the lookup below sees only the last GPU of that id
    for i, h in enumerate(inst.hosts):
        for j, gid in enumerate(h.gpus):
            path = f"hosts[{i}].gpus[{j}]"
            if gid in gpu_path:
                raise InstanceError(f"{path}.id", f"duplicate GPU id {gid!r} (also {gpu_path[gid]})")
            gpu_path[gid] = path
    for i, h in enumerate(inst.hosts):
        for j, gid in enumerate(h.gpus):
            path = f"hosts[{i}].gpus[{j}]"
            g = inst._gpu.get(gid)
            if g is None or g.host != h.id:
                raise InstanceError(path, f"GPU {gid!r} is not listed with host {h.id!r}")
    if len(gpu_path) != len(inst.gpus):
        orphan = next(g.id for g in inst.gpus if g.id not in gpu_path)
        raise InstanceError("hosts", f"GPU {orphan!r} belongs to no host")
    _check_addresses(inst, gpu_path)


def _check_addresses(inst: Instance, gpu_path: dict[str, str]) -> None:
    """Device indices unique on their host, UUIDs unique in the cluster."""
    by_index: dict[tuple[str, int], str] = {}
    by_uuid: dict[str, str] = {}
    for g in inst.gpus:
        path = gpu_path[g.id]
        if g.device_index is not None:
            if g.device_index < 0:
                raise InstanceError(f"{path}.device_index", f"must be >= 0, got {g.device_index}")
            other = by_index.setdefault((g.host, g.device_index), g.id)
            if other != g.id:
                raise InstanceError(
                    f"{path}.device_index", f"{g.device_index} is also GPU {other!r} of host {g.host!r}"
                )
        if g.uuid is not None:
            other = by_uuid.setdefault(g.uuid, g.id)
            if other != g.id:
                raise InstanceError(f"{path}.uuid", f"{g.uuid!r} is also GPU {other!r}")


def _check_workloads(inst: Instance) -> None:
    """Unique workload ids; models and profiles that exist; pinned only when running."""
    models_in_use = inst.models
    known_models = {**builtin_models(), **{m.name: m for m in inst.custom_models}, **models_in_use}
    seen: dict[str, int] = {}
    for k, w in enumerate(inst.workloads):
        path = f"workloads[{k}]"
        if w.id in seen:
            raise InstanceError(f"{path}.id", f"duplicate id {w.id!r} (also workloads[{seen[w.id]}])")
        seen[w.id] = k
        if w.gpu_models is not None:
            if not w.gpu_models:
                raise InstanceError(f"{path}.gpu_models", "must name at least one model (omit it for any)")
            for m_i, name in enumerate(w.gpu_models):
                if name not in known_models:
                    raise InstanceError(f"{path}.gpu_models[{m_i}]", f"unknown GPU model {shown(name)}")
        if w.profile is None or w.memory_gb is not None or w.min_compute is not None:
            _check_memory_sized(inst, w, path, models_in_use, known_models)
        elif w.gpu_models is not None:
            for name in w.gpu_models:
                model = models_in_use.get(name)
                if model is not None and model.find(w.profile) is None:
                    raise InstanceError(f"{path}.profile", f"{shown(w.profile)} is not a profile of {name}")
        else:
            candidates = list(models_in_use.values())
            if not candidates:  # no GPU: the profile must be one of some model the instance knows
                if not any(m.find(w.profile) is not None for m in known_models.values()):
                    raise InstanceError(
                        f"{path}.profile",
                        f"{shown(w.profile)} is not a profile of any GPU model (the cluster has no GPUs)",
                    )
            elif not any(m.find(w.profile) is not None for m in candidates):
                names = ", ".join(m.name for m in candidates)
                where = names if len(candidates) == 1 else f"any GPU model here ({names})"
                raise InstanceError(f"{path}.profile", f"{shown(w.profile)} is not a profile of {where}")
        if w.pinned and w.placement is None:
            raise InstanceError(f"{path}.pinned", "a pinned workload needs a placement")


def _check_memory_sized(
    inst: Instance, w: Workload, path: str, models_in_use: dict[str, GpuModel], known: dict[str, GpuModel]
) -> None:
    """Exactly one of ``profile`` and ``memory_gb``; a positive memory and compute; some profile
    of a model the workload may use (of the cluster, or of any known model when it has no GPU) fits."""
    if w.profile is not None and w.memory_gb is not None:
        raise InstanceError(path, "give either profile or memory_gb, not both")
    if w.profile is None and w.memory_gb is None:
        raise InstanceError(f"{path}.profile", "missing required field (or give memory_gb instead)")
    if w.memory_gb is None:
        raise InstanceError(
            f"{path}.min_compute", "goes with memory_gb (a named profile has its own compute)"
        )
    if isinstance(w.memory_gb, bool) or not isinstance(w.memory_gb, Real):
        raise InstanceError(f"{path}.memory_gb", f"must be a number, got {type(w.memory_gb).__name__}")
    if not (isfinite(w.memory_gb) and 0 < w.memory_gb <= MAX_QUANTITY):
        raise InstanceError(f"{path}.memory_gb", f"must be > 0 and <= {MAX_QUANTITY:g}, got {w.memory_gb!r}")
    if w.min_compute is not None and (
        isinstance(w.min_compute, bool) or not isinstance(w.min_compute, Integral) or w.min_compute < 1
    ):
        raise InstanceError(f"{path}.min_compute", f"must be an integer >= 1, got {w.min_compute!r}")
    pool = models_in_use or known
    models = [m for name, m in pool.items() if w.gpu_models is None or name in w.gpu_models]
    if (
        not models and w.gpu_models is not None
    ):  # its models are not in the cluster: judge them by the catalog
        models = [known[name] for name in w.gpu_models]
    if any(fitting_profiles(m, w.memory_gb, w.min_compute) for m in models):
        return
    names = ", ".join(m.name for m in models) or "none"
    largest = ", ".join(f"{m.name} {max((p.memory_gb for p in m.profiles), default=0):g} GB" for m in models)
    if w.min_compute is not None and any(fitting_profiles(m, w.memory_gb) for m in models):
        raise InstanceError(
            f"{path}.min_compute",
            f"no profile of {names} has {w.memory_gb:g} GB and {w.min_compute} compute slices",
        )
    raise InstanceError(
        f"{path}.memory_gb", f"{w.memory_gb:g} GB is more than any profile of {names} has ({largest})"
    )


def _check_running(inst: Instance) -> None:
    """The running workloads form a valid state: legal starts, no overlap, limits, capacities."""
    used_cpu: dict[str, float] = defaultdict(float)
    used_ram: dict[str, float] = defaultdict(float)
    # per GPU: occupied slot -> workload id, profile counts, +me holder, compute used
    slot_owner: dict[str, dict[int, str]] = defaultdict(dict)
    counts: dict[tuple[str, str], int] = defaultdict(int)
    media: dict[str, str] = {}
    compute: dict[str, int] = defaultdict(int)
    gi_owner: dict[tuple[str, int], str] = {}
    for k, w in enumerate(inst.workloads):
        if w.placement is None:
            continue
        path = f"workloads[{k}]"
        pp = f"{path}.placement"
        gpu = inst._gpu.get(w.placement.gpu)
        if gpu is None:
            raise InstanceError(f"{pp}.gpu", f"unknown GPU {w.placement.gpu!r}")
        if not gpu.layout_known:
            raise InstanceError(
                f"{pp}.gpu", f"GPU {gpu.id!r} has an unknown layout: nothing can be placed on it"
            )
        gi = w.placement.gpu_instance_id
        if gi is not None:
            if gi < 0:
                raise InstanceError(f"{pp}.gpu_instance_id", f"must be >= 0, got {gi}")
            other = gi_owner.setdefault((gpu.id, gi), w.id)
            if other != w.id:
                raise InstanceError(
                    f"{pp}.gpu_instance_id", f"GPU instance {gi} on GPU {gpu.id!r} is also {other!r}"
                )
        model = gpu.model
        if w.gpu_models is not None and model.name not in w.gpu_models:
            raise InstanceError(
                f"{pp}.gpu", f"GPU {gpu.id!r} ({model.name}) is excluded by the workload's gpu_models"
            )
        profile = _running_profile(inst, w, model, path)
        start = w.placement.start
        if start not in profile.starts:
            starts = ", ".join(map(str, profile.starts))
            raise InstanceError(
                f"{pp}.start", f"{start} is not a legal start of {profile.name} on {model.name} ({starts})"
            )
        owners = slot_owner[gpu.id]
        for s in range(start, start + profile.memory_slots):
            if s in owners:
                raise InstanceError(
                    pp, f"overlaps running workload {owners[s]!r} on GPU {gpu.id!r} at slot {s}"
                )
        for s in range(start, start + profile.memory_slots):
            owners[s] = w.id
        counts[gpu.id, profile.name] += 1
        if counts[gpu.id, profile.name] > profile.max_instances:
            raise InstanceError(
                pp, f"more than {profile.max_instances} {profile.name} instances on GPU {gpu.id!r}"
            )
        if profile.media_extension:
            if gpu.id in media:
                raise InstanceError(
                    pp,
                    f"second +me instance on GPU {gpu.id!r} (one media-engine set, held by {media[gpu.id]!r})",
                )
            media[gpu.id] = w.id
        compute[gpu.id] += profile.compute
        if compute[gpu.id] > model.compute_slices:
            raise InstanceError(
                pp, f"GPU {gpu.id!r} would use more than {model.compute_slices} compute slices"
            )
        used_cpu[gpu.host] += w.cpu
        used_ram[gpu.host] += w.ram_gb
    _check_idle(inst, slot_owner, gi_owner)
    for i, h in enumerate(inst.hosts):
        for attr, used in (("cpu", used_cpu), ("ram_gb", used_ram)):
            cap = getattr(h, attr)
            if cap is not None and used[h.id] > cap + 1e-9:
                raise InstanceError(
                    f"hosts[{i}].{attr}", f"running workloads need {used[h.id]:g} > capacity {cap:g}"
                )


def _running_profile(inst: Instance, w: Workload, model: GpuModel, path: str) -> Profile:
    """The profile a running workload runs at: its own, or for a memory-sized one its
    ``placement.profile`` (one that fits it) or else the smallest that fits."""
    named = w.placement.profile if w.placement is not None else None
    if w.profile is not None:
        profile = model.find(w.profile)
        if profile is None:
            raise InstanceError(f"{path}.profile", f"{w.profile!r} is not a profile of {model.name}")
        if named is not None and model.find(named) != profile:
            raise InstanceError(
                f"{path}.placement.profile",
                f"{named!r} is not the workload's profile {profile.name} (only a memory-sized workload's may differ)",
            )
        return profile
    fitting = inst.profiles_on(w, model)
    if named is not None:
        chosen = model.find(named)
        if chosen is None or chosen not in fitting:
            may = ", ".join(p.name for p in fitting) or "none"
            raise InstanceError(
                f"{path}.placement.profile",
                f"{named!r} is not a profile of {model.name} that fits {w.size} (those are: {may})",
            )
        return chosen
    if not fitting:
        raise InstanceError(f"{path}.memory_gb", f"no profile of {model.name} fits {w.size}")
    return fitting[0]


def _check_idle(
    inst: Instance, slot_owner: dict[str, dict[int, str]], gi_owner: dict[tuple[str, int], str]
) -> None:
    """Idle instances sit at legal starts of their GPU's profile, apart from every other instance."""
    for k, idle in enumerate(inst.idle):
        path = f"idle[{k}]"
        gpu = inst._gpu.get(idle.gpu)
        if gpu is None:
            raise InstanceError(f"{path}.gpu", f"unknown GPU {idle.gpu!r}")
        if not gpu.layout_known:
            raise InstanceError(f"{path}.gpu", f"GPU {gpu.id!r} has an unknown layout")
        profile = gpu.model.find(idle.profile)
        if profile is None:
            raise InstanceError(f"{path}.profile", f"{idle.profile!r} is not a profile of {gpu.model.name}")
        if idle.start not in profile.starts:
            starts = ", ".join(map(str, profile.starts))
            raise InstanceError(
                f"{path}.start",
                f"{idle.start} is not a legal start of {profile.name} on {gpu.model.name} ({starts})",
            )
        owners = slot_owner[gpu.id]
        for s in range(idle.start, idle.start + profile.memory_slots):
            if s in owners:
                raise InstanceError(path, f"overlaps {owners[s]!r} on GPU {gpu.id!r} at slot {s}")
            owners[s] = f"idle instance idle[{k}]"
        gi = idle.gpu_instance_id
        if gi is not None:
            if gi < 0:
                raise InstanceError(f"{path}.gpu_instance_id", f"must be >= 0, got {gi}")
            other = gi_owner.setdefault((gpu.id, gi), path)
            if other != path:
                raise InstanceError(
                    f"{path}.gpu_instance_id", f"GPU instance {gi} on GPU {gpu.id!r} is also {other!r}"
                )


# --- solutions


class Termination(StrEnum):
    """Why a method stopped, kept apart from what it found (:class:`Status`).

    ``completed`` is for heuristics: the method ran to its end, proving nothing;
    ``gap_limit``: the solver stopped within the relative gap it was allowed (``--gap``);
    ``interrupted``: stopped from outside (Ctrl-C), keeping the best solution found.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
    >>> mipopt.solve(inst, "ff").termination.value, mipopt.solve(inst).termination.value
    ('completed', 'optimal')
    >>> mipopt.Termination("time_limit") is mipopt.Termination.TIME_LIMIT
    True
    """

    OPTIMAL = "optimal"
    COMPLETED = "completed"
    TIME_LIMIT = "time_limit"
    GAP_LIMIT = "gap_limit"
    INTERRUPTED = "interrupted"
    INFEASIBLE = "infeasible"
    ERROR = "error"


class Status(StrEnum):
    """What a method found: a proven optimum, some feasible solution, or nothing.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
    >>> mipopt.solve(inst, "ff").status.value, mipopt.solve(inst).status.value
    ('feasible', 'optimal')
    >>> mipopt.Status.OPTIMAL == "optimal"  # a str enum: compares and serializes as its value
    True
    """

    OPTIMAL = "optimal"
    FEASIBLE = "feasible"
    NONE = "none"


@dataclass(frozen=True, slots=True)
class Objectives:
    """GRMU's three objectives (Eqs. 3-5) and restarts, as defined in ``docs/formats.md``.

    ``restarts`` is the sum of ``migration_weight`` over running workloads whose GPU or start
    changes (each is stopped and started again in a new instance). The verifier always
    computes it; it is None only in a solution file's claims that do not state it.
    """

    acceptance: float
    hardware: float
    migrations: float
    restarts: float | None = None

    def to_dict(self) -> dict[str, float]:
        out = {"acceptance": self.acceptance, "hardware": self.hardware, "migrations": self.migrations}
        if self.restarts is not None:
            out["restarts"] = self.restarts
        return out


@dataclass(frozen=True, slots=True)
class StageResult:
    """One stage of a lexicographic (or weighted) exact solve, in its objective's own units.

    Attributes
    ----------
    objective
        The stage's objective (``acceptance``, ``hardware``, ``migrations``, ``weighted``, ...).
    value
        The objective's value at the stage's solution; None when the stage found none.
    bound
        The best proven bound on the stage's optimum (an upper bound when maximizing).
    gap
        Relative gap between value and bound (0 when proven).
    proven
        True when value is proven optimal (given the earlier stages' optima).
    termination
        Why the stage stopped.
    runtime_s
        Wall-clock time of the stage.
    model
        Which model served the stage (for example ``aggregate``, ``restricted``, ``detailed``).
    """

    objective: str
    value: float | None
    bound: float | None
    gap: float | None
    proven: bool
    termination: Termination
    runtime_s: float
    model: str = ""

    def to_dict(self) -> dict[str, object]:
        return {
            "objective": self.objective,
            "value": self.value,
            "bound": self.bound,
            "gap": self.gap,
            "proven": self.proven,
            "termination": self.termination.value,
            "runtime_s": self.runtime_s,
            "model": self.model,
        }


@dataclass(frozen=True, slots=True)
class Assignment:
    """One workload placed at a GPU and start in a solution.

    ``profile`` is the profile the method chose for a memory-sized workload (one of
    :meth:`Instance.profiles_on` for the GPU's model); None means the default,
    :meth:`Instance.profile_on` (the smallest that fits). A workload that names its profile
    may carry it too, and must carry its own.
    """

    workload: str
    gpu: str
    start: int
    profile: str | None = None


@dataclass(frozen=True, slots=True)
class Rejection:
    """Why a workload is not placed in a solution, or can never be placed in an instance.

    Made by :func:`mipopt.verifier.rejection_reasons` and :func:`mipopt.verifier.unplaceable`.

    Attributes
    ----------
    workload
        The workload's id.
    code
        The first reason that holds, in the order of :data:`REJECTION_CODES`: ``no-profile``
        (no GPU model of the cluster has its profile), ``gpu-models`` (its ``gpu_models``
        excludes every GPU that has it), ``host-capacity`` (no host with an eligible GPU has
        the cpu or ram for it alone), ``no-room`` (no legal start of its profile is free on
        any eligible GPU, nor the cpu or ram beside it, with the running workloads the method
        keeps: the message names the starts and what holds them), ``needs-restarts`` (room
        exists only by restarting running workloads that the method or the budget keeps),
        ``undecided`` (not decided within the time left), ``not-chosen`` (an answer placing
        it exists, but the objective or the heuristic preferred others).
    message
        The reason in words, with the numbers.
    """

    workload: str
    code: str
    message: str

    def to_dict(self) -> dict[str, str]:
        """The JSON form of the solution's ``rejections`` list."""
        return {"workload": self.workload, "reason": self.code, "message": self.message}


#: The reasons a workload is rejected, in the order they are tried.
REJECTION_CODES = (
    "no-profile",
    "gpu-models",
    "host-capacity",
    "no-room",
    "needs-restarts",
    "undecided",
    "not-chosen",
)


@dataclass(frozen=True, slots=True)
class Solution:
    """The result of any method (exact, heuristic, simulated), in one shape.

    ``objectives`` and ``metrics`` are what the method reports; the verifier
    recomputes both and flags any difference. ``rejections`` says why each rejected
    workload is rejected, when someone asked (:func:`mipopt.verifier.explain`, ``mipopt
    solve``); it is information, empty when nobody did.

    A solution made by a method (:func:`mipopt.solve`, :func:`mipopt.verifier.solution_for`)
    remembers the :class:`Instance` it answers (``_instance``, neither written nor compared),
    so :meth:`summary` needs no argument; one read from a file does not.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> sol = mipopt.solve(inst, "ff")
    >>> sol.status.value, sol.objectives.acceptance, sol.rejected
    ('feasible', 8.0, ('llm-f',))
    >>> sol.placed()["batch-d"]
    ('h1-g1', 0)
    """

    instance: str
    method: str
    termination: Termination
    status: Status
    placements: tuple[Assignment, ...]
    rejected: tuple[str, ...]
    runtime_s: float = 0.0
    objectives: Objectives | None = None
    bound: float | None = None
    gap: float | None = None
    metrics: dict[str, float] = field(default_factory=dict)
    message: str = ""
    stages: tuple[StageResult, ...] = ()
    rejections: tuple[Rejection, ...] = ()
    _instance: Instance | None = field(default=None, kw_only=True, repr=False, compare=False)

    def placed(self) -> dict[str, tuple[str, int]]:
        """Workload id -> (GPU id, start) of every placement (the last, when a workload is repeated)."""
        return {a.workload: (a.gpu, a.start) for a in self.placements}

    def profiles(self) -> dict[str, str]:
        """Workload id -> the profile named in its placement, where one is (a memory-sized
        workload's chosen profile); the others take :meth:`Instance.profile_on`."""
        return {a.workload: a.profile for a in self.placements if a.profile is not None}

    def placement_of(self) -> dict[str, Assignment]:
        """Assignments by workload id (the first, when a workload is repeated)."""
        out: dict[str, Assignment] = {}
        for a in self.placements:
            out.setdefault(a.workload, a)
        return out

    def summary(self, instance: Instance | None = None, *, joint: bool = False) -> str:
        """The text ``mipopt solve`` prints: termination, objectives, stages, moves, one row per
        workload, metrics and the GPUs drawn.

        Parameters
        ----------
        instance
            The instance this solves (its workloads and GPUs are listed); by default the one
            the solution remembers.
        joint
            Running workloads were free to move: a move gets a hint that ``use_case="initial"``
            keeps them home.

        Raises
        ------
        ParameterTypeError
            Naming ``instance`` when none is given and the solution remembers none (it was read
            from a file).

        Examples
        --------
        >>> import mipopt
        >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
        >>> print(mipopt.solve(inst, "ff").summary().splitlines()[3])
        objectives: acceptance 3, hardware 2, migrations 0...
        >>> mipopt.load_solution("docs/examples/hand_solution.json").summary()
        Traceback (most recent call last):
        ...
        mipopt.errors.ParameterTypeError: instance: this solution does not know the instance it answers (it was read from a file or built by hand): pass it, summary(mipopt.load_instance(PATH))
        """
        from mipopt.instance.summary import solution_summary

        instance = instance if instance is not None else self._instance
        if instance is None:
            raise ParameterTypeError(
                "instance",
                "this solution does not know the instance it answers (it was read from a file or built "
                "by hand): pass it, summary(mipopt.load_instance(PATH))",
            )
        return solution_summary(instance, self, joint=joint)

    def to_json(self) -> str:
        """The solution as ``mipopt-solution`` JSON text (docs/formats.md).

        Examples
        --------
        >>> import json, mipopt
        >>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
        >>> json.loads(mipopt.solve(inst, "ff").to_json())["format"]
        'mipopt-solution'
        """
        import json

        from mipopt.instance.parse import solution_to_dict

        return json.dumps(solution_to_dict(self), indent=2) + "\n"

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_json` to ``path`` atomically (a reader never sees half a file).

        Raises
        ------
        InstanceError
            Naming ``path`` when it is the file the solution's instance was read from.
        """
        from mipopt.instance.parse import solution_to_dict
        from mipopt.io import save_json

        read_from = self._instance._path if self._instance is not None else None
        save_json(path, solution_to_dict(self), read_from=read_from)
