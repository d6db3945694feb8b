"""The IBM WPM rule-based heuristics (Turkkan et al., section 4.2), by hand and against the WPM MIP."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest
from factories import FIG4_COMPACTED, INSTANCES, ibm_fig4, instances
from hypothesis import given, settings

from mipopt.cli import main
from mipopt.exact.wpm.solve import solve_wpm
from mipopt.heuristics import ibm_compaction, ibm_initial, ibm_reconfiguration
from mipopt.heuristics.ibm_rules import min_gpus
from mipopt.instance import Instance, InstanceBuilder, Solution, Status, Termination
from mipopt.io import load_instance
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance

Policy = Callable[[Instance], Solution]
POLICIES: dict[str, Policy] = {
    "initial": ibm_initial,
    "compaction": ibm_compaction,
    "reconfiguration": ibm_reconfiguration,
}
KEYS = ("active_gpus", "compute_waste", "memory_waste", "moved_memory_slots", "sequential_migrations")


def placed(inst: Instance, sol: Solution) -> dict[str, tuple[str, int]]:
    """The solution's placements after checking the verifier accepts it and the rules every policy keeps."""
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert (sol.termination, sol.status) == (Termination.COMPLETED, Status.FEASIBLE)
    where = sol.placed()
    assert {w.id for w in inst.running} <= where.keys()  # running workloads stay placed
    for w in inst.running:
        if w.pinned:
            assert w.placement is not None
            assert where[w.id] == (w.placement.gpu, w.placement.start)
    return where


def metrics(inst: Instance, sol: Solution) -> tuple[float, ...]:
    return tuple(verify(inst, sol).metrics[k] for k in KEYS)


# --- initial deployment


def test_initial_fig7() -> None:
    # largest first: 3g.40gb fits no free index (rejected); 2g.20gb only at 2; 1g.10gb then has
    # slots 1 and 4 free and Table 1's order 6, 4, 5, 0, 1, ... picks 4 (first fit from 0 takes 1)
    inst = load_instance(INSTANCES / "ibm_fig7.json")
    sol = ibm_initial(inst)
    assert placed(inst, sol) == inst.current_placement() | {"n2g": ("g0", 2), "n1g": ("g0", 4)}
    assert sol.rejected == ("n3g",)


def test_initial_fbk_fig3() -> None:
    # joint utilization g1 7/15 > g2 6/15 > g3 4/15, but only g2 has a free 3g.40gb start (4)
    inst = load_instance(INSTANCES / "fbk_fig3.json")
    sol = ibm_initial(inst)
    assert placed(inst, sol)["req"] == ("g2", 4)
    assert sol.rejected == ()


def test_initial_best_fit_by_utilization_then_new_gpu() -> None:
    # g1 holds a 4g.40gb (8/15), g2 a 1g.10gb (2/15), g3 free. Largest first: the 3g.40gb fits g1 at 4
    # (utilization after 15/15); the 2g.20gb fits only g2 (g1 full), at 4 by preference; the 7g.80gb
    # fits no used GPU, so a new GPU, g3, is allocated; the second 7g.80gb is pending.
    b = InstanceBuilder("best-fit")
    b.add_host("h", {"g1": "A100-80GB", "g2": "A100-80GB", "g3": "A100-80GB"})
    b.add_workload("r1", "4g.40gb", placement=("g1", 0))
    b.add_workload("r2", "1g.10gb", placement=("g2", 0))
    for wid, profile in [("n1g", "2g.20gb"), ("n3g", "3g.40gb"), ("n7a", "7g.80gb"), ("n7b", "7g.80gb")]:
        b.add_workload(wid, profile)
    inst = b.build()
    sol = ibm_initial(inst)
    assert placed(inst, sol) == inst.current_placement() | {
        "n3g": ("g1", 4),
        "n1g": ("g2", 4),
        "n7a": ("g3", 0),
    }
    assert sol.rejected == ("n7b",)


# --- compaction


def test_compaction_fig4() -> None:
    # least utilized first: gpu1 (7/15) cannot go (its 2g.20gb has no free start on gpu2 or gpu3);
    # gpu3 (9/15) goes, the 3g.40gb into gpu1's slots 4-7 and the 1g.10gb into gpu2's slot 6: the
    # paper's Fig. 4, 13 of 14 compute and 15 of 16 memory slices used, 5 slices moved, one GPU saved
    inst = ibm_fig4()
    sol = ibm_compaction(inst)
    assert placed(inst, sol) == inst.current_placement() | FIG4_COMPACTED
    assert metrics(inst, sol) == (2, 1, 1, 5, 0)
    assert sol.rejected == ()


def fig8(free_gpu: bool = True) -> Instance:
    """A Fig. 8-like node: no GPU can be vacated alone without a sequential migration.

    gpu1 and gpu2: a 3g.40gb at 0 (W1, W2: a stranded compute slice each) and a 1g.10gb at 4;
    gpu3: a 2g.20gb at 0 and 1g.10gb at 4 and 5; gpu4 free when ``free_gpu``.
    """
    b = InstanceBuilder("fig8")
    b.add_host("node", {f"gpu{k}": "A100-80GB" for k in range(1, 5 if free_gpu else 4)})
    b.add_workload("W1", "3g.40gb", placement=("gpu1", 0))
    b.add_workload("a", "1g.10gb", placement=("gpu1", 4))
    b.add_workload("W2", "3g.40gb", placement=("gpu2", 0))
    b.add_workload("b", "1g.10gb", placement=("gpu2", 4))
    b.add_workload("c", "2g.20gb", placement=("gpu3", 0))
    b.add_workload("d", "1g.10gb", placement=("gpu3", 4))
    b.add_workload("e", "1g.10gb", placement=("gpu3", 5))
    return b.build()


def test_compaction_adds_a_free_gpu_fig8() -> None:
    # without a free GPU nothing can be vacated: a 3g.40gb needs slot 0 or 4 free, the 2g.20gb
    # slot 0, 2 or 4, and no used GPU offers one while the others stay
    inst = fig8(free_gpu=False)
    assert placed(inst, ibm_compaction(inst)) == inst.current_placement()
    # with gpu4: gpu3 (8/15) first, its 2g.20gb to gpu4 at 4 (no used GPU has a 2g start), its
    # 1g.10gb to gpu1 at 6 then 5 (utilization after 11/15 beats gpu4's 6/15; gpu1 before gpu2 by
    # id, then 13/15). Then gpu1: W1 to gpu4 at 0; a to gpu4 at 6 (13/15 after, gpu2 11/15); d and
    # e to gpu2 at 6 and 5 (gpu4 has only slot 7 left, no 1g start). Two vacated for one added: one
    # GPU saved; d and e end on gpu2 (their stop on gpu1 is no move), and every target slot was free
    # at the start, so nothing is sequential
    inst = fig8()
    sol = ibm_compaction(inst)
    assert placed(inst, sol) == inst.current_placement() | {
        "c": ("gpu4", 4),
        "W1": ("gpu4", 0),
        "a": ("gpu4", 6),
        "d": ("gpu2", 6),
        "e": ("gpu2", 5),
    }
    # the rules do not chase waste here: W1 at 0 on gpu4 and W2 still strand a compute slice each,
    # and the 1g.10gb at 6 on gpu2 and gpu4 strand slot 7 (memory waste 2); 2 + 1 + 1 + 4 + 1 slots moved
    assert metrics(inst, sol) == (2, 2, 2, 9, 0)


def test_compaction_rejects_new_and_keeps_pinned() -> None:
    b = InstanceBuilder("pinned")
    b.add_host("h", {"g1": "A100-80GB", "g2": "A100-80GB"})
    b.add_workload("p", "1g.10gb", placement=("g1", 0), pinned=True)
    b.add_workload("q", "1g.10gb", placement=("g2", 0))
    b.add_workload("new", "1g.10gb")
    inst = b.build()
    sol = ibm_compaction(inst)
    # g1 (pinned) and g2 tie at 2/15, g1 first by id, but it cannot be vacated; q joins p at 6
    assert placed(inst, sol) == {"p": ("g1", 0), "q": ("g1", 6)}
    assert sol.rejected == ("new",)


# --- reconfiguration


def test_min_gpus_eq3() -> None:
    # Fig. 4 node: compute 13/7 and memory 15/8 -> 2; Fig. 8 node: compute 12/7, memory 14/8 -> 2
    assert min_gpus(ibm_fig4(), ibm_fig4().running) == 2
    assert min_gpus(fig8(), fig8().running) == 2


def test_reconfiguration_fig5() -> None:
    # Eq. 3 gives 2; the free gpu4 and gpu5 are least utilized. Step 3: the 3g.40gb (w6) to gpu4 at
    # 4, the 1g.20gb (w2) to gpu5 at 6; then first fit, largest first: the 4g.40gb to gpu4 at 0,
    # the 2g.20gb and the three 1g.10gb to gpu5 at 4, 0, 1, 2. Fig. 5: no waste, two GPUs, one
    # slice left for another workload, nothing sequential since both GPUs were free
    inst = ibm_fig4()
    sol = ibm_reconfiguration(inst)
    assert placed(inst, sol) == {
        "w6": ("gpu4", 4),
        "w2": ("gpu5", 6),
        "w3": ("gpu4", 0),
        "w1": ("gpu5", 4),
        "w4": ("gpu5", 0),
        "w5": ("gpu5", 1),
        "w7": ("gpu5", 2),
    }
    assert metrics(inst, sol) == (2, 0, 0, 15, 0)
    assert verify(inst, sol).metrics["available_gpu_slices"] == 22


def test_reconfiguration_raises_the_count_when_first_fit_fails() -> None:
    # two 4g.40gb: Eq. 3 says 8/7 -> 2 GPUs... and they fit two. Three 4g.40gb and nothing else:
    # compute 12/7 -> 2, but a 4g.40gb only starts at 0, so two GPUs hold two; the count rises to 3
    b = InstanceBuilder("three-4g")
    b.add_host("h", {f"g{k}": "A100-80GB" for k in range(1, 5)})
    for k in range(1, 4):
        b.add_workload(f"w{k}", "4g.40gb", placement=(f"g{k}", 0))
    inst = b.build()
    assert min_gpus(inst, inst.running) == 2
    sol = ibm_reconfiguration(inst)
    # g4 free first, then g1, g2 (tied at 8/15, by id): w1 to g4, w2 to g1, w3 to g2
    assert placed(inst, sol) == {"w1": ("g4", 0), "w2": ("g1", 0), "w3": ("g2", 0)}
    assert verify(inst, sol).metrics["active_gpus"] == 3


def test_eighty_gpus_reach_the_bound() -> None:
    # IBM case, 80 GPUs, seed 0: 48 GPUs used, 32 free. Reconfiguration reaches Eq. 3's bound on free
    # GPUs only (nothing sequential); this needs the +me round of Step 3 (first fit alone: 39 GPUs).
    # Compaction vacates 15 GPUs with one-shot moves only.
    inst = ibm_instance(80, seed=0)
    assert len({g for g, _ in inst.current_placement().values()}) == 48
    assert min_gpus(inst, inst.running) == 32
    reconf = ibm_reconfiguration(inst)
    placed(inst, reconf)
    assert (reconf.metrics["active_gpus"], reconf.metrics["sequential_migrations"]) == (32, 0)
    compact = ibm_compaction(inst)
    placed(inst, compact)
    assert (compact.metrics["active_gpus"], compact.metrics["sequential_migrations"]) == (33, 0)


# --- every solution verifies; never better than WPM; deterministic


@settings(max_examples=40, deadline=None)
@given(instances())
def test_policies_verify_on_random_instances(inst: Instance) -> None:
    for name, policy in POLICIES.items():
        sol = policy(inst)
        where = placed(inst, sol)
        if name == "initial":
            assert inst.current_placement().items() <= where.items()
        else:
            assert where.keys() == {w.id for w in inst.running}
        if name == "compaction":  # one-shot moves into slots free at the start
            assert sol.metrics["sequential_migrations"] == 0
            assert sol.metrics["active_gpus"] <= len({g for g, _ in inst.current_placement().values()})


@pytest.mark.parametrize("seed", range(3))
def test_never_better_than_wpm(seed: int) -> None:
    inst = ibm_instance(8, seed=seed)
    for use_case, policy in POLICIES.items():
        heuristic = verify(inst, policy(inst))
        mip = verify(inst, solve_wpm(inst, use_case=use_case))
        assert heuristic.valid and mip.valid
        if use_case == "initial":  # WPM's first priority: placing
            assert heuristic.objectives.acceptance <= mip.objectives.acceptance
        else:  # then saving GPUs
            assert heuristic.metrics["active_gpus"] >= mip.metrics["active_gpus"], use_case


def test_deterministic_on_an_ibm_instance() -> None:
    inst = ibm_instance(24, seed=5)
    for policy in POLICIES.values():
        first, again = policy(inst), policy(inst)
        assert first.placements == again.placements and first.rejected == again.rejected
        assert first.metrics == again.metrics
        placed(inst, first)


@pytest.mark.parametrize("use_case", POLICIES.keys())
def test_command_line(use_case: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["solve", str(INSTANCES / "ibm_fig7.json"), "--method", f"ibm-{use_case}", "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    sol = json.loads(out)
    assert sol["method"].startswith(f"ibm-{use_case} (")
    got = {p["workload"]: (p["gpu"], p["start"]) for p in sol["placements"]}
    assert got == POLICIES[use_case](load_instance(INSTANCES / "ibm_fig7.json")).placed()
    # initial places two of the three new workloads; the others leave them all pending
    assert len(sol["rejected"]) == (1 if use_case == "initial" else 3)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_joint_rules_reconfigure_then_deploy(seed: int) -> None:
    from mipopt.heuristics import ibm_joint

    inst = ibm_instance(8, seed=seed)
    sol = ibm_joint(inst)
    report = verify(inst, sol)
    assert report.valid, report.violations
    placed = sol.placed()
    assert all(w.id in placed for w in inst.running)
    # the running workloads land where reconfiguration puts them; the new ones are then deployed
    reconf = ibm_reconfiguration(inst).placed()
    assert {w.id: placed[w.id] for w in inst.running} == {w.id: reconf[w.id] for w in inst.running}
    mip = verify(inst, solve_wpm(inst, use_case="joint")).objectives
    assert report.objectives.acceptance <= mip.acceptance
