"""The GRMU paper's online policies (ff, bf, mcc, mecc, grmu), on hand-made clusters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np
import pytest
from factories import instances
from hypothesis import given, settings

import mipopt.heuristics.grmu  # noqa: F401  (registers the policies)
from mipopt.catalog import get_model
from mipopt.geometry import tables_for
from mipopt.heuristics.grmu import HEAVY, LIGHT, POOL, Grmu, MaxExpectedCC
from mipopt.heuristics.online import run_batch
from mipopt.heuristics.policies import make_policy
from mipopt.instance import Instance, InstanceBuilder
from mipopt.registry import solve
from mipopt.state.cluster import Cluster
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance

A100 = get_model("A100-40GB")
NAMES = ("ff", "bf", "mcc", "mecc", "grmu")


def index(profile: str) -> int:
    return A100.profiles.index(A100.profile(profile))


def cluster_of(gpus: list[list[tuple[str, int]]], new: Sequence[str] = ()) -> Instance:
    """One host of A100-40GB GPUs ``g0, g1, ...`` running ``(profile, start)`` lists; ``new`` requests."""
    b = InstanceBuilder("grmu-policies")
    b.add_host("h0", {f"g{k}": "A100-40GB" for k in range(len(gpus))}, cpu=64)
    for k, running in enumerate(gpus):
        for j, (profile, start) in enumerate(running):
            b.add_workload(f"r{k}-{j}", profile, placement=(f"g{k}", start), cpu=1)
    for i, profile in enumerate(new):
        b.add_workload(f"n{i}", profile, cpu=1)
    return b.build()


def batch(name: str, inst: Instance) -> dict[str, tuple[str, int]]:
    """New workloads' placements of a batch run, after the verifier accepts it."""
    sol = run_batch(make_policy(name), inst)
    report = verify(inst, sol)
    assert report.valid, report.violations
    return {w: at for w, at in sol.placed().items() if not inst.workload(w).running}


# --- ff, bf, mcc: the same request, three GPUs, three answers


def test_ff_bf_mcc_pick_different_gpus() -> None:
    # g0: 1g.5gb at 6 and 2 (free 0,1,3,4,5); g1: 4g at 0 and 1g.10gb at 6 (2 slots free);
    # g2: one 1g.5gb at 4. A 2g.10gb fits everywhere, at each GPU's default start.
    gpus = [[("1g.5gb", 6), ("1g.5gb", 2)], [("4g.20gb", 0), ("1g.10gb", 6)], [("1g.5gb", 4)]]
    inst = cluster_of(gpus, ["2g.10gb"])
    p = index("2g.10gb")
    t = tables_for(A100)
    masks = [0b01000100, 0b11001111, 0b00010000]
    starts = [int(t.default_start[m, p]) for m in masks]
    assert starts == [0, 4, 0]
    after = [m | A100.profiles[p].slot_mask(s) for m, s in zip(masks, starts, strict=True)]
    assert [int(t.free_slots[a]) for a in after] == [4, 0, 5]  # bf: g1
    assert [int(t.cc[a]) for a in after] == [5, 0, 7]  # mcc: g2
    assert batch("ff", inst) == {"n0": ("g0", 0)}
    assert batch("bf", inst) == {"n0": ("g1", 4)}
    assert batch("mcc", inst) == {"n0": ("g2", 0)}
    assert batch("mecc", inst) == {"n0": ("g2", 0)}  # no history: uniform weights rank as CC does


def test_ties_go_to_the_first_gpu() -> None:
    inst = cluster_of([[], [], []], ["3g.20gb", "3g.20gb", "1g.5gb"])
    # Three empty GPUs: the first 3g goes to g0 at its default start 4; the second 3g
    # fills g0 under ff and bf; mcc spreads: g0 would drop to CC 0, an empty GPU keeps
    # more, so the second 3g goes to g1 and the 1g to the still empty g2.
    assert batch("ff", inst) == {"n0": ("g0", 4), "n1": ("g0", 0), "n2": ("g1", 6)}
    assert batch("bf", inst) == {"n0": ("g0", 4), "n1": ("g0", 0), "n2": ("g1", 6)}
    assert batch("mcc", inst) == {"n0": ("g0", 4), "n1": ("g1", 4), "n2": ("g2", 6)}


def test_candidates_respect_host_cpu() -> None:
    # Two hosts; the first has no cpu left, so ff skips its empty GPU.
    b = InstanceBuilder("cpu")
    b.add_host("h0", {"g0": "A100-40GB"}, cpu=1)
    b.add_host("h1", {"g1": "A100-40GB"}, cpu=8)
    b.add_workload("r", "1g.5gb", placement=("g0", 6), cpu=1)
    b.add_workload("n", "1g.5gb", cpu=1)
    inst = b.build()
    for name in ("ff", "bf", "mcc", "mecc", "grmu:heavy=none"):
        assert batch(name, inst) == {"n": ("g1", 6)}, name
    # With a heavy basket, Alg. 2 reserves the one empty GPU for 7g requests.
    assert batch("grmu", inst) == {}


# --- mecc: history changes the choice


def test_mecc_weights_recent_arrivals() -> None:
    # g0 holds 1g.5gb at 0, g1 a 2g.10gb at 4. A 1g.5gb leaves CC 11 on g0 and 10 on
    # g1, but only g1 keeps the lower half free for a 4g.20gb.
    inst = cluster_of([[("1g.5gb", 0)], [("2g.10gb", 4)]], ["4g.20gb", "1g.5gb"])
    four, one = inst.workload("n0"), inst.workload("n1")
    t = tables_for(A100)
    a0 = 0b1 | A100.profile("1g.5gb").slot_mask(int(t.default_start[0b1, 0]))
    a1 = 0b110000 | A100.profile("1g.5gb").slot_mask(int(t.default_start[0b110000, 0]))
    assert (int(t.cc[a0]), int(t.cc[a1])) == (11, 10)
    assert (int(t.capacity[a0, index("4g.20gb")]), int(t.capacity[a1, index("4g.20gb")])) == (0, 1)

    def decide(history: list[float], now: float) -> int:
        policy = MaxExpectedCC()
        cluster = Cluster(inst)
        policy.start(cluster, np.random.default_rng(0))
        for k, when in enumerate(history):  # 4g arrivals recorded through choose, never placed
            policy.choose(cluster, replace(four, id=f"old{k}"), when)
        at = policy.choose(cluster, one, now)
        assert at is not None
        return at[0]

    assert decide([], 0.0) == 0  # uniform weights: as mcc
    assert decide([1.0, 2.0], 10.0) == 1  # only 4g arrived lately: keep room for it
    assert decide([1.0, 2.0], 30.0) == 0  # those arrivals left the 24-hour window
    policy = make_policy("mecc:window=48")
    assert isinstance(policy, MaxExpectedCC) and policy.window == 48.0


# --- grmu: baskets


def test_grmu_heavy_basket_capacity() -> None:
    # Three empty GPUs, heavy capacity 1 of 3: Alg. 2 gives g0 to the heavy basket and
    # g1 to the light one; the second 7g finds the heavy basket full and is rejected
    # though g2 is empty; light requests take g2 from the pool when g1 is full.
    inst = cluster_of([[], [], []], ["7g.40gb", "1g.5gb", "7g.40gb", "4g.20gb", "4g.20gb"])
    placed = batch("grmu:heavy=0.34", inst)
    assert placed == {"n0": ("g0", 0), "n1": ("g1", 6), "n3": ("g1", 0), "n4": ("g2", 0)}
    # With the heavy basket off, the second 7g gets g2 and the second 4g is rejected.
    placed = batch("grmu:heavy=none", inst)
    assert placed == {"n0": ("g0", 0), "n1": ("g1", 6), "n2": ("g2", 0), "n3": ("g1", 0)}
    # ff takes any GPU: the same as one basket here.
    assert batch("ff", inst) == placed


def test_grmu_heavy_capacity_rounds_and_baskets_start() -> None:
    policy = make_policy("grmu")
    assert isinstance(policy, Grmu)
    assert (policy.heavy, policy.defrag, policy.consolidation, policy.tick) == (0.3, True, None, None)
    inst = cluster_of([[], [("7g.40gb", 0)], [("1g.5gb", 6)], [], [], [], [], [], [], []])
    cluster = Cluster(inst)
    policy.start(cluster, np.random.default_rng(0))
    assert policy.capacity == {LIGHT: 7, HEAVY: 3}
    # g1 runs a 7g (heavy), g2 a 1g (light); both baskets have a GPU, the rest stay pooled.
    assert policy.basket.tolist() == [POOL, HEAVY, LIGHT] + [POOL] * 7


def test_grmu_returns_emptied_gpus_to_the_pool() -> None:
    inst = cluster_of([[], [], []], ["7g.40gb", "3g.20gb", "3g.20gb", "3g.20gb"])
    policy = Grmu(heavy=0.34)
    cluster = Cluster(inst)
    policy.start(cluster, np.random.default_rng(0))
    for w in inst.new:
        assert policy.arrive(cluster, w, 0.0)
    assert policy.basket.tolist() == [HEAVY, LIGHT, LIGHT]
    policy.depart(cluster, inst.workload("n3"), 1.0)  # g2 empties
    assert policy.basket.tolist() == [HEAVY, LIGHT, POOL]
    policy.depart(cluster, inst.workload("n1"), 1.0)  # g1 keeps one 3g
    assert policy.basket.tolist() == [HEAVY, LIGHT, POOL]


# --- grmu: defragmentation (Alg. 4)


def test_grmu_defragmentation_makes_room() -> None:
    # g0 holds two 1g.5gb at 0 and 4 (scattered, e.g. by departures): neither a 3g
    # nor a 4g fits. g1 is full. The default arrangement puts both 1g on the upper
    # half, which frees 0-3 for the 4g.
    gpus = [[("1g.5gb", 0), ("1g.5gb", 4)], [("4g.20gb", 0), ("3g.20gb", 4)]]
    inst = cluster_of(gpus, ["4g.20gb"])
    t = tables_for(A100)
    assert t.grmu[0b10001] > 0 and t.grmu[0xFF] == 0
    policy = Grmu()
    cluster = Cluster(inst)
    policy.start(cluster, np.random.default_rng(0))
    assert policy.arrive(cluster, inst.workload("n0"), 0.0)
    assert cluster.placed["n0"] == ("g0", 0)
    assert cluster.placed["r0-0"] == ("g0", 6) and cluster.placed["r0-1"] == ("g0", 4)
    assert cluster.moves["intra_gpu"] == 1 and sum(cluster.moves.values()) == 1
    assert [(m.workload, m.source, m.target, m.kind) for m in cluster.log] == [
        ("r0-0", (0, 0), (0, 6), "intra_gpu")
    ]
    sol = run_batch(make_policy("grmu"), inst)
    report = verify(inst, sol)
    assert report.valid and report.metrics["moves_intra_gpu"] == 1 and "n0" not in sol.rejected
    # Without defragmentation the 4g is rejected.
    assert batch("grmu:defrag=false", inst) == {}


def test_defragmentation_moves_every_mover_without_overlap() -> None:
    # 1g.5gb at 0, 6 and 5, in placement order. Default starts on an empty GPU go 6,
    # 4, 5: r0-0 must move onto r0-1's slot 6 while r0-1 moves to 4, so moving r0-0
    # first would overlap; the plan moves r0-1 in round 1 and r0-0 in round 2.
    inst = cluster_of([[("1g.5gb", 0), ("1g.5gb", 6), ("1g.5gb", 5)]])
    cluster = Cluster(inst)
    policy = Grmu(heavy=None)
    policy.start(cluster, np.random.default_rng(0))
    moves = policy.defragment(cluster)
    assert {wid: s for wid, (_, s) in cluster.placed.items()} == {"r0-0": 6, "r0-1": 4, "r0-2": 5}
    assert [(m.workload, m.source[1], m.target[1], m.round) for m in moves] == [
        ("r0-1", 6, 4, 1),
        ("r0-0", 0, 6, 2),
    ]
    assert cluster.moves["intra_gpu"] == 2 and len(cluster.log) == 2
    assert int(cluster.mask[0]) == 0b01110000
    assert tables_for(A100).grmu[0b01100001] == 6.5 and tables_for(A100).grmu[0b01110000] == 2.5


# --- grmu: consolidation (Alg. 5)


def test_grmu_consolidation_pairs_half_full_gpus() -> None:
    # g0: 4g at 0 (lower half); g1: 3g at 0; g2: 3g at 4; g3: 1g (not single-4-slot).
    # The highest-indexed source g2 joins g0 (its lower half taken, upper free);
    # then g1 has no partner left.
    inst = cluster_of([[("4g.20gb", 0)], [("3g.20gb", 0)], [("3g.20gb", 4)], [("1g.5gb", 6)]])
    policy = make_policy("grmu:consolidation=24,heavy=none")
    assert isinstance(policy, Grmu) and policy.tick == 24
    cluster = Cluster(inst)
    policy.start(cluster, np.random.default_rng(0))
    policy.on_tick(cluster, 24.0)
    assert cluster.placed["r2-0"] == ("g0", 4)
    assert cluster.mask.tolist() == [0xFF, 0x0F, 0, 1 << 6]
    assert dict(cluster.moves) == {"inter_gpu": 1}
    assert policy.basket.tolist() == [LIGHT, LIGHT, POOL, LIGHT]


def test_consolidation_off_by_default_and_with_zero() -> None:
    inst = cluster_of([[("4g.20gb", 0)], [("3g.20gb", 4)]])
    for spec in ("grmu", "grmu:consolidation=0", "grmu:consolidation=none"):
        policy = make_policy(spec)
        assert policy.tick is None
        cluster = Cluster(inst)
        policy.start(cluster, np.random.default_rng(0))
        policy.on_tick(cluster, 24.0)
        assert not cluster.moves


# --- batch runs


@pytest.mark.parametrize(
    ("spec", "accepted"),
    [("ff", 9), ("bf", 9), ("mcc", 8), ("mecc", 8), ("grmu", 7), ("grmu:heavy=none", 9)],
)
def test_batch_on_ibm_instance(spec: str, accepted: int) -> None:
    inst = ibm_instance(8, seed=0)
    assert len(inst.new) == 11
    first = batch(spec, inst)
    assert len(first) == accepted
    assert batch(spec, inst) == first  # deterministic


def test_ff_matches_the_batch_first_fit() -> None:
    inst = ibm_instance(16, seed=3)
    assert batch("ff", inst) == {
        w: at for w, at in solve(inst, "ff").placed().items() if not inst.workload(w).running
    }


def test_unknown_option_is_reported() -> None:
    with pytest.raises(ValueError, match="heavy"):
        make_policy("grmu:heavy=2")
    with pytest.raises(ValueError, match=r"^policy: policy mcc has no option 'window' \(its options: none\)$"):
        make_policy("mcc:window=3")


@settings(max_examples=25, deadline=None)
@given(instances())
def test_every_policy_passes_the_verifier(inst: Instance) -> None:
    for spec in (*NAMES, "grmu:heavy=none,consolidation=1"):
        sol = run_batch(make_policy(spec), inst)
        report = verify(inst, sol)
        assert report.valid, (spec, report.violations)
