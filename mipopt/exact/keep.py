"""Fewer restarts at the same acceptance and hardware: what the exact driver does to an answer.

A model that does not see where running workloads are (the configuration model's aggregated
variant), or a stage stopped by the time limit, can leave an answer that restarts running
workloads for nothing: another placement with the same GPUs active and the same workloads
accepted keeps them. :func:`keep_running` finds such a placement in three moves, none of
which changes acceptance, hardware or host cpu and ram:

1. **GPU contents to the GPUs they keep best.** Among the GPUs of one host and one model
   that hold no fixed workload, whole contents (workloads with their starts) are permuted by
   a linear assignment that minimizes the restarts and GRMU's Eq. 5, in the objective's order.
2. **Interchangeable workloads home.** A running workload placed away from its own spot
   (GPU and start) while a workload of its :func:`~mipopt.exact.preprocess.placement_key`
   (same profile on every model, same cpu and ram) sits there trades places with it when
   that lowers the two.
3. **Starts kept.** Each GPU's content is indexed again keeping the most running workloads
   on their own starts (:func:`~mipopt.exact.preprocess.indexing.index_keeping`).

The result is a placement of the same instance; the driver verifies it and keeps it only
if it is better in the objective's order.

:func:`smallest_profiles` is the other thing the driver does to its answer: a new memory-sized
workload for which a model chose a larger profile than it needed (a tie: any profile that fits
is the models' decision, ``models/grmu.md``) gets the smallest that fits on its GPU.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Hashable, Mapping

import numpy as np

from mipopt.exact.preprocess import placement_key, profile_options, profile_taken
from mipopt.exact.preprocess.indexing import index_keeping
from mipopt.instance import Instance
from mipopt.state import Occupancy
from mipopt.state.occupancy import EPS

Placed = dict[str, tuple[str, int]]
#: Weight of the first of (migrations, restarts) over the second in one assignment cost.
_FIRST = 1e6


def keep_running(
    instance: Instance,
    placed: Placed,
    fixed: frozenset[str],
    *,
    restarts_first: bool = False,
    profiles: Mapping[str, str] | None = None,
) -> Placed:
    """``placed`` with fewer restarts and no more Eq. 5 migrations (or the reverse order when
    ``restarts_first``), same acceptance, hardware and host usage.

    Parameters
    ----------
    fixed
        Running workloads that may not move (pinned ones, or a use case's).
    restarts_first
        The objective puts restarts before migrations (``--priority disruption``).
    profiles
        The profiles chosen for memory-sized workloads (the smallest that fits where not
        given); each keeps its own, as contents move only between GPUs of one model.
    """
    keep = _Keeper(instance, fixed, restarts_first, profiles or {})
    out = keep.contents(dict(placed))
    out = keep.starts(out)
    out = keep.trade(out)
    out = keep.exchange(out)
    return keep.starts(out)


class _Keeper:
    def __init__(
        self, instance: Instance, fixed: frozenset[str], restarts_first: bool, profiles: Mapping[str, str]
    ) -> None:
        self.inst = instance
        self.fixed = fixed
        self.restarts_first = restarts_first
        self.profiles = profiles
        self.home = {w.id: (w.placement.gpu, w.placement.start) for w in instance.running if w.placement}

    def cost(self, wid: str, at: tuple[str, int]) -> tuple[float, float]:
        """(Eq. 5 migrations, restarts) of workload ``wid`` at ``at``, in the objective's order."""
        home = self.home.get(wid)
        if home is None:
            return (0.0, 0.0)
        delta = self.inst.workload(wid).migration_weight
        if at == home:
            return (0.0, 0.0)
        if at[0] == home[0]:
            eq5 = 0.0
        elif self.inst.gpu(at[0]).host == self.inst.gpu(home[0]).host:
            eq5 = 2 * delta
        else:
            eq5 = 4 * delta
        return (delta, eq5) if self.restarts_first else (eq5, delta)

    def contents(self, placed: Placed) -> Placed:
        """Step 1: whole GPU contents to the GPUs of their host and model they keep best."""
        inst = self.inst
        on: dict[str, list[str]] = defaultdict(list)
        for wid, (gpu, _) in placed.items():
            on[gpu].append(wid)
        groups: dict[tuple[str, str], list[str]] = defaultdict(list)
        for g in inst.gpus:
            if not any(w in self.fixed for w in on[g.id]):
                groups[g.host, g.model.name].append(g.id)
        out = dict(placed)
        for gpus in groups.values():
            if len(gpus) < 2 or not any(w in self.home for g in gpus for w in on[g]):
                continue
            cost = np.zeros((len(gpus), len(gpus)))
            for a, source in enumerate(gpus):
                for b, target in enumerate(gpus):
                    first = second = 0.0
                    for wid in on[source]:
                        x, y = self.cost(wid, (target, placed[wid][1]))
                        first, second = first + x, second + y
                    cost[a, b] = _FIRST * first + second
            cols = assignment(cost)
            rows = np.arange(len(gpus))
            if cost[rows, cols].sum() >= np.trace(cost) - 1e-9:
                continue  # nothing gained: keep the contents where they are
            for a, b in zip(rows.tolist(), cols.tolist(), strict=True):
                for wid in on[gpus[a]]:
                    out[wid] = (gpus[b], placed[wid][1])
        return out

    def trade(self, placed: Placed) -> Placed:
        """Step 2: a running workload trades places with an interchangeable one on its own spot."""
        key: dict[str, Hashable] = {}

        def key_of(wid: str) -> Hashable:
            if wid not in key:
                key[wid] = placement_key(self.inst, self.inst.workload(wid))
            return key[wid]

        out = dict(placed)
        at = {spot: wid for wid, spot in out.items()}
        for wid, home in self.home.items():
            if wid in self.fixed or wid not in out or out[wid] == home:
                continue
            other = at.get(home)
            if other is None or other in self.fixed or key_of(other) != key_of(wid):
                continue
            mine = out[wid]
            before = _sum([self.cost(wid, mine), self.cost(other, home)])
            after = _sum([self.cost(wid, home), self.cost(other, mine)])
            if after < before:
                out[wid], out[other] = home, mine
                at[home], at[mine] = wid, other
        return out

    def exchange(self, placed: Placed) -> Placed:
        """Step 3: a running workload away from its GPU goes back to its own spot, and the
        workloads that hold those slots there (its block) take its place, in passes until
        one changes nothing.

        An exchange is made when it lowers (migrations, restarts) in the objective's order
        without adding hardware, when both hosts' cpu and ram hold, and when no workload of
        the block is fixed or runs on that GPU (it would move off its GPU): so no workload's
        restart or moved memory is added, and the block's running workloads already restart.
        """
        inst = self.inst
        out = dict(placed)
        on: dict[str, set[str]] = defaultdict(set)
        for wid, (gpu, _) in out.items():
            on[gpu].add(wid)
        occ = Occupancy(inst)
        for wid, spot in out.items():
            occ.occupy(occ.position[spot[0]], self.index(wid, spot[0]), spot[1], *self.demand(wid))
        order = sorted(self.home, key=lambda w: -inst.workload(w).migration_weight)
        changed = True
        while changed:
            changed = False
            for wid in order:
                at, home = out.get(wid), self.home[wid]
                if wid in self.fixed or at is None or at[0] == home[0]:
                    continue
                if wid in self.profiles and inst.gpu(at[0]).model.name != inst.gpu(home[0]).model.name:
                    continue  # its profile there is not one of its own GPU's model
                block = self.block(out, on, wid, home)
                if block is None:
                    continue
                moves = self.swap(occ, out, on, wid, block)
                if moves is None:
                    continue
                before = [self.cost(x, out[x]) for x in moves]
                after = [self.cost(x, at) for x, at in moves.items()]
                if _sum(after) >= _sum(before):
                    continue
                self.shift(occ, on, out, moves)
                changed = True
        return out

    def index(self, wid: str, gpu_id: str) -> int:
        """Position of the profile ``wid`` takes on ``gpu_id``'s model."""
        return profile_taken(self.inst, wid, self.inst.gpu(gpu_id).model, self.profiles)

    def demand(self, wid: str) -> tuple[float, float]:
        w = self.inst.workload(wid)
        return w.cpu, w.ram_gb

    def block(
        self, out: Placed, on: Mapping[str, set[str]], wid: str, home: tuple[str, int]
    ) -> list[str] | None:
        """The workloads on ``wid``'s own GPU whose slots meet its own start's, or None when
        one of them may not leave that GPU (fixed, or running there)."""
        gpu, start = home
        model = self.inst.gpu(gpu).model
        bits = model.profiles[self.index(wid, gpu)].slot_mask(start)
        block = []
        for x in on[gpu]:
            if model.profiles[self.index(x, gpu)].slot_mask(out[x][1]) & bits:
                if x in self.fixed or self.home.get(x, ("", 0))[0] == gpu:
                    return None
                block.append(x)
        return block

    def swap(
        self, occ: Occupancy, out: Placed, on: Mapping[str, set[str]], wid: str, block: list[str]
    ) -> dict[str, tuple[str, int]] | None:
        """Where ``wid`` (to its own spot) and its ``block`` (to ``wid``'s GPU) go, or None when
        that breaks a rule or adds hardware."""
        inst = self.inst
        home, there = self.home[wid], out[wid]
        if not on[home[0]]:
            return None  # it would turn a GPU on
        model, model2 = inst.gpu(home[0]).model, inst.gpu(there[0]).model
        for x in block:
            w = inst.workload(x)
            if inst.profile_on(w, model2) is None or (x in self.profiles and model2.name != model.name):
                return None
        stay = {x: (self.index(x, home[0]), out[x][1]) for x in on[home[0]] if x not in block}
        back = index_keeping(model, stay, [(wid, self.index(wid, home[0]))], {wid: home[1]})
        if back is None or back[wid] != home[1]:
            return None
        rest = {x: (self.index(x, there[0]), out[x][1]) for x in on[there[0]] if x != wid}
        items = [(x, self.index(x, there[0])) for x in block]
        own = {x: self.home[x][1] for x in block if self.home.get(x, ("", 0))[0] == there[0]}
        starts = index_keeping(model2, rest, items, own)
        if starts is None:
            return None
        k, k2 = occ.position[home[0]], occ.position[there[0]]
        if occ.host[k] != occ.host[k2]:
            cpu, ram = self.demand(wid)
            cpu_b = sum(self.demand(x)[0] for x in block)
            ram_b = sum(self.demand(x)[1] for x in block)
            h, h2 = occ.host[k], occ.host[k2]
            if (
                occ.cpu[h] + cpu - cpu_b > occ.cpu_cap[h] + EPS
                or occ.ram[h] + ram - ram_b > occ.ram_cap[h] + EPS
                or occ.cpu[h2] - cpu + cpu_b > occ.cpu_cap[h2] + EPS
                or occ.ram[h2] - ram + ram_b > occ.ram_cap[h2] + EPS
            ):
                return None
        return {wid: home, **{x: (there[0], s) for x, s in starts.items()}}

    def shift(self, occ: Occupancy, on: dict[str, set[str]], out: Placed, moves: Placed) -> None:
        """Make ``moves`` in ``out``, ``on`` and ``occ``: every workload leaves, then every one lands."""
        for wid in moves:
            gpu, start = out[wid]
            occ.occupy(occ.position[gpu], self.index(wid, gpu), start, *self.demand(wid), sign=-1)
            on[gpu].discard(wid)
        for wid, at in moves.items():
            out[wid] = at
            on[at[0]].add(wid)
            occ.occupy(occ.position[at[0]], self.index(wid, at[0]), at[1], *self.demand(wid))

    def starts(self, placed: Placed) -> Placed:
        """Step 4: each GPU's content indexed again keeping the most running workloads' starts."""
        inst = self.inst
        on: dict[str, list[str]] = defaultdict(list)
        for wid, (gpu, _) in placed.items():
            on[gpu].append(wid)
        out = dict(placed)
        for gpu_id, ws in on.items():
            own = {w: self.home[w][1] for w in ws if w in self.home and self.home[w][0] == gpu_id}
            if not own or all(placed[w][1] == s for w, s in own.items()):
                continue
            model = inst.gpu(gpu_id).model
            index: dict[str, int] = {}
            for w in ws:
                index[w] = profile_taken(inst, w, model, self.profiles)
            held = {w: (index[w], placed[w][1]) for w in ws if w in self.fixed}
            items = [(w, p) for w, p in index.items() if w not in self.fixed]
            starts = index_keeping(model, held, items, {w: s for w, s in own.items() if w not in self.fixed})
            if starts is None:
                continue
            was = sum(self.cost(w, placed[w])[0 if self.restarts_first else 1] for w in own)
            now = sum(
                self.cost(w, (gpu_id, starts[w]))[0 if self.restarts_first else 1] for w in own if w in starts
            )
            if now < was:
                for w, s in starts.items():
                    out[w] = (gpu_id, s)
        return out


def smallest_profiles(
    instance: Instance, placed: Placed, profiles: Mapping[str, str]
) -> tuple[Placed, dict[str, str]]:
    """``placed`` and ``profiles`` with every new memory-sized workload at the smallest profile
    that fits on its GPU beside the others, at its own start where that profile may start there.

    Acceptance, hardware, migrations and restarts stay as they are: every workload keeps its
    GPU, running ones their profile and start, and a new workload's start counts for nothing.
    Workloads are taken in instance order, each at the smallest profile that fits then.
    """
    occ = Occupancy(instance)
    at: dict[str, tuple[int, int]] = {}  # workload -> (GPU position, profile index)
    for wid, (gpu_id, start) in placed.items():
        w, model = instance.workload(wid), instance.gpu(gpu_id).model
        at[wid] = (occ.position[gpu_id], profile_taken(instance, wid, model, profiles))
        occ.occupy(*at[wid], start, w.cpu, w.ram_gb)
    out, chosen = dict(placed), dict(profiles)
    for w in instance.new:
        if not w.memory_sized or w.id not in placed:
            continue
        (k, p), (gpu_id, start) = at[w.id], placed[w.id]
        model = instance.gpu(gpu_id).model
        occ.occupy(k, p, start, w.cpu, w.ram_gb, -1)
        for q in (model.profiles.index(o) for o in profile_options(instance, w, model)):
            starts = sorted(model.profiles[q].starts, key=lambda s: s != start)  # its own first
            fit = next((s for s in starts if occ.fits_at(k, q, s, w.cpu, w.ram_gb)), None)
            if fit is not None and occ.compute[k] + model.profiles[q].compute <= model.compute_slices:
                p, start = q, fit
                break
        occ.occupy(k, p, start, w.cpu, w.ram_gb)
        out[w.id], chosen[w.id] = (gpu_id, start), model.profiles[p].name
    return out, chosen


def assignment(cost: np.ndarray) -> np.ndarray:
    """The column given to each row of the square ``cost`` matrix, the total smallest: the
    Hungarian algorithm with potentials, O(n^3). The matrices here are a host's GPUs of one
    model (at most a few dozen); scipy's matcher would cost its import, 0.5 s with Pyomo loaded.
    """
    n = cost.shape[0]
    u, v = np.zeros(n + 1), np.zeros(n + 1)
    row_of = np.zeros(n + 1, dtype=np.int64)  # row (1-based) matched to each column; 0: none
    way = np.zeros(n + 1, dtype=np.int64)
    for i in range(1, n + 1):
        row_of[0], j0 = i, 0
        slack = np.full(n + 1, np.inf)
        used = np.zeros(n + 1, dtype=bool)
        while True:
            used[j0] = True
            i0 = row_of[j0]
            free = np.flatnonzero(~used[1:]) + 1
            reduced = cost[i0 - 1, free - 1] - u[i0] - v[free]
            better = reduced < slack[free]
            slack[free[better]] = reduced[better]
            way[free[better]] = j0
            j1 = int(free[np.argmin(slack[free])])
            delta = slack[j1]
            u[row_of[used]] += delta
            v[used] -= delta
            slack[~used] -= delta
            j0 = j1
            if row_of[j0] == 0:
                break
        while j0:
            j1 = way[j0]
            row_of[j0] = row_of[j1]
            j0 = j1
    cols = np.zeros(n, dtype=np.int64)
    cols[row_of[1:] - 1] = np.arange(n)
    return cols


def _sum(costs: list[tuple[float, float]]) -> tuple[float, float]:
    return (sum(c[0] for c in costs), sum(c[1] for c in costs))
