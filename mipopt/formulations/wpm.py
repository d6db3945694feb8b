"""IBM's WPM profit MIP (``--model wpm``): Eq. 2a-2k of the WPM paper over free GPUs, free partitions and imaginary GPUs.

WPM decides *what* goes on each bin (a free GPU, a free partition of a partly used GPU,
or the imaginary twin of a partly used GPU, which stands for repartitioning it), not
*where*: start slots are assigned afterwards by the indexing step. See ``models/wpm.md``.

Bins and their capacities: a free or imaginary GPU offers the model's compute slices C_g
and memory slots M_g; a free partition q of a partly used GPU (WPM Alg. 1,
:func:`mipopt.preprocess.gpu_partitions` around *all* its running workloads, as the
paper does) offers its own C_q and M_q. Memory is counted in memory slots, the paper's
``m_w / S_g`` (S_g = 10 GB on A100-80GB).
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from itertools import pairwise

import pyomo.environ as pyo

from mipopt.catalog import GpuModel
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Workload
from mipopt.preprocess import gpu_partitions, running_classes, workload_classes

USE_CASES = ("initial", "compaction", "reconfiguration", "joint")


@dataclass(frozen=True, slots=True)
class WpmWeights:
    """Rewards and costs of Eq. 2a; defaults follow the paper's priorities.

    Placing beats saving a GPU (``reward`` x a_w > ``gpu`` x b_j), saving a GPU beats the
    migrations that free it (``gpu`` exceeds the migration cost of a full GPU of 1-slot
    workloads, 7 x ``migration`` x delta_w, for delta_w up to 1.4), migrating beats waste.
    """

    reward: float = 1000.0  # p_w = reward x a_w
    gpu: float = 100.0  # q_g = gpu x b_j of the GPU's host
    repartition: float = 1.0  # gamma^R
    migration: float = 10.0  # gamma^M_w = migration x delta_w
    waste: float = 0.1  # gamma^W


@dataclass(frozen=True, slots=True)
class Bin:
    """Something WPM fills: a free GPU, an imaginary GPU, or a free partition.

    ``slots`` is the bitmask of memory slots the bin may use on its GPU.
    """

    key: str
    kind: str  # "free", "imaginary" or "partition"
    gpu: str
    compute: int
    memory: int
    slots: int


@dataclass
class WpmModel:
    """A built WPM model; ``contents()`` reads what each bin holds, ``stayed()`` who did not move.

    Workloads are counted per class (``classes``: representative -> members): new ones
    per :func:`~mipopt.preprocess.workload_classes`, movable running ones per
    :func:`~mipopt.preprocess.running_classes` (same GPU, same shape and weights).
    ``movable`` and ``new`` list representatives.
    """

    instance: Instance
    use_case: str
    weights: WpmWeights
    model: pyo.ConcreteModel
    bins: list[Bin]
    pairs: list[tuple[str, str]]  # x index: (workload, bin key)
    movable: list[str]
    new: list[str]
    classes: dict[str, tuple[str, ...]]  # representative -> members
    fixed: dict[str, tuple[str, int]]
    stats: dict[str, int] = field(default_factory=dict)

    def contents(self) -> dict[str, list[str]]:
        """Bin key -> workload ids placed in it, from the current variable values.

        A class's count in a bin is handed to its members in instance order, after
        the members that stayed.
        """
        out: dict[str, list[str]] = defaultdict(list)
        left = {rep: list(members) for rep, members in self.classes.items()}
        for rep in self.movable:
            del left[rep][: self._stays(rep)]
        for w, b in self.pairs:
            n = round(self.model.x[w, b].value or 0)
            out[b].extend(left[w][:n])
            del left[w][:n]
        return {b: ws for b, ws in out.items() if ws}

    def stayed(self) -> list[str]:
        return [w for rep in self.movable for w in self.classes[rep][: self._stays(rep)]]

    def _stays(self, rep: str) -> int:
        return round(self.model.stay[rep].value or 0)


def _profile(instance: Instance, w: Workload, model: GpuModel) -> int | None:
    p = instance.profile_on(w, model)
    return None if p is None else model.profiles.index(p)


def build_wpm(instance: Instance, use_case: str = "joint", weights: WpmWeights | None = None) -> WpmModel:
    """Build WPM for one use case.

    ``initial``: running workloads fixed, new ones placed in free GPUs and partitions;
    ``compaction``: running workloads only, moved into partitions of other used GPUs (no
    free GPU is opened) so that GPUs empty out; ``reconfiguration``: running workloads only,
    onto free and imaginary GPUs; ``joint``: everything may move. Pinned workloads never move.

    Raises
    ------
    InstanceError
        Naming ``--use-case`` when it is unknown.
    """
    if use_case not in USE_CASES:
        raise InstanceError("--use-case", f"unknown use case {use_case!r} (known: {', '.join(USE_CASES)})")
    wt = weights or WpmWeights()
    moving = use_case != "initial"
    moving_ids = [w.id for w in instance.running if moving and not w.pinned]
    new_ids = [w.id for w in instance.new] if use_case in ("initial", "joint") else []
    fixed = {w: at for w, at in instance.current_placement().items() if w not in set(moving_ids)}

    busy = {g for g, _ in instance.current_placement().values()}
    pinned_on = {g for w, (g, _) in fixed.items()}
    bins: list[Bin] = []
    for gpu in instance.gpus:
        full = (1 << gpu.model.slots) - 1
        if gpu.id not in busy and use_case != "compaction":
            bins.append(Bin(gpu.id, "free", gpu.id, gpu.model.compute_slices, gpu.model.slots, full))
        if gpu.id in busy and gpu.id not in pinned_on and use_case in ("reconfiguration", "joint"):
            bins.append(
                Bin(f"{gpu.id}~i", "imaginary", gpu.id, gpu.model.compute_slices, gpu.model.slots, full)
            )
    for gp in gpu_partitions(instance):
        for i, q in enumerate(gp.partitions):
            bins.append(Bin(f"{gp.gpu}~p{i}", "partition", gp.gpu, q.compute, q.slots, q.mask))

    m = pyo.ConcreteModel(name=f"wpm[{instance.name}:{use_case}]")
    # workloads are counted per class: WPM's x_wg summed over a class's members
    classes = {c.representative: c.members for c in running_classes(instance, moving_ids)}
    movable = list(classes)
    if new_ids:
        classes |= {c.representative: c.members for c in workload_classes(instance)}
    is_movable = set(movable)
    new = [w for w in classes if w not in is_movable]
    pairs: list[tuple[str, str]] = []
    need: dict[tuple[str, str], tuple[int, int]] = {}  # (w, bin) -> (compute, memory slots)
    for wid in classes:
        wl = instance.workload(wid)
        for bn in bins:
            model = instance.gpu(bn.gpu).model
            p = _profile(instance, wl, model)
            if p is None:
                continue
            prof = model.profiles[p]
            if (
                prof.compute <= bn.compute
                and prof.memory_slots <= bn.memory
                and any(prof.slot_mask(s) & ~bn.slots == 0 for s in prof.starts)
            ):
                pairs.append((wid, bn.key))
                need[wid, bn.key] = (prof.compute, prof.memory_slots)
    keys = [b.key for b in bins]
    by_key = {b.key: b for b in bins}
    used_gpus = sorted(busy)
    size = {w: len(members) for w, members in classes.items()}
    m.x = pyo.Var(
        pairs, domain=pyo.NonNegativeIntegers, bounds=lambda _m, w, b: (0, min(size[w], by_key[b].compute))
    )
    m.stay = pyo.Var(movable, domain=pyo.NonNegativeIntegers, bounds=lambda _m, w: (0, size[w]))
    m.y = pyo.Var([b.key for b in bins if b.kind != "partition"] + used_gpus, domain=pyo.Binary)
    m.z = pyo.Var([b.key for b in bins if b.kind == "partition"], domain=pyo.Binary)
    m.u = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].compute))
    m.v = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].memory))
    m.U = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].compute))
    m.V = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].memory))
    m.delta = pyo.Var(keys, domain=pyo.Binary)

    in_bin: dict[str, list[str]] = defaultdict(list)
    of_w: dict[str, list[str]] = defaultdict(list)
    for wid, key in pairs:
        in_bin[key].append(wid)
        of_w[wid].append(key)

    m.eq2b = pyo.ConstraintList()
    m.eq2c = pyo.ConstraintList()
    m.eq2f = pyo.ConstraintList()
    m.eq2g = pyo.ConstraintList()
    m.eq2i = pyo.ConstraintList()
    m.eq2j = pyo.ConstraintList()
    m.eq2k = pyo.ConstraintList()
    for b in bins:
        xs = [m.x[w, b.key] for w in in_bin[b.key]]
        if b.kind == "partition":
            m.eq2c.add(sum(xs) <= b.compute * m.z[b.key])
        else:
            m.eq2b.add(sum(xs) <= b.compute * m.y[b.key])
        m.eq2f.add(sum(need[w, b.key][0] * m.x[w, b.key] for w in in_bin[b.key]) + m.u[b.key] == b.compute)
        m.eq2g.add(sum(need[w, b.key][1] * m.x[w, b.key] for w in in_bin[b.key]) + m.v[b.key] == b.memory)
        m.eq2i.add(m.u[b.key] - m.v[b.key] <= m.U[b.key])
        m.eq2j.add(m.delta[b.key] <= m.u[b.key])
        m.eq2j.add(m.u[b.key] <= b.compute * m.delta[b.key])
        m.eq2k.add(m.v[b.key] - b.memory * m.delta[b.key] <= m.V[b.key])

    # 2d: a used GPU is on when one of its partitions is used or a workload stays on it
    m.eq2d = pyo.ConstraintList()
    m.stay_on = pyo.ConstraintList()
    for g in used_gpus:
        parts = [m.z[b.key] for b in bins if b.kind == "partition" and b.gpu == g]
        if parts:
            m.eq2d.add(sum(parts) <= instance.gpu(g).model.compute_slices * m.y[g])
        if g in pinned_on:
            m.y[g].fix(1)
    for w in movable:
        m.stay_on.add(m.stay[w] <= size[w] * m.y[instance.workload(w).placement.gpu])  # type: ignore[union-attr]

    # 2e: at most one bin; running workloads stay placed (here or elsewhere)
    m.eq2e = pyo.ConstraintList()
    for w in movable:
        m.eq2e.add(sum(m.x[w, b] for b in of_w[w]) + m.stay[w] == size[w])
    for w in new:
        if of_w[w]:
            m.eq2e.add(sum(m.x[w, b] for b in of_w[w]) <= size[w])

    # 2h: a GPU and its imaginary twin are not both used
    m.eq2h = pyo.ConstraintList()
    for b in bins:
        if b.kind == "imaginary":
            m.eq2h.add(m.y[b.gpu] + m.y[b.key] <= 1)

    # symmetry: free GPUs of one host and model are interchangeable bins; fill them fullest first
    m.symmetry = pyo.ConstraintList()
    host_of = {g.id: instance.host(g.host) for g in instance.gpus}
    alike: dict[tuple[str, str], list[str]] = defaultdict(list)
    for b in bins:
        if b.kind == "free":
            alike[host_of[b.gpu].id, instance.gpu(b.gpu).model.name].append(b.key)
    for group in alike.values():
        for first, second in pairwise(group):
            m.symmetry.add(m.u[first] <= m.u[second])

    # hardware facts the paper leaves out: one +me set and per-profile maxima per physical GPU,
    # host cpu and ram (terms over every bin of the GPU and the workloads staying on it)
    terms: dict[str, list[tuple[pyo.Var, Workload]]] = defaultdict(list)
    for wid, key in pairs:
        terms[by_key[key].gpu].append((m.x[wid, key], instance.workload(wid)))
    for w in movable:
        wl = instance.workload(w)
        terms[wl.placement.gpu].append((m.stay[w], wl))  # type: ignore[union-attr]

    def most(vs: list[pyo.Var]) -> int:  # the largest value a sum of these counts can take
        return sum(v.ub for v in vs)

    m.media_once = pyo.ConstraintList()
    m.profile_max = pyo.ConstraintList()
    held_counts: dict[tuple[str, int], int] = defaultdict(int)
    held_media: set[str] = set()
    for w, (g, _) in fixed.items():
        model = instance.gpu(g).model
        p = _profile(instance, instance.workload(w), model)
        assert p is not None
        held_counts[g, p] += 1
        if model.profiles[p].media_extension:
            held_media.add(g)
    for g, ts in terms.items():
        model = instance.gpu(g).model
        media = [v for v, wl in ts if model.profiles[_profile(instance, wl, model) or 0].media_extension]
        if media and (most(media) > 1 or g in held_media):
            m.media_once.add(sum(media) <= (0 if g in held_media else 1))
        per_profile: dict[int, list[pyo.Var]] = defaultdict(list)
        for v, wl in ts:
            p = _profile(instance, wl, model)
            assert p is not None
            per_profile[p].append(v)
        for p, vs in per_profile.items():
            room = model.profiles[p].max_instances - held_counts[g, p]
            if most(vs) > room:
                m.profile_max.add(sum(vs) <= room)
    m.host_cpu = pyo.ConstraintList()
    m.host_ram = pyo.ConstraintList()
    for h in instance.hosts:
        ts = [t for g in h.gpus for t in terms.get(g, [])]
        for cap, attr, cons in ((h.cpu, "cpu", m.host_cpu), (h.ram_gb, "ram_gb", m.host_ram)):
            if cap is None or not ts:
                continue
            held = sum(getattr(instance.workload(w), attr) for w, (g, _) in fixed.items() if g in h.gpus)
            if sum(getattr(wl, attr) for _, wl in ts) > cap - held:
                cons.add(sum(getattr(wl, attr) * v for v, wl in ts) <= cap - held)

    # 2a
    def host_weight(gpu_id: str) -> float:
        return host_of[gpu_id].weight

    twin = {b.gpu: b.key for b in bins if b.kind == "imaginary"}
    reward = sum(wt.reward * instance.workload(w).weight * m.x[w, b] for w, b in pairs if w not in is_movable)
    gpu_cost = sum(wt.gpu * host_weight(by_key[k].gpu) * m.y[k] for k in m.y if k in by_key) + sum(
        wt.gpu * host_weight(g) * m.y[g] for g in used_gpus
    )
    repartition = sum(wt.repartition * m.y[b.key] for b in bins if b.kind == "imaginary")
    migration = 0.0
    for w in movable:
        wl = instance.workload(w)
        home = twin.get(wl.placement.gpu)  # type: ignore[union-attr]
        kept = m.stay[w] + (m.x[w, home] if home is not None and (w, home) in m.x else 0)
        migration += wt.migration * wl.migration_weight * (size[w] - kept)
    waste = sum(wt.waste * (m.U[k] + m.V[k]) for k in keys)
    m.profit = pyo.Objective(expr=reward - gpu_cost - repartition - migration - waste, sense=pyo.maximize)
    stats = {
        "variables": m.nvariables(),
        "constraints": m.nconstraints(),
        "bins": len(bins),
        "pairs": len(pairs),
    }
    return WpmModel(instance, use_case, wt, m, bins, pairs, movable, new, classes, fixed, stats)
