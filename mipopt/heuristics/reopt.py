"""Exact re-optimization as an online policy (issue 16, section 1): ``reopt``.

Between re-optimizations a base policy (default ``mfi``) places the arrivals. A
re-optimization solves the exact model (:func:`mipopt.exact.solve_exact`) on the
cluster's current state and carries out its answer:

* **When.** Every ``interval`` time units (the policy's :attr:`~Policy.tick`), when the
  base policy rejects a request (``on_reject=true``, the default: the request is the
  re-optimization's one new workload) and when the mean FBK fragmentation of the active
  GPUs (the simulator's ``fragmentation_fbk``) crosses ``fragmentation`` upwards after an
  arrival. A rejection that a re-optimization already failed to place at the same
  cluster state (same profile, whatever its cpu and ram; nothing placed, moved or gone
  since) does not solve again.
* **The model.** A neighbourhood of ``gpus`` GPUs (:func:`neighbourhood`, default 32;
  None: the whole cluster, which at 1,213 GPUs does not even build within 2 s) with their
  hosts (what the hosts' other GPUs hold of cpu and ram is not the model's); the running
  workloads on them at the profile they occupy, where they run, movable (pinned ones
  stay), each weighing more than all new workloads together, so no answer drops one to
  take a new one; a migration
  weight of 1/2, so the model's migrations objective counts an inter-GPU move 1 and an
  inter-host move 2, and ``max_moves`` bounds it. Objective
  ``lex:acceptance,hardware,migrations`` (the driver's default), ``time_limit`` seconds
  per solve (model building included), one thread, solver seed 0.
* **Carrying it out.** Only an answer strictly better than the state (a new workload
  placed, or less hardware) changes anything: otherwise nothing moves. The running
  workloads whose GPU or start changes are relocated by the migration planner
  (:func:`mipopt.migrate.execute.execute`, create before destroy, parking moves
  counted by the cluster); a plan that would drain a workload (stop it on the way) is
  first tried on a copy of the cluster and refused unless ``drains=true``. The new
  workloads the answer places are then placed at their spots.
* **Budget** (:meth:`Policy.hold`, a batch run with ``max_restarts`` or ``max_moved_gb``). The
  model holds what the budget leaves (:func:`mipopt.exact.driver.solve_exact`'s ``budget``): it counts
  every relocation from the state now, the requests placed earlier included, which is never
  looser than the budget's count from where the running workloads ran at the start. The answer
  is then carried out on a copy of the cluster; if it breaks the budget after all, nothing
  changes (``over_budget``) and a request it placed is recorded as left out by the budget. When
  the answer leaves the request without a place, one more solve without the budget (its time
  counted in ``solve_s``) says whether the budget left it out. The base policy holds the same
  budget.
* **Counters** (:attr:`Reopt.stats`, reset by :meth:`Policy.start`, so one replay's):
  ``reopts`` (solves), ``reopts_rejection``, ``reopts_interval``,
  ``reopts_fragmentation``, ``reopts_applied`` (those that changed the cluster),
  ``solve_s`` (total wall time of the solves), ``solve_max_s``, ``unproven`` (solves that
  the time limit stopped before a proof), ``moves`` (relocations,
  parks and restores included), ``parks``, ``drains``, ``gb_moved`` (memory of every
  relocation, as the planner's ``moved_memory_gb``), ``placed_by_reopt`` (requests the
  base policy rejected that a re-optimization placed), ``drain_refusals``,
  ``skipped_same_state``, ``budget_exhausted`` (1 once ``budget_s`` seconds of solving
  have been spent: from then on the policy is its base alone), ``budget_exhausted_at``
  (the simulated time then, or None) and ``over_budget`` (re-optimizations not carried out
  because of the restart and GB budget, not ``budget_s``). The simulator counts the same moves and parks
  in its own summary (``migrations``, ``parking_moves``).

Same seed, same result, as long as every solve ends with a proof: a solve that the time limit
stops returns the best answer found by then, which depends on the machine's speed and load
(``unproven`` counts them).
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any

import numpy as np

from mipopt.heuristics.online import BudgetGuard, Policy
from mipopt.instance import Budget, Instance, Placement, Solution, Status, Workload
from mipopt.instance.budget import disruption
from mipopt.state.cluster import Cluster
from mipopt.verifier import evaluate

__all__ = ["STAT_KEYS", "Reopt"]

#: The counters of :attr:`Reopt.stats`, in report order.
STAT_KEYS = (
    "reopts",
    "reopts_rejection",
    "reopts_interval",
    "reopts_fragmentation",
    "reopts_applied",
    "solve_s",
    "solve_max_s",
    "unproven",
    "moves",
    "parks",
    "drains",
    "gb_moved",
    "placed_by_reopt",
    "drain_refusals",
    "skipped_same_state",
    "budget_exhausted",
    "budget_exhausted_at",
    "over_budget",
)
#: Migration weight of every running workload in the re-optimization model (inter-GPU move = 1).
MIGRATION_WEIGHT = 0.5


class Reopt(Policy):
    """Exact re-optimization: a base policy between solves of the exact model on the cluster's state.

    Parameters
    ----------
    base
        The base policy's spec (a name or ``adapter(<name>)``; :func:`make_policy`), or a policy.
    interval
        Re-optimize every ``interval`` time units; None: never on a clock.
    on_reject
        Re-optimize when the base policy rejects a request.
    fragmentation
        Re-optimize after an arrival that takes the mean FBK fragmentation of the active
        GPUs above this value (from at or below it); None: never.
    max_moves
        Bound on the model's migrations objective (inter-GPU move 1, inter-host 2); None: no bound.
    time_limit
        Seconds per solve, positive.
    drains
        Whether a plan may drain workloads (stop and restart them); default: refuse such plans.
    budget_s
        Seconds of solving per replay, after which the policy stops re-optimizing; None: no budget.
    solver
        ``highs`` or ``cpsat``.
    gpus
        How many GPUs a re-optimization sees (:func:`neighbourhood`); None: the whole cluster.
    """

    name = "reopt"

    def __init__(
        self,
        base: str | Policy = "mfi",
        interval: float | None = None,
        on_reject: bool = True,
        fragmentation: float | None = None,
        max_moves: int | None = 16,
        time_limit: float = 2.0,
        drains: bool = False,
        budget_s: float | None = None,
        solver: str = "highs",
        gpus: int | None = 32,
    ) -> None:
        if isinstance(base, str):
            from mipopt.heuristics.policies import make_policy  # the table imports this module

            if base.split(":")[0] == "reopt":
                raise TypeError("base must be another policy than reopt")
            self.base = make_policy(base, "base")
        elif isinstance(base, Policy):
            self.base = base
        else:
            raise TypeError(f"base must be a policy name, got {base!r}")
        _check_number("interval", interval, allow_none=True)
        _check_number("time_limit", time_limit)
        _check_number("budget_s", budget_s, allow_none=True)
        if fragmentation is not None and (
            isinstance(fragmentation, bool) or not isinstance(fragmentation, int | float) or fragmentation < 0
        ):
            raise TypeError(f"fragmentation must be a non-negative number or None, got {fragmentation!r}")
        if max_moves is not None and (
            isinstance(max_moves, bool) or not isinstance(max_moves, int) or max_moves < 0
        ):
            raise TypeError(f"max_moves must be a non-negative integer or None, got {max_moves!r}")
        for label, flag in (("on_reject", on_reject), ("drains", drains)):
            if not isinstance(flag, bool):
                raise TypeError(f"{label} must be true or false, got {flag!r}")
        if gpus is not None and (isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1):
            raise TypeError(f"gpus must be a positive integer or None, got {gpus!r}")
        if solver not in ("highs", "cpsat"):
            raise TypeError(f"solver must be highs or cpsat, got {solver!r}")
        if interval is not None and self.base.tick:
            raise TypeError(
                f"base {self.base.name} has its own tick: give it no interval, or reopt no interval"
            )
        self.interval = None if interval is None else float(interval)
        self.reject = on_reject
        self.fragmentation = None if fragmentation is None else float(fragmentation)
        self.max_moves = max_moves
        self.time_limit = float(time_limit)
        self.drains = drains
        self.budget_s = None if budget_s is None else float(budget_s)
        self.solver = solver
        self.gpus = gpus
        self.tick = self.interval if self.interval is not None else self.base.tick
        self.stats: dict[str, Any] = {}
        self._version = 0  # changes whenever the cluster does through this policy
        self._failed: dict[str, int] = {}  # profile -> version at which a re-optimization could not place it
        self._failed_why: dict[str, str | None] = {}  # profile -> why the budget left it out then
        self._above = False
        self._reset()

    @property
    def label(self) -> str:
        """The policy with its base, for reports: ``reopt(mfi)``."""
        return f"reopt({self.base.name})"

    def _reset(self) -> None:
        self.stats = dict.fromkeys(STAT_KEYS, 0)
        self.stats["solve_s"] = self.stats["solve_max_s"] = self.stats["gb_moved"] = 0.0
        self.stats["budget_exhausted_at"] = None
        self._version = 0
        self._failed = {}
        self._failed_why = {}
        self._above = False

    # --- the policy interface

    def hold(self, guard: BudgetGuard) -> None:
        """Hold the budget in the re-optimizations and in the base policy's own migrations."""
        super().hold(guard)
        self.base.hold(guard)

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        self._reset()
        self.base.start(cluster, rng)

    def choose(self, cluster: Cluster, w: Workload, now: float) -> tuple[int, int] | None:
        return self.base.choose(cluster, w, now)

    def arrive(self, cluster: Cluster, w: Workload, now: float) -> bool:
        """The base policy places ``w`` (with its own rejection handling); a re-optimization when it cannot."""
        if self.base.arrive(cluster, w, now):
            self._version += 1
            if self.fragmentation is not None:
                above = mean_fragmentation(cluster) > self.fragmentation
                if above and not self._above:
                    self.reoptimize(cluster, [], now, "fragmentation")
                    above = mean_fragmentation(cluster) > self.fragmentation
                self._above = above
            return True
        return self.on_reject(cluster, w, now)

    def on_reject(self, cluster: Cluster, w: Workload, now: float) -> bool:
        if not self.reject:
            return False
        profile = w.size  # a profile, or the memory (and compute) of a memory-sized request
        if self._failed.get(profile) == self._version:
            self.stats["skipped_same_state"] += 1
            why = self._failed_why.get(profile)
            if why is not None and self.guard is not None:
                self.guard.refuse(w, why)  # the same state: the same budget left it out
            return False
        placed = self.reoptimize(cluster, [w], now, "rejection")
        if w.id in placed:
            return True
        self._failed[profile] = self._version
        self._failed_why[profile] = None if self.guard is None else self.guard.left_out.get(w.id)
        return False

    def depart(self, cluster: Cluster, w: Workload, now: float) -> None:
        self.base.depart(cluster, w, now)
        self._version += 1

    def on_tick(self, cluster: Cluster, now: float) -> None:
        if self.interval is None:
            self.base.on_tick(cluster, now)
            self._version += 1
            return
        self.reoptimize(cluster, [], now, "interval")

    def describe(self) -> str:
        return f"exact re-optimization over {self.base.name}"

    # --- re-optimization

    def reoptimize(self, cluster: Cluster, new: list[Workload], now: float, why: str) -> set[str]:
        """Solve the exact model on the cluster's state plus ``new`` and carry out a better answer.

        Returns the ids of the ``new`` workloads placed (empty when nothing changed).
        """
        from mipopt.migrate.execute import execute

        if self.stats["budget_exhausted"]:
            return set()
        if self.budget_s is not None and self.stats["solve_s"] >= self.budget_s:
            self.stats["budget_exhausted"] = 1
            self.stats["budget_exhausted_at"] = now
            return set()
        left = self._left(cluster)
        instance, sol = self._solve(cluster, new, left)
        self.stats["reopts"] += 1
        self.stats[f"reopts_{why}"] += 1
        answer = sol.placed()
        placed_new = [w for w in new if w.id in answer]
        if left is not None and new and not placed_new:
            self._explain(cluster, new)
        running = [w.id for w in instance.running]
        # a running workload missing cannot happen (running workloads weigh more than the new)
        if sol.status is Status.NONE or any(wid not in answer for wid in running):
            return set()
        current, _ = evaluate(instance, instance.current_placement())
        if not placed_new and (sol.objectives is None or sol.objectives.hardware >= current.hardware):
            return set()
        target = self._target(cluster, running, answer)
        if (target and not self.drains) or (self.guard is not None and self.guard.limited):
            trial = self._trial(cluster, target, placed_new, answer, sol.profiles())
            if trial.planned["disruptive_moves"] > cluster.planned["disruptive_moves"] and not self.drains:
                self.stats["drain_refusals"] += 1
                return set()
            if self._refused(trial, target, placed_new):
                self.stats["over_budget"] += 1
                return set()
        done = execute(cluster, target) if target else []
        for r in done:
            self.stats["moves"] += 1
            self.stats["parks"] += int(r.park)
            self.stats["drains"] += int(r.disruptive)
            self.stats["gb_moved"] += cluster.occupied_profile(r.workload).memory_gb
        chosen = sol.profiles()  # the profiles the model chose for memory-sized requests
        placed = {w.id for w in placed_new if self._place(cluster, w, answer[w.id], chosen.get(w.id))}
        self.stats["placed_by_reopt"] += len(placed)
        if done or placed:
            self.stats["reopts_applied"] += 1
            self._version += 1
        return placed

    def _solve(self, cluster: Cluster, new: list[Workload], left: Budget | None) -> tuple[Instance, Solution]:
        """The exact model on the neighbourhood's state plus ``new``, within ``left``; its time
        counts in ``solve_s``."""
        from mipopt.exact.driver import solve_exact  # pyomo: only when re-optimizing
        from mipopt.solvers import SolverOptions

        instance = state_instance(cluster, new, neighbourhood(cluster, new, self.gpus))
        limit = self.time_limit
        if self.budget_s is not None:
            limit = min(limit, max(self.budget_s - self.stats["solve_s"], 0.01))
        bounds = () if self.max_moves is None else (("migrations", "<=", float(self.max_moves)),)
        t0 = time.perf_counter()
        sol = solve_exact(
            instance,
            solver=self.solver,
            options=SolverOptions(time_limit_s=limit, threads=1, seed=0),
            bounds=bounds,
            budget=left,
        )
        spent = time.perf_counter() - t0
        self.stats["solve_s"] += spent
        self.stats["solve_max_s"] = max(self.stats["solve_max_s"], spent)
        self.stats["unproven"] += int(sol.status is not Status.OPTIMAL)
        return instance, sol

    @staticmethod
    def _target(
        cluster: Cluster, running: list[str], answer: dict[str, tuple[str, int]]
    ) -> dict[str, tuple[int, int]]:
        """The running workloads ``answer`` puts elsewhere: id -> (GPU position, start)."""
        return {
            wid: (cluster.position[answer[wid][0]], answer[wid][1])
            for wid in running
            if cluster.placed[wid] != answer[wid]
        }

    def _trial(
        self,
        cluster: Cluster,
        target: dict[str, tuple[int, int]],
        placed_new: list[Workload],
        answer: dict[str, tuple[str, int]],
        profiles: dict[str, str],
    ) -> Cluster:
        """A copy of the cluster with the answer carried out (``profiles``: those the answer
        chose for memory-sized requests)."""
        from mipopt.migrate.execute import execute

        trial = cluster.copy()
        if target:
            execute(trial, target)
        for w in placed_new:
            self._place(trial, w, answer[w.id], profiles.get(w.id))
        return trial

    def _refused(
        self, trial: Cluster, target: dict[str, tuple[int, int]], placed_new: list[Workload]
    ) -> bool:
        """Whether ``trial`` breaks the held budget; if so the requests it places are recorded as
        left out by the budget."""
        broken = self.over_budget(trial)
        if broken is None or self.guard is None:
            return False
        self.guard.skipped += 1
        for w in placed_new:
            self.guard.refuse(
                w,
                f"placing it needed a re-optimization that relocates {_count(len(target), 'workload')}: {broken}",
            )
        return True

    def _explain(self, cluster: Cluster, new: list[Workload]) -> None:
        """The model within what the budget leaves found no place for ``new``: one more solve
        without the budget says whether the budget left them out."""
        instance, sol = self._solve(cluster, new, None)
        answer = sol.placed()
        running = [w.id for w in instance.running]
        placed_new = [w for w in new if w.id in answer]
        if sol.status is Status.NONE or not placed_new or any(wid not in answer for wid in running):
            return
        target = self._target(cluster, running, answer)
        self._refused(self._trial(cluster, target, placed_new, answer, sol.profiles()), target, placed_new)

    @staticmethod
    def _place(cluster: Cluster, w: Workload, spot: tuple[str, int], profile: str | None = None) -> bool:
        """Place ``w`` at ``spot`` (GPU id, start), at ``profile`` when the answer chose one for a
        memory-sized ``w``, where every rule allows it now; False otherwise."""
        k = cluster.position[spot[0]]
        if not (int(cluster.legal(w, profile)[k]) >> spot[1]) & 1:
            return False
        cluster.place(w, k, spot[1], profile)
        return True

    def _left(self, cluster: Cluster) -> Budget | None:
        """What the held budget leaves for one re-optimization, or None without a budget.

        The model counts every relocation from the state now: within what is left, the budget's
        count from where the running workloads ran at the start holds too (a workload that moved
        already counts there once however often it moves again).
        """
        if self.guard is None or not self.guard.limited:
            return None
        budget = self.guard.budget
        spent = disruption(cluster.instance, cluster.placed)
        return Budget(
            None if budget.max_restarts is None else max(budget.max_restarts - int(spent["restarted"]), 0),
            None if budget.max_moved_gb is None else max(budget.max_moved_gb - spent["moved_memory_gb"], 0.0),
        )


def state_instance(cluster: Cluster, new: list[Workload], ks: list[int] | None = None) -> Instance:
    """The state of GPUs ``ks`` (default: all) as an instance, plus ``new`` as new workloads.

    The running workloads on those GPUs are where they run, at the profile they occupy,
    movable unless pinned, weighing more than all of ``new`` together and with migration
    weight :data:`MIGRATION_WEIGHT`. A host keeps the GPUs of ``ks`` only, and of its cpu
    and ram what the workloads on its other GPUs leave.
    """
    inst = cluster.instance
    chosen = sorted(range(len(inst.gpus)) if ks is None else ks)
    heavy = 1.0 + sum(w.weight for w in new)
    hosts: dict[int, list[str]] = {}
    running = []
    cpu: dict[int, float] = {}
    ram: dict[int, float] = {}
    for k in chosen:
        j = int(cluster.host[k])
        hosts.setdefault(j, []).append(inst.gpus[k].id)
        for wid in cluster.on_gpu(k):
            w = cluster.as_placed(wid)
            cpu[j] = cpu.get(j, 0.0) + w.cpu
            ram[j] = ram.get(j, 0.0) + w.ram_gb
            running.append(
                dataclasses.replace(
                    w,
                    placement=Placement(*cluster.placed[wid]),
                    weight=heavy,
                    migration_weight=MIGRATION_WEIGHT,
                )
            )
    host_list = []
    for j, ids in hosts.items():
        h = inst.hosts[j]
        # What the host's GPUs outside the cut hold of its cpu and ram is not the model's.
        host_cpu = None if h.cpu is None else h.cpu - (float(cluster.cpu[j]) - cpu.get(j, 0.0))
        host_ram = None if h.ram_gb is None else h.ram_gb - (float(cluster.ram[j]) - ram.get(j, 0.0))
        host_list.append(dataclasses.replace(h, gpus=tuple(ids), cpu=host_cpu, ram_gb=host_ram))
    fresh = [dataclasses.replace(w, placement=None, pinned=False) for w in new]
    return dataclasses.replace(
        inst,
        name=f"{inst.name}-reopt",
        hosts=tuple(host_list),
        gpus=tuple(inst.gpus[k] for k in chosen),
        workloads=tuple(running + fresh),
    )


def neighbourhood(cluster: Cluster, new: list[Workload], size: int | None) -> list[int] | None:
    """The GPUs a re-optimization sees: None (all) when ``size`` is None or covers the cluster.

    Else ``size`` GPUs, in this order: those where every workload of ``new`` may run (model
    and host cpu and ram), active ones first, most free memory slots first, then the
    others in the same order; ties go to the lower position.
    """
    n = len(cluster.mask)
    if size is None or size >= n:
        return None
    free = np.zeros(n, dtype=np.int64)
    for g in cluster.groups:
        free[g.at] = g.tables.free_slots.take(cluster.mask[g.at])
    fits = np.ones(n, dtype=bool)
    for w in new:
        runs = np.zeros(n, dtype=bool)
        for g in cluster.groups:
            runs[g.at] = cluster.profile_index(w, g.model) is not None
        fits &= runs & cluster.host_room(w)[cluster.host]
    # lexsort: the last key is the primary one
    order = np.lexsort((np.arange(n), -free, ~cluster.active, ~fits))
    return sorted(order[:size].tolist())


def mean_fragmentation(cluster: Cluster) -> float:
    """FBK's fragmentation averaged over the active GPUs (the simulator's ``fragmentation_fbk``)."""
    return cluster.mean_fragmentation()[0]


def _count(n: int, what: str) -> str:
    return f"{n} {what}" if n == 1 else f"{n} {what}s"


def _check_number(label: str, value: Any, *, allow_none: bool = False) -> None:
    if value is None and allow_none:
        return
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < float("inf"):
        raise TypeError(f"{label} must be a positive number{' or None' if allow_none else ''}, got {value!r}")
