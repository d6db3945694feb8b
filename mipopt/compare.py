"""Heuristics against the proven optimum: every method on the same instances, verified, with gaps.

:func:`compare_methods` solves each instance twice with the tight GRMU model (lexicographic
``acceptance, hardware, migrations``, :func:`mipopt.exact.driver.solve_exact`): the *initial*
optimum (``exact-initial``, running workloads stay where they run) and the *joint* optimum
(``exact``, running workloads may move). It runs each named method on the instance, passes every
solution through :func:`mipopt.verifier.verify` and returns one :class:`GapRow` per (instance,
method) with the verifier's numbers and the gaps to the method's reference. A solution the
verifier rejects is an error (:class:`InvalidSolutionError`), never a row.

Like with like: a method that cannot move running workloads (every online policy in batch but
those that migrate on a rejection, IBM's initial and first-fit rules: ``MethodSpec.moves`` of
:mod:`mipopt.registry`) is measured against the initial optimum, the best any such method can
do; a method that may move them (``grmu``'s defragmentation, IBM's compaction, reconfiguration
and joint rules, the joint model) against the joint optimum. Each row says which
(``reference_use_case``: ``initial`` or ``joint``). The joint optimum's row also carries what
migrations buy: its gain over the initial optimum (``acceptance_gain``, ``acceptance_gain_pct``,
``hardware_gain_pct``) and its ``migrations`` (GRMU Eq. 5) and ``moves`` (running workloads moved,
a move inside a GPU included, which Eq. 5 does not count).

Method names are those of :mod:`mipopt.registry` (``mipopt solve --list-methods``): the
references ``exact`` and ``exact-initial``, IBM's batch rules and every online policy in batch,
with options (``grmu:heavy=0.3``, ``adapter(ff)``).

Gaps are against the reference's verified objectives: ``acceptance_gap`` (weighted, the
optimum minus the method's) and ``acceptance_gap_pct`` (of the optimum), ``accepted_gap``
(workloads, by count: may be negative when a method takes more, smaller workloads),
``hardware_gap_pct`` (the method's hardware over the optimum's, minus one: negative when a
method accepts less and so powers less). When the reference is not proven optimal within the
time limit the gaps are against its incumbent, the best known solution, and the row says
``reference="incumbent"``; a method may then beat it (negative gap). Without any reference
solution the gaps are empty (``reference="none"``).

Examples
--------
>>> from mipopt.io import load_instance
>>> rows = compare_methods([load_instance("instances/grmu_fig2b.json")], ["ff"])
>>> [(r.method, r.reference_use_case, r.acceptance, r.acceptance_gap, r.moves) for r in rows]
[('exact', 'joint', 4.0, 0.0, 1), ('exact-initial', 'initial', 3.0, 0.0, 0), ('ff', 'initial', 3.0, 0.0, 0)]
>>> rows[0].acceptance_gain  # what moving one running workload inside its GPU buys
1.0
"""

from __future__ import annotations

import csv
import math
import statistics
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TextIO

from mipopt.errors import InstanceError
from mipopt.executors import Executor, parse_executor, run_jobs, runs_here
from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.io import instance_argument, write_atomic
from mipopt.registry import MethodSpec, checked_options, get_method, methods
from mipopt.specs import parse_spec, pieces
from mipopt.verifier import verify

if TYPE_CHECKING:
    from mipopt.heuristics.online import Policy

__all__ = [
    "EXACT",
    "EXACT_INITIAL",
    "GapRow",
    "InvalidSolutionError",
    "MethodSummary",
    "compare_methods",
    "gain_text",
    "heuristic_names",
    "parse_methods",
    "summarize",
    "summary_table",
    "write_csv",
]

#: The joint reference: the exact model (lexicographic), running workloads may move.
EXACT = "exact"
#: The initial reference: the exact model with every running workload where it runs.
EXACT_INITIAL = "exact-initial"
#: Batch rules that place no new workload (they only move running ones): not in ``all``.
MOVE_ONLY = ("ibm-compaction", "ibm-reconfiguration")
#: Policy wrappers shown in ``all``: MIG-Adapter around GRMU's first fit.
WRAPPED = ("adapter(ff)",)

#: The kind column of a row: exact, a batch rule, or an online policy in batch.
Kind = Literal["exact", "batch", "policy"]


class InvalidSolutionError(RuntimeError):
    """A method returned a solution the verifier rejects (a bug in the method, not a result)."""


def heuristic_names() -> list[str]:
    """What ``all`` means: every heuristic of the registry that places new workloads, then
    MIG-Adapter around first fit."""
    return [m.name for m in methods() if m.kind == "heuristic" and m.name not in MOVE_ONLY] + list(WRAPPED)


def parse_methods(text: str, path: str = "methods") -> list[str]:
    """Split a comma-separated method list; ``all`` expands to :func:`heuristic_names`.

    A method's options contain commas too (``grmu:heavy=0.3,consolidation=24``,
    ``exact:objective=lex:acceptance,hardware``): after a method with options, a piece that names
    no method continues it, as a spec's options do (:func:`mipopt.specs.parse_spec`). Commas
    inside parentheses (``adapter(grmu:heavy=0.3,consolidation=24)``) never split.

    Raises
    ------
    InstanceError
        Naming ``path`` when the list is empty or a name is repeated.

    Examples
    --------
    >>> parse_methods("ff,exact:objective=lex:acceptance,hardware,mfi")
    ['ff', 'exact:objective=lex:acceptance,hardware', 'mfi']
    """
    names: list[str] = []
    for piece in (p.strip() for p in pieces(text)):
        if not piece:
            continue
        if names and ":" in names[-1] and not _names_method(piece):
            names[-1] += "," + piece
        elif piece == "all":
            names.extend(n for n in heuristic_names() if n not in names)
        elif piece in names:
            raise InstanceError(path, f"method {piece!r} is named twice")
        else:
            names.append(piece)
    if not names:
        raise InstanceError(path, "no method named; give e.g. ff,mfi or all")
    return names


def _names_method(piece: str) -> bool:
    """Whether ``piece`` starts with the name of a method or an online policy (``all`` too), not
    with an option or an option's value."""
    from mipopt.heuristics.policies import POLICIES

    try:
        name = parse_spec(piece).name
    except InstanceError:
        return False
    return name == "all" or name in POLICIES or any(m.name == name for m in methods())


def _kind(spec: MethodSpec) -> Kind:
    return "exact" if spec.kind == "exact" else "policy" if spec.policy else "batch"


@dataclass(frozen=True, slots=True)
class GapRow:
    """One method on one instance, with the verifier's numbers and the gaps to the reference.

    Attributes
    ----------
    instance, gpus, new
        The instance's name, its GPUs and its new workloads.
    method, kind
        The method's name and ``exact``, ``batch`` (an IBM rule) or ``policy`` (an online policy
        in batch).
    may_move
        Whether the method may move running workloads (``MethodSpec.moves``): it decides the
        reference, see ``reference_use_case``.
    termination, status
        As the method reported them (heuristics: ``completed`` / ``feasible``).
    proven
        Exact methods: stopped at a proven optimum (termination ``optimal``); heuristics: None.
    bound, gap
        Exact methods: the solver's bound and relative gap of the last stage it solved (merged
        lexicographic stages share one weighted objective); heuristics: None.
    accepted, accepted_new
        Workloads placed (running ones included) and new workloads placed.
    acceptance, hardware, migrations
        The verifier's objectives (GRMU Eqs. 3-5); None when an exact method found nothing.
    moves
        Running workloads the solution moves, to another host, another GPU or other slots of
        their GPU (Eq. 5 counts no move inside a GPU).
    active_gpus
        GPUs with at least one workload.
    runtime_s
        Wall-clock time of the method's call.
    reference
        ``optimal`` (the reference proved its optimum), ``incumbent`` (time limit: gaps are
        against its best solution) or ``none`` (no reference solution: no gaps).
    reference_use_case
        Which optimum the gaps use: ``initial`` (``exact-initial``, running workloads stay: the
        reference of a method that cannot move them) or ``joint`` (``exact``, running workloads
        may move: the reference of a method that may).
    accepted_gap, acceptance_gap, acceptance_gap_pct, hardware_gap_pct
        See the module docstring; None without a reference or a solution.
    matches_reference
        Same (acceptance, hardware, migrations) as the reference: a lexicographic optimum
        when ``reference == "optimal"``.
    acceptance_gain, acceptance_gain_pct, hardware_gain_pct
        The joint optimum's row only: what migrations buy, its acceptance minus the initial
        optimum's (and in per cent of it), its hardware over the initial optimum's minus one
        (negative: fewer hosts and GPUs powered). None on every other row, or without both optima.
    """

    instance: str
    gpus: int
    new: int
    method: str
    kind: str
    may_move: bool
    termination: str
    status: str
    proven: bool | None
    bound: float | None
    gap: float | None
    accepted: int | None
    accepted_new: int | None
    acceptance: float | None
    hardware: float | None
    migrations: float | None
    moves: int | None
    active_gpus: int | None
    runtime_s: float
    reference: str
    reference_use_case: str | None = None
    accepted_gap: int | None = None
    acceptance_gap: float | None = None
    acceptance_gap_pct: float | None = None
    hardware_gap_pct: float | None = None
    matches_reference: bool | None = None
    acceptance_gain: float | None = None
    acceptance_gain_pct: float | None = None
    hardware_gain_pct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GapRow:
        """A row back from :meth:`to_dict` or from a CSV row of strings (empty or absent: None,
        as in rows written before a column existed)."""
        values: dict[str, Any] = {}
        for f in fields(cls):
            raw = data.get(f.name)
            kind = str(f.type).split(" |")[0]
            if raw is None or raw == "":
                values[f.name] = None
            elif kind == "bool":
                values[f.name] = raw if isinstance(raw, bool) else raw == "True"
            elif kind in ("int", "float"):
                values[f.name] = int(raw) if kind == "int" else float(raw)
            else:
                values[f.name] = str(raw)
        return cls(**values)


#: CSV columns of :func:`write_csv`, in :class:`GapRow` field order.
COLUMNS: tuple[str, ...] = tuple(f.name for f in fields(GapRow))

Progress = Callable[[int, int, str], None]  # (steps done, steps in all, what just finished)


def compare_methods(
    instances: Sequence[Instance],
    method_names: Sequence[str | Policy],
    *,
    solver: str = "highs",
    time_limit_s: float | None = 60.0,
    threads: int | None = None,
    seed: int = 0,
    progress: Progress | None = None,
    executor: str | Executor | None = None,
) -> list[GapRow]:
    """Solve every instance exactly (initial and joint optimum) and with every method; verified
    rows with gaps, each against the optimum of its own use case.

    Parameters
    ----------
    instances
        The instances, in order.
    method_names
        Method names (:func:`mipopt.methods`) or :class:`~mipopt.heuristics.online.Policy`
        objects (yours, or :func:`mipopt.make_policy`'s; the row's method is the policy's
        name; on an executor other than ``serial`` its class must be importable by the
        workers, from a module rather than a notebook or ``__main__``); the references
        ``exact`` (joint) and ``exact-initial`` always run on each instance and are not
        repeated when named.
    solver
        Backend of the exact methods, ``highs`` or ``cpsat``.
    time_limit_s
        Limit of each exact solve (over its lexicographic stages); None: none. The initial
        optimum is solved first; the joint solve starts from it (a placement that moves nothing
        is one the joint model may keep), so the joint optimum is never below the initial one.
    threads
        Solver threads (None: the solver's default).
    seed
        Solver seed and the seed of randomized policies: the same arguments give the same rows
        (up to runtimes, and up to which incumbent a time-limited solve holds).
    progress
        Called after every (instance, method) with (done, total, message); with an executor other
        than ``serial``, after every instance.
    executor
        Where the instances run (:func:`mipopt.executors.make_executor`): ``serial`` in this
        process (the default), ``local[:N]`` processes, ``dask``/``ray`` clusters; a spec is
        started and closed here, an :class:`~mipopt.executors.Executor` left open. Each instance
        is one job (both optima and every method), so the rows are the same whatever runs them.

    Returns
    -------
    list[GapRow]
        Per instance: the joint reference's row, the initial reference's, then one row per
        method in the order given.

    Raises
    ------
    InstanceError
        Naming the parameter: an unknown method name (:class:`~mipopt.errors.UnknownMethodError`),
        an unknown solver, a bad time limit, thread count or seed, an instance that is not one
        (:class:`~mipopt.errors.ParameterTypeError`).
    InvalidSolutionError
        When the verifier rejects a method's solution.

    Examples
    --------
    >>> import mipopt
    >>> rows = mipopt.compare_methods([mipopt.load_instance("instances/grmu_fig2b.json")], ["ff-agnostic"])
    >>> [(r.method, r.acceptance, r.acceptance_gap, r.matches_reference) for r in rows]
    [('exact', 4.0, 0.0, True), ('exact-initial', 3.0, 0.0, True), ('ff-agnostic', 2.0, 1.0, False)]
    """
    for i, inst in enumerate(instances):
        instance_argument(inst, f"instances[{i}]")
    # checked once, up front, by solve's rules
    given = checked_options({"time_limit_s": time_limit_s, "threads": threads, "seed": seed})
    from mipopt.solvers import BACKENDS

    if solver not in BACKENDS:
        raise InstanceError("solver", f"unknown solver {solver!r} (known: {', '.join(BACKENDS)})")
    for name in method_names:
        get_method(name, "methods")  # an unknown name fails before any solve
    names = tuple(n for n in method_names if not isinstance(n, str) or n not in (EXACT, EXACT_INITIAL))
    given["solver"] = solver
    total = len(instances) * (2 + len(names))
    parsed = executor if isinstance(executor, Executor) else parse_executor(executor or "serial")
    if runs_here(parsed, len(instances)):
        rows: list[GapRow] = []
        for inst in instances:

            def step(done: int, message: str, before: int = len(rows)) -> None:
                if progress is not None:
                    progress(before + done, total, message)

            rows += _instance_rows(inst, names, given, step)
        return rows
    finished = 0

    def ended(i: int, found: list[GapRow]) -> None:
        nonlocal finished
        finished += len(found)
        if progress is not None:
            progress(finished, total, f"{instances[i].name}: {len(found)} rows")

    jobs = [(inst, names, given) for inst in instances]
    return [row for found in run_jobs(_instance_rows, jobs, parsed, ended) for row in found]


def _instance_rows(
    inst: Instance,
    names: Sequence[str | Policy],
    given: dict[str, Any],
    step: Callable[[int, str], None] | None = None,
) -> list[GapRow]:
    """One job of :func:`compare_methods`: an instance's rows. Both optima are solved in it, the
    initial one first, so that the joint solve starts from it."""
    joint, initial = get_method(EXACT, "methods"), get_method(EXACT_INITIAL, "methods")
    others = [get_method(n, "methods") for n in names]
    done = 0

    def run(method: MethodSpec, **extra: Any) -> tuple[GapRow, Solution]:
        nonlocal done
        options = {k: v for k, v in given.items() if k in method.options and v is not None}
        t0 = time.perf_counter()
        sol = method.solve(inst, **options, **extra)
        runtime = time.perf_counter() - t0
        row = _row(inst, method, sol, runtime)
        done += 1
        if step is not None:
            what = f"{row.acceptance:g}" if row.acceptance is not None else "no solution"
            step(done, f"{inst.name} {method.name}: {what} in {runtime:.2f} s")
        return row, sol

    initial_row, initial_sol = run(initial)
    start = {"warm_start": initial_sol} if initial_sol.status is not Status.NONE else {}
    joint_row, _ = run(joint, **start)
    refs = {"initial": initial_row, "joint": joint_row}
    rows = [_with_gain(_with_gaps(joint_row, refs), initial_row), _with_gaps(initial_row, refs)]
    rows.extend(_with_gaps(run(method)[0], refs) for method in others)
    return rows


def _row(inst: Instance, method: MethodSpec, sol: Solution, runtime_s: float) -> GapRow:
    exact = method.kind == "exact"
    base: dict[str, Any] = {
        "instance": inst.name,
        "gpus": len(inst.gpus),
        "new": len(inst.new),
        "method": method.name,
        "kind": _kind(method),
        "may_move": method.moves,
        "termination": sol.termination.value,
        "status": sol.status.value,
        "proven": sol.termination is Termination.OPTIMAL if exact else None,
        "bound": sol.bound if exact else None,
        "gap": sol.gap if exact else None,
        "runtime_s": round(runtime_s, 4),
        "reference": "none",
    }
    if exact and sol.status is Status.NONE:  # time limit before any placement: nothing to verify
        empty: dict[str, Any] = dict.fromkeys(
            ("accepted", "accepted_new", "acceptance", "hardware", "migrations", "moves", "active_gpus")
        )
        return GapRow(**base, **empty)
    report = verify(inst, sol)
    if not report.valid:
        more = f" (and {len(report.violations) - 1} more)" if len(report.violations) > 1 else ""
        raise InvalidSolutionError(f"{method.name} on {inst.name}: {report.violations[0]}{more}")
    o, m = report.objectives, report.metrics
    return GapRow(
        **base,
        accepted=int(m["accepted"]),
        accepted_new=int(m["accepted_new"]),
        acceptance=o.acceptance,
        hardware=o.hardware,
        migrations=o.migrations,
        moves=int(m["moves_inter_host"] + m["moves_inter_gpu"] + m["moves_intra_gpu"]),
        active_gpus=int(m["active_gpus"]),
    )


def _with_gaps(row: GapRow, refs: dict[str, GapRow]) -> GapRow:
    use_case = "joint" if row.may_move else "initial"
    ref = refs[use_case]
    row = replace(row, reference_use_case=use_case)
    if ref.acceptance is None or ref.hardware is None or ref.accepted is None:
        return row
    kind = "optimal" if ref.proven else "incumbent"
    if row.acceptance is None or row.hardware is None or row.accepted is None:
        return replace(row, reference=kind)
    return replace(
        row,
        reference=kind,
        accepted_gap=ref.accepted - row.accepted,
        acceptance_gap=ref.acceptance - row.acceptance,
        acceptance_gap_pct=_pct(ref.acceptance - row.acceptance, ref.acceptance),
        hardware_gap_pct=_pct(row.hardware - ref.hardware, ref.hardware),
        matches_reference=_close(
            (row.acceptance, row.hardware, row.migrations), (ref.acceptance, ref.hardware, ref.migrations)
        ),
    )


def _with_gain(joint: GapRow, initial: GapRow) -> GapRow:
    """The joint optimum's row with what migrations buy over the initial optimum."""
    if None in (joint.acceptance, joint.hardware, initial.acceptance, initial.hardware):
        return joint
    assert joint.acceptance is not None and joint.hardware is not None
    assert initial.acceptance is not None and initial.hardware is not None
    return replace(
        joint,
        acceptance_gain=joint.acceptance - initial.acceptance,
        acceptance_gain_pct=_pct(joint.acceptance - initial.acceptance, initial.acceptance),
        hardware_gain_pct=_pct(joint.hardware - initial.hardware, initial.hardware),
    )


def _pct(diff: float, of: float) -> float | None:
    return 100.0 * diff / of if of else None


def _close(a: Iterable[float | None], b: Iterable[float | None]) -> bool:
    return all(
        x is not None and y is not None and math.isclose(x, y, rel_tol=1e-9, abs_tol=1e-9)
        for x, y in zip(a, b, strict=True)
    )


@dataclass(frozen=True, slots=True)
class MethodSummary:
    """One method over the instances of one size (number of GPUs).

    ``reference_use_case`` names the optimum its gaps use (``initial`` or ``joint``, see
    :class:`GapRow`); ``mean_*_gap_pct`` average over the runs with a reference;
    ``acceptance_optimal`` counts runs whose acceptance equals a proven optimum, ``optimal``
    runs that match the proven lexicographic optimum in all three objectives;
    ``proven_references`` counts the runs whose reference is proven (the rest compare against an
    incumbent). ``mean_migrations`` (Eq. 5) and ``mean_moves`` (running workloads moved) average
    over the runs with a solution; ``mean_acceptance_gain``, ``mean_acceptance_gain_pct`` and
    ``mean_hardware_gain_pct`` (the joint optimum only, else None) over the runs with both optima.
    """

    gpus: int
    method: str
    kind: str
    reference_use_case: str | None
    runs: int
    mean_accepted: float
    mean_acceptance: float
    mean_hardware: float
    mean_migrations: float
    mean_moves: float
    mean_acceptance_gap_pct: float | None
    max_acceptance_gap_pct: float | None
    mean_hardware_gap_pct: float | None
    acceptance_optimal: int
    optimal: int
    proven_references: int
    median_runtime_s: float
    mean_acceptance_gain: float | None = None
    mean_acceptance_gain_pct: float | None = None
    mean_hardware_gain_pct: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def summarize(rows: Iterable[GapRow]) -> list[MethodSummary]:
    """Per (GPUs, method), in order of first appearance: means, optimal counts, median runtime."""
    groups: dict[tuple[int, str], list[GapRow]] = {}
    for r in rows:
        groups.setdefault((r.gpus, r.method), []).append(r)
    out = []
    for (gpus, method), rs in groups.items():
        solved = [r for r in rs if r.acceptance is not None]
        acc_gaps = [r.acceptance_gap_pct for r in rs if r.acceptance_gap_pct is not None]
        hw_gaps = [r.hardware_gap_pct for r in rs if r.hardware_gap_pct is not None]
        proven = [r for r in rs if r.reference == "optimal"]
        use_cases = {r.reference_use_case for r in rs}
        out.append(
            MethodSummary(
                gpus=gpus,
                method=method,
                kind=rs[0].kind,
                reference_use_case=use_cases.pop() if len(use_cases) == 1 else None,
                runs=len(rs),
                mean_accepted=_mean(r.accepted for r in solved),
                mean_acceptance=_mean(r.acceptance for r in solved),
                mean_hardware=_mean(r.hardware for r in solved),
                mean_migrations=_mean(r.migrations for r in solved),
                mean_moves=_mean(r.moves for r in solved),
                mean_acceptance_gap_pct=statistics.fmean(acc_gaps) if acc_gaps else None,
                max_acceptance_gap_pct=max(acc_gaps) if acc_gaps else None,
                mean_hardware_gap_pct=statistics.fmean(hw_gaps) if hw_gaps else None,
                acceptance_optimal=sum(
                    r.acceptance_gap is not None and abs(r.acceptance_gap) < 1e-9 for r in proven
                ),
                optimal=sum(bool(r.matches_reference) for r in proven),
                proven_references=len(proven),
                median_runtime_s=statistics.median(r.runtime_s for r in rs),
                mean_acceptance_gain=_mean_or_none(r.acceptance_gain for r in rs),
                mean_acceptance_gain_pct=_mean_or_none(r.acceptance_gain_pct for r in rs),
                mean_hardware_gain_pct=_mean_or_none(r.hardware_gain_pct for r in rs),
            )
        )
    return out


def _mean(values: Iterable[float | None]) -> float:
    xs = [float(v) for v in values if v is not None]
    return statistics.fmean(xs) if xs else math.nan


def _mean_or_none(values: Iterable[float | None]) -> float | None:
    mean = _mean(values)
    return None if math.isnan(mean) else mean


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "-" if value is None or math.isnan(value) else f"{value:{spec}}{suffix}"


def gain_text(joint: MethodSummary) -> str:
    """One line: what migrations buy, the joint optimum's mean gain over the initial optimum.

    Examples
    --------
    >>> from mipopt.io import load_instance
    >>> rows = compare_methods([load_instance("instances/grmu_fig2b.json")], [])
    >>> print(gain_text(summarize(rows)[0]))
    joint optimum (exact) over the initial optimum (exact-initial): acceptance +1.0 (+33.33 %), hardware +0.00 %, with 0.0 migrations (Eq. 5) and 1.0 moves
    """
    return (
        f"joint optimum ({joint.method}) over the initial optimum ({EXACT_INITIAL}): acceptance "
        f"{_fmt(joint.mean_acceptance_gain, '+.1f')} ({_fmt(joint.mean_acceptance_gain_pct, '+.2f', ' %')}), "
        f"hardware {_fmt(joint.mean_hardware_gain_pct, '+.2f', ' %')}, with {_fmt(joint.mean_migrations, '.1f')} "
        f"migrations (Eq. 5) and {_fmt(joint.mean_moves, '.1f')} moves"
    )


def summary_table(summaries: Sequence[MethodSummary]) -> str:
    """A plain-text table of :func:`summarize`'s result, one block per size: per method the
    optimum its gaps use (``ref.``), then a line for what migrations buy (the joint optimum
    against the initial one)."""
    header = (
        "method", "ref.", "runs", "accepted", "acceptance", "hardware", "migr.", "moves", "acc. gap",
        "max gap", "hw gap", "acc. opt", "optimal", "median s",
    )  # fmt: skip
    lines: list[str] = []
    for gpus in dict.fromkeys(s.gpus for s in summaries):
        block = [s for s in summaries if s.gpus == gpus]
        proven = {s.method: s.proven_references for s in block if s.method in (EXACT, EXACT_INITIAL)}
        head = f"{gpus} GPUs: {block[0].runs} instance(s)"
        if proven:
            head += "; proven optimal: " + ", ".join(
                f"{'initial' if m == EXACT_INITIAL else 'joint'} optimum on {n}"
                for m, n in sorted(proven.items())[::-1]
            )
        lines.append(head)
        table = [header]
        for s in block:
            table.append(
                (
                    s.method,
                    s.reference_use_case or "-",
                    str(s.runs),
                    _fmt(s.mean_accepted, ".1f"),
                    _fmt(s.mean_acceptance, ".1f"),
                    _fmt(s.mean_hardware, ".1f"),
                    _fmt(s.mean_migrations, ".1f"),
                    _fmt(s.mean_moves, ".1f"),
                    _fmt(s.mean_acceptance_gap_pct, ".2f", " %"),
                    _fmt(s.max_acceptance_gap_pct, ".2f", " %"),
                    _fmt(s.mean_hardware_gap_pct, "+.2f", " %"),
                    f"{s.acceptance_optimal}/{s.runs}",
                    f"{s.optimal}/{s.runs}",
                    f"{s.median_runtime_s:.3f}",
                )
            )
        widths = [max(len(r[i]) for r in table) for i in range(len(header))]
        for r in table:
            cells = [
                r[0].ljust(widths[0]),
                r[1].ljust(widths[1]),
                *(c.rjust(w) for c, w in zip(r[2:], widths[2:], strict=True)),
            ]
            lines.append("  ".join(cells).rstrip())
        for s in block:
            if s.mean_acceptance_gain is not None:
                lines.append(gain_text(s))
        lines.append("")
    lines.append(
        "ref.: the optimum the gaps use, initial (exact-initial: running workloads stay where they run; "
        "for methods that cannot move them) or joint (exact: running workloads may move; for methods that "
        "may). acc. gap: mean of (optimum - acceptance) / optimum, weighted acceptance; hw gap: hardware / "
        "optimum's - 1; migr.: migrations (GRMU Eq. 5); moves: running workloads moved (inside a GPU "
        "included); acc. opt / optimal: runs reaching the proven optimum's acceptance / all three "
        "objectives (lexicographic optimum)."
    )
    return "\n".join(lines)


def write_csv(path: str | Path, rows: Iterable[GapRow]) -> None:
    """Write the rows as CSV (atomically), columns :data:`COLUMNS`; None as an empty field."""

    def write(fh: TextIO) -> None:
        writer = csv.DictWriter(fh, fieldnames=COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow({k: "" if v is None else v for k, v in r.to_dict().items()})

    write_atomic(Path(path), write, text=True)
