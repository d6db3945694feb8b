"""The GRMU paper's online policies (Siavashi et al., GRMU, sections 5, 7 and 8.3).

Every policy places an instance at the driver's default start (GRMU Eq. 2, the
start that leaves the highest CC, ``tables_for(model).default_start``); they
differ in the GPU they pick, among the GPUs where every rule of
:meth:`Cluster.legal <mipopt.state.cluster.Cluster.legal>` allows that start:

* ``ff``: hosts and GPUs in order, the first GPU where the profile fits;
* ``bf``: the GPU with the fewest free memory slots after placing;
* ``mcc`` (Alg. 6): the GPU with the highest CC (Eq. 1) after placing;
* ``mecc`` (Alg. 7): the GPU with the highest expected CC after placing: the
  legal starts of each profile weighted by that profile's share among the
  arrivals of the last ``window`` time units (24 hours in the paper);
* ``grmu`` (Algs. 2-5): dual-basket pooling, defragmentation on rejection and
  periodic consolidation (:class:`Grmu`).

Ties go to the GPU that comes first in instance order (GPU positions). Every
decision scores all GPUs of a model group with one numpy indexing operation on
the geometry tables.
"""

from __future__ import annotations

import math
from collections import Counter, deque
from collections.abc import Callable, Iterator
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel
from mipopt.geometry import NO_START, GeometryTables, tables_for
from mipopt.heuristics.online import Decision, Policy
from mipopt.heuristics.packing import NameOrder, first_by_name
from mipopt.instance import Workload
from mipopt.state.cluster import Cluster, Group, Relocation

__all__ = ["BestFit", "FirstFit", "Grmu", "MaxCC", "MaxExpectedCC"]

IntArray = npt.NDArray[np.int64]
FloatArray = npt.NDArray[np.float64]
#: ``score(model, tables, p, after)``: the score of each GPU whose state would become ``after``.
Score = Callable[[GpuModel, GeometryTables, int, IntArray], npt.NDArray[np.floating] | IntArray]


@lru_cache(maxsize=64)
def slot_masks(model: GpuModel) -> IntArray:
    """``[p, start]`` bitmask of the slots profile ``p`` occupies at ``start`` (0 where illegal)."""
    out = np.zeros((len(model.profiles), model.slots), dtype=np.int64)
    for i, profile in enumerate(model.profiles):
        for s in profile.starts:
            out[i, s] = profile.slot_mask(s)
    return out


def default_starts(cluster: Cluster, w: Workload) -> IntArray:
    """Per GPU, the driver's default start of ``w`` if every rule allows it there, else -1."""
    start = np.full(len(cluster.mask), NO_START, dtype=np.int64)
    for _, ks, _, s in _candidates(cluster, w):
        start[ks] = s
    return start


def _candidates(cluster: Cluster, w: Workload) -> Iterator[tuple[Group, IntArray, int, IntArray]]:
    """Per model group: the group, the GPUs where ``w`` may go at its default start, its profile, the starts.

    A GPU qualifies when :meth:`Cluster.legal` (every rule: free slots, per-profile
    maxima, ``+me``, host cpu and ram, allowed models) has the default start's bit set.
    """
    legal = cluster.legal(w)
    for g in cluster.groups:
        p = cluster.profile_index(w, g.model)
        if p is None:
            continue
        bits = legal[g.at]
        s = g.tables.default_start[:, p].take(cluster.mask[g.at])
        ok = (s >= 0) & (((bits >> np.maximum(s, 0)) & 1) == 1)
        if ok.any():
            yield g, g.ks[ok], p, s[ok]


def best_gpu(cluster: Cluster, w: Workload, score: Score) -> Decision:
    """The GPU with the highest ``score`` after placing ``w`` at its default start (ties: first).

    Returns
    -------
    Decision
        (GPU position, default start), or None when ``w`` fits nowhere.
    """
    value = np.full(len(cluster.mask), -np.inf)
    start = np.full(len(cluster.mask), NO_START, dtype=np.int64)
    found = False
    for g, ks, p, s in _candidates(cluster, w):
        after = cluster.mask[ks] | slot_masks(g.model)[p].take(s)
        value[ks] = score(g.model, g.tables, p, after)
        start[ks] = s
        found = True
    if not found:
        return None
    k = int(np.argmax(value))  # argmax returns the first maximum: ties go to the earlier GPU
    return k, int(start[k])


class FirstFit(Policy):
    """GRMU ff: hosts and GPUs in order, the first GPU where the profile fits, driver default start.

    Parameters
    ----------
    start
        ``default`` (GRMU's): the driver's default start, GPUs in instance order; ``lowest``:
        MIGBench's first fit, the first legal (host id, GPU index on its host, lowest start)
        (:func:`mipopt.heuristics.packing.first_by_name`).
    """

    name = "ff"

    def __init__(self, start: str = "default") -> None:
        if start not in ("default", "lowest"):
            raise TypeError(f"start must be default or lowest, got {start!r}")
        self.lowest = start == "lowest"  # not self.start: Policy.start is the replay's first call
        self._order = NameOrder()

    def describe(self) -> str:
        if self.lowest:
            return "MIGBench first fit: the first legal host (by id), GPU on it, lowest start."
        return super().describe()

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        if self.lowest:
            return first_by_name(cluster, w, self._order)
        start = default_starts(cluster, w)
        ok = np.flatnonzero(start >= 0)
        return None if ok.size == 0 else (int(ok[0]), int(start[ok[0]]))


class BestFit(Policy):
    """GRMU bf: the GPU with the fewest free memory slots left after placing, driver default start."""

    name = "bf"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return best_gpu(cluster, w, lambda model, t, p, after: -t.free_slots[after])


class MaxCC(Policy):
    """GRMU mcc (Alg. 6): the GPU with the highest CC after placing, driver default start."""

    name = "mcc"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return best_gpu(cluster, w, lambda model, t, p, after: t.cc[after])


class MaxExpectedCC(Policy):
    """GRMU mecc (Alg. 7): the GPU with the highest expected CC after placing, driver default start.

    The expected CC of a state is the sum over profiles of (legal starts of the
    profile) x (the profile's share among the arrivals of the last ``window`` time
    units before this one). Before any arrival, every base profile weighs the same,
    which ranks GPUs as ``mcc`` does.

    Parameters
    ----------
    window
        Look-back in the trace's time unit; the paper picked 24 hours (section 8.3).
    """

    name = "mecc"

    def __init__(self, window: float = 24.0) -> None:
        if window <= 0:
            raise TypeError(f"window must be positive, got {window}")
        self.window = float(window)
        self._history: deque[tuple[float, str, str]] = deque()  # (arrival, workload id, profile)
        self._shares: Counter[str] = Counter()

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        self._history.clear()
        self._shares.clear()

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        while self._history and self._history[0][0] <= now - self.window:
            _, _, old = self._history.popleft()
            self._shares[old] -= 1
        # ECC of every state first (2**slots of them), then one lookup per GPU
        ecc = {g.model.name: g.tables.capacity @ self._weights(g.model) for g in cluster.groups}
        decision = best_gpu(cluster, w, lambda model, t, p, after: ecc[model.name][after])
        if not self._history or self._history[-1][1] != w.id:  # a retry of the same request counts once
            asked = _asked(cluster, w, decision)
            self._history.append((now, w.id, asked))
            self._shares[asked] += 1
        return decision

    def _weights(self, model: GpuModel) -> FloatArray:
        weights = np.zeros(len(model.profiles))
        for name, count in self._shares.items():
            index = model.index(name)
            if index is not None and count > 0:
                weights[index] += count
        if weights.sum() == 0:
            weights = np.array([1.0 if p.base else 0.0 for p in model.profiles])
        return weights / weights.sum()


def _asked(cluster: Cluster, w: Workload, decision: Decision) -> str:
    """The profile ``w`` counts as in mecc's shares: its own (an int is an ``-lgip`` id); a
    memory-sized one's default on the GPU chosen, or on the first model that has one."""
    if w.profile is not None:
        return str(w.profile)
    models = [cluster.model(decision[0])] if decision is not None else [g.model for g in cluster.groups]
    found = (p for m in models if (p := cluster.instance.profile_on(w, m)) is not None)
    return next((p.name for p in found), w.size)


POOL, LIGHT, HEAVY = 0, 1, 2


class Grmu(Policy):
    """GRMU (Algs. 2-5): dual baskets, first fit by global index, defragmentation, consolidation.

    * **Baskets** (Algs. 2-3). Every GPU is in the pool, the light basket or the heavy
      basket. Requests for the full-GPU profile of a model (7g.40gb on A100-40GB) go
      to the heavy basket, all others to the light basket; inside its basket a
      request goes to the first GPU (global index = instance order) where it fits at
      the default start. When none fits, the first pool GPU where it fits joins the
      basket, if the basket holds fewer GPUs than its capacity: ``heavy`` x (number
      of GPUs), rounded, for the heavy basket and the rest for the light one (Alg. 3
      writes ``<=``, which would let a basket exceed its capacity by one GPU).
      As in Alg. 2, each basket starts with one empty GPU from the pool. A GPU that
      empties goes back to the pool (``release=False``: it stays in its basket; the
      paper says only that consolidation returns the GPUs it frees).
    * **Defragmentation** (Alg. 4), when a request finds no place: the active light
      GPU with the highest GRMU Fragmentation value (``tables_for(model).grmu``) has
      its workloads re-placed on an empty mock GPU at their default starts, in
      placement order (largest first when that order does not fit); those whose start
      changes move there (intra-GPU migrations), and the request is tried once more.
      Pinned workloads keep their slots (they are put on the mock GPU first).
    * **Consolidation** (Alg. 5), every ``consolidation`` time units: light GPUs with
      one instance filling exactly their lower or upper half (a single 3g.20gb or
      4g.20gb on A100-40GB) are paired: the instance of the GPU with the highest
      global index moves to the lowest-indexed partner where it fits (Alg. 5 says
      "any"; this keeps the low indices that first fit prefers busy), which becomes
      full, and the emptied GPU goes back to the pool.
    * **Budget** (:meth:`Policy.hold`, batch runs with ``max_restarts`` or ``max_moved_gb``):
      a defragmentation, or a consolidation's move, that would take the running workloads'
      restarts or GB moved over the budget is skipped (tried on a copy of the cluster first);
      a request a skipped defragmentation would have placed is recorded as left out by it.

    Both migrations run through the migration planner
    (:func:`mipopt.migrate.execute.execute`, create before
    destroy). A rearrangement that is a cycle of waits (two workloads trading slots, or
    one moving onto slots it holds) parks a workload in free space on the way, or, with
    no free space anywhere it may go, drains it (a disruptive move); the cluster counts
    the plans' rounds, parks and drains. A MIG-Adapter borrower moves at the profile it
    occupies.

    Parameters
    ----------
    heavy
        Heavy-basket capacity as a fraction of all GPUs; the paper's setting is 0.3
        (section 8.2.1). None: one basket for every request.
    defrag
        Defragment on rejection.
    consolidation
        Interval between consolidations in the trace's time unit; None or 0 switches
        it off, the paper's final setting (section 8.2.2).
    release
        Whether a GPU emptied by a departure goes back to the pool (default) or stays in
        its basket.
    """

    name = "grmu"

    def __init__(
        self,
        heavy: float | None = 0.3,
        defrag: bool = True,
        consolidation: float | None = None,
        release: bool = True,
    ):
        if heavy is not None and not 0 <= heavy <= 1:
            raise TypeError(f"heavy must be a fraction in [0, 1] or None, got {heavy}")
        if consolidation is not None and consolidation < 0:
            raise TypeError(f"consolidation must be a positive interval or None, got {consolidation}")
        self.heavy = heavy
        self.defrag = bool(defrag)
        self.release = bool(release)
        self.consolidation = consolidation or None
        self.tick = self.consolidation
        self.basket: IntArray = np.zeros(0, dtype=np.int64)
        self.capacity = {LIGHT: 0, HEAVY: 0}

    # --- state

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Alg. 2: GPUs already in use join a basket (heavy if they hold a full-GPU instance)."""
        n = len(cluster.mask)
        heavy_cap = 0 if self.heavy is None else math.floor(self.heavy * n + 0.5)
        self.capacity = {LIGHT: n - heavy_cap, HEAVY: heavy_cap}
        self.basket = np.where(cluster.mask != 0, LIGHT, POOL).astype(np.int64)
        if self.heavy is not None:
            for g in cluster.groups:
                full = [i for i, p in enumerate(g.model.profiles) if p.memory_slots == g.model.slots]
                holds = cluster.count[g.ks][:, full].sum(axis=1) > 0 if full else np.zeros(len(g.ks), bool)
                self.basket[g.ks[holds]] = HEAVY
        for basket in (HEAVY, LIGHT):
            if self.capacity[basket] > 0 and not (self.basket == basket).any():
                free = np.flatnonzero(self.basket == POOL)
                if free.size:
                    self.basket[free[0]] = basket

    def _basket_of(self, cluster: Cluster, w: Workload) -> int:
        if self.heavy is None:
            return LIGHT
        for g in cluster.groups:
            profile = cluster.instance.profile_on(w, g.model)
            if profile is not None and profile.memory_slots == g.model.slots:
                return HEAVY
        return LIGHT

    # --- decisions

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        """Alg. 3: first fit inside the request's basket, else a GPU from the pool."""
        if len(self.basket) != len(cluster.mask):
            self.start(cluster, np.random.default_rng(0))
        basket = self._basket_of(cluster, w)
        start = default_starts(cluster, w)
        fits = start >= 0
        inside = np.flatnonzero(fits & (self.basket == basket))
        if inside.size:
            return int(inside[0]), int(start[inside[0]])
        if np.count_nonzero(self.basket == basket) >= self.capacity[basket]:
            return None
        pool = np.flatnonzero(fits & (self.basket == POOL))
        if pool.size == 0:
            return None
        k = int(pool[0])
        self.basket[k] = basket
        return k, int(start[k])

    def on_reject(self, cluster: Cluster, w: Workload, now: float) -> bool:
        """Alg. 4, then one more try; under a budget (:meth:`Policy.hold`), only a defragmentation
        that keeps the restarts and GB moved within it."""
        if not self.defrag or not self._within_budget(cluster, w, now) or not self.defragment(cluster):
            return False
        at = self.choose(cluster, w, now)
        if at is None:
            return False
        cluster.place(w, *at)
        return True

    def _within_budget(self, cluster: Cluster, w: Workload, now: float) -> bool:
        """Whether the defragmentation :meth:`on_reject` would make keeps the held budget.

        It is tried on a copy of the cluster; when it breaks the budget it is skipped, and
        ``w`` is recorded as left out by the budget if it would have fitted afterwards.
        """
        if self.guard is None or not self.guard.limited:
            return True
        trial = cluster.copy()
        moved = self.defragment(trial)
        why = self.over_budget(trial) if moved else None
        if why is None:
            return True
        self.guard.skipped += 1
        basket = self.basket.copy()  # choose may take a pool GPU into a basket: not for a trial
        fits = self.choose(trial, w, now) is not None
        self.basket = basket
        if fits:
            gpu = cluster.instance.gpus[moved[0].source[0]].id
            self.guard.refuse(
                w,
                f"placing it needed GRMU's defragmentation of {gpu} ({len(moved)} relocation"
                f"{'' if len(moved) == 1 else 's'}): {why}",
            )
        return False

    def depart(self, cluster: Cluster, w: Workload, now: float) -> None:
        k = cluster.position[cluster.placed[w.id][0]]
        super().depart(cluster, w, now)
        if self.release and cluster.mask[k] == 0:
            self.basket[k] = POOL

    def on_tick(self, cluster: Cluster, now: float) -> None:
        if self.consolidation:
            self.consolidate(cluster)

    # --- migrations

    def defragment(self, cluster: Cluster) -> list[Relocation]:
        """Alg. 4: rearrange the most fragmented light GPU to its default placement; the moves made (parks too)."""
        # Imported here: mipopt.migrate loads networkx, which only a migrating policy needs.
        from mipopt.migrate.execute import rearrange

        frag = np.full(len(cluster.mask), -1.0)
        for g in cluster.groups:
            frag[g.at] = g.tables.grmu.take(cluster.mask[g.at])
        frag[(self.basket != LIGHT) | (cluster.mask == 0)] = -1.0
        k = int(np.argmax(frag))
        if frag[k] <= 0:  # nothing stranded: a rearrangement would not let more profiles in
            return []
        target = mock_arrangement(cluster, k)
        if target is None:
            return []
        return rearrange(cluster, k, target)

    def consolidate(self, cluster: Cluster) -> list[Relocation]:
        """Alg. 5: pair half-full single-instance light GPUs so one fills and the other empties; the moves made."""
        from mipopt.migrate.execute import execute  # networkx only when migrating (see defragment)

        half = np.zeros(len(cluster.mask), dtype=bool)
        for g in cluster.groups:
            lower = (1 << (g.model.slots // 2)) - 1
            upper = g.model.full_mask & ~((1 << (g.model.slots - g.model.slots // 2)) - 1)
            mask = cluster.mask[g.at]
            half[g.at] = (mask == lower) | (mask == upper)
        half &= (self.basket == LIGHT) & (cluster.count.sum(axis=1) == 1)
        left = set(np.flatnonzero(half).tolist())
        moves = []
        for source in sorted(left, reverse=True):
            if source not in left:
                continue
            wid = cluster.on_gpu(source)[0]
            w = cluster.instance.workload(wid)
            if w.pinned:
                continue
            start = default_starts(cluster, cluster.as_placed(w.id))
            partners = [k for k in sorted(left) if k != source and start[k] >= 0]
            if not partners:
                continue
            target = partners[0]
            if self.guard is not None and self.guard.limited:
                trial = cluster.copy()
                execute(trial, {wid: (target, int(start[target]))})
                if self.over_budget(trial) is not None:  # this pair would break the budget
                    self.guard.skipped += 1
                    continue
            moves += execute(cluster, {wid: (target, int(start[target]))})
            left -= {source, target}
            self.basket[source] = POOL
        return moves


def mock_arrangement(cluster: Cluster, k: int) -> dict[str, int] | None:
    """Alg. 4's mock GPU: GPU ``k``'s workloads re-placed on an empty GPU at default starts.

    Pinned workloads keep their starts; the others go in placement order, or largest
    first when that order leaves one without a start. Returns workload id -> start,
    or None when neither order fits.
    """
    model = cluster.model(k)
    t = tables_for(model)
    masks = slot_masks(model)
    wids = cluster.on_gpu(k)
    pinned = [wid for wid in wids if cluster.instance.workload(wid).pinned]
    free = [wid for wid in wids if wid not in pinned]
    base = {wid: cluster.placed[wid][1] for wid in pinned}
    state0 = 0
    for wid, s in base.items():
        state0 |= int(masks[cluster.profile_of[wid], s])
    largest = sorted(free, key=lambda wid: -model.profiles[cluster.profile_of[wid]].memory_slots)
    for order in (free, largest):
        state, out = state0, dict(base)
        for wid in order:
            p = cluster.profile_of[wid]
            s = int(t.default_start[state, p])
            if s == NO_START:
                break
            state |= int(masks[p, s])
            out[wid] = s
        else:
            return out
    return None
