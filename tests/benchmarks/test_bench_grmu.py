"""Smoke test of benchmarks/bench_grmu.py on a synthetic Alibaba-format trace, into a tmp dir."""

from __future__ import annotations

import csv
import subprocess
from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, read_csv, run
from tests.factories import write_alibaba_csvs

COMMITTED = [RESULTS / "grmu.csv", README]
PROFILES = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
COLUMNS = [
    "commit", "date", "machine", "python", "setting", "options", "hosts", "gpus", "requests", "hours", "part",
    "label", "policy", "seed", "accepted", "acceptance_rate", *(f"acceptance_rate_{p}" for p in PROFILES),
    "mean_profile_acceptance_rate", "hardware_area", "mean_hardware_rate", "mean_active_gpus", "migrations",
    "moves_intra_gpu", "moves_inter_gpu", "moves_inter_host", "migrations_per_accepted", "runtime_s",
    "mean_hourly_acceptance_rate", "hardware_rate_area", "horizon",
]  # fmt: skip
MOVES = ("moves_intra_gpu", "moves_inter_gpu", "moves_inter_host")


def _trace_dir(root: Path) -> Path:
    """Nodes of 8, 2 and 1 GPUs; 48 pods of every GPU share, one every 10 minutes, each 1-5 hours."""
    shares = [1000, 1000, 460, 200, 50, 0, 1000, 60]  # 7g, 7g, 4g, 3g, 1g.10gb, 1g.5gb, 7g, 2g
    pods = [
        (f"p{i}", 1, shares[i % len(shares)], 1000 + 600 * i, 1000 + 600 * i + 3600 * (1 + i % 5))
        for i in range(48)
    ]
    return write_alibaba_csvs(root, [("n0", 8), ("n1", 2), ("n2", 1)], pods)


def _run(trace: Path, out: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return run(
        "bench_grmu",
        str(trace),
        "--out-dir",
        str(out),
        "--readme",
        str(out / "README.md"),
        *args,
        check=False,
    )


@pytest.mark.integration
def test_bench_grmu_smoke(tmp_path: Path) -> None:
    before = [digest(p) for p in COMMITTED]
    trace, out = _trace_dir(tmp_path / "trace"), tmp_path / "out"
    done = _run(trace, out, "--quick", "--settings", "paper", "raw")  # heavy 20 and 50 %, consolidation 6 h
    assert done.returncode == 0, done.stderr
    assert "appended" in done.stdout
    rows = read_csv(out / "grmu.csv", COLUMNS)
    # per setting: 2 basket + 3 consolidation (DB, Disabled, 6 h) + 5 compared policies
    assert len(rows) == 2 * (2 + 3 + 5)
    assert {r["setting"] for r in rows} == {"paper", "raw"}
    paper = [r for r in rows if r["setting"] == "paper"]
    # the default setting keeps one GPU per node: 3 hosts, 3 GPUs; the raw one every GPU
    assert {(r["hosts"], r["gpus"], r["requests"]) for r in paper} == {("3", "3", "48")}
    assert {r["gpus"] for r in rows if r["setting"] == "raw"} == {"11"}
    last_arrival_h = (1000 + 600 * 47 - 1000) / 3600  # the default window ends at the last arrival
    for r in rows:
        assert 0 <= float(r["acceptance_rate"]) <= 1 and 0 <= int(r["accepted"]) <= int(r["requests"])
        assert float(r["acceptance_rate"]) == pytest.approx(int(r["accepted"]) / int(r["requests"]), abs=1e-6)
        assert all(
            r[f"acceptance_rate_{p}"] == "" or 0 <= float(r[f"acceptance_rate_{p}"]) <= 1 for p in PROFILES
        )
        assert 0 < float(r["mean_hardware_rate"]) <= 1
        assert 0 <= float(r["mean_hourly_acceptance_rate"]) <= 1
        assert float(r["horizon"]) == pytest.approx(last_arrival_h, abs=1e-4)
        # the rate area is the hardware area over all hosts + GPUs, in % h
        hosts_gpus = int(r["hosts"]) + int(r["gpus"])
        assert float(r["hardware_rate_area"]) == pytest.approx(
            100 * float(r["hardware_area"]) / hosts_gpus, rel=1e-3
        )
        # time-weighted mean over the window = area / window
        assert float(r["mean_hardware_rate"]) * hosts_gpus * float(r["horizon"]) == pytest.approx(
            float(r["hardware_area"]), rel=1e-3
        )
        assert int(r["migrations"]) == sum(int(r[m]) for m in MOVES)
        # no migrations without defragmentation and consolidation, nor by the baselines
        if r["part"] == "basket" or r["label"] == "DB" or r["policy"] in ("ff", "bf", "mcc", "mecc"):
            assert int(r["migrations"]) == 0, r
    basket = {r["label"]: r for r in paper if r["part"] == "basket"}
    assert set(basket) == {"20%", "50%"}
    assert basket["20%"]["policy"] == "grmu:heavy=0.2,defrag=false"
    # a bigger heavy basket never accepts fewer 7g.40gb
    assert float(basket["50%"]["acceptance_rate_7g.40gb"]) >= float(basket["20%"]["acceptance_rate_7g.40gb"])
    assert [r["label"] for r in paper if r["part"] == "consolidation"] == ["DB", "Disabled", "6 h"]
    assert [r["policy"] for r in paper if r["part"] == "compare"] == ["ff", "bf", "mcc", "mecc", "grmu"]
    # the synthetic trace overloads three GPUs: somebody is rejected
    assert min(float(r["acceptance_rate"]) for r in paper) < 1
    for name in ("grmu_acceptance.png", "grmu_hardware.png", "grmu_sweeps.png", "grmu_raw_hardware.png"):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    readme = (out / "README.md").read_text()
    assert "<!-- grmu:begin -->" in readme and "Per-profile acceptance rate (Fig. 11)" in readme
    assert "paper: GRMU / MCC" in readme and "No `--explore` rows yet" in readme
    assert "No `--readings` rows yet" in readme and "| GRMU over MCC (overall) | +22 % |" in readme
    assert (
        "| 0d | Section 5.1: two-GPU pairs beaten on a profile | 205,575 of 261,726 (79 %) | "
        "205,575 of 261,726 (79 %) |" in readme
    )

    read = _run(trace, out, "--readings")
    assert read.returncode == 0, read.stderr
    rows = list(csv.DictReader((out / "grmu.csv").open(newline="")))
    readings = [r for r in rows if r["part"] == "readings"]
    assert len(readings) == 15 * 5
    assert {r["label"] for r in readings} == {"ff", "mcc", "grmu", "grmu:heavy=0.5", "grmu:release=false"}
    by_options = {r["options"]: r for r in readings}
    # every pod of the synthetic trace is Running and has a GPU share but one (gpu_milli 0)
    assert by_options["gpus_per_host=1,duration_scale=20000,cpu_pods=false"]["requests"] == str(48 - 6)
    assert by_options["gpus_per_host=1,duration_scale=20000,phases=Running+Succeeded"]["requests"] == "48"
    assert by_options["gpus_per_host=1,duration_scale=20000,gpus_per_host=none"]["gpus"] == "11"
    # simulator readings: the same trace, decided hourly or with a queue
    batch = by_options["gpus_per_host=1,duration_scale=20000,batch_interval=1"]
    assert (batch["requests"], batch["gpus"]) == ("48", "3")
    text = (out / "README.md").read_text()
    assert "| Reading | Options added |" in text and "| paper setting | - | 48 | 3 |" in text

    explored = _run(trace, out, "--explore")
    assert explored.returncode == 0, explored.stderr
    rows = list(csv.DictReader((out / "grmu.csv").open(newline="")))
    grid = [r for r in rows if r["part"] == "explore"]
    assert len(grid) == 3 * (44 + 32) and {r["label"] for r in grid} == {"ff", "mcc", "grmu"}
    assert {r["gpus"] for r in grid if "gpus_per_host=1" in r["options"]} <= {"1", "2", "3"}
    assert "| GPUs per node | CPU/RAM |" in (out / "README.md").read_text()
    assert [digest(p) for p in COMMITTED] == before  # the committed results are untouched


@pytest.mark.integration
def test_bench_grmu_without_the_trace_says_so(tmp_path: Path) -> None:
    done = _run(tmp_path / "nowhere", tmp_path / "out")
    assert done.returncode == 2
    assert "openb_node_list_gpu_node.csv" in done.stderr and "nowhere" in done.stderr
    assert not (tmp_path / "out").exists()
