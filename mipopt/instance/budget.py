"""How much disruption of running workloads a caller accepts: a budget on restarts and GB moved.

A running workload whose GPU or start changes is stopped and started again in a new
instance (a MIG instance cannot move live): it is *restarted*. A :class:`Budget` bounds the
count of restarted running workloads (``max_restarts``, whatever their
``migration_weight``) and the memory moved to another GPU (``max_moved_gb``, the
verifier's ``moved_memory_gb``: IBM's migration size in GB). Every method that can move
running workloads takes one and holds it; one that cannot refuses it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

from mipopt.errors import InstanceError


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
