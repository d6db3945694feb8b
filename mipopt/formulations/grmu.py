"""GRMU's placement problem, tight form (``--model grmu``), over candidate placements.

The decision problem and the three objectives of GRMU (Eqs. 3-5) written over
the candidate placements of :mod:`mipopt.preprocess`: one binary per
(movable workload, GPU, legal start). See ``models/grmu.md``, equation by equation.

Why it is tight: overlap is forbidden per memory slot (a clique of the placements
covering that slot) and the same inequality links the slot to the GPU's active
indicator, so the LP relaxation already knows that an active GPU has 8 slots.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field

import pyomo.environ as pyo

from mipopt.instance import Instance
from mipopt.preprocess import candidates, gpu_classes

OBJECTIVES = ("acceptance", "hardware", "migrations", "intra_moves")
SENSE = {
    "acceptance": pyo.maximize,
    "hardware": pyo.minimize,
    "migrations": pyo.minimize,
    "intra_moves": pyo.minimize,
}


@dataclass
class GrmuModel:
    """A built model and what is needed to read a placement back out of it.

    Attributes
    ----------
    model
        The Pyomo model; its objective expressions are ``model.obj_expr[name]``.
    choices
        Candidate k of variable ``model.X[k]``: (workload id, GPU id, start).
    fixed
        Placement of the workloads held in place: id -> (GPU id, start).
    """

    instance: Instance
    model: pyo.ConcreteModel
    choices: list[tuple[str, str, int]]
    fixed: dict[str, tuple[str, int]]
    stats: dict[str, int] = field(default_factory=dict)
    objectives: tuple[str, ...] = OBJECTIVES

    def expression(self, name: str) -> pyo.Expression:
        return self.model.obj_expr[name]

    def decode(self) -> dict[str, tuple[str, int]]:
        """The placement in the model's current variable values: workload -> (GPU, start)."""
        placed = dict(self.fixed)
        for k, (wid, gpu, start) in enumerate(self.choices):
            value = self.model.X[k].value
            if value is not None and value > 0.5:
                placed[wid] = (gpu, start)
        return placed

    def warm_start(self, placed: dict[str, tuple[str, int]]) -> dict[str, float]:
        """Variable values (by name) that encode ``placed``, for a backend's warm start."""
        values: dict[str, float] = {}
        for k, (wid, gpu, start) in enumerate(self.choices):
            values[self.model.X[k].name] = 1.0 if placed.get(wid) == (gpu, start) else 0.0
        used = {g for g, _ in placed.values()}
        for g in self.instance.gpus:
            values[self.model.U[g.id].name] = 1.0 if g.id in used else 0.0
        hosts = {self.instance.gpu(g).host for g in used}
        for h in self.instance.hosts:
            values[self.model.PHI[h.id].name] = 1.0 if h.id in hosts else 0.0
        return values


def build_grmu(instance: Instance) -> GrmuModel:
    """Build the tight GRMU model of ``instance``; pinned workloads are held in place.

    Running workloads stay placed (constraint ``eq8_running_kept``), new ones may be
    rejected; the objective expressions ``acceptance``, ``hardware``, ``migrations``
    and ``intra_moves`` are built but no objective is active.
    """
    cands = candidates(instance)
    fixed = {wid: at for wid, at in instance.current_placement().items() if wid in cands.fixed}
    m = pyo.ConcreteModel(name=f"grmu[{instance.name}]")
    choices: list[tuple[str, str, int]] = []
    profile_of: list[tuple[int, int]] = []  # (profile index, memory slots) per choice
    for w in instance.workloads:
        for c in cands.workloads.get(w.id, ()):
            choices.append((w.id, c.gpu, c.start))
            model = instance.gpu(c.gpu).model
            profile_of.append((c.profile_index, model.profiles[c.profile_index].memory_slots))
    m.K = pyo.RangeSet(0, len(choices) - 1) if choices else pyo.Set(initialize=[])
    m.X = pyo.Var(m.K, domain=pyo.Binary)
    m.U = pyo.Var([g.id for g in instance.gpus], domain=pyo.Binary)
    m.PHI = pyo.Var([h.id for h in instance.hosts], domain=pyo.Binary)

    by_workload: dict[str, list[int]] = defaultdict(list)
    by_gpu_slot: dict[tuple[str, int], list[int]] = defaultdict(list)
    by_gpu_profile: dict[tuple[str, int], list[int]] = defaultdict(list)
    by_gpu_media: dict[str, list[int]] = defaultdict(list)
    by_host: dict[str, list[int]] = defaultdict(list)
    for k, (wid, gpu_id, start) in enumerate(choices):
        p, size = profile_of[k]
        gpu = instance.gpu(gpu_id)
        by_workload[wid].append(k)
        for s in range(start, start + size):
            by_gpu_slot[gpu_id, s].append(k)
        by_gpu_profile[gpu_id, p].append(k)
        if gpu.model.profiles[p].media_extension:
            by_gpu_media[gpu_id].append(k)
        by_host[gpu.host].append(k)

    # Eqs. 8-11: each workload at most one place; running movable ones exactly one
    m.eq8_running_kept = pyo.ConstraintList()
    m.eq8_at_most_once = pyo.ConstraintList()
    for w in instance.workloads:
        if w.id in fixed:
            continue
        ks = by_workload.get(w.id, [])
        if w.running:
            m.eq8_running_kept.add(sum(m.X[k] for k in ks) == 1)
        elif len(ks) > 1:
            m.eq8_at_most_once.add(sum(m.X[k] for k in ks) <= 1)

    # Eqs. 12-16 and 20 replaced: one instance per memory slot, only on an active GPU
    m.slot_clique = pyo.ConstraintList()
    for (gpu_id, _s), ks in by_gpu_slot.items():
        m.slot_clique.add(sum(m.X[k] for k in ks) <= m.U[gpu_id])
    state = {g.gpu: g.fixed for g in cands.gpus}
    for g in instance.gpus:
        if state[g.id].workloads:
            m.U[g.id].fix(1)

    # one media-engine set per GPU; per-profile maxima where the slots alone do not enforce them
    m.media_once = pyo.ConstraintList()
    for ks in by_gpu_media.values():
        if len(ks) > 1:
            m.media_once.add(sum(m.X[k] for k in ks) <= 1)
    m.profile_max = pyo.ConstraintList()
    for (gpu_id, p), ks in by_gpu_profile.items():
        model = instance.gpu(gpu_id).model
        room = model.profiles[p].max_instances - state[gpu_id].counts[p]
        if room < len({choices[k][2] for k in ks}):
            m.profile_max.add(sum(m.X[k] for k in ks) <= room)

    # Eqs. 6-7: host cpu and ram, net of the fixed workloads
    m.eq6_cpu = pyo.ConstraintList()
    m.eq7_ram = pyo.ConstraintList()
    held_by_host: dict[tuple[str, str], float] = defaultdict(float)
    for wid, (gpu_id, _) in fixed.items():
        for attr in ("cpu", "ram_gb"):
            held_by_host[instance.gpu(gpu_id).host, attr] += getattr(instance.workload(wid), attr)
    for h in instance.hosts:
        ks = by_host.get(h.id, [])
        for cap, attr, cons in ((h.cpu, "cpu", m.eq6_cpu), (h.ram_gb, "ram_gb", m.eq7_ram)):
            if cap is None:
                continue
            need = [(k, getattr(instance.workload(choices[k][0]), attr)) for k in ks]
            need = [(k, a) for k, a in need if a > 0]
            held = held_by_host[h.id, attr]
            if need and sum(a for _, a in need) > cap - held:
                cons.add(sum(a * m.X[k] for k, a in need) <= cap - held)

    # Eq. 19: a GPU is active only on an active host
    m.eq19_host_on = pyo.ConstraintList()
    for g in instance.gpus:
        m.eq19_host_on.add(m.U[g.id] <= m.PHI[g.host])

    # identical empty GPUs of one host: use them in order
    m.symmetry = pyo.ConstraintList()
    for cls in gpu_classes(instance):
        for a, b in zip(cls.members, cls.members[1:], strict=False):
            m.symmetry.add(m.U[a] >= m.U[b])

    # objectives (GRMU Eqs. 3-5), constants of the fixed workloads included
    acceptance = sum(instance.workload(w).weight for w in fixed) + sum(
        instance.workload(wid).weight * m.X[k] for k, (wid, _, _) in enumerate(choices)
    )
    hardware = sum(h.weight * (m.PHI[h.id] + sum(m.U[g] for g in h.gpus)) for h in instance.hosts)
    migrations = 0.0
    intra = 0.0
    for w in instance.running:
        if w.id in fixed or w.placement is None:
            continue
        old_gpu, old_start = w.placement.gpu, w.placement.start
        old_host = instance.gpu(old_gpu).host
        ks = by_workload[w.id]
        same_gpu = sum(m.X[k] for k in ks if choices[k][1] == old_gpu)
        same_host = sum(m.X[k] for k in ks if instance.gpu(choices[k][1]).host == old_host)
        # Eq. 5 literally: 4 delta off the host, 2 delta off the GPU on the same host, 0 otherwise
        migrations += w.migration_weight * (4 - 2 * same_host - 2 * same_gpu)
        intra += same_gpu - sum(m.X[k] for k in ks if choices[k][1:] == (old_gpu, old_start))
    m.obj_expr = pyo.Expression(
        list(OBJECTIVES),
        rule=lambda _m, name: {
            "acceptance": acceptance,
            "hardware": hardware,
            "migrations": migrations,
            "intra_moves": intra,
        }[name],
    )
    stats = {"variables": m.nvariables(), "constraints": m.nconstraints(), "choices": len(choices)}
    return GrmuModel(instance, m, choices, fixed, stats)
