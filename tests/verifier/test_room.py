"""Rejection reasons that are true (mipopt.verifier.room and the codes no-room, needs-restarts,
undecided): ``not-chosen`` only when some answer of the run places the request, else what holds
the starts of its profile, each on a tiny instance checked by hand, and a property against the
exact model."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import jsonschema
import pytest
from factories import ROOT, capped_a100, instances
from hypothesis import HealthCheck, given, settings
from test_reasons import build

from mipopt import registry
from mipopt.instance import Budget, Instance, InstanceBuilder, Solution, Status, Workload, solution_from_dict
from mipopt.io import load_instance
from mipopt.verifier import explain, reasons, rejection_reasons, room, verify

#: The full cluster of the issue: running workloads fill both GPUs, none may be evicted.
FULL_MESSAGE = (
    "1g.10gb may start only at 0, 1, 2, 3, 4, 5 or 6 on A100-80GB; on g0 starts 0, 1, 2 and 3 are held "
    "by running 'x' (4g.40gb at 0), starts 4, 5 and 6 by running 'y' (3g.40gb at 4); on g1 every start is "
    "held by running 'z' (7g.80gb at 0); with it, the running workloads need 17 memory slots, the GPUs "
    "have 16 in all"
)


def said(sol: Solution) -> list[tuple[str, str, str]]:
    """What ``mipopt.solve`` said about the rejected workloads."""
    return [(r.workload, r.code, r.message) for r in sol.rejections]


# --- no-room: what holds the starts


def test_pinned_1g_instances_hold_both_starts_of_a_3g() -> None:
    # the first case: 3g.40gb starts only at 0 or 4; pinned 1g.10gb at 0, 2, 4 and 6 hold both
    inst = build(
        [("h1", {"h1-g0": "A100-80GB"}, {})],
        [
            (n, "1g.10gb", {"placement": ("h1-g0", s), "pinned": True})
            for n, s in zip("abcd", (0, 2, 4, 6), strict=True)
        ]
        + [("big", "3g.40gb", {})],
    )
    want = [
        (
            "big",
            "no-room",
            "3g.40gb may start only at 0 or 4 on A100-80GB; on h1-g0 start 0 is held by pinned 'a' "
            "(1g.10gb at 0) and 'b' (1g.10gb at 2), start 4 by pinned 'c' (1g.10gb at 4) and 'd' "
            "(1g.10gb at 6)",
        )
    ]
    for method in ("exact", "exact-initial", "ff", "ibm-joint"):
        assert said(registry.solve(inst, method)) == want, method


def test_quickstart_llm_f_has_no_room_whatever_the_method() -> None:
    inst = load_instance(ROOT / "instances" / "quickstart.json")
    want = [
        (
            "llm-f",
            "no-room",
            "7g.80gb may start only at 0 on H100-80GB; on h2-g0 start 0 is held by pinned 'llm-c' (2g.20gb at 4)",
        )
    ]
    for method in ("exact", "exact-initial", "ff", "ibm-initial"):
        assert said(registry.solve(inst, method)) == want, method


def full_cluster() -> Instance:
    """Two A100-80GB full of running workloads (4g+3g, 7g), and a 1g.10gb request."""
    return build(
        [("h1", {"g0": "A100-80GB", "g1": "A100-80GB"}, {})],
        [
            ("x", "4g.40gb", {"placement": ("g0", 0)}),
            ("y", "3g.40gb", {"placement": ("g0", 4)}),
            ("z", "7g.80gb", {"placement": ("g1", 0)}),
            ("infer-2", "1g.10gb", {}),
        ],
    )


@pytest.mark.parametrize("method", ["exact", "exact-initial", "ff", "ibm-joint"])
def test_running_workloads_that_fill_the_cluster_leave_no_room(method: str) -> None:
    # the second case: once 'infer-2 not-chosen ... the acceptance objective preferred others'
    sol = registry.solve(full_cluster(), method)
    assert said(sol) == [("infer-2", "no-room", FULL_MESSAGE)]


@pytest.mark.parametrize("method", ["exact", "ff"])
def test_no_repacking_makes_room_on_the_hosts_cpu(method: str) -> None:
    # 12 of 20 cpus used, the request needs 6: the totals allow it, no host does (the exact check proves it)
    inst = build(
        [("h1", {"g1": "A100-80GB"}, {"cpu": 10}), ("h2", {"g2": "A100-80GB"}, {"cpu": 10})],
        [
            ("x", "1g.10gb", {"placement": ("g1", 0), "cpu": 6}),
            ("y", "1g.10gb", {"placement": ("g2", 0), "cpu": 6}),
            ("r", "1g.10gb", {"cpu": 6}),
        ],
    )
    assert said(registry.solve(inst, method)) == [
        (
            "r",
            "no-room",
            "1g.10gb may start only at 0, 1, 2, 3, 4, 5 or 6 on A100-80GB; on g1 its host h1 has cpu 4 of 10 "
            "left (the rest held by running 'x'), it needs 6; on g2 its host h2 has cpu 4 of 10 left (the "
            "rest held by running 'y'), it needs 6; no re-packing of the running workloads makes room (an "
            "exact check proves it)",
        )
    ]


def test_host_ram_held_by_a_pinned_workload() -> None:
    inst = build(
        [("h1", {"g0": "A100-40GB"}, {"ram_gb": 64})],
        [
            ("p", "1g.5gb", {"placement": ("g0", 0), "pinned": True, "ram_gb": 48}),
            ("r", "1g.5gb", {"ram_gb": 32}),
        ],
    )
    assert said(registry.solve(inst, "exact")) == [
        (
            "r",
            "no-room",
            "1g.5gb may start only at 0, 1, 2, 3, 4, 5 or 6 on A100-40GB; on g0 its host h1 has ram 16 GB of "
            "64 GB left (the rest held by pinned 'p'), it needs 32 GB",
        )
    ]


def test_the_media_instance_and_a_profiles_count() -> None:
    inst = build(
        [("h1", {"g0": "A100-40GB"}, {})],
        [("m", "1g.5gb+me", {"placement": ("g0", 0), "pinned": True}), ("r", "1g.5gb+me", {})],
    )
    assert said(registry.solve(inst, "ff"))[0][2] == (
        "1g.5gb+me may start only at 0, 1, 2, 3, 4, 5 or 6 on A100-40GB; on g0 the one +me instance is "
        "pinned 'm' (1g.5gb+me at 0)"
    )
    # a custom A100-40GB whose 1g.5gb may run twice: two pinned ones hold the count, not the slots
    b = InstanceBuilder("capped", custom_models=list(capped_a100(0).custom_models))
    b.add_host("h1", {"c0": "Capped-40GB"})
    b.add_workload("p0", "1g.5gb", placement=("c0", 0), pinned=True)
    b.add_workload("p1", "1g.5gb", placement=("c0", 1), pinned=True)
    b.add_workload("r", "1g.5gb")
    assert said(registry.solve(b.build(), "exact"))[0][1:] == (
        "no-room",
        "1g.5gb may start only at 0, 1, 2, 3, 4, 5 or 6 on Capped-40GB; on c0 1g.5gb is at its most, 2 "
        "(pinned 'p0' and 'p1')",
    )


def test_many_gpus_are_counted_by_cause() -> None:
    gpus = {f"g{i}": "A100-40GB" for i in range(5)}
    running = [(f"p{i}", "7g.40gb", {"placement": (f"g{i}", 0), "pinned": i < 4}) for i in range(5)]
    inst = build([("h1", gpus, {})], [*running, ("r", "4g.20gb", {})])
    assert said(registry.solve(inst, "ff")) == [
        (
            "r",
            "no-room",
            "4g.20gb may start only at 0 on A100-40GB; on its 5 eligible GPUs: 4 with every start held by "
            "pinned workloads (g0, g1, g2 and 1 more), 1 with every start held by running workloads (g4); "
            "e.g. on g0 start 0 is held by pinned 'p0' (7g.40gb at 0); with it, the running workloads need "
            "44 memory slots, the GPUs have 40 in all",
        )
    ]


# --- needs-restarts: room only by moving running workloads, which the run does not allow


def one_move() -> Instance:
    """4g.40gb starts at 0 only: 'x' holds g0:0, 'y' (3g.40gb) g1:0; 'y' may move to g1:4 or g0:4."""
    return build(
        [("h1", {"g0": "A100-80GB", "g1": "A100-80GB"}, {})],
        [
            ("x", "4g.40gb", {"placement": ("g0", 0)}),
            ("y", "3g.40gb", {"placement": ("g1", 0)}),
            ("new", "4g.40gb", {}),
        ],
    )


HELD = (
    "4g.40gb may start only at 0 on A100-80GB; on g0 start 0 is held by running 'x' (4g.40gb at 0); on g1 "
    "start 0 is held by running 'y' (3g.40gb at 0); placing it needs restarting at least 1 running workload "
    "(an answer: running 'y' moved to g1:4, it at g1:0); "
)


def test_fits_only_if_a_running_workload_moves() -> None:
    inst = one_move()
    assert registry.solve(inst, "exact").rejected == ()  # the joint optimum moves 'y' and places it
    assert said(registry.solve(inst, "exact-initial")) == [
        (
            "new",
            "needs-restarts",
            HELD + "the method keeps running workloads where they run (use case initial)",
        )
    ]
    assert said(registry.solve(inst, "ff")) == [
        ("new", "needs-restarts", HELD + "the heuristic ff (batch) never moves running workloads")
    ]


def test_the_exact_check_finds_what_the_greedy_search_does_not(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(room, "_greedy", lambda *args: None)
    assert said(registry.solve(one_move(), "ff")) == [
        (
            "new",
            "needs-restarts",
            HELD.replace("g1:4", "g0:4") + "the heuristic ff (batch) never moves running workloads",
        )
    ]


def test_the_restart_budget() -> None:
    inst = one_move()
    sol = registry.solve(inst, "exact", max_restarts=0)
    assert said(sol) == [("new", "needs-restarts", HELD + "--max-restarts 0 allows none")]
    # one restart is enough, and a move on the same GPU moves no GB
    assert registry.solve(inst, "exact", max_restarts=1, max_moved_gb=0).rejected == ()


def test_the_moved_gb_budget() -> None:
    # 'y' must leave g0 for g0:0 to open: only a move to g1 (40 GB) makes room
    inst = build(
        [("h1", {"g0": "A100-80GB", "g1": "A100-80GB"}, {})],
        [
            ("y", "3g.40gb", {"placement": ("g0", 0)}),
            ("z", "3g.40gb", {"placement": ("g0", 4)}),
            ("u", "4g.40gb", {"placement": ("g1", 0)}),
            ("r", "4g.40gb", {}),
        ],
    )
    assert registry.solve(inst, "exact", max_moved_gb=40).placed()["r"] == ("g0", 0)
    assert said(registry.solve(inst, "exact", max_moved_gb=20)) == [
        (
            "r",
            "needs-restarts",
            "4g.40gb may start only at 0 on A100-80GB; on g0 start 0 is held by running 'y' (3g.40gb at 0); "
            "on g1 start 0 is held by running 'u' (4g.40gb at 0); placing it needs restarting at least 1 "
            "running workload (an answer: running 'y' moved to g1:4, it at g0:0); --max-moved-gb 20 allows "
            "20 GB, that answer moves 40 GB",
        )
    ]


# --- not-chosen with moves, and undecided


def test_not_chosen_names_the_moves_and_what_took_the_place() -> None:
    inst = build(
        [("h1", {"g0": "A100-80GB", "g1": "A100-80GB"}, {})],
        [
            ("x", "4g.40gb", {"placement": ("g0", 0)}),
            ("y", "3g.40gb", {"placement": ("g1", 0)}),
            ("a", "4g.40gb", {}),
            ("b", "4g.40gb", {"weight": 2.0}),
        ],
    )
    sol = registry.solve(inst, "exact")
    assert sol.status is Status.OPTIMAL and sol.placed()["b"] == ("g1", 0)
    assert said(sol) == [
        (
            "a",
            "not-chosen",
            "no room left in this answer: on g0 start 0 is held by running 'x' (4g.40gb at 0); on g1 start 0 "
            "is held by new 'b' (4g.40gb at 0); g1:0 would take it with running 'y' moved to g1:4 (1 restart), "
            "but there the acceptance objective preferred 'b' (weight 2) to it (weight 1) (proven optimal)",
        )
    ]


def test_undecided_when_the_checks_have_no_time() -> None:
    inst = one_move()
    sol = registry.solve(inst, "exact-initial")  # leaves 'new' out; read as if the method could move
    assert [(r.code, r.message) for r in rejection_reasons(inst, sol, time_limit_s=0)] == [
        (
            "undecided",
            "4g.40gb may start only at 0 on A100-80GB; on g0 start 0 is held by running 'x' (4g.40gb at 0); "
            "on g1 start 0 is held by running 'y' (3g.40gb at 0); moving running workloads might make room: "
            "the time for checks ran out before the exact check",
        )
    ]
    assert rejection_reasons(inst, sol)[0].code == "not-chosen"  # with time, an answer is found


def test_one_search_serves_identical_requests(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    search = reasons.find_room

    def counted(instance: Instance, w: Workload, **kw: Any) -> Any:
        calls.append(w.id)
        return search(instance, w, **kw)

    monkeypatch.setattr(reasons, "find_room", counted)
    inst = one_move()
    more = [replace(inst.workload("new"), id=f"new{i}") for i in range(5)]
    inst = replace(inst, workloads=(*inst.workloads, *more))
    sol = registry.solve(inst, "ff")
    assert [r.code for r in sol.rejections] == ["needs-restarts"] * 6
    assert len({r.message for r in sol.rejections}) == 1
    assert calls == ["new"]


def test_new_codes_round_trip_and_match_the_schema() -> None:
    inst = full_cluster()
    sol = registry.solve(inst, "ff")
    data = json.loads(sol.to_json())
    assert data["rejections"] == [{"workload": "infer-2", "reason": "no-room", "message": FULL_MESSAGE}]
    schema = json.loads((ROOT / "mipopt" / "schemas" / "solution.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert solution_from_dict(data).rejections == sol.rejections
    assert verify(inst, solution_from_dict(data)).valid
    assert explain(inst, sol, moves=False).rejections == sol.rejections


# --- the property: not-chosen only when the exact model places the request


def _oracle(inst: Instance, wid: str, method: str, **options: Any) -> bool:
    """Whether the exact model (``exact`` or ``exact-initial``, with ``options``) places ``wid``
    beside the running workloads alone, the other requests dropped: some answer of the run accepts it."""
    alone = replace(inst, workloads=(*inst.running, inst.workload(wid)))
    sol = registry.get_method(method).solve(alone, time_limit_s=30, **options)
    assert sol.status is Status.OPTIMAL
    return wid in sol.placed()


#: Each method with the exact one that has the same answers: ff never moves running workloads.
RUNS: list[tuple[str, dict[str, Any], str, dict[str, Any]]] = [
    ("ff", {}, "exact-initial", {}),
    ("exact", {"time_limit_s": 30}, "exact", {}),
    ("exact", {"time_limit_s": 30, "max_restarts": 0}, "exact", {"budget": Budget(max_restarts=0)}),
]


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=instances(max_hosts=2, max_gpus=2, max_running_per_gpu=3, max_new=4))
def test_not_chosen_only_when_an_answer_places_it(inst: Instance) -> None:
    for method, options, oracle, oracle_options in RUNS:
        sol = registry.solve(inst, method, **options)
        for r in sol.rejections:
            if r.code in ("not-chosen", "no-room", "needs-restarts"):
                placed = _oracle(inst, r.workload, oracle, **oracle_options)
                assert placed == (r.code == "not-chosen"), (method, options, r)
            if r.code == "needs-restarts":  # room exists once running workloads move
                assert _oracle(inst, r.workload, "exact"), (method, options, r)
            assert r.code != "undecided", (method, options, r)


def test_a_space_reads_again_what_a_change_changed() -> None:
    """Space keeps the GPUs' part of spots and blocks for alike requests (the same profile, any
    cpu and ram); adding or removing a workload must be seen by the next request."""
    from mipopt.verifier.room import Space

    inst = build(
        [("h1", {"g0": "A100-40GB"}, {"cpu": 8}), ("h2", {"g1": "A100-40GB"}, {"cpu": 8})],
        [("a", "7g.40gb", {}), ("small", "1g.5gb", {"cpu": 2}), ("big", "1g.5gb", {"cpu": 10})],
    )
    space = Space(inst)
    small, big = inst.workload("small"), inst.workload("big")
    assert space.spot(small) == ("g0", 0, 2.0)  # a host and a GPU on: hardware 2, g0 first
    assert space.spot(big) is None  # no host has 10 cpu
    assert [(b.gpu, b.rule) for b, _ in space.blocked(big)] == [("g0", "cpu"), ("g1", "cpu")]
    space.add("a", "g0", 0)
    assert space.spot(small) == ("g1", 0, 2.0)
    assert [(b.gpu, b.rule) for b, _ in space.blocked(small)] == [("g0", "starts")]
    assert [(b.gpu, b.rule) for b, _ in space.blocked(big)] == [("g0", "starts"), ("g1", "cpu")]
    space.remove("a")
    assert space.spot(small) == ("g0", 0, 2.0)
    assert space.blocked(small) == []


def test_the_spot_is_the_least_hardware_on_a_host_with_the_cpu() -> None:
    """g2 adds 1 to hardware (its host h1 is on), g1 adds 2; a request of 2 cpu cannot go to h1
    (7 of its 8 taken), so its spot is g1, not the cheaper g2; one of 1 cpu takes g0 beside x."""
    from mipopt.verifier.room import Space

    inst = build(
        [("h1", {"g0": "A100-40GB", "g2": "A100-40GB"}, {"cpu": 8}), ("h2", {"g1": "A100-40GB"}, {"cpu": 8})],
        [("x", "1g.5gb", {"cpu": 7}), ("two", "1g.5gb", {"cpu": 2}), ("one", "1g.5gb", {"cpu": 1})],
    )
    space = Space(inst)
    space.add("x", "g0", 0)
    assert space.spot(inst.workload("two")) == ("g1", 0, 2.0)
    assert space.spot(inst.workload("one")) == ("g0", 1, 0.0)
