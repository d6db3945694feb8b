"""Smoke test of ``bench_migbench``: a cut of MIGBench's trace and one generated trace, into a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "trace", "seed", "jobs", "geometry", "policy", "queue_order",
    "completed", "makespan", "throughput_per_hour", "mean_wait", "p50_wait", "p95_wait", "p99_wait",
    "gpc_utilization", "memory_utilization", "peak_gpc_utilization", "physical_fragmentation",
    "stranded_capacity", "request_fragmentation", "backlogged_time_fraction", "creates", "deletes",
    "runtime_s", "load",
]  # fmt: skip


@pytest.mark.integration
def test_migbench_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "migbench.csv", RESULTS / "migbench.png", README]
    before = [digest(p) for p in committed]
    run("bench_migbench", "--quick", "--out-dir", str(tmp_path))
    rows = read_csv(tmp_path / "migbench.csv", COLUMNS)
    # per trace: 2 geometries x 2 orders x 2 policies, 2 capacity replays, the floor
    assert [r["trace"] for r in rows] == ["v3"] * 11 + ["burst"] * 11
    for trace in ("v3", "burst"):
        group = [r for r in rows if r["trace"] == trace]
        floor = next(r for r in group if r["geometry"] == "floor")
        replays = [r for r in group if r["geometry"] != "floor"]
        assert {r["geometry"] for r in replays} == {"nvidia", "any-start", "capacity"}
        assert all(r["completed"] == r["jobs"] == "60" for r in replays)
        assert all(float(r["makespan"]) >= float(floor["makespan"]) for r in replays)
        assert all(float(r["mean_wait"]) >= 250.0 for r in replays)  # every start waits for its create
    text = (tmp_path / "README.md").read_text()
    assert "| **HAMi v2.10.0** (published) | 6.624 | 75.48 | 49.1 | 3.1 |" in text
    assert "| floor of the trace (bound) | 1.844 |" in text
    assert "the v3 trace's first 60 jobs" in text
    assert "| makespan | `" in text and "burst (1 seed, 60 jobs)" in text
    assert (tmp_path / "migbench.png").stat().st_size > 10_000
    assert [digest(p) for p in committed] == before


def row(policy: str, order: str, **values: str) -> dict[str, str]:
    base = {"trace": "v3", "seed": "0", "jobs": "500", "geometry": "nvidia", "date": "2026-11-26T06:00:00"}
    metrics = dict.fromkeys(load("bench_migbench").METRICS, "0")
    return {**base, **metrics, "commit": "c", "policy": policy, "queue_order": order, **values}


def test_best_table_names_the_best_policy_and_its_change() -> None:
    bench = load("bench_migbench")
    rows = [
        row("ff:start=lowest", "fifo", makespan="100", mean_wait="10", gpc_utilization="0.8"),
        row("binpack", "newest", makespan="90", mean_wait="12", gpc_utilization="0.9"),
        row("spread", "fifo", makespan="95", mean_wait="5", gpc_utilization="0.7"),
    ]
    text = bench.best_table(rows, "migbench.csv")
    lines = {line.split(" | ")[0].strip("| "): line for line in text.splitlines() if line.startswith("| ")}
    assert lines["makespan"] == "| makespan | `binpack` newest (-10.0%) |"
    assert lines["mean_wait"] == "| mean_wait | `spread` fifo (-50.0%) |"
    assert lines["gpc_utilization"] == "| gpc_utilization | `binpack` newest (+12.5%) |"
    assert lines["p50_wait"] == "| p50_wait | `ff:start=lowest` fifo (±0 %) |"


def test_trace_label_keeps_v3_for_migbench_s_file_only(tmp_path: Path) -> None:
    bench = load("bench_migbench")
    from mipopt.workloads.migbench import migbench_trace
    from mipopt.workloads.migbench_models import migbench_generated

    published = Path(bench.TRACE)
    if not published.is_file():
        pytest.skip("MIGBench's trace is not in ../shared")
    copy = tmp_path / "my-trace.jsonl"
    copy.write_text("".join(published.read_text().splitlines(keepends=True)[:20]))
    assert bench.trace_label(migbench_trace(published, jobs=10)) == "v3"
    # the same jobs under another name are the user's trace, not the one the published rows ran
    assert bench.trace_label(migbench_trace(copy, jobs=10)) == "my-trace.jsonl"
    assert bench.trace_label(migbench_generated("burst", jobs=10, prefill=2, seed=0)) == "burst"
