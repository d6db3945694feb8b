"""The verifier (every rule, objectives and metrics by hand) and first-fit, which it checks."""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from factories import FIG4_COMPACTED, GpuState, capped_a100, ibm_fig4, instances
from hypothesis import event, given, settings
from hypothesis import strategies as st

from mipopt.catalog import GpuModel, Profile, get_model, model_from_dict
from mipopt.geometry import reference as geo
from mipopt.instance import (
    Assignment,
    Instance,
    InstanceBuilder,
    Objectives,
    Solution,
    Status,
    Termination,
)
from mipopt.io import load_instance
from mipopt.registry import solve
from mipopt.verifier import evaluate, verify

QUICKSTART = Path(__file__).resolve().parents[2] / "instances" / "quickstart.json"


def solution(
    instance: Instance,
    placed: dict[str, tuple[str, int]],
    rejected: tuple[str, ...] | None = None,
    *,
    extra: tuple[Assignment, ...] = (),
    objectives: Objectives | None = None,
    termination: Termination = Termination.COMPLETED,
    status: Status = Status.FEASIBLE,
    name: str | None = None,
) -> Solution:
    """A hand-made solution; by default every workload not in ``placed`` is rejected."""
    if rejected is None:
        rejected = tuple(w.id for w in instance.workloads if w.id not in placed)
    return Solution(
        instance=instance.name if name is None else name,
        method="by hand",
        termination=termination,
        status=status,
        placements=tuple(Assignment(w, g, s) for w, (g, s) in placed.items()) + extra,
        rejected=rejected,
        objectives=objectives,
    )


# --- hand-made rule cases


def tiny() -> Instance:
    """h1 (cpu 24, ram 80): g1, g2 A100-40GB; h2 (weight 2): g3 A30-24GB."""
    b = InstanceBuilder("tiny")
    b.add_host("h1", {"g1": "A100-40GB", "g2": "A100-40GB"}, cpu=24, ram_gb=80)
    b.add_host("h2", {"g3": "A30-24GB"}, weight=2.0)
    b.add_workload("run", "3g.20gb", placement=("g1", 4), cpu=8, ram_gb=32)
    b.add_workload("pin", "1g.5gb", placement=("g1", 0), pinned=True)
    b.add_workload("me1", "1g.5gb+me")
    b.add_workload("me2", "1g.5gb+me")
    b.add_workload("big", "2g.10gb", cpu=12, ram_gb=40)
    b.add_workload("a30", "2g.12gb", gpu_models=["A30-24GB"])
    b.add_workload("me-a", "1g.6gb+me")
    b.add_workload("me-b", "2g.12gb+me")
    b.add_workload("cpu-hog", "1g.5gb", cpu=10)
    b.add_workload("ram-hog", "1g.5gb", ram_gb=20)
    return b.build()


# placements[0..5]; rejected: me2, me-b, cpu-hog, ram-hog
VALID = {
    "run": ("g1", 4),
    "pin": ("g1", 0),
    "me1": ("g2", 0),
    "big": ("g2", 2),
    "a30": ("g3", 0),
    "me-a": ("g3", 2),
}


def moved(**changes: tuple[str, int] | None) -> dict[str, tuple[str, int]]:
    """VALID with some workloads moved (or, with None, removed), order kept."""
    out = {w: changes.get(w, where) for w, where in VALID.items()}
    out.update({w: where for w, where in changes.items() if w not in VALID})
    return {w: where for w, where in out.items() if where is not None}


def test_valid_hand_solution() -> None:
    inst = tiny()
    report = verify(inst, solution(inst, VALID, objectives=Objectives(6, 7, 0)))
    assert report.valid and report.violations == ()
    # acceptance: six placed, weight 1; hardware: h1 1 + 2 GPUs, h2 2 x (1 + 1 GPU)
    assert report.objectives == Objectives(6.0, 7.0, 0.0, 0.0)


@pytest.mark.parametrize("rejected", [(), ("me-b",), ("me2", "me-b", "cpu-hog", "ram-hog")])
def test_a_new_workload_not_placed_is_rejected_listed_or_not(rejected: tuple[str, ...]) -> None:
    inst = tiny()
    report = verify(inst, solution(inst, VALID, rejected, objectives=Objectives(6, 7, 0)))
    assert report.valid and report.violations == ()
    assert (report.metrics["accepted"], report.metrics["rejected"]) == (6, 4)


def test_a_solution_naming_no_instance_is_not_checked_for_its_name() -> None:
    inst = tiny()
    assert verify(inst, solution(inst, VALID, name="")).valid


CASES: list[tuple[str, Callable[[Instance], Solution], list[str]]] = [
    (
        "overlap",
        lambda i: solution(i, moved(big=("g1", 4))),
        ["GPU 'g1': 'big' overlaps 'run'"],
    ),
    (
        "illegal-start",
        lambda i: solution(i, moved(big=("g2", 1))),
        ["placements[3].start: 1 is not a legal start of 2g.10gb on A100-40GB (0, 2, 4)"],
    ),
    (
        "start-past-the-gpu",
        lambda i: solution(i, moved(big=("g2", 8))),
        ["placements[3].start: 8 is not a legal start of 2g.10gb on A100-40GB (0, 2, 4)"],
    ),
    (
        "unknown-workload",
        lambda i: solution(i, VALID, extra=(Assignment("ghost", "g2", 6),)),
        ["placements[6].workload: 'ghost' is not a workload of the instance"],
    ),
    (
        "unknown-gpu",
        lambda i: solution(i, moved(big=("g9", 2))),
        ["placements[3].gpu: 'g9' is not a GPU of the instance"],
    ),
    (
        "placed-twice",
        lambda i: solution(i, VALID, extra=(Assignment("big", "g2", 4),)),
        ["placements[6].workload: 'big' is placed twice (also placements[3])"],
    ),
    (
        "placed-and-rejected",
        lambda i: solution(i, VALID, ("me2", "me-b", "cpu-hog", "ram-hog", "big")),
        ["rejected[4]: 'big' is both placed and rejected"],
    ),
    (
        "rejected-twice",
        lambda i: solution(i, VALID, ("me2", "me-b", "cpu-hog", "ram-hog", "me2")),
        ["rejected[4]: 'me2' is rejected twice"],
    ),
    (
        "unknown-rejected",
        lambda i: solution(i, VALID, ("me2", "me-b", "cpu-hog", "ram-hog", "ghost")),
        ["rejected[4]: 'ghost' is not a workload of the instance"],
    ),
    (
        "running-rejected",
        lambda i: solution(i, moved(run=None)),
        ["workload 'run': running workloads must stay placed"],
    ),
    (
        "running-dropped",
        lambda i: solution(i, moved(run=None), ("me2", "me-b", "cpu-hog", "ram-hog")),
        ["workload 'run': running workloads must stay placed"],
    ),
    (
        "pinned-moved",
        lambda i: solution(i, moved(pin=("g1", 1))),
        ["workload 'pin': pinned at g1:0, placed at g1:1"],
    ),
    (
        "pinned-moved-to-another-gpu",
        lambda i: solution(i, moved(pin=("g2", 6))),
        ["workload 'pin': pinned at g1:0, placed at g2:6"],
    ),
    (
        "excluded-model",
        lambda i: solution(i, moved(a30=("g2", 4))),
        ["placements[4].gpu: 'g2' (A100-40GB) is excluded: workload 'a30' allows only A30-24GB"],
    ),
    (
        "profile-not-on-model",
        lambda i: solution(i, moved(me1=("g3", 3), **{"me-a": None})),
        ["placements[2].gpu: '1g.5gb+me' (workload 'me1') is not a profile of A30-24GB"],
    ),
    (
        "two-media-extension",  # two different +me profiles of the A30: only the +me rule is broken
        lambda i: solution(i, moved(a30=None, **{"me-b": ("g3", 0)})),
        ["GPU 'g3': 2 +me instances (me-a, me-b), at most one per GPU"],
    ),
    (
        "same-media-profile-twice",  # one +me profile twice: its maximum of one is broken too
        lambda i: solution(i, moved(me2=("g2", 6))),
        [
            "GPU 'g2': 2 instances of 1g.5gb+me, at most 1",
            "GPU 'g2': 2 +me instances (me1, me2), at most one per GPU",
        ],
    ),
    (
        "host-cpu",  # run 8 + big 12 + cpu-hog 10
        lambda i: solution(i, moved(**{"cpu-hog": ("g2", 6)})),
        ["host 'h1': cpu 30 > capacity 24"],
    ),
    (
        "host-ram",  # run 32 + big 40 + ram-hog 20
        lambda i: solution(i, moved(**{"ram-hog": ("g2", 6)})),
        ["host 'h1': ram_gb 92 > capacity 80"],
    ),
    (
        "wrong-objectives",
        lambda i: solution(i, VALID, objectives=Objectives(6.5, 5, -1)),
        [
            "objectives.acceptance: solution says 6.5, verifier computes 6",
            "objectives.hardware: solution says 5, verifier computes 7",
            "objectives.migrations: solution says -1, verifier computes 0",
        ],
    ),
    (
        "optimal-status-at-time-limit",
        lambda i: solution(i, VALID, termination=Termination.TIME_LIMIT, status=Status.OPTIMAL),
        ["status: 'optimal' with termination 'time_limit'"],
    ),
    (
        "no-status-but-placements",
        lambda i: solution(i, VALID, termination=Termination.ERROR, status=Status.NONE),
        ["status: 'none' but the solution places workloads"],
    ),
    (
        "instance-name-mismatch",
        lambda i: solution(i, VALID, name="other"),
        ["instance: solution is for 'other', not 'tiny'"],
    ),
]


@pytest.mark.parametrize(("make", "expected"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_hand_made_violation(make: Callable[[Instance], Solution], expected: list[str]) -> None:
    inst = tiny()
    report = verify(inst, make(inst))
    assert not report.valid
    assert list(report.violations) == expected


def test_per_profile_maximum_alone() -> None:
    """A custom A100 whose 1g.5gb may run only twice: a third breaks that rule and no other."""
    inst = capped_a100(3)
    report = verify(inst, solution(inst, {"w0": ("c0", 0), "w1": ("c0", 1), "w2": ("c0", 2)}))
    assert report.violations == ("GPU 'c0': 3 instances of 1g.5gb, at most 2",)


# --- objectives and metrics by hand


def cluster() -> Instance:
    """h1 (weight 1): g1, g2 A100-40GB; h2 (weight 3): g3 A100-40GB, g4 A100-80GB."""
    b = InstanceBuilder("cluster")
    b.add_host("h1", {"g1": "A100-40GB", "g2": "A100-40GB"}, weight=1.0)
    b.add_host("h2", {"g3": "A100-40GB", "g4": "A100-80GB"}, weight=3.0)
    b.add_workload("w", "1g.5gb", placement=("g1", 0), migration_weight=2.5, gpu_models=["A100-40GB"])
    b.add_workload("x", "3g.20gb", weight=2.0, gpu_models=["A100-40GB"])
    b.add_workload("y", "1g.5gb", weight=0.5, gpu_models=["A100-40GB"])
    b.add_workload("z", "1g.10gb", weight=0.25, gpu_models=["A100-80GB"])
    return b.build()


@pytest.mark.parametrize(
    ("placed", "objectives", "moves"),
    [
        # w stays, x beside it: h1 counted once plus one GPU
        ({"w": ("g1", 0), "x": ("g1", 4)}, (3.0, 2.0, 0.0, 0.0), (0, 0, 0)),
        # a new start on the same GPU costs nothing under Eq. 5 but restarts w (delta 2.5)
        ({"w": ("g1", 3), "x": ("g1", 4)}, (3.0, 2.0, 0.0, 2.5), (0, 0, 1)),
        # another GPU of the same host: 2 delta; h1 with two active GPUs
        ({"w": ("g2", 0), "x": ("g1", 4)}, (3.0, 3.0, 5.0, 2.5), (0, 1, 0)),
        # another host: 4 delta; h1 (1 + 1) x 1 + h2 (1 + 1) x 3
        ({"w": ("g3", 0), "x": ("g1", 4)}, (3.0, 8.0, 10.0, 2.5), (1, 0, 0)),
        # everything on h2: 3 x (1 + 2)
        ({"w": ("g3", 6), "y": ("g3", 0), "z": ("g4", 6)}, (1.75, 9.0, 10.0, 2.5), (1, 0, 0)),
    ],
)
def test_objectives_by_hand(
    placed: dict[str, tuple[str, int]],
    objectives: tuple[float, float, float, float],
    moves: tuple[int, int, int],
) -> None:
    inst = cluster()
    report = verify(inst, solution(inst, placed, objectives=Objectives(*objectives)))
    assert report.valid, report.violations
    assert report.objectives == Objectives(*objectives)
    m = report.metrics
    assert (m["moves_inter_host"], m["moves_inter_gpu"], m["moves_intra_gpu"]) == moves
    assert m["moved_memory_gb"] == (5.0 if moves[0] or moves[1] else 0.0)
    assert m["restarted"] == sum(moves)


def test_dropped_running_workload_counts_twice_its_weight() -> None:
    # Eq. 5 taken literally: x and y of the old place both drop from 1 to 0
    objectives, metrics = evaluate(cluster(), {"x": ("g1", 4)})
    assert objectives == Objectives(2.0, 2.0, 5.0, 0.0)  # an eviction is no restart
    assert metrics["accepted"] == 1 and metrics["rejected"] == 3


def test_metrics_by_hand() -> None:
    inst = cluster()
    # w: 1g.5gb at 3 (no waste); x: 3g at 0 spans compute slices 0-3, uses 3: one wasted;
    # z: 1g.10gb (one slot on the 80 GB part) at 6 takes slice 6 = slots 6, 7: slot 7 stranded
    report = verify(inst, solution(inst, {"w": ("g2", 3), "x": ("g1", 0), "z": ("g4", 6)}))
    assert report.valid, report.violations
    m = report.metrics
    assert m["compute_waste"] == 1
    assert m["memory_waste"] == 1
    assert (m["workloads"], m["accepted"], m["accepted_new"], m["rejected"]) == (4, 3, 2, 1)
    assert m["acceptance_rate"] == 0.75
    assert (m["active_hosts"], m["active_gpus"]) == (2, 3)
    # used slots 4 + 1 + 1 of 24 on the three active GPUs; compute 3 + 1 + 1 of 21
    assert (m["used_memory_slots"], m["used_compute_slices"]) == (6, 5)
    assert m["memory_utilization"] == pytest.approx(6 / 24)
    assert m["compute_utilization"] == pytest.approx(5 / 21)
    # FBK F (MFI Alg. 1, weights = memory slots) per GPU:
    # g1 (slots 0-3 used, 4 free): 1g.5gb starts 0-3 blocked 4x1, 1g.10gb 0,2 2x2, 2g 0,2 2x2,
    #   3g 0 1x4, 4g 0 1x4 (7g needs 8 > 4 free) = 20
    # g2 (slot 3 used): 1g.5gb 3: 1, 1g.10gb 2: 2, 2g 2: 2, 3g 0: 4, 4g 0: 4, 7g skipped = 13
    # g3 empty: 0; g4 (slot 6 used): 1g.10gb 6: 1, 1g.20gb 6: 2, 3g 4: 4 = 7
    assert m["fragmentation_fbk_total"] == 20 + 13 + 0 + 7
    assert m["fragmentation_fbk_mean_active"] == pytest.approx(40 / 3)
    # GRMU Alg. 4 (free-slot copy per profile, leftovers / size):
    # g1 free 4-7: 1g 4,5,6 left 7: 1; 1g.10gb 4,6: 0; 2g 4 left 6,7: 1; 3g 4: 0; 4g left 4: 1 -> 3
    # g2 free all but 3: 1g 0-2,4-6 left 7: 1; 1g.10gb 0,4,6 left 2: 0.5; 2g 0,4 left 2,6,7: 1.5;
    #   3g 4 left 0,1,2: 0.75; 4g left all 7: 1.75 -> 5.5
    # g4 free all but 6: 1g.10gb 0-5 left 7: 1; 1g.20gb 0,2,4 left 7: 0.5; 2g 0,2,4: 0.5;
    #   3g.40gb 0 left 4,5,7: 0.75; 4g 0: 0.75 -> 3.5
    # even the empty g3 scores: 1g leaves slot 7 (1), 2g leaves 6-7 (1), 4g leaves 4-7 (1) -> 3
    assert m["fragmentation_grmu_total"] == pytest.approx(3 + 5.5 + 3 + 3.5)
    # CC (GRMU Eq. 1, base profiles): g1 3+2+1+1 = 7; g2 6+3+2+1+0+0 = 12; empty g3 18;
    # g4 6+3+3+1+1 = 14
    assert m["cc_total"] == 7 + 12 + 18 + 14


def test_waste_definitions_at_the_other_end() -> None:
    # the counterparts of the hand cases: 3g at 4 wastes nothing, a 1g.10gb of the 40 GB part
    # (one compute, two slots) wastes a compute slice anywhere but the last slice
    a40, a80 = get_model("A100-40GB"), get_model("A100-80GB")
    assert geo.compute_waste(a40, a40.profile("3g.20gb"), 4) == 0
    assert [geo.compute_waste(a40, a40.profile("1g.10gb"), s) for s in (0, 2, 4, 6)] == [1, 1, 1, 0]
    assert [geo.memory_waste(a80, a80.profile("1g.10gb"), s) for s in range(7)] == [0] * 6 + [1]


# --- every single-rule mutation of a valid solution is rejected

Mutant = tuple[Solution, set[str]] | None


def _layout(inst: Instance, sol: Solution) -> dict[str, GpuState]:
    """Occupancy of each GPU under ``sol`` (a valid solution), from the catalog alone."""
    states = {g.id: GpuState(g.model) for g in inst.gpus}
    for a in sol.placements:
        states[a.gpu].take(_profile(inst, a.workload, a.gpu), a.start)
    return states


def _profile(inst: Instance, wid: str, gpu_id: str) -> Profile:
    return inst.gpu(gpu_id).model.profile(inst.workload(wid).profile)


def _slots(profile: Profile, start: int) -> set[int]:
    return set(range(start, start + profile.memory_slots))


def _replace(sol: Solution, wid: str, gpu: str, start: int) -> Solution:
    """``sol`` with ``wid`` (placed or rejected) at ``(gpu, start)``, appended last."""
    return dataclasses.replace(
        sol,
        placements=(*(a for a in sol.placements if a.workload != wid), Assignment(wid, gpu, start)),
        rejected=tuple(r for r in sol.rejected if r != wid),
        objectives=None,
    )


def illegal_start(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    if not sol.placements:
        return None
    i = data.draw(st.integers(0, len(sol.placements) - 1))
    a = sol.placements[i]
    model = inst.gpu(a.gpu).model
    p = _profile(inst, a.workload, a.gpu)
    start = data.draw(st.sampled_from([s for s in range(model.slots + 1) if s not in p.starts]))
    placements = list(sol.placements)
    placements[i] = Assignment(a.workload, a.gpu, start)
    starts = ", ".join(map(str, p.starts))
    return (
        dataclasses.replace(sol, placements=tuple(placements), objectives=None),
        {f"placements[{i}].start: {start} is not a legal start of {p.name} on {model.name} ({starts})"},
    )


def overlap(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    """Move one instance onto a legal start that overlaps another one."""
    options = []
    for a in sol.placements:
        w = inst.workload(a.workload)
        if w.pinned:
            continue
        for b in sol.placements:
            if b.workload == a.workload:
                continue
            p = inst.profile_on(w, inst.gpu(b.gpu).model)
            if p is None:
                continue
            other = _slots(_profile(inst, b.workload, b.gpu), b.start)
            options += [(a.workload, b.gpu, s, b.workload) for s in p.starts if _slots(p, s) & other]
    if not options:
        return None
    wid, gpu, start, hit = data.draw(st.sampled_from(options))
    # the mover is appended last, so it is reported as overlapping what was there
    return _replace(sol, wid, gpu, start), {f"GPU {gpu!r}: {wid!r} overlaps {hit!r}"}


def duplicate(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    if not sol.placements:
        return None
    i = data.draw(st.integers(0, len(sol.placements) - 1))
    a = sol.placements[i]
    n = len(sol.placements)
    return (
        dataclasses.replace(sol, placements=(*sol.placements, a), objectives=None),
        {f"placements[{n}].workload: {a.workload!r} is placed twice (also placements[{i}])"},
    )


def _drop_running(reject: bool) -> Callable[[Instance, Solution, st.DataObject], Mutant]:
    def mutate(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
        if not inst.running:
            return None
        w = data.draw(st.sampled_from(inst.running))
        return (
            dataclasses.replace(
                sol,
                placements=tuple(a for a in sol.placements if a.workload != w.id),
                rejected=(*sol.rejected, w.id) if reject else sol.rejected,
                objectives=None,
            ),
            {f"workload {w.id!r}: running workloads must stay placed"},
        )

    return mutate


def unknown_gpu(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    if not sol.placements:
        return None
    i = data.draw(st.integers(0, len(sol.placements) - 1))
    placements = list(sol.placements)
    placements[i] = dataclasses.replace(placements[i], gpu="no-such-gpu")
    return (
        dataclasses.replace(sol, placements=tuple(placements), objectives=None),
        {f"placements[{i}].gpu: 'no-such-gpu' is not a GPU of the instance"},
    )


def wrong_objective(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    assert sol.objectives is not None
    key = data.draw(st.sampled_from(["acceptance", "hardware", "migrations"]))
    right = getattr(sol.objectives, key)
    wrong = right + data.draw(st.sampled_from([-1.0, 0.5, 1.0]))
    objectives = dataclasses.replace(sol.objectives, **{key: wrong})
    return (
        dataclasses.replace(sol, objectives=objectives),
        {f"objectives.{key}: solution says {wrong:g}, verifier computes {right:g}"},
    )


def pinned_moved(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    options = []
    for w in inst.running:
        if not w.pinned:
            continue
        assert w.placement is not None
        for g in inst.gpus:
            p = inst.profile_on(w, g.model)
            if p is not None:
                options += [
                    (w, g.id, s) for s in p.starts if (g.id, s) != (w.placement.gpu, w.placement.start)
                ]
    if not options:
        return None
    w, gpu, start = data.draw(st.sampled_from(options))
    assert w.placement is not None
    return (
        _replace(sol, w.id, gpu, start),
        {f"workload {w.id!r}: pinned at {w.placement.gpu}:{w.placement.start}, placed at {gpu}:{start}"},
    )


def second_media(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    """Put another ``+me`` instance on a GPU that holds one, at a free legal start."""
    states = _layout(inst, sol)
    holder = {a.gpu: a.workload for a in sol.placements if _profile(inst, a.workload, a.gpu).media_extension}
    where = {a.workload: a for a in sol.placements}
    options = []
    for gpu, held_by in holder.items():
        for w in inst.workloads:
            if w.id == held_by or w.pinned or (w.id in where and where[w.id].gpu == gpu):
                continue
            p = inst.profile_on(w, inst.gpu(gpu).model)
            if p is None or not p.media_extension:
                continue
            options += [(w.id, gpu, s, held_by) for s in p.starts if not states[gpu].mask & p.slot_mask(s)]
    if not options:
        return None
    wid, gpu, start, held_by = data.draw(st.sampled_from(options))
    return (
        _replace(sol, wid, gpu, start),
        {f"GPU {gpu!r}: 2 +me instances ({held_by}, {wid}), at most one per GPU"},
    )


def _over_capacity(attr: str) -> Callable[[Instance, Solution, st.DataObject], Mutant]:
    """Place a workload, by every per-GPU rule, on a host whose ``attr`` it overfills."""

    def need(inst: Instance, wid: str) -> float:
        w = inst.workload(wid)
        return w.cpu if attr == "cpu" else w.ram_gb

    def mutate(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
        states = _layout(inst, sol)
        used: defaultdict[str, float] = defaultdict(float)
        host_of = {}
        for a in sol.placements:
            host_of[a.workload] = inst.gpu(a.gpu).host
            used[host_of[a.workload]] += need(inst, a.workload)
        options = []
        for h in inst.hosts:
            cap = getattr(h, attr)
            if cap is None:
                continue
            for w in inst.workloads:
                if w.pinned or host_of.get(w.id) == h.id or used[h.id] + need(inst, w.id) <= cap:
                    continue
                for gid in h.gpus:
                    p = inst.profile_on(w, inst.gpu(gid).model)
                    if p is not None:
                        options += [(w.id, h.id, gid, s) for s in states[gid].free_starts(p)]
        if not options:
            return None
        wid, host, gpu, start = data.draw(st.sampled_from(options))
        cap = getattr(inst.host(host), attr)
        return (
            _replace(sol, wid, gpu, start),
            {f"host {host!r}: {attr} {used[host] + need(inst, wid):g} > capacity {cap:g}"},
        )

    return mutate


def excluded_model(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    options = [
        (w, g.id)
        for w in inst.workloads
        if w.gpu_models is not None and not w.pinned
        for g in inst.gpus
        if g.model.name not in w.gpu_models
    ]
    if not options:
        return None
    w, gpu = data.draw(st.sampled_from(options))
    assert w.gpu_models is not None
    mutant = _replace(sol, w.id, gpu, 0)
    i = len(mutant.placements) - 1
    model = inst.gpu(gpu).model.name
    return mutant, {
        f"placements[{i}].gpu: {gpu!r} ({model}) is excluded: workload {w.id!r} allows only {', '.join(w.gpu_models)}"
    }


def placed_and_rejected(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    if not sol.placements:
        return None
    wid = data.draw(st.sampled_from([a.workload for a in sol.placements]))
    n = len(sol.rejected)
    return (
        dataclasses.replace(sol, rejected=(*sol.rejected, wid), objectives=None),
        {f"rejected[{n}]: {wid!r} is both placed and rejected"},
    )


def wrong_metric(inst: Instance, sol: Solution, data: st.DataObject) -> Mutant:
    key = data.draw(st.sampled_from(sorted(sol.metrics)))
    right = sol.metrics[key]
    wrong = right + data.draw(st.sampled_from([-1.0, 0.5, 1.0]))
    return (
        dataclasses.replace(sol, metrics={**sol.metrics, key: wrong}),
        {f"metrics.{key}: solution says {wrong:.10g}, verifier computes {right:.10g}"},
    )


MUTATIONS: dict[str, Callable[[Instance, Solution, st.DataObject], Mutant]] = {
    "illegal_start": illegal_start,
    "overlap": overlap,
    "duplicate": duplicate,
    "drop_running": _drop_running(reject=False),
    "reject_running": _drop_running(reject=True),
    "unknown_gpu": unknown_gpu,
    "wrong_objective": wrong_objective,
    "pinned_moved": pinned_moved,
    "second_media": second_media,
    "host_cpu": _over_capacity("cpu"),
    "host_ram": _over_capacity("ram_gb"),
    "excluded_model": excluded_model,
    "placed_and_rejected": placed_and_rejected,
    "wrong_metric": wrong_metric,
}


@settings(max_examples=60, deadline=None)
@given(inst=instances(), data=st.data())
def test_verify_rejects_every_single_rule_mutation(inst: Instance, data: st.DataObject) -> None:
    """Each applicable kind of mutation, one at a time, on first fit's (valid) solution.

    Every kind applies to about a third of the drawn instances or more, so each is met many
    times per run; the hand-made cases above pin each rule deterministically.
    """
    sol = solve(inst, "ff")
    assert verify(inst, sol).valid
    for kind, mutate in MUTATIONS.items():
        mutant = mutate(inst, sol, data)
        if mutant is None:
            continue
        event(f"mutation {kind}")  # counts shown by --hypothesis-show-statistics
        bad, expected = mutant
        report = verify(inst, bad)
        assert not report.valid, kind
        assert expected & set(report.violations), (kind, expected, report.violations)


# --- first-fit


def reference_first_fit(inst: Instance) -> dict[str, tuple[str, int]]:
    """First fit written out from the definitions: hosts, then GPUs, in order; default start."""
    states = {g.id: GpuState(g.model) for g in inst.gpus}
    cpu: defaultdict[str, float] = defaultdict(float)
    ram: defaultdict[str, float] = defaultdict(float)
    placed: dict[str, tuple[str, int]] = {}

    def take(wid: str, gpu_id: str, start: int) -> None:
        gpu = inst.gpu(gpu_id)
        states[gpu_id].take(gpu.model.profile(inst.workload(wid).profile), start)
        cpu[gpu.host] += inst.workload(wid).cpu
        ram[gpu.host] += inst.workload(wid).ram_gb
        placed[wid] = (gpu_id, start)

    for w in inst.running:
        assert w.placement is not None
        take(w.id, w.placement.gpu, w.placement.start)
    for w in inst.new:
        found = None
        for h in inst.hosts:
            if h.cpu is not None and cpu[h.id] + w.cpu > h.cpu:
                continue
            if h.ram_gb is not None and ram[h.id] + w.ram_gb > h.ram_gb:
                continue
            for gid in h.gpus:
                model: GpuModel = inst.gpu(gid).model
                p = inst.profile_on(w, model)
                if p is not None and states[gid].free_starts(p):
                    found = (gid, geo.default_start(model, states[gid].mask, p))
                    break
            if found:
                break
        if found is not None:
            gid, start = found
            assert start is not None
            take(w.id, gid, start)
    return placed


@settings(max_examples=80, deadline=None)
@given(instances())
def test_first_fit_matches_its_definition_and_verifies(inst: Instance) -> None:
    sol = solve(inst, "ff")
    report = verify(inst, sol)
    assert report.valid, report.violations
    placed = {a.workload: (a.gpu, a.start) for a in sol.placements}
    assert placed == reference_first_fit(inst)
    for w in inst.running:  # never moved, never rejected
        assert w.placement is not None
        assert placed[w.id] == (w.placement.gpu, w.placement.start)
    assert report.objectives.migrations == 0
    assert set(sol.rejected) == {w.id for w in inst.workloads} - set(placed)
    assert (sol.termination, sol.status) == (Termination.COMPLETED, Status.FEASIBLE)
    assert sol.method == "ff (batch)"


def _first_fit_placed(inst: Instance) -> dict[str, tuple[str, int]]:
    sol = solve(inst, "ff")
    assert verify(inst, sol).valid
    return {a.workload: (a.gpu, a.start) for a in sol.placements}


def test_first_fit_driver_default_order() -> None:
    # seven 1g.5gb on an empty A100-40GB land where the driver puts them: 6, 4, 5, 0, 1, 2, 3
    b = InstanceBuilder("order")
    b.add_host("h1", {"g0": "A100-40GB"})
    for k in range(8):
        b.add_workload(f"w{k}", "1g.5gb")
    sol = solve(b.build(), "ff")
    assert [a.start for a in sol.placements] == [6, 4, 5, 0, 1, 2, 3]
    assert sol.rejected == ("w7",)


def test_first_fit_respects_gpu_models() -> None:
    b = InstanceBuilder("models")
    b.add_host("h1", {"a": "A100-40GB"})
    b.add_host("h2", {"h": "H100-80GB"})
    b.add_workload("h100-only", "1g.10gb", gpu_models=["H100-80GB"])
    b.add_workload("any", "1g.10gb")  # two slots on the A100, one on the H100
    b.add_workload("nowhere", "7g.80gb", gpu_models=["H100-80GB"])
    b.add_workload("a100", "7g.40gb")
    assert _first_fit_placed(b.build()) == {"h100-only": ("h", 6), "any": ("a", 6)}


def test_first_fit_one_media_extension_per_gpu() -> None:
    b = InstanceBuilder("media")
    b.add_host("h1", {"g0": "A30-24GB", "g1": "A30-24GB"})
    b.add_workload("me-small", "1g.6gb+me")
    b.add_workload("me-large", "2g.12gb+me")  # fits g0 by slots, not by media engines
    b.add_workload("plain", "1g.6gb")
    placed = _first_fit_placed(b.build())
    assert placed["me-small"][0] == "g0"
    assert placed["me-large"][0] == "g1"
    assert placed["plain"][0] == "g0"


def test_first_fit_per_profile_maximum() -> None:
    data = get_model("A100-40GB").to_dict()
    data["model"] = "Capped-40GB"
    data["profiles"][0]["max_instances"] = 2
    b = InstanceBuilder("capped", custom_models=[model_from_dict(data)])
    b.add_host("h1", {"c0": "Capped-40GB", "c1": "Capped-40GB"})
    for k in range(3):
        b.add_workload(f"w{k}", "1g.5gb")
    assert _first_fit_placed(b.build()) == {"w0": ("c0", 6), "w1": ("c0", 4), "w2": ("c1", 6)}


def test_first_fit_host_capacity() -> None:
    b = InstanceBuilder("capacity")
    b.add_host("h1", {"a": "A100-40GB"}, cpu=8, ram_gb=64)
    b.add_host("h2", {"b": "A100-40GB"})
    b.add_workload("run", "1g.5gb", placement=("a", 0), cpu=2, ram_gb=16)
    b.add_workload("w1", "1g.5gb", cpu=4)  # h1: 6 of 8 cpu
    b.add_workload("w2", "1g.5gb", cpu=4)  # 10 > 8: h2
    b.add_workload("w3", "1g.5gb", cpu=2, ram_gb=48)  # cpu 8 of 8, ram 64 of 64: h1
    b.add_workload("w4", "1g.5gb", ram_gb=1)  # ram full: h2
    placed = _first_fit_placed(b.build())
    assert {w: g for w, (g, _) in placed.items()} == {"run": "a", "w1": "a", "w2": "b", "w3": "a", "w4": "b"}


def test_first_fit_never_moves_running_workloads() -> None:
    # the 7g fits only if the running 1g moves; first fit rejects it instead
    b = InstanceBuilder("stay")
    b.add_host("h1", {"g0": "A100-40GB"})
    b.add_workload("small", "1g.5gb", placement=("g0", 3))
    b.add_workload("full", "7g.40gb")
    sol = solve(b.build(), "ff")
    assert [(a.workload, a.gpu, a.start) for a in sol.placements] == [("small", "g0", 3)]
    assert sol.rejected == ("full",)


def test_first_fit_quickstart() -> None:
    inst = load_instance(QUICKSTART)
    sol = solve(inst, "ff")
    report = verify(inst, sol)
    assert report.valid
    assert {a.workload: (a.gpu, a.start) for a in sol.placements} == {
        "train-a": ("h1-g0", 4),
        "notebook-b": ("h1-g0", 0),
        "llm-c": ("h2-g0", 4),
        "batch-d": ("h1-g1", 0),  # 4g.20gb needs slot 0, taken on h1-g0 by notebook-b
        "infer-e": ("h1-g0", 2),  # 1g.10gb starts 0, 2, 4, 6: only 2 is free on h1-g0
        "infer-g": ("h1-g1", 4),  # 2g.10gb: nothing free on h1-g0; 4 is the one free start on h1-g1
        "llm-h": ("h2-g0", 0),  # 3g.40gb: start 4 is taken by llm-c
    }
    assert sol.rejected == ("llm-f",)  # 7g.80gb: its only H100 holds llm-c
    # acceptance: seven placed, infer-g weighs 2; hardware: h1 (1 + 2) x 1 + h2 (1 + 1) x 1.5
    assert sol.objectives == report.objectives == Objectives(8.0, 6.0, 0.0, 0.0)
    assert sol.metrics == report.metrics


# --- IBM WPM Table 3 metrics by hand


FIG5_ON_FREE_GPUS = {  # every workload to gpu4 and gpu5, nothing wasted
    "w3": ("gpu4", 0),
    "w6": ("gpu4", 4),
    "w1": ("gpu5", 0),
    "w4": ("gpu5", 2),
    "w5": ("gpu5", 3),
    "w7": ("gpu5", 4),
    "w2": ("gpu5", 6),
}
FIG5_ON_USED_GPUS = {  # the same two layouts on gpu1 and gpu2
    "w3": ("gpu1", 0),
    "w6": ("gpu1", 4),
    "w1": ("gpu2", 0),
    "w4": ("gpu2", 2),
    "w5": ("gpu2", 3),
    "w7": ("gpu2", 4),
    "w2": ("gpu2", 6),
}

TABLE3 = (
    "active_gpus",
    "used_compute_slices",
    "used_memory_slots",
    "compute_waste",
    "memory_waste",
    "available_gpu_slices",
    "availability",
    "pending_memory_slots",
    "moved_memory_slots",
    "sequential_migrations",
)


@pytest.mark.parametrize(
    ("moves", "table3", "utilization"),
    [
        # before: 3 GPUs, 13 of 21 compute, 15 of 24 memory, w2 and w6 strand a compute slice each;
        # free slices: gpu1 4-6, gpu2 6, gpu3 5-6, gpu4 and gpu5 all = 3 + 1 + 2 + 14
        ({}, (3, 13, 15, 2, 0, 20, 20, 0, 0, 0), (15 / 24, 13 / 21)),
        # compaction (Fig. 4): "13 slices out of 14" and "15 out of 16", "only 1 compute slice (w_2)
        # and 1 memory slice (w_7) wasted", "moving workloads in size of 5 memory slices"; both
        # targets were free partitions, so nothing is sequential; gpu3 to gpu5 free = 21 slices
        (FIG4_COMPACTED, (2, 13, 15, 1, 1, 21, 21, 0, 5, 0), (15 / 16, 13 / 14)),
        # reconfiguration (Fig. 5) onto the free GPUs: "the wastage [...] is completely avoided"
        # and "an additional availability for another workload with 1 slice" (gpu5 slot 5);
        # all 15 memory slices move, none to an occupied index: 21 + 1 free slices
        (FIG5_ON_FREE_GPUS, (2, 13, 15, 0, 0, 22, 22, 0, 15, 0), (15 / 16, 13 / 14)),
        # the same layout on gpu1 and gpu2 needs sequential steps ("Having free GPUs lifts the need
        # for sequential migration steps"): w3 to gpu1 slots 0-3 (w1, w2 there), w1 to gpu2 slots
        # 0-1 (w3), w7 to gpu2 slot 4 (w4). Not counted: w6 to gpu1 4-7 and w2 to gpu2 6-7, both
        # free at the start, and w4, w5, new starts on their own GPU. Moved: w3 4 + w6 4 + w1 2
        # + w7 1 + w2 2 = 13 slices.
        (FIG5_ON_USED_GPUS, (2, 13, 15, 0, 0, 22, 22, 0, 13, 3), (15 / 16, 13 / 14)),
    ],
    ids=["initial", "fig4-compaction", "fig5-free-gpus", "fig5-used-gpus"],
)
def test_ibm_table3_on_fig4(
    moves: dict[str, tuple[str, int]], table3: tuple[int, ...], utilization: tuple[float, float]
) -> None:
    inst = ibm_fig4()
    where = inst.current_placement() | moves
    report = verify(inst, solution(inst, where))
    assert report.valid, report.violations
    m = report.metrics
    assert tuple(m[k] for k in TABLE3) == table3
    assert (m["memory_utilization"], m["compute_utilization"]) == pytest.approx(utilization)
    assert m["moved_memory_gb"] == 10 * m["moved_memory_slots"]  # 10 GB slices on the A100-80GB


def two_gpus_moving() -> Instance:
    """g1 holds a (3g.40gb at 4); g2 holds b (1g.10gb at 0) and c (2g.20gb at 4); g3 (h2) is free."""
    b = InstanceBuilder("moving")
    b.add_host("h1", {"g1": "A100-80GB", "g2": "A100-80GB"})
    b.add_host("h2", {"g3": "A100-80GB"})
    b.add_workload("a", "3g.40gb", placement=("g1", 4))
    b.add_workload("b", "1g.10gb", placement=("g2", 0))
    b.add_workload("c", "2g.20gb", placement=("g2", 4))
    return b.build()


@pytest.mark.parametrize(
    ("moves", "moved_slots", "sequential"),
    [
        ({}, 0, 0),
        # c to g1 slots 0-1, free from the start: one step
        ({"c": ("g1", 0)}, 2, 0),
        # a to g2 slots 4-7 where c sits at the start: a must wait for c to leave
        ({"a": ("g2", 4), "c": ("g1", 0)}, 6, 1),
        # a swap: each target is held by the other at the start
        ({"a": ("g2", 4), "c": ("g1", 4)}, 6, 2),
        # a 3g onto g2 slots 0-3 covers b's slot 0 only; b goes to the free g3
        ({"a": ("g2", 0), "b": ("g3", 0)}, 5, 1),
        # b moves on its own GPU into c's old slots: a new start, not a move to another GPU
        ({"b": ("g2", 4), "c": ("g1", 0)}, 2, 0),
        # everything onto the free GPU of the other host: one step
        ({"a": ("g3", 4), "b": ("g3", 0), "c": ("g3", 2)}, 7, 0),
    ],
    ids=["stay", "to-free-slots", "onto-a-leaver", "swap", "partial-overlap", "same-gpu", "free-gpu"],
)
def test_sequential_migrations_by_hand(
    moves: dict[str, tuple[str, int]], moved_slots: int, sequential: int
) -> None:
    inst = two_gpus_moving()
    report = verify(inst, solution(inst, inst.current_placement() | moves))
    assert report.valid, report.violations
    assert report.metrics["moved_memory_slots"] == moved_slots
    assert report.metrics["sequential_migrations"] == sequential


def test_pending_sizes_follow_table1() -> None:
    # IBM Table 1, "# of GPU Slices": 7g.80gb 7, 4g.40gb 4, 3g.40gb 4, 2g.20gb 2, 1g.20gb 2,
    # 1g.10gb 1, 1g.10gb+me 1; memory slices 8, 4, 4, 2, 2, 1, 1
    b = InstanceBuilder("table1")
    b.add_host("h1", {"g0": "A100-80GB"})
    for name in ("7g.80gb", "4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb", "1g.10gb+me"):
        b.add_workload(name, name)
    inst = b.build()
    _, m = evaluate(inst, {})
    assert (m["available_gpu_slices"], m["pending_memory_slots"], m["availability"]) == (7, 22, 7 - 21)
    # placing the 7g takes all seven slices and removes 7 from the pending size
    _, m = evaluate(inst, {"7g.80gb": ("g0", 0)})
    assert (m["available_gpu_slices"], m["pending_memory_slots"], m["availability"]) == (0, 14, 0 - 14)
    # a 3g at 4 spans slices 4-6 (three), at 0 slices 0-3 (four): the free count follows
    _, at4 = evaluate(inst, {"3g.40gb": ("g0", 4)})
    _, at0 = evaluate(inst, {"3g.40gb": ("g0", 0)})
    assert (at4["available_gpu_slices"], at0["available_gpu_slices"]) == (4, 3)


def test_pending_workload_sized_on_the_first_model_that_runs_it() -> None:
    # '1g.10gb' is two slots on the A100-40GB (listed first) and one on the A100-80GB; a workload
    # restricted to a model the cluster lacks is sized on that model
    b = InstanceBuilder("sizes")
    b.add_host("h1", {"a": "A100-40GB", "b": "A100-80GB"})
    b.add_workload("any", "1g.10gb")
    b.add_workload("on-80", "1g.10gb", gpu_models=["A100-80GB"])
    b.add_workload("elsewhere", "7g.80gb", gpu_models=["H100-80GB"])
    inst = b.build()
    _, m = evaluate(inst, {})
    assert m["pending_memory_slots"] == 2 + 1 + 8
    assert m["availability"] == 14 - (2 + 1 + 7)
