"""Smoke test of ``benchmarks/bench_mfi.py`` (the MFI paper's Figs. 4-6) at 10 GPUs, 2 runs, into a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from mipopt.heuristics.policies import make_policy
from mipopt.simulation import simulate
from mipopt.workloads.fbk import fbk_trace
from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COMMITTED = [RESULTS / "mfi.csv", RESULTS / "mfi.png", README]
COLUMNS = [
    "commit", "date", "machine", "python", "model", "gpus", "lifetimes", "distribution", "policy", "demand_pct", "runs",
    "first_seed", "last_seed", "T_mean", "demand_at_point_mean", "arrived_mean",
    "acceptance_rate_mean", "acceptance_rate_std", "scheduled_mean", "scheduled_std", "active_gpus_mean",
    "active_gpus_std", "memory_utilization_mean", "memory_utilization_std", "compute_utilization_mean",
    "compute_utilization_std", "fragmentation_mean", "fragmentation_std", "fragmentation_active_mean",
    "fragmentation_active_std", "runtime_s",
]  # fmt: skip
POLICIES = [
    "ff-agnostic", "rr", "bf-bi", "wf-bi", "mfi", "bf-bi:by-amount=true", "wf-bi:by-amount=true",
]  # fmt: skip
DEMAND = [str(d) for d in range(5, 101, 5)]
LOADS = ["none", "demand"]  # --quick: the default reading and the text's literal one
# What one run measures; the run's provenance (commit, date, ...) and timing may differ.
MEASURED = [c for c in COLUMNS if c not in ("commit", "date", "machine", "python", "runtime_s")]


def _run(out: Path) -> list[dict[str, str]]:
    run("bench_mfi", "--quick", "--out-dir", str(out))  # 2 runs, 10 GPUs, skew-small, 2 lifetime readings
    return read_csv(out / "mfi.csv", COLUMNS)


@pytest.mark.integration
def test_mfi_benchmark_small(tmp_path: Path) -> None:
    before = [digest(p) for p in COMMITTED]
    rows = _run(tmp_path)

    assert [(r["lifetimes"], r["policy"], r["demand_pct"]) for r in rows] == [
        (reading, p, d) for reading in LOADS for p in POLICIES for d in DEMAND
    ]
    for r in rows:
        assert (r["model"], r["gpus"], r["distribution"]) == ("A100-80GB", "10", "skew-small")
        assert (r["runs"], r["first_seed"], r["last_seed"]) == ("2", "0", "1")
        assert 0 <= float(r["acceptance_rate_mean"]) <= 1
        assert float(r["acceptance_rate_mean"]) == pytest.approx(
            float(r["scheduled_mean"]) / float(r["arrived_mean"]), rel=0.05
        )
        assert 0 < float(r["scheduled_mean"]) <= float(r["arrived_mean"])
        assert 1 <= float(r["active_gpus_mean"]) <= 10
        assert 0 < float(r["memory_utilization_mean"]) <= 1
        assert float(r["demand_at_point_mean"]) >= float(r["demand_pct"])
        # the paper's mean over all GPUs counts empty GPUs as 0: never above the mean over active ones
        assert float(r["fragmentation_mean"]) <= float(r["fragmentation_active_mean"]) + 1e-9
    for reading in LOADS:
        for p in POLICIES:
            own = [r for r in rows if r["policy"] == p and r["lifetimes"] == reading]
            scheduled = [float(r["scheduled_mean"]) for r in own]
            assert scheduled == sorted(scheduled), p  # cumulative: never falls as demand grows
    # every policy met the same requests: the same arrivals at each demand point, whatever the lifetimes
    assert len({(r["demand_pct"], r["arrived_mean"]) for r in rows}) == len(DEMAND)
    at = {(r["lifetimes"], r["policy"], r["demand_pct"]): r for r in rows}
    for reading in LOADS:
        assert float(at[reading, "mfi", "100"]["scheduled_mean"]) > float(
            at[reading, "ff-agnostic", "100"]["scheduled_mean"]
        )
    # no departures: nothing leaves, so the cluster is fuller than under the literal reading's lifetimes
    for p in POLICIES:
        none, demand = at["none", p, "100"], at["demand", p, "100"]
        assert float(none["memory_utilization_mean"]) >= float(demand["memory_utilization_mean"]) - 1e-9, p
    # the literal reading: MFI accepts every request of both traces; with no departures it cannot
    assert float(at["demand", "mfi", "100"]["acceptance_rate_mean"]) == 1.0
    assert float(at["none", "mfi", "100"]["acceptance_rate_mean"]) < 1.0

    readme = (tmp_path / "README.md").read_text()
    section = readme[readme.index("<!-- mfi:begin -->") : readme.index("<!-- mfi:end -->")]
    for reading in LOADS:
        assert f"| 10 A100-80GB | {reading} | skew-small | legal start | 2 |" in section
        assert f"| 10 A100-80GB | {reading} | skew-small | by amount | 2 |" in section
    # FF against RR: where FF overtakes (the same seeds give the same answer)
    assert (
        "| 10 A100-80GB | none | skew-small | from 70 % | 72.8 / 85.0 | 72.2 / 70.2 | 71.9 / 66.0 |"
        in section
    )
    assert "| 10 A100-80GB | demand | skew-small | never |" in section
    assert "Fig. 5 and Fig. 6, lifetimes `none`" in section
    assert section.count("<details>") == 7  # one Fig. 4 table per metric
    assert (tmp_path / "mfi.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    # The same seeds give the same rows; the second run is appended, the README shows the latest.
    again = _run(tmp_path)
    assert len(again) == 2 * len(rows)
    assert [[r[c] for c in MEASURED] for r in again[len(rows) :]] == [[r[c] for c in MEASURED] for r in rows]
    assert f"from {2 * len(rows)} rows" in (tmp_path / "README.md").read_text()

    assert [digest(p) for p in COMMITTED] == before


def test_benchmark_policies_keep_every_state_valid() -> None:
    # The benchmark replays without the verifier; here each of its policies replays a small
    # trace of every distribution with the verifier after every event.
    bench = load("bench_mfi")
    assert list(bench.POLICIES) == POLICIES
    assert list(bench.LOADS) == ["none", "saturate", "demand-x4", "demand"]
    assert bench.DEFAULT_LOAD == "none"
    for options in bench.LOADS.values():
        for distribution in ("uniform", "skew-small", "skew-big", "bimodal"):
            trace = fbk_trace(gpus=4, distribution=distribution, seed=3, **options)
            for spec in bench.POLICIES:
                result = simulate(trace, make_policy(spec), seed=3, debug=True)
                assert result.summary["arrived"] == len(trace.requests)
