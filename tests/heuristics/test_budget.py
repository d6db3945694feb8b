"""Every heuristic that moves running workloads holds a budget on restarts and GB moved.

Each case: without a budget the method restarts k > 0 running workloads; with less the verifier
counts at most the budget (exact counts asserted), budget 0 moves nothing, and a request the
budget left out is named in the solution's message (``left_out_by_budget``).
"""

from __future__ import annotations

import numpy as np
import pytest

import mipopt
from mipopt.errors import InstanceError
from mipopt.heuristics.grmu import Grmu
from mipopt.heuristics.online import BudgetGuard
from mipopt.instance import Budget, Instance, InstanceBuilder, Solution
from mipopt.instance.budget import disruption, left_out_by_budget
from mipopt.registry import get_method
from mipopt.state import Cluster


def checked(inst: Instance, sol: Solution) -> tuple[float, float, tuple[str, ...]]:
    """The verifier's restarts and GB moved, and the rejected workloads, of a valid solution."""
    report = mipopt.verify(inst, sol)
    assert report.valid, report.violations
    return report.metrics["restarted"], report.metrics["moved_memory_gb"], sol.rejected


def two_to_vacate() -> Instance:
    """g0 holds a 4g.40gb, g1 and g2 a 1g.10gb each: compaction vacates g1, then g2, onto g0."""
    b = InstanceBuilder("two-to-vacate")
    b.add_host("h", {"g0": "A100-80GB", "g1": "A100-80GB", "g2": "A100-80GB"})
    b.add_workload("big", "4g.40gb", placement=("g0", 0))
    b.add_workload("s1", "1g.10gb", placement=("g1", 0))
    b.add_workload("s2", "1g.10gb", placement=("g2", 0))
    return b.build()


def two_defrags() -> Instance:
    """Two A100-40GB, each with 1g.5gb at 0 and 3: a 4g.20gb (start 0 only) fits either only after
    GRMU's defragmentation of that GPU moves its two 1g.5gb (two intra-GPU restarts each)."""
    b = InstanceBuilder("two-defrags")
    b.add_host("h", {"g0": "A100-40GB", "g1": "A100-40GB"})
    for g in ("g0", "g1"):
        b.add_workload(f"{g}-a", "1g.5gb", placement=(g, 0))
        b.add_workload(f"{g}-b", "1g.5gb", placement=(g, 3))
    b.add_workload("big1", "4g.20gb")
    b.add_workload("big2", "4g.20gb")
    return b.build()


def one_across() -> Instance:
    """A 7g.40gb fits only once one 1g.5gb joins the other on its GPU (one restart, 5 GB)."""
    b = InstanceBuilder("one-across")
    b.add_host("h", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_workload("a", "1g.5gb", placement=("g0", 0))
    b.add_workload("b", "1g.5gb", placement=("g1", 0))
    b.add_workload("full", "7g.40gb")
    return b.build()


# --- IBM's rules


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        ({}, (2, 20.0)),
        ({"max_restarts": 1}, (1, 10.0)),
        ({"max_moved_gb": 19.9}, (1, 10.0)),
        ({"max_restarts": 0}, (0, 0.0)),
        ({"max_moved_gb": 0}, (0, 0.0)),
    ],
)
def test_compaction_vacates_only_the_gpus_the_budget_pays_for(budget: dict, expected: tuple) -> None:
    inst = two_to_vacate()
    sol = mipopt.solve(inst, "ibm-compaction", **budget)
    assert checked(inst, sol)[:2] == expected
    assert sol.metrics["active_gpus"] == 3 - expected[0]


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        ({}, (7, 80.0, 2)),  # the rule lifts everything: g1 and g2 onto g3 and g2
        ({"max_restarts": 2}, (2, 20.0, 2)),  # keeps g1 and g2, redeploys g3's two onto g2
        ({"max_moved_gb": 20}, (2, 20.0, 2)),
        ({"max_restarts": 1}, (0, 0.0, 3)),  # no count of GPUs holds one restart: nothing moves
        ({"max_moved_gb": 19}, (0, 0.0, 3)),
        ({"max_restarts": 0}, (0, 0.0, 3)),
    ],
)
def test_reconfiguration_keeps_the_fullest_gpus_within_a_budget(budget: dict, expected: tuple) -> None:
    inst = mipopt.load_instance("instances/fbk_fig3.json")
    sol = mipopt.solve(inst, "ibm-reconfiguration", **budget)
    restarted, gb, _ = checked(inst, sol)
    assert (restarted, gb, sol.metrics["active_gpus"]) == expected
    if budget:
        assert {w for w, at in sol.placed().items() if at != inst.current_placement()[w]} <= (
            {"g3-a", "g3-b"}
        )


def test_joint_names_the_requests_its_budget_left_out() -> None:
    # unlimited: the reconfiguration restarts all three 1g.10gb and n3g (3g.40gb) gets start 0; within
    # the budget nothing moves, n2g and n1g fit around them and n3g does not
    inst = mipopt.load_instance("instances/ibm_fig7.json")
    free = mipopt.solve(inst, "ibm-joint")
    assert checked(inst, free) == (3, 0.0, ("n2g", "n1g"))
    assert left_out_by_budget(free.message) == {}
    for limit in (0, 2):
        sol = mipopt.solve(inst, "ibm-joint", max_restarts=limit)
        assert checked(inst, sol) == (0, 0.0, ("n3g",))
        assert left_out_by_budget(sol.message) == {
            "n3g": "placing it needed the reconfiguration without the budget, which restarts 3 running "
            f"workloads and moves 0 GB: restarts 3 > --max-restarts {limit}"
        }
    # the budget's reconfiguration: 2 restarts (20 GB) instead of 7 (80 GB), the request placed too
    fbk = mipopt.load_instance("instances/fbk_fig3.json")
    assert checked(fbk, mipopt.solve(fbk, "ibm-joint")) == (7, 80.0, ())
    assert checked(fbk, mipopt.solve(fbk, "ibm-joint", max_moved_gb=20)) == (2, 20.0, ())


# --- online policies in batch


@pytest.mark.parametrize("method", ["grmu", "adapter(grmu)"])
def test_grmu_skips_the_defragmentations_over_the_budget(method: str) -> None:
    inst = two_defrags()
    assert checked(inst, mipopt.solve(inst, method)) == (4, 0.0, ())
    for limit in (2, 3):  # the first defragmentation (2 restarts) fits, the second would make 4
        sol = mipopt.solve(inst, method, max_restarts=limit)
        assert checked(inst, sol) == (2, 0.0, ("big2",))
        assert left_out_by_budget(sol.message) == {
            "big2": f"placing it needed GRMU's defragmentation of g1 (2 relocations): restarts 4 > "
            f"--max-restarts {limit}"
        }
    sol = mipopt.solve(inst, method, max_restarts=0)
    assert checked(inst, sol) == (0, 0.0, ("big1", "big2"))
    assert set(left_out_by_budget(sol.message)) == {"big1", "big2"}
    # intra-GPU restarts move no memory to another GPU: a GB budget of 0 holds both
    assert checked(inst, mipopt.solve(inst, method, max_moved_gb=0)) == (4, 0.0, ())


def test_grmu_consolidation_skips_a_move_over_the_budget() -> None:
    # g0 holds a 4g.20gb in its lower half, g1 a 3g.20gb in its upper: consolidation moves the
    # 3g.20gb to g0 (one restart, 20 GB to another GPU)
    b = InstanceBuilder("halves")
    b.add_host("h", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_workload("low", "4g.20gb", placement=("g0", 0))
    b.add_workload("high", "3g.20gb", placement=("g1", 4))
    inst = b.build()
    for budget, moved in [(Budget(), 1), (Budget(max_restarts=1), 1), (Budget(max_moved_gb=19), 0)]:
        cluster = Cluster(inst)
        policy = Grmu(heavy=None, consolidation=1.0)
        policy.hold(BudgetGuard(budget))
        policy.start(cluster, np.random.default_rng(0))
        policy.consolidate(cluster)
        assert disruption(inst, cluster.placed) == {"restarted": moved, "moved_memory_gb": 20.0 * moved}
        # refused, g1's 3g.20gb stays and g0's 4g.20gb is tried into g1's lower half: refused too
        assert policy.guard is not None and policy.guard.skipped == 2 * (1 - moved)


def test_reopt_holds_the_budget_in_its_answers() -> None:
    inst = two_defrags()
    assert checked(inst, mipopt.solve(inst, "reopt")) == (4, 0.0, ())
    sol = mipopt.solve(inst, "reopt", max_restarts=3)
    assert checked(inst, sol) == (2, 0.0, ("big2",))
    assert left_out_by_budget(sol.message) == {
        "big2": "placing it needed a re-optimization that relocates 2 workloads: restarts 4 > --max-restarts 3"
    }
    # no restart left after the first: the pinned model cannot place big2, the solve without pins can
    sol = mipopt.solve(inst, "reopt", max_restarts=2)
    assert checked(inst, sol) == (2, 0.0, ("big2",))
    assert set(left_out_by_budget(sol.message)) == {"big2"}
    sol = mipopt.solve(inst, "reopt", max_restarts=0)
    assert checked(inst, sol) == (0, 0.0, ("big1", "big2"))
    assert set(left_out_by_budget(sol.message)) == {"big1", "big2"}


def test_reopt_holds_a_gb_budget() -> None:
    inst = one_across()
    assert checked(inst, mipopt.solve(inst, "reopt")) == (1, 5.0, ())
    assert checked(inst, mipopt.solve(inst, "reopt", max_moved_gb=5)) == (1, 5.0, ())
    sol = mipopt.solve(inst, "reopt", max_moved_gb=4)
    assert checked(inst, sol) == (0, 0.0, ("full",))
    assert left_out_by_budget(sol.message) == {
        "full": "placing it needed a re-optimization that relocates 1 workload: moved 5 GB > --max-moved-gb 4"
    }


# --- the registry's side


def test_the_moving_heuristics_take_a_budget_and_the_others_refuse_it() -> None:
    takes = {m.name for m in mipopt.methods() if m.kind == "heuristic" and "budget" in m.options}
    assert takes == {"ibm-compaction", "ibm-reconfiguration", "ibm-joint", "grmu", "reopt"}
    assert {m.name for m in mipopt.methods() if m.kind == "heuristic" and m.moves} == takes
    assert "budget" in get_method("adapter(grmu)").options
    inst = two_defrags()
    with pytest.raises(InstanceError, match=r"^budget: method ff takes no budget \(it takes: seed\)$"):
        get_method("ff").solve(inst, budget=Budget(max_restarts=1))
    # solve hands no budget to a method that never moves: it holds any budget as it is
    assert checked(inst, mipopt.solve(inst, "ff", max_restarts=0))[:2] == (0, 0.0)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_restarts": -1}, "max_restarts: must be a whole number >= 0, got -1"),
        ({"max_restarts": 2.5}, "max_restarts: must be a whole number >= 0, got 2.5"),
        ({"max_moved_gb": float("nan")}, "max_moved_gb: must be a finite number >= 0, got nan"),
    ],
)
@pytest.mark.parametrize("method", ["grmu", "ibm-compaction", "ff"])
def test_a_bad_budget_is_refused_naming_the_parameter(method: str, options: dict, message: str) -> None:
    with pytest.raises(InstanceError) as err:
        mipopt.solve(two_defrags(), method, **options)
    assert str(err.value) == message


def test_a_workload_counts_once_however_it_moves_and_not_at_all_back_home() -> None:
    inst = two_defrags()
    cluster = Cluster(inst)
    guard = BudgetGuard(Budget(max_restarts=1))
    a, b = inst.workload("g0-a"), inst.workload("g0-b")
    cluster.move(a, 1, 6)  # to g1: a restart, 5 GB to another GPU
    cluster.move(a, 0, 6)  # back on g0 at another start: still one restart, no GB
    assert disruption(inst, cluster.placed) == {"restarted": 1, "moved_memory_gb": 0.0}
    assert guard.exceeded(cluster) is None
    cluster.move(b, 0, 1)
    assert guard.exceeded(cluster) == "restarts 2 > --max-restarts 1"
    cluster.move(a, 0, 0)  # home at its own start: not restarted
    assert disruption(inst, cluster.placed) == {"restarted": 1, "moved_memory_gb": 0.0}
    assert guard.exceeded(cluster) is None
