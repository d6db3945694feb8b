"""The simulator: event order, departures, queueing, batching, counts, the verifier at every step."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from mipopt.heuristics.online import Decision, Policy
from mipopt.instance import InstanceBuilder, Workload
from mipopt.simulation import Request, SimulationError, Trace, simulate
from mipopt.simulation.engine import JOB_COLUMNS
from mipopt.state.cluster import Cluster


class LowestStart(Policy):
    """First GPU in order with a legal start, lowest start (a test policy)."""

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        bits = cluster.legal(w)
        ks = np.flatnonzero(bits)
        if ks.size == 0:
            return None
        b = int(bits[ks[0]])
        return int(ks[0]), (b & -b).bit_length() - 1


class Overlapping(LowestStart):
    """Places the second request on top of the first: the debug check must catch it."""

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return (0, 0) if cluster.placed else super().choose(cluster, w, now)


def one_gpu() -> InstanceBuilder:
    b = InstanceBuilder("one")
    b.add_host("h0", gpus={"g0": "A100-40GB"})
    return b


def trace(requests: list[Request], gpus: int = 1, time_unit: str = "slot") -> Trace:
    b = InstanceBuilder("cluster")
    b.add_host("h0", gpus={f"g{k}": "A100-40GB" for k in range(gpus)})
    return Trace("t", b.build(), tuple(requests), time_unit)


def test_a_full_gpu_rejects_until_a_departure() -> None:
    # 7g fills the GPU from t=0 to t=3; a 1g at t=1 is dropped, one at t=3 fits (departures first)
    t = trace([Request("a", "7g.40gb", 0, 3), Request("b", "1g.5gb", 1, 5), Request("c", "1g.5gb", 3, 4)])
    res = simulate(t, LowestStart(), debug=True)
    s = res.summary
    assert (s["arrived"], s["accepted"], s["acceptance_rate"]) == (3, 2, pytest.approx(2 / 3))
    assert s["acceptance_rate_1g.5gb"] == 0.5 and s["acceptance_rate_7g.40gb"] == 1.0
    # the window ends at the last arrival; a row is the state after that instant's events,
    # and t = 2 changes nothing, so it has no row
    series = res.series.set_index("time")
    assert list(series.index) == [0, 1, 3]
    assert list(series["active_gpus"]) == [1, 1, 1]
    assert list(series["accepted"]) == [1, 1, 2] and list(series["arrived"]) == [1, 2, 3]
    assert series.loc[1, "memory_utilization"] == 1.0 and series.loc[3, "memory_utilization"] == 0.125
    assert res.placed == {"c": ("g0", 0)}
    assert s["horizon"] == 3.0 and s["hardware_area"] == 6.0  # 1 host + 1 GPU for 3 slots
    # to the last departure: c leaves at 4 (b was never placed)
    whole = simulate(t, LowestStart(), horizon=math.inf, debug=True)
    assert list(whole.series["time"]) == [0, 1, 3, 4]
    assert list(whole.series["active_gpus"]) == [1, 1, 1, 0]
    assert whole.placed == {} and whole.summary["hardware_area"] == 8.0
    assert {k: whole.summary[k] for k in ("arrived", "accepted")} == {"arrived": 3, "accepted": 2}
    # a shorter window: c has not arrived yet
    early = simulate(t, LowestStart(), horizon=2.5, debug=True).summary
    assert (early["arrived"], early["accepted"], early["mean_active_gpus"]) == (2, 1, 1.0)


def test_acceptance_is_weighted_and_acceptance_rate_is_a_share() -> None:
    t = trace(
        [
            Request("a", "7g.40gb", 0, 3, weight=7.0),
            Request("b", "1g.5gb", 1, 5),
            Request("c", "1g.5gb", 3, 4),
        ]
    )
    s = simulate(t, LowestStart(), debug=True).summary
    assert (s["accepted"], s["acceptance"], s["acceptance_rate"]) == (2, 8.0, pytest.approx(2 / 3))


def test_quiet_stretches_cost_one_row() -> None:
    t = trace([Request("a", "1g.5gb", 0, 1), Request("b", "1g.5gb", 1_000_000, 1_000_001)])
    res = simulate(t, LowestStart(), horizon=math.inf, debug=True)
    assert list(res.series["time"]) == [0, 1, 1_000_000, 1_000_001]
    assert list(res.series["active_gpus"]) == [1, 0, 1, 0]
    assert res.summary["mean_active_gpus"] == pytest.approx(2 / 1_000_001)


def test_bad_simulation_options_name_the_parameter() -> None:
    t = trace([Request("a", "1g.5gb", 0, 1)])
    for option, value, rule in (
        ("bucket", 0.0, "bucket must be a positive finite number, got 0.0"),
        ("queue_timeout", -1.0, r"queue_timeout must be a positive number \(or math.inf\), got -1.0"),
        ("queue_timeout", math.nan, r"queue_timeout must be a positive number \(or math.inf\), got nan"),
        ("queue_order", "lifo", "queue_order must be one of fifo, newest, got 'lifo'"),
        ("batch_interval", math.inf, "batch_interval must be a positive finite number, got inf"),
        ("horizon", -2.0, r"horizon must be a non-negative number \(or math.inf\), got -2.0"),
        ("horizon", math.nan, r"horizon must be a non-negative number \(or math.inf\), got nan"),
    ):
        with pytest.raises(ValueError, match=rule):
            simulate(t, LowestStart(), **{option: value})


def test_queue_waits_for_a_departure_within_the_timeout() -> None:
    t = trace([Request("a", "7g.40gb", 0, 3), Request("b", "4g.20gb", 1, 4), Request("c", "4g.20gb", 1, 2)])
    late = simulate(t, LowestStart(), queue_timeout=1.5, debug=True).summary
    assert (late["accepted"], late["dropped"], late["abandoned"]) == (1, 2, 2)  # both gave up at 2.5 < 3
    assert (late["horizon"], late["queued_at_end"], late["waited"], late["mean_wait"]) == (2.5, 0, 0, 0.0)
    waited = simulate(t, LowestStart(), queue_timeout=2.0, debug=True)
    # both 4g requests waited from t=1 to t=3; b takes start 0, c (3 slots left) cannot run: 4g starts only at 0
    s = waited.summary
    assert (s["accepted"], s["abandoned"], s["waited"], s["queued_at_end"]) == (2, 1, 1, 0)
    assert (s["mean_wait"], s["p95_wait"]) == (1.0, pytest.approx(1.9))  # waits 0 (a) and 2 (b)
    assert waited.series["queued"].max() == 2
    cut = simulate(t, LowestStart(), queue_timeout=2.0, horizon=2.0).summary
    assert (cut["accepted"], cut["abandoned"], cut["queued_at_end"]) == (1, 0, 2)


def test_batching_decides_at_interval_multiples() -> None:
    t = trace([Request("a", "1g.5gb", 0.2, 1.5), Request("b", "7g.40gb", 1.6, 3)])
    # on arrival, a has left when b comes; batched, a runs from 1.0 to 2.3 and b (decided at 2.0) is rejected
    assert simulate(t, LowestStart(), debug=True).summary["accepted"] == 2
    res = simulate(t, LowestStart(), batch_interval=1.0, debug=True)
    assert (res.summary["accepted"], res.summary["dropped"]) == (1, 1)
    assert (res.summary["waited"], res.summary["mean_wait"]) == (1, pytest.approx(0.8))
    # rows at 0, 1 and the window's end, 2 (the last batch): a runs from 1.0 to 2.3
    assert list(res.series["time"]) == [0, 1, 2]
    assert list(res.series["active_gpus"]) == [0, 1, 1]


def test_debug_mode_names_the_first_broken_state() -> None:
    t = trace([Request("a", "1g.5gb", 0, 5), Request("b", "1g.5gb", 1, 5)])
    with pytest.raises(SimulationError, match=r"after the arrival of b at 1: .*overlap"):
        simulate(t, Overlapping(), debug=True)


def test_hardware_counts_hosts_and_gpus() -> None:
    t = trace([Request(f"w{k}", "7g.40gb", 0, math.inf) for k in range(3)], gpus=4)
    res = simulate(t, LowestStart(), horizon=1.0, debug=True)
    last = res.series.iloc[-1]
    assert (last["active_hosts"], last["active_gpus"], last["hardware"]) == (1, 3, 4.0)
    assert res.summary["hardware_area"] == 4.0  # a window of one time unit


def test_bad_traces_are_rejected() -> None:
    with pytest.raises(
        ValueError, match=r"requests\[1\]\.id: duplicate id 'a' \(of a request or a running workload\)"
    ):
        trace([Request("a", "1g.5gb", 0, 1), Request("a", "1g.5gb", 0, 1)])
    with pytest.raises(ValueError, match=r"requests\[0\]\.departure: 1 is not after arrival 1"):
        trace([Request("a", "1g.5gb", 1, 1)])
    with pytest.raises(ValueError, match=r"requests\[1\]\.arrival: requests must be sorted by arrival"):
        trace([Request("a", "1g.5gb", 2, 3), Request("b", "1g.5gb", 1, 3)])
    with pytest.raises(
        ValueError, match=r"requests\[1\]\.profile: '1g.10gb\+me' is not a profile of A100-40GB"
    ):
        trace([Request("a", "1g.5gb", 0, 1), Request("b", "1g.10gb+me", 0, 1)])


@pytest.mark.parametrize("spec", ["ff", "bf", "mcc", "mecc", "grmu", "grmu:consolidation=5", "ff-agnostic", "rr",
                                  "bf-bi", "wf-bi", "mfi", "lb", "ibm-initial-online", "adapter(mfi)"])  # fmt: skip
def test_every_policy_keeps_every_state_valid(spec: str) -> None:
    from mipopt.heuristics.policies import make_policy
    from mipopt.workloads import fbk_trace

    t = fbk_trace(gpus=6, distribution="skew-big", seed=3, slots=80)
    first = simulate(t, make_policy(spec), seed=1, debug=True)  # raises on the first broken state
    again = simulate(t, make_policy(spec), seed=1)
    assert first.summary["arrived"] == 80
    assert 0 < first.summary["accepted"] <= 80
    assert first.series.equals(again.series)  # same seed, same time series


def test_cli_simulate_writes_series_summary_and_plot(tmp_path, capsys) -> None:  # type: ignore[no-untyped-def]
    import json

    from mipopt.cli import main

    out = tmp_path / "sim"
    args = ["simulate", "--workload", "fbk:gpus=8,slots=60", "--policy", "mfi", "--policy", "ff"]
    assert main([*args, "--runs", "2", "--seed", "4", "--out", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert [(r["policy"], r["run"]) for r in data["summary"]] == [
        ("mfi", 0),
        ("ff", 0),
        ("mfi", 1),
        ("ff", 1),
    ]
    assert all(r["arrived"] == 60 for r in data["summary"])
    assert {p.name for p in out.iterdir()} == {"series.csv", "series.png", "summary.csv", "jobs.csv"}
    jobs = pd.read_csv(out / "jobs.csv")
    assert list(jobs.columns) == [*JOB_COLUMNS, "policy", "run"]
    assert len(jobs) == 4 * 60 and (jobs["wait"].dropna() == 0).all()  # no queue: decided at arrival
    assert jobs["decision"].notna().sum() == sum(r["accepted"] for r in data["summary"])
    assert main(["simulate", "--workload", "fbk:colour=red", "--policy", "mfi"]) == 2
    assert (
        "--workload: workload fbk has no option 'colour' (its options: gpus, distribution, "
        in capsys.readouterr().err
    )
