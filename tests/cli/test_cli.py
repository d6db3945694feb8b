"""The ``mipopt`` command: outputs, exit codes, files written."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from mipopt.catalog import builtin_models
from mipopt.cli import main
from mipopt.instance import solution_from_dict
from mipopt.io import write_json

QUICKSTART = Path(__file__).resolve().parents[2] / "instances" / "quickstart.json"
OBJECTIVES = "objectives: acceptance 8, hardware 6, migrations 0, restarts 0"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

Capsys = pytest.CaptureFixture[str]


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture
def solved(tmp_path: Path, capsys: Capsys) -> Path:
    """First fit's solution of the quickstart, written with ``--out``."""
    path = tmp_path / "quickstart.solution.json"
    code, out, err = run(capsys, "solve", str(QUICKSTART), "--method", "ff", "--out", str(path))
    assert (code, err) == (0, "")
    assert out.rstrip().endswith(f"wrote {path}")
    return path


def test_solve_exact_is_the_default_and_proves_optimality(capsys: Capsys) -> None:
    code, out, err = run(capsys, "solve", str(QUICKSTART))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[1] == "method: grmu / highs, lex:acceptance,hardware,migrations,restarts"
    assert lines[2].startswith("termination: optimal, status: optimal, runtime ")
    assert OBJECTIVES in lines


def test_solve_bad_objective_is_one_line(capsys: Capsys) -> None:
    code, _out, err = run(capsys, "solve", str(QUICKSTART), "--objective", "lex:foo")
    assert code == 2
    assert err == (
        "mipopt: error: --objective: unknown objective 'foo' "
        "(known: acceptance, hardware, migrations, restarts)\n"
    )


def test_solve_prints_a_summary(capsys: Capsys) -> None:
    code, out, err = run(capsys, "solve", str(QUICKSTART), "--method", "ff")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "instance 'quickstart': 2 hosts, 3 GPUs, 8 workloads"
    assert lines[1] == "method: ff (batch)"
    assert lines[2].startswith("termination: completed, status: feasible, runtime ")
    assert OBJECTIVES in lines
    rows = {
        line.split()[0]: line.split()[1:] for line in lines if line[:1].isalpha() and len(line.split()) >= 5
    }
    assert rows["llm-f"] == ["7g.80gb", "-", "-", "rejected"]
    assert rows["batch-d"] == ["4g.20gb", "h1-g1", "0", "new"]
    assert rows["train-a"] == ["3g.20gb", "h1-g0", "4", "running,", "stays"]
    assert (
        "accepted 7/8, active hosts 2, active GPUs 3, memory utilization 79%, compute utilization 76%"
        in lines
    )


def test_solve_out_is_accepted_by_verify(solved: Path, capsys: Capsys) -> None:
    assert run(capsys, "verify", str(QUICKSTART), str(solved)) == (
        0,
        "valid: acceptance 8, hardware 6, migrations 0\n",
        "",
    )


def test_solve_json_is_a_solution(capsys: Capsys) -> None:
    code, out, err = run(capsys, "solve", str(QUICKSTART), "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert (data["format"], data["version"], data["instance"]) == ("mipopt-solution", 1, "quickstart")
    sol = solution_from_dict(data)
    assert sol.rejected == ("llm-f",)
    assert data["objectives"] == {"acceptance": 8.0, "hardware": 6.0, "migrations": 0.0, "restarts": 0.0}


def test_verify_json(solved: Path, capsys: Capsys) -> None:
    code, out, err = run(capsys, "verify", str(QUICKSTART), str(solved), "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert set(data) == {"valid", "violations", "objectives", "metrics", "claims"}
    assert data["valid"] is True and data["violations"] == [] and data["claims"] == []
    assert data["objectives"] == {"acceptance": 8.0, "hardware": 6.0, "migrations": 0.0, "restarts": 0.0}
    assert data["metrics"]["accepted"] == 7 and data["metrics"]["active_gpus"] == 3


def test_verify_broken_solution_one_line_per_violation(solved: Path, tmp_path: Path, capsys: Capsys) -> None:
    data = json.loads(solved.read_text())
    for p in data["placements"]:
        if p["workload"] == "batch-d":
            p["gpu"] = "h1-g0"  # 4g at 0 on h1-g0, over notebook-b at 0 and infer-e at 2-3
    data["rejected"] = []  # llm-f, not placed, is rejected all the same
    del data["objectives"], data["metrics"]  # no claims: the rules alone
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps(data))
    code, out, err = run(capsys, "verify", str(QUICKSTART), str(broken))
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "GPU 'h1-g0': 'batch-d' overlaps 'notebook-b'",
        "GPU 'h1-g0': 'infer-e' overlaps 'batch-d'",
        "GPU 'h1-g0': uses 9 compute slices, has 7",  # 3 + 1 + 4 + 1
    ]
    code, out, err = run(capsys, "verify", str(QUICKSTART), str(broken), "--json")
    assert code == 1 and json.loads(out)["valid"] is False and len(json.loads(out)["violations"]) == 3


def test_verify_checks_claims_line_by_line(solved: Path, tmp_path: Path, capsys: Capsys) -> None:
    data = json.loads(solved.read_text())
    data["objectives"]["acceptance"] += 1
    data["metrics"]["active_gpus"] = 1
    boasting = tmp_path / "boasting.json"
    boasting.write_text(json.dumps(data))
    code, out, err = run(capsys, "verify", str(QUICKSTART), str(boasting))
    assert (code, err) == (1, "")
    assert out.splitlines() == [
        "objectives.acceptance: solution says 9, verifier computes 8",
        "metrics.active_gpus: solution says 1, verifier computes 3",
    ]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("garbage", "line 1 column 1: not valid JSON: Expecting value"),
        (
            '{"format": "mipopt-instance", "version": 1}',
            "format: must be 'mipopt-solution', got 'mipopt-instance'",
        ),
    ],
    ids=["garbage", "wrong-format"],
)
def test_verify_unreadable_solution_exits_2(text: str, message: str, tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "garbage.json"
    # fill the header fields so the format tag, not a missing field, is what is wrong
    if text.startswith("{"):
        data = json.loads(text) | {
            "instance": "quickstart",
            "method": "m",
            "termination": "completed",
            "status": "feasible",
            "placements": [],
            "rejected": [],
        }
        text = json.dumps(data)
    path.write_text(text)
    assert run(capsys, "verify", str(QUICKSTART), str(path)) == (2, "", f"mipopt: error: {path}: {message}\n")


def test_verify_missing_solution_exits_2(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "none.json"
    code, out, err = run(capsys, "verify", str(QUICKSTART), str(path))
    assert (code, out) == (2, "")
    assert err == f"mipopt: error: {path}: cannot read {path}: No such file or directory\n"


def _gpu_rows(out: str) -> dict[str, tuple[int, int]]:
    """GPU id -> (CC, F) from the text view."""
    rows = {}
    for line in out.splitlines():
        m = re.match(r"^(\S+)\s+\S+\s+.*\s+CC=(\d+) F=(\d+)$", line)
        if m:
            rows[m[1]] = (int(m[2]), int(m[3]))
    return rows


def test_show_solution_text_and_png(solved: Path, tmp_path: Path, capsys: Capsys) -> None:
    png = tmp_path / "view.png"
    code, out, err = run(capsys, "show", str(QUICKSTART), str(solved), "--png", str(png))
    assert (code, err) == (0, "")
    assert png.read_bytes()[:8] == PNG_SIGNATURE
    assert out.splitlines()[-1] == f"wrote {png}"
    # h1-g0 full but slot 1 (1g.5gb there: CC 1; F: 1g.5gb starts 0, 2-6 blocked = 6);
    # h1-g1 and h2-g0 with slots 6, 7 free (CC: 1g at 6 + 1g.10gb at 6; F: 6 + 3x2 + 3x2 = 18)
    assert _gpu_rows(out) == {"h1-g0": (1, 6), "h1-g1": (2, 18), "h2-g0": (2, 18)}
    assert sorted(p.name for p in tmp_path.iterdir()) == ["quickstart.solution.json", "view.png"]


def test_show_instance_current_placement(capsys: Capsys) -> None:
    code, out, err = run(capsys, "show", str(QUICKSTART))
    assert (code, err) == (0, "")
    # h1-g0: 1g at 0 and 3g at 4; h1-g1 empty (CC 18 = 7+4+3+2+1+1); h2-g0: 2g.20gb at 4
    assert _gpu_rows(out) == {"h1-g0": (5, 14), "h1-g1": (18, 0), "h2-g0": (12, 10)}
    assert len(out.splitlines()) == 1 + 3  # header, one row per GPU


def test_info_lists_the_models(capsys: Capsys) -> None:
    code, out, err = run(capsys, "info")
    assert (code, err) == (0, "")
    names = [line.split()[0] for line in out.splitlines()[1:] if line.strip() and not line.startswith("`")]
    assert names == list(builtin_models()) and len(names) == 11
    code, out, _ = run(capsys, "info", "--json")
    assert [m["model"] for m in json.loads(out)] == names


def test_info_model_json_keys(capsys: Capsys) -> None:
    code, out, err = run(capsys, "info", "A100-40GB", "--json")
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert {"model", "slots", "compute_slices", "memory_gb", "profiles"} <= set(data)
    assert (data["model"], data["slots"], data["compute_slices"], data["memory_gb"]) == (
        "A100-40GB",
        8,
        7,
        40,
    )
    keys = {"name", "id", "compute", "memory_slots", "memory_gb", "max_instances", "placements"}
    assert all(keys <= set(p) for p in data["profiles"])
    three_g = next(p for p in data["profiles"] if p["name"] == "3g.20gb")
    assert (three_g["id"], three_g["compute"], three_g["memory_slots"], three_g["max_instances"]) == (
        9,
        3,
        4,
        2,
    )
    assert three_g["placements"] == [[0, 4], [4, 4]]


def test_info_model_text(capsys: Capsys) -> None:
    code, out, err = run(capsys, "info", "A100-40GB")
    assert (code, err) == (0, "")
    assert out.splitlines()[0] == "A100-40GB: 8 memory slots, 7 compute slices, 40 GB"
    assert re.search(r"^3g\.20gb\s+9\s+3\s+4\s+20\s+2\s+confirmed\s+\{0,4\}:4$", out, re.M)


def test_info_unknown_model_exits_2(capsys: Capsys) -> None:
    code, out, err = run(capsys, "info", "NOPE")
    assert (code, out) == (2, "")
    assert err.count("\n") == 1
    assert err.startswith("mipopt: error: unknown GPU model 'NOPE' (known: A30-24GB, A100-40GB, ")


def test_out_into_missing_folder_exits_2(tmp_path: Path, capsys: Capsys) -> None:
    target = tmp_path / "no" / "such" / "solution.json"
    code, out, err = run(capsys, "solve", str(QUICKSTART), "--out", str(target))
    assert (code, out) == (2, "")
    assert err == f"mipopt: error: cannot write {target}: No such file or directory\n"
    assert list(tmp_path.iterdir()) == []


def test_write_json_replaces_atomically(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_text("old and longer than the new content\n")
    write_json(path, {"a": 1})
    assert json.loads(path.read_text()) == {"a": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_written_files_get_ordinary_permissions(tmp_path: Path) -> None:
    old = os.umask(0o022)
    try:
        write_json(tmp_path / "new.json", {"a": 1})
        kept = tmp_path / "kept.json"
        kept.write_text("{}")
        kept.chmod(0o640)
        write_json(kept, {"a": 2})
    finally:
        os.umask(old)
    assert (tmp_path / "new.json").stat().st_mode & 0o777 == 0o644  # not mkstemp's 0o600
    assert kept.stat().st_mode & 0o777 == 0o640  # a replaced file keeps its mode


def test_write_json_failure_keeps_old_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "out.json"
    path.write_text('{"old": true}\n')

    def broken_replace(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device", dst)

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        write_json(path, {"new": True})
    assert path.read_text() == '{"old": true}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]  # the temporary file is gone
    with pytest.raises(ValueError):  # NaN is not JSON: refused before anything is written
        write_json(path, {"x": float("nan")})
    assert [p.name for p in tmp_path.iterdir()] == ["out.json"]


def test_console_script(tmp_path: Path) -> None:
    script = Path(sys.executable).with_name("mipopt")
    exe = str(script) if script.exists() else shutil.which("mipopt")
    assert exe, "the console script `mipopt` is not installed"
    out = subprocess.run(
        [exe, "solve", str(QUICKSTART)], capture_output=True, text=True, timeout=120, cwd=tmp_path
    )
    assert (out.returncode, out.stderr) == (0, "")
    assert OBJECTIVES in out.stdout.splitlines()


def test_solve_errors_name_the_flag_not_the_parameter(capsys: Capsys) -> None:
    assert main(["solve", "instances/quickstart.json", "--model", "grmu-paper", "--use-case", "initial"]) == 2
    assert capsys.readouterr().err == (
        "mipopt: error: --use-case: model grmu-paper takes no use case (grmu, grmu-slots and wpm do)\n"
    )


def test_a_hand_written_solution_verifies_plans_and_is_named_by_validate(capsys: Capsys) -> None:
    hand = str(QUICKSTART.parents[1] / "docs" / "examples" / "hand_solution.json")
    assert run(capsys, "verify", str(QUICKSTART), hand) == (
        0,
        "valid: acceptance 8, hardware 6, migrations 0\n",
        "",
    )
    code, out, _ = run(capsys, "plan", str(QUICKSTART), hand)
    assert code == 0 and "new workloads created: 4" in out
    code, out, err = run(capsys, "validate", hand)
    assert (code, out) == (2, "")
    assert err == (
        f"mipopt: error: {hand}: a solution, not an instance: check it against its instance with "
        f"`mipopt verify INSTANCE {hand}`\n"
    )


def test_list_methods_and_options_a_method_does_not_take(capsys: Capsys) -> None:
    from mipopt.registry import methods_text

    assert run(capsys, "solve", "--list-methods") == (0, methods_text() + "\n", "")
    code, _, err = run(capsys, "solve", str(QUICKSTART), "--method", "mfi", "--objective", "lex:acceptance")
    assert (code, err) == (
        2,
        "mipopt: error: --objective: method mfi does not take --objective (it takes: --seed)\n",
    )
    code, _, err = run(capsys, "solve", str(QUICKSTART), "--model", "wpm", "--objective", "lex:acceptance")
    assert code == 2 and err.startswith(
        "mipopt: error: --objective: method exact with --model wpm does not take"
    )
    assert run(capsys, "solve")[0] == 2
