"""Migration planner: from an instance's current placement to a target, in safe ordered rounds.

:func:`plan_migration` turns a target (a :class:`~mipopt.instance.Solution` of any method,
or a placement) into a :class:`~mipopt.migrate.plan.Plan`: rounds of moves, drains and
creates, each round valid at its largest instant (:mod:`mipopt.migrate.plan` defines the
semantics). The graph planner (:mod:`mipopt.migrate.graph`) handles any size; the exact
planner (:mod:`mipopt.migrate.optimal`) optimizes small plans with a time-indexed model.
Objectives, in order: no disruption if avoidable, fewest rounds, fewest extra (parking)
moves, least memory moved. :func:`mipopt.verifier.verify_plan` replays a plan step by step,
independently of the planner.

A budget (``max_restarts``, ``max_moved_gb``) bounds what the plan restarts: every relocation
of a running workload (a move, a park, the restore of a drained one) starts it in a new
instance, so a plan's restarts are its ``moves`` (the target's restarted workloads plus one
per park), and its GB moved are its ``moved_between_gpus_gb`` (every relocation from one GPU
to another, parks included). Within a budget the planner parks only as much as it allows and
drains the other breakers of cycles; a target that alone breaks the budget has no plan.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Mapping
from typing import Literal

from mipopt.errors import InstanceError, ParameterTypeError
from mipopt.instance import Budget, Instance, Solution, Status, Termination
from mipopt.instance.budget import disruption
from mipopt.io import instance_argument
from mipopt.migrate.graph import ParkLimit, graph_rounds
from mipopt.migrate.plan import (
    SEMANTICS,
    Create,
    Drain,
    Move,
    Plan,
    Round,
    Semantics,
    Spot,
    load_plan,
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
    "load_plan",
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
    max_restarts: int | None = None,
    max_moved_gb: float | None = None,
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
    max_restarts, max_moved_gb
        A :class:`~mipopt.instance.Budget` on the plan: at most this many restarts (its
        ``moves``: one per relocation of a running workload, so a workload parked and then
        moved to its target counts twice) and this many GB moved between GPUs (its
        ``moved_between_gpus_gb``, each hop of a park too). A plan over the budget is planned
        again by the graph planner with only the parks the budget leaves, the other breakers of
        cycles drained (a drain restarts its workload once, at its target); the message says so.

    Raises
    ------
    InstanceError
        When the target breaks a rule of ``instance`` (naming ``target`` and the rule),
        an argument is unknown, or the budget is malformed or the target alone breaks it
        (naming ``max_restarts`` or ``max_moved_gb``: no plan restarts fewer workloads, or
        moves fewer GB, than the target changes).

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

    The park restarts ``a`` once more: with one restart fewer, ``a`` is drained instead.

    >>> plan.metrics["moves"], plan.metrics["extra_moves"]
    (3, 1)
    >>> tight = mipopt.plan_migration(inst, mipopt.load_solution("instances/swap.target.json"), max_restarts=2)
    >>> tight.metrics["moves"], tight.metrics["extra_moves"], tight.disrupted
    (2, 0, ('a',))
    """
    instance = instance_argument(instance)
    if semantics not in SEMANTICS:
        raise InstanceError("semantics", f"must be one of {', '.join(SEMANTICS)}, got {semantics!r}")
    if method not in METHODS:
        raise InstanceError("method", f"must be one of {', '.join(METHODS)}, got {method!r}")
    budget = Budget(max_restarts, max_moved_gb)
    t0 = time.perf_counter()
    placed, profiles = _checked_target(instance, target)
    given = instance
    try:  # plan on the instance whose memory-sized workloads ask for the profiles chosen
        instance = instance.at_profiles(placed, profiles)
    except InstanceError as err:
        raise InstanceError("target", f"{err.path}: {err.rule}") from None
    if not budget.unlimited:
        _check_target_budget(budget, disruption(instance, placed))
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
    if not budget.unlimited:
        over = budget.exceeded(_plan_cost(instance, rounds))
        if over is not None:
            need = disruption(instance, placed)
            limit = ParkLimit(
                None if budget.max_restarts is None else int(budget.max_restarts - need["restarted"]),
                None if budget.max_moved_gb is None else budget.max_moved_gb - need["moved_memory_gb"],
            )
            rounds = graph_rounds(instance, placed, semantics, limit)
            parks = sum(m.park for r in rounds for m in r.moves)
            first = f"; the {name} plan: {message}" if message else ""
            message = (
                f"budget {budget}: the {name} plan broke it ({over}), so a graph plan with "
                f"{parks} park{'' if parks == 1 else 's'}, the other breakers of cycles drained{first}"
            )
            name = "graph"
            assert budget.allows(_plan_cost(instance, rounds)), "parks limited, drains restart once"
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
        profiles=profiles,
        _instance=given,
    )


def _check_target_budget(budget: Budget, need: Mapping[str, float]) -> None:
    """Refuse, naming the limit, a budget that the target's own restarts or GB break."""
    if budget.max_restarts is not None and need["restarted"] > budget.max_restarts:
        raise InstanceError(
            "max_restarts",
            f"no plan fits: the target restarts {need['restarted']:g} running workloads, "
            f"more than {budget.max_restarts}",
        )
    if budget.max_moved_gb is not None and need["moved_memory_gb"] > budget.max_moved_gb + 1e-9:
        raise InstanceError(
            "max_moved_gb",
            f"no plan fits: the target moves {need['moved_memory_gb']:g} GB to other GPUs, "
            f"more than {budget.max_moved_gb:g}",
        )


def _plan_cost(instance: Instance, rounds: list[Round]) -> dict[str, float]:
    """What a plan costs of a budget: ``restarted`` (its relocations) and ``moved_memory_gb``
    (its GB moved between GPUs), under the names :meth:`Budget.exceeded` reads."""
    metrics = plan_metrics(instance, rounds, None)
    return {"restarted": metrics["moves"], "moved_memory_gb": metrics["moved_between_gpus_gb"]}


def _checked_target(
    instance: Instance, target: Solution | Mapping[str, Spot]
) -> tuple[dict[str, Spot], dict[str, str]]:
    """The target's placement, and the profiles it chose for new memory-sized workloads where
    they are not the smallest that fits (those a plan must create by name)."""
    if not isinstance(target, Solution | Mapping):
        raise ParameterTypeError(
            "target",
            f"must be a Solution or a placement (workload id -> (GPU id, start)), got {type(target).__name__}",
        )
    if not isinstance(target, Solution):
        target = solution_for(
            instance, dict(target), method="target", termination=Termination.COMPLETED, status=Status.FEASIBLE
        )
    report = verify(instance, target)
    if not report.valid:
        raise InstanceError("target", f"not a valid placement for {instance.name!r}: {report.violations[0]}")
    if target.status is Status.NONE:
        raise InstanceError("target", "the solution has no placement (status 'none')")
    placed = target.placed()
    profiles = {}
    for wid, name in target.profiles().items():
        default = instance.profile_on(instance.workload(wid), instance.gpu(placed[wid][0]).model)
        if default is None or default.name != instance.gpu(placed[wid][0]).model.profile(name).name:
            profiles[wid] = name
    return placed, profiles


def plan_metrics(
    instance: Instance, rounds: list[Round] | tuple[Round, ...], target: Mapping[str, Spot] | None
) -> dict[str, float]:
    """Counts of a plan.

    ``rounds``; ``moves`` (every running workload's relocation: moves, parks and restores;
    each restarts the workload, so these are the plan's restarts); ``extra_moves`` (parks:
    moves a direct path would not need); ``disruptive_moves`` (drains); ``creates`` (new
    workloads); ``moved_memory_slots`` / ``moved_memory_gb`` (memory of every relocation);
    ``moved_between_gpus_gb`` (memory of the relocations from one GPU to another: what a
    budget's ``max_moved_gb`` counts); ``moves_<kind>`` by kind; ``sequential_migrations``
    (IBM Table 3, of the target: :func:`mipopt.verifier.evaluate`; left out when ``target``
    is None).
    """
    kinds: Counter[str] = Counter()
    slots = 0
    gb = across = 0.0
    parks = drains = creates = 0
    for r in rounds:
        drains += len(r.drains)
        relocations: list[tuple[str, Spot, str, str]] = [
            (m.workload, m.source, m.target[0], m.kind) for m in r.moves
        ]
        relocations += [
            (c.workload, c.source, c.target[0], c.kind)
            for c in r.creates
            if c.kind is not None and c.source is not None
        ]
        creates += sum(1 for c in r.creates if c.source is None)
        parks += sum(1 for m in r.moves if m.park)
        for wid, source, gpu_id, kind in relocations:
            kinds[kind] += 1
            profile = instance.profile_on(instance.workload(wid), instance.gpu(gpu_id).model)
            assert profile is not None
            slots += profile.memory_slots
            gb += profile.memory_gb
            if source[0] != gpu_id:
                across += profile.memory_gb
    sequential = (
        {}
        if target is None
        else {"sequential_migrations": evaluate(instance, dict(target))[1]["sequential_migrations"]}
    )
    return {
        "rounds": len(rounds),
        "moves": sum(kinds.values()),
        "extra_moves": parks,
        "disruptive_moves": drains,
        "creates": creates,
        "moved_memory_slots": slots,
        "moved_memory_gb": gb,
        "moved_between_gpus_gb": across,
        **{f"moves_{k}": kinds[k] for k in MOVE_KINDS},
        **sequential,
    }
