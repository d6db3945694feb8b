"""The shipped JSON Schema files agree with what mipopt reads and writes."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from factories import INSTANCES

from mipopt.instance import instance_to_dict, solution_to_dict
from mipopt.io import load_instance
from mipopt.registry import solve


def schema(name: str) -> dict:
    return json.loads(resources.files("mipopt").joinpath(f"schemas/{name}.schema.json").read_text())


@pytest.fixture(scope="module")
def validators() -> dict[str, jsonschema.protocols.Validator]:
    out = {}
    for name in ("instance", "solution"):
        s = schema(name)
        jsonschema.Draft202012Validator.check_schema(s)
        out[name] = jsonschema.Draft202012Validator(s)
    return out


@pytest.mark.parametrize("path", sorted(INSTANCES.glob("*.json")), ids=lambda p: p.stem)
def test_shipped_files_match_schema(path: Path, validators: dict) -> None:
    data = json.loads(path.read_text())
    kind = "solution" if data["format"] == "mipopt-solution" else "instance"
    errors = [e.message for e in validators[kind].iter_errors(data)]
    assert errors == []


EXAMPLE = INSTANCES.parent / "docs" / "examples" / "hand_solution.json"
MINIMAL = {"format": "mipopt-solution", "version": 1, "placements": []}


def test_hand_written_solutions_match_schema(validators: dict) -> None:
    assert [e.message for e in validators["solution"].iter_errors(json.loads(EXAMPLE.read_text()))] == []
    assert [e.message for e in validators["solution"].iter_errors(MINIMAL)] == []


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.pop("placements"), "'placements' is a required property"),
        (lambda d: d.update(placements=[{"workload": "w", "gpu": "g"}]), "'start' is a required property"),
        (
            lambda d: d.update(placements=[{"workload": "w", "gpu": "g", "start": -1}]),
            "less than the minimum",
        ),
        (lambda d: d.update(rejects=[]), "('rejects' was unexpected)"),
    ],
)
def test_solution_schema_refuses_what_mipopt_refuses(mutate, fragment: str, validators: dict) -> None:
    data = json.loads(json.dumps(MINIMAL))
    mutate(data)
    messages = [e.message for e in validators["solution"].iter_errors(data)]
    assert any(fragment in m for m in messages), messages


INSTANCE_FILES = sorted(p for p in INSTANCES.glob("*.json") if not p.name.endswith(".target.json"))


@pytest.mark.parametrize("path", INSTANCE_FILES, ids=lambda p: p.stem)
def test_written_files_match_schema(path: Path, validators: dict) -> None:
    inst = load_instance(path)
    assert list(validators["instance"].iter_errors(instance_to_dict(inst))) == []
    assert list(validators["solution"].iter_errors(solution_to_dict(solve(inst, "ff")))) == []


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.pop("hosts"), "'hosts' is a required property"),
        (lambda d: d["workloads"][0].update(cpu=-1), "-1 is less than the minimum of 0"),
        (lambda d: d["workloads"][0].update(pinned="yes"), "'yes' is not of type 'boolean'"),
        (
            lambda d: d["hosts"][0].update(rm_gb=4),
            "Additional properties are not allowed ('rm_gb' was unexpected)",
        ),
        (lambda d: d.update(format="mipopt-solution"), "'mipopt-instance' was expected"),
    ],
)
def test_schema_refuses_what_mipopt_refuses(mutate, fragment: str, validators: dict) -> None:
    data = json.loads((INSTANCES / "quickstart.json").read_text())
    mutate(data)
    messages = [e.message for e in validators["instance"].iter_errors(data)]
    assert any(fragment in m for m in messages), messages
