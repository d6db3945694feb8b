"""GRMU's migrations through the planner during a replay: parks, drains, rounds, counts; the verifier after every event.

The light GPU ``g1`` of :func:`fragmented_trace` ends up with a 3g.20gb at 0 and a
1g.5gb at 4 (slots 0-4 taken), where a 2g.10gb fits nowhere. GRMU's defragmentation
(Alg. 4) re-places them at default starts: the 3g at 4, the 1g at 0. Each wants the
other's slots, a cycle of waits that create-before-destroy cannot run as it stands:
the 1g parks in free space (round 1), the 3g moves (round 2), the 1g moves from its
parking place to its target (round 3), and the 2g.10gb fits at 2. With no free space
anywhere, the 1g is drained instead: a disruptive move.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from mipopt.heuristics.grmu import Grmu
from mipopt.heuristics.policies import make_policy
from mipopt.instance import InstanceBuilder
from mipopt.migrate.execute import PLAN_COUNTS, execute
from mipopt.simulation import Request, Trace, simulate
from mipopt.state import Cluster, Relocation

COUNTS = ("moves_intra_gpu", "moves_inter_gpu", "moves_inter_host", *PLAN_COUNTS)


class RecordingGrmu(Grmu):
    """GRMU keeping the moves of every defragmentation."""

    def __init__(self, **options: object) -> None:
        super().__init__(**options)  # type: ignore[arg-type]
        self.defrags: list[list[Relocation]] = []

    def defragment(self, cluster: Cluster) -> list[Relocation]:
        moves = super().defragment(cluster)
        if moves:
            self.defrags.append(moves)
        return moves


def fragmented_trace(*, seven_g: bool = False, spare_host: bool = False) -> Trace:
    """A100-40GB ``g0`` (heavy basket) and ``g1`` (light basket) on ``h0``; ``g2`` on ``h1`` if ``spare_host``.

    With ``heavy=0.5`` the heavy basket takes ``g0`` and the light one ``g1``, each
    basket full at one GPU (two with ``g2``: the heavy one), so a light request that
    does not fit ``g1`` is rejected and GRMU defragments ``g1``. On ``g1``: ``a`` (3g)
    at 4, ``b`` (3g) at 0, ``a`` leaves; ``c`` (1g) at 6, ``e`` (1g) at 4, ``c`` leaves;
    ``d`` (2g.10gb) at 1.0 finds no place. ``seven_g``: ``f`` (7g.40gb) fills ``g0``.
    """
    b = InstanceBuilder("fragmented")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"})
    if spare_host:
        b.add_host("h1", {"g2": "A100-40GB"})
    requests = [
        Request("a", "3g.20gb", 0.0, 0.2),
        Request("b", "3g.20gb", 0.1),
        Request("c", "1g.5gb", 0.3, 0.5),
        Request("e", "1g.5gb", 0.4),
        Request("d", "2g.10gb", 1.0),
    ]
    if seven_g:
        requests.insert(0, Request("f", "7g.40gb", 0.0))
    return Trace("fragmented", b.build(), tuple(requests), time_unit="h")


def run(trace: Trace) -> tuple[RecordingGrmu, dict[str, int], dict[str, object]]:
    policy = RecordingGrmu(heavy=0.5)
    res = simulate(trace, policy, bucket=0.5, debug=True)
    last = res.series.iloc[-1]
    return policy, {k: int(last[k]) for k in COUNTS}, {"placed": res.placed, **res.summary}


def test_defragmentation_parks_on_the_hosts_other_gpu() -> None:
    policy, series, s = run(fragmented_trace())
    # g1 = position 1, g0 = 0: the 1g parks on g0 (free, same host), the 3g shifts, the 1g lands
    assert [(m.workload, m.source, m.target, m.kind, m.round, m.park) for m in policy.defrags[0]] == [
        ("e", (1, 4), (0, 0), "inter_gpu", 1, True),
        ("b", (1, 0), (1, 4), "intra_gpu", 2, False),
        ("e", (0, 0), (1, 0), "inter_gpu", 3, False),
    ]
    assert len(policy.defrags) == 1 and not any(m.disruptive for m in policy.defrags[0])
    assert s["placed"] == {"b": ("g1", 4), "e": ("g1", 0), "d": ("g1", 2)}
    assert (s["accepted"], s["arrived"], s["acceptance_rate_2g.10gb"]) == (5, 5, 1.0)  # d accepted after it
    assert series == {
        "moves_intra_gpu": 1,
        "moves_inter_gpu": 2,
        "moves_inter_host": 0,
        "plans": 1,
        "plan_rounds": 3,
        "parking_moves": 1,
        "disruptive_moves": 0,
    }
    assert {k: s[k] for k in COUNTS} == series
    assert s["migrations"] == 3  # the park counts as a migration


def test_series_counts_are_cumulative_and_sampled_after_the_instant() -> None:
    res = simulate(fragmented_trace(), RecordingGrmu(heavy=0.5), bucket=0.5, debug=True)
    series = res.series.set_index("time")
    assert list(series.index) == [0.0, 0.5, 1.0]  # the window ends at d's arrival
    # the defragmentation happens at 1.0, when d arrives: the row at 1.0 is after it
    assert list(series["plan_rounds"]) == [0, 0, 3]
    assert list(series["parking_moves"]) == [0, 0, 1]
    assert list(series["disruptive_moves"]) == [0, 0, 0]


def test_without_free_space_the_cycle_is_broken_by_a_drain() -> None:
    # f fills g0 and g1's free slots 5-7 are the 3g's target: nowhere to park the 1g
    policy, series, s = run(fragmented_trace(seven_g=True))
    assert [(m.workload, m.source, m.target, m.round, m.park, m.disruptive) for m in policy.defrags[0]] == [
        ("b", (1, 0), (1, 4), 1, False, False),
        ("e", (1, 4), (1, 0), 2, False, True),
    ]
    assert s["placed"] == {"f": ("g0", 0), "b": ("g1", 4), "e": ("g1", 0), "d": ("g1", 2)}
    assert (s["accepted"], s["arrived"]) == (6, 6)
    assert series == {
        "moves_intra_gpu": 2,
        "moves_inter_gpu": 0,
        "moves_inter_host": 0,
        "plans": 1,
        "plan_rounds": 2,
        "parking_moves": 0,
        "disruptive_moves": 1,
    }
    assert s["migrations"] == 2  # the restore is the drained workload's relocation


def test_a_gpu_of_another_host_parks_what_the_host_cannot() -> None:
    # g0 is full; g2 on h1 is empty (in the pool): the cut of h0 alone would drain the 1g,
    # so the planner is given g2 and parks it there instead
    policy, series, s = run(fragmented_trace(seven_g=True, spare_host=True))
    assert [(m.workload, m.source, m.target, m.kind, m.round, m.park) for m in policy.defrags[0]] == [
        ("e", (1, 4), (2, 0), "inter_host", 1, True),
        ("b", (1, 0), (1, 4), "intra_gpu", 2, False),
        ("e", (2, 0), (1, 0), "inter_host", 3, False),
    ]
    assert (series["disruptive_moves"], series["parking_moves"], series["plan_rounds"]) == (0, 1, 3)
    assert s["placed"] == {"f": ("g0", 0), "b": ("g1", 4), "e": ("g1", 0), "d": ("g1", 2)}


def test_consolidation_runs_through_the_planner() -> None:
    # g0 heavy, g1 light: a (4g) at 0 on g1, b (4g) takes g2 from the pool, c (3g) at 4 on
    # g1; a leaves: at the tick at 1 the 4g of g2 moves to g1 at 0 in one round, no park
    b = InstanceBuilder("half-full")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_host("h1", {"g2": "A100-40GB"})
    requests = (
        Request("a", "4g.20gb", 0.0, 0.5),
        Request("b", "4g.20gb", 0.1),
        Request("c", "3g.20gb", 0.2),
        Request("d", "1g.5gb", 1.5),
    )
    trace = Trace("half-full", b.build(), requests, time_unit="h")
    res = simulate(trace, make_policy("grmu:consolidation=1"), bucket=0.5, debug=True)
    s = res.summary
    assert {k: s[k] for k in COUNTS} == {
        "moves_intra_gpu": 0,
        "moves_inter_gpu": 0,
        "moves_inter_host": 1,
        "plans": 1,
        "plan_rounds": 1,
        "parking_moves": 0,
        "disruptive_moves": 0,
    }
    assert res.placed["b"] == ("g1", 0) and s["migrations"] == 1


def test_execute_holds_host_cpu_twice_while_a_move_runs() -> None:
    # One host with cpu for two workloads: x (1g.5gb at 0) shifting to 1 needs a second
    # cpu while both instances exist, so create-before-destroy must drain it.
    b = InstanceBuilder("tight-cpu")
    b.add_host("h0", {"g0": "A100-40GB"}, cpu=2)
    b.add_workload("x", "1g.5gb", placement=("g0", 0), cpu=1)
    b.add_workload("y", "1g.5gb", placement=("g0", 6), cpu=1)
    cluster = Cluster(b.build())
    moves = execute(cluster, {"x": (0, 1)})
    assert [(m.workload, m.source, m.target, m.round, m.disruptive) for m in moves] == [
        ("x", (0, 0), (0, 1), 1, True)
    ]
    assert cluster.placed == {"x": ("g0", 1), "y": ("g0", 6)}
    assert dict(cluster.planned) == {"plans": 1, "plan_rounds": 1, "disruptive_moves": 1}
    assert cluster.cpu.tolist() == [2.0]
    # with a spare cpu the same move is a plain create-before-destroy move
    b2 = InstanceBuilder("spare-cpu")
    b2.add_host("h0", {"g0": "A100-40GB"}, cpu=3)
    b2.add_workload("x", "1g.5gb", placement=("g0", 0), cpu=1)
    cluster = Cluster(b2.build())
    assert [(m.round, m.disruptive) for m in execute(cluster, {"x": (0, 1)})] == [(1, False)]
    assert dict(cluster.planned) == {"plans": 1, "plan_rounds": 1}


def test_execute_keeps_a_borrowed_profile_and_skips_non_moves() -> None:
    b = InstanceBuilder("borrow")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_workload("w", "1g.5gb")
    b.add_workload("z", "3g.20gb", placement=("g0", 4))
    cluster = Cluster(b.build())
    cluster.place(cluster.instance.workload("w"), 0, 0, profile="3g.20gb")  # borrowing a 3g
    assert execute(cluster, {"z": (0, 4)}) == [] and not cluster.planned
    # a swap of the two 3g-sized instances: one parks on g1 (z: equal memory, placed first)
    moves = execute(cluster, {"w": (0, 4), "z": (0, 0)})
    assert [(m.workload, m.target, m.park) for m in moves] == [
        ("z", (1, 0), True),
        ("w", (0, 4), False),
        ("z", (0, 0), False),
    ]
    assert cluster.placed == {"w": ("g0", 4), "z": ("g0", 0)}
    assert cluster.occupied_profile("w").name == "3g.20gb"
    assert int(cluster.mask[0]) == 0xFF and int(cluster.mask[1]) == 0


@pytest.mark.parametrize("spec", ["grmu", "grmu:consolidation=0.5", "grmu:heavy=none,consolidation=1"])
def test_random_replays_verify_with_migrations(spec: str) -> None:
    """Busy one-host replays: every state verified, migrations add up, plans are counted."""
    rng = np.random.default_rng(7)
    b = InstanceBuilder("busy")
    b.add_host("h0", {f"g{k}": "A100-40GB" for k in range(4)}, cpu=40)
    b.add_host("h1", {f"g{k}": "A100-40GB" for k in range(4, 6)}, cpu=20)
    mix = {"1g.5gb": 0.3, "1g.10gb": 0.2, "2g.10gb": 0.2, "3g.20gb": 0.15, "4g.20gb": 0.1, "7g.40gb": 0.05}
    requests = []
    t = 0.0
    for i in range(300):
        t += float(rng.exponential(0.05))
        profile = str(rng.choice(list(mix), p=list(mix.values())))
        requests.append(Request(f"r{i}", profile, t, t + float(rng.exponential(1.0)), cpu=1))
    trace = Trace("busy", b.build(), tuple(requests), time_unit="h")
    res = simulate(trace, make_policy(spec), bucket=0.5, debug=True)
    s = res.summary
    assert s["migrations"] == sum(s[f"moves_{k}"] for k in ("intra_gpu", "inter_gpu", "inter_host"))
    assert s["plans"] > 0 and s["parking_moves"] > 0 and s["plan_rounds"] >= s["plans"]
    assert s["migrations"] >= s["plans"] + s["parking_moves"]
    for column in COUNTS:
        assert res.series[column].is_monotonic_increasing
    assert not math.isnan(s["acceptance"])
