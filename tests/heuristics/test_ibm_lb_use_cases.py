"""IBM's baselines on compaction and reconfiguration (Turkkan et al., sections 5.2.2-5.2.3), by hand and on the IBM cases."""

from __future__ import annotations

from collections import Counter

import pytest

from mipopt.heuristics import ibm_first_fit, ibm_reconfiguration
from mipopt.heuristics.ibm_baselines import ibm_baseline, lifted, pending_running
from mipopt.instance import Instance, InstanceBuilder, Solution
from mipopt.registry import solve
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance


def two_gpus(*running: tuple[str, str, str, int], gpus: int = 2, pinned: str = "") -> Instance:
    b = InstanceBuilder("lb-use-cases")
    b.add_host("h", {f"g{k}": "A100-80GB" for k in range(gpus)})
    for wid, profile, gpu, start in running:
        b.add_workload(wid, profile, placement=(gpu, start), pinned=wid == pinned)
    return b.build()


def checked(inst: Instance, sol: Solution) -> dict[str, float]:
    """The verifier's metrics, against the lifted instance when a running workload is pending."""
    question = lifted(inst) if pending_running(inst, sol) else inst
    report = verify(question, sol)
    assert report.valid, report.violations
    assert sol.metrics == report.metrics
    return report.metrics


def test_reconfiguration_load_balanced_spreads_and_leaves_the_4g_pending() -> None:
    # r1, r2 (1g.10gb) and r3 (4g.40gb), in that order: load balancing puts r1 at index 0 of g0,
    # r2 at index 0 of the now less utilized g1, and r3 (index 0 only) finds no index 0 free.
    inst = two_gpus(("r1", "1g.10gb", "g0", 6), ("r2", "1g.10gb", "g1", 6), ("r3", "4g.40gb", "g0", 0))
    sol = ibm_baseline(inst, use_case="reconfiguration")
    assert sol.placed() == {"r1": ("g0", 0), "r2": ("g1", 0)}
    assert pending_running(inst, sol) == ["r3"] and sol.rejected == ("r3",)
    m = checked(inst, sol)
    assert (m["active_gpus"], m["pending_memory_slots"]) == (2, 4)
    assert not verify(inst, sol).valid  # a running workload is never evicted from the instance itself


def test_reconfiguration_first_fit_and_the_rules() -> None:
    inst = two_gpus(("r1", "1g.10gb", "g0", 6), ("r2", "1g.10gb", "g1", 6), ("r3", "4g.40gb", "g0", 0))
    ff = ibm_baseline(inst, use_case="reconfiguration", baseline="first-fit")
    # ids in order, every GPU from index 0: r1, r2 fill g0's 0 and 1, r3 goes to g1
    assert ff.placed() == {"r1": ("g0", 0), "r2": ("g0", 1), "r3": ("g1", 0)}
    assert pending_running(inst, ff) == []
    m = checked(inst, ff)  # all placed: a solution of the instance itself, moves counted
    assert (m["active_gpus"], m["moved_memory_slots"]) == (2, 5)
    rules = ibm_reconfiguration(inst)
    assert checked(inst, rules)["active_gpus"] == 1  # the 4g at 0, both 1g beside it


def test_compaction_vacate_uses_free_slots_only() -> None:
    # g0: 3g.40gb at 4; g1: 1g.10gb at 0. The least utilized (g1) is vacated onto g0 at the
    # lowest free index, 0; g0 is kept (nowhere else to go); g2 stays free.
    inst = two_gpus(("a", "3g.40gb", "g0", 4), ("b", "1g.10gb", "g1", 0), gpus=3)
    for baseline in ("load-balanced", "first-fit"):
        sol = ibm_baseline(inst, use_case="compaction", baseline=baseline)
        assert sol.placed() == {"a": ("g0", 4), "b": ("g0", 0)}
        m = checked(inst, sol)
        assert (m["active_gpus"], m["moved_memory_slots"], m["sequential_migrations"]) == (1, 1, 0)


def test_compaction_scratch_spreads_over_the_used_gpus() -> None:
    inst = two_gpus(("a", "3g.40gb", "g0", 4), ("b", "1g.10gb", "g1", 0), gpus=3)
    sol = ibm_baseline(inst, use_case="compaction", compaction="scratch")
    # a to g0 (tie, id) at index 0 (a compute slice stranded), b to the empty g1; g2 is no target
    assert sol.placed() == {"a": ("g0", 0), "b": ("g1", 0)}
    m = checked(inst, sol)
    assert (m["active_gpus"], m["compute_waste"], m["moved_memory_slots"]) == (2, 1, 0)


def test_a_pinned_gpu_is_never_vacated_and_stays_in_the_lifted_instance() -> None:
    inst = two_gpus(("a", "3g.40gb", "g0", 4), ("b", "1g.10gb", "g1", 0), gpus=3, pinned="b")
    assert [w.id for w in lifted(inst).running] == ["b"]
    sol = ibm_baseline(inst, use_case="compaction")
    assert sol.placed() == {"a": ("g1", 4), "b": ("g1", 0)}  # g0 vacated onto the pinned GPU
    assert checked(inst, sol)["active_gpus"] == 1


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_initial_is_the_batch_lb_and_ibm_first_fit(seed: int) -> None:
    inst = ibm_instance(8, seed=seed)
    assert ibm_baseline(inst).placed() == solve(inst, "lb").placed()
    assert ibm_baseline(inst, baseline="first-fit").placed() == ibm_first_fit(inst).placed()


def test_ibm_cases_at_80_gpus() -> None:
    # seed 0: 48 GPUs used before. Reconfiguration by load balancing opens all 80 GPUs and leaves
    # two 4g.40gb and a 7g.80gb pending (16 memory slots), as section 5.2.3 says of profile 5;
    # IBM's rules need 32. Compaction by load balancing vacates down to 34 GPUs, no pending.
    inst = ibm_instance(80, seed=0, load=0.0)
    re_lb = ibm_baseline(inst, use_case="reconfiguration")
    m = checked(inst, re_lb)
    assert (m["active_gpus"], m["pending_memory_slots"]) == (80, 16)
    assert Counter(inst.workload(w).profile for w in pending_running(inst, re_lb)) == {
        "4g.40gb": 2,
        "7g.80gb": 1,
    }
    assert checked(inst, ibm_reconfiguration(inst))["active_gpus"] == 32
    co = checked(inst, ibm_baseline(inst, use_case="compaction"))
    assert (co["active_gpus"], co["pending_memory_slots"], co["sequential_migrations"]) == (34, 0, 0)
    assert checked(inst, ibm_baseline(inst, use_case="compaction", baseline="first-fit"))["active_gpus"] == 33


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"use_case": "joint"}, "use_case must be initial, compaction or reconfiguration, got 'joint'"),
        ({"baseline": "rr"}, "baseline must be load-balanced or first-fit, got 'rr'"),
        ({"compaction": "all"}, "compaction must be vacate or scratch, got 'all'"),
    ],
)
def test_bad_arguments(kwargs: dict[str, str], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        ibm_baseline(two_gpus(("a", "1g.10gb", "g0", 0)), **kwargs)  # type: ignore[arg-type]
