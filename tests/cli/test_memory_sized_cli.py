"""The command on memory-sized requests: solve writes the chosen profiles, verify checks them,
show draws them, plan --emit creates them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import INSTANCES

from mipopt.cli import main

EXAMPLE = str(INSTANCES / "memory_sized.json")


def run(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out, err


def test_solve_writes_the_profiles_and_verify_show_and_plan_read_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    sol = tmp_path / "sol.json"
    assert run(capsys, "solve", EXAMPLE, "--method", "mfi", "--out", str(sol))[0] == 0
    data = json.loads(sol.read_text())
    profiles = {p["workload"]: p.get("profile") for p in data["placements"]}
    assert profiles["chat-12gb"] == "1g.20gb" and profiles["train-35gb"] == "4g.40gb"
    assert profiles["named-1g"] is None  # a named profile is not repeated
    assert run(capsys, "verify", EXAMPLE, str(sol))[0] == 0

    # a larger profile chosen by hand: 4g.20gb for the 20 GB, 2-slice request on the A100
    for p in data["placements"]:
        if p["workload"] == "batch-20gb":
            p.update(gpu="h2-g0", start=0, profile="4g.20gb")
    for claim in ("objectives", "metrics"):
        data.pop(claim)
    larger = tmp_path / "larger.json"
    larger.write_text(json.dumps(data))
    assert run(capsys, "verify", EXAMPLE, str(larger))[0] == 0
    code, out, _ = run(capsys, "show", EXAMPLE, str(larger))
    assert code == 0
    row = next(line for line in out.splitlines() if line.startswith("h2-g0"))
    assert "batch-20gb 4g.20gb" in row
    code, out, _ = run(capsys, "plan", EXAMPLE, str(larger), "--emit", "nvidia-smi")
    assert code == 0
    assert "create 4g.20gb at start 0 on h2 GPU 0 (batch-20gb: new request)" in out

    # one that does not fit: exit 1, the rule named
    for p in data["placements"]:
        if p["workload"] == "chat-12gb":
            p["profile"] = "1g.10gb"
    wrong = tmp_path / "wrong.json"
    wrong.write_text(json.dumps(data))
    code, out, _ = run(capsys, "verify", EXAMPLE, str(wrong))
    assert code == 1
    assert "profile: '1g.10gb' does not fit workload 'chat-12gb' on H100-80GB (>=12gb: 1g.20gb" in out
