"""Preprocessing: candidate placements, IBM's free partitions (WPM Alg. 1), equivalence classes."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from factories import instances
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.catalog import GpuModel, builtin_models, get_model
from mipopt.cli import main
from mipopt.exact.preprocess import (
    candidates,
    fixed_masks,
    free_partitions,
    gpu_classes,
    gpu_partitions,
    host_classes,
    slot_order,
    workload_classes,
)
from mipopt.geometry import preference_order
from mipopt.instance import Instance, InstanceBuilder
from mipopt.io import load_instance

QUICKSTART = Path(__file__).resolve().parents[2] / "instances" / "quickstart.json"
A100_80 = get_model("A100-80GB")


def one_gpu(model: GpuModel, running: list[tuple[str, int]], pinned: bool = True) -> Instance:
    """One host, GPU ``g``; ``running`` as (profile, start)."""
    b = InstanceBuilder(name="one-gpu")
    b.add_host("h", {"g": model})
    for i, (profile, start) in enumerate(running):
        b.add_workload(f"r{i}", profile, placement=("g", start), pinned=pinned)
    return b.build()


def parts(model: GpuModel, running: list[tuple[str, int]], merged: bool = False) -> list[tuple[str, int]]:
    (gp,) = gpu_partitions(one_gpu(model, running), merged=merged)
    return [(q.name, q.start) for q in gp.partitions]


# --- preference order (IBM Table 1) and Alg. 1's slot order


def test_preference_order_is_table_1() -> None:
    orders = {p.name: preference_order(A100_80, p) for p in A100_80.profiles}
    assert orders["1g.10gb"] == (6, 4, 5, 0, 1, 2, 3)
    assert orders["1g.20gb"] == (6, 4, 0, 2)
    assert orders["2g.20gb"] == (4, 0, 2)
    assert orders["3g.40gb"] == (4, 0)
    assert orders["4g.40gb"] == (0,)
    assert orders["7g.80gb"] == (0,)
    assert slot_order(A100_80) == (0, 4, 2, 6, 5, 1, 3, 7)


@pytest.mark.parametrize("model", list(builtin_models().values()), ids=lambda m: m.name)
def test_slot_order_agrees_with_ascending_walk_on_every_state(model: GpuModel) -> None:
    for mask in range(1 << model.slots):
        assert free_partitions(model, mask) == free_partitions(model, mask, order=range(model.slots))


# --- free partitions: the paper's examples and hand-checked GPUs


def test_figure_7_gpu() -> None:
    fig7 = [("1g.10gb", 0), ("1g.10gb", 5), ("1g.10gb", 6)]
    expected = [("1g.10gb", 1), ("2g.20gb", 2), ("1g.10gb", 4)]
    assert parts(A100_80, fig7) == expected
    # run 1..4 has 4 compute and 4 memory slots but no 3g/4g start: Assumption 1 fails, no merge
    assert parts(A100_80, fig7, merged=True) == expected
    (gp,) = gpu_partitions(one_gpu(A100_80, fig7))
    assert [(q.compute, q.slots, q.memory_gb) for q in gp.partitions] == [(1, 1, 10), (2, 2, 20), (1, 1, 10)]
    names = {q.name for q in gp.partitions}
    assert not any(n.startswith(("3g", "4g")) for n in names)


def test_last_slot_1g20gb_and_its_merged_form() -> None:
    assert parts(A100_80, [("1g.20gb", 6)]) == [("4g.40gb", 0), ("2g.20gb", 4)]
    (gp,) = gpu_partitions(one_gpu(A100_80, [("1g.20gb", 6)]), merged=True)
    (run,) = gp.partitions
    assert (run.name, run.start, run.slots, run.compute, run.memory_gb) == ("6g.60gb", 0, 6, 6, 60.0)
    assert run.merged and run.profile is None
    assert [(q.name, q.start) for q in run.parts] == [("4g.40gb", 0), ("2g.20gb", 4)]
    assert run.mask == 0b00111111


def test_hand_checked_gpus() -> None:
    assert [(q.name, q.start) for q in free_partitions(A100_80, 0)] == [("7g.80gb", 0)]
    assert free_partitions(A100_80, 0xFF) == ()
    assert parts(A100_80, [("3g.40gb", 4)]) == [("4g.40gb", 0)]
    assert parts(A100_80, [("2g.20gb", 2)]) == [("2g.20gb", 0), ("3g.40gb", 4)]
    # 4g.40gb allows one instance: a fixed one at 0 leaves 3g at 4, not a second 4g anywhere
    assert parts(A100_80, [("4g.40gb", 0)]) == [("3g.40gb", 4)]
    # slot 7 alone (1g.10gb at 6) hosts nothing; 3g at 4 is blocked
    assert parts(A100_80, [("1g.10gb", 6)]) == [("4g.40gb", 0), ("2g.20gb", 4)]
    # runs of Alg. 1 partitions with a 3g inside merge only where Assumption 1 holds
    assert parts(A100_80, [("1g.10gb", 6)], merged=True) == [("6g.60gb", 0)]
    assert parts(A100_80, [("1g.10gb", 0)], merged=True) == [("1g.10gb", 1), ("2g.20gb", 2), ("3g.40gb", 4)]


def test_quickstart_partitions_around_all_running() -> None:
    inst = load_instance(QUICKSTART)
    found = {g.gpu: [(q.name, q.start) for q in g.partitions] for g in gpu_partitions(inst)}
    assert found == {"h1-g0": [("1g.5gb", 1), ("2g.10gb", 2)], "h2-g0": [("4g.40gb", 0), ("1g.20gb", 6)]}
    merged = {g.gpu: [(q.name, q.start) for q in g.partitions] for g in gpu_partitions(inst, merged=True)}
    assert merged["h1-g0"] == [("3g.15gb", 1)]
    # only the pinned llm-c fixed: h2-g0 alone
    assert [g.gpu for g in gpu_partitions(inst, ["llm-c"])] == ["h2-g0"]


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(list(builtin_models().values())), st.integers(0, 255), st.booleans())
def test_partitions_are_legal_and_disjoint(model: GpuModel, raw: int, merged: bool) -> None:
    mask = raw & model.full_mask
    found = free_partitions(model, mask, merged=merged)
    taken = mask
    for q in found:
        assert not taken & q.mask
        taken |= q.mask
        for piece in q.parts or (q,):
            assert piece.profile is not None
            profile = model.profile(piece.profile)
            assert piece.start in profile.starts and piece.slots == profile.memory_slots
    # maximal: no base profile still fits around the partitions
    for p in model.profiles:
        if p.base:
            assert all(taken & p.slot_mask(s) for s in p.starts)


# --- candidates


def test_quickstart_candidates_around_pinned() -> None:
    inst = load_instance(QUICKSTART)
    cand = candidates(inst)
    assert cand.fixed == {"llm-c"}
    assert [len(g.placements) for g in cand.gpus] == [25, 25, 17]
    h2 = cand.gpu("h2-g0")
    model = h2.model
    assert h2.starts(model.index("1g.10gb")) == (0, 1, 2, 3, 6)  # type: ignore[arg-type]
    assert h2.starts(model.index("3g.40gb")) == (0,)  # type: ignore[arg-type]
    assert h2.starts(model.index("7g.80gb")) == ()  # type: ignore[arg-type]
    assert int(h2.matrix().sum()) == 17
    counts = {w: len(c) for w, c in cand.workloads.items()}
    assert counts == {
        "train-a": 4,
        "notebook-b": 14,
        "batch-d": 2,
        "infer-e": 13,
        "llm-f": 0,
        "infer-g": 6,
        "llm-h": 1,
    }
    assert [(c.gpu, c.start, c.profile) for c in cand.workloads["llm-h"]] == [("h2-g0", 0, "3g.40gb")]
    assert fixed_masks(inst).tolist() == [0, 0, 0b00110000]


def test_candidates_with_all_running_fixed() -> None:
    inst = load_instance(QUICKSTART)
    cand = candidates(inst, [w.id for w in inst.running])
    assert set(cand.workloads) == {"batch-d", "infer-e", "llm-f", "infer-g", "llm-h"}
    assert fixed_masks(inst, cand.fixed).tolist() == [0b11110001, 0, 0b00110000]
    # h1-g0 keeps slots 1..3: 1g.5gb and its +me at 1,2,3, 1g.10gb and 2g.10gb at 2
    assert len(cand.gpu("h1-g0").placements) == 8
    assert [(c.gpu, c.start) for c in cand.workloads["infer-g"]] == [
        ("h1-g0", 2),
        ("h1-g1", 0),
        ("h1-g1", 2),
        ("h1-g1", 4),
    ]


def test_media_and_max_instances_close_candidates() -> None:
    inst = one_gpu(A100_80, [("1g.10gb+me", 0), ("2g.20gb", 2)])
    g = candidates(inst).gpu("g")
    m = g.model
    assert g.starts(m.index("1g.10gb+me")) == ()  # type: ignore[arg-type]
    assert g.starts(m.index("1g.10gb")) == (1, 4, 5, 6)  # type: ignore[arg-type]
    inst = one_gpu(A100_80, [("4g.40gb", 0)])
    g = candidates(inst).gpu("g")
    assert g.starts(m.index("4g.40gb")) == ()  # type: ignore[arg-type]
    assert g.starts(m.index("3g.40gb")) == (4,)  # type: ignore[arg-type]
    # three 1g.20gb fixed: the fourth and last is allowed at 6, not a fifth anywhere
    inst = one_gpu(A100_80, [("1g.20gb", 0), ("1g.20gb", 2), ("1g.20gb", 4)])
    assert candidates(inst).gpu("g").starts(m.index("1g.20gb")) == (6,)  # type: ignore[arg-type]
    inst = one_gpu(A100_80, [("1g.20gb", 0), ("1g.20gb", 2), ("1g.20gb", 4), ("1g.20gb", 6)])
    assert candidates(inst).gpu("g").placements == ()


def test_unpinned_running_workloads_are_not_fixed_by_default() -> None:
    inst = one_gpu(A100_80, [("7g.80gb", 0)], pinned=False)
    cand = candidates(inst)
    assert cand.fixed == frozenset() and len(cand.workloads["r0"]) == 1
    with pytest.raises(ValueError, match="'nope' is not in instance"):
        candidates(inst, ["nope"])


@settings(max_examples=40, deadline=None)
@given(instances())
def test_candidates_are_legal_around_fixed(inst: Instance) -> None:
    cand = candidates(inst)
    masks = fixed_masks(inst)
    for g, mask in zip(cand.gpus, masks, strict=True):
        for p, s in g.placements:
            profile = g.model.profiles[p]
            assert s in profile.starts and not int(mask) & profile.slot_mask(s)
    for w in inst.workloads:
        if w.pinned:
            assert w.id not in cand.workloads
            continue
        for c in cand.workloads[w.id]:
            profile = inst.profile_on(w, inst.gpu(c.gpu).model)
            assert profile is not None and profile.name == c.profile
    assert isinstance(masks, np.ndarray) and masks.dtype == np.int64


# --- equivalence classes


def classes_instance() -> Instance:
    b = InstanceBuilder(name="classes")
    b.add_host("h1", {"a": "A100-80GB", "b": "A100-80GB", "c": "H100-80GB"}, cpu=64, ram_gb=512)
    b.add_host("h2", {"d": "A100-80GB", "e": "A100-80GB"}, cpu=64, ram_gb=512)
    b.add_host("h3", {"f": "A100-80GB", "g": "A100-80GB"}, cpu=64, ram_gb=512)
    b.add_host("h4", {"i": "A100-80GB", "j": "A100-80GB"}, cpu=64, ram_gb=512, weight=2.0)
    b.add_host("h5", {"k": "A100-80GB", "l": "A100-80GB"}, cpu=64, ram_gb=512)
    b.add_workload("run", "1g.10gb", placement=("k", 0))
    b.add_workload("n1", "2g.20gb", cpu=4)
    b.add_workload("n2", "3g.40gb")
    b.add_workload("n3", "2g.20gb", cpu=4)
    b.add_workload("n4", 14, cpu=4)  # 2g.20gb by id
    b.add_workload("n5", "2g.20gb", cpu=4, gpu_models=["A100-80GB"])
    b.add_workload("n6", "2g.20gb", cpu=4, weight=2.0)
    b.add_workload("n7", "3g.40gb", gpu_models=["A100-80GB", "H100-80GB"])
    return b.build()


def test_workload_classes() -> None:
    classes = workload_classes(classes_instance())
    assert [c.members for c in classes] == [("n1", "n3", "n4"), ("n2", "n7"), ("n5",), ("n6",)]
    assert classes[0].representative == "n1" and len(classes[0]) == 3


def test_gpu_and_host_classes() -> None:
    inst = classes_instance()
    assert [(c.host, c.model, c.members) for c in gpu_classes(inst)] == [
        ("h1", "A100-80GB", ("a", "b")),
        ("h1", "H100-80GB", ("c",)),
        ("h2", "A100-80GB", ("d", "e")),
        ("h3", "A100-80GB", ("f", "g")),
        ("h4", "A100-80GB", ("i", "j")),
        ("h5", "A100-80GB", ("l",)),
    ]
    # h5 runs a workload; h4 weighs more; h1 has another model list
    assert [c.members for c in host_classes(inst)] == [("h1",), ("h2", "h3"), ("h4",)]


# --- command line


def test_cli_partitions(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["partitions", str(QUICKSTART)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[1].split() == ["h1-g0", "A100-40GB", "#...####", "1g.5gb@1,", "2g.10gb@2"]
    assert out[2].split() == ["h2-g0", "H100-80GB", "....##..", "4g.40gb@0,", "1g.20gb@6"]
    assert main(["partitions", str(QUICKSTART), "--merged", "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data[0] == {
        "gpu": "h1-g0",
        "model": "A100-40GB",
        "partitions": [{"name": "3g.15gb", "start": 1, "slots": 3, "compute": 3, "memory_gb": 15.0}],
    }
    assert data[1]["partitions"][0] == {
        "profile": "4g.40gb",
        "start": 0,
        "slots": 4,
        "compute": 4,
        "memory_gb": 40.0,
    }


def test_cli_partitions_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text("{}")
    assert main(["partitions", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"mipopt: error: {bad}") and err.count("\n") == 1
