"""CP-SAT (OR-Tools 9.15) on the model's arrays, through ``ortools.linear_solver.python.model_builder``.

The model is compiled by :func:`mipopt.solvers.matrix.compile_model` and loaded whole with
``fill_model_from_sparse_data``; integrality, objective sense and constant are set on the
builder, which ``ModelSolver("sat")`` solves. The reported objective is the Pyomo objective
evaluated at the loaded values, so it is exact in the model's own terms even when CP-SAT
scales fractional objective coefficients to integers internally.

CP-SAT is an integer solver: a continuous variable raises
:class:`~mipopt.solvers.UnsupportedModelError` naming it (OR-Tools would otherwise scale it to
an approximate integer). So does a variable without finite bounds: OR-Tools' translation refuses
sums of such variables ("MODEL_INVALID: Extra CP-SAT validation failed", it guards against
overflow), so CP-SAT never sees an unbounded model; that case is HiGHS's to report. Options map
to CP-SAT parameters ``max_time_in_seconds``, ``num_workers``,
``random_seed`` and ``relative_gap_limit``; a warm start becomes solution hints. With one worker
and a fixed seed CP-SAT is deterministic; with several workers the optimum value is still unique
but which optimal solution is returned may vary. CP-SAT has no objective target and no node
limit (its search is not one branch-and-bound tree); asking for either raises
:class:`~mipopt.solvers.UnsupportedOptionError`.

Stopping. ``ModelSolver.solve`` releases the GIL, so it runs in a worker thread
(:func:`mipopt.solvers.stop.run_watched`) and the calling thread calls ``ModelSolver.stop_search``
(OR-Tools' ``interrupt_solve``) once the stop flag is set or the deadline has passed; CP-SAT then
returns within milliseconds with its incumbent and bound (FEASIBLE) or nothing (NOT_SOLVED). A
stop asked before the solve starts is kept, so no request is lost. CP-SAT's parameter
``catch_sigint_signal`` (on by default) is turned off: with it, CP-SAT took SIGINT for itself
during a solve (Python's handler never ran) and left SIGINT at the system default afterwards, so
the next Ctrl-C killed the process without a KeyboardInterrupt.
"""

from __future__ import annotations

import math
import time
from typing import Any

import numpy as np
import pyomo.environ as pyo
import scipy.sparse as sp
from ortools.linear_solver.python import model_builder as mb

from mipopt.instance import Status, Termination
from mipopt.solvers.base import (
    Capabilities,
    SolveResult,
    SolverOptions,
    UnsupportedModelError,
    UnsupportedOptionError,
    feasible_start,
    is_proven,
    relative_gap,
    start_result,
    stopped_termination,
)
from mipopt.solvers.matrix import FloatArray, MatrixForm, compile_model
from mipopt.solvers.stop import GRACE_S, REASON_INTERRUPTED, Limits, Watched, run_watched


class CpSatBackend:
    """The CP-SAT solver of OR-Tools, for models whose variables are all integer."""

    name = "cpsat"
    capabilities = Capabilities(
        supports_warm_start=True,
        supports_threads=True,
        supports_time_limit=True,
        integer_only=True,
        finite_bounds_only=True,
        reports_bound=True,
        supports_interrupt=True,
        supports_objective_target=False,
        supports_node_limit=False,
    )

    def solve(self, model: pyo.ConcreteModel, options: SolverOptions | None = None) -> SolveResult:
        """Solve ``model`` with CP-SAT and load the solution into it (see :class:`~mipopt.solvers.Backend`).

        Raises
        ------
        UnsupportedModelError
            If a variable of the model is not integer or not bounded, or the model has not
            exactly one active objective.
        UnsupportedOptionError
            If ``options`` set ``objective_target`` or ``node_limit``.
        """
        opts = options or SolverOptions()
        limits = opts.limits(time.monotonic())
        start = time.perf_counter()
        if opts.objective_target is not None:
            raise UnsupportedOptionError("CP-SAT has no objective target (objective_target); use HiGHS")
        if opts.node_limit is not None:
            raise UnsupportedOptionError("CP-SAT has no node limit (node_limit); use HiGHS")
        form = compile_model(model)
        builder = _translate(form)
        x0 = form.start(opts.warm_start) if opts.warm_start else None
        if x0 is not None:
            for i, hint in enumerate(x0.tolist()):
                builder.helper.add_hint(i, hint)
        reason = limits.reason()
        if reason is not None:
            return start_result(form, x0, reason, time.perf_counter() - start, self.name)

        solver, watched = _run(builder, opts, limits)
        if not watched.finished:
            return self._left_behind(form, x0, watched, start)
        status = watched.value
        if status in (mb.SolveStatus.UNBOUNDED, mb.SolveStatus.UNKNOWN_STATUS) and watched.reason is None:
            # The presolve may prove only "infeasible or unbounded"; with every variable bounded
            # it cannot be unbounded, and a solve without the objective settles feasibility.
            builder.helper.clear_objective()
            _, probe = _run(builder, opts, limits)
            if probe.finished and probe.value == mb.SolveStatus.INFEASIBLE:
                status = mb.SolveStatus.INFEASIBLE
        runtime_s = time.perf_counter() - start

        has_solution = status in (mb.SolveStatus.OPTIMAL, mb.SolveStatus.FEASIBLE)
        value: float | None = None
        if has_solution:
            variables = [builder.var_from_index(i) for i in range(len(form.columns))]
            form.load(np.asarray(solver.values(variables), dtype=float))
            value = float(pyo.value(form.objective))
        elif status == mb.SolveStatus.NOT_SOLVED and (x := feasible_start(form, x0)) is not None:
            # stopped before CP-SAT reported a solution (hints are not reported as one): a
            # feasible warm start is still the incumbent
            form.load(x)
            value = float(pyo.value(form.objective))
            has_solution = True
        bound = (
            _number(solver.best_objective_bound)
            if has_solution or status == mb.SolveStatus.NOT_SOLVED
            else None
        )
        if status == mb.SolveStatus.OPTIMAL and bound is None:
            bound = value  # no bound to compare (no objective): nothing but a proof can end the search

        sol_status = Status.FEASIBLE if has_solution else Status.NONE
        if status == mb.SolveStatus.OPTIMAL and is_proven(value, bound):
            termination, sol_status, message = Termination.OPTIMAL, Status.OPTIMAL, "optimal"
        elif status == mb.SolveStatus.OPTIMAL:
            termination = Termination.GAP_LIMIT
            allowed = (
                f"mip_rel_gap {opts.mip_rel_gap:g}" if opts.mip_rel_gap else "CP-SAT's absolute_gap_limit"
            )
            message = f"stopped within the allowed gap ({allowed}), not proven optimal"
        elif watched.reason is not None and status in (mb.SolveStatus.FEASIBLE, mb.SolveStatus.NOT_SOLVED):
            termination, message = stopped_termination(watched.reason)
        elif status == mb.SolveStatus.FEASIBLE or (
            status == mb.SolveStatus.NOT_SOLVED and limits.deadline is not None
        ):
            termination, message = Termination.TIME_LIMIT, "time limit reached"
        elif status == mb.SolveStatus.INFEASIBLE:
            termination, sol_status, message = Termination.INFEASIBLE, Status.NONE, "infeasible"
        else:
            termination, sol_status = Termination.ERROR, Status.NONE
            name = status.name if status is not None else "no status"
            message = f"CP-SAT stopped: {name} {solver.status_string}".strip()
        return SolveResult(
            termination=termination,
            status=sol_status,
            objective=value,
            bound=bound,
            gap=relative_gap(value, bound),
            runtime_s=runtime_s,
            solver=self.name,
            message=message,
        )

    def _left_behind(
        self, form: MatrixForm, x0: FloatArray | None, watched: Watched[mb.SolveStatus], start: float
    ) -> SolveResult:
        """The outcome when CP-SAT did not stop in time: it reports nothing before it returns,
        so the warm start (if feasible) is the incumbent."""
        termination, message = stopped_termination(watched.reason or REASON_INTERRUPTED)
        message += f" (CP-SAT did not stop within {GRACE_S:g} s and finishes in the background)"
        x = feasible_start(form, x0)
        value = None
        if x is not None:
            form.load(x)
            value = float(pyo.value(form.objective))
        return SolveResult(
            termination=termination,
            status=Status.FEASIBLE if x is not None else Status.NONE,
            objective=value,
            bound=None,
            gap=None,
            runtime_s=time.perf_counter() - start,
            solver=self.name,
            message=message,
        )


def _translate(form: MatrixForm) -> mb.ModelBuilder:
    """The compiled model as an OR-Tools ``ModelBuilder``."""
    continuous = [v.name for v, i in zip(form.columns, form.integer, strict=True) if not i]
    if continuous:
        shown = ", ".join(continuous[:5]) + (", ..." if len(continuous) > 5 else "")
        raise UnsupportedModelError(
            f"CP-SAT needs every variable integer; {len(continuous)} continuous: {shown}"
        )
    unbounded = [
        v.name
        for v, lb, ub in zip(form.columns, form.col_lower, form.col_upper, strict=True)
        if not (math.isfinite(lb) and math.isfinite(ub))
    ]
    if unbounded:
        shown = ", ".join(unbounded[:5]) + (", ..." if len(unbounded) > 5 else "")
        raise UnsupportedModelError(
            f"CP-SAT needs finite bounds on every variable; {len(unbounded)} without: {shown}"
        )
    builder = mb.ModelBuilder()
    helper = builder.helper
    a = form.matrix
    fill: Any = helper.fill_model_from_sparse_data  # OR-Tools' stubs misspell numpy array types
    fill(
        form.col_lower,
        form.col_upper,
        form.cost,
        form.row_lower,
        form.row_upper,
        sp.csc_matrix((a.data, a.indices, a.indptr), shape=a.shape).tocsr(),
    )
    for i in range(len(form.columns)):
        helper.set_var_integrality(i, True)
    helper.set_objective_offset(form.offset)
    helper.set_maximize(form.maximize)
    return builder


def _run(
    builder: mb.ModelBuilder, opts: SolverOptions, limits: Limits
) -> tuple[mb.ModelSolver, Watched[mb.SolveStatus]]:
    # A fresh solver per call: a reused ModelSolver has answered NOT_SOLVED after a previous solve
    # (and keeps a stop request once made).
    solver = mb.ModelSolver("sat")
    remaining = limits.remaining()
    if remaining is not None:
        solver.set_time_limit_in_seconds(max(remaining, 1e-3))
    params = [f"random_seed:{opts.seed}", "catch_sigint_signal:false"]
    if opts.threads is not None:
        params.append(f"num_workers:{opts.threads}")
    if opts.mip_rel_gap is not None:
        params.append(f"relative_gap_limit:{opts.mip_rel_gap}")
    solver.set_solver_specific_parameters(", ".join(params))
    solver.enable_output(opts.verbose)
    return solver, run_watched(lambda: solver.solve(builder), limits, solver.stop_search, name="mipopt-cpsat")


def _number(x: Any) -> float | None:
    """A finite float, or None for OR-Tools' missing values (NA, NaN)."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if not math.isnan(f) else None
