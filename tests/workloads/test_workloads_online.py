"""Request streams for the simulator: the FBK set-up, Poisson streams and the Alibaba trace loader."""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder
from mipopt.instance.trace import Trace
from mipopt.workloads import FBK_DISTRIBUTIONS, alibaba_summary, alibaba_trace, fbk_trace, poisson_trace

REAL_TRACE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "alibaba-gpu-v2023"
TABLE_II_ROWS = ("7g.80gb", "4g.40gb", "3g.40gb", "2g.20gb", "1g.20gb", "1g.10gb")
SLOTS = {"7g.80gb": 8, "4g.40gb": 4, "3g.40gb": 4, "2g.20gb": 2, "1g.20gb": 2, "1g.10gb": 1}


# ---------------------------------------------------------------- fbk


@pytest.mark.parametrize("distribution", sorted(FBK_DISTRIBUTIONS))
def test_fbk_profile_frequencies_match_table_ii(distribution: str) -> None:
    trace = fbk_trace(gpus=10, distribution=distribution, seed=3, slots=20_000)  # type: ignore[arg-type]
    counts = Counter(r.profile for r in trace.requests)
    assert set(counts) <= set(TABLE_II_ROWS)
    for name, p in zip(TABLE_II_ROWS, FBK_DISTRIBUTIONS[distribution], strict=True):
        # 20,000 draws: the standard error is at most 0.0036
        assert counts[name] / 20_000 == pytest.approx(p, abs=0.015), name


def test_fbk_t_is_the_realized_saturation_slot() -> None:
    # the text's literal reading (lifetimes="demand"): T is the realized 100 % demand slot
    trace = fbk_trace(gpus=100, distribution="skew-big", seed=7, lifetimes="demand")
    sizes = [SLOTS[r.profile] for r in trace.requests]
    t = trace.meta["T"]
    # default length is T: the last request brings the demand to 100 %, the one before does not
    assert len(trace.requests) == t
    assert sum(sizes) >= 800 > sum(sizes[:-1])
    assert trace.meta["demand"][-1] == pytest.approx(100 * sum(sizes) / 800)
    assert trace.meta["demand"][-2] < 100 <= trace.meta["demand"][-1]
    # skew-big: mean size 0.3*8 + 0.25*4 + 0.2*4 + 0.1*2 + 0.1*2 + 0.05*1 = 4.65 slots
    assert trace.meta["T_expected"] == math.ceil(800 / 4.65) == 173
    assert abs(t - 173) <= 20
    assert [r.arrival for r in trace.requests] == list(range(t))
    lifetimes = [r.departure - r.arrival for r in trace.requests]
    assert all(float(x).is_integer() and 1 <= x <= t for x in lifetimes)
    assert len(trace.cluster.hosts) == len(trace.cluster.gpus) == 100
    assert trace.time_unit == "slot"


def test_fbk_lifetimes_cover_one_to_t_uniformly() -> None:
    trace = fbk_trace(gpus=20, seed=1, slots=20_000, lifetimes="demand")
    t = trace.meta["T"]
    lifetimes = np.array([r.departure - r.arrival for r in trace.requests])
    assert lifetimes.min() == 1 and lifetimes.max() == t
    assert lifetimes.mean() == pytest.approx((1 + t) / 2, rel=0.03)


def test_fbk_is_seeded_and_longer_runs_extend_shorter_ones() -> None:
    a = fbk_trace(gpus=30, distribution="bimodal", seed=5, lifetimes="demand")
    assert a == fbk_trace(gpus=30, distribution="bimodal", seed=5, lifetimes="demand")
    assert a.requests != fbk_trace(gpus=30, distribution="bimodal", seed=6, lifetimes="demand").requests
    longer = fbk_trace(gpus=30, distribution="bimodal", seed=5, slots=2 * a.meta["T"], lifetimes="demand")
    assert longer.meta["T"] == a.meta["T"]
    assert longer.requests[: len(a.requests)] == a.requests
    assert longer.meta["demand"][-1] == pytest.approx(
        100 * sum(SLOTS[r.profile] for r in longer.requests) / 240
    )


def test_fbk_hosts_and_other_models() -> None:
    trace = fbk_trace(gpus=20, gpus_per_host=8, seed=0, model="A100-40GB", slots=50)
    assert [len(h.gpus) for h in trace.cluster.hosts] == [8, 8, 4]
    assert {r.profile for r in trace.requests} <= {
        "7g.40gb",
        "4g.20gb",
        "3g.20gb",
        "2g.10gb",
        "1g.10gb",
        "1g.5gb",
    }
    with pytest.raises(ValueError, match="distribution must be one of"):
        fbk_trace(seed=0, distribution="zipf")  # type: ignore[arg-type]


# ---------------------------------------------------------------- poisson


def _cluster(n_gpus: int, model: str = "A100-40GB") -> Instance:
    b = InstanceBuilder("c")
    b.add_host("h0", {f"g{k}": model for k in range(n_gpus)})
    return b.build()


def _offered_load(trace: Trace, sizes: dict[str, int], start: float, end: float) -> float:
    """Time-average of the memory slots held by all requests in [start, end], over capacity."""
    total = 0.0
    for r in trace.requests:
        total += sizes[r.profile] * max(0.0, min(r.departure, end) - max(r.arrival, start))
    return total / (end - start) / trace.meta["capacity_slots"]


@pytest.mark.parametrize("lifetime", ["exponential", "uniform"])
def test_poisson_offered_load_matches_target(lifetime: str) -> None:
    mix = {"1g.5gb": 2.0, "3g.20gb": 1.0, "7g.40gb": 1.0}
    trace = poisson_trace(
        _cluster(40),
        load=0.6,
        mix=mix,
        mean_lifetime=2.0,
        horizon=2000.0,
        seed=11,
        lifetime=lifetime,  # type: ignore[arg-type]
    )
    # mean size (2*1 + 4 + 8) / 4 = 3.5 slots; rate = 0.6 * 320 / (2 * 3.5) = 27.4 per hour
    assert trace.meta["mean_size"] == 3.5
    assert trace.meta["rate"] == pytest.approx(0.6 * 320 / 7)
    assert len(trace.requests) == pytest.approx(2000 * 0.6 * 320 / 7, rel=0.02)
    sizes = {"1g.5gb": 1, "3g.20gb": 4, "7g.40gb": 8}
    # the time average over 2,000 h has a relative standard deviation of about 0.8 %
    assert _offered_load(trace, sizes, 20.0, 2000.0) == pytest.approx(0.6, rel=0.03)
    counts = Counter(r.profile for r in trace.requests)
    assert counts["1g.5gb"] / len(trace.requests) == pytest.approx(0.5, abs=0.01)
    durations = np.array([r.duration for r in trace.requests])
    assert durations.mean() == pytest.approx(2.0, rel=0.02)
    if lifetime == "uniform":
        assert durations.max() <= 4.0
    assert trace.time_unit == "h"
    assert all(0 <= r.arrival < 2000 for r in trace.requests)


def test_poisson_rejects_profiles_outside_the_cluster() -> None:
    with pytest.raises(ValueError, match=r"mix: '7g.80gb' is not a profile of the cluster's GPU models"):
        poisson_trace(_cluster(1), load=0.5, mix={"7g.80gb": 1}, mean_lifetime=1, horizon=10, seed=0)
    a = poisson_trace(_cluster(2), load=0.5, mix={"1g.5gb": 1}, mean_lifetime=1, horizon=50, seed=4)
    assert a == poisson_trace(_cluster(2), load=0.5, mix={"1g.5gb": 1}, mean_lifetime=1, horizon=50, seed=4)


# ---------------------------------------------------------------- alibaba (synthetic)

NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
POD_HEADER = [
    "name",
    "cpu_milli",
    "memory_mib",
    "num_gpu",
    "gpu_milli",
    "gpu_spec",
    "qos",
    "pod_phase",
    "creation_time",
    "deletion_time",
    "scheduled_time",
]
# (name, num_gpu, gpu_milli, creation_time); every pod lives one hour.
# Creation times: Q1 = 1100, Q3 = 1500 (numpy's linear percentiles of 9 values), IQR = 400,
# so the inlier range is [500, 2100] and pod a0 at time 0 is the only outlier.
PODS = [
    ("a0", 1, 1000, 0),  # arrival outlier
    ("a1", 1, 1000, 1000),  # u = 1 -> 7g.40gb (score 1)
    ("a2", 2, 1000, 1100),  # two full GPUs: dropped
    ("a3", 0, 0, 1200),  # no GPU -> smallest profile 1g.5gb
    ("a4", 1, 460, 1300),  # 0.46: 4g.20gb (16/56 = 0.286) beats 7g.40gb (1)
    ("a5", 1, 200, 1400),  # 0.20: 3g.20gb (12/56 = 0.214)
    ("a6", 1, 50, 1500),  # 0.05: 1g.10gb (2/56 = 0.036) beats 2g.10gb (4/56 = 0.071)
    ("a7", 1, 60, 1600),  # 0.06: 2g.10gb
    ("a8", 1, 650, 1700),  # 0.65: 7g.40gb (|1 - 0.65| = 0.35 < |0.286 - 0.65| = 0.364)
]
EXPECTED = {
    "a1": "7g.40gb",
    "a3": "1g.5gb",
    "a4": "4g.20gb",
    "a5": "3g.20gb",
    "a6": "1g.10gb",
    "a7": "2g.10gb",
    "a8": "7g.40gb",
}


def _write(path: Path, header: list[str], rows: list[list[object]]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(header)
        w.writerows(rows)


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    _write(
        tmp_path / "openb_node_list_gpu_node.csv",
        NODE_HEADER,
        [
            ["n0", 96000, 786432, 8, "G2"],
            ["n1", 64000, 262144, 2, "P100"],
            ["n2", 32000, 131072, 1, "T4"],
        ],
    )
    _write(
        tmp_path / "openb_pod_list_default.csv",
        POD_HEADER,
        [[name, 4000, 8192, n, milli, "", "LS", "Running", t, t + 3600, t] for name, n, milli, t in PODS],
    )
    return tmp_path


def test_alibaba_mapping_on_synthetic_csvs(trace_dir: Path) -> None:
    trace = alibaba_trace(trace_dir)
    assert {r.id: r.profile for r in trace.requests} == EXPECTED
    assert [r.id for r in trace.requests] == ["a1", "a3", "a4", "a5", "a6", "a7", "a8"]
    assert trace.meta["dropped_outliers"] == 1 and trace.meta["dropped_multi_gpu"] == 1
    assert trace.meta["iqr_bounds_s"] == [500.0, 2100.0]
    # hours from the first kept arrival (a1 at 1000 s); every pod lives one hour
    assert trace.requests[-1].arrival == pytest.approx(700 / 3600)
    assert all(r.duration == pytest.approx(1.0) for r in trace.requests)
    assert trace.requests[0].cpu == 4.0 and trace.requests[0].ram_gb == 8.0
    summary = alibaba_summary(trace)
    assert (summary["hosts"], summary["gpus"], summary["workloads"]) == (3, 11, 7)
    assert [len(h.gpus) for h in trace.cluster.hosts] == [8, 2, 1]
    assert trace.cluster.hosts[0].cpu == 96.0 and trace.cluster.hosts[0].ram_gb == 768.0
    assert {g.model.name for g in trace.cluster.gpus} == {"A100-40GB"}
    assert summary["profiles"]["7g.40gb"] == 2
    # all seven overlap from 1700 s to 4600 s: 8 + 1 + 4 + 4 + 2 + 2 + 8 = 29 of 88 slots
    assert summary["peak_slots"] == 29 and summary["capacity_slots"] == 88
    assert summary["span"] == pytest.approx(700 / 3600)


def test_alibaba_normalizes_by_the_largest_need(trace_dir: Path) -> None:
    # With every kept pod at 0.5 GPU, u / max(u) = 1 for all: every pod maps to 7g.40gb.
    _write(
        trace_dir / "openb_pod_list_default.csv",
        POD_HEADER,
        [[f"b{i}", 1000, 1024, 1, 500, "", "LS", "Running", 100 * i, 100 * i + 60, ""] for i in range(5)],
    )
    trace = alibaba_trace(trace_dir)
    assert [r.profile for r in trace.requests] == ["7g.40gb"] * 5


def test_alibaba_load_controls(trace_dir: Path) -> None:
    base = alibaba_trace(trace_dir)
    fast = alibaba_trace(trace_dir, compress=4.0)
    assert [r.arrival for r in fast.requests] == pytest.approx([r.arrival / 4 for r in base.requests])
    assert [r.duration for r in fast.requests] == pytest.approx([r.duration for r in base.requests])
    forever = alibaba_trace(trace_dir, departures=False)
    assert all(r.departure == math.inf for r in forever.requests)
    half = alibaba_trace(trace_dir, host_fraction=0.5, seed=1)
    assert len(half.cluster.hosts) == 2 and len(half.requests) == 7
    assert half.cluster == alibaba_trace(trace_dir, host_fraction=0.5, seed=1).cluster
    bare = alibaba_trace(trace_dir, resources=False)
    assert bare.cluster.hosts[0].cpu is None and bare.requests[0].cpu == 0.0


def test_alibaba_gpus_per_host_and_duration_scale(trace_dir: Path) -> None:
    base = alibaba_trace(trace_dir)
    one = alibaba_trace(trace_dir, gpus_per_host=1)
    # nodes of 8, 2 and 1 GPUs keep their first GPU each; hosts keep their cpu and ram
    assert [h.gpus for h in one.cluster.hosts] == [("n0-g0",), ("n1-g0",), ("n2-g0",)]
    assert [h.cpu for h in one.cluster.hosts] == [h.cpu for h in base.cluster.hosts]
    assert [len(h.gpus) for h in alibaba_trace(trace_dir, gpus_per_host=2).cluster.hosts] == [2, 2, 1]
    assert one.requests == base.requests and one.meta["gpus_per_host"] == 1
    # every pod lives one hour: 3600 reads those seconds as hours; arrivals stay
    long = alibaba_trace(trace_dir, duration_scale=3600)
    assert [r.arrival for r in long.requests] == [r.arrival for r in base.requests]
    assert all(r.duration == pytest.approx(3600.0) for r in long.requests)
    assert long.cluster == base.cluster and long.name.endswith("-d3600")
    for bad in ({"gpus_per_host": 0}, {"gpus_per_host": 1.5}, {"duration_scale": 0}):
        with pytest.raises(ValueError, match="must be"):
            alibaba_trace(trace_dir, **bad)  # type: ignore[arg-type]


def test_alibaba_errors_name_file_and_column(trace_dir: Path) -> None:
    pod_file = trace_dir / "openb_pod_list_default.csv"
    rows = list(csv.reader(pod_file.open()))
    keep = [i for i, c in enumerate(rows[0]) if c != "gpu_milli"]
    _write(pod_file, [rows[0][i] for i in keep], [[r[i] for i in keep] for r in rows[1:]])
    with pytest.raises(InstanceError) as err:
        alibaba_trace(trace_dir)
    assert str(err.value) == f"{pod_file}: column 'gpu_milli': is missing from the header"
    (trace_dir / "openb_node_list_gpu_node.csv").unlink()
    with pytest.raises(InstanceError, match=r"openb_node_list_gpu_node\.csv: cannot read the file"):
        alibaba_trace(trace_dir)
    with pytest.raises(ValueError, match="compress must be a positive"):
        alibaba_trace(trace_dir, compress=0)


def test_alibaba_bad_number_names_row_and_column(trace_dir: Path) -> None:
    pod_file = trace_dir / "openb_pod_list_default.csv"
    text = pod_file.read_text().replace("Running,1000,", "Running,oops,", 1)
    pod_file.write_text(text)
    with pytest.raises(InstanceError, match=r"openb_pod_list_default\.csv: row 3 column 'creation_time'"):
        alibaba_trace(trace_dir)


# ---------------------------------------------------------------- alibaba (real data)


@pytest.mark.skipif(not REAL_TRACE.is_dir(), reason="the Alibaba trace is not in ../shared/data")
def test_alibaba_real_trace_gives_the_papers_counts() -> None:
    trace = alibaba_trace(REAL_TRACE)
    summary = alibaba_summary(trace)
    assert summary["hosts"] == 1213
    assert summary["workloads"] == 8063
    assert summary["gpus"] == 6212
    assert trace.meta["dropped_outliers"] == 14 and trace.meta["dropped_multi_gpu"] == 75
    # 7g.40gb dominates (GRMU paper, Fig. 5 and section 8.3); GPU-less pods are 1g.5gb
    assert summary["profiles"]["7g.40gb"] == 5232 and summary["profiles"]["1g.5gb"] == 1087
    # the raw timestamps load the cluster lightly: peak memory-slot use under 1 %
    assert summary["peak_fraction"] < 0.01
    assert summary["span"] == pytest.approx(1254.03, abs=0.01)
