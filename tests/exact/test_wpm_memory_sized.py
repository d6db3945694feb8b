"""IBM's WPM model on memory-sized requests: counted at the smallest profile that fits, which
loses nothing on the built-in catalog; refused in one line where it would."""

from __future__ import annotations

from dataclasses import replace

import pytest
from factories import INSTANCES

import mipopt
from mipopt.catalog import GpuModel, Profile, builtin_models
from mipopt.errors import InstanceError
from mipopt.exact.wpm.model import smallest_dominates
from mipopt.instance import Instance, InstanceBuilder
from mipopt.instance.types import fitting_profiles
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance


@pytest.mark.parametrize("name", sorted(builtin_models()))
def test_the_smallest_fitting_profile_does_all_a_larger_one_does_on_every_builtin_model(name: str) -> None:
    model = builtin_models()[name]
    asked = 0
    for memory_gb in sorted({p.memory_gb for p in model.profiles}):
        for min_compute in [None, *sorted({p.compute for p in model.profiles})]:
            fitting = fitting_profiles(model, memory_gb, min_compute)
            asked += bool(fitting)
            assert smallest_dominates(fitting) is None, (memory_gb, min_compute, [p.name for p in fitting])
    assert asked >= 4


@pytest.mark.parametrize("use_case", ["initial", "compaction", "reconfiguration", "joint"])
def test_wpm_solves_the_example_at_the_smallest_profiles(use_case: str) -> None:
    inst = mipopt.load_instance(INSTANCES / "memory_sized.json")
    sol = mipopt.solve(inst, "exact", model="wpm", use_case=use_case, time_limit_s=20)
    assert verify(inst, sol).valid
    for a in sol.placements:
        w = inst.workload(a.workload)
        default = inst.profile_on(w, inst.gpu(a.gpu).model)
        assert a.profile == (default.name if w.memory_sized else None)
    if use_case in ("initial", "joint"):  # everything but big-60gb, which only a 7g.80gb holds
        assert sol.rejected == ("big-60gb",) and sol.objectives.acceptance == 5


def as_memory_sized(inst: Instance) -> Instance:
    """Each new workload of a plain profile asking for its memory and compute instead of naming
    it (``+me`` ones keep their name): on one model the smallest profile that fits is the named
    one, so every answer is the same."""
    model = inst.gpus[0].model
    workloads = tuple(
        w
        if w.running or not model.profile(w.profile).base
        else replace(
            w,
            profile=None,
            memory_gb=model.profile(w.profile).memory_gb,
            min_compute=model.profile(w.profile).compute,
        )
        for w in inst.workloads
    )
    return replace(inst, workloads=workloads)


@pytest.mark.parametrize("use_case", ["initial", "joint"])
def test_a_memory_sized_twin_of_an_ibm_instance_has_the_same_optimum(use_case: str) -> None:
    named = ibm_instance(8, seed=1)
    sized = as_memory_sized(named)
    assert sum(w.memory_sized for w in sized.workloads) > len(named.new) / 2
    a = mipopt.solve(named, "exact", model="wpm", use_case=use_case, time_limit_s=30)
    b = mipopt.solve(sized, "exact", model="wpm", use_case=use_case, time_limit_s=30)
    assert verify(sized, b).valid
    assert b.objectives == a.objectives
    model = sized.gpus[0].model
    for x in b.placements:
        w = named.workload(x.workload)
        assert x.profile == (model.profile(w.profile).name if sized.workload(w.id).memory_sized else None)


def test_wpm_refuses_a_model_where_the_smallest_profile_does_less() -> None:
    """On this 8-slot model 1g.10gb starts only in the first half: a 10 GB request at 2g.20gb
    could go where 1g.10gb cannot, so counting it at 1g.10gb could lose an answer."""
    one = Profile("1g.10gb", 19, 1, 1, 10.0, 4, ((0, 1), (1, 1), (2, 1), (3, 1)))
    two = Profile("2g.20gb", 14, 2, 2, 20.0, 4, ((0, 2), (2, 2), (4, 2), (6, 2)))
    lab = GpuModel("LAB-HALF", 8, 7, 80.0, (one, two), (*((s,) for s in range(6)), (6, 7)))
    b = InstanceBuilder("half", custom_models=[lab])
    b.add_host("h", gpus={"g": lab})
    b.add_workload("named", "1g.10gb")
    b.add_workload("sized", memory_gb=10)
    inst = b.build()
    assert [p.name for p in inst.profiles_on(inst.workload("sized"), lab)] == ["1g.10gb", "2g.20gb"]
    with pytest.raises(InstanceError) as info:
        mipopt.solve(inst, "exact", model="wpm", time_limit_s=10)
    assert str(info.value) == (
        "workloads[1].memory_gb: model wpm counts 'sized' at its smallest profile, 1g.10gb, which on "
        "LAB-HALF does not do all 2g.20gb does (compute, slots, starts or count); use a model whose "
        "profile is a decision (grmu)"
    )
