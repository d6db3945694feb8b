"""Migration planner: from an instance's current placement to a target, in safe ordered rounds.

:func:`plan_migration` turns a target (a :class:`~mipopt.instance.Solution` of any method,
or a placement) into a :class:`~mipopt.migrate.plan.Plan`: rounds of moves, drains and
creates, each round valid at its largest instant (:mod:`mipopt.migrate.plan` defines the
semantics). The graph planner (:mod:`mipopt.migrate.graph`) handles any size; the exact
planner (:mod:`mipopt.migrate.optimal`) optimizes small plans with a time-indexed model.
Objectives, in order: no disruption if avoidable, fewest rounds, fewest extra (parking)
moves, least memory moved. :func:`mipopt.verifier.verify_plan` replays a plan step by step,
independently of the planner.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Literal

from mipopt.errors import InstanceError
from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.migrate.graph import graph_rounds
from mipopt.migrate.plan import (
    SEMANTICS,
    Create,
    Drain,
    Move,
    Plan,
    Round,
    Semantics,
    Spot,
    plan_from_dict,
)
from mipopt.state.occupancy import MOVE_KINDS
from mipopt.verifier import evaluate, solution_for, verify

__all__ = [
    "METHODS",
    "SEMANTICS",
    "Create",
    "Drain",
    "Move",
    "Plan",
    "Round",
    "plan_from_dict",
    "plan_metrics",
    "plan_migration",
]

Method = Literal["graph", "exact", "auto"]
METHODS = ("graph", "exact", "auto")
#: ``auto`` plans exactly up to this many workloads to move or create, with the graph planner above.
AUTO_EXACT_ITEMS = 8


def plan_migration(
    instance: Instance,
    target: Solution | Mapping[str, Spot],
    *,
    semantics: Semantics = "create-first",
    method: Method = "graph",
    time_limit_s: float = 30.0,
) -> Plan:
    """Plan the rounds that take ``instance``'s running workloads to ``target``.

    Parameters
    ----------
    instance
        Its running workloads are where the plan starts.
    target
        A solution for ``instance`` (any method's), or a placement: workload id ->
        (GPU id, start) of every workload to run at the end (running ones included;
        new workloads left out are not created).
    semantics
        ``create-first`` (non-disruptive moves) or ``destroy-first`` (every move drains).
    method
        ``graph``, ``exact`` (time-indexed model; small plans) or ``auto``.
    time_limit_s
        For the exact planner.

    Raises
    ------
    InstanceError
        When the target breaks a rule of ``instance`` (naming ``target`` and the rule),
        or an argument is unknown.

    Examples
    --------
    Two instances swap starts on one GPU: one parks on the free GPU first.

    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/swap.json")
    >>> plan = mipopt.plan_migration(inst, mipopt.load_solution("instances/swap.target.json"))
    >>> [[(m.workload, m.target, m.park) for m in r.moves] for r in plan.rounds]
    [[('a', ('g1', 0), True)], [('b', ('g0', 0), False)], [('a', ('g0', 4), False)]]
    >>> from mipopt.verifier import verify_plan
    >>> verify_plan(inst, plan).valid
    True
    """
    if semantics not in SEMANTICS:
        raise InstanceError("semantics", f"must be one of {', '.join(SEMANTICS)}, got {semantics!r}")
    if method not in METHODS:
        raise InstanceError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    t0 = time.perf_counter()
    placed = _checked_target(instance, target)
    current = instance.current_placement()
    items = sum(1 for wid, spot in placed.items() if current.get(wid) != spot)
    exact = method == "exact" or (
        method == "auto" and semantics == "create-first" and items <= AUTO_EXACT_ITEMS
    )
    if exact and semantics == "create-first":
        from mipopt.migrate.optimal import exact_rounds

        rounds, name, message = exact_rounds(instance, placed, time_limit_s=time_limit_s)
    else:
        rounds, name, message = graph_rounds(instance, placed, semantics), "graph", ""
    disrupted = tuple(d.workload for r in rounds for d in r.drains)
    return Plan(
        instance=instance.name,
        semantics=semantics,
        method=name,
        rounds=tuple(rounds),
        final=dict(placed),
        disrupted=disrupted,
        metrics=plan_metrics(instance, rounds, placed),
        runtime_s=time.perf_counter() - t0,
        message=message,
    )


def _checked_target(instance: Instance, target: Solution | Mapping[str, Spot]) -> dict[str, Spot]:
    if not isinstance(target, Solution):
        target = solution_for(
            instance, dict(target), method="target", termination=Termination.COMPLETED, status=Status.FEASIBLE
        )
    report = verify(instance, target)
    if not report.valid:
        raise InstanceError("target", f"not a valid placement for {instance.name!r}: {report.violations[0]}")
    if target.status is Status.NONE:
        raise InstanceError("target", "the solution has no placement (status 'none')")
    return target.placed()


def plan_metrics(
    instance: Instance, rounds: list[Round] | tuple[Round, ...], target: Mapping[str, Spot]
) -> dict[str, float]:
    """Counts of a plan.

    ``rounds``; ``moves`` (every running workload's relocation: moves, parks and restores);
    ``extra_moves`` (parks: moves a direct path would not need); ``disruptive_moves``
    (drains); ``creates`` (new workloads); ``moved_memory_slots`` / ``moved_memory_gb``
    (memory of every relocation); ``moves_<kind>`` by kind; ``sequential_migrations`` (IBM
    Table 3, of the target: :func:`mipopt.verifier.evaluate`).
    """
    kinds: Counter[str] = Counter()
    slots = 0
    gb = 0.0
    parks = drains = creates = 0
    for r in rounds:
        drains += len(r.drains)
        relocations: list[tuple[str, str, str]] = [(m.workload, m.target[0], m.kind) for m in r.moves]
        relocations += [(c.workload, c.target[0], c.kind) for c in r.creates if c.kind is not None]
        creates += sum(1 for c in r.creates if c.source is None)
        parks += sum(1 for m in r.moves if m.park)
        for wid, gpu_id, kind in relocations:
            kinds[kind] += 1
            profile = instance.profile_on(instance.workload(wid), instance.gpu(gpu_id).model)
            assert profile is not None
            slots += profile.memory_slots
            gb += profile.memory_gb
    _, metrics = evaluate(instance, dict(target))
    return {
        "rounds": len(rounds),
        "moves": sum(kinds.values()),
        "extra_moves": parks,
        "disruptive_moves": drains,
        "creates": creates,
        "moved_memory_slots": slots,
        "moved_memory_gb": gb,
        **{f"moves_{k}": kinds[k] for k in MOVE_KINDS},
        "sequential_migrations": metrics["sequential_migrations"],
    }
