"""``mipopt solve`` and ``mipopt validate`` say why workloads are rejected (issue 14, section 3)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mipopt.cli import main
from mipopt.instance import solution_from_dict

INSTANCES = Path(__file__).resolve().parents[2] / "instances"
QUICKSTART = INSTANCES / "quickstart.json"
HOST_CAPACITY = INSTANCES / "host_capacity.json"
PINNED = "7g.80gb may start only at 0 on H100-80GB; on h2-g0 start 0 is held by pinned 'llm-c' (2g.20gb at 4)"
NEEDS_RAM = "needs ram 300 GB, the most any host with an eligible GPU has is 256 GB (h2)"

Capsys = pytest.CaptureFixture[str]


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.parametrize("method", ["exact", "ff"])
def test_solve_ends_with_why_each_workload_is_rejected(capsys: Capsys, method: str) -> None:
    code, out, err = run(capsys, "solve", str(QUICKSTART), "--method", method)
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == ["rejected 1 workload, why:", f"  llm-f          no-room        {PINNED}"]


def test_solve_json_and_out_carry_the_reasons(capsys: Capsys, tmp_path: Path) -> None:
    path = tmp_path / "sol.json"
    code, out, err = run(capsys, "solve", str(HOST_CAPACITY), "--method", "mfi", "--json", "--out", str(path))
    assert (code, err) == (0, "")
    want = [{"workload": "needs-ram", "reason": "host-capacity", "message": NEEDS_RAM}]
    assert json.loads(out)["rejections"] == want
    written = json.loads(path.read_text())
    assert written["rejections"] == want
    assert [r.code for r in solution_from_dict(written).rejections] == ["host-capacity"]
    # the file, reasons and all, is a solution verify accepts
    code, out, err = run(capsys, "verify", str(HOST_CAPACITY), str(path))
    assert (code, err) == (0, "") and out.startswith("valid: ")


def test_solve_with_nothing_rejected_says_nothing(capsys: Capsys, tmp_path: Path) -> None:
    path = tmp_path / "one.json"
    path.write_text(
        json.dumps(
            {
                "format": "mipopt-instance",
                "version": 1,
                "hosts": [{"id": "h1", "gpus": [{"id": "g0", "model": "A100-40GB"}]}],
                "workloads": [{"id": "w", "profile": "1g.5gb"}],
            }
        )
    )
    code, out, err = run(capsys, "solve", str(path), "--method", "ff", "--json")
    assert (code, err) == (0, "")
    assert "rejections" not in json.loads(out)
    code, out, err = run(capsys, "solve", str(path), "--method", "ff")
    assert "why" not in out


def test_validate_says_which_workloads_can_never_be_placed(capsys: Capsys) -> None:
    code, out, err = run(capsys, "validate", str(HOST_CAPACITY))
    assert (code, err) == (0, "")
    assert out.splitlines()[1:] == [
        "no method can place 1 workload, why:",
        f"  needs-ram      host-capacity  {NEEDS_RAM}",
    ]
    code, out, err = run(capsys, "validate", str(QUICKSTART))
    assert (code, err, len(out.splitlines())) == (0, "", 1)


def test_validate_json(capsys: Capsys) -> None:
    code, out, err = run(capsys, "validate", str(HOST_CAPACITY), "--json")
    assert (code, err) == (0, "")
    assert json.loads(out) == {
        "instance": "host_capacity",
        "valid": True,
        "hosts": 2,
        "gpus": 3,
        "running": 1,
        "new": 3,
        "unplaceable": [{"workload": "needs-ram", "reason": "host-capacity", "message": NEEDS_RAM}],
    }
