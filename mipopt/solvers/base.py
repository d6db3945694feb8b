"""The solver interface: options, result, capability flags and the backend protocol.

A formulation builds a Pyomo ``ConcreteModel``; a :class:`Backend` solves it and loads the
variable values back into the model, so the formulation can decode them. The backends know
nothing of formulations and the formulations nothing of the backends.

Outcomes (:class:`SolveResult`) keep why the solver stopped (``termination``) apart from what it
found (``status``), as STYLE.md asks:

=================================  ============  =========  ===========================================
solver outcome                     termination   status     notes
=================================  ============  =========  ===========================================
proven optimum                     OPTIMAL       OPTIMAL    bound meets objective (:func:`is_proven`)
stopped within the allowed gap     GAP_LIMIT     FEASIBLE   the real bound and gap (gap > 0)
time limit or deadline, incumbent  TIME_LIMIT    FEASIBLE   objective, bound and gap set
time limit or deadline, none       TIME_LIMIT    NONE
stop flag set, incumbent           INTERRUPTED   FEASIBLE   objective, bound and gap set
stop flag set, none                INTERRUPTED   NONE
objective target or node limit     COMPLETED     FEASIBLE   message says which; status OPTIMAL if the
                                                 or NONE    bound proves it (HiGHS only)
proven infeasible                  INFEASIBLE    NONE
unbounded                          ERROR         NONE       ``unbounded=True``, message says so
anything else                      ERROR         FEASIBLE   if an incumbent exists, else NONE
                                                 or NONE
=================================  ============  =========  ===========================================

A solver that stops because the gap is within ``mip_rel_gap`` (or within its own default
tolerance: HiGHS stops at 1e-4) calls its incumbent optimal; unless the bound meets the objective
that is reported as ``GAP_LIMIT``, never as a proven optimum.

Stopping from outside (:mod:`mipopt.solvers.stop`): a :class:`~mipopt.solvers.stop.StopFlag`
(Ctrl-C under :func:`~mipopt.solvers.stop.catch_sigint`) and a deadline are honoured by every
backend that declares ``supports_interrupt``, within :data:`~mipopt.solvers.stop.GRACE_S` of the
request however busy the solver is. If the flag is already set or the deadline already passed
when a backend is called, the solver is not started; a feasible warm start is then returned as
the incumbent (status FEASIBLE, no bound). A solver that does not stop within the grace period is
left to finish in the background, with a message that says so; the result is the last incumbent
it reported and its bound at that time (HiGHS), or the warm start if feasible (CP-SAT reports
nothing before it returns).

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
from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np
import pyomo.environ as pyo

from mipopt import _fields as f
from mipopt.executors import capped_threads
from mipopt.instance import Status, Termination

# re-exported: defined below the verifier, which checks a solution's gap and proof by the same test
from mipopt.instance.gaps import PROOF_ABS_TOL as PROOF_ABS_TOL
from mipopt.instance.gaps import is_proven as is_proven
from mipopt.instance.gaps import relative_gap as relative_gap
from mipopt.solvers.stop import REASON_INTERRUPTED, REASON_TIME_LIMIT, Limits, StopFlag

if TYPE_CHECKING:
    from mipopt.solvers.matrix import FloatArray, MatrixForm


class UnsupportedModelError(ValueError):
    """A backend cannot solve this model as written (for example, continuous variables on CP-SAT)."""


class UnsupportedOptionError(ValueError):
    """A backend cannot honour an option it was given (its :class:`Capabilities` say so)."""


@dataclass(frozen=True, slots=True)
class SolverOptions:
    """How to run a backend.

    Parameters
    ----------
    time_limit_s
        Wall-clock limit in seconds; None for no limit.
    threads
        Worker threads; None for the solver's default. More than the machine's cores
        is capped at their number, with a warning saying so (:func:`mipopt.executors.capped_threads`).
    seed
        Random seed passed to the solver (HiGHS ``random_seed``, CP-SAT ``random_seed``), from 0
        to 2,147,483,647 (32 bits, as CP-SAT takes it).
    mip_rel_gap
        Relative gap in [0, 1) at which the solver may stop and call its incumbent optimal. None
        keeps the solver's default (HiGHS 1e-4, CP-SAT 0); pass 0 for a proof.
    verbose
        Print the solver log.
    warm_start
        Starting values by Pyomo variable name (``var.name``, e.g. ``"x[1,2]"``), or None. Used only
        by backends whose capabilities declare ``supports_warm_start``.
    stop
        A cooperative stop request shared by all the stages of a run (see
        :mod:`mipopt.solvers.stop`): once set, a running solve returns its incumbent with
        termination INTERRUPTED and a solve not yet started does not start.
    deadline
        Absolute ``time.monotonic()`` seconds by which the backend call must return, for limits
        that span several calls. The effective limit is the earliest of ``time_limit_s`` (counted
        from the start of the call, model translation included), ``deadline`` and
        ``stop.deadline``; reaching it is termination TIME_LIMIT.
    objective_target
        Stop as soon as the incumbent is at least this good (at least this value when
        maximizing, at most when minimizing): HiGHS's ``objective_target``, not
        ``objective_bound``, which only cuts off dual simplex LP solves. Termination COMPLETED.
        Only for backends that declare ``supports_objective_target``.
    node_limit
        Stop after this many branch-and-bound nodes (HiGHS ``mip_max_nodes``). Termination
        COMPLETED. Only for backends that declare ``supports_node_limit``.
    companion
        A search that runs beside the solve on the compiled model (:class:`Companion`, e.g.
        :class:`mipopt.exact.lns.HostSearch`, or a second HiGHS run,
        :class:`mipopt.solvers.highs.HighsRival`): the better of its point and the solver's is
        the answer, the tighter of their bounds proves it, and the solve ends once the point
        meets the bound. HiGHS only; other backends ignore it.

    Raises
    ------
    InstanceError
        Naming the field: a bad time limit, thread count, seed or gap (the rules of
        ``mipopt._fields``, by which :func:`mipopt.solve` checks its options too).
    ParameterTypeError
        Naming the field: one of those of the wrong type (``threads=2.5``).
    """

    time_limit_s: float | None = None
    threads: int | None = None
    seed: int = 0
    mip_rel_gap: float | None = None
    verbose: bool = False
    warm_start: Mapping[str, float] | None = None
    stop: StopFlag | None = None
    deadline: float | None = None
    objective_target: float | None = None
    node_limit: int | None = None
    companion: Companion | None = None

    def __post_init__(self) -> None:
        if self.time_limit_s is not None:
            f.seconds_argument(self.time_limit_s, "time_limit_s")
        if self.threads is not None:
            f.count_argument(self.threads, "threads")
            object.__setattr__(self, "threads", capped_threads(self.threads, stacklevel=3))
        f.seed_argument(self.seed, "seed")
        if self.mip_rel_gap is not None:
            f.gap_argument(self.mip_rel_gap, "mip_rel_gap")
        if self.deadline is not None and math.isnan(self.deadline):
            raise ValueError("deadline must be a number, got nan")
        if self.objective_target is not None and not math.isfinite(self.objective_target):
            raise ValueError(f"objective_target must be finite, got {self.objective_target!r}")
        if self.node_limit is not None and (isinstance(self.node_limit, bool) or self.node_limit < 0):
            raise ValueError(f"node_limit must be a non-negative integer, got {self.node_limit!r}")

    def limits(self, start: float) -> Limits:
        """The stop flag and the effective deadline of a backend call that began at ``start``.

        Parameters
        ----------
        start
            ``time.monotonic()`` when the backend call began.
        """
        deadlines = [d for d in (self.deadline, self.stop.deadline if self.stop else None) if d is not None]
        if self.time_limit_s is not None:
            deadlines.append(start + self.time_limit_s)
        return Limits(deadline=min(deadlines) if deadlines else None, stop=self.stop)


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
    supports_interrupt
        Honours :attr:`SolverOptions.stop` and :attr:`SolverOptions.deadline` while it runs,
        returning within :data:`~mipopt.solvers.stop.GRACE_S` of the request with its incumbent.
    supports_objective_target
        Honours :attr:`SolverOptions.objective_target`; others raise
        :class:`UnsupportedOptionError` when given one.
    supports_node_limit
        Honours :attr:`SolverOptions.node_limit`; others raise :class:`UnsupportedOptionError`.
    """

    supports_warm_start: bool
    supports_threads: bool
    supports_time_limit: bool
    integer_only: bool
    finite_bounds_only: bool
    reports_bound: bool
    supports_interrupt: bool
    supports_objective_target: bool
    supports_node_limit: bool


@dataclass(frozen=True, slots=True)
class SolveResult:
    """What a backend returns; the variable values themselves are loaded into the Pyomo model.

    Attributes
    ----------
    termination
        Why the solver stopped: OPTIMAL, GAP_LIMIT, TIME_LIMIT, INTERRUPTED, COMPLETED,
        INFEASIBLE or ERROR (see the module table).
    status
        What it found: OPTIMAL (proven), FEASIBLE or NONE. The model's variables hold the solution exactly
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
        ``"interrupted"``, ``"stopped within the allowed gap (mip_rel_gap 0.05)"``,
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


class Companion(Protocol):
    """A search that runs beside a backend's solve of one compiled model (:attr:`SolverOptions.companion`)."""

    def start(self, form: MatrixForm, x0: FloatArray | None, deadline: float | None) -> None:
        """Begin searching in a thread of its own, from ``x0`` or the first point offered."""
        ...

    def offer(self, x: FloatArray) -> None:
        """A point the solver found."""
        ...

    def best(self) -> tuple[FloatArray, float] | None:
        """The best point found so far and its objective, or None."""
        ...

    def bound(self) -> float | None:
        """A bound on the model's optimum that the search has proven, or None."""
        ...

    def stop(self) -> None:
        """End the search and wait for it."""
        ...


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
        UnsupportedOptionError
            If ``options`` ask for something the backend's capabilities do not declare.
        """
        ...


def stopped_termination(reason: str) -> tuple[Termination, str]:
    """Termination and message for a solve stopped from outside for ``reason``.

    Parameters
    ----------
    reason
        :meth:`mipopt.solvers.stop.Limits.reason`: ``"time limit"`` for the deadline, else the
        stop flag's reason.
    """
    if reason == REASON_TIME_LIMIT:
        return Termination.TIME_LIMIT, "time limit reached"
    return Termination.INTERRUPTED, reason if reason == REASON_INTERRUPTED else f"interrupted: {reason}"


def feasible_start(form: MatrixForm, x: FloatArray | None, tol: float = 1e-6) -> FloatArray | None:
    """``x`` if it satisfies the compiled model's rows, bounds and integrality, else None.

    Parameters
    ----------
    form
        The compiled model.
    x
        A column vector (a warm start), or None.
    tol
        Absolute tolerance on rows (scaled up for large right-hand sides), bounds and integrality.
    """
    if x is None:
        return None
    if np.any(x < form.col_lower - tol) or np.any(x > form.col_upper + tol):
        return None
    if np.any(np.abs(x[form.integer] - np.round(x[form.integer])) > tol):
        return None
    rows = form.matrix @ x
    slack = tol * np.maximum(1.0, np.abs(rows))
    if np.any(rows < form.row_lower - slack) or np.any(rows > form.row_upper + slack):
        return None
    return x


def start_result(
    form: MatrixForm, x0: FloatArray | None, reason: str, runtime_s: float, solver: str
) -> SolveResult:
    """The outcome of a call stopped before its solver started: the warm start, if feasible.

    The start (if feasible) is loaded into the model; no bound is known.
    """
    termination, message = stopped_termination(reason)
    x = feasible_start(form, x0)
    if x is None:
        return SolveResult(
            termination, Status.NONE, None, None, None, runtime_s, solver, message + " (not started)"
        )
    form.load(x)
    objective = float(pyo.value(form.objective))
    return SolveResult(
        termination,
        Status.FEASIBLE,
        objective,
        None,
        None,
        runtime_s,
        solver,
        message + " (not started; the warm start)",
    )


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
