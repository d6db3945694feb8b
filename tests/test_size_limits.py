"""Sizes asked by input, refused with the limit in the message before anything of that size is
made: generators' GPUs and requests, runs, the hindsight optimum of a trace beyond its time limit;
and a Ctrl-C while the command starts (one line, exit 130, no traceback)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections.abc import Callable

import pytest
from factories import ROOT

from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.exact import hindsight
from mipopt.exact.hindsight import hindsight_optimum
from mipopt.limits import MAX_GPUS, MAX_REQUESTS, MAX_RUNS
from mipopt.simulation.runs import compare, make_trace
from mipopt.workloads import fbk_trace, hard_instance, ibm_instance, poisson_stream
from mipopt.workloads.layout import check_gpus

Capsys = pytest.CaptureFixture[str]
LIMIT = "more than the limit of"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: check_gpus(1e8, "gpus"), f"gpus: 100,000,000 GPUs, {LIMIT} 100,000 (docs/limits.md)"),
        (lambda: check_gpus(float("inf"), "gpus"), f"gpus: inf GPUs, {LIMIT} 100,000 (docs/limits.md)"),
        (lambda: fbk_trace(gpus=10**8, seed=0), f"gpus: 100,000,000 GPUs, {LIMIT} 100,000"),
        (lambda: fbk_trace(gpus=4, seed=0, slots=10**8), f"slots: 100,000,000 requests, {LIMIT} 1,000,000"),
        (
            lambda: fbk_trace(gpus=MAX_GPUS, seed=0, demand=1000),
            f"gpus=100000, drawn to 1000 % demand (T needs 200 %), draws about 2,285,714 requests, {LIMIT} 1,000,000",
        ),
        (
            lambda: poisson_stream(seed=0, gpus=1000, horizon=1e6),
            f"load=0.8 over horizon=1e+06 h (mean lifetime 10 h) draws about 182,857,143 requests, {LIMIT} 1,000,000",
        ),
        (lambda: poisson_stream(seed=0, gpus=10**8), f"gpus: 100,000,000 GPUs, {LIMIT} 100,000"),
        (lambda: ibm_instance(10**8, seed=0), f"n_gpus: 100,000,000 GPUs, {LIMIT} 100,000"),
        (lambda: hard_instance(10**8, seed=0), f"n_gpus: 100,000,000 GPUs, {LIMIT} 100,000"),
    ],
    ids=[
        "check-1e8",
        "check-inf",
        "fbk-gpus",
        "fbk-slots",
        "fbk-demand",
        "poisson-horizon",
        "poisson-gpus",
        "ibm",
        "hard",
    ],
)
def test_generators_refuse_sizes_beyond_the_limits(make: Callable[[], object], message: str) -> None:
    with pytest.raises(ValueError) as err:
        make()
    assert str(err.value).startswith(message)


def test_a_workload_spec_beyond_the_limits_is_one_line_naming_it() -> None:
    with pytest.raises(InstanceError) as err:
        make_trace("poisson:gpus=1e8", 0)
    assert str(err.value) == (
        f"workload: workload 'poisson:gpus=1e8': gpus: 100,000,000 GPUs, {LIMIT} 100,000 (docs/limits.md)"
    )


def test_runs_beyond_the_limit_are_refused_before_any_job() -> None:
    with pytest.raises(InstanceError) as err:
        compare("fbk:gpus=2", ["ff"], runs=10_000_000)
    assert str(err.value) == f"runs: 10,000,000 runs, {LIMIT} {MAX_RUNS:,} (docs/limits.md)"
    assert MAX_REQUESTS == 1_000_000


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["generate", "ibm", "--gpus", "100000000"], f"argument --gpus: 100,000,000 GPUs, {LIMIT} 100,000"),
        (
            ["simulate", "--workload", "fbk", "--policy", "ff", "--runs", "10000000"],
            "argument --runs: 10,000,000 runs",
        ),
        (
            ["bench", "--generate", "ibm", "--seeds", "20000"],
            f"argument --seeds: 20,000 runs, {LIMIT} 10,000",
        ),
        (["generate", "ibm", "--gpus", "-3"], "argument --gpus: must be at least 1, got -3"),
    ],
    ids=["generate-gpus", "simulate-runs", "bench-seeds", "generate-negative"],
)
def test_flags_beyond_the_limits_exit_2_while_parsing(capsys: Capsys, argv: list[str], message: str) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(argv)
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == "" and message in err.splitlines()[-1], err


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["bench", "--generate", "ibm", "--gpus", "50000", "--seeds", "3"],
            f"--gpus, --seeds: the generated instances hold 150,000 GPUs, {LIMIT} 100,000 (docs/limits.md)",
        ),
        (
            ["simulate", "--workload", "poisson:gpus=1e8", "--policy", "ff"],
            f"--workload: workload 'poisson:gpus=1e8': gpus: 100,000,000 GPUs, {LIMIT} 100,000 (docs/limits.md)",
        ),
    ],
    ids=["bench-all-instances", "simulate-workload-gpus"],
)
def test_sizes_beyond_the_limits_exit_2_in_one_line(capsys: Capsys, argv: list[str], message: str) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert (out, err) == ("", f"mipopt: error: {message}\n")


# --- hindsight: a trace whose model alone takes longer to build than the limit


TRACE = "fbk:gpus=200,lifetimes=saturate,demand=300"  # 1,353 requests, 596 epochs


def test_hindsight_refuses_a_trace_its_time_limit_cannot_build() -> None:
    with pytest.raises(InstanceError) as err:
        hindsight_optimum(make_trace(TRACE, 0), time_limit_s=0.5)
    assert str(err.value) == (
        "time_limit_s: the free model of 1,353 requests over 596 epochs on 200 GPUs (239,025 request-epochs) "
        "takes about 3 s to build and decode, more than the time limit, 0.5 s: give a longer limit, fewer GPUs "
        "or a shorter trace"
    )


def test_hindsight_without_a_limit_is_bounded_too(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(hindsight, "MAX_HINDSIGHT_S", 1.0)
    with pytest.raises(InstanceError) as err:
        hindsight_optimum(make_trace(TRACE, 0), migrations="forbidden", time_limit_s=None)
    assert str(err.value).startswith(
        "trace: the forbidden model of 1,353 requests over 596 epochs on 200 GPUs"
    )
    assert str(err.value).endswith(
        "more than the most hindsight takes (docs/limits.md), 1 s: give a longer limit, fewer GPUs or a shorter trace"
    )


def test_the_hindsight_command_names_its_flag(capsys: Capsys) -> None:
    assert main(["hindsight", "--workload", TRACE, "--time-limit", "0.5"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("mipopt: error: --time-limit: the free model of 1,353 requests")


# --- Ctrl-C while the command's modules import


def run_python(code: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, env=env, timeout=60,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
    )  # fmt: skip


def test_ctrl_c_while_the_command_starts_is_one_line_and_130() -> None:
    done = run_python(
        """
        import os, signal, sys
        class CtrlC:  # presses Ctrl-C as the first command module is imported
            def find_spec(self, name, path, target=None):
                if name == "mipopt.cli.bench":
                    os.kill(os.getpid(), signal.SIGINT)
                return None
        sys.meta_path.insert(0, CtrlC())
        from mipopt.cli import main
        print("imported")
        """
    )
    assert (done.returncode, done.stdout, done.stderr) == (130, "", "mipopt: interrupted\n")


def test_importing_the_command_leaves_ctrl_c_to_python() -> None:
    done = run_python(
        """
        import signal
        import mipopt.cli
        print(signal.getsignal(signal.SIGINT) is signal.default_int_handler)
        """
    )
    assert (done.returncode, done.stdout) == (0, "True\n"), done.stderr


# --- docs/limits.md says the numbers the code checks


@pytest.mark.parametrize(
    ("written", "name", "value"),
    [
        ("100,000", "mipopt.limits.MAX_GPUS", 100_000),
        ("200,000", "mipopt.limits.MAX_WORKLOADS", 200_000),
        ("1,000,000", "mipopt.limits.MAX_REQUESTS", 1_000_000),
        ("10,000", "mipopt.limits.MAX_RUNS", 10_000),
        ("1,000 characters", "mipopt.limits.MAX_SPEC_CHARS", 1_000),
        ("at most 4 deep", "mipopt.specs.MAX_DEPTH", 4),
        ("from 0 to 10^9", "mipopt.exact.driver.MAX_WEIGHT", 1e9),
        ("from 0 to 2^63 - 1, Kubernetes' own int64", "mipopt.interop.kubernetes.MAX_QUANTITY", 2**63 - 1),
        ("64 MiB", "mipopt.interop.nvidia_smi.MAX_TEXT_BYTES", 64 * 2**20),
        ("2,000,000 lines", "MAX_TEXT_LINES", 2_000_000),
        ("256 characters", "MAX_NAME_CHARS", 256),
        ("3,600 s without one", "mipopt.exact.hindsight.MAX_HINDSIGHT_S", 3600),
    ],
)
def test_docs_limits_says_the_numbers_checked(written: str, name: str, value: float) -> None:
    import importlib

    text = (ROOT / "docs" / "limits.md").read_text()
    module, _, constant = name.rpartition(".")
    module = module or "mipopt.interop.nvidia_smi"
    assert getattr(importlib.import_module(module), constant) == value
    rows = [line for line in text.splitlines() if f"`{name}`" in line]
    assert rows and all(written in row for row in rows), (name, written)
