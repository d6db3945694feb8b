"""The readings of GRMU section 8.1 that alibaba_trace exposes: IQR filter, pod phases, GPU-less pods, share.

Synthetic CSVs with the real trace's columns (tests/factories.ALIBABA_*_HEADER), never the trace.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from pathlib import Path

import pytest

from mipopt.errors import InstanceError
from mipopt.workloads import alibaba_trace
from tests.factories import ALIBABA_NODE_HEADER, ALIBABA_POD_HEADER

# name, num_gpu, gpu_milli, phase, creation_time (s)
PODS = [
    ("a", 1, 1000, "Running", 36_000),
    ("b", 1, 520, "Succeeded", 36_100),
    ("c", 1, 300, "Failed", 36_200),
    ("d", 1, 150, "Pending", 36_300),
    ("e", 0, 0, "Running", 36_400),
    ("f", 1, 600, "Running", 36_500),
    ("g", 8, 1000, "Running", 36_600),  # multi-GPU: always dropped
    ("h", 1, 1000, "Running", 36_700),
    ("early", 1, 1000, "Running", 0),  # an arrival outlier
]


def write_trace(root: Path) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    with (root / "openb_node_list_gpu_node.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(ALIBABA_NODE_HEADER)
        w.writerows([["n0", 96000, 786432, 2, "G2"], ["n1", 96000, 786432, 1, "G2"]])
    with (root / "openb_pod_list_default.csv").open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(ALIBABA_POD_HEADER)
        w.writerows(
            [name, 4000, 8192, n, milli, "", "LS", phase, t0, t0 + 3600, t0 if phase != "Pending" else ""]
            for name, n, milli, phase, t0 in PODS
        )
    return root


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    return write_trace(tmp_path / "trace")


def names(trace_dir: Path, **options: object) -> list[str]:
    return [r.id for r in alibaba_trace(trace_dir, **options).requests]  # type: ignore[arg-type]


def test_defaults_drop_the_outlier_and_the_multi_gpu_pod(trace_dir: Path) -> None:
    trace = alibaba_trace(trace_dir)
    assert [r.id for r in trace.requests] == ["a", "b", "c", "d", "e", "f", "h"]
    assert (
        trace.meta["dropped_outliers"],
        trace.meta["dropped_multi_gpu"],
        trace.meta["dropped_not_vm"],
    ) == (1, 1, 0)
    assert (trace.meta["iqr"], trace.meta["phases"], trace.meta["cpu_pods"], trace.meta["share"]) == (
        True,
        None,
        True,
        "product",
    )


def test_iqr_false_keeps_the_outlier(trace_dir: Path) -> None:
    trace = alibaba_trace(trace_dir, iqr=False)
    assert [r.id for r in trace.requests] == ["early", "a", "b", "c", "d", "e", "f", "h"]
    assert trace.meta["dropped_outliers"] == 0 and trace.meta["dropped_multi_gpu"] == 1
    # times count from the first kept arrival, now the outlier's
    assert trace.requests[1].arrival == pytest.approx(10.0)
    assert trace.name.endswith("-noiqr")


def test_phases_select_the_pods_that_count_as_vms(trace_dir: Path) -> None:
    assert names(trace_dir, phases="Running+Succeeded+Failed") == ["a", "b", "c", "e", "f", "h"]
    assert names(trace_dir, phases="Running+Succeeded") == ["a", "b", "e", "f", "h"]
    assert names(trace_dir, phases=("Running",)) == ["a", "e", "f", "h"]
    trace = alibaba_trace(trace_dir, phases="Pending")
    assert [r.id for r in trace.requests] == ["d"]
    assert trace.meta["phases"] == ["Pending"] and trace.meta["dropped_not_vm"] == len(PODS) - 1


def test_cpu_pods_false_drops_pods_without_gpus(trace_dir: Path) -> None:
    trace = alibaba_trace(trace_dir, cpu_pods=False)
    assert [r.id for r in trace.requests] == ["a", "b", "c", "d", "f", "h"]
    assert trace.meta["dropped_not_vm"] == 1
    # by default the GPU-less pod is a 1g.5gb
    assert {r.id: r.profile for r in alibaba_trace(trace_dir).requests}["e"] == "1g.5gb"


@pytest.mark.parametrize(
    ("share", "expected"),
    [
        # product (Eqs. 28-30): scores 1, 2, 4, 12, 16, 56 over 56
        ("product", {"a": "7g.40gb", "b": "4g.20gb", "c": "4g.20gb", "d": "3g.20gb", "f": "4g.20gb"}),
        # compute share: 1/7 ... 4/7, 7/7; ties to the smaller profile
        ("compute", {"a": "7g.40gb", "b": "4g.20gb", "c": "2g.10gb", "d": "1g.5gb", "f": "4g.20gb"}),
        # memory share: 1/8, 2/8, 4/8, 8/8; 1g.10gb before 2g.10gb, 3g.20gb before 4g.20gb
        ("memory", {"a": "7g.40gb", "b": "3g.20gb", "c": "1g.10gb", "d": "1g.5gb", "f": "3g.20gb"}),
    ],
)
def test_share_mapping(trace_dir: Path, share: str, expected: dict[str, str]) -> None:
    got = {r.id: r.profile for r in alibaba_trace(trace_dir, share=share).requests}
    assert {k: got[k] for k in expected} == expected
    assert got["e"] == "1g.5gb"


def test_readings_compose(trace_dir: Path) -> None:
    trace = alibaba_trace(trace_dir, iqr=False, phases="Running", cpu_pods=False, share="compute")
    assert [r.id for r in trace.requests] == ["early", "a", "f", "h"]
    assert Counter(r.profile for r in trace.requests) == {"7g.40gb": 3, "4g.20gb": 1}
    assert all(math.isfinite(r.departure) for r in trace.requests)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"phases": "Running+Sleeping"}, "phases must be pod phases joined by '\\+'"),
        ({"phases": ""}, "phases must be pod phases"),
        ({"share": "area"}, "share must be one of product, compute, memory"),
    ],
)
def test_bad_readings_name_the_parameter(trace_dir: Path, options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        alibaba_trace(trace_dir, **options)  # type: ignore[arg-type]


def test_phase_filter_needs_the_phase_column(tmp_path: Path) -> None:
    root = write_trace(tmp_path / "t")
    pod_file = root / "openb_pod_list_default.csv"
    rows = list(csv.reader(pod_file.open(newline="")))
    drop = rows[0].index("pod_phase")
    with pod_file.open("w", newline="") as fh:
        csv.writer(fh).writerows([c for k, c in enumerate(r) if k != drop] for r in rows)
    assert len(alibaba_trace(root).requests) == 7  # without phases the column is not needed
    with pytest.raises(InstanceError, match="pod_phase"):
        alibaba_trace(root, phases="Running")


def test_no_pod_left_is_one_error(trace_dir: Path) -> None:
    with pytest.raises(InstanceError, match="no pod left"):
        alibaba_trace(trace_dir, phases="Unknown")


@pytest.mark.parametrize(
    "options",
    [{}, {"iqr": False}, {"phases": "Running+Succeeded"}, {"cpu_pods": False}, {"share": "memory"}],
)
@pytest.mark.parametrize("policy", ["ff", "mcc", "grmu"])
def test_every_reading_replays_verified(trace_dir: Path, options: dict[str, object], policy: str) -> None:
    """A replay of each reading on one GPU per node, checked by the verifier after every event."""
    from mipopt.heuristics.policies import make_policy
    from mipopt.simulation import simulate

    trace = alibaba_trace(trace_dir, gpus_per_host=1, duration_scale=50, **options)  # type: ignore[arg-type]
    result = simulate(trace, make_policy(policy), seed=0, debug=True)
    assert result.summary["arrived"] == len(trace.requests)
    assert 0 < result.summary["accepted"] < len(trace.requests)  # two GPUs, long lifetimes: some rejected
