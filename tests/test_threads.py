"""``threads`` beyond the machine's cores (issue 24): capped at the cores, said once per call
or command, however many solves and stages run; the command line says it in one line naming
``--threads``."""

from __future__ import annotations

import warnings
from dataclasses import replace

import pytest
from factories import ROOT

import mipopt
import mipopt.executors
from mipopt.cli import main
from mipopt.executors import capped_threads
from mipopt.solvers import SolverOptions

FIG2B = str(ROOT / "instances" / "grmu_fig2b.json")
SAID = "threads: 1000 is more than this machine's 2 cores; using 2"


@pytest.fixture(autouse=True)
def two_cores(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mipopt.executors, "cpu_count", lambda: 2)


def test_capped_at_the_cores_with_a_warning_naming_the_parameter() -> None:
    with pytest.warns(UserWarning) as caught:
        assert capped_threads(1000, "workers") == 2
    assert [str(w.message) for w in caught] == ["workers: 1000 is more than this machine's 2 cores; using 2"]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # as many as the cores, or fewer: said nothing
        assert capped_threads(2) == 2 and capped_threads(1) == 1


def test_a_capped_options_record_is_not_capped_again() -> None:
    with pytest.warns(UserWarning):
        options = SolverOptions(threads=1000)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert replace(options, time_limit_s=1.0).threads == 2  # each stage's copy says nothing


def test_compare_methods_says_it_once_for_both_optima() -> None:
    inst = mipopt.load_instance(FIG2B)
    with pytest.warns(UserWarning) as caught:  # records every warning, none deduplicated
        rows = mipopt.compare_methods([inst], ["ff"], threads=1000)
    assert [str(w.message) for w in caught] == [SAID]  # two exact solves, one warning
    assert [r.method for r in rows] == ["exact", "exact-initial", "ff"]


@pytest.mark.parametrize(
    "argv",
    [
        ["solve", FIG2B, "--threads", "1000"],
        ["bench", FIG2B, "--methods", "ff", "--threads", "1000"],
    ],
    ids=["solve", "bench"],
)
def test_the_command_line_says_it_in_one_line(argv: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == 0
    err = capsys.readouterr().err
    assert err.splitlines() == [f"mipopt: warning: --{SAID}"]


def test_the_command_line_says_each_warning_once(capsys: pytest.CaptureFixture[str]) -> None:
    # whatever resets Python's own once-per-place registry (catch_warnings does), one line
    from mipopt.cli import _warnings_in_one_line

    with _warnings_in_one_line():
        for _ in range(3):
            with warnings.catch_warnings():
                warnings.warn(SAID, UserWarning, stacklevel=1)
        warnings.warn("something else:\nover two lines", UserWarning, stacklevel=1)
    assert capsys.readouterr().err.splitlines() == [
        f"mipopt: warning: --{SAID}",
        "mipopt: warning: something else: over two lines",
    ]
