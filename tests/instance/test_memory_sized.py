"""Workloads sized by memory (``memory_gb``, ``min_compute``): the format, the schema, the checks,
and the profiles such a workload may take (issue 25, section 1)."""

from __future__ import annotations

import copy
import json
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from factories import INSTANCES

from mipopt.catalog import get_model
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.instance import (
    Assignment,
    InstanceBuilder,
    Workload,
    instance_from_dict,
    instance_to_dict,
    solution_from_dict,
    solution_to_dict,
)
from mipopt.io import load_instance

EXAMPLE = INSTANCES / "memory_sized.json"


def data() -> dict[str, Any]:
    """One H100-80GB and one A100-40GB; w0 names its profile, w1 is sized by memory."""
    return {
        "format": "mipopt-instance",
        "version": 1,
        "hosts": [
            {"id": "h1", "gpus": [{"id": "h", "model": "H100-80GB"}]},
            {"id": "h2", "gpus": [{"id": "a", "model": "A100-40GB"}]},
        ],
        "workloads": [{"id": "w0", "profile": "1g.10gb"}, {"id": "w1", "memory_gb": 12}],
    }


def edited(**w1: Any) -> dict[str, Any]:
    d = copy.deepcopy(data())
    d["workloads"][1] = {"id": "w1", **w1}
    return d


def names(profiles: tuple[Any, ...]) -> list[str]:
    return [p.name for p in profiles]


# --- which profiles a memory-sized workload may take


@pytest.mark.parametrize(
    ("model", "memory_gb", "min_compute", "expected"),
    [
        # H100-80GB: 1g.10gb+me is a variant (it holds the one media set), never chosen for memory
        ("H100-80GB", 10, None, ["1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
        ("H100-80GB", 10.5, None, ["1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
        ("H100-80GB", 20, 2, ["2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]),
        ("H100-80GB", 41, None, ["7g.80gb"]),
        ("H100-80GB", 81, None, []),
        ("A100-40GB", 5, None, ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]),
        ("A100-40GB", 12, None, ["3g.20gb", "4g.20gb", "7g.40gb"]),
        ("A100-40GB", 10, 4, ["4g.20gb", "7g.40gb"]),
    ],
)
def test_profiles_on_are_the_fitting_ones_smallest_first(
    model: str, memory_gb: float, min_compute: int | None, expected: list[str]
) -> None:
    inst = instance_from_dict(data())  # profiles_on asks the workload and the model only
    w = Workload("w", None, memory_gb=memory_gb, min_compute=min_compute)
    assert names(inst.profiles_on(w, get_model(model))) == expected
    default = inst.profile_on(w, get_model(model))
    assert (default.name if default else None) == (expected[0] if expected else None)


def test_a_named_profile_is_its_only_choice_and_gpu_models_exclude() -> None:
    inst = instance_from_dict(edited(memory_gb=12, gpu_models=["H100-80GB"]))
    h100, a100 = inst.gpu("h").model, inst.gpu("a").model
    assert names(inst.profiles_on(inst.workload("w0"), a100)) == ["1g.10gb"]
    assert inst.profiles_on(inst.workload("w1"), a100) == ()
    assert inst.profile_on(inst.workload("w1"), a100) is None
    assert inst.profile_on(inst.workload("w1"), h100).name == "1g.20gb"


def test_a_running_memory_sized_workload_keeps_its_profile_on_its_model() -> None:
    d = edited(memory_gb=12, placement={"gpu": "h", "start": 4, "profile": "3g.40gb"})
    inst = instance_from_dict(d)
    w = inst.workload("w1")
    assert inst.profile_on(w, inst.gpu("h").model).name == "3g.40gb"  # where it runs, as it runs
    assert inst.profile_on(w, inst.gpu("a").model).name == "3g.20gb"  # elsewhere: the smallest
    default = instance_from_dict(edited(memory_gb=12, placement={"gpu": "h", "start": 4}))
    assert default.profile_on(default.workload("w1"), default.gpu("h").model).name == "1g.20gb"


def test_the_example_instance() -> None:
    inst = load_instance(EXAMPLE)
    h100, a100 = inst.gpu("h1-g0").model, inst.gpu("h2-g0").model
    chosen = {w.id: (inst.profile_on(w, h100), inst.profile_on(w, a100)) for w in inst.workloads}
    shown = {wid: tuple(p and p.name for p in ps) for wid, ps in chosen.items()}
    assert shown == {
        "train-35gb": ("4g.40gb", "7g.40gb"),
        "chat-12gb": ("1g.20gb", "3g.20gb"),
        "embed-8gb": ("1g.10gb", "1g.10gb"),
        "batch-20gb": ("2g.20gb", "3g.20gb"),
        "named-1g": ("1g.10gb", "1g.10gb"),
        "big-60gb": ("7g.80gb", None),
    }


# --- the JSON form


def test_instance_round_trip_keeps_memory_and_the_running_profile() -> None:
    inst = load_instance(EXAMPLE)
    d = instance_to_dict(inst)
    by_id = {w["id"]: w for w in d["workloads"]}
    assert "profile" not in by_id["batch-20gb"]
    assert (by_id["batch-20gb"]["memory_gb"], by_id["batch-20gb"]["min_compute"]) == (20, 2)
    assert "min_compute" not in by_id["chat-12gb"] and "memory_gb" not in by_id["named-1g"]
    assert by_id["train-35gb"]["placement"] == {"gpu": "h1-g0", "start": 0, "profile": "4g.40gb"}
    again = instance_from_dict(json.loads(json.dumps(d)))
    assert again == inst
    assert again.workload("train-35gb").placement.profile == "4g.40gb"


def test_solution_round_trip_keeps_the_chosen_profile() -> None:
    raw = {
        "format": "mipopt-solution",
        "version": 1,
        "placements": [
            {"workload": "w1", "gpu": "h", "start": 4, "profile": "2g.20gb"},
            {"workload": "w0", "gpu": "h", "start": 0},
        ],
    }
    sol = solution_from_dict(raw)
    assert sol.placements == (Assignment("w1", "h", 4, "2g.20gb"), Assignment("w0", "h", 0))
    assert solution_to_dict(sol)["placements"] == raw["placements"]
    with pytest.raises(InstanceError, match=r"^placements\[0\]\.profile: must be a string, got a number$"):
        solution_from_dict(raw | {"placements": [{"workload": "w1", "gpu": "h", "start": 4, "profile": 3}]})


def schema(name: str) -> jsonschema.Draft202012Validator:
    text = resources.files("mipopt").joinpath(f"schemas/{name}.schema.json").read_text()
    return jsonschema.Draft202012Validator(json.loads(text))


def test_schema_takes_memory_sized_workloads_and_refuses_both_or_neither() -> None:
    v = schema("instance")
    assert list(v.iter_errors(json.loads(EXAMPLE.read_text()))) == []
    assert list(v.iter_errors(edited(memory_gb=12, min_compute=2))) == []
    for bad in (
        edited(profile="1g.10gb", memory_gb=12),  # both
        edited(),  # neither
        edited(profile="1g.10gb", min_compute=2),  # min_compute goes with memory_gb
        edited(min_compute=2),
        edited(memory_gb=0),
    ):
        assert list(v.iter_errors(bad)), bad
    sol = {
        "format": "mipopt-solution",
        "version": 1,
        "placements": [{"workload": "w1", "gpu": "h", "start": 4, "profile": "2g.20gb"}],
    }
    assert list(schema("solution").iter_errors(sol)) == []


# --- bad input: one line naming the JSON path and the rule

BAD = [
    (
        "both",
        edited(profile="1g.10gb", memory_gb=12),
        "workloads[1]: give either profile or memory_gb, not both",
    ),
    ("neither", edited(), "workloads[1].profile: missing required field (or give memory_gb instead)"),
    ("null-profile", edited(profile=None), "workloads[1].profile: must be a profile name or id, got null"),
    (
        "compute-with-profile",
        edited(profile="1g.10gb", min_compute=2),
        "workloads[1].min_compute: goes with memory_gb (a named profile has its own compute)",
    ),
    ("zero-memory", edited(memory_gb=0), "workloads[1].memory_gb: must be > 0, got 0"),
    ("memory-text", edited(memory_gb="12"), "workloads[1].memory_gb: must be a number, got a string"),
    (
        "compute-zero",
        edited(memory_gb=12, min_compute=0),
        "workloads[1].min_compute: must be >= 1, got 0",
    ),
    (
        "beyond-every-profile",
        edited(memory_gb=96),
        "workloads[1].memory_gb: 96 GB is more than any profile of H100-80GB, A100-40GB has "
        "(H100-80GB 80 GB, A100-40GB 40 GB)",
    ),
    (
        "beyond-its-models",
        edited(memory_gb=41, gpu_models=["A100-40GB"]),
        "workloads[1].memory_gb: 41 GB is more than any profile of A100-40GB has (A100-40GB 40 GB)",
    ),
    (
        "compute-beyond",
        edited(memory_gb=30, min_compute=8),
        "workloads[1].min_compute: no profile of H100-80GB, A100-40GB has 30 GB and 8 compute slices",
    ),
    (
        "running-profile-too-small",
        edited(memory_gb=12, placement={"gpu": "h", "start": 4, "profile": "1g.10gb"}),
        "workloads[1].placement.profile: '1g.10gb' is not a profile of H100-80GB that fits >=12gb "
        "(those are: 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)",
    ),
    (
        "running-profile-of-another-model",
        edited(memory_gb=12, placement={"gpu": "h", "start": 4, "profile": "3g.20gb"}),
        "workloads[1].placement.profile: '3g.20gb' is not a profile of H100-80GB that fits >=12gb "
        "(those are: 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb)",
    ),
    (
        "running-illegal-start-of-chosen",
        edited(memory_gb=12, placement={"gpu": "h", "start": 2, "profile": "3g.40gb"}),
        "workloads[1].placement.start: 2 is not a legal start of 3g.40gb on H100-80GB (0, 4)",
    ),
    (
        "named-running-profile-differs",
        edited(profile="1g.10gb", placement={"gpu": "h", "start": 4, "profile": "1g.20gb"}),
        "workloads[1].placement.profile: '1g.20gb' is not the workload's profile 1g.10gb "
        "(only a memory-sized workload's may differ)",
    ),
]


@pytest.mark.parametrize(("raw", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_memory_sized_workload_names_path_and_rule(raw: dict[str, Any], message: str) -> None:
    with pytest.raises(InstanceError) as info:
        instance_from_dict(raw)
    assert str(info.value) == message


def test_validate_refuses_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(edited(memory_gb=96)))
    assert main(["validate", str(path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "workloads[1].memory_gb: 96 GB is more than any profile" in err


def test_builder_takes_memory_and_checks_it() -> None:
    b = InstanceBuilder()
    b.add_host("h", gpus={"g": "H100-80GB"})
    b.add_workload("w", memory_gb=20, min_compute=2, placement=("g", 0), running_profile="3g.40gb")
    inst = b.build()
    w = inst.workload("w")
    assert (w.profile, w.memory_gb, w.min_compute, w.memory_sized, w.size) == (None, 20, 2, True, ">=20gb,2g")
    assert inst.profile_on(w, inst.gpu("g").model).name == "3g.40gb"
    b.add_workload("x", "1g.10gb", memory_gb=10)
    with pytest.raises(InstanceError, match=r"^workloads\[1\]: give either profile or memory_gb, not both$"):
        b.build()
