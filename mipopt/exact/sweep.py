"""Pareto fronts of acceptance (max), hardware (min) and migrations (min) by the epsilon-constraint method.

GRMU's three objectives (Eqs. 3-5) pull apart: accepting more needs more hardware, and packing
onto less hardware needs migrations. :func:`sweep` returns every non-dominated objective vector
(the Pareto front) of an instance, each with a placement that reaches it, for two or three of the
objectives; the first one named is the *primary* objective, the others are held by epsilon
constraints (issue 3, section 4).

The algorithm: lexicographic epsilon-constraint, nested
-------------------------------------------------------
Write every objective as one to minimize (acceptance negated), ``f_1`` the primary, ``f_2`` the
inner and ``f_3`` the outer epsilon objective. One *solve* at bounds ``(e_2, e_3)`` is
:func:`mipopt.exact.driver.solve_exact` with ``f_2 <= e_2, f_3 <= e_3`` and the lexicographic objective
``f_1, f_2, f_3``:

1. Its result is non-dominated. A point dominating it would satisfy the same bounds and be
   lexicographically better, contradicting the lexicographic optimum.
2. Every non-dominated point ``z`` is the result of the solve at ``(f_2(z), f_3(z))``: that
   result is at least as good as ``z`` in ``f_1``, then ``f_2``, then ``f_3`` and feasible, so
   anything but ``z``'s own values would dominate ``z``.
3. Inner loop (``e_3`` fixed): start at ``e_2 = inf`` and, after each point ``p``, tighten to
   ``e_2 = f_2(p) - step_2``. This walks the bi-objective front of ``(f_1, f_2)`` among the
   placements with ``f_3 <= e_3``, and stops when the bounds leave nothing feasible.
4. Outer loop: after a level, ``e_3 = max f_3(p) - step_3`` over the level's points. A
   non-dominated ``z`` with ``f_3(z) <= e_3`` missed at this level is matched in ``(f_1, f_2)``
   by some point of the level, which must then have a larger ``f_3`` (or it would dominate
   ``z``), so ``f_3(z)`` is at most the level's maximum minus a step and the next level keeps it.
   The loop ends when no placement meets ``e_3``. With two objectives only the inner loop runs.

So the front is complete once every solve is proven. The steps make "strictly better" exact for
values on a lattice: acceptance changes by sums of new workloads' weights ``a_i``, hardware by
sums of host weights ``b_j``, migrations by sums of ``2 delta_i``, so each objective moves in
multiples of the greatest common divisor of its weights (weights read as fractions with
denominators up to 10^6; others fall back to 10^-4 of the smallest weight). A bound sits half a
step below the last value, which keeps the next attainable value and is robust to the solvers'
feasibility tolerances.

Savings: a lexicographic optimum over a region is also the optimum over any sub-region that
contains it, so a solve whose bounds lie inside an earlier proven solve's bounds, and contain that
solve's point, reuses it (and inside a proven-infeasible region it is skipped). The loops first
solve each epsilon objective on its own (a payoff table, ``lex:f_k, f_1, ...``); these points are
on the front, and their values stop a loop without a last infeasible solve.

Objectives left out of a two-objective sweep still break ties, last in the lexicographic order, so
every point is also non-dominated in all three objectives. A solve cut by the time limit gives a
point marked ``proven=False``: it may be dominated (it is then dropped) and the loops built on it
may miss points, so the front says ``complete=False``.
"""

from __future__ import annotations

import csv
import math
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, TextIO

from mipopt.errors import InstanceError
from mipopt.exact.driver import Heuristic, lattice_step, solve_exact
from mipopt.instance import Assignment, Instance, Solution, Status, Termination, solution_to_dict
from mipopt.io import write_atomic, write_json
from mipopt.solvers import SolverOptions

#: Objectives a sweep can trade off (GRMU Eqs. 3-5).
SWEEP_OBJECTIVES = ("acceptance", "hardware", "migrations")
# +1 to minimize, -1 to maximize: the sweep works on every objective in min form
_SIGN = {"acceptance": -1.0, "hardware": 1.0, "migrations": 1.0}
DEFAULT_MAX_POINTS = 100
CSV_COLUMNS = (
    "point",
    "acceptance",
    "hardware",
    "migrations",
    "proven",
    "termination",
    "runtime_s",
    "solution",
)
_TOL = 1e-6


@dataclass(frozen=True, slots=True)
class FrontPoint:
    """One point of a front: objective values, the placement reaching them, and how sure we are.

    Attributes
    ----------
    proven
        Every lexicographic stage of its solve ended optimal.
    runtime_s
        Time of the solve that found it.
    bounds
        The epsilon constraints it was solved under, as passed to :func:`mipopt.exact.driver.solve_exact`.
    solution_file
        Where :meth:`Front.save_solutions` wrote the solution, if it did.
    """

    acceptance: float
    hardware: float
    migrations: float
    solution: Solution
    proven: bool
    runtime_s: float
    bounds: tuple[tuple[str, str, float], ...] = ()
    solution_file: str | None = None

    @property
    def termination(self) -> Termination:
        return self.solution.termination

    def value(self, name: str) -> float:
        """The value of objective ``name``."""
        return float(getattr(self, name))

    def dominates(self, other: FrontPoint, objectives: Sequence[str] = SWEEP_OBJECTIVES) -> bool:
        """At least as good in every objective of ``objectives`` and better in one."""
        mine = [_SIGN[n] * self.value(n) for n in objectives]
        theirs = [_SIGN[n] * other.value(n) for n in objectives]
        return all(a <= b + _TOL for a, b in zip(mine, theirs, strict=True)) and any(
            a < b - _TOL for a, b in zip(mine, theirs, strict=True)
        )


@dataclass(frozen=True, slots=True)
class SweepProgress:
    """What a progress callback receives after every solve.

    ``fraction`` is an estimate in [0, 1] from where the epsilon bounds stand in the ranges
    still to cover; it never goes down and is 1 when the sweep ends.
    """

    solves: int
    points: int
    fraction: float
    message: str


@dataclass(frozen=True, slots=True)
class Front:
    """A Pareto front: the non-dominated points, best primary objective first.

    Attributes
    ----------
    objectives
        The objectives traded off, the primary first.
    complete
        Every solve was proven and the loops ran to their end (not cut by ``max_points``):
        the front holds every non-dominated objective vector.
    solves
        Solver runs (reused results not counted).
    """

    instance: str
    objectives: tuple[str, ...]
    model: str
    solver: str
    points: tuple[FrontPoint, ...]
    complete: bool
    solves: int
    runtime_s: float

    @property
    def proven(self) -> bool:
        """Every point proven."""
        return all(p.proven for p in self.points)

    def rows(self) -> list[dict[str, Any]]:
        """One dict per point, keyed by :data:`CSV_COLUMNS`."""
        return [
            {
                "point": i,
                "acceptance": p.acceptance,
                "hardware": p.hardware,
                "migrations": p.migrations,
                "proven": p.proven,
                "termination": p.termination.value,
                "runtime_s": p.runtime_s,
                "solution": p.solution_file or "",
            }
            for i, p in enumerate(self.points, start=1)
        ]

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready form: the summary, and per point its row and placements, each
        ``[gpu, start]``, or ``[gpu, start, profile]`` where the point chose a memory-sized
        workload's profile."""
        return {
            "instance": self.instance,
            "objectives": list(self.objectives),
            "model": self.model,
            "solver": self.solver,
            "complete": self.complete,
            "proven": self.proven,
            "solves": self.solves,
            "runtime_s": self.runtime_s,
            "points": [
                {**row, "placements": {a.workload: _placement(a) for a in p.solution.placements}}
                for row, p in zip(self.rows(), self.points, strict=True)
            ],
        }

    def table(self) -> str:
        """The front as a text table with a one-line summary."""
        senses = ", ".join(f"{n} ({'max' if _SIGN[n] < 0 else 'min'})" for n in self.objectives)
        lines = [f"Pareto front of {self.instance!r}: {senses}; {self.model} / {self.solver}"]
        head = f"{'point':>5} {'acceptance':>10} {'hardware':>9} {'migrations':>10} {'proven':>6} {'runtime_s':>9}"
        lines.append(head + ("  solution" if any(p.solution_file for p in self.points) else ""))
        for row in self.rows():
            line = (
                f"{row['point']:>5} {row['acceptance']:>10g} {row['hardware']:>9g} {row['migrations']:>10g}"
                f" {'yes' if row['proven'] else 'no':>6} {row['runtime_s']:>9.3f}"
            )
            lines.append(line + (f"  {row['solution']}" if row["solution"] else ""))
        n = len(self.points)
        verdict = "complete, every point proven" if self.complete else "may be incomplete"
        if not self.proven:
            verdict += f" ({sum(not p.proven for p in self.points)} unproven)"
        lines.append(
            f"{n} point{'s' if n != 1 else ''} from {self.solves} solves in {self.runtime_s:.2f} s; front {verdict}"
        )
        return "\n".join(lines)

    def to_csv(self, path: str | Path) -> None:
        """Write :meth:`rows` as CSV, atomically (a temporary file in the same folder, then a rename)."""

        def write(fh: TextIO) -> None:
            out = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
            out.writeheader()
            for row in self.rows():
                out.writerow(
                    {
                        **row,
                        **{n: f"{row[n]:g}" for n in SWEEP_OBJECTIVES},
                        "proven": "true" if row["proven"] else "false",
                        "runtime_s": f"{row['runtime_s']:.4f}",
                    }
                )

        write_atomic(Path(path), write, text=True)

    def plot(self, path: str | Path) -> None:
        """Draw acceptance against hardware to a PNG, atomically.

        Colour and size show migrations; proven points are filled, unproven ones hollow; each
        point carries its number (the ``point`` column of :meth:`to_csv`).
        """
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        from matplotlib.colors import Normalize
        from matplotlib.lines import Line2D

        fig, ax = plt.subplots(figsize=(6.4, 4.8))
        mig = [p.migrations for p in self.points]
        lo, hi = (min(mig), max(mig)) if mig else (0.0, 1.0)
        norm = Normalize(lo, hi if hi > lo else lo + 1)
        cmap = plt.get_cmap("viridis")
        for i, p in enumerate(self.points, start=1):
            colour = cmap(norm(p.migrations))
            size = 50 + 150 * norm(p.migrations)
            ax.scatter(
                [p.hardware],
                [p.acceptance],
                s=size,
                facecolors=[colour] if p.proven else "none",
                edgecolors=[colour],
                linewidths=1.8,
                zorder=3,
            )
            ax.annotate(
                str(i), (p.hardware, p.acceptance), textcoords="offset points", xytext=(7, 5), fontsize=8
            )
        bar = fig.colorbar(plt.cm.ScalarMappable(norm=norm, cmap=cmap), ax=ax)
        bar.set_label("migrations (Eq. 5, minimize)")
        ax.legend(
            handles=[
                Line2D([], [], marker="o", ls="", color="0.4", label="proven"),
                Line2D([], [], marker="o", ls="", color="0.4", markerfacecolor="none", label="not proven"),
            ],
            loc="best",
            fontsize=8,
        )
        ax.set_xlabel("hardware (Eq. 4, minimize)")
        ax.set_ylabel("acceptance (Eq. 3, maximize)")
        ax.set_title(f"Pareto front: {self.instance} ({len(self.points)} points)", fontsize=10)
        ax.grid(True, alpha=0.3)
        ax.margins(0.15)
        fig.tight_layout()
        try:
            write_atomic(Path(path), lambda fh: fig.savefig(fh, format="png", dpi=120), text=False)
        finally:
            plt.close(fig)

    def save_solutions(self, directory: str | Path, *, prefix: str = "point-") -> Front:
        """Write each point's solution JSON as ``DIRECTORY/PREFIXNNN.json``; return the front naming them.

        The folder is created if missing; each file is written atomically.
        """
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        points = []
        for i, p in enumerate(self.points, start=1):
            path = directory / f"{prefix}{i:03d}.json"
            write_json(path, solution_to_dict(p.solution))
            points.append(replace(p, solution_file=str(path)))
        return replace(self, points=tuple(points))


def parse_objectives(text: str | Sequence[str]) -> tuple[str, ...]:
    """Check a sweep's objectives: two or three distinct names of :data:`SWEEP_OBJECTIVES`.

    Accepts ``"acceptance,hardware"`` or a sequence of names.

    Raises
    ------
    InstanceError
        Naming ``objectives`` and the rule.
    """
    names = tuple(x.strip() for x in text.split(",")) if isinstance(text, str) else tuple(text)
    for n in names:
        if n not in SWEEP_OBJECTIVES:
            raise InstanceError(
                "objectives", f"unknown objective {n!r} (known: {', '.join(SWEEP_OBJECTIVES)})"
            )
    if len(set(names)) != len(names):
        raise InstanceError("objectives", f"each objective at most once, got {','.join(names)}")
    if not 2 <= len(names) <= 3:
        raise InstanceError(
            "objectives", f"a front needs 2 or 3 objectives, e.g. acceptance,hardware; got {len(names)}"
        )
    return names


def steps(instance: Instance) -> dict[str, float | None]:
    """The lattice step of each objective: every change of its value is a multiple of it.

    None when the instance data leave the objective constant (no new workloads, no movable
    running ones, zero weights).
    """
    movable = [w for w in instance.running if not w.pinned]
    return {
        "acceptance": _lattice_step(w.weight for w in instance.new),
        "hardware": _lattice_step(h.weight for h in instance.hosts),
        "migrations": _lattice_step(2 * w.migration_weight for w in movable),
    }


def _lattice_step(weights: Iterable[float]) -> float | None:
    """Greatest common divisor of the non-zero weights, read as fractions."""
    values = [abs(float(x)) for x in weights if x]
    if not values:
        return None
    # a weight that is not a fraction we can trust gets a small step, documented above
    return lattice_step(values) or 1e-4 * min(values)


@dataclass
class _Sweeper:
    """The state of one sweep: the points found, the proven regions, the progress."""

    instance: Instance
    objectives: tuple[str, ...]
    model: str
    solver: str
    options: SolverOptions
    max_points: int
    progress: Callable[[SweepProgress], None] | None
    portfolio: Sequence[Heuristic] = ()
    points: list[FrontPoint] = field(default_factory=list)
    # proven solves: (the region's bounds, its point or None when infeasible)
    solved: list[tuple[tuple[float, ...], FrontPoint | None]] = field(default_factory=list)
    solves: int = 0
    complete: bool = True
    fraction: float = 0.0
    ideals: tuple[float, ...] = ()
    order: str = field(init=False)
    step: dict[str, float | None] = field(init=False)

    def __post_init__(self) -> None:
        self.order = "lex:" + ",".join(_lex_order(self.objectives))
        self.step = steps(self.instance)

    @property
    def eps(self) -> tuple[str, ...]:
        return self.objectives[1:]

    def full(self) -> bool:
        return len(self.points) >= self.max_points

    def minform(self, point: FrontPoint, name: str) -> float:
        return _SIGN[name] * point.value(name)

    def run_solve(self, order: str, region: tuple[float, ...]) -> tuple[FrontPoint | None, bool]:
        """One :func:`solve_exact` under ``region``: the point (None if none found) and whether proven."""
        bounds = tuple(
            (n, "<=", e) if _SIGN[n] > 0 else (n, ">=", -e)
            for n, e in zip(self.eps, region, strict=True)
            if math.isfinite(e)
        )
        sol = solve_exact(
            self.instance,
            model=self.model,
            solver=self.solver,
            objective=order,
            options=self.options,
            bounds=bounds,
            portfolio=self.portfolio,
        )
        self.solves += 1
        if sol.status is Status.NONE or sol.objectives is None:
            return None, sol.termination is Termination.INFEASIBLE
        o = sol.objectives
        proven = sol.termination is Termination.OPTIMAL
        point = FrontPoint(o.acceptance, o.hardware, o.migrations, sol, proven, sol.runtime_s, bounds)
        self.add(point)
        return point, proven

    def solve(self, region: tuple[float, ...]) -> tuple[FrontPoint | None, bool]:
        """The lexicographic optimum under ``region``, reusing an earlier proven one where it holds."""
        for wider, point in self.solved:
            if all(a >= b - _TOL for a, b in zip(wider, region, strict=True)):
                if point is None:
                    return None, True
                if all(self.minform(point, n) <= e + _TOL for n, e in zip(self.eps, region, strict=True)):
                    return point, True
        point, proven = self.run_solve(self.order, region)
        if proven:
            self.solved.append((region, point))
        else:
            self.complete = False
        return point, proven

    def add(self, point: FrontPoint) -> None:
        """Keep one point per objective vector, a proven one if there is one."""
        key = tuple(round(point.value(n), 9) for n in self.objectives)
        for i, p in enumerate(self.points):
            if tuple(round(p.value(n), 9) for n in self.objectives) == key:
                if point.proven and not p.proven:
                    self.points[i] = point
                return
        self.points.append(point)

    def report(self, fraction: float, message: str) -> None:
        self.fraction = max(self.fraction, min(max(fraction, 0.0), 1.0))
        if self.progress is not None:
            self.progress(SweepProgress(self.solves, len(self.points), self.fraction, message))

    def ideal(self, name: str) -> float:
        """The best min-form value of ``name`` on its own (payoff table); -inf if unproven or constant."""
        if self.step[name] is None:
            return -math.inf
        point, proven = self.run_solve(
            "lex:" + ",".join(_lex_order((name, *(n for n in self.objectives if n != name)))),
            (math.inf,) * len(self.eps),
        )
        self.report(0.0, f"payoff table: best {name}")
        if point is None or not proven:  # no valid lower bound: the loops end on an infeasible solve instead
            self.complete &= proven
            return -math.inf
        return self.minform(point, name)

    def inner_loop(self, outer: float, band: tuple[float, float]) -> list[FrontPoint]:
        """Walk the inner epsilon down at a fixed outer one; the points found (none: region empty).

        ``band`` is the stretch of the progress fraction this level fills.
        """
        name, step, low = self.eps[0], self.step[self.eps[0]], self.ideals[0]
        e, top = math.inf, math.nan
        found: list[FrontPoint] = []
        while not self.full():
            point, _ = self.solve((e,) if len(self.eps) == 1 else (e, outer))
            if point is None:
                break
            found.append(point)
            value = self.minform(point, name)
            if not found[1:]:
                top = value
            if step is None:  # constant: one point per level
                break
            e = value - step / 2
            done = (top - e) / (top - low + step / 2) if math.isfinite(low) else 0.0
            self.report(band[0] + (band[1] - band[0]) * done, f"next: {_beyond(name, value)}")
            if e < low:
                break
        return found

    def run(self) -> None:
        self.ideals = tuple(self.ideal(n) for n in self.eps)
        if len(self.eps) == 1:
            self.inner_loop(math.inf, (0.0, 1.0))
            return
        name, step, low = self.eps[1], self.step[self.eps[1]], self.ideals[1]
        outer, top = math.inf, math.nan
        while not self.full():
            if math.isinf(outer) or step is None or not math.isfinite(low):
                band = (0.0, 0.25)  # the first level; its width is a guess until its points are in
            else:
                span = top - low + step / 2
                band = ((top - outer) / span, (top - outer + step) / span)
            level = self.inner_loop(outer, band)
            if not level or step is None:
                break
            worst = max(self.minform(p, name) for p in level)
            if math.isinf(outer):
                top = worst
            outer = worst - step / 2
            if math.isfinite(low):
                self.report((top - outer) / (top - low + step / 2), f"next: {_beyond(name, worst)}")
            if outer < low:
                break


def _lex_order(first: Sequence[str]) -> list[str]:
    """``first``, then the remaining sweep objectives as tie-breakers."""
    return [*first, *(n for n in SWEEP_OBJECTIVES if n not in first)]


def _beyond(name: str, minform: float) -> str:
    """Better than a min-form value, as a user reads it: ``hardware < 6``, ``acceptance > 7``."""
    return f"{name} < {minform:g}" if _SIGN[name] > 0 else f"{name} > {-minform:g}"


def sweep(
    instance: Instance,
    *,
    model: str = "grmu",
    solver: str = "highs",
    objectives: str | Sequence[str] = SWEEP_OBJECTIVES,
    options: SolverOptions | None = None,
    progress: Callable[[SweepProgress], None] | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
    portfolio: Sequence[Heuristic] = (),
) -> Front:
    """The Pareto front of ``instance`` by the nested lexicographic epsilon-constraint method.

    Parameters
    ----------
    model, solver
        Formulation and backend, as for :func:`mipopt.exact.driver.solve_exact`.
    objectives
        Two or three of acceptance, hardware, migrations (names or ``"a,b,c"``); the first is
        the primary objective, the others get epsilon constraints.
    options
        Solver options for each point (the time limit is per point, over its lexicographic stages).
    progress
        Called after each solve with a :class:`SweepProgress`.
    max_points
        Stop once this many distinct points are found and keep the best ``max_points`` by the
        primary objective; the front is then marked incomplete.
    portfolio
        Fast heuristics that seed each point's solve (:func:`mipopt.sweep` passes the registry's).

    Returns
    -------
    Front
        The non-dominated points, best primary objective first, ties broken by the others.

    Raises
    ------
    InstanceError
        Naming ``objectives`` or ``max_points`` for bad values, ``model`` or ``solver``
        for unknown names.
    """
    names = parse_objectives(objectives)
    if max_points < 1:
        raise InstanceError("max_points", f"must be at least 1, got {max_points}")
    try:
        from mipopt.solvers import get_backend

        get_backend(solver)
    except ValueError as err:
        raise InstanceError("solver", str(err)) from None
    t0 = time.perf_counter()
    s = _Sweeper(instance, names, model, solver, options or SolverOptions(), max_points, progress, portfolio)
    s.run()
    if s.full():
        s.complete = False
    kept = [p for p in s.points if not any(q.dominates(p, names) for q in s.points)]
    kept.sort(key=lambda p: tuple(_SIGN[n] * p.value(n) for n in _lex_order(names)))
    kept = kept[:max_points]  # the payoff table may have added points past the limit
    front = Front(
        instance=instance.name,
        objectives=names,
        model=model,
        solver=solver,
        points=tuple(kept),
        complete=s.complete,
        solves=s.solves,
        runtime_s=time.perf_counter() - t0,
    )
    s.report(1.0, "done")
    return front


def _placement(a: Assignment) -> list[str | int]:
    """``[gpu, start]``, with the chosen profile of a memory-sized workload after them."""
    return [a.gpu, a.start] if a.profile is None else [a.gpu, a.start, a.profile]
