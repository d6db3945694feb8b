"""The independent verifier: every rule, and the objectives and metrics recomputed.

It reads the catalog's placement lists and builds slot sets itself
(:mod:`mipopt.verifier.rules`, one rule set for a solution and for each round of a
migration plan, which :func:`verify_plan` replays); it shares no placement code
(legal-start tables, default placement, policies, models, the migration planner)
with the methods it checks. It uses :mod:`mipopt.geometry.reference` only for
the definitions of the scores it reports (CC, fragmentation, waste).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mipopt.catalog import GpuModel, Profile, builtin_models
from mipopt.geometry import reference as geo
from mipopt.instance import Assignment, Instance, Objectives, Solution, Status, Termination, Workload
from mipopt.verifier.claims import CLAIM_RULES, BrokenClaim, broken_claims
from mipopt.verifier.migration import PlanReport, verify_plan
from mipopt.verifier.reasons import (
    REJECTION_CODES,
    Rejection,
    explain,
    rejection_reasons,
    spot_left,
    unplaceable,
)
from mipopt.verifier.rules import Breach, Held, StateCheck, check_state

__all__ = [
    "CLAIM_RULES",
    "REJECTION_CODES",
    "Breach",
    "BrokenClaim",
    "Held",
    "PlanReport",
    "Rejection",
    "Report",
    "StateCheck",
    "check_claims",
    "check_state",
    "evaluate",
    "explain",
    "no_solution",
    "rejection_reasons",
    "solution_for",
    "spot_left",
    "unplaceable",
    "verify",
    "verify_plan",
]


@dataclass(frozen=True, slots=True)
class Report:
    """The verifier's verdict on one solution.

    Attributes
    ----------
    valid
        No rule broken and no claim false.
    violations
        One line each: the broken rules, then the false claims (``claims``, their messages).
    objectives, metrics
        The verifier's own values for the placement.
    claims
        The claims found false, each with its rule (:data:`CLAIM_RULES`) and JSON path.
    """

    valid: bool
    violations: tuple[str, ...]
    objectives: Objectives
    metrics: dict[str, float] = field(default_factory=dict)
    claims: tuple[BrokenClaim, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "violations": list(self.violations),
            "objectives": self.objectives.to_dict(),
            "metrics": dict(self.metrics),
            "claims": [c.to_dict() for c in self.claims],
        }


def verify(instance: Instance, solution: Solution) -> Report:
    """Check every rule of ``solution`` against ``instance``, and what it claims.

    Rules: each workload placed at most once, and not both placed and rejected;
    the GPU exists and its model is allowed for the workload and has its
    profile; the start is legal; no two instances overlap; at most one ``+me``
    instance per GPU; per-profile maximum counts; compute slices; host cpu and
    ram; pinned workloads unmoved; running workloads still placed (one left out,
    or listed as rejected, is a violation naming it: a running workload is never
    evicted); the instance named, if any, is this one. A new workload that is
    neither placed nor listed in ``rejected`` is rejected. Then every claim the
    solution makes (:mod:`mipopt.verifier.claims`): its objectives and metrics
    equal the recomputed ones; its status, bound and gap agree with each other and
    with its stages; each stage's gap, bound, proven flag and value hold; an
    optimum leaves out no request that fits; each rejection reason is not false.

    >>> from mipopt.io import load_instance, load_solution
    >>> report = verify(load_instance("instances/quickstart.json"),
    ...                 load_solution("docs/examples/hand_solution.json"))
    >>> report.valid, report.objectives.acceptance
    (True, 8.0)
    """
    v: list[str] = []
    if solution.instance and solution.instance != instance.name:
        v.append(f"instance: solution is for {solution.instance!r}, not {instance.name!r}")

    # each placement alone: unknown or placed twice here, its GPU, model and start by the shared rules
    alone: dict[int, str] = {}  # placement index -> its violation
    held: list[Held] = []
    index: dict[str, int] = {}  # holder id -> placement index
    seen: dict[str, int] = {}
    for i, a in enumerate(solution.placements):
        path = f"placements[{i}]"
        if not instance.has_workload(a.workload):
            alone[i] = f"{path}.workload: {a.workload!r} is not a workload of the instance"
            continue
        if a.workload in seen:
            alone[i] = (
                f"{path}.workload: {a.workload!r} is placed twice (also placements[{seen[a.workload]}])"
            )
            continue
        seen[a.workload] = i
        held.append((path, a.workload, a.gpu, a.start, a.profile))
        index[path] = i
    state = check_state(instance, held)
    alone.update((index[b.holder], b.message()) for b in state.breaches if b.field is not None)
    v += [alone[i] for i in sorted(alone)]
    placed = {
        solution.placements[i].workload: solution.placements[i]
        for p, i in index.items()
        if p in state.profiles
    }

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
        if w.pinned and w.id in placed:
            a = placed[w.id]
            assert w.placement is not None
            if (a.gpu, a.start) != (w.placement.gpu, w.placement.start):
                v.append(
                    f"workload {w.id!r}: pinned at {w.placement.gpu}:{w.placement.start}, "
                    f"placed at {a.gpu}:{a.start}"
                )

    # the rules of the GPUs and hosts as a whole (shared with verify_plan)
    v += [b.message() for b in state.breaches if b.field is None]

    # a GPU of unknown layout has no state to measure (a placement there is a breach above)
    known = instance.placeable()
    on_known = {wid: a for wid, a in placed.items() if known.has_gpu(a.gpu)}
    objectives, metrics = evaluate(
        known,
        {wid: (a.gpu, a.start) for wid, a in on_known.items()},
        {wid: a.profile for wid, a in on_known.items() if a.profile is not None},
    )
    claims = broken_claims(instance, solution, objectives, metrics)
    v += [c.message() for c in claims]
    return Report(not v, tuple(v), objectives, metrics, claims)


def check_claims(instance: Instance, solution: Solution) -> list[str]:
    """What ``solution`` claims that the verifier finds false, one line each.

    The claims (:mod:`mipopt.verifier.claims`, ``docs/formats.md``): the ``objectives`` and
    every entry of ``metrics`` (the counts ``accepted``, ``rejected``, ... among them), each
    equal to the recomputed value within 1e-6 (relative or absolute), a metric the verifier
    does not compute being a difference too, so that a misspelt claim is not silently
    ignored; ``status`` against the termination, the stages, the bound and the gap; each
    stage's gap, bound, proven flag and value; and each rejection reason against the
    instance. Empty when everything claimed holds or nothing is claimed. The values are
    recomputed from the placements that obey their own rules (:func:`verify` reports the
    others); :func:`verify` includes these lines in its violations
    (:attr:`Report.claims` has them with their rules).

    Returns
    -------
    list[str]
        ``PATH: what is wrong``: the status claims, ``objectives.KEY: solution says X,
        verifier computes Y`` in the order acceptance, hardware, migrations, restarts,
        ``metrics.KEY: ...`` in the solution's order, then bound, gap, stages and rejections.

    Examples
    --------
    >>> from dataclasses import replace
    >>> from mipopt.io import load_instance, load_solution
    >>> inst = load_instance("instances/quickstart.json")
    >>> sol = load_solution("docs/examples/hand_solution.json")
    >>> check_claims(inst, replace(sol, metrics={"active_gpus": 2}))
    ['metrics.active_gpus: solution says 2, verifier computes 3']
    """
    return [c.message() for c in verify(instance, solution).claims]


def evaluate(
    instance: Instance, placed: dict[str, tuple[str, int]], profiles: Mapping[str, str] | None = None
) -> tuple[Objectives, dict[str, float]]:
    """Objectives (GRMU Eqs. 3-5 as in ``docs/formats.md``) and metrics of a placement.

    The metrics include those of the IBM WPM paper (Turkkan et al., Table 3), each
    under one key; the paper's definitions, quoted, and how mipopt reads them:

    * "# GPUs: Total number of GPUs with at least one workload in the final
      placement": ``active_gpus``.
    * "Memory Wastage: Total number of memory slices wasted in the final placement
      (here due to placing a workload at index 6 with profile 19)" and "Compute
      Wastage: Total unusable compute slices in the final placement (here due to
      placing profile 9 workload at index 0, or profile 15 at any index other than
      6)": ``memory_waste`` and ``compute_waste``, summed over instances with the
      definitions of :mod:`mipopt.geometry.reference` (``docs/geometry.md``).
    * "Availability: Number of available GPU slices remaining on the cluster after
      all workloads are placed. If all workloads are not placed, availability is
      calculated by subtracting the total pending workload size from the number of
      available GPU slices": ``availability`` = ``available_gpu_slices`` minus the
      pending workloads' sizes. A GPU slice (compute slice with its memory slots,
      the paper's Fig. 2) is available when none of its slots is occupied, on every
      GPU of the cluster, used or free; a slice an instance strands (3g at 0) is
      not. A pending workload's size is in GPU slices too, the paper's Table 1
      column "# of GPU Slices" (7g 7, 4g 4, 3g 4, 2g 2, 1g.20gb 2, 1g 1): the slices
      its partition spans at its lowest start. Availability may be negative.
    * "Migration Size: Total memory size of existing workloads moved to new GPUs in
      the final placement": ``moved_memory_slots`` in memory slices, the unit of
      the paper's Fig. 4 ("moving workloads in size of 5 memory slices, which we
      denote as migration size"), and ``moved_memory_gb``; a new start on the same
      GPU is not a move to a new GPU.
    * "Pending Model Size: Total number of memory slices needed to place workloads
      that remain in a pending state in the final placement":
      ``pending_memory_slots``.
    * "Sequential Migration: Number of existing workloads that need sequential
      migration [...] when a workload is moved to another GPU in the final state,
      and a suitable partition is not available at that index in the initial
      state": ``sequential_migrations``, the running workloads moved to another GPU
      whose target slots overlap slots occupied in the initial state (by any
      running workload, including one that moves away, since it must leave
      first). As the paper says, only moves to another GPU count.
    * "Memory Utilization [...] ratio of used memory slices to the total available
      memory slices in the used GPUs" and "Compute Utilization [...] ratio of the
      used compute slices to the total available compute slices in used GPUs":
      ``memory_utilization`` (occupied slots) and ``compute_utilization`` (the
      profiles' compute; stranded slices are not used), as fractions.

    A pending workload is sized on the first model of the instance's GPUs (in GPU
    order) that may run it, else on the first model its ``gpu_models`` names; the
    same profile name can mean different sizes on different models.

    Parameters
    ----------
    placed
        Workload id -> (GPU id, start) of every placed workload.
    profiles
        Workload id -> the profile chosen for it, where a method chose one (a memory-sized
        workload's); the others take :meth:`Instance.profile_on` of their GPU's model. The
        memory, compute and slots counted are those of the profile taken.
    """
    chosen = profiles or {}

    def taken(wid: str, gpu_id: str) -> Profile:
        model = instance.gpu(gpu_id).model
        name = chosen.get(wid)
        found = instance.profile_on(instance.workload(wid), model) if name is None else model.find(name)
        assert found is not None, f"{wid} cannot run on {gpu_id}"
        return found

    acceptance = sum(instance.workload(w).weight for w in placed)
    active_gpus = {g for g, _ in placed.values()}
    active_hosts = {instance.gpu(g).host for g in active_gpus}
    hardware = sum(
        h.weight * ((h.id in active_hosts) + sum(g in active_gpus for g in h.gpus)) for h in instance.hosts
    )

    initial: dict[str, int] = defaultdict(int)  # slot masks of the running state
    for w in instance.running:
        assert w.placement is not None
        initial[w.placement.gpu] |= taken_then(instance, w).slot_mask(w.placement.start)

    migrations = restarts = 0.0
    moves = {"inter_host": 0, "inter_gpu": 0, "intra_gpu": 0}
    moved_memory_gb = 0.0
    moved_memory_slots = sequential = 0
    for w in instance.running:
        assert w.placement is not None
        old_gpu, old_start = w.placement.gpu, w.placement.start
        old_host = instance.gpu(old_gpu).host
        if w.id not in placed:
            migrations += 2 * w.migration_weight  # x and y drop to 0 (Eq. 5 literally)
            continue
        gpu, start = placed[w.id]
        host = instance.gpu(gpu).host
        if (gpu, start) != (old_gpu, old_start):
            restarts += w.migration_weight
        if host != old_host:
            migrations += 4 * w.migration_weight
            moves["inter_host"] += 1
        elif gpu != old_gpu:
            migrations += 2 * w.migration_weight
            moves["inter_gpu"] += 1
        elif start != old_start:
            moves["intra_gpu"] += 1
        if gpu != old_gpu:  # IBM's migration size counts moves to another GPU
            target = taken(w.id, gpu)
            moved_memory_gb += target.memory_gb
            moved_memory_slots += target.memory_slots
            if initial[gpu] & target.slot_mask(start):
                sequential += 1

    masks: dict[str, int] = defaultdict(int)
    compute_used: dict[str, int] = defaultdict(int)
    compute_waste = memory_waste = 0
    for wid, (gpu_id, start) in placed.items():
        model = instance.gpu(gpu_id).model
        profile = taken(wid, gpu_id)
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
    available = sum(
        sum(1 for slots in g.model.gpu_slices if not masks[g.id] & _slots_mask(slots)) for g in instance.gpus
    )
    pending_slots = pending_gpu_slices = 0
    models = list(instance.models.values())
    for w in instance.workloads:
        sized = None if w.id in placed else _sized_on(instance, w, models)
        if sized is not None:
            model, profile = sized
            pending_slots += profile.memory_slots
            pending_gpu_slices += profile.compute + geo.compute_waste(model, profile, min(profile.starts))
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
        "restarted": sum(moves.values()),
        "moved_memory_gb": moved_memory_gb,
        "moved_memory_slots": moved_memory_slots,
        "sequential_migrations": sequential,
        "compute_waste": compute_waste,
        "memory_waste": memory_waste,
        "used_memory_slots": mem_used,
        "used_compute_slices": cmp_used,
        "memory_utilization": mem_used / mem_total if mem_total else 0.0,
        "compute_utilization": cmp_used / cmp_total if cmp_total else 0.0,
        "available_gpu_slices": available,
        "pending_memory_slots": pending_slots,
        "availability": available - pending_gpu_slices,
        "cc_total": sum(geo.configuration_capability(g.model, masks[g.id]) for g in instance.gpus),
        "fragmentation_fbk_total": sum(fbk),
        "fragmentation_fbk_mean_active": (
            sum(f for g, f in zip(instance.gpus, fbk, strict=True) if g.id in active_gpus) / len(active)
            if active
            else 0.0
        ),
        "fragmentation_grmu_total": sum(grmu),
    }
    return Objectives(float(acceptance), float(hardware), float(migrations), float(restarts)), metrics


def taken_then(instance: Instance, w: Workload) -> Profile:
    """The profile running workload ``w`` holds in the instance's running state."""
    assert w.placement is not None
    profile = instance.profile_on(w, instance.gpu(w.placement.gpu).model)
    assert profile is not None  # the instance checked its running state
    return profile


def _slots_mask(slots: tuple[int, ...]) -> int:
    return sum(1 << s for s in slots)


def _sized_on(instance: Instance, w: Workload, models: list[GpuModel]) -> tuple[GpuModel, Profile] | None:
    """The model a pending workload is sized on (see :func:`evaluate`) and its profile there."""
    for model in models:
        profile = instance.profile_on(w, model)
        if profile is not None:
            return model, profile
    known = builtin_models() | {m.name: m for m in instance.custom_models}
    for name in w.gpu_models or ():
        named = known.get(name)
        found = instance.profile_on(w, named) if named is not None else None
        if named is not None and found is not None:
            return named, found
    return None


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
    profiles: Mapping[str, str] | None = None,
) -> Solution:
    """Package a placement as a :class:`Solution`, objectives and metrics from :func:`evaluate`.

    Workloads of the instance missing from ``placed`` are listed as rejected; the solution
    remembers ``instance`` (:meth:`Solution.summary` needs no argument). ``profiles`` are the
    profiles a method chose (workload id -> name, :func:`evaluate`); every memory-sized
    workload's assignment carries its profile, chosen or the default.
    """
    objectives, metrics = evaluate(instance, placed, profiles)
    chosen = profiles or {}

    def assignment(wid: str, gpu_id: str, start: int) -> Assignment:
        w = instance.workload(wid)
        name = chosen.get(wid)
        if name is None and w.memory_sized:
            default = instance.profile_on(w, instance.gpu(gpu_id).model)
            name = None if default is None else default.name
        return Assignment(wid, gpu_id, start, name)

    return Solution(
        instance=instance.name,
        method=method,
        termination=termination,
        status=status,
        placements=tuple(assignment(w, g, s) for w, (g, s) in placed.items()),
        rejected=tuple(w.id for w in instance.workloads if w.id not in placed),
        runtime_s=runtime_s,
        objectives=objectives,
        bound=bound,
        gap=gap,
        metrics=metrics,
        message=message,
        _instance=instance,
    )


def no_solution(
    instance: Instance, *, method: str, termination: Termination, runtime_s: float, message: str
) -> Solution:
    """A run that found no placement: status none, every new workload listed as rejected."""
    return Solution(
        instance=instance.name,
        method=method,
        termination=termination,
        status=Status.NONE,
        placements=(),
        rejected=tuple(w.id for w in instance.new),
        runtime_s=runtime_s,
        message=message,
        _instance=instance,
    )
