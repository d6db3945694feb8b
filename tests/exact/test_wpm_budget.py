"""WPM within a budget: the MIP's rows hold it, and its optimum is the brute-force optimum within it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import mipopt
from mipopt.exact.wpm.solve import solve_wpm
from mipopt.instance import Budget, Instance, InstanceBuilder
from mipopt.instance.budget import disruption


def crowded() -> Instance:
    """g0: 1g.5gb at 0 and 3, 3g.20gb at 4; g1: 4g.20gb at 0. The new 4g.20gb (start 0 only) fits
    g0 once both 1g.5gb leave it; g1's upper half takes them (2 restarts, 10 GB), and the 3g.20gb
    keeps its start, so it is not restarted although its GPU is repartitioned."""
    b = InstanceBuilder("crowded")
    b.add_host("h", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_workload("r0", "1g.5gb", placement=("g0", 0))
    b.add_workload("r3", "1g.5gb", placement=("g0", 3))
    b.add_workload("y", "3g.20gb", placement=("g0", 4))
    b.add_workload("z", "4g.20gb", placement=("g1", 0))
    b.add_workload("big", "4g.20gb")
    b.add_workload("small", "1g.5gb")
    return b.build()


def placements(inst: Instance) -> Iterator[dict[str, tuple[str, int]]]:
    """Every placement that keeps the running workloads placed and overlaps nothing, by depth-first
    search over (GPU, start) per workload (new workloads may be left out)."""
    workloads = list(inst.workloads)
    masks = dict.fromkeys((g.id for g in inst.gpus), 0)

    def walk(i: int, placed: dict[str, tuple[str, int]]) -> Iterator[dict[str, tuple[str, int]]]:
        if i == len(workloads):
            yield dict(placed)
            return
        w = workloads[i]
        for g in inst.gpus:
            profile = g.model.profile(w.profile)
            for start in profile.starts:
                slots = profile.slot_mask(start)
                if masks[g.id] & slots:
                    continue
                masks[g.id] |= slots
                placed[w.id] = (g.id, start)
                yield from walk(i + 1, placed)
                del placed[w.id]
                masks[g.id] &= ~slots
        if not w.running:
            yield from walk(i + 1, placed)

    yield from walk(0, {})


def brute_force(inst: Instance, budget: Budget) -> tuple[float, float]:
    """The best (acceptance, hardware) within ``budget``: most acceptance, then least hardware,
    WPM's own order (a placed workload's reward beats any GPU, a GPU beats its migrations)."""
    best: tuple[float, float] | None = None
    for placed in placements(inst):
        if not budget.allows(disruption(inst, placed)):
            continue
        objectives, _ = mipopt.verifier.evaluate(inst, placed)
        key = (objectives.acceptance, -objectives.hardware)
        if best is None or key > (best[0], -best[1]):
            best = (objectives.acceptance, objectives.hardware)
    assert best is not None
    return best


@pytest.mark.parametrize(
    ("budget", "expected"),
    [
        (Budget(), (3, 20.0)),  # the unlimited optimum moves the 3g.20gb to g1 as well
        (Budget(max_restarts=2), (2, 10.0)),
        (Budget(max_moved_gb=10), (2, 10.0)),
        (Budget(max_restarts=1), (0, 0.0)),
        (Budget(max_moved_gb=5), (0, 0.0)),
        (Budget(max_restarts=0), (0, 0.0)),
    ],
)
def test_wpm_within_a_budget_is_the_brute_force_optimum(budget: Budget, expected: tuple) -> None:
    inst = crowded()
    sol = solve_wpm(inst, budget=budget)
    report = mipopt.verify(inst, sol)
    assert report.valid, report.violations
    assert (report.metrics["restarted"], report.metrics["moved_memory_gb"]) == expected
    assert sol.status is mipopt.Status.OPTIMAL
    assert report.objectives is not None
    assert (report.objectives.acceptance, report.objectives.hardware) == brute_force(inst, budget)
    placed = "big" in sol.placed()
    assert placed == (expected[0] >= 2)
    if not budget.unlimited:
        assert f"budget {budget}: optimal within it" in sol.message


def test_solve_hands_wpm_the_budget() -> None:
    inst = crowded()
    sol = mipopt.solve(inst, "exact", model="wpm", max_restarts=2)
    assert mipopt.verify(inst, sol).valid
    assert (sol.metrics["restarted"], sol.metrics["moved_memory_gb"]) == (2, 10.0)
    assert "budget at most 2 restarts: optimal within it" in sol.message
    free = mipopt.solve(inst, "exact", model="wpm")
    assert free.metrics["restarted"] == 3 and "budget" not in free.message


@pytest.mark.parametrize("use_case", ["compaction", "reconfiguration"])
def test_wpm_budget_zero_moves_nothing(use_case: str) -> None:
    inst = mipopt.load_instance("instances/fbk_fig3.json")
    free = solve_wpm(inst, use_case=use_case)
    assert free.metrics["restarted"] > 0
    sol = solve_wpm(inst, use_case=use_case, budget=Budget(max_restarts=0))
    assert mipopt.verify(inst, sol).valid
    assert sol.placed() == inst.current_placement()
