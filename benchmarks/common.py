"""The harness every benchmark in ``benchmarks/`` shares.

A benchmark module (``bench_NAME.py``) keeps what it measures and how its tables read; it
hands both to a :class:`Benchmark`, whose :meth:`~Benchmark.main` does the rest:

* the arguments every benchmark has (``--out-dir``, ``--readme``, ``--render``, ``--quick``)
  beside the benchmark's own;
* one run: the rows it measures, each beginning with :func:`run_info`'s provenance (commit,
  date, machine, python), appended to a CSV file under ``benchmarks/results/`` (an
  :class:`Output`, never rewritten);
* the README: each of the output's sections regenerated from *all* rows of its CSV file,
  between the markers ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``; ``--render`` does
  only this, from the rows already there;
* a summary on stdout, progress on stderr.

The tables are built from rows with :func:`latest` (the latest run of each configuration),
:class:`Column` specs and :func:`table`, and the formatters :func:`percent`, :func:`mean`
and :func:`median`. :func:`run_isolated` runs one measurement in a forked child process
under a wall-clock and a memory limit, so that a run that explodes is recorded, not fatal.

Run a benchmark from the repository's root as ``python -m benchmarks.bench_NAME`` (or
``python benchmarks/bench_NAME.py``).
"""

from __future__ import annotations

import argparse
import csv
import importlib.metadata
import math
import multiprocessing
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import traceback
from collections.abc import Callable, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any, Generic, TypeVar

from mipopt.io import write_atomic

T = TypeVar("T")
K = TypeVar("K", bound=Hashable)
Row = dict[str, Any]  # a row as measured: values of any type, written with str
CsvRow = dict[str, str]  # a row as read back from the CSV file

BENCH_DIR = Path(__file__).resolve().parent
REPO_ROOT = BENCH_DIR.parent


def cpu_count() -> int:
    """CPUs this process may run on (what ``nproc`` prints)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def cpu_model() -> str:
    """The CPU's ``model name`` from ``/proc/cpuinfo``, else what ``platform`` knows."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            key, _, value = line.partition(":")
            if key.strip() == "model name" and value.strip():
                return " ".join(value.split())
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown CPU"


def memory_gib() -> float | None:
    """Total memory in GiB from ``/proc/meminfo``, or None where there is none."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) / 2**20  # the file counts kB
    except (OSError, ValueError, IndexError):
        pass
    return None


def machine_description() -> str:
    """One line naming the machine, e.g. ``AMD EPYC, 2 CPUs, 23 GiB``."""
    parts = [cpu_model(), f"{cpu_count()} CPUs"]
    mem = memory_gib()
    if mem is not None:
        parts.append(f"{mem:.0f} GiB")
    return ", ".join(parts)


#: git pathspecs of what the benchmarks write (:func:`git_commit` leaves them out)
OUTPUTS_EXCLUDED = (":(exclude)benchmarks/results", ":(exclude)benchmarks/README.md")


def git_commit(repo: Path = REPO_ROOT) -> str:
    """Short hash of ``HEAD``, with ``-dirty`` when tracked files differ from it.

    The benchmarks' own outputs (``benchmarks/results/`` and ``benchmarks/README.md``) do not
    count, so the second of several benchmarks run in one clean checkout is labelled clean too.
    ``unknown`` outside a git checkout, so a benchmark still runs from a tarball.
    """

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no", "--", ".", *OUTPUTS_EXCLUDED)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (``2025-01-31T12:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def versions(*packages: str) -> dict[str, str]:
    """The installed version of each package, by name (empty where it is not installed)."""
    out = {}
    for package in packages:
        try:
            out[package] = importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            out[package] = ""
    return out


#: The columns every row starts with, from :func:`run_info`.
RUN_COLUMNS = ("commit", "date", "machine", "python")


def mipopt_command() -> list[str]:
    """The ``mipopt`` console script installed beside the interpreter (as ``pip`` writes it), run by
    that interpreter, so that no shell or version-manager shim is timed."""
    script = Path(sys.executable).with_name("mipopt")
    if not script.is_file():
        found = shutil.which("mipopt")
        if found is None:
            raise Failed("no mipopt console script beside the interpreter nor on PATH")
        script = Path(found)
    return [sys.executable, str(script)]


def run_info() -> dict[str, str]:
    """The columns every benchmark row starts with: commit, date, machine, python.

    Call it once per run: all rows of one run then share the same ``date``, which
    is how tables pair rows of the same run.
    """
    return {
        "commit": git_commit(),
        "date": utc_now(),
        "machine": machine_description(),
        "python": platform.python_version(),
    }


def append_rows(path: Path, columns: Sequence[str], rows: Iterable[Mapping[str, Any]]) -> int:
    """Append ``rows`` to the CSV file ``path``, writing the header if the file is new.

    Parameters
    ----------
    path
        The CSV file; its folder is created when missing.
    columns
        Column names, in order. Every row must have exactly these keys.
    rows
        The rows; values are written with ``str`` (None as an empty field).

    Returns
    -------
    int
        Number of rows written.

    Raises
    ------
    ValueError
        When the existing file has another header (a changed schema must not be
        mixed silently into old rows) or a row has missing or extra keys.
    """
    columns = list(columns)
    rows = list(rows)
    for i, row in enumerate(rows):
        if set(row) != set(columns):
            missing = sorted(set(columns) - set(row))
            extra = sorted(set(row) - set(columns))
            raise ValueError(f"row {i}: missing columns {missing}, unknown columns {extra}")
    path.parent.mkdir(parents=True, exist_ok=True)
    exists = path.exists() and path.stat().st_size > 0
    if exists:
        with path.open(newline="") as fh:
            header = next(csv.reader(fh), [])
        if header != columns:
            raise ValueError(f"{path}: header {header} differs from {columns}; move the old file aside")
    with path.open("a", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=columns, lineterminator="\n")
        if not exists:
            writer.writeheader()
        for row in rows:
            writer.writerow({k: "" if v is None else v for k, v in row.items()})
    return len(rows)


def read_rows(path: Path) -> list[dict[str, str]]:
    """All rows of a CSV file as dicts of strings, in file order (empty if no file)."""
    if not path.exists():
        return []
    with path.open(newline="") as fh:
        return list(csv.DictReader(fh))


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[Any]], align: str = "") -> str:
    """A GitHub markdown table; ``align`` has one of ``l``/``r`` per column (default left)."""
    align = align or "l" * len(header)
    rule = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "| " + " | ".join(rule) + " |"]
    lines += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(lines)


def markers(name: str) -> tuple[str, str]:
    """The begin and end markers of the generated section ``name``."""
    return f"<!-- {name}:begin -->", f"<!-- {name}:end -->"


def replace_section(readme: Path, name: str, content: str) -> None:
    """Put ``content`` between the ``name`` markers of ``readme``.

    Text outside the markers is kept. A missing file, or a file without the
    markers, gets the section appended at its end. Written via a temporary file
    and rename, so an interrupted run never leaves half a README.

    Raises
    ------
    ValueError
        When only one of the two markers is present, or they are out of order.
    """
    begin, end = markers(name)
    text = readme.read_text() if readme.exists() else ""
    block = f"{begin}\n{content.strip()}\n{end}"
    i, j = text.find(begin), text.find(end)
    if i < 0 and j < 0:
        text = (text.rstrip() + "\n\n" if text.strip() else "") + block + "\n"
    elif i < 0 or j < i:
        raise ValueError(f"{readme}: markers {begin} / {end} missing or out of order")
    else:
        text = text[:i] + block + text[j + len(end) :]
    readme.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(readme, lambda fh: fh.write(text), text=True)


# --- reading rows back ----------------------------------------------------------


def run_start(row: CsvRow) -> str:
    """When the row's run started (its ``date``): all rows of one run share it."""
    return row["date"]


def run_minute(row: CsvRow) -> str:
    """The minute the row's run started: for files whose runs were split over several processes."""
    return row["date"][:16]


def latest(
    rows: Iterable[CsvRow], key: Callable[[CsvRow], K], when: Callable[[CsvRow], str] = run_start
) -> dict[K, list[CsvRow]]:
    """The rows of the latest run of each configuration ``key``.

    Returns
    -------
    dict
        ``key -> rows`` whose ``when`` is the latest of that key, in file order; the keys in
        the order their first such row appears.
    """
    rows = list(rows)
    newest: dict[K, str] = {}
    for r in rows:
        k = key(r)
        newest[k] = max(newest.get(k, ""), when(r))
    groups: dict[K, list[CsvRow]] = {}
    for r in rows:
        k = key(r)
        if when(r) == newest[k]:
            groups.setdefault(k, []).append(r)
    return groups


def latest_rows(
    rows: Iterable[CsvRow], key: Callable[[CsvRow], Hashable], when: Callable[[CsvRow], str] = run_start
) -> list[CsvRow]:
    """The rows of :func:`latest`, in file order."""
    rows = list(rows)
    chosen = {id(r) for group in latest(rows, key, when).values() for r in group}
    return [r for r in rows if id(r) in chosen]


# --- formatting ---------------------------------------------------------------------


def median(values: Iterable[float]) -> float:
    """Median of the values (raises ``StatisticsError`` on none)."""
    return statistics.median(values)


def mean(rows: Iterable[Mapping[str, str]], column: str) -> float:
    """Mean of a column over the rows that have a value in it (NaN when none has)."""
    values = [float(r[column]) for r in rows if r[column] != ""]
    return sum(values) / len(values) if values else math.nan


def percent(value: str | float | None, digits: int = 1, sign: str = "", scale: float = 100.0) -> str:
    """``value * scale`` as a percentage: ``12.3 %``; ``-`` for None or empty, ``inf`` for infinity.

    ``scale`` is 100 for a fraction, 1 for a value already in per cent; ``sign="+"`` shows it.
    """
    if value is None or value == "":
        return "-"
    v = float(value)
    return "inf" if math.isinf(v) else f"{v * scale:{sign}.{digits}f} %"


@dataclass(frozen=True)
class Column(Generic[T]):
    """One column of a README table: its header, its cell for an item, its alignment."""

    header: str
    cell: Callable[[T], object]
    align: str = "l"  # "l" or "r"


def table(columns: Sequence[Column[T]], items: Iterable[T]) -> str:
    """A markdown table, one line per item, each cell from its :class:`Column`."""
    return markdown_table(
        [c.header for c in columns],
        ([c.cell(item) for c in columns] for item in items),
        align="".join(c.align for c in columns),
    )


def progress(message: str) -> None:
    """One progress line on stderr, so stdout stays the run's summary."""
    print(message, file=sys.stderr, flush=True)


# --- executors ---------------------------------------------------------------------------


def executor_argument(parser: argparse.ArgumentParser, jobs: str) -> None:
    """``--executor SPEC``: where a grid's independent ``jobs`` run (:mod:`mipopt.executors`), as in
    the command line; the rows are the same whatever runs them, but for runtimes."""
    from mipopt.cli.common import executor_argument as add

    add(parser, jobs)


def run_grid(
    fn: Callable[..., T],
    jobs: Sequence[Sequence[Any]],
    executor: str,
    what: str = "jobs",
    say: Callable[[T], str] | None = None,
) -> list[T]:
    """``[fn(*job) for job in jobs]`` on ``executor`` (a spec, started and closed here), in order.

    Progress on stderr: ``say(result)`` as each job ends, or without ``say`` a count about every
    tenth job. A cluster package missing or a scheduler unreachable is :class:`Failed`.
    """
    from mipopt.errors import InstanceError
    from mipopt.executors import make_executor

    t0, finished = time.perf_counter(), 0

    def done(i: int, result: T) -> None:
        nonlocal finished
        finished += 1
        if say is not None:
            progress(say(result))
        elif finished % max(1, len(jobs) // 10) == 0 or finished == len(jobs):
            progress(f"{finished}/{len(jobs)} {what} on {executor}, {time.perf_counter() - t0:.1f} s")

    try:
        ex = make_executor(executor)
    except InstanceError as err:
        raise Failed(f"--executor: {err.rule}") from None
    with ex:
        return ex.map(fn, jobs, done)


# --- child processes under limits -----------------------------------------------------


def timed_process(argv: Sequence[str], timeout_s: float | None = None) -> tuple[float, float]:
    """Wall time (s) and peak resident memory (MB, the child's ``ru_maxrss``) of one fresh process
    of ``argv`` run from the repository's root, its output dropped; killed after ``timeout_s``.

    Raises
    ------
    Failed
        When it exits with another code than 0 (or was killed at ``timeout_s``), with the end of
        its stderr.
    """
    with tempfile.TemporaryFile("w+") as err:  # a file, not a pipe: a chatty child never blocks
        t0 = time.perf_counter()
        child = subprocess.Popen(argv, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=err)
        timer = None if timeout_s is None else threading.Timer(timeout_s, child.kill)
        if timer is not None:
            timer.start()
        try:
            _, status, usage = os.wait4(child.pid, 0)
        finally:
            if timer is not None:
                timer.cancel()
        elapsed = time.perf_counter() - t0
        child.returncode = os.waitstatus_to_exitcode(status)
        err.seek(0)
        error = err.read()
    if child.returncode != 0:
        killed = timeout_s is not None and elapsed >= timeout_s
        why = f"killed after {timeout_s:g} s" if killed else f"exit code {child.returncode}"
        raise Failed(f"{' '.join(argv[2:])}: {why}: {error.strip()[-300:]}")
    return elapsed, usage.ru_maxrss / 1024  # kB on Linux


@dataclass(frozen=True)
class Isolated(Generic[T]):
    """What a child process of :func:`run_isolated` gave back: its value, or why there is none."""

    value: T | None
    error: str  # empty when the value came back
    runtime_s: float  # wall time in the parent, from the start of the child to its answer
    timed_out: bool = False


def _child(conn: Connection, job: Callable[[], T], memory_limit_gb: float) -> None:
    if memory_limit_gb:
        limit = int(memory_limit_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    try:
        conn.send(("value", job()))
    except MemoryError:
        conn.send(("error", f"out of memory (limit {memory_limit_gb:g} GB)"))
    except Exception as err:
        last = traceback.extract_tb(err.__traceback__)[-1]
        conn.send(("error", f"{type(err).__name__}: {err} ({Path(last.filename).name}:{last.lineno})"))
    finally:
        conn.close()


def run_isolated(job: Callable[[], T], timeout_s: float, memory_limit_gb: float = 0.0) -> Isolated[T]:
    """``job()`` in a forked child process, killed after ``timeout_s``, its address space limited.

    The child inherits everything ``job`` refers to (fork), so only its answer is pickled.
    An exception in the child comes back as the error ``Type: message (file:line)``, running
    out of memory (``memory_limit_gb``; 0 for no limit) as ``out of memory``; the child this
    function started is killed by its handle at the time limit.
    """
    ctx = multiprocessing.get_context("fork")
    receive, send = ctx.Pipe(duplex=False)
    t0 = time.perf_counter()
    child = ctx.Process(target=_child, args=(send, job, memory_limit_gb), daemon=True)
    child.start()
    send.close()
    answer: tuple[str, Any] | None = None
    try:
        if receive.poll(timeout_s):
            try:
                answer = receive.recv()
            except EOFError:  # the child died before it answered
                answer = None
        elapsed = time.perf_counter() - t0
        timed_out = answer is None and child.is_alive()
    finally:
        if child.is_alive():
            child.kill()
        child.join()
        receive.close()
    if answer is None:
        why = f"killed at the hard limit ({timeout_s:g} s)" if timed_out else ""
        return Isolated(None, why or f"child process died (exit code {child.exitcode})", elapsed, timed_out)
    kind, value = answer
    return Isolated(value, "", elapsed) if kind == "value" else Isolated(None, value, elapsed)


# --- the harness ----------------------------------------------------------------------

Render = Callable[[list[CsvRow], str, argparse.Namespace], str]


@dataclass(frozen=True)
class Output:
    """One CSV file of a benchmark and the README sections generated from all of its rows.

    ``columns`` are the benchmark's own, after the provenance :data:`RUN_COLUMNS`.

    ``sections`` maps a section's marker name to its text from ``(rows, source, args)``:
    every row of the file, the file's path relative to the README, the run's arguments.
    """

    csv: str
    columns: Sequence[str]
    sections: Mapping[str, Render]


class Failed(Exception):
    """A measurement that must not be recorded (say two methods disagree): nothing is written."""


def _no_check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    return None


@dataclass(frozen=True)
class Benchmark:
    """A benchmark: its arguments, its measurement, its outputs; :meth:`main` runs it.

    Parameters
    ----------
    doc
        The module docstring; its first paragraph is the ``--help`` description.
    outputs
        The CSV files and README sections of the benchmark; a run appends to one of them,
        ``choose(args)``'s (the first by default), and ``--render`` regenerates them all.
    arguments
        Adds the benchmark's own arguments to the parser.
    measure
        ``measure(args) -> rows``: one run, each row holding the output's columns (the
        harness puts :func:`run_info`'s provenance in front). Raises :class:`Failed` when
        the rows must not be recorded.
    check
        ``check(parser, args)``: validates and completes the parsed arguments
        (``parser.error`` on bad input).
    report
        ``report(args, rows)`` prints a summary of the run's rows on stdout.
    quick
        Arguments of a small run of every part, the defaults under ``--quick`` (a smoke
        test: its rows must go to another ``--out-dir``).
    """

    doc: str
    outputs: Sequence[Output]
    arguments: Callable[[argparse.ArgumentParser], None]
    measure: Callable[[argparse.Namespace], list[Row]]
    check: Callable[[argparse.ArgumentParser, argparse.Namespace], None] = _no_check
    choose: Callable[[argparse.Namespace], Output] | None = None
    report: Callable[[argparse.Namespace, list[Row]], None] | None = None
    quick: Sequence[str] = field(default_factory=tuple)

    def parser(self) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(description=" ".join(self.doc.split("\n\n")[0].split()))
        self.arguments(parser)
        files = parser.add_argument_group("results")
        files.add_argument(
            "--out-dir", type=Path, help="folder of the CSV files (default benchmarks/results)"
        )
        files.add_argument(
            "--readme",
            type=Path,
            help="README whose sections are regenerated (default benchmarks/README.md; "
            "with --quick OUT_DIR/README.md)",
        )
        files.add_argument(
            "--render",
            action="store_true",
            help="measure nothing: regenerate the README sections from the rows in OUT_DIR",
        )
        files.add_argument(
            "--quick",
            action="store_true",
            help=f"a small run of every part ({' '.join(self.quick) or 'the defaults'}); needs --out-dir",
        )
        return parser

    def parse_args(self, argv: Sequence[str] | None = None) -> argparse.Namespace:
        argv = list(sys.argv[1:] if argv is None else argv)
        parser = self.parser()
        if "--quick" in argv:  # the quick run's arguments become defaults: the command line's win
            given = vars(parser.parse_args(self.quick))
            parser.set_defaults(**{k: v for k, v in given.items() if v != parser.get_default(k)})
        args = parser.parse_args(argv)
        if args.quick and args.out_dir is None:
            parser.error("--quick rows are not results: give --out-dir")
        if args.out_dir is None:
            args.out_dir = BENCH_DIR / "results"
        if args.readme is None:
            args.readme = args.out_dir / "README.md" if args.quick else BENCH_DIR / "README.md"
        self.check(parser, args)
        args.prog = parser.prog
        return args

    def render(self, args: argparse.Namespace, outputs: Iterable[Output] | None = None) -> list[Path]:
        """Regenerate the README sections of ``outputs`` (default all) whose CSV file exists."""
        done = []
        for output in self.outputs if outputs is None else outputs:
            path = args.out_dir / output.csv
            if not path.exists():
                continue
            rows = read_rows(path)
            source = os.path.relpath(path.resolve(), args.readme.resolve().parent)
            for name, render in output.sections.items():
                replace_section(args.readme, name, render(rows, source, args))
            done.append(path)
        return done

    def main(self, argv: Sequence[str] | None = None) -> int:
        """Parse ``argv``, run the benchmark (or only ``--render``), append its rows, update the README."""
        args = self.parse_args(argv)
        t0 = time.perf_counter()
        if args.render:
            done = self.render(args)
            print(f"rendered {args.readme} from {', '.join(str(p) for p in done) or 'no rows'}")
            return 0
        run = run_info()
        args.out_dir.mkdir(parents=True, exist_ok=True)  # a measurement may write figures there
        try:
            rows = [{**run, **row} for row in self.measure(args)]
        except Failed as err:
            print(f"{args.prog}: error: {err} (nothing written)", file=sys.stderr)
            return 1
        output = self.choose(args) if self.choose else self.outputs[0]
        csv_path = args.out_dir / output.csv
        append_rows(csv_path, [*RUN_COLUMNS, *output.columns], rows)
        self.render(args, [output])
        if self.report:
            self.report(args, rows)
        print(
            f"appended {len(rows)} rows to {csv_path}; updated {args.readme} "
            f"({time.perf_counter() - t0:.0f} s)"
        )
        return 0
