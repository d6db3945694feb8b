"""The search over hosts (mipopt.exact.lns), its place beside HiGHS, and what the driver does with it."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import numpy as np
import pyomo.environ as pyo
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import mipopt
from mipopt.exact.driver import solve_exact
from mipopt.exact.keep import _Keeper, assignment, keep_running
from mipopt.exact.lns import HostSearch, _restricted
from mipopt.exact.models.config import ConfigModel, build_config
from mipopt.instance import Objectives, Status, Termination
from mipopt.solvers import SolverOptions
from mipopt.solvers.base import feasible_start
from mipopt.solvers.highs import HighsBackend, _highs
from mipopt.solvers.matrix import FloatArray, MatrixForm, compile_model
from mipopt.solvers.stop import Limits
from mipopt.verifier import evaluate, solution_for, verify
from mipopt.workloads import dense_instance
from mipopt.workloads.ibm import ibm_instance


def checked(
    inst: mipopt.Instance, placed: dict[str, tuple[str, int]], profiles: dict[str, str] | None = None
) -> Objectives:
    """``placed`` through the verifier (valid), and its objectives."""
    sol = solution_for(
        inst,
        placed,
        method="test",
        termination=Termination.COMPLETED,
        status=Status.FEASIBLE,
        profiles=profiles,
    )
    report = verify(inst, sol)
    assert report.valid, report.violations
    return report.objectives


def migrations_stage(inst: mipopt.Instance, floors: Objectives) -> tuple:
    """The detailed model with acceptance and hardware held at ``floors``, minimizing migrations."""
    built = build_config(inst, mode="detailed")
    m = built.model
    m.floor = pyo.ConstraintList()
    m.floor.add(built.expression("acceptance") >= floors.acceptance)
    m.floor.add(built.expression("hardware") <= floors.hardware)
    m.objective = pyo.Objective(expr=built.expression("migrations"))
    return built, compile_model(m)


def _from_a_poor_start() -> tuple[mipopt.Instance, mipopt.Solution, ConfigModel, MatrixForm, FloatArray]:
    """Dense class, 3 hosts of 4 GPUs, seed 0: the answer of lex:acceptance,hardware (migrations
    12), the migrations stage at the default objective's optimum (migrations 2), and that answer
    as its point."""
    inst = dense_instance(3, seed=0, gpus_per_host=4)
    start = solve_exact(inst, objective="lex:acceptance,hardware")
    optimum = verify(inst, solve_exact(inst)).objectives
    before = verify(inst, start).objectives
    assert (before.migrations, optimum.migrations) == (12.0, 2.0)
    built, form = migrations_stage(inst, optimum)
    x0 = feasible_start(form, form.start(built.warm_start(start.placed(), start.profiles())))
    assert x0 is not None
    return inst, start, built, form, x0


def _decoded(
    inst: mipopt.Instance, start: mipopt.Solution, built: ConfigModel, form: MatrixForm, x: FloatArray
) -> Objectives:
    """The search's point ``x``, a point of the whole model, decoded and through the verifier."""
    assert feasible_start(form, x) is not None
    form.load(x)
    return checked(inst, built.decode(start.placed()), built.profiles)


def test_the_search_reaches_the_proven_migrations_from_a_poor_start() -> None:
    """From the answer of lex:acceptance,hardware (migrations 12) the search finds the default
    objective's proven optimum, migrations 2, and every point it keeps is a point of the whole
    model."""
    inst, start, built, form, x0 = _from_a_poor_start()
    found = HostSearch(built.host_of, seed=1).run(form, x0, deadline=_in(60))
    assert found.objective == 2.0 and found.improved >= 1
    objectives = _decoded(inst, start, built, form, found.x)
    assert (objectives.acceptance, objectives.hardware, objectives.migrations) == (43.0, 22.0, 2.0)


def test_alone_a_round_of_every_host_gets_the_time_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    """The same with rounds capped at 0.25 s: the rounds of two hosts are proven without gain at
    4 migrations, and the round of all three, which takes about a second, is cut. The search
    doubles that round's time after each cut, so it reaches the optimum 2 and proves it (the
    search ends before its deadline); capped, it circled until its deadline."""
    import mipopt.exact.lns as lns

    monkeypatch.setattr(lns, "ROUND_S", 0.25)
    inst, start, built, form, x0 = _from_a_poor_start()
    deadline = _in(60)
    found = HostSearch(built.host_of, seed=1).run(form, x0, deadline=deadline)
    assert found.objective == 2.0
    assert time.monotonic() < deadline - 1  # it ended on a round of every host proven, not at the deadline
    objectives = _decoded(inst, start, built, form, found.x)
    assert (objectives.acceptance, objectives.hardware, objectives.migrations) == (43.0, 22.0, 2.0)


def test_a_sub_problem_is_the_model_with_the_other_columns_fixed() -> None:
    """HiGHS on the restricted form (free columns, the rows they meet) finds the optimum it
    finds on the whole form with the same columns fixed by their bounds."""
    inst = dense_instance(3, seed=0, gpus_per_host=4)
    start = solve_exact(inst, objective="lex:acceptance,hardware")
    built, form = migrations_stage(inst, verify(inst, start).objectives)
    x = feasible_start(form, form.start(built.warm_start(start.placed(), start.profiles())))
    assert x is not None
    hosts = np.array([built.host_of(v) for v in form.columns], dtype=object)
    free = (hosts == None) | (hosts == inst.hosts[0].id)  # noqa: E711  (elementwise)
    sub = _restricted(form, x, free)
    assert sub.matrix.shape[1] == free.sum() < len(form.columns)
    fixed = MatrixForm(
        **{
            **form.__dict__,
            "col_lower": np.where(free, form.col_lower, x),
            "col_upper": np.where(free, form.col_upper, x),
        }
    )

    def optimum(f: MatrixForm, start: FloatArray) -> float:
        h = _highs(f, SolverOptions(mip_rel_gap=0), start, Limits())
        h.run()
        return float(np.dot(f.cost, h.getSolution().col_value))

    assert optimum(sub, x[free]) + float(form.cost[~free] @ x[~free]) == pytest.approx(optimum(fixed, x))


class _Given:
    """A companion that has the optimum from the start."""

    def __init__(self, x: FloatArray, value: float) -> None:
        self.point, self.calls = (x, value), []

    def start(self, form: MatrixForm, x0: FloatArray | None, deadline: float | None) -> None:
        self.calls.append("start")

    def offer(self, x: FloatArray) -> None:
        self.calls.append("offer")

    def best(self) -> tuple[FloatArray, float] | None:
        return self.point

    def bound(self) -> float | None:
        return None

    def stop(self) -> None:
        self.calls.append("stop")


def knapsack() -> pyo.ConcreteModel:
    m = pyo.ConcreteModel()
    weights = [23, 31, 29, 44, 53, 38, 63, 85, 89, 82]
    values = [92, 57, 49, 68, 60, 43, 67, 84, 87, 72]
    m.x = pyo.Var(range(10), domain=pyo.Binary)
    m.cap = pyo.Constraint(expr=sum(w * m.x[i] for i, w in enumerate(weights)) <= 165)
    m.obj = pyo.Objective(expr=sum(v * m.x[i] for i, v in enumerate(values)), sense=pyo.maximize)
    return m


def test_a_companions_point_that_meets_the_bound_is_the_proven_answer() -> None:
    """The classic 10-item knapsack (optimum 309): a companion holding the optimum is the
    answer, proven by HiGHS's bound, and it is stopped when the solve ends."""
    m = knapsack()
    form = compile_model(m)
    x = np.zeros(len(form.columns))
    for j, v in enumerate(form.columns):
        x[j] = 1.0 if v.index() in (0, 1, 2, 3, 5) else 0.0
    companion = _Given(x, 309.0)
    result = HighsBackend().solve(m, SolverOptions(mip_rel_gap=0, companion=companion))
    assert (result.termination, result.objective) == (Termination.OPTIMAL, 309.0)
    assert [round(m.x[i].value) for i in range(10)] == [1, 1, 1, 1, 0, 1, 0, 0, 0, 0]
    assert companion.calls[0] == "start" and companion.calls[-1] == "stop"


def test_a_search_beside_highs_ends_with_the_solve() -> None:
    """A HostSearch started beside a solve leaves no thread behind, and its point is feasible."""
    inst = dense_instance(3, seed=0, gpus_per_host=4)
    start = solve_exact(inst, objective="lex:acceptance,hardware")
    built, _ = migrations_stage(inst, verify(inst, start).objectives)
    search = HostSearch(built.host_of)
    warm = built.warm_start(start.placed(), start.profiles())
    result = HighsBackend().solve(
        built.model, SolverOptions(time_limit_s=20, mip_rel_gap=0, warm_start=warm, companion=search)
    )
    assert result.termination is Termination.OPTIMAL and result.objective == 2.0
    assert search.thread is not None and not search.thread.is_alive()
    assert not [t for t in threading.enumerate() if t.name == "mipopt-host-search"]


def test_decoding_near_the_start_keeps_what_did_not_change() -> None:
    """IBM 80 GPUs seed 1: the keep model's answer, encoded in the detailed model and read back
    with that answer preferred, restarts no more than it did."""
    inst = ibm_instance(80, seed=1, load=0.7)
    sol = solve_exact(inst, objective="lex:acceptance,restarts")
    placed, profiles = sol.placed(), sol.profiles()
    built = build_config(inst, mode="detailed")
    form = compile_model(_with_objective(built))
    form.load(form.start(built.warm_start(placed, profiles)))
    near_placed = built.decode(placed)
    checked(inst, near_placed, built.profiles)
    near = evaluate(inst, near_placed, built.profiles)[1]["restarted"]
    assert near <= evaluate(inst, placed, profiles)[1]["restarted"]


def _with_objective(built) -> pyo.ConcreteModel:
    built.model.objective = pyo.Objective(expr=built.expression("migrations"))
    return built.model


def test_exchange_brings_a_running_workload_home_past_the_workload_on_its_slot() -> None:
    """``run`` (1g.10gb, cpu 1) runs on g0 slot 0 but was placed on g1; a new 1g.10gb of another
    cpu (not interchangeable) took its slot. The exchange puts each on the other's GPU."""
    b = mipopt.InstanceBuilder("exchange")
    b.add_host("h0", {"g0": "A100-80GB"})
    b.add_host("h1", {"g1": "A100-80GB"})
    b.add_workload("run", "1g.10gb", cpu=1, placement=("g0", 0))
    b.add_workload("new", "1g.10gb", cpu=2)
    b.add_workload("other", "3g.40gb", cpu=1)
    inst = b.build()
    moved = {"run": ("g1", 6), "new": ("g0", 0), "other": ("g1", 0)}
    kept = keep_running(inst, moved, frozenset())
    assert kept["run"] == ("g0", 0) and kept["new"][0] == "g1"
    assert checked(inst, kept) == Objectives(3.0, 4.0, 0.0, 0.0)


def test_exchange_leaves_a_running_workload_of_that_gpu_on_it() -> None:
    """The block on the home slot is another workload running on that GPU: it stays."""
    b = mipopt.InstanceBuilder("exchange-refused")
    b.add_host("h0", {"g0": "A100-80GB"})
    b.add_host("h1", {"g1": "A100-80GB"})
    b.add_workload("run", "1g.10gb", cpu=1, placement=("g0", 0))
    b.add_workload("mine", "2g.20gb", cpu=2, placement=("g0", 2))
    inst = b.build()
    moved = {"run": ("g1", 6), "mine": ("g0", 0)}
    assert _Keeper(inst, frozenset(), False, {}).exchange(moved) == moved


def test_a_time_limited_answer_with_the_search_verifies() -> None:
    """IBM 80 GPUs with a 3 s limit (a second HiGHS run races each solve): a verified answer within the limit."""
    inst = ibm_instance(80, seed=0, load=0.7)
    sol = solve_exact(inst, options=SolverOptions(time_limit_s=3))
    assert verify(inst, sol).valid and sol.runtime_s <= 3.5
    assert sol.status in (Status.OPTIMAL, Status.FEASIBLE)


def _in(seconds: float) -> float:
    import time

    return time.monotonic() + seconds


@settings(max_examples=150, deadline=None)
@given(
    st.integers(1, 6).flatmap(
        lambda n: st.lists(st.lists(st.integers(0, 9), min_size=n, max_size=n), min_size=n, max_size=n)
    )
)
def test_the_assignment_is_the_cheapest_permutation(rows: list[list[int]]) -> None:
    """keep_running's matcher against every permutation (1,000,000 apart, as its costs are)."""
    cost = np.array(rows, dtype=float) * np.array([1e6, 1.0] * 3)[: len(rows)]
    cols = assignment(cost)
    n = len(rows)
    assert sorted(cols.tolist()) == list(range(n))
    best = min(sum(cost[i, p[i]] for i in range(n)) for p in itertools.permutations(range(n)))
    assert cost[np.arange(n), cols].sum() == pytest.approx(best)


def test_decoding_near_a_start_lands_the_heavier_leaver_on_its_own_host() -> None:
    """A 7g.80gb takes g0, so its two running 1g.10gb leave: one spot is left on their host (g1),
    one on h1. The optimum lands the heavier one (delta 2) on g1: migrations 2x2 + 4x1 = 8. The
    start preferred has them the other way round (10): the decoding still gives the model's 8
    (preferring the light one's GPU first gave 10; dense seed 5 at 40 GPUs decoded 38 as 40)."""
    b = mipopt.InstanceBuilder("two-leavers")
    b.add_host("h0", {"g0": "A100-80GB", "g1": "A100-80GB"})
    b.add_host("h1", {"g2": "A100-80GB"})
    b.add_workload("heavy", "1g.10gb", placement=("g0", 0), migration_weight=2.0)
    b.add_workload("light", "1g.10gb", placement=("g0", 1), migration_weight=1.0)
    for gpu in ("g1", "g2"):  # pinned, leaving slot 3 free
        b.add_workload(f"{gpu}-a", "2g.20gb", placement=(gpu, 0), pinned=True)
        b.add_workload(f"{gpu}-b", "1g.10gb", placement=(gpu, 2), pinned=True)
        b.add_workload(f"{gpu}-c", "3g.40gb", placement=(gpu, 4), pinned=True)
    b.add_workload("big", "7g.80gb")
    inst = b.build()
    start = {**inst.current_placement(), "big": ("g0", 0), "heavy": ("g2", 3), "light": ("g1", 3)}
    assert evaluate(inst, start)[0].migrations == 10.0
    built, _ = migrations_stage(inst, evaluate(inst, start)[0])
    result = HighsBackend().solve(built.model, SolverOptions(mip_rel_gap=0))
    assert result.objective == 8.0
    placed = built.decode(start)
    assert (placed["heavy"][0], placed["light"][0]) == ("g1", "g2")
    assert checked(inst, placed).migrations == 8.0


@pytest.mark.parametrize("seed", range(6))
def test_decoding_near_a_start_keeps_the_models_migrations(seed: int) -> None:
    """Dense class, 3 hosts of 4 GPUs: the detailed model's migrations optimum, decoded near the
    answer of lex:acceptance,hardware (which moves running workloads elsewhere), is what the
    verifier counts: the preferred GPUs never cost a leaver its own host (dense seed 5 at 40 GPUs
    once decoded 38 as 40)."""
    inst = dense_instance(3, seed=seed, gpus_per_host=4, models=("A30-24GB", "A100-80GB"))
    start = solve_exact(inst, objective="lex:acceptance,hardware")
    built, _ = migrations_stage(inst, verify(inst, start).objectives)
    result = HighsBackend().solve(built.model, SolverOptions(mip_rel_gap=0))
    assert result.termination is Termination.OPTIMAL
    placed = built.decode(start.placed())
    assert checked(inst, placed, built.profiles).migrations == result.objective


def _around_stage_options(
    monkeypatch: pytest.MonkeyPatch, change: Callable[[str | None, SolverOptions], SolverOptions]
) -> None:
    """Have every solve's options of the driver pass through ``change(objective, options)``."""
    import mipopt.exact.driver as driver

    stage_options = driver._Run.stage_options

    def changed(self: driver._Run, *args: object, **kwargs: object) -> SolverOptions:
        objective = kwargs.get("objective")
        options = stage_options(self, *args, **kwargs)  # type: ignore[arg-type]
        return change(objective if isinstance(objective, str) else None, options)

    monkeypatch.setattr(driver._Run, "stage_options", changed)


def _hardware_cut_after_a_node(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stop every hardware stage after one node (as a time limit would): the run ends there."""
    from dataclasses import replace

    _around_stage_options(
        monkeypatch, lambda name, options: replace(options, node_limit=1) if name == "hardware" else options
    )


@pytest.mark.parametrize(
    ("seed", "acceptance", "hardware", "bound"), [(0, 47.0, 19.0, 17.0), (2, 85.0, 21.0, 21.0)]
)
def test_a_hardware_stage_cut_short_is_brought_to_the_optimum_by_a_search_over_hosts(
    monkeypatch: pytest.MonkeyPatch, seed: int, acceptance: float, hardware: float, bound: float
) -> None:
    """Dense class, 4 hosts of 4 GPUs: a hardware stage stopped after one node ends the run with
    acceptance proven; the repair searches over hosts for less hardware first and reaches the
    optimum of an unlimited run. Where that meets the stage's bound (seed 2) the stage is
    proven; the answer is not (later stages not run)."""
    inst = dense_instance(4, seed=seed, gpus_per_host=4)
    optimum = verify(inst, solve_exact(inst, objective="lex:acceptance,hardware")).objectives
    assert (optimum.acceptance, optimum.hardware) == (acceptance, hardware)
    _hardware_cut_after_a_node(monkeypatch)
    sol = solve_exact(inst)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert (report.objectives.acceptance, report.objectives.hardware) == (acceptance, hardware)
    assert sol.status is Status.FEASIBLE
    proven = bound == hardware
    assert [(st.objective, st.proven) for st in sol.stages] == [("acceptance", True), ("hardware", proven)]
    assert (sol.stages[1].value, sol.stages[1].bound) == (hardware, bound)
    assert sol.stages[1].termination is (Termination.OPTIMAL if proven else Termination.COMPLETED)
    assert "hardware brought down by a search over hosts" in sol.message
    assert "not optimized: migrations, restarts" in sol.message
    assert (
        f"hardware {hardware:g} (proven" in sol.message if proven else "hardware 19 (completed" in sol.message
    )


def test_no_search_for_hardware_once_a_later_stage_holds_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """Stages stopped at a 50 % gap go on: migrations 0 is proven at the hardware the gap left
    (25; the optimum 21 migrates 29), so the repair leaves hardware alone and the answer's
    stages stay true of it."""
    import mipopt.exact.driver as driver

    monkeypatch.setattr(driver._Run, "home_start", lambda *_: None)
    inst = dense_instance(4, seed=2, gpus_per_host=4)
    sol = solve_exact(inst, options=SolverOptions(mip_rel_gap=0.5))
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert [(st.objective, st.value, st.proven) for st in sol.stages] == [
        ("acceptance", 85.0, True),
        ("hardware", 25.0, False),
        ("migrations", 0.0, True),
        ("restarts", 0.0, True),
    ]
    assert (report.objectives.hardware, report.objectives.migrations) == (25.0, 0.0)
    assert "hardware brought down" not in sol.message


def test_beside_a_hardware_stage_the_search_starts_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hard class, 40 GPUs (20 hosts: no race), 15 s limit: the search beside the hardware stage
    waits for nothing (on the Alibaba snapshot the proof waited for its point: 54.6 s with the
    wait, 25.7 s without); beside the other stages it waits half the solve's time."""
    from mipopt.exact.lns import DELAY_SHARE
    from mipopt.workloads import hard_instance

    delays: list[tuple[str | None, float]] = []

    def recorded(name: str | None, options: SolverOptions) -> SolverOptions:
        if isinstance(options.companion, HostSearch):
            delays.append((name, options.companion.delay_share))
        return options

    _around_stage_options(monkeypatch, recorded)
    inst = hard_instance(40, seed=0)
    sol = solve_exact(inst, options=SolverOptions(time_limit_s=15))
    assert verify(inst, sol).valid
    assert ("hardware", 0.0) in delays
    assert all(share == (0.0 if name == "hardware" else DELAY_SHARE) for name, share in delays)
    assert {name for name, _ in delays} >= {"hardware", "migrations"}


def test_a_search_beside_a_solve_waits_its_share_before_the_first_round() -> None:
    """Beside a solve of 20 s, a search with the default share has run no round after 1 s; one
    with share 0 has (IBM 80 GPUs, the migrations stage from its aggregated answer)."""
    import time

    inst = ibm_instance(80, seed=1)
    optimum = verify(inst, solve_exact(inst)).objectives
    built, form = migrations_stage(inst, optimum)
    start = solve_exact(inst, objective="lex:acceptance,hardware")
    x0 = feasible_start(form, form.start(built.warm_start(start.placed())))
    assert x0 is not None
    for share, ran in ((0.5, False), (0.0, True)):
        search = HostSearch(built.host_of, seed=0, delay_share=share)
        search.start(form, x0, time.monotonic() + 20)
        time.sleep(1.0)
        search.stop()
        assert (search.rounds > 0) is ran
