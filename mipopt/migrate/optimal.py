"""The exact planner: a time-indexed model of the rounds, solved through the solver layer.

Rounds r = 1..R (R from the graph plan: see :func:`round_budget`). Every workload that
moves or is created (an *item*) has, after each round, exactly one *location*: one of its
candidate spots (its source, its target, park spots) or a virtual one, ``down`` (drained,
for running items) or ``none`` (not yet created, for new ones). Workloads that stay where
they are (pinned ones among them) are constants. A round's largest state (after phase 2 of
:mod:`mipopt.migrate.plan`) holds every item's location at the end of the round before and
at the end of the round, except a source drained in phase 1; that state obeys every rule.

Objectives, in order (the issue's): disruptions (drains), rounds used, extra moves (parks:
arrivals beyond one per item), memory moved (GB of every relocation). By default they are
solved in stages, each keeping the earlier optima (each stage's objective moves in whole
steps, so the solver rounds its bound up); ``mode="weighted"`` solves one weighted sum
whose weights provably keep the order (:attr:`MigrationModel.weights`). The model is
written equation by equation in ``models/migrate.md``, with the constraint names used here.

The graph plan is the warm start (its park spots are candidates, so it is a point of the
model) and the fallback: the exact plan is never lexicographically worse than the graph plan.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from fractions import Fraction
from functools import reduce
from math import gcd, lcm
from typing import Any, Literal

import pyomo.environ as pyo

from mipopt.instance import Instance, Status, Termination
from mipopt.migrate.graph import Key, graph_rounds, plan_key
from mipopt.migrate.plan import Create, Drain, Move, Round
from mipopt.solvers import SolverOptions, get_backend
from mipopt.state.occupancy import Occupancy, Spot, move_kind

__all__ = [
    "ALL_SPOTS_LIMIT",
    "OBJECTIVES",
    "PARK_SPOTS",
    "MigrationModel",
    "build_migration_model",
    "exact_rounds",
    "plan_key",
    "round_budget",
]

#: Every legal spot is a park candidate when all items together have at most this many.
ALL_SPOTS_LIMIT = 240
#: Otherwise each item keeps this many park spots free now or in the target, nearest first.
PARK_SPOTS = 16

#: (disruptions, rounds, extra moves, memory moved in GB): smaller is better, in this order.


def round_budget(graph_plan: list[Round]) -> int:
    """Rounds the model may use: the graph plan's count, plus two per drain it made.

    Without drains the graph plan's count G is enough for the lexicographic optimum: a plan
    of more rounds is worse than the graph plan already. With drains, a plan with fewer
    of them may need more rounds (a park and the way back): two per drain is a heuristic
    allowance, and the optimum is over plans of at most that many rounds.
    """
    drains = sum(len(r.drains) for r in graph_plan)
    return max(1, len(graph_plan) + 2 * drains)


@dataclass
class MigrationModel:
    """A built time-indexed model and what is needed to encode and decode plans.

    Attributes
    ----------
    items
        Workloads that move (running) or are created (new), in instance order.
    spots
        Per item, its candidate spots; index ``len(spots[k])`` is the virtual location
        (``down`` for a running item, ``none`` for a new one).
    source, target
        Per item, the index of its source (None for new items) and of its target in ``spots[k]``.
    rounds
        R: the model's rounds are 1..R; round 0 is the current state, round R the target.
    memory_gb
        Per item and spot, the GB a relocation there moves (0 for new items).
    objectives
        ``disruptions``, ``rounds``, ``moves`` (arrivals) and ``memory`` (in GB steps):
        Pyomo expressions, minimized in this order.
    weights
        Per objective, its weight in :meth:`weighted`.
    stats
        Items, rounds, candidate spots, variables and constraints.
    """

    instance: Instance
    items: list[str]
    spots: list[list[Spot]]
    source: list[int | None]
    target: list[int]
    rounds: int
    model: pyo.ConcreteModel
    memory_gb: list[list[float]]
    objectives: dict[str, Any] = field(default_factory=dict)
    weights: dict[str, int] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)

    def weighted(self) -> Any:
        """The weighted sum of the objectives that keeps their order (``models/migrate.md``)."""
        return sum(w * self.objectives[name] for name, w in self.weights.items())

    # --- locations

    def virtual(self, k: int) -> int:
        return len(self.spots[k])

    def running(self, k: int) -> bool:
        return self.source[k] is not None

    def at(self, k: int, j: int, r: int) -> Any:
        """x[k, j, r]: a variable, or 0/1 at round 0 (current) and round R (target)."""
        if r == 0:
            start = self.source[k]
            return int(j == (self.virtual(k) if start is None else start))
        if r == self.rounds:
            return int(j == self.target[k])
        return self.model.x[k, j, r]

    def location(self, k: int, r: int) -> int:
        """Item k's location index after round r in the model's current values."""
        for j in range(self.virtual(k) + 1):
            if _on(self.at(k, j, r)):
                return j
        raise ValueError(f"{self.items[k]} has no location after round {r}")

    # --- plans <-> values

    def decode(self) -> list[Round]:
        """The plan in the model's current variable values (empty rounds left out)."""
        inst, m = self.instance, self.model
        out: list[Round] = []
        drained_from: dict[str, Spot] = {}
        for r in range(1, self.rounds + 1):
            drains: list[Drain] = []
            moves: list[Move] = []
            creates: list[Create] = []
            for k, wid in enumerate(self.items):
                before, after = self.location(k, r - 1), self.location(k, r)
                drained = self.running(k) and _on(m.d[k, r])
                if drained:
                    drained_from[wid] = self.spots[k][before]
                    drains.append(Drain(wid, self.spots[k][before]))
                if after == self.virtual(k) or (after == before and not drained):
                    continue
                spot = self.spots[k][after]
                if before == self.virtual(k) or drained:
                    origin = drained_from.get(wid)
                    kind = None if origin is None else move_kind(inst, origin, spot)
                    creates.append(Create(wid, spot, origin, kind))
                else:
                    source = self.spots[k][before]
                    park = after != self.target[k]
                    moves.append(Move(wid, source, spot, move_kind(inst, source, spot), park=park))
            if drains or moves or creates:
                out.append(Round(tuple(drains), tuple(moves), tuple(creates)))
        return out

    def locations(self, plan: list[Round]) -> tuple[list[list[int]], list[list[int]]] | None:
        """Per item, its location after each round 0..R and its drains per round 1..R, of ``plan``.

        None when the plan does not fit the model: more rounds than R, or a spot that is
        not a candidate.
        """
        if len(plan) > self.rounds:
            return None
        index = {wid: k for k, wid in enumerate(self.items)}
        loc = [[self.virtual(k) if j is None else j] for k, j in enumerate(self.source)]
        drains = [[0] * (self.rounds + 1) for _ in self.items]
        for r in range(1, self.rounds + 1):
            now = [row[-1] for row in loc]
            rnd = plan[r - 1] if r <= len(plan) else Round()
            for d in rnd.drains:
                if d.workload not in index:
                    return None
                now[index[d.workload]] = self.virtual(index[d.workload])
                drains[index[d.workload]][r] = 1
            for wid, spot in _arrivals(rnd):
                if wid not in index or spot not in self.spots[index[wid]]:
                    return None
                now[index[wid]] = self.spots[index[wid]].index(spot)
            for k, j in enumerate(now):
                loc[k].append(j)
        return loc, drains

    def warm_start(self, plan: list[Round]) -> dict[str, float] | None:
        """Variable values (by name) that encode ``plan``; None when it is not a point of the model."""
        found = self.locations(plan)
        if found is None:
            return None
        loc, drains = found
        m = self.model
        values: dict[str, float] = {}
        used = [0] * (self.rounds + 1)
        for k in range(len(self.items)):
            if loc[k][self.rounds] != self.target[k]:
                return None
            for r in range(1, self.rounds + 1):
                moved = loc[k][r] != loc[k][r - 1] or drains[k][r]
                used[r] |= int(bool(moved))
                if self.running(k):
                    values[m.d[k, r].name] = float(drains[k][r])
                for j in range(self.virtual(k) + 1):
                    now, before = int(loc[k][r] == j), int(loc[k][r - 1] == j)
                    if r < self.rounds:
                        values[m.x[k, j, r].name] = float(now)
                    if j < self.virtual(k):
                        values[m.h[k, j, r].name] = float(max(now, before - drains[k][r]))
                        values[m.a[k, j, r].name] = float(max(now - before, 0))
        for r in range(1, self.rounds + 1):
            values[m.u[r].name] = float(used[r])
        return values


def build_migration_model(
    instance: Instance,
    target: dict[str, Spot],
    rounds: int,
    *,
    extra_spots: Mapping[str, Iterable[Spot]] | None = None,
) -> MigrationModel:
    """Build the time-indexed model of the plans from ``instance``'s running state to ``target``.

    Parameters
    ----------
    instance
        Its running workloads are round 0.
    target
        A valid placement of every workload to run at the end (the caller verifies it).
    rounds
        R, the most rounds a plan may use.
    extra_spots
        Per workload, spots to add to its park candidates (the graph plan's parks).

    Notes
    -----
    No objective is active: :attr:`MigrationModel.objectives` holds the expressions
    (``disruptions``, ``rounds``, ``moves``: arrivals, ``memory``: in GB steps) and
    :attr:`MigrationModel.weights` the weights of their order-keeping sum.
    """
    current = instance.current_placement()
    items = [w.id for w in instance.workloads if w.id in target and current.get(w.id) != target[w.id]]
    constants = [(wid, spot) for wid, spot in current.items() if wid not in items]
    base = Occupancy(instance, constants)
    spots, source, goal = _candidates(instance, target, items, base, extra_spots or {})
    n = len(items)
    R = rounds
    m = pyo.ConcreteModel(name=f"migrate[{instance.name}]")
    mm = MigrationModel(instance, items, spots, source, goal, R, m, memory_gb=[])
    run = [k for k in range(n) if source[k] is not None]

    x_index = [(k, j, r) for k in range(n) for j in range(len(spots[k]) + 1) for r in range(1, R)]
    phys_index = [(k, j, r) for k in range(n) for j in range(len(spots[k])) for r in range(1, R + 1)]
    m.x = pyo.Var(x_index, domain=pyo.Binary)  # item k at location j after round r
    m.h = pyo.Var(phys_index, domain=pyo.Binary)  # item k holds spot j in round r's largest state
    m.a = pyo.Var(phys_index, domain=pyo.Binary)  # item k arrives at spot j in round r
    m.d = pyo.Var([(k, r) for k in run for r in range(1, R + 1)], domain=pyo.Binary)  # drained in round r
    m.u = pyo.Var(range(1, R + 1), domain=pyo.Binary)  # round r is used
    X = mm.at

    def add(cons: pyo.ConstraintList, expr: Any) -> None:
        if isinstance(expr, bool):  # every term a constant of round 0 or R: nothing to write
            assert expr, f"{cons.name}: a constant row is violated"
            return
        cons.add(expr)

    # one location per item and round
    m.one_place = pyo.ConstraintList()
    for k in range(n):
        for r in range(1, R):
            m.one_place.add(sum(m.x[k, j, r] for j in range(len(spots[k]) + 1)) == 1)

    # moves, drains and restores
    m.target_kept = pyo.ConstraintList()
    m.drain_from = pyo.ConstraintList()
    m.drain_to = pyo.ConstraintList()
    m.down_entry = pyo.ConstraintList()
    m.down_exit = pyo.ConstraintList()
    for k in range(n):
        t, v = goal[k], len(spots[k])
        for r in range(1, R + 1):
            add(m.target_kept, X(k, t, r - 1) <= X(k, t, r))
            if source[k] is None:  # a new item: none, then its target (target_kept)
                continue
            d = m.d[k, r]
            add(m.drain_from, d <= sum(X(k, j, r - 1) for j in range(v) if j != t))
            add(m.drain_to, d <= X(k, v, r) + X(k, t, r))
            add(m.down_entry, X(k, v, r) <= X(k, v, r - 1) + d)
            add(m.down_exit, X(k, v, r - 1) <= X(k, v, r) + X(k, t, r))

    # the largest state of round r: the location before (unless drained) and after
    m.held_after = pyo.ConstraintList()
    m.held_before = pyo.ConstraintList()
    m.arrival = pyo.ConstraintList()
    for k, j, r in phys_index:
        h = m.h[k, j, r]
        add(m.held_after, h >= X(k, j, r))
        before = X(k, j, r - 1)
        if not (isinstance(before, int) and before == 0):
            add(m.held_before, h >= before - (m.d[k, r] if source[k] is not None else 0))
        add(m.arrival, m.a[k, j, r] >= X(k, j, r) - before)

    # every rule of that state, net of the constants
    m.no_overlap = pyo.ConstraintList()
    m.profile_max = pyo.ConstraintList()
    m.media_once = pyo.ConstraintList()
    m.host_cpu = pyo.ConstraintList()
    m.host_ram = pyo.ConstraintList()
    on_gpu: dict[str, list[tuple[int, int, Any]]] = {}  # GPU id -> (item, spot index, profile)
    for k in range(n):
        for j, (gpu_id, _) in enumerate(spots[k]):
            on_gpu.setdefault(gpu_id, []).append((k, j, base.profile(items[k], gpu_id)))
    for r in range(1, R + 1):
        for gk, gpu in enumerate(instance.gpus):
            terms = on_gpu.get(gpu.id, [])
            for slot in range(gpu.model.slots):
                cover = [m.h[k, j, r] for k, j, p in terms if p.slot_mask(spots[k][j][1]) >> slot & 1]
                if len(cover) > 1:
                    m.no_overlap.add(sum(cover) <= 1)
            by_profile: dict[str, list[Any]] = {}
            for k, j, p in terms:
                by_profile.setdefault(p.name, []).append((m.h[k, j, r], p))
            for vs in by_profile.values():
                room = vs[0][1].max_instances - int(base.count[gk, gpu.model.profiles.index(vs[0][1])])
                if len(vs) > room:
                    m.profile_max.add(sum(v for v, _ in vs) <= room)
            media = [m.h[k, j, r] for k, j, p in terms if p.media_extension]
            if len(media) > 1 - int(base.media[gk]):
                m.media_once.add(sum(media) <= 1 - int(base.media[gk]))
        for hj, host in enumerate(instance.hosts):
            terms_h = [(k, j) for g in host.gpus for k, j, _ in on_gpu.get(g, [])]
            for cap, attr, cons, used in (
                (host.cpu, "cpu", m.host_cpu, base.cpu),
                (host.ram_gb, "ram_gb", m.host_ram, base.ram),
            ):
                if cap is None:
                    continue
                need = [(m.h[k, j, r], getattr(instance.workload(items[k]), attr)) for k, j in terms_h]
                need = [(v, q) for v, q in need if q > 0]
                left = cap - float(used[hj])
                if need and sum(q for _, q in need) > left + 1e-9:
                    cons.add(sum(q * v for v, q in need) <= left)

    # rounds used: any arrival or drain; used rounds come first
    m.round_used_move = pyo.ConstraintList()
    m.round_used_drain = pyo.ConstraintList()
    m.rounds_prefix = pyo.ConstraintList()
    for r in range(1, R + 1):
        for k in range(n):
            m.round_used_move.add(m.u[r] >= sum(m.a[k, j, r] for j in range(len(spots[k]))))
            if source[k] is not None:
                m.round_used_drain.add(m.u[r] >= m.d[k, r])
        if r < R:
            m.rounds_prefix.add(m.u[r] >= m.u[r + 1])

    # objectives, each a sum of binaries (memory: of integer multiples of a common GB step)
    mm.memory_gb = [
        [base.profile(items[k], g).memory_gb if source[k] is not None else 0.0 for g, _ in spots[k]]  # type: ignore[union-attr]
        for k in range(n)
    ]
    scaled = _integer_scale([q for row in mm.memory_gb for q in row])
    mm.objectives = {
        "disruptions": sum(m.d[k, r] for k in run for r in range(1, R + 1)),
        "rounds": sum(m.u[r] for r in range(1, R + 1)),
        "moves": sum(m.a[k, j, r] for k, j, r in phys_index),
        "memory": sum(scaled[mm.memory_gb[k][j]] * m.a[k, j, r] for k, j, r in phys_index),
    }
    # Ranges of the lower objectives: arrivals n..n*R (one per item and round at most),
    # memory 0..M (every running item arriving in every round at its largest spot).
    memory_max = sum(R * max((scaled[q] for q in row), default=0) for row in mm.memory_gb)
    moves_span = n * (R - 1)
    w_moves = memory_max + 1
    w_rounds = w_moves * moves_span + memory_max + 1
    w_disruptions = w_rounds * R + w_moves * moves_span + memory_max + 1
    mm.weights = {"disruptions": w_disruptions, "rounds": w_rounds, "moves": w_moves, "memory": 1}
    mm.stats = {
        "items": n,
        "rounds": R,
        "spots": sum(len(s) for s in spots),
        "variables": m.nvariables(),
        "constraints": m.nconstraints(),
    }
    return mm


def _candidates(
    instance: Instance,
    target: dict[str, Spot],
    items: list[str],
    base: Occupancy,
    extra: Mapping[str, Iterable[Spot]],
) -> tuple[list[list[Spot]], list[int | None], list[int]]:
    """Per item: candidate spots (source, target, parks), the source's index and the target's."""
    current = instance.current_placement()
    parks: list[list[Spot]] = []
    for wid in items:
        if wid not in current:  # a new workload: created at its target, parking it gains nothing
            parks.append([])
            continue
        ends = {current[wid], target[wid]}
        legal = [
            (g.id, s)
            for g in instance.gpus
            if (p := base.profile(wid, g.id)) is not None
            for s in p.starts
            if (g.id, s) not in ends and base.fits(wid, (g.id, s))
        ]
        parks.append(legal)
    if sum(len(p) for p in parks) > ALL_SPOTS_LIMIT:
        now = Occupancy(instance, current.items())
        then = Occupancy(instance, target.items())
        for k, wid in enumerate(items):
            if not parks[k]:
                continue
            free_now, free_then = now.copy(), then.copy()
            free_now.release(wid, current[wid])
            free_then.release(wid, target[wid])
            here = current[wid][0]
            host = instance.gpu(here).host

            def near(spot: Spot, here: str = here, host: str = host) -> tuple[int, int, int]:
                g = instance.gpu(spot[0])
                return (0 if g.id == here else 1 if g.host == host else 2, g.index, spot[1])

            kept = [s for s in parks[k] if free_now.fits(wid, s) or free_then.fits(wid, s)]
            parks[k] = sorted(kept, key=near)[:PARK_SPOTS]
    spots: list[list[Spot]] = []
    source: list[int | None] = []
    goal: list[int] = []
    for k, wid in enumerate(items):
        own = [current[wid]] if wid in current else []
        listed = [*own, target[wid], *parks[k]]
        for spot in extra.get(wid, ()):
            if spot not in listed:
                listed.append(spot)
        spots.append(listed)
        source.append(0 if own else None)
        goal.append(len(own))
    return spots, source, goal


def _integer_scale(values: list[float]) -> dict[float, int]:
    """Each value as an integer multiple of their common step (GB values such as 5, 10, 20, 40)."""
    fracs = {q: Fraction(q).limit_denominator(10**6) for q in values if q}
    if not fracs or any(float(f) != q for q, f in fracs.items()):
        # no common step to trust: rank memory by whole GB, rounded up
        return {q: int(-(-q // 1)) for q in values}
    step = Fraction(
        reduce(gcd, (f.numerator for f in fracs.values())),
        reduce(lcm, (f.denominator for f in fracs.values())),
    )
    out = {q: int(f / step) for q, f in fracs.items()}
    out[0.0] = 0
    return out


def _arrivals(rnd: Round) -> list[tuple[str, Spot]]:
    """Every instance a round creates: its moves' targets, its creates and restores."""
    return [(m.workload, m.target) for m in rnd.moves] + [(c.workload, c.target) for c in rnd.creates]


def _on(value: Any) -> bool:
    """A constant location (0/1) or a binary's loaded value, read as a bool."""
    v = value if isinstance(value, int) else value.value
    return v is not None and v > 0.5


def replay_error(instance: Instance, rounds: list[Round], target: dict[str, Spot]) -> str | None:
    """The first rule ``rounds`` break on the way from ``instance`` to ``target``, or None.

    The planner's own check (the independent one is :func:`mipopt.verifier.verify_plan`).
    """
    occ = Occupancy(instance, instance.current_placement().items())
    at: dict[str, Spot | None] = dict(instance.current_placement())
    for i, rnd in enumerate(rounds, 1):
        for d in rnd.drains:
            if at.get(d.workload) != d.source:
                return f"round {i}: {d.workload} is not at {d.source}"
            occ.release(d.workload, d.source)
            at[d.workload] = None
        for wid, spot in _arrivals(rnd):
            if not occ.fits(wid, spot):
                return f"round {i}: {wid} does not fit at {spot}"
            occ.hold(wid, spot)
        for c in rnd.creates:
            if at.get(c.workload) is not None:
                return f"round {i}: {c.workload} is created while it runs"
            at[c.workload] = c.target
        for mv in rnd.moves:
            if at.get(mv.workload) != mv.source:
                return f"round {i}: {mv.workload} is not at {mv.source}"
            occ.release(mv.workload, mv.source)
            at[mv.workload] = mv.target
    wrong = [w for w, spot in target.items() if at.get(w) != spot]
    return f"{wrong[0]} ends at {at.get(wrong[0])}, not {target[wrong[0]]}" if wrong else None


OBJECTIVES = ("disruptions", "rounds", "moves", "memory")
Mode = Literal["lex", "weighted"]


def exact_rounds(
    instance: Instance,
    target: dict[str, Spot],
    *,
    time_limit_s: float,
    solver: str = "highs",
    mode: Mode = "lex",
    max_rounds: int | None = None,
) -> tuple[list[Round], str, str]:
    """The lexicographically best rounds (disruptions, rounds, extra moves, memory moved).

    Parameters
    ----------
    instance
        Its running workloads are where the plan starts.
    target
        A valid placement of every workload to run at the end (the caller verifies it).
    time_limit_s
        For the whole call; at the limit the best plan found so far is returned.
    solver
        ``highs`` or ``cpsat``.
    mode
        ``lex``: one solve per objective, each keeping the earlier optima (the default:
        each stage's objective moves in whole steps, so the solver rounds its bounds up);
        ``weighted``: one solve of the weighted sum (:attr:`MigrationModel.weights`).
    max_rounds
        R; None for :func:`round_budget` of the graph plan.

    Returns
    -------
    rounds, method, message
        The plan's rounds; ``exact / <solver>`` (``graph`` when the graph plan is
        returned instead); what was proven, the model's size, and any fallback.
    """
    if mode not in ("lex", "weighted"):
        raise ValueError(f"mode must be 'lex' or 'weighted', got {mode!r}")
    t0 = time.perf_counter()
    name = f"exact / {solver}"
    graph = graph_rounds(instance, target, "create-first")
    if not graph:
        return [], name, "optimal: nothing to move or create"
    budget = max_rounds if max_rounds is not None else round_budget(graph)
    extra: dict[str, list[Spot]] = {}
    for rnd in graph:
        for mv in rnd.moves:
            if mv.park:
                extra.setdefault(mv.workload, []).append(mv.target)
    mm = build_migration_model(instance, target, budget, extra_spots=extra)
    backend = get_backend(solver)
    size = f"{mm.stats['variables']} variables, {mm.stats['constraints']} rows, R={budget}"
    if len(graph) > budget:
        size += f" (the graph plan's {len(graph)} rounds do not fit)"
    graph_key = plan_key(instance, graph)

    if mode == "weighted":
        stages = ["weighted"]
    else:
        stages = [n for n in OBJECTIVES if not isinstance(mm.objectives[n], int | float)]
    incumbent: list[Round] | None = graph if len(graph) <= budget else None
    best: list[Round] | None = None  # the model's own best plan so far
    kept: dict[str, int] = {}  # optima of the stages solved
    notes: list[str] = []
    timing: list[str] = []  # per stage solved: its solver time
    proven = True
    mm.model.lex_keep = pyo.ConstraintList()
    for i, stage in enumerate(stages):
        m = mm.model
        expr = mm.weighted() if stage == "weighted" else mm.objectives[stage]
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(expr=expr, sense=pyo.minimize)
        start = mm.warm_start(incumbent) if incumbent and backend.capabilities.supports_warm_start else None
        left = max(time_limit_s - (time.perf_counter() - t0), 0.01)
        result = backend.solve(m, SolverOptions(time_limit_s=left, mip_rel_gap=0.0, warm_start=start))
        if result.status is Status.NONE:
            notes.append(f"{stage} stage: {result.termination.value} {result.message}".strip())
            proven = False
            break
        rounds = mm.decode()
        error = replay_error(instance, rounds, target)
        if error is not None:  # a decoding or tolerance fault: never hand out a broken plan
            notes.append(f"{stage} stage: plan rejected by the replay ({error})")
            proven = False
            break
        best = incumbent = rounds
        timing.append(f"{stage} {result.runtime_s:.2f} s")
        if result.termination is not Termination.OPTIMAL:
            gap = "" if result.gap is None else f", gap {result.gap:.3g}"
            rest = stages[i + 1 :]
            notes.append(
                f"incumbent, not proven optimal ({stage} stage: {result.termination.value}{gap}"
                + (f"; not optimized: {', '.join(rest)})" if rest else ")")
            )
            proven = False
            break
        if i + 1 < len(stages):
            kept[stage] = round(float(pyo.value(expr)))
            if stage == "rounds" and kept[stage] < mm.rounds:
                # used rounds come first, so a model of that many rounds holds every plan
                # left; it is smaller, and the later stages solve faster on it
                mm = build_migration_model(instance, target, kept[stage], extra_spots=extra)
                size += f", then R={mm.rounds} ({mm.stats['variables']} variables)"
                mm.model.lex_keep = pyo.ConstraintList()
                for name_, value in kept.items():
                    if name_ != "rounds":
                        mm.model.lex_keep.add(mm.objectives[name_] <= value)
            else:
                m.lex_keep.add(expr <= kept[stage])

    if best is None:
        return graph, "graph", f"exact planner found no plan ({'; '.join(notes)}; {size}): graph plan"
    key = plan_key(instance, best)
    if key > graph_key:  # an unproven incumbent can be worse than the start it was given
        return (
            graph,
            "graph",
            (
                f"exact plan {_show(key)} worse than the graph plan {_show(graph_key)} "
                f"({'; '.join(notes)}; {size})"
            ),
        )
    if proven:
        head = f"optimal within {budget} rounds" if any(r.drains for r in graph) else "optimal"
    else:
        head = "; ".join(notes)
    solves = f"; {', '.join(timing)}" if timing else ""
    return best, name, f"{head}: {_show(key)} (graph: {_show(graph_key)}); {size}{solves}"


def _show(key: Key) -> str:
    return f"{key[0]} disruptions, {key[1]} rounds, {key[2]} extra moves, {key[3]:g} GB moved"
