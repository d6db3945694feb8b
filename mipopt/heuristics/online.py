"""The online interface: one base for every placement policy, run online (the simulator) and in batch (``mipopt solve``).

A policy answers "where does this request go (GPU, start), or is it rejected"
(:meth:`Policy.choose`) and may act on events by migrating running workloads through
:meth:`Cluster.move <mipopt.state.cluster.Cluster.move>`: when a request would be
rejected (:meth:`Policy.on_reject`, e.g. GRMU's defragmentation, MIG-Adapter's
borrowing), after a departure (:meth:`Policy.on_departure`, e.g. MIG-Adapter's return)
and every ``tick`` time units (:meth:`Policy.on_tick`, e.g. GRMU's consolidation).

Policies are made by name by :func:`mipopt.heuristics.policies.make_policy`, which reads
the one table of names (:data:`mipopt.heuristics.policies.POLICIES`); this module is the
base the policy modules build on, below that table.

In batch, a policy that migrates holds a :class:`~mipopt.instance.Budget` on restarts and GB
moved (:func:`run_batch`, :class:`BudgetGuard`): it tries each migration on a copy of the
cluster and skips it when the running workloads' restarts or GB moved, counted from where
they ran at the start, would exceed the budget.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import ClassVar

import numpy as np

from mipopt.heuristics.base import completed
from mipopt.instance import Budget, Instance, Solution, Workload
from mipopt.instance.budget import UNLIMITED, budget_note, disruption
from mipopt.state.cluster import Cluster

__all__ = ["BudgetGuard", "Decision", "Policy", "run_batch"]

Decision = tuple[int, int] | None  # (GPU position, start) or rejected


@dataclass
class BudgetGuard:
    """The budget a batch run holds, shared by a policy and the policies it wraps.

    Restarts and GB moved are counted as :func:`mipopt.instance.budget.disruption` counts them:
    the running workloads of the cluster's instance against where they ran, whatever moved
    them on the way; workloads the run placed itself are new and never count.

    Attributes
    ----------
    budget
        The limit.
    left_out
        Request id -> why: the requests that a migration the budget refused would have placed.
    skipped
        Migrations skipped because they would break the budget (defragmentations,
        consolidation moves, re-optimizations).
    """

    budget: Budget = UNLIMITED
    left_out: dict[str, str] = field(default_factory=dict)
    skipped: int = 0

    @property
    def limited(self) -> bool:
        return not self.budget.unlimited

    def exceeded(self, cluster: Cluster) -> str | None:
        """Why ``cluster``'s state breaks the budget (``restarts 3 > --max-restarts 2``), or None."""
        if self.budget.unlimited:
            return None
        return self.budget.exceeded(disruption(cluster.instance, cluster.placed))

    def refuse(self, w: Workload, why: str) -> None:
        """Record that placing request ``w`` needed a migration the budget refused (``why``)."""
        self.left_out.setdefault(w.id, why)


class Policy:
    """Base class: subclasses implement :meth:`choose`; the event hooks default to doing nothing.

    Attributes
    ----------
    name
        The policy's name as :func:`mipopt.heuristics.policies.make_policy` knows it (with its options).
    tick
        Interval between :meth:`on_tick` calls in the trace's time unit, or None.
    stats
        The policy's own counters (reopt's solves, moves, GB moved), reset by :meth:`start`;
        a replay reports each as ``policy_<name>``. Empty for a policy that keeps none.
    """

    name: ClassVar[str] = ""
    tick: float | None = None
    stats: Mapping[str, float | int | None] = MappingProxyType({})
    #: The budget held in batch (:meth:`hold`); None: no limit, as in the simulator.
    guard: BudgetGuard | None = None

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        """Called once before the first event; reset any state kept between decisions."""

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        """Where ``w`` goes now, at its own profile (GPU position, start), or None."""
        raise NotImplementedError

    def arrive(self, cluster: Cluster, w: Workload, now: float) -> bool:
        """Place ``w`` (after :meth:`on_reject` when :meth:`choose` finds nothing); True when placed."""
        at = self.choose(cluster, w, now)
        if at is None:
            return self.on_reject(cluster, w, now)
        cluster.place(w, *at)
        return True

    def on_reject(self, cluster: Cluster, w: Workload, now: float) -> bool:
        """``choose`` found no place for ``w``: act (migrate, borrow) and place it; True when placed."""
        return False

    def depart(self, cluster: Cluster, w: Workload, now: float) -> None:
        """``w`` leaves the cluster."""
        cluster.remove(w)
        self.on_departure(cluster, w, now)

    def on_departure(self, cluster: Cluster, w: Workload, now: float) -> None:
        """After ``w`` has left."""

    def on_tick(self, cluster: Cluster, now: float) -> None:
        """Every ``tick`` time units."""

    def finish_batch(self, cluster: Cluster) -> dict[str, tuple[str, int]]:
        """The placement a batch run reports: everything on the cluster (at its own profile)."""
        return dict(cluster.placed)

    def hold(self, guard: BudgetGuard) -> None:
        """Hold ``guard``'s budget in every migration from now on (a wrapper passes it on)."""
        self.guard = guard

    def over_budget(self, cluster: Cluster) -> str | None:
        """Why ``cluster`` (a trial copy after a migration) breaks the held budget, or None."""
        return None if self.guard is None else self.guard.exceeded(cluster)

    def describe(self) -> str:
        """One line for reports: the rule, from the class docstring."""
        doc = (type(self).__doc__ or "").strip().splitlines()
        return doc[0] if doc else self.name


def run_batch(policy: Policy, instance: Instance, *, seed: int = 0, budget: Budget | None = None) -> Solution:
    """The policy in batch mode: the instance's new workloads arrive in file order at time 0.

    Running workloads start where they run; whatever the policy migrates shows in the
    solution as moves. The solution is what the verifier checks.

    Parameters
    ----------
    budget
        At most this many running workloads restarted and GB moved at the end; a migration
        that would take either over it is skipped (:class:`BudgetGuard`). The requests left
        out because of it are named in the solution's ``message``
        (:func:`mipopt.instance.budget.left_out_by_budget` reads them).
    """
    t0 = time.perf_counter()
    cluster = Cluster(instance)
    guard = BudgetGuard(budget or UNLIMITED)
    policy.hold(guard)
    policy.start(cluster, np.random.default_rng(seed))
    for w in instance.new:
        policy.arrive(cluster, w, 0.0)
    placed = policy.finish_batch(cluster)
    note = budget_note(guard.budget, {w: why for w, why in guard.left_out.items() if w not in placed})
    return completed(instance, placed, f"{policy.name} (batch)", t0, note, chosen_profiles(cluster, placed))


def chosen_profiles(cluster: Cluster, placed: dict[str, tuple[str, int]]) -> dict[str, str]:
    """The profile each memory-sized workload of ``placed`` occupies on ``cluster`` (where it
    sits there): the smallest that fits unless the policy chose a larger one."""
    instance = cluster.instance
    return {
        wid: cluster.occupied_profile(wid).name
        for wid, where in placed.items()
        if instance.workload(wid).memory_sized and cluster.placed.get(wid) == where
    }
