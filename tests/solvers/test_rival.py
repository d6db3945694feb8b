"""A second HiGHS run racing the first (mipopt.solvers.highs.HighsRival), and when the driver races."""

from __future__ import annotations

import threading
from dataclasses import replace

import numpy as np
import pyomo.environ as pyo
import pytest

from mipopt.exact.driver import RACE_MAX_HOSTS, SEARCH_BESIDE_MAX_S, _Run, solve_exact
from mipopt.exact.models.config import build_config
from mipopt.instance import Status, Termination
from mipopt.solvers import SolverOptions
from mipopt.solvers.highs import HighsBackend, HighsRival, _tighter
from mipopt.solvers.matrix import FloatArray, MatrixForm, compile_model
from mipopt.solvers.stop import background_solves, wait_for_background
from mipopt.verifier import verify
from mipopt.workloads import dense_instance, hard_instance


def hardware_stage() -> pyo.ConcreteModel:
    """Dense class, 4 hosts of 4 GPUs, seed 0: the aggregated model at its proven acceptance 47,
    minimizing hardware (proven optimum 19; HiGHS's bound after one node is 17)."""
    inst = dense_instance(4, seed=0, gpus_per_host=4)
    built = build_config(inst, mode="aggregate")
    m = built.model
    m.acceptance = pyo.Constraint(expr=built.expression("acceptance") >= 47)
    m.objective = pyo.Objective(expr=built.expression("hardware"))
    return m


def test_a_race_proves_the_optimum_a_lone_run_proves() -> None:
    """The same stage, alone and raced: the same proven optimum, and the rival's thread is gone."""
    m = hardware_stage()
    alone = HighsBackend().solve(m, SolverOptions(mip_rel_gap=0))
    options = SolverOptions(time_limit_s=60, mip_rel_gap=0)
    rival = HighsRival(options, seed=1)
    raced = HighsBackend().solve(m, replace(options, companion=rival))
    assert alone.termination is Termination.OPTIMAL and alone.objective == 19.0
    assert (raced.termination, raced.objective) == (Termination.OPTIMAL, 19.0)
    assert raced.bound == pytest.approx(19.0)
    assert rival.thread is not None and not rival.thread.is_alive()
    assert rival.bound() is not None and rival.bound() <= 19.0 + 1e-9
    assert not [t for t in threading.enumerate() if t.name == "mipopt-highs-rival"]


class _Proven:
    """A companion holding a point and a bound that proves it (a rival that finished first)."""

    def __init__(self, x: FloatArray, value: float) -> None:
        self.point = (x, value)

    def start(self, form: MatrixForm, x0: FloatArray | None, deadline: float | None) -> None:
        pass

    def offer(self, x: FloatArray) -> None:
        pass

    def best(self) -> tuple[FloatArray, float] | None:
        return self.point

    def bound(self) -> float | None:
        return self.point[1]

    def stop(self) -> None:
        pass


def test_the_companions_bound_proves_what_highs_alone_does_not() -> None:
    """HiGHS stopped after one node holds a bound below the optimum 19; a companion whose bound
    proves its point makes the answer optimal, with that bound."""
    m = hardware_stage()
    HighsBackend().solve(m, SolverOptions(mip_rel_gap=0))
    form = compile_model(m)
    optimum = np.array([v.value for v in form.columns], dtype=float)
    cut_short = HighsBackend().solve(m, SolverOptions(mip_rel_gap=0, node_limit=1))
    assert cut_short.bound is not None and cut_short.bound < 19.0 - 0.5
    proven = HighsBackend().solve(
        m, SolverOptions(mip_rel_gap=0, node_limit=1, companion=_Proven(optimum, 19.0))
    )
    assert (proven.status, proven.objective) == (Status.OPTIMAL, 19.0)
    assert proven.bound == pytest.approx(19.0)


def test_a_companions_point_is_valued_as_loaded() -> None:
    """A companion's point off its integers by float noise, with the float sum 18.999999999999996
    for the optimum 19 (as a raced run once reported): the answer is the model's value of the point
    loaded with its integers rounded, 19 exactly, as for HiGHS's own point."""
    m = hardware_stage()
    HighsBackend().solve(m, SolverOptions(mip_rel_gap=0))
    form = compile_model(m)
    noisy = np.array([v.value for v in form.columns], dtype=float) - 1e-12 * form.integer
    answer = HighsBackend().solve(
        m, SolverOptions(mip_rel_gap=0, node_limit=1, companion=_Proven(noisy, 18.999999999999996))
    )
    assert (answer.status, answer.objective) == (Status.OPTIMAL, 19.0)


@pytest.mark.parametrize(
    ("a", "b", "maximize", "tighter"),
    [(3.0, 5.0, False, 5.0), (3.0, 5.0, True, 3.0), (None, 5.0, False, 5.0), (4.0, None, True, 4.0)],
)
def test_the_tighter_bound_is_the_one_nearer_the_optimum(a, b, maximize: bool, tighter: float) -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 1))
    m.o = pyo.Objective(expr=m.x, sense=pyo.maximize if maximize else pyo.minimize)
    assert _tighter(compile_model(m), a, b) == tighter


def test_a_time_limited_solve_of_few_hosts_races_and_verifies() -> None:
    """Dense class, 3 hosts of 4 GPUs, 20 s: proven, the same objectives as the unlimited
    (unraced) solve, verified, and no rival left running."""
    inst = dense_instance(3, seed=1, gpus_per_host=4)
    raced = solve_exact(inst, options=SolverOptions(time_limit_s=20))
    alone = solve_exact(inst)
    assert raced.status is Status.OPTIMAL and alone.status is Status.OPTIMAL
    report = verify(inst, raced)
    assert report.valid, report.violations
    assert report.objectives == verify(inst, alone).objectives
    assert not [t for t in threading.enumerate() if t.name == "mipopt-highs-rival"]


@pytest.mark.parametrize(
    ("hosts", "limit", "threads", "objective", "races"),
    [
        (3, 10.0, None, "migrations", True),
        (RACE_MAX_HOSTS, 10.0, 2, "acceptance", True),
        (3, None, None, "migrations", False),  # unlimited: reproducible
        (3, 10.0, 1, "migrations", False),  # one thread: nothing to race on
        (RACE_MAX_HOSTS + 1, 10.0, None, "migrations", False),  # many hosts: a search over hosts instead
        (3, SEARCH_BESIDE_MAX_S, None, "hardware", False),  # a short hardware stage: the search
        (3, SEARCH_BESIDE_MAX_S + 1, None, "hardware", True),
    ],
)
def test_when_the_driver_races(
    hosts: int, limit: float | None, threads: int | None, objective: str, races: bool
) -> None:
    inst = hard_instance(2 * hosts, seed=0)
    assert len(inst.hosts) == hosts
    run = _Run.__new__(_Run)
    run.backend, run.work = HighsBackend(), inst
    run.options = SolverOptions(threads=threads)
    assert run.races(limit, objective) is races


def test_a_rival_that_does_not_stop_in_time_is_counted_among_the_background_solves() -> None:
    """A rival whose HiGHS run outlives the grace is left in the background and counted, so
    that the CLI ends with ``os._exit`` instead of aborting in the finalizing interpreter
    ("terminate called without an active exception", seen once in six raced solves)."""
    release = threading.Event()
    rival = HighsRival(SolverOptions(time_limit_s=1), seed=1)
    rival.thread = threading.Thread(target=release.wait, daemon=True)  # a run deaf to the halt
    rival.thread.start()
    before = background_solves()
    rival.stop()
    assert rival.halt.is_set
    assert background_solves() == before + 1
    release.set()
    assert wait_for_background(timeout=5)
    assert background_solves() == 0
