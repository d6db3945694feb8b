"""The tight GRMU model on both backends: proven optima that the verifier accepts."""

from __future__ import annotations

import math
from pathlib import Path

import pytest
from factories import INSTANCES, instances
from hypothesis import HealthCheck, given, settings

from mipopt.errors import InstanceError
from mipopt.exact.driver import lattice_step, parse_objective, solve_exact
from mipopt.instance import Instance, Objectives, Status, Termination
from mipopt.io import load_instance
from mipopt.registry import solve
from mipopt.verifier import verify

FILES = sorted(p for p in INSTANCES.glob("*.json") if not p.name.endswith(".target.json"))

# Lexicographic optima (acceptance, hardware, migrations), checked by hand:
# grmu_fig2b: moving the two 1g instances inside g0 is free (Eq. 5), which frees 0-3 for
#   the 4g.20gb and leaves 4-7 for the 3g.20gb: 4 of 5 accepted, one host + one GPU.
# fbk_fig3: all 8 fit on two GPUs (g2 and g3 take g1's three instances); two inter-GPU
#   moves at 2 each, hardware = host + 2 GPUs.
OPTIMA = {
    "grmu_fig2b": (4, 2, 0),
    "fbk_fig3": (8, 3, 4),
    "quickstart": (8, 6, 0),
    "default_order": (7, 2, 0),
}


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_committed_instances_solve_to_verified_optimum(path: Path, solver: str) -> None:
    inst = load_instance(path)
    sol = solve_exact(inst, solver=solver)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert (sol.termination, sol.status) == (Termination.OPTIMAL, Status.OPTIMAL)
    ff = verify(inst, solve(inst, "ff")).objectives
    assert sol.objectives is not None
    assert sol.objectives.acceptance >= ff.acceptance  # lexicographic: acceptance first
    if path.stem in OPTIMA:
        o = sol.objectives
        assert (o.acceptance, o.hardware, o.migrations) == OPTIMA[path.stem]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_backends_agree_and_running_workloads_stay(inst) -> None:
    a = solve_exact(inst, solver="highs")
    b = solve_exact(inst, solver="cpsat")
    for sol in (a, b):
        report = verify(inst, sol)
        assert report.valid, report.violations
        placed = {p.workload: (p.gpu, p.start) for p in sol.placements}
        for w in inst.running:
            assert w.id in placed
            if w.pinned:
                assert placed[w.id] == (w.placement.gpu, w.placement.start)
    assert a.objectives == b.objectives


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_later_stages_keep_earlier_optima(inst) -> None:
    first = solve_exact(inst, objective="lex:acceptance")
    full = solve_exact(inst, objective="lex:acceptance,hardware,migrations")
    assert full.objectives.acceptance == pytest.approx(first.objectives.acceptance)
    hw_first = solve_exact(inst, objective="lex:hardware,acceptance")
    assert hw_first.objectives.hardware <= full.objectives.hardware + 1e-9


def test_weighted_prefers_saving_hardware_when_it_pays() -> None:
    inst = load_instance(INSTANCES / "fbk_fig3.json")
    # migrations priced above the GPU they save: keep everything where it is (4 GPUs' worth)
    stay = solve_exact(inst, objective="weighted:1,0.1,1")
    assert stay.objectives.migrations == 0 and stay.objectives.hardware == 4
    move = solve_exact(inst, objective="weighted:1,1,0.1")
    assert move.objectives.hardware == 3 and move.objectives.migrations == 4


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "lex:foo",
            "objective: unknown objective 'foo' (known: acceptance, hardware, migrations, restarts)",
        ),
        ("lex:acceptance,acceptance", "objective: 'acceptance' appears twice"),
        ("lex:acceptance@2", "objective: tolerance of acceptance must be in [0, 1), got 2"),
        ("weighted:1,x", "objective: weights must be numbers, got '1,x'"),
        (
            "max:acceptance",
            "objective: must start with lex: or weighted:, or be a priority (hardware, disruption, paper), "
            "got 'max:acceptance'",
        ),
        (
            "lex:acceptance,intra_moves",
            "objective: intra_moves is retired: restarts counts start changes on a GPU and moves to "
            "another GPU (lex:acceptance,hardware,migrations,restarts)",
        ),
        ("weighted:1,nan", "objective: the weight of hardware, 'nan', is not a number"),
        (
            "weighted:1,2,3,4,5",
            "objective: weighted: takes 1 to 4 non-negative weights (acceptance, hardware, migrations, "
            "restarts), got '1,2,3,4,5'",
        ),
    ],
)
def test_bad_objective_specs(text: str, message: str) -> None:
    with pytest.raises(InstanceError) as info:
        parse_objective(text)
    assert str(info.value) == message


def test_objective_spec_round_trips() -> None:
    assert str(parse_objective("lex:acceptance@0.05,hardware")) == "lex:acceptance@0.05,hardware"
    assert str(parse_objective("weighted:1,0.1,0.01")) == "weighted:1,0.1,0.01"


def test_cli_offers_every_registered_model() -> None:
    from mipopt.cli import build_parser
    from mipopt.exact.models import MODELS

    solve = build_parser()._subparsers._group_actions[0].choices["solve"]  # type: ignore[union-attr]
    (model,) = [a for a in solve._actions if a.dest == "model"]
    assert list(model.choices) == [*MODELS, "wpm"]  # WPM has its own driver (mipopt.exact.wpm.solve)


def test_stages_are_reported_in_their_own_units() -> None:
    """fbk_fig3: every workload is accepted by the warm start (a bound that needs no solve), hardware
    on the aggregated model, migrations on the detailed one after the restricted model fails, and
    restarts on the kept variant, which counts g1-a's start change for the new 3g.40gb beside it
    (the detailed one, counting leavers only, would have bound 2 and placed 3)."""
    inst = load_instance(INSTANCES / "fbk_fig3.json")
    sol = solve(inst)  # the exact method: with its portfolio
    got = [(st.objective, st.value, st.bound, st.proven, st.model) for st in sol.stages]
    assert got == [
        ("acceptance", 8.0, 8.0, True, "incumbent"),
        ("hardware", 3.0, 3.0, True, "aggregate"),
        ("migrations", 4.0, 4.0, True, "detailed"),
        ("restarts", 2.0, 2.0, True, "kept"),
    ]
    assert (sol.bound, sol.gap) == (2.0, 0.0)  # the last stage's, in restarts
    assert "the slot model decides" not in sol.message
    assert verify(inst, sol).valid and sol.objectives is not None and sol.objectives.restarts == 2.0
    # a tolerance on acceptance is kept as one
    loose = solve_exact(inst, objective="lex:acceptance@0.1,hardware")
    assert [(st.objective, st.value) for st in loose.stages] == [("acceptance", 8.0), ("hardware", 3.0)]


def test_a_tolerance_lets_the_next_stage_trade_the_kept_objective() -> None:
    """quickstart: with acceptance kept within 20 % of its optimum 8, hardware 5 is reached by
    accepting 7; the answer the hardware stage decodes is taken though its acceptance is lower
    (it was refused as worse, and the stage ended with termination error)."""
    inst = load_instance(INSTANCES / "quickstart.json")
    sol = solve_exact(inst, objective="lex:acceptance@0.2,hardware")
    assert (sol.status, sol.termination) == (Status.OPTIMAL, Termination.OPTIMAL)
    assert [(st.objective, st.value, st.proven) for st in sol.stages] == [
        ("acceptance", 8.0, True),
        ("hardware", 5.0, True),
    ]
    report = verify(inst, sol)
    assert report.valid and (report.objectives.acceptance, report.objectives.hardware) == (7.0, 5.0)


def _start_changes(inst: Instance, placed: dict[str, tuple[str, int]]) -> list[str]:
    return [
        w.id
        for w in inst.running
        if w.placement is not None
        and placed[w.id][0] == w.placement.gpu
        and placed[w.id][1] != w.placement.start
    ]


@pytest.mark.parametrize("model", ["grmu", "grmu-slots", "grmu-paper"])
def test_no_pointless_start_changes(model: str) -> None:
    """The GRMU objectives price no start change; the default's last stage, restarts, does: no
    model moves a running workload to another start of its own GPU on fbk_fig3, and every model
    reaches the same four optima."""
    inst = load_instance(INSTANCES / "fbk_fig3.json")
    sol = solve_exact(inst, model=model)
    assert _start_changes(inst, sol.placed()) == []
    assert sol.status is Status.OPTIMAL and verify(inst, sol).valid
    assert sol.objectives == Objectives(8.0, 3.0, 4.0, 2.0)


@pytest.mark.parametrize(
    ("values", "step"),
    [((2, 4, 6), 2.0), ((0.5, 1, 1.5), 0.5), ((1 / 3, 2 / 3), 1 / 3), ((0, 0), None), ((math.pi,), None)],
)
def test_lattice_step(values: tuple[float, ...], step: float | None) -> None:
    assert lattice_step(values) == (pytest.approx(step) if step is not None else None)


def test_time_limited_solve_returns_its_best_placement_and_says_so() -> None:
    from mipopt.workloads.ibm import ibm_instance

    inst = ibm_instance(400, seed=1)
    sol = solve(inst, time_limit_s=3)  # the exact method: with its portfolio
    assert (sol.termination, sol.status) == (Termination.TIME_LIMIT, Status.FEASIBLE)
    report = verify(inst, sol)
    assert report.valid
    assert "not optimized: " in sol.message
    # never worse than the first heuristic of the warm start, in the objective's order
    start = verify(inst, solve(inst, "ff")).objectives
    got = report.objectives
    assert (-got.acceptance, got.hardware, got.migrations) <= (
        -start.acceptance,
        start.hardware,
        start.migrations,
    )


def test_cli_solves_with_every_heuristic_of_the_registry(capsys: pytest.CaptureFixture[str]) -> None:
    import json

    from mipopt.cli import main
    from mipopt.instance import solution_from_dict
    from mipopt.registry import methods as registered

    path = INSTANCES / "fbk_fig3.json"
    inst = load_instance(path)
    methods = [m.name for m in registered() if m.kind == "heuristic"] + ["adapter(mfi)"]
    assert len(methods) == 5 + 15 + 1  # IBM batch rules, online policies (reopt, binpack, spread among them), adapter
    for method in methods:
        capsys.readouterr()
        assert main(["solve", str(path), "--method", method, "--json"]) == 0, method
        sol = solution_from_dict(json.loads(capsys.readouterr().out))
        assert verify(inst, sol).valid, method
    assert main(["solve", str(path), "--method", "best-guess"]) == 2
    assert "--method: unknown method 'best-guess' (known: exact, " in capsys.readouterr().err
