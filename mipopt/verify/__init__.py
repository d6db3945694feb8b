"""The independent verifier: every rule, and the objectives and metrics recomputed.

It reads the catalog's placement lists and builds slot sets itself; it shares
no placement code (legal-start tables, default placement, policies, models)
with the methods it checks. It uses :mod:`mipopt.geometry.reference` only for
the definitions of the scores it reports (CC, fragmentation, waste).
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from mipopt.catalog import Profile
from mipopt.geometry import reference as geo
from mipopt.instance import Assignment, Instance, Objectives, Solution, Status, Termination

__all__ = ["Report", "evaluate", "solution_for", "verify"]


@dataclass(frozen=True, slots=True)
class Report:
    """The verifier's verdict on one solution."""

    valid: bool
    violations: tuple[str, ...]
    objectives: Objectives
    metrics: dict[str, float] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "violations": list(self.violations),
            "objectives": self.objectives.to_dict(),
            "metrics": dict(self.metrics),
        }


def verify(instance: Instance, solution: Solution) -> Report:
    """Check every rule of ``solution`` against ``instance``.

    Rules: each workload placed at most once and either placed or rejected;
    the GPU exists and its model is allowed for the workload and has its
    profile; the start is legal; no two instances overlap; at most one ``+me``
    instance per GPU; per-profile maximum counts; compute slices; host cpu and
    ram; pinned workloads unmoved; running workloads still placed; the
    objectives the solution reports equal the recomputed ones.
    """
    v: list[str] = []
    if solution.instance != instance.name:
        v.append(f"instance: solution is for {solution.instance!r}, not {instance.name!r}")

    placed: dict[str, tuple[Assignment, Profile]] = {}
    seen: dict[str, int] = {}
    for i, a in enumerate(solution.placements):
        path = f"placements[{i}]"
        if not instance.has_workload(a.workload):
            v.append(f"{path}.workload: {a.workload!r} is not a workload of the instance")
            continue
        if a.workload in seen:
            v.append(f"{path}.workload: {a.workload!r} is placed twice (also placements[{seen[a.workload]}])")
            continue
        seen[a.workload] = i
        if not instance.has_gpu(a.gpu):
            v.append(f"{path}.gpu: {a.gpu!r} is not a GPU of the instance")
            continue
        w = instance.workload(a.workload)
        model = instance.gpu(a.gpu).model
        if w.gpu_models is not None and model.name not in w.gpu_models:
            v.append(
                f"{path}.gpu: {a.gpu!r} ({model.name}) is excluded: workload {w.id!r} allows only {', '.join(w.gpu_models)}"
            )
            continue
        profile = model.find(w.profile)
        if profile is None:
            v.append(f"{path}.gpu: {w.profile!r} (workload {w.id!r}) is not a profile of {model.name}")
            continue
        if (a.start, profile.memory_slots) not in profile.placements:
            starts = ", ".join(str(s) for s, _ in profile.placements)
            v.append(
                f"{path}.start: {a.start} is not a legal start of {profile.name} on {model.name} ({starts})"
            )
            continue
        placed[w.id] = (a, profile)

    rejected: set[str] = set()
    for i, r in enumerate(solution.rejected):
        path = f"rejected[{i}]"
        if not instance.has_workload(r):
            v.append(f"{path}: {r!r} is not a workload of the instance")
        elif r in rejected:
            v.append(f"{path}: {r!r} is rejected twice")
        elif r in seen:
            v.append(f"{path}: {r!r} is both placed and rejected")
        else:
            rejected.add(r)

    for w in instance.workloads:
        if w.running and w.id not in seen:
            v.append(f"workload {w.id!r}: running workloads must stay placed")
        elif w.id not in seen and w.id not in rejected:
            v.append(f"workload {w.id!r}: neither placed nor rejected")
        if w.pinned and w.id in placed:
            a, _ = placed[w.id]
            assert w.placement is not None
            if (a.gpu, a.start) != (w.placement.gpu, w.placement.start):
                v.append(
                    f"workload {w.id!r}: pinned at {w.placement.gpu}:{w.placement.start}, "
                    f"placed at {a.gpu}:{a.start}"
                )

    # per-GPU rules, from slot sets built here
    owner: dict[str, dict[int, str]] = defaultdict(dict)
    count: dict[tuple[str, str], int] = defaultdict(int)
    media: dict[str, list[str]] = defaultdict(list)
    compute: dict[str, int] = defaultdict(int)
    cpu: dict[str, float] = defaultdict(float)
    ram: dict[str, float] = defaultdict(float)
    for wid, (a, profile) in placed.items():
        slots = owner[a.gpu]
        clash = sorted({slots[s] for s in range(a.start, a.start + profile.memory_slots) if s in slots})
        for other in clash:
            v.append(f"GPU {a.gpu!r}: {wid!r} overlaps {other!r}")
        for s in range(a.start, a.start + profile.memory_slots):
            slots.setdefault(s, wid)
        count[a.gpu, profile.name] += 1
        if profile.media_extension:
            media[a.gpu].append(wid)
        compute[a.gpu] += profile.compute
        w = instance.workload(wid)
        host = instance.gpu(a.gpu).host
        cpu[host] += w.cpu
        ram[host] += w.ram_gb
    for (gpu_id, name), n in sorted(count.items()):
        limit = instance.gpu(gpu_id).model.profile(name).max_instances
        if n > limit:
            v.append(f"GPU {gpu_id!r}: {n} instances of {name}, at most {limit}")
    for gpu_id, holders in sorted(media.items()):
        if len(holders) > 1:
            v.append(
                f"GPU {gpu_id!r}: {len(holders)} +me instances ({', '.join(holders)}), at most one per GPU"
            )
    for gpu_id, slices in sorted(compute.items()):
        limit = instance.gpu(gpu_id).model.compute_slices
        if slices > limit:
            v.append(f"GPU {gpu_id!r}: uses {slices} compute slices, has {limit}")
    for h in instance.hosts:
        for what, used, cap in (("cpu", cpu[h.id], h.cpu), ("ram_gb", ram[h.id], h.ram_gb)):
            if cap is not None and used > cap + 1e-9:
                v.append(f"host {h.id!r}: {what} {used:g} > capacity {cap:g}")

    if solution.status is Status.NONE and solution.placements:
        v.append("status: 'none' but the solution places workloads")
    if solution.status is Status.OPTIMAL and solution.termination is not Termination.OPTIMAL:
        v.append(f"status: 'optimal' with termination {solution.termination.value!r}")

    objectives, metrics = evaluate(instance, {wid: (a.gpu, a.start) for wid, (a, _) in placed.items()})
    if solution.objectives is not None:
        for key, got in solution.objectives.to_dict().items():
            want = getattr(objectives, key)
            if not math.isclose(got, want, rel_tol=1e-6, abs_tol=1e-6):
                v.append(f"objectives.{key}: solution says {got:g}, verifier computes {want:g}")
    return Report(not v, tuple(v), objectives, metrics)


def evaluate(instance: Instance, placed: dict[str, tuple[str, int]]) -> tuple[Objectives, dict[str, float]]:
    """Objectives (GRMU Eqs. 3-5 as in ``docs/formats.md``) and metrics of a placement.

    Parameters
    ----------
    placed
        Workload id -> (GPU id, start) of every placed workload.
    """
    acceptance = sum(instance.workload(w).weight for w in placed)
    active_gpus = {g for g, _ in placed.values()}
    active_hosts = {instance.gpu(g).host for g in active_gpus}
    hardware = sum(
        h.weight * ((h.id in active_hosts) + sum(g in active_gpus for g in h.gpus)) for h in instance.hosts
    )

    migrations = 0.0
    moves = {"inter_host": 0, "inter_gpu": 0, "intra_gpu": 0}
    moved_memory_gb = 0.0
    for w in instance.running:
        assert w.placement is not None
        old_gpu, old_start = w.placement.gpu, w.placement.start
        old_host = instance.gpu(old_gpu).host
        if w.id not in placed:
            migrations += 2 * w.migration_weight  # x and y drop to 0 (Eq. 5 literally)
            continue
        gpu, start = placed[w.id]
        host = instance.gpu(gpu).host
        if host != old_host:
            migrations += 4 * w.migration_weight
            moves["inter_host"] += 1
        elif gpu != old_gpu:
            migrations += 2 * w.migration_weight
            moves["inter_gpu"] += 1
        elif start != old_start:
            moves["intra_gpu"] += 1
        if gpu != old_gpu:  # IBM's migration size counts moves to another GPU
            moved_memory_gb += instance.gpu(gpu).model.profile(w.profile).memory_gb

    masks: dict[str, int] = defaultdict(int)
    compute_used: dict[str, int] = defaultdict(int)
    compute_waste = memory_waste = 0
    for wid, (gpu_id, start) in placed.items():
        model = instance.gpu(gpu_id).model
        profile = model.profile(instance.workload(wid).profile)
        masks[gpu_id] |= profile.slot_mask(start)
        compute_used[gpu_id] += profile.compute
        compute_waste += geo.compute_waste(model, profile, start)
        memory_waste += geo.memory_waste(model, profile, start)

    fbk = [geo.fbk_fragmentation(g.model, masks[g.id]) for g in instance.gpus]
    grmu = [geo.grmu_fragmentation(g.model, masks[g.id]) for g in instance.gpus]
    active = [g for g in instance.gpus if g.id in active_gpus]
    mem_total = sum(g.model.slots for g in active)
    cmp_total = sum(g.model.compute_slices for g in active)
    mem_used = sum(masks[g.id].bit_count() for g in active)
    cmp_used = sum(compute_used[g.id] for g in active)
    n_new = sum(1 for w in instance.new if w.id in placed)
    metrics: dict[str, float] = {
        "workloads": len(instance.workloads),
        "accepted": len(placed),
        "accepted_new": n_new,
        "rejected": len(instance.workloads) - len(placed),
        "acceptance_rate": len(placed) / len(instance.workloads) if instance.workloads else 1.0,
        "active_hosts": len(active_hosts),
        "active_gpus": len(active_gpus),
        "moves_inter_host": moves["inter_host"],
        "moves_inter_gpu": moves["inter_gpu"],
        "moves_intra_gpu": moves["intra_gpu"],
        "moved_memory_gb": moved_memory_gb,
        "compute_waste": compute_waste,
        "memory_waste": memory_waste,
        "used_memory_slots": mem_used,
        "used_compute_slices": cmp_used,
        "memory_utilization": mem_used / mem_total if mem_total else 0.0,
        "compute_utilization": cmp_used / cmp_total if cmp_total else 0.0,
        "cc_total": sum(geo.configuration_capability(g.model, masks[g.id]) for g in instance.gpus),
        "fragmentation_fbk_total": sum(fbk),
        "fragmentation_fbk_mean_active": (
            sum(f for g, f in zip(instance.gpus, fbk, strict=True) if g.id in active_gpus) / len(active)
            if active
            else 0.0
        ),
        "fragmentation_grmu_total": sum(grmu),
    }
    return Objectives(float(acceptance), float(hardware), float(migrations)), metrics


def solution_for(
    instance: Instance,
    placed: dict[str, tuple[str, int]],
    *,
    method: str,
    termination: Termination,
    status: Status,
    runtime_s: float = 0.0,
    bound: float | None = None,
    gap: float | None = None,
    message: str = "",
) -> Solution:
    """Package a placement as a :class:`Solution`, objectives and metrics from :func:`evaluate`.

    Workloads of the instance missing from ``placed`` are listed as rejected.
    """
    objectives, metrics = evaluate(instance, placed)
    return Solution(
        instance=instance.name,
        method=method,
        termination=termination,
        status=status,
        placements=tuple(Assignment(w, g, s) for w, (g, s) in placed.items()),
        rejected=tuple(w.id for w in instance.workloads if w.id not in placed),
        runtime_s=runtime_s,
        objectives=objectives,
        bound=bound,
        gap=gap,
        metrics=metrics,
        message=message,
    )
