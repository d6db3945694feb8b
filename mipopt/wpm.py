"""Solving WPM: the profit MIP, then the indexing step, repaired until every GPU indexes.

WPM decides what goes on each GPU (the paper's Assumption 1 lets it ignore start
slots); :func:`mipopt.preprocess.index_solution` then assigns starts. When a GPU's
content cannot be indexed (running workloads that stay break Assumption 1), the
combination the indexer names is excluded (a no-good row on that GPU: its items
may not all come back) and WPM is solved again, up to ``max_repairs`` times. If a
GPU still cannot be indexed, its dropped new workloads are rejected and dropped
running ones are put back where they run now when that is free; the solution's
message says what happened.
"""

from __future__ import annotations

import time
from collections import defaultdict

import pyomo.environ as pyo

from mipopt.formulations.wpm import WpmModel, WpmWeights, build_wpm
from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.preprocess import index_solution
from mipopt.solvers import SolverOptions, get_backend
from mipopt.verify import no_solution, solution_for


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


def solve_wpm(
    instance: Instance,
    *,
    use_case: str = "joint",
    solver: str = "highs",
    weights: WpmWeights | None = None,
    options: SolverOptions | None = None,
    max_repairs: int = 5,
) -> Solution:
    """Solve a WPM use case and return an indexed, verified-shape solution.

    Parameters
    ----------
    use_case
        ``initial``, ``compaction``, ``reconfiguration`` or ``joint`` (see
        :func:`mipopt.formulations.wpm.build_wpm`).
    weights
        Rewards and costs of Eq. 2a.
    options
        Time limit (over all re-solves), threads, seed, gap (default 0).
    max_repairs
        Re-solves after an indexing failure.
    """
    t0 = time.perf_counter()
    options = options or SolverOptions()
    if options.mip_rel_gap is None:
        options = SolverOptions(
            time_limit_s=options.time_limit_s, threads=options.threads, seed=options.seed, mip_rel_gap=0.0
        )
    backend = get_backend(solver)
    built = build_wpm(instance, use_case, weights)
    m = built.model
    m.no_good = pyo.ConstraintList()
    method = f"wpm:{use_case} / {solver}"
    notes: list[str] = []
    for attempt in range(max_repairs + 1):
        remaining = (
            None
            if options.time_limit_s is None
            else max(options.time_limit_s - (time.perf_counter() - t0), 0.01)
        )
        result = backend.solve(
            m,
            SolverOptions(
                time_limit_s=remaining,
                threads=options.threads,
                seed=options.seed,
                mip_rel_gap=options.mip_rel_gap,
            ),
        )
        if result.status is Status.NONE:
            return no_solution(
                instance,
                method=method,
                termination=result.termination,
                runtime_s=time.perf_counter() - t0,
                message=f"{result.termination.value}: {result.message}",
            )
        contents = gpu_contents(built)
        placed, report = index_solution(instance, contents, fixed=built.fixed)
        notes.append(f"profit {result.objective:g} ({result.termination.value})")
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

    New workloads are counted per class, so the row bounds the class counts on that
    GPU's bins; it may also exclude other mixes with as many items of those classes.
    """
    m = built.model
    rep = {w: r for r, members in built.classes.items() for w in members}
    keys = {b.key for b in built.bins if b.gpu == gpu}
    names = {rep.get(w, w) for w in conflict}
    terms = [m.x[w, b] for w, b in built.pairs if b in keys and w in names]
    home = built.instance.current_placement()
    terms += [m.stay[w] for w in built.movable if w in names and home[w][0] == gpu]
    m.no_good.add(sum(terms) <= len(conflict) - 1)
