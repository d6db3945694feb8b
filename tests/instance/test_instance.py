"""The instance format: every kind of malformed file gets one line naming the JSON path and the rule.

Each bad case is a small edit of ``instances/quickstart.json``, whose workloads are

    0 train-a 3g.20gb at h1-g0:4      4 infer-e 1g.10gb
    1 notebook-b 1g.5gb at h1-g0:0    5 llm-f 7g.80gb (H100 only)
    2 llm-c 2g.20gb at h2-g0:4 pinned 6 infer-g 2g.10gb
    3 batch-d 4g.20gb                 7 llm-h 3g.40gb (H100 only)

on hosts h1 (h1-g0, h1-g1: A100-40GB; cpu 64, ram 512) and h2 (h2-g0: H100-80GB).
"""

from __future__ import annotations

import copy
import dataclasses
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import instances
from hypothesis import given, settings

from mipopt.catalog import get_model
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder, instance_from_dict, instance_to_dict
from mipopt.io import load_instance
from mipopt.registry import solve
from mipopt.verifier import verify

QUICKSTART = Path(__file__).resolve().parents[2] / "instances" / "quickstart.json"
BASE: dict[str, Any] = json.loads(QUICKSTART.read_text())

Edit = Callable[[dict[str, Any]], object]


def put(path: str, value: Any) -> Edit:
    """An edit setting the value at a dotted path (``workloads.3.cpu``)."""

    def edit(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = d
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        target[int(last) if last.isdigit() else last] = value

    return edit


def drop(path: str) -> Edit:
    """An edit deleting the value at a dotted path."""

    def edit(d: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = d
        for key in parents:
            target = target[int(key)] if key.isdigit() else target[key]
        del target[last]

    return edit


def add_workloads(*workloads: dict[str, Any]) -> Edit:
    return lambda d: d["workloads"].extend(workloads)


def add_host(host: dict[str, Any]) -> Edit:
    return lambda d: d["hosts"].append(host)


def chain(*edits: Edit) -> Edit:
    def edit(d: dict[str, Any]) -> None:
        for e in edits:
            e(d)

    return edit


def edited(*edits: Edit) -> dict[str, Any]:
    d = copy.deepcopy(BASE)
    for e in edits:
        e(d)
    return d


def a100_only(d: dict[str, Any]) -> None:
    """Drop host h2 (the H100) and the workloads that need it."""
    d["hosts"] = d["hosts"][:1]
    d["workloads"] = [w for w in d["workloads"] if "gpu_models" not in w]


A30_HOST = {"id": "h3", "gpus": [{"id": "h3-g0", "model": "A30-24GB"}]}


def custom_model(name: str = "Lab-40GB", **changes: Any) -> dict[str, Any]:
    """A100-40GB in the shape of ``mipopt info MODEL --json``, renamed."""
    m = get_model("A100-40GB").to_dict()
    m["model"] = name
    m.update(changes)
    return m


def with_custom(*models: dict[str, Any]) -> Edit:
    return put("custom_gpu_models", list(models))


# (id, edit of quickstart, the one line expected)
BAD: list[tuple[str, Edit, str]] = [
    # header
    (
        "wrong-format-tag",
        put("format", "mipopt-instances"),  # a solution's tag: see test_cli's hand-written solution
        "format: must be 'mipopt-instance', got 'mipopt-instances'",
    ),
    ("format-missing", drop("format"), "format: missing required field"),
    ("unsupported-version", put("version", 2), "version: version 2 is not supported (this mipopt reads 1)"),
    ("version-string", put("version", "1"), "version: must be an integer, got a string"),
    # models and profiles
    (
        "unknown-model",
        put("hosts.0.gpus.1.model", "A100-41GB"),
        "hosts[0].gpus[1].model: unknown GPU model 'A100-41GB' (see `mipopt info`, or add custom_gpu_models)",
    ),
    (
        "unknown-profile-one-model",
        chain(a100_only, put("workloads.3.profile", "5g.20gb")),
        "workloads[3].profile: '5g.20gb' is not a profile of A100-40GB",
    ),
    (
        "unknown-profile-restricted",
        chain(put("workloads.3.profile", "5g.20gb"), put("workloads.3.gpu_models", ["A100-40GB"])),
        "workloads[3].profile: '5g.20gb' is not a profile of A100-40GB",
    ),
    (
        "unknown-profile-any-model",
        put("workloads.3.profile", "5g.20gb"),
        "workloads[3].profile: '5g.20gb' is not a profile of any GPU model here (A100-40GB, H100-80GB)",
    ),
    (
        "profile-not-on-placement-model",
        put("workloads.0.profile", "3g.40gb"),
        "workloads[0].profile: '3g.40gb' is not a profile of A100-40GB",
    ),
    (
        "unknown-profile-id",
        put("workloads.3.profile", 99),
        "workloads[3].profile: 99 is not a profile of any GPU model here (A100-40GB, H100-80GB)",
    ),
    (
        "unknown-model-in-gpu-models",
        put("workloads.3.gpu_models", ["A100-41GB"]),
        "workloads[3].gpu_models[0]: unknown GPU model 'A100-41GB'",
    ),
    (
        "empty-gpu-models",
        put("workloads.3.gpu_models", []),
        "workloads[3].gpu_models: must name at least one model (omit it for any)",
    ),
    # duplicate ids
    ("duplicate-host-id", put("hosts.1.id", "h1"), "hosts[1].id: duplicate id 'h1' (also hosts[0])"),
    (
        "duplicate-gpu-id-across-hosts",
        put("hosts.1.gpus.0.id", "h1-g0"),
        "hosts[1].gpus[0].id: duplicate GPU id 'h1-g0' (also hosts[0].gpus[0])",
    ),
    (
        "duplicate-gpu-id-same-host",
        put("hosts.0.gpus.1.id", "h1-g0"),
        "hosts[0].gpus[1].id: duplicate GPU id 'h1-g0' (also hosts[0].gpus[0])",
    ),
    (
        "duplicate-workload-id",
        put("workloads.4.id", "batch-d"),
        "workloads[4].id: duplicate id 'batch-d' (also workloads[3])",
    ),
    # the running state
    (
        "placement-on-unknown-gpu",
        put("workloads.0.placement.gpu", "h9-g0"),
        "workloads[0].placement.gpu: unknown GPU 'h9-g0'",
    ),
    (
        "placement-at-illegal-start",
        put("workloads.0.placement.start", 2),
        "workloads[0].placement.start: 2 is not a legal start of 3g.20gb on A100-40GB (0, 4)",
    ),
    (
        "placement-past-the-gpu",
        put("workloads.1.placement.start", 7),
        "workloads[1].placement.start: 7 is not a legal start of 1g.5gb on A100-40GB (0, 1, 2, 3, 4, 5, 6)",
    ),
    (
        "overlapping-running",
        put("workloads.1.placement.start", 5),
        "workloads[1].placement: overlaps running workload 'train-a' on GPU 'h1-g0' at slot 5",
    ),
    (
        "running-over-host-cpu",
        put("hosts.0.cpu", 10),
        "hosts[0].cpu: running workloads need 18 > capacity 10",
    ),
    (
        "running-over-host-ram",
        put("hosts.0.ram_gb", 100),
        "hosts[0].ram_gb: running workloads need 144 > capacity 100",
    ),
    (
        "placement-on-excluded-model",
        put("workloads.2.placement", {"gpu": "h1-g1", "start": 4}),
        "workloads[2].placement.gpu: GPU 'h1-g1' (A100-40GB) is excluded by the workload's gpu_models",
    ),
    (
        "pinned-without-placement",
        put("workloads.3.pinned", True),
        "workloads[3].pinned: a pinned workload needs a placement",
    ),
    (
        "two-media-extension-on-one-gpu",
        chain(
            add_host(A30_HOST),
            add_workloads(
                {"id": "me-a", "profile": "1g.6gb+me", "placement": {"gpu": "h3-g0", "start": 0}},
                {"id": "me-b", "profile": "2g.12gb+me", "placement": {"gpu": "h3-g0", "start": 2}},
            ),
        ),
        "workloads[9].placement: second +me instance on GPU 'h3-g0' (one media-engine set, held by 'me-a')",
    ),
    (
        "more-than-max-instances",
        add_workloads(
            {"id": "me-a", "profile": "1g.5gb+me", "placement": {"gpu": "h1-g1", "start": 0}},
            {"id": "me-b", "profile": "1g.5gb+me", "placement": {"gpu": "h1-g1", "start": 1}},
        ),
        "workloads[9].placement: more than 1 1g.5gb+me instances on GPU 'h1-g1'",
    ),
    (
        "more-than-max-instances-custom-model",
        chain(
            with_custom(custom_model()),
            put("hosts.0.gpus.1.model", "Lab-40GB"),
            lambda d: d["custom_gpu_models"][0]["profiles"][0].update(max_instances=2),
            add_workloads(
                *(
                    {"id": f"small-{s}", "profile": "1g.5gb", "placement": {"gpu": "h1-g1", "start": s}}
                    for s in range(3)
                )
            ),
        ),
        "workloads[10].placement: more than 2 1g.5gb instances on GPU 'h1-g1'",
    ),
    # numbers
    ("negative-cpu", put("workloads.3.cpu", -1), "workloads[3].cpu: must be >= 0, got -1"),
    ("negative-host-ram", put("hosts.1.ram_gb", -5), "hosts[1].ram_gb: must be >= 0, got -5"),
    (
        "negative-start",
        put("workloads.0.placement.start", -4),
        "workloads[0].placement.start: must be >= 0, got -4",
    ),
    (
        "negative-migration-weight",
        put("workloads.0.migration_weight", -0.5),
        "workloads[0].migration_weight: must be >= 0, got -0.5",
    ),
    (
        "fractional-start",
        put("workloads.0.placement.start", 4.5),
        "workloads[0].placement.start: must be an integer, got 4.5",
    ),
    # types
    ("string-for-cpu", put("workloads.3.cpu", "16"), "workloads[3].cpu: must be a number, got a string"),
    ("boolean-for-number", put("hosts.0.weight", True), "hosts[0].weight: must be a number, got a boolean"),
    ("null-for-number", put("workloads.3.weight", None), "workloads[3].weight: must be a number, got null"),
    ("list-for-host", put("hosts.0", ["h1"]), "hosts[0]: must be an object, got a list"),
    (
        "list-for-placement",
        put("workloads.0.placement", ["h1-g0", 4]),
        "workloads[0].placement: must be an object, got a list",
    ),
    ("object-for-hosts", put("hosts", {}), "hosts: must be a list, got an object"),
    (
        "string-for-pinned",
        put("workloads.0.pinned", "yes"),
        "workloads[0].pinned: must be true or false, got a string",
    ),
    (
        "boolean-for-profile",
        put("workloads.3.profile", True),
        "workloads[3].profile: must be a profile name or id, got a boolean",
    ),
    ("number-for-id", put("workloads.3.id", 3), "workloads[3].id: must be a string, got a number"),
    ("empty-id", put("workloads.3.id", " "), "workloads[3].id: must not be empty"),
    # missing and unknown fields
    ("missing-hosts", drop("hosts"), "hosts: missing required field"),
    ("missing-workload-id", drop("workloads.3.id"), "workloads[3].id: missing required field"),
    ("missing-profile", drop("workloads.3.profile"), "workloads[3].profile: missing required field (or give memory_gb instead)"),
    ("missing-gpu-model", drop("hosts.0.gpus.0.model"), "hosts[0].gpus[0].model: missing required field"),
    (
        "missing-start",
        drop("workloads.0.placement.start"),
        "workloads[0].placement.start: missing required field",
    ),
    (
        "unknown-field-typo",
        chain(drop("workloads.3.ram_gb"), put("workloads.3.rm_gb", 128)),
        "workloads[3].rm_gb: unknown field (allowed: cpu, gpu_models, id, memory_gb, migration_weight, "
        "min_compute, pinned, placement, profile, ram_gb, weight)",
    ),
    (
        "unknown-host-field",
        put("hosts.0.gpu", []),
        "hosts[0].gpu: unknown field (allowed: cpu, gpus, id, ram_gb, weight)",
    ),
    # custom GPU models
    (
        "custom-model-built-in-name",
        with_custom(custom_model("A100-40GB")),
        "custom_gpu_models[0].model: 'A100-40GB' is a built-in model; choose another name",
    ),
    (
        "custom-model-twice",
        with_custom(custom_model(), custom_model()),
        "custom_gpu_models[1].model: duplicate model 'Lab-40GB'",
    ),
    (
        "custom-models-not-a-list",
        put("custom_gpu_models", {}),
        "custom_gpu_models: must be a list, got an object",
    ),
    (
        "custom-model-not-an-object",
        with_custom("A100-40GB"),  # type: ignore[arg-type]
        "custom_gpu_models[0]: must be an object, got a string",
    ),
    (
        "custom-model-too-many-slots",
        with_custom(custom_model(slots=17)),
        "custom_gpu_models[0].slots: must be <= 16, got 17",
    ),
    (
        "custom-model-missing-profiles",
        lambda d: d.update(custom_gpu_models=[{k: v for k, v in custom_model().items() if k != "profiles"}]),
        "custom_gpu_models[0].profiles: missing required field",
    ),
    (
        "custom-placement-past-the-gpu",
        chain(
            with_custom(custom_model()),
            lambda d: d["custom_gpu_models"][0]["profiles"][6].update(placements=[[1, 8]]),
        ),
        "custom_gpu_models[0].profiles[6].placements[0]: [1, 8] runs past slot 7",
    ),
    (
        "custom-placement-wrong-size",
        chain(
            with_custom(custom_model()),
            lambda d: d["custom_gpu_models"][0]["profiles"][6].update(placements=[[0, 4]]),
        ),
        "custom_gpu_models[0].profiles[6].placements[0]: size 4 differs from memory_slots 8",
    ),
    (
        "custom-duplicate-profile-name",
        chain(
            with_custom(custom_model()),
            lambda d: d["custom_gpu_models"][0]["profiles"][1].update(name="1g.5gb"),
        ),
        "custom_gpu_models[0].profiles[1].name: '1g.5gb' already names profiles[0]",
    ),
    (
        "custom-gpu-slices-wrong-count",
        with_custom(custom_model(gpu_slices=[[0, 1, 2, 3], [4, 5, 6, 7]])),
        "custom_gpu_models[0].gpu_slices: must list 7 compute slices, got 2",
    ),
    (
        "custom-too-much-compute",
        chain(
            with_custom(custom_model()), lambda d: d["custom_gpu_models"][0]["profiles"][2].update(compute=2)
        ),
        "custom_gpu_models[0].profiles: non-overlapping placements can use 8 compute slices > compute_slices 7",
    ),
    (
        "custom-unknown-field",
        with_custom(custom_model(slot=8)),
        "custom_gpu_models[0].slot: unknown field (allowed: compute_slices, gpu_slices, memory_gb, model, "
        "profiles, slots, source_note, variants)",
    ),
]


def _cli_line(capsys: pytest.CaptureFixture[str], path: Path) -> tuple[int, str, str]:
    code = main(["validate", str(path)])
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_bad_instance_names_path_and_rule(edit: Edit, message: str) -> None:
    with pytest.raises(InstanceError) as info:
        instance_from_dict(edited(edit))
    assert str(info.value) == message


@pytest.mark.parametrize(("edit", "message"), [c[1:] for c in BAD], ids=[c[0] for c in BAD])
def test_validate_refuses_bad_instance_in_one_line(
    edit: Edit, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(edited(edit)))
    code, out, err = _cli_line(capsys, path)
    assert (code, out, err) == (2, "", f"mipopt: error: {path}: {message}\n")


# files that are not (standard) JSON, or not an object: (id, text, message)
BAD_TEXT: list[tuple[str, str, str]] = [
    (
        "not-json",
        "{hosts: []}",
        "line 1 column 2: not valid JSON: Expecting property name enclosed in double quotes",
    ),
    ("empty-file", "", "line 1 column 1: not valid JSON: Expecting value"),
    (
        "nan-literal",
        json.dumps(BASE).replace('"cpu": 16', '"cpu": NaN', 1),
        "workloads[0].cpu: NaN is not valid JSON (a number must be finite)",
    ),
    (
        "infinity-literal",
        json.dumps(BASE).replace('"cpu": 16', '"cpu": -Infinity', 1),
        "workloads[0].cpu: -Infinity is not valid JSON (a number must be finite)",
    ),
    # a literal too large for a float would parse as inf: the reader names it
    (
        "overflowing-number",
        json.dumps(edited(put("workloads.3.cpu", "BIG"))).replace('"BIG"', "1e400"),
        "workloads[3].cpu: 1e400 is beyond the range of a float (1.8e308)",
    ),
    ("list-document", "[]", "(document): must be an object, got a list"),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in BAD_TEXT], ids=[c[0] for c in BAD_TEXT])
def test_unparsable_file_in_one_line(
    text: str, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    with pytest.raises(InstanceError) as info:
        load_instance(path)
    assert str(info.value) == message
    assert _cli_line(capsys, path) == (2, "", f"mipopt: error: {path}: {message}\n")


def test_missing_file_in_one_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "nope.json"
    assert _cli_line(capsys, path) == (
        2,
        "",
        f"mipopt: error: {path}: cannot read {path}: No such file or directory\n",
    )


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_non_finite_numbers_from_python(value: float) -> None:
    # json.dumps would write NaN/Infinity literals, refused before any field is read; from
    # Python the number rule itself must refuse them
    with pytest.raises(InstanceError) as info:
        instance_from_dict(edited(put("hosts.0.cpu", value)))
    assert str(info.value) == f"hosts[0].cpu: must be a finite number, got {value}"


def test_quickstart_validates(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(QUICKSTART)]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert out == (
        f"{QUICKSTART}: valid instance 'quickstart': 2 hosts, 3 GPUs, 3 running and 5 new workloads\n"
    )


@pytest.mark.parametrize(
    ("path", "tag"),
    [
        (QUICKSTART.parent / "swap.target.json", "mipopt-solution"),
        (QUICKSTART.parents[1] / "docs" / "examples" / "hand_solution.json", "mipopt-solution"),
    ],
    ids=["solver-solution", "hand-solution"],
)
def test_another_document_is_refused_by_its_tag(path: Path, tag: str) -> None:
    """Not for the fields an instance needs and it lacks (``hosts``), which would mislead."""
    with pytest.raises(InstanceError) as info:
        instance_from_dict(json.loads(path.read_text()))
    assert str(info.value) == f"format: must be 'mipopt-instance', got {tag!r}"


# --- round trips, builder, replace


def test_round_trip_is_equal() -> None:
    inst = load_instance(QUICKSTART)
    back = instance_from_dict(instance_to_dict(inst))
    assert back == inst
    # and through JSON text, as a file would carry it
    assert instance_from_dict(json.loads(json.dumps(instance_to_dict(inst)))) == inst


@settings(max_examples=30, deadline=None)
@given(instances())
def test_random_instances_round_trip(inst: Instance) -> None:
    assert instance_from_dict(json.loads(json.dumps(instance_to_dict(inst)))) == inst


def test_builder_makes_the_same_instance_as_the_json() -> None:
    b = InstanceBuilder("quickstart", description=BASE["description"])
    b.add_host("h1", {"h1-g0": "A100-40GB", "h1-g1": "A100-40GB"}, cpu=64, ram_gb=512, weight=1.0)
    b.add_host("h2", {"h2-g0": "H100-80GB"}, cpu=32, ram_gb=256, weight=1.5)
    b.add_workload("train-a", "3g.20gb", cpu=16, ram_gb=128, placement=("h1-g0", 4))
    b.add_workload("notebook-b", "1g.5gb", cpu=2, ram_gb=16, placement=("h1-g0", 0))
    b.add_workload(
        "llm-c", "2g.20gb", cpu=8, ram_gb=64, gpu_models=["H100-80GB"], placement=("h2-g0", 4), pinned=True
    )
    b.add_workload("batch-d", "4g.20gb", cpu=16, ram_gb=128)
    b.add_workload("infer-e", "1g.10gb", cpu=4, ram_gb=32)
    b.add_workload("llm-f", "7g.80gb", cpu=16, ram_gb=128, gpu_models=["H100-80GB"])
    b.add_workload("infer-g", "2g.10gb", cpu=4, ram_gb=32, weight=2.0)
    b.add_workload("llm-h", "3g.40gb", cpu=8, ram_gb=64, gpu_models=["H100-80GB"])
    assert b.build() == load_instance(QUICKSTART)


def test_builder_checks_on_build() -> None:
    b = InstanceBuilder("tiny")
    b.add_host("h1", {"g0": "A100-40GB"})
    b.add_workload("w1", "3g.20gb", placement=("g0", 4))
    b.add_workload("w2", "4g.20gb", placement=("g0", 2))
    with pytest.raises(InstanceError) as info:
        b.build()
    assert (
        str(info.value) == "workloads[1].placement.start: 2 is not a legal start of 4g.20gb on A100-40GB (0)"
    )


def test_builder_unknown_model() -> None:
    b = InstanceBuilder("tiny")
    with pytest.raises(InstanceError) as info:
        b.add_host("h1", {"g0": "A100-41GB"})
    assert str(info.value).startswith("hosts[0].gpus: unknown GPU model 'A100-41GB' (known: A30-24GB, ")


def test_replace_revalidates() -> None:
    inst = load_instance(QUICKSTART)
    with pytest.raises(InstanceError) as info:
        dataclasses.replace(inst, workloads=(*inst.workloads, inst.workloads[0]))
    assert str(info.value) == "workloads[8].id: duplicate id 'train-a' (also workloads[0])"

    h1 = dataclasses.replace(inst.hosts[0], cpu=17.0)
    with pytest.raises(InstanceError) as info:
        dataclasses.replace(inst, hosts=(h1, inst.hosts[1]))
    assert str(info.value) == "hosts[0].cpu: running workloads need 18 > capacity 17"

    # a valid replacement rebuilds the lookups
    smaller = dataclasses.replace(inst, workloads=inst.workloads[:3])
    assert not smaller.has_workload("batch-d")
    assert smaller.workload("llm-c").pinned


def test_instance_is_frozen() -> None:
    inst = load_instance(QUICKSTART)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inst.name = "other"  # type: ignore[misc]


# --- profiles by id, custom models


def test_profile_given_as_id() -> None:
    # -lgip id 5 is 4g.20gb on A100-40GB and 4g.40gb on H100-80GB; 9 is 3g on both
    d = edited(put("workloads.3.profile", 5), put("workloads.0.profile", 9))
    inst = instance_from_dict(d)
    a100, h100 = get_model("A100-40GB"), get_model("H100-80GB")
    assert inst.profile_on(inst.workload("batch-d"), a100) == a100.profile("4g.20gb")
    assert inst.profile_on(inst.workload("batch-d"), h100) == h100.profile("4g.40gb")
    assert inst.profile_on(inst.workload("llm-f"), a100) is None  # gpu_models exclude it
    named = solve(load_instance(QUICKSTART), "ff")
    by_id = solve(inst, "ff")
    assert by_id.placements == named.placements
    assert verify(inst, by_id).objectives == verify(load_instance(QUICKSTART), named).objectives


def test_custom_model_from_info_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "A100-40GB", "--json"]) == 0
    model = json.loads(capsys.readouterr().out)
    model["model"] = "Lab-A100"
    d = {
        "format": "mipopt-instance",
        "version": 1,
        "name": "lab",
        "custom_gpu_models": [model],
        "hosts": [
            {"id": "h1", "gpus": [{"id": "g0", "model": "Lab-A100"}, {"id": "g1", "model": "A100-40GB"}]}
        ],
        "workloads": [
            {"id": "run", "profile": "3g.20gb", "placement": {"gpu": "g0", "start": 4}},
            {"id": "lab-only", "profile": "4g.20gb", "gpu_models": ["Lab-A100"]},
            {"id": "stock-only", "profile": "7g.40gb", "gpu_models": ["A100-40GB"]},
        ],
    }
    inst = instance_from_dict(d)
    assert [m.name for m in inst.custom_models] == ["Lab-A100"]
    assert inst.gpu("g0").model.slots == 8
    assert inst.gpu("g0").model.profiles == get_model("A100-40GB").profiles
    sol = solve(inst, "ff")
    assert {a.workload: (a.gpu, a.start) for a in sol.placements} == {
        "run": ("g0", 4),
        "lab-only": ("g0", 0),
        "stock-only": ("g1", 0),
    }
    assert verify(inst, sol).valid
    assert instance_from_dict(instance_to_dict(inst)) == inst


def test_custom_model_unknown_before_declared() -> None:
    # a GPU may only use a custom model the file declares
    d = edited(put("hosts.0.gpus.0.model", "Lab-40GB"))
    with pytest.raises(InstanceError) as info:
        instance_from_dict(d)
    assert str(info.value).startswith("hosts[0].gpus[0].model: unknown GPU model 'Lab-40GB'")
