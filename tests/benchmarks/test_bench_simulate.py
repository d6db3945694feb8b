"""Smoke test of ``bench_simulate``: the README's simulate examples timed in fresh processes, into a tmp dir."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "name", "command", "runs", "median_s", "min_s", "max_s",
    "peak_rss_mb", "series_rows", "series_mb", "target_s", "target_mb",
]  # fmt: skip


@pytest.mark.integration
def test_simulate_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "simulate.csv", README]
    before = [digest(p) for p in committed]
    run("bench_simulate", "--quick", "--out-dir", str(tmp_path))
    rows = read_csv(tmp_path / "simulate.csv", COLUMNS)
    assert [r["name"] for r in rows] == ["fbk", "poisson-cluster"]
    for row in rows:
        assert row["runs"] == "1" and 0 < float(row["median_s"]) < 60
        assert 20 < float(row["peak_rss_mb"]) < 2048  # a Python process with numpy and pandas
        assert int(row["series_rows"]) > 10
    assert rows[1]["command"].startswith(
        "mipopt simulate --workload poisson:cluster=instances/quickstart.json"
    )
    text = (tmp_path / "README.md").read_text()
    assert (
        "| `mipopt simulate --workload fbk:distribution=skew-big --policy mfi --policy ff-agnostic --policy rr "
        "--policy bf-bi:by-amount=true --out DIR` |" in text
    )
    assert [digest(p) for p in committed] == before


def test_verdict_needs_both_targets() -> None:
    verdict = load("bench_simulate")._verdict
    row = {"median_s": "12", "peak_rss_mb": "300", "target_s": "60", "target_mb": "2048"}
    assert verdict(row) == "PASS (< 60 s, < 2 GB)"
    assert verdict(row | {"peak_rss_mb": "2100"}) == "FAIL (< 60 s, < 2 GB)"
    assert verdict(row | {"target_s": "", "target_mb": ""}) == "-"


def test_the_benchmark_times_the_readme_commands() -> None:
    import re

    from tests.bench_scripts import ROOT

    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Online policies over time\n(.*?)^## ", text, re.S | re.M)
    assert section
    readme = {
        c.strip().replace('"', "").removesuffix(" --out out/")
        for c in re.findall(r"^```\n(mipopt simulate .*?)^```", section.group(1), re.S | re.M)
    }
    timed = {
        "mipopt simulate " + text.format(trace="../shared/data/alibaba-gpu-v2023")
        for text, *_ in load("bench_simulate").COMMANDS.values()
    }
    assert len(readme) == 4 and readme <= timed
