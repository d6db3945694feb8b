"""Solving WPM: the profit MIP, then the indexing step, repaired until every GPU indexes.

WPM decides what goes on each GPU (the paper's Assumption 1 lets it ignore start
slots); :func:`mipopt.exact.preprocess.index_solution` then assigns starts. When a GPU's
content cannot be indexed (running workloads that stay break Assumption 1), the
combination the indexer names is excluded (a no-good row on that GPU: its items
may not all come back) and WPM is solved again, up to ``max_repairs`` times. If a
GPU still cannot be indexed, its dropped new workloads are rejected and dropped
running ones are put back where they run now when that is free; the solution's
message says what happened.

Under a :class:`~mipopt.instance.Budget` the MIP holds it (``models/wpm.md``, "Budget") and the
indexing step keeps every running workload the MIP counts as not restarted at its start, so the
answer restarts and moves no more than the MIP counts; an optimal status is the optimum of WPM
among the answers within the budget, and the message says so.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import replace

import pyomo.environ as pyo
from pyomo.repn import generate_standard_repn

from mipopt.exact.preprocess import index_solution
from mipopt.exact.wpm.model import WpmModel, WpmWeights, build_wpm
from mipopt.instance import Budget, Instance, Solution, Status, Termination
from mipopt.instance.budget import disruption
from mipopt.solvers import SolverOptions, get_backend
from mipopt.verifier import no_solution, solution_for


def gpu_contents(built: WpmModel) -> dict[str, list[str]]:
    """GPU id -> workloads WPM put on it: bin contents, plus running workloads that stayed home.

    A GPU whose imaginary twin is used is repartitioned: what stayed there is empty (2h).
    """
    out: dict[str, list[str]] = defaultdict(list)
    bins = {b.key: b for b in built.bins}
    for w in built.stayed():
        placement = built.instance.workload(w).placement
        assert placement is not None
        out[placement.gpu].append(w)
    for key, ws in built.contents().items():
        out[bins[key].gpu].extend(ws)
    return dict(out)


#: Fast placements tried as warm starts, per use case: ``current`` keeps every running
#: workload where it runs; the others are IBM's rule-based heuristics (section 4.2).
STARTS: dict[str, tuple[str, ...]] = {
    "initial": ("ibm-initial",),
    "compaction": ("current", "ibm-compaction"),
    "reconfiguration": ("current", "ibm-compaction", "ibm-reconfiguration"),
    "joint": ("current", "ibm-initial", "ibm-joint"),
}


def best_start(
    built: WpmModel, heuristics: Mapping[str, Callable[[Instance], Solution]], until: float | None = None
) -> tuple[str, dict[str, float] | None, float]:
    """The best of :data:`STARTS` for ``built``'s use case, as WPM variable values.

    Parameters
    ----------
    built
        The built model.
    heuristics
        IBM's rules by name (:data:`STARTS`); a name missing here is skipped.
    until
        ``time.perf_counter()`` after which no further placement is tried; None for all.

    Returns
    -------
    name, start, profit
        The placement's name, its values by Pyomo name (None when no placement has an
        image in the model) and its Eq. 2a profit.
    """
    inst = built.instance
    repn = generate_standard_repn(built.model.profit.expr)
    best: tuple[str, dict[str, float] | None, float] = ("none", None, -math.inf)
    for name in STARTS[built.use_case]:
        if until is not None and time.perf_counter() > until:
            break
        if name != "current" and name not in heuristics:
            continue
        placed = inst.current_placement() if name == "current" else heuristics[name](inst).placed()
        if built.budget is not None and not built.budget.allows(disruption(inst, placed)):
            continue  # not a point of the model: it breaks the budget's rows
        start = built.warm_start(placed)
        if start is None:
            continue
        profit = repn.constant + sum(
            c * start.get(v.name, 0.0) for c, v in zip(repn.linear_coefs, repn.linear_vars, strict=True)
        )
        if profit > best[2]:
            best = (name, start, profit)
    return best


def solve_wpm(
    instance: Instance,
    *,
    use_case: str = "joint",
    solver: str = "highs",
    weights: WpmWeights | None = None,
    options: SolverOptions | None = None,
    max_repairs: int = 5,
    warm_start: bool = False,
    heuristics: Mapping[str, Callable[[Instance], Solution]] | None = None,
    budget: Budget | None = None,
) -> Solution:
    """Solve a WPM use case and return an indexed, verified-shape solution.

    Parameters
    ----------
    use_case
        ``initial``, ``compaction``, ``reconfiguration`` or ``joint`` (see
        :func:`mipopt.exact.wpm.model.build_wpm`).
    weights
        Rewards and costs of Eq. 2a.
    options
        Time limit (over all re-solves), threads, seed, gap (default 0).
    max_repairs
        Re-solves after an indexing failure.
    warm_start
        Start the solver from the best of the use case's fast placements
        (:data:`STARTS`) that the model can express, when the backend takes a start
        and ``options`` names none. Off by default: at 80 GPUs it did not shorten the
        proofs (HiGHS finds as good an incumbent within a second or two) and, under
        1-3 s limits, it gave better incumbents on some cases and worse on others.
    heuristics
        IBM's rules by name, for the warm start (:func:`mipopt.solve` passes them); without
        them only ``current`` is tried.
    budget
        At most ``max_restarts`` running workloads restarted, ``max_moved_gb`` GB of them
        moved to another GPU (module docstring); None or unlimited: no rows.
    """
    t0 = time.perf_counter()
    options = options or SolverOptions()
    if options.mip_rel_gap is None:
        options = replace(options, mip_rel_gap=0.0)
    backend = get_backend(solver)
    budget = None if budget is None or budget.unlimited else budget
    built = build_wpm(instance, use_case, weights, budget=budget)
    m = built.model
    m.no_good = pyo.ConstraintList()
    method = f"wpm:{use_case} / {solver}"
    notes: list[str] = []
    if warm_start and options.warm_start is None and backend.capabilities.supports_warm_start:
        # the placements' time counts in the limit: at most a fifth of it goes to them
        until = None if options.time_limit_s is None else t0 + options.time_limit_s / 5
        name, start, profit = best_start(built, heuristics or {}, until)
        if start is not None:
            options = replace(options, warm_start=start)
            notes.append(f"start {name} (profit {profit:.10g})")
    for attempt in range(max_repairs + 1):
        remaining = (
            None
            if options.time_limit_s is None
            else max(options.time_limit_s - (time.perf_counter() - t0), 0.01)
        )
        result = backend.solve(m, replace(options, time_limit_s=remaining))
        if result.status is Status.NONE:
            return no_solution(
                instance,
                method=method,
                termination=result.termination,
                runtime_s=time.perf_counter() - t0,
                message=f"{result.termination.value}: {result.message}",
            )
        contents = gpu_contents(built)
        placed, report = index_solution(instance, contents, fixed=built.held())
        notes.append(f"profit {result.objective:.10g} ({result.termination.value})")
        if report.ok or attempt == max_repairs or result.termination is not Termination.OPTIMAL:
            break
        for g in report.failed:
            notes.append("re-solve: " + g.message())
            _exclude(built, g.gpu, g.result.conflict)
    for msg in report.messages():
        notes.append("indexing: " + msg)
    for w in report.dropped + report.unassigned:
        wl = instance.workload(w)
        if wl.placement is not None:  # a running workload stays placed: back where it runs
            placed[w] = (wl.placement.gpu, wl.placement.start)
    termination = result.termination
    status = Status.OPTIMAL if termination is Termination.OPTIMAL and report.ok else Status.FEASIBLE
    if budget is not None:
        broken = budget.exceeded(disruption(instance, placed))
        if broken is not None:  # the indexing keeps what the MIP counts: a fault, never an answer
            notes.append(f"the answer broke the budget ({broken}): every running workload kept where it runs")
            placed, status = instance.current_placement(), Status.FEASIBLE
        proof = "optimal within it" if status is Status.OPTIMAL else "within it, not proven optimal"
        notes.append(f"budget {budget}: {proof}")
    return solution_for(
        instance,
        placed,
        method=method,
        termination=termination,
        status=status,
        runtime_s=time.perf_counter() - t0,
        bound=result.bound,
        gap=result.gap,
        message="; ".join(notes),
    )


def _exclude(built: WpmModel, gpu: str, conflict: tuple[str, ...]) -> None:
    """No-good row: the conflicting items may not all be on ``gpu`` again.

    Workloads are counted per kind (shape), so the row bounds the counts of those kinds
    on that GPU (its bins, its stayers, its movers that come home to its twin); it may
    also exclude other mixes with as many items of those kinds. Under a restart budget the
    running workloads held at their starts on that GPU (stayers, and those kept at their start
    on its twin) were fixed around the conflict: the row excludes the conflict together with
    them holding, so the same items may come back if one of those moves.
    """
    m = built.model
    rep = {w: r for r, members in built.classes.items() for w in members}
    kind_of = {r: k for k, reps in built.kinds.items() for r in reps}
    names = {kind_of[rep[w]] for w in conflict}
    keys = {b.key for b in built.bins if b.gpu == gpu}
    terms = [m.x[k, b] for k, b in built.pairs if b in keys and k in names]
    home = built.instance.current_placement()
    for r in built.movable:
        if kind_of[r] in names and home[r][0] == gpu:
            terms.append(m.stay[r])
            if r in m.home:
                terms.append(m.home[r])
    held = 0
    if hasattr(m, "keep"):
        kept = built.kept_home()
        for w in built.stayed() + kept:
            if home[w][0] == gpu:
                terms.append(m.keep[w] if w in kept else m.stay[w])
                held += 1
    m.no_good.add(sum(terms) <= len(conflict) - 1 + held)
