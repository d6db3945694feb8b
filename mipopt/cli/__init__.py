"""The ``mipopt`` command: a thin shell over the library, one module per command.

Each command module offers ``add_parser(subparsers)`` and ``run(args) -> int``; this module
assembles them and turns errors into exit codes. Exit codes: 0 success; 1 a verified solution
breaks a rule; 2 bad input (one line naming the file, the JSON path and the rule); 130 and 143
stopped by Ctrl-C or SIGTERM (a solve after printing and writing its best placement); 141 the
output's reader left before a write that could not be dropped (:mod:`mipopt.cli.signals`).

A command imports the heavy packages (Pyomo, the solvers, pandas, matplotlib) only when it runs,
so ``mipopt info`` and ``mipopt validate`` start in a fraction of a second.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import os
import sys
import time
import warnings
from collections.abc import Iterator, Sequence

from mipopt import __version__
from mipopt.cli import (  # _start first: a Ctrl-C while the others import is one line (exit 130)
    _start,
    bench,
    generate,
    hindsight,
    importer,
    info,
    partitions,
    plan,
    show,
    signals,
    simulate,
    solve,
    sweep,
    validate,
    verify,
)
from mipopt.cli.common import EXIT_BAD_INPUT, FLAGS, BadInput

_start.done()

#: In the order of ``mipopt --help``.
COMMANDS = (
    info,
    validate,
    verify,
    show,
    importer,
    solve,
    plan,
    sweep,
    partitions,
    generate,
    simulate,
    hindsight,
    bench,
)

DESCRIPTION = """\
Place workloads on NVIDIA MIG GPU instances: look up GPU models and their profiles, check
instance and solution files, solve placements exactly or with heuristics, plan migrations,
and compare policies in simulations and benchmarks.

examples:
  mipopt info A100-40GB                      profiles and legal placements of one GPU model
  mipopt solve instances/quickstart.json     place the new workloads, proven optimal
  mipopt solve FILE --out sol.json           write the solution, then
  mipopt plan FILE sol.json                  plan the moves from FILE's current placement to it
  mipopt import nvidia-smi node1/ node2/     an instance from what nvidia-smi printed per host
"""

EPILOG = """\
commands by task:
  look up      info, configs
  check        validate, verify, show, partitions
  read         import
  place        solve, sweep, plan
  experiment   generate, simulate, hindsight, bench

`mipopt COMMAND --help` describes a command's options.
exit status: 0 done; 1 a solution breaks a rule (verify); 2 bad input; 130 interrupted (Ctrl-C);
143 terminated (SIGTERM). A solve stopped either way writes and prints its best placement.
"""


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="mipopt",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"mipopt {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    started = time.monotonic()
    # the process is this command (argv from it): native code's stdout writes go to stderr
    native = signals.native_stdout_to_stderr() if argv is None else contextlib.nullcontext()
    with native, signals.command_process(), _warnings_in_one_line():
        args = build_parser().parse_args(argv)
        args.started = started  # a solve's --time-limit counts from here
        code = _run(args)
    if argv is None:  # the process is this command, and ends now: the kernel frees what it holds
        gc.freeze()  # rather than a last collection (1-3 s after a 16,000-GPU solve's answer is out)
    stop = sys.modules.get("mipopt.solvers.stop")  # not loaded: no solve ran, none can be left
    if stop is not None and stop.background_solves():
        # a stopped solver still unwinding: the answer is out, do not wait
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(code)
    return code


@contextlib.contextmanager
def _warnings_in_one_line() -> Iterator[None]:
    """The library's warnings as one ``mipopt: warning:`` line each on stderr, naming the flag
    where the library names its parameter (``--threads: 1000 is more than ...``), each said once
    however many stages or solves warn it."""
    said: set[str] = set()

    def show(message: Warning | str, *_: object, **__: object) -> None:
        text = " ".join(str(message).split())
        name, colon, rest = text.partition(": ")
        if colon and name in FLAGS:
            text = f"{FLAGS[name]}: {rest}"
        if text not in said:
            said.add(text)
            print(f"mipopt: warning: {text}", file=sys.stderr)

    with warnings.catch_warnings():
        warnings.showwarning = show
        yield


def _run(args: argparse.Namespace) -> int:
    try:
        return int(args.func(args))
    except BadInput as err:
        print(f"mipopt: error: {err}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt as err:  # Ctrl-C, or SIGTERM (signals.Terminated): nothing half-written
        signum = signals.stop_signal(err)
        print(f"mipopt: {signals.signal_word(signum)}", file=sys.stderr)
        return signals.EXIT_SIGNAL_BASE + signum
    except BrokenPipeError:  # a write the reader's leaving cut short, unguarded: never a success
        signals.drop_output()  # what is still buffered goes nowhere at exit
        return signals.EXIT_BROKEN_PIPE
    except OSError as err:  # unwritable --out or --png, named as the user gave it (cli.outputs)
        target = err.filename or ""
        print(f"mipopt: error: cannot write {target}: {err.strerror}", file=sys.stderr)
        return EXIT_BAD_INPUT
