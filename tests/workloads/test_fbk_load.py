"""The load readings of ``fbk_trace`` (issue 15): lifetimes, stream length, requests per slot, measure."""

from __future__ import annotations

import math

import numpy as np
import pytest

from mipopt.errors import InstanceError
from mipopt.heuristics.policies import make_policy
from mipopt.simulation import simulate
from mipopt.simulation.runs import make_trace
from mipopt.workloads import fbk_trace

MEMORY = {"7g.80gb": 8, "4g.40gb": 4, "3g.40gb": 4, "2g.20gb": 2, "1g.20gb": 2, "1g.10gb": 1}
COMPUTE = {"7g.80gb": 7, "4g.40gb": 4, "3g.40gb": 3, "2g.20gb": 2, "1g.20gb": 1, "1g.10gb": 1}


def _cumulative(trace, sizes=MEMORY):  # type: ignore[no-untyped-def]
    return np.cumsum([sizes[r.profile] for r in trace.requests])


def test_default_has_no_departures_and_stops_at_100_percent_demand() -> None:
    trace = fbk_trace(gpus=20, distribution="bimodal", seed=4)
    assert trace.meta["lifetimes"] == "none" and trace.meta["T"] is None
    assert all(math.isinf(r.departure) for r in trace.requests)
    assert [r.arrival for r in trace.requests] == list(range(len(trace.requests)))
    total = _cumulative(trace)
    assert total[-1] >= 160 > total[-2]  # 20 GPUs x 8 memory slots
    assert len(trace.requests) == trace.meta["T_demand"]


def test_demand_reading_is_the_old_one_and_saturate_doubles_it() -> None:
    demand = fbk_trace(gpus=20, seed=4, lifetimes="demand")
    saturate = fbk_trace(gpus=20, seed=4, lifetimes="saturate", demand=200)
    # the same profiles whatever the lifetimes
    assert [r.profile for r in demand.requests] == [
        r.profile for r in saturate.requests[: len(demand.requests)]
    ]
    t_demand, t_saturate = demand.meta["T"], saturate.meta["T"]
    assert t_demand == demand.meta["T_demand"] == saturate.meta["T_demand"] == len(demand.requests)
    assert t_saturate == saturate.meta["T_saturate"] == demand.meta["T_saturate"]
    # T_saturate + 1 requests first reach 200 % demand: expected occupancy (T + 1) / 2 requests = capacity
    total = _cumulative(saturate)
    assert total[t_saturate] >= 320 > total[t_saturate - 1]
    assert len(saturate.requests) == t_saturate + 1
    # uniform: mean size 3.5 memory slots, so T ~ 2 * 160 / 3.5 - 1 = 90.4
    assert t_saturate == pytest.approx(2 * 160 / 3.5 - 1, rel=0.1)
    for trace, t in ((demand, t_demand), (saturate, t_saturate)):
        lifetimes = [r.departure - r.arrival for r in trace.requests]
        assert all(float(x).is_integer() and 1 <= x <= t for x in lifetimes)


def test_integer_lifetimes_and_scale() -> None:
    base = fbk_trace(gpus=10, seed=1, lifetimes="demand")
    scaled = fbk_trace(gpus=10, seed=1, lifetimes="demand", lifetime_scale=4)
    assert scaled.meta["T"] == round(4 * base.meta["T"])
    fixed = fbk_trace(gpus=10, seed=1, lifetimes=3, slots=500)
    assert fixed.meta["T"] == 3
    lifetimes = {r.departure - r.arrival for r in fixed.requests}
    assert lifetimes == {1.0, 2.0, 3.0}


def test_per_slot_and_compute_measure() -> None:
    trace = fbk_trace(gpus=10, seed=2, per_slot=3, lifetimes="demand")
    n = len(trace.requests)
    assert [r.arrival for r in trace.requests] == [float(i // 3) for i in range(n)]
    assert trace.meta["T_demand"] == math.ceil(n / 3) == trace.meta["T"]
    compute = fbk_trace(gpus=10, seed=2, measure="compute")
    assert compute.meta["capacity_slots"] == 70
    total = _cumulative(compute, COMPUTE)
    assert compute.meta["demand"] == pytest.approx(list(100 * total / 70))
    assert total[-1] >= 70 > total[-2]


def test_longer_stream_by_demand() -> None:
    trace = fbk_trace(gpus=10, seed=3, demand=250, lifetimes="saturate")
    assert trace.meta["demand"][-2] < 250 <= trace.meta["demand"][-1]
    assert trace.meta["demand_limit"] == 250.0


def test_seeds_reproducible() -> None:
    for options in ({}, {"lifetimes": "saturate"}, {"lifetimes": 7, "per_slot": 2, "measure": "compute"}):
        a = fbk_trace(gpus=12, distribution="skew-small", seed=9, **options)  # type: ignore[arg-type]
        assert a == fbk_trace(gpus=12, distribution="skew-small", seed=9, **options)  # type: ignore[arg-type]
        assert a.requests != fbk_trace(gpus=12, distribution="skew-small", seed=10, **options).requests  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"lifetimes": "forever"}, "lifetimes must be one of 'none', 'saturate', 'demand' or an integer T of at least 1, got 'forever'"),
        ({"lifetimes": 0}, "lifetimes must be one of .* got 0"),
        ({"lifetimes": True}, "lifetimes must be one of .* got True"),
        ({"lifetime_scale": 0}, r"lifetime_scale must be a number in \(0, 1000\], got 0"),
        ({"lifetime_scale": "2"}, r"lifetime_scale must be a number in \(0, 1000\], got '2'"),
        ({"demand": 0}, r"demand must be a number in \(0, 1000\] \(percent\), got 0"),
        ({"demand": 1001}, r"demand must be a number in \(0, 1000\] \(percent\), got 1001"),
        ({"per_slot": 0}, "per_slot must be an integer of at least 1, got 0"),
        ({"per_slot": 1.5}, "per_slot must be an integer of at least 1, got 1.5"),
        ({"measure": "disk"}, "measure must be one of 'memory', 'compute', got 'disk'"),
    ],
)  # fmt: skip
def test_validation_names_the_parameter(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=f"^{message}$"):
        fbk_trace(gpus=4, seed=0, **options)  # type: ignore[arg-type]


def test_workload_spec_passes_the_options_and_names_bad_ones() -> None:
    trace = make_trace("fbk:gpus=5,lifetimes=demand,lifetime_scale=2,per_slot=2", seed=1)
    assert trace.meta["T"] == round(2 * trace.meta["T_demand"])
    with pytest.raises(
        InstanceError, match="workload: workload 'fbk:lifetimes=forever': lifetimes must be one of"
    ):
        make_trace("fbk:lifetimes=forever", seed=1)


def test_default_load_makes_baselines_reject_where_the_literal_reading_does_not() -> None:
    # 10 GPUs, uniform, seed 2: 23 requests up to 100 % demand; every state verified.
    accepted = {}
    for lifetimes in ("none", "demand"):
        trace = fbk_trace(gpus=10, distribution="uniform", seed=2, lifetimes=lifetimes)  # type: ignore[arg-type]
        assert len(trace.requests) == 23
        for spec in ("ff-agnostic", "rr", "bf-bi", "wf-bi", "mfi", "bf-bi:by-amount=true"):
            result = simulate(trace, make_policy(spec), seed=2, debug=True)
            assert result.summary["arrived"] == 23
            accepted[lifetimes, spec] = result.summary["accepted"]
    assert {s: accepted["none", s] for s in ("ff-agnostic", "rr", "bf-bi", "wf-bi", "mfi", "bf-bi:by-amount=true")} == {
        "ff-agnostic": 15, "rr": 16, "bf-bi": 22, "wf-bi": 20, "mfi": 22, "bf-bi:by-amount=true": 19,
    }  # fmt: skip
    # the literal reading: MFI and BF-BI accept everything, the cluster is never full
    assert accepted["demand", "mfi"] == accepted["demand", "bf-bi"] == 23
    assert accepted["demand", "bf-bi:by-amount=true"] == 20
