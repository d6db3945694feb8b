"""``reopt``: exact re-optimization over a base policy, replayed by the simulator with verified states."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mipopt.errors import InstanceError
from mipopt.heuristics.policies import make_policy
from mipopt.heuristics.reopt import STAT_KEYS, Reopt, neighbourhood, state_instance
from mipopt.instance import InstanceBuilder
from mipopt.simulation import Request, Trace, simulate
from mipopt.state import Cluster
from mipopt.workloads import fbk_trace


def story(pinned: bool = False, both: bool = False) -> Trace:
    """Two A100-40GB GPUs, one per host, each running a 3g.20gb on slots 4-7 and a 1g.5gb on
    slot 0 (``x`` on g0, ``y`` on g1).

    ``r`` (4g.20gb, only at start 0) fits on neither GPU: slot 0 is taken on both, and no
    start change on a GPU frees it. Moving one of the 1g.5gb to a free slot (1, 2 or 3) of
    the other GPU frees slots 0-3 of its own, where ``r`` goes.
    """
    b = InstanceBuilder("story")
    b.add_host("h0", {"g0": "A100-40GB"})
    b.add_host("h1", {"g1": "A100-40GB"})
    b.add_workload("big", "3g.20gb", placement=("g0", 4))
    b.add_workload("big2", "3g.20gb", placement=("g1", 4))
    b.add_workload("x", "1g.5gb", placement=("g0", 0), pinned=both)
    b.add_workload("y", "1g.5gb", placement=("g1", 0), pinned=pinned)
    return Trace("story", b.build(), (Request("r", "4g.20gb", 1.0, 5.0),), time_unit="h")


def test_a_rejection_is_placed_by_moving_a_running_workload() -> None:
    policy = make_policy("reopt:base=mfi,time_limit=10")
    assert isinstance(policy, Reopt)
    res = simulate(story(), policy, horizon=math.inf, debug=True)
    s = res.summary
    assert (s["arrived"], s["accepted"], s["acceptance_rate"]) == (1, 1, 1.0)
    # exactly one relocation: a 1g.5gb to a free slot of the other GPU (another host), then r
    moves = (s["migrations"], s["moves_inter_host"], s["moves_inter_gpu"], s["moves_intra_gpu"])
    assert moves == (1, 1, 0, 0)
    assert (s["plans"], s["parking_moves"], s["disruptive_moves"]) == (1, 0, 0)
    st = policy.stats
    assert (st["reopts"], st["reopts_rejection"], st["reopts_applied"], st["placed_by_reopt"]) == (1, 1, 1, 1)
    assert (st["moves"], st["parks"], st["drains"], st["gb_moved"]) == (1, 0, 0, 5.0)
    assert 0 < st["solve_s"] == st["solve_max_s"] <= 10 + 5
    assert (
        st["budget_exhausted"] == 0 and st["unproven"] == 0
    )  # proven: the result is the same on any machine
    # the simulator's summary carries the policy's counters
    assert (s["policy_reopts"], s["policy_moves"], s["policy_gb_moved"]) == (1, 1, 5.0)


def test_the_final_placement_of_the_story() -> None:
    trace = story()
    policy = make_policy("reopt:time_limit=10")
    cluster = Cluster(trace.instance())
    policy.start(cluster, np.random.default_rng(0))
    r = trace.instance().workload("r")
    assert policy.arrive(cluster, r, 1.0)
    assert cluster.placed["big"] == ("g0", 4) and cluster.placed["big2"] == ("g1", 4)
    [move] = cluster.log
    assert move.workload in ("x", "y") and move.source == (int(move.workload == "y"), 0)
    gpu = "g0" if move.workload == "x" else "g1"  # the GPU the mover left
    other = "g1" if gpu == "g0" else "g0"
    assert cluster.placed["r"] == (gpu, 0)
    assert cluster.placed[move.workload][0] == other and cluster.placed[move.workload][1] in (1, 2, 3)
    assert cluster.placed["y" if move.workload == "x" else "x"] == (other, 0)


def test_a_pinned_workload_stays_and_the_other_one_moves() -> None:
    # y pinned: only x can move, to g1 slots 1-3, which frees g0
    policy = make_policy("reopt:time_limit=10")
    res = simulate(story(pinned=True), policy, debug=True)
    assert res.summary["accepted"] == 1 and res.summary["migrations"] == 1
    assert res.placed["y"] == ("g1", 0) and res.placed["x"][0] == "g1" and res.placed["r"] == ("g0", 0)


def test_without_on_reject_nothing_is_solved() -> None:
    policy = make_policy("reopt:on_reject=false")
    res = simulate(story(), policy, horizon=math.inf, debug=True)
    assert res.summary["accepted"] == 0 and policy.stats["reopts"] == 0


def test_a_move_budget_of_zero_keeps_everything_in_place() -> None:
    policy = make_policy("reopt:max_moves=0,time_limit=10")
    res = simulate(story(), policy, horizon=math.inf, debug=True)
    assert res.summary["accepted"] == 0 and res.summary["migrations"] == 0
    assert policy.stats["reopts"] == 1 and policy.stats["moves"] == 0


def test_a_spent_budget_stops_the_solves() -> None:
    # budget_s is tiny: the first solve spends it, then the policy is its base alone and says so
    trace = fbk_trace(gpus=6, seed=3, distribution="skew-big", lifetimes="saturate", demand=200)
    policy = make_policy("reopt:budget_s=1e-9,time_limit=1")  # any solve spends it
    res = simulate(trace, policy, debug=True)
    st = policy.stats
    assert st["reopts"] == 1
    assert st["budget_exhausted"] == 1 and st["budget_exhausted_at"] is not None
    assert res.summary["dropped"] > 1  # later rejections were not re-optimized


def test_the_interval_triggers_solves_that_lower_hardware() -> None:
    """g0 and g1 each hold one 1g.5gb: a tick's solve puts both on one GPU (one move), g1 turns off."""
    b = InstanceBuilder("two-halves")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_workload("a", "1g.5gb", placement=("g0", 0))
    b.add_workload("b", "1g.5gb", placement=("g1", 0))
    trace = Trace("two-halves", b.build(), (Request("r", "1g.5gb", 3.0, 4.0),), time_unit="h")
    policy = make_policy("reopt:interval=2,on_reject=false,time_limit=10")
    assert policy.tick == 2.0
    res = simulate(trace, policy, horizon=math.inf, debug=True)
    assert policy.stats["reopts_interval"] == 1 and policy.stats["reopts_applied"] == 1
    assert res.summary["moves_inter_gpu"] == 1 and res.summary["migrations"] == 1
    assert len({gpu for gpu, _ in res.placed.values()}) == 1


def test_fragmentation_threshold_triggers_on_crossing() -> None:
    trace = fbk_trace(gpus=4, seed=2, distribution="skew-small")
    policy = make_policy("reopt:fragmentation=0.0,on_reject=false,time_limit=1")
    simulate(trace, policy, debug=True)
    # the first arrival crosses 0 upwards; afterwards it stays above unless a solve brings it to 0
    assert policy.stats["reopts_fragmentation"] >= 1
    assert policy.stats["reopts"] == policy.stats["reopts_fragmentation"]


def test_both_pinned_the_request_is_rejected_and_nothing_moves() -> None:
    policy = make_policy("reopt:time_limit=10")
    res = simulate(story(pinned=True, both=True), policy, horizon=math.inf, debug=True)
    assert res.summary["accepted"] == 0 and res.summary["migrations"] == 0
    assert policy.stats["reopts"] == 1 and policy.stats["reopts_applied"] == 0


@pytest.mark.parametrize(
    ("spec", "option"),
    [
        ("reopt:interval=-1", "interval"),
        ("reopt:time_limit=0", "time_limit"),
        ("reopt:max_moves=1.5", "max_moves"),
        ("reopt:budget_s=abc", "budget_s"),
        ("reopt:fragmentation=-0.1", "fragmentation"),
        ("reopt:drains=maybe", "drains"),
        ("reopt:gpus=0", "gpus"),
        ("reopt:solver=glpk", "solver"),
        ("reopt:speed=3", "speed"),
        ("reopt:base=nope", "nope"),
        ("reopt:base=reopt", "base"),
        ("reopt:base=grmu:consolidation=2,interval=4", "interval"),
    ],
)
def test_bad_options_are_one_line_errors_naming_the_option(spec: str, option: str) -> None:
    with pytest.raises(InstanceError) as err:
        make_policy(spec)
    text = str(err.value)
    assert "\n" not in text and option in text


def test_options_are_kept() -> None:
    p = make_policy("reopt:base=ff,interval=24,time_limit=2,max_moves=4,drains=true,gpus=none,budget_s=60")
    assert isinstance(p, Reopt)
    assert (p.base.name, p.interval, p.tick, p.time_limit, p.max_moves, p.drains, p.gpus, p.budget_s) == (
        "ff",
        24.0,
        24.0,
        2.0,
        4,
        True,
        None,
        60.0,
    )
    assert set(p.stats) == set(STAT_KEYS)


def test_state_instance_and_neighbourhood() -> None:
    trace = story()
    cluster = Cluster(trace.instance())
    r = trace.instance().workload("r")
    inst = state_instance(cluster, [r])
    assert [w.id for w in inst.running] == ["big", "x", "big2", "y"] and [w.id for w in inst.new] == ["r"]
    assert all(w.weight == 2.0 and w.migration_weight == 0.5 for w in inst.running)
    # one GPU: both have 3 free slots, the tie goes to g0; its host alone
    assert neighbourhood(cluster, [r], 1) == [0]
    assert neighbourhood(cluster, [r], 2) is None
    sub = state_instance(cluster, [r], [1])
    assert [g.id for g in sub.gpus] == ["g1"] and [h.id for h in sub.hosts] == ["h1"]
    assert [w.id for w in sub.running] == ["big2", "y"]


@pytest.mark.parametrize("distribution", ["uniform", "skew-big"])
def test_fbk_streams_verified_after_every_event(distribution: str) -> None:
    trace = fbk_trace(gpus=6, seed=1, distribution=distribution, lifetimes="saturate", demand=200)
    policy = make_policy("reopt:interval=10,time_limit=1")
    res = simulate(trace, policy, debug=True)
    base = simulate(trace, make_policy("mfi"), debug=True)
    assert res.summary["arrived"] == base.summary["arrived"]
    assert policy.stats["reopts"] >= 1
    assert policy.stats["moves"] == res.summary["migrations"]
    assert policy.stats["parks"] == res.summary["parking_moves"]


def test_alibaba_like_trace_with_hosts_cpu_and_ram_verified() -> None:
    """Hosts of 2 GPUs with cpu and ram, requests of several sizes asking for cpu and ram."""
    rng = np.random.default_rng(7)
    b = InstanceBuilder("alibaba-like")
    for j in range(4):
        b.add_host(f"h{j}", {f"h{j}-g0": "A100-40GB", f"h{j}-g1": "A100-40GB"}, cpu=16.0, ram_gb=64.0)
    profiles = ["1g.5gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    requests = []
    t = 0.0
    for i in range(60):
        t += float(rng.exponential(0.3))
        requests.append(
            Request(
                f"r{i}",
                profiles[int(rng.choice(5, p=[0.4, 0.25, 0.15, 0.1, 0.1]))],
                t,
                t + float(rng.exponential(4.0)),
                cpu=float(rng.integers(1, 6)),
                ram_gb=float(rng.integers(2, 20)),
            )
        )
    trace = Trace("alibaba-like", b.build(), tuple(requests), time_unit="h")
    policy = make_policy("reopt:interval=3,time_limit=1,gpus=4")
    res = simulate(trace, policy, debug=True)
    assert res.summary["arrived"] == 60
    assert policy.stats["reopts"] >= 1


def test_same_seed_same_result() -> None:
    trace = fbk_trace(gpus=5, seed=4, distribution="skew-big", lifetimes="saturate", demand=200)
    runs = []
    for _ in range(2):
        policy = make_policy("reopt:interval=8,time_limit=5")
        res = simulate(trace, policy, seed=3)
        stats = {k: v for k, v in policy.stats.items() if k not in ("solve_s", "solve_max_s")}
        timings = ("runtime_s", "policy_solve_s", "policy_solve_max_s")
        runs.append((res.placed, {k: v for k, v in res.summary.items() if k not in timings}, stats))
    assert runs[0] == runs[1]
