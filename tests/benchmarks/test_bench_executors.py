"""Smoke test of ``bench_executors``: the grids on serial, 2 processes and a Dask local cluster."""

from __future__ import annotations

import argparse
import importlib.util
from pathlib import Path

import pytest

from benchmarks import common
from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "grid", "setup", "jobs", "executor", "workers", "start_s",
    "wall_s", "speedup", "identical", "digest", "load_avg", "dask", "ray",
]  # fmt: skip


@pytest.mark.integration
@pytest.mark.skipif(importlib.util.find_spec("distributed") is None, reason="needs dask.distributed (.[dev])")
def test_executors_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "executors.csv", README]
    before = [digest(p) for p in committed]
    run("bench_executors", "--quick", "--out-dir", str(tmp_path))
    rows = read_csv(tmp_path / "executors.csv", COLUMNS)
    assert [(r["grid"], r["executor"], r["workers"]) for r in rows] == [
        (grid, spec, workers)
        for grid in ("simulate", "bench")
        for spec, workers in (("serial", "1"), ("local:2", "2"), ("dask:local:2", "2"))
    ]
    assert [r["jobs"] for r in rows] == ["6"] * 3 + ["2"] * 3  # 2 runs x 3 policies; 2 instances
    for grid in ("simulate", "bench"):
        mine = [r for r in rows if r["grid"] == grid]
        assert {r["digest"] for r in mine} == {mine[0]["digest"]} and all(
            r["identical"] == "True" for r in mine
        )
        assert mine[0]["speedup"] == "1.00" and float(mine[2]["start_s"]) > 0  # a cluster takes time to start
    text = (tmp_path / "README.md").read_text()
    assert "| simulate | 6 | `dask:local:2` | 2 |" in text and "- `bench`: IBM WPM 8 GPUs, seeds 0-1" in text
    assert [digest(p) for p in committed] == before


def test_other_results_fail_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    """A digest other than the first executor's is :class:`common.Failed`: nothing is written."""
    bench = load("bench_executors")
    answers = iter(["aaaa", "aaaa", "bbbb"])
    monkeypatch.setattr(bench, "simulate_grid", lambda args: ("a grid", 3, lambda ex: next(answers)))
    args = argparse.Namespace(grids=["simulate"], executors=["serial", "serial", "serial"])
    with pytest.raises(common.Failed, match="simulate: serial gave other results than serial"):
        bench.measure(args)


def test_bad_executor_specs_are_refused_by_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        load("bench_executors").BENCH.parse_args(["--executors", "serial", "local:0"])
    assert "argument --executors: local:N needs N >= 1, got '0'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        load("bench_mfi").BENCH.parse_args(["--executor", "spark"])
    assert "argument --executor: unknown executor 'spark'" in capsys.readouterr().err
