"""GRMU's consolidation (Alg. 5) during a replay: the simulator's ticks run it, the verifier checks every state."""

from __future__ import annotations

import math

import pytest

from mipopt.heuristics.policies import make_policy
from mipopt.instance import InstanceBuilder
from mipopt.simulation import Request, Trace, on_grid, simulate


def half_full_trace(split_hosts: bool) -> Trace:
    """Three A100-40GB GPUs g0-g2, on one host or with g2 on a second one.

    Heavy capacity 30 % of 3 GPUs rounds to 1: g0 is the heavy basket, g1 the light one.
    ``a`` (4g) goes to g1 at 0, ``b`` (4g) cannot share g1 (4g starts only at 0) and takes
    g2 from the pool, ``c`` (3g) fills g1 at 4. When ``a`` leaves at 0.5, g1 holds one 3g
    on its upper half and g2 one 4g on its lower half: at the tick at 1, Alg. 5 moves the
    4g of the higher-indexed g2 to g1 at 0, g1 is full and g2 goes back to the pool, where
    ``d`` finds it at 1.5.
    """
    b = InstanceBuilder("half-full")
    if split_hosts:
        b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"})
        b.add_host("h1", {"g2": "A100-40GB"})
    else:
        b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB", "g2": "A100-40GB"})
    requests = (
        Request("a", "4g.20gb", 0.0, 0.5),
        Request("b", "4g.20gb", 0.1, 3.0),
        Request("c", "3g.20gb", 0.2, 4.0),
        Request("d", "4g.20gb", 1.5, 5.0),
    )
    return Trace("half-full", b.build(), requests, time_unit="h")


@pytest.mark.parametrize(("split_hosts", "kind"), [(False, "moves_inter_gpu"), (True, "moves_inter_host")])
def test_consolidation_runs_at_a_tick_of_the_replay(split_hosts: bool, kind: str) -> None:
    trace = half_full_trace(split_hosts)
    res = simulate(trace, make_policy("grmu:consolidation=1"), bucket=0.5, horizon=math.inf, debug=True)
    other = "moves_inter_host" if kind == "moves_inter_gpu" else "moves_inter_gpu"
    # a row is the state after its instant's events: the tick at 1 shows from 1 on
    at = on_grid(res.series, [0.5, 1.0, 1.5, 2.0, 5.0])
    assert list(at[kind]) == [0, 1, 1, 1, 1]
    assert res.series[other].sum() == 0 and res.series["moves_intra_gpu"].sum() == 0
    # between the tick and d's arrival only g1 is on (b and c); before the tick g1 and g2
    assert list(at["active_gpus"]) == [2, 1, 2, 2, 0]
    s = res.summary
    assert (s["accepted"], s["migrations"], s[kind]) == (4, 1, 1)
    assert s["migrations_per_accepted"] == pytest.approx(0.25)
    assert res.placed == {}  # b left from g1, where it was moved


def test_without_consolidation_the_half_full_gpus_stay() -> None:
    res = simulate(half_full_trace(False), make_policy("grmu"), bucket=0.5, horizon=math.inf, debug=True)
    assert res.summary["migrations"] == 0 and res.summary["accepted"] == 4
    assert list(on_grid(res.series, [1.0, 1.5, 2.0])["active_gpus"]) == [2, 2, 2]
