"""Bounds on what placement alone can buy (mipopt.simulation.bounds), on hand-checked traces."""

from __future__ import annotations

import numpy as np
import pytest
from factories import MODELS

from mipopt.catalog import GpuModel, get_model
from mipopt.instance import InstanceBuilder
from mipopt.instance.trace import Request, Trace
from mipopt.simulation.bounds import any_start_model, any_start_trace, capacity_replay, makespan_floor
from mipopt.simulation.metrics import state_metrics

SUBSET = ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")


def one_gpu_trace(*jobs: tuple[str, float, float, float]) -> Trace:
    """One H100-80GB, MIGBench's subset and costs; jobs (id, arrival, memory GB, work)."""
    b = InstanceBuilder("one")
    b.add_host("mig-node-001", gpus={"mig-node-001-gpu0": "H100-80GB"})
    requests = tuple(Request(i, None, a, memory_gb=m, work=w) for i, a, m, w in jobs)
    return Trace(
        "hand", b.build(), requests, time_unit="ms", profiles=SUBSET, create_delay=250.0, delete_delay=100.0
    )


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.name)
def test_any_start_keeps_nvidia_starts_and_the_compute_bound(model: GpuModel) -> None:
    free = any_start_model(model)
    for real, relaxed in zip(model.profiles, free.profiles, strict=True):
        assert set(real.starts) <= set(relaxed.starts), real.name
        assert all(s + relaxed.memory_slots <= model.slots for s in relaxed.starts)
    # the largest compute any layout of the relaxed model holds is the GPU's
    assert state_metrics(free).max_pack[0] == model.compute_slices


def test_any_start_on_the_h100():
    free = any_start_model(get_model("H100-80GB"))
    assert free.profile("1g.10gb").starts == (0, 1, 2, 3, 4, 5, 6)  # slot 7 only with slot 6
    assert free.profile("1g.20gb").starts == (0, 1, 2, 3, 4, 5, 6)
    assert free.profile("4g.40gb").starts == (0, 1, 2, 3)
    assert free.profile("7g.80gb").starts == (0,)
    # 3g at 1 beside 1g at 0 and 1g at 5: NVIDIA allows neither start 1 nor this layout
    mask = 0b1 | free.profile("3g.40gb").slot_mask(1) | 0b100000
    assert state_metrics(free, ("1g.10gb",)).max_pack[mask] == 1  # slot 6: one more 1g


def test_any_start_trace_swaps_every_model():
    trace = one_gpu_trace(("a", 0.0, 10, 14.0))
    relaxed = any_start_trace(trace)
    assert [g.model.name for g in relaxed.cluster.gpus] == ["H100-80GB-any-start"]
    assert relaxed.requests == trace.requests and relaxed.create_delay == 250.0
    assert relaxed.name == "hand (any start)"


def test_capacity_replay_fifo_by_hand():
    # a, b: 3g (4 memory slots each) for 1,000 ms; c: 1g for 500 ms waits for memory
    trace = one_gpu_trace(("a", 0.0, 40, 42_000.0), ("b", 0.0, 40, 42_000.0), ("c", 0.0, 10, 7_000.0))
    got = capacity_replay(trace, window=(0.0, 2200.0))
    assert got["waits"].tolist() == [250.0, 250.0, 1600.0]  # c decided when a ends at 1,350
    assert got["makespan"] == 2200.0 and got["completed"] == 3
    assert got["mean_wait"] == pytest.approx(700.0)
    assert got["p50_wait"] == 250.0 and got["p99_wait"] == pytest.approx(np.percentile([250, 250, 1600], 99))
    assert got["throughput_per_hour"] == pytest.approx(3 * 3_600_000 / 2200)
    # compute: 6 of 7 slices to 1,350, 1 from 1,350 to 2,200; memory: 8 of 8, then 1
    assert got["gpc_utilization"] == pytest.approx((6 / 7 * 1350 + 1 / 7 * 850) / 2200)
    assert got["memory_utilization"] == pytest.approx((1350 + 1 / 8 * 850) / 2200)


def test_capacity_replay_newest_first_by_hand():
    trace = one_gpu_trace(("a", 0.0, 40, 42_000.0), ("b", 0.0, 40, 42_000.0), ("c", 0.0, 10, 7_000.0))
    got = capacity_replay(trace, "newest")
    # c then b go first; a waits for c's end at 850 (memory 4 + 1 of 8 held)
    assert got["waits"].tolist() == [1100.0, 250.0, 250.0]
    assert got["makespan"] == 2200.0
    with pytest.raises(ValueError, match="queue_order must be one of fifo, newest"):
        capacity_replay(trace, "lifo")


def test_capacity_replay_window_defaults_to_measure_from_and_last_arrival():
    trace = one_gpu_trace(("a", 0.0, 80, 100_000.0), ("b", 500.0, 10, 1_400.0))
    got = capacity_replay(trace)  # window [0, 500]: the 7g holds everything
    assert got["gpc_utilization"] == 1.0 and got["memory_utilization"] == 1.0
    assert got["waits"].tolist() == [250.0, 1600.0 - 500.0]  # the 7g runs 1,000 ms, ends at 1,350


def test_makespan_floor_by_hand():
    trace = one_gpu_trace(("a", 0.0, 40, 42_000.0), ("b", 0.0, 40, 42_000.0), ("c", 0.0, 10, 7_000.0))
    floor = makespan_floor(trace)
    assert floor["latest_job"] == 1350.0
    assert floor["compute_area"] == pytest.approx((3 * 1350 * 2 + 850) / 7)
    assert floor["memory_area"] == pytest.approx((4 * 1350 * 2 + 850) / 8)
    assert floor["floor"] == floor["memory_area"]
    # every replay ends at or after the floor
    assert capacity_replay(trace)["makespan"] >= floor["floor"]


def test_an_empty_trace():
    assert makespan_floor(one_gpu_trace())["floor"] == 0.0
    got = capacity_replay(one_gpu_trace())
    assert got["completed"] == 0 and got["makespan"] == 0.0 and got["mean_wait"] == 0.0
