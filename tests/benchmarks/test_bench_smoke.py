"""Smoke tests of the benchmark harness, into a tmp dir: geometry at 200 GPUs, exact models at 2 and 8 GPUs."""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import common
from tests.bench_scripts import README, RESULTS, ROOT, digest, load, read_csv, run

COMMITTED = [RESULTS / "geometry.csv", README]

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


def _run(out: Path, *extra: str) -> list[dict[str, str]]:
    run("bench_geometry", "--quick", "--out-dir", str(out), *extra)  # 200 GPUs, 1 repeat
    return read_csv(out / "geometry.csv", COLUMNS)


@pytest.mark.integration
def test_geometry_benchmark_small(tmp_path: Path) -> None:
    before = [digest(p) for p in COMMITTED]
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

    assert [digest(p) for p in COMMITTED] == before


@pytest.mark.integration
def test_same_seed_same_states_and_latest_run_in_readme(tmp_path: Path) -> None:
    first = _run(tmp_path, "--models", "A100-40GB")
    rows = _run(tmp_path, "--models", "A100-40GB")
    assert len(rows) == 4  # appended, not rewritten
    keep = ("fits_fraction", "mean_used_slots", "answers_checked")
    assert [r[k] for r in rows[2:] for k in keep] == [r[k] for r in first for k in keep]
    readme = (tmp_path / "README.md").read_text()
    assert "from 4 rows" in readme
    assert readme.count("| A100-40GB |") == 1  # only the latest run of the configuration


@pytest.mark.integration
def test_the_script_runs_as_a_file_and_quick_needs_an_out_dir(tmp_path: Path) -> None:
    # ``python benchmarks/bench_X.py`` from anywhere runs the package's module
    script = ROOT / "benchmarks" / "bench_geometry.py"
    args = ["--models", "A100-40GB", "--gpus", "20", "--repeats", "1", "--out-dir", str(tmp_path)]
    done = subprocess.run(
        [sys.executable, str(script), *args, "--readme", str(tmp_path / "R.md")],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert len(read_csv(tmp_path / "geometry.csv", COLUMNS)) == 2
    refused = run("bench_geometry", "--quick", check=False)
    assert refused.returncode == 2 and "--quick rows are not results: give --out-dir" in refused.stderr


def test_render_regenerates_the_committed_tables(tmp_path: Path) -> None:
    """Every README section comes out of the committed rows as committed: ``--render`` changes nothing."""
    readme = tmp_path / "README.md"
    readme.write_text(README.read_text())
    for name in ("geometry", "online", "exact", "wpm", "gap", "mfi", "grmu", "migrate", "anytime"):
        bench = load(f"bench_{name}").BENCH
        args = bench.parse_args(["--render", "--out-dir", str(RESULTS), "--readme", str(readme)])
        assert [p.name for p in bench.render(args)] == [o.csv for o in bench.outputs], name
    # the notes name each CSV file from the README's folder: the copy is elsewhere
    rendered = readme.read_text().replace(os.path.relpath(RESULTS, tmp_path), "results")
    assert rendered == README.read_text()


def test_replace_section_keeps_surrounding_text(tmp_path: Path) -> None:
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- x:begin -->\nold\n<!-- x:end -->\noutro\n")
    common.replace_section(readme, "x", "new")
    assert readme.read_text() == "intro\n<!-- x:begin -->\nnew\n<!-- x:end -->\noutro\n"
    readme.write_text("<!-- x:end -->\n<!-- x:begin -->\n")
    with pytest.raises(ValueError, match="missing or out of order"):
        common.replace_section(readme, "x", "new")


def test_append_rows_refuses_another_header(tmp_path: Path) -> None:
    path = tmp_path / "r.csv"
    assert common.append_rows(path, ["a", "b"], [{"a": 1, "b": None}]) == 1
    assert path.read_text() == "a,b\n1,\n"
    with pytest.raises(ValueError, match="differs from"):
        common.append_rows(path, ["a", "c"], [{"a": 1, "c": 2}])
    with pytest.raises(ValueError, match=r"missing columns \['b'\]"):
        common.append_rows(path, ["a", "b"], [{"a": 1}])


def test_the_commit_label_ignores_what_benchmarks_write(tmp_path: Path) -> None:
    """A checkout whose only changes are benchmark outputs is clean; a changed source is dirty."""

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    for name in ("benchmarks/results/x.csv", "benchmarks/README.md", "mipopt/m.py"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text("a\n")
    git("init", "-q")
    git("add", ".")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "c")
    head = subprocess.run(
        ["git", "rev-parse", "--short", "HEAD"], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.strip()
    (tmp_path / "benchmarks/results/x.csv").write_text("a\nb\n")
    (tmp_path / "benchmarks/README.md").write_text("b\n")
    assert common.git_commit(tmp_path) == head
    (tmp_path / "mipopt/m.py").write_text("b\n")
    assert common.git_commit(tmp_path) == f"{head}-dirty"


# --- exact models (benchmarks/bench_exact.py)

EXACT_COMMITTED = [RESULTS / "exact.csv", README]
EXACT_COLUMNS = [
    "commit", "date", "machine", "python", "highspy", "ortools", "class", "instance", "gpus", "hosts", "seed",
    "running", "new", "model", "solver", "objective", "time_limit_s", "threads", "termination", "status",
    "proven", "runtime_s", "build_s", "solve_s", "acceptance", "hardware", "migrations", "restarts", "bound",
    "gap", "stage_times", "stage_proven", "stage_gaps", "stage_models", "variables", "constraints", "valid",
    "violations", "message",
]  # fmt: skip


@pytest.mark.slow
@pytest.mark.integration
def test_exact_benchmark_small(tmp_path: Path) -> None:
    bench = load("bench_exact")  # in this process: the solver imports are paid once
    before = [digest(p) for p in EXACT_COMMITTED]
    # IBM class, grmu at 8 GPUs and grmu-paper at 2, one seed, 30 s
    assert bench.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    rows = read_csv(tmp_path / "exact.csv", EXACT_COLUMNS)

    # the paper form only at its own size 2, the tight form at 8; both solvers each
    assert [(r["gpus"], r["model"], r["solver"]) for r in rows] == [
        ("2", "grmu-paper", "highs"), ("2", "grmu-paper", "cpsat"), ("8", "grmu", "highs"), ("8", "grmu", "cpsat"),
    ]  # fmt: skip
    for row in rows:
        assert (row["valid"], row["violations"]) == ("True", "0")
        assert (row["termination"], row["status"], row["proven"], row["seed"], row["time_limit_s"]) == (
            "optimal", "optimal", "True", "0", "30.0",
        )  # fmt: skip
        assert row["class"] == "ibm" and row["instance"] == f"ibm-{row['gpus']}gpus-seed0"
        # one entry per lexicographic stage in each stage column, every one proven
        stages = [part.partition(":")[0] for part in row["stage_proven"].split(";") if part]
        assert all(part.endswith(":1") for part in row["stage_proven"].split(";") if part)
        for column in ("stage_times", "stage_gaps", "stage_models"):
            assert [part.rpartition(":")[0] for part in row[column].split(";") if part] == stages
        assert int(row["variables"]) > 0 and int(row["constraints"]) > 0
        # the build is timed apart; for the configuration model it is not the one each stage builds
        assert float(row["build_s"]) > 0
        assert float(row["solve_s"]) == pytest.approx(
            max(float(row["runtime_s"]) - float(row["build_s"]), 0.0), abs=2e-3
        )
    # The optima of the two generated instances (ibm_instance(2 or 8, seed=0)), equal on both solvers:
    # every GPU stays on, acceptance counts placed compute slices.
    optima = {(r["gpus"], r["acceptance"], r["hardware"], r["migrations"]) for r in rows}
    assert optima == {("2", "12", "3", "0"), ("8", "50", "9", "0")}
    assert {(r["gpus"], r["hosts"], r["running"], r["new"]) for r in rows} == {
        ("2", "1", "4", "3"),
        ("8", "1", "17", "11"),
    }

    readme = (tmp_path / "README.md").read_text()
    begin, end = readme.index("<!-- exact:begin -->"), readme.index("<!-- exact:end -->")
    section = readme[begin:end]
    table = [line for line in section.split("Targets (issue 12)")[0].splitlines() if line.startswith("| ")]
    assert len(table) == 2 + 4
    assert [line.split(" | ")[:6] for line in table[2:]] == [
        ["| ibm", "2", "grmu-paper", "highs", "1", "1"], ["| ibm", "2", "grmu-paper", "cpsat", "1", "1"],
        ["| ibm", "8", "grmu", "highs", "1", "1"], ["| ibm", "8", "grmu", "cpsat", "1", "1"],
    ]  # fmt: skip
    assert all("| 1/1 | 30 s |" in line for line in table[2:])  # valid, limit
    # no target at 2 or 8 GPUs: the targets table lists every target as not run
    assert section.count("| not run |") == len(bench.TARGETS) == 7
    assert (
        "- `grmu-paper` with highs: 1/1 proven at 2 GPUs: finishes up to 2 GPUs, the largest size run."
        in section
    )

    assert [digest(p) for p in EXACT_COMMITTED] == before


def test_exact_targets_pass_and_fail() -> None:
    verdict = load("bench_exact").target_verdict
    assert verdict("ibm", 80, "grmu", "highs", [0.5, 0.9, 2.5], 60) == "PASS (median 0.90 s <= 1 s)"
    assert verdict("ibm", 80, "grmu", "highs", [1.5, 0.9, 2.5], 60) == "FAIL (median 1.50 s > 1 s)"
    assert verdict("ibm", 80, "grmu", "highs", [0.5, 0.5, None], 60) == (
        "FAIL (1/3 not proven in every stage within 60 s; target <= 1 s)"
    )
    assert verdict("ibm", 400, "grmu", "highs", [9.0, 12.0, 3.0], 60) == "PASS (median 9.00 s <= 10 s)"
    assert verdict("ibm", 1000, "grmu", "highs", [20.0, 41.0, 35.5], 60) == "PASS (max 41.0 s <= 60 s)"
    assert verdict("ibm", 1000, "grmu", "highs", [20.0, None, 35.5], 60) == (
        "FAIL (1/3 not proven in every stage within 60 s; target <= 60 s)"
    )
    assert verdict("alibaba", 6212, "grmu", "highs", [59.0], 60) == "PASS (max 59.0 s <= 60 s)"
    assert verdict("hard", 40, "grmu", "highs", [12.0, 61.0], 90) == "FAIL (max 61.0 s > 60 s)"
    assert verdict("ibm", 80, "grmu", "cpsat", [0.1], 60) == "-"
    assert verdict("ibm", 80, "grmu-slots", "highs", [0.1], 60) == "-"
    assert verdict("ibm", 8, "grmu", "highs", [9.0], 60) == "-"
    assert verdict("hard", 80, "grmu", "highs", [9.0], 60) == "-"


def test_exact_compares_lexicographically() -> None:
    compare = load("bench_exact").compare

    def obj(a: float, h: float, m: float, r: float = 0.0) -> dict[str, float]:
        return {"acceptance": a, "hardware": h, "migrations": m, "restarts": r}

    assert compare(obj(10, 9, 9), obj(9, 1, 0)) == "better"  # acceptance first
    assert compare(obj(10, 3, 9), obj(10, 4, 0)) == "better"  # then hardware
    assert compare(obj(10, 4, 1), obj(10, 4, 0)) == "worse"  # then migrations
    assert compare(obj(10, 4, 0, 2), obj(10, 4, 0, 1)) == "worse"  # then restarts
    assert compare(obj(10, 4, 0), obj(10, 4, 0)) == "equal"
    assert compare(None, obj(1, 1, 1)) == "worse" and compare(obj(1, 1, 1), None) == "better"


@pytest.mark.slow
@pytest.mark.integration
def test_wpm_benchmark_small(tmp_path: Path) -> None:
    bench = load("bench_wpm")
    readme = tmp_path / "README.md"
    assert (
        bench.main(["--sizes", "8", "--seeds", "1", "--out-dir", str(tmp_path), "--readme", str(readme)]) == 0
    )
    with (tmp_path / "wpm.csv").open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["valid"] for r in rows} == {"True"}
    by = {(r["use_case"], r["approach"]): r for r in rows}
    for use_case in ("initial", "compaction", "reconfiguration"):
        assert by[use_case, "wpm"]["termination"] == by[use_case, "grmu"]["termination"] == "optimal"
    # seed 0 at 8 GPUs: the MIPs place all 50 compute slices' worth, the baselines less
    assert float(by["initial", "wpm"]["acceptance"]) == float(by["initial", "grmu"]["acceptance"]) == 50
    assert float(by["initial", "first-fit"]["acceptance"]) < 50
    assert float(by["compaction", "wpm"]["active_gpus"]) < float(by["compaction", "wpm"]["gpus_before"])
    assert "| 8 | compaction | - | wpm |" in readme.read_text()

    # a load sweep point: initial deployment only, at 30 % load, two approaches, appended
    args = ["--sizes", "8", "--seeds", "2", "--use-cases", "initial", "--loads", "0.3"]
    args += ["--approaches", "load-balanced", "rule-based"]
    args += ["--out-dir", str(tmp_path), "--readme", str(readme)]
    assert bench.main(args) == 0
    with (tmp_path / "wpm.csv").open(newline="") as fh:
        sweep = [r for r in csv.DictReader(fh) if r["load"] == "0.3"]
    assert sorted((r["seed"], r["approach"]) for r in sweep) == [
        ("0", "load-balanced"), ("0", "rule-based"), ("1", "load-balanced"), ("1", "rule-based")
    ]  # fmt: skip
    text = readme.read_text()
    normalized = [line for line in text.splitlines() if line.startswith("| 8 | initial | 0.3 |")]
    assert len(normalized) == 6  # two approaches, raw, normalized and against the baselines
    gpus_used = {line.split(" | ")[3]: float(line.split(" | ")[5]) for line in normalized[2:4]}
    assert max(gpus_used.values()) == 1.0  # normalized by the highest mean


# --- start-up (benchmarks/bench_startup.py)


@pytest.mark.integration
def test_startup_benchmark_times_fresh_processes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = load("bench_startup")
    before = [digest(RESULTS / "startup.csv"), digest(README)]
    # the library's import only, and a command whose process fails
    command = 'python -c "import mipopt"'
    monkeypatch.setattr(bench, "COMMANDS", {command: bench.COMMANDS[command]})
    assert bench.main(["--quick", "--out-dir", str(tmp_path)]) == 0
    rows = read_csv(tmp_path / "startup.csv", [*common.RUN_COLUMNS, *bench.COLUMNS])
    assert [(r["kind"], r["rank"]) for r in rows] == [
        ("command", ""),
        *(("importtime", str(i)) for i in (1, 2, 3)),
    ]
    timed = rows[0]
    assert timed["runs"] == "2" and 0 < float(timed["min_s"]) <= float(timed["median_s"]) <= float(
        timed["max_s"]
    )
    own = [float(r["self_s"]) for r in rows[1:]]
    assert own == sorted(own, reverse=True) and all(int(r["modules"]) >= 1 for r in rows[1:])
    readme = (tmp_path / "README.md").read_text()
    assert f"| `{command}` | {float(timed['median_s']):.3f} s |" in readme
    assert f"{rows[1]['package']} {own[0]:.2f} s ({rows[1]['modules']})" in readme

    monkeypatch.setattr(bench, "COMMANDS", {"python -c boom": (("-c", "raise SystemExit(3)"), None)})
    assert bench.main(["--quick", "--out-dir", str(tmp_path / "failed")]) == 1
    assert not (tmp_path / "failed" / "startup.csv").exists()
    assert [digest(RESULTS / "startup.csv"), digest(README)] == before
