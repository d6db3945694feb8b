"""HiGHS through Pyomo's APPSI interface (``pyomo.contrib.appsi.solvers.Highs``).

Pyomo 6.10 has two in-process HiGHS interfaces: APPSI's and the newer
``pyomo.contrib.solver`` "highs". Only APPSI's passes a warm start to HiGHS (``setSolution``), so
it is used here. Options map to HiGHS as ``time_limit``, ``threads``, ``random_seed`` and
``mip_rel_gap``.

HiGHS runs on one process-wide thread pool that is sized at its first solve; asking for another
thread count later fails (HiGHS answers "unknown"). A solve that sets ``threads`` therefore resets
that pool first (``Highs.resetGlobalScheduler``), which is safe as long as no other HiGHS solve
runs at the same moment in the process.

A warm start is passed as a dense vector: variables named in
:attr:`~mipopt.solvers.SolverOptions.warm_start` take those values and every other variable is
cleared (HiGHS reads it as 0), so values left over from an earlier solve never leak in. HiGHS
rejects an infeasible start silently.
"""

from __future__ import annotations

import math
import time
from typing import Any

import highspy
import pyomo.environ as pyo
from pyomo.contrib.appsi.base import TerminationCondition as TC
from pyomo.contrib.appsi.solvers import Highs

from mipopt.instance import Status, Termination
from mipopt.solvers.base import (
    UNBOUNDED_MESSAGE,
    Capabilities,
    SolveResult,
    SolverOptions,
    relative_gap,
    set_warm_start,
    single_objective,
)


class HighsBackend:
    """The HiGHS MIP solver (highspy 1.12) through Pyomo APPSI."""

    name = "highs"
    capabilities = Capabilities(
        supports_warm_start=True,
        supports_threads=True,
        supports_time_limit=True,
        integer_only=False,
        finite_bounds_only=False,
        reports_bound=True,
    )

    def solve(self, model: pyo.ConcreteModel, options: SolverOptions | None = None) -> SolveResult:
        """Solve ``model`` with HiGHS and load the solution into it (see :class:`~mipopt.solvers.Backend`)."""
        opts = options or SolverOptions()
        single_objective(model)
        start = time.perf_counter()
        if opts.warm_start is not None:
            for var in model.component_data_objects(pyo.Var, descend_into=True):
                if not var.fixed:
                    var.set_value(None, skip_validation=True)
            set_warm_start(model, opts.warm_start)
        results = _run(model, opts, warm_start=opts.warm_start is not None)
        tc = results.termination_condition
        unbounded = False
        if tc in (TC.unbounded, TC.infeasibleOrUnbounded):
            # MIP presolve often proves only "infeasible or unbounded": a feasible model without
            # its objective means unbounded.
            unbounded = tc == TC.unbounded or _feasible_without_objective(model, opts)
            tc = TC.unbounded if unbounded else TC.infeasible
        runtime_s = time.perf_counter() - start

        has_solution = results.best_feasible_objective is not None and not unbounded
        if has_solution:
            results.solution_loader.load_vars()
        objective = float(results.best_feasible_objective) if has_solution else None
        bound = results.best_objective_bound
        bound = float(bound) if bound is not None and math.isfinite(bound) and not unbounded else None
        if tc == TC.optimal:
            termination, status, message = Termination.OPTIMAL, Status.OPTIMAL, "optimal"
        elif tc == TC.maxTimeLimit:
            termination, message = Termination.TIME_LIMIT, "time limit reached"
            status = Status.FEASIBLE if has_solution else Status.NONE
        elif tc == TC.infeasible:
            termination, status, message = Termination.INFEASIBLE, Status.NONE, "infeasible"
        elif unbounded:
            termination, status, message = Termination.ERROR, Status.NONE, UNBOUNDED_MESSAGE
        else:
            termination = Termination.ERROR
            status = Status.FEASIBLE if has_solution else Status.NONE
            message = f"HiGHS stopped: {tc.name}"
        return SolveResult(
            termination=termination,
            status=status,
            objective=objective,
            bound=bound,
            gap=relative_gap(objective, bound),
            runtime_s=runtime_s,
            solver=self.name,
            message=message,
            unbounded=unbounded,
        )


def _run(model: pyo.ConcreteModel, opts: SolverOptions, *, warm_start: bool) -> Any:
    solver = Highs()
    solver.config.load_solution = False
    solver.config.stream_solver = opts.verbose
    solver.config.warmstart = warm_start
    if opts.time_limit_s is not None:
        solver.config.time_limit = opts.time_limit_s
    if opts.mip_rel_gap is not None:
        solver.config.mip_gap = opts.mip_rel_gap
    solver.highs_options["random_seed"] = opts.seed
    if opts.threads is not None:
        highspy.Highs.resetGlobalScheduler(True)
        solver.highs_options["threads"] = opts.threads
    return solver.solve(model)


def _feasible_without_objective(model: pyo.ConcreteModel, opts: SolverOptions) -> bool:
    probe = model.clone()
    for obj in probe.component_data_objects(pyo.Objective, active=True, descend_into=True):
        obj.deactivate()
    # With no objective APPSI reports no objective value; a feasible point ends as "optimal".
    return _run(probe, opts, warm_start=False).termination_condition == TC.optimal
