"""One interface for every placement policy, online (the simulator) and in batch (``mipopt solve``).

A policy answers "where does this request go (GPU, start), or is it rejected"
(:meth:`Policy.choose`) and may act on events by migrating running workloads through
:meth:`Cluster.move <mipopt.state.cluster.Cluster.move>`: when a request would be
rejected (:meth:`Policy.on_reject`, e.g. GRMU's defragmentation, MIG-Adapter's
borrowing), after a departure (:meth:`Policy.on_departure`, e.g. MIG-Adapter's return)
and every ``tick`` time units (:meth:`Policy.on_tick`, e.g. GRMU's consolidation).

Policies are made by name by :func:`mipopt.heuristics.policies.make_policy`, which reads
the one table of names (:data:`mipopt.heuristics.policies.POLICIES`); this module is the
base the policy modules build on, below that table.
"""

from __future__ import annotations

import time
from typing import ClassVar

import numpy as np

from mipopt.heuristics.base import completed
from mipopt.instance import Instance, Solution, Workload
from mipopt.state.cluster import Cluster

__all__ = ["Decision", "Policy", "run_batch"]

Decision = tuple[int, int] | None  # (GPU position, start) or rejected


class Policy:
    """Base class: subclasses implement :meth:`choose`; the event hooks default to doing nothing.

    Attributes
    ----------
    name
        The policy's name as :func:`mipopt.heuristics.policies.make_policy` knows it (with its options).
    tick
        Interval between :meth:`on_tick` calls in the trace's time unit, or None.
    """

    name: ClassVar[str] = ""
    tick: float | None = None

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

    def describe(self) -> str:
        """One line for reports: the rule, from the class docstring."""
        doc = (type(self).__doc__ or "").strip().splitlines()
        return doc[0] if doc else self.name


def run_batch(policy: Policy, instance: Instance, *, seed: int = 0) -> Solution:
    """The policy in batch mode: the instance's new workloads arrive in file order at time 0.

    Running workloads start where they run; whatever the policy migrates shows in the
    solution as moves. The solution is what the verifier checks.
    """
    t0 = time.perf_counter()
    cluster = Cluster(instance)
    policy.start(cluster, np.random.default_rng(seed))
    for w in instance.new:
        policy.arrive(cluster, w, 0.0)
    return completed(instance, policy.finish_batch(cluster), f"{policy.name} (batch)", t0)
