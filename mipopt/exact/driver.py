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

How a solve runs (``models/grmu.md``, section Staged proofs): the best of the fast
heuristics seeds it; each stage runs on the model variant that serves it best (the
configuration model's aggregated, restricted or detailed variant, or the one slot or
paper model); one deadline covers the whole call; every stage is reported in its own
units (:class:`~mipopt.instance.StageResult`); a stage that does not finish ends the
run with the best placement known, never a worse one than the warm start.
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import reduce
from typing import Any

import pyomo.environ as pyo
from pyomo.core.expr.visitor import identify_variables
from pyomo.repn import generate_standard_repn

from mipopt.errors import InstanceError
from mipopt.exact.models import MODELS, OBJECTIVES, SENSE, Formulation, GrmuModel, build, build_grmu
from mipopt.exact.models.config import ConfigModel, build_config
from mipopt.exact.preprocess.indexing import TooManyMultisets
from mipopt.instance import Instance, Solution, StageResult, Status, Termination
from mipopt.instance.summary import value_text
from mipopt.solvers import SolverOptions, get_backend, relative_gap
from mipopt.verifier import evaluate, no_solution, solution_for, verify

DEFAULT_OBJECTIVE = "lex:acceptance,hardware,migrations"
Placed = dict[str, tuple[str, int]]


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
        Naming ``objective`` and what is wrong.
    """
    mode, _, rest = text.partition(":")
    items = [x.strip() for x in rest.split(",") if x.strip()]
    if mode == "lex":
        names, tols = [], []
        for item in items:
            name, _, tol = item.partition("@")
            if name not in OBJECTIVES:
                raise InstanceError(
                    "objective", f"unknown objective {name!r} (known: {', '.join(OBJECTIVES)})"
                )
            if name in names:
                raise InstanceError("objective", f"{name!r} appears twice")
            try:
                value = float(tol) if tol else 0.0
            except ValueError:
                raise InstanceError("objective", f"tolerance {tol!r} of {name} is not a number") from None
            if not 0 <= value < 1:
                raise InstanceError("objective", f"tolerance of {name} must be in [0, 1), got {value:g}")
            names.append(name)
            tols.append(value)
        if not names:
            raise InstanceError(
                "objective", "lex: needs at least one objective, e.g. lex:acceptance,hardware"
            )
        return ObjectiveSpec("lex", tuple(names), tuple(tols))
    if mode == "weighted":
        try:
            weights = [float(x) for x in items]
        except ValueError:
            raise InstanceError("objective", f"weights must be numbers, got {rest!r}") from None
        if not 1 <= len(weights) <= len(OBJECTIVES) or any(w < 0 for w in weights):
            raise InstanceError(
                "objective",
                "weighted: takes 1 to 4 non-negative weights (acceptance, hardware, migrations, intra_moves)",
            )
        return ObjectiveSpec("weighted", OBJECTIVES[: len(weights)], tuple(weights))
    raise InstanceError("objective", f"must start with lex: or weighted:, got {text!r}")


#: Fast heuristics whose best placement (by the objective's order) seeds every stage.
#: A named fast heuristic that the exact driver may try as a warm start.
Heuristic = tuple[str, Callable[[Instance], Solution]]
#: Time kept back per workload to decode and verify the answer after the last stage (about 2.5 s at
#: 50,000 workloads on a 2-core Xeon).
FINISH_S_PER_WORKLOAD = 5e-5
#: Share of the time limit the portfolio may take; the rest is the stages'.
PORTFOLIO_SHARE = 0.4
#: A guess of the first heuristic's time per workload (first fit takes 75 us on a 2-core Xeon).
PORTFOLIO_S_PER_WORKLOAD = 1e-4
#: Share of the time left that the restricted model may take before the migrations stage.
RESTRICTED_SHARE = 0.25


@dataclass(frozen=True, slots=True)
class StageEvent:
    """A progress report of :func:`solve_exact`: a stage starts (``done`` False) or ends.

    ``value`` and ``bound`` are in the stage objective's own units (None when unknown).
    """

    stage: str
    model: str
    done: bool
    value: float | None
    bound: float | None
    elapsed_s: float
    termination: Termination | None = None


def solve_exact(
    instance: Instance,
    *,
    model: str = "grmu",
    solver: str = "highs",
    objective: str | ObjectiveSpec = DEFAULT_OBJECTIVE,
    options: SolverOptions | None = None,
    portfolio: Sequence[Heuristic] = (),
    warm_start: Solution | None = None,
    bounds: Sequence[tuple[str, str, float]] = (),
    use_case: str | None = None,
    progress: Callable[[StageEvent], None] | None = None,
) -> Solution:
    """Solve ``instance`` exactly and return the solution with the verifier's objectives.

    The answer is never worse, in the objective's order, than the best warm start
    (the ``portfolio`` of fast heuristics, and the current placement with every new
    workload rejected, which is always feasible), whatever the time limit: a stage the
    solver could not finish leaves the best placement known, with status ``feasible``.

    Parameters
    ----------
    model
        Formulation name: ``grmu`` (the configuration model, staged), ``grmu-slots`` (the
        tight model over start slots) or ``grmu-paper`` (the paper's Eqs. 3-26).
    solver
        Backend name, ``highs`` or ``cpsat``.
    objective
        An objective mode (see the module docstring).
    options
        Time limit for the whole call (model building, every stage, decoding), threads,
        seed, gap (default 0: proof), a stop flag (Ctrl-C) and a deadline.
    portfolio
        Fast heuristics to seed the stages with, cheapest first (:func:`mipopt.solve` passes
        first fit, mfi, bf and ibm-initial); they share :data:`PORTFOLIO_SHARE` of the limit.
    warm_start
        A placement of ``instance`` to start from as well (it must pass the verifier).
    use_case
        The WPM paper's questions: ``initial`` (running workloads stay where they are),
        ``compaction`` (running workloads only, onto GPUs already in use),
        ``reconfiguration`` (running workloads only, anywhere), ``joint`` (everything may
        move: the default). New workloads left out are rejected.
    bounds
        Epsilon constraints ``(objective, "<=" or ">=", value)`` on every stage, e.g.
        ``("hardware", "<=", 5)``.
    progress
        Called when a stage starts and ends.

    Returns
    -------
    Solution
        With one :class:`~mipopt.instance.StageResult` per stage; ``bound`` and ``gap``
        are the first unproven stage's (or the last stage's), in that objective's units.
    """
    t0 = time.perf_counter()
    if model not in MODELS:
        raise InstanceError("model", f"unknown model {model!r} (known: {', '.join(MODELS)})")
    spec = parse_objective(objective) if isinstance(objective, str) else objective
    options = options or SolverOptions()
    if options.mip_rel_gap is None:
        options = replace(options, mip_rel_gap=0.0)
    backend = get_backend(solver)
    deadline = None if options.time_limit_s is None else time.monotonic() + options.time_limit_s
    if options.deadline is not None:
        deadline = options.deadline if deadline is None else min(deadline, options.deadline)
    for name, op, _ in bounds:
        if name not in OBJECTIVES or op not in ("<=", ">="):
            raise InstanceError("bounds", f"expected (objective, '<=' or '>=', value), got {name}{op}")
    work, fixed, closed = _use_case(instance, model, use_case)
    run = _Run(work, spec, options, backend, deadline, bounds, progress, t0)
    method = f"{model} / {solver}, {spec}" + (f", {use_case}" if use_case else "")

    run.offer(work.current_placement(), "current placement")
    if warm_start is not None:
        run.offer(_given_start(instance, work, warm_start), "the given warm start")
    for name, placed in _portfolio(work, portfolio, run):
        run.offer(placed, name)

    if model == "grmu":
        try:
            models = _ConfigModels(work, fixed, closed)
            models.get("aggregate")  # enumerates the configurations of every GPU type
        except TooManyMultisets as err:
            run.notes.append(f"configuration model not used ({err}): the slot model instead")
            model = "grmu-slots"
    if model == "grmu":
        run.stages_config(models)
    else:
        run.stages_single(_build(work, model, use_case))
    return run.solution(instance, method)


class _Run:
    """One call of :func:`solve_exact`: the clock, the incumbent, the stages done."""

    def __init__(
        self,
        instance: Instance,
        spec: ObjectiveSpec,
        options: SolverOptions,
        backend: Any,
        deadline: float | None,
        bounds: Sequence[tuple[str, str, float]],
        progress: Callable[[StageEvent], None] | None,
        t0: float,
    ) -> None:
        self.work = instance
        self.spec = spec
        self.options = options
        self.backend = backend
        self.deadline = deadline
        self.bounds = list(bounds)
        self.progress = progress
        self.t0 = t0
        self.placed: dict[str, tuple[str, int]] | None = None
        self.values: dict[str, float] = {}
        self.source = ""
        self.keeps: list[tuple[str, Any, float, float]] = []  # (name, sense, value, tolerance)
        self.stages: list[StageResult] = []
        self.notes: list[str] = []
        self.infeasible = False

    # --- the clock

    def left(self) -> float | None:
        """Seconds left for solving: to the deadline, less the time the answer takes to put together."""
        if self.deadline is None:
            return None
        return self.deadline - time.monotonic() - FINISH_S_PER_WORKLOAD * len(self.work.workloads)

    def stopped(self) -> Termination | None:
        """Why no further stage may start, or None."""
        stop = self.options.stop
        if stop is not None and stop.is_set:
            return Termination.INTERRUPTED
        left = self.left()
        if left is not None and left <= 0:
            return Termination.TIME_LIMIT
        return None

    def stage_options(self, warm: dict[str, float] | None, share: float = 1.0) -> SolverOptions:
        left = self.left()
        limit = None if left is None else max(left * share, 0.01)
        return replace(self.options, time_limit_s=limit, warm_start=warm or None, deadline=self.deadline)

    # --- the incumbent

    def evaluate(self, placed: dict[str, tuple[str, int]]) -> dict[str, float]:
        objectives, metrics = evaluate(self.work, placed)
        values = objectives.to_dict()
        values["intra_moves"] = float(metrics["moves_intra_gpu"])  # start changes on the same GPU
        return values

    def allowed(self, values: dict[str, float]) -> bool:
        for name, op, bound in self.bounds:
            v = values[name]
            if (op == "<=" and v > bound + 1e-6) or (op == ">=" and v < bound - 1e-6):
                return False
        for name, sense, value, tol in self.keeps:
            slack = max(tol * abs(value), 1e-6)
            if (sense == pyo.maximize and values[name] < value - slack) or (
                sense != pyo.maximize and values[name] > value + slack
            ):
                return False
        return True

    def key(self, values: dict[str, float]) -> tuple[float, ...]:
        """Smaller is better: the objective's order, start changes last."""
        sign = {n: (-1.0 if SENSE[n] == pyo.maximize else 1.0) for n in OBJECTIVES}
        if self.spec.mode == "weighted":
            total = sum(
                w * sign[n] * values[n] for n, w in zip(self.spec.names, self.spec.values, strict=True)
            )
            return (total, values["intra_moves"])
        names = [*self.spec.names, *(n for n in OBJECTIVES if n not in self.spec.names)]
        return tuple(sign[n] * values[n] for n in names)

    def offer(self, placed: dict[str, tuple[str, int]], source: str) -> bool:
        """Keep ``placed`` if it obeys the bounds and stages so far and beats the incumbent."""
        values = self.evaluate(placed)
        if not self.allowed(values):
            return False
        if self.placed is not None and self.key(values) >= self.key(self.values):
            return False
        self.placed, self.values, self.source = placed, values, source
        return True

    # --- stages

    def stage_list(self) -> list[tuple[str, Any, float]]:
        """(objective name, sense, tolerance) per stage; ``weighted`` is one stage."""
        if self.spec.mode == "weighted":
            return [("weighted", pyo.maximize, 0.0)]
        return [(n, SENSE[n], tol) for n, tol in zip(self.spec.names, self.spec.values, strict=True)]

    def objective_expr(self, built: Formulation, name: str) -> Any:
        if name != "weighted":
            return built.expression(name)
        return sum(
            (1 if SENSE[n] == pyo.maximize else -1) * w * built.expression(n)
            for n, w in zip(self.spec.names, self.spec.values, strict=True)
            if n in built.objectives
        )

    def prepare(self, built: Formulation) -> bool:
        """Add the bounds and the kept stage optima to ``built`` (once each); False if a bound is violated."""
        m = built.model
        if not hasattr(m, "lex_keep"):
            m.lex_keep = pyo.ConstraintList()
            m.epsilon = pyo.ConstraintList()
            m.kept_count = 0
            for name, op, value in self.bounds:
                expr = built.expression(name)
                if _is_constant(expr):
                    v = float(pyo.value(expr))
                    if not (v <= value + 1e-9 if op == "<=" else v >= value - 1e-9):
                        self.notes.append(f"{name} is {v:g}, cannot be {op} {value:g}")
                        return False
                    continue
                m.epsilon.add(expr <= value if op == "<=" else expr >= value)
        for name, sense, value, tol in self.keeps[m.kept_count :]:
            expr = built.expression(name)
            if not _is_constant(expr):
                slack = max(tol * abs(value), 1e-6)
                m.lex_keep.add(expr >= value - slack if sense == pyo.maximize else expr <= value + slack)
        m.kept_count = len(self.keeps)
        return True

    def solve_stage(
        self, built: Formulation, name: str, sense: Any, label: str, share: float = 1.0
    ) -> tuple[Any, float | None]:
        """One solve of ``built`` for objective ``name``; the result and the stage's bound in its units."""
        m = built.model
        m.del_component("stage_objective")
        expr = self.objective_expr(built, name)
        m.stage_objective = pyo.Objective(expr=expr, sense=sense)
        warm = built.warm_start(self.placed) if self.placed is not None else None
        self.report(name, label, False, self.values.get(name), None)
        result = self.backend.solve(m, self.stage_options(warm, share))
        if result.has_solution:
            self.offer(built.decode(), f"{label} {name}")
        return result, _rounded_bound(expr, result.bound, sense)

    def report(
        self,
        stage: str,
        model: str,
        done: bool,
        value: float | None,
        bound: float | None,
        termination: Termination | None = None,
    ) -> None:
        if self.progress is not None:
            self.progress(
                StageEvent(stage, model, done, value, bound, time.perf_counter() - self.t0, termination)
            )

    def record(
        self, name: str, sense: Any, tol: float, result: Any, bound: float | None, label: str, started: float
    ) -> bool:
        """Record a solved stage, keep its optimum for the next ones; True when later stages may run."""
        value = self.values.get(name) if name != "weighted" else None
        if name == "weighted" and result.has_solution:
            value = result.objective
        termination = result.termination
        proven = termination is Termination.OPTIMAL
        if termination is Termination.INFEASIBLE and self.placed is None:
            self.infeasible = True
        unchecked = name == "weighted" or result.objective is None or value is None
        if (
            proven
            and not unchecked
            and abs(float(result.objective) - float(value or 0)) > 1e-6 * max(1.0, abs(value or 0))
        ):
            # the decoded placement is not the model's optimum: claim nothing (never seen in tests)
            proven, termination = False, Termination.ERROR
            self.notes.append(f"{name}: the model's optimum {result.objective:g} decoded to {value:g}")
        if proven and value is not None and bound is not None:
            bound = value  # the rounded bound of a proven stage is its value
        gap = relative_gap(value, bound)
        if termination is Termination.OPTIMAL and gap not in (None, 0.0):
            # the solver's own tolerances proved less than the incumbent claims
            proven, termination = False, Termination.GAP_LIMIT
        if not result.has_solution and termination is Termination.OPTIMAL:
            termination = Termination.ERROR
        self.stages.append(
            StageResult(name, value, bound, gap, proven, termination, time.perf_counter() - started, label)
        )
        self.report(name, label, True, value, bound, termination)
        if value is not None and name != "weighted":
            self.keeps.append((name, sense, value, tol))
        return proven or termination is Termination.GAP_LIMIT

    def constant(self, built: Formulation, name: str, sense: Any, tol: float) -> None:
        """A stage with nothing to decide (e.g. no running workloads): its value is proven."""
        v = float(pyo.value(built.expression(name)))
        self.stages.append(StageResult(name, v, v, 0.0, True, Termination.OPTIMAL, 0.0, "constant"))
        self.keeps.append((name, sense, v, tol))

    def obvious(self, name: str, sense: Any, tol: float, started: float) -> bool:
        """Record the stage without a solve when the incumbent meets a bound that needs none:
        every workload accepted, or nothing migrated (Eq. 5 is never negative)."""
        if self.placed is None or name not in ("acceptance", "migrations"):
            return False
        best = sum(w.weight for w in self.work.workloads) if name == "acceptance" else 0.0
        if abs(self.values[name] - best) > 1e-9:
            return False
        self.stages.append(
            StageResult(
                name, best, best, 0.0, True, Termination.OPTIMAL, time.perf_counter() - started, "incumbent"
            )
        )
        self.keeps.append((name, sense, best, tol))
        self.report(name, "incumbent", True, best, best, Termination.OPTIMAL)
        return True

    def stages_single(self, built: Formulation) -> None:
        """Every stage on one formulation (``grmu-slots``, ``grmu-paper``)."""
        missing = [n for n in self.spec.names if n not in built.objectives]
        if missing:
            model = "grmu-slots" if isinstance(built, GrmuModel) else "grmu-paper"
            raise InstanceError("objective", f"model {model} has no objective {missing[0]!r}")
        if not self.prepare(built):
            self.infeasible = True
            return
        label = "slots" if isinstance(built, GrmuModel) else "paper"
        decisive = []
        for name, sense, tol in self.stage_list():
            if name == "weighted" or not _is_constant(built.expression(name)):
                decisive.append((name, sense, tol))
            else:
                self.constant(built, name, sense, tol)
        if (
            self.spec.mode == "lex"
            and "intra_moves" in built.objectives
            and "intra_moves" not in self.spec.names
        ) and not _is_constant(built.expression("intra_moves")):  # the default last tie-breaker
            decisive.append(("intra_moves", SENSE["intra_moves"], 0.0))
        for name, sense, tol in decisive:
            if self.stopped() is not None:
                break
            started = time.perf_counter()
            if self.obvious(name, sense, tol, started):
                continue
            if not self.prepare(built):
                break
            result, bound = self.solve_stage(built, name, sense, label)
            if not self.record(name, sense, tol, result, bound, label, started):
                break

    def stages_config(self, models: _ConfigModels) -> None:
        """The staged pipeline of the configuration model (``models/grmu.md``, section Staged proofs).

        Stages whose objectives so far are acceptance and hardware run on the aggregated
        model; a migrations stage first asks whether a placement keeping every running
        workload home reaches the earlier optima (then 0 migrations is proven), and only
        otherwise solves the detailed model; weighted objectives run on the detailed model.
        """
        seen: set[str] = {name for name, _, _ in self.bounds}
        for name, sense, tol in self.stage_list():
            if self.stopped() is not None:
                break
            started = time.perf_counter()
            seen.add(name)
            if name == "weighted" or not seen <= {"acceptance", "hardware"}:
                label = "detailed"
            else:
                label = "aggregate"
            if self.obvious(name, sense, tol, started):
                continue
            if name == "migrations" and self.migrations_zero(models, started):
                continue
            if name == "intra_moves":  # decided by the per-GPU decode: nothing to solve
                self.notes.append("intra_moves minimized per GPU by the decoding of the configurations")
                continue
            built = models.get(label)
            if self.stopped() is not None or not self.prepare(built):
                if not self.stages:
                    self.infeasible = self.stopped() is None
                break
            if name != "weighted" and _is_constant(built.expression(name)):
                self.constant(built, name, sense, tol)
                continue
            result, bound = self.solve_stage(built, name, sense, label)
            if not self.record(name, sense, tol, result, bound, label, started):
                break

    def migrations_zero(self, models: _ConfigModels, started: float) -> bool:
        """Prove 0 migrations by a placement that keeps every running workload home; True if done."""

        def proven(label: str) -> bool:
            self.stages.append(
                StageResult(
                    "migrations",
                    0.0,
                    0.0,
                    0.0,
                    True,
                    Termination.OPTIMAL,
                    time.perf_counter() - started,
                    label,
                )
            )
            self.keeps.append(("migrations", SENSE["migrations"], 0.0, 0.0))
            self.report("migrations", label, True, 0.0, 0.0, Termination.OPTIMAL)
            return True

        built = models.get("restricted")
        if self.stopped() is not None or not self.prepare(built):
            return False
        m = built.model
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(expr=0.0 * m.PHI[self.work.hosts[0].id])
        self.report("migrations", "restricted", False, self.values.get("migrations"), None)
        result = self.backend.solve(m, self.stage_options(None, RESTRICTED_SHARE))
        if (
            result.has_solution
            and self.offer(built.decode(), "restricted")
            and self.values["migrations"] == 0
        ):
            return proven("restricted")
        if result.termination is Termination.INFEASIBLE:
            self.notes.append("no placement keeping every running workload home reaches the optima above")
        return False

    # --- the answer

    def solution(self, instance: Instance, method: str) -> Solution:
        runtime = time.perf_counter() - self.t0
        stages = tuple(self.stages)
        unproven = next((st for st in stages if not st.proven), None)
        wanted = len(self.stage_list())
        done = [st for st in stages if st.proven]
        if self.placed is None:
            termination = Termination.INFEASIBLE if self.infeasible else (self.stopped() or Termination.ERROR)
            notes = self.notes or [f"{st.objective}: {st.termination.value}" for st in stages]
            return no_solution(
                instance, method=method, termination=termination, runtime_s=runtime, message="; ".join(notes)
            )
        all_proven = unproven is None and len(done) >= wanted
        if all_proven:
            termination, status = Termination.OPTIMAL, Status.OPTIMAL
        else:
            status = Status.FEASIBLE
            termination = (
                unproven.termination if unproven is not None else (self.stopped() or Termination.TIME_LIMIT)
            )
        named = [st for st in stages if st.objective in {n for n, _, _ in self.stage_list()}]
        shown = unproven or (named[-1] if named else None)
        bound = shown.bound if shown is not None else None
        gap = shown.gap if shown is not None else None
        notes = [
            f"{st.objective} {value_text(st.value)} ({'proven' if st.proven else st.termination.value}, {st.model}, {st.runtime_s:.2f} s)"
            for st in stages
        ]
        missing = [n for n, _, _ in self.stage_list() if n not in {st.objective for st in stages}]
        if missing and not all_proven:
            notes.append(f"not optimized: {', '.join(missing)}")
        notes.append(f"answer from {self.source}")
        sol = solution_for(
            instance,
            self.placed,
            method=method,
            termination=termination,
            status=status,
            runtime_s=runtime,
            bound=bound,
            gap=gap,
            message="; ".join([*notes, *self.notes]),
        )
        return replace(sol, stages=stages)


class _ConfigModels:
    """The configuration model's variants of one instance, built when first needed."""

    def __init__(self, work: Instance, fixed: frozenset[str] | None, closed: frozenset[str]) -> None:
        self.work, self.fixed, self.closed = work, fixed, closed
        self.built: dict[str, ConfigModel] = {}

    def get(self, mode: str) -> ConfigModel:
        if mode not in self.built:
            self.built[mode] = build_config(self.work, mode=mode, fixed=self.fixed, closed=self.closed)  # type: ignore[arg-type]
        return self.built[mode]


def _given_start(instance: Instance, work: Instance, start: Solution) -> Placed:
    """A caller's warm start, checked by the verifier, restricted to the use case's workloads."""
    report = verify(instance, start)
    if not report.valid:
        raise InstanceError("warm_start", f"not a valid placement of {instance.name}: {report.violations[0]}")
    ids = {w.id for w in work.workloads}
    return {w: spot for w, spot in start.placed().items() if w in ids}


def _portfolio(work: Instance, portfolio: Sequence[Heuristic], run: _Run) -> Iterator[tuple[str, Placed]]:
    """The placements of the fast heuristics (running workloads where they run), within
    :data:`PORTFOLIO_SHARE` of the time limit: a heuristic runs only if, at the pace of the
    slowest so far (for the first, :data:`PORTFOLIO_S_PER_WORKLOAD`), it ends within that share."""
    left = run.left()
    budget = None if left is None else left * PORTFOLIO_SHARE
    start = time.monotonic()
    pace = PORTFOLIO_S_PER_WORKLOAD * len(work.workloads)
    for i, (name, heuristic) in enumerate(portfolio):
        spent = time.monotonic() - start
        if run.stopped() is not None or (budget is not None and spent + pace > budget):
            return
        t0 = time.monotonic()
        sol = heuristic(work)
        pace = max(pace if i else 0.0, time.monotonic() - t0)
        if sol.status is not Status.NONE:
            yield name, sol.placed()


def _rounded_bound(expr: Any, bound: float | None, sense: Any) -> float | None:
    """A solver's bound on ``expr`` rounded to the values ``expr`` can take (const + k x step)."""
    if bound is None or not math.isfinite(bound):
        return bound
    repn = generate_standard_repn(expr, compute_values=True)
    step = lattice_step(repn.linear_coefs) if repn.is_linear() else None
    if not step or not all(v.is_integer() for v in repn.linear_vars):
        return bound
    const = float(repn.constant)
    k = (bound - const) / step
    k = math.floor(k + 1e-6) if sense == pyo.maximize else math.ceil(k - 1e-6)
    return const + k * step


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


USE_CASES = ("initial", "compaction", "reconfiguration", "joint")


def _use_case(
    instance: Instance, model: str, use_case: str | None
) -> tuple[Instance, frozenset[str] | None, frozenset[str]]:
    """The instance the model sees, the running workloads held in place (None: the pinned
    ones) and the GPUs that must stay off, for a WPM use case (None: the instance as is)."""
    if use_case is None or use_case == "joint":
        return instance, None, frozenset()
    if use_case not in USE_CASES:
        raise InstanceError("use_case", f"unknown use case {use_case!r} (known: {', '.join(USE_CASES)})")
    if model not in ("grmu", "grmu-slots"):
        raise InstanceError("use_case", f"model {model} takes no use case (grmu, grmu-slots and wpm do)")
    if use_case == "initial":
        return instance, frozenset(w.id for w in instance.running), frozenset()
    work = replace(instance, workloads=instance.running)  # the new workloads wait
    if use_case == "compaction":  # onto GPUs already in use: the free ones stay off
        busy = {g for g, _ in work.current_placement().values()}
        return work, None, frozenset(g.id for g in work.gpus if g.id not in busy)
    return work, None, frozenset()


def _build(work: Instance, model: str, use_case: str | None) -> Formulation:
    """The slot or paper formulation of the use case's instance."""
    if model != "grmu-slots":
        return build(model, work)
    _, fixed, closed = _use_case(work, model, use_case)
    built = build_grmu(work, fixed=fixed)
    for gpu in closed:
        built.model.U[gpu].fix(0)
    return built


def _is_constant(expr: pyo.Expression) -> bool:
    return not any(True for _ in identify_variables(expr))
