"""The MFI paper's online policies and baselines, and the IBM WPM paper's two online rules.

MFI paper (Zambianco et al., FBK; :mod:`mipopt.geometry` holds its score F, Alg. 1):

* ``ff-agnostic``, ``rr``: the MIG-agnostic baselines of section VI, "schedule MIG
  profiles based only on resource availability on the GPUs [...] Profiles are
  assigned to the first available index" (:class:`FirstFitAgnostic`,
  :class:`RoundRobin`);
* ``bf-bi``, ``wf-bi``: the MIG-aware best fit and worst fit "Best Index", which
  "employ a predetermined preference policy to select MIG slices indexes"
  (:class:`BestFitBestIndex`, :class:`WorstFitBestIndex`);
* ``mfi``: Minimum Fragmentation Increment, Alg. 2 (:class:`MinimumFragmentationIncrement`).

IBM WPM paper (Turkkan et al.):

* ``lb``: the resource-based load-balancing baseline of section 5.1, one arrival at a
  time (:class:`LoadBalanced`);
* ``ibm-initial-online``: the rule-based initial deployment of section 4.2, Steps 2 and 3 per
  arrival (:class:`IbmInitial`; Step 1's sort has one workload to sort).

Every decision is a few numpy operations over all GPUs: the per-state geometry tables
and :meth:`Cluster.legal <mipopt.state.cluster.Cluster.legal>`, which already
applies every rule (legal free start, ``max_instances``, one ``+me``, allowed models,
host cpu and ram). GPU ties go to the lowest position in ``instance.gpus`` for the
MFI paper's policies (its cluster is a list of GPUs, Alg. 2 scans it in order) and to
the id order for the IBM ones (as :mod:`mipopt.heuristics.ibm_baselines` reads the paper).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel
from mipopt.geometry import preferred_starts, tables_for
from mipopt.heuristics.ibm_rules import _choose as _ibm_choose
from mipopt.heuristics.online import Decision, Policy
from mipopt.instance import Workload
from mipopt.state.cluster import Cluster

__all__ = [
    "BestFitBestIndex",
    "FirstFitAgnostic",
    "IbmInitial",
    "LoadBalanced",
    "MinimumFragmentationIncrement",
    "RoundRobin",
    "WorstFitBestIndex",
    "best_index",
]

_NONE = -1
_NO_FIT = np.iinfo(np.int64).max  # MFI's increase on a GPU where the profile does not fit


def best_index(model: GpuModel, p: int, bits: npt.ArrayLike) -> npt.NDArray[np.int64]:
    """The MFI paper's "best index" of profile position ``p`` among legal-start bitmasks ``bits``.

    The paper takes the preference policy of its reference [21]: "prioritize the
    allocation of MIG profiles on indexes that do not restrict the placement of
    profiles with fewer scheduling options. For instance, the 1g.10gb profile is
    assigned to index 6 instead of index 0 whenever possible, thereby reserving
    index 0 for the 4g.40gb profile". mipopt reads it as a fixed order per profile,
    the order in which the driver fills an empty GPU with the profile (IBM's Table 1,
    :func:`mipopt.geometry.preference_order`; 1g.10gb on A100-80GB:
    6, 4, 5, 0, 1, 2, 3), and takes its first legal start. The paper calls the
    policy static, which rules out a state-dependent rule such as the driver's CC.
    """
    return preferred_starts(model)[p, np.asarray(bits, dtype=np.int64)]


def _own_profile(cluster: Cluster, w: Workload) -> npt.NDArray[np.int64]:
    """Per GPU, the position of ``w``'s profile on the GPU's model (-1 where it cannot run)."""
    p = np.full(len(cluster.mask), _NONE, dtype=np.int64)
    for g in cluster.groups:
        index = cluster.profile_index(w, g.model)
        if index is not None:
            p[g.at] = index
    return p


def _enough_resources(cluster: Cluster, w: Workload) -> npt.NDArray[np.bool_]:
    """Per GPU: at least ``w``'s memory slots and compute slices free (anywhere), and host room for it."""
    ok = np.zeros(len(cluster.mask), dtype=bool)
    room = cluster.host_room(w)
    for g in cluster.groups:
        p = cluster.profile_index(w, g.model)
        if p is None:
            continue
        prof = g.model.profiles[p]
        free_compute = g.model.compute_slices - cluster.compute[g.at]
        free_memory = g.tables.free_slots.take(cluster.mask[g.at])
        ok[g.at] = (
            (free_memory >= prof.memory_slots) & (free_compute >= prof.compute) & room[cluster.host[g.at]]
        )
    return ok


# --- MFI paper, MIG-agnostic baselines


class _Agnostic(Policy):
    """Shared rule of the MIG-agnostic baselines: GPU by amounts, first free index, else reject.

    A GPU is a candidate when it has "enough available resources": at least the
    profile's memory slots free (any, not necessarily contiguous), at least its
    compute slices free, and room on its host for the workload's cpu and ram. The
    index is "the first available index": the lowest free memory slot. If the
    profile cannot start there (not one of its starts, some of its slots taken, or a
    MIG limit: ``max_instances``, the one ``+me``), the request is rejected: the
    allocation "on unfeasible indexes" that the paper gives as the reason FF and RR
    "perform worst". (Fig. 3 describes schemes that search "the first available
    index which can accommodate the profile" on the chosen GPU instead; set
    ``strict=False`` for that reading: the lowest legal start on the chosen GPU,
    rejected only when it has none.) Nothing else is tried on a rejection.
    """

    def __init__(self, strict: bool = True) -> None:
        self.strict = strict

    def candidates(
        self, cluster: Cluster, w: Workload
    ) -> tuple[npt.NDArray[np.bool_], npt.NDArray[np.int64]]:
        """GPUs with enough free memory slots and compute slices for ``w``, and ``w``'s legal starts."""
        return _enough_resources(cluster, w), cluster.legal(w)

    def decide(self, cluster: Cluster, w: Workload, k: int, legal: npt.NDArray[np.int64]) -> Decision:
        """The start on the chosen GPU ``k``: the first free index, if the profile may start there."""
        bits = int(legal[k])
        if not self.strict:
            return (k, (bits & -bits).bit_length() - 1) if bits else None
        model = cluster.model(k)
        free = model.full_mask & ~int(cluster.mask[k])
        first = (free & -free).bit_length() - 1
        return (k, first) if bits >> first & 1 else None


class FirstFitAgnostic(_Agnostic):
    """MFI paper's MIG-agnostic first fit: first GPU with enough free resources, first free index."""

    name = "ff-agnostic"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        ok, legal = self.candidates(cluster, w)
        fits = np.flatnonzero(ok)
        return self.decide(cluster, w, int(fits[0]), legal) if fits.size else None


class RoundRobin(_Agnostic):
    """MFI paper's MIG-agnostic round robin: next GPU after the last one used with enough resources.

    The scan starts at the GPU after the one that took the last accepted request
    (at GPU 0 first) and wraps around; a rejection does not advance it.
    """

    name = "rr"

    def __init__(self, strict: bool = True) -> None:
        super().__init__(strict)
        self.last = -1

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        self.last = -1

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        ok, legal = self.candidates(cluster, w)
        fits = np.flatnonzero(ok)
        if fits.size == 0:
            return None
        after = fits[fits > self.last]
        k = int(after[0] if after.size else fits[0])
        at = self.decide(cluster, w, k, legal)
        if at is not None:
            self.last = k
        return at


# --- MFI paper, MIG-aware baselines


class _FitBestIndex(Policy):
    """GPU by free memory slots left after the allocation, start by the preference order.

    By default the GPUs considered are those where the profile has a legal start.
    With ``by_amount=True`` they are, as for the MIG-agnostic baselines, the GPUs with
    "enough available resources" (free memory slots and compute slices, anywhere), and
    the request is rejected when the chosen GPU has no legal start: the reading under
    which the paper's Fig. 3 best-fit and load-balancing schemes fail, and under which
    "bin packing strategies like BF-BI and FF [...] prioritize the allocation of most
    utilized GPUs which are also likely to be the most fragmented" (section VI) can
    lower BF-BI's acceptance rate at all.
    """

    worst = False

    def __init__(self, by_amount: bool = False) -> None:
        self.by_amount = by_amount

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        legal = cluster.legal(w)
        fits = np.flatnonzero(_enough_resources(cluster, w) if self.by_amount else legal)
        if fits.size == 0:
            return None
        p = _own_profile(cluster, w)
        left = np.zeros(len(cluster.mask), dtype=np.int64)
        for g in cluster.groups:
            sizes = np.array([q.memory_slots for q in g.model.profiles] + [0], dtype=np.int64)
            left[g.at] = g.tables.free_slots.take(cluster.mask[g.at]) - sizes[p[g.at]]
        key = -left[fits] if self.worst else left[fits]
        k = int(fits[np.argmin(key)])  # argmin: the first, lowest position, among equals
        if not legal[k]:
            return None
        return k, int(best_index(cluster.model(k), int(p[k]), legal[k]))


class BestFitBestIndex(_FitBestIndex):
    """MFI paper's Best Fit Best Index: GPU with the fewest free memory slots left, preferred start.

    Among GPUs where the profile has a legal start, the one "minimizing the amount
    of available resources after the allocation" (free memory slots), ties to the
    lowest position; the start is the first legal one in the profile's preference
    order (:func:`best_index`). ``bf-bi:by-amount=true``: among GPUs with enough free
    resources, rejecting when the chosen one has no legal start (see :class:`_FitBestIndex`).
    """

    name = "bf-bi"


class WorstFitBestIndex(_FitBestIndex):
    """MFI paper's Worst Fit Best Index: GPU with the most free memory slots left, preferred start.

    Among GPUs where the profile has a legal start, the one "maximizing the amount of
    available resources after the allocation", ties to the lowest position; the start
    as in :class:`BestFitBestIndex`; ``wf-bi:by-amount=true`` as there.
    """

    name = "wf-bi"
    worst = True


# --- MFI paper, Alg. 2


class MinimumFragmentationIncrement(Policy):
    """MFI paper's Alg. 2: the GPU and start whose allocation raises F(m) least.

    For every GPU where the profile has a legal start, the tables give the start with
    the smallest increase ``F^(i)(m) - F(m)`` (F: Alg. 1, ``tables_for(model).fbk``)
    and that increase; the smallest increase over all GPUs wins. Alg. 2 takes "argmin"
    without a tie rule; mipopt takes the lowest GPU position, then the lowest start.
    The increase may be negative (a placement can make blocked starts ineligible).
    """

    name = "mfi"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        legal = cluster.legal(w)
        inc = np.full(len(cluster.mask), _NO_FIT, dtype=np.int64)
        for g in cluster.groups:
            p = cluster.profile_index(w, g.model)
            if p is not None:
                group_inc = g.tables.frag_increment[:, p].take(cluster.mask[g.at])
                inc[g.at] = np.where(legal[g.at] != 0, group_inc, _NO_FIT)
        k = int(np.argmin(inc))  # the first minimum: ties go to the lowest position
        if not legal[k]:
            return None
        model = cluster.model(k)
        p = cluster.profile_index(w, model)
        assert p is not None
        return k, int(tables_for(model).min_frag_start[cluster.mask[k], p])


# --- IBM WPM paper


class LoadBalanced(Policy):
    """IBM's load-balancing baseline online: least utilized GPU that fits, first free index from 0.

    Section 5.1, per arrival: among GPUs with a legal start, the lowest joint slice
    utilization ``(s_m + s_c) / (S_m + S_c)`` (ties by GPU id), at its lowest legal
    start; the IBM baseline of :mod:`mipopt.heuristics.ibm_baselines`.
    """

    name = "lb"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return cluster.first_in_order(w, balanced=True)


class IbmInitial(Policy):
    """IBM's rule-based initial deployment per arrival: most utilized GPU after assignment, Table 1 start.

    Steps 2 and 3 of section 4.2 (:func:`mipopt.heuristics.ibm_rules.ibm_initial`), the
    same code: among used GPUs with a legal start, the one with the highest joint slice
    utilization after the assignment (ties by id); else the first empty GPU by id;
    the start is the first legal one in Table 1's preference order. Step 1 (largest
    first) does not apply to a single arrival; a batch run keeps the file order.
    """

    name = "ibm-initial-online"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return _ibm_choose(cluster, w, np.ones(len(cluster.mask), dtype=bool))
