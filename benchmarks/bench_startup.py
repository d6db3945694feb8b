"""Benchmark: how long the command line takes to start, each command in fresh processes.

Wall time of ``--runs`` fresh processes (default 10, after one unmeasured warm-up) of each
command, from the repository's root:

* ``mipopt info`` and ``mipopt validate instances/quickstart.json``: target under 0.3 s;
* ``mipopt solve instances/quickstart.json``: target under 1 s;
* ``python -c "import mipopt"``: the library alone (no target; what every command pays).

``mipopt`` is the console script installed beside the interpreter (as ``pip`` writes it),
run by that interpreter, so no shell or version-manager shim is timed. A row per command
holds the median, minimum and maximum; a command that fails stops the run.

Then each command runs once more under ``python -X importtime``: its imports' own times
(``self``) are summed per top-level package, and the ``--top`` largest (default 10) get a row
each: where the start-up goes (issue 13).

Usage::

    python -m benchmarks.bench_startup [--runs 10] [--top 10] [--out-dir DIR] [--readme FILE]
        [--render] [--quick]

Rows go to ``OUT_DIR/startup.csv``; the README section ``startup`` is regenerated from all rows
of that file: every commit's latest run, so a change shows before and after.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_startup.py
    import _as_module  # noqa: F401

import argparse
import subprocess
import sys
import time
from collections import defaultdict
from typing import Any

from benchmarks import common

QUICKSTART = "instances/quickstart.json"
#: name -> (arguments after the program, target in seconds or None)
COMMANDS: dict[str, tuple[tuple[str, ...], float | None]] = {
    "mipopt info": (("info",), 0.3),
    f"mipopt validate {QUICKSTART}": (("validate", QUICKSTART), 0.3),
    f"mipopt solve {QUICKSTART}": (("solve", QUICKSTART), 1.0),
    'python -c "import mipopt"': (("-c", "import mipopt"), None),
}
COLUMNS = (
    "kind",  # "command": one command's wall times; "importtime": one package's import time in it
    "command",
    "runs",
    "median_s",
    "min_s",
    "max_s",
    "target_s",
    "rank",
    "package",
    "modules",
    "self_s",
)


def program(command: str) -> list[str]:
    """The process to start for ``command``: the interpreter, with the console script for ``mipopt``."""
    args, _ = COMMANDS[command]
    if command.startswith("python"):
        return [sys.executable, *args]
    return [*common.mipopt_command(), *args]


def wall_times(command: str, runs: int) -> list[float]:
    """Wall time of ``runs`` fresh processes of ``command``, after one warm-up (disk cache, .pyc)."""
    argv = program(command)
    times = []
    for i in range(runs + 1):
        t0 = time.perf_counter()
        done = subprocess.run(argv, cwd=common.REPO_ROOT, capture_output=True, text=True)
        elapsed = time.perf_counter() - t0
        if done.returncode != 0:
            raise common.Failed(f"{command}: exit code {done.returncode}: {done.stderr.strip()[-300:]}")
        if i:
            times.append(elapsed)
    return times


def import_times(command: str) -> dict[str, tuple[float, int]]:
    """``python -X importtime`` of one run of ``command``: top-level package -> (self seconds, modules)."""
    argv = program(command)
    done = subprocess.run(
        [argv[0], "-X", "importtime", *argv[1:]], cwd=common.REPO_ROOT, capture_output=True, text=True
    )
    per_package: dict[str, list[float]] = defaultdict(list)
    for line in done.stderr.splitlines():
        # import time: self [us] | cumulative | imported package
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        own, _, name = line.removeprefix("import time:").split("|")
        per_package[name.strip().split(".")[0]].append(int(own) / 1e6)
    return {package: (sum(t), len(t)) for package, t in per_package.items()}


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    empty = dict.fromkeys(COLUMNS, "")
    for command, (_, target) in COMMANDS.items():
        times = wall_times(command, args.runs)
        common.progress(f"{command}: median {common.median(times):.3f} s over {len(times)} runs")
        rows.append(
            empty
            | {
                "kind": "command",
                "command": command,
                "runs": len(times),
                "median_s": f"{common.median(times):.4f}",
                "min_s": f"{min(times):.4f}",
                "max_s": f"{max(times):.4f}",
                "target_s": "" if target is None else target,
            }
        )
        packages = import_times(command)
        top = sorted(packages.items(), key=lambda kv: -kv[1][0])[: args.top]
        for rank, (package, (seconds, modules)) in enumerate(top, 1):
            rows.append(
                empty
                | {
                    "kind": "importtime",
                    "command": command,
                    "runs": 1,
                    "rank": rank,
                    "package": package,
                    "modules": modules,
                    "self_s": f"{seconds:.4f}",
                }
            )
    return rows


# --- README ---------------------------------------------------------------------


def _verdict(row: dict[str, str]) -> str:
    if not row["target_s"]:
        return "-"
    target = float(row["target_s"])
    return f"{'PASS' if float(row['median_s']) < target else 'FAIL'} (< {target:g} s)"


def _imports(rows: list[dict[str, str]], command: str) -> str:
    """The command's heaviest packages in the same run: ``pyomo 0.42 s (310)``, modules in brackets."""
    top = sorted(
        (r for r in rows if r["kind"] == "importtime" and r["command"] == command),
        key=lambda r: int(r["rank"]),
    )
    return ", ".join(f"{r['package']} {float(r['self_s']):.2f} s ({r['modules']})" for r in top[:5]) or "-"


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """Each command's latest run at each commit, oldest commit first; the heaviest imports of that run."""
    runs = common.latest(rows, lambda r: (r["commit"], r["command"]))
    since: dict[str, str] = {}  # commit -> its first run shown
    for (commit, _), group in runs.items():
        since[commit] = min(since.get(commit, group[0]["date"]), group[0]["date"])
    order = list(COMMANDS)
    keys = sorted(runs, key=lambda k: (since[k[0]], k[0], order.index(k[1]) if k[1] in order else len(order)))
    lines = [
        (next(r for r in runs[k] if r["kind"] == "command"), runs[k])
        for k in keys
        if any(r["kind"] == "command" for r in runs[k])
    ]
    Line = tuple[dict[str, str], list[dict[str, str]]]
    columns: list[common.Column[Line]] = [
        common.Column("Command", lambda x: f"`{x[0]['command']}`"),
        common.Column("Median", lambda x: f"{float(x[0]['median_s']):.3f} s", "r"),
        common.Column("Min", lambda x: f"{float(x[0]['min_s']):.3f} s", "r"),
        common.Column("Max", lambda x: f"{float(x[0]['max_s']):.3f} s", "r"),
        common.Column("Runs", lambda x: x[0]["runs"], "r"),
        common.Column("Target", lambda x: _verdict(x[0])),
        common.Column("Heaviest imports (own time, modules)", lambda x: _imports(x[1], x[0]["command"])),
        common.Column("Commit", lambda x: x[0]["commit"]),
        common.Column("Date", lambda x: x[0]["date"][:10]),
        common.Column("Machine", lambda x: x[0]["machine"]),
    ]
    note = (
        f"_Generated by `benchmarks/bench_startup.py` from {len(rows)} rows of `{source}`: the latest run "
        "of each command at each commit (`-dirty`: the working tree differed from the commit). Wall time "
        "of fresh processes started from the repository's root, after a warm-up; the imports are one "
        "`python -X importtime` run of the command, each top-level package's own import time summed over "
        "its modules._"
    )
    return f"{note}\n\n{common.table(columns, lines)}"


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=10, help="fresh processes per command (default 10)")
    parser.add_argument(
        "--top", type=int, default=10, help="packages kept per command's imports (default 10)"
    )


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.runs < 1 or args.top < 1:
        parser.error("--runs and --top must be at least 1")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'command':<48} {'median':>8} {'min':>8} {'target':>8}")
    for row in rows:
        if row["kind"] == "command":
            target = f"{row['target_s']:g} s" if row["target_s"] != "" else "-"
            print(f"{row['command']:<48} {row['median_s']:>8} {row['min_s']:>8} {target:>8}")


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("startup.csv", COLUMNS, {"startup": readme_table})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=("--runs", "2", "--top", "3"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
