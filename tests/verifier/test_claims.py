"""The verifier checks what a solution claims (mipopt.verifier.claims): each lie a named violation.

Every case takes a real answer of mipopt on a committed instance, falsifies one claim and asserts
the rule and the line that name it; the answers untouched verify, and so do mipopt's own answers
on generated instances (a property).
"""

from __future__ import annotations

import json
from dataclasses import replace
from functools import cache
from pathlib import Path

import pytest
from factories import INSTANCES, instances
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mipopt
from mipopt.cli import main
from mipopt.instance import Instance, Solution, Status, Termination
from mipopt.instance.gaps import relative_gap
from mipopt.instance.types import Rejection
from mipopt.verifier import CLAIM_RULES, evaluate, verify
from mipopt.workloads import ibm_instance


@cache
def load(name: str) -> Instance:
    return mipopt.load_instance(INSTANCES / f"{name}.json")


@cache
def solved(name: str, **options: str) -> Solution:
    return mipopt.solve(load(name), **options)  # type: ignore[arg-type]


def quickstart() -> tuple[Instance, Solution]:
    """quickstart's proven optimum: 7 placed, llm-f rejected (no-room), four stages proven."""
    return load("quickstart"), solved("quickstart")


def claims(inst: Instance, sol: Solution) -> list[tuple[str, str]]:
    """Each broken claim's rule and line; the lines are also the report's violations."""
    report = verify(inst, sol)
    assert list(report.violations) == [c.message() for c in report.claims]
    assert all(c.rule in CLAIM_RULES for c in report.claims)
    return [(c.rule, c.message()) for c in report.claims]


def stage(sol: Solution, i: int, **changes: object) -> Solution:
    """``sol`` with stage ``i`` changed."""
    stages = list(sol.stages)
    stages[i] = replace(stages[i], **changes)  # type: ignore[arg-type]
    return replace(sol, stages=tuple(stages))


def left_out(inst: Instance, sol: Solution, *wids: str) -> Solution:
    """``sol`` without ``wids`` placed, every number recomputed to match (objectives, metrics,
    each stage's value and bound): the one lie left is the optimum it still claims."""
    placed = {w: at for w, at in sol.placed().items() if w not in wids}
    objectives, metrics = evaluate(inst, placed)
    values = objectives.to_dict()
    stages = tuple(replace(st, value=values[st.objective], bound=values[st.objective]) for st in sol.stages)
    return replace(
        sol,
        placements=tuple(a for a in sol.placements if a.workload not in wids),
        rejected=(*sol.rejected, *wids),
        objectives=objectives,
        metrics=metrics,
        stages=stages,
        bound=stages[-1].bound,
    )


# --- mipopt's own answers hold every claim


@pytest.mark.parametrize(
    ("name", "options"),
    [
        ("quickstart", {}),
        ("quickstart", {"method": "ff"}),
        ("quickstart", {"objective": "lex:acceptance"}),
        ("grmu_fig2b", {}),
        ("grmu_fig2b", {"method": "exact-initial"}),
        ("media_and_limits", {"method": "mfi"}),
        ("host_capacity", {}),
        ("fbk_fig3", {"objective": "weighted:1,0.1,0.01,0.01"}),
        ("moves", {"objective": "weighted:1,0.1,0.01,0.01"}),
        ("moves", {"model": "wpm"}),
    ],
)
def test_untouched_answers_verify(name: str, options: dict[str, str]) -> None:
    assert claims(load(name), solved(name, **options)) == []


def test_a_weighted_optimum_is_the_answers_own() -> None:
    """A weighted objective with restarts runs on the kept variant, whose restarts are exact, and
    the stage's value is the answer's (moves.json: the detailed variant, counting leavers only,
    once claimed 5.54 proven for an answer of 5.505; the optimum is 5.52)."""
    sol = solved("moves", objective="weighted:1,0.1,0.01,0.01")
    (st,) = sol.stages
    assert (st.value, st.proven, st.model, sol.status) == (pytest.approx(5.52), True, "kept", Status.OPTIMAL)
    assert "the slot model decides" not in sol.message
    assert claims(load("moves"), sol) == []


def test_a_time_limited_answer_claims_its_own_values() -> None:
    """An unproven answer's restarts are brought down after its last stage (the driver's repair):
    the last stage's value is then the repaired answer's, not the one the stage found (IBM set-up,
    24 GPUs, seed 4: the weighted stage found 144.16, the repaired answer has 144.3)."""
    inst = ibm_instance(24, seed=4)
    sol = mipopt.solve(inst, objective="weighted:1,0.1,0.01,0.01", time_limit_s=2)
    assert claims(inst, sol) == []
    (st,) = sol.stages
    o = verify(inst, sol).objectives
    assert st.value == pytest.approx(
        o.acceptance - 0.1 * o.hardware - 0.01 * (o.migrations + (o.restarts or 0))
    )


# --- status, bound and gap


def test_optimal_with_a_gap() -> None:
    inst, sol = quickstart()
    assert claims(inst, replace(sol, gap=0.3)) == [
        ("status-gap", "gap: 0.3 with status 'optimal': a proven optimum has gap 0")
    ]


def test_optimal_with_a_gap_and_no_stages() -> None:
    inst, sol = quickstart()
    hand = replace(sol, stages=(), bound=10.0, gap=0.3)
    assert claims(inst, hand) == [
        ("status-gap", "gap: 0.3 with status 'optimal': a proven optimum has gap 0")
    ]
    # the same numbers of a feasible answer claim nothing the verifier can refute (no value named)
    assert claims(inst, replace(hand, status=Status.FEASIBLE, termination=Termination.TIME_LIMIT)) == []


def test_a_bound_below_a_maximum() -> None:
    inst, sol = load("quickstart"), solved("quickstart", objective="lex:acceptance")
    assert [st.objective for st in sol.stages] == ["acceptance"] and sol.bound == 8
    assert claims(inst, replace(sol, bound=7.0, gap=None)) == [
        (
            "bound-side",
            "bound: 7 is below the value 8 of acceptance (stages[0], maximized): a bound on a maximum "
            "is at least the value",
        )
    ]


def test_a_bound_above_a_minimum_and_an_optimum_it_does_not_prove() -> None:
    inst, sol = quickstart()  # the bound is the last stage's: restarts, 0
    assert claims(inst, replace(sol, bound=1.0, gap=None)) == [
        (
            "bound-side",
            "bound: 1 is above the value 0 of restarts (stages[3], minimized): a bound on a minimum is "
            "at most the value",
        )
    ]
    assert claims(inst, replace(sol, bound=-1.0, gap=None)) == [
        (
            "status-bound",
            "bound: -1 with status 'optimal', but the value of restarts (stages[3]) is 0: a proven "
            "optimum's bound equals its value",
        )
    ]


def test_bound_and_gap_are_the_reference_stages() -> None:
    inst, sol = load("quickstart"), solved("quickstart", objective="lex:acceptance")
    feasible = replace(sol, status=Status.FEASIBLE, termination=Termination.TIME_LIMIT)
    assert claims(inst, replace(feasible, bound=9.0, gap=relative_gap(8.0, 9.0))) == [
        ("bound-stage", "bound: says 9, the last stage, stages[0] (acceptance), has bound 8")
    ]
    assert claims(inst, replace(feasible, gap=0.5)) == [
        (
            "gap",
            "gap: says 0.5, the relative gap of the value 8 of acceptance (stages[0]) and the bound 8 is 0",
        )
    ]


def test_optimal_with_an_unproven_stage() -> None:
    inst, sol = quickstart()
    lie = stage(sol, 2, proven=False, termination=Termination.TIME_LIMIT)
    assert claims(inst, lie) == [
        ("status-stages", "status: 'optimal', but stages[2] (migrations) is not proven")
    ]


# --- stages


def test_a_stage_proven_with_a_gap() -> None:
    inst, sol = quickstart()
    lie = stage(sol, 1, bound=5.0, gap=relative_gap(6.0, 5.0))
    assert claims(inst, lie) == [
        ("stage-proven", "stages[1].proven: proven, but value 6 and bound 5 differ (gap 0.1666666667)")
    ]


def test_a_stage_proven_with_another_termination() -> None:
    inst, sol = quickstart()
    assert claims(inst, stage(sol, 0, termination=Termination.TIME_LIMIT)) == [
        ("stage-proven", "stages[0].proven: proven, but termination 'time_limit'")
    ]


def test_a_stage_gap_that_is_not_its_value_and_bound() -> None:
    inst, sol = quickstart()
    assert claims(inst, stage(sol, 1, gap=0.3)) == [
        ("stage-gap", "stages[1].gap: says 0.3, the relative gap of value 6 and bound 6 is 0")
    ]


def test_a_stage_bound_on_the_wrong_side() -> None:
    inst, sol = quickstart()
    lie = stage(
        sol, 1, bound=7.0, gap=relative_gap(6.0, 7.0), proven=False, termination=Termination.TIME_LIMIT
    )
    lie = replace(
        lie, status=Status.FEASIBLE, termination=Termination.TIME_LIMIT, bound=7.0, gap=lie.stages[1].gap
    )
    assert claims(inst, lie) == [
        (
            "bound-side",
            "bound: 7 is above the value 6 of hardware (stages[1], minimized): a bound on a minimum is at "
            "most the value",
        ),
        ("stage-bound", "stages[1].bound: 7 is above the value 6 of hardware (minimized)"),
    ]


def test_a_stage_value_off() -> None:
    inst, sol = quickstart()
    assert claims(inst, stage(sol, 1, value=5.0, bound=5.0)) == [
        (
            "stage-value",
            "stages[1].value: says 5, but the placements' hardware is 6, and later stages keep it "
            "(within its tolerance 0)",
        )
    ]
    assert claims(inst, stage(sol, 0, value=9.0, bound=9.0)) == [
        (
            "stage-value",
            "stages[0].value: says 9, but the placements' acceptance is 8, and later stages keep it "
            "(within its tolerance 0)",
        )
    ]
    last = replace(stage(sol, 3, value=1.0, bound=1.0), bound=1.0)
    assert claims(inst, last) == [
        (
            "stage-value",
            "stages[3].value: says 1, but the placements' restarts is 0: the last stage's value is the answer's",
        )
    ]


def test_an_earlier_stage_value_within_its_tolerance() -> None:
    """``lex:acceptance@0.2``: later stages may give up 20 % of acceptance, so 9 claimed for 8 holds;
    10 does not."""
    inst, sol = quickstart()
    tolerant = replace(sol, method="grmu / highs, lex:acceptance@0.2,hardware,migrations,restarts")
    assert claims(inst, stage(tolerant, 0, value=9.0, bound=9.0)) == []
    assert claims(inst, stage(tolerant, 0, value=10.5, bound=10.5)) == [
        (
            "stage-value",
            "stages[0].value: says 10.5, but the placements' acceptance is 8, and later stages keep it "
            "(within its tolerance 0.2)",
        )
    ]


def test_a_weighted_stage_value_off() -> None:
    inst, sol = load("fbk_fig3"), solved("fbk_fig3", objective="weighted:1,0.1,0.01,0.01")
    assert sol.method.endswith("weighted:1,0.1,0.01,0.01") and sol.stages[0].value == pytest.approx(7.64)
    lie = replace(stage(sol, 0, value=7.7, bound=7.7), bound=7.7)
    assert claims(inst, lie) == [
        (
            "stage-value",
            "stages[0].value: says 7.7, but the placements' weighted is 7.64: the last stage's value is the answer's",
        )
    ]


def test_a_stage_objective_mipopt_does_not_compute() -> None:
    inst, sol = quickstart()
    assert claims(inst, stage(sol, 2, objective="cc")) == [
        (
            "stage-objective",
            "stages[2].objective: 'cc' is not an objective mipopt computes (acceptance, hardware, "
            "migrations, restarts, weighted)",
        )
    ]


# --- an optimum that rejects a request that fits


def test_optimal_while_a_fitting_request_is_rejected() -> None:
    inst, sol = quickstart()
    lie = left_out(inst, sol, "infer-e")  # 1g.10gb at h1-g0:2, a GPU that stays in use
    fits = (
        "rejected 'infer-e' (weight 1) fits in the space left at h1-g0:2 on a GPU in use: acceptance 8 > 7, "
        "every other placement unchanged"
    )
    assert claims(inst, lie) == [
        ("stage-left-out", f"stages[0].proven: proven, but {fits}"),
        ("status-left-out", f"status: 'optimal', but {fits}"),
    ]


def test_a_fitting_request_left_out_where_acceptance_does_not_decide_first() -> None:
    """Hardware first: requests that need an idle GPU (batch-d and infer-g on h1-g1) may be left out;
    one that fits on a GPU in use may not. A tolerance on acceptance or a use case where new
    workloads wait claims nothing of them."""
    inst, sol = quickstart()
    hardware_first = replace(sol, method="grmu / highs, lex:hardware,acceptance")
    hardware_first = replace(hardware_first, stages=(sol.stages[1], sol.stages[0]))
    lie = left_out(inst, hardware_first, "batch-d", "infer-g")
    assert lie.objectives is not None and lie.objectives.hardware == 5
    assert claims(inst, lie) == []
    lie = left_out(inst, hardware_first, "infer-e")
    assert [rule for rule, _ in claims(inst, lie)] == ["stage-left-out", "status-left-out"]
    for method in (
        "grmu / highs, lex:acceptance@0.05,hardware,migrations,restarts",
        "grmu / highs, lex:acceptance,hardware,migrations,restarts, compaction",
        "grmu / highs, lex:acceptance,hardware,migrations,restarts, acceptance <= 7",
    ):
        assert claims(inst, left_out(inst, replace(sol, method=method), "infer-e")) == []


def test_a_bound_of_the_run_keeps_an_idle_gpu_off() -> None:
    """A Pareto sweep's epsilon bound (``hardware <= 5``, named in ``method``) keeps batch-d and
    infer-g, which need the idle h1-g1, out of the optimum; without it the optimum's claim is false."""
    inst, sol = quickstart()
    lie = left_out(inst, sol, "batch-d", "infer-g")
    assert lie.objectives is not None and lie.objectives.hardware == 5
    assert [rule for rule, _ in claims(inst, lie)] == ["stage-left-out", "status-left-out"]
    bounded = replace(lie, method=f"{sol.method}, hardware <= 5")
    assert claims(inst, bounded) == []


# --- rejection reasons


def with_reason(sol: Solution, workload: str, code: str) -> Solution:
    return replace(sol, rejections=(*sol.rejections, Rejection(workload, code, "claimed")))


def test_a_reason_for_a_placed_workload() -> None:
    inst, sol = quickstart()
    assert claims(inst, with_reason(sol, "batch-d", "not-chosen")) == [
        (
            "rejection-placed",
            "rejections[1].reason: 'not-chosen' for 'batch-d', which is placed (placements[3])",
        )
    ]


def test_a_reason_for_no_workload_or_twice() -> None:
    inst, sol = quickstart()
    assert claims(inst, with_reason(sol, "ghost", "no-room")) == [
        ("rejection-workload", "rejections[1].workload: 'ghost' is not a workload of the instance")
    ]
    assert claims(inst, with_reason(sol, "llm-f", "no-room")) == [
        ("rejection-workload", "rejections[1].workload: 'llm-f' has a reason already (rejections[0])")
    ]


def test_a_false_no_room() -> None:
    inst, sol = quickstart()
    lie = with_reason(
        left_out(inst, replace(sol, status=Status.FEASIBLE, termination=Termination.TIME_LIMIT), "infer-e"),
        "infer-e",
        "no-room",
    )
    lie = replace(
        lie, stages=tuple(replace(st, proven=False, termination=Termination.TIME_LIMIT) for st in lie.stages)
    )
    lie = replace(lie, bound=lie.stages[0].bound, gap=0.0)
    assert claims(inst, lie) == [
        (
            "rejection-reason",
            "rejections[1].reason: 'no-room' for 'infer-e' is false: it fits at h1-g0:2 beside the running "
            "workloads as they run",
        )
    ]


def test_a_false_instance_reason() -> None:
    inst, sol = quickstart()
    assert claims(inst, replace(sol, rejections=(Rejection("llm-f", "no-profile", "claimed"),))) == [
        (
            "rejection-reason",
            "rejections[0].reason: 'no-profile' for 'llm-f' is false: GPU model H100-80GB of the cluster has "
            "profile '7g.80gb'",
        )
    ]
    assert claims(inst, replace(sol, rejections=(Rejection("llm-f", "host-capacity", "claimed"),))) == [
        (
            "rejection-reason",
            "rejections[0].reason: 'host-capacity' for 'llm-f' is false: host h2 has an eligible GPU "
            "(h2-g0) and the cpu and ram for it",
        )
    ]


def test_a_reason_that_is_not_the_first_to_hold() -> None:
    inst, sol = load("host_capacity"), solved("host_capacity")
    (true,) = sol.rejections
    assert (true.workload, true.code) == ("needs-ram", "host-capacity")
    lie = replace(sol, rejections=(replace(true, code="no-room"),))
    assert claims(inst, lie) == [
        (
            "rejection-reason",
            f"rejections[0].reason: 'no-room' for 'needs-ram' is false: 'host-capacity' holds first ({true.message})",
        )
    ]


def test_a_request_no_answer_places() -> None:
    """llm-f needs start 0 of h2-g0, which pinned llm-c holds: no answer places it, so it was
    neither left out by choice nor waiting for restarts or a decision."""
    inst, sol = quickstart()
    for code in ("not-chosen", "needs-restarts", "undecided"):
        assert claims(inst, replace(sol, rejections=(Rejection("llm-f", code, "claimed"),))) == [
            (
                "rejection-reason",
                f"rejections[0].reason: {code!r} for 'llm-f' is false: no answer places it, restarts or not: "
                "nothing fits beside the pinned workloads",
            )
        ]


def test_needs_restarts_for_a_request_that_fits_as_they_run() -> None:
    inst, sol = quickstart()
    lie = with_reason(left_out(inst, sol, "infer-e"), "infer-e", "needs-restarts")
    assert ("rejection-reason", "rejections[1].reason: 'needs-restarts' for 'infer-e' is false: it fits at "
            "h1-g0:2 beside the running workloads as they run, restarting none") in claims(inst, lie)  # fmt: skip


# --- the command line


def test_the_command_line_names_each_broken_claim(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    sol = solved("quickstart")
    lie = with_reason(
        stage(replace(sol, gap=0.3), 1, bound=5.0, gap=relative_gap(6.0, 5.0)), "batch-d", "no-room"
    )
    path = tmp_path / "lie.json"
    lie.save(path)
    instance = str(INSTANCES / "quickstart.json")
    assert main(["verify", instance, str(path)]) == 1
    assert capsys.readouterr() == (
        "gap: 0.3 with status 'optimal': a proven optimum has gap 0\n"
        "stages[1].proven: proven, but value 6 and bound 5 differ (gap 0.1666666667)\n"
        "rejections[1].reason: 'no-room' for 'batch-d', which is placed (placements[3])\n",
        "",
    )
    assert main(["verify", instance, str(path), "--json"]) == 1
    report = json.loads(capsys.readouterr().out)
    assert [(c["rule"], c["path"]) for c in report["claims"]] == [
        ("status-gap", "gap"),
        ("stage-proven", "stages[1].proven"),
        ("rejection-placed", "rejections[1].reason"),
    ]
    sol.save(path)
    assert main(["verify", instance, str(path)]) == 0
    assert capsys.readouterr().out == "valid: acceptance 8, hardware 6, migrations 0\n"
    path.write_text(path.read_text()[:100])
    assert main(["verify", instance, str(path)]) == 2


# --- a property: mipopt's own answers hold every claim

METHODS = (
    {"method": "ff"},
    {"method": "mfi"},
    {"method": "grmu"},
    {},
    {"objective": "disruption", "time_limit_s": 0.05},
    {"objective": "weighted:1,0.1,0.01,0.01"},
    {"method": "exact-initial"},
    {"max_restarts": 1},
)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_new=6), st.sampled_from(METHODS))
def test_mipopt_answers_hold_every_claim(inst: Instance, options: dict[str, object]) -> None:
    sol = mipopt.solve(inst, **options)  # type: ignore[arg-type]
    assert claims(inst, sol) == []
