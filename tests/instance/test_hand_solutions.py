"""Solutions written by hand: only format, version and placements required; claims checked.

The instance is ``instances/quickstart.json``:

    train-a 3g.20gb at h1-g0:4       batch-d 4g.20gb     infer-g 2g.10gb (weight 2)
    notebook-b 1g.5gb at h1-g0:0     infer-e 1g.10gb     llm-h 3g.40gb (H100 only)
    llm-c 2g.20gb at h2-g0:4 pinned  llm-f 7g.80gb (H100 only)

on hosts h1 (h1-g0, h1-g1: A100-40GB) and h2 (weight 1.5; h2-g0: H100-80GB). The example
``docs/examples/hand_solution.json`` places all but llm-f: acceptance 8, hardware 1 + 2 on h1
and 1.5 x (1 + 1) on h2 = 6, no migrations.
"""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import pytest
from factories import ROOT, instances
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Objectives, Status, Termination, solution_from_dict, solution_to_dict
from mipopt.instance.parse import DOCUMENT_KINDS, document_kind
from mipopt.io import load_instance, load_solution, read_json
from mipopt.migrate import plan_migration
from mipopt.registry import solve
from mipopt.verifier import check_claims, verify

QUICKSTART = ROOT / "instances" / "quickstart.json"
EXAMPLE = ROOT / "docs" / "examples" / "hand_solution.json"
RUNNING = [
    {"workload": "train-a", "gpu": "h1-g0", "start": 4},
    {"workload": "notebook-b", "gpu": "h1-g0", "start": 0},
    {"workload": "llm-c", "gpu": "h2-g0", "start": 4},
]


@pytest.fixture(scope="module")
def inst() -> Instance:
    return load_instance(QUICKSTART)


def minimal(*placements: dict[str, Any], **fields: Any) -> dict[str, Any]:
    """The running workloads where they are, then ``placements``; nothing else but ``fields``."""
    return {"format": "mipopt-solution", "version": 1, "placements": [*RUNNING, *placements], **fields}


# --- reading


def test_minimal_solution_reads_as_hand_written_and_unproven() -> None:
    sol = solution_from_dict(minimal())
    assert (sol.instance, sol.method, sol.termination, sol.status) == (
        "",
        "hand-written",
        Termination.COMPLETED,
        Status.FEASIBLE,
    )
    assert (sol.rejected, sol.objectives, sol.metrics, sol.stages) == ((), None, {}, ())
    assert [a.workload for a in sol.placements] == ["train-a", "notebook-b", "llm-c"]


def test_what_a_hand_written_file_says_is_what_it_reads_as() -> None:
    sol = solution_from_dict(minimal(method="pencil", termination="optimal", status="optimal", instance="q"))
    assert (sol.instance, sol.method, sol.termination, sol.status) == (
        "q",
        "pencil",
        Termination.OPTIMAL,
        Status.OPTIMAL,
    )


# (id, the document, the one line expected)
MALFORMED: list[tuple[str, Any, str]] = [
    ("not-an-object", [], "(document): must be an object, got a list"),
    ("no-placements", {"format": "mipopt-solution", "version": 1}, "placements: missing required field"),
    ("no-version", {"format": "mipopt-solution", "placements": []}, "version: missing required field"),
    ("no-format", {"version": 1, "placements": []}, "format: missing required field"),
    (
        "an-instance",  # refused by its tag, not for the fields a solution lacks
        json.loads(QUICKSTART.read_text()),
        "format: must be 'mipopt-solution', got 'mipopt-instance'",
    ),
    ("version-2", minimal(version=2), "version: version 2 is not supported (this mipopt reads 1)"),
    ("placements-object", minimal() | {"placements": {}}, "placements: must be a list, got an object"),
    (
        "negative-start",
        minimal({"workload": "batch-d", "gpu": "h1-g1", "start": -4}),
        "placements[3].start: must be >= 0, got -4",
    ),
    (
        "start-string",
        minimal({"workload": "batch-d", "gpu": "h1-g1", "start": "0"}),
        "placements[3].start: must be an integer, got a string",
    ),
    (
        "start-fraction",
        minimal({"workload": "batch-d", "gpu": "h1-g1", "start": 0.5}),
        "placements[3].start: must be an integer, got 0.5",
    ),
    (
        "placement-without-gpu",
        minimal({"workload": "batch-d", "start": 0}),
        "placements[3].gpu: missing required field",
    ),
    (
        "placement-typo",
        minimal({"workload": "batch-d", "gpu": "h1-g1", "start": 0, "strat": 0}),
        "placements[3].strat: unknown field (allowed: gpu, profile, start, workload)",
    ),
    (
        "empty-workload",
        minimal({"workload": " ", "gpu": "h1-g1", "start": 0}),
        "placements[3].workload: must not be empty",
    ),
    (
        "unknown-field",
        minimal(rejects=["llm-f"]),
        "rejects: unknown field (allowed: bound, format, gap, instance, message, method, metrics, "
        "objectives, placements, rejected, rejections, runtime_s, stages, status, termination, version)",
    ),
    ("rejected-number", minimal(rejected=["llm-f", 3]), "rejected[1]: must be a string, got a number"),
    ("instance-empty", minimal(instance=""), "instance: must not be empty"),
    ("status-unknown", minimal(status="good"), "status: must be one of optimal, feasible, none, got 'good'"),
    (
        "termination-unknown",
        minimal(termination="done"),
        "termination: must be one of optimal, completed, time_limit, gap_limit, interrupted, infeasible, "
        "error, got 'done'",
    ),
    (
        "objectives-partial",
        minimal(objectives={"acceptance": 8, "hardware": 6}),
        "objectives.migrations: missing required field",
    ),
    (
        "objective-string",
        minimal(objectives={"acceptance": "8", "hardware": 6, "migrations": 0}),
        "objectives.acceptance: must be a number, got a string",
    ),
    (
        "metric-boolean",
        minimal(metrics={"accepted": True}),
        "metrics.accepted: must be a number, got a boolean",
    ),
]


@pytest.mark.parametrize(("data", "message"), [c[1:] for c in MALFORMED], ids=[c[0] for c in MALFORMED])
def test_malformed_hand_solution_names_path_and_rule(data: Any, message: str) -> None:
    with pytest.raises(InstanceError) as err:
        solution_from_dict(data)
    assert str(err.value) == message


def test_malformed_hand_solution_at_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(minimal({"workload": "batch-d", "gpu": "h1-g1", "start": -4})))
    assert main(["verify", str(QUICKSTART), str(path)]) == 2
    assert capsys.readouterr() == ("", f"mipopt: error: {path}: placements[3].start: must be >= 0, got -4\n")


# --- verifying


def test_example_file_verifies(inst: Instance, capsys: pytest.CaptureFixture[str]) -> None:
    sol = load_solution(EXAMPLE)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert report.objectives == Objectives(8.0, 6.0, 0.0, 0.0)
    assert sol.objectives == Objectives(8.0, 6.0, 0.0)  # restarts not claimed: not checked
    assert check_claims(inst, sol) == []
    assert main(["verify", str(QUICKSTART), str(EXAMPLE)]) == 0
    assert capsys.readouterr().out == "valid: acceptance 8, hardware 6, migrations 0\n"


def test_minimal_solution_verifies_with_every_new_workload_rejected(inst: Instance) -> None:
    report = verify(inst, solution_from_dict(minimal()))
    assert report.valid and report.violations == ()
    # the three running workloads, weight 1; h1 with h1-g0, h2 (1.5) with h2-g0
    assert report.objectives == Objectives(3.0, 5.0, 0.0, 0.0)
    assert (report.metrics["accepted"], report.metrics["rejected"]) == (3, 5)


def test_a_new_workload_left_out_is_rejected(inst: Instance) -> None:
    data = json.loads(EXAMPLE.read_text())
    data["placements"] = [p for p in data["placements"] if p["workload"] != "infer-g"]
    del data["objectives"], data["metrics"]
    report = verify(inst, solution_from_dict(data))
    assert report.valid
    assert report.objectives == Objectives(6.0, 6.0, 0.0, 0.0)  # infer-g weighed 2
    assert (report.metrics["accepted"], report.metrics["rejected"]) == (6, 2)
    listed = verify(inst, solution_from_dict(data | {"rejected": ["infer-g", "llm-f"]}))
    assert listed == report


@pytest.mark.parametrize(
    ("edit", "expected"),
    [
        (
            lambda d: d.update(placements=d["placements"][1:]),
            ["workload 'train-a': running workloads must stay placed"],
        ),
        (
            lambda d: d.update(placements=d["placements"][1:], rejected=["train-a"]),
            ["workload 'train-a': running workloads must stay placed"],
        ),
        (
            lambda d: d.update(rejected=["llm-f", "batch-d"]),
            ["rejected[1]: 'batch-d' is both placed and rejected"],
        ),
        (
            lambda d: d.update(instance="other"),
            ["instance: solution is for 'other', not 'quickstart'"],
        ),
        (
            lambda d: d.update(status="optimal"),  # a claim of optimality must say how it was proved
            ["status: 'optimal' with termination 'completed'"],
        ),
    ],
    ids=["running-left-out", "running-rejected", "placed-and-rejected", "other-instance", "optimal-by-hand"],
)
def test_hand_solution_violations(inst: Instance, edit: Any, expected: list[str]) -> None:
    data = json.loads(EXAMPLE.read_text())
    del data["objectives"], data["metrics"]
    edit(data)
    report = verify(inst, solution_from_dict(data))
    assert not report.valid
    assert list(report.violations) == expected


WRONG_CLAIMS = [
    "objectives.acceptance: solution says 9, verifier computes 8",
    "objectives.migrations: solution says 0.5, verifier computes 0",
    "metrics.accepted: solution says 8, verifier computes 7",
    "metrics.active_gpu: not a metric mipopt computes (docs/formats.md, Verifier)",
    "metrics.memory_utilization: solution says 0.7, verifier computes 0.75",
]


def _boasting() -> dict[str, Any]:
    data = json.loads(EXAMPLE.read_text())
    data["objectives"] = {"acceptance": 9, "hardware": 6, "migrations": 0.5}
    # memory slots in use: h1-g0 4 + 1 + 2, h1-g1 4, h2-g0 2 + 4 + 1 = 18 of 24
    data["metrics"] = {
        "accepted": 8,
        "rejected": 1,
        "active_gpu": 3,
        "memory_utilization": 0.7,
        "used_memory_slots": 18,
    }
    return data


def test_wrong_claims_give_one_line_each(inst: Instance) -> None:
    sol = solution_from_dict(_boasting())
    assert check_claims(inst, sol) == WRONG_CLAIMS
    report = verify(inst, sol)
    assert not report.valid and list(report.violations) == WRONG_CLAIMS
    assert report.objectives == Objectives(8.0, 6.0, 0.0, 0.0)  # the recomputed ones


def test_wrong_claims_at_the_command_line(
    inst: Instance, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "boast.json"
    path.write_text(json.dumps(_boasting()))
    assert main(["verify", str(QUICKSTART), str(path)]) == 1
    assert capsys.readouterr() == ("\n".join(WRONG_CLAIMS) + "\n", "")


def test_nothing_claimed_nothing_to_check(inst: Instance) -> None:
    sol = solution_from_dict(minimal({"workload": "batch-d", "gpu": "h1-g1", "start": 0}))
    assert check_claims(inst, sol) == []


def test_claims_come_after_the_rules_and_count_every_placement(inst: Instance) -> None:
    """An overlap breaks no rule of the placement alone, so batch-d still counts in the objectives."""
    claimed = {"acceptance": 3, "hardware": 5, "migrations": 0}
    data = minimal({"workload": "batch-d", "gpu": "h1-g0", "start": 0}, objectives=claimed)
    report = verify(inst, solution_from_dict(data))
    assert list(report.violations) == [
        "GPU 'h1-g0': 'batch-d' overlaps 'notebook-b'",
        "GPU 'h1-g0': uses 8 compute slices, has 7",
        "objectives.acceptance: solution says 3, verifier computes 4",
    ]


@settings(max_examples=30, deadline=None)
@given(inst=instances(), data=st.data())
def test_leaving_rejected_workloads_unlisted_changes_nothing(inst: Instance, data: st.DataObject) -> None:
    sol = solve(inst, "ff")
    kept = data.draw(st.lists(st.sampled_from(sol.rejected), unique=True)) if sol.rejected else []
    hand = dataclasses.replace(sol, rejected=tuple(kept))
    assert verify(inst, hand) == verify(inst, sol)
    assert verify(inst, hand).valid


# --- planning to a hand-written target


def test_plan_to_a_hand_written_target(inst: Instance) -> None:
    target = solution_from_dict(
        minimal(
            {"workload": "batch-d", "gpu": "h1-g1", "start": 0},
            {"workload": "infer-g", "gpu": "h1-g0", "start": 2},
        )
    )
    plan = plan_migration(inst, target)
    assert sorted(plan.final) == ["batch-d", "infer-g", "llm-c", "notebook-b", "train-a"]
    assert plan.metrics["creates"] == 2 and plan.metrics["moves"] == 0


def test_plan_refuses_a_hand_written_target_with_a_wrong_claim(inst: Instance) -> None:
    target = solution_from_dict(minimal(objectives={"acceptance": 4, "hardware": 5, "migrations": 0}))
    with pytest.raises(InstanceError) as err:
        plan_migration(inst, target)
    assert str(err.value) == (
        "target: not a valid placement for 'quickstart': "
        "objectives.acceptance: solution says 4, verifier computes 3"
    )


# --- round trips


def test_minimal_round_trip(inst: Instance) -> None:
    sol = solution_from_dict(minimal())
    written = solution_to_dict(sol)
    assert "instance" not in written and written["method"] == "hand-written"
    assert solution_from_dict(written) == sol


def test_full_solution_round_trip_unchanged(inst: Instance) -> None:
    sol = solve(inst, "ff")
    written = solution_to_dict(sol)
    assert solution_from_dict(written) == sol
    assert solution_to_dict(solution_from_dict(json.loads(json.dumps(written)))) == written


# --- which document is it


@pytest.mark.parametrize(
    ("path", "kind"),
    [
        (QUICKSTART, "instance"),
        (ROOT / "instances" / "swap.target.json", "solution"),
        (EXAMPLE, "solution"),
    ],
    ids=lambda v: getattr(v, "name", v),
)
def test_document_kind_of_shipped_files(path: Path, kind: str) -> None:
    assert document_kind(read_json(path)) == kind


def test_document_kind_of_a_plan(inst: Instance) -> None:
    from mipopt.migrate.plan import FORMAT

    assert DOCUMENT_KINDS[FORMAT] == "plan"
    plan = plan_migration(inst, load_solution(EXAMPLE))
    assert document_kind(plan.to_dict()) == "plan"


@pytest.mark.parametrize(
    "data",
    [None, [], "mipopt-solution", {}, {"format": "mipopt-result"}, {"format": ["mipopt-solution"]}],
)
def test_document_kind_of_anything_else_is_none(data: Any) -> None:
    assert document_kind(data) is None
