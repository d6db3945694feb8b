"""The solver interface: options, result, capability flags and the backend protocol.

A formulation builds a Pyomo ``ConcreteModel``; a :class:`Backend` solves it and loads the
variable values back into the model, so the formulation can decode them. The backends know
nothing of formulations and the formulations nothing of the backends.

Outcomes (:class:`SolveResult`) keep why the solver stopped (``termination``) apart from what it
found (``status``), as STYLE.md asks:

==========================  ===============  =========  ===================================
solver outcome              termination      status     notes
==========================  ===============  =========  ===================================
proven optimum              OPTIMAL          OPTIMAL    within ``mip_rel_gap``
time limit, incumbent       TIME_LIMIT       FEASIBLE   objective, bound and gap set
time limit, no incumbent    TIME_LIMIT       NONE
proven infeasible           INFEASIBLE       NONE
unbounded                   ERROR            NONE       ``unbounded=True``, message says so
anything else               ERROR            FEASIBLE   if an incumbent exists, else NONE
                                             or NONE
==========================  ===============  =========  ===================================

:class:`mipopt.instance.Termination` has no ``unbounded`` member and a placement model is never
unbounded when built correctly, so an unbounded model is a modelling error: it is reported as
``ERROR`` with ``unbounded=True`` and the message ``"unbounded: ..."``. Both HiGHS (MIP presolve)
and CP-SAT often only prove "infeasible or unbounded"; the backends then solve the model once more
without its objective to tell the two apart (feasible means unbounded).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import pyomo.environ as pyo

from mipopt.instance import Status, Termination


class UnsupportedModelError(ValueError):
    """A backend cannot solve this model as written (for example, continuous variables on CP-SAT)."""


@dataclass(frozen=True, slots=True)
class SolverOptions:
    """How to run a backend.

    Parameters
    ----------
    time_limit_s
        Wall-clock limit in seconds; None for no limit.
    threads
        Worker threads; None for the solver's default.
    seed
        Random seed passed to the solver (HiGHS ``random_seed``, CP-SAT ``random_seed``).
    mip_rel_gap
        Relative gap at which the solver may stop and call its incumbent optimal. None keeps the
        solver's default (HiGHS 1e-4, CP-SAT 0); pass 0 for a proof.
    verbose
        Print the solver log.
    warm_start
        Starting values by Pyomo variable name (``var.name``, e.g. ``"x[1,2]"``), or None. Used only
        by backends whose capabilities declare ``supports_warm_start``.
    """

    time_limit_s: float | None = None
    threads: int | None = None
    seed: int = 0
    mip_rel_gap: float | None = None
    verbose: bool = False
    warm_start: Mapping[str, float] | None = None

    def __post_init__(self) -> None:
        if self.time_limit_s is not None and not self.time_limit_s > 0:
            raise ValueError(f"time_limit_s must be positive, got {self.time_limit_s!r}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads!r}")
        if self.seed < 0:
            raise ValueError(f"seed must be non-negative, got {self.seed!r}")
        if self.mip_rel_gap is not None and not self.mip_rel_gap >= 0:
            raise ValueError(f"mip_rel_gap must be non-negative, got {self.mip_rel_gap!r}")


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a backend can do, declared so callers can choose without trying.

    Attributes
    ----------
    supports_warm_start
        Accepts :attr:`SolverOptions.warm_start`.
    supports_threads
        Honours :attr:`SolverOptions.threads`.
    supports_time_limit
        Honours :attr:`SolverOptions.time_limit_s`.
    integer_only
        Every variable must be integer (or binary); continuous ones raise
        :class:`UnsupportedModelError`.
    finite_bounds_only
        Every variable needs finite lower and upper bounds; others raise
        :class:`UnsupportedModelError`. Such a backend never meets an unbounded model.
    reports_bound
        Reports a best bound (and so a gap) when stopped early.
    """

    supports_warm_start: bool
    supports_threads: bool
    supports_time_limit: bool
    integer_only: bool
    finite_bounds_only: bool
    reports_bound: bool


@dataclass(frozen=True, slots=True)
class SolveResult:
    """What a backend returns; the variable values themselves are loaded into the Pyomo model.

    Attributes
    ----------
    termination
        Why the solver stopped: OPTIMAL, TIME_LIMIT, INFEASIBLE or ERROR (see the module table).
    status
        What it found: OPTIMAL, FEASIBLE or NONE. The model's variables hold the solution exactly
        when this is not NONE.
    objective
        Objective value of the solution, in the model's own sense; None without a solution.
    bound
        Best proven bound on the optimum (an upper bound when maximizing); None if unknown.
    gap
        Relative gap ``|objective - bound| / |objective|`` (0 when they are equal, ``inf`` when
        the objective is 0 and the bound is not); None when either is missing.
    runtime_s
        Wall-clock time of the backend call, model translation included.
    solver
        Backend name (``"highs"``, ``"cpsat"``).
    message
        A plain sentence about the outcome, e.g. ``"optimal"``, ``"time limit reached"``,
        ``"unbounded: the objective improves without limit"``.
    unbounded
        True when the model was shown to be unbounded.
    """

    termination: Termination
    status: Status
    objective: float | None
    bound: float | None
    gap: float | None
    runtime_s: float
    solver: str
    message: str = ""
    unbounded: bool = False

    @property
    def has_solution(self) -> bool:
        """True when the model's variables hold a feasible solution."""
        return self.status is not Status.NONE


@runtime_checkable
class Backend(Protocol):
    """A MIP solver behind the common interface."""

    name: str
    capabilities: Capabilities

    def solve(self, model: pyo.ConcreteModel, options: SolverOptions | None = None) -> SolveResult:
        """Solve ``model`` and load the solution (if any) into its variables.

        Parameters
        ----------
        model
            A linear Pyomo model with exactly one active objective.
        options
            Run options; None for the defaults.

        Returns
        -------
        SolveResult

        Raises
        ------
        UnsupportedModelError
            If the model uses something the backend cannot handle.
        """
        ...


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """The relative gap between an incumbent and a bound, as defined on :class:`SolveResult`.

    Parameters
    ----------
    objective, bound
        Incumbent objective and best bound; either may be None or infinite.

    Returns
    -------
    float or None
        None when either value is missing.
    """
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return math.inf
    diff = abs(objective - bound)
    if diff <= 1e-9 * max(1.0, abs(objective)):
        return 0.0
    if objective == 0:
        return math.inf
    return diff / abs(objective)


def single_objective(model: pyo.ConcreteModel) -> pyo.Objective:
    """The one active objective of ``model``.

    Raises
    ------
    UnsupportedModelError
        If the model has no active objective or more than one.
    """
    objectives = list(model.component_data_objects(pyo.Objective, active=True, descend_into=True))
    if len(objectives) != 1:
        raise UnsupportedModelError(
            f"the model must have exactly one active objective, found {len(objectives)}"
            + (f" ({', '.join(o.name for o in objectives)})" if objectives else "")
        )
    return objectives[0]


UNBOUNDED_MESSAGE = "unbounded: the objective improves without limit"
