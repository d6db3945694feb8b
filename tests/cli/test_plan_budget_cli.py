"""``mipopt plan --max-restarts N --max-moved-gb GB``: plans within a budget, refusals naming the flag."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from factories import INSTANCES

from mipopt.cli import main

SWAP, SWAP_TARGET = INSTANCES / "swap.json", INSTANCES / "swap.target.json"

Capsys = pytest.CaptureFixture[str]


def run(capsys: Capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def test_a_budget_drains_instead_of_parking(capsys: Capsys) -> None:
    code, out, err = run(capsys, "plan", SWAP, SWAP_TARGET, "--json")
    assert (code, err) == (0, "")
    assert json.loads(out)["metrics"]["moves"] == 3  # two restarts of the target, one park
    code, out, err = run(capsys, "plan", SWAP, SWAP_TARGET, "--max-restarts", "2", "--json")
    assert (code, err) == (0, "")
    plan = json.loads(out)
    assert (plan["metrics"]["moves"], plan["metrics"]["extra_moves"], plan["disrupted"]) == (2, 0, ["a"])
    assert plan["message"].startswith("budget at most 2 restarts: the graph plan broke it")


def test_a_budget_no_plan_fits_exits_2_naming_the_flag(tmp_path: Path, capsys: Capsys) -> None:
    out = tmp_path / "plan.json"
    code, stdout, err = run(capsys, "plan", SWAP, SWAP_TARGET, "--max-restarts", "1", "--out", out)
    assert (code, stdout) == (2, "")
    assert (
        err
        == "mipopt: error: --max-restarts: no plan fits: the target restarts 2 running workloads, more than 1\n"
    )
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (["--max-restarts", "x"], "mipopt plan: error: argument --max-restarts: invalid int value: 'x'"),
        (
            ["--max-restarts", "-1"],
            "mipopt plan: error: argument --max-restarts: must be non-negative, got -1",
        ),
        (
            ["--max-moved-gb", "nan"],
            "mipopt plan: error: argument --max-moved-gb: must be a non-negative finite number of GB, got nan",
        ),
    ],
)
def test_a_bad_budget_flag_is_refused_while_parsing(argv: list[str], line: str, capsys: Capsys) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["plan", str(SWAP), str(SWAP_TARGET), *argv])
    assert exit_.value.code == 2
    _, err = capsys.readouterr()
    assert err.splitlines()[-1] == line
    assert "Traceback" not in err
