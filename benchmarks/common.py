"""Shared helpers of the benchmark scripts in ``benchmarks/``.

Every benchmark run appends rows to a CSV file under ``benchmarks/results/``
and regenerates its own table in ``benchmarks/README.md`` from all rows of that
file, between the markers ``<!-- NAME:begin -->`` and ``<!-- NAME:end -->``.
Each row says where it came from: :func:`run_info` gives the commit, date,
machine and Python of the run.

Scripts import this module as ``common`` (``python benchmarks/bench_X.py`` puts
``benchmarks/`` on ``sys.path``).
"""

from __future__ import annotations

import csv
import os
import platform
import statistics
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from mipopt.io import write_atomic

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


def git_commit(repo: Path = REPO_ROOT) -> str:
    """Short hash of ``HEAD``, with ``-dirty`` when tracked files differ from it.

    ``unknown`` outside a git checkout, so a benchmark still runs from a tarball.
    """

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", *args], cwd=repo, capture_output=True, text=True, check=True, timeout=30
        ).stdout.strip()

    try:
        commit = git("rev-parse", "--short", "HEAD")
        dirty = git("status", "--porcelain", "--untracked-files=no")
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return f"{commit}-dirty" if dirty else commit


def utc_now() -> str:
    """The current UTC time, ISO 8601 to the second (``2025-01-31T12:00:00Z``)."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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


def median(values: Iterable[float]) -> float:
    """Median of the values (raises ``StatisticsError`` on none)."""
    return statistics.median(values)


def progress(message: str) -> None:
    """One progress line on stderr, so stdout stays the run's summary."""
    print(message, file=sys.stderr, flush=True)
