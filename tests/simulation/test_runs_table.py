"""The table ``mipopt simulate`` prints: means, their range over runs, plain numbers."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest

from mipopt.cli import main
from mipopt.simulation.runs import format_table, plain


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (173.0, "173"),
        (17718.4, "17,718"),
        (23835780.0, "23,835,780"),
        (0.98857, "0.9886"),
        (44.7, "44.7"),
        (1.0e-4, "0.0001"),
        (1.234567e-5, "0.000012"),
        (-2.5e-9, "0"),
        (-12.3456, "-12.35"),
        (1e17, "100,000,000,000,000,000"),
        (float("nan"), "nan"),
    ],
)
def test_plain_numbers(value: float, text: str) -> None:
    assert plain(value) == text


def test_a_single_run_shows_no_range() -> None:
    summary = pd.DataFrame(
        {"policy": ["a", "b"], "accepted": [3, 4], "acceptance_rate": [0.5, 2 / 3], "hardware_area": [1.5e4, 2e5],
         "mean_active_gpus": [1.0, 2.0], "mean_fragmentation_fbk": [0.0, 0.25], "migrations": [0, 1],
         "runtime_s": [0.5, 0.25]}
    )  # fmt: skip
    lines = format_table(summary).splitlines()
    assert lines[0].split() == [
        "runs", "accepted", "acceptance_rate", "hardware_area", "mean_active_gpus",
        "mean_fragmentation_fbk", "migrations", "runtime_s",
    ]  # fmt: skip
    assert lines[2].split() == ["a", "1", "3", "0.5", "15,000", "1", "0", "0", "0.5"]
    assert lines[3].split() == ["b", "1", "4", "0.6667", "200,000", "2", "0.25", "1", "0.25"]


def test_cli_prints_mean_and_range_over_runs(capsys: pytest.CaptureFixture[str]) -> None:
    args = ["simulate", "--workload", "fbk:gpus=6,slots=40", "--policy", "rr", "--policy", "bf-bi"]
    args += ["--runs", "3", "--seed", "2", "--queue-timeout", "4"]
    assert main([*args, "--json"]) == 0
    rows = pd.DataFrame(json.loads(capsys.readouterr().out)["summary"])
    assert main(args) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[0].startswith("workload fbk:gpus=6,slots=40: 40 requests per run, 3 run(s)")
    assert not re.search(r"\de[+-]\d", "\n".join(printed))
    columns = printed[1].split()
    assert columns[:3] == ["runs", "accepted", "acceptance_rate"]
    assert {"mean_wait", "p95_wait", "abandoned"} <= set(columns)
    # a cell is "mean" or "mean [min..max]", one space at most, so cells are pairs of fields at most
    for line, policy in zip(printed[3:], ("rr", "bf-bi"), strict=True):
        cells = re.findall(r"\S+(?: \[[^\]]+\])?", line)
        assert cells[0] == policy and cells[1] == "3"
        runs = rows[rows["policy"] == policy]
        for column, cell in zip(columns[1:], cells[2:], strict=True):
            if column == "runtime_s":  # a measured time: the next invocation differs
                assert re.fullmatch(r"[0-9.]+ \[[0-9.]+\.\.[0-9.]+\]", cell)
                continue
            values = runs[column].astype(float)
            mean, low, high = plain(values.mean()), plain(values.min()), plain(values.max())
            assert cell == (mean if values.min() == values.max() else f"{mean} [{low}..{high}]"), column
        assert (
            cells[2]
            == plain(runs["accepted"].mean()) + f" [{runs['accepted'].min()}..{runs['accepted'].max()}]"
        )
