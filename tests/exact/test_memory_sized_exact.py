"""Memory-sized requests in the exact models: the profile is a decision of the configuration,
slot and paper models (any profile that fits), so the three prove equal optima, every answer
verifies, and the chosen profile is in the solution (``models/grmu.md``, "Memory-sized
workloads")."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from factories import INSTANCES

import mipopt
from mipopt.catalog import builtin_models
from mipopt.cli import main
from mipopt.exact.driver import solve_exact
from mipopt.exact.models.config import build_config
from mipopt.exact.preprocess import candidates, dominates, placement_key
from mipopt.instance import Instance, InstanceBuilder, Solution, Status, Termination, instance_from_dict
from mipopt.instance.types import fitting_profiles
from mipopt.io import load_instance
from mipopt.verifier import verify

MODELS = ("grmu", "grmu-slots", "grmu-paper")

#: A GPU model of one's own whose one-slot profile allows two instances (as ``media_and_limits``):
#: a third 10 GB request fits only at 2g.20gb.
LAB = {
    "model": "LAB-8SLOT",
    "slots": 8,
    "compute_slices": 7,
    "memory_gb": 80,
    "profiles": [
        {"name": "1g.10gb", "id": 19, "compute": 1, "memory_slots": 1, "memory_gb": 10, "max_instances": 2,
         "placements": [[s, 1] for s in range(7)]},
        {"name": "2g.20gb", "id": 14, "compute": 2, "memory_slots": 2, "memory_gb": 20, "max_instances": 3,
         "placements": [[0, 2], [2, 2], [4, 2]]},
        {"name": "7g.80gb", "id": 0, "compute": 7, "memory_slots": 8, "memory_gb": 80, "max_instances": 1,
         "placements": [[0, 8]]},
    ],
}  # fmt: skip


def instance(name: str, gpus: dict[str, str], workloads: list[dict[str, Any]], **extra: Any) -> Instance:
    """An instance of one host per GPU, from JSON-shaped workloads."""
    hosts = [{"id": f"h-{g}", "gpus": [{"id": g, "model": m}]} for g, m in gpus.items()]
    data = {"format": "mipopt-instance", "version": 1, "name": name, "hosts": hosts, "workloads": workloads}
    return instance_from_dict({**data, **extra})


def solved(inst: Instance, model: str, solver: str = "highs") -> Solution:
    """The proven lexicographic optimum of ``model``, checked by the verifier."""
    sol = solve_exact(inst, model=model, solver=solver)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert (sol.termination, sol.status) == (Termination.OPTIMAL, Status.OPTIMAL), sol.message
    return sol


def optimum(sol: Solution) -> tuple[float, ...]:
    o = sol.objectives
    assert o is not None
    return (o.acceptance, o.hardware, o.migrations, o.restarts)


def profiles(sol: Solution) -> dict[str, str | None]:
    return {a.workload: a.profile for a in sol.placements}


def test_the_optimum_gives_a_larger_profile_to_place_more() -> None:
    # three 10 GB requests on one LAB GPU: 1g.10gb allows two instances, the third takes 2g.20gb
    inst = instance(
        "larger",
        {"g0": "LAB-8SLOT"},
        [{"id": f"r{k}", "memory_gb": 10} for k in range(3)],
        custom_gpu_models=[LAB],
    )
    smallest = mipopt.solve(inst, method="ff")  # the smallest fitting profile, as HAMi chooses
    assert smallest.objectives is not None and smallest.objectives.acceptance == 2
    for model in MODELS:
        sol = solved(inst, model)
        assert optimum(sol) == (3, 2, 0, 0), model
        assert sorted(p or "" for p in profiles(sol).values()) == ["1g.10gb", "1g.10gb", "2g.20gb"], model


def test_a_tie_keeps_the_smallest_profile() -> None:
    # one 10 GB request and room for anything: no model reports a larger profile than it needs
    inst = instance("tie", {"g0": "A100-80GB"}, [{"id": "r", "memory_gb": 10}])
    for model in MODELS:
        assert profiles(solved(inst, model)) == {"r": "1g.10gb"}, model


def test_named_and_memory_sized_requests_mixed() -> None:
    inst = instance(
        "mixed",
        {"g0": "A100-80GB", "g1": "H100-80GB"},
        [
            {"id": "n-3g", "profile": "3g.40gb"},
            {"id": "n-4g", "profile": "4g.40gb", "gpu_models": ["A100-80GB"]},
            {"id": "m-35", "memory_gb": 35},
            {"id": "m-20-2g", "memory_gb": 20, "min_compute": 2},
            {"id": "m-10", "memory_gb": 10, "weight": 2},
            {"id": "m-60", "memory_gb": 60},
        ],
    )
    # 2 x 8 slots: n-4g (4) + n-3g (4) fill g0; g1 takes m-35 (3g.40gb, 4) + m-20-2g (2g.20gb) +
    # m-10 (1g.10gb); m-60 needs a whole GPU: acceptance 1 + 1 + 1 + 1 + 2 = 6 of 7
    optima = {model: optimum(solved(inst, model)) for model in MODELS}
    assert set(optima.values()) == {(6, 4, 0, 0)}, optima
    sol = solved(inst, "grmu")
    assert profiles(sol)["m-20-2g"] == "2g.20gb"
    assert "m-60" in sol.rejected


def test_running_memory_sized_workloads_keep_their_profile() -> None:
    # r-35 runs at 4g.40gb (larger than its smallest, 3g.40gb) on g0, r-10 at 1g.10gb on g1; a new
    # 7g.80gb request needs a whole GPU: r-35 (4g.40gb at 0), m-20 (1g.20gb at 4) and r-10 (1g.10gb
    # at 6) share one GPU (compute 4 + 1 + 1), the 7g takes the other. One of r-35 and r-10 moves to
    # the other host: migrations 4, restarts 1, and r-35 keeps 4g.40gb wherever it goes
    inst = instance(
        "running",
        {"g0": "A100-80GB", "g1": "A100-80GB"},
        [
            {"id": "r-35", "memory_gb": 35, "placement": {"gpu": "g0", "start": 0, "profile": "4g.40gb"}},
            {"id": "r-10", "memory_gb": 10, "placement": {"gpu": "g1", "start": 6}},
            {"id": "n-7g", "profile": "7g.80gb"},
            {"id": "m-20", "memory_gb": 20},
        ],
    )
    for model in MODELS:
        sol = solved(inst, model)
        assert optimum(sol) == (4, 4, 4, 1), model
        chosen = profiles(sol)
        assert (chosen["r-35"], chosen["r-10"], chosen["m-20"]) == ("4g.40gb", "1g.10gb", "1g.20gb"), model


def test_running_memory_sized_workload_on_another_model_takes_the_smallest_there() -> None:
    inst = instance(
        "across",
        {"g0": "A100-40GB", "g1": "H100-80GB"},
        [
            {"id": "r", "memory_gb": 10, "placement": {"gpu": "g0", "start": 0, "profile": "3g.20gb"}},
            {"id": "big", "profile": "7g.40gb", "gpu_models": ["A100-40GB"]},
        ],
    )
    for model in MODELS:
        sol = solved(inst, model)
        assert optimum(sol)[0] == 2, model
        assert profiles(sol)["r"] == "1g.10gb", model  # H100-80GB's smallest of 10 GB


def test_the_shipped_instance_has_equal_optima() -> None:
    inst = load_instance(INSTANCES / "memory_sized.json")
    optima = {model: optimum(solved(inst, model)) for model in MODELS}
    assert set(optima.values()) == {(5, 4, 0, 0)}, optima


def test_a_memory_sized_shape_has_an_item_per_profile_it_may_take() -> None:
    inst = instance(
        "items",
        {"g0": "LAB-8SLOT"},
        [{"id": "a", "memory_gb": 10}, {"id": "b", "memory_gb": 10}, {"id": "c", "profile": "1g.10gb"}],
        custom_gpu_models=[LAB],
    )
    # a and b are one shape (1g.10gb or 2g.20gb: 2g.20gb does all 7g.80gb does), not c's
    assert placement_key(inst, inst.workload("a")) == placement_key(inst, inst.workload("b"))
    assert placement_key(inst, inst.workload("a")) != placement_key(inst, inst.workload("c"))
    built = build_config(inst, mode="aggregate")
    names = [p.name for p in inst.gpu("g0").model.profiles]
    assert sorted((c, names[p]) for c, _, _, p in built.items) == [
        (0, "1g.10gb"),
        (0, "2g.20gb"),
        (1, "1g.10gb"),
    ]
    assert [(c.profile, c.start) for c in candidates(inst).workloads["a"]] == [
        *(("1g.10gb", s) for s in range(7)),
        ("2g.20gb", 0),
        ("2g.20gb", 2),
        ("2g.20gb", 4),
    ]


def test_on_nvidia_models_the_smallest_profile_is_the_only_option() -> None:
    # every larger profile that fits is dominated: the model is the one of a named request
    for model in builtin_models().values():
        for memory in sorted({p.memory_gb for p in model.profiles}):
            for least in (None, 2, 3):
                fitting = fitting_profiles(model, memory, least)
                for k, q in enumerate(fitting[1:], 1):
                    assert any(dominates(p, q) for p in fitting[:k]), (model.name, memory, q.name)
                    # by brute force: wherever q starts free, the smallest starts there too
                    p = fitting[0]
                    for mask in range(1 << model.slots):
                        for s in q.starts:
                            if not mask & q.slot_mask(s):
                                assert s in p.starts and not mask & p.slot_mask(s), (model.name, q.name, s)
    inst = instance(
        "a100", {"g0": "A100-80GB"}, [{"id": "a", "memory_gb": 30}, {"id": "c", "profile": "3g.40gb"}]
    )
    assert placement_key(inst, inst.workload("a")) == placement_key(inst, inst.workload("c"))


# --- a seeded random family: 2-4 GPUs, named and memory-sized requests, some running

GPU_MODELS = ("A100-80GB", "H100-80GB", "A100-40GB", "LAB-8SLOT")
MEMORIES = (5, 10, 12, 20, 24, 35, 40)


def random_instance(seed: int) -> Instance:
    """2-4 GPUs, 2-4 requests (some named, some sized by memory, some weighing 2), and running
    workloads where first fit put 1-3 earlier ones."""
    rng = np.random.default_rng(seed)
    models = {f"g{k}": str(rng.choice(GPU_MODELS)) for k in range(int(rng.integers(2, 5)))}
    names = sorted({p["name"] for p in LAB["profiles"]} | {"3g.40gb", "2g.20gb", "1g.10gb"})

    def request(wid: str) -> dict[str, Any]:
        w: dict[str, Any] = {"id": wid}
        if rng.random() < 0.35:
            w["profile"] = str(rng.choice(names))
        else:
            w["memory_gb"] = int(rng.choice(MEMORIES))
            if rng.random() < 0.25:
                w["min_compute"] = int(rng.integers(1, 4))
        if rng.random() < 0.2:
            w["weight"] = 2
        return w

    def valid(ws: list[dict[str, Any]]) -> list[dict[str, Any]]:
        out = []
        for w in ws:
            try:
                instance("probe", models, [*out, w], custom_gpu_models=[LAB])
            except mipopt.InstanceError:
                continue
            out.append(w)
        return out

    earlier = valid([request(f"r{k}") for k in range(int(rng.integers(1, 4)))])
    first = mipopt.solve(instance("first", models, earlier, custom_gpu_models=[LAB]), method="ff")
    chosen = {a.workload: a for a in first.placements}
    running = []
    for w in earlier:
        a = chosen.get(w["id"])
        if a is not None:  # running there now, a memory-sized one at the profile first fit gave it
            placement = {"gpu": a.gpu, "start": a.start}
            if "memory_gb" in w:
                placement["profile"] = a.profile
            running.append({**w, "placement": placement})
    new = valid([request(f"n{k}") for k in range(int(rng.integers(2, 5)))])
    return instance(f"random-{seed}", models, running + new, custom_gpu_models=[LAB])


@pytest.mark.parametrize("seed", range(24))
def test_random_instances_have_equal_optima(seed: int) -> None:
    inst = random_instance(seed)
    optima = {model: optimum(solved(inst, model)) for model in MODELS}
    assert len(set(optima.values())) == 1, optima


def test_cpsat_agrees() -> None:
    inst = random_instance(3)
    assert optimum(solved(inst, "grmu", "cpsat")) == optimum(solved(inst, "grmu"))


# --- the command line


def test_solve_a_memory_sized_instance_with_the_default_method(tmp_path: Path) -> None:
    out = tmp_path / "memory_sized.solution.json"
    assert main(["solve", str(INSTANCES / "memory_sized.json"), "--out", str(out)]) == 0
    data = json.loads(out.read_text())
    assert data["method"].startswith("grmu / highs")
    assert data["status"] == "optimal"
    assert data["objectives"]["acceptance"] == 5
    by_id = {p["workload"]: p for p in data["placements"]}
    assert by_id["train-35gb"]["profile"] == "4g.40gb"  # running: keeps its profile
    assert "profile" in by_id["chat-12gb"]
    assert main(["verify", str(INSTANCES / "memory_sized.json"), str(out)]) == 0


def test_builder_instance_solves() -> None:
    b = InstanceBuilder("built")
    b.add_host("h", gpus={"g": "H100-80GB"})
    b.add_workload("chat", memory_gb=12)
    b.add_workload("named", "3g.40gb")
    inst = b.build()
    sol = mipopt.solve(inst)
    assert verify(inst, sol).valid
    assert profiles(sol) == {"chat": "1g.20gb", "named": None}
