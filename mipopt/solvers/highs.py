"""HiGHS (highspy 1.12) on the model's arrays (:mod:`mipopt.solvers.matrix`).

The model is compiled once per solve by Pyomo's standard-form compiler and passed
whole (``passModel``); options map to HiGHS as ``time_limit``, ``threads``,
``random_seed`` and ``mip_rel_gap``. Pyomo's own HiGHS interfaces (APPSI and
``pyomo.contrib.solver``) build the solver model term by term, which took longer than
the solve itself on the benchmark models (1.7 s of a 2.5 s stage at 80 GPUs).

HiGHS runs on one process-wide thread pool that is sized at its first solve; asking for another
thread count later fails (HiGHS answers "unknown"). A solve that sets ``threads`` therefore resets
that pool first (``Highs.resetGlobalScheduler``), which is safe as long as no other HiGHS solve
runs at the same moment in the process.

A warm start is passed as a dense vector (``setSolution``): variables named in
:attr:`~mipopt.solvers.SolverOptions.warm_start` take those values and every other variable 0.
HiGHS checks it and ignores an infeasible start.
"""

from __future__ import annotations

import math
import time

import highspy
import numpy as np
import pyomo.environ as pyo

from mipopt.instance import Status, Termination
from mipopt.solvers.base import (
    UNBOUNDED_MESSAGE,
    Capabilities,
    SolveResult,
    SolverOptions,
    relative_gap,
)
from mipopt.solvers.matrix import FloatArray, MatrixForm, compile_model

MS = highspy.HighsModelStatus


class HighsBackend:
    """The HiGHS MIP solver (highspy 1.12), on the compiled model."""

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
        start = time.perf_counter()
        form = compile_model(model)
        x0 = form.start(opts.warm_start) if opts.warm_start is not None else None
        h = _highs(form, opts, x0)
        h.run()
        status = h.getModelStatus()
        unbounded = False
        if status in (MS.kUnbounded, MS.kUnboundedOrInfeasible):
            # MIP presolve often proves only "infeasible or unbounded": a feasible model without
            # its objective means unbounded.
            probe = _highs(form, opts, None, with_objective=False)
            probe.run()
            unbounded = probe.getModelStatus() == MS.kOptimal
            status = MS.kUnbounded if unbounded else MS.kInfeasible
        runtime_s = time.perf_counter() - start

        info = h.getInfo()
        if status == MS.kModelEmpty:  # every variable fixed or unused: the fixed values are the answer
            status = MS.kOptimal
            has_solution = True
        else:
            has_solution = info.primal_solution_status == 2 and not unbounded  # 2: kSolutionStatusFeasible
        objective = bound = None
        if has_solution:
            form.load(np.asarray(h.getSolution().col_value, dtype=float))
            objective = float(pyo.value(form.objective))
            if len(form.columns) == 0:
                bound = objective
            elif form.integer.any():
                bound = float(info.mip_dual_bound)
            elif status == MS.kOptimal:
                bound = objective
            bound = bound if bound is not None and math.isfinite(bound) else None
        if status == MS.kOptimal:
            termination, sol_status, message = Termination.OPTIMAL, Status.OPTIMAL, "optimal"
        elif status == MS.kTimeLimit:
            termination, message = Termination.TIME_LIMIT, "time limit reached"
            sol_status = Status.FEASIBLE if has_solution else Status.NONE
        elif status == MS.kInfeasible:
            termination, sol_status, message = Termination.INFEASIBLE, Status.NONE, "infeasible"
        elif unbounded:
            termination, sol_status, message = Termination.ERROR, Status.NONE, UNBOUNDED_MESSAGE
        else:
            termination = Termination.ERROR
            sol_status = Status.FEASIBLE if has_solution else Status.NONE
            message = f"HiGHS stopped: {h.modelStatusToString(status)}"
        return SolveResult(
            termination=termination,
            status=sol_status,
            objective=objective,
            bound=bound,
            gap=relative_gap(objective, bound),
            runtime_s=runtime_s,
            solver=self.name,
            message=message,
            unbounded=unbounded,
        )


def _highs(
    form: MatrixForm, opts: SolverOptions, x0: FloatArray | None, *, with_objective: bool = True
) -> highspy.Highs:
    """A HiGHS instance holding the model, its options set and its start passed."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", opts.verbose)
    h.setOptionValue("random_seed", opts.seed)
    if opts.time_limit_s is not None:
        h.setOptionValue("time_limit", float(opts.time_limit_s))
    if opts.mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(opts.mip_rel_gap))
    if opts.threads is not None:
        highspy.Highs.resetGlobalScheduler(True)
        h.setOptionValue("threads", opts.threads)
    lp = highspy.HighsLp()
    n, m = len(form.columns), form.matrix.shape[0]
    lp.num_col_, lp.num_row_ = n, m
    lp.col_cost_ = form.cost if with_objective else np.zeros(n)
    lp.offset_ = form.offset if with_objective else 0.0
    lp.sense_ = highspy.ObjSense.kMaximize if form.maximize else highspy.ObjSense.kMinimize
    lp.col_lower_, lp.col_upper_ = form.col_lower, form.col_upper
    lp.row_lower_, lp.row_upper_ = form.row_lower, form.row_upper
    lp.a_matrix_.format_ = highspy.MatrixFormat.kColwise
    lp.a_matrix_.num_col_, lp.a_matrix_.num_row_ = n, m
    lp.a_matrix_.start_ = form.matrix.indptr
    lp.a_matrix_.index_ = form.matrix.indices
    lp.a_matrix_.value_ = form.matrix.data
    if form.integer.any():
        lp.integrality_ = [
            highspy.HighsVarType.kInteger if i else highspy.HighsVarType.kContinuous for i in form.integer
        ]
    h.passModel(lp)
    if x0 is not None:
        sol = highspy.HighsSolution()
        sol.col_value = x0
        sol.value_valid = True
        h.setSolution(sol)
    return h
