"""MIGBench's JSONL traces: both formats read, bad lines refused in one line naming file and line."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from mipopt.errors import InstanceError
from mipopt.simulation.runs import make_trace
from mipopt.workloads import migbench_trace, read_migbench

PUBLISHED = (
    Path(__file__).resolve().parents[2] / ".." / "shared" / "migbench" / "full-control-plane-v3-trace.jsonl"
)


def write(tmp_path: Path, *lines: object) -> Path:
    path = tmp_path / "trace.jsonl"
    path.write_text("".join((line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines))
    return path


V2 = {"jobID": "a", "format": "resource-bound-v2", "arrivalMS": 0, "computeCoreMS": 1400, "memoryMB": 20480}
V1 = {"jobID": "b", "format": "profile-bound-v1", "arrivalMS": 5, "profile": "3g.40gb", "durationMS": 70}


def test_the_published_trace_reads_as_memory_sized_jobs() -> None:
    trace = migbench_trace(PUBLISHED)
    assert len(trace.requests) == 500 and trace.time_unit == "ms"
    first = trace.requests[0]
    assert (first.id, first.memory_gb, first.work, first.profile) == ("job-000001", 10.0, 9588810.0, None)
    assert sum(r.arrival == 0 for r in trace.requests) == 56  # SOURCES.md: jobs 1-56 arrive at 0
    assert (trace.create_delay, trace.delete_delay, trace.measure_from) == (250.0, 100.0, 30_000.0)
    assert trace.profiles == ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")
    assert [h.id for h in trace.cluster.hosts] == ["mig-node-001", "mig-node-002"]
    assert len(trace.cluster.gpus) == 8 and {g.model.name for g in trace.cluster.gpus} == {"H100-80GB"}


def test_both_formats_and_the_options(tmp_path: Path) -> None:
    path = write(tmp_path, {**V2, "arrivalMS": 9, "minComputePercent": 40}, "", V1)
    trace = make_trace(
        f"migbench:path={path},nodes=1,gpus_per_node=2,profiles=all,create_ms=0,delete_ms=5", 0
    )
    b, a = trace.requests  # sorted by arrival
    assert (b.id, b.profile, b.departure - b.arrival, b.work) == ("b", "3g.40gb", 70, None)
    assert (a.id, a.memory_gb, a.min_compute, a.work) == ("a", 20.0, 3, 1400.0)  # 40 % -> 3g (42 %)
    assert trace.profiles is None and len(trace.cluster.gpus) == 2 and trace.delete_delay == 5.0
    cut = migbench_trace(path, jobs=1)
    assert [r.id for r in cut.requests] == ["b"]


@pytest.mark.parametrize(
    ("lines", "message"),
    [
        ([V2, "{not json"], "trace.jsonl: line 2: line 1 column 2: "),
        ([[1, 2]], "trace.jsonl: line 1: a job is a JSON object, got list"),
        (
            [{**V2, "format": "v9"}],
            "trace.jsonl: line 1: format: 'v9' is not one of resource-bound-v2, profile-bound-v1",
        ),
        (
            [{k: v for k, v in V2.items() if k != "memoryMB"}],
            "trace.jsonl: line 1: a resource-bound-v2 job needs 'memoryMB'",
        ),
        ([{**V2, "gpus": 1}], "trace.jsonl: line 1: gpus: is not a field of a resource-bound-v2 job"),
        ([{**V2, "arrivalMS": -1}], "trace.jsonl: line 1: arrivalMS: must be an integer >= 0, got -1"),
        (
            [{**V2, "computeCoreMS": 1.5}],
            "trace.jsonl: line 1: computeCoreMS: must be an integer >= 1, got 1.5",
        ),
        ([{**V2, "memoryMB": True}], "trace.jsonl: line 1: memoryMB: must be an integer >= 1, got True"),
        (
            [{**V2, "minComputePercent": 101}],
            "trace.jsonl: line 1: minComputePercent: must be at most 100, got 101",
        ),
        ([{**V2, "jobID": ""}], "trace.jsonl: line 1: jobID: must be a non-empty string, got ''"),
        ([V2, V2], "trace.jsonl: line 2: jobID: 'a' is given twice (first on line 1)"),
        (
            [{**V2, "nodeSelector": {"zone": "x"}}],
            "trace.jsonl: line 1: nodeSelector: may only name migbench.io/gpu-model",
        ),
        (
            [{**V2, "memoryMB": 90000}],
            "trace.jsonl: line 1: memory_gb: '>=87.8906gb' fits no profile of H100-80GB",
        ),
        (
            [{**V1, "profile": "4g.40gb"}],
            "trace.jsonl: line 1: profile: '4g.40gb' is not in the profile subset",
        ),
        (
            [{**V1, "profile": "5g.20gb"}],
            "trace.jsonl: line 1: profile: '5g.20gb' is not in the profile subset",
        ),
        (['{"jobID": "a", "jobID": "b"}'], "trace.jsonl: line 1: jobID: duplicate key 'jobID'"),
    ],
)
def test_a_bad_line_is_one_error_naming_file_and_line(
    tmp_path: Path, lines: list[object], message: str
) -> None:
    path = write(tmp_path, *lines)
    with pytest.raises(InstanceError) as err:
        migbench_trace(path)
    assert message in str(err.value) and "\n" not in str(err.value)


def test_bad_options_name_the_option(tmp_path: Path) -> None:
    path = write(tmp_path, V2)
    for spec, message in (
        (f"migbench:path={path},nodes=0", "nodes: must be an integer from 1 to 100,000, got 0"),
        (f"migbench:path={path},profiles=9g.1gb", "profiles: '9g.1gb' is not a profile of H100-80GB"),
        (f"migbench:path={path},jobs=0", "jobs: must be a positive integer, got 0"),
        (
            f"migbench:path={path},create_ms=-1",
            "create_delay: must be a non-negative finite number, got -1.0",
        ),
        (f"migbench:path={tmp_path / 'missing.jsonl'}", "cannot read"),
    ):
        with pytest.raises(InstanceError, match=message.replace("(", r"\(").replace(")", r"\)")):
            make_trace(spec, 0)
    assert read_migbench(path)[0]["jobID"] == "a"


def test_the_command_line_refuses_a_bad_line_with_exit_2(tmp_path: Path) -> None:
    path = write(tmp_path, V2, {**V2, "jobID": "c", "memoryMB": "big"})
    out = tmp_path / "out"
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mipopt.cli",
            "simulate",
            "--workload",
            f"migbench:path={path}",
            "--policy",
            "ff",
            "--queue-timeout",
            "inf",
            "--out",
            str(out),
            "--no-progress",
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2 and not out.exists()
    assert done.stderr.strip().endswith("line 2: memoryMB: must be an integer >= 1, got 'big'")
    assert len(done.stderr.strip().splitlines()) == 1
