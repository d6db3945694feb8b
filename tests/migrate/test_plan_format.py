"""The mipopt-plan v1 JSON: plans survive a round trip; malformed plans are refused naming the JSON
path. A plan as users call it: Plan.summary, the text ``mipopt plan`` prints, and Plan.save."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
from factories import INSTANCES

from mipopt.cli import main
from mipopt.errors import InstanceError, ParameterTypeError
from mipopt.instance import InstanceBuilder
from mipopt.io import load_instance, load_solution
from mipopt.migrate import plan_from_dict, plan_migration


def _swap_plan(semantics: str) -> dict[str, Any]:
    b = InstanceBuilder("swap")
    b.add_host("h0", {"g0": "A100-40GB"})  # no free space: create-first must drain one workload
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("b", "3g.20gb", placement=("g0", 4))
    b.add_workload("new", "1g.5gb")
    plan = plan_migration(b.build(), {"a": ("g0", 4), "b": ("g0", 0)}, semantics=semantics)  # type: ignore[arg-type]
    return json.loads(json.dumps(plan.to_dict()))


@pytest.mark.parametrize("semantics", ["create-first", "destroy-first"])
def test_round_trip(semantics: str) -> None:
    data = _swap_plan(semantics)
    assert data["disrupted"] == (["a"] if semantics == "create-first" else ["a", "b"])
    assert plan_from_dict(data).to_dict() == data


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d.update(format="mipopt-solution"),
            "format: expected 'mipopt-plan', got 'mipopt-solution'",
        ),
        (lambda d: d.update(version=2), "version: unsupported version 2 (this mipopt reads 1)"),
        (
            lambda d: d.update(semantics="later"),
            "semantics: must be one of create-first, destroy-first, got 'later'",
        ),
        (lambda d: d.update(colour=1), "colour: unknown field"),
        (lambda d: d["rounds"][0].update(round=3), "rounds[0].round: must be 1, got 3"),
        (
            lambda d: d["rounds"][0]["drains"][0].pop("from"),
            "rounds[0].drains[0].from: missing required field",
        ),
        (
            lambda d: d["rounds"][0]["moves"][0].update(kind="sideways"),
            "rounds[0].moves[0].kind: must be one of",
        ),
        (
            lambda d: d["rounds"][0]["moves"][0]["to"].update(start=-1),
            "rounds[0].moves[0].to.start: must be >= 0",
        ),
        (lambda d: d["rounds"][1]["creates"][0].pop("kind"), "rounds[1].creates[0]: a restore has both"),
        (lambda d: d["final"][0].pop("gpu"), "final[0].gpu: missing required field"),
        (lambda d: d["metrics"].update(rounds="two"), "metrics.rounds: must be a number"),
    ],
)
def test_malformed_plans_name_the_path(change: Any, message: str) -> None:
    data = _swap_plan("create-first")
    change(data)
    with pytest.raises(InstanceError, match="^" + re.escape(message)):
        plan_from_dict(data)


# --- a plan as text and as a file

SWAP, SWAP_TARGET = INSTANCES / "swap.json", INSTANCES / "swap.target.json"


def _runtime_free(text: str) -> str:
    return re.sub(r"\(\d+\.\d{3} s\)", "(T s)", text)


def test_summary_is_what_mipopt_plan_prints(capsys: pytest.CaptureFixture[str]) -> None:
    plan = plan_migration(load_instance(SWAP), load_solution(SWAP_TARGET))
    assert main(["plan", str(SWAP), str(SWAP_TARGET)]) == 0
    printed = capsys.readouterr().out
    assert _runtime_free(printed) == _runtime_free(plan.summary(load_instance(SWAP))) + "\n"


def test_a_planned_plan_knows_its_instance_and_one_read_back_leaves_out_the_profiles() -> None:
    inst = load_instance(SWAP)
    plan = plan_migration(inst, load_solution(SWAP_TARGET))
    assert plan._instance is inst
    assert plan.summary() == plan.summary(inst)
    read = plan_from_dict(plan.to_dict())
    assert read == plan and read._instance is None  # not compared, not written
    assert read.summary(inst) == plan.summary()
    assert _runtime_free(read.summary()).splitlines()[6:] == [
        "profiles not shown: the plan does not know its instance (pass it: summary(instance))",
        "",
        "round 1",
        "  move  a  g0:0  ->  g1:0  inter-GPU  park",
        "",
        "round 2",
        "  move  b  g0:4  ->  g0:0  intra-GPU",
        "",
        "round 3",
        "  move  a  g1:0  ->  g0:4  inter-GPU",
    ]


def test_save_writes_the_plan_json_atomically(tmp_path: Path) -> None:
    copied = Path(shutil.copy(SWAP, tmp_path / "swap.json"))
    inst = load_instance(copied)
    plan = plan_migration(inst, load_solution(SWAP_TARGET))
    plan.save(tmp_path / "plan.json")
    assert json.loads((tmp_path / "plan.json").read_text()) == plan.to_dict()
    assert plan_from_dict(json.loads((tmp_path / "plan.json").read_text())) == plan
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.json", "swap.json"]
    with pytest.raises(InstanceError) as info:  # never over the file its instance was read from
        plan.save(copied)
    assert (
        str(info.value) == f"path: {copied} is the file the instance was read from; write it to another file"
    )
    assert load_instance(copied) == inst


@pytest.mark.parametrize(
    ("instance", "target", "message"),
    [
        (
            "swap",
            None,
            "target: must be a Solution or a placement (workload id -> (GPU id, start)), got NoneType",
        ),
        (
            str(SWAP),
            {},
            f"instance: must be an Instance, got the path {str(SWAP)!r}: read it with "
            f"mipopt.load_instance({str(SWAP)!r})",
        ),
    ],
)
def test_a_wrong_argument_names_its_parameter(instance: str, target: object, message: str) -> None:
    with pytest.raises(ParameterTypeError) as info:
        plan_migration(load_instance(SWAP) if instance == "swap" else instance, target)  # type: ignore[arg-type]
    assert str(info.value) == message
    assert isinstance(info.value, TypeError)
