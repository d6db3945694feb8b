"""IBM's WPM profit MIP (``--model wpm``): Eq. 2a-2k of the WPM paper over free GPUs, free partitions and imaginary GPUs.

WPM decides *what* goes on each bin (a free GPU, a free partition of a partly used GPU,
or the imaginary twin of a partly used GPU, which stands for repartitioning it), not
*where*: start slots are assigned afterwards by the indexing step. See ``models/wpm.md``.

Bins and their capacities: a free or imaginary GPU offers the model's compute slices C_g
and memory slots M_g; a free partition q of a partly used GPU (WPM Alg. 1,
:func:`mipopt.exact.preprocess.gpu_partitions` around *all* its running workloads, as the
paper does) offers its own C_q and M_q. Memory is counted in memory slots, the paper's
``m_w / S_g`` (S_g = 10 GB on A100-80GB).

Workloads are counted, not named: ``x[k, b]`` is how many of kind (shape) k arrive in bin
b, whichever running class or queue they come from; running classes say how many stay
and how many go home to their GPU's twin. With ``tight`` (the default) rows that cut off
no integer point shrink the LP relaxation; they are what proves the 80-GPU cases
(``benchmarks/README.md``, WPM section).

A memory-sized workload (:attr:`~mipopt.instance.Workload.memory_gb`) counts at the smallest
profile that fits it on each model (:meth:`~mipopt.instance.Instance.profile_on`). That loses
nothing WPM's placement can reach when the smallest profile does all a larger one does: no more
compute slices nor memory slots, every start of every larger fitting profile among its starts, and
as many instances as fit (:func:`smallest_dominates`, true of every built-in model, which a test
checks); an instance where it is not (a custom model) is refused in one line naming the workload.
Only WPM's waste term (Eq. 2i-2k) could ever prefer a larger profile.

A :class:`~mipopt.instance.Budget` adds two rows (``models/wpm.md``, "Budget"): the running
workloads restarted (those that leave their GPU, and those that come home to their GPU's twin
at another start) at most ``max_restarts``, the memory of those that leave at most
``max_moved_gb``.
"""

from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from itertools import pairwise

import pyomo.environ as pyo

from mipopt.catalog import GpuModel, Profile
from mipopt.errors import InstanceError
from mipopt.exact.preprocess import (
    dominates,
    gpu_partitions,
    placement_key,
    running_classes,
    workload_classes,
)
from mipopt.instance import Budget, Host, Instance, Workload

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

    Workloads are counted, never named (models/wpm.md, "Variables"). ``classes`` maps a
    representative to its members: movable running workloads per
    :func:`~mipopt.exact.preprocess.running_classes` (same GPU, shape and weights; ``movable``
    lists them) and new ones per :func:`~mipopt.exact.preprocess.workload_classes` (``new``).
    ``kinds`` groups classes of one shape (:func:`~mipopt.exact.preprocess.placement_key`):
    ``x[k, b]`` counts the workloads of kind k that arrive in bin b from another GPU or
    from the queue, whichever class they come from.
    """

    instance: Instance
    use_case: str
    weights: WpmWeights
    model: pyo.ConcreteModel
    bins: list[Bin]
    pairs: list[tuple[str, str]]  # x index: (kind, bin key)
    movable: list[str]
    new: list[str]
    classes: dict[str, tuple[str, ...]]  # representative -> members
    kinds: dict[str, tuple[str, ...]]  # kind -> class representatives
    fixed: dict[str, tuple[str, int]]
    stats: dict[str, int] = field(default_factory=dict)
    budget: Budget | None = None

    def contents(self) -> dict[str, list[str]]:
        """Bin key -> workload ids placed in it, from the current variable values.

        Per movable class, the first members (instance order) stay, the next go to
        their GPU's imaginary twin, the rest leave; per new class, the first members
        are accepted. A kind's arrivals in the bins are then handed out from its
        leavers and accepted new workloads, in that order: which member goes where does
        not change the objective (only counts enter it).
        """
        m = self.model
        out: dict[str, list[str]] = defaultdict(list)
        pool: dict[str, list[str]] = defaultdict(list)
        kind_of = {rep: k for k, reps in self.kinds.items() for rep in reps}
        twin = {b.gpu: b.key for b in self.bins if b.kind == "imaginary"}
        for rep in self.movable:
            members = self.classes[rep]
            stays, home = self._count(m.stay, rep), self._count(m.home, rep)
            if home:
                out[twin[self._gpu(rep)]].extend(members[stays : stays + home])
            pool[kind_of[rep]].extend(members[stays + home :])
        for rep in self.new:
            pool[kind_of[rep]].extend(self.classes[rep][: self._count(m.accept, rep)])
        for k, b in self.pairs:
            n = round(m.x[k, b].value or 0)
            out[b].extend(pool[k][:n])
            del pool[k][:n]
        return {b: ws for b, ws in out.items() if ws}

    def warm_start(self, placed: Mapping[str, tuple[str, int]]) -> dict[str, float] | None:
        """A placement as starting values of the WPM variables, by Pyomo name; None if it has no image.

        Per GPU: a free GPU's workloads fill its bin; on a used GPU, running workloads
        on their own start stay and arrivals go to the free partition that holds their
        slots; when that fails (an arrival across partitions, a running workload on
        another start of its own GPU), the GPU is repartitioned: all it holds goes to
        its imaginary twin. A new workload with no image is left out (rejected); a
        movable running workload with none, or missing from ``placed``, makes the
        placement unusable. Workloads of one kind are counted, not told apart.
        """
        inst, m = self.instance, self.model
        rep_of = {w: r for r, members in self.classes.items() for w in members}
        kind_of = {r: k for k, reps in self.kinds.items() for r in reps}
        home = inst.current_placement()
        busy = {g for g, _ in home.values()}
        movers = {w for r in self.movable for w in self.classes[r]}
        if any(w not in placed for w in movers) or any(placed.get(w) != at for w, at in self.fixed.items()):
            return None
        by_key = {b.key: b for b in self.bins}
        free = {b.gpu: b.key for b in self.bins if b.kind == "free"}
        twin = {b.gpu: b.key for b in self.bins if b.kind == "imaginary"}
        parts: dict[str, list[Bin]] = defaultdict(list)
        for b in self.bins:
            if b.kind == "partition":
                parts[b.gpu].append(b)
        arrivals: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for w, (g, start) in placed.items():
            if w in rep_of:
                arrivals[g].append((w, start))

        x: Counter[tuple[str, str]] = Counter()
        stay: Counter[str] = Counter()
        came_home: Counter[str] = Counter()
        at_start: Counter[str] = Counter()  # came home at their own start
        accept: Counter[str] = Counter()
        repartitioned: set[str] = set()

        def put(w: str, key: str | None) -> bool:
            """Count ``w`` in bin ``key``; False where a running workload has no pair there."""
            if key is None or (kind_of[rep_of[w]], key) not in m.x:
                return w not in movers  # a new workload is left out; a running one may not be
            x[kind_of[rep_of[w]], key] += 1
            if w not in movers:
                accept[rep_of[w]] += 1
            return True

        for g, items in arrivals.items():
            spots: list[tuple[str, str | None]]
            if g in free:
                spots = [(w, free[g]) for w, _ in items]
            elif g not in busy:  # a free GPU that is no bin (compaction opens none)
                spots = [(w, None) for w, _ in items]
            else:
                kept = [w for w, start in items if w in movers and home[w] == (g, start)]
                rest = [(w, start) for w, start in items if w not in kept]
                shifted = any(w in movers and home[w][0] == g for w, _ in rest)
                spots = [(w, self._partition_of(parts[g], w, start)) for w, start in rest]
                if (shifted or any(key is None for _, key in spots)) and g in twin:
                    repartitioned.add(g)
                    spots = []
                    for w, start in items:
                        if w in movers and home[w][0] == g:
                            came_home[rep_of[w]] += 1
                            at_start[rep_of[w]] += home[w] == (g, start)
                        else:
                            spots.append((w, twin[g]))
                else:
                    stay.update(rep_of[w] for w in kept)
            if not all(put(w, key) for w, key in spots):
                return None

        # free GPUs of one host and model are interchangeable: fullest first, as the symmetry rows ask
        alike: dict[tuple[str, str], list[str]] = defaultdict(list)
        for bn in self.bins:
            if bn.kind == "free":
                alike[inst.gpu(bn.gpu).host, inst.gpu(bn.gpu).model.name].append(bn.key)
        for group in alike.values():
            loads = [{k: x.pop((k, key)) for k, kk in list(x) if kk == key} for key in group]
            gpu = by_key[group[0]].gpu
            loads.sort(key=lambda load: -sum(n * self._need(k, gpu)[0] for k, n in load.items()))
            for key, load in zip(group, loads, strict=True):
                x.update({(k, key): n for k, n in load.items()})

        held: dict[str, list[int]] = {b.key: [0, 0] for b in self.bins}
        for (k, key), n in x.items():
            c, mem = self._need(k, by_key[key].gpu)
            held[key][0] += n * c
            held[key][1] += n * mem
        for r, n in came_home.items():
            c, mem = self._need(r, self._gpu(r))
            held[twin[self._gpu(r)]][0] += n * c
            held[twin[self._gpu(r)]][1] += n * mem
        if any(c > by_key[key].compute or mem > by_key[key].memory for key, (c, mem) in held.items()):
            return None

        values: dict[str, float] = {}
        for (k, key), n in x.items():
            values[m.x[k, key].name] = n
        for r in self.movable:
            values[m.stay[r].name] = stay[r]
            if r in m.home:
                values[m.home[r].name] = came_home[r]
            if hasattr(m, "keep") and r in m.keep:
                values[m.keep[r].name] = at_start[r]
        for r in self.new:
            values[m.accept[r].name] = accept[r]
        busy_on = {g for g, _ in self.fixed.values()} | {self._gpu(r) for r in stay if stay[r]}
        for b in self.bins:
            c, mem = held[b.key]
            if c or mem:
                values[(m.z if b.kind == "partition" else m.y)[b.key].name] = 1
                if b.kind == "partition":
                    busy_on.add(b.gpu)
            u, v = b.compute - c, b.memory - mem
            delta = 1 if u > 0 else 0
            values[m.u[b.key].name] = u
            values[m.v[b.key].name] = v
            values[m.U[b.key].name] = max(0, u - v)
            values[m.V[b.key].name] = max(0, v - b.memory * delta)
            values[m.delta[b.key].name] = delta
        for g in busy_on - repartitioned:
            values[m.y[g].name] = 1
        return values

    def stayed(self) -> list[str]:
        return [w for rep in self.movable for w in self.classes[rep][: self._count(self.model.stay, rep)]]

    def kept_home(self) -> list[str]:
        """The movable running workloads that come home to their GPU's twin at their own start
        (``keep``, only under a restart budget): the indexing step must keep their starts."""
        m = self.model
        if not hasattr(m, "keep"):
            return []
        out: list[str] = []
        for rep in self.movable:
            stays, kept = self._count(m.stay, rep), self._count(m.keep, rep)
            out += self.classes[rep][stays : stays + kept]
        return out

    def held(self) -> list[str]:
        """The running workloads the indexing step must keep at their GPU and start: the fixed
        ones, and under a restart budget those that stay or come home at their own start (the
        model counts them as not restarted)."""
        extra = self.stayed() + self.kept_home() if hasattr(self.model, "keep") else []
        return list(self.fixed) + extra

    def _need(self, w: str, gpu: str) -> tuple[int, int]:
        """Compute slices and memory slots of workload ``w`` on ``gpu``'s model."""
        model = self.instance.gpu(gpu).model
        p = self.instance.profile_on(self.instance.workload(w), model)
        assert p is not None  # only pairs that fit are counted
        return p.compute, p.memory_slots

    def _partition_of(self, parts: list[Bin], w: str, start: int) -> str | None:
        """The free partition among ``parts`` that holds ``w`` at ``start``, or None."""
        if not parts:
            return None
        model = self.instance.gpu(parts[0].gpu).model
        p = self.instance.profile_on(self.instance.workload(w), model)
        if p is None:
            return None
        mask = p.slot_mask(start)
        return next((b.key for b in parts if mask & ~b.slots == 0), None)

    def _gpu(self, rep: str) -> str:
        placement = self.instance.workload(rep).placement
        assert placement is not None  # movable classes are running
        return placement.gpu

    @staticmethod
    def _count(var: pyo.Var, rep: str) -> int:
        return round(var[rep].value or 0) if rep in var else 0


def _host_gpus(
    m: pyo.ConcreteModel,
    instance: Instance,
    host: Host,
    ts: list[tuple[pyo.Var, Workload]],
    attr: str,
    room: float,
    on: pyo.Expression,
    fixed: Mapping[str, tuple[str, int]],
) -> None:
    """A host whose cpu (ram) caps its compute slices (memory slots) at K needs ceil(K / C) GPUs for K.

    With C slices (slots) per GPU and K = q C + r, 0 < r < C, the host holds at most
    ``q C + r (on - q)`` of them when ``on`` of its GPUs are on: at most K, and at most
    C per GPU when fewer than q + 1 are on (a mixed-integer rounding of the host row
    and the GPUs' capacities, which the LP misses: 50 slices on 7.14 GPUs). Written
    for hosts of one GPU model whose workloads all need some of the resource.
    """
    models = {instance.gpu(g).model for g in host.gpus}
    if len(models) != 1:
        return
    model = models.pop()
    per_gpu = model.compute_slices if attr == "cpu" else model.slots

    def size(wl: Workload) -> int:
        p = instance.profile_on(wl, model)
        assert p is not None
        return p.compute if attr == "cpu" else p.memory_slots

    ratios = [getattr(wl, attr) / size(wl) for _, wl in ts]
    if min(ratios) <= 0:
        return
    held = sum(size(instance.workload(w)) for w, (g, _) in fixed.items() if g in host.gpus)
    most = held + math.floor(room / min(ratios) + 1e-9)
    q, r = divmod(most, per_gpu)
    if r == 0 or q >= len(host.gpus):
        return
    m.host_gpus.add(held + sum(size(wl) * v for v, wl in ts) <= per_gpu * q + r * (on - q))


def _round_down(room: float, demands: list[float]) -> float:
    """``room`` down to a multiple of the demands' greatest common divisor, when they are integers.

    A sum of integer counts times integer demands is a multiple of their gcd, so the
    row loses no integer point; the LP loses the fraction (hosts at 90 % of 4 cpu per
    compute slice: 50.4 slices of room become 50).
    """
    if not all(float(d).is_integer() for d in demands):
        return room
    g = math.gcd(*(int(d) for d in demands))
    return g * math.floor(room / g + 1e-9) if g else room


def smallest_dominates(fitting: tuple[Profile, ...]) -> Profile | None:
    """None when the first (smallest) of ``fitting`` does all each later one does, else the
    first later profile it does not (:func:`~mipopt.exact.preprocess.dominates`: no more compute
    nor memory slots, each of its starts a start of the smallest, and room for as many instances
    of the smallest as fit apart).

    >>> from mipopt.catalog import get_model
    >>> from mipopt.instance.types import fitting_profiles
    >>> smallest_dominates(fitting_profiles(get_model("H100-80GB"), 10)) is None
    True
    """
    return next((q for q in fitting[1:] if not dominates(fitting[0], q)), None)


def _refuse_undominated(instance: Instance) -> None:
    """Refuse, naming the workload, a memory-sized one whose smallest fitting profile on some
    model of the instance does not do all a larger one does (module docstring)."""
    for k, w in enumerate(instance.workloads):
        if not w.memory_sized:
            continue
        for model in instance.models.values():
            fitting = instance.profiles_on(w, model)
            other = smallest_dominates(fitting)
            if other is not None:
                raise InstanceError(
                    f"workloads[{k}].memory_gb",
                    f"model wpm counts {w.id!r} at its smallest profile, {fitting[0].name}, which on "
                    f"{model.name} does not do all {other.name} does (compute, slots, starts or count); "
                    "use a model whose profile is a decision (grmu)",
                )


def _profile(instance: Instance, w: Workload, model: GpuModel) -> int | None:
    p = instance.profile_on(w, model)
    return None if p is None else model.profiles.index(p)


def build_wpm(
    instance: Instance,
    use_case: str = "joint",
    weights: WpmWeights | None = None,
    *,
    tight: bool = True,
    budget: Budget | None = None,
) -> WpmModel:
    """Build WPM for one use case.

    ``initial``: running workloads fixed, new ones placed in free GPUs and partitions;
    ``compaction``: running workloads only, moved into partitions of other used GPUs (no
    free GPU is opened) so that GPUs empty out; ``reconfiguration``: running workloads only,
    onto free and imaginary GPUs; ``joint``: everything may move. Pinned workloads never move.

    Parameters
    ----------
    instance
        The instance.
    use_case
        One of :data:`USE_CASES`.
    weights
        Rewards and costs of Eq. 2a; default :class:`WpmWeights`.
    tight
        Add the rows that cut off no integer point but shrink the LP relaxation (linking
        rows, host rows rounded to the demands' gcd, ``host_gpus``, ``+me`` and per-profile
        rows scaled by the GPU's on-state; ``models/wpm.md``). False keeps the paper's rows
        and the hardware rows as written before, for comparison.
    budget
        At most ``max_restarts`` running workloads restarted and ``max_moved_gb`` GB of them
        moved to another GPU (module docstring). With ``max_restarts``, running workloads are
        classes of one (which of them stays is no longer free) and a count ``keep`` per class
        says how many come home to the twin at their own start.

    Returns
    -------
    WpmModel

    Raises
    ------
    InstanceError
        Naming ``use_case`` when it is unknown, and ``workloads[i].memory_gb`` for a
        memory-sized workload whose smallest fitting profile does not do all a larger one does
        (:func:`smallest_dominates`).
    """
    if use_case not in USE_CASES:
        raise InstanceError("use_case", f"unknown use case {use_case!r} (known: {', '.join(USE_CASES)})")
    _refuse_undominated(instance)
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
    # workloads are counted per class, and their arrivals in bins per kind (shape); a restart
    # budget tells running workloads apart: whether one keeps its start is its own
    restarts = budget is not None and budget.max_restarts is not None and bool(moving_ids)
    classes: dict[str, tuple[str, ...]]
    if restarts:
        classes = {w: (w,) for w in moving_ids}
    else:
        classes = {c.representative: c.members for c in running_classes(instance, moving_ids)}
    movable = list(classes)
    if new_ids:
        classes |= {c.representative: c.members for c in workload_classes(instance)}
    is_movable = set(movable)
    new = [w for w in classes if w not in is_movable]
    kinds: dict[str, list[str]] = {}
    by_shape: dict[Hashable, str] = {}
    for rep in classes:
        label = by_shape.setdefault(placement_key(instance, instance.workload(rep)), rep)
        kinds.setdefault(label, []).append(rep)
    size = {w: len(members) for w, members in classes.items()}
    kind_size = {k: sum(size[c] for c in reps) for k, reps in kinds.items()}
    gpu_of = {rep: instance.workload(rep).placement.gpu for rep in movable}  # type: ignore[union-attr]

    pairs: list[tuple[str, str]] = []
    need: dict[tuple[str, str], tuple[int, int]] = {}  # (kind, bin) -> (compute, memory slots)
    most_in: dict[tuple[str, str], int] = {}  # (kind, bin) -> most that fit alone
    for k in kinds:
        wl = instance.workload(k)
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
                pairs.append((k, bn.key))
                need[k, bn.key] = (prof.compute, prof.memory_slots)
                fit = min(bn.compute // prof.compute, bn.memory // prof.memory_slots, prof.max_instances)
                most_in[k, bn.key] = min(kind_size[k], 1 if prof.media_extension else fit)
    keys = [b.key for b in bins]
    by_key = {b.key: b for b in bins}
    twin = {b.gpu: b.key for b in bins if b.kind == "imaginary"}
    used_gpus = sorted(busy)
    m.x = pyo.Var(pairs, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k, b: (0, most_in[k, b]))
    m.stay = pyo.Var(movable, domain=pyo.NonNegativeIntegers, bounds=lambda _m, w: (0, size[w]))
    homing = [w for w in movable if gpu_of[w] in twin]
    m.home = pyo.Var(homing, domain=pyo.NonNegativeIntegers, bounds=lambda _m, w: (0, size[w]))
    m.accept = pyo.Var(new, domain=pyo.NonNegativeIntegers, bounds=lambda _m, w: (0, size[w]))
    m.y = pyo.Var([b.key for b in bins if b.kind != "partition"] + used_gpus, domain=pyo.Binary)
    m.z = pyo.Var([b.key for b in bins if b.kind == "partition"], domain=pyo.Binary)
    m.u = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].compute))
    m.v = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].memory))
    m.U = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].compute))
    m.V = pyo.Var(keys, domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, by_key[k].memory))
    m.delta = pyo.Var(keys, domain=pyo.Binary)

    # what each bin holds: (count, compute, memory); a twin also holds its GPU's movers that come home
    inside: dict[str, list[tuple[pyo.Var, int, int]]] = defaultdict(list)
    of_kind: dict[str, list[str]] = defaultdict(list)
    for k, key in pairs:
        inside[key].append((m.x[k, key], *need[k, key]))
        of_kind[k].append(key)
    for w in homing:
        model = instance.gpu(gpu_of[w]).model
        prof = model.profiles[_profile(instance, instance.workload(w), model) or 0]
        inside[twin[gpu_of[w]]].append((m.home[w], prof.compute, prof.memory_slots))

    m.eq2b = pyo.ConstraintList()
    m.eq2c = pyo.ConstraintList()
    m.eq2f = pyo.ConstraintList()
    m.eq2g = pyo.ConstraintList()
    m.eq2i = pyo.ConstraintList()
    m.eq2j = pyo.ConstraintList()
    m.eq2k = pyo.ConstraintList()
    m.link = pyo.ConstraintList()
    for b in bins:
        hs = inside[b.key]
        if b.kind == "partition":
            m.eq2c.add(sum(n for n, _, _ in hs) <= b.compute * m.z[b.key])
        else:
            m.eq2b.add(sum(n for n, _, _ in hs) <= b.compute * m.y[b.key])
        on = m.z[b.key] if b.kind == "partition" else m.y[b.key]
        if tight:
            m.link.add(sum(c * n for n, c, _ in hs) <= b.compute * on)
            m.link.add(sum(mem * n for n, _, mem in hs) <= b.memory * on)
            for n, _, _ in hs:
                m.link.add(n <= n.ub * on)
        m.eq2f.add(sum(c * n for n, c, _ in hs) + m.u[b.key] == b.compute)
        m.eq2g.add(sum(mem * n for n, _, mem in hs) + m.v[b.key] == b.memory)
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
        if tight:
            for z in parts:
                m.link.add(z <= m.y[g])
        if g in pinned_on:
            m.y[g].fix(1)
    for w in movable:
        m.stay_on.add(m.stay[w] <= size[w] * m.y[gpu_of[w]])

    # 2e, counted: a kind's arrivals are its leavers plus its accepted new workloads; running
    # workloads stay placed (here, at home on the twin, or elsewhere), new ones at most once
    m.eq2e = pyo.ConstraintList()
    came_home = {w: m.home[w] for w in homing}
    leaving = {w: size[w] - m.stay[w] - came_home.get(w, 0) for w in movable}
    for k, reps in kinds.items():
        arrive = sum(leaving[c] if c in is_movable else m.accept[c] for c in reps)
        m.eq2e.add(sum(m.x[k, b] for b in of_kind[k]) == arrive)
    for w in movable:
        if w in m.home:
            m.eq2e.add(m.stay[w] + m.home[w] <= size[w])

    if budget is not None and movable:
        _budget_rows(m, instance, budget, movable, size, leaving, restarts, of_kind, _kind_of(kinds), by_key)

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
    for k, key in pairs:
        terms[by_key[key].gpu].append((m.x[k, key], instance.workload(k)))
    for w in movable:
        terms[gpu_of[w]].append((m.stay[w], instance.workload(w)))
        if w in m.home:
            terms[gpu_of[w]].append((m.home[w], instance.workload(w)))

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
    free_bin = {b.gpu: b.key for b in bins if b.kind == "free"}

    def on_gpu(g: str) -> pyo.Expression:  # 1 when the physical GPU is on (kept, repartitioned or free)
        if g in busy:
            return m.y[g] + (m.y[twin[g]] if g in twin else 0)
        return m.y[free_bin[g]]

    for g, ts in terms.items():
        model = instance.gpu(g).model
        # tight: a GPU that is off holds none (the LP counted one +me per bin of a GPU at y < 1)
        on = on_gpu(g) if tight else 1
        media = [v for v, wl in ts if model.profiles[_profile(instance, wl, model) or 0].media_extension]
        if media and (most(media) > 1 or g in held_media or tight):
            m.media_once.add(sum(media) <= (0 if g in held_media else on))
        per_profile: dict[int, list[pyo.Var]] = defaultdict(list)
        for v, wl in ts:
            p = _profile(instance, wl, model)
            assert p is not None
            per_profile[p].append(v)
        for p, vs in per_profile.items():
            left = model.profiles[p].max_instances - held_counts[g, p]
            if most(vs) > left:
                m.profile_max.add(sum(vs) <= left * on)
    m.host_cpu = pyo.ConstraintList()
    m.host_ram = pyo.ConstraintList()
    m.host_gpus = pyo.ConstraintList()

    def on_host(host: str) -> pyo.Expression:  # how many of the host's GPUs are on
        return sum(on_gpu(g) for g in instance.host(host).gpus if g in busy or g in free_bin)

    for h in instance.hosts:
        ts = [t for g in h.gpus for t in terms.get(g, [])]
        for cap, attr, cons in ((h.cpu, "cpu", m.host_cpu), (h.ram_gb, "ram_gb", m.host_ram)):
            if cap is None or not ts:
                continue
            held = sum(getattr(instance.workload(w), attr) for w, (g, _) in fixed.items() if g in h.gpus)
            if sum(getattr(wl, attr) for _, wl in ts) > cap - held:
                room = float(cap - held)
                if tight:  # integer counts: the room rounds down to a multiple of the demands' gcd
                    room = _round_down(room, [getattr(wl, attr) for _, wl in ts])
                cons.add(sum(getattr(wl, attr) * v for v, wl in ts) <= room)
                if tight:
                    _host_gpus(m, instance, h, ts, attr, float(cap - held), on_host(h.id), fixed)

    # 2a
    def host_weight(gpu_id: str) -> float:
        return host_of[gpu_id].weight

    reward = sum(wt.reward * instance.workload(w).weight * m.accept[w] for w in new)
    gpu_cost = sum(wt.gpu * host_weight(by_key[k].gpu) * m.y[k] for k in m.y if k in by_key) + sum(
        wt.gpu * host_weight(g) * m.y[g] for g in used_gpus
    )
    repartition = sum(wt.repartition * m.y[b.key] for b in bins if b.kind == "imaginary")
    # a move onto the own GPU's twin is not a migration (Assumption 2)
    migration = sum(wt.migration * instance.workload(w).migration_weight * leaving[w] for w in movable)
    waste = sum(wt.waste * (m.U[k] + m.V[k]) for k in keys)
    m.profit = pyo.Objective(expr=reward - gpu_cost - repartition - migration - waste, sense=pyo.maximize)
    stats = {
        "variables": m.nvariables(),
        "constraints": m.nconstraints(),
        "bins": len(bins),
        "pairs": len(pairs),
    }
    return WpmModel(
        instance,
        use_case,
        wt,
        m,
        bins,
        pairs,
        movable,
        new,
        classes,
        {k: tuple(v) for k, v in kinds.items()},
        fixed,
        stats,
        budget,
    )


def _kind_of(kinds: Mapping[str, list[str]]) -> dict[str, str]:
    """Class representative -> its kind."""
    return {rep: k for k, reps in kinds.items() for rep in reps}


def _budget_rows(
    m: pyo.ConcreteModel,
    instance: Instance,
    budget: Budget,
    movable: list[str],
    size: Mapping[str, int],
    leaving: Mapping[str, pyo.Expression],
    restarts: bool,
    of_kind: Mapping[str, list[str]],
    kind_of: Mapping[str, str],
    by_key: Mapping[str, Bin],
) -> None:
    """The budget's rows (``models/wpm.md``, "Budget").

    ``budget_restarts``: the running workloads that leave their GPU, and those that come home
    to its twin without keeping their start (``home - keep``), at most ``max_restarts``; the
    stayers keep their GPU and start. ``budget_moved_gb``: the leavers' memory, each at the
    most GB its profile has on a model of the bins its kind may arrive in (its own size where
    the profile is one size on every model, as a profile name is), at most ``max_moved_gb``.
    A leaver that lands in a free partition of its own GPU counts there too, an upper bound
    that no optimum needs (staying is cheaper and frees the same partitions).
    """
    if restarts:
        homing = [w for w in movable if w in m.home]
        m.keep = pyo.Var(homing, domain=pyo.NonNegativeIntegers, bounds=lambda _m, w: (0, size[w]))
        m.budget_keep = pyo.ConstraintList()
        for w in homing:
            m.budget_keep.add(m.keep[w] <= m.home[w])
        kept = {w: m.keep[w] for w in homing}
        restarted = sum(size[w] - m.stay[w] - kept.get(w, 0) for w in movable)
        m.budget_restarts = pyo.Constraint(expr=restarted <= budget.max_restarts)
    if budget.max_moved_gb is not None:
        gb: dict[str, float] = {}
        for w in movable:
            wl = instance.workload(w)
            sizes = [
                p.memory_gb
                for key in of_kind.get(kind_of[w], ())
                if (p := instance.profile_on(wl, instance.gpu(by_key[key].gpu).model)) is not None
            ]
            gb[w] = max(sizes, default=0.0)
        moved = sum(gb[w] * leaving[w] for w in movable if gb[w])
        m.budget_moved_gb = pyo.Constraint(expr=moved <= budget.max_moved_gb)
