"""Plans within a budget: a park restarts its workload once more, and moves it between GPUs."""

from __future__ import annotations

import pytest
from factories import INSTANCES

import mipopt
from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder
from mipopt.migrate import Plan, plan_migration
from mipopt.verifier import verify_plan

SWAP, SWAP_TARGET = INSTANCES / "swap.json", INSTANCES / "swap.target.json"


def two_swaps() -> tuple[Instance, dict[str, tuple[str, int]]]:
    """Two A100-40GB GPUs whose two 3g.20gb trade starts, and a free GPU to park on."""
    b = InstanceBuilder("two-swaps")
    b.add_host("h", {"g0": "A100-40GB", "g1": "A100-40GB", "g2": "A100-40GB"})
    for g, (x, y) in (("g0", ("a", "b")), ("g1", ("c", "d"))):
        b.add_workload(x, "3g.20gb", placement=(g, 0))
        b.add_workload(y, "3g.20gb", placement=(g, 4))
    target = {"a": ("g0", 4), "b": ("g0", 0), "c": ("g1", 4), "d": ("g1", 0)}
    return b.build(), target


def counts(inst: Instance, plan: Plan, target: dict[str, tuple[str, int]]) -> tuple:
    """Restarts (moves), parks, GB moved between GPUs and the drained, of a plan the replay accepts."""
    report = verify_plan(inst, plan, target)
    assert report.valid, report.violations
    assert report.moves == plan.metrics["moves"] and report.parks == plan.metrics["extra_moves"]
    m = plan.metrics
    return m["moves"], m["extra_moves"], m["moved_between_gpus_gb"], plan.disrupted


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        # each swap parks one 3g.20gb on g2 and back: 4 restarts of the target, 2 more, 80 GB
        ({}, (6, 2, 80.0, ())),
        ({"max_restarts": 6}, (6, 2, 80.0, ())),
        ({"max_restarts": 5}, (5, 1, 40.0, ("c",))),  # one park left: the other swap drains
        ({"max_moved_gb": 40}, (5, 1, 40.0, ("c",))),
        ({"max_restarts": 4}, (4, 0, 0.0, ("a", "c"))),  # no park: both swaps drain
        ({"max_moved_gb": 39}, (4, 0, 0.0, ("a", "c"))),
    ],
)
def test_parks_count_as_restarts_and_gb(budget: dict, expected: tuple) -> None:
    inst, target = two_swaps()
    plan = plan_migration(inst, target, **budget)
    assert counts(inst, plan, target) == expected
    if expected[1] < 2:
        assert plan.message.startswith(f"budget {mipopt.Budget(**budget)}: the graph plan broke it (")


def test_a_park_on_its_own_gpu_moves_no_gb() -> None:
    # two 1g.5gb trade starts 0 and 1 on g0: one parks on g0's free slots, no GB between GPUs
    b = InstanceBuilder("one-gpu")
    b.add_host("h", {"g0": "A100-40GB"})
    b.add_workload("a", "1g.5gb", placement=("g0", 0))
    b.add_workload("b", "1g.5gb", placement=("g0", 1))
    inst, target = b.build(), {"a": ("g0", 1), "b": ("g0", 0)}
    assert counts(inst, plan_migration(inst, target), target) == (3, 1, 0.0, ())
    assert counts(inst, plan_migration(inst, target, max_moved_gb=0), target) == (3, 1, 0.0, ())
    assert counts(inst, plan_migration(inst, target, max_restarts=2), target) == (2, 0, 0.0, ("a",))


def test_the_exact_planner_over_the_budget_falls_back_to_parks_within_it() -> None:
    inst, target = mipopt.load_instance(SWAP), mipopt.load_solution(SWAP_TARGET)
    placed = target.placed()
    exact = plan_migration(inst, target, method="exact")
    assert counts(inst, exact, placed)[:2] == (4, 2)  # 2 rounds, 2 parks: the exact optimum
    plan = plan_migration(inst, target, method="exact", max_restarts=3)
    assert plan.method == "graph"
    assert counts(inst, plan, placed) == (3, 1, 40.0, ())
    assert plan.message.startswith(
        "budget at most 3 restarts: the exact / highs plan broke it (restarts 4 > --max-restarts 3), "
        "so a graph plan with 1 park,"
    )


@pytest.mark.parametrize(
    ("budget", "message"),
    [
        (
            {"max_restarts": 1},
            "max_restarts: no plan fits: the target restarts 2 running workloads, more than 1",
        ),
        (
            {"max_restarts": 0},
            "max_restarts: no plan fits: the target restarts 2 running workloads, more than 0",
        ),
        ({"max_restarts": -1}, "max_restarts: must be a whole number >= 0, got -1"),
        ({"max_restarts": 2.5}, "max_restarts: must be a whole number >= 0, got 2.5"),
        ({"max_moved_gb": float("nan")}, "max_moved_gb: must be a finite number >= 0, got nan"),
    ],
)
def test_a_budget_no_plan_fits_is_refused_naming_it(budget: dict, message: str) -> None:
    inst, target = mipopt.load_instance(SWAP), mipopt.load_solution(SWAP_TARGET)
    with pytest.raises(InstanceError) as err:
        plan_migration(inst, target, **budget)
    assert str(err.value) == message


def test_a_gb_budget_below_the_target_is_refused() -> None:
    inst, target = (
        mipopt.load_instance("instances/moves.json"),
        mipopt.load_solution("instances/moves.target.json"),
    )
    need = mipopt.verify(inst, target).metrics["moved_memory_gb"]
    assert need > 0
    with pytest.raises(InstanceError) as err:
        plan_migration(inst, target, max_moved_gb=need - 1)
    assert str(err.value) == (
        f"max_moved_gb: no plan fits: the target moves {need:g} GB to other GPUs, more than {need - 1:g}"
    )
    assert plan_migration(inst, target, max_moved_gb=need).metrics["moved_between_gpus_gb"] == need
