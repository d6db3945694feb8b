"""Smoke test of ``bench_reopt``: reopt against other policies on a small FBK stream, into a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "part", "workload", "seed", "policy", "gpus", "arrived",
    "accepted", "acceptance_rate", "hardware_area", "mean_active_gpus", "migrations", "parking_moves",
    "disruptive_moves", "gb_moved", "reopts", "reopts_applied", "placed_by_reopt", "solve_s",
    "solve_mean_s", "solve_max_s", "unproven", "budget_exhausted", "runtime_s",
]  # fmt: skip


@pytest.mark.integration
def test_reopt_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "reopt.csv", README]
    before = [digest(p) for p in committed]
    run("bench_reopt", "--quick", "--out-dir", str(tmp_path))
    rows = read_csv(tmp_path / "reopt.csv", COLUMNS)
    assert [r["policy"] for r in rows] == ["reopt:base=mfi,interval=5,time_limit=1", "mfi", "grmu"]
    assert {r["workload"] for r in rows} == {"fbk:gpus=6"} and {r["gpus"] for r in rows} == {"6"}
    arrived = {r["arrived"] for r in rows}
    assert len(arrived) == 1 and int(arrived.pop()) > 10  # every policy meets the same requests
    reopt, mfi, grmu = rows
    assert int(reopt["reopts"]) >= 1 and float(reopt["solve_s"]) > 0
    assert float(reopt["solve_max_s"]) <= float(reopt["solve_s"]) + 1e-9
    assert mfi["reopts"] == grmu["reopts"] == ""  # counters of reopt only
    for r in rows:
        assert 0 < float(r["acceptance_rate"]) <= 1
        assert int(r["accepted"]) == round(float(r["acceptance_rate"]) * int(r["arrived"]))
    text = (tmp_path / "README.md").read_text()
    assert "| fbk | `fbk:gpus=6` | `reopt:base=mfi,interval=5,time_limit=1` | 1 |" in text
    assert [digest(p) for p in committed] == before


def test_bad_reopt_spec_is_a_usage_error() -> None:
    out = run("bench_reopt", "--reopt", "reopt:time_limit=-1", "--out-dir", "/tmp/none", check=False)
    assert out.returncode == 2 and "time_limit" in out.stderr
    assert load("bench_reopt").REOPT == "reopt:base=mfi,interval=24,time_limit=2"
