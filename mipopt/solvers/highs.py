"""HiGHS (highspy 1.12) on the model's arrays (:mod:`mipopt.solvers.matrix`).

The model is compiled once per solve (:func:`~mipopt.solvers.matrix.compile_model`) and passed
whole (``passModel``); options map to HiGHS as ``time_limit``, ``threads``,
``random_seed``, ``mip_rel_gap``, ``objective_target`` and ``mip_max_nodes``. Pyomo's own HiGHS
interfaces (APPSI and ``pyomo.contrib.solver``) build the solver model term by term, which took
longer than the solve itself on the benchmark models (1.7 s of a 2.5 s stage at 80 GPUs).

Stopping. ``Highs.run`` releases the GIL, so it runs in a worker thread
(:func:`mipopt.solvers.stop.run_watched`) while the calling thread stays free for Ctrl-C. HiGHS's
interrupt callbacks (``kCallbackMipInterrupt``, ``kCallbackSimplexInterrupt``,
``kCallbackIpmInterrupt``) answer "interrupt" once the stop flag is set or the deadline has passed,
and HiGHS's own ``time_limit`` is set to the time left. HiGHS asks those callbacks (and reads its
clock) only between steps: on a 400-GPU GRMU model one root mod-k cut-separation pass
(``HighsModkSeparator``, Gaussian elimination over GF(k)) ran 38-47 s without asking, so a 20 s
limit ended after 49-57 s. The watcher therefore gives HiGHS
:data:`~mipopt.solvers.stop.GRACE_S` to stop; if it has not, the backend returns the last
incumbent HiGHS reported through ``kCallbackMipImprovingSolution`` (else the warm start, if
feasible) with the last dual bound of ``kCallbackMipInterrupt``, and leaves the HiGHS thread to
end at its next check (``Highs.cancelSolve`` in highspy 1.12 only sets a Python flag read by the
same callbacks, so it cannot do better).

Threads. HiGHS keeps one task scheduler per calling thread, sized at its first solve on that
thread (a later, different ``threads`` makes HiGHS answer "unknown"). Every solve runs on a new
thread, so each gets a scheduler of its own size and no reset of a shared one is needed.

A warm start is passed as a dense vector (``setSolution``): variables named in
:attr:`~mipopt.solvers.SolverOptions.warm_start` take those values and every other variable 0.
HiGHS checks it and ignores an infeasible start.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, replace

import highspy
import numpy as np
import pyomo.environ as pyo

from mipopt.instance import Status, Termination
from mipopt.solvers.base import (
    UNBOUNDED_MESSAGE,
    Capabilities,
    Companion,
    SolveResult,
    SolverOptions,
    feasible_start,
    is_proven,
    relative_gap,
    start_result,
    stopped_termination,
)
from mipopt.solvers.matrix import FloatArray, MatrixForm, compile_model
from mipopt.solvers.stop import (
    GRACE_S,
    REASON_INTERRUPTED,
    Limits,
    StopFlag,
    Watched,
    leave_in_background,
    run_watched,
)

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
        supports_interrupt=True,
        supports_objective_target=True,
        supports_node_limit=True,
    )

    def solve(self, model: pyo.ConcreteModel, options: SolverOptions | None = None) -> SolveResult:
        """Solve ``model`` with HiGHS and load the solution into it (see :class:`~mipopt.solvers.Backend`)."""
        opts = options or SolverOptions()
        limits = opts.limits(time.monotonic())
        start = time.perf_counter()
        form = compile_model(model)
        x0 = form.start(opts.warm_start) if opts.warm_start is not None else None
        reason = limits.reason()
        if reason is not None:
            return start_result(form, x0, reason, time.perf_counter() - start, self.name)

        companion = opts.companion
        if companion is not None:
            companion.start(form, x0, limits.deadline)
        try:
            run = _WatchedHighs(_highs(form, opts, x0, limits), limits, companion)
            watched = run.run()
        finally:
            if companion is not None:
                companion.stop()
        if not watched.finished:
            return self._left_behind(form, x0, run, watched, start)
        h = run.highs
        status = h.getModelStatus()
        unbounded = False
        if status in (MS.kUnbounded, MS.kUnboundedOrInfeasible):
            # MIP presolve often proves only "infeasible or unbounded": a feasible model without
            # its objective means unbounded.
            probe = _WatchedHighs(_highs(form, opts, None, limits, with_objective=False), limits)
            probed = probe.run()
            if probed.finished and probe.highs.getModelStatus() in (MS.kOptimal, MS.kInfeasible):
                unbounded = probe.highs.getModelStatus() == MS.kOptimal
                status = MS.kUnbounded if unbounded else MS.kInfeasible
            elif probed.reason is not None:
                status = MS.kInterrupt
                watched = probed
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
        found = companion.best() if companion is not None and not unbounded else None
        if found is not None and (objective is None or form.better(found[1], objective)):
            form.load(found[0])  # the companion's point is the answer; HiGHS's bound still holds
            # its value in the model as loaded (integers rounded), as for HiGHS's own point: not
            # the companion's float sum (18.999999999999996 for 19 once in a raced test)
            objective, has_solution = float(pyo.value(form.objective)), True
            if bound is None and form.integer.any() and math.isfinite(info.mip_dual_bound):
                bound = float(info.mip_dual_bound)
        if companion is not None and has_solution:
            bound = _tighter(form, bound, companion.bound())
        if companion is not None and is_proven(objective, bound):
            status = MS.kOptimal  # HiGHS stopped once the companion's point met its bound
        sol_status = Status.FEASIBLE if has_solution else Status.NONE
        if status == MS.kOptimal and is_proven(objective, bound):
            termination, sol_status, message = Termination.OPTIMAL, Status.OPTIMAL, "optimal"
        elif status == MS.kOptimal and has_solution:
            termination = Termination.GAP_LIMIT
            allowed = f"{opts.mip_rel_gap:g}" if opts.mip_rel_gap is not None else "HiGHS's default 1e-4"
            message = f"stopped within the allowed gap (mip_rel_gap {allowed}), not proven optimal"
        elif status == MS.kTimeLimit:
            termination, message = Termination.TIME_LIMIT, "time limit reached"
        elif status == MS.kInterrupt:
            termination, message = stopped_termination(watched.reason or REASON_INTERRUPTED)
        elif status in (MS.kObjectiveTarget, MS.kSolutionLimit):
            termination = Termination.COMPLETED
            message = "objective target reached" if status == MS.kObjectiveTarget else "node limit reached"
            if is_proven(objective, bound):
                sol_status = Status.OPTIMAL
        elif status == MS.kInfeasible:
            termination, sol_status, message = Termination.INFEASIBLE, Status.NONE, "infeasible"
        elif unbounded:
            termination, sol_status, message = Termination.ERROR, Status.NONE, UNBOUNDED_MESSAGE
        else:
            termination = Termination.ERROR
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

    def _left_behind(
        self,
        form: MatrixForm,
        x0: FloatArray | None,
        run: _WatchedHighs,
        watched: Watched[object],
        start: float,
    ) -> SolveResult:
        """The outcome when HiGHS did not stop in time: the last incumbent it reported."""
        termination, message = stopped_termination(watched.reason or REASON_INTERRUPTED)
        message += f" (HiGHS did not stop within {GRACE_S:g} s and finishes in the background)"
        x = feasible_start(form, run.incumbent)
        x = x if x is not None else feasible_start(form, x0)
        found = run.companion.best() if run.companion is not None else None
        if found is not None and (x is None or form.better(found[1], float(form.cost @ x) + form.offset)):
            x = found[0]
        objective = bound = None
        if x is not None:
            form.load(x)
            objective = float(pyo.value(form.objective))
            bound = _tighter(form, run.bound, run.companion.bound() if run.companion is not None else None)
        return SolveResult(
            termination=termination,
            status=Status.FEASIBLE if x is not None else Status.NONE,
            objective=objective,
            bound=bound,
            gap=relative_gap(objective, bound),
            runtime_s=time.perf_counter() - start,
            solver=self.name,
            message=message,
        )


class _WatchedHighs:
    """One HiGHS run in a worker thread, with callbacks that stop it and remember its incumbent."""

    def __init__(
        self, h: highspy.Highs, limits: Limits, companion: Companion | None = None, *, lp_checks: bool = True
    ) -> None:
        self.highs = h
        self.limits = limits
        self.companion = companion
        self.incumbent: FloatArray | None = None
        self.bound: float | None = None
        self.requested = False  # set from the watching thread, e.g. on a KeyboardInterrupt
        self.sent: FloatArray | None = None
        h.cbMipInterrupt.subscribe(self._mip_interrupt)
        if lp_checks:  # each takes the GIL, every few simplex iterations
            h.cbSimplexInterrupt.subscribe(self._interrupt)
            h.cbIpmInterrupt.subscribe(self._interrupt)
        h.cbMipImprovingSolution.subscribe(self._improving)
        if companion is not None:
            h.cbMipUserSolution.subscribe(self._user_solution)

    def run(self) -> Watched[object]:
        return run_watched(self.highs.run, self.limits, self._request_stop, name="mipopt-highs")

    def point(self) -> FloatArray | None:
        """Once the run has returned: HiGHS's solution when it holds a feasible one, else the last
        incumbent reported (a model solved in presolve reports none)."""
        h = self.highs
        if h.getInfo().primal_solution_status == 2:  # kSolutionStatusFeasible
            return np.asarray(h.getSolution().col_value, dtype=float)
        return self.incumbent

    def _request_stop(self) -> None:
        # HiGHS is stopped by its callbacks, which look at ``limits`` themselves; this covers a
        # stop for another reason (a KeyboardInterrupt in the watching thread).
        self.requested = True

    def _interrupt(self, event: highspy.HighsCallbackEvent) -> None:
        if self.requested or self.limits.reason() is not None:
            event.interrupt()

    def _mip_interrupt(self, event: highspy.HighsCallbackEvent) -> None:
        bound = float(event.data_out.mip_dual_bound)
        if math.isfinite(bound):
            self.bound = bound
        if self.companion is not None:
            found = self.companion.best()
            # either bound proves the companion's point: HiGHS's, or the companion's own
            if found is not None and any(
                is_proven(found[1], b) for b in (self.bound, self.companion.bound())
            ):
                event.interrupt()
        self._interrupt(event)

    def _improving(self, event: highspy.HighsCallbackEvent) -> None:
        # HiGHS reports the solution in the original model's columns; copy it, the buffer is reused.
        self.incumbent = np.array(event.data_out.mip_solution, dtype=float, copy=True)
        if self.companion is not None:
            self.companion.offer(self.incumbent)

    def _user_solution(self, event: highspy.HighsCallbackEvent) -> None:
        """Hand HiGHS the companion's point when it has a new one."""
        assert self.companion is not None
        found = self.companion.best()
        if found is not None and found[0] is not self.sent:
            self.sent = found[0]
            event.data_in.setSolution(found[0])


class HighsRival:
    """A second HiGHS run of the same model, with another random seed, racing the first: a
    :class:`~mipopt.solvers.base.Companion` (:attr:`SolverOptions.companion`) that also proves.

    HiGHS's branch and bound uses one core (a 28 s solve of a dense instance took 28.7 s of
    processor time with ``threads`` 2), and its time to a proof varies with the seed (the same
    hardware stage: 24-60 s over seeds 0-5). The rival runs on the second core from the start; the
    two hand each other their incumbents (HiGHS's user-solution callback), the better point is
    the answer, the tighter bound proves it, and the solve ends when either proves. Which run
    wins depends on timing, so only time-limited solves race (:meth:`mipopt.exact.driver._Run.races`).

    Parameters
    ----------
    options
        The solve's options; the rival runs with ``seed``, one thread, no output.
    seed
        The rival's random seed (HiGHS's ``random_seed``).
    """

    def __init__(self, options: SolverOptions, seed: int) -> None:
        self.options = replace(options, seed=seed, threads=1, verbose=False, companion=None, warm_start=None)
        self.halt = StopFlag()
        self.form: MatrixForm | None = None
        self.watched: _WatchedHighs | None = None
        self.thread: threading.Thread | None = None
        self.offered: FloatArray | None = None
        self.sent: FloatArray | None = None
        self.final_bound: float | None = None

    def start(self, form: MatrixForm, x0: FloatArray | None, deadline: float | None) -> None:
        """Start HiGHS in a thread of its own, from ``x0``, until ``deadline`` or :meth:`stop`."""
        self.form = form
        limits = Limits(deadline=deadline, stop=self.halt)
        self.watched = _WatchedHighs(_highs(form, self.options, x0, limits), limits)
        self.watched.highs.cbMipUserSolution.subscribe(self._user_solution)
        self.thread = threading.Thread(target=self._run, name="mipopt-highs-rival", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        assert self.watched is not None
        self.watched.highs.run()
        self.watched.incumbent = self.watched.point()
        bound = self.watched.highs.getInfo().mip_dual_bound
        if math.isfinite(bound):
            self.final_bound = float(bound)

    def _user_solution(self, event: highspy.HighsCallbackEvent) -> None:
        offered = self.offered
        if offered is not None and offered is not self.sent:
            self.sent = offered
            event.data_in.setSolution(offered)

    def offer(self, x: FloatArray) -> None:
        """An incumbent of the other run, handed to this one at its next chance."""
        self.offered = x

    def best(self) -> tuple[FloatArray, float] | None:
        """This run's incumbent and its objective (offset included), or None."""
        x = self.watched.incumbent if self.watched is not None else None
        if x is None or self.form is None:
            return None
        return x, float(self.form.cost @ x) + self.form.offset

    def bound(self) -> float | None:
        """This run's dual bound: its last while it runs, its final one once it has ended."""
        if self.thread is not None and not self.thread.is_alive():
            return self.final_bound
        return self.watched.bound if self.watched is not None else None

    def stop(self) -> None:
        """Stop the run and wait for it, at most :data:`~mipopt.solvers.stop.GRACE_S`; one still
        running then is left in the background (:func:`~mipopt.solvers.stop.background_solves`)."""
        if self.thread is not None:
            self.halt.set()
            self.thread.join(GRACE_S)
            if self.thread.is_alive():
                leave_in_background(self.thread)


@dataclass(frozen=True)
class LpOptimum:
    """An optimal vertex of a model's LP relaxation (:func:`lp_relaxation`).

    Attributes
    ----------
    value
        The relaxation's optimum, the objective's offset included.
    x
        Each column's value.
    reduced_costs
        Each column's reduced cost: in a minimization, raising a column at its lower bound by one
        raises the relaxation's optimum by at least its reduced cost.
    """

    value: float
    x: FloatArray
    reduced_costs: FloatArray


def lp_relaxation(form: MatrixForm, options: SolverOptions) -> LpOptimum | None:
    """``form``'s LP relaxation solved by HiGHS's simplex method (a vertex, whose reduced costs
    are tight where an interior point's are not), within ``options``' time limit and stop flag;
    None when it ends otherwise than optimal."""
    limits = options.limits(time.monotonic())
    if limits.reason() is not None:
        return None
    h = _highs(form, options, None, limits, relax=True)
    h.setOptionValue("solver", "simplex")
    watched = _WatchedHighs(h, limits).run()
    if not watched.finished or h.getModelStatus() != MS.kOptimal:
        return None
    solution = h.getSolution()
    return LpOptimum(
        float(h.getInfo().objective_function_value),
        np.asarray(solution.col_value, dtype=float),
        np.asarray(solution.col_dual, dtype=float),
    )


def _tighter(form: MatrixForm, a: float | None, b: float | None) -> float | None:
    """Of two bounds on ``form``'s optimum, either None, the one closer to it."""
    if a is None or b is None:
        return b if a is None else a
    return b if form.better(a, b) else a


def _highs(
    form: MatrixForm,
    opts: SolverOptions,
    x0: FloatArray | None,
    limits: Limits,
    *,
    with_objective: bool = True,
    relax: bool = False,
) -> highspy.Highs:
    """A HiGHS instance holding the model (its LP relaxation if ``relax``), its options set and
    its start passed."""
    h = highspy.Highs()
    h.setOptionValue("output_flag", opts.verbose)
    h.setOptionValue("random_seed", opts.seed)
    remaining = limits.remaining()
    if remaining is not None:
        h.setOptionValue("time_limit", max(remaining, 1e-3))
    if opts.mip_rel_gap is not None:
        h.setOptionValue("mip_rel_gap", float(opts.mip_rel_gap))
    if opts.threads is not None:
        h.setOptionValue("threads", opts.threads)
    if opts.objective_target is not None and with_objective:
        h.setOptionValue("objective_target", float(opts.objective_target))
    if opts.node_limit is not None:
        h.setOptionValue("mip_max_nodes", int(opts.node_limit))
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
    if form.integer.any() and not relax:
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
