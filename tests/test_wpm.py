"""IBM's WPM: the four use cases on both backends, indexed and verified."""

from __future__ import annotations

from pathlib import Path

import pytest

from mipopt.errors import InstanceError
from mipopt.exact import solve_exact
from mipopt.formulations.wpm import build_wpm
from mipopt.instance import Instance, InstanceBuilder, Termination
from mipopt.io import load_instance
from mipopt.solvers import SolverOptions
from mipopt.verify import verify
from mipopt.workloads.ibm import ibm_instance
from mipopt.wpm import solve_wpm

INSTANCES = Path(__file__).resolve().parents[1] / "instances"

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
    with pytest.raises(InstanceError, match=r"--use-case: unknown use case 'shuffle'"):
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
    sol = solve_wpm(inst, use_case="compaction")
    report = verify(inst, sol)
    assert report.valid
    assert report.metrics["active_gpus"] == 1
    assert report.metrics["moved_memory_slots"] == 1  # one 1g.10gb moved
    assert {w: g for w, (g, _) in sol.placed().items()} == {"a": "g0", "b": "g0", "c": "g0"}
