"""Smoke test of ``bench_scale``: validate and a time-limited solve of a small IBM instance in fresh
processes, into a tmp dir (no timing asserted: the limit's verdict is the benchmark's business)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "gpus", "workloads", "seed", "command", "runs", "median_s",
    "min_s", "max_s", "peak_rss_mb", "limit_s", "start_s", "allowed_s", "held", "termination",
    "placed_new", "load_1min",
]  # fmt: skip


@pytest.mark.integration
def test_scale_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "scale.csv", README]
    before = [digest(p) for p in committed]
    run("bench_scale", "--quick", "--out-dir", str(tmp_path))  # 160 GPUs, 1 run, --time-limit 5
    rows = read_csv(tmp_path / "scale.csv", COLUMNS)
    assert [(r["gpus"], r["workloads"], r["command"]) for r in rows] == [
        ("160", "492", "validate"),
        ("160", "492", "solve --time-limit 5"),
    ]
    validate, solve = rows
    for row in rows:
        assert row["runs"] == "1" and float(row["min_s"]) == float(row["median_s"]) > 0
        assert 20 < float(row["peak_rss_mb"]) < 2048
    assert validate["held"] == validate["termination"] == ""
    start = float(solve["start_s"])
    assert float(solve["allowed_s"]) == pytest.approx(1.1 * 5 + start, abs=1e-3)
    assert solve["held"] == ("yes" if float(solve["max_s"]) <= float(solve["allowed_s"]) else "no")
    assert solve["termination"] in ("optimal", "time_limit") and int(solve["placed_new"]) > 0
    text = (tmp_path / "README.md").read_text()
    assert "| 160 | 492 | `mipopt validate` |" in text
    assert "| 160 | 492 | `mipopt solve --time-limit 5` |" in text
    assert [digest(p) for p in committed] == before


def test_the_verdict_names_the_allowance() -> None:
    bench = load("bench_scale")
    row = {
        "held": "yes",
        "max_s": "21.04",
        "allowed_s": "22.6",
        "termination": "time_limit",
        "placed_new": "1234",
    }
    assert bench._held(row) == "yes (max 21.0 s, allowed 22.6 s)"
    assert bench._held(row | {"held": "no", "max_s": "30"}) == "no (max 30.0 s, allowed 22.6 s)"
    assert bench._held(row | {"held": ""}) == "-"
    assert bench._answer(row) == "time_limit, 1,234 new placed"


def test_arguments_are_checked() -> None:
    done = run("bench_scale", "--gpus", "4", "--out-dir", "/nonexistent", check=False)
    assert done.returncode == 2 and "--gpus at least 8" in done.stderr
