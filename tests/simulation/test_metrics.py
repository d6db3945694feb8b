"""MIGBench's metrics (mipopt.simulation.metrics) against hand-checked GPUs and brute force."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from factories import MODELS
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.catalog import GpuModel, get_model
from mipopt.simulation import metrics as m

H100 = get_model("H100-80GB")
SUBSET = ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")


def at(model: GpuModel, *placed: tuple[str, int]) -> int:
    """The occupancy mask of the instances ``(profile, start)``."""
    mask = 0
    for name, start in placed:
        block = model.profile(name).slot_mask(start)
        assert not mask & block
        mask |= block
    return mask


# --- brute force, written from the definitions without the module's helpers


def free_flags(model: GpuModel, mask: int) -> list[bool]:
    return [all(not mask >> s & 1 for s in owned) for owned in model.gpu_slices]


def brute_fragmentation(model: GpuModel, mask: int) -> float:
    flags = free_flags(model, mask)
    free = sum(flags)
    runs = [len(list(group)) for is_free, group in itertools.groupby(flags) if is_free]
    return (free - max(runs)) / free if free else 0.0


def brute_pack(model: GpuModel, mask: int, names: tuple[str, ...] | None) -> int:
    """Every set of pairwise disjoint placements on the free slots, the largest compute."""
    profiles = [p for p in model.profiles if (p.base if names is None else p.name in names)]
    spots = [(p.compute, p.slot_mask(s)) for p in profiles for s in p.starts if not mask & p.slot_mask(s)]
    best = 0
    for size in range(len(spots) + 1):
        found = False
        for chosen in itertools.combinations(spots, size):
            used = 0
            for _, block in chosen:
                if used & block:
                    break
                used |= block
            else:
                found = True
                best = max(best, sum(c for c, _ in chosen))
        if not found:  # no disjoint set of this size, so none larger
            break
    return best


def reachable(model: GpuModel) -> set[int]:
    """The states the model's placements can build from an empty GPU."""
    blocks = {p.slot_mask(s) for p in model.profiles for s in p.starts}
    seen, todo = {0}, [0]
    while todo:
        state = todo.pop()
        for b in blocks:
            if not state & b and state | b not in seen:
                seen.add(state | b)
                todo.append(state | b)
    return seen


# --- hand-made GPUs


def test_empty_and_full_gpu():
    assert (m.free_slices(H100, 0), m.longest_free_run(H100, 0), m.max_pack(H100, 0)) == (7, 7, 7)
    assert m.physical_fragmentation(H100, 0) == m.stranded_capacity(H100, 0) == 0.0
    full = at(H100, ("7g.80gb", 0))
    assert (m.free_slices(H100, full), m.max_pack(H100, full)) == (0, 0)
    assert m.physical_fragmentation(H100, full) == m.stranded_capacity(H100, full) == 0.0


def test_a_3g_at_start_0_takes_four_slices():
    """Memory slots 0-3 own compute slices 0-3: slice 3 is spanned, not free (MIGBench counts it free)."""
    mask = at(H100, ("3g.40gb", 0))
    assert (m.free_slices(H100, mask), m.longest_free_run(H100, mask), m.max_pack(H100, mask)) == (3, 3, 3)
    assert m.physical_fragmentation(H100, mask) == 0.0


def test_two_1g_leave_one_hole():
    mask = at(H100, ("1g.10gb", 0), ("1g.10gb", 2))  # free slices 1, 3-6
    assert m.free_slices(H100, mask) == 5 and m.longest_free_run(H100, mask) == 4
    assert m.physical_fragmentation(H100, mask) == pytest.approx(1 / 5)
    assert m.stranded_capacity(H100, mask, SUBSET) == 0.0  # 1g at 1 and 3, 3g at 4


def test_stranding_without_a_1g_profile():
    mask = at(H100, ("1g.10gb", 1))  # free slices 0, 2-6; a 2g fits only at 2 and 4, 3g at 4
    names = ("2g.20gb", "3g.40gb", "7g.80gb")
    assert m.max_pack(H100, mask, names) == 5  # 2g at 2 + 3g at 4; slice 0 is stranded
    assert m.stranded_capacity(H100, mask, names) == pytest.approx(1 / 6)
    assert m.physical_fragmentation(H100, mask) == pytest.approx(1 / 6)
    assert m.stranded_capacity(H100, mask, SUBSET) == 0.0
    assert m.max_pack(H100, mask, ("7g.80gb",)) == 0
    assert m.stranded_capacity(H100, mask, ("7g.80gb",)) == 1.0


def test_profile_names_the_model_lacks_are_left_out():
    assert m.pack_profiles(H100, ("3g.40gb", "3g.20gb", "9")) == (H100.profile("3g.40gb"),)
    assert m.max_pack(H100, 0, ("3g.20gb",)) == 0


def test_cluster_averages_count_full_gpus():
    empty, full, holes = 0, at(H100, ("7g.80gb", 0)), at(H100, ("1g.10gb", 0), ("1g.10gb", 2))
    physical, stranded = m.cluster_fragmentation([(H100, [empty, full, holes, holes])])
    assert physical == pytest.approx((0 + 0 + 0.2 + 0.2) / 4)
    assert stranded == 0.0
    a30 = get_model("A30-24GB")
    one = at(a30, ("1g.6gb", 1))  # free slices 0, 2, 3: (3 - 2) / 3
    physical, _ = m.cluster_fragmentation([(H100, np.array([holes])), (a30, np.array([one]))])
    assert physical == pytest.approx((0.2 + 1 / 3) / 2)
    assert m.cluster_fragmentation([]) == (0.0, 0.0)


def test_request_fragmentation():
    blocked = at(H100, ("1g.10gb", 0), ("1g.10gb", 4))  # no 3g start; 5 free slices
    full = at(H100, ("7g.80gb", 0))
    assert m.request_fragmented([(H100, [blocked, full])], "3g.40gb")
    # a legal start somewhere: not fragmented
    assert not m.request_fragmented([(H100, [blocked, at(H100, ("3g.40gb", 0))])], "3g.40gb")
    # no legal start, and not enough free capacity in the whole cluster: not fragmented either
    tight = at(H100, ("1g.10gb", 0), ("2g.20gb", 2), ("2g.20gb", 4), ("1g.10gb", 6))  # 1 free slice
    assert not m.capacity_holds([(H100, [tight, full])], "3g.40gb")
    assert not m.request_fragmented([(H100, [tight, full])], "3g.40gb")
    # summed over GPUs: each tight GPU has one free slice (1) and two free memory slots (1 and 7)
    assert not m.capacity_holds([(H100, [tight] * 2)], "3g.40gb")
    assert m.capacity_holds([(H100, [tight] * 3)], "3g.40gb")
    assert m.request_fragmented([(H100, [tight] * 3)], "3g.40gb")
    # GPUs of models without the profile count for nothing
    assert not m.request_fragmented([(get_model("A30-24GB"), [0])], "3g.40gb")


# --- brute force on random states of every model


@st.composite
def states(draw: st.DrawFn) -> tuple[GpuModel, int, tuple[str, ...] | None]:
    model = draw(st.sampled_from(MODELS))
    mask = draw(st.integers(0, model.full_mask))
    base = [p.name for p in model.profiles if p.base]
    names = draw(st.none() | st.lists(st.sampled_from(base), unique=True).map(tuple))
    return model, mask, names


@settings(max_examples=150, deadline=None)
@given(states())
def test_metrics_match_brute_force(state: tuple[GpuModel, int, tuple[str, ...] | None]) -> None:
    model, mask, names = state
    assert m.physical_fragmentation(model, mask) == pytest.approx(brute_fragmentation(model, mask))
    pack = brute_pack(model, mask, names)
    assert m.max_pack(model, mask, names) == pack
    free = sum(free_flags(model, mask))
    expected = max(free - pack, 0) / free if free else 0.0
    assert m.stranded_capacity(model, mask, names) == pytest.approx(expected)


@pytest.mark.parametrize("model", MODELS, ids=lambda model: model.name)
def test_max_pack_fits_the_free_slices_in_every_reachable_state(model: GpuModel) -> None:
    table = m.state_metrics(model)
    states = np.array(sorted(reachable(model)))
    assert (table.max_pack[states] <= table.free_slices[states]).all()
    assert table.max_pack[0] == model.compute_slices


# --- waits, makespan, throughput


def migbench_quantile(values: list[float], q: float) -> float:
    """MIGBench's ``quantile`` (internal/simulator/simulator.go), transcribed."""
    v = sorted(values)
    x = q * (len(v) - 1)
    lo = int(x)
    if lo + 1 >= len(v):
        return v[lo]
    return v[lo] + (x - lo) * (v[lo + 1] - v[lo])


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(0, 10**8), min_size=1, max_size=60))
def test_wait_percentiles_are_numpy_and_migbench(waits: list[int]) -> None:
    got = m.wait_summary(waits)
    assert got["mean_wait"] == pytest.approx(np.mean(waits))
    for key, q in (("p50_wait", 50), ("p95_wait", 95), ("p99_wait", 99)):
        assert got[key] == pytest.approx(np.percentile(waits, q), rel=1e-12, abs=1e-6)
        assert got[key] == pytest.approx(migbench_quantile([float(w) for w in waits], q / 100), abs=1e-6)


def test_no_waits_no_jobs():
    assert m.wait_summary([]) == {"mean_wait": 0.0, "p50_wait": 0.0, "p95_wait": 0.0, "p99_wait": 0.0}
    assert m.makespan([]) == 0.0 and m.throughput_per_hour(0, 0.0) == 0.0


def test_throughput_reproduces_the_published_row():
    """HAMi master on the v3 trace: 500 jobs, makespan 23,835,780 ms, 75.51672317834785 per hour."""
    assert m.makespan([100.0, 23_835_780, 5.0]) == 23_835_780
    assert m.throughput_per_hour(500, 23_835_780) == pytest.approx(75.51672317834785, rel=1e-15)
    assert m.throughput_per_hour(3, 2.0, unit_per_hour=1.0) == 1.5


# --- time weighting


def test_time_weighted_over_a_window():
    times, gpc = [0, 10, 20, 40, 50], [0.0, 1.0, 0.5, 0.25, 0.0]
    # window [15, 45]: 1.0 for 5, 0.5 for 20, 0.25 for 5
    assert m.time_weighted_mean(times, gpc, (15, 45)) == pytest.approx((5 + 10 + 1.25) / 30)
    assert m.peak_value(times, gpc, (15, 45)) == 1.0
    assert m.peak_value(times, gpc, (20, 45)) == 0.5  # 1.0 ends where the window starts
    # the last value holds to the window's end
    assert m.time_weighted_mean(times, gpc, (45, 70)) == pytest.approx(0.25 * 5 / 25)
    # empty window: 0, as MIGBench's summary
    assert m.time_weighted_mean(times, gpc, (30, 30)) == 0.0 == m.peak_value(times, gpc, (30, 20))


def test_equal_times_the_last_row_holds():
    times, values = [0, 10, 10, 20], [0.0, 1.0, 0.5, 0.0]
    assert m.time_weighted_mean(times, values, (0, 20)) == pytest.approx(0.25)
    assert m.peak_value(times, values, (0, 20)) == 0.5


def test_backlogged_fraction():
    times, queued = [0, 30, 60, 90], [3, 0, 1, 0]
    assert m.backlogged_time_fraction(times, queued, (0, 120)) == pytest.approx(60 / 120)
    assert m.backlogged_time_fraction(times, queued, (30, 60)) == 0.0


def test_step_series_checks_its_input():
    with pytest.raises(ValueError, match="one value per time"):
        m.time_weighted_mean([0, 1], [1.0], (0, 1))
    with pytest.raises(ValueError, match="increasing"):
        m.time_weighted_mean([2, 1], [1.0, 1.0], (0, 3))
