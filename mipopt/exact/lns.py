"""Large-neighbourhood search over hosts: better points for a stage than HiGHS finds alone.

HiGHS proves the configuration model's stages from a good start, but on large or dense
instances its own heuristics find few improving points: on IBM 1,000 GPUs seed 1, started from
an aggregated answer with 6,536 migrations, the detailed model's migrations stage found nothing
better in 10 s (bound 24). A :class:`HostSearch` takes a feasible point of the compiled model
and, round after round, frees the columns of a few hosts (every column that belongs to a host:
its GPUs' configurations, stayers, items and power), fixes the other hosts' columns at the
point's values, leaves the columns of no host free (the acceptance classes), and has HiGHS solve
what is left from the point. A sub-problem's answer is a point of the whole model, so each round
keeps every row (the stages kept, the budget) and never makes the objective worse. HiGHS gets
only the free columns and the rows they meet (the fixed columns' part taken off the rows'
bounds): its presolve of the whole model cost more than most rounds' solve.

Which hosts: one whose columns are furthest from their best bounds (a stayer count below its
class's size, a host on), drawn with that weight, and others drawn half from such hosts and half
from all, so that a host's leavers can come home while what took their room moves to a host with
room. Rounds start with :data:`FIRST_HOSTS` hosts; a round stopped by its limit frees one host
fewer next time, :data:`STUCK_ROUNDS` proven rounds in a row without a gain one more. A search
alone gives a round that frees every host twice the time after each time the limit cut one: once
the smaller rounds are proven without gain it is the one neighbourhood left (dense class, 3 hosts
of 4 GPUs: that round needs 1.0-1.3 s, and capped at :data:`ROUND_S` the search circled at 4
migrations for 60 s where the optimum is 2).

A search runs alone (:meth:`HostSearch.run`, the driver's repair of a time-limited answer) or
beside a HiGHS solve of the same model (:meth:`HostSearch.start`, the backend's companion:
HiGHS proves while the search finds points; each side's better points reach the other, and the
solve ends as soon as the search's point meets HiGHS's bound). On IBM 1,000 GPUs seed 1 the
search alone took that answer from 6,536 to 2,204 migrations in 4 s, and beside HiGHS to 754
in 10 s, while HiGHS alone found nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Hashable, Mapping
from dataclasses import dataclass, replace
from typing import Any

import highspy
import numpy as np

from mipopt.solvers.base import SolverOptions, feasible_start
from mipopt.solvers.highs import _highs, _WatchedHighs
from mipopt.solvers.matrix import CscMatrix, FloatArray, MatrixForm
from mipopt.solvers.stop import StopFlag

#: How much a point must gain to count as better.
TOL = 1e-9
#: Hosts freed in the first round; at most :data:`MAX_HOSTS`.
FIRST_HOSTS = 3
MAX_HOSTS = 24
#: Seconds one round may take at most.
ROUND_S = 1.0
#: Rounds proven without a gain, in a row, after which one host more is freed.
STUCK_ROUNDS = 3
#: Beside a solve, the search starts once this share of the solve's time has passed without a
#: proof: it takes a core from HiGHS (the proof of IBM 1,000 GPUs seed 1's migrations stage took
#: 24 s beside a search, 15.5 s alone; 15.9 s beside a thread holding the interpreter's lock).
DELAY_SHARE = 0.5
#: Beside a solve, the search ends after this many rounds in a row without a gain, or as many
#: as a pass over the hosts takes if more (the Alibaba snapshot's 1,213 hosts: 15 gains in 525 rounds).
STALL_ROUNDS = 10


@dataclass(frozen=True)
class Searched:
    """What a search found: the best point, its objective (offset included), the rounds run
    and those that improved the point."""

    x: FloatArray
    objective: float
    rounds: int
    improved: int


class HostSearch:
    """A search over hosts on one compiled model.

    Parameters
    ----------
    host_of
        The host a model variable belongs to, or None for one always free.
    seed
        Seed of the draws of hosts.
    options
        Threads and the stop flag of each round's HiGHS run (its limits are the search's).
    delay_share
        Beside a solve (:meth:`start`), the share of the solve's time to wait for a proof before
        searching (:data:`DELAY_SHARE`).
    """

    def __init__(
        self,
        host_of: Callable[[Any], Hashable | None],
        *,
        seed: int = 0,
        options: SolverOptions | None = None,
        delay_share: float = DELAY_SHARE,
    ) -> None:
        self.host_of = host_of
        self.delay_share = delay_share
        self.rng = np.random.default_rng(seed)
        self.options = replace(options or SolverOptions(), time_limit_s=None, warm_start=None, deadline=None)
        self.lock = threading.Lock()
        self.halt = StopFlag()
        self.form: MatrixForm | None = None
        self.x: FloatArray | None = None
        self.value = 0.0
        self.rounds = self.improved = 0
        self.thread: threading.Thread | None = None
        self.hints: Mapping[Hashable, float] | None = None

    # --- alone

    def run(
        self,
        form: MatrixForm,
        x0: FloatArray,
        deadline: float,
        hints: Mapping[Hashable, float] | None = None,
    ) -> Searched:
        """Improve the feasible point ``x0`` of ``form`` until ``deadline`` (``time.monotonic()``),
        the stop flag, or a proven round of every host without gain. ``hints`` weigh hosts where
        the columns' distance from their best bounds says little (an objective on columns of no
        host, as acceptance is): the free memory slots of each, for example."""
        self.hints = hints
        self.halt = self.options.stop or StopFlag()  # in the caller's thread: its stop flag ends a round
        self._prepare(form, x0)
        self._loop(deadline)
        assert self.x is not None, "the search needs a feasible point"
        return Searched(self.x, self.value + form.offset, self.rounds, self.improved)

    # --- beside a HiGHS solve (mipopt.solvers.base.Companion)

    def start(self, form: MatrixForm, x0: FloatArray | None, deadline: float | None) -> None:
        """Search in a thread of its own from ``x0`` (or from the first point :meth:`offer` gives)."""
        self.halt = StopFlag()  # the solve it runs beside stops it (:meth:`stop`)
        self._prepare(form, x0)
        delay = 0.0 if deadline is None else self.delay_share * (deadline - time.monotonic())
        self.thread = threading.Thread(
            target=self._loop, args=(deadline, delay), name="mipopt-host-search", daemon=True
        )
        self.thread.start()

    def offer(self, x: FloatArray) -> None:
        """A point found elsewhere (HiGHS's incumbent): the search goes on from it when better."""
        form = self.form
        if form is None or feasible_start(form, x) is None:
            return
        with self.lock:
            if self.x is None or form.better(float(form.cost @ x), self.value, TOL):
                self.x, self.value = np.where(form.integer, np.round(x), x), float(form.cost @ x)

    def best(self) -> tuple[FloatArray, float] | None:
        """The best point so far and its objective (offset included), or None."""
        with self.lock:
            if self.x is None or self.form is None:
                return None
            return self.x, self.value + self.form.offset

    def bound(self) -> None:
        """None: a search over hosts proves no bound on the whole model."""
        return None

    def stop(self) -> None:
        """End the search started by :meth:`start` (its round in progress is interrupted) and
        wait for its thread."""
        if self.thread is not None:
            self.halt.set()
            self.thread.join()

    # --- the rounds

    def _prepare(self, form: MatrixForm, x0: FloatArray | None) -> None:
        self.form = form
        hosts = [self.host_of(v) for v in form.columns]
        names = sorted({h for h in hosts if h is not None}, key=str)
        index = {h: i for i, h in enumerate(names)}
        self.owner = np.array([-1 if h is None else index[h] for h in hosts], dtype=np.int64)
        self.names = names
        self.hosts = len(names)
        self.sign = -1.0 if form.maximize else 1.0
        x = feasible_start(form, x0)
        if x is not None:
            self.x, self.value = x, float(form.cost @ x)

    def _loop(self, deadline: float | None, delay: float = 0.0) -> None:
        form = self.form
        assert form is not None
        if delay > 0 and self.halt.wait(delay):
            return  # the solve ended first: it needed no help
        size, stuck, stalled = FIRST_HOSTS, 0, 0
        whole_s = ROUND_S  # alone, a round of every host doubles this each time its limit cuts it
        patience = max(STALL_ROUNDS, self.hosts // FIRST_HOSTS)  # about a pass over the hosts
        while self.hosts > 1 and (self.thread is None or stalled < patience):
            left = None if deadline is None else deadline - time.monotonic()
            if (left is not None and left <= 0.05) or self.halt.is_set:
                return
            with self.lock:
                x = self.x
            if x is None:  # no point yet: wait for HiGHS's first
                self.halt.wait(0.05)
                continue
            weight = self._host_costs(x)
            bad = np.flatnonzero(weight > 1e-9)
            if len(bad) == 0:
                return  # every column at its best bound: nothing to gain
            chosen = self._neighbourhood(weight, bad, min(size, self.hosts))
            free = (self.owner < 0) | np.isin(self.owner, chosen)
            # alone, a round of every host is the one neighbourhood left once smaller ones are proven
            # without gain: capped at one second it would never end on a slower machine
            whole = size >= self.hosts and self.thread is None
            cap = whole_s if whole else ROUND_S
            limit = cap if left is None else min(cap, left)
            found, proven = _solve_fixed(form, x, free, replace(self.options, time_limit_s=limit), self.halt)
            self.rounds += 1
            with self.lock:
                gained = found is not None and form.better(float(form.cost @ found), self.value, TOL)
                if gained:
                    assert found is not None
                    self.x, self.value = found, float(form.cost @ found)
                    self.improved += 1
            stalled = 0 if gained else stalled + 1
            if gained:
                stuck = 0
            elif not proven:
                if whole:
                    whole_s *= 2
                size, stuck = max(2, size - 1), 0
            elif size >= self.hosts:
                return  # the whole model, proven: nothing better exists
            elif (stuck := stuck + 1) >= STUCK_ROUNDS:
                size, stuck = min(size + 1, MAX_HOSTS), 0

    def _host_costs(self, x: FloatArray) -> FloatArray:
        """Per host, how much worse its columns make the objective than their best bounds would."""
        form = self.form
        assert form is not None
        cost = self.sign * form.cost
        best = np.where(cost < 0, form.col_upper, form.col_lower)
        regret = np.where(cost != 0, cost * (x - np.where(np.isfinite(best), best, x)), 0.0)
        mine = self.owner >= 0
        weight: FloatArray = np.bincount(self.owner[mine], weights=regret[mine], minlength=self.hosts).astype(
            float
        )
        if self.hints:
            hinted = np.array([self.hints.get(h, 0.0) for h in self.names], dtype=float)
            weight = weight / max(weight.sum(), 1e-12) + hinted / max(hinted.sum(), 1e-12)
        return weight

    def _neighbourhood(self, weight: FloatArray, bad: np.ndarray, size: int) -> np.ndarray:
        """``size`` hosts: one drawn by its weight among ``bad``, the others half from ``bad``, half from all."""
        rng = self.rng
        chosen = {int(rng.choice(bad, p=weight[bad] / weight[bad].sum()))}
        while len(chosen) < size:
            pool = bad if rng.random() < 0.5 and len(set(bad.tolist()) - chosen) else np.arange(self.hosts)
            chosen.add(int(rng.choice(pool)))
        return np.fromiter(chosen, dtype=np.int64)


def _solve_fixed(
    form: MatrixForm, x: FloatArray, free: np.ndarray, options: SolverOptions, halt: StopFlag
) -> tuple[FloatArray | None, bool]:
    """HiGHS on ``form`` with the columns not ``free`` fixed at ``x``, started from ``x``: its best
    point (None when it has none) and whether that is proven optimal for the sub-problem."""
    sub = _restricted(form, x, free)
    start = time.monotonic()
    limits = replace(options, stop=halt).limits(start)
    # no LP interrupt checks: a round is short, and each check would take the GIL from the solve beside
    run = _WatchedHighs(_highs(sub, options, x[free], limits), limits, lp_checks=False)
    watched = run.run()
    values = run.point() if watched.finished else run.incumbent  # a run left behind is not read
    if values is None:
        return None, False
    found = x.copy()
    found[free] = np.where(sub.integer, np.round(values), values)
    proven = watched.finished and run.highs.getModelStatus() == highspy.HighsModelStatus.kOptimal
    return feasible_start(form, found), proven


def _restricted(form: MatrixForm, x: FloatArray, free: np.ndarray) -> MatrixForm:
    """``form`` on the ``free`` columns and the rows they meet, the others fixed at ``x``."""
    a = form.matrix
    fixed_part = a @ np.where(free, 0.0, x)
    cols = np.flatnonzero(free)
    starts, ends = a.indptr[cols], a.indptr[cols + 1]
    lengths = ends - starts
    offsets = np.concatenate(([0], np.cumsum(lengths)))
    entries = np.repeat(starts - offsets[:-1], lengths) + np.arange(offsets[-1])
    rows, local = np.unique(a.indices[entries], return_inverse=True)
    matrix = CscMatrix(
        indptr=offsets.astype(a.indptr.dtype),
        indices=local.astype(a.indices.dtype),
        data=a.data[entries],
        shape=(len(rows), len(cols)),
    )
    return replace(
        form,
        columns=[form.columns[j] for j in cols],
        matrix=matrix,
        row_lower=form.row_lower[rows] - fixed_part[rows],
        row_upper=form.row_upper[rows] - fixed_part[rows],
        col_lower=form.col_lower[cols],
        col_upper=form.col_upper[cols],
        integer=form.integer[cols],
        cost=form.cost[cols],
    )
