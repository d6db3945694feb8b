"""The solver layer on tiny generic Pyomo models: both backends, every outcome.

The models are built here, not taken from a formulation: the layer must know nothing of them.
Optima are checked by hand in each builder's docstring.
"""

from __future__ import annotations

import warnings

import pyomo.environ as pyo
import pytest
from solver_models import BACKENDS, PROOF, knapsack, multi_knapsack

from mipopt.errors import InstanceError
from mipopt.instance import Status, Termination
from mipopt.solvers import (
    CpSatBackend,
    HighsBackend,
    SolverOptions,
    UnsupportedModelError,
    get_backend,
    relative_gap,
)


def assignment() -> pyo.ConcreteModel:
    """3x3 assignment, costs [[4,1,3],[2,0,5],[3,2,2]]: optimum 5 (0->1, 1->0, 2->2)."""
    cost = [[4, 1, 3], [2, 0, 5], [3, 2, 2]]
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), range(3), domain=pyo.Binary)
    m.row = pyo.Constraint(range(3), rule=lambda m, i: sum(m.x[i, j] for j in range(3)) == 1)
    m.col = pyo.Constraint(range(3), rule=lambda m, j: sum(m.x[i, j] for i in range(3)) == 1)
    m.obj = pyo.Objective(expr=sum(cost[i][j] * m.x[i, j] for i in range(3) for j in range(3)))
    return m


def weighted() -> pyo.ConcreteModel:
    """Fractional weights and a constant, like a weighted-sum objective.

    max 1*a + 0.1*h + 0.01*k + 0.5 with a, h binary, k in 0..7, a + h <= 1, k <= 3 + 4*h:
    a=1 gives 1 + 0.03 + 0.5 = 1.53; h=1 gives 0.1 + 0.07 + 0.5 = 0.67. Optimum 1.53.
    """
    m = pyo.ConcreteModel()
    m.a = pyo.Var(domain=pyo.Binary)
    m.h = pyo.Var(domain=pyo.Binary)
    m.k = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 7))
    m.one = pyo.Constraint(expr=m.a + m.h <= 1)
    m.link = pyo.Constraint(expr=m.k <= 3 + 4 * m.h)
    m.obj = pyo.Objective(expr=m.a + 0.1 * m.h + 0.01 * m.k + 0.5, sense=pyo.maximize)
    return m


def infeasible() -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(3), domain=pyo.Binary)
    m.c = pyo.Constraint(expr=sum(m.x[i] for i in range(3)) >= 4)
    m.obj = pyo.Objective(expr=sum(m.x[i] for i in range(3)))
    return m


def unbounded() -> pyo.ConcreteModel:
    """max x + y with x - y >= 1, x, y >= 0 integer: no limit. HiGHS's presolve says only
    "infeasible or unbounded", so this also exercises the backend's feasibility probe."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeIntegers)
    m.y = pyo.Var(domain=pyo.NonNegativeIntegers)
    m.c = pyo.Constraint(expr=m.x - m.y >= 1)
    m.obj = pyo.Objective(expr=m.x + m.y, sense=pyo.maximize)
    return m


def chosen(var: pyo.Var) -> list:
    return sorted(i for i in var if pyo.value(var[i]) > 0.5)


@pytest.mark.parametrize("backend", BACKENDS)
def test_knapsack_max(backend):
    m = knapsack()
    r = get_backend(backend).solve(m, PROOF)
    assert (r.termination, r.status) == (Termination.OPTIMAL, Status.OPTIMAL)
    assert r.objective == pytest.approx(21)
    assert r.bound == pytest.approx(21)
    assert r.gap == 0.0
    assert chosen(m.x) == [1, 3]  # values are loaded back into the model
    assert r.solver == backend and r.runtime_s > 0 and r.has_solution


@pytest.mark.parametrize("backend", BACKENDS)
def test_assignment_min(backend):
    m = assignment()
    r = get_backend(backend).solve(m, PROOF)
    assert r.termination is Termination.OPTIMAL
    assert r.objective == pytest.approx(5)
    assert chosen(m.x) == [(0, 1), (1, 0), (2, 2)]


@pytest.mark.parametrize("backend", BACKENDS)
def test_fractional_objective_and_constant(backend):
    m = weighted()
    r = get_backend(backend).solve(m, PROOF)
    assert r.status is Status.OPTIMAL
    assert r.objective == pytest.approx(1.53, abs=1e-9)
    assert r.bound == pytest.approx(1.53, abs=1e-6)
    assert (pyo.value(m.a), pyo.value(m.h), pyo.value(m.k)) == (1, 0, 3)


def test_backends_agree_on_multi_knapsack():
    results = [get_backend(b).solve(multi_knapsack(seed=7, n=25), PROOF) for b in BACKENDS]
    assert all(r.status is Status.OPTIMAL for r in results)
    assert results[0].objective == pytest.approx(results[1].objective)


@pytest.mark.parametrize("backend", BACKENDS)
def test_infeasible(backend):
    r = get_backend(backend).solve(infeasible(), PROOF)
    assert (r.termination, r.status) == (Termination.INFEASIBLE, Status.NONE)
    assert (r.objective, r.gap, r.unbounded) == (None, None, False)
    assert r.message == "infeasible"


def test_unbounded_highs():
    r = HighsBackend().solve(unbounded(), PROOF)
    assert (r.termination, r.status) == (Termination.ERROR, Status.NONE)
    assert r.unbounded
    assert r.message.startswith("unbounded")
    assert r.objective is None


def test_cpsat_refuses_unbounded_variables():
    with pytest.raises(
        UnsupportedModelError, match=r"CP-SAT needs finite bounds on every variable; 2 without: x, y"
    ):
        CpSatBackend().solve(unbounded())


def test_cpsat_refuses_continuous_variables():
    m = knapsack()
    m.slack = pyo.Var(bounds=(0, 10))
    m.use = pyo.Constraint(expr=m.slack <= m.x[0])
    with pytest.raises(
        UnsupportedModelError, match=r"CP-SAT needs every variable integer; 1 continuous: slack"
    ):
        CpSatBackend().solve(m)
    # HiGHS takes it: optimum unchanged (slack is free to be 0).
    assert HighsBackend().solve(m, PROOF).objective == pytest.approx(21)


@pytest.mark.parametrize("backend", BACKENDS)
def test_one_objective_required(backend):
    m = knapsack()
    m.obj2 = pyo.Objective(expr=m.x[0])
    with pytest.raises(UnsupportedModelError, match="exactly one active objective, found 2"):
        get_backend(backend).solve(m)


@pytest.mark.parametrize("backend", BACKENDS)
def test_time_limit(backend):
    # Proven optimum first, for reference.
    opt = HighsBackend().solve(multi_knapsack(), PROOF)
    assert opt.status is Status.OPTIMAL
    m = multi_knapsack()
    r = get_backend(backend).solve(m, SolverOptions(time_limit_s=0.05, threads=1))
    # A machine fast enough may prove the optimum within the limit: both outcomes are valid.
    assert r.termination in (Termination.TIME_LIMIT, Termination.OPTIMAL)
    if r.termination is Termination.OPTIMAL:
        assert r.objective == pytest.approx(opt.objective)
    elif r.status is Status.FEASIBLE:
        assert r.message == "time limit reached"
        assert r.objective <= opt.objective + 1e-6 <= r.bound + 2e-6  # maximizing: bound above
        assert r.gap == pytest.approx(relative_gap(r.objective, r.bound))
        assert r.gap >= 0
        # The incumbent is loaded and feasible in the model.
        assert all(pyo.value(c.body) <= c.upper + 1e-6 for c in m.cap.values())
        assert pyo.value(m.obj) == pytest.approx(r.objective)
    else:
        assert (r.status, r.objective, r.gap) == (Status.NONE, None, None)


@pytest.mark.parametrize("backend", BACKENDS)
def test_warm_start(backend):
    """An optimal start under a tiny limit: whatever the solver does, it keeps at least that value."""
    m = multi_knapsack(seed=3, n=40)
    opt = HighsBackend().solve(m, PROOF)
    start = {m.x[i].name: pyo.value(m.x[i]) for i in m.x}
    assert get_backend(backend).capabilities.supports_warm_start
    r = get_backend(backend).solve(
        multi_knapsack(seed=3, n=40), SolverOptions(time_limit_s=0.02, threads=1, warm_start=start)
    )
    assert r.status is not Status.NONE
    assert r.objective >= opt.objective - 1e-6


def test_warm_start_unknown_name():
    with pytest.raises(KeyError, match="'nope' is not a variable"):
        HighsBackend().solve(knapsack(), SolverOptions(warm_start={"nope": 1}))


def test_cpsat_same_seed_same_solution():
    def run(seed):
        m = multi_knapsack(seed=5, n=20)
        r = CpSatBackend().solve(m, SolverOptions(threads=1, seed=seed, mip_rel_gap=0))
        return r.objective, chosen(m.x)

    assert run(4) == run(4)


@pytest.mark.parametrize("backend", BACKENDS)
def test_highs_and_cpsat_in_one_process(backend):
    # Both libraries load here; alternating calls keeps working (the highspy/ortools pin).
    for b in (backend, *BACKENDS):
        assert get_backend(b).solve(knapsack(), PROOF).objective == pytest.approx(21)


def test_threads_can_change_between_highs_solves():
    # HiGHS keeps one thread pool per calling thread, sized at its first solve there; every solve
    # runs on a thread of its own, so a new size is always possible.
    for threads in (1, 2, 1):
        assert HighsBackend().solve(knapsack(), SolverOptions(threads=threads)).objective == pytest.approx(21)


def test_get_backend():
    assert isinstance(get_backend("highs"), HighsBackend)
    assert get_backend("cpsat").capabilities.integer_only
    assert not get_backend("highs").capabilities.integer_only
    with pytest.raises(ValueError, match="unknown solver 'gurobi'; choose one of highs, cpsat"):
        get_backend("gurobi")


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"time_limit_s": 0}, "time_limit_s: must be positive, got 0"),
        ({"time_limit_s": "10"}, "time_limit_s: must be a number (seconds), got str '10'"),
        ({"threads": 0}, "threads: must be >= 1, got 0"),
        ({"threads": 2.5}, "threads: must be an integer, got float 2.5"),
        ({"seed": -1}, "seed: must be >= 0, got -1"),
        ({"seed": 2**31}, "seed: must be <= 2147483647, got 2147483648"),
        ({"mip_rel_gap": -0.1}, "mip_rel_gap: must be in [0, 1), got -0.1"),
        ({"mip_rel_gap": 1}, "mip_rel_gap: must be in [0, 1), got 1"),
    ],
)
def test_options_validated(kwargs, message):
    """The rules of mipopt.solve's options (mipopt._fields), each naming the field."""
    with pytest.raises(InstanceError) as info:
        SolverOptions(**kwargs)
    assert str(info.value) == message
    assert isinstance(info.value, TypeError) is ("must be a" in message)


def test_threads_beyond_the_cores_are_capped(monkeypatch):
    import mipopt.executors

    monkeypatch.setattr(mipopt.executors, "cpu_count", lambda: 4)
    with pytest.warns(UserWarning, match=r"^threads: 64 is more than this machine's 4 cores; using 4$"):
        assert SolverOptions(threads=64).threads == 4
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as many as the cores: no warning
        assert SolverOptions(threads=4).threads == 4


def test_relative_gap():
    assert relative_gap(10, 10) == 0
    assert relative_gap(10, 12) == pytest.approx(0.2)
    assert relative_gap(-10, -12) == pytest.approx(0.2)
    assert relative_gap(0, 1) == float("inf")
    assert relative_gap(None, 1) is None


@pytest.mark.parametrize("backend", BACKENDS)
def test_every_variable_fixed_is_optimal_at_the_fixed_values(backend):
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.Integers, bounds=(0, 5))
    m.y = pyo.Var(domain=pyo.Integers, bounds=(0, 5))
    m.x.fix(2)
    m.y.fix(3)
    m.c = pyo.Constraint(expr=m.x + m.y <= 6)
    m.o = pyo.Objective(expr=2 * m.x + m.y + 1, sense=pyo.maximize)
    r = get_backend(backend).solve(m, PROOF)
    assert (r.termination, r.status, r.objective) == (Termination.OPTIMAL, Status.OPTIMAL, 8)
