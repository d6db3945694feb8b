"""Smoke test of ``bench_limits``: an import of 2,000 GPUs and two time-limited hindsight calls (one
refused up front), into a tmp dir (no timing asserted: whether a limit held is the benchmark's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "kind", "gpus", "requests", "limit_s", "wall_s", "held",
    "peak_rss_mb", "result",
]  # fmt: skip


@pytest.mark.integration
def test_limits_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "limits.csv", README]
    before = [digest(p) for p in committed]
    run("bench_limits", "--quick", "--out-dir", str(tmp_path))  # 2,000 GPUs; hindsight 40:5 and 200:0.5
    rows = read_csv(tmp_path / "limits.csv", COLUMNS)
    assert [(r["kind"], r["gpus"], r["limit_s"]) for r in rows] == [
        ("import", "2000", ""),
        ("hindsight", "40", "5.0"),
        ("hindsight", "200", "0.5"),
    ]
    imported, solved, refused = rows
    assert imported["result"] == "2000 GPUs, 2000 workloads" and float(imported["wall_s"]) > 0
    assert solved["requests"] == "271" and solved["result"].split()[0] in ("optimal", "feasible")
    assert refused["requests"] == "1353" and refused["result"] == "refused"
    for row in (solved, refused):
        assert row["held"] == ("yes" if float(row["wall_s"]) <= 1.1 * float(row["limit_s"]) else "no")
    text = (tmp_path / "README.md").read_text()
    assert "| import | 2,000 | - | - |" in text and "| hindsight | 200 | 1,353 | 0.5 s |" in text
    assert [digest(p) for p in committed] == before
