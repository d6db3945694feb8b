"""Exact solving: a formulation, a backend and an objective mode, returning a verified-shape Solution.

Objective modes (``--objective``):

* ``lex:acceptance,hardware,migrations`` (the default): optimize each objective in
  turn, keeping the earlier optima as constraints. A stage may carry a relative
  tolerance, ``lex:acceptance@0.05,hardware``: later stages may give up 5 % of it.
* ``weighted:1,0.1,0.01``: one objective, acceptance x 1 - hardware x 0.1 -
  migrations x 0.01 (a fourth weight prices intra-GPU start changes).

Objective names: ``acceptance`` (maximized), ``hardware``, ``migrations`` and
``intra_moves`` (minimized). Proof is the default: the relative MIP gap is 0
unless the caller sets one.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import pyomo.environ as pyo
from pyomo.core.expr.visitor import identify_variables

from mipopt.errors import InstanceError
from mipopt.formulations import MODELS, OBJECTIVES, SENSE, build
from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.policies import first_fit
from mipopt.solvers import SolverOptions, get_backend
from mipopt.verify import solution_for

DEFAULT_OBJECTIVE = "lex:acceptance,hardware,migrations"


@dataclass(frozen=True, slots=True)
class ObjectiveSpec:
    """A parsed ``--objective``: mode, objective names, and per-name weights or tolerances."""

    mode: str
    names: tuple[str, ...]
    values: tuple[float, ...]

    def __str__(self) -> str:
        if self.mode == "weighted":
            return "weighted:" + ",".join(f"{v:g}" for v in self.values)
        return "lex:" + ",".join(
            n + (f"@{t:g}" if t else "") for n, t in zip(self.names, self.values, strict=True)
        )


def parse_objective(text: str) -> ObjectiveSpec:
    """Parse ``lex:a,b@tol,...`` or ``weighted:w1,w2,w3[,w4]``.

    Raises
    ------
    InstanceError
        Naming ``--objective`` and what is wrong.
    """
    mode, _, rest = text.partition(":")
    items = [x.strip() for x in rest.split(",") if x.strip()]
    if mode == "lex":
        names, tols = [], []
        for item in items:
            name, _, tol = item.partition("@")
            if name not in OBJECTIVES:
                raise InstanceError(
                    "--objective", f"unknown objective {name!r} (known: {', '.join(OBJECTIVES)})"
                )
            if name in names:
                raise InstanceError("--objective", f"{name!r} appears twice")
            try:
                value = float(tol) if tol else 0.0
            except ValueError:
                raise InstanceError("--objective", f"tolerance {tol!r} of {name} is not a number") from None
            if not 0 <= value < 1:
                raise InstanceError("--objective", f"tolerance of {name} must be in [0, 1), got {value:g}")
            names.append(name)
            tols.append(value)
        if not names:
            raise InstanceError(
                "--objective", "lex: needs at least one objective, e.g. lex:acceptance,hardware"
            )
        return ObjectiveSpec("lex", tuple(names), tuple(tols))
    if mode == "weighted":
        try:
            weights = [float(x) for x in items]
        except ValueError:
            raise InstanceError("--objective", f"weights must be numbers, got {rest!r}") from None
        if not 1 <= len(weights) <= len(OBJECTIVES) or any(w < 0 for w in weights):
            raise InstanceError(
                "--objective",
                "weighted: takes 1 to 4 non-negative weights (acceptance, hardware, migrations, intra_moves)",
            )
        return ObjectiveSpec("weighted", OBJECTIVES[: len(weights)], tuple(weights))
    raise InstanceError("--objective", f"must start with lex: or weighted:, got {text!r}")


def solve_exact(
    instance: Instance,
    *,
    model: str = "grmu",
    solver: str = "highs",
    objective: str | ObjectiveSpec = DEFAULT_OBJECTIVE,
    options: SolverOptions | None = None,
    warm_start: bool = True,
    bounds: Sequence[tuple[str, str, float]] = (),
) -> Solution:
    """Solve ``instance`` exactly and return the solution with the verifier's objectives.

    Parameters
    ----------
    model
        Formulation name (``grmu``: the tight GRMU model).
    solver
        Backend name, ``highs`` or ``cpsat``.
    objective
        An objective mode (see the module docstring).
    options
        Time limit (over all stages), threads, seed, gap; the gap defaults to 0 (proof).
    warm_start
        Seed the backend with first fit where it accepts a starting solution.
    bounds
        Epsilon constraints ``(objective, "<=" or ">=", value)`` added before the
        first stage, e.g. ``("hardware", "<=", 5)``.
    """
    if model not in MODELS:
        raise InstanceError("--model", f"unknown model {model!r} (known: {', '.join(MODELS)})")
    spec = parse_objective(objective) if isinstance(objective, str) else objective
    options = options or SolverOptions()
    if options.mip_rel_gap is None:
        options = replace(options, mip_rel_gap=0.0)
    backend = get_backend(solver)
    t0 = time.perf_counter()
    built = build(model, instance)
    missing = [n for n in spec.names if n not in built.objectives]
    if missing:
        raise InstanceError("--objective", f"model {model} has no objective {missing[0]!r}")
    m = built.model
    start = first_fit(instance) if warm_start and backend.capabilities.supports_warm_start else None
    incumbent = start.placed() if start else None

    if spec.mode == "weighted":
        signed = [
            (1 if SENSE[n] == pyo.maximize else -1) * w for n, w in zip(spec.names, spec.values, strict=True)
        ]
        stages = [
            (
                "weighted",
                sum(s * built.expression(n) for n, s in zip(spec.names, signed, strict=True)),
                pyo.maximize,
                0.0,
            )
        ]
    else:
        stages = [
            (n, built.expression(n), SENSE[n], tol) for n, tol in zip(spec.names, spec.values, strict=True)
        ]

    m.epsilon = pyo.ConstraintList()
    for name, op, value in bounds:
        if name not in built.objectives or op not in ("<=", ">="):
            raise InstanceError(
                "--bound", f"expected OBJECTIVE<=VALUE or OBJECTIVE>=VALUE, got {name}{op}{value:g}"
            )
        expr = built.expression(name)
        if _is_constant(expr):  # pyomo refuses trivial constraints; a violated one makes the run infeasible
            if not (pyo.value(expr) <= value if op == "<=" else pyo.value(expr) >= value):
                return _no_solution(
                    instance,
                    model,
                    solver,
                    spec,
                    Termination.INFEASIBLE,
                    t0,
                    f"{name} is {pyo.value(expr):g}, cannot be {op} {value:g}",
                )
            continue
        m.epsilon.add(expr <= value if op == "<=" else expr >= value)
    notes: list[str] = []
    termination, status = Termination.OPTIMAL, Status.OPTIMAL
    bound = gap = None
    m.lex_keep = pyo.ConstraintList()
    for i, (name, expr, sense, tol) in enumerate(stages):
        if _is_constant(expr):  # nothing to decide (e.g. no running workloads)
            notes.append(f"{name} {float(pyo.value(expr)):g} (constant)")
            continue
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(expr=expr, sense=sense)
        stage_options = options
        if options.time_limit_s is not None:
            stage_options = replace(
                options, time_limit_s=max(options.time_limit_s - (time.perf_counter() - t0), 0.01)
            )
        if incumbent is not None:
            stage_options = replace(stage_options, warm_start=built.warm_start(incumbent))
        result = backend.solve(m, stage_options)
        if result.status is Status.NONE:
            notes.append(f"{name}: {result.termination.value} {result.message}".strip())
            return _no_solution(instance, model, solver, spec, result.termination, t0, "; ".join(notes))
        value = float(pyo.value(expr))
        notes.append(f"{name} {value:g} ({result.termination.value})")
        bound, gap = result.bound, result.gap
        if result.termination is not Termination.OPTIMAL:
            termination, status = result.termination, Status.FEASIBLE
        incumbent = built.decode()
        if i + 1 < len(stages):
            slack = max(tol * abs(value), 1e-6)
            m.lex_keep.add(expr >= value - slack if sense == pyo.maximize else expr <= value + slack)

    return solution_for(
        instance,
        built.decode(),
        method=_method(model, solver, spec),
        termination=termination,
        status=status,
        runtime_s=time.perf_counter() - t0,
        bound=bound,
        gap=gap,
        message="; ".join(notes),
    )


def _is_constant(expr: pyo.Expression) -> bool:
    return not any(True for _ in identify_variables(expr))


def _no_solution(
    instance: Instance,
    model: str,
    solver: str,
    spec: ObjectiveSpec,
    termination: Termination,
    t0: float,
    message: str,
) -> Solution:
    """A run that found no placement; every new workload is listed as rejected."""
    return Solution(
        instance=instance.name,
        method=_method(model, solver, spec),
        termination=termination,
        status=Status.NONE,
        placements=(),
        rejected=tuple(w.id for w in instance.workloads if not w.running),
        runtime_s=time.perf_counter() - t0,
        message=message,
    )


def _method(model: str, solver: str, spec: ObjectiveSpec) -> str:
    return f"{model} / {solver}, {spec}"
