"""Fields of a wrong type in solutions and plans, quantities that could overflow, and profiles
in a cluster without GPUs: each refused in one line naming the JSON path (or the parameter)."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from factories import INSTANCES, PROVEN_STAGE, ROOT

import mipopt
from mipopt.catalog import builtin_models
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.instance import InstanceBuilder, instance_from_dict, solution_from_dict
from mipopt.migrate import plan_from_dict

QUICKSTART = INSTANCES / "quickstart.json"
HAND_SOLUTION = json.loads((ROOT / "docs" / "examples" / "hand_solution.json").read_text())
TERMINATIONS = "optimal, completed, time_limit, gap_limit, interrupted, infeasible, error"
REASONS = "no-profile, gpu-models, host-capacity, no-room, needs-restarts, undecided, not-chosen"

Capsys = pytest.CaptureFixture[str]


def _edited(doc: dict[str, Any], **fields: Any) -> dict[str, Any]:
    return copy.deepcopy(doc) | fields


def _refusal(read: Any, doc: Any) -> str:
    with pytest.raises(InstanceError) as err:
        read(doc)
    return str(err.value)


# --- solutions and plans: a field of the wrong type is one line, never a TypeError

SOLUTION_TYPES: list[tuple[str, dict[str, Any], str]] = [
    ("status-object", {"status": {}}, "status: must be one of optimal, feasible, none, got an object"),
    ("status-number", {"status": 3}, "status: must be one of optimal, feasible, none, got 3"),
    (
        "termination-list",
        {"termination": ["optimal"]},
        f"termination: must be one of {TERMINATIONS}, got a list",
    ),
    (
        "stage-termination",
        {"stages": [PROVEN_STAGE | {"termination": {}}]},
        f"stages[0].termination: must be one of {TERMINATIONS}, got an object",
    ),
    (
        "stage-proven",
        {"stages": [PROVEN_STAGE | {"proven": "yes"}]},
        "stages[0].proven: must be true or false, got a string",
    ),
    (
        "rejection-reason",
        {"rejections": [{"workload": "llm-f", "reason": [], "message": "m"}]},
        f"rejections[0].reason: must be one of {REASONS}, got a list",
    ),
    (
        "long-status",
        {"status": "x" * 1000},
        "status: must be one of optimal, feasible, none, got '" + "x" * 114 + "... (1002 chars)",
    ),
    ("metric-value", {"metrics": {"accepted": "7"}}, "metrics.accepted: must be a number, got a string"),
]


@pytest.mark.parametrize(
    ("fields", "message"), [c[1:] for c in SOLUTION_TYPES], ids=[c[0] for c in SOLUTION_TYPES]
)
def test_solution_fields_of_a_wrong_type(fields: dict[str, Any], message: str) -> None:
    assert _refusal(solution_from_dict, _edited(HAND_SOLUTION, **fields)) == message


def test_verify_refuses_a_status_object_in_one_line(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "sol.json"
    path.write_text(json.dumps(_edited(HAND_SOLUTION, status={}, termination=[1])))
    assert main(["verify", str(QUICKSTART), str(path)]) == 2
    assert capsys.readouterr() == (
        "",
        f"mipopt: error: {path}: termination: must be one of {TERMINATIONS}, got a list\n",
    )


def _plan() -> dict[str, Any]:
    inst = mipopt.load_instance(INSTANCES / "moves.json")
    return mipopt.plan_migration(inst, mipopt.load_solution(INSTANCES / "moves.target.json")).to_dict()


def test_plan_fields_of_a_wrong_type() -> None:
    plan = _plan()
    assert _refusal(plan_from_dict, _edited(plan, semantics={})) == (
        "semantics: must be one of create-first, destroy-first, got an object"
    )
    assert _refusal(plan_from_dict, _edited(plan, format=[1])) == "format: expected 'mipopt-plan', got [1]"
    assert _refusal(plan_from_dict, _edited(plan, version={})) == (
        "version: unsupported version {} (this mipopt reads 1)"
    )
    bad = copy.deepcopy(plan)
    bad["rounds"][0]["moves"][0]["kind"] = ["inter_gpu"]
    assert _refusal(plan_from_dict, bad) == (
        "rounds[0].moves[0].kind: must be one of intra_gpu, inter_gpu, inter_host, got a list"
    )
    bad = _edited(plan, metrics={"moves": 1, "\x1b[2J": 2})
    assert _refusal(plan_from_dict, bad) == (
        "metrics['\\x1b[2J']: must be one line of printable characters: '\\x1b[2J' has '\\x1b' at 0"
    )


# --- quantities: nothing summed can overflow


def test_weights_whose_sum_overflows_are_refused_and_nothing_is_written(
    tmp_path: Path, capsys: Capsys
) -> None:
    doc = json.loads(QUICKSTART.read_text())
    for w in doc["workloads"]:
        w["weight"] = 1.7e308  # two of them summed: inf, which no JSON can write
    path = tmp_path / "heavy.json"
    path.write_text(json.dumps(doc))
    out = tmp_path / "sol.json"
    assert main(["solve", str(path), "--method", "ff", "--out", str(out)]) == 2
    assert capsys.readouterr() == (
        "",
        f"mipopt: error: {path}: workloads[0].weight: must be <= 1e+09, got 1.7e+308\n",
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("weight", 1e10, "workloads[1].weight: must be <= 1e+09, got 1e+10"),
        ("migration_weight", 2e9, "workloads[1].migration_weight: must be <= 1e+09, got 2e+09"),
        ("cpu", float("nan"), "workloads[1].cpu: must be a finite number, got nan"),
        ("ram_gb", float("inf"), "workloads[1].ram_gb: must be a finite number, got inf"),
        ("cpu", -1, "workloads[1].cpu: must be >= 0, got -1"),
        ("cpu", "8", "workloads[1].cpu: must be a number, got a string"),
        ("weight", True, "workloads[1].weight: must be a number, got a boolean"),
        ("weight", 10**400, "workloads[1].weight: must be a finite number, got an integer of 1329 bits"),
    ],
)
def test_the_builder_refuses_quantities_naming_the_path(field: str, value: Any, message: str) -> None:
    b = InstanceBuilder("q")
    b.add_host("h1", {"g0": "A100-40GB"})
    b.add_workload("w0", "1g.5gb")
    b.add_workload("w1", "1g.5gb", **{field: value})
    with pytest.raises(InstanceError) as err:
        b.build()
    assert str(err.value) == message


def test_quantities_at_the_bound_and_numpy_numbers_are_accepted() -> None:
    b = InstanceBuilder("q")
    b.add_host("h1", {"g0": "A100-40GB"}, cpu=1e9, ram_gb=np.float64(512.0), weight=np.float32(2.0))
    b.add_workload("w0", "1g.5gb", weight=1e9, cpu=np.int64(4), migration_weight=0)
    inst = b.build()
    assert (inst.hosts[0].cpu, inst.workloads[0].weight, inst.workloads[0].cpu) == (1e9, 1e9, 4)
    with pytest.raises(InstanceError) as err:
        b.add_host("h2", {"g1": "A100-40GB"}, cpu=np.float64("nan"))
        b.build()
    assert str(err.value) == "hosts[1].cpu: must be a finite number, got nan"


def test_a_custom_model_memory_is_bounded() -> None:
    doc = json.loads(QUICKSTART.read_text())
    model = builtin_models()["A100-40GB"].to_dict() | {"model": "Big", "memory_gb": 1e300}
    doc["custom_gpu_models"] = [model]
    with pytest.raises(InstanceError) as err:
        instance_from_dict(doc)
    assert str(err.value) == "custom_gpu_models[0].memory_gb: must be <= 1e+09, got 1e+300"


# --- a cluster without GPUs: a profile no known model has is a typo all the same


def _no_gpus(profile: str | int, **extra: Any) -> dict[str, Any]:
    return {
        "format": "mipopt-instance",
        "version": 1,
        "hosts": [{"id": "h1", "gpus": []}],
        "workloads": [{"id": "w", "profile": profile}],
        **extra,
    }


def test_a_profile_no_model_has_is_refused_without_gpus(tmp_path: Path, capsys: Capsys) -> None:
    with pytest.raises(InstanceError) as err:
        instance_from_dict(_no_gpus("9g.99gb"))
    assert (
        str(err.value)
        == "workloads[0].profile: '9g.99gb' is not a profile of any GPU model (the cluster has no GPUs)"
    )
    # with GPUs, the rule as it was: the models of the cluster
    doc = json.loads(QUICKSTART.read_text())
    doc["workloads"][3]["profile"] = "9g.99gb"
    with pytest.raises(InstanceError) as err:
        instance_from_dict(doc)
    assert str(err.value) == (
        "workloads[3].profile: '9g.99gb' is not a profile of any GPU model here (A100-40GB, H100-80GB)"
    )


def test_a_known_profile_without_gpus_is_valid_and_unplaceable(tmp_path: Path, capsys: Capsys) -> None:
    for profile in ("1g.5gb", 19, "7g.80gb"):
        assert instance_from_dict(_no_gpus(profile)).workloads[0].profile == profile
    custom = builtin_models()["A100-40GB"].to_dict() | {"model": "Mine"}
    custom["profiles"][0] = custom["profiles"][0] | {"name": "1g.mine", "aliases": []}
    assert (
        instance_from_dict(_no_gpus("1g.mine", custom_gpu_models=[custom])).workloads[0].profile == "1g.mine"
    )
    path = tmp_path / "empty.json"
    path.write_text(json.dumps(_no_gpus("1g.5gb")))
    assert main(["validate", str(path)]) == 0
    out = capsys.readouterr().out
    assert "no-profile" in out and "the cluster has no GPUs" in out
