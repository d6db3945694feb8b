"""Plans and emitted scripts create the profile a method chose for a memory-sized workload."""

from __future__ import annotations

import json
from dataclasses import replace
from importlib import resources

import jsonschema
import pytest
from factories import INSTANCES

import mipopt
from mipopt.errors import InstanceError
from mipopt.instance import Assignment, Solution
from mipopt.interop.emit import emit, plan_operations
from mipopt.migrate import plan_from_dict
from mipopt.verifier import verify_plan

EXAMPLE = INSTANCES / "memory_sized.json"


def target(**chosen: tuple[str, int, str | None]) -> tuple[mipopt.Instance, Solution]:
    """ff's answer to the example, with some placements changed to (GPU, start, profile)."""
    inst = mipopt.load_instance(EXAMPLE)
    sol = mipopt.solve(inst, "ff")
    placements = tuple(
        Assignment(a.workload, *chosen[a.workload]) if a.workload in chosen else a for a in sol.placements
    )
    sol = replace(sol, placements=placements, objectives=None, metrics={})
    assert mipopt.verify(inst, sol).valid
    return inst, sol


def test_a_plan_creates_the_larger_profile_chosen() -> None:
    # batch-20gb at 4g.20gb (id 5 on the A100-40GB) instead of the smallest, 3g.20gb
    inst, sol = target(**{"batch-20gb": ("h2-g0", 0, "4g.20gb")})
    plan = mipopt.plan_migration(inst, sol)
    assert plan.profiles == {"batch-20gb": "4g.20gb"}  # the defaults are not repeated
    assert verify_plan(inst, plan).valid
    creates = {
        o.workload: (o.op, o.gpu, o.start, o.profile, o.profile_id) for o in plan_operations(inst, plan)
    }
    assert creates["batch-20gb"] == ("create", "h2-g0", 0, "4g.20gb", 5)
    assert creates["chat-12gb"] == ("create", "h1-g0", 6, "1g.20gb", 15)  # the default, 1g.20gb
    script = emit(inst, plan, "nvidia-smi")
    line = next(x for x in script.splitlines() if x.startswith("add_op") and "batch-20gb" in x)
    assert "'create 4g.20gb at start 0 on h2 GPU 0 (batch-20gb: new request)'" in line
    assert "5:0" in line.split()  # nvidia-smi mig -cgi 5 with placement start 0
    assert "mig-devices: {4g.20gb: 1}" in emit(inst, plan, "mig-parted")
    assert '"profile": "4g.20gb"' in emit(inst, plan, "nvml-python").replace("\\", "")
    assert "4g.20gb" in next(x for x in plan.summary().splitlines() if "batch-20gb" in x)


def test_the_plan_file_keeps_the_chosen_profile() -> None:
    inst, sol = target(**{"batch-20gb": ("h2-g0", 0, "4g.20gb")})
    data = json.loads(json.dumps(mipopt.plan_migration(inst, sol).to_dict()))
    final = {x["workload"]: x for x in data["final"]}
    assert final["batch-20gb"] == {"workload": "batch-20gb", "gpu": "h2-g0", "start": 0, "profile": "4g.20gb"}
    assert "profile" not in final["chat-12gb"]
    schema = json.loads(resources.files("mipopt").joinpath("schemas/plan.schema.json").read_text())
    assert list(jsonschema.Draft202012Validator(schema).iter_errors(data)) == []
    again = plan_from_dict(data)
    assert again.profiles == {"batch-20gb": "4g.20gb"} and verify_plan(inst, again).valid
    # a final profile that does not fit is the replay's one-line violation
    final["batch-20gb"]["profile"] = "2g.10gb"
    report = verify_plan(inst, data)
    assert report.violations == (
        "final: profiles.batch-20gb: '2g.10gb' does not fit 'batch-20gb' on A100-40GB "
        "(>=20gb,2g: 3g.20gb, 4g.20gb, 7g.40gb)",
    )


def test_a_running_memory_sized_workload_moves_at_its_profile() -> None:
    # train-35gb runs at 4g.40gb; on the A100 it takes 7g.40gb, the smallest that fits there
    inst, sol = target(**{"train-35gb": ("h2-g0", 0, "7g.40gb"), "batch-20gb": ("h1-g0", 0, "2g.20gb")})
    plan = mipopt.plan_migration(inst, sol)
    assert verify_plan(inst, plan).valid
    ops = [(o.op, o.workload, o.profile) for o in plan_operations(inst, plan) if o.workload == "train-35gb"]
    assert ("create", "train-35gb", "7g.40gb") in ops and ("destroy", "train-35gb", "4g.40gb") in ops
    # resized where it runs: destroyed and created again, a restart no method makes; the verifier
    # refuses the answer (it had said valid, restarts 0) as the planner refuses to plan it
    inst = mipopt.load_instance(EXAMPLE)
    sol = mipopt.solve(inst, "ff")
    resized = replace(
        sol,
        placements=tuple(
            Assignment("train-35gb", "h1-g0", 0, "3g.40gb") if a.workload == "train-35gb" else a
            for a in sol.placements
        ),
        objectives=None,
        metrics={},
    )
    index = next(i for i, a in enumerate(resized.placements) if a.workload == "train-35gb")
    assert mipopt.verify(inst, resized).violations == (
        f"placements[{index}].profile: running 'train-35gb' runs at 4g.40gb: on H100-80GB it keeps that "
        "profile, not 3g.40gb",
    )
    with pytest.raises(InstanceError) as info:
        mipopt.plan_migration(inst, resized)
    assert str(info.value) == (
        f"target: not a valid placement for 'memory_sized': placements[{index}].profile: running "
        "'train-35gb' runs at 4g.40gb: on H100-80GB it keeps that profile, not 3g.40gb"
    )
