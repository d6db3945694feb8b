"""The hard class (mipopt.workloads.hard) and the Alibaba snapshot (mipopt.simulation.alibaba_snapshot)."""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path

import pytest
from factories import write_alibaba_csvs

from mipopt.instance import Instance, Status, Termination
from mipopt.simulation import alibaba_snapshot
from mipopt.verifier import solution_for, verify
from mipopt.workloads import alibaba_peak, alibaba_trace, hard_instance

REAL_TRACE = Path(__file__).resolve().parents[2].parent / "shared" / "data" / "alibaba-gpu-v2023"


def _valid(inst: Instance) -> bool:
    """The running workloads form a valid state: every rule of the verifier."""
    placed = {w.id: (w.placement.gpu, w.placement.start) for w in inst.running if w.placement}
    solution = solution_for(
        inst, placed, method="state", termination=Termination.COMPLETED, status=Status.FEASIBLE
    )
    return verify(inst, solution).valid


def _host_use(inst: Instance) -> tuple[dict[str, float], dict[str, float]]:
    cpu: dict[str, float] = defaultdict(float)
    ram: dict[str, float] = defaultdict(float)
    for w in inst.running:
        assert w.placement is not None
        host = inst.gpu(w.placement.gpu).host
        cpu[host] += w.cpu
        ram[host] += w.ram_gb
    return cpu, ram


# ---------------------------------------------------------------- hard class


def test_hard_same_seed_same_instance_other_seed_other() -> None:
    assert hard_instance(40, seed=3) == hard_instance(40, seed=3)
    assert hard_instance(40, seed=3) != hard_instance(40, seed=4)
    assert [w.profile for w in hard_instance(8, seed=0).workloads] != [
        w.profile for w in hard_instance(8, seed=1).workloads
    ]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hard_counts_at_40_gpus(seed: int) -> None:
    inst = hard_instance(40, seed=seed)
    assert len(inst.gpus) == 40 and len(inst.hosts) == 20
    assert all(len(h.gpus) == 2 for h in inst.hosts)
    # half of all workloads run (exactly, with the default share), none pinned
    assert len(inst.running) == len(inst.new) > 40
    assert not any(w.pinned for w in inst.running)
    # weights: a_i = compute slices, delta_i from {1, 1.2, 1.4}; cpu 3-5 per slice, ram 1 GB per GB
    for w in inst.workloads:
        profile = inst.gpus[0].model.find(str(w.profile))
        assert profile is not None and w.weight == profile.compute
        assert w.migration_weight in (1.0, 1.2, 1.4)
        assert w.cpu in {rate * profile.compute for rate in (3, 4, 5)} and w.ram_gb == profile.memory_gb
    assert {w.migration_weight for w in inst.workloads} == {1.0, 1.2, 1.4}
    # the running workloads form a valid state (every rule of the verifier)
    assert _valid(inst)


def test_hard_mixed_models_alternate_by_host() -> None:
    inst = hard_instance(40, seed=0)
    models = [inst.gpu(h.gpus[0]).model.name for h in inst.hosts]
    assert models == ["A100-80GB", "H100-80GB"] * 10
    assert all(inst.gpu(g).model.name == models[j] for j, h in enumerate(inst.hosts) for g in h.gpus)
    # running workloads on both models
    assert {inst.gpu(w.placement.gpu).model.name for w in inst.running if w.placement} == {
        "A100-80GB",
        "H100-80GB",
    }
    one = hard_instance(6, seed=0, models=("A100-80GB",), gpus_per_host=4)
    assert [len(h.gpus) for h in one.hosts] == [4, 2]
    assert {g.model.name for g in one.gpus} == {"A100-80GB"}


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_hard_host_cpu_and_ram_bind(seed: int) -> None:
    inst = hard_instance(40, seed=seed)
    # a host of two 80 GB GPUs: 0.65 x 2 x 7 x 4 cpu, 0.65 x 2 x 80 x 1 GB
    assert {(h.cpu, h.ram_gb) for h in inst.hosts} == {(36.0, 104.0)}
    cpu, ram = _host_use(inst)
    for h in inst.hosts:
        assert cpu[h.id] <= h.cpu + 1e-9 and ram[h.id] <= h.ram_gb + 1e-9  # type: ignore[operator]
    free_cpu = sum(h.cpu - cpu[h.id] for h in inst.hosts)  # type: ignore[operator]
    free_ram = sum(h.ram_gb - ram[h.id] for h in inst.hosts)  # type: ignore[operator]
    cpu_ratio = sum(w.cpu for w in inst.new) / free_cpu
    ram_ratio = sum(w.ram_gb for w in inst.new) / free_ram
    assert cpu_ratio > 2 and ram_ratio > 2
    # ... far more than the GPUs' free compute slices do
    model = inst.gpus[0].model
    compute = {w.id: model.find(str(w.profile)).compute for w in inst.workloads}  # type: ignore[union-attr]
    free_compute = 40 * 7 - sum(compute[w.id] for w in inst.running)
    compute_ratio = sum(compute[w.id] for w in inst.new) / free_compute
    assert compute_ratio < 1.1 and 2 * compute_ratio < min(cpu_ratio, ram_ratio)
    # and cpu is what binds: some host has less cpu left than the smallest new workload needs
    smallest = min(w.cpu for w in inst.new)
    assert any(h.cpu - cpu[h.id] < smallest for h in inst.hosts)  # type: ignore[operator]


def test_hard_arguments() -> None:
    inst = hard_instance(8, seed=0, running_share=0.25, migration_weights=(2.0,))
    assert len(inst.new) == 3 * len(inst.running)
    assert {w.migration_weight for w in inst.workloads} == {2.0}
    assert inst.name == "hard-8gpus-seed0"
    for bad, match in (
        ({"n_gpus": 0}, "n_gpus"),
        ({"seed": -1}, "seed"),
        ({"running_share": 0.0}, "running_share"),
        ({"host_fraction": 0.0}, "host_fraction"),
        ({"migration_weights": ()}, "migration_weights"),
        ({"cpu_per_compute": (-1.0,)}, "cpu_per_compute"),
    ):
        kwargs = {"n_gpus": 8, "seed": 0, **bad}
        with pytest.raises(ValueError, match=match):
            hard_instance(**kwargs)  # type: ignore[arg-type]


# ---------------------------------------------------------------- Alibaba snapshot (synthetic trace)

# One node of two GPUs; (name, num_gpu, gpu_milli, creation s, deletion s). Full-GPU pods map to
# 7g.40gb (a whole A100-40GB), GPU-less ones to 1g.5gb. No arrival is an IQR outlier
# (Q1 = 1100, Q3 = 3050: inliers in [-1825, 5975]).
PODS = [
    ("a", 1, 1000, 0, 5000),
    ("b", 1, 1000, 1000, 1500),
    ("c", 1, 1000, 1200, 4000),  # both GPUs full (a, b): first fit rejects it
    ("d", 0, 0, 1300, 1400),  # both GPUs still full: rejected
    ("e", 0, 0, 2000, 6000),  # b has left: on the second GPU
    ("f", 1, 1000, 4100, 4500),
    ("g", 0, 0, 5500, 7000),
]
# Requests alive (arrival <= t < departure): 1 at 0 s, 2 at 1000, 3 at 1200, 4 at 1300 (the peak),
# then 3, 2 (1500), 3 (2000), 2 (4000), 3 (4100), 2, 1, 2.
PEAK_H = 1300 / 3600


@pytest.fixture
def trace_dir(tmp_path: Path) -> Path:
    return write_alibaba_csvs(tmp_path / "trace", [("n0", 2)], PODS)


def test_alibaba_peak_is_the_most_requests_alive(trace_dir: Path) -> None:
    t, alive = alibaba_peak(alibaba_trace(trace_dir))
    assert t == pytest.approx(PEAK_H) and alive == 4


def test_alibaba_peak_ties_go_to_the_earliest_and_departures_count_first(trace_dir: Path) -> None:
    # c now leaves at 1300 s, when d arrives: 3 alive at 1200 and again at 1300; the earliest wins
    pods = [p if p[0] != "c" else ("c", 1, 1000, 1200, 1300) for p in PODS]
    write_alibaba_csvs(trace_dir, [("n0", 2)], pods)
    assert alibaba_peak(alibaba_trace(trace_dir)) == (pytest.approx(1200 / 3600), 3)


def test_alibaba_snapshot_at_the_peak(trace_dir: Path) -> None:
    inst = alibaba_snapshot(trace_dir, window_h=1.0)
    assert inst.name == "alibaba-snapshot-0.36h"
    assert "at t = 0.361111 h (the peak of requests alive): 4 requests alive, 2 of them placed" in (
        inst.description
    )
    # the first-fit replay: a on the first GPU, b on the second; c and d found both full
    assert {w.id: w.placement.gpu for w in inst.running if w.placement} == {"a": "n0-g0", "b": "n0-g1"}
    assert {w.id: w.profile for w in inst.running} == {"a": "7g.40gb", "b": "7g.40gb"}
    assert not any(w.pinned for w in inst.running)
    # arrivals in (1300 s, 1300 s + 1 h]: e at 2000 s and f at 4100 s; g (5500 s) is later
    assert [w.id for w in inst.new] == ["e", "f"]
    assert [w.profile for w in inst.new] == ["1g.5gb", "7g.40gb"]
    # the trace's cpu and ram, a_i = delta_i = 1
    assert (inst.hosts[0].cpu, inst.hosts[0].ram_gb) == (96.0, 768.0)
    assert {(w.cpu, w.ram_gb, w.weight, w.migration_weight) for w in inst.workloads} == {(4.0, 8.0, 1.0, 1.0)}
    assert _valid(inst)
    assert alibaba_snapshot(trace_dir, window_h=1.0) == inst


def test_alibaba_snapshot_at_a_given_time(trace_dir: Path) -> None:
    inst = alibaba_snapshot(trace_dir, at=2100 / 3600, window_h=1.0)
    # alive at 2100 s: a, c (rejected at 1200 s) and e, which first fit put on the GPU b left
    assert {w.id: w.placement.gpu for w in inst.running if w.placement} == {"a": "n0-g0", "e": "n0-g1"}
    assert [w.id for w in inst.new] == ["f", "g"]  # 4100 and 5500 s, within 2100 s + 1 h
    assert _valid(inst)
    # before the first arrival nothing runs; a zero window has no new workloads
    empty = alibaba_snapshot(trace_dir, at=-1.0, window_h=0.0)
    assert (len(empty.running), len(empty.new)) == (0, 0)
    assert len(alibaba_snapshot(trace_dir, at=0.0, window_h=10.0).new) == 6


def test_alibaba_snapshot_arguments(trace_dir: Path) -> None:
    one = alibaba_snapshot(trace_dir, gpus_per_host=1, window_h=0.0)
    assert [w.id for w in one.running] == ["a"]  # one GPU: b finds it full as well
    for bad in ({"at": math.inf}, {"window_h": -1.0}, {"window_h": math.nan}):
        with pytest.raises(ValueError, match="must be"):
            alibaba_snapshot(trace_dir, **bad)  # type: ignore[arg-type]


@pytest.mark.skipif(not REAL_TRACE.is_dir(), reason="the Alibaba trace is not in ../shared/data")
def test_alibaba_snapshot_of_the_real_trace() -> None:
    inst = alibaba_snapshot(REAL_TRACE)
    assert (len(inst.hosts), len(inst.gpus)) == (1213, 6212)
    assert inst.name == "alibaba-snapshot-953.98h"
    # 45 pods alive at the peak, all placed (the raw timestamps load the cluster lightly)
    assert (len(inst.running), len(inst.new)) == (45, 239)
    assert _valid(inst)
