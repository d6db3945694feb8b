"""How much disruption of running workloads a caller accepts: a budget on restarts and GB moved.

A running workload whose GPU or start changes is stopped and started again in a new
instance (a MIG instance cannot move live): it is *restarted*. A :class:`Budget` bounds the
count of restarted running workloads (``max_restarts``, whatever their
``migration_weight``) and the memory moved to another GPU (``max_moved_gb``, the
verifier's ``moved_memory_gb``: IBM's migration size in GB). Every method that can move
running workloads takes one and holds it; one that cannot refuses it.

The methods measure a placement against a budget with :func:`disruption` (the verifier
keeps its own count, :func:`mipopt.verifier.evaluate`). A heuristic that leaves a request
out because placing it needed moves its budget did not allow says so in its solution's
``message`` (:func:`budget_note`); :func:`left_out_by_budget` reads that back, for the
rejection reasons.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass

from mipopt.errors import InstanceError
from mipopt.instance.types import Instance


@dataclass(frozen=True, slots=True)
class Budget:
    """At most ``max_restarts`` running workloads restarted and ``max_moved_gb`` GB moved; None: no limit.

    Examples
    --------
    >>> b = Budget(max_restarts=3)
    >>> b.exceeded({"restarted": 4, "moved_memory_gb": 40.0})
    'restarts 4 > --max-restarts 3'
    >>> Budget().unlimited, str(Budget(max_restarts=3, max_moved_gb=80))
    (True, 'at most 3 restarts and 80 GB moved')
    >>> Budget(max_restarts=-1)
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: max_restarts: must be a whole number >= 0, got -1
    """

    max_restarts: int | None = None
    max_moved_gb: float | None = None

    def __post_init__(self) -> None:
        n = self.max_restarts
        if n is not None and (isinstance(n, bool) or not isinstance(n, int) or n < 0):
            raise InstanceError("max_restarts", f"must be a whole number >= 0, got {n!r}")
        gb = self.max_moved_gb
        if gb is not None and (
            isinstance(gb, bool) or not isinstance(gb, int | float) or not math.isfinite(gb) or gb < 0
        ):
            raise InstanceError("max_moved_gb", f"must be a finite number >= 0, got {gb!r}")

    @property
    def unlimited(self) -> bool:
        return self.max_restarts is None and self.max_moved_gb is None

    def exceeded(self, metrics: Mapping[str, float]) -> str | None:
        """Why the verifier's ``metrics`` of a placement break the budget, or None.

        The reason names the CLI flag; :meth:`allows` is the same test as a bool.
        """
        if self.max_restarts is not None and metrics["restarted"] > self.max_restarts:
            return f"restarts {metrics['restarted']:g} > --max-restarts {self.max_restarts}"
        if self.max_moved_gb is not None and metrics["moved_memory_gb"] > self.max_moved_gb + 1e-9:
            return f"moved {metrics['moved_memory_gb']:g} GB > --max-moved-gb {self.max_moved_gb:g}"
        return None

    def allows(self, metrics: Mapping[str, float]) -> bool:
        return self.exceeded(metrics) is None

    def __str__(self) -> str:
        parts = []
        if self.max_restarts is not None:
            parts.append(f"{self.max_restarts} restarts")
        if self.max_moved_gb is not None:
            parts.append(f"{self.max_moved_gb:g} GB moved")
        return "at most " + " and ".join(parts) if parts else "no limit"


#: No limit on restarts or GB moved.
UNLIMITED = Budget()


def disruption(instance: Instance, placed: Mapping[str, tuple[str, int]]) -> dict[str, float]:
    """What ``placed`` costs of a budget: ``restarted`` (running workloads of ``instance`` whose
    GPU or start differs in ``placed``) and ``moved_memory_gb`` (memory of those on another GPU,
    their profile sized on that GPU's model), as :func:`mipopt.verifier.evaluate` counts them.

    A workload counts once however often it moved on the way, and not at all when it ends where
    it ran; a running workload missing from ``placed`` counts in neither.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/swap.json")
    >>> disruption(inst, mipopt.load_solution("instances/swap.target.json").placed())
    {'restarted': 2, 'moved_memory_gb': 0.0}
    """
    restarted = 0
    moved_gb = 0.0
    for w in instance.running:
        where = placed.get(w.id)
        if where is None or w.placement is None or where == (w.placement.gpu, w.placement.start):
            continue
        restarted += 1
        if where[0] != w.placement.gpu:
            profile = instance.profile_on(w, instance.gpu(where[0]).model)
            moved_gb += 0.0 if profile is None else profile.memory_gb
    return {"restarted": restarted, "moved_memory_gb": moved_gb}


#: What :func:`budget_note` writes first: :func:`left_out_by_budget` looks for it.
LEFT_OUT = "left out by the budget"


def budget_note(budget: Budget, left_out: Mapping[str, str]) -> str:
    """One part of a solution's ``message``: the requests ``budget`` left out, and why.

    ``left_out`` maps a request's id to why (``placing it needed ...``); it is written as a
    JSON object after :data:`LEFT_OUT` and the budget, so ids with any characters read back
    unchanged (:func:`left_out_by_budget`). Empty when nothing was left out.

    Examples
    --------
    >>> budget_note(Budget(max_restarts=0), {"w1": "placing it needed 1 restart"})
    'left out by the budget (at most 0 restarts): {"w1": "placing it needed 1 restart"}'
    """
    if not left_out:
        return ""
    return f"{LEFT_OUT} ({budget}): {json.dumps(dict(left_out), ensure_ascii=False)}"


def left_out_by_budget(message: str) -> dict[str, str]:
    """The requests a method left out because placing them needed moves its budget did not
    allow, read from its solution's ``message`` (:func:`budget_note`): id -> why.

    For the rejection reasons: a rejected request listed here was not placed because of the
    budget (``--max-restarts``, ``--max-moved-gb``); the why names the budget's limit.

    Examples
    --------
    >>> note = budget_note(Budget(max_moved_gb=10), {"a; b": "placing it needed 20 GB moved"})
    >>> left_out_by_budget("profit 3; " + note + "; indexing: ok")
    {'a; b': 'placing it needed 20 GB moved'}
    >>> left_out_by_budget("profit 3")
    {}
    """
    at = message.find(LEFT_OUT + " (")
    if at < 0:
        return {}
    brace = message.find(": {", at)
    if brace < 0:
        return {}
    try:
        found, _ = json.JSONDecoder().raw_decode(message, brace + 2)
    except json.JSONDecodeError:
        return {}
    if not isinstance(found, dict):
        return {}
    return {str(k): str(v) for k, v in found.items()}
