"""The graph migration planner on hand-made cases whose plans can be checked by hand.

Every plan goes through its JSON form and back (plan_from_dict) and through the
independent replay (mipopt.verifier.verify_plan), whose counts must equal the plan's.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from mipopt.catalog import builtin_models, get_model, model_from_dict
from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder
from mipopt.migrate import Plan, plan_from_dict, plan_migration
from mipopt.registry import solve
from mipopt.verifier import verify_plan

Spot = tuple[str, int]
A100 = "A100-40GB"


def planned(instance: Instance, target: Any, **options: Any) -> Plan:
    """Plan with the graph planner, round-trip the JSON, replay; the plan."""
    plan = plan_migration(instance, target, method="graph", **options)
    data = json.loads(json.dumps(plan.to_dict()))
    assert plan_from_dict(data) == plan
    placed = target if isinstance(target, dict) else target.placed()
    report = verify_plan(instance, data, placed)
    assert report.valid, report.violations
    assert {k: plan.metrics[k] for k in report.metrics} == report.metrics
    assert report.final == plan.final == placed
    return plan


def counts(plan: Plan) -> tuple[int, int, int, int]:
    """(rounds, moves, parks, drains); moves count every relocation (parks and restores too)."""
    m = plan.metrics
    return int(m["rounds"]), int(m["moves"]), int(m["extra_moves"]), int(m["disruptive_moves"])


def steps(plan: Plan) -> list[list[str]]:
    """Each round as short lines: 'drain a', 'a g0:0>g1:0', 'park a g0:0>g2:0', 'create n g0:0', 'restore a g0:4'."""
    out = []
    for r in plan.rounds:
        lines = [f"drain {d.workload}" for d in r.drains]
        for m in r.moves:
            move = f"{m.workload} {m.source[0]}:{m.source[1]}>{m.target[0]}:{m.target[1]}"
            lines.append(f"park {move}" if m.park else move)
        for c in r.creates:
            lines.append(f"{'restore' if c.source else 'create'} {c.workload} {c.target[0]}:{c.target[1]}")
        out.append(lines)
    return out


def cluster(name: str, hosts: dict[str, dict[str, str]], **caps: dict[str, float]) -> InstanceBuilder:
    """A builder with hosts of GPUs; ``cpu={'h0': 8}`` caps a host's cpu."""
    b = InstanceBuilder(name)
    for h, gpus in hosts.items():
        b.add_host(h, dict(gpus), cpu=caps.get("cpu", {}).get(h), ram_gb=caps.get("ram_gb", {}).get(h))
    return b


# --- moves, chains, cycles


def test_simple_move() -> None:
    b = cluster("simple", {"h0": {"g0": A100, "g1": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    plan = planned(b.build(), {"a": ("g1", 0)})
    assert steps(plan) == [["a g0:0>g1:0"]]
    assert counts(plan) == (1, 1, 0, 0)
    assert plan.metrics["moves_inter_gpu"] == 1 and plan.metrics["moved_memory_slots"] == 4


def test_nothing_to_do() -> None:
    b = cluster("still", {"h0": {"g0": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    plan = planned(b.build(), {"a": ("g0", 0)})
    assert plan.rounds == () and counts(plan) == (0, 0, 0, 0)


def test_chain() -> None:
    """a waits for b, b waits for c (each target is the next one's source): three rounds, c first."""
    b = cluster("chain", {"h0": {"g0": A100, "g1": A100, "g2": A100, "g3": A100}})
    b.add_workload("a", "7g.40gb", placement=("g0", 0))
    b.add_workload("b", "7g.40gb", placement=("g1", 0))
    b.add_workload("c", "7g.40gb", placement=("g2", 0))
    plan = planned(b.build(), {"a": ("g1", 0), "b": ("g2", 0), "c": ("g3", 0)})
    assert steps(plan) == [["c g2:0>g3:0"], ["b g1:0>g2:0"], ["a g0:0>g1:0"]]
    assert counts(plan) == (3, 3, 0, 0)


def swap(free_gpu: bool) -> tuple[Instance, dict[str, Spot]]:
    """Two 3g instances trading starts on one A100 (with or without an empty second A100)."""
    b = cluster("swap", {"h0": {"g0": A100, "g1": A100} if free_gpu else {"g0": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("b", "3g.20gb", placement=("g0", 4))
    return b.build(), {"a": ("g0", 4), "b": ("g0", 0)}


def test_swap_parks_on_a_free_gpu() -> None:
    """Create-before-destroy cannot swap in place: a parks on g1, b moves, a comes back."""
    plan = planned(*swap(free_gpu=True))
    assert steps(plan) == [["park a g0:0>g1:0"], ["b g0:4>g0:0"], ["a g1:0>g0:4"]]
    assert counts(plan) == (3, 3, 1, 0) and plan.disrupted == ()


def test_swap_without_free_space_drains_one() -> None:
    """No free space: exactly one workload is drained, and named; b takes its slots, it is restored."""
    plan = planned(*swap(free_gpu=False))
    assert plan.disrupted == ("a",)  # equal sizes: the first in file order
    assert steps(plan) == [["drain a", "b g0:4>g0:0"], ["restore a g0:4"]]
    assert counts(plan) == (2, 2, 0, 1)


def ring(gpus: int) -> tuple[Instance, dict[str, Spot]]:
    """Three 7g instances each moving to the next GPU, on ``gpus`` A100s (a fourth is free)."""
    b = cluster("ring", {"h0": {f"g{i}": A100 for i in range(gpus)}})
    for i in range(3):
        b.add_workload(f"w{i}", "7g.40gb", placement=(f"g{i}", 0))
    return b.build(), {f"w{i}": (f"g{(i + 1) % 3}", 0) for i in range(3)}


def test_ring_of_three_with_a_free_gpu() -> None:
    """w0 parks on g3; then w2, w1 and w0 move one round each: 4 rounds, 1 park, no drain."""
    plan = planned(*ring(4))
    assert steps(plan) == [["park w0 g0:0>g3:0"], ["w2 g2:0>g0:0"], ["w1 g1:0>g2:0"], ["w0 g3:0>g1:0"]]
    assert counts(plan) == (4, 4, 1, 0)


def test_ring_of_three_without_free_space() -> None:
    """w0 is drained; w2 and w1 move; w0 is restored on g1 once w1 has left it."""
    plan = planned(*ring(3))
    assert plan.disrupted == ("w0",)
    assert steps(plan) == [["drain w0", "w2 g2:0>g0:0"], ["w1 g1:0>g2:0"], ["restore w0 g1:0"]]
    assert counts(plan) == (3, 3, 0, 1)


def test_two_cycles_share_one_free_gpu() -> None:
    """Two 7g swaps and one empty GPU: the cycles take turns parking on it instead of draining."""
    b = cluster("two-swaps", {"h0": {f"g{i}": A100 for i in range(5)}})
    for i in range(4):
        b.add_workload(f"w{i}", "7g.40gb", placement=(f"g{i}", 0))
    plan = planned(b.build(), {"w0": ("g1", 0), "w1": ("g0", 0), "w2": ("g3", 0), "w3": ("g2", 0)})
    assert plan.disrupted == ()
    assert steps(plan) == [
        ["park w0 g0:0>g4:0"],
        ["w1 g1:0>g0:0"],
        ["w0 g4:0>g1:0"],
        ["park w2 g2:0>g4:0"],
        ["w3 g3:0>g2:0"],
        ["w2 g4:0>g3:0"],
    ]
    assert counts(plan) == (6, 6, 2, 0)


# --- moves onto their own slots, +me, limits


def overlapping_model() -> Any:
    """A custom 4-slot model whose 2g profile may start at 0, 1 or 2 (starts overlap)."""
    return model_from_dict(
        {
            "model": "Shifty-20GB",
            "slots": 4,
            "compute_slices": 4,
            "memory_gb": 20,
            "profiles": [
                {
                    "name": "2g.10gb",
                    "id": 1,
                    "compute": 2,
                    "memory_slots": 2,
                    "memory_gb": 10,
                    "max_instances": 2,
                    "placements": [[0, 2], [1, 2], [2, 2]],
                }
            ],
        }
    )


def test_no_builtin_profile_overlaps_its_own_starts() -> None:
    """So an intra-GPU move onto its own slots needs a custom model (below)."""
    for model in builtin_models().values():
        for p in model.profiles:
            masks = [p.slot_mask(s) for s in p.starts]
            assert all(x & y == 0 for i, x in enumerate(masks) for y in masks[i + 1 :]), (model.name, p.name)


@pytest.mark.parametrize(("spare", "expected"), [(True, (2, 2, 1, 0)), (False, (1, 1, 0, 1))])
def test_move_onto_its_own_slots(spare: bool, expected: tuple[int, int, int, int]) -> None:
    """0 -> 1 overlaps itself: park elsewhere and come back, or (one GPU) drain and restore at once."""
    gpus = {"s0": "Shifty-20GB", "s1": "Shifty-20GB"} if spare else {"s0": "Shifty-20GB"}
    b = InstanceBuilder("own-slots", custom_models=[overlapping_model()])
    b.add_host("h0", gpus)  # type: ignore[arg-type]
    b.add_workload("s", "2g.10gb", placement=("s0", 0))
    plan = planned(b.build(), {"s": ("s0", 1)})
    assert counts(plan) == expected
    if spare:
        assert steps(plan) == [["park s s0:0>s1:0"], ["s s1:0>s0:1"]]
    else:
        assert steps(plan) == [["drain s", "restore s s0:1"]]


@pytest.mark.parametrize(("spare", "expected"), [(True, (2, 2, 1, 0)), (False, (1, 1, 0, 1))])
def test_media_move_on_one_gpu(spare: bool, expected: tuple[int, int, int, int]) -> None:
    """A +me instance moving on its GPU cannot be held twice there (one +me per GPU): it parks or drains."""
    b = cluster("media", {"h0": {"g0": A100, "g1": A100} if spare else {"g0": A100}})
    b.add_workload("m", "1g.5gb+me", placement=("g0", 0))
    plan = planned(b.build(), {"m": ("g0", 1)})
    assert counts(plan) == expected
    if spare:
        assert steps(plan) == [["park m g0:0>g1:0"], ["m g1:0>g0:1"]]


def test_per_profile_limit_during_a_move() -> None:
    """Capped 1g.5gb (at most 2 per GPU): w1 moving beside w0 would make three; alone, it is drained."""
    data = get_model(A100).to_dict()
    data["model"] = "Capped-40GB"
    data["profiles"][0]["max_instances"] = 2
    b = InstanceBuilder("capped", custom_models=[model_from_dict(data)])
    b.add_host("h0", {"c0": "Capped-40GB"})
    b.add_workload("w0", "1g.5gb", placement=("c0", 0))
    b.add_workload("w1", "1g.5gb", placement=("c0", 1))
    plan = planned(b.build(), {"w0": ("c0", 0), "w1": ("c0", 2)})
    assert steps(plan) == [["drain w1", "restore w1 c0:2"]] and counts(plan) == (1, 1, 0, 1)


def test_host_cpu_binds_during_a_move() -> None:
    """h1 (cpu 10) holds c (6): a (6) can be created on h1 only after c has left for h2."""
    b = cluster("cpu", {"h0": {"g0": A100}, "h1": {"g1": A100}, "h2": {"g2": A100}}, cpu={"h1": 10})
    b.add_workload("a", "3g.20gb", placement=("g0", 0), cpu=6)
    b.add_workload("c", "1g.5gb", placement=("g1", 0), cpu=6)
    plan = planned(b.build(), {"a": ("g1", 4), "c": ("g2", 0)})
    assert steps(plan) == [["c g1:0>g2:0"], ["a g0:0>g1:4"]]
    assert counts(plan) == (2, 2, 0, 0) and plan.metrics["moves_inter_host"] == 2


def test_host_cpu_cycle() -> None:
    """a and b trade hosts, each host full of cpu: no slot waits, yet no move fits; one is drained."""
    b = cluster("cpu-swap", {"h0": {"g0": A100}, "h1": {"g1": A100}}, cpu={"h0": 10, "h1": 10})
    b.add_workload("a", "3g.20gb", placement=("g0", 0), cpu=6)
    b.add_workload("b", "3g.20gb", placement=("g1", 0), cpu=6)
    plan = planned(b.build(), {"a": ("g1", 4), "b": ("g0", 4)})
    assert counts(plan) == (2, 2, 0, 1) and len(plan.disrupted) == 1


def test_host_cpu_cycle_with_a_free_host() -> None:
    """The same trade with a third, empty host: one parks there, nobody is drained."""
    hosts = {"h0": {"g0": A100}, "h1": {"g1": A100}, "h2": {"g2": A100}}
    b = cluster("cpu-swap-3", hosts, cpu={"h0": 10, "h1": 10})
    b.add_workload("a", "3g.20gb", placement=("g0", 0), cpu=6)
    b.add_workload("b", "3g.20gb", placement=("g1", 0), cpu=6)
    plan = planned(b.build(), {"a": ("g1", 4), "b": ("g0", 4)})
    assert plan.disrupted == () and counts(plan) == (3, 3, 1, 0)


# --- choices that avoid a drain


def test_the_cycle_is_broken_where_a_park_exists() -> None:
    """a (A100-40GB only) and b trade starts on a full A100; b may run on the A100-80GB: b parks."""
    b = cluster("fvs", {"h0": {"g0": A100, "g1": "A100-80GB"}})
    b.add_workload("p0", "1g.10gb", placement=("g0", 0), pinned=True)
    b.add_workload("a", "1g.10gb", placement=("g0", 2), gpu_models=[A100])
    b.add_workload("c", "1g.10gb", placement=("g0", 4))
    b.add_workload("p1", "1g.10gb", placement=("g0", 6), pinned=True)
    plan = planned(b.build(), {"p0": ("g0", 0), "a": ("g0", 4), "c": ("g0", 2), "p1": ("g0", 6)})
    assert plan.disrupted == ()
    assert steps(plan)[0] == ["park c g0:4>g1:0"] and counts(plan) == (3, 3, 1, 0)


def test_creates_wait_when_they_would_take_a_parks_room() -> None:
    """n (cpu 10) would fill h1; m (+me, moving on g0) must park on h1 first, so n is created last."""
    b = cluster("late-create", {"h0": {"g0": A100}, "h1": {"g1": A100}}, cpu={"h1": 10})
    b.add_workload("m", "1g.5gb+me", placement=("g0", 0), cpu=2)
    b.add_workload("n", "3g.20gb", cpu=10)
    plan = planned(b.build(), {"m": ("g0", 1), "n": ("g1", 0)})
    assert plan.disrupted == ()
    assert steps(plan) == [["park m g0:0>g1:0"], ["m g1:0>g0:1"], ["create n g1:0"]]


def test_a_move_frees_the_space_a_park_needs() -> None:
    """No free space at first; once c has moved to g2, a parks where c was instead of being drained."""
    b = cluster("patient", {"h0": {"g0": A100, "g1": A100, "g2": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("b", "3g.20gb", placement=("g0", 4))
    b.add_workload("p", "3g.20gb", placement=("g1", 0), pinned=True)
    b.add_workload("c", "3g.20gb", placement=("g1", 4))
    b.add_workload("q", "3g.20gb", placement=("g2", 4), pinned=True)
    target = {"a": ("g0", 4), "b": ("g0", 0), "p": ("g1", 0), "c": ("g2", 0), "q": ("g2", 4)}
    plan = planned(b.build(), target)
    assert plan.disrupted == ()
    assert steps(plan) == [["c g1:4>g2:0"], ["park a g0:0>g1:4"], ["b g0:4>g0:0"], ["a g1:4>g0:4"]]


# --- new, rejected and pinned workloads


def test_new_workloads_are_created_once_their_target_frees() -> None:
    """n's target is a's slots: created in the round after a has left; f's target is free: round 1."""
    b = cluster("new", {"h0": {"g0": A100, "g1": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("n", "3g.20gb")
    b.add_workload("f", "3g.20gb")
    plan = planned(b.build(), {"a": ("g1", 0), "n": ("g0", 0), "f": ("g0", 4)})
    assert steps(plan) == [["a g0:0>g1:0", "create f g0:4"], ["create n g0:0"]]
    assert counts(plan) == (2, 1, 0, 0) and plan.metrics["creates"] == 2


def test_rejected_and_pinned_workloads_are_left_alone() -> None:
    b = cluster("left-alone", {"h0": {"g0": A100, "g1": A100}})
    b.add_workload("p", "1g.5gb", placement=("g1", 6), pinned=True)
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("r", "7g.40gb")  # no room for it in the target: rejected
    plan = planned(b.build(), {"p": ("g1", 6), "a": ("g1", 0)})
    touched = {x.workload for r in plan.rounds for x in (*r.drains, *r.moves, *r.creates)}
    assert touched == {"a"} and "r" not in plan.final and plan.final["p"] == ("g1", 6)


def test_destroy_first_is_one_disruptive_round() -> None:
    """Destroy-then-create: every source goes first, so the swap is one round, both drained."""
    plan = planned(*swap(free_gpu=False), semantics="destroy-first")
    assert steps(plan) == [["drain a", "drain b", "restore a g0:4", "restore b g0:0"]]
    assert counts(plan) == (1, 2, 0, 2) and plan.disrupted == ("a", "b")


def test_a_solution_is_a_target() -> None:
    """A method's solution (first fit here) places the new workloads; the plan creates them."""
    b = cluster("ff", {"h0": {"g0": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("n", "3g.20gb")
    instance = b.build()
    plan = planned(instance, solve(instance, "ff"))
    assert steps(plan) == [["create n g0:4"]]


# --- targets refused


@pytest.mark.parametrize(
    ("target", "rule"),
    [
        ({"a": ("g0", 2), "p": ("g0", 4)}, "placements[0].start: 2 is not a legal start of 3g.20gb"),
        ({"a": ("g0", 0), "p": ("g0", 4), "n": ("g0", 5), "m": ("g0", 5)}, "GPU 'g0': 'm' overlaps 'n'"),
        ({"p": ("g0", 4)}, "workload 'a': running workloads must stay placed"),
        ({"a": ("g0", 0), "p": ("g0", 5)}, "workload 'p': pinned at g0:4, placed at g0:5"),
    ],
    ids=["illegal-start", "overlap", "running-dropped", "pinned-moved"],
)
def test_a_target_that_breaks_a_rule_is_refused(target: dict[str, Spot], rule: str) -> None:
    b = cluster("refused", {"h0": {"g0": A100}})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("p", "1g.5gb", placement=("g0", 4), pinned=True)
    b.add_workload("n", "1g.5gb")
    b.add_workload("m", "1g.5gb")
    with pytest.raises(InstanceError, match=r"^target: not a valid placement for 'refused': ") as err:
        plan_migration(b.build(), target)
    assert err.value.path == "target" and rule in err.value.rule
