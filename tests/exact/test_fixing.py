"""Hosts that no placement within the kept hardware can power (mipopt.exact.fixing), and the
migrations and restarts their running workloads force on the later stages."""

from __future__ import annotations

import random

import pyomo.environ as pyo
import pytest

import mipopt
from mipopt.exact.driver import solve_exact
from mipopt.exact.fixing import dark_homes, hosts_off
from mipopt.exact.models.config import build_config
from mipopt.instance import InstanceBuilder, Objectives, Status
from mipopt.solvers import SolverOptions
from mipopt.solvers.highs import lp_relaxation
from mipopt.solvers.matrix import compile_model
from mipopt.solvers.stop import StopFlag
from mipopt.verifier import verify


def dark_home() -> mipopt.Instance:
    """Two running 1g.5gb on a host of weight 3; two empty hosts of weight 1 hold everything."""
    b = InstanceBuilder(name="dark_home")
    b.add_host("old", {"old-g0": "A100-40GB"}, cpu=32, ram_gb=128, weight=3)
    for h in ("a", "b"):
        b.add_host(h, {f"{h}-g0": "A100-40GB"}, cpu=32, ram_gb=128, weight=1)
    b.add_workload("r1", "1g.5gb", placement=("old-g0", 0), cpu=2, ram_gb=8)
    b.add_workload("r2", "1g.5gb", placement=("old-g0", 1), cpu=2, ram_gb=8, migration_weight=0.5)
    b.add_workload("n1", "3g.20gb", cpu=4, ram_gb=16)
    return b.build()


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_the_running_workloads_of_a_host_that_must_stay_off_prove_migrations_and_restarts(
    solver: str,
) -> None:
    """Hardware 2 (host a and its GPU) leaves "old" dark: r1 and r2 move host, 4 x (1 + 0.5)
    migrations and 1 + 0.5 restarts, which the stages prove without a solve (the LP is HiGHS's
    with either backend)."""
    inst = dark_home()
    sol = solve_exact(inst, solver=solver)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert sol.status is Status.OPTIMAL
    assert report.objectives == Objectives(3.0, 2.0, 6.0, 1.5)
    assert [(st.objective, st.proven, st.model) for st in sol.stages] == [
        ("acceptance", True, "incumbent"),
        ("hardware", True, "aggregate"),
        ("migrations", True, "hosts off"),
        ("restarts", True, "hosts off"),
    ]
    assert "1 host off in every placement of hardware at most 2 (reduced costs" in sol.message
    slots = solve_exact(inst, model="grmu-slots")
    assert verify(inst, slots).objectives == report.objectives
    assert "hosts off" not in slots.message


def test_hosts_off_are_those_priced_above_the_kept_hardware() -> None:
    """The LP relaxation at acceptance 3: powering "old" costs its weight 3 more than a host of
    weight 1, above any slack short of it; "b" is as cheap as "a" and stays free."""
    inst = dark_home()
    built = build_config(inst, mode="detailed")
    built.model.accept_all = pyo.Constraint(expr=built.expression("acceptance") >= 3)
    assert hosts_off(built, 2.0, SolverOptions()) == frozenset({"old"})
    assert hosts_off(built, 20.0, SolverOptions()) == frozenset()  # slack enough to power it
    stop = StopFlag()
    stop.set()
    assert hosts_off(built, 2.0, SolverOptions(stop=stop)) is None  # no LP, no claim


def test_dark_homes_looks_for_a_running_workloads_host_that_is_off() -> None:
    inst = dark_home()
    moved = {"r1": ("a-g0", 0), "r2": ("a-g0", 1), "n1": ("a-g0", 4)}
    home = {"r1": ("old-g0", 0), "r2": ("old-g0", 1), "n1": ("a-g0", 4)}
    assert dark_homes(inst, moved, ())
    assert not dark_homes(inst, home, ())
    assert not dark_homes(inst, moved, ("r1", "r2"))  # held workloads keep their host on


def test_lp_relaxation_gives_the_optimum_and_its_reduced_costs() -> None:
    """min x + 2y s.t. x + y >= 1.5, x, y integer in [0, 3]: LP 1.5 at x = 1.5, y's reduced cost 1."""
    m = pyo.ConcreteModel()
    m.x = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 3))
    m.y = pyo.Var(domain=pyo.NonNegativeIntegers, bounds=(0, 3))
    m.c = pyo.Constraint(expr=m.x + m.y >= 1.5)
    m.o = pyo.Objective(expr=m.x + 2 * m.y)
    form = compile_model(m)
    lp = lp_relaxation(form, SolverOptions())
    assert lp is not None
    assert lp.value == pytest.approx(1.5)
    by_name = {v.name: (x, d) for v, x, d in zip(form.columns, lp.x, lp.reduced_costs, strict=True)}
    assert by_name["x"] == pytest.approx((1.5, 0.0))
    assert by_name["y"] == pytest.approx((0.0, 1.0))


def costly_homes(seed: int) -> mipopt.Instance:
    """Small random clusters whose running workloads sit mostly on a host of weight 2 or 3 among
    hosts of weight 1 or 2, with cpu and ram that may bind: where the fixing is tried."""
    rng = random.Random(seed)
    b = InstanceBuilder(name=f"costly-homes-{seed}")
    homes: list[tuple[str, int]] = []  # (GPU, running workloads on it)
    for i in range(rng.randint(3, 5)):
        gpus = [f"h{i}-g{j}" for j in range(rng.randint(1, 2))]
        weight = rng.choice([2, 3]) if i == 0 else rng.choice([1, 1, 2])
        b.add_host(
            f"h{i}",
            dict.fromkeys(gpus, "A100-40GB"),
            cpu=rng.choice([16, 32, 64]),
            ram_gb=rng.choice([64, 128]),
            weight=weight,
        )
        homes += [(g, rng.randint(1, 3) if i == 0 else rng.choice([0, 0, 1])) for g in gpus]
    n = 0
    for gpu, running in homes:
        for start in rng.sample(range(7), running):
            b.add_workload(
                f"r{n}",
                "1g.5gb",
                placement=(gpu, start),
                cpu=rng.choice([2, 4]),
                ram_gb=8,
                migration_weight=rng.choice([1.0, 0.5]),
            )
            n += 1
    for k in range(rng.randint(2, 5)):
        b.add_workload(
            f"n{k}",
            rng.choice(["1g.5gb", "2g.10gb", "3g.20gb"]),
            cpu=rng.choice([2, 8]),
            ram_gb=rng.choice([8, 32]),
            weight=rng.choice([1, 2]),
        )
    return b.build()


def test_the_fixing_keeps_every_optimum_of_the_slot_model() -> None:
    """On clusters where hosts are fixed off, the configuration model's optimum (with the fixing)
    equals the slot model's (without it), and the answers verify."""
    fixed = solved = 0  # seeds with hosts fixed off; of them, with a migrations stage still solved
    for seed in range(24):
        inst = costly_homes(seed)
        config = solve_exact(inst)
        slots = solve_exact(inst, model="grmu-slots")
        assert config.status is Status.OPTIMAL and slots.status is Status.OPTIMAL, seed
        report = verify(inst, config)
        assert report.valid, (seed, report.violations)
        assert report.objectives == verify(inst, slots).objectives, seed
        if "off in every placement" in config.message:
            fixed += 1
            solved += config.stages[2].model == "detailed"
    assert (fixed, solved) == (13, 6)


def test_the_fixing_holds_the_hardware_tolerance() -> None:
    """With hardware kept within 50 % of its optimum, the hosts fixed off are those priced above
    that limit: acceptance, migrations and restarts equal the slot model's, and hardware stays
    within the limit (the two may break the tolerant stage's ties apart)."""
    objective = "lex:acceptance,hardware@0.5,migrations,restarts"
    fixed = 0
    for seed in range(24):
        inst = costly_homes(seed)
        config = solve_exact(inst, objective=objective)
        slots = verify(inst, solve_exact(inst, model="grmu-slots", objective=objective)).objectives
        report = verify(inst, config)
        assert report.valid, (seed, report.violations)
        got = report.objectives
        assert (got.acceptance, got.migrations, got.restarts) == (
            slots.acceptance,
            slots.migrations,
            slots.restarts,
        ), seed
        assert got.hardware <= 1.5 * config.stages[1].value + 1e-6, seed
        fixed += "off in every placement" in config.message
    assert fixed == 5


def test_the_lp_takes_at_most_its_share_of_the_time_left(monkeypatch: pytest.MonkeyPatch) -> None:
    """A time-limited run gives the fixing LP half the time left (``FIXING_SHARE``), so an LP that
    does not end leaves the stages the rest; an unlimited run gives it no limit."""
    import mipopt.exact.driver as driver

    limits: list[float | None] = []
    real = driver.hosts_off

    def watched(built: object, hardware: float, options: SolverOptions) -> frozenset[str] | None:
        limits.append(options.time_limit_s)
        return real(built, hardware, options)  # type: ignore[arg-type]

    monkeypatch.setattr(driver, "hosts_off", watched)
    inst = dark_home()
    limited = solve_exact(inst, options=SolverOptions(time_limit_s=30))
    assert verify(inst, limited).objectives == Objectives(3.0, 2.0, 6.0, 1.5)
    assert len(limits) == 1 and limits[0] is not None
    assert 0 < limits[0] <= 30 * driver.FIXING_SHARE  # without the share: about 27 s
    solve_exact(inst)
    assert limits[1:] == [None]


def test_a_host_that_must_stay_off_rules_out_keeping_running_workloads_home() -> None:
    """Notebook 02's cluster with hardware first: h2 must stay off, so no placement keeps r3 on
    its GPU; the note says so once, naming r3 and h2, where before the home and restricted
    variants were skipped without a word. The migrations stage still solves: 4 for r3 is below
    the optimum 6 (r2 moves within h1 too)."""
    b = InstanceBuilder("exact_demo")
    b.add_host("h1", {"g1": "A100-80GB", "g2": "A100-80GB"}, weight=1)
    b.add_host("h2", {"g3": "A100-80GB"}, weight=2)
    b.add_workload("r1", "3g.40gb", placement=("g1", 4), pinned=True)
    b.add_workload("r2", "1g.10gb", placement=("g2", 6))
    b.add_workload("r3", "2g.20gb", placement=("g3", 0))
    for wid, profile in {
        "n1": "4g.40gb",
        "n2": "2g.20gb",
        "n3": "1g.10gb",
        "n4": "1g.20gb",
        "n5": "3g.40gb",
    }.items():
        b.add_workload(wid, profile)
    inst = b.build()
    sol = solve_exact(inst, objective="lex:hardware,acceptance,migrations,restarts")
    report = verify(inst, sol)
    assert report.valid and sol.status is Status.OPTIMAL
    assert (report.objectives.hardware, report.objectives.acceptance, report.objectives.migrations) == (
        2,
        4,
        6,
    )
    note = "no placement keeping every running workload on its GPU reaches the optima above: r3 runs on h2, which must stay off"
    assert sol.message.count(note) == 1
    assert "on its GPU and start reaches" not in sol.message  # the home variant was not built to find it out
