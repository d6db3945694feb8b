"""MIGBench's semantics in the replay, on small traces checked by hand (H100-80GB, NVIDIA geometry).

Profile choice (the smallest of the subset that fits, by compute then memory then name; a job
waits rather than take a larger one), runtime ``ceil(work / compute percent)``, create and
delete delays (the instance held from decision to finish, wait = start - arrival), backfill,
finishes released before same-time arrivals, newest-first order, the unbounded queue.
"""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from mipopt.heuristics.policies import make_policy
from mipopt.instance import InstanceBuilder
from mipopt.simulation import Request, Trace, simulate
from mipopt.workloads import migbench_trace

TRACE = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "migbench" / "full-control-plane-v3-trace.jsonl"
)
SUBSET = ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")


def h100s(
    requests: list[Request], gpus: int = 1, *, create: float = 0.0, delete: float = 0.0, subset=SUBSET
) -> Trace:
    b = InstanceBuilder("cluster")
    b.add_host("mig-node-001", gpus={f"mig-node-001-gpu{k}": "H100-80GB" for k in range(gpus)})
    return Trace(
        "t", b.build(), tuple(requests), "ms", profiles=subset, create_delay=create, delete_delay=delete
    )


def job(wid: str, arrival: float, memory_gb: float, runtime_on_7g: int, **kw: object) -> Request:
    """A memory-sized job whose work takes ``runtime_on_7g`` ms on the whole GPU (100 %)."""
    return Request(wid, None, arrival, memory_gb=memory_gb, work=100.0 * runtime_on_7g, **kw)  # type: ignore[arg-type]


def replay(t: Trace, policy: str = "ff", **kw: object):  # type: ignore[no-untyped-def]
    res = simulate(t, make_policy(policy), queue_timeout=math.inf, debug=True, **kw)  # type: ignore[arg-type]
    return res, res.jobs.set_index("id")


def test_profile_is_the_smallest_of_the_subset_that_fits() -> None:
    reqs = [
        job("ten", 0, 10, 10),
        job("fifteen", 0, 15, 10),  # 1g.20gb would fit, but it is not in the subset: 2g.20gb
        job("twenty", 0, 20, 10),
        job("forty", 0, 40, 10),
        Request("ten-3g", None, 0, memory_gb=10, min_compute=3, work=1000.0),
    ]
    _, jobs = replay(h100s(reqs, gpus=3))
    assert jobs["profile"].to_dict() == {
        "ten": "1g.10gb",
        "fifteen": "2g.20gb",
        "twenty": "2g.20gb",
        "forty": "3g.40gb",
        "ten-3g": "3g.40gb",
    }
    # the whole catalog: 15 GB takes 1g.20gb (one compute slice, then memory)
    _, every = replay(h100s([job("fifteen", 0, 15, 10)], subset=None))
    assert every.loc["fifteen", "profile"] == "1g.20gb"


def test_a_job_waits_rather_than_take_a_larger_profile() -> None:
    # Seven 1g.10gb fill the GPU's compute: an eighth 10 GB job waits for the first finish,
    # j0's at ceil(10,000 / 14) = 715 ms, and takes 1g.10gb then.
    reqs = [job(f"j{i}", 0, 10, 100 + i) for i in range(8)]
    res, jobs = replay(h100s(reqs))
    assert set(jobs["profile"]) == {"1g.10gb"}
    assert jobs.loc["j7", "decision"] == 715.0 and jobs.loc["j7", "wait"] == 715.0
    assert res.summary["completed"] == 8 and res.summary["queued_at_end"] == 0


@pytest.mark.parametrize(
    ("memory_gb", "profile", "runtime"),
    [(10, "1g.10gb", 715), (20, "2g.20gb", 358), (40, "3g.40gb", 239), (80, "7g.80gb", 100)],
)
def test_runtime_is_work_over_the_compute_percent_of_the_profile(
    memory_gb: float, profile: str, runtime: int
) -> None:
    # work 10,000 compute-core ms: ceil(10000 / 14) = 715, / 28 -> 358, / 42 -> 239, / 100 -> 100
    res, jobs = replay(h100s([job("j", 0, memory_gb, 100)]))
    assert jobs.loc["j", "profile"] == profile
    assert jobs.loc["j", "finish"] - jobs.loc["j", "start"] == runtime
    assert res.summary["makespan"] == runtime


def test_create_and_delete_hold_the_instance_from_decision_to_finish() -> None:
    # a (7g, 100 ms of work) decided at 0 starts at 250 and is released at 250 + 100 + 100 = 450;
    # b (1g) arriving at 10 waits for it: decided at 450, starts at 700, wait 690
    reqs = [job("a", 0, 80, 100), job("b", 10, 10, 14)]
    res, jobs = replay(h100s(reqs, create=250, delete=100))
    a, b = jobs.loc["a"], jobs.loc["b"]
    assert (a["decision"], a["start"], a["finish"], a["wait"]) == (0, 250, 450, 250)
    assert (b["decision"], b["start"], b["finish"], b["wait"]) == (450, 700, 700 + 100 + 100, 690)
    # mipopt's ff takes the start NVIDIA prefers (the last free one for a 1g); ff:start=lowest takes 0
    assert (b["host"], b["gpu"], b["start_slot"]) == ("mig-node-001", "mig-node-001-gpu0", 6)
    assert res.summary["makespan"] == 900 and res.summary["mean_wait"] == 470
    assert (res.summary["creates"], res.summary["deletes"]) == (2, 2)


def test_backfill_places_a_later_job_that_fits() -> None:
    # one 1g runs to ceil(100,000 / 14) = 7143; big (80 GB) waits from 1; small (10 GB) at 2
    # goes past it at once
    reqs = [job("run", 0, 10, 1000), job("big", 1, 80, 10), job("small", 2, 10, 10)]
    _, jobs = replay(h100s(reqs))
    assert jobs.loc["small", "decision"] == 2 and jobs.loc["big", "decision"] == 7143


def test_finishes_at_a_time_are_released_before_its_arrivals() -> None:
    # a holds the whole GPU until 100; b asks for the whole GPU at 100 exactly: placed at 100
    _, jobs = replay(h100s([job("a", 0, 80, 100), job("b", 100, 80, 50)]))
    assert jobs.loc["b", "decision"] == 100 and jobs.loc["b", "wait"] == 0


@pytest.mark.parametrize(("order", "first"), [("fifo", "x"), ("newest", "y")])
def test_queue_order_decides_who_goes_first(order: str, first: str) -> None:
    # the GPU is full until 100; x (1) and y (2) both want it whole: one goes at 100, the other at 150
    reqs = [job("a", 0, 80, 100), job("x", 1, 80, 50), job("y", 2, 80, 50)]
    _, jobs = replay(h100s(reqs), queue_order=order)
    second = "y" if first == "x" else "x"
    assert (jobs.loc[first, "decision"], jobs.loc[second, "decision"]) == (100, 150)


def test_an_unbounded_queue_places_everything_and_keeps_the_window() -> None:
    reqs = [job("a", 0, 80, 100), job("b", 10, 80, 100), job("c", 20, 80, 100)]
    res, jobs = replay(h100s(reqs))
    s = res.summary
    assert (s["accepted"], s["abandoned"], s["queued_at_end"], s["dropped"]) == (3, 0, 0, 0)
    assert s["window_end"] == 20 and s["horizon"] == 300 and s["makespan"] == 300
    assert list(jobs["decision"]) == [0, 100, 200]
    assert (s["waited"], s["mean_wait"], s["p50_wait"]) == (2, 90.0, 90.0)  # waits 0, 90, 180
    # over the window [0, 20] the GPU is full and someone waits from 10 on
    assert s["gpc_utilization"] == 1.0 and s["backlogged_time_fraction"] == 0.5


def test_the_published_trace_cut_replays_with_first_fit() -> None:
    trace = migbench_trace(TRACE, jobs=60)
    res = simulate(trace, make_policy("ff"), queue_timeout=math.inf)
    s = res.summary
    assert (s["arrived"], s["accepted"], s["completed"], s["queued_at_end"]) == (60, 60, 60, 0)
    jobs = res.jobs
    assert (jobs["start"] - jobs["decision"] == 250).all() and (jobs["wait"] >= 250).all()
    assert set(jobs["profile"]) <= set(SUBSET)
    assert s["window_start"] == 30_000 and s["window_end"] == trace.requests[-1].arrival


def test_the_published_trace_replays_every_job_with_first_fit() -> None:
    trace = migbench_trace(TRACE)
    res = simulate(trace, make_policy("ff"), queue_timeout=math.inf)
    s = res.summary
    assert (s["arrived"], s["completed"], s["queued_at_end"]) == (500, 500, 0)
    # about half a second: alike requests that found no place are not asked again within an instant
    floor = max(r.arrival + 250 + math.ceil(r.work / 100) + 100 for r in trace.requests)  # type: ignore[operator]
    assert s["makespan"] >= floor
