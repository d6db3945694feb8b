"""Restarts, an objective of every exact model, and the budget on restarts and GB moved."""

from __future__ import annotations

import pytest
from factories import INSTANCES

import mipopt
from mipopt.exact.driver import PRIORITIES, solve_exact
from mipopt.exact.keep import keep_running
from mipopt.exact.models.config import build_config
from mipopt.instance import Budget, InstanceBuilder, Objectives, Status
from mipopt.instance.summary import restart_warning
from mipopt.io import load_instance
from mipopt.verifier import evaluate, verify
from mipopt.workloads import hard_instance
from mipopt.workloads.ibm import ibm_instance

MODELS = ["grmu", "grmu-slots", "grmu-paper"]


def answer(inst: mipopt.Instance, **options: object) -> tuple[Objectives, float, float]:
    """A verified exact answer: its objectives, restarted running workloads and GB moved."""
    sol = solve_exact(inst, **options)  # type: ignore[arg-type]
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert sol.status is Status.OPTIMAL
    return report.objectives, report.metrics["restarted"], report.metrics["moved_memory_gb"]


@pytest.mark.parametrize("model", MODELS)
def test_every_model_proves_the_same_restarts(model: str) -> None:
    """moves.json: 4 running workloads restart in the default optimum (weights 1.5 + 2 + 1 + 1)."""
    objectives, restarted, moved = answer(load_instance(INSTANCES / "moves.json"), model=model)
    assert objectives == Objectives(6.0, 4.0, 4.0, 5.5)
    assert (restarted, moved) == (4, 20.0)


@pytest.mark.parametrize("model", MODELS)
@pytest.mark.parametrize(
    ("budget", "migrations", "restarted"), [(1, 0.0, 0), (2, 6.0, 2), (3, 6.0, 2), (4, 4.0, 4)]
)
def test_every_model_proves_the_optimum_within_the_budget(
    model: str, budget: int, migrations: float, restarted: int
) -> None:
    """moves.json: hardware 4 needs two restarts (Eq. 5: 6); four lower Eq. 5 to 4."""
    inst = load_instance(INSTANCES / "moves.json")
    objectives, got, _ = answer(inst, model=model, budget=Budget(max_restarts=budget))
    assert (objectives.hardware, objectives.migrations, got) == (
        4.0 if budget > 1 else 5.0,
        migrations,
        restarted,
    )


@pytest.mark.parametrize("model", ["grmu", "grmu-slots"])  # the paper form is too slow at 8 GPUs
@pytest.mark.parametrize(
    ("seed", "budget", "acceptance", "hardware", "restarted"),
    [
        (3, 0, 46.0, 9.0, 0),  # nothing moves: one workload less accepted
        (3, 1, 47.0, 9.0, 1),  # the unbudgeted optimum restarts one
        (2, 1, 46.0, 9.0, 0),  # one restart buys nothing: none
        (2, 2, 46.0, 8.0, 2),  # two free a GPU
    ],
)
def test_max_restarts_gives_the_optimum_within_the_budget(
    model: str, seed: int, budget: int, acceptance: float, hardware: float, restarted: int
) -> None:
    inst = ibm_instance(8, seed=seed)
    objectives, got, _ = answer(inst, model=model, budget=Budget(max_restarts=budget))
    assert (objectives.acceptance, objectives.hardware, got) == (acceptance, hardware, restarted)


@pytest.mark.parametrize("model", ["grmu", "grmu-slots"])
def test_max_moved_gb_holds(model: str) -> None:
    """ibm seed 2: the optimum moves 30 GB to free a GPU; 29 GB allow none of it."""
    inst = ibm_instance(8, seed=2)
    assert answer(inst, model=model)[2] == 30.0
    objectives, restarted, moved = answer(inst, model=model, budget=Budget(max_moved_gb=29))
    assert (objectives.hardware, restarted, moved) == (9.0, 0, 0.0)


def test_the_budget_reaches_solve_and_the_cli(capsys: pytest.CaptureFixture[str]) -> None:
    inst = ibm_instance(8, seed=2)
    sol = mipopt.solve(inst, max_restarts=1)
    assert sol.metrics["restarted"] == 0 and "at most 1 restarts" in sol.method
    from mipopt.cli import main

    assert main(["solve", "instances/moves.json", "--max-restarts", "0"]) == 0
    assert "objectives: acceptance 6, hardware 5, migrations 0, restarts 0" in capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        main(["solve", "instances/moves.json", "--max-restarts", "-1"])
    assert info.value.code == 2
    assert "--max-restarts: must be non-negative, got -1" in capsys.readouterr().err


def test_priority_disruption_keeps_running_workloads_home() -> None:
    """moves.json: the default frees a GPU by restarting four; disruption first keeps them home."""
    inst = load_instance(INSTANCES / "moves.json")
    objectives, restarted, _ = answer(inst, objective="disruption")
    assert objectives == Objectives(6.0, 5.0, 0.0, 0.0) and restarted == 0
    assert PRIORITIES["disruption"] == "lex:acceptance,restarts,hardware"
    assert answer(inst, objective="paper")[0].restarts == 5.5  # Eq. 5 alone: restarts not minimized


def test_keep_running_puts_swapped_contents_back() -> None:
    """Two GPUs' contents exchanged wholesale: the assignment gives each its own back."""
    inst = load_instance(INSTANCES / "fbk_fig3.json")
    home = inst.current_placement()
    swap = {"g1": "g3", "g3": "g1"}
    moved = {w: (swap.get(g, g), s) for w, (g, s) in home.items()}
    assert evaluate(inst, moved)[1]["restarted"] > 0
    kept = keep_running(inst, moved, frozenset())
    assert kept == home


def test_summary_warns_of_many_restarts() -> None:
    inst = load_instance(INSTANCES / "moves.json")
    target = mipopt.load_solution(INSTANCES / "moves.target.json")
    warning = restart_warning(inst, target)
    assert warning is not None and warning.startswith("warning: 3 of 5 running workloads restart")
    assert "--max-restarts N" in warning and "--priority disruption" in warning
    assert restart_warning(inst, mipopt.solve(inst, "ff")) is None
    # within a budget the user gave, the warning says so rather than suggest one
    held = mipopt.solve(inst, max_restarts=4)
    assert restart_warning(inst, held) == (
        "warning: 4 of 5 running workloads restart (more than 10 %); within the budget of 4, "
        "--priority disruption keeps them home unless a new workload needs the room"
    )


def one_gpu_two_stayers() -> mipopt.Instance:
    """An A100-80GB running ``light`` (1g.10gb, delta 1) on slot 0 and ``heavy`` (delta 2) on
    slot 4; the new 3g.40gb may start only at 0 or 4, so one of them must change start."""
    b = mipopt.InstanceBuilder("two-stayers")
    b.add_host("h0", {"g0": "A100-80GB"})
    b.add_workload("light", "1g.10gb", placement=("g0", 0), migration_weight=1.0)
    b.add_workload("heavy", "1g.10gb", placement=("g0", 4), migration_weight=2.0)
    b.add_workload("new", "3g.40gb")
    return b.build()


def test_the_keep_model_keeps_the_heavier_stayer_on_its_start() -> None:
    """Only ``light`` restarts (on its GPU): restarts 1, proven by the keep model, as the slot
    model proves it; the decoded placement keeps ``heavy`` on slot 4."""
    inst = one_gpu_two_stayers()
    for model in ("grmu", "grmu-slots"):
        sol = solve_exact(inst, model=model)
        report = verify(inst, sol)
        assert report.valid, report.violations
        assert report.objectives == Objectives(3.0, 2.0, 0.0, 1.0)
        assert report.metrics["restarted"] == 1
        assert (sol.placed()["heavy"], sol.placed()["new"]) == (("g0", 4), ("g0", 0))
    stages = {st.objective: st.model for st in solve_exact(inst).stages}
    assert stages["restarts"] == "keep"


def test_the_keep_model_counts_kept_stayers_exactly() -> None:
    """The keep variant offers, per GPU, a configuration for each set of stayers kept on their
    starts that a larger set does not beat; its restarts are those of the stayers left out."""
    from mipopt.exact.models.config import build_config

    built = build_config(one_gpu_two_stayers(), mode="keep")
    (unit,) = (u for u in built.units if u.kept)
    options = {(kept, cost) for kept, cost in zip(unit.kept, unit.costs, strict=True)}
    # positions in unit.stayers: 0 = light (slot 0), 1 = heavy (slot 4)
    assert unit.stayers == ((0, 0, 1.0), (0, 4, 2.0))
    assert (frozenset({0, 1}), (0.0, 0)) in options
    assert (frozenset({1}), (1.0, 1)) in options  # heavy kept: the 3g.40gb goes to 0-3
    assert (frozenset({0}), (2.0, 1)) in options  # light kept: the 3g.40gb goes to 4-7
    assert all(kept for kept, _ in options)  # keeping neither never offers more


def restarts_proven_on(inst: mipopt.Instance, variant: str) -> tuple[float, float | None]:
    """Migrations and restarts of the configuration model's verified optimum, whose restarts
    stage ran on ``variant`` and equals the slot model's optimum."""
    found = {}
    for model in ("grmu", "grmu-slots"):
        sol = solve_exact(inst, model=model)
        report = verify(inst, sol)
        assert report.valid and sol.status is Status.OPTIMAL
        found[model] = report.objectives
        if model == "grmu":
            assert {st.objective: st.model for st in sol.stages}["restarts"] == variant
    assert found["grmu"] == found["grmu-slots"]
    return found["grmu"].migrations, found["grmu"].restarts


@pytest.mark.parametrize(("gpus", "seed", "restarts"), [(16, 1, 1.0), (24, 1, 3.0), (32, 1, 2.0)])
def test_restarts_proven_by_the_keep_model_equal_the_slot_models(
    gpus: int, seed: int, restarts: float
) -> None:
    """IBM snapshots at load 0.7 whose optimum migrates nothing but restarts some running
    workloads on their GPUs: the keep model proves the restarts stage, with the slot
    model's optimum."""
    inst = ibm_instance(gpus, seed=seed, load=0.7)
    assert restarts_proven_on(inst, "keep") == (0.0, restarts)


def test_the_keep_model_repairs_an_answer_stopped_at_a_gap(monkeypatch: pytest.MonkeyPatch) -> None:
    """IBM 80 GPUs at load 0.7, seed 1, no warm start on the home model: stages stopped at a
    50 % gap leave the aggregated model's answer; the keep model brings its restarts down at
    the acceptance and hardware it reached (to 12 by migration weight, 7 running workloads,
    none off its GPU)."""
    import mipopt.exact.driver as driver
    from mipopt.solvers import SolverOptions

    monkeypatch.setattr(driver._Run, "home_start", lambda *_: None)

    inst = ibm_instance(80, seed=1, load=0.7)
    sol = solve_exact(inst, options=SolverOptions(mip_rel_gap=0.5), objective="lex:acceptance,hardware")
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert sol.status is Status.FEASIBLE
    assert (report.objectives.acceptance, report.objectives.hardware) == (492.0, 85.0)
    assert (report.objectives.migrations, report.objectives.restarts, report.metrics["restarted"]) == (
        0.0,
        12.0,
        7,
    )
    assert "restarts brought down by the keep model" in sol.message


def test_the_keep_start_seeds_the_stages(monkeypatch: pytest.MonkeyPatch) -> None:
    """With the warm start on the keep model (large instances; forced here at 16 GPUs) the
    stages prove the same optimum, and the first event is the keep model's acceptance."""
    import mipopt.exact.driver as driver

    inst = ibm_instance(16, seed=1, load=0.7)
    plain = verify(inst, solve_exact(inst)).objectives
    monkeypatch.setattr(driver, "KEEP_START_MIN_RUNNING", 0)
    events = []
    sol = solve_exact(inst, progress=events.append)
    report = verify(inst, sol)
    assert report.valid and sol.status is Status.OPTIMAL
    assert report.objectives == plain == Objectives(100.0, 18.0, 0.0, 1.0)
    assert (events[0].stage, events[0].model) == ("acceptance", "keep")


@pytest.mark.parametrize(
    ("gpus", "seed", "migrations", "restarts"),
    [(6, 0, 8.0, 2.0), (6, 3, 5.6, 1.4), (8, 2, 4.0, 1.0)],
)
def test_restarts_where_running_workloads_must_move_are_proven_by_the_kept_model(
    gpus: int, seed: int, migrations: float, restarts: float
) -> None:
    """Hard-class instances whose optimum migrates: the restarts stage runs on the kept variant
    (named GPUs choose the running workloads they keep on their own starts) and proves the slot
    model's optimum, with no hand-off to it."""
    inst = hard_instance(gpus, seed=seed)
    assert restarts_proven_on(inst, "kept") == (migrations, restarts)


def test_the_kept_model_offers_every_kept_set_with_its_restarts() -> None:
    """One GPU with a 1g.10gb at 0 and a 3g.40gb at 4 (A100-80GB): the kept variant lists the
    configurations around every kept set, the empty one too (a stayer may leave), each with the
    restarts of the stayers it does not keep; the keep variant drops a set a larger one covers."""
    b = InstanceBuilder("one")
    b.add_host("h", {"g": "A100-80GB"})
    b.add_workload("a", "1g.10gb", migration_weight=2.0, placement=("g", 0))
    b.add_workload("b", "3g.40gb", migration_weight=1.0, placement=("g", 4))
    b.add_workload("n", "7g.80gb")
    inst = b.build()
    kept = build_config(inst, mode="kept")
    (unit,) = [u for u in kept.units if u.named]
    options = set(zip(unit.kept, unit.costs, strict=True))
    assert {k for k, _ in options} == {frozenset(), frozenset({0}), frozenset({1}), frozenset({0, 1})}
    assert (frozenset(), (3.0, 2)) in options  # the 7g.80gb's configuration: both restart
    seven = unit.model.profiles.index(unit.model.find("7g.80gb"))
    assert any(cfg[seven] for cfg, keep in zip(unit.configs, unit.kept, strict=True) if not keep)
    keep = build_config(inst, mode="keep")
    assert len(keep.units[0].configs) < len(unit.configs)


def test_the_aggregated_decoding_gives_a_gpu_the_configuration_that_keeps_its_starts() -> None:
    """A 1g.10gb running at slot 0 of an A100-80GB: a configuration with a 4g.40gb (start 0 only)
    cannot keep it there, one with a 3g.40gb (at 4) can; the aggregated decoding scores
    configurations so, where it used to count profile room only."""
    b = InstanceBuilder("one")
    b.add_host("h", {"g": "A100-80GB"})
    b.add_workload("a", "1g.10gb", migration_weight=2.0, placement=("g", 0))
    b.add_workload("n", "4g.40gb")
    b.add_workload("m", "3g.40gb")
    inst = b.build()
    built = build_config(inst, mode="aggregate")
    model = inst.gpu("g").model

    def vector(*names: str) -> tuple[int, ...]:
        return tuple(sum(1 for n in names if model.find(n) is p) for p in model.profiles)

    assert built._keeps(model, "g", vector("4g.40gb", "1g.10gb"))[0] == 0.0
    assert built._keeps(model, "g", vector("3g.40gb", "1g.10gb")) == (2.0, frozenset({0}))
    placed = verify(inst, solve_exact(inst)).objectives
    assert (placed.acceptance, placed.restarts) == (2.0, 0.0)  # m at 4 beside a at 0, n left out
