"""Every shipped instance loads, and its recorded expected results hold.

Instances under ``instances/`` carry an ``expected`` block written by hand
(see each file's ``why``); these tests recompute each value.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import INSTANCES

from mipopt.geometry import reference as geo
from mipopt.io import load_instance, load_solution
from mipopt.registry import solve
from mipopt.verifier import verify

FILES = sorted(p for p in INSTANCES.glob("*.json") if not p.name.endswith(".target.json"))


def expected(path: Path) -> dict:
    return json.loads(path.read_text()).get("expected", {})


def test_there_are_paper_instances() -> None:
    names = {p.stem for p in FILES}
    assert {"quickstart", "grmu_fig2b", "ibm_fig7", "fbk_fig3", "default_order"} <= names
    assert len([p for p in FILES if expected(p)]) >= 6


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_instance_loads_with_its_file_name(path: Path) -> None:
    inst = load_instance(path)
    assert inst.name == path.stem


@pytest.mark.parametrize("path", [p for p in FILES if "gpus" in expected(p)], ids=lambda p: p.stem)
def test_expected_gpu_geometry(path: Path) -> None:
    inst = load_instance(path)
    placed = inst.current_placement()
    for gpu_id, want in expected(path)["gpus"].items():
        model = inst.gpu(gpu_id).model
        mask = 0
        for wid, (g, start) in placed.items():
            if g == gpu_id:
                mask |= model.profile(inst.workload(wid).profile).slot_mask(start)
        if "cc" in want:
            assert geo.configuration_capability(model, mask) == want["cc"]
        if "fbk_fragmentation" in want:
            assert geo.fbk_fragmentation(model, mask) == want["fbk_fragmentation"]
        if "free_slots" in want:
            assert model.slots - mask.bit_count() == want["free_slots"]
        for name, n in want.get("capacity", {}).items():
            assert len(geo.legal_starts(model, mask, model.profile(name))) == n, name
        for name, starts in want.get("legal_starts", {}).items():
            assert geo.legal_starts(model, mask, model.profile(name)) == starts, name
        if "memory_waste" in want:
            waste = sum(
                geo.memory_waste(model, model.profile(inst.workload(w).profile), s)
                for w, (g, s) in placed.items()
                if g == gpu_id
            )
            assert waste == want["memory_waste"]


@pytest.mark.parametrize("path", [p for p in FILES if "first_fit" in expected(p)], ids=lambda p: p.stem)
def test_expected_first_fit(path: Path) -> None:
    inst = load_instance(path)
    want = expected(path)["first_fit"]
    sol = solve(inst, "ff")
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert report.objectives.to_dict() == {k: float(v) for k, v in want["objectives"].items()}
    where = {a.workload: [a.gpu, a.start] for a in sol.placements}
    for wid, gpu_start in want["placements"].items():
        assert where[wid] == gpu_start, wid
    assert sorted(sol.rejected) == sorted(want["rejected"])
    assert sol.profiles() == want.get("profiles", {})  # a memory-sized workload's chosen profile


@pytest.mark.parametrize("path", [p for p in FILES if "target" in expected(p)], ids=lambda p: p.stem)
def test_expected_target_solution(path: Path) -> None:
    inst = load_instance(path)
    want = expected(path)["target"]
    report = verify(inst, load_solution(INSTANCES / want["solution"]))
    assert report.valid, report.violations
    assert report.objectives.to_dict() == {k: float(v) for k, v in want["objectives"].items()}
    for key, value in want["metrics"].items():
        assert report.metrics[key] == value, key
