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
        from scipy.sparse import csr_matrix  # scipy.optimize takes 1 s to import, this nothing after
        from scipy.sparse.csgraph import min_weight_full_bipartite_matching

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
            # every entry + 1: a zero is no edge to the sparse matcher
            rows, cols = min_weight_full_bipartite_matching(csr_matrix(cost + 1.0))
            if cost[rows, cols].sum() >= np.trace(cost) - 1e-9:
                continue  # nothing gained: keep the contents where they are
            for a, b in zip(rows, cols, strict=True):
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
            before = _add(self.cost(wid, mine), self.cost(other, home))
            after = _add(self.cost(wid, home), self.cost(other, mine))
            if after < before:
                out[wid], out[other] = home, mine
                at[home], at[mine] = wid, other
        return out

    def starts(self, placed: Placed) -> Placed:
        """Step 3: each GPU's content indexed again keeping the most running workloads' starts."""
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


def _add(a: tuple[float, float], b: tuple[float, float]) -> tuple[float, float]:
    return (a[0] + b[0], a[1] + b[1])
