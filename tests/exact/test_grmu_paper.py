"""The GRMU ILP as printed (``grmu-paper``): same optima as the tight model, verified solutions."""

from __future__ import annotations

from pathlib import Path

import pyomo.environ as pyo
import pytest
from factories import INSTANCES, instances, proven_triple
from hypothesis import HealthCheck, given, settings
from test_exact import OPTIMA

from mipopt.catalog import model_from_dict
from mipopt.exact.models.grmu_paper import build_grmu_paper
from mipopt.instance import Instance, InstanceBuilder, Termination
from mipopt.io import load_instance, load_solution
from mipopt.registry import solve
from mipopt.solvers import get_backend
from mipopt.verifier import evaluate

# every committed instance: the paper form proves each in under ~2.5 s with HiGHS
FILES = sorted(p for p in INSTANCES.glob("*.json") if not p.name.endswith(".target.json"))


def mixed() -> Instance:
    """Two hosts, two GPU models, a pinned +me, host cpu/ram limits, a costly second host.

    Hand-checked optimum (6.5, 7, 0): ``big`` (4g.20gb, A100-40GB only) needs start 0 of g0,
    held by the pinned p0, so it is rejected; the rest fit (a = 6 x 1 + 0.5). The two
    1g.10gb+me requests need two H100s (one media set per GPU), so h2 stays on: hardware =
    (h1 + g0 + g1) + 2 x (h2 + g2) = 7. h1's cpu (16) holds p0, r1 and mid, so ``one`` (cpu 4)
    goes to h2. Nothing needs to move.
    """
    b = InstanceBuilder(name="paper-mixed")
    b.add_host("h1", {"g0": "A100-40GB", "g1": "H100-80GB"}, cpu=16, ram_gb=64)
    b.add_host("h2", {"g2": "H100-80GB"}, weight=2)
    b.add_workload("p0", "1g.5gb+me", placement=("g0", 0), pinned=True, cpu=4, ram_gb=16)
    b.add_workload("r1", "3g.40gb", placement=("g1", 4), cpu=4, ram_gb=16)
    b.add_workload("r2", "1g.10gb", placement=("g2", 0), migration_weight=0.5)
    b.add_workload("me1", "1g.10gb+me")
    b.add_workload("me2", "1g.10gb+me", weight=0.5)
    b.add_workload("big", "4g.20gb")
    b.add_workload("mid", "2g.10gb", cpu=8, ram_gb=32)
    b.add_workload("one", "1g.10gb", cpu=4)
    return b.build()


def beta_coupled() -> Instance:
    """A workload whose g_i differs between the two models it may use (1g.10gb: 2 slots on
    A100-40GB, 1 on H100-80GB) and whose only free start is 6 on the H100 (beta = 6)."""
    b = InstanceBuilder(name="paper-beta")
    b.add_host("h1", {"a100": "A100-40GB", "h100": "H100-80GB"})
    b.add_workload("full", "7g.40gb", placement=("a100", 0), pinned=True)
    b.add_workload("left", "3g.40gb", placement=("h100", 0), pinned=True)
    b.add_workload("mid", "2g.20gb", placement=("h100", 4), pinned=True)
    b.add_workload("one", "1g.10gb")
    return b.build()


def irregular() -> Instance:
    """A custom model whose legal starts are not the multiples of the size (Eqs. 14-16 fail)."""
    lab = model_from_dict(
        {
            "model": "LAB-ODD",
            "slots": 8,
            "compute_slices": 7,
            "memory_gb": 80,
            "profiles": [
                {"name": "1g.10gb", "id": 19, "compute": 1, "memory_slots": 1, "memory_gb": 10,
                 "max_instances": 3, "placements": [[1, 1], [3, 1], [5, 1]]},
                {"name": "2g.20gb", "id": 14, "compute": 2, "memory_slots": 2, "memory_gb": 20,
                 "max_instances": 2, "placements": [[0, 2], [4, 2]]},
                {"name": "4g.40gb", "id": 5, "compute": 4, "memory_slots": 4, "memory_gb": 40,
                 "max_instances": 1, "placements": [[4, 4]]},
            ],
        }
    )  # fmt: skip
    b = InstanceBuilder(name="paper-irregular", custom_models=[lab])
    b.add_host("h1", {"lab": "LAB-ODD", "h100": "H100-80GB"})
    b.add_workload("pair", "2g.20gb", placement=("lab", 4))
    b.add_workload("big", "4g.40gb", gpu_models=["LAB-ODD"])
    for n in range(3):
        b.add_workload(f"one{n}", "1g.10gb", gpu_models=["LAB-ODD"])
    return b.build()


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_committed_instances_agree_with_tight_model(path: Path) -> None:
    inst = load_instance(path)
    paper = proven_triple(inst, "grmu-paper")
    assert paper == proven_triple(inst, "grmu")
    if path.stem in OPTIMA:
        assert paper == OPTIMA[path.stem]


@pytest.mark.parametrize("name", ["grmu_fig2b", "moves"])
def test_cpsat_gives_the_same_optimum(name: str) -> None:
    inst = load_instance(INSTANCES / f"{name}.json")
    assert proven_triple(inst, "grmu-paper", "cpsat") == proven_triple(inst, "grmu-paper", "highs")


def test_mixed_models_pinned_media_and_capacity() -> None:
    inst = mixed()
    assert proven_triple(inst, "grmu-paper") == proven_triple(inst, "grmu") == (6.5, 7.0, 0.0)


def test_big_m_grows_with_beta_shared_across_models() -> None:
    inst = beta_coupled()
    built = build_grmu_paper(inst)
    # 1g.10gb at H100 start 6 has beta = 6; on the A100 (absent, z <= 6 and z not inside
    # the 7g) Eq. 15 needs g beta = 2 x 6 <= B + z, so B = 8 (the slot count) is too small
    assert built.big_m == 12
    assert proven_triple(inst, "grmu-paper") == proven_triple(inst, "grmu") == (4.0, 3.0, 0.0)

    small = build_grmu_paper(inst, big_m=8)
    small.model.obj = pyo.Objective(expr=small.expression("acceptance"), sense=pyo.maximize)
    get_backend("highs").solve(small.model)
    assert pyo.value(small.expression("acceptance")) == 3.0  # "one" cut off


def test_irregular_legal_starts_pick_a_start() -> None:
    inst = irregular()
    built = build_grmu_paper(inst)
    assert ("pair", "lab") not in built.regular and ("pair", "h100") in built.regular
    assert len(built.model.start_choice) == 5  # pair, big, one0..2 on the custom GPU
    # On lab, pair (at 0 or 4) always blocks a 1g start and big's slots 4-7; at most 3 of the 5
    # fit there. Moving pair to the H100 (2 x delta, one more GPU) lets 4 fit: 1g at 1 and 3
    # plus big at 4, or 1g at 1, 3 and 5.
    assert proven_triple(inst, "grmu-paper") == proven_triple(inst, "grmu") == (4.0, 3.0, 2.0)


def test_model_is_the_printed_one() -> None:
    inst = load_instance(INSTANCES / "fbk_fig3.json")  # 1 host, 3 GPUs, 8 workloads
    built = build_grmu_paper(inst)
    m = built.model
    n, gpus = len(inst.workloads), len(inst.gpus)
    assert len(m.alpha) == built.stats["alpha"] == n * (n - 1) * gpus
    assert len(m.eq12_order) == len(m.eq13_order) == n * (n - 1) * gpus
    assert len(m.eq14_start_multiple_le) == len(m.eq16_last_start) == n * gpus
    assert len(m.eq22_m_up) == len(m.eq23_m_down) == n
    assert built.big_m == 8
    assert built.objectives == ("acceptance", "hardware", "migrations", "restarts")
    assert len(m.keep) == len(inst.running) and len(m.keep_start) == 2 * len(inst.running)


def fixed_at(inst: Instance, placed: dict[str, tuple[str, int]]) -> tuple[float, float, float, float]:
    """Hold every variable of the paper model at ``warm_start(placed)``, solve, read Eqs. 3-5
    and the restarts."""
    built = build_grmu_paper(inst)
    values = built.warm_start(placed)
    assert len(values) == built.stats["variables"]
    for name, value in values.items():
        var = built.model.find_component(name)
        if var.fixed:  # pinned
            assert var.value == value
        else:  # bounds, not fix(): a model with every variable fixed is empty to HiGHS
            var.setlb(value)
            var.setub(value)
    built.model.obj = pyo.Objective(expr=built.expression("hardware"))
    result = get_backend("highs").solve(built.model)
    assert result.termination is Termination.OPTIMAL  # the start is feasible
    assert built.decode() == placed
    return tuple(pyo.value(built.expression(n)) for n in built.objectives)  # type: ignore[return-value]


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_warm_start_of_first_fit_is_feasible(path: Path) -> None:
    inst = load_instance(path)
    placed = solve(inst, "ff").placed()
    o, _ = evaluate(inst, placed)
    assert fixed_at(inst, placed) == (o.acceptance, o.hardware, o.migrations, o.restarts)


def test_eq5_prices_moves_like_the_verifier() -> None:
    # moves.target: 4 x 1.5 to another host + 2 x 2 to another GPU + 0 for a new start
    inst = load_instance(INSTANCES / "moves.json")
    placed = load_solution(INSTANCES / "moves.target.json").placed()
    assert fixed_at(inst, placed) == (6.0, 5.0, 10.0, 4.5)  # restarts: 1.5 + 2 + 1
    placed = {**placed, "new-start": ("h1-g1", 0)}  # start back: no change in Eq. 5, one restart fewer
    assert fixed_at(inst, placed)[2:] == (10.0, 3.5)


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_hosts=2, max_gpus=2, max_running_per_gpu=2, max_new=3))
def test_paper_and_tight_agree(inst: Instance) -> None:
    assert proven_triple(inst, "grmu-paper") == proven_triple(inst, "grmu")
