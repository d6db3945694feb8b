"""Smoke test of benchmarks/bench_online.py at tiny sizes, into a tmp dir, on a synthetic Alibaba trace."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run
from tests.factories import write_alibaba_csvs

COMMITTED = [RESULTS / "online.csv", README]

COLUMNS = [
    "commit", "date", "machine", "python", "numpy", "measurement", "policy", "method", "workload", "gpus",
    "requests", "runs", "repeats", "timed_fraction", "time_s", "min_time_s", "runtime_s", "ratio", "target_s",
    "decisions_checked", "mismatches", "acceptance_rate", "seed",
]  # fmt: skip
POLICIES = ["ff", "mfi", "grmu", "adapter(mfi)"]
LOOPED = {"ff", "mfi"}


def _alibaba_dir(root: Path) -> Path:
    """Three hosts (8 + 2 + 1 GPUs) and 40 pods of every GPU share, overlapping in time."""
    shares = [0, 100, 200, 300, 500, 1000]
    pods = [
        (f"p{i}", 1, shares[i % 6], 1000 + 600 * i, 1000 + 600 * i + 7200 * (1 + i % 5)) for i in range(40)
    ]
    return write_alibaba_csvs(root, [("n0", 8), ("n1", 2), ("n2", 1)], pods)


def _run(out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run("bench_online", "--out-dir", str(out), "--readme", str(out / "README.md"), *args)


@pytest.mark.integration
def test_online_benchmark_small(tmp_path: Path) -> None:
    before = [digest(p) for p in COMMITTED]
    alibaba = _alibaba_dir(tmp_path / "alibaba")
    out = tmp_path / "out"
    # The loop replays the first 15 of the 40 Alibaba requests and 1 of the 2 FBK runs.
    _run(
        out,
        "--alibaba", str(alibaba), "--policies", *POLICIES, "--repeats", "1", "--loop-requests", "15",
        "--decision-gpus", "40", "--decision-repeats", "1", "--decision-loop-repeats", "1",
        "--fbk-runs", "2", "--fbk-gpus", "8", "--loop-runs", "1",
    )  # fmt: skip
    rows = read_csv(out / "online.csv", COLUMNS)

    expected = [("decision", "mfi", "tables"), ("decision", "mfi", "python-loop")]
    for part in ("alibaba", "fbk"):
        for policy in POLICIES:
            expected.append((part, policy, "tables"))
            if policy in LOOPED:
                expected.append((part, policy, "python-loop"))
    assert [(r["measurement"], r["policy"], r["method"]) for r in rows] == expected

    by = {(r["measurement"], r["policy"], r["method"]): r for r in rows}
    for (part, policy, method), row in by.items():
        assert float(row["time_s"]) > 0 and float(row["target_s"]) > 0
        looped = part == "decision" or policy in LOOPED
        # The loop and the tables made the same decisions, on every decision compared.
        assert row["mismatches"] == ("0" if looped else "")
        assert (int(row["decisions_checked"]) > 0) if looped else row["decisions_checked"] == ""
        assert (row["ratio"] != "") == (looped and method == "tables")
    assert by[("decision", "mfi", "tables")]["gpus"] == "40"
    assert by[("decision", "mfi", "python-loop")]["decisions_checked"] == "6"  # one per base profile
    # 40 pods on 11 GPUs: every pod's share maps to a profile and all are kept
    ali = by[("alibaba", "mfi", "python-loop")]
    assert (ali["gpus"], ali["requests"], ali["timed_fraction"]) == ("11", "15", f"{15 / 40:.6g}")
    assert ali["decisions_checked"] == "15"
    assert by[("alibaba", "mfi", "tables")]["requests"] == "40"
    fbk = by[("fbk", "ff", "python-loop")]
    assert (fbk["runs"], fbk["timed_fraction"]) == ("1", "0.5")
    assert by[("fbk", "ff", "tables")]["runs"] == "2"
    assert 0 < float(by[("fbk", "mfi", "tables")]["acceptance_rate"]) <= 1

    readme = (out / "README.md").read_text()
    begin, end = readme.index("<!-- online:begin -->"), readme.index("<!-- online:end -->")
    table = [line for line in readme[begin:end].splitlines() if line.startswith("| ")]
    assert len(table) == 2 + 1 + 2 * len(POLICIES)  # header, rule, decision, one line per (part, policy)
    assert "extrapolated from the first 15 of 40 requests" in readme
    assert "extrapolated from 1 of 2 runs" in readme

    assert [digest(p) for p in COMMITTED] == before


@pytest.mark.integration
def test_missing_alibaba_trace_is_skipped(tmp_path: Path) -> None:
    done = _run(tmp_path, "--parts", "alibaba", "--alibaba", str(tmp_path / "nowhere"))
    assert "alibaba: skipped" in done.stderr
    assert read_csv(tmp_path / "online.csv", COLUMNS) == []


def test_a_disagreement_stops_the_run() -> None:
    bench = load("bench_online")
    same = [("a", (0, 1)), ("b", None)]
    assert bench.check_same("x", same, list(same)) == 2
    with pytest.raises(
        bench.DecisionsDiffer, match=r"x: decision 1 differs: .*'b', None.* python loop .*'b', \(2, 0\)"
    ):
        bench.check_same("x", same, [("a", (0, 1)), ("b", (2, 0))])
