"""What imports know and methods must respect: GPUs of unknown layout, idle GPU instances, notes.

Every method of the registry places nothing on a GPU of unknown layout, and reuses an idle
instance of a request's profile on the GPU it chose; every answer goes through the verifier.
"""

from __future__ import annotations

import json

import pytest

import mipopt
from mipopt.instance import Assignment, InstanceBuilder, instance_from_dict, instance_to_dict
from mipopt.state.idle import idle_fates, reuse_idle

METHODS = [m.name for m in mipopt.methods()] + ["adapter(ff)"]


def _cluster() -> mipopt.Instance:
    """n1: g0 holds a 4g.20gb and an idle 1g.5gb at 6; g1 has an unknown layout; g2 an idle 3g.20gb at 4."""
    b = InstanceBuilder("known-and-not")
    b.add_host("n1", {"g0": "A100-40GB", "g1": "A100-40GB", "g2": "A100-40GB"}, unknown_layout=["g1"])
    b.add_idle("g0", "1g.5gb", 6, gpu_instance_id=13)
    b.add_idle("g2", "3g.20gb", 4, gpu_instance_id=2)
    b.add_workload("r", "4g.20gb", placement=("g0", 0), gpu_instance_id=5)
    for k in range(3):
        b.add_workload(f"w{k}", "3g.20gb")
    b.add_workload("small", "1g.5gb")
    b.notes.append("n1: imported from a test")
    return b.build()


def test_the_json_form_keeps_layout_idle_and_notes() -> None:
    inst = _cluster()
    data = instance_to_dict(inst)
    assert data["hosts"][0]["gpus"][1] == {"id": "g1", "model": "A100-40GB", "layout": "unknown"}
    assert data["idle"] == [
        {"gpu": "g0", "profile": "1g.5gb", "start": 6, "gpu_instance_id": 13},
        {"gpu": "g2", "profile": "3g.20gb", "start": 4, "gpu_instance_id": 2},
    ]
    assert data["notes"] == ["n1: imported from a test"]
    assert instance_from_dict(json.loads(json.dumps(data))) == inst
    assert inst.unknown_layout == ("g1",)
    assert [g.id for g in inst.placeable().gpus] == ["g0", "g2"]


@pytest.mark.parametrize("method", METHODS)
def test_every_method_places_nothing_on_an_unknown_layout_and_reuses_idle_instances(method: str) -> None:
    inst = _cluster()
    sol = mipopt.solve(inst, method, **({"time_limit_s": 30} if method.startswith("exact") else {}))
    report = mipopt.verify(inst, sol)
    assert report.valid, report.violations
    placed = sol.placed()
    assert all(gpu != "g1" for gpu, _ in placed.values())
    # a 1g.5gb on g0 sits on the idle one; a 3g.20gb on g2 at the free half sits on the idle one first
    if placed.get("small", ("", 0))[0] == "g0":
        assert placed["small"] == ("g0", 6)
    on_g2 = sorted((s, w) for w, (g, s) in placed.items() if g == "g2")
    if len(on_g2) == 1 and on_g2[0][1].startswith("w"):  # a lone new 3g.20gb
        assert on_g2[0][0] == 4


def test_the_verifier_refuses_a_placement_on_an_unknown_layout() -> None:
    inst = _cluster()
    sol = mipopt.solve(inst, "ff")
    bad = mipopt.Solution(inst.name, "by hand", sol.termination, sol.status, (Assignment("w2", "g1", 0),), ())
    violations = mipopt.verify(inst, bad).violations
    assert violations[0] == (
        "placements[0].gpu: 'g1' has an unknown layout (its MIG devices were not read): nothing may be placed on it"
    )


@pytest.mark.parametrize(
    ("change", "path", "rule"),
    [
        (lambda d: d["idle"].append({"gpu": "g0", "profile": "1g.5gb", "start": 2}), "idle[2]", "overlaps 'r' on GPU 'g0' at slot 2"),
        (lambda d: d["idle"].append({"gpu": "g2", "profile": "3g.20gb", "start": 2}), "idle[2].start", "2 is not a legal start of 3g.20gb on A100-40GB (0, 4)"),
        (lambda d: d["idle"].append({"gpu": "g1", "profile": "3g.20gb", "start": 0}), "idle[2].gpu", "GPU 'g1' has an unknown layout"),
        (lambda d: d["idle"].append({"gpu": "g0", "profile": "1g.5gb", "start": 5, "gpu_instance_id": 5}), "idle[2].gpu_instance_id", "GPU instance 5 on GPU 'g0' is also 'r'"),
        (lambda d: d["hosts"][0]["gpus"][0].update(layout="partial"), "hosts[0].gpus[0].layout", "must be 'unknown' (omit it when known), got 'partial'"),
        (lambda d: d["workloads"][0]["placement"].update(gpu="g1"), "workloads[0].placement.gpu", "GPU 'g1' has an unknown layout: nothing can be placed on it"),
        (lambda d: d["notes"].append("bell\x07"), "notes[1]", "must be printable text: 'bell\\x07' has '\\x07' at 4"),
    ],
)  # fmt: skip
def test_bad_idle_layout_and_notes_are_refused_with_their_path(change, path: str, rule: str) -> None:  # type: ignore[no-untyped-def]
    data = instance_to_dict(_cluster())
    change(data)
    with pytest.raises(mipopt.InstanceError) as err:
        instance_from_dict(data)
    assert (err.value.path, err.value.rule) == (path, rule)


def test_idle_fates_and_reuse_by_hand() -> None:
    inst = _cluster()
    # small lands at g0:2 (its method's choice): reuse moves it onto the idle 1g.5gb at 6
    assert reuse_idle(inst, {"r": ("g0", 0), "small": ("g0", 4)}) == {"r": ("g0", 0), "small": ("g0", 6)}
    fates = idle_fates(inst, {"r": ("g0", 0), "small": ("g0", 6), "w0": ("g2", 0)})
    assert [(d.idle.gpu, d.fate, d.workload) for d in fates] == [
        ("g0", "reuse", "small"),
        ("g2", "keep", None),
    ]
    fates = idle_fates(inst, {"r": ("g0", 0), "w0": ("g2", 2)})
    assert [d.fate for d in fates] == ["keep", "destroy"]
