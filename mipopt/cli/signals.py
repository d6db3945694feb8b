"""How a command's process meets its surroundings: a stop signal, and a reader that leaves.

SIGTERM, what ``kill``, ``timeout``, systemd and Kubernetes send, is handled as Ctrl-C is: where
Ctrl-C raises :class:`KeyboardInterrupt`, SIGTERM raises :class:`Terminated`, a
:class:`KeyboardInterrupt` too, so every clean-up that runs for one runs for the other; a solve
takes both as a request to stop and keep its best answer
(:func:`mipopt.solvers.stop.catch_sigint` with :data:`mipopt._signals.STOP_SIGNALS`). The command then ends with
one line and the shell's code for the signal, 128 + its number: 130 for SIGINT, 143 for SIGTERM.
Files are written whole or not at all (:mod:`mipopt.cli.outputs`), with both signals held while
they are renamed into place (:func:`mipopt._signals.held_signals`).

A reader that leaves early (``mipopt verify I S | head -1``) changes nothing but what is printed:
the rest of the output is dropped, the command runs to its end (its files are written) and exits
with its own code, so a broken solution still exits 1 and a failure never becomes 0. Only when a
write to the closed pipe escapes this (a library writing to the file descriptor itself) does the
command end at once, with 141 (128 + SIGPIPE), as a program killed by SIGPIPE does.

Native code writes to the process's stdout itself, past Python's ``sys.stdout``: HiGHS prints
a debug line from C++ on some MIPs (``HighsMipSolverData::transformNewIntegerFeasibleSolution
tmpSolver.run();``). In the command's process such writes go to stderr
(:func:`native_stdout_to_stderr`), so stdout carries the command's output alone (``--json``
stays JSON).

A stop passing through a library is not the library's error: Pyomo's ``value()`` logs every
exception it sees, Ctrl-C and SIGTERM included, as an ERROR on stdout; while a command runs, a
record logged as a stop propagates is dropped (:func:`mipopt._signals.quiet_stops`).
"""

from __future__ import annotations

import io
import os
import signal
import sys
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any, TextIO

from mipopt._signals import quiet_stops, replaced_handlers

#: The exit code of a command stopped by ``signum``, as a shell reports it.
EXIT_SIGNAL_BASE = 128

#: The exit code when the reader of the output left before a write the command could not drop.
EXIT_BROKEN_PIPE = EXIT_SIGNAL_BASE + signal.SIGPIPE


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where Ctrl-C raises :class:`KeyboardInterrupt`, and handled alike.

    Attributes
    ----------
    signum
        The signal's number.
    """

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = signum


def stop_signal(err: KeyboardInterrupt) -> int:
    """The signal behind ``err``: its own for :class:`Terminated`, SIGINT for Ctrl-C."""
    return err.signum if isinstance(err, Terminated) else signal.SIGINT


def signal_word(signum: int) -> str:
    """How one line says a command was stopped: ``interrupted`` (Ctrl-C) or ``terminated``."""
    return "interrupted" if signum == signal.SIGINT else "terminated"


def _raise_terminated(signum: int, frame: FrameType | None) -> None:
    raise Terminated(signum)


class _ReaderMayLeave:
    """A text stream that drops what it is given once its reader has gone (a closed pipe)."""

    def __init__(self, stream: TextIO | None) -> None:
        # a stream the process was started without (``>&-``): its reader left before the start
        self.stream = stream if stream is not None else open(os.devnull, "w")  # noqa: SIM115
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self.left()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self.left()

    def left(self) -> None:
        """The reader left: from now on the descriptor writes to /dev/null, so that what is still
        buffered (flushed at exit) goes nowhere instead of raising again."""
        self.gone = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self.stream.fileno())
            os.close(devnull)
        except (OSError, ValueError):  # not a file descriptor (a test's capture): nothing buffered there
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self.stream, name)


def drop_output() -> None:
    """Send the rest of stdout nowhere: its reader left (see :func:`command_process`)."""
    if isinstance(sys.stdout, _ReaderMayLeave):
        sys.stdout.left()


@contextmanager
def native_stdout_to_stderr() -> Iterator[None]:
    """For one command's process: file descriptor 1 is stderr's, so that what native code writes
    there goes to stderr, and ``sys.stdout`` writes to the real stdout through a descriptor of its
    own. Everything is put back on exit (a stdout that is no file descriptor is left alone)."""
    original = sys.stdout
    real = None
    try:
        original.flush()
        real = os.dup(1)
        os.dup2(2, 1)
    except (OSError, ValueError, AttributeError):  # no stdout or stderr descriptor
        if real is not None:
            os.close(real)
        yield
        return
    # buffered as the original is (unbuffered under python -u or PYTHONUNBUFFERED, by line on a terminal)
    unbuffered = isinstance(getattr(original, "buffer", None), io.FileIO)
    sys.stdout = io.TextIOWrapper(
        open(real, "wb", buffering=0 if unbuffered else -1),  # noqa: SIM115 (closed below)
        encoding=original.encoding,
        errors=original.errors,
        line_buffering=bool(getattr(original, "line_buffering", False)),
        write_through=bool(getattr(original, "write_through", False)),
    )
    try:
        yield
    finally:
        ours, sys.stdout = sys.stdout, original
        os.dup2(real, 1)
        with suppress(BrokenPipeError):  # the reader left: what is buffered reaches no one
            ours.close()


@contextmanager
def command_process() -> Iterator[None]:
    """For one command: SIGTERM raises :class:`Terminated`; stdout and stderr survive their reader
    leaving (see the module docstring). Everything is put back on exit."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = _ReaderMayLeave(sys.stdout), _ReaderMayLeave(sys.stderr)
    loud = quiet_stops()
    try:
        with replaced_handlers(_raise_terminated, (signal.SIGTERM,)):
            yield
    finally:
        loud()
        for wrapped in (sys.stdout, sys.stderr):
            wrapped.flush()
        sys.stdout, sys.stderr = streams
