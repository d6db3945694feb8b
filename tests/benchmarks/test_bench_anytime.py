"""Smoke test of ``bench_anytime``: time-limited answers against the proven optimum, into a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "highspy", "objective", "gpus", "seed", "running",
    "time_limit_s", "elapsed_s", "status", "acceptance", "hardware", "migrations", "restarts", "restarted",
    "moved_memory_gb", "opt_status", "opt_runtime_s", "opt_acceptance", "opt_hardware", "opt_restarted",
    "warm_method", "vs_warm", "restarts_ok", "limit_ok", "runs", "restarted_max", "elapsed_max_s", "class",
    "opt_migrations", "migrations_ok",
]  # fmt: skip


@pytest.mark.integration
def test_anytime_benchmark_on_the_dense_class(tmp_path: Path) -> None:
    """One dense host of 8 GPUs, a 1 s limit: the optimum is proven, and the row judges the
    answer's migrations against it."""
    committed = [RESULTS / "anytime.csv", README]
    before = [digest(p) for p in committed]
    run("bench_anytime", "--quick", "--class", "dense", "--sizes", "8", "--out-dir", str(tmp_path))
    [row] = read_csv(tmp_path / "anytime.csv", COLUMNS)
    assert (row["class"], row["gpus"], row["seed"], row["time_limit_s"]) == ("dense", "8", "0", "1.0")
    assert row["opt_status"] == "optimal" and row["limit_ok"] == "True" and row["vs_warm"] != "worse"
    reached = (row["acceptance"], row["hardware"]) == (row["opt_acceptance"], row["opt_hardware"])
    within = float(row["migrations"]) <= 1.1 * float(row["opt_migrations"]) + 1e-9
    assert row["migrations_ok"] == str(reached and within)
    text = (tmp_path / "README.md").read_text()
    assert "| dense | 8 | 1 s | 1 |" in text and " of proven |" in text
    assert [digest(p) for p in committed] == before
