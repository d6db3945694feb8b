"""MIG-Adapter: borrow a larger compatible profile when a request's own does not fit, return it later.

The article on MIG partitioning with the GPU Operator (``002`` in the papers) defines
"a one-way chain to describe the compatibility of MIG types", for A100
``1g5gb -> 2g10gb -> 3g20gb -> 4g20gb`` and for A100 with H100
``1g5gb -> 1g10gb -> 2g10gb -> 2g20gb -> 3g20gb -> 3g40gb -> 4g20gb -> 4g40gb``.
A pending request is "boosted" to the next available type along the chain
(borrow); when a workload ends and frees MIG resources, "the one [that borrowed]
the most" among the borrowers is "restored to its original resource requirements"
(return).

mipopt derives the chain from the catalog instead of listing it (:func:`chain`):
every plain (``<c>g.<m>gb``) profile of the cluster's models with at least the
request's compute slices and memory, more of one of them, ordered by compute then
memory. The whole-GPU profile (7g) is left out, as in both chains of the article
(``full=True`` takes it in). On the A100-80GB, 1g.10gb borrows 1g.20gb, 2g.20gb,
3g.40gb, 4g.40gb in that order: 1g.20gb is there because the article's mixed chain
puts ``1g10gb`` after ``1g5gb``; its chains predate the A100-40GB's 1g.10gb and the
H100's 1g.20gb (on A100-40GB with H100-80GB mipopt's chain is the article's with
1g.20gb after 1g.10gb).
A ``+me`` request borrows along the chain of its plain twin (the larger profiles
carry decoders of their own).

With dynamic MIG (mipopt's model: instances are created where a request lands) a
larger profile of the same model never fits where the smaller does not, except
through per-profile limits (``max_instances``, the one ``+me`` set) or a profile
that only another model of a mixed cluster offers (1g.5gb is an A100-40GB profile;
an H100 lends a 1g.10gb). Those are the cases MIG-Adapter adds.
"""

from __future__ import annotations

import math
from dataclasses import replace

import numpy as np

from mipopt.catalog import GpuModel, Profile
from mipopt.geometry import NO_START, tables_for
from mipopt.heuristics.online import BudgetGuard, Policy
from mipopt.instance import Workload
from mipopt.state.cluster import Cluster

__all__ = ["Adapter", "chain"]


def _own(cluster: Cluster, w: Workload) -> Profile | None:
    """``w``'s own profile on the first model of the cluster it may run on."""
    for g in cluster.groups:
        profile = cluster.instance.profile_on(w, g.model)
        if profile is not None:
            return profile
    return None


def _allowed_models(cluster: Cluster, w: Workload) -> list[GpuModel]:
    return [g.model for g in cluster.groups if w.gpu_models is None or g.model.name in w.gpu_models]


def chain(cluster: Cluster, w: Workload, *, full: bool = False) -> list[str]:
    """The profile names ``w`` may borrow, smallest first (module docstring).

    Parameters
    ----------
    cluster
        Its models (those ``w`` may run on) supply the profiles.
    w
        The request; its own profile is found on the first model that has it.
    full
        Take in the whole-GPU profiles (7g), which the article's chains leave out.
    """
    own = _own(cluster, w)
    if own is None:
        return []
    found: dict[str, tuple[int, float]] = {}
    for model in _allowed_models(cluster, w):
        for q in model.profiles:
            if not q.base or (q.compute >= model.compute_slices and not full):
                continue
            bigger = (q.compute, q.memory_gb) != (own.compute, own.memory_gb)
            if q.compute >= own.compute and q.memory_gb >= own.memory_gb and bigger:
                found.setdefault(q.name, (q.compute, q.memory_gb))
    return sorted(found, key=lambda name: (*found[name], name))


def _extra_slots(model: GpuModel, own: Profile, held: Profile) -> int:
    """Memory slots ``held`` takes beyond what ``own`` would on ``model`` (by memory where ``model`` lacks it)."""
    mine = model.find(own.name)
    slots = (
        mine.memory_slots if mine is not None else math.ceil(own.memory_gb * model.slots / model.memory_gb)
    )
    return max(held.memory_slots - slots, 0)


class Adapter(Policy):
    """MIG-Adapter on top of any policy: borrow a larger compatible profile, return it when space frees.

    Parameters
    ----------
    inner
        The policy that decides where requests go (at their own or a borrowed profile).
    full
        Let requests borrow the whole-GPU profile too.

    Attributes
    ----------
    borrowers
        Workload id -> borrowed profile name, for the workloads borrowing now.
    borrows, returns
        Requests placed at a borrowed profile, and workloads moved back to their own, so far.
    borrowed_slots_total
        Extra memory slots over every borrow so far (:attr:`borrowed_slots` is the current sum).
    """

    def __init__(self, inner: Policy, full: bool = False) -> None:
        self.inner = inner
        self.full = full
        self.tick = inner.tick
        self.borrowers: dict[str, str] = {}
        self._extra: dict[str, int] = {}
        self.borrows = 0
        self.returns = 0
        self.borrowed_slots_total = 0

    @property
    def name(self) -> str:  # type: ignore[override]  # the inner policy's name is only known per instance
        return f"adapter({self.inner.name})"

    def describe(self) -> str:
        return (
            f"MIG-Adapter (borrow along the profile chain, return on departures) over {self.inner.describe()}"
        )

    @property
    def borrowed_slots(self) -> int:
        """Extra memory slots held by the workloads borrowing now."""
        return sum(self._extra.values())

    # --- events: the inner policy's, then borrowing and returning

    def hold(self, guard: BudgetGuard) -> None:
        """The inner policy holds the budget: its migrations move running workloads; borrowing
        and returning move only requests."""
        super().hold(guard)
        self.inner.hold(guard)

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        self.borrowers.clear()
        self._extra.clear()
        self.borrows = self.returns = self.borrowed_slots_total = 0
        self.inner.start(cluster, rng)

    def choose(self, cluster: Cluster, w: Workload, now: float) -> tuple[int, int] | None:
        return self.inner.choose(cluster, w, now)

    def arrive(self, cluster: Cluster, w: Workload, now: float) -> bool:
        return self.inner.arrive(cluster, w, now) or self.on_reject(cluster, w, now)

    def on_reject(self, cluster: Cluster, w: Workload, now: float) -> bool:
        """Borrow: the first profile along ``w``'s chain where the inner policy's rule places ``w``.

        The inner policy decides for a stand-in of ``w`` that asks for the larger
        profile, so ``adapter(mfi)`` borrows where F rises least, ``adapter(ff)``
        on the first GPU, and so on; a profile the inner rule cannot place (no legal
        start anywhere, or a MIG-agnostic rule's rejection) passes to the next.
        """
        own = _own(cluster, w)
        if own is None:
            return False
        for name in chain(cluster, w, full=self.full):
            if not cluster.legal(w, profile=name).any():
                continue
            at = self.inner.choose(cluster, replace(w, profile=name), now)
            if at is None:
                continue
            cluster.place(w, *at, profile=name)
            extra = _extra_slots(cluster.model(at[0]), own, cluster.occupied_profile(w.id))
            self.borrowers[w.id] = name
            self._extra[w.id] = extra
            self.borrows += 1
            self.borrowed_slots_total += extra
            return True
        return False

    def depart(self, cluster: Cluster, w: Workload, now: float) -> None:
        """The inner policy's departure (removal and its hook), then :meth:`on_departure`."""
        self.borrowers.pop(w.id, None)
        self._extra.pop(w.id, None)
        self.inner.depart(cluster, w, now)
        self.on_departure(cluster, w, now)

    def on_departure(self, cluster: Cluster, w: Workload, now: float) -> None:
        """Space has freed: return borrowers (:meth:`give_back`)."""
        self.give_back(cluster, now)

    def on_tick(self, cluster: Cluster, now: float) -> None:
        self.inner.on_tick(cluster, now)

    def give_back(self, cluster: Cluster, now: float) -> int:
        """Return every borrower that fits at its own profile now, the largest borrowers first.

        A borrower goes back on its GPU when its own profile fits there once the
        borrowed instance is gone (at the driver's default start), else where the inner
        policy puts it; each return is one :meth:`Cluster.move`. Among equal borrowers,
        the earliest borrow goes first.

        Returns
        -------
        int
            Workloads returned by this call.
        """
        done = 0
        for wid in sorted(self.borrowers, key=lambda wid: -self._extra[wid]):
            w = cluster.instance.workload(wid)
            trial = cluster.copy()
            trial.remove(w)
            k = cluster.position[cluster.placed[wid][0]]
            at: tuple[int, int] | None = None
            if trial.legal(w)[k]:
                model = cluster.model(k)
                p = cluster.profile_index(w, model)
                assert p is not None
                start = int(tables_for(model).default_start[trial.mask[k], p])
                at = (k, start) if start != NO_START else None
            if at is None:
                at = self.inner.choose(trial, w, now)
            if at is None:
                continue
            cluster.move(w, *at)
            del self.borrowers[wid], self._extra[wid]
            self.returns += 1
            done += 1
        return done

    def finish_batch(self, cluster: Cluster) -> dict[str, tuple[str, int]]:
        """Return what can be returned; a workload still on a borrowed profile is left out
        (rejected), unless it is memory-sized.

        A batch solution places a workload that names its profile at that profile, so a
        borrowed instance has no place in it; a memory-sized workload may take any profile
        that fits, and the borrowed one does (it has at least the compute and memory of the
        smallest that fits): the solution reports it as the workload's profile.
        """
        self.give_back(cluster, 0.0)
        placed = self.inner.finish_batch(cluster)
        instance = cluster.instance
        return {
            wid: where
            for wid, where in placed.items()
            if wid not in self.borrowers or instance.workload(wid).memory_sized
        }
