"""IBM's WPM: the four use cases on both backends, indexed and verified."""

from __future__ import annotations

from pathlib import Path

import pyomo.environ as pyo
import pytest
from factories import INSTANCES

from mipopt.errors import InstanceError
from mipopt.exact.driver import solve_exact
from mipopt.exact.wpm.model import WpmModel, build_wpm
from mipopt.exact.wpm.solve import STARTS, best_start, solve_wpm
from mipopt.heuristics import ibm_rules
from mipopt.instance import Instance, InstanceBuilder, Termination
from mipopt.io import load_instance
from mipopt.solvers import SolverOptions, get_backend
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance

# (acceptance, hardware, migrations) per use case, checked against the GRMU optimum where they meet:
# fbk_fig3 joint equals the GRMU lexicographic optimum (8, 3, 4); initial keeps every running
# workload (hardware 4); compaction and reconfiguration leave the new workload out (7 of 8).
EXPECTED = {
    ("fbk_fig3", "initial"): (8, 4, 0),
    ("fbk_fig3", "compaction"): (7, 3, 4),
    ("fbk_fig3", "reconfiguration"): (7, 3, 4),
    ("fbk_fig3", "joint"): (8, 3, 4),
    ("ibm_fig7", "initial"): (5, 2, 0),
    ("ibm_fig7", "joint"): (5, 2, 0),
}


def _case(name: str) -> Instance:
    return load_instance(INSTANCES / f"{name}.json")


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize(("name", "use_case"), sorted(EXPECTED))
def test_use_cases_reach_the_expected_objectives(name: str, use_case: str, solver: str) -> None:
    inst = _case(name)
    sol = solve_wpm(inst, use_case=use_case, solver=solver)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert sol.termination is Termination.OPTIMAL
    o = report.objectives
    assert (o.acceptance, o.hardware, o.migrations) == EXPECTED[name, use_case]


@pytest.mark.parametrize("model", ["wpm", "grmu"])
@pytest.mark.parametrize("use_case", ["initial", "compaction", "reconfiguration", "joint"])
def test_use_case_rules_on_a_generated_cluster(use_case: str, model: str) -> None:
    inst = ibm_instance(8, seed=0)
    options = SolverOptions(time_limit_s=30)
    if model == "wpm":
        sol = solve_wpm(inst, use_case=use_case, options=options)
    else:
        sol = solve_exact(inst, use_case=use_case, options=options)
    assert verify(inst, sol).valid
    placed, home = sol.placed(), inst.current_placement()
    assert all(w in placed for w in home)  # running workloads stay placed
    if use_case == "initial":
        assert all(placed[w] == at for w, at in home.items())
    if use_case in ("compaction", "reconfiguration"):
        assert not any(w.id in placed for w in inst.new)
    if use_case == "compaction":  # no free GPU is opened
        busy = {g for g, _ in home.values()}
        assert {g for g, _ in placed.values()} <= busy


def test_new_workloads_are_counted_per_class() -> None:
    inst = ibm_instance(8, seed=0)
    built = build_wpm(inst, "initial")
    assert len(built.classes) <= 7 < len(inst.new)  # at most one class per A100-80GB profile
    assert {w for members in built.classes.values() for w in members} == {w.id for w in inst.new}


def test_unknown_use_case() -> None:
    with pytest.raises(InstanceError, match=r"use_case: unknown use case 'shuffle'"):
        build_wpm(_case("fbk_fig3"), "shuffle")


def test_cli_solves_a_use_case_and_refuses_it_for_the_paper_form(tmp_path: Path) -> None:
    from mipopt.cli import main

    out = tmp_path / "sol.json"
    path = str(INSTANCES / "fbk_fig3.json")
    assert main(["solve", path, "--model", "wpm", "--use-case", "compaction", "--out", str(out)]) == 0
    assert main(["verify", path, str(out)]) == 0
    assert main(["solve", path, "--model", "grmu-paper", "--use-case", "initial"]) == 2


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize(("name", "use_case"), sorted(EXPECTED))
def test_grmu_answers_the_same_questions(name: str, use_case: str, solver: str) -> None:
    """The tight GRMU model on WPM's use cases: lexicographic optima, verified.

    On these instances they equal WPM's, whose weights put placing before GPUs before
    migrations, the same order as the lexicographic default.
    """
    inst = _case(name)
    sol = solve_exact(inst, solver=solver, use_case=use_case)
    report = verify(inst, sol)
    assert report.valid, report.violations
    o = report.objectives
    assert (o.acceptance, o.hardware, o.migrations) == EXPECTED[name, use_case]
    if use_case in ("compaction", "reconfiguration"):
        assert not any(w.id in sol.placed() for w in inst.new)


def test_a_class_of_media_workloads_takes_one_media_set_per_gpu() -> None:
    # Three identical 1g.10gb+me requests are one class: its count on one GPU must stay
    # within the GPU's single +me set in the model, not be caught by the indexing step.
    b = InstanceBuilder("media")
    b.add_host("h", gpus={"g0": "A100-80GB"})
    for i in range(3):
        b.add_workload(f"n{i}", "1g.10gb+me")
    inst = b.build()
    sol = solve_wpm(inst, use_case="initial")
    assert verify(inst, sol).valid
    assert sol.termination is Termination.OPTIMAL
    assert len(sol.placed()) == 1
    assert "re-solve" not in sol.message and "indexing" not in sol.message


def test_running_workloads_are_counted_per_gpu_class() -> None:
    # Two 1g.10gb on g0 form one class, the one on g1 another; compaction moves g1's onto g0.
    b = InstanceBuilder("running-classes")
    b.add_host("h", gpus={"g0": "A100-80GB", "g1": "A100-80GB"})
    b.add_workload("a", "1g.10gb", placement=("g0", 0))
    b.add_workload("b", "1g.10gb", placement=("g0", 1))
    b.add_workload("c", "1g.10gb", placement=("g1", 6))
    inst = b.build()
    built = build_wpm(inst, "compaction")
    assert built.classes == {"a": ("a", "b"), "c": ("c",)}
    assert built.movable == ["a", "c"]
    assert built.kinds == {"a": ("a", "c")}  # one shape: arrivals are counted together
    sol = solve_wpm(inst, use_case="compaction")
    report = verify(inst, sol)
    assert report.valid
    assert report.metrics["active_gpus"] == 1
    assert report.metrics["moved_memory_slots"] == 1  # one 1g.10gb moved
    assert {w: g for w, (g, _) in sol.placed().items()} == {"a": "g0", "b": "g0", "c": "g0"}


# Eq. 2a's optimal profit per (instance, use case), measured with the model as it was before
# workloads were counted per kind, the linking rows tightened, host rows rounded and warm starts
# added (commit 2ee57ec, one x per class and bin). The changes must keep every value.
PROFIT = {
    ("fbk_fig3", "initial"): 700.0,
    ("fbk_fig3", "compaction"): -220.0,
    ("fbk_fig3", "reconfiguration"): -220.0,
    ("fbk_fig3", "joint"): 780.0,
    ("ibm_fig7", "initial"): 1900.0,
    ("ibm_fig7", "compaction"): -100.0,
    ("ibm_fig7", "reconfiguration"): -100.0,
    ("ibm_fig7", "joint"): 1900.0,
    ("ibm4-s0", "initial"): 16600.0,
    ("ibm4-s0", "compaction"): -120.0,
    ("ibm4-s0", "reconfiguration"): -120.0,
    ("ibm4-s0", "joint"): 16699.0,
    ("ibm4-s1", "initial"): 13600.0,
    ("ibm4-s1", "compaction"): -200.0,
    ("ibm4-s1", "reconfiguration"): -200.0,
    ("ibm4-s1", "joint"): 13600.0,
    ("ibm8-s0", "initial"): 26200.0,
    ("ibm8-s0", "compaction"): -410.0,
    ("ibm8-s0", "reconfiguration"): -410.0,
    ("ibm8-s0", "joint"): 26200.0,
    ("ibm8-s1", "initial"): 30200.0,
    ("ibm8-s1", "compaction"): -350.1,
    ("ibm8-s1", "reconfiguration"): -350.1,
    ("ibm8-s1", "joint"): 30200.0,
    ("ibm8-s2", "initial"): 22200.0,
    ("ibm8-s2", "compaction"): -440.2,
    ("ibm8-s2", "reconfiguration"): -440.2,
    ("ibm8-s2", "joint"): 22268.9,
    ("pinned", "initial"): 27200.0,
    ("pinned", "compaction"): -460.0,
    ("pinned", "reconfiguration"): -460.0,
    ("pinned", "joint"): 27200.0,
    ("h100", "initial"): 17500.0,
    ("h100", "compaction"): -240.0,
    ("h100", "reconfiguration"): -240.0,
    ("h100", "joint"): 24389.0,
}


def _profit_case(name: str, use_case: str) -> Instance:
    """The instances of :data:`PROFIT`; generated ones get new workloads for initial and joint only."""
    load = 0.6 if use_case in ("initial", "joint") else 0.0
    if name == "pinned":  # a third of the running workloads may not move
        return ibm_instance(8, seed=3, load=load, pinned_fraction=0.3)
    if name == "h100":  # hosts of two H100s
        return ibm_instance(6, seed=4, load=load, model="H100-80GB", gpus_per_host=2)
    if name.startswith("ibm") and "-s" in name:
        gpus, seed = name.removeprefix("ibm").split("-s")
        return ibm_instance(int(gpus), seed=int(seed), load=load)
    return _case(name)


@pytest.mark.parametrize("tight", [True, False])
@pytest.mark.parametrize(("name", "use_case"), sorted(PROFIT))
def test_the_optimal_profit_is_kept(name: str, use_case: str, tight: bool) -> None:
    built = build_wpm(_profit_case(name, use_case), use_case, tight=tight)
    result = get_backend("highs").solve(built.model, SolverOptions(mip_rel_gap=0.0))
    assert result.termination is Termination.OPTIMAL
    assert result.objective == pytest.approx(PROFIT[name, use_case], abs=1e-6)


@pytest.mark.parametrize(("name", "use_case"), sorted(PROFIT))
def test_solve_wpm_proves_the_optimum_from_its_start(name: str, use_case: str) -> None:
    inst = _profit_case(name, use_case)
    sol = solve_wpm(inst, use_case=use_case, warm_start=True, heuristics=HEURISTICS)
    assert verify(inst, sol).valid
    assert sol.termination is Termination.OPTIMAL
    assert sol.bound == pytest.approx(PROFIT[name, use_case], abs=1e-6)
    assert sol.message.startswith("start ")  # some fast placement had an image in the model


def _violations(built: WpmModel, start: dict[str, float]) -> list[str]:
    """Rows and bounds ``start`` breaks (variables it leaves out are 0, as the backends read it)."""
    m = built.model
    for v in m.component_data_objects(pyo.Var):
        if not v.fixed:
            v.set_value(start.get(v.name, 0.0), skip_validation=True)
    bad = [v.name for v in m.component_data_objects(pyo.Var) if not v.lb - 1e-9 <= v.value <= v.ub + 1e-9]
    for c in m.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(c.body)
        if (c.lower is not None and body < pyo.value(c.lower) - 1e-6) or (
            c.upper is not None and body > pyo.value(c.upper) + 1e-6
        ):
            bad.append(c.name)
    return bad


HEURISTICS = {
    "ibm-initial": ibm_rules.ibm_initial,
    "ibm-compaction": ibm_rules.ibm_compaction,
    "ibm-reconfiguration": ibm_rules.ibm_reconfiguration,
    "ibm-joint": ibm_rules.ibm_joint,
}


@pytest.mark.parametrize(("name", "use_case"), sorted(PROFIT))
def test_warm_starts_are_feasible_and_not_above_the_optimum(name: str, use_case: str) -> None:
    inst = _profit_case(name, use_case)
    built = build_wpm(inst, use_case)
    images = 0
    for start_name in STARTS[use_case]:
        placed = (
            inst.current_placement() if start_name == "current" else HEURISTICS[start_name](inst).placed()
        )
        start = built.warm_start(placed)
        if start is None:
            continue
        images += 1
        assert _violations(built, start) == [], start_name
        assert pyo.value(built.model.profit) <= PROFIT[name, use_case] + 1e-6
    assert images
    name_, best, profit = best_start(built, HEURISTICS)
    assert best is not None and name_ in STARTS[use_case]
    assert profit <= PROFIT[name, use_case] + 1e-6


def test_a_start_is_refused_when_a_running_workload_has_no_image() -> None:
    # compaction opens no free GPU: a placement that moves a workload onto one has no image
    inst = ibm_instance(8, seed=0, load=0.0)
    built = build_wpm(inst, "compaction")
    free = next(g.id for g in inst.gpus if g.id not in {gpu for gpu, _ in inst.current_placement().values()})
    w = inst.running[0]
    placed = inst.current_placement() | {w.id: (free, 0)}
    assert built.warm_start(placed) is None
    del placed[w.id]  # a running workload must stay placed
    assert built.warm_start(placed) is None
    assert built.warm_start(inst.current_placement()) is not None


def test_host_rows_are_rounded_to_the_demands_gcd() -> None:
    # ibm_instance hosts get 90 % of their GPUs' packed demand: 202 cpu for 8 A100s at 4 cpu per
    # compute slice. Integer counts of demands that are multiples of 4 can use 200 at most.
    inst = ibm_instance(8, seed=0, load=0.6)
    built = build_wpm(inst, "joint")
    assert inst.hosts[0].cpu == 202
    rows = list(built.model.host_cpu.values())
    assert rows and all(pyo.value(c.upper) % 4 == 0 for c in rows)
    loose = build_wpm(inst, "joint", tight=False)
    assert any(pyo.value(c.upper) % 4 for c in loose.model.host_cpu.values())


def _lp_bound(built: WpmModel) -> float:
    """The LP relaxation's optimum of a built model."""
    m = built.model.clone()
    for v in m.component_data_objects(pyo.Var):
        v.domain = pyo.UnitInterval if v.domain is pyo.Binary else pyo.NonNegativeReals
    result = get_backend("highs").solve(m, SolverOptions())
    assert result.objective is not None
    return result.objective


def test_a_host_that_holds_more_than_one_gpu_of_slices_needs_two_gpus_in_the_lp() -> None:
    # 40 cpu at 4 cpu per compute slice: the host holds 10 slices, more than one A100 (7).
    # All three workloads fit (two GPUs, 2,800 = 3 x 1,000 - 2 x 100); by volume the LP would
    # turn on 10/7 GPUs, the host_gpus row (slices <= 7 + 3 (on - 1)) asks for two.
    b = InstanceBuilder("host-gpus")
    b.add_host("h", gpus={"g0": "A100-80GB", "g1": "A100-80GB"}, cpu=40)
    for i, profile in enumerate(("4g.40gb", "4g.40gb", "2g.20gb")):
        b.add_workload(f"n{i}", profile, cpu=4 * (2 if profile == "2g.20gb" else 4))
    inst = b.build()
    tight, loose = build_wpm(inst, "initial"), build_wpm(inst, "initial", tight=False)
    assert (len(tight.model.host_gpus), len(loose.model.host_gpus)) == (1, 0)
    assert _lp_bound(tight) == pytest.approx(2800)
    assert _lp_bound(loose) > 2850
    sol = solve_wpm(inst, use_case="initial")
    assert sol.termination is Termination.OPTIMAL and sol.bound == pytest.approx(2800)
    assert len(sol.placed()) == 3
