"""GRMU's placement problem, tight form over start slots (``--model grmu-slots``), over candidate placements.

The decision problem and the objectives of GRMU (Eqs. 3-5) written over the
candidate placements of :mod:`mipopt.exact.preprocess`. See ``models/grmu-slots.md``,
equation by equation, beside the paper form.

Why it is tight: overlap is forbidden per memory slot (a clique of the placements
covering that slot) and the same inequality links the slot to the GPU's active
indicator, so the LP relaxation already knows that an active GPU has 8 slots.

Why it stays small: workloads that are interchangeable share variables. Every
movable workload has a *shape* (its profile per GPU model, cpu and ram:
:func:`~mipopt.exact.preprocess.placement_key`); ``X[k]`` says that an instance of a
shape sits at one (GPU, start). New workloads of a shape and weight are counted
(``A``), not named. A running workload keeps its own ``S`` binaries for the
starts of its own GPU (no migration); if it leaves its GPU it joins the pool of
its shape, and ``Z`` counts the leavers of a host that land on that same host
(Eq. 5 charges them 2 delta instead of 4). The number of variables grows with
GPUs x shapes x starts plus running workloads x starts, not with new workloads.

A new memory-sized workload's profile is a decision: its shape has pool slots for every
profile it may take (:func:`~mipopt.exact.preprocess.profile_options`), each slot a
(GPU, start, profile); ``models/grmu-slots.md``, "Memory-sized workloads".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import pyomo.environ as pyo

from mipopt.catalog import GpuModel
from mipopt.exact.preprocess import (
    GpuCandidates,
    Shape,
    fixed_ids,
    gpu_classes,
    home_gpu,
    home_profile,
    movable_shapes,
    open_placements,
    profile_options,
    profile_taken,
)
from mipopt.instance import Instance, Workload

#: The objectives of every model (GRMU Eqs. 3-5 and restarts, ``docs/formats.md``).
OBJECTIVES = ("acceptance", "hardware", "migrations", "restarts")
SENSE = {
    "acceptance": pyo.maximize,
    "hardware": pyo.minimize,
    "migrations": pyo.minimize,
    "restarts": pyo.minimize,
}
#: What a :class:`~mipopt.instance.Budget` bounds, by the verifier's metric names: running
#: workloads restarted (a count) and GB moved to another GPU. Every model builds both.
MEASURES = ("restarted", "moved_memory_gb")


@dataclass
class SlotModel:
    """A built model and what is needed to read a placement back out of it.

    Attributes
    ----------
    model
        The Pyomo model; its objective expressions are ``model.obj_expr[name]``.
    pool
        Slot k of variable ``model.X[k]``: (shape index, GPU id, start, profile index on the
        GPU's model).
    stays
        Choice k of variable ``model.S[k]``: (running workload id, start on its own GPU).
    accept
        Class k of variable ``model.A[k]``: the new workload ids of one shape and weight.
    fixed
        Placement of the workloads held in place: id -> (GPU id, start).
    """

    instance: Instance
    model: pyo.ConcreteModel
    shapes: list[Shape]
    pool: list[tuple[int, str, int, int]]
    stays: list[tuple[str, int]]
    accept: list[tuple[int, tuple[str, ...]]]
    fixed: dict[str, tuple[str, int]]
    stats: dict[str, int] = field(default_factory=dict)
    objectives: tuple[str, ...] = OBJECTIVES
    relaxed: frozenset[str] = frozenset()
    profiles: dict[str, str] = field(default_factory=dict)  # the last decode's, memory-sized workloads

    def expression(self, name: str) -> pyo.Expression:
        return self.model.obj_expr[name]

    def decode(self) -> dict[str, tuple[str, int]]:
        """The placement in the model's current variable values: workload -> (GPU, start).

        Slots of a shape go first to its leavers, each preferring its own GPU (a
        start change, no migration), then its own host, then any; what is left
        goes to the accepted new workloads, class by class in instance order. A memory-sized
        workload takes its slot's profile (:attr:`profiles`).
        """
        m = self.model
        placed = dict(self.fixed)
        stayed: set[str] = set()
        for k, (wid, start) in enumerate(self.stays):
            if _on(m.S[k]):
                placed[wid] = (home_gpu(self.instance, wid), start)
                stayed.add(wid)
        slots: dict[int, list[tuple[str, int, int]]] = defaultdict(list)
        taken: dict[str, tuple[str, int, int]] = {}  # pool workload -> its slot
        for k, (c, gpu, start, p) in enumerate(self.pool):
            if _on(m.X[k]):
                slots[c].append((gpu, start, p))
        for c, shape in enumerate(self.shapes):
            free = slots.get(c, [])
            leavers = sorted(
                (self.instance.workload(w) for w in shape.running if w not in stayed),
                key=lambda w: -w.migration_weight,
            )
            for near in (self._same_gpu, self._same_host, lambda _w, _at: True):
                for w in leavers:
                    if w.id in placed or w.id in taken:
                        continue
                    at = next((at for at in free if near(w, at)), None)
                    if at is not None:
                        taken[w.id] = at
                        free.remove(at)
            for k, (cc, members) in enumerate(self.accept):
                if cc != c:
                    continue
                for wid in members[: round(pyo.value(m.A[k]) or 0)]:
                    if free:
                        taken[wid] = free.pop(0)
        inst = self.instance
        placed.update((wid, (gpu, start)) for wid, (gpu, start, _) in taken.items())
        self.profiles = {
            wid: inst.gpu(gpu).model.profiles[p].name
            for wid, (gpu, _, p) in taken.items()
            if inst.workload(wid).memory_sized
        }
        return placed

    def _same_gpu(self, w: Workload, at: tuple[str, int, int]) -> bool:
        return w.placement is not None and w.placement.gpu == at[0]

    def _same_host(self, w: Workload, at: tuple[str, int, int]) -> bool:
        inst = self.instance
        return w.placement is not None and inst.gpu(w.placement.gpu).host == inst.gpu(at[0]).host

    def warm_start(
        self, placed: dict[str, tuple[str, int]], profiles: dict[str, str] | None = None
    ) -> dict[str, float]:
        """Variable values (by name) that encode ``placed``, for a backend's warm start, with the
        ``profiles`` chosen for memory-sized workloads (the smallest that fits where not given)."""
        inst, m = self.instance, self.model
        chosen = profiles or {}
        placed = self._symmetric(placed, chosen)
        values: dict[str, float] = {}
        shape_of = {w: c for c, shape in enumerate(self.shapes) for w in shape.members()}
        taken = {
            (shape_of[w], g, s, profile_taken(inst, w, inst.gpu(g).model, chosen))
            for w, (g, s) in placed.items()
            if w in shape_of and not self._stays(w, g)
        }
        for k, key in enumerate(self.pool):
            values[m.X[k].name] = 1.0 if key in taken else 0.0
        for k, (wid, start) in enumerate(self.stays):
            values[m.S[k].name] = 1.0 if placed.get(wid) == (home_gpu(self.instance, wid), start) else 0.0
        for k, (_, members) in enumerate(self.accept):
            values[m.A[k].name] = float(sum(1 for w in members if w in placed))
        landed: dict[tuple[int, str], int] = defaultdict(int)  # (shape, host) -> pool slots used there
        for c, gpu_id, _, _ in taken:
            landed[c, inst.gpu(gpu_id).host] += 1
        for key in m.Z:
            c, delta, host = key
            movers = sum(
                1
                for w in self.shapes[c].running
                if inst.workload(w).migration_weight == delta
                and inst.gpu(home_gpu(self.instance, w)).host == host
                and w in placed
                and not self._stays(w, placed[w][0])
                and inst.gpu(placed[w][0]).host == host
            )
            use = min(movers, landed[c, host])
            landed[c, host] -= use
            values[m.Z[key].name] = float(use)
        used = {gpu_id for gpu_id, _ in placed.values()}
        for g in inst.gpus:
            values[m.U[g.id].name] = 1.0 if g.id in used else 0.0
        hosts = {inst.gpu(gpu_id).host for gpu_id in used}
        for h in inst.hosts:
            values[m.PHI[h.id].name] = 1.0 if h.id in hosts else 0.0
        return values

    def _symmetric(
        self, placed: dict[str, tuple[str, int]], chosen: dict[str, str]
    ) -> dict[str, tuple[str, int]]:
        """``placed`` with the contents of identical empty GPUs reordered as the symmetry rows want.

        Within a class (empty GPUs of one model on one host) the fullest GPU comes first,
        so that any valid placement, first fit's for one, is a feasible start.
        """
        out = dict(placed)
        for cls in gpu_classes(self.instance):
            model = self.instance.gpu(cls.members[0]).model
            content: dict[str, list[str]] = {g: [] for g in cls.members}
            for wid, (gpu_id, _) in placed.items():
                if gpu_id in content:
                    content[gpu_id].append(wid)

            def slots(gpu_id: str, model: GpuModel = model, content: dict[str, list[str]] = content) -> int:
                return sum(
                    model.profiles[profile_taken(self.instance, w, model, chosen)].memory_slots
                    for w in content[gpu_id]
                )

            order = sorted(cls.members, key=lambda g: (-slots(g), cls.members.index(g)))
            for target, source in zip(cls.members, order, strict=True):
                for wid in content[source]:
                    out[wid] = (target, placed[wid][1])
        return out

    def _stays(self, wid: str, gpu: str) -> bool:
        placement = self.instance.workload(wid).placement
        return placement is not None and wid not in self.fixed and placement.gpu == gpu


def _on(var: pyo.Var) -> bool:
    return var.value is not None and var.value > 0.5


def build_slots(instance: Instance, fixed: Iterable[str] | None = None) -> SlotModel:
    """Build the tight GRMU model of ``instance``.

    Running workloads stay placed, new ones may be rejected; the expressions of
    :data:`OBJECTIVES` and :data:`MEASURES` are built but no objective is active.
    ``moved_memory_gb`` counts a leaver at its profile's smallest memory over the GPU
    models it may use: exact when that is the same on all of them, else a lower bound
    (named in ``relaxed``).

    Parameters
    ----------
    instance
        The instance.
    fixed
        Running workloads held in place; None for the pinned ones.
    """
    ids = fixed_ids(instance, fixed)
    fixed_at = {wid: at for wid, at in instance.current_placement().items() if wid in ids}
    sets = _sets(instance, ids)
    m = pyo.ConcreteModel(name=f"grmu[{instance.name}]")
    _variables(m, sets)
    terms = _terms(m, sets)
    _eq8_eq11_pool(m, sets, terms)
    _eq9_stay_once(m, sets)
    _eq12_eq16_eq20_slot_clique(m, sets, terms)
    _compute_cap(m, sets, terms)
    _media_once(m, sets, terms)
    _profile_max(m, sets, terms)
    _eq6_eq7_host_cpu_ram(m, sets, terms, fixed_at)
    _eq19_host_on(m, instance)
    _symmetry_identical_gpus(m, instance, terms)
    z_keys = _eq5_same_host_leavers(m, sets, terms)
    relaxed = _eq3_eq5_objectives(m, sets, terms, z_keys)
    stats = {
        "variables": m.nvariables(),
        "constraints": m.nconstraints(),
        "shapes": len(sets.shapes),
        "pool_slots": len(sets.pool),
        "stays": len(sets.stays),
    }
    return SlotModel(
        instance, m, sets.shapes, sets.pool, sets.stays, sets.accept, fixed_at, stats, relaxed=relaxed
    )


# --- the index sets and variables (models/grmu-slots.md, Sets and Variables)


@dataclass
class _Sets:
    """The index sets that the slot model's rows share (``models/grmu-slots.md``, Sets)."""

    instance: Instance
    gpus: tuple[GpuCandidates, ...]  # the open (profile, start) pairs per GPU
    shapes: list[Shape]  # in order of first appearance
    pool: list[tuple[int, str, int, int]]  # X[k]: (shape, GPU, start, profile index on its GPU's model)
    stays: list[tuple[str, int]]  # S[k]: (running workload, start on its own GPU)
    stay_profile: list[int]  # S[k]: the profile index on its GPU's model
    stays_of: dict[str, list[int]]  # running workload -> its S
    accept: list[tuple[int, tuple[str, ...]]]  # A[k]: (shape, new workloads of one weight)


@dataclass
class _Terms:
    """Every placement term on a GPU and what a running workload's leaving is, once X and S exist."""

    on_gpu: dict[str, list[tuple[Any, Workload, int, int]]]  # (X or S, workload, profile index, start)
    gone: dict[str, Any]  # movable running workload -> 1 - its S


def _sets(instance: Instance, ids: frozenset[str]) -> _Sets:
    """X: pool slots (shape, GPU, start); S: a running workload at a start of its own GPU; A."""
    gpus = open_placements(instance, ids)
    shapes, _ = movable_shapes(instance, ids)
    pool: list[tuple[int, str, int, int]] = []
    for g in gpus:
        for c, shape in enumerate(shapes):
            for profile in profile_options(instance, shape.example, g.model):
                p = g.model.profiles.index(profile)
                pool.extend((c, g.gpu, s, p) for s in g.starts(p))
    open_by_gpu = {g.gpu: g for g in gpus}
    stays: list[tuple[str, int]] = []
    stay_profile: list[int] = []
    for shape in shapes:
        for wid in shape.running:
            w = instance.workload(wid)
            assert w.placement is not None
            home = open_by_gpu[w.placement.gpu]
            at = home.model.profiles.index(home_profile(instance, w))
            stays.extend((wid, s) for s in home.starts(at))
            stay_profile.extend(at for _ in home.starts(at))
    stays_of: dict[str, list[int]] = defaultdict(list)
    for k, (wid, _) in enumerate(stays):
        stays_of[wid].append(k)
    accept = [(c, tuple(ws)) for c, shape in enumerate(shapes) for ws in shape.new.values()]
    return _Sets(instance, gpus, shapes, pool, stays, stay_profile, stays_of, accept)


def _variables(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """Eq. 26 as the slot model has it: X, S, A, U and PHI; U fixed to 1 where a fixed workload sits."""
    instance, accept = sets.instance, sets.accept
    m.X = pyo.Var(range(len(sets.pool)), domain=pyo.Binary)
    m.S = pyo.Var(range(len(sets.stays)), domain=pyo.Binary)
    m.A = pyo.Var(
        range(len(accept)), domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, len(accept[k][1]))
    )
    m.U = pyo.Var([g.id for g in instance.gpus], domain=pyo.Binary)
    m.PHI = pyo.Var([h.id for h in instance.hosts], domain=pyo.Binary)
    for g in sets.gpus:
        if g.fixed.workloads:
            m.U[g.gpu].fix(1)


def _terms(m: pyo.ConcreteModel, sets: _Sets) -> _Terms:
    """Every placement term on a GPU (X and S) and gone_w = 1 - sum of S of each running workload."""
    instance = sets.instance
    on_gpu: dict[str, list[tuple[Any, Workload, int, int]]] = defaultdict(list)
    for k, (c, gpu_id, s, p) in enumerate(sets.pool):
        on_gpu[gpu_id].append((m.X[k], sets.shapes[c].example, p, s))
    for k, (wid, s) in enumerate(sets.stays):
        w = instance.workload(wid)
        on_gpu[w.placement.gpu].append((m.S[k], w, sets.stay_profile[k], s))  # type: ignore[union-attr]
    gone = {
        wid: 1 - sum(m.S[k] for k in sets.stays_of[wid]) for shape in sets.shapes for wid in shape.running
    }
    return _Terms(on_gpu, gone)


# --- the rows, one function per family (models/grmu-slots.md, Constraints)


def _eq8_eq11_pool(m: pyo.ConcreteModel, sets: _Sets, terms: _Terms) -> None:
    """Eqs. 8-11, ``eq8_pool``: per shape, the pool's slots are the accepted new workloads and the leavers."""
    m.eq8_pool = pyo.ConstraintList()
    slots_of: dict[int, list[int]] = defaultdict(list)
    for k, (c, *_) in enumerate(sets.pool):
        slots_of[c].append(k)
    for c, shape in enumerate(sets.shapes):
        supply = sum(m.A[k] for k, (cc, _) in enumerate(sets.accept) if cc == c) + sum(
            terms.gone[w] for w in shape.running
        )
        m.eq8_pool.add(sum(m.X[k] for k in slots_of[c]) == supply)


def _eq9_stay_once(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """Eq. 9, ``eq8_stay_once``: a running workload stays at one start of its own GPU at most."""
    m.eq8_stay_once = pyo.ConstraintList()
    for ks in sets.stays_of.values():
        if len(ks) > 1:
            m.eq8_stay_once.add(sum(m.S[k] for k in ks) <= 1)


def _eq12_eq16_eq20_slot_clique(m: pyo.ConcreteModel, sets: _Sets, terms: _Terms) -> None:
    """Eqs. 12-16 and 20 replaced, ``slot_clique``: one instance per memory slot, only on an active GPU."""
    m.slot_clique = pyo.ConstraintList()
    for g in sets.gpus:
        on = terms.on_gpu.get(g.gpu, [])
        for slot in range(g.model.slots):
            covering = [v for v, _, p, s in on if s <= slot < s + g.model.profiles[p].memory_slots]
            if covering:
                m.slot_clique.add(sum(covering) <= m.U[g.gpu])


def _compute_cap(m: pyo.ConcreteModel, sets: _Sets, terms: _Terms) -> None:
    """``compute_cap`` (a valid inequality): an active GPU's compute slices, where they can bind."""
    # 7 compute slices on 8 memory slots: valid for integers, cuts the LP's fractional GPUs
    m.compute_cap = pyo.ConstraintList()
    for g in sets.gpus:
        fixed_compute = sum(n * g.model.profiles[p].compute for p, n in enumerate(g.fixed.counts))
        compute = [(v, g.model.profiles[p].compute) for v, _, p, _ in terms.on_gpu.get(g.gpu, [])]
        if sum(c for _, c in compute) > g.model.compute_slices - fixed_compute:
            m.compute_cap.add(
                sum(c * v for v, c in compute) <= (g.model.compute_slices - fixed_compute) * m.U[g.gpu]
            )


def _media_once(m: pyo.ConcreteModel, sets: _Sets, terms: _Terms) -> None:
    """``media_once`` (a hardware fact): one media-engine (``+me``) instance per GPU."""
    m.media_once = pyo.ConstraintList()
    for g in sets.gpus:
        media = [v for v, _, p, _ in terms.on_gpu.get(g.gpu, []) if g.model.profiles[p].media_extension]
        if len(media) > 1:
            m.media_once.add(sum(media) <= 1)


def _profile_max(m: pyo.ConcreteModel, sets: _Sets, terms: _Terms) -> None:
    """``profile_max`` (a hardware fact): a profile's maximum count per GPU, where slots allow more."""
    m.profile_max = pyo.ConstraintList()
    for g in sets.gpus:
        by_profile: dict[int, list[tuple[Any, int]]] = defaultdict(list)
        for v, _, p, s in terms.on_gpu.get(g.gpu, []):
            by_profile[p].append((v, s))
        for p, vs in by_profile.items():
            room = g.model.profiles[p].max_instances - g.fixed.counts[p]
            if room < len({s for _, s in vs}):
                m.profile_max.add(sum(v for v, _ in vs) <= room)


def _eq6_eq7_host_cpu_ram(
    m: pyo.ConcreteModel, sets: _Sets, terms: _Terms, fixed_at: dict[str, tuple[str, int]]
) -> None:
    """Eqs. 6-7, ``eq6_cpu`` and ``eq7_ram``: host cpu and ram net of the fixed workloads, where they bind."""
    instance = sets.instance
    m.eq6_cpu = pyo.ConstraintList()
    m.eq7_ram = pyo.ConstraintList()
    held: dict[tuple[str, str], float] = defaultdict(float)
    for wid, (gpu_id, _) in fixed_at.items():
        for attr in ("cpu", "ram_gb"):
            held[instance.gpu(gpu_id).host, attr] += getattr(instance.workload(wid), attr)
    for h in instance.hosts:
        on_host = [(v, w) for gpu_id in h.gpus for v, w, _, _ in terms.on_gpu.get(gpu_id, [])]
        for cap, attr, cons in ((h.cpu, "cpu", m.eq6_cpu), (h.ram_gb, "ram_gb", m.eq7_ram)):
            if cap is None:
                continue
            need = [(v, getattr(w, attr)) for v, w in on_host if getattr(w, attr) > 0]
            left = cap - held[h.id, attr]
            if need and sum(a for _, a in need) > left:
                cons.add(sum(a * v for v, a in need) <= left)


def _eq19_host_on(m: pyo.ConcreteModel, instance: Instance) -> None:
    """Eq. 19, ``eq19_host_on``: a GPU is active only on an active host."""
    m.eq19_host_on = pyo.ConstraintList()
    for gpu in instance.gpus:
        m.eq19_host_on.add(m.U[gpu.id] <= m.PHI[gpu.host])


def _symmetry_identical_gpus(m: pyo.ConcreteModel, instance: Instance, terms: _Terms) -> None:
    """``symmetry``: identical empty GPUs of one host are used in order, the fullest first."""
    m.symmetry = pyo.ConstraintList()
    for cls in gpu_classes(instance):
        model = instance.gpu(cls.members[0]).model
        used = [
            sum(v * model.profiles[p].memory_slots for v, _, p, _ in terms.on_gpu[g]) for g in cls.members
        ]
        for a, b in zip(range(len(used)), range(1, len(used)), strict=False):
            m.symmetry.add(m.U[cls.members[a]] >= m.U[cls.members[b]])
            if terms.on_gpu[cls.members[a]]:
                m.symmetry.add(used[a] >= used[b])


def _eq5_same_host_leavers(m: pyo.ConcreteModel, sets: _Sets, terms: _Terms) -> list[tuple[int, float, str]]:
    """Eq. 5, ``Z``: leavers that land on their own host (2 delta, not 4); returns Z's keys."""
    instance = sets.instance
    host_slots: dict[tuple[int, str], list[int]] = defaultdict(list)
    for k, (c, gpu_id, *_) in enumerate(sets.pool):
        host_slots[c, instance.gpu(gpu_id).host].append(k)
    leavers: dict[tuple[int, float, str], list[str]] = defaultdict(list)
    for c, shape in enumerate(sets.shapes):
        for wid in shape.running:
            w = instance.workload(wid)
            assert w.placement is not None
            leavers[c, w.migration_weight, instance.gpu(w.placement.gpu).host].append(wid)
    z_keys = [key for key in leavers if key[1] > 0 and host_slots.get((key[0], key[2]))]
    m.Z = pyo.Var(z_keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, *key: (0, len(leavers[key])))
    m.eq5_same_host_leavers = pyo.ConstraintList()
    m.eq5_same_host_slots = pyo.ConstraintList()
    by_shape_host: dict[tuple[int, str], list[tuple[int, float, str]]] = defaultdict(list)
    for key in z_keys:
        m.eq5_same_host_leavers.add(m.Z[key] <= sum(terms.gone[w] for w in leavers[key]))
        by_shape_host[key[0], key[2]].append(key)
    for (c, host), keys in by_shape_host.items():
        m.eq5_same_host_slots.add(sum(m.Z[key] for key in keys) <= sum(m.X[k] for k in host_slots[c, host]))
    return z_keys


# --- the objectives (models/grmu-slots.md, Objectives)


def _eq3_eq5_objectives(
    m: pyo.ConcreteModel, sets: _Sets, terms: _Terms, z_keys: list[tuple[int, float, str]]
) -> frozenset[str]:
    """Eqs. 3-5, restarts and the budget's measures as ``m.obj_expr``; returns those that are lower bounds."""
    # constants of the always-placed running workloads included
    instance, gone = sets.instance, terms.gone
    acceptance = sum(w.weight for w in instance.running) + sum(
        instance.workload(members[0]).weight * m.A[k] for k, (_, members) in enumerate(sets.accept)
    )
    hardware = sum(h.weight * (m.PHI[h.id] + sum(m.U[g] for g in h.gpus)) for h in instance.hosts)
    migrations = sum(4 * instance.workload(w).migration_weight * gone[w] for w in gone) - sum(
        2 * key[1] * m.Z[key] for key in z_keys
    )
    # restarts: a running workload that leaves its GPU, or takes another start on it
    moved = {
        wid: gone[wid]
        + sum(
            m.S[k]
            for k in sets.stays_of[wid]
            if sets.stays[k][1] != instance.workload(wid).placement.start  # type: ignore[union-attr]
        )
        for wid in gone
    }
    memory = {wid: leaver_memory(instance, instance.workload(wid)) for wid in gone}
    exprs = {
        "acceptance": acceptance,
        "hardware": hardware,
        "migrations": migrations,
        "restarts": sum(instance.workload(w).migration_weight * moved[w] for w in moved),
        "restarted": sum(moved.values()),
        "moved_memory_gb": sum(memory[w][0] * gone[w] for w in gone),
    }
    m.obj_expr = pyo.Expression(list(exprs), rule=lambda _m, name: exprs[name])
    return frozenset({"moved_memory_gb"} if any(lo != hi for lo, hi in memory.values()) else ())


def leaver_memory(instance: Instance, w: Workload) -> tuple[float, float]:
    """The smallest and largest memory (GB) of ``w``'s profile over the GPU models it may use."""
    sizes = [
        p.memory_gb for model in instance.models.values() if (p := instance.profile_on(w, model)) is not None
    ]
    return min(sizes), max(sizes)
