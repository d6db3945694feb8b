"""What the commands share: bad-input reporting, file loaders, printing, progress, option types.

Nothing here imports a solver, Pyomo, pandas or matplotlib: every command imports this module,
and ``mipopt info`` must start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from types import TracebackType
from typing import TYPE_CHECKING, TextIO

from mipopt._fields import as_printed
from mipopt.catalog import GpuModel, get_model
from mipopt.errors import InstanceError
from mipopt.instance import Instance, Solution
from mipopt.io import load_instance, load_solution
from mipopt.limits import MAX_GPUS, MAX_RUNS, beyond
from mipopt.registry import EXACT_MODELS

if TYPE_CHECKING:
    from mipopt.exact.sweep import SweepProgress

EXIT_OK, EXIT_VIOLATION, EXIT_BAD_INPUT = 0, 1, 2
EXIT_INTERRUPTED = 130  # 128 + SIGINT, as a shell reports Ctrl-C


class BadInput(Exception):
    """Bad input to report in one line and exit 2."""


#: The library's parameter names and the flags that set them.
FLAGS = {
    "objective": "--objective",
    "objectives": "--objectives",
    "model": "--model",
    "use_case": "--use-case",
    "policy": "--policy",
    "method": "--method",
    "methods": "--methods",
    "time_limit_s": "--time-limit",
    "threads": "--threads",
    "solver": "--solver",
    "workload": "--workload",
    "semantics": "--semantics",
    "max_points": "--max-points",
    "seed": "--seed",
    "gap": "--gap",
    "warm_start": "--warm-start",
    "executor": "--executor",
    "max_restarts": "--max-restarts",
    "max_moved_gb": "--max-moved-gb",
}


def flagged(err: ValueError) -> str:
    """The library's error, naming the flag where the library names its parameter."""
    if isinstance(err, InstanceError) and err.path in FLAGS:
        return f"{FLAGS[err.path]}: {err.rule}"
    return str(err)


# --- loading and printing


def read_instance(path: str) -> Instance:
    """The instance in ``path``; a bad file is :class:`BadInput` naming it."""
    try:
        return load_instance(path)
    except InstanceError as err:
        raise BadInput(f"{as_printed(path)}: {err}") from None


def read_solution(path: str) -> Solution:
    """The solution in ``path``; a bad file is :class:`BadInput` naming it."""
    try:
        return load_solution(path)
    except InstanceError as err:
        raise BadInput(f"{as_printed(path)}: {err}") from None


def gpu_model(name: str) -> GpuModel:
    """The built-in GPU model called ``name``; an unknown one is :class:`BadInput`."""
    try:
        return get_model(name)
    except KeyError as err:
        raise BadInput(str(err.args[0])) from None


def print_json(data: object) -> None:
    print(json.dumps(data, indent=2))


def print_written(*paths: str | None) -> None:
    """After a summary, one line per file written."""
    written = [path for path in paths if path]
    if written:
        print()
    for path in written:
        print(f"wrote {path}")


# --- progress


def wants_progress(args: argparse.Namespace) -> bool:
    """``--progress``/``--no-progress``, or by default whether stderr is a terminal."""
    return bool(args.progress) if args.progress is not None else sys.stderr.isatty()


class ProgressBar:
    """A one-line text bar on stderr, redrawn in place; disabled, it draws nothing.

    Used as a context manager, it ends its line on exit, also when the run fails.
    """

    def __init__(self, stream: TextIO, *, enabled: bool = True, width: int = 30) -> None:
        self.stream, self.enabled, self.width, self.drawn = stream, enabled, width, False

    @classmethod
    def for_args(cls, args: argparse.Namespace) -> ProgressBar:
        """A bar on stderr, enabled as :func:`wants_progress` says."""
        return cls(sys.stderr, enabled=wants_progress(args))

    def __call__(self, p: SweepProgress) -> None:
        self.draw(p.fraction, f"{p.solves} solves, {p.points} points  {p.message[:32]:<32}")

    def draw(self, fraction: float, text: str = "") -> None:
        if not self.enabled:
            return
        filled = round(fraction * self.width)
        bar = "#" * filled + "." * (self.width - filled)
        self.stream.write(f"\r[{bar}] {fraction:4.0%}  {text}")
        self.stream.flush()
        self.drawn = True

    def close(self) -> None:
        if self.drawn:
            self.stream.write("\n")
            self.stream.flush()

    def __enter__(self) -> ProgressBar:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, err: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


# --- option types: each option's rule is checked once, while the command line is parsed


def _number(
    convert: Callable[[str], float], rule: str, ok: Callable[[float], bool]
) -> Callable[[str], float]:
    """An argparse ``type=`` that converts with ``convert`` and refuses values breaking ``rule``."""

    def parse(text: str) -> float:
        try:
            value = convert(text)
        except ValueError:  # the wording of argparse's own type=int / type=float
            raise argparse.ArgumentTypeError(f"invalid {convert.__name__} value: {text!r}") from None
        if not ok(value):  # every check is written so that nan fails it
            raise argparse.ArgumentTypeError(f"must be {rule}, got {value:g}")
        return value

    return parse


positive_seconds = _number(float, "positive seconds", lambda v: v > 0)
fraction = _number(float, "a fraction in [0, 1]", lambda v: 0 <= v <= 1)
relative_gap = _number(float, "a relative gap in [0, 1)", lambda v: 0 <= v < 1)
count = _number(int, "at least 1", lambda v: v >= 1)


def _at_most(limit: int, what: str) -> Callable[[str], float]:
    """A :data:`count` of at most ``limit`` (docs/limits.md), checked while the command line is
    parsed, before any work."""

    def parse(text: str) -> float:
        value = count(text)
        if value > limit:
            raise argparse.ArgumentTypeError(beyond(value, what, limit))
        return value

    return parse


gpu_count = _at_most(MAX_GPUS, "GPUs")
run_count = _at_most(MAX_RUNS, "runs")
non_negative = _number(int, "non-negative", lambda v: v >= 0)
positive = _number(float, "a positive finite number", lambda v: 0 < v < float("inf"))
horizon = _number(float, "a non-negative time or inf", lambda v: v >= 0)
gigabytes = _number(float, "a non-negative finite number of GB", lambda v: 0 <= v < float("inf"))


def budget_arguments(p: argparse.ArgumentParser, what: str) -> None:
    """``--max-restarts`` and ``--max-moved-gb``: a :class:`~mipopt.instance.Budget` for ``what``."""
    p.add_argument(
        "--max-restarts",
        type=non_negative,
        metavar="N",
        help=f"at most N running workloads change GPU or start ({what}); default: no limit",
    )
    p.add_argument(
        "--max-moved-gb",
        type=gigabytes,
        metavar="GB",
        help=f"at most GB of running workloads move to another GPU ({what}); default: no limit",
    )


#: mipopt.exact.models.MODELS' names (a test keeps them equal; importing it here would load Pyomo).
SOLVER_NAMES = ("highs", "cpsat")


def instance_argument(p: argparse.ArgumentParser, what: str = "") -> None:
    """The INSTANCE positional every command reading an instance file takes."""
    p.add_argument("instance", help=f"an instance JSON file{what} (see docs/formats.md)")


def solver_arguments(p: argparse.ArgumentParser, *, time_limit: str, wpm: bool = False) -> None:
    """--model, --solver, --time-limit, --threads and --seed, shared by solve and sweep."""
    p.add_argument(
        "--model",
        default="grmu",
        choices=[m for m in EXACT_MODELS if wpm or m != "wpm"],
        help="formulation: grmu, the configuration model with staged proofs (default); grmu-slots, the "
        "tight model over start slots; grmu-paper, Eqs. 3-26 as printed"
        + ("; wpm, IBM's profit MIP (see --use-case)" if wpm else ""),
    )
    backend_arguments(p, time_limit=time_limit, default_time_limit=None)


def backend_arguments(
    p: argparse.ArgumentParser, *, time_limit: str, default_time_limit: float | None
) -> None:
    """--solver, --time-limit, --threads and --seed: what every command running a MIP takes."""
    p.add_argument("--solver", default="highs", choices=SOLVER_NAMES, help="backend (default: highs)")
    p.add_argument(
        "--time-limit", type=positive_seconds, default=default_time_limit, metavar="S", help=time_limit
    )
    p.add_argument("--threads", type=count, metavar="N", help="solver threads (default: the solver's choice)")
    p.add_argument(
        "--seed",
        type=non_negative,
        default=0,
        help="random seed of the solver and of randomized policies (default 0)",
    )


def progress_argument(p: argparse.ArgumentParser, what: str) -> None:
    """--progress / --no-progress, on by default when stderr is a terminal."""
    p.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        help=f"{what} on stderr (default: only when stderr is a terminal)",
    )


def executor_spec(text: str) -> str:
    """An argparse ``type=`` for ``--executor``: the spec's form is checked, nothing is started."""
    from mipopt.executors import parse_executor

    try:
        parse_executor(text)
    except InstanceError as err:
        raise argparse.ArgumentTypeError(err.rule) from None
    return text


def executor_argument(p: argparse.ArgumentParser, jobs: str) -> None:
    """--executor SPEC: where the command's independent ``jobs`` run (docs/executors.md)."""
    p.add_argument(
        "--executor",
        type=executor_spec,
        default="local",
        metavar="SPEC",
        help=f"where the {jobs} run: local (a process per CPU, default), local:N, serial, "
        "dask://HOST:PORT, dask:local[:N], ray://HOST:PORT, ray:local[:N] (dask and ray: pip install "
        "'.[cluster]'); the results are the same whatever runs them",
    )
