"""Exact solving: a formulation, a backend and an objective mode, returning a verified-shape Solution.

Objective modes (``--objective``):

* ``lex:acceptance,hardware,migrations,restarts`` (the default): optimize each objective
  in turn, keeping the earlier optima as constraints. A stage may carry a relative
  tolerance, ``lex:acceptance@0.05,hardware``: later stages may give up 5 % of it.
* ``weighted:1,0.1,0.01,0.01``: one objective, acceptance x 1 - hardware x 0.1 -
  migrations x 0.01 - restarts x 0.01.

Objective names: ``acceptance`` (maximized), ``hardware``, ``migrations`` (GRMU Eq. 5 as
the paper prints it) and ``restarts`` (running workloads whose GPU or start changes, by
migration weight), minimized. :data:`PRIORITIES` names the common orders. Proof is the
default: the relative MIP gap is 0 unless the caller sets one. A
:class:`~mipopt.instance.Budget` is a hard constraint of every stage.

How a solve runs (``models/grmu.md``, section Staged proofs): the best of the fast
heuristics seeds it; each stage runs on the model variant that serves it best (the
configuration model's aggregated, restricted, detailed or keep variant, or the one slot or
paper model; the slot model finishes what the configuration model cannot decide: starts);
one deadline covers the whole call; every stage is reported in its own units
(:class:`~mipopt.instance.StageResult`); a stage that does not finish ends the run with
the best placement known, never a worse one than the warm start, and that answer's
restarts are brought down for the acceptance and hardware it reached before it is returned
(within the time kept back: the configuration model's keep variant, a search over hosts from
the home start's answer and from the answer, :mod:`mipopt.exact.lns`, then
:mod:`mipopt.exact.keep`; ``models/grmu.md``, "Anytime answers").
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from fractions import Fraction
from functools import reduce
from typing import Any

import pyomo.environ as pyo
from pyomo.core.expr.visitor import identify_variables
from pyomo.repn import generate_standard_repn

from mipopt._fields import shown
from mipopt.errors import InstanceError
from mipopt.exact.fixing import dark_homes, hosts_off
from mipopt.exact.keep import keep_running, smallest_profiles
from mipopt.exact.lns import DELAY_SHARE, HostSearch
from mipopt.exact.models import MEASURES, MODELS, OBJECTIVES, SENSE, Formulation, build, build_slots
from mipopt.exact.models.config import ConfigModel, build_config
from mipopt.exact.preprocess import fixed_ids, profile_taken
from mipopt.exact.preprocess.indexing import TooManyMultisets
from mipopt.instance import Budget, Instance, Solution, StageResult, Status, Termination, Workload
from mipopt.instance.budget import UNLIMITED
from mipopt.instance.summary import value_text
from mipopt.solvers import SolverOptions, get_backend, relative_gap
from mipopt.solvers.base import feasible_start
from mipopt.solvers.highs import HighsRival
from mipopt.solvers.matrix import compile_model
from mipopt.verifier import evaluate, no_solution, solution_for, verify

#: Named objective orders (``--priority``): ``hardware`` is GRMU's three (Eqs. 3-5) and then
#: the fewest restarts among their optima; ``disruption`` keeps running workloads where they
#: are unless a new workload needs the room; ``paper`` is GRMU's Eqs. 3-5 alone, as printed.
PRIORITIES = {
    "hardware": "lex:acceptance,hardware,migrations,restarts",
    "disruption": "lex:acceptance,restarts,hardware",
    "paper": "lex:acceptance,hardware,migrations",
}
DEFAULT_OBJECTIVE = PRIORITIES["hardware"]
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

    def order(self) -> tuple[str, ...]:
        """Every objective, the spec's first, the rest in :data:`OBJECTIVES` order (tie-breakers)."""
        return (*self.names, *(n for n in OBJECTIVES if n not in self.names))

    def weighed(self) -> tuple[str, ...]:
        """The objectives a ``weighted:`` spec gives a positive weight."""
        return tuple(n for n, w in zip(self.names, self.values, strict=True) if w > 0)

    def total(self, values: dict[str, float]) -> float:
        """The weighted sum of ``values``, each objective signed so that smaller is better."""
        return sum(w * _sign(n) * values[n] for n, w in zip(self.names, self.values, strict=True))


#: The largest weight of ``weighted:``: 1.7e308 times a count of workloads is infinite, and
#: beside a weight 1e9 times larger a weight of 1 is lost in the solver's relative tolerances.
MAX_WEIGHT = 1e9


def parse_objective(text: str) -> ObjectiveSpec:
    """Parse ``lex:a,b@tol,...``, ``weighted:w1,...,w4`` or a name of :data:`PRIORITIES`.

    Raises
    ------
    InstanceError
        Naming ``objective`` and what is wrong.

    Examples
    --------
    >>> str(parse_objective("disruption"))
    'lex:acceptance,restarts,hardware'
    >>> parse_objective("lex:acceptance,intra_moves")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: objective: intra_moves is retired: restarts counts start changes on a GPU and moves to another GPU (lex:acceptance,hardware,migrations,restarts)
    """
    if text in PRIORITIES:
        text = PRIORITIES[text]
    mode, _, rest = text.partition(":")
    items = [x.strip() for x in rest.split(",") if x.strip()]
    if mode == "lex":
        names, tols = [], []
        for item in items:
            name, _, tol = item.partition("@")
            if name == "intra_moves":
                raise InstanceError(
                    "objective",
                    "intra_moves is retired: restarts counts start changes on a GPU and moves to "
                    f"another GPU ({DEFAULT_OBJECTIVE})",
                )
            if name not in OBJECTIVES:
                raise InstanceError(
                    "objective", f"unknown objective {shown(name)} (known: {', '.join(OBJECTIVES)})"
                )
            if name in names:
                raise InstanceError("objective", f"{name!r} appears twice")
            try:
                value = float(tol) if tol else 0.0
            except ValueError:
                raise InstanceError(
                    "objective", f"tolerance {shown(tol)} of {name} is not a number"
                ) from None
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
            raise InstanceError("objective", f"weights must be numbers, got {shown(rest)}") from None
        if not 1 <= len(weights) <= len(OBJECTIVES):
            raise InstanceError(
                "objective",
                "weighted: takes 1 to 4 non-negative weights (acceptance, hardware, migrations, restarts), "
                f"got {shown(rest)}",
            )
        for name, w, given in zip(OBJECTIVES, weights, items, strict=False):
            if not 0 <= w <= MAX_WEIGHT:  # nan and inf fail too
                why = (
                    "not a number" if w != w else "negative" if w < 0
                    else f"more than the limit of {MAX_WEIGHT:g} (docs/limits.md): the weighted objective "
                    "could overflow, or the smaller weights vanish in the solver's tolerances"
                )  # fmt: skip
                raise InstanceError("objective", f"the weight of {name}, {shown(given)}, is {why}")
        return ObjectiveSpec("weighted", OBJECTIVES[: len(weights)], tuple(weights))
    raise InstanceError(
        "objective",
        f"must start with lex: or weighted:, or be a priority ({', '.join(PRIORITIES)}), got {shown(text)}",
    )


#: A named fast heuristic that the exact driver may try as a warm start.
Heuristic = tuple[str, Callable[[Instance], Solution]]
#: Time kept back per workload to decode and verify the answer after the last stage (about 2.5 s at
#: 50,000 workloads on a 2-core Xeon).
FINISH_S_PER_WORKLOAD = 5e-5
#: Share of the time limit the portfolio may take; the rest is the stages'.
PORTFOLIO_SHARE = 0.4
#: Share of the time left that the portfolio's first heuristic may take: without it the stages
#: start from the current placement, which on a large instance they may not improve in time
#: (IBM 16,000 GPUs at 20 s: the answer placed none of 24,656 new workloads, where ibm-initial
#: places 16,663 in 3.2 s; its estimated 5 s was more than the portfolio's share).
FIRST_HEURISTIC_SHARE = 0.8
#: A guess of the first heuristic's time per workload (first fit takes 75 us on a 2-core Xeon).
PORTFOLIO_S_PER_WORKLOAD = 1e-4
#: Shares of the time left that the home model, then the restricted one, may take before a
#: migrations or restarts stage (a proof of 0 when it reaches the optima so far).
HOME_SHARE = 0.5
RESTRICTED_SHARE = 0.25
#: Share of the time left for the warm start of the keep model (:meth:`_Run.home_start`), and
#: for bringing its restarts down.
HOME_START_SHARE = 0.5
#: Fewest running workloads for that warm start on the keep model; below, the home model (IBM
#: set-up, 80 GPUs, 130 running: the keep model's build alone takes 0.4 s, the whole solve 0.2 s).
KEEP_START_MIN_RUNNING = 300
#: Share of the time left for the keep model's fewest restarts before a restarts stage.
KEEP_SHARE = 0.3
#: Share of the time left for the LP that fixes hosts off (:meth:`_Run.fix_dark_hosts`): it
#: proves the later stages only when it ends, and the stages need the rest to improve the answer
#: when it does not (the whole Alibaba snapshot: 10 s of the 33 s left after hardware).
FIXING_SHARE = 0.5
#: Share of a time limit kept back to bring an unproven answer's restarts down (the keep
#: model, then :func:`mipopt.exact.keep.keep_running`).
REPAIR_SHARE = 0.3
#: The keep model repairs an answer only with this much time left (its build alone takes 0.4 s
#: at 80 GPUs on a 2-core Xeon); :func:`~mipopt.exact.keep.keep_running` always does.
REPAIR_MIN_S = 0.5
#: At most this many seconds are kept back for the repair, whatever the limit (or with none).
REPAIR_MAX_S = 5.0
#: Share of the repair's time left then for the searches over hosts (the rest: decoding, keeping home).
LNS_SHARE = 0.8
#: A search over hosts starts only with this many seconds left for it.
SEARCH_MIN_S = 0.3
#: The longest solve beside which a search over hosts runs (:meth:`_Run.searches`).
SEARCH_BESIDE_MAX_S = 20.0
#: Instances of at most this many hosts race a second HiGHS run beside each solve instead of a
#: search over hosts (:meth:`_Run.races`).
RACE_MAX_HOSTS = 16
#: Share of that time the search from the home start may take to reach the incumbent's acceptance.
HOME_SEARCH_SHARE = 0.85
#: Share of the repair's searches that the search for less hardware takes when the hardware stage
#: was not proven (:meth:`_Run.hardware_open`); the rest brings migrations down at what it reached.
HARDWARE_REPAIR_SHARE = 0.5


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
    budget: Budget | None = None,
    progress: Callable[[StageEvent], None] | None = None,
) -> Solution:
    """Solve ``instance`` exactly and return the solution with the verifier's objectives.

    The answer is never worse, in the objective's order, than the best warm start
    (the ``portfolio`` of fast heuristics, and the current placement with every new
    workload rejected, which is always feasible), whatever the time limit: a stage the
    solver could not finish leaves the best placement known, with status ``feasible``,
    its restarts brought down for the acceptance and hardware it reached.

    Parameters
    ----------
    model
        Formulation name: ``grmu`` (the configuration model, staged), ``grmu-slots`` (the
        tight model over start slots) or ``grmu-paper`` (the paper's Eqs. 3-26).
    solver
        Backend name, ``highs`` or ``cpsat``.
    objective
        An objective mode or a name of :data:`PRIORITIES` (see the module docstring).
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
    budget
        At most so many running workloads restarted and GB moved, in every stage: the
        answer is the optimum within it.
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
    budget = budget or UNLIMITED
    limits = list(bounds) + [
        (name, "<=", float(limit))
        for name, limit in zip(MEASURES, (budget.max_restarts, budget.max_moved_gb), strict=True)
        if limit is not None
    ]
    best = Incumbent(work, spec, limits)
    run = _Run(work, spec, best, options, backend, deadline, progress, t0)
    method = f"{model} / {solver}, {spec}" + (f", {use_case}" if use_case else "")
    # the bounds are part of the problem whose optimum the answer claims (the verifier reads them)
    method += "".join(f", {name} {op} {value:.10g}" for name, op, value in bounds)
    if not budget.unlimited:
        method += f", {budget}"

    best.offer(work.current_placement(), "current placement")
    if warm_start is not None:
        given, profiles = _given_start(instance, work, warm_start)
        best.offer(given, "the given warm start", profiles)
    for name, placed, profiles in _portfolio(work, portfolio, run):
        best.offer(placed, name, profiles)

    if model == "grmu":
        try:
            models = _ConfigModels(work, fixed, closed)
            models.get("aggregate")  # enumerates the configurations of every GPU type
        except TooManyMultisets as err:
            run.notes.append(f"configuration model not used ({err}): the slot model instead")
            model = "grmu-slots"
    if model == "grmu":
        run.stages_config(models, lambda: _build(work, "grmu-slots", use_case))
    else:
        run.stages_single(_build(work, model, use_case))
    run.repair(models if model == "grmu" else None, fixed_ids(work, fixed))
    return run.solution(instance, method)


class Incumbent:
    """The best placement known: offered placements are evaluated by the verifier and kept when
    they obey the bounds, the budget and the stages so far, and beat the one held."""

    def __init__(self, work: Instance, spec: ObjectiveSpec, limits: Sequence[tuple[str, str, float]]) -> None:
        self.work = work
        self.spec = spec
        self.limits = list(limits)  # the caller's bounds and the budget, as (name, op, value)
        self.placed: Placed | None = None
        self.profiles: dict[str, str] = {}  # the profiles of placed memory-sized workloads
        self.values: dict[str, float] = {}
        self.source = ""
        self.keeps: list[Kept] = []

    def evaluate(self, placed: Placed, profiles: dict[str, str] | None = None) -> dict[str, float]:
        """The objectives and the budget's measures of ``placed`` (memory-sized workloads at
        ``profiles``, the smallest that fits where not given)."""
        objectives, metrics = evaluate(self.work, placed, profiles)
        return {**objectives.to_dict(), **{m: float(metrics[m]) for m in MEASURES}}

    def allowed(self, values: dict[str, float]) -> bool:
        for name, op, bound in self.limits:
            v = values[name]
            if (op == "<=" and v > bound + 1e-6) or (op == ">=" and v < bound - 1e-6):
                return False
        return all(kept.holds(values[kept.name]) for kept in self.keeps)

    def key(self, values: dict[str, float]) -> tuple[float, ...]:
        """Smaller is better: the objective's order, the other objectives after it; a stage kept
        within a tolerance goes last (the later stages trade it for theirs, within the tolerance)."""
        tolerant = {k.name for k in self.keeps if k.tolerance > 0}
        order = self.spec.order()
        names = [n for n in order if n not in tolerant] + [n for n in order if n in tolerant]
        ordered = tuple(_sign(n) * values[n] for n in names)
        if self.spec.mode == "weighted":
            return (self.spec.total(values), *ordered)
        return ordered

    def weighted(self) -> float:
        """The weighted objective (maximized) of the placement held."""
        return -self.spec.total(self.values)

    def offer(self, placed: Placed, source: str, profiles: dict[str, str] | None = None) -> bool:
        """Keep ``placed`` (with the ``profiles`` chosen for memory-sized workloads) if it obeys
        the bounds and stages so far and beats the incumbent."""
        values = self.evaluate(placed, profiles)
        if not self.allowed(values):
            return False
        if self.placed is not None and self.key(values) >= self.key(self.values):
            return False
        self.placed, self.values, self.source = placed, values, source
        self.profiles = {w: name for w, name in (profiles or {}).items() if w in placed}
        return True


def _sign(name: str) -> float:
    return -1.0 if SENSE[name] == pyo.maximize else 1.0


@dataclass(frozen=True, slots=True)
class Stage:
    """One stage of a solve: an objective (or ``weighted``), its sense and its tolerance."""

    name: str
    sense: Any
    tolerance: float = 0.0


@dataclass(frozen=True, slots=True)
class Kept:
    """A stage's optimum that later stages keep, within its tolerance."""

    name: str
    sense: Any
    value: float
    tolerance: float

    def limit(self) -> float:
        """The worst value a later stage may reach: the optimum, give or take its tolerance."""
        slack = max(self.tolerance * abs(self.value), 1e-6)
        return self.value - slack if self.sense == pyo.maximize else self.value + slack

    def holds(self, v: float) -> bool:
        return v >= self.limit() if self.sense == pyo.maximize else v <= self.limit()

    def constraint(self, expr: Any) -> Any:
        return expr >= self.limit() if self.sense == pyo.maximize else expr <= self.limit()


class _Run:
    """One call of :func:`solve_exact`: the clock, the stages done, the notes."""

    def __init__(
        self,
        work: Instance,
        spec: ObjectiveSpec,
        best: Incumbent,
        options: SolverOptions,
        backend: Any,
        deadline: float | None,
        progress: Callable[[StageEvent], None] | None,
        t0: float,
    ) -> None:
        self.work = work
        self.spec = spec
        self.best = best
        self.options = options
        self.backend = backend
        self.deadline = deadline
        self.progress = progress
        self.t0 = t0
        self.limits = best.limits
        self.stages: list[StageResult] = []
        self.notes: list[str] = []
        self.infeasible = False
        self.homely: tuple[Placed, dict[str, str]] | None = None  # the home start's answer
        self.off: frozenset[str] | None = None  # hosts off in every placement of the kept hardware
        self.home_bound: tuple[str, float | None] | None = None  # its first stage's bound there
        limit = options.time_limit_s
        self.reserve = 0.0 if limit is None else min(REPAIR_SHARE * limit, REPAIR_MAX_S)

    # --- the clock

    def left(self, reserve: bool = True) -> float | None:
        """Seconds left for solving: to the deadline, less the time the answer takes to put
        together (and, for stages, the share kept back for :meth:`repair`)."""
        if self.deadline is None:
            return None
        finish = FINISH_S_PER_WORKLOAD * len(self.work.workloads)
        return self.deadline - time.monotonic() - finish - (self.reserve if reserve else 0.0)

    def stopped(self) -> Termination | None:
        """Why no further stage may start, or None."""
        stop = self.options.stop
        if stop is not None and stop.is_set:
            return Termination.INTERRUPTED
        left = self.left()
        if left is not None and left <= 0:
            return Termination.TIME_LIMIT
        return None

    def stage_options(
        self,
        warm: dict[str, float] | None,
        share: float = 1.0,
        reserve: bool = True,
        cap: float | None = None,
        built: Formulation | None = None,
        objective: str | None = None,
    ) -> SolverOptions:
        """Options of one solve: ``share`` of the time left (at most ``cap``), the warm start, and
        a search over hosts beside HiGHS where :meth:`searches` says so for ``built`` and the
        ``objective`` it solves for."""
        left = self.left(reserve)
        limit = None if left is None else max(left * share, 0.01)
        if cap is not None:
            limit = cap if limit is None else min(limit, cap)
        options = replace(self.options, time_limit_s=limit, warm_start=warm or None, deadline=self.deadline)
        if self.races(limit, objective):
            options = replace(options, companion=HighsRival(options, seed=self.options.seed + 1))
        elif isinstance(built, ConfigModel) and self.searches(built, limit, objective):
            options = replace(
                options,
                companion=HostSearch(
                    built.host_of,
                    seed=self.options.seed,
                    options=options,
                    delay_share=0.0 if objective == "hardware" else DELAY_SHARE,
                ),
            )
        return options

    # --- stages

    def stage_list(self) -> list[Stage]:
        """One stage per objective of the spec; ``weighted`` is one stage."""
        if self.spec.mode == "weighted":
            return [Stage("weighted", pyo.maximize)]
        return [Stage(n, SENSE[n], tol) for n, tol in zip(self.spec.names, self.spec.values, strict=True)]

    def objective_expr(self, built: Formulation, name: str) -> Any:
        if name != "weighted":
            return built.expression(name)
        return sum(
            -_sign(n) * w * built.expression(n)
            for n, w in zip(self.spec.names, self.spec.values, strict=True)
            if n in built.objectives
        )

    def prepare(self, built: Formulation) -> bool:
        """Add the bounds, the budget and the kept stage optima to ``built`` (once each); False if
        a bound is violated."""
        m = built.model
        if not hasattr(m, "lex_keep"):
            m.lex_keep = pyo.ConstraintList()
            m.epsilon = pyo.ConstraintList()
            m.kept_count = 0
            for name, op, value in self.limits:
                expr = built.expression(name)
                if _is_constant(expr):
                    v = float(pyo.value(expr))
                    if name not in built.relaxed and not (
                        v <= value + 1e-9 if op == "<=" else v >= value - 1e-9
                    ):
                        self.notes.append(f"{name} is {v:g}, cannot be {op} {value:g}")
                        return False
                    continue
                m.epsilon.add(expr <= value if op == "<=" else expr >= value)
        for kept in self.best.keeps[m.kept_count :]:
            expr = built.expression(kept.name)
            if not _is_constant(expr):
                m.lex_keep.add(kept.constraint(expr))
        m.kept_count = len(self.best.keeps)
        if isinstance(built, ConfigModel):
            for host in self.off or ():
                if m.PHI[host].fixed and m.PHI[host].value == 1:
                    return False  # the variant holds a running workload on a host that must stay off
                m.PHI[host].fix(0)
        return True

    def solve_stage(
        self, built: Formulation, stage: Stage, label: str, share: float = 1.0
    ) -> tuple[Any, float | None]:
        """One solve of ``built`` for ``stage``; the result and the stage's bound in its units."""
        m = built.model
        m.del_component("stage_objective")
        expr = self.objective_expr(built, stage.name)
        m.stage_objective = pyo.Objective(expr=expr, sense=stage.sense)
        warm = self.warm(built)
        self.report(stage.name, label, False, self.best.values.get(stage.name), None)
        result = self.backend.solve(m, self.stage_options(warm, share, built=built, objective=stage.name))
        if result.has_solution:
            self.best.offer(self.decode(built), f"{label} {stage.name}", built.profiles)
        return result, _rounded_bound(expr, result.bound, stage.sense)

    def second_core(self, limit: float | None) -> bool:
        """Whether a solve of at most ``limit`` seconds may have a companion beside HiGHS
        (:meth:`races`, :meth:`searches`): with HiGHS, more than one thread, and a time limit (a
        companion's answers depend on timing; an unlimited run keeps its answer reproducible)."""
        return self.backend.name == "highs" and limit is not None and self.options.threads != 1

    def races(self, limit: float | None, objective: str | None = None) -> bool:
        """Whether a second HiGHS run with another seed races a solve of at most ``limit``
        seconds of ``objective`` (:class:`~mipopt.solvers.highs.HighsRival`): where a companion
        may run (:meth:`second_core`), on an instance of few hosts (at most
        :data:`RACE_MAX_HOSTS`), where a search over hosts frees most of the model in one round;
        but not in a hardware stage of at most :data:`SEARCH_BESIDE_MAX_S`, which a proof seldom
        ends and where the search's points lead (dense class at 10 s, seed 7: the race stopped at
        62, the search beside HiGHS reached the optimum 58 and HiGHS proved it)."""
        if objective == "hardware" and limit is not None and limit <= SEARCH_BESIDE_MAX_S:
            return False
        return self.second_core(limit) and len(self.work.hosts) <= RACE_MAX_HOSTS

    def searches(self, built: Formulation, limit: float | None, objective: str | None) -> bool:
        """Whether a search over hosts runs beside HiGHS on ``built`` (:mod:`mipopt.exact.lns`)
        for a solve of at most ``limit`` seconds of ``objective``: where a companion may run
        (:meth:`second_core`), on the configuration model of an instance of several hosts, and
        either in a solve short enough that its answer may be what the run returns (at most
        :data:`SEARCH_BESIDE_MAX_S`) or in a hardware stage; never for acceptance, whose points
        HiGHS finds itself. A long solve keeps its cores for the
        proof otherwise (the search took one from HiGHS: IBM 1,000 GPUs seed 1's restarts stage
        was no longer proven within 60 s); hardware, a bin packing over hosts, is where HiGHS's
        own points lag most (the whole Alibaba snapshot: first fit's 299 for 54 s, where a search
        reached HiGHS's bound of 278 in 15 s), and IBM hardware stages prove in about a second.
        Beside a hardware stage the search starts at once, elsewhere after half the solve's time
        (:data:`~mipopt.exact.lns.DELAY_SHARE`): on that snapshot HiGHS's bound stood at 278 from
        early on and the proof waited for the search's point (54.6 s with the delay, 25.7 s without)."""
        return (
            self.second_core(limit)
            and isinstance(built, ConfigModel)
            and objective != "acceptance"
            and ((limit is not None and limit <= SEARCH_BESIDE_MAX_S) or objective == "hardware")
            and len(self.work.hosts) > 2
        )

    def decode(self, built: Formulation) -> Placed:
        """The placement in ``built``'s values; the configuration model's as close to the
        incumbent (the solve's warm start) as they allow."""
        return built.decode(self.best.placed) if isinstance(built, ConfigModel) else built.decode()

    def warm(self, built: Formulation) -> dict[str, float] | None:
        """The incumbent in ``built``'s variables, or None when there is none."""
        if self.best.placed is None:
            return None
        return built.warm_start(self.best.placed, self.best.profiles)

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

    def add_stage(self, stage: Stage, result: StageResult) -> None:
        """Record ``result`` and, for a named objective, keep its value for the later stages."""
        self.stages.append(result)
        self.report(stage.name, result.model, True, result.value, result.bound, result.termination)
        if result.value is not None and stage.name != "weighted":
            self.best.keeps.append(Kept(stage.name, stage.sense, result.value, stage.tolerance))

    def proven(self, stage: Stage, value: float, label: str, started: float) -> None:
        self.add_stage(
            stage,
            StageResult(
                stage.name, value, value, 0.0, True, Termination.OPTIMAL, time.perf_counter() - started, label
            ),
        )

    def record(
        self, built: Formulation, stage: Stage, result: Any, bound: float | None, label: str, started: float
    ) -> str:
        """Record a solved stage: ``next`` when later stages may run, ``stop`` when not, ``slots``
        when the model's answer could not be read back as its optimum because the model relaxes
        what the stage or the budget needs (the configuration model's starts): the slot model
        must decide it."""
        name = stage.name
        value = self.best.values.get(name) if name != "weighted" else None
        if name == "weighted" and result.has_solution and self.best.placed is not None:
            value = self.best.weighted()  # the answer's own, which a relaxed model may overstate
        termination = result.termination
        proven = termination is Termination.OPTIMAL
        if termination is Termination.INFEASIBLE and self.best.placed is None:
            self.infeasible = True
        unchecked = result.objective is None or value is None
        relaxed = (
            name in built.relaxed
            or (name == "weighted" and any(n in built.relaxed for n in self.spec.weighed()))
            or (built.relaxed and len(self.limits) > 0)
        )
        if (
            proven
            and not unchecked
            and abs(float(result.objective) - float(value or 0)) > 1e-6 * max(1.0, abs(value or 0))
        ):
            if relaxed:
                self.notes.append(
                    f"{name}: {label} bound {result.objective:g}, {value:g} placed: the slot model decides"
                )
                return "slots"
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
            proven, termination = False, Termination.ERROR  # optimal without a point: claim nothing
        if gap == 0.0 and termination in CUT_SHORT:
            # the answer meets the bound: a companion's point, or the bound on the objective's lattice
            proven, termination = True, Termination.OPTIMAL
        self.add_stage(
            stage,
            StageResult(name, value, bound, gap, proven, termination, time.perf_counter() - started, label),
        )
        return "next" if proven or termination is Termination.GAP_LIMIT else "stop"

    def constant(self, built: Formulation, stage: Stage) -> None:
        """A stage with nothing to decide (e.g. no running workloads): its value is proven."""
        v = float(pyo.value(built.expression(stage.name)))
        self.add_stage(stage, StageResult(stage.name, v, v, 0.0, True, Termination.OPTIMAL, 0.0, "constant"))

    def obvious(self, stage: Stage, started: float) -> bool:
        """Record the stage without a solve when the incumbent meets a bound that needs none:
        every workload accepted, or nothing migrated or restarted beyond the running workloads
        of the hosts that must stay off (:meth:`fix_dark_hosts`), each of which moves host."""
        if self.best.placed is None or stage.name not in ("acceptance", "migrations", "restarts"):
            return False
        if stage.name == "acceptance":
            best = sum(w.weight for w in self.work.workloads)
        else:
            leaving = [w.migration_weight for w in self.work.running if self.leaves_dark_host(w)]
            best = (4.0 if stage.name == "migrations" else 1.0) * sum(leaving)  # Eq. 5: 4 a host leaver
        if abs(self.best.values[stage.name] - best) > 1e-9:
            return False
        self.proven(
            stage, best, "hosts off" if stage.name != "acceptance" and best > 0 else "incumbent", started
        )
        return True

    def leaves_dark_host(self, w: Workload) -> bool:
        """Whether running workload ``w`` sits on a host that must stay off (:meth:`fix_dark_hosts`)."""
        return (
            self.off is not None
            and w.placement is not None
            and self.work.gpu(w.placement.gpu).host in self.off
        )

    def stages_single(self, built: Formulation, stages: Sequence[Stage] | None = None) -> None:
        """Every stage (or ``stages``) on one formulation (``grmu-slots``, ``grmu-paper``)."""
        missing = [n for n in self.spec.names if n not in built.objectives]
        if missing:
            raise InstanceError("objective", f"model {_label(built)} has no objective {missing[0]!r}")
        if not self.prepare(built):
            self.infeasible = True
            return
        label = _label(built)
        for stage in self.stage_list() if stages is None else stages:
            if self.stopped() is not None:
                break
            started = time.perf_counter()
            if self.obvious(stage, started):
                continue
            if not self.prepare(built):
                break
            if stage.name != "weighted" and _is_constant(built.expression(stage.name)):
                self.constant(built, stage)
                continue
            result, bound = self.solve_stage(built, stage, label)
            if self.record(built, stage, result, bound, label, started) != "next":
                break

    def stages_config(self, models: _ConfigModels, slots: Callable[[], Formulation]) -> None:
        """The staged pipeline of the configuration model (``models/grmu.md``, section Staged proofs).

        Stages whose objectives so far are acceptance and hardware run on the aggregated
        model (unless a budget binds: it needs the detailed one); a migrations stage first
        asks whether a placement keeping every running workload home reaches the earlier
        optima (then 0 migrations is proven), and only otherwise solves the detailed model;
        weighted objectives run on the detailed model. A stage the configuration model cannot
        read back as its optimum (restarts, or the budget, hang on starts) and the stages after
        it run on the slot model (``slots``).
        """
        seen: set[str] = {name for name, _, _ in self.limits}
        stages = self.stage_list()
        self.home_start(models, stages[0])
        for i, stage in enumerate(stages):
            if self.stopped() is not None:
                break
            started = time.perf_counter()
            seen.add(stage.name)
            if stage.name == "weighted":
                seen.update(self.spec.weighed())
            if stage.name != "weighted" and seen <= {"acceptance", "hardware"}:
                label = "aggregate"
            else:  # the detailed variant, with kept sets where restarts are asked for
                label = "kept" if seen & {"restarts", "restarted"} else "detailed"
            if label != "aggregate":
                self.fix_dark_hosts(models)
            if self.obvious(stage, started):
                continue
            exact_keep = stage.name == "restarts" and self.keeps_gpus(models)
            if (
                stage.name in ("migrations", "restarts")
                and not exact_keep
                and self.zero(models, stage, started)
            ):
                continue
            if exact_keep:
                label = "keep"  # exact: every running workload stays on its GPU
            elif stage.name == "restarts":  # starts for the model that proves it
                self.keep_home(models)
                self.home_answer(models, "keep", KEEP_SHARE, stage.name)
            built = models.get(label)
            if self.stopped() is not None or not self.prepare(built):
                if not self.stages:
                    self.infeasible = self.stopped() is None
                break
            if (
                stage.name != "weighted"
                and stage.name not in built.relaxed
                and _is_constant(built.expression(stage.name))
            ):
                self.constant(built, stage)
                continue
            result, bound = self.solve_stage(built, stage, label)
            outcome = self.record(built, stage, result, bound, label, started)
            if outcome == "slots":
                self.stages_single(slots(), stages[i:])
                return
            if outcome != "next":
                break

    def home_start(self, models: _ConfigModels, first: Stage) -> None:
        """A warm start that restarts few: the first stage (acceptance or hardware) optimized
        within :data:`HOME_START_SHARE` of the time left on the ``keep`` model (every running
        workload on its GPU, the fewest restarts as a tie-break), then its restarts brought down
        at the value reached (with a search over hosts beside HiGHS in a short run); below
        :data:`KEEP_START_MIN_RUNNING` running workloads on the ``home`` model (every one on its
        GPU and start), cheaper to build. A later model's answer replaces it only when better in
        the objective's order, so a time-limited answer keeps running workloads home unless
        moving them bought something; and the repair of such an answer starts again from this
        one (:attr:`homely`)."""
        if (
            first.name not in ("acceptance", "hardware")
            or not self.work.running
            or self.stopped() is not None
        ):
            return
        everyone = sum(w.weight for w in self.work.workloads)
        if first.name == "acceptance" and self.best.values.get("acceptance") == everyone:
            return  # the warm start accepts everyone and moves nothing: nothing to gain
        label = "keep" if len(self.work.running) >= KEEP_START_MIN_RUNNING else "home"
        built = models.get(label)
        # the build may take what was left (7 s at 16,000 GPUs): then its warm start, its translation
        # for the solver and its decoding (another 4 s) would all come after the deadline
        if self.stopped() is not None or not self.prepare(built):
            return
        m = built.model
        m.del_component("stage_objective")
        # the fewest restarts among equal values, by a weight too small to trade one step of it
        step = lattice_step(
            [w.weight for w in self.work.workloads]
            if first.name == "acceptance"
            else [h.weight for h in self.work.hosts]
        )
        expr = built.expression(first.name)
        if step is not None:
            total = sum(w.migration_weight for w in self.work.running)
            expr = expr + _sign(first.name) * step / (2 * total + 1) * built.expression("restarts")
        m.stage_objective = pyo.Objective(expr=expr, sense=first.sense)
        warm = self.warm(built)
        self.report(first.name, label, False, self.best.values.get(first.name), None)
        result = self.backend.solve(m, self.stage_options(warm, HOME_START_SHARE))
        if label == "keep" and result.bound is not None:  # for the repair (:meth:`keep_may_reach`)
            # the tie-break adds less than half a step: the first stage's own bound is at most that past it
            loose = result.bound - _sign(first.name) * (step or 0.0) / 2
            self.home_bound = (first.name, _rounded_bound(built.expression(first.name), loose, first.sense))
        if not result.has_solution:
            return
        placed, profiles = self.decode(built), built.profiles
        self.best.offer(placed, f"{label} {first.name}", profiles)
        self.homely = (placed, profiles)
        if self.stopped() is not None or _is_constant(built.expression("restarts")):
            return
        reached = float(pyo.value(built.expression(first.name)))
        m.start_floor = pyo.Constraint(
            expr=Kept(first.name, first.sense, reached, 0.0).constraint(built.expression(first.name))
        )
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(expr=built.expression("restarts"))
        self.report("restarts", "keep", False, self.best.values.get("restarts"), None)
        result = self.backend.solve(
            m,
            self.stage_options(
                built.warm_start(placed, profiles), KEEP_SHARE, built=built, objective="restarts"
            ),
        )
        m.del_component("start_floor")
        if result.has_solution:
            placed = self.decode(built)
            self.best.offer(placed, f"keep {first.name}, restarts", built.profiles)
            self.homely = (placed, built.profiles)

    def fix_dark_hosts(self, models: _ConfigModels) -> None:
        """Once, before the first stage after hardware on the detailed variants: the hosts that
        every placement within the kept hardware has off (:func:`~mipopt.exact.fixing.hosts_off`),
        which :meth:`prepare` fixes off in every model from then on; only where the incumbent
        has a host with running workloads off (:func:`~mipopt.exact.fixing.dark_homes`). The LP is
        HiGHS's whichever backend solves the stages, and takes at most :data:`FIXING_SHARE` of
        the time left."""
        if self.off is not None:
            return
        kept = next((k for k in self.best.keeps if k.name == "hardware"), None)
        if kept is None:
            return  # not yet: a later stage may keep it
        self.off = frozenset()
        if self.best.placed is None or not dark_homes(
            self.work, self.best.placed, fixed_ids(self.work, models.fixed)
        ):
            return
        built = models.get("detailed")
        if not self.prepare(built):
            return
        started = time.perf_counter()
        left = self.left()
        limit = None if left is None else max(left * FIXING_SHARE, 0.01)
        off = hosts_off(
            built, kept.limit(), replace(self.options, time_limit_s=limit, warm_start=None, companion=None)
        )
        if off:
            self.off = off
            self.notes.append(
                f"{len(off)} host{'s' if len(off) > 1 else ''} off in every placement of hardware "
                f"at most {kept.limit():g} "
                f"(reduced costs of its LP relaxation, {time.perf_counter() - started:.1f} s)"
            )

    def keeps_gpus(self, models: _ConfigModels) -> bool:
        """True when every answer of the later stages keeps each movable running workload on
        its GPU: 0 migrations was proven and kept, and every such workload has a migration
        weight (so leaving its GPU would cost migrations). The keep model is then exact."""
        zero = any(k.name == "migrations" and k.value == 0 and k.tolerance == 0 for k in self.best.keeps)
        fixed = fixed_ids(self.work, models.fixed)
        return zero and all(w.migration_weight > 0 for w in self.work.running if w.id not in fixed)

    def zero(self, models: _ConfigModels, stage: Stage, started: float) -> bool:
        """Prove ``stage`` (migrations or restarts) 0 by a placement that keeps running workloads
        home and reaches the optima so far: first every one on its own GPU and start (the
        ``home`` model), then, for migrations, on its own GPU (the ``restricted`` model). Neither
        exists when a running workload sits on a host that must stay off (:meth:`fix_dark_hosts`),
        and the note names it."""
        dark = next((w for w in self.work.running if self.leaves_dark_host(w)), None)
        if dark is not None and dark.placement is not None:
            note = (
                f"no placement keeping every running workload on its GPU reaches the optima above: "
                f"{dark.id} runs on {self.work.gpu(dark.placement.gpu).host}, which must stay off"
            )
            if note not in self.notes:
                self.notes.append(note)
            return False
        for label in ("home", "restricted") if stage.name == "migrations" else ("home",):
            share = HOME_SHARE if label == "home" else RESTRICTED_SHARE
            if self.home_answer(models, label, share, stage.name) and self.best.values[stage.name] == 0:
                self.proven(stage, 0.0, label, started)
                return True
        return False

    def home_answer(
        self,
        models: _ConfigModels,
        label: str,
        share: float,
        stage: str,
        reserve: bool = True,
        cap: float | None = None,
    ) -> bool:
        """Offer the answer of the ``home``, ``restricted`` or ``keep`` model under the stages
        kept so far (the keep model with its fewest restarts, the others any); True when it
        became the incumbent."""
        built = models.get(label)
        if (reserve and self.stopped() is not None) or not self.prepare(built):
            return False
        m = built.model
        m.del_component("stage_objective")
        warm = None
        if label == "keep":
            m.stage_objective = pyo.Objective(expr=built.expression("restarts"))
            warm = self.warm(built)
        else:
            m.stage_objective = pyo.Objective(expr=0.0 * m.PHI[self.work.hosts[0].id])
        self.report(stage, label, False, self.best.values.get(stage), None)
        result = self.backend.solve(m, self.stage_options(warm, share, reserve, cap))
        if result.has_solution and self.best.offer(self.decode(built), label, built.profiles):
            return True
        if result.termination is Termination.INFEASIBLE and label != "keep":
            where = "on its GPU and start" if label == "home" else "on its GPU"
            self.notes.append(f"no placement keeping every running workload {where} reaches the optima above")
        return False

    # --- the answer

    def repair(self, models: _ConfigModels | None, fixed: frozenset[str]) -> None:
        """Bring an unproven answer's migrations and restarts down for the acceptance and hardware
        it reached, within the time kept back (``models/grmu.md``, "Anytime answers"):

        0. when the hardware stage was not proven (:meth:`hardware_open`), a search over hosts
           (:mod:`mipopt.exact.lns`) from the incumbent for less hardware at its acceptance;
        1. the keep model's fewest restarts (every running workload on its GPU), unless the home
           start's bound shows that it cannot reach the incumbent's first stage (:meth:`keep_may_reach`);
        2. if that found nothing, from the home start's answer (:attr:`homely`, few restarts) a
           search over hosts (:mod:`mipopt.exact.lns`) on the detailed model for the incumbent's
           acceptance, then its hardware, moving few running workloads on the way (not on an
           instance that races, :meth:`races`: there a round frees most of the model);
        3. from the incumbent, a search for the fewest migrations (or restarts, in that order)
           at its acceptance and hardware;
        4. :func:`~mipopt.exact.keep.keep_running`.
        """
        best = self.best
        if best.placed is None or (
            self.stages
            and all(st.proven for st in self.stages)
            and len(self.stages) >= len(self.stage_list())
        ):
            return
        hardware_open = self.hardware_open()
        if best.values.get("restarts", 0.0) == 0 and not hardware_open:
            return
        left = self.left(reserve=False)
        if (
            models is not None
            and (self.options.stop is None or not self.options.stop.is_set)
            and (left is None or left >= REPAIR_MIN_S)
        ):
            started = time.perf_counter()
            budget = REPAIR_MAX_S if left is None else min(REPAIR_MAX_S, left)
            order = self.spec.order()
            first, second = (
                ("restarts", "migrations")
                if order.index("restarts") < order.index("migrations")
                else ("migrations", "restarts")
            )
            if hardware_open:
                until = time.monotonic() + HARDWARE_REPAIR_SHARE * LNS_SHARE * budget
                self.search_offered(models, "hardware", first, until, started)
            floors = [("acceptance", best.values["acceptance"]), ("hardware", best.values["hardware"])]
            keep = models.get("keep").model
            keep.del_component("repair_floor")
            keep.repair_floor = pyo.ConstraintList()
            for name, value in floors:
                keep.repair_floor.add(Kept(name, SENSE[name], value, 0.0).constraint(keep.obj_expr[name]))
            if (
                best.values["restarts"] > 0
                and self.keep_may_reach()
                and self.home_answer(models, "keep", 1.0, "restarts", reserve=False, cap=budget)
            ):
                self.notes.append(
                    f"restarts brought down by the keep model in {time.perf_counter() - started:.2f} s"
                )
            if best.values["migrations"] > 0:
                until = time.monotonic() + LNS_SHARE * (budget - (time.perf_counter() - started))
                # on few hosts a round frees most of the model: from the home start it is a whole
                # solve from a worse point, and the time goes to the search from the incumbent
                if self.homely is not None and self.spec.mode == "lex" and not self.races(left):
                    self.from_home(models.get("detailed"), until)
                self.search_offered(models, first, second, until, started)
        if self.keep_home(models, fixed):
            self.notes.append("restarts brought down by keeping GPU contents and starts home")

    def hardware_open(self) -> bool:
        """Whether a lexicographic run ended in or before its hardware stage, every stage before
        it proven, hardware before migrations and restarts in the order (it ran out of time, or
        never started; a stage after it holds what it reached): :meth:`repair` then searches
        for less hardware first (dense class at 10 s, seed 7: the race's hardware 62, where the
        search reaches the optimum 58 in 3 s)."""
        names, order = self.spec.names, self.spec.order()
        if self.spec.mode != "lex" or "hardware" not in names:
            return False
        before = names[: names.index("hardware")]
        return (
            all(st.objective in before and st.proven for st in self.stages[: len(before)])
            and len(self.stages) >= len(before)
            and all(st.objective == "hardware" and not st.proven for st in self.stages[len(before) :])
            and order.index("hardware") < min(order.index("migrations"), order.index("restarts"))
        )

    def search_offered(
        self, models: _ConfigModels, first: str, second: str, until: float, started: float
    ) -> None:
        """:meth:`search` from the incumbent on the detailed model for the best ``first``, then
        ``second``, the incumbent's acceptance and hardware held (but the one searched), until
        ``until``; its answer offered."""
        best = self.best
        floors = [(n, best.values[n]) for n in ("acceptance", "hardware") if n != first]
        found = self.search(models.get("detailed"), floors, first, second, until)
        if found is not None and best.offer(found[0], f"search over hosts, {first}", found[1]):
            self.notes.append(
                f"{first} brought down by a search over hosts in {time.perf_counter() - started:.2f} s"
            )

    def keep_may_reach(self) -> bool:
        """False when the home start's bound shows that no placement keeping every running
        workload on its GPU reaches the incumbent's value of the first stage."""
        name, bound = self.home_bound or ("", None)
        return bound is None or Kept(name, SENSE[name], self.best.values[name], 0.0).holds(bound)

    def from_home(self, built: ConfigModel, until: float) -> None:
        """Step 2 of :meth:`repair`: from :attr:`homely`, the incumbent's acceptance and then its
        hardware, each stage searched (fewest migrations as a tie-break) while the ones before
        are held; the answer is offered when it gets there."""
        assert self.homely is not None
        placed, profiles = self.homely
        best = self.best
        floors: list[tuple[str, float]] = []
        for name in [n for n in self.spec.order() if n in ("acceptance", "hardware")]:
            reached = best.evaluate(placed, profiles)[name]
            if Kept(name, SENSE[name], best.values[name], 0.0).holds(reached):
                floors.append((name, reached))
                continue  # there already
            share = HOME_SEARCH_SHARE if name == "acceptance" else 1.0
            found = self.search(built, floors, name, "migrations", until, (placed, profiles), share)
            if found is None:
                return
            placed, profiles = found
            reached = best.evaluate(placed, profiles)[name]
            if not Kept(name, SENSE[name], best.values[name], 0.0).holds(reached):
                return  # not there: the incumbent stays
            floors.append((name, reached))
        if best.offer(placed, "home start, searched over hosts", profiles):
            self.notes.append(
                "the home start's answer brought to the incumbent's acceptance and hardware by a search over hosts"
            )

    def search(
        self,
        built: ConfigModel,
        floors: Sequence[tuple[str, float]],
        first: str,
        second: str,
        until: float,
        start: tuple[Placed, dict[str, str]] | None = None,
        share: float = 1.0,
    ) -> tuple[Placed, dict[str, str]] | None:
        """A search over hosts (:mod:`mipopt.exact.lns`) on ``built`` from ``start`` (the
        incumbent by default) for the best ``first`` and then ``second``, the ``floors`` (stage,
        value) held, for ``share`` of the time to ``until`` left once the model is compiled; its
        answer when it improved on the start. Only with HiGHS, whose runs the search makes."""
        placed, profiles = start if start is not None else (self.best.placed, self.best.profiles)
        if (
            self.backend.name != "highs"
            or placed is None
            or until - time.monotonic() < SEARCH_MIN_S
            or not self.prepare(built)
        ):
            return None
        m = built.model
        m.del_component("search_floor")
        m.search_floor = pyo.ConstraintList()
        for name, value in floors:
            expr = built.expression(name)
            if not _is_constant(expr):
                m.search_floor.add(Kept(name, SENSE[name], value, 0.0).constraint(expr))
        # the second objective as a tie-break, by a weight too small to trade a step of the first
        step = lattice_step(_coefficients(built.expression(first))) or 1.0
        most = sum(abs(c) for c in _coefficients(built.expression(second)))
        sign = 1.0 if SENSE[first] == SENSE[second] else -1.0
        m.del_component("stage_objective")
        m.stage_objective = pyo.Objective(
            expr=built.expression(first) + sign * step / (2 * most + 1) * built.expression(second),
            sense=SENSE[first],
        )
        warm = built.warm_start(placed, profiles)
        if not warm:
            return None
        self.report(first, "search", False, self.best.evaluate(placed, profiles)[first], None)
        if start is not None:  # the stages kept so far are the floors' business: the start is below them
            m.lex_keep.deactivate()
        try:
            form = compile_model(m)
        finally:
            m.lex_keep.activate()
            m.del_component("search_floor")
        x0 = feasible_start(form, form.start(warm))
        if x0 is None:
            return None
        hints = _free_slots(self.work, placed, profiles) if start is not None else None
        deadline = time.monotonic() + share * (until - time.monotonic())  # after the build and compile
        found = HostSearch(built.host_of, seed=self.options.seed, options=self.options).run(
            form, x0, deadline, hints
        )
        if found.improved == 0:
            return None
        form.load(found.x)
        return built.decode(placed), built.profiles

    def keep_home(self, models: _ConfigModels | None, fixed: frozenset[str] | None = None) -> bool:
        """Offer the incumbent with its GPU contents and starts kept home
        (:func:`~mipopt.exact.keep.keep_running`); True when that lowered its restarts."""
        placed = self.best.placed
        if placed is None or not self.best.values.get("restarts"):
            return False
        if fixed is None:
            fixed = fixed_ids(self.work, models.fixed if models is not None else None)
        order = self.spec.order()
        restarts_first = order.index("restarts") < order.index("migrations")
        profiles = self.best.profiles
        kept = keep_running(self.work, placed, fixed, restarts_first=restarts_first, profiles=profiles)
        return kept != placed and self.best.offer(
            kept, f"{self.best.source}, running workloads kept home", profiles
        )

    def solution(self, instance: Instance, method: str) -> Solution:
        runtime = time.perf_counter() - self.t0
        stages = self.final_stages()
        unproven = next((st for st in stages if not st.proven), None)
        wanted = len(self.stage_list())
        done = [st for st in stages if st.proven]
        best = self.best
        if best.placed is None:
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
        named = [st for st in stages if st.objective in {s.name for s in self.stage_list()}]
        shown = unproven or (named[-1] if named else None)
        bound = shown.bound if shown is not None else None
        gap = shown.gap if shown is not None else None
        notes = [
            f"{st.objective} {value_text(st.value)} ({'proven' if st.proven else st.termination.value}, {st.model}, {st.runtime_s:.2f} s)"
            for st in stages
        ]
        missing = [s.name for s in self.stage_list() if s.name not in {st.objective for st in stages}]
        if missing and not all_proven:
            notes.append(f"not optimized: {', '.join(missing)}")
        notes.append(f"answer from {best.source}")
        # a tie between profiles goes to the smallest: same objectives
        placed, profiles = smallest_profiles(self.work, best.placed, best.profiles)
        sol = solution_for(
            instance,
            placed,
            profiles=profiles,
            method=method,
            termination=termination,
            status=status,
            runtime_s=runtime,
            bound=bound,
            gap=gap,
            message="; ".join([*notes, *self.notes]),
        )
        return replace(sol, stages=stages)

    def final_stages(self) -> tuple[StageResult, ...]:
        """The stages, the last one's value (and gap) the answer's: the repair of an unproven
        answer (:meth:`repair`) may have improved it since the stage was recorded. When it
        reached the stage's bound, every stage before proven (and so held by the answer, which
        is lexicographically no worse), the stage is proven: the bound is its optimum's."""
        stages = tuple(self.stages)
        last = stages[-1] if stages else None
        if last is None or last.proven or last.value is None or self.best.placed is None:
            return stages
        now = self.best.weighted() if last.objective == "weighted" else self.best.values.get(last.objective)
        if now is None or now == last.value:
            return stages
        gap = relative_gap(now, last.bound)
        if gap == 0.0 and last.termination in CUT_SHORT and all(st.proven for st in stages[:-1]):
            return (
                *stages[:-1],
                replace(last, value=now, gap=gap, proven=True, termination=Termination.OPTIMAL),
            )
        return (*stages[:-1], replace(last, value=now, gap=gap))


#: Why a stage may stop before its solver proves it: its answer may still meet its bound.
CUT_SHORT = (Termination.TIME_LIMIT, Termination.INTERRUPTED, Termination.COMPLETED)


def _label(built: Formulation) -> str:
    return "paper" if type(built).__name__ == "GrmuPaperModel" else "slots"


class _ConfigModels:
    """The configuration model's variants of one instance, built when first needed."""

    def __init__(self, work: Instance, fixed: frozenset[str] | None, closed: frozenset[str]) -> None:
        self.work, self.fixed, self.closed = work, fixed, closed
        self.built: dict[str, ConfigModel] = {}

    def get(self, mode: str) -> ConfigModel:
        """The ``aggregate``, ``restricted``, ``detailed`` or ``keep`` variant, or ``home``: the aggregated
        one with every running workload held on its GPU and start (nothing restarts)."""
        if mode not in self.built:
            if mode == "home":
                held = (self.fixed or frozenset()) | {w.id for w in self.work.running}
                self.built[mode] = build_config(self.work, mode="aggregate", fixed=held, closed=self.closed)
            else:
                self.built[mode] = build_config(self.work, mode=mode, fixed=self.fixed, closed=self.closed)  # type: ignore[arg-type]
        return self.built[mode]


def _given_start(instance: Instance, work: Instance, start: Solution) -> tuple[Placed, dict[str, str]]:
    """A caller's warm start, checked by the verifier, restricted to the use case's workloads,
    and the profiles its placements carry."""
    report = verify(instance, start)
    if not report.valid:
        raise InstanceError("warm_start", f"not a valid placement of {instance.name}: {report.violations[0]}")
    ids = {w.id for w in work.workloads}
    return {w: spot for w, spot in start.placed().items() if w in ids}, start.profiles()


def _portfolio(
    work: Instance, portfolio: Sequence[Heuristic], run: _Run
) -> Iterator[tuple[str, Placed, dict[str, str]]]:
    """The placements of the fast heuristics (running workloads where they run), within
    :data:`PORTFOLIO_SHARE` of the time limit: they run last first, each only if, at the pace of
    the slowest so far (for the first, :data:`PORTFOLIO_S_PER_WORKLOAD`), it ends within that
    share (the first within :data:`FIRST_HEURISTIC_SHARE`); their answers come in the
    portfolio's order, so that ties go as without a limit."""
    left = run.left()
    start = time.monotonic()
    pace = PORTFOLIO_S_PER_WORKLOAD * len(work.workloads)
    found: dict[str, Solution] = {}
    for i, (name, heuristic) in enumerate(reversed(portfolio)):
        spent = time.monotonic() - start
        budget = None if left is None else left * (PORTFOLIO_SHARE if i else FIRST_HEURISTIC_SHARE)
        if run.stopped() is not None or (budget is not None and spent + pace > budget):
            break
        t0 = time.monotonic()
        found[name] = heuristic(work)
        pace = max(pace if i else 0.0, time.monotonic() - t0)
    for name, _ in portfolio:
        sol = found.get(name)
        if sol is not None and sol.status is not Status.NONE:
            yield name, sol.placed(), sol.profiles()


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


def _free_slots(instance: Instance, placed: Placed, profiles: dict[str, str]) -> dict[Hashable, float]:
    """Per host, the memory slots its GPUs leave free in ``placed``."""
    free: dict[Hashable, float] = {
        h.id: float(sum(instance.gpu(g).model.slots for g in h.gpus)) for h in instance.hosts
    }
    for wid, (gpu_id, _) in placed.items():
        model = instance.gpu(gpu_id).model
        free[instance.gpu(gpu_id).host] -= model.profiles[
            profile_taken(instance, wid, model, profiles)
        ].memory_slots
    return free


def _coefficients(expr: Any) -> list[float]:
    """The coefficients of a linear expression's variables."""
    return [float(c) for c in generate_standard_repn(expr, compute_values=True).linear_coefs]


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
    built = build_slots(work, fixed=fixed)
    for gpu in closed:
        built.model.U[gpu].fix(0)
    return built


def _is_constant(expr: pyo.Expression) -> bool:
    return not any(True for _ in identify_variables(expr))
