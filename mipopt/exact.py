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

import math
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import reduce
from typing import Any

import pyomo.environ as pyo
from pyomo.core.expr.visitor import identify_variables
from pyomo.repn import generate_standard_repn

from mipopt.errors import InstanceError
from mipopt.formulations import MODELS, OBJECTIVES, SENSE, Formulation, build, build_grmu
from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.policies import first_fit
from mipopt.solvers import SolverOptions, get_backend
from mipopt.verify import no_solution, solution_for

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
    use_case: str | None = None,
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
    use_case
        The WPM paper's questions on the tight model (``grmu`` only): ``initial`` (running
        workloads stay where they are), ``compaction`` (running workloads only, onto GPUs
        already in use), ``reconfiguration`` (running workloads only, anywhere), ``joint``
        (everything may move: the default behaviour). New workloads left out are rejected.
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
    method = f"{model} / {solver}, {spec}" + (f", {use_case}" if use_case else "")
    t0 = time.perf_counter()
    work, built = _build(instance, model, use_case)
    missing = [n for n in spec.names if n not in built.objectives]
    if missing:
        raise InstanceError("--objective", f"model {model} has no objective {missing[0]!r}")
    m = built.model
    start = first_fit(work) if warm_start and backend.capabilities.supports_warm_start else None
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
                return _none(
                    instance,
                    method,
                    Termination.INFEASIBLE,
                    t0,
                    f"{name} is {pyo.value(expr):g}, cannot be {op} {value:g}",
                )
            continue
        m.epsilon.add(expr <= value if op == "<=" else expr >= value)
    notes: list[str] = []
    solved = False  # some stage has found a placement, now in `incumbent`
    termination, status = Termination.OPTIMAL, Status.OPTIMAL
    bound = gap = None
    m.lex_keep = pyo.ConstraintList()
    decisive = [st for st in stages if not _is_constant(st[1])]
    for name, expr, _, _ in stages:
        if _is_constant(expr):  # nothing to decide (e.g. no running workloads)
            notes.append(f"{name} {float(pyo.value(expr)):g} (constant)")
    exact = options.mip_rel_gap == 0 and spec.mode == "lex"
    groups = _merge(decisive) if exact else [[(st, 1.0)] for st in decisive]
    for i, group in enumerate(groups):
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(expr=_combined(group), sense=group[0][0][2])
        stage_options = options
        if options.time_limit_s is not None:
            stage_options = replace(
                options, time_limit_s=max(options.time_limit_s - (time.perf_counter() - t0), 0.01)
            )
        if incumbent is not None:
            stage_options = replace(stage_options, warm_start=built.warm_start(incumbent))
        result = backend.solve(m, stage_options)
        names = "+".join(st[0] for st, _ in group)
        if result.status is Status.NONE:
            notes.append(f"{names}: {result.termination.value} {result.message}".strip())
            if not solved:
                return _none(instance, method, result.termination, t0, "; ".join(notes))
            # a later stage ran out of time: the earlier stages' placement is still a solution
            termination, status = result.termination, Status.FEASIBLE
            break
        solved = True
        bound, gap = result.bound, result.gap
        if result.termination is not Termination.OPTIMAL:
            termination, status = result.termination, Status.FEASIBLE
        incumbent = built.decode()
        for j, ((name, expr, sense, tol), _) in enumerate(group):
            value = float(pyo.value(expr))
            merged = " in one solve with " + group[0][0][0] if j else ""
            notes.append(f"{name} {value:g} ({result.termination.value}{merged})")
            if i + 1 < len(groups):
                slack = max(tol * abs(value), 1e-6)
                m.lex_keep.add(expr >= value - slack if sense == pyo.maximize else expr <= value + slack)
        if result.termination is not Termination.OPTIMAL:
            # the time is spent: later stages would only echo this placement, and the bound
            # and gap that matter are this stage's
            rest = [st[0] for g in groups[i + 1 :] for st, _ in g]
            if rest:
                notes.append(f"not optimized: {', '.join(rest)}")
            break

    if not solved:  # every objective is constant here: any feasible point is optimal
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(expr=0.0)
        start_values = built.warm_start(incumbent) if incumbent is not None else None
        result = backend.solve(m, replace(options, warm_start=start_values))
        if result.status is Status.NONE:
            notes.append(f"feasibility: {result.termination.value} {result.message}".strip())
            return _none(instance, method, result.termination, t0, "; ".join(notes))
        if result.termination is not Termination.OPTIMAL:
            termination, status = result.termination, Status.FEASIBLE
        incumbent = built.decode()
    return solution_for(
        instance,
        incumbent if incumbent is not None else built.decode(),
        method=method,
        termination=termination,
        status=status,
        runtime_s=time.perf_counter() - t0,
        bound=bound,
        gap=gap,
        message="; ".join(notes),
    )


Stage = tuple[str, Any, Any, float]  # (objective name, expression, sense, tolerance)

#: A merged stage's second objective must still move the combined one by this much per unit step.
MIN_MERGED_STEP = 1e-4


def _merge(stages: list[Stage]) -> list[list[tuple[Stage, float]]]:
    """Group consecutive lexicographic stages that one solve can settle exactly, with their weights.

    Stage k and k+1 merge when stage k has no tolerance, both objectives move in steps
    (every coefficient an integer multiple of a step g), and the range R of the second
    objective over the variables' bounds is known: then ``f_k +/- eps f_k+1`` with
    ``eps = g_k / (R + 1)`` ranks points by f_k first (a step of f_k, at least g_k,
    outweighs any change of eps f_k+1) and by f_k+1 among f_k's optima. Merging stops
    where ``eps * g_k+1`` would fall below :data:`MIN_MERGED_STEP`, which keeps the
    second objective's steps well above the solvers' optimality tolerance (1e-6).
    """
    groups: list[list[tuple[Stage, float]]] = []
    for st in stages:
        if groups and groups[-1][-1][0][3] == 0:
            (last, weight) = groups[-1][-1]
            step_last, step_next, spread = _step(last[1]), _step(st[1]), _range(st[1])
            if step_last and step_next and spread is not None:
                eps = weight * step_last / (spread + 1)
                if eps * step_next >= MIN_MERGED_STEP:
                    groups[-1].append((st, eps))
                    continue
        groups.append([(st, 1.0)])
    return groups


def _combined(group: list[tuple[Stage, float]]) -> Any:
    sense = group[0][0][2]
    return sum((w if st[2] == sense else -w) * st[1] for st, w in group)


def lattice_step(values: Iterable[float]) -> float | None:
    """The largest g such that every value is an integer multiple of g.

    Values are read as fractions with denominators up to 10**6; None when there is
    no non-zero value or one is not such a fraction.
    """
    fractions = []
    for x in values:
        if not x:
            continue
        f = Fraction(abs(float(x))).limit_denominator(10**6)
        if float(f) != abs(float(x)):  # not a short fraction: no lattice to trust
            return None
        fractions.append(f)
    if not fractions:
        return None
    num = reduce(math.gcd, (f.numerator for f in fractions))
    den = reduce(math.lcm, (f.denominator for f in fractions))
    return num / den


def _step(expr: Any) -> float | None:
    repn = generate_standard_repn(expr, compute_values=True)
    return lattice_step(repn.linear_coefs) if repn.is_linear() else None


def _range(expr: Any) -> float | None:
    """max - min of ``expr`` over its variables' bounds (None if a bound is missing)."""
    repn = generate_standard_repn(expr, compute_values=True)
    total = 0.0
    for c, v in zip(repn.linear_coefs, repn.linear_vars, strict=True):
        lb, ub = v.bounds
        if lb is None or ub is None:
            return None
        total += abs(c) * (ub - lb)
    return total


USE_CASES = ("initial", "compaction", "reconfiguration", "joint")


def _build(instance: Instance, model: str, use_case: str | None) -> tuple[Instance, Formulation]:
    """The instance the model sees and the built model, for a use case (None: the instance as is)."""
    if use_case is None or use_case == "joint":
        return instance, build(model, instance)
    if use_case not in USE_CASES:
        raise InstanceError("--use-case", f"unknown use case {use_case!r} (known: {', '.join(USE_CASES)})")
    if model != "grmu":
        raise InstanceError("--use-case", f"model {model} takes no use case (grmu and wpm do)")
    if use_case == "initial":
        return instance, build_grmu(instance, fixed=[w.id for w in instance.running])
    work = replace(instance, workloads=instance.running)  # the new workloads wait
    built = build_grmu(work)
    if use_case == "compaction":  # onto GPUs already in use: the free ones stay off
        busy = {g for g, _ in work.current_placement().values()}
        for g in work.gpus:
            if g.id not in busy:
                built.model.U[g.id].fix(0)
    return work, built


def _is_constant(expr: pyo.Expression) -> bool:
    return not any(True for _ in identify_variables(expr))


def _none(instance: Instance, method: str, termination: Termination, t0: float, message: str) -> Solution:
    return no_solution(
        instance, method=method, termination=termination, runtime_s=time.perf_counter() - t0, message=message
    )
