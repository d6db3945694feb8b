"""Smoke test of the benchmark harness: the geometry benchmark at 200 GPUs, into a tmp dir."""

from __future__ import annotations

import csv
import hashlib
import importlib.util
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "benchmarks" / "bench_geometry.py"
COMMITTED = [ROOT / "benchmarks" / "results" / "geometry.csv", ROOT / "benchmarks" / "README.md"]

COLUMNS = [
    "commit", "date", "machine", "python", "numpy", "method", "model", "gpus", "profiles", "seed",
    "repeats", "requests_per_repeat", "median_per_request_ms", "min_per_request_ms", "runtime_s",
    "speedup", "target_ms", "answers_checked", "mismatches", "fits_fraction", "mean_used_slots",
]  # fmt: skip
BASE_PROFILES = {
    "A100-40GB": "1g.5gb;1g.10gb;2g.10gb;3g.20gb;4g.20gb;7g.40gb",
    "H100-80GB": "1g.10gb;1g.20gb;2g.20gb;3g.40gb;4g.40gb;7g.80gb",
    "RTX-PRO-6000-Blackwell-96GB": "1g.24gb;2g.48gb;4g.96gb",
}


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def _run(out: Path, *extra: str) -> list[dict[str, str]]:
    args = ["--gpus", "200", "--repeats", "1", "--out-dir", str(out), "--readme", str(out / "README.md")]
    subprocess.run([sys.executable, str(SCRIPT), *args, *extra], cwd=ROOT, check=True, capture_output=True)
    with (out / "geometry.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == COLUMNS
        return list(reader)


def _common() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_common", ROOT / "benchmarks" / "common.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_geometry_benchmark_small(tmp_path: Path) -> None:
    before = [_digest(p) for p in COMMITTED]
    rows = _run(tmp_path)

    assert [(r["model"], r["method"]) for r in rows] == [
        (m, method) for m in BASE_PROFILES for method in ("tables", "python-loop")
    ]
    for row in rows:
        nprof = len(BASE_PROFILES[row["model"]].split(";"))
        assert row["profiles"] == BASE_PROFILES[row["model"]]
        assert (row["gpus"], row["seed"], row["repeats"]) == ("200", "0", "1")
        # Both methods answered every (GPU, profile) pair identically.
        assert int(row["answers_checked"]) == 200 * nprof
        assert row["mismatches"] == "0"
        assert float(row["median_per_request_ms"]) > 0
        assert 0 < float(row["fits_fraction"]) < 1
        assert 0 < float(row["mean_used_slots"]) < (12 if row["model"].startswith("RTX") else 8)
        assert (row["speedup"] != "") == (row["method"] == "tables")
    for tables, loop in zip(rows[::2], rows[1::2], strict=True):
        assert float(tables["speedup"]) > 1
        assert tables["fits_fraction"] == loop["fits_fraction"]

    readme = (tmp_path / "README.md").read_text()
    begin, end = readme.index("<!-- geometry:begin -->"), readme.index("<!-- geometry:end -->")
    table = [line for line in readme[begin:end].splitlines() if line.startswith("| ")]
    assert len(table) == 2 + 3  # header, rule, one line per model
    assert all("PASS (< 1 ms)" in line and "| 200 |" in line for line in table[2:])

    assert [_digest(p) for p in COMMITTED] == before


def test_same_seed_same_states_and_latest_run_in_readme(tmp_path: Path) -> None:
    first = _run(tmp_path, "--models", "A100-40GB")
    rows = _run(tmp_path, "--models", "A100-40GB")
    assert len(rows) == 4  # appended, not rewritten
    keep = ("fits_fraction", "mean_used_slots", "answers_checked")
    assert [r[k] for r in rows[2:] for k in keep] == [r[k] for r in first for k in keep]
    readme = (tmp_path / "README.md").read_text()
    assert "from 4 rows" in readme
    assert readme.count("| A100-40GB |") == 1  # only the latest run of the configuration


def test_replace_section_keeps_surrounding_text(tmp_path: Path) -> None:
    common = _common()
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- x:begin -->\nold\n<!-- x:end -->\noutro\n")
    common.replace_section(readme, "x", "new")
    assert readme.read_text() == "intro\n<!-- x:begin -->\nnew\n<!-- x:end -->\noutro\n"
    readme.write_text("<!-- x:end -->\n<!-- x:begin -->\n")
    with pytest.raises(ValueError, match="missing or out of order"):
        common.replace_section(readme, "x", "new")


def test_append_rows_refuses_another_header(tmp_path: Path) -> None:
    common = _common()
    path = tmp_path / "r.csv"
    assert common.append_rows(path, ["a", "b"], [{"a": 1, "b": None}]) == 1
    assert path.read_text() == "a,b\n1,\n"
    with pytest.raises(ValueError, match="differs from"):
        common.append_rows(path, ["a", "c"], [{"a": 1, "c": 2}])
    with pytest.raises(ValueError, match=r"missing columns \['b'\]"):
        common.append_rows(path, ["a", "b"], [{"a": 1}])
