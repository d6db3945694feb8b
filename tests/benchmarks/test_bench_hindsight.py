"""Smoke test of ``bench_hindsight``: competitive ratios against the hindsight optimum, into a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "setting", "seed", "gpus", "requests", "epochs", "policy",
    "acceptance", "free_status", "free_value", "free_bound", "free_s", "forbidden_status",
    "forbidden_value", "forbidden_bound", "forbidden_s", "time_limit_s", "threads",
]  # fmt: skip


@pytest.mark.integration
def test_hindsight_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "hindsight.csv", README]
    before = [digest(p) for p in committed]
    run("bench_hindsight", "--quick", "--out-dir", str(tmp_path))
    rows = read_csv(tmp_path / "hindsight.csv", COLUMNS)
    assert [(r["seed"], r["policy"]) for r in rows] == [("0", "ff"), ("0", "mfi"), ("1", "ff"), ("1", "mfi")]
    for r in rows:
        assert r["gpus"] == "4" and int(r["requests"]) > 20 and int(r["epochs"]) > 5
        assert r["free_status"] == r["forbidden_status"] == "optimal"
        assert r["free_value"] == r["free_bound"] and r["forbidden_value"] == r["forbidden_bound"]
        # an online policy never beats the optimum; forbidding migrations never helps it
        acceptance, free, forbidden = (float(r[c]) for c in ("acceptance", "free_value", "forbidden_value"))
        assert 0 < acceptance <= forbidden <= free <= int(r["requests"])
    # the optimum is solved once per trace: equal on both policies' rows
    assert rows[0]["free_value"] == rows[1]["free_value"]
    text = (tmp_path / "README.md").read_text()
    assert "<!-- hindsight-ratios:begin -->" in text and "<!-- hindsight-optimum:end -->" in text
    assert "| Policy | `fbk:gpus=4,demand=400` |" in text
    assert [digest(p) for p in committed] == before


def test_cells_mark_unproven_optima() -> None:
    bench = load("bench_hindsight")
    row = {"acceptance": "9", "free_status": "optimal", "free_bound": "10", "forbidden_status": "feasible",
           "forbidden_bound": "12", "forbidden_value": "10"}  # fmt: skip
    assert bench._ratio(row, "free") == (0.9, True)
    assert bench._ratio(row, "forbidden") == (0.75, False)
    assert bench._ratio(row | {"forbidden_bound": ""}, "forbidden") is None
    assert bench._cell([(0.9, True), (0.8, True)]) == "0.850 (0.800)"
    assert bench._cell([(0.9, True), (0.75, False)]) == "0.825 (0.750)*"
    assert bench._cell([]) == "-"
