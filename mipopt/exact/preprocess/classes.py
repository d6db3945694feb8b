"""Equivalence classes of interchangeable items, for aggregation and symmetry breaking.

A class is exact: members can be permuted in any optimal solution and the result
is feasible with the same objectives, so a model may count members instead of
naming them, or order them.

* **Workload classes**: new (not running) workloads with the same profile on
  every GPU model of the instance (after their ``gpu_models`` restriction), the
  same ``cpu``, ``ram_gb``, ``weight`` and ``migration_weight``. Everything a
  model knows about a new workload is there: where it may go (profile per
  model), what it uses of its host, what it earns. Two workloads that name one
  profile by name and by id, or that differ only in ``gpu_models`` entries for
  models absent from the instance, fall in one class.
* **GPU classes**: GPUs without running workloads, of the same model, **on the
  same host**. Swapping the contents of two such GPUs leaves every host's cpu,
  ram and power-on state unchanged, no migration term mentions them, and their
  geometry is the same. Empty GPUs of equal models on *different* hosts are not
  interchangeable one by one: moving one GPU's load to another host can power a
  host on or off and shifts cpu and ram between hosts.
* **Host classes**: hosts without running workloads with the same ``cpu``,
  ``ram_gb``, ``weight`` and multiset of GPU models. Swapping two such hosts
  whole (each GPU to a GPU of the same model) changes nothing. This is the
  cross-host symmetry; together with GPU classes it covers empty GPUs of the
  same model on identical empty hosts.

Classes come in order of their first member in the instance, members in
instance order; singletons are included, so every new workload (every empty GPU,
every empty host) is in exactly one class.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import TypeVar

from mipopt.catalog import GpuModel, Profile
from mipopt.instance import Instance, Workload
from mipopt.instance.types import fitting_profiles

__all__ = [
    "GpuClass",
    "HostClass",
    "Shape",
    "WorkloadClass",
    "dominates",
    "gpu_classes",
    "held_profile",
    "home_profile",
    "host_classes",
    "placement_key",
    "profile_options",
    "profile_taken",
    "workload_classes",
]


@dataclass(frozen=True, slots=True)
class WorkloadClass:
    """New workloads that are interchangeable; ``members[0]`` represents them."""

    members: tuple[str, ...]

    @property
    def representative(self) -> str:
        return self.members[0]

    def __len__(self) -> int:
        return len(self.members)


@dataclass(frozen=True, slots=True)
class GpuClass:
    """Empty GPUs of one model on one host."""

    host: str
    model: str
    members: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.members)


@dataclass(frozen=True, slots=True)
class HostClass:
    """Empty hosts of identical capacity, weight and GPU models (``models`` sorted)."""

    models: tuple[str, ...]
    members: tuple[str, ...]

    def __len__(self) -> int:
        return len(self.members)


K = TypeVar("K", bound=Hashable)


def _group(items: list[tuple[K, str]]) -> list[tuple[K, tuple[str, ...]]]:
    groups: dict[K, list[str]] = {}
    for key, item in items:
        groups.setdefault(key, []).append(item)  # dicts keep first-appearance order
    return [(key, tuple(members)) for key, members in groups.items()]


def home_gpu(instance: Instance, wid: str) -> str:
    """The GPU running workload ``wid`` runs on."""
    placement = instance.workload(wid).placement
    assert placement is not None, f"{wid} is not running"
    return placement.gpu


def home_profile(instance: Instance, workload: Workload) -> Profile:
    """The profile running ``workload`` holds on its own GPU (:func:`held_profile`)."""
    assert workload.placement is not None, f"{workload.id} is not running"
    return held_profile(instance.gpu(workload.placement.gpu).model, workload)


def profile_taken(instance: Instance, wid: str, model: GpuModel, chosen: Mapping[str, str]) -> int:
    """Position in ``model.profiles`` of the profile workload ``wid`` takes on ``model``: the one
    ``chosen`` for it (a memory-sized workload's, by name), else
    :meth:`~mipopt.instance.Instance.profile_on`."""
    name = chosen.get(wid)
    profile = model.find(name) if name is not None else instance.profile_on(instance.workload(wid), model)
    assert profile is not None, f"{wid}: placed on a model without its profile"
    return model.profiles.index(profile)


def held_profile(model: GpuModel, workload: Workload) -> Profile:
    """The profile running ``workload`` holds on its own GPU, of ``model``: its own, or a
    memory-sized one's :attr:`~mipopt.instance.Placement.profile`, the smallest that fits when
    that is not given (as :meth:`~mipopt.instance.Instance.profile_on` has it there)."""
    assert workload.placement is not None, f"{workload.id} is not running"
    name = workload.profile if workload.profile is not None else workload.placement.profile
    if name is not None:
        profile = model.find(name)
    else:
        fitting = fitting_profiles(model, workload.memory_gb or 0.0, workload.min_compute)
        profile = fitting[0] if fitting else None
    assert profile is not None  # the instance checked its running state
    return profile


def profile_options(instance: Instance, workload: Workload, model: GpuModel) -> tuple[Profile, ...]:
    """The profiles an exact model lets ``workload`` take on ``model``, smallest first; ``()``
    where it cannot run.

    For a new memory-sized workload every profile that fits
    (:meth:`~mipopt.instance.Instance.profiles_on`) but those a smaller one dominates
    (:func:`dominates`): the profile is the model's decision, and a dominated profile never
    places more. One otherwise (:meth:`~mipopt.instance.Instance.profile_on`): a workload's
    own, and a running memory-sized workload keeps the profile it runs at (on a GPU of
    another model, the smallest that fits).

    >>> from mipopt.instance import InstanceBuilder
    >>> b = InstanceBuilder("demo")
    >>> b.add_host("h", gpus={"g": "A100-80GB"})
    >>> b.add_workload("r", memory_gb=30)
    >>> inst = b.build()
    >>> [p.name for p in inst.profiles_on(inst.workload("r"), inst.gpu("g").model)]
    ['3g.40gb', '4g.40gb', '7g.80gb']
    >>> [p.name for p in profile_options(inst, inst.workload("r"), inst.gpu("g").model)]
    ['3g.40gb']
    """
    if workload.memory_sized and not workload.running:
        fitting = instance.profiles_on(workload, model)
        return tuple(q for k, q in enumerate(fitting) if not any(dominates(p, q) for p in fitting[:k]))
    profile = instance.profile_on(workload, model)
    return () if profile is None else (profile,)


def dominates(p: Profile, q: Profile) -> bool:
    """Whether profile ``p`` does all ``q`` does on their model, so that any placement holding an
    instance of ``q`` stays valid with ``p`` there instead, at the same start.

    ``p`` has no more compute and memory slots, may start wherever ``q`` may (its slots then
    lie within ``q``'s), and allows as many instances as can fit apart (its count never
    binds); neither is a media variant. On NVIDIA's models the smallest profile that fits a
    request dominates every larger one (``models/grmu.md``, "Memory-sized workloads").
    """
    return (
        p.compute <= q.compute
        and p.memory_slots <= q.memory_slots
        and set(q.starts) <= set(p.starts)
        and p.max_instances >= _most_apart(p)
        and not p.media_extension
        and not q.media_extension
    )


def _most_apart(p: Profile) -> int:
    """The most instances of ``p`` whose slots do not overlap (earliest end first is optimal on a line)."""
    count, free_from = 0, 0
    for start in sorted(p.starts, key=lambda s: s + p.memory_slots):
        if start >= free_from:
            count, free_from = count + 1, start + p.memory_slots
    return count


def placement_key(instance: Instance, workload: Workload) -> Hashable:
    """What decides where a workload may go and what it takes of its host.

    Its profile on each GPU model of the instance (None where it may not go; the tuple
    of its :func:`profile_options` where it has a choice), its ``cpu`` and ``ram_gb``.
    Workloads with equal keys have the same candidate placements and the same host
    demands, running or new.
    """
    where = tuple(
        _names(profile_options(instance, workload, m))
        for m in sorted(instance.models.values(), key=lambda m: m.name)
    )
    return (where, workload.cpu, workload.ram_gb)


def _names(profiles: tuple[Profile, ...]) -> str | tuple[str, ...] | None:
    """None, the one profile's name, or the names of a choice."""
    if not profiles:
        return None
    return profiles[0].name if len(profiles) == 1 else tuple(p.name for p in profiles)


@dataclass
class Shape:
    """Movable workloads (running or new) with one :func:`placement_key`: where they may go and
    what they take of a host. ``example`` represents them; new ones are split by weight."""

    example: Workload
    new: dict[float, list[str]] = field(default_factory=dict)  # weight -> new workload ids
    running: list[str] = field(default_factory=list)

    def members(self) -> list[str]:
        return [*self.running, *(w for ws in self.new.values() for w in ws)]


def movable_shapes(instance: Instance, fixed: Iterable[str]) -> tuple[list[Shape], dict[Hashable, int]]:
    """The shapes of the workloads not in ``fixed``, in order of first appearance, and their index by key."""
    held = set(fixed)
    shapes: list[Shape] = []
    index: dict[Hashable, int] = {}
    for w in instance.workloads:
        if w.id in held:
            continue
        c = index.setdefault(placement_key(instance, w), len(shapes))
        if c == len(shapes):
            shapes.append(Shape(w))
        if w.running:
            shapes[c].running.append(w.id)
        else:
            shapes[c].new.setdefault(w.weight, []).append(w.id)
    return shapes, index


def workload_classes(instance: Instance) -> tuple[WorkloadClass, ...]:
    """Classes of the new workloads (see the module docstring for the rule)."""
    items: list[tuple[Hashable, str]] = [
        ((placement_key(instance, w), w.weight, w.migration_weight), w.id) for w in instance.new
    ]
    return tuple(WorkloadClass(members) for _, members in _group(items))


def running_classes(instance: Instance, workloads: Iterable[str]) -> tuple[WorkloadClass, ...]:
    """Classes of running workloads that share a GPU: same GPU, placement key and weights.

    Members are interchangeable wherever the model only counts what leaves the GPU and
    what arrives elsewhere (WPM: free partitions are taken around every running workload).
    """
    items: list[tuple[Hashable, str]] = []
    for wid in workloads:
        w = instance.workload(wid)
        assert w.placement is not None, f"{wid} is not running"
        items.append(((w.placement.gpu, placement_key(instance, w), w.weight, w.migration_weight), wid))
    return tuple(WorkloadClass(members) for _, members in _group(items))


def _busy(instance: Instance) -> tuple[set[str], set[str]]:
    gpus = {w.placement.gpu for w in instance.running if w.placement is not None}
    return gpus, {instance.gpu(g).host for g in gpus}


def gpu_classes(instance: Instance) -> tuple[GpuClass, ...]:
    """Classes of the GPUs without running workloads: same host, same model."""
    busy, _ = _busy(instance)
    items = [((g.host, g.model.name), g.id) for g in instance.gpus if g.id not in busy]
    return tuple(GpuClass(host, model, members) for (host, model), members in _group(items))


def host_classes(instance: Instance) -> tuple[HostClass, ...]:
    """Classes of the hosts without running workloads: same capacities, weight and GPU models."""
    _, busy = _busy(instance)
    items: list[tuple[tuple[float | None, float | None, float, tuple[str, ...]], str]] = []
    for h in instance.hosts:
        if h.id in busy:
            continue
        models = tuple(sorted(instance.gpu(g).model.name for g in h.gpus))
        items.append(((h.cpu, h.ram_gb, h.weight, models), h.id))
    return tuple(HostClass(key[3], members) for key, members in _group(items))
