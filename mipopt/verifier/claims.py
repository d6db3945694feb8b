"""What a solution says about itself, each claim checked against the instance and its placement.

:func:`mipopt.verifier.verify` checks the placement by the rules of
:mod:`mipopt.verifier.rules`; everything else a solution states is a claim, checked here and,
when false, reported as a :class:`BrokenClaim`: a rule of :data:`CLAIM_RULES` and a one-line
message naming the claim's JSON path (``stages[2].proven: ...``). The rules, by field:

``objectives``, ``metrics``
    Equal to the recomputed ones within 1e-6, relative or absolute (``objective``,
    ``metric``); a metric the verifier does not compute is a broken claim too.
``status``
    ``none`` places nothing (``status-none``); ``optimal`` needs ``termination: optimal``
    (``status-termination``), every stage proven (``status-stages``), and no rejected request
    that fits in the space the solution leaves while acceptance decides first
    (``status-left-out``, below).
``bound``, ``gap``
    With stages, they are the first unproven stage's (the last stage's when every stage is
    proven), in that objective's units (``bound-stage``); the bound lies on the right side of
    that stage's value: at least it for a maximized objective (``acceptance``, ``weighted``),
    at most it for a minimized one (``bound-side``); with ``status: optimal`` it proves the
    value (:func:`~mipopt.instance.gaps.is_proven`, ``status-bound``); the gap is
    :func:`~mipopt.instance.gaps.relative_gap` of that value and the bound (``gap``). With or
    without stages, ``status: optimal`` has no gap beyond what a proof allows (``status-gap``).
    Without stages the solution does not say which objective its bound is of, so the bound is
    not checked further.
``stages[i]``
    ``objective`` is one mipopt computes (``stage-objective``); ``gap`` is the relative gap of
    ``value`` and ``bound`` (``stage-gap``); ``bound`` lies on the right side of ``value``
    (``stage-bound``); ``proven`` needs a value, ``termination: optimal`` and a bound that
    proves the value (``stage-proven``); ``value`` is the recomputed objective: the last
    stage's within 1e-6, an earlier one's within the tolerance the lexicographic mode gives it
    (``lex:acceptance@0.05,...`` in ``method``; 0 when it names none), and never beyond a proven
    stage's value or an unproven one's bound (``stage-value``). A ``weighted`` stage's value is
    checked when ``method`` names the weights (``weighted:1,0.1,...``).
An optimum's acceptance
    A lexicographic solution claiming its acceptance stage proven (``stage-left-out``, on
    ``stages[k].proven``) or ``status: optimal`` (``status-left-out``) is false when a
    rejected new workload of positive weight fits in the space the solution leaves, every
    other placement unchanged, and placing it raises acceptance before it worsens an earlier
    objective (it adds no hardware, or hardware comes after acceptance) and within the bounds
    ``method`` names (``hardware <= 5``, a Pareto sweep's). Not checked when acceptance has a
    tolerance, for the WPM use cases where new workloads wait (``compaction``,
    ``reconfiguration``), nor for a weighted objective.
``rejections[i]``
    The workload is one of the instance, listed once (``rejection-workload``), and not placed
    (``rejection-placed``); its ``reason`` is not false (``rejection-reason``): a reason that
    depends on the instance alone (``no-profile``, ``gpu-models``, ``host-capacity``) is the
    first that holds (:func:`~mipopt.verifier.reasons.unplaceable`); ``no-room`` is false when
    the workload fits beside the running workloads as they run, or in the space the solution
    leaves; ``needs-restarts``, ``undecided`` and ``not-chosen`` when no answer places it
    (nothing fits beside the pinned workloads, or the cluster's totals are short, step 1 of
    :func:`~mipopt.verifier.room.find_room`); ``needs-restarts`` and ``undecided`` also when it
    fits as they run, and ``undecided`` when it fits in the space left.
    What needs a search to decide (whether moving running workloads makes room, and within
    which budget; whether the method could move them) is not checked: the reasons' own
    searches decide it when the solution is made.
"""

from __future__ import annotations

import math
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, replace
from functools import cached_property

from mipopt.instance import (
    Assignment,
    Instance,
    Objectives,
    Solution,
    StageResult,
    Status,
    Termination,
    Workload,
)
from mipopt.instance.budget import UNLIMITED
from mipopt.instance.gaps import PROOF_ABS_TOL, is_proven, relative_gap
from mipopt.instance.types import REJECTION_CODES
from mipopt.verifier.reasons import has_profile, unplaceable
from mipopt.verifier.room import Space, find_room, room_for

__all__ = ["CLAIM_RULES", "BrokenClaim", "broken_claims"]

#: Every rule a claim may break (module docstring).
CLAIM_RULES = (
    "objective",
    "metric",
    "status-none",
    "status-termination",
    "status-stages",
    "status-gap",
    "status-bound",
    "status-left-out",
    "bound-stage",
    "bound-side",
    "gap",
    "stage-objective",
    "stage-gap",
    "stage-bound",
    "stage-proven",
    "stage-value",
    "stage-left-out",
    "rejection-workload",
    "rejection-placed",
    "rejection-reason",
)
#: Objectives a stage may optimize, and whether each is maximized.
MAXIMIZED = {"acceptance": True, "hardware": False, "migrations": False, "restarts": False, "weighted": True}
#: Values, bounds and gaps are equal within this, relative or absolute.
TOL = 1e-6
#: The codes that depend on the instance alone.
_INSTANCE_CODES = REJECTION_CODES[:3]
#: The WPM use cases a method may name, and those whose model leaves new workloads out.
USE_CASES = ("initial", "compaction", "reconfiguration", "joint")
_WAITING = ("compaction", "reconfiguration")


@dataclass(frozen=True, slots=True)
class BrokenClaim:
    """A claim of a solution that the verifier finds false.

    Attributes
    ----------
    rule
        Which check it fails, one of :data:`CLAIM_RULES`.
    path
        The JSON path of the claim in the solution (``gap``, ``stages[2].proven``,
        ``rejections[0].reason``).
    text
        What is wrong, with the numbers.
    """

    rule: str
    path: str
    text: str

    def message(self) -> str:
        """The one-line form: ``stages[2].proven: ...``."""
        return f"{self.path}: {self.text}"

    def to_dict(self) -> dict[str, str]:
        return {"rule": self.rule, "path": self.path, "message": self.message()}


def broken_claims(
    instance: Instance, solution: Solution, objectives: Objectives, metrics: dict[str, float]
) -> tuple[BrokenClaim, ...]:
    """Every claim of ``solution`` that is false (module docstring), in the order status,
    objectives, metrics, bound and gap, stages, the optimum's left-outs, rejections.

    Parameters
    ----------
    instance
        The instance ``solution`` answers.
    solution
        Any solution of it.
    objectives, metrics
        The verifier's values for the placements of ``solution`` that obey their own rules
        (:func:`mipopt.verifier.evaluate`).

    Examples
    --------
    >>> from dataclasses import replace
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> sol = mipopt.solve(inst)
    >>> report = mipopt.verify(inst, replace(sol, gap=0.3))
    >>> [(c.rule, c.message()) for c in report.claims]
    [('status-gap', "gap: 0.3 with status 'optimal': a proven optimum has gap 0")]
    """
    check = _Check(instance.placeable(), instance, solution, objectives, metrics)
    return tuple(check.run())


@dataclass(frozen=True, slots=True)
class _Mode:
    """What ``method`` says of the problem solved: the lexicographic tolerances or the weights,
    the WPM use case, and the bounds on objectives (epsilon constraints of a Pareto sweep)."""

    lex: bool = True
    tolerances: dict[str, float] = field(default_factory=dict)
    weights: dict[str, float] | None = None
    use_case: str = ""
    bounds: dict[tuple[str, str], float] = field(default_factory=dict)


def _mode(method: str) -> _Mode:
    """Read the problem off ``method`` as mipopt's exact methods write it (``grmu / highs,
    lex:acceptance@0.05,hardware, initial, hardware <= 5``); the default lexicographic mode
    when it names none."""
    mode = _Mode()
    for part in (p.strip() for p in method.split(", ")):
        kind, _, rest = part.partition(":")
        words = part.split(" ")
        try:
            if kind == "lex":
                for item in rest.split(","):
                    name, _, tol = item.partition("@")
                    mode.tolerances[name] = float(tol) if tol else 0.0
            elif kind == "weighted":
                values = [float(x) for x in rest.split(",")]
                weights = dict(zip(MAXIMIZED, values, strict=False))
                mode = replace(mode, lex=False, weights=weights)
            elif len(words) == 3 and words[0] in MAXIMIZED and words[1] in ("<=", ">="):
                mode.bounds[words[0], words[1]] = float(words[2])
        except ValueError:
            continue  # not what mipopt writes: nothing read from it
        if part in USE_CASES:
            mode = replace(mode, use_case=part)
    return mode


def _close(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    if math.isinf(a) or math.isinf(b):
        return a == b
    return math.isclose(a, b, rel_tol=TOL, abs_tol=TOL)


def _gap_may_prove(gap: float, bound: float | None) -> bool:
    """Whether some value has relative gap ``gap`` to ``bound`` (:func:`relative_gap`) and is
    proven by it (:func:`is_proven`): a gap of at most 1e-6, or an absolute difference within
    :data:`PROOF_ABS_TOL` (a value near 0). For a solution whose value is not known."""
    if gap <= TOL:
        return True
    if bound is None:
        return False
    if math.isinf(gap):  # a value of 0, the bound within the absolute tolerance
        return abs(bound) <= PROOF_ABS_TOL
    if bound == 0:  # any small value v: |v - 0| / |v| = 1
        return gap == 1
    return gap * abs(bound) / (1 + gap) <= PROOF_ABS_TOL  # the value nearest 0, bound / (1 + gap)


def _num(x: float | None) -> str:
    return "null" if x is None else f"{x:.10g}"


def _beyond(value: float, limit: float, maximized: bool) -> bool:
    """Whether ``value`` is better than ``limit`` (in the objective's sense) by more than :data:`TOL`."""
    slack = TOL * max(1.0, abs(limit))
    return value > limit + slack if maximized else value < limit - slack


class _Check:
    """One solution's claims, with the spaces they are checked in, built when first needed."""

    def __init__(
        self,
        work: Instance,
        instance: Instance,
        solution: Solution,
        objectives: Objectives,
        metrics: dict[str, float],
    ) -> None:
        self.work = work  # the GPUs a method may place on (Instance.placeable)
        self.instance = instance
        self.sol = solution
        self.objectives = objectives
        self.metrics = metrics
        self.mode = _mode(solution.method)
        self.stages = solution.stages
        self.fitting_at: dict[tuple[object, ...], tuple[str, str]] = {}
        self.nowhere: dict[tuple[object, ...], str] = {}

    def run(self) -> Iterator[BrokenClaim]:
        yield from self.status()
        yield from self.values()
        yield from self.bound_and_gap()
        for i, st in enumerate(self.stages):
            yield from self.stage(i, st)
        yield from self.left_out()
        yield from self.rejections()

    # --- status, objectives, metrics

    def status(self) -> Iterator[BrokenClaim]:
        sol = self.sol
        if sol.status is Status.NONE and sol.placements:
            yield BrokenClaim("status-none", "status", "'none' but the solution places workloads")
        if sol.status is not Status.OPTIMAL:
            return
        if sol.termination is not Termination.OPTIMAL:
            yield BrokenClaim(
                "status-termination", "status", f"'optimal' with termination {sol.termination.value!r}"
            )
        unproven = [i for i, st in enumerate(self.stages) if not st.proven]
        if unproven:
            i = unproven[0]
            more = f" (and {len(unproven) - 1} more)" if len(unproven) > 1 else ""
            yield BrokenClaim(
                "status-stages",
                "status",
                f"'optimal', but stages[{i}] ({self.stages[i].objective}) is not proven{more}",
            )

    def values(self) -> Iterator[BrokenClaim]:
        if self.sol.objectives is not None:
            yield from _differences(
                "objective", "objectives", self.sol.objectives.to_dict(), self.objectives.to_dict()
            )
        yield from _differences("metric", "metrics", self.sol.metrics, self.metrics)

    # --- bound and gap

    def reference(self) -> tuple[int, StageResult] | None:
        """The stage the solution's bound and gap are of: the first unproven, else the last."""
        if not self.stages:
            return None
        i = next((i for i, st in enumerate(self.stages) if not st.proven), len(self.stages) - 1)
        return i, self.stages[i]

    def bound_and_gap(self) -> Iterator[BrokenClaim]:
        sol = self.sol
        optimal = sol.status is Status.OPTIMAL
        ref = self.reference()
        if sol.gap is not None and ref is not None:
            i, st = ref
            bound = sol.bound if sol.bound is not None else st.bound
            want = relative_gap(st.value, bound)
            if optimal and sol.gap > TOL and not (_close(sol.gap, want) and is_proven(st.value, bound)):
                yield BrokenClaim(
                    "status-gap", "gap", f"{sol.gap:.10g} with status 'optimal': a proven optimum has gap 0"
                )
            elif not _close(sol.gap, want):
                yield BrokenClaim(
                    "gap",
                    "gap",
                    f"says {sol.gap:.10g}, the relative gap of the value {_num(st.value)} of "
                    f"{st.objective} (stages[{i}]) and the bound {_num(bound)} is {_num(want)}",
                )
        elif sol.gap is not None and optimal and not _gap_may_prove(sol.gap, sol.bound):
            yield BrokenClaim(
                "status-gap", "gap", f"{sol.gap:.10g} with status 'optimal': a proven optimum has gap 0"
            )
        if ref is None or sol.bound is None:
            return  # without stages the bound's objective is not named; null claims nothing
        i, st = ref
        maximized = MAXIMIZED.get(st.objective)
        if st.value is not None and maximized is not None and _beyond(st.value, sol.bound, maximized):
            side = "below" if maximized else "above"
            yield BrokenClaim(
                "bound-side",
                "bound",
                f"{sol.bound:.10g} is {side} the value {st.value:.10g} of {st.objective} (stages[{i}], "
                f"{'maximized' if maximized else 'minimized'}): a bound on "
                f"{'a maximum is at least' if maximized else 'a minimum is at most'} the value",
            )
        elif optimal and st.value is not None and not is_proven(st.value, sol.bound):
            yield BrokenClaim(
                "status-bound",
                "bound",
                f"{sol.bound:.10g} with status 'optimal', but the value of {st.objective} (stages[{i}]) "
                f"is {st.value:.10g}: a proven optimum's bound equals its value",
            )
        elif not _close(sol.bound, st.bound):
            first = "the first unproven stage" if not st.proven else "the last stage"
            yield BrokenClaim(
                "bound-stage",
                "bound",
                f"says {sol.bound:.10g}, {first}, stages[{i}] ({st.objective}), has bound {_num(st.bound)}",
            )

    # --- stages

    def stage(self, i: int, st: StageResult) -> Iterator[BrokenClaim]:
        path = f"stages[{i}]"
        maximized = MAXIMIZED.get(st.objective)
        if maximized is None:
            known = ", ".join(MAXIMIZED)
            yield BrokenClaim(
                "stage-objective",
                f"{path}.objective",
                f"{st.objective!r} is not an objective mipopt computes ({known})",
            )
        want = relative_gap(st.value, st.bound)
        if not _close(st.gap, want):
            yield BrokenClaim(
                "stage-gap",
                f"{path}.gap",
                f"says {_num(st.gap)}, the relative gap of value {_num(st.value)} and bound {_num(st.bound)} is {_num(want)}",
            )
        wrong_side = (
            maximized is not None
            and st.value is not None
            and st.bound is not None
            and _beyond(st.value, st.bound, maximized)
        )
        if wrong_side:
            assert st.value is not None and st.bound is not None
            side = "below" if maximized else "above"
            yield BrokenClaim(
                "stage-bound",
                f"{path}.bound",
                f"{st.bound:.10g} is {side} the value {st.value:.10g} of {st.objective} "
                f"({'maximized' if maximized else 'minimized'})",
            )
        if st.proven:
            why = self.unproven(st)
            if why:
                yield BrokenClaim("stage-proven", f"{path}.proven", f"proven, but {why}")
        yield from self.stage_value(i, st, maximized)

    def unproven(self, st: StageResult) -> str:
        """Why a stage claimed proven is not, or empty."""
        if st.value is None:
            return "it has no value"
        if st.termination is not Termination.OPTIMAL:
            return f"termination {st.termination.value!r}"
        if st.bound is not None and not is_proven(st.value, st.bound):
            return f"value {st.value:.10g} and bound {st.bound:.10g} differ (gap {_num(relative_gap(st.value, st.bound))})"
        if st.bound is None and st.gap is not None and not _gap_may_prove(st.gap, None):
            return f"gap {st.gap:.10g}"
        return ""

    def recomputed(self, name: str) -> float | None:
        """The verifier's value of a stage's objective, None when it cannot be computed."""
        values = self.objectives.to_dict()
        if name in values:
            return values[name]
        weights = self.mode.weights
        if name != "weighted" or weights is None:
            return None
        return sum(w * (values[n] if MAXIMIZED[n] else -values[n]) for n, w in weights.items())

    def stage_value(self, i: int, st: StageResult, maximized: bool | None) -> Iterator[BrokenClaim]:
        got = None if st.value is None or maximized is None else self.recomputed(st.objective)
        if got is None or st.value is None or maximized is None:
            return
        path = f"stages[{i}].value"
        says = f"says {st.value:.10g}, but the placements' {st.objective} is {got:.10g}"
        if i == len(self.stages) - 1:
            if not _close(st.value, got):
                yield BrokenClaim("stage-value", path, f"{says}: the last stage's value is the answer's")
            return
        # an earlier stage: later stages keep its value within its tolerance and never beat a proven one
        tol = self.mode.tolerances.get(st.objective, 0.0)
        slack = max(tol * abs(st.value), TOL * max(1.0, abs(st.value)))
        worse = got < st.value - slack if maximized else got > st.value + slack
        if worse:
            yield BrokenClaim(
                "stage-value", path, f"{says}, and later stages keep it (within its tolerance {tol:g})"
            )
        elif st.proven and _beyond(got, st.value, maximized):
            yield BrokenClaim("stage-value", path, f"{says}, better than the optimum the stage claims proven")
        elif (
            not st.proven
            and st.bound is not None
            and not _beyond(st.value, st.bound, maximized)  # else the bound is at fault (stage-bound)
            and _beyond(got, st.bound, maximized)
        ):
            yield BrokenClaim("stage-value", path, f"{says}, beyond the stage's bound {st.bound:.10g}")

    # --- an optimum that leaves out a request that fits

    def left_out(self) -> Iterator[BrokenClaim]:
        """A rejected request that fits in the space left and raises acceptance first (module docstring)."""
        names = [st.objective for st in self.stages]
        mode = self.mode
        if (
            "acceptance" not in names
            or not mode.lex
            or "weighted" in names
            or mode.tolerances.get("acceptance", 0.0) > 0
            or mode.use_case in _WAITING
        ):
            return
        k = names.index("acceptance")
        stage_proven = self.stages[k].proven
        if not stage_proven and self.sol.status is not Status.OPTIMAL:
            return
        found = self.fitting(names[:k])
        if found is None:
            return
        w, (gpu, start, hardware), others = found
        more = f" (and {others} more)" if others else ""
        added = f", adding hardware {hardware:g}" if hardware else " on a GPU in use"
        text = (
            f"rejected {w.id!r} (weight {w.weight:g}) fits in the space left at {gpu}:{start}{added}{more}: "
            f"acceptance {self.objectives.acceptance + w.weight:g} > {self.objectives.acceptance:g}, every other placement unchanged"
        )
        if stage_proven:
            yield BrokenClaim("stage-left-out", f"stages[{k}].proven", f"proven, but {text}")
        if self.sol.status is Status.OPTIMAL:
            yield BrokenClaim("status-left-out", "status", f"'optimal', but {text}")

    def fitting(self, before: list[str]) -> tuple[Workload, tuple[str, int, float], int] | None:
        """The first rejected new workload that fits in the space left without worsening any of
        ``before`` (the objectives lexicographically before acceptance) or breaking a bound the
        method names, its spot, and how many more do."""
        if not self.holds_running:
            return None
        bounds = self.mode.bounds
        most_hardware = bounds.get(("hardware", "<="), math.inf)
        if "hardware" in before:
            most_hardware = min(most_hardware, self.objectives.hardware)
        most_acceptance = bounds.get(("acceptance", "<="), math.inf)
        hits: list[tuple[Workload, tuple[str, int, float]]] = []
        seen: dict[tuple[object, ...], tuple[str, int, float] | None] = {}
        for w in self.work.new:
            if w.id in self.space.at or w.weight <= 0:
                continue
            if self.objectives.acceptance + w.weight > most_acceptance + TOL:
                continue
            key = _group(w)
            if key not in seen:
                spot = self.space.spot(w)  # the least hardware
                ok = spot is not None and self.objectives.hardware + spot[2] <= most_hardware + TOL
                seen[key] = spot if ok else None
            spot = seen[key]
            if spot is not None:
                hits.append((w, spot))
        if not hits:
            return None
        return hits[0][0], hits[0][1], len(hits) - 1

    # --- rejection reasons

    @cached_property
    def space(self) -> Space:
        """The GPUs and hosts as the solution leaves them."""
        return Space(self.work, self.sol.placements)

    @cached_property
    def holds_running(self) -> bool:
        """Whether the solution keeps every running workload placed: then it, with a request
        added in the space it leaves, is an answer of the run too."""
        return self.sol.status is not Status.NONE and all(w.id in self.space.at for w in self.work.running)

    @cached_property
    def as_run(self) -> Space:
        """The running workloads where they run."""
        return Space(self.work, [Assignment(w.id, *pos) for w, pos in _running(self.work)])

    @cached_property
    def pinned(self) -> Space:
        """The pinned workloads where they run."""
        return Space(self.work, [Assignment(w.id, *pos) for w, pos in _running(self.work) if w.pinned])

    @cached_property
    def never(self) -> list[dict[str, tuple[str, str]]]:
        """Per view, workload id -> (code, message) of the reasons that depend on the instance
        alone: the GPUs a method sees and, when some layout is unknown, all of them (a reason
        made on either view is taken)."""
        views = [self.work] if self.instance is self.work else [self.work, self.instance]
        return [{r.workload: (r.code, r.message) for r in unplaceable(v)} for v in views]

    def rejections(self) -> Iterator[BrokenClaim]:
        first: dict[str, int] = {}
        index = {a.workload: i for i, a in reversed(list(enumerate(self.sol.placements)))}
        for i, r in enumerate(self.sol.rejections):
            path = f"rejections[{i}]"
            if not self.instance.has_workload(r.workload):
                yield BrokenClaim(
                    "rejection-workload",
                    f"{path}.workload",
                    f"{r.workload!r} is not a workload of the instance",
                )
                continue
            if r.workload in first:
                yield BrokenClaim(
                    "rejection-workload",
                    f"{path}.workload",
                    f"{r.workload!r} has a reason already (rejections[{first[r.workload]}])",
                )
                continue
            first[r.workload] = i
            if r.workload in index:
                yield BrokenClaim(
                    "rejection-placed",
                    f"{path}.reason",
                    f"{r.code!r} for {r.workload!r}, which is placed (placements[{index[r.workload]}])",
                )
                continue
            w = self.instance.workload(r.workload)
            if w.running or not self.work.has_workload(w.id):
                continue  # a running workload left out breaks a rule already
            why = self.false_reason(w, r.code)
            if why:
                yield BrokenClaim(
                    "rejection-reason", f"{path}.reason", f"{r.code!r} for {w.id!r} is false: {why}"
                )

    def false_reason(self, w: Workload, code: str) -> str:
        """Why ``code`` is not the reason ``w`` is rejected, or empty when it may be."""
        held = [found for view in self.never if (found := view.get(w.id)) is not None]
        if any(c == code for c, _ in held):
            return ""
        if held and (code in _INSTANCE_CODES or len(held) == len(self.never)):
            first, message = held[0]
            return f"{first!r} holds first ({message})"
        if code in _INSTANCE_CODES:
            return self.placeable_text(w, code)
        as_run, left = self.fits(w)
        if code == "no-room" and (as_run or left):
            where = (
                "beside the running workloads as they run" if as_run else "in the space the solution leaves"
            )
            return f"it fits at {as_run or left} {where}"
        if code in ("needs-restarts", "undecided") and as_run:
            return f"it fits at {as_run} beside the running workloads as they run, restarting none"
        if code == "undecided" and left:
            return f"it fits at {left} in the space the solution leaves"
        if code in ("needs-restarts", "undecided", "not-chosen"):
            none = self.no_answer(w)
            if none:
                return f"no answer places it, restarts or not: {none}"
        return ""

    def fits(self, w: Workload) -> tuple[str, str]:
        """Where ``w`` fits (``gpu:start``, empty when nowhere) beside the running workloads as
        they run, and in the space the solution leaves (when it keeps every running workload);
        once per group of alike requests."""
        key = _group(w)
        if key not in self.fitting_at:
            as_run = self.as_run.spot(w)
            left = self.space.spot(w) if self.holds_running else None
            self.fitting_at[key] = (_first(as_run), _first(left))
        return self.fitting_at[key]

    def placeable_text(self, w: Workload, code: str) -> str:
        """Why an instance-only reason is false for ``w``, which some GPU and host can take."""
        inst = self.work
        if code == "no-profile":
            model = next(m for m in inst.models.values() if has_profile(m, w))
            return f"GPU model {model.name} of the cluster has {_wanted(w)}"
        eligible = self.pinned.eligible(w)
        if not eligible:
            return ""
        if code == "gpu-models":
            name = inst.gpu(eligible[0][0]).model.name
            return f"its gpu_models allows {name}, which has {_wanted(w)}"
        for gpu_id, _ in eligible:
            h = inst.host(inst.gpu(gpu_id).host)
            if room_for(h.cpu, w.cpu) and room_for(h.ram_gb, w.ram_gb):
                return f"host {h.id} has an eligible GPU ({gpu_id}) and the cpu and ram for it"
        return ""

    def no_answer(self, w: Workload) -> str:
        """Why no answer at all places ``w`` (every running workload that is not pinned free to
        move, no budget), when that is decided without a search; else empty. Once per group of
        alike requests."""
        key = _group(w)
        if key not in self.nowhere:
            self.nowhere[key] = self.decide_nowhere(w)
        return self.nowhere[key]

    def decide_nowhere(self, w: Workload) -> str:
        if not self.pinned.eligible(w):
            return "its eligible GPUs all have an unknown layout"
        if self.pinned.spot(w) is None:
            return "nothing fits beside the pinned workloads"
        movable = frozenset(x.id for x in self.work.running if not x.pinned)
        # no time for searches: only the totals decide (mipopt.verifier.room, step 1)
        search = find_room(self.work, w, movable=movable, budget=UNLIMITED, deadline=time.monotonic())
        return search.how if search.impossible else ""


def _first(spot: tuple[str, int, float] | None) -> str:
    """``gpu:start`` of a spot, empty when there is none."""
    return f"{spot[0]}:{spot[1]}" if spot is not None else ""


def _group(w: Workload) -> tuple[object, ...]:
    """What decides where a request fits: requests alike in it share one answer."""
    return (w.sizing, w.gpu_models, w.cpu, w.ram_gb)


def _wanted(w: Workload) -> str:
    return f"profile {w.profile!r}" if w.profile is not None else f"a profile that fits {w.size}"


def _running(instance: Instance) -> list[tuple[Workload, tuple[str, int]]]:
    return [(w, (w.placement.gpu, w.placement.start)) for w in instance.running if w.placement is not None]


def _differences(
    rule: str, field: str, claimed: dict[str, float], computed: dict[str, float]
) -> Iterator[BrokenClaim]:
    for key, got in claimed.items():
        path = f"{field}.{key}"
        if key not in computed:
            yield BrokenClaim(rule, path, "not a metric mipopt computes (docs/formats.md, Verifier)")
            continue
        want = computed[key]
        if not math.isclose(got, want, rel_tol=TOL, abs_tol=TOL):
            yield BrokenClaim(rule, path, f"solution says {got:.10g}, verifier computes {want:.10g}")
