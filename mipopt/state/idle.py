"""Idle GPU instances: the ones a target reuses, must destroy, or may leave alone.

An idle instance (:class:`mipopt.instance.IdleInstance`) exists on a GPU but serves no
workload: every method sees its slots as free. Against a target placement (and the instances a
plan creates on the way there, parks among them) each idle instance is either

``reuse``
    a workload of its profile lands exactly at its GPU and start in the target, and nothing
    else needs its slots: the instance serves it and nothing is created or destroyed there;
``destroy``
    something created needs its slots: destroying it interrupts nobody;
``keep``
    nothing touches it.

A plan also destroys the kept ones of a GPU where a state it passes through would break a rule
beside them (:func:`mipopt.interop.emit.plan_operations`, through :class:`mipopt.state.Occupancy`).
:func:`reuse_idle` moves new workloads onto idle instances of their profile on the GPU a
method chose, so that a method's answer reuses what exists wherever it can at no cost.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Literal

from mipopt.catalog import Profile
from mipopt.instance import IdleInstance, Instance

IdleFate = Literal["reuse", "destroy", "keep"]


@dataclass(frozen=True, slots=True)
class IdleDecision:
    """What a target does with one idle instance; ``workload`` is the one that reuses it."""

    idle: IdleInstance
    fate: IdleFate
    workload: str | None = None


def idle_profile(instance: Instance, idle: IdleInstance) -> Profile:
    profile = instance.gpu(idle.gpu).model.find(idle.profile)
    assert profile is not None  # the instance checked it
    return profile


def _profile(instance: Instance, workload: str, gpu: str, chosen: Mapping[str, str] | None = None) -> Profile:
    """The profile ``workload`` takes on ``gpu``: the one ``chosen`` for it, else its default."""
    model = instance.gpu(gpu).model
    name = None if chosen is None else chosen.get(workload)
    profile = instance.profile_on(instance.workload(workload), model) if name is None else model.find(name)
    assert profile is not None
    return profile


def _slots(profile: Profile, start: int) -> set[int]:
    return set(range(start, start + profile.memory_slots))


def idle_fates(
    instance: Instance,
    final: Mapping[str, tuple[str, int]],
    passing: Iterable[tuple[str, str, int]] = (),
) -> tuple[IdleDecision, ...]:
    """Each idle instance of ``instance``, in order, against the target ``final`` (workload id
    -> (GPU id, start)) and the instances ``passing`` (workload, GPU id, start) a plan creates
    on the way, as the module docstring says.

    Examples
    --------
    >>> from mipopt.instance import InstanceBuilder
    >>> b = InstanceBuilder("idle")
    >>> b.add_host("n1", {"g0": "A100-40GB"})
    >>> b.add_idle("g0", "3g.20gb", 0, gpu_instance_id=1)
    >>> b.add_idle("g0", "3g.20gb", 4, gpu_instance_id=2)
    >>> b.add_workload("w", "3g.20gb")
    >>> inst = b.build()
    >>> [(d.idle.start, d.fate, d.workload) for d in idle_fates(inst, {"w": ("g0", 4)})]
    [(0, 'keep', None), (4, 'reuse', 'w')]
    >>> [d.fate for d in idle_fates(inst, {"w": ("g0", 2)})]  # an illegal spot, but it overlaps both
    ['destroy', 'destroy']
    >>> [d.fate for d in idle_fates(inst, {"w": ("g0", 4)}, passing=[("w", "g0", 0)])]  # parked at 0 first
    ['destroy', 'reuse']
    """
    created = set(passing) | {(w, gpu, start) for w, (gpu, start) in final.items()}
    out: list[IdleDecision] = []
    for idle in instance.idle:
        profile = idle_profile(instance, idle)
        mine = _slots(profile, idle.start)
        overlapping = [
            (w, s) for w, g, s in created if g == idle.gpu and mine & _slots(_profile(instance, w, g), s)
        ]
        if not overlapping:
            out.append(IdleDecision(idle, "keep"))
            continue
        (w, s), *others = overlapping
        exact = s == idle.start and _profile(instance, w, idle.gpu) == profile
        if exact and not others and final.get(w) == (idle.gpu, idle.start):
            out.append(IdleDecision(idle, "reuse", w))
        else:
            out.append(IdleDecision(idle, "destroy"))
    return tuple(out)


def reuse_idle(
    instance: Instance, placed: Mapping[str, tuple[str, int]], profiles: Mapping[str, str] | None = None
) -> dict[str, tuple[str, int]]:
    """``placed`` with each new workload moved, on the GPU its method chose, onto an idle
    instance of its profile whose slots that placement leaves free (``profiles``: those the
    method chose for memory-sized workloads, the others take their default).

    The GPU, the profile and the instance's rules do not change, so neither do the
    objectives; the plan then creates nothing for the workloads moved. Workloads are taken
    in the instance's order, idle instances in theirs.

    Examples
    --------
    >>> from mipopt.instance import InstanceBuilder
    >>> b = InstanceBuilder("idle")
    >>> b.add_host("n1", {"g0": "A100-40GB"})
    >>> b.add_idle("g0", "1g.5gb", 6)
    >>> b.add_workload("w", "1g.5gb")
    >>> reuse_idle(b.build(), {"w": ("g0", 0)})
    {'w': ('g0', 6)}
    """
    if not instance.idle:
        return dict(placed)
    out = dict(placed)
    taken: set[int] = set()
    for w in instance.new:
        spot = out.get(w.id)
        if spot is None:
            continue
        gpu = spot[0]
        profile = _profile(instance, w.id, gpu, profiles)
        on = [
            k
            for k, i in enumerate(instance.idle)
            if (i.gpu, i.start) == spot and idle_profile(instance, i) == profile
        ]
        if on:
            taken.update(on)  # already on one
            continue
        others = [
            (_profile(instance, o, g, profiles), s) for o, (g, s) in out.items() if g == gpu and o != w.id
        ]
        for k, idle in enumerate(instance.idle):
            if k in taken or idle.gpu != gpu or idle_profile(instance, idle) != profile:
                continue
            if all(not (_slots(profile, idle.start) & _slots(p, s)) for p, s in others):
                out[w.id] = (gpu, idle.start)
                taken.add(k)
                break
    return out
