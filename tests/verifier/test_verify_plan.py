"""The plan replay (mipopt.verifier.verify_plan): a hand-written plan, and each rule broken once."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from factories import capped_a100

from mipopt.instance import Instance, InstanceBuilder, Status, Termination
from mipopt.verifier import solution_for, verify, verify_plan
from mipopt.verifier.rules import check_state

Plan = dict[str, Any]
DONE, FEASIBLE = Termination.COMPLETED, Status.FEASIBLE


def spot(gpu: str, start: int) -> dict[str, Any]:
    return {"gpu": gpu, "start": start}


def move(w: str, src: tuple[str, int], dst: tuple[str, int], kind: str, park: bool = False) -> dict[str, Any]:
    return {"workload": w, "from": spot(*src), "to": spot(*dst), "kind": kind, "park": park}


def drain(w: str, src: tuple[str, int]) -> dict[str, Any]:
    return {"workload": w, "from": spot(*src)}


def create(
    w: str, dst: tuple[str, int], src: tuple[str, int] | None = None, kind: str | None = None
) -> dict[str, Any]:
    out: dict[str, Any] = {"workload": w, "to": spot(*dst)}
    if src is not None:
        out |= {"from": spot(*src), "kind": kind}
    return out


def plan(
    name: str,
    rounds: list[tuple[list[Any], list[Any], list[Any]]],
    final: dict[str, tuple[str, int]],
    disrupted: tuple[str, ...] = (),
    semantics: str = "create-first",
) -> Plan:
    return {
        "format": "mipopt-plan",
        "version": 1,
        "instance": name,
        "semantics": semantics,
        "method": "by hand",
        "rounds": [
            {"round": i + 1, "drains": d, "moves": m, "creates": c} for i, (d, m, c) in enumerate(rounds)
        ],
        "final": [{"workload": w, "gpu": g, "start": s} for w, (g, s) in final.items()],
        "disrupted": list(disrupted),
        "metrics": {},
        "runtime_s": 0.0,
        "message": "",
    }


def swap() -> Instance:
    """h0 (cpu 14): g0, g1; h1: g2 (A100-40GB); h2: g3 (A30). a, b: 3g swapping on g0; p pinned, m +me on g1; new e (+me), n."""
    b = InstanceBuilder("swap-plan")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"}, cpu=14)
    b.add_host("h1", {"g2": "A100-40GB"})
    b.add_host("h2", {"g3": "A30-24GB"})
    b.add_workload("a", "3g.20gb", placement=("g0", 0), cpu=4, gpu_models=["A100-40GB"])
    b.add_workload("b", "3g.20gb", placement=("g0", 4), cpu=4)
    b.add_workload("p", "1g.5gb", placement=("g1", 6), pinned=True)
    b.add_workload("m", "1g.5gb+me", placement=("g1", 0))
    b.add_workload("e", "1g.5gb+me")
    b.add_workload("n", "2g.10gb", cpu=6)
    b.add_workload("r", "7g.40gb")  # rejected: never created
    return b.build()


TARGET = {"a": ("g0", 4), "b": ("g0", 0), "p": ("g1", 6), "m": ("g1", 0), "e": ("g2", 6), "n": ("g1", 2)}


def good() -> Plan:
    """a parks on g2 while e is created; b moves on g0 and n is created; a comes back."""
    return plan(
        "swap-plan",
        [
            ([], [move("a", ("g0", 0), ("g2", 0), "inter_host", park=True)], [create("e", ("g2", 6))]),
            ([], [move("b", ("g0", 4), ("g0", 0), "intra_gpu")], [create("n", ("g1", 2))]),
            ([], [move("a", ("g2", 0), ("g0", 4), "inter_host")], []),
        ],
        TARGET,
    )


def test_good_plan_and_its_counts() -> None:
    inst = swap()
    report = verify_plan(inst, good(), TARGET)
    assert report.valid, report.violations
    assert (report.rounds, report.moves, report.parks, report.drains, report.creates) == (3, 3, 1, 0, 2)
    assert report.moves_by_kind == {"intra_gpu": 1, "inter_gpu": 0, "inter_host": 2}
    assert (report.moved_memory_slots, report.moved_memory_gb) == (12, 60.0)
    assert report.final == TARGET and report.disrupted == ()
    assert report.metrics["extra_moves"] == 1 and report.metrics["moves_inter_host"] == 2


def test_drain_and_restore() -> None:
    """No free space: a is drained, b takes its slots, a is restored where b was."""
    inst = swap()
    final = {w: where for w, where in TARGET.items() if w in ("a", "b", "p", "m")}
    p = plan(
        "swap-plan",
        [
            ([drain("a", ("g0", 0))], [move("b", ("g0", 4), ("g0", 0), "intra_gpu")], []),
            ([], [], [create("a", ("g0", 4), ("g0", 0), "intra_gpu")]),
        ],
        final,
        disrupted=("a",),
    )
    report = verify_plan(inst, p, final)
    assert report.valid, report.violations
    assert (report.rounds, report.moves, report.drains, report.restores) == (2, 2, 1, 1)
    assert report.disrupted == ("a",) and report.metrics["disruptive_moves"] == 1
    # restored in the round of its drain: the slots b leaves are still held in phase 2
    early = plan(
        "swap-plan",
        [
            (
                [drain("a", ("g0", 0))],
                [move("b", ("g0", 4), ("g0", 0), "intra_gpu")],
                [create("a", ("g0", 4), ("g0", 0), "intra_gpu")],
            )
        ],
        final,
        disrupted=("a",),
    )
    assert verify_plan(inst, early).violations == (
        "rounds[0].creates[0]: 'a' overlaps 'b' on GPU 'g0' during the create phase",
        "rounds[0].creates[0]: GPU 'g0': 3 instances of 3g.20gb, at most 2 during the create phase",
        "rounds[0].creates[0]: GPU 'g0': uses 9 compute slices, has 7 during the create phase",
    )


def test_a_plan_object_is_read_through_to_dict() -> None:
    class Wrapped:
        def to_dict(self) -> Plan:
            return good()

    assert verify_plan(swap(), Wrapped(), TARGET).valid


def test_host_cpu_binds_during_a_move() -> None:
    """h1 (cpu 10) holds c (6): a (6) may come only once c has left."""
    b = InstanceBuilder("cpu")
    b.add_host("h0", {"g0": "A100-40GB"})
    b.add_host("h1", {"g1": "A100-40GB"}, cpu=10)
    b.add_host("h2", {"g2": "A100-40GB"})
    b.add_workload("a", "3g.20gb", placement=("g0", 0), cpu=6)
    b.add_workload("c", "1g.5gb", placement=("g1", 0), cpu=6)
    inst = b.build()
    final = {"a": ("g1", 4), "c": ("g2", 0)}
    ma = move("a", ("g0", 0), ("g1", 4), "inter_host")
    mc = move("c", ("g1", 0), ("g2", 0), "inter_host")
    assert verify_plan(inst, plan("cpu", [([], [mc], []), ([], [ma], [])], final), final).valid
    together = verify_plan(inst, plan("cpu", [([], [mc, ma], [])], final), final)
    assert together.violations == (
        "rounds[0].moves[1]: host 'h1': cpu 12 > capacity 10 during the create phase",
    )


def test_per_profile_maximum_binds_during_a_move() -> None:
    """Capped 1g.5gb (at most 2): w1 moving beside w0 would make three for a moment."""
    b = InstanceBuilder("capped", custom_models=list(capped_a100(0).custom_models))
    b.add_host("h1", {"c0": "Capped-40GB"})
    b.add_workload("w0", "1g.5gb", placement=("c0", 0))
    b.add_workload("w1", "1g.5gb", placement=("c0", 1))
    inst = b.build()
    final = {"w0": ("c0", 0), "w1": ("c0", 2)}
    direct = plan("capped", [([], [move("w1", ("c0", 1), ("c0", 2), "intra_gpu")], [])], final)
    assert verify_plan(inst, direct, final).violations == (
        "rounds[0].moves[0]: GPU 'c0': 3 instances of 1g.5gb, at most 2 during the create phase",
    )
    drained = plan(
        "capped",
        [([drain("w1", ("c0", 1))], [], [create("w1", ("c0", 2), ("c0", 1), "intra_gpu")])],
        final,
        ("w1",),
    )
    assert verify_plan(inst, drained, final).valid


def test_shared_rules_allow_one_workload_twice() -> None:
    """The state check takes several instances of one workload; overlapping ones clash."""
    inst = swap()
    apart = [("x", "a", "g0", 0), ("y", "a", "g2", 0), ("z", "b", "g0", 4)]
    assert check_state(inst, apart).valid
    onto = [("x", "a", "g0", 0), ("y", "a", "g0", 0)]
    assert next((b.rule, b.holder, b.message()) for b in check_state(inst, onto).breaches) == (
        "overlap",
        "y",
        "GPU 'g0': 'a' overlaps 'a'",
    )


def test_verify_messages_come_from_the_shared_rules() -> None:
    """verify() reports the shared rules' breaches in its own form, placement paths included."""
    inst = swap()
    placed = {**TARGET, "e": ("g1", 1)}
    report = verify(inst, solution_for(inst, placed, method="by hand", termination=DONE, status=FEASIBLE))
    assert report.violations == (
        "GPU 'g1': 2 instances of 1g.5gb+me, at most 1",
        "GPU 'g1': 2 +me instances (m, e), at most one per GPU",
    )


def edit(*path: Any, value: Any) -> Callable[[Plan], None]:
    def apply(p: Plan) -> None:
        node = p
        for key in path[:-1]:
            node = node[key]
        node[path[-1]] = value

    return apply


def rounds(*rs: tuple[list[Any], list[Any], list[Any]]) -> Callable[[Plan], None]:
    def apply(p: Plan) -> None:
        p["rounds"] = plan("", list(rs), {})["rounds"]

    return apply


def also(*changes: Callable[[Plan], None]) -> Callable[[Plan], None]:
    def apply(p: Plan) -> None:
        for change in changes:
            change(p)

    return apply


def append(key: str, r: int, item: dict[str, Any]) -> Callable[[Plan], None]:
    return lambda p: p["rounds"][r][key].append(item)


AFTER = "after the last round"

# each: a change to good(), the replay's violations (target TARGET)
BROKEN: list[tuple[str, Callable[[Plan], None], list[str]]] = [
    (
        "swap-in-one-round",
        rounds(
            (
                [],
                [move("a", ("g0", 0), ("g0", 4), "intra_gpu"), move("b", ("g0", 4), ("g0", 0), "intra_gpu")],
                [],
            ),
            ([], [], [create("e", ("g2", 6)), create("n", ("g1", 2))]),
        ),
        [
            "rounds[0].moves[0]: 'a' overlaps 'b' on GPU 'g0' during the create phase",
            "rounds[0].moves[1]: 'b' overlaps 'a' on GPU 'g0' during the create phase",
            "rounds[0].moves[1]: GPU 'g0': 4 instances of 3g.20gb, at most 2 during the create phase",
            "rounds[0].moves[1]: GPU 'g0': uses 12 compute slices, has 7 during the create phase",
            "rounds[0].moves[1]: host 'h0': cpu 16 > capacity 14 during the create phase",
        ],
    ),
    (
        "two-media-on-a-gpu",
        also(
            edit("rounds", 0, "creates", 0, "to", value=spot("g1", 1)),
            edit("final", 4, "gpu", value="g1"),
            edit("final", 4, "start", value=1),
        ),
        [
            "rounds[0].creates[0]: GPU 'g1': 2 instances of 1g.5gb+me, at most 1 during the create phase",
            "rounds[0].creates[0]: GPU 'g1': 2 +me instances (m, e), at most one per GPU during the create phase",
            f"target: 'e' at g2:6, but it is at g1:1 {AFTER}",
        ],
    ),
    (
        "wrong-kind",
        edit("rounds", 0, "moves", 0, "kind", value="inter_gpu"),
        ["rounds[0].moves[0].kind: 'inter_gpu', but g0:0 -> g2:0 is inter_host"],
    ),
    (
        "pinned-moved",
        append("moves", 1, move("p", ("g1", 6), ("g1", 5), "intra_gpu")),
        [
            "rounds[1].moves[1]: 'p' is pinned and may not be moved",
            f"final: 'p' at g1:6, but it is at g1:5 {AFTER}",
            f"target: 'p' at g1:6, but it is at g1:5 {AFTER}",
        ],
    ),
    (
        "pinned-drained",
        also(
            append("drains", 1, drain("p", ("g1", 6))),
            append("creates", 1, create("p", ("g1", 6), ("g1", 6), "intra_gpu")),
            edit("disrupted", value=["p"]),
        ),
        ["rounds[1].drains[0]: 'p' is pinned and may not be drained"],
    ),
    (
        "moved-from-elsewhere",
        edit("rounds", 2, "moves", 0, "from", value=spot("g0", 0)),
        [
            "rounds[2].moves[0].from: 'a' is not at g0:0 (it is at g2:0)",
            f"final: 'a' at g0:4, but it is at g2:0 {AFTER}",
            f"target: 'a' at g0:4, but it is at g2:0 {AFTER}",
        ],
    ),
    (
        "final-differs",
        edit("final", 0, "start", value=0),
        [f"final: 'a' at g0:0, but it is at g0:4 {AFTER}"],
    ),
    (
        "final-misses-one",
        lambda p: p["final"].pop(5),
        [f"final: 'n' runs at g1:2 {AFTER}, not listed"],
    ),
    (
        "final-lists-twice",
        lambda p: p["final"].append({"workload": "a", "gpu": "g0", "start": 4}),
        ["final[6].workload: 'a' is listed twice"],
    ),
    (
        "drained-never-restored",
        append("drains", 0, drain("m", ("g1", 0))),
        [
            "workload 'm': drained by rounds[0].drains[0] and never restored",
            f"final: 'm' at g1:0, but it does not run {AFTER}",
            f"target: 'm' at g1:0, but it does not run {AFTER}",
            "disrupted: 'm' is drained but not listed",
        ],
    ),
    (
        "drained-twice",
        also(
            append("drains", 0, drain("m", ("g1", 0))),
            append("drains", 0, drain("m", ("g1", 0))),
            append("creates", 0, create("m", ("g1", 0), ("g1", 0), "intra_gpu")),
            edit("disrupted", value=["m"]),
        ),
        ["rounds[0].drains[1].from: 'm' is not at g1:0 (it is down since rounds[0].drains[0])"],
    ),
    ("disrupted-not-drained", edit("disrupted", value=["b"]), ["disrupted[0]: 'b' is never drained"]),
    (
        "new-created-twice",
        append("creates", 2, create("e", ("g2", 5))),
        ["rounds[2].creates[0]: 'e' was already created by rounds[0].creates[0]"],
    ),
    (
        "running-created-as-new",
        append("creates", 2, create("m", ("g2", 5))),
        ["rounds[2].creates[0]: 'm' is running, not new (a restore names its 'from')"],
    ),
    (
        "restore-without-drain",
        append("creates", 2, create("m", ("g2", 5), ("g1", 0), "inter_host")),
        ["rounds[2].creates[0]: 'm' is not drained, so it cannot be restored"],
    ),
    (
        "restore-from-elsewhere",
        also(
            append("drains", 2, drain("m", ("g1", 0))),
            append("creates", 2, create("m", ("g1", 0), ("g1", 1), "intra_gpu")),
            edit("disrupted", value=["m"]),
        ),
        ["rounds[2].creates[0].from: 'm' ran at g1:0, not g1:1"],
    ),
    (
        "moved-and-created-in-one-round",
        append("moves", 0, move("a", ("g0", 0), ("g2", 4), "inter_host")),
        ["rounds[0].moves[1]: 'a' is already moved or created in this round (rounds[0].moves[0])"],
    ),
    (
        "move-to-where-it-is",
        append("moves", 2, move("m", ("g1", 0), ("g1", 0), "intra_gpu")),
        ["rounds[2].moves[1].to: 'm' moves to where it is (g1:0)"],
    ),
    (
        "park-at-final-place",
        edit("rounds", 1, "moves", 0, "park", value=True),
        ["rounds[1].moves[0].park: 'b' parks at its final place g0:0"],
    ),
    (
        "moves-under-destroy-first",
        edit("semantics", value="destroy-first"),
        [
            f"rounds[{r}].moves[0]: a create-before-destroy move under destroy-first semantics"
            for r in range(3)
        ],
    ),
    (
        "unknown-workload",
        append("moves", 2, move("zz", ("g1", 0), ("g1", 1), "intra_gpu")),
        ["rounds[2].moves[1].workload: 'zz' is not a workload of the instance"],
    ),
    (
        "unknown-gpu",
        edit("rounds", 0, "creates", 0, "to", value=spot("g9", 6)),
        [
            "rounds[0].creates[0].to.gpu: 'g9' is not a GPU of the instance",
            f"final: 'e' at g2:6, but it is at g9:6 {AFTER}",
            f"target: 'e' at g2:6, but it is at g9:6 {AFTER}",
        ],
    ),
    (
        "illegal-start",
        also(edit("rounds", 1, "creates", 0, "to", value=spot("g1", 3)), edit("final", 5, "start", value=3)),
        [
            "rounds[1].creates[0].to.start: 3 is not a legal start of 2g.10gb on A100-40GB (0, 2, 4)",
            f"target: 'n' at g1:2, but it is at g1:3 {AFTER}",
        ],
    ),
    (
        "excluded-model",
        rounds(
            ([], [move("a", ("g0", 0), ("g3", 0), "inter_host", park=True)], [create("e", ("g2", 6))]),
            ([], [move("b", ("g0", 4), ("g0", 0), "intra_gpu")], [create("n", ("g1", 2))]),
            ([], [move("a", ("g3", 0), ("g0", 4), "inter_host")], []),
        ),
        ["rounds[0].moves[0].to.gpu: 'g3' (A30-24GB) is excluded: workload 'a' allows only A100-40GB"],
    ),
    (
        "missing-profile",
        also(
            edit("rounds", 1, "moves", 0, "to", value=spot("g3", 0)),
            edit("rounds", 1, "moves", 0, "kind", value="inter_host"),
        ),
        [
            "rounds[1].moves[0].to.gpu: '3g.20gb' (workload 'b') is not a profile of A30-24GB",
            f"final: 'b' at g0:0, but it is at g3:0 {AFTER}",
            f"target: 'b' at g0:0, but it is at g3:0 {AFTER}",
        ],
    ),
    (
        "empty-round",
        lambda p: p["rounds"].append({"round": 4}),
        ["rounds[3]: an empty round"],
    ),
    ("round-misnumbered", edit("rounds", 1, "round", value=7), ["rounds[1].round: 7, expected 2"]),
    ("other-instance", edit("instance", value="other"), ["instance: plan is for 'other', not 'swap-plan'"]),
    (
        "other-format",
        edit("format", value="mipopt-solution"),
        ["format: expected 'mipopt-plan', got 'mipopt-solution'"],
    ),
    (
        "moves-not-a-list",
        edit("rounds", 1, "moves", value={"a": 1}),
        ["rounds[1].moves: must be a list, got dict"],
    ),
    (
        "spot-without-start",
        edit("rounds", 1, "moves", 0, "to", value={"gpu": "g0"}),
        ["rounds[1].moves[0].to.start: must be a non-negative integer, got None"],
    ),
]


def test_target_differs() -> None:
    report = verify_plan(swap(), good(), {**TARGET, "a": ("g2", 0)})
    assert report.violations == (f"target: 'a' at g2:0, but it is at g0:4 {AFTER}",)


@pytest.mark.parametrize(("change", "expected"), [c[1:] for c in BROKEN], ids=[c[0] for c in BROKEN])
def test_broken_plan(change: Callable[[Plan], None], expected: list[str]) -> None:
    p = good()
    change(p)
    report = verify_plan(swap(), p, TARGET)
    assert not report.valid
    assert list(report.violations) == expected
