"""The MFI paper's policies (ff-agnostic, rr, bf-bi, wf-bi, mfi) and IBM's online rules (lb, ibm-initial).

Each rule on a hand-made state where it decides the outcome (the MFI paper's Fig. 3
kind: enough free slots, but the rule's index is not legal), and every policy in
batch on an IBM snapshot, checked by the verifier.
"""

from __future__ import annotations

import numpy as np
import pytest

import mipopt.heuristics.mfi  # noqa: F401  (registers the policies)
from mipopt.catalog import get_model
from mipopt.geometry import tables_for
from mipopt.heuristics.mfi import best_index
from mipopt.heuristics.online import run_batch
from mipopt.heuristics.policies import make_policy
from mipopt.instance import Instance, InstanceBuilder
from mipopt.state.cluster import Cluster
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance

A100 = "A100-80GB"


def cluster_of(n_gpus: int, running: list[tuple[str, str, int, int]], new: list[str]) -> Cluster:
    """One host of ``n_gpus`` A100-80GB GPUs ``g0``...; running (id, profile, gpu, start); new profiles."""
    b = InstanceBuilder("case")
    b.add_host("h0", gpus={f"g{k}": A100 for k in range(n_gpus)})
    for wid, profile, k, start in running:
        b.add_workload(wid, profile, placement=(f"g{k}", start))
    for i, profile in enumerate(new):
        b.add_workload(f"n{i}", profile)
    return Cluster(b.build())


def decide(policy: str, cluster: Cluster, wid: str = "n0") -> tuple[int, int] | None:
    return make_policy(policy).choose(cluster, cluster.instance.workload(wid), 0.0)


def test_agnostic_first_fit_rejects_where_mig_aware_policies_place() -> None:
    # 1g.10gb at slot 0: 7 slots and 6 compute slices free, so the GPU has "enough
    # resources" for a 2g.20gb, but its first free index, 1, is not a 2g.20gb start.
    c = cluster_of(1, [("a", "1g.10gb", 0, 0)], ["2g.20gb"])
    assert decide("ff-agnostic", c) is None
    assert decide("rr", c) is None
    assert decide("ff-agnostic:strict=false", c) == (0, 2)  # Fig. 3's reading: first legal index
    assert decide("bf-bi", c) == (0, 4)  # preference order 4, 0, 2
    # MFI: F rises from 13 to 19 at start 2, to 23 at start 4
    t = tables_for(get_model(A100))
    assert t.fbk[0b1] == 13
    assert (t.fbk[0b1 | 0b1100], t.fbk[0b1 | 0b110000]) == (19, 23)
    assert decide("mfi", c) == (0, 2)


def test_agnostic_needs_free_compute_not_just_memory() -> None:
    # seven 1g.10gb: slot 7 is free but no compute slice is
    c = cluster_of(2, [(f"a{s}", "1g.10gb", 0, s) for s in range(7)], ["1g.10gb"])
    assert decide("ff-agnostic", c) == (1, 0)


def test_round_robin_rotates_over_gpus_and_first_fit_packs() -> None:
    c = cluster_of(3, [], ["1g.10gb"] * 4)
    rr, ff = make_policy("rr"), make_policy("ff-agnostic")
    rr.start(c, np.random.default_rng(0))
    placed = []
    for i in range(4):
        w = c.instance.workload(f"n{i}")
        assert rr.arrive(c, w, 0.0)
        placed.append(c.placed[w.id])
    assert placed == [("g0", 0), ("g1", 0), ("g2", 0), ("g0", 1)]
    c2 = cluster_of(3, [], ["1g.10gb"] * 4)
    for i in range(4):
        assert ff.arrive(c2, c2.instance.workload(f"n{i}"), 0.0)
    assert sorted(c2.placed.values()) == [("g0", 0), ("g0", 1), ("g0", 2), ("g0", 3)]


def test_best_fit_and_worst_fit_pick_different_gpus_at_the_best_index() -> None:
    # g0 empty, g1 holds a 3g.40gb at 4 (slots 4-7)
    c = cluster_of(2, [("a", "3g.40gb", 1, 4)], ["1g.10gb"])
    assert decide("bf-bi", c) == (1, 0)  # 6, 4, 5 taken: the next preferred start is 0
    assert decide("wf-bi", c) == (0, 6)  # "index 6 instead of index 0"


def test_fit_best_index_by_amount_rejects_on_a_fragmented_fullest_gpu() -> None:
    # g0: 1g.10gb at 1, 3, 5: five slots and four compute slices free, but every
    # 2g.20gb start (0, 2, 4) blocked; g1 empty. Best fit by amount picks g0 and fails
    # (the paper's Fig. 3(a)); the default reading skips g0.
    c = cluster_of(2, [("a", "1g.10gb", 0, 1), ("b", "1g.10gb", 0, 3), ("c", "1g.10gb", 0, 5)], ["2g.20gb"])
    assert decide("bf-bi", c) == (1, 4)
    assert decide("bf-bi:by-amount=true", c) is None
    assert decide("wf-bi:by-amount=true", c) == decide("wf-bi", c) == (1, 4)


def test_best_index_follows_the_preference_order() -> None:
    model = get_model(A100)
    p = model.profiles.index(model.profile("1g.10gb"))
    assert best_index(model, p, [0b1111111, 0b0011111, 0b0101111, 0b0001111, 0]).tolist() == [6, 4, 5, 0, -1]


def test_mfi_picks_the_gpu_and_start_with_the_smallest_increase_of_f() -> None:
    c = cluster_of(2, [("a", "3g.40gb", 1, 4)], ["1g.10gb"])
    t = tables_for(get_model(A100))
    # empty g0: best is start 6, F 0 -> 7; g1: start 0, F 13 -> 14
    assert (t.fbk[0], t.fbk[1 << 6], t.fbk[0b11110000], t.fbk[0b11110001]) == (0, 7, 13, 14)
    assert decide("mfi", c) == (1, 0)


def test_mfi_ties_go_to_the_lowest_gpu_position() -> None:
    c = cluster_of(3, [], ["1g.10gb"])
    assert decide("mfi", c) == (0, 6)


def test_load_balanced_and_ibm_initial_take_opposite_gpus() -> None:
    # g0: 1g.10gb (joint use 2 of 15), g1: 2g.20gb (4 of 15)
    c = cluster_of(2, [("a", "1g.10gb", 0, 0), ("b", "2g.20gb", 1, 0)], ["1g.10gb"])
    assert decide("lb", c) == (0, 1)  # least utilized, lowest free index
    assert decide("ibm-initial-online", c) == (1, 6)  # most utilized after assignment, Table 1 start


@pytest.fixture(scope="module")
def snapshot() -> Instance:
    return ibm_instance(8, seed=0)


@pytest.mark.parametrize(
    ("policy", "acceptance", "placed"),
    [
        ("ff-agnostic", 46.0, 25),
        ("rr", 39.0, 24),
        ("bf-bi", 49.0, 26),
        ("wf-bi", 42.0, 25),
        ("mfi", 49.0, 26),
        ("lb", 38.0, 24),
        ("ibm-initial-online", 49.0, 26),
    ],
)
def test_batch_solutions_pass_the_verifier(
    snapshot: Instance, policy: str, acceptance: float, placed: int
) -> None:
    solution = run_batch(make_policy(policy), snapshot)
    report = verify(snapshot, solution)
    assert report.valid, report.violations
    assert report.objectives.acceptance == acceptance
    assert len(solution.placed()) == placed  # of 17 running and 11 new
    assert report.objectives.migrations == 0
