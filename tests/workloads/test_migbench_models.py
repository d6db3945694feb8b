"""MIGBench's workload models (mipopt.workloads.migbench_models) against its generator's rules."""

from __future__ import annotations

from collections import Counter

import numpy as np
import pytest

from mipopt.errors import InstanceError
from mipopt.workloads.migbench import read_migbench
from mipopt.workloads.migbench_models import migbench_generated, migbench_jobs, write_jobs

PERCENT = {10240: 14, 20480: 28, 40960: 42, 81920: 100}


def test_prefill_jobs_arrive_at_zero_on_the_smallest_profile():
    jobs = migbench_jobs("poisson", jobs=80, prefill=56, seed=4)
    assert [j["arrivalMS"] for j in jobs[:56]] == [0] * 56
    assert {j["memoryMB"] for j in jobs[:56]} == {10240}
    assert jobs[56]["arrivalMS"] > 0
    assert [j["jobID"] for j in jobs[:2]] == ["job-000001", "job-000002"]


def test_poisson_arrivals_and_weights():
    jobs = migbench_jobs("poisson", jobs=6000, prefill=0, seed=1)
    gaps = np.diff([j["arrivalMS"] for j in jobs])
    assert (gaps >= 0).all() and np.mean(gaps) == pytest.approx(15_000, rel=0.05)
    shares = Counter(j["memoryMB"] for j in jobs)
    for memory, weight in ((10240, 35), (20480, 25), (40960, 25), (81920, 5)):
        assert shares[memory] / len(jobs) == pytest.approx(weight / 90, abs=0.02)
    # work = duration x compute percent; durations lognormal with median 600,000 ms
    durations = [j["computeCoreMS"] / PERCENT[j["memoryMB"]] for j in jobs]
    assert all(float(d).is_integer() for d in durations)
    assert np.median(durations) == pytest.approx(600_000, rel=0.06)


def test_burst_arrives_in_groups():
    jobs = migbench_jobs("burst", jobs=25, prefill=0, burst_size=10, arrival_mean_ms=1000, seed=2)
    assert [j["arrivalMS"] for j in jobs] == [0] * 10 + [1000] * 10 + [2000] * 5


def test_adversarial_small_then_large():
    jobs = migbench_jobs("adversarial", jobs=10, prefill=2, arrival_mean_ms=500, seed=3)
    assert [j["arrivalMS"] for j in jobs] == [0, 0, 500, 1000, 1500, 2000, 2500, 3000, 3500, 4000]
    assert [j["memoryMB"] for j in jobs] == [10240] * 5 + [81920] * 5


def test_profile_skew_weights_and_given_weights():
    skew = Counter(j["memoryMB"] for j in migbench_jobs("profile-skew", jobs=3000, prefill=0, seed=5))
    assert skew[40960] > skew[10240] * 3  # 3g-heavy default (50 against 10)
    only = migbench_jobs("poisson", jobs=50, prefill=0, weights="2g.20gb=1", seed=5)
    assert {j["memoryMB"] for j in only} == {20480}


def test_profile_bound_format():
    jobs = migbench_jobs("poisson", jobs=5, prefill=1, job_format="profile-bound-v1", seed=6)
    assert set(jobs[0]) == {"jobID", "format", "arrivalMS", "durationMS", "profile"}
    assert jobs[0]["profile"] == "1g.10gb" and jobs[0]["format"] == "profile-bound-v1"


def test_same_seed_same_jobs_and_a_file_round_trip(tmp_path):
    jobs = migbench_jobs("burst", jobs=40, seed=7)
    assert jobs == migbench_jobs("burst", jobs=40, seed=7) != migbench_jobs("burst", jobs=40, seed=8)
    write_jobs(tmp_path / "t.jsonl", jobs)
    read = read_migbench(tmp_path / "t.jsonl")
    assert [{k: v for k, v in j.items() if k != "line"} for j in read] == jobs


def test_generated_trace():
    trace = migbench_generated("adversarial", jobs=12, prefill=2, seed=1)
    assert trace.name == "migbench-adversarial(seed=1)" and len(trace.requests) == 12
    assert len(trace.cluster.gpus) == 8 and trace.create_delay == 250.0 and trace.measure_from == 30_000.0
    assert trace.requests[-1].memory_gb == 80.0


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"kind": "storm"}, "kind: must be one of poisson, burst, profile-skew, adversarial"),
        ({"jobs": 0}, "jobs: must be a positive integer"),
        ({"prefill": -1}, "prefill: must be a non-negative integer"),
        ({"weights": "1g.10gb=x"}, "weights: must be profile=weight joined by '+'"),
        ({"weights": "9g.90gb=1"}, "weights: '9g.90gb' is not one of the profiles"),
        ({"weights": "1g.10gb=0"}, "weights: must be finite, non-negative and not all 0"),
        ({"profiles": "1g.10gb+3g.20gb"}, "profiles: '3g.20gb' is not a profile of H100-80GB"),
        ({"duration_median_ms": 0}, "duration_median_ms: must be a finite number"),
        ({"job_format": "v3"}, "job_format: must be resource-bound-v2 or profile-bound-v1"),
    ],
)
def test_bad_options_name_the_parameter(options, message):
    with pytest.raises(InstanceError, match=message.replace("(", r"\(").replace("+", r"\+")):
        migbench_jobs(**options)
