"""CP-SAT (OR-Tools 9.15) through an MPS file and ``ortools.linear_solver.python.model_builder``.

The Pyomo model is written as free MPS with symbolic labels, read back with
``ModelBuilder.import_from_mps_file`` and solved by ``ModelSolver("sat")``. The round trip:

- *Objective sense.* Pyomo's MPS writer emits an ``OBJSENSE MAX`` section and the original
  (unnegated) coefficients; OR-Tools reads it. The backend still compares the imported sense with
  the Pyomo objective and sets it if they differ, so a writer that drops the section cannot flip
  the problem silently.
- *Objective constant.* The writer expresses a constant term through a column ``ONE_VAR_CONSTANT``
  tied to 1 by an equality row; it is written continuous, so the backend makes it an integer fixed
  at 1 after import.
- *Values.* The writer's symbol map links each MPS column name to its Pyomo variable; values go
  back by that name. The reported objective is the Pyomo objective evaluated at the loaded
  values, so it is exact in the model's own terms even when CP-SAT scales fractional objective
  coefficients to integers internally.

CP-SAT is an integer solver: a continuous variable raises
:class:`~mipopt.solvers.UnsupportedModelError` naming it (OR-Tools would otherwise scale it to
an approximate integer). So does a variable without finite bounds: OR-Tools' translation refuses
sums of such variables ("MODEL_INVALID: Extra CP-SAT validation failed", it guards against
overflow), so CP-SAT never sees an unbounded model; that case is HiGHS's to report. Options map
to CP-SAT parameters ``max_time_in_seconds``, ``num_workers``,
``random_seed`` and ``relative_gap_limit``; a warm start becomes solution hints. With one worker
and a fixed seed CP-SAT is deterministic; with several workers the optimum value is still unique
but which optimal solution is returned may vary.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path
from typing import Any

import pyomo.environ as pyo
from ortools.linear_solver.python import model_builder as mb
from pyomo.core.base.var import VarData

from mipopt.instance import Status, Termination
from mipopt.solvers.base import (
    Capabilities,
    SolveResult,
    SolverOptions,
    UnsupportedModelError,
    relative_gap,
    set_warm_start,
    single_objective,
)

_CONSTANT_COLUMN = "ONE_VAR_CONSTANT"


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
    )

    def solve(self, model: pyo.ConcreteModel, options: SolverOptions | None = None) -> SolveResult:
        """Solve ``model`` with CP-SAT and load the solution into it (see :class:`~mipopt.solvers.Backend`).

        Raises
        ------
        UnsupportedModelError
            If a variable of the model is not integer, or the model has not exactly one objective.
        """
        opts = options or SolverOptions()
        objective = single_objective(model)
        start = time.perf_counter()
        builder, columns = _translate(model, objective)
        if opts.warm_start:
            set_warm_start(model, opts.warm_start)  # checks the names
            by_var = {id(v): name for name, v in columns.items()}
            builder_vars = {v.name: v for v in builder.get_variables()}
            for name, hint in opts.warm_start.items():
                label = by_var.get(id(model.find_component(name)))
                if label is not None:  # a variable the writer left out (fixed, unused) needs no hint
                    builder.add_hint(builder_vars[label], hint)

        solver, status = _run(builder, opts)
        if status in (mb.SolveStatus.UNBOUNDED, mb.SolveStatus.UNKNOWN_STATUS):
            # The presolve may prove only "infeasible or unbounded"; with every variable bounded
            # it cannot be unbounded, and a solve without the objective settles feasibility.
            builder.helper.clear_objective()
            _, probe = _run(builder, opts)
            if probe == mb.SolveStatus.INFEASIBLE:
                status = mb.SolveStatus.INFEASIBLE
        runtime_s = time.perf_counter() - start

        has_solution = status in (mb.SolveStatus.OPTIMAL, mb.SolveStatus.FEASIBLE)
        value: float | None = None
        if has_solution:
            variables = [v for v in builder.get_variables() if v.name in columns]
            for var, val in zip(variables, solver.values(variables), strict=True):
                columns[var.name].set_value(float(round(val)), skip_validation=True)
            value = float(pyo.value(objective))
        bound = (
            _number(solver.best_objective_bound)
            if has_solution or status == mb.SolveStatus.NOT_SOLVED
            else None
        )

        if status == mb.SolveStatus.OPTIMAL:
            termination, sol_status, message = Termination.OPTIMAL, Status.OPTIMAL, "optimal"
        elif status == mb.SolveStatus.FEASIBLE or (
            status == mb.SolveStatus.NOT_SOLVED and opts.time_limit_s is not None
        ):
            termination, message = Termination.TIME_LIMIT, "time limit reached"
            sol_status = Status.FEASIBLE if has_solution else Status.NONE
        elif status == mb.SolveStatus.INFEASIBLE:
            termination, sol_status, message = Termination.INFEASIBLE, Status.NONE, "infeasible"
        else:
            termination, sol_status = Termination.ERROR, Status.NONE
            message = f"CP-SAT stopped: {status.name} {solver.status_string}".strip()
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


def _translate(
    model: pyo.ConcreteModel, objective: pyo.Objective
) -> tuple[mb.ModelBuilder, dict[str, VarData]]:
    """The model as an OR-Tools ``ModelBuilder`` and its columns by MPS name."""
    with tempfile.TemporaryDirectory(prefix="mipopt-cpsat-") as tmp:
        path = Path(tmp) / "model.mps"
        _, symbol_map_id = model.write(str(path), format="mps", io_options={"symbolic_solver_labels": True})
        symbols = model.solutions.symbol_map.pop(symbol_map_id)
        columns = {label: obj for label, obj in symbols.bySymbol.items() if isinstance(obj, VarData)}
        continuous = [v.name for v in columns.values() if not v.is_integer()]
        if continuous:
            shown = ", ".join(continuous[:5]) + (", ..." if len(continuous) > 5 else "")
            raise UnsupportedModelError(
                f"CP-SAT needs every variable integer; {len(continuous)} continuous: {shown}"
            )
        unbounded = [v.name for v in columns.values() if v.lb is None or v.ub is None]
        if unbounded:
            shown = ", ".join(unbounded[:5]) + (", ..." if len(unbounded) > 5 else "")
            raise UnsupportedModelError(
                f"CP-SAT needs finite bounds on every variable; {len(unbounded)} without: {shown}"
            )
        builder = mb.ModelBuilder()
        if not builder.import_from_mps_file(str(path)):
            raise UnsupportedModelError(f"OR-Tools could not read the MPS file written for {model.name!r}")
    for var in builder.get_variables():
        if var.name == _CONSTANT_COLUMN:
            var.is_integral = True
            var.lower_bound = var.upper_bound = 1
    maximize = objective.sense == pyo.maximize
    if builder.helper.maximize() != maximize:
        builder.helper.set_maximize(maximize)
    return builder, columns


def _run(builder: mb.ModelBuilder, opts: SolverOptions) -> tuple[mb.ModelSolver, Any]:
    # A fresh solver per call: a reused ModelSolver has answered NOT_SOLVED after a previous solve.
    solver = mb.ModelSolver("sat")
    if opts.time_limit_s is not None:
        solver.set_time_limit_in_seconds(opts.time_limit_s)
    params = [f"random_seed:{opts.seed}"]
    if opts.threads is not None:
        params.append(f"num_workers:{opts.threads}")
    if opts.mip_rel_gap is not None:
        params.append(f"relative_gap_limit:{opts.mip_rel_gap}")
    solver.set_solver_specific_parameters(", ".join(params))
    solver.enable_output(opts.verbose)
    return solver, solver.solve(builder)


def _number(x: Any) -> float | None:
    """A finite float, or None for OR-Tools' missing values (NA, NaN)."""
    try:
        f = float(x)
    except (TypeError, ValueError):
        return None
    return f if not math.isnan(f) else None
