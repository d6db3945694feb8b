"""What every batch heuristic returns: its placement, packaged and priced by the verifier."""

from __future__ import annotations

import time
from collections.abc import Mapping

from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.verifier import solution_for


def completed(
    instance: Instance,
    placed: dict[str, tuple[str, int]],
    method: str,
    t0: float,
    message: str = "",
    profiles: Mapping[str, str] | None = None,
) -> Solution:
    """A heuristic's result: ``termination`` completed, ``status`` feasible, runtime since ``t0``.

    New workloads missing from ``placed`` are listed as rejected; ``message`` says what the
    heuristic wants known (the requests its budget left out: :func:`mipopt.instance.budget.budget_note`);
    ``profiles`` the profiles it chose for memory-sized workloads (default: the smallest that fits).
    """
    return solution_for(
        instance,
        placed,
        method=method,
        termination=Termination.COMPLETED,
        status=Status.FEASIBLE,
        runtime_s=time.perf_counter() - t0,
        message=message,
        profiles=profiles,
    )
