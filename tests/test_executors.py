"""Executors: specs, order of results, and the same rows whatever runs a study's jobs.

The Dask path runs on a LocalCluster of 2 processes, 1 thread each, started by the test; the
Ray path where Ray is installed (the ``cluster`` extra, not ``dev``).
"""

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
import pytest
from factories import INSTANCES

from mipopt.cli import main
from mipopt.compare import compare_methods
from mipopt.errors import InstanceError
from mipopt.executors import (
    Executor,
    ExecutorSpec,
    LocalExecutor,
    SerialExecutor,
    make_executor,
    parse_executor,
    run_jobs,
    runs_here,
)
from mipopt.io import load_instance
from mipopt.simulation.runs import compare
from mipopt.verifier import verify

WORKLOAD = "fbk:gpus=12,distribution=skew-big"
POLICIES = ("ff", "mfi", "grmu")
BENCH_FILES = ("grmu_fig2b.json", "fbk_fig3.json", "default_order.json", "host_capacity.json")
HAS_DASK = importlib.util.find_spec("distributed") is not None
HAS_RAY = importlib.util.find_spec("ray") is not None


def late_square(x: int, delay: float) -> int:
    """A job that ends after ``delay`` seconds: later jobs finish first when delays decrease."""
    time.sleep(delay)
    return x * x


def fails_on(x: int, bad: int) -> int:
    if x == bad:
        raise ValueError(f"job {x} failed")
    return x


# --- specs


@pytest.mark.parametrize(
    ("spec", "parsed"),
    [
        ("serial", ExecutorSpec("serial", workers=1)),
        ("local", ExecutorSpec("local")),
        ("local:3", ExecutorSpec("local", workers=3)),
        ("dask", ExecutorSpec("dask")),
        ("dask:local", ExecutorSpec("dask")),
        ("dask:local:2", ExecutorSpec("dask", workers=2)),
        ("dask://10.0.0.5:8786", ExecutorSpec("dask", address="10.0.0.5:8786")),
        ("ray:local:4", ExecutorSpec("ray", workers=4)),
        ("ray://head:10001", ExecutorSpec("ray", address="head:10001")),
    ],
)
def test_specs_parse(spec: str, parsed: ExecutorSpec) -> None:
    assert parse_executor(spec) == parsed
    assert parse_executor(str(parsed)) == parsed


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("spark", "executor: unknown executor 'spark' (known: serial, local, local:N, dask://HOST:PORT"),
        ("local:0", "executor: local:N needs N >= 1, got '0'"),
        ("local:two", "executor: local:N needs N >= 1, got 'two'"),
        ("dask:local:-1", "executor: dask:local:N needs N >= 1, got '-1'"),
        ("dask:cloud", "executor: 'dask:cloud': give dask:local[:N] or dask://HOST:PORT"),
        ("ray", "executor: 'ray': give ray:local[:N] or ray://HOST:PORT"),
        ("dask://", "executor: 'dask://': give dask://HOST:PORT, e.g. dask://10.0.0.5:8786"),
        ("dask://host:port", "executor: 'dask://host:port': give dask://HOST:PORT"),
        ("dask://host:²", "executor: 'dask://host:²': give dask://HOST:PORT"),
        ("http://host:1", "executor: 'http://host:1': only dask:// and ray:// take an address"),
        ("serial:2", "executor: unknown executor 'serial:2'"),
    ],
)
def test_bad_specs_name_the_parameter_and_the_rule(spec: str, message: str) -> None:
    with pytest.raises(InstanceError) as err:
        parse_executor(spec)
    assert str(err.value).startswith(message) and err.value.path == "executor"
    with pytest.raises(InstanceError, match=r"^executor: "):
        compare(WORKLOAD, ["ff"], executor=spec)
    with pytest.raises(InstanceError, match=r"^executor: "):
        compare_methods([load_instance(INSTANCES / "grmu_fig2b.json")], ["ff"], executor=spec)


@pytest.mark.parametrize(
    "argv",
    [
        ["simulate", "--workload", WORKLOAD, "--policy", "ff", "--executor", "local:0"],
        ["bench", str(INSTANCES / "grmu_fig2b.json"), "--methods", "ff", "--executor", "local:0"],
        ["sweep", str(INSTANCES / "grmu_fig2b.json"), "--executor", "local:0"],
    ],
)
def test_the_cli_names_the_flag(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        main(argv)
    assert done.value.code == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.endswith("error: argument --executor: local:N needs N >= 1, got '0'")


def test_an_unreachable_scheduler_is_one_line_naming_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    if not HAS_DASK:
        pytest.skip("dask.distributed is not installed (pip install -e '.[dev]')")
    argv = ["simulate", "--workload", WORKLOAD, "--policy", "ff", "--runs", "2"]
    assert main([*argv, "--executor", "dask://127.0.0.1:9"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("mipopt: error: --executor: cannot reach the Dask scheduler at 127.0.0.1:9")
    assert len(err.splitlines()) == 1


# --- the map


def test_results_come_in_submission_order_and_errors_come_back() -> None:
    jobs = [(x, 0.05 * (4 - x)) for x in range(5)]
    seen: list[int] = []
    with make_executor("local:2") as ex:
        assert isinstance(ex, LocalExecutor) and ex.workers == 2
        assert ex.map(late_square, jobs, lambda i, r: seen.append(i)) == [0, 1, 4, 9, 16]
        assert sorted(seen) == [0, 1, 2, 3, 4]
        with pytest.raises(ValueError, match="job 2 failed"):
            ex.map(fails_on, [(x, 2) for x in range(4)])
        assert ex.map(late_square, []) == []
    assert run_jobs(late_square, jobs) == [0, 1, 4, 9, 16]  # serial by default


def test_which_jobs_run_here() -> None:
    assert runs_here(None, 5) and runs_here("serial", 5) and runs_here(SerialExecutor(), 5)
    assert runs_here("local", 1) and not runs_here("local", 2) and not runs_here("dask://h:1", 1)


# --- the same rows whatever runs them


@pytest.fixture(scope="module")
def dask_cluster() -> Iterator[Executor]:
    if not HAS_DASK:
        pytest.skip("dask.distributed is not installed (pip install -e '.[dev]')")
    with make_executor("dask:local:2") as ex:
        assert ex.workers == 2
        yield ex


@pytest.fixture(scope="module")
def serial_replays() -> tuple[pd.DataFrame, pd.DataFrame]:
    series, summary = compare(WORKLOAD, POLICIES, runs=3, seed=5, executor="serial")
    assert list(zip(summary["run"], summary["policy"], strict=True)) == [
        (r, p) for r in range(3) for p in POLICIES
    ]
    assert summary["arrived"].min() > 0 and summary["migrations"].sum() >= 0
    return series, summary


def _same_replays(
    got: tuple[pd.DataFrame, pd.DataFrame], expected: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    pd.testing.assert_frame_equal(got[0], expected[0])
    timed = [c for c in expected[1] if c.endswith("runtime_s")]
    pd.testing.assert_frame_equal(got[1].drop(columns=timed), expected[1].drop(columns=timed))


def test_local_processes_replay_the_same_frames(serial_replays: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    fractions: list[float] = []
    got = compare(WORKLOAD, POLICIES, runs=3, seed=5, executor="local:2", progress=fractions.append)
    _same_replays(got, serial_replays)
    assert fractions == [k / 9 for k in range(1, 10)]
    _same_replays(compare(WORKLOAD, POLICIES, runs=3, seed=5, executor="local"), serial_replays)


def test_a_dask_local_cluster_replays_the_same_frames(
    dask_cluster: Executor, serial_replays: tuple[pd.DataFrame, pd.DataFrame]
) -> None:
    _same_replays(compare(WORKLOAD, POLICIES, runs=3, seed=5, executor=dask_cluster), serial_replays)


def _bench_rows(executor: str | Executor) -> list[dict[str, object]]:
    instances = [load_instance(INSTANCES / name) for name in BENCH_FILES]
    rows = compare_methods(instances, ["ff", "mfi", "grmu"], time_limit_s=30, executor=executor)
    return [{**r.to_dict(), "runtime_s": None} for r in rows]


@pytest.fixture(scope="module")
def serial_bench() -> list[dict[str, object]]:
    rows = _bench_rows("serial")
    assert [r["method"] for r in rows[:5]] == ["exact", "exact-initial", "ff", "mfi", "grmu"]
    assert len(rows) == 5 * len(BENCH_FILES) and all(r["reference"] == "optimal" for r in rows)
    return rows


def test_bench_rows_are_the_same_on_processes_and_dask(
    dask_cluster: Executor, serial_bench: list[dict[str, object]]
) -> None:
    assert _bench_rows("local:2") == serial_bench
    assert _bench_rows(dask_cluster) == serial_bench


def test_bench_solutions_from_workers_verify() -> None:
    """A row's numbers come from the verifier inside the job: rerun one solution here and check it."""
    from mipopt.registry import get_method

    inst = load_instance(INSTANCES / "fbk_fig3.json")
    rows = compare_methods([inst, inst], ["mfi"], executor="local:2")
    sol = get_method("mfi").solve(inst, seed=0)
    report = verify(inst, sol)
    assert report.valid and report.objectives is not None
    mfi = [r for r in rows if r.method == "mfi"]
    assert [r.acceptance for r in mfi] == [report.objectives.acceptance] * 2


def test_sweep_over_instances_is_the_same_on_processes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    files = [str(INSTANCES / "grmu_fig2b.json"), str(INSTANCES / "fbk_fig3.json")]
    fronts = {}
    for spec in ("serial", "local:2"):
        out = tmp_path / spec.replace(":", "-")
        assert main(["sweep", *files, "--out-dir", str(out), "--json", "--executor", spec]) == 0
        found = json.loads(capsys.readouterr().out)
        assert [f["instance"] for f in found] == ["grmu_fig2b", "fbk_fig3"]
        fronts[spec] = [
            [{k: p[k] for k in ("acceptance", "hardware", "migrations")} for p in f["points"]] for f in found
        ]
        assert (out / "fbk_fig3.front.csv").is_file() and (out / "grmu_fig2b.front.png").is_file()
    assert fronts["serial"] == fronts["local:2"] and len(fronts["serial"][1]) == 2


def test_sweep_over_instances_needs_an_out_dir(capsys: pytest.CaptureFixture[str]) -> None:
    files = [str(INSTANCES / "grmu_fig2b.json"), str(INSTANCES / "fbk_fig3.json")]
    assert main(["sweep", *files]) == 2
    assert capsys.readouterr().err.strip() == (
        "mipopt: error: --out-dir: needed with several instances (each front goes to DIR/NAME.front.csv)"
    )


def test_simulate_cli_prints_the_same_table_on_any_executor(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["simulate", "--workload", WORKLOAD, "--runs", "2", "--json"]
    argv += [x for p in POLICIES for x in ("--policy", p)]
    found = {}
    for spec in ("serial", "local:2"):
        assert main([*argv, "--executor", spec]) == 0
        summary = json.loads(capsys.readouterr().out)["summary"]
        found[spec] = [{k: v for k, v in row.items() if not k.endswith("runtime_s")} for row in summary]
    assert found["serial"] == found["local:2"] and len(found["serial"]) == 6


@pytest.mark.slow
@pytest.mark.skipif(not HAS_RAY, reason="ray is not installed (pip install -e '.[cluster]')")
def test_a_ray_local_instance_replays_the_same_frames(
    serial_replays: tuple[pd.DataFrame, pd.DataFrame],
) -> None:
    _same_replays(compare(WORKLOAD, POLICIES, runs=3, seed=5, executor="ray:local:2"), serial_replays)


def test_a_sigterm_that_lands_in_a_weakref_callback_still_ends_the_worker() -> None:
    """Python prints and drops an exception raised in a weakref callback (the import system's
    module locks are one); the worker raises it again past the callback and exits 143, silently."""
    code = (
        "import os, signal, time, weakref\n"
        "from mipopt.executors import _worker_start\n"
        "_worker_start()\n"
        "class Box: pass\n"
        "box = Box()\n"
        "ref = weakref.ref(box, lambda _: os.kill(os.getpid(), signal.SIGTERM))\n"
        "del box\n"
        "time.sleep(5)\n"
        "print('still running')\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=30)
    assert (done.returncode, done.stdout, done.stderr) == (143, "", "")
