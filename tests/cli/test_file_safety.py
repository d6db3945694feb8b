"""Files the ``mipopt`` command writes, and how it ends (issue 24): never onto an input, never two
outputs to one path, a target that cannot be written named as the user gave it, a set of outputs
replaced as a set, SIGTERM handled as Ctrl-C, and a reader leaving never turning a failure into 0.

Every case goes through the real command: in this process where no signal reaches the process
from outside, in a child process where one does.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

import pytest

import mipopt
from mipopt.cli import main
from mipopt.cli import outputs as cli_outputs
from mipopt.cli.signals import Terminated, command_process
from mipopt.instance import instance_to_dict, solution_to_dict
from mipopt.io import write_json
from mipopt.solvers.stop import catch_sigint
from mipopt.workloads import ibm_instance

ROOT = Path(__file__).resolve().parents[2]
QUICKSTART = ROOT / "instances" / "quickstart.json"
NODES = ROOT / "tests" / "fixtures" / "kubernetes" / "handmade_nodes.json"
SIMULATE = [
    "simulate",
    "--workload",
    "fbk:gpus=8",
    "--policy",
    "ff",
    "--policy",
    "bf",
    "--executor",
    "serial",
]

Capsys = pytest.CaptureFixture[str]


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def snapshot(folder: Path) -> dict[str, bytes | None]:
    """Every entry under ``folder``, hidden ones too: a file's bytes, None for a directory or link."""
    found: dict[str, bytes | None] = {}
    for path in sorted(folder.rglob("*")):
        plain = path.is_file() and not path.is_symlink()
        found[str(path.relative_to(folder))] = path.read_bytes() if plain else None
    return found


def staging_left(*folders: Path) -> list[str]:
    """Staging directories or temporary files left anywhere under ``folders``."""
    return [
        str(p)
        for folder in folders
        for p in folder.rglob("*")
        if cli_outputs.STAGING_PREFIX in p.name or p.name.endswith(".tmp")
    ]


@pytest.fixture
def work(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A working directory: inst.json (the quickstart), sol.json (first fit's solution of it), a
    hard and a symbolic link to inst.json, nodes.json, an empty directory adir, a trace directory
    and sols/point-007.json (an instance among a sweep's solution files); temporary files of this
    process go to its tmp/."""
    shutil.copy(QUICKSTART, tmp_path / "inst.json")
    inst = mipopt.load_instance(QUICKSTART)
    write_json(tmp_path / "sol.json", solution_to_dict(mipopt.solve(inst, "ff")))
    os.link(tmp_path / "inst.json", tmp_path / "hard.json")
    (tmp_path / "soft.json").symlink_to("inst.json")
    shutil.copy(NODES, tmp_path / "nodes.json")
    (tmp_path / "adir").mkdir()
    (tmp_path / "trace").mkdir()
    (tmp_path / "trace" / "pods.csv").write_text("pod\n")
    (tmp_path / "sols").mkdir()
    shutil.copy(QUICKSTART, tmp_path / "sols" / "point-007.json")
    (tmp_path / "tmp").mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    monkeypatch.chdir(tmp_path)
    yield tmp_path


INPUT = "is an input; write the result to another file"
REFUSED = [
    (["solve", "inst.json", "--out", "inst.json"], f"--out: inst.json {INPUT}"),
    (["solve", "inst.json", "--plan", "inst.json"], f"--plan: inst.json {INPUT}"),
    (
        ["solve", "inst.json", "--out", "hard.json"],
        "--out: hard.json is an input (the same file as inst.json)",
    ),
    (
        ["solve", "soft.json", "--out", "inst.json"],
        "--out: inst.json is an input (the same file as soft.json)",
    ),
    (["solve", "inst.json", "--out", "x.json", "--plan", "x.json"], "--out, --plan: both write x.json"),
    (["solve", "inst.json", "--out", "x.json", "--plan", "./x.json"], "--out, --plan: both write ./x.json"),
    (["show", "inst.json", "--png", "inst.json"], f"--png: inst.json {INPUT}"),
    (["show", "inst.json", "sol.json", "--png", "sol.json"], f"--png: sol.json {INPUT}"),
    (["plan", "inst.json", "sol.json", "--out", "sol.json"], f"--out: sol.json {INPUT}"),
    (
        ["plan", "inst.json", "sol.json", "--emit", "nvidia-smi", "--emit-file", "inst.json"],
        f"--emit-file: inst.json {INPUT}",
    ),
    (
        ["plan", "inst.json", "sol.json", "--out", "p.json", "--png", "p.json"],
        "--out, --png: both write p.json",
    ),
    (["sweep", "inst.json", "--csv", "inst.json"], f"--csv: inst.json {INPUT}"),
    (["sweep", "inst.json", "--csv", "front", "--png", "front"], "--csv, --png: both write front"),
    (
        ["sweep", "sols/point-007.json", "--solutions", "sols"],
        "--solutions: sols holds the input sols/point-007.json, which it would replace; write the result elsewhere",
    ),
    (
        ["bench", "inst.json", "--methods", "ff", "--out", "hard.json"],
        "--out: hard.json is an input (the same file as inst.json)",
    ),
    (
        ["simulate", "--workload", "poisson:cluster=inst.json", "--policy", "ff", "--out", "inst.json"],
        "--out: inst.json is an input; write the result elsewhere",
    ),
    (
        ["simulate", "--workload", "alibaba:path=trace", "--policy", "ff", "--out", "trace"],
        "--out: trace/jobs.csv is in the input directory trace; write it elsewhere",
    ),
    (["import", "kubernetes", "--nodes", "nodes.json", "--out", "nodes.json"], f"--out: nodes.json {INPUT}"),
    (
        ["import", "kubernetes", "--nodes", "nodes.json", "--merge", "soft.json", "--out", "hard.json"],
        "--out: hard.json is an input (the same file as soft.json)",
    ),
    (["generate", "ibm", "--gpus", "8", "--out", "adir"], "cannot write adir: Is a directory"),
    (["solve", "inst.json", "--out", "adir"], "cannot write adir: Is a directory"),
    (
        ["solve", "inst.json", "--out", "no/such/x.json"],
        "cannot write no/such/x.json: No such file or directory",
    ),
    ([*SIMULATE, "--out", "sol.json"], "cannot write sol.json: Not a directory"),
    (["solve", "inst.json", "--out", "/dev/full"], "cannot write /dev/full: No space left on device"),
]


@pytest.mark.parametrize(("argv", "message"), REFUSED, ids=[" ".join(a) for a, _ in REFUSED])
def test_an_output_onto_an_input_or_another_output_is_refused(
    work: Path, capsys: Capsys, argv: list[str], message: str
) -> None:
    if "/dev/full" in argv and not Path("/dev/full").exists():
        pytest.skip("no /dev/full here")
    before = snapshot(work)
    code, out, err = run(capsys, *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"mipopt: error: {message}") and err.count("\n") == 1, err
    assert snapshot(work) == before  # every input byte for byte, nothing new, no staging left


def test_the_same_device_twice_is_allowed_for_dev_null(work: Path, capsys: Capsys) -> None:
    code, out, err = run(capsys, "solve", "inst.json", "--out", os.devnull, "--plan", os.devnull)
    assert (code, err) == (0, "")
    assert out.rstrip().endswith(f"wrote {os.devnull}")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only directory")
def test_a_read_only_directory_is_named(work: Path, capsys: Capsys) -> None:
    (work / "ro").mkdir(mode=0o555)
    code, out, err = run(capsys, "solve", "inst.json", "--out", "ro/x.json")
    assert (code, out, err) == (2, "", "mipopt: error: cannot write ro/x.json: Permission denied\n")


# --- a set of outputs is replaced as a set


def test_simulate_replaces_its_set_and_keeps_other_files(work: Path, capsys: Capsys) -> None:
    assert run(capsys, *SIMULATE, "--seed", "1", "--out", "out")[0] == 0
    first = snapshot(work / "out")
    assert sorted(first) == ["jobs.csv", "series.csv", "series.png", "summary.csv"]
    (work / "out" / "notes.txt").write_text("mine\n")
    assert run(capsys, *SIMULATE, "--seed", "2", "--out", "out")[0] == 0
    second = snapshot(work / "out")
    assert sorted(second) == ["jobs.csv", "notes.txt", "series.csv", "series.png", "summary.csv"]
    assert second["notes.txt"] == b"mine\n"
    assert second["series.csv"] != first["series.csv"]
    assert staging_left(work) == []


@pytest.mark.parametrize("existing", [True, False], ids=["existing", "new"])
def test_a_stop_while_the_set_is_written_leaves_the_old_set(
    work: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch, existing: bool
) -> None:
    if existing:
        assert run(capsys, *SIMULATE, "--out", "out")[0] == 0
    before = snapshot(work)

    def stopped(*args: object, **kwargs: object) -> None:  # the CSVs are staged: SIGTERM comes
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)  # the handler raises before this ends

    monkeypatch.setattr("mipopt.simulation.runs.plot_series", stopped)
    code, out, err = run(capsys, *SIMULATE, "--seed", "3", "--out", "out")
    assert (code, out, err) == (143, "", "mipopt: terminated\n")
    assert snapshot(work) == before  # the old set (or no directory), and no staging


def test_a_stop_while_the_set_is_renamed_waits_until_it_is_in_place(
    work: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(capsys, *SIMULATE, "--out", "out")[0] == 0
    old = snapshot(work / "out")
    replace = cli_outputs._replace
    renames = []

    def stopped(staged: Path, final: Path) -> None:
        if not renames:
            os.kill(os.getpid(), signal.SIGTERM)
        renames.append(final.name)
        replace(staged, final)

    monkeypatch.setattr(cli_outputs, "_replace", stopped)
    code, _out, err = run(capsys, *SIMULATE, "--seed", "4", "--out", "out")
    assert (code, err) == (143, "mipopt: terminated\n")
    assert renames == ["jobs.csv", "series.csv", "series.png", "summary.csv"]
    new = snapshot(work / "out")
    assert sorted(new) == sorted(old) and all(new[name] != old[name] for name in old)
    assert staging_left(work) == []


def test_a_failed_write_names_the_file_and_leaves_the_old_set(
    work: Path, capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert run(capsys, *SIMULATE, "--out", "out")[0] == 0
    before = snapshot(work)

    def full(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("mipopt.simulation.runs.plot_series", full)
    code, out, err = run(capsys, *SIMULATE, "--seed", "5", "--out", "out")
    assert (code, out) == (2, "")
    assert err == "mipopt: error: cannot write out/series.png: No space left on device\n"
    assert snapshot(work) == before


def test_sweep_solutions_are_replaced_as_a_set(work: Path, capsys: Capsys) -> None:
    sweep = ["sweep", "inst.json", "--solutions", "sols", "--csv", "front.csv"]
    (work / "sols" / "notes.txt").write_text("mine\n")
    assert run(capsys, *sweep, "--max-points", "3")[0] == 0
    # point-007.json looked like an older sweep's: gone with it; the user's notes stay
    assert sorted(p.name for p in (work / "sols").iterdir()) == [
        "notes.txt",
        "point-001.json",
        "point-002.json",
    ]
    assert run(capsys, *sweep, "--max-points", "1")[0] == 0
    assert sorted(p.name for p in (work / "sols").iterdir()) == ["notes.txt", "point-001.json"]
    rows = (work / "front.csv").read_text().splitlines()
    assert len(rows) == 2 and rows[1].endswith(",sols/point-001.json")
    assert staging_left(work) == []


# --- signals


def _sigterm_caught(pid: int) -> bool:
    """Whether the process has a handler on SIGTERM (bit 15 of SigCgt in /proc/PID/status)."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGTERM - 1) & 1)
    return False


class _Child:
    """A ``mipopt`` command in a child process, its output read as it comes (progress lines)."""

    def __init__(self, *argv: str, cwd: Path) -> None:
        cmd = [sys.executable, "-m", "mipopt.cli", *argv]
        self.process = subprocess.Popen(
            cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd
        )
        self.out: list[str] = []
        self.err: list[str] = []
        self.readers = [
            threading.Thread(target=self._read, args=(stream, into), daemon=True)
            for stream, into in ((self.process.stdout, self.out), (self.process.stderr, self.err))
        ]
        for reader in self.readers:
            reader.start()

    @staticmethod
    def _read(stream: TextIO, into: list[str]) -> None:
        while chunk := stream.read(1):
            into.append(chunk)

    def wait_for(self, text: str, timeout: float = 60) -> None:
        """Until ``text`` is on stderr (a progress line or bar)."""
        end = time.monotonic() + timeout
        while text not in "".join(self.err):
            assert self.process.poll() is None, f"ended before printing {text!r}: {''.join(self.err)}"
            assert time.monotonic() < end
            time.sleep(0.01)

    def terminate(self) -> tuple[int, str, str, float]:
        """SIGTERM: the exit code, stdout, stderr and the seconds it took to end."""
        t0 = time.monotonic()
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        finally:
            self.process.kill()  # never left behind, whatever failed
        took = time.monotonic() - t0
        for reader in self.readers:
            reader.join(5)
        return code, "".join(self.out), "".join(self.err), took


def _last_line(err: str) -> str:
    """The last line of stderr, past a progress bar's redraws."""
    return re.split(r"[\r\n]", err.strip())[-1]


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_sigterm_during_a_solve_writes_the_incumbent_and_exits_143(tmp_path: Path) -> None:
    inst_path = tmp_path / "ibm400.json"
    write_json(inst_path, instance_to_dict(ibm_instance(400, seed=1)))
    argv = ["solve", str(inst_path), "--time-limit", "30", "--out", "sol.json", "--progress"]
    child = _Child(*argv, cwd=tmp_path)
    child.wait_for("started")  # a stage is under way
    code, out, err, took = child.terminate()
    assert code == 143, err
    assert took < 10
    assert "Traceback" not in err
    assert err.strip().splitlines()[-1] == (
        "mipopt: terminated: the best placement found is above (status feasible)"
    )
    written = json.loads((tmp_path / "sol.json").read_text())
    assert (written["termination"], written["status"]) == ("interrupted", "feasible")
    assert mipopt.verify(mipopt.load_instance(inst_path), mipopt.load_solution(tmp_path / "sol.json")).valid
    assert out.rstrip().endswith("wrote sol.json")
    assert staging_left(tmp_path) == []


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
def test_sigterm_during_simulate_leaves_the_old_set_and_exits_143(work: Path, capsys: Capsys) -> None:
    assert run(capsys, *SIMULATE, "--out", "out")[0] == 0
    before = snapshot(work)
    # many runs: still under way when the signal comes, however loaded the machine
    long = ["simulate", "--workload", "fbk:gpus=100", "--policy", "ff", "--policy", "bf", "--runs", "40"]
    child = _Child(*long, "--executor", "serial", "--out", "out", "--progress", cwd=work)
    child.wait_for("%")  # the progress bar: the replays are under way
    code, out, err, took = child.terminate()
    assert (code, out, _last_line(err)) == (143, "", "mipopt: terminated"), err
    assert err.count("mipopt:") == 1 and "Traceback" not in err
    assert took < 10
    assert snapshot(work) == before


#: Commands that run far longer than a test: each is stopped a moment after it installed its
#: SIGTERM handler (the first thing the command does), while it loads or works.
LONG_COMMANDS = {
    "sweep": ["sweep", "ibm400.json", "--executor", "serial"],
    "sweep-jobs": ["sweep", "ibm400.json", "ibm400b.json", "--out-dir", "fronts", "--executor", "local:2"],
    "bench": ["bench", "ibm400.json", "--methods", "ff", "--out", "gaps.csv", "--executor", "serial"],
    "hindsight": ["hindsight", "--workload", "poisson:gpus=8,load=1.0,horizon=600", "--time-limit", "60"],
}


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="reads /proc")
@pytest.mark.parametrize("command", sorted(LONG_COMMANDS))
def test_sigterm_stops_a_long_command_with_143(tmp_path: Path, command: str) -> None:
    for name, seed in (("ibm400", 1), ("ibm400b", 2)):
        write_json(tmp_path / f"{name}.json", instance_to_dict(ibm_instance(400, seed=seed)))
    before = snapshot(tmp_path)
    child = _Child(*LONG_COMMANDS[command], cwd=tmp_path)
    while not _sigterm_caught(child.process.pid):
        assert child.process.poll() is None, child.err
        time.sleep(0.02)
    time.sleep(1.0)
    code, out, err, took = child.terminate()
    assert (code, out, _last_line(err)) == (143, "", "mipopt: terminated"), err
    assert err.count("mipopt:") == 1 and "Traceback" not in err
    assert took < 5
    assert snapshot(tmp_path) == before


def test_sigterm_sets_a_solve_flag_as_ctrl_c_does() -> None:
    with command_process(), catch_sigint(signals=(signal.SIGINT, signal.SIGTERM)) as flag:
        os.kill(os.getpid(), signal.SIGTERM)
        assert flag.wait(5)
        assert (flag.reason, flag.signum) == ("interrupted", signal.SIGTERM)
        with pytest.raises(Terminated):  # a second one: the handler before, the command's
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)


# --- a reader that leaves


@pytest.fixture
def broken(tmp_path: Path) -> tuple[Path, Path]:
    """The quickstart and a solution of it with every start at 0: many violations."""
    sol = solution_to_dict(mipopt.solve(mipopt.load_instance(QUICKSTART), "ff"))
    for p in sol["placements"]:
        p["start"] = 0
    write_json(tmp_path / "bad.json", sol)
    return QUICKSTART, tmp_path / "bad.json"


@pytest.mark.parametrize(("which", "code"), [("bad", 1), ("good", 0)])
def test_a_reader_leaving_keeps_the_exit_code(
    broken: tuple[Path, Path], tmp_path: Path, which: str, code: int
) -> None:
    inst, bad = broken
    sol = bad
    if which == "good":
        sol = tmp_path / "good.json"
        write_json(sol, solution_to_dict(mipopt.solve(mipopt.load_instance(inst), "ff")))
    cmd = [sys.executable, "-m", "mipopt.cli", "verify", str(inst), str(sol), "--json"]
    child = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()  # the reader leaves before the first line
    err = child.stderr.read()
    assert (child.wait(timeout=30), err) == (code, "")


def test_verify_piped_into_head_exits_1_under_pipefail(broken: tuple[Path, Path], tmp_path: Path) -> None:
    inst, bad = broken
    script = f"{sys.executable} -m mipopt.cli verify {inst} {bad} | head -1"
    done = subprocess.run(
        ["bash", "-o", "pipefail", "-c", script], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 1, done.stderr
    assert done.stderr == ""
    assert len(done.stdout.splitlines()) == 1


def test_a_broken_pipe_the_command_did_not_survive_is_never_success(
    capsys: Capsys, monkeypatch: pytest.MonkeyPatch
) -> None:
    def cut(args: object) -> int:
        raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr("mipopt.cli.verify.run", cut)  # main builds its parser after this
    assert main(["verify", str(QUICKSTART), str(QUICKSTART)]) == 141
    assert capsys.readouterr() == ("", "")


def test_a_command_started_without_stdout_writes_its_file_and_succeeds(tmp_path: Path) -> None:
    """``>&-`` (cron, a service with its output closed): the printed answer goes nowhere, the
    file is written, exit 0 (it was a traceback and exit 120)."""
    out = tmp_path / "sol.json"
    script = f"{sys.executable} -m mipopt.cli solve {QUICKSTART} --out {out} >&-"
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stderr) == (0, "")
    assert mipopt.load_solution(out).status.value == "optimal"


NATIVE_CHATTER = """
import os, sys
from mipopt.solvers.highs import HighsBackend
solve = HighsBackend.solve
def chatty(self, *args, **kwargs):
    os.write(1, b"HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();\\n")
    return solve(self, *args, **kwargs)
HighsBackend.solve = chatty
from mipopt.cli import main
sys.argv = ["mipopt", *sys.argv[1:]]
sys.exit(main())
"""


@pytest.mark.parametrize("tail", [["--json"], ["--json", "--time-limit", "30"], []])
def test_what_native_code_writes_to_stdout_goes_to_stderr(tail: list[str]) -> None:
    """HiGHS prints a debug line from C++ on some MIPs, to the process's stdout itself, past
    Python's: a write to file descriptor 1 before every solve stands for it here. The command's
    stdout holds its own output alone (JSON stays JSON), the line goes to stderr."""
    cmd = [sys.executable, "-c", NATIVE_CHATTER, "solve", str(QUICKSTART), *tail]
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "transformNewIntegerFeasibleSolution" not in done.stdout
    assert "HighsMipSolverData::transformNewIntegerFeasibleSolution tmpSolver.run();" in done.stderr
    if "--json" in tail:
        assert json.loads(done.stdout)["status"] == "optimal"
    else:
        assert "status: optimal" in done.stdout


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="no /dev/full here")
def test_the_library_names_a_device_it_cannot_write() -> None:
    with pytest.raises(OSError, match=r"No space left on device: '/dev/full'"):
        write_json("/dev/full", {"a": 1})


def test_a_stop_passing_through_pyomo_is_not_logged_as_its_error(caplog: pytest.LogCaptureFixture) -> None:
    """Pyomo's value() logs every exception it sees as an ERROR (on stdout), a SIGTERM raised while
    it evaluates an objective too (seen once in CI: the stopped bench printed it): a command's
    process drops that record, and Pyomo still logs a real error."""
    import pyomo.environ as pyo

    def stop(_x: float) -> float:
        raise Terminated(signal.SIGTERM)

    m = pyo.ConcreteModel()
    m.x = pyo.Var(initialize=1.0)
    with command_process(), pytest.raises(Terminated):
        pyo.value(pyo.ExternalFunction(stop)(m.x))
    assert caplog.records == []
    with command_process(), pytest.raises(ZeroDivisionError):
        pyo.value(pyo.ExternalFunction(lambda x: x / 0)(m.x))
    assert [r.getMessage().split(":")[0] for r in caplog.records] == ["evaluating object as numeric value"]


def test_a_workers_exit_passing_through_pyomo_construction_is_not_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A local worker's SIGTERM is a SystemExit, and Pyomo logs it when it cuts a component's
    construction ("Constructing component 'N' from data=None failed", seen in CI beside exit 143):
    with the filter the worker installs it is dropped, and a real error still logs."""
    import pyomo.environ as pyo

    from mipopt._signals import quiet_stops

    def cut(_m: pyo.ConcreteModel, _i: int) -> float:
        raise SystemExit(143)

    loud = quiet_stops()
    try:
        m = pyo.ConcreteModel()
        with pytest.raises(SystemExit):
            m.N = pyo.Param([1], initialize=cut)
        assert caplog.records == []
        m = pyo.ConcreteModel()
        with pytest.raises(ZeroDivisionError):
            m.N = pyo.Param([1], initialize=lambda _m, _i: 1 / 0)
        assert [r.getMessage().split(" ")[0] for r in caplog.records] == ["Rule", "Constructing"]
    finally:
        loud()
