"""The mipopt-plan v1 JSON: plans survive a round trip; malformed plans are refused naming the JSON path."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from mipopt.errors import InstanceError
from mipopt.instance import InstanceBuilder
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
