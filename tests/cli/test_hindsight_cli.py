"""``mipopt hindsight``: the optimum of a small trace, the policies' ratios, bad input in one line."""

from __future__ import annotations

import json

import pytest

from mipopt.cli import main
from mipopt.exact.hindsight import hindsight_optimum
from mipopt.heuristics.policies import make_policy
from mipopt.simulation import simulate
from mipopt.simulation.runs import make_trace

SPEC = "fbk:gpus=4,lifetimes=saturate,demand=300"


def test_both_variants_and_ratios_as_json(capsys: pytest.CaptureFixture[str]) -> None:
    argv = [
        "hindsight",
        "--workload",
        SPEC,
        "--seed",
        "1",
        "--migrations",
        "both",
        "--policy",
        "ff",
        "--json",
    ]
    assert main(argv) == 0
    out = json.loads(capsys.readouterr().out)
    trace = make_trace(SPEC, 1)
    free = hindsight_optimum(trace, migrations="free", seed=1)
    assert out["requests"] == len(trace.requests)
    assert [o["migrations"] for o in out["optima"]] == ["free", "forbidden"]
    assert out["optima"][0]["value"] == free.value and out["optima"][0]["status"] == "optimal"
    assert out["optima"][1]["value"] <= free.value
    ff = simulate(trace, make_policy("ff"), seed=1).summary["acceptance"]
    assert out["policies"] == [
        {
            "policy": "ff",
            "acceptance": ff,
            "ratio_free": pytest.approx(ff / free.value),
            "ratio_forbidden": pytest.approx(ff / out["optima"][1]["bound"]),
        }
    ]


def test_the_table(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hindsight", "--workload", SPEC, "--policy", "mfi"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"workload {SPEC}, seed 0: ")
    assert "migrations free: optimal" in out and "\nmfi " in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--policy", "nope"], "mipopt: error: --policy: unknown policy 'nope'"),
    ],
)
def test_bad_input_is_one_line(argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["hindsight", "--workload", SPEC, *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith(message) and err.count("\n") == 1


def test_threads_are_a_count_refused_as_solve_refuses_them(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as stop:
        main(["hindsight", "--workload", SPEC, "--threads", "0"])
    assert stop.value.code == 2
    assert capsys.readouterr().err.endswith(
        "mipopt hindsight: error: argument --threads: must be at least 1, got 0\n"
    )
