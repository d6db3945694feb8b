"""Signal handlers for a while: stop signals caught, or held over what must not be cut short.

Python runs signal handlers in the main thread only, between two bytecodes; a handler that
raises (Ctrl-C's :class:`KeyboardInterrupt`) can therefore cut any Python code in the middle.
:func:`held_signals` keeps that from happening over a few lines that must run whole (renaming a
set of files into place, starting a worker process), and delivers the signal right after.
"""

from __future__ import annotations

import logging
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from types import FrameType
from typing import Any

#: The signals that stop a command: Ctrl-C, and what ``kill``, systemd and Kubernetes send.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)

Handler = Callable[[int, FrameType | None], Any] | int | signal.Handlers | None

#: Loggers of libraries that log the exceptions passing through them: Pyomo's ``value()`` and its
#: component construction ("Constructing component 'N' from data=None failed: SystemExit: 143").
NOISY_LOGGERS = ("pyomo.common.numeric_types", "pyomo.core")


class _QuietStop(logging.Filter):
    """Drops a record logged while a stop propagates (Ctrl-C, or SIGTERM's exception in a command
    or ``SystemExit`` in a worker): the command says it once."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not isinstance(sys.exc_info()[1], KeyboardInterrupt | SystemExit)


def quiet_stops() -> Callable[[], None]:
    """Drop the records :data:`NOISY_LOGGERS` log while a stop propagates; returns the undo. Their
    real errors still log."""
    quiet = _QuietStop()
    for name in NOISY_LOGGERS:
        logging.getLogger(name).addFilter(quiet)

    def undo() -> None:
        for name in NOISY_LOGGERS:
            logging.getLogger(name).removeFilter(quiet)

    return undo


@contextmanager
def replaced_handlers(handler: Handler, signals: tuple[int, ...]) -> Iterator[dict[int, Handler]]:
    """``handler`` on each of ``signals`` that is not ignored, the previous handlers back after.

    Yields
    ------
    dict
        The previous handler of each signal replaced. None replaced outside the main thread
        (where Python cannot install handlers), nor an ignored signal (SIGINT of a process
        started in the background stays ignored).
    """
    previous: dict[int, Handler] = {}
    if threading.current_thread() is threading.main_thread():
        for signum in signals:
            before = signal.getsignal(signum)
            if before is not signal.SIG_IGN:
                previous[signum] = before
                signal.signal(signum, handler)
    try:
        yield previous
    finally:
        for signum, before in previous.items():
            # getsignal answers None for a handler installed outside Python: the default is the
            # closest we can restore
            signal.signal(signum, before if before is not None else signal.SIG_DFL)


@contextmanager
def held_signals(signals: tuple[int, ...] = STOP_SIGNALS) -> Iterator[None]:
    """Hold ``signals`` until the block ends, then deliver the first one that came, once.

    The signal is raised again once the previous handlers are back, so it acts as it would have
    a moment earlier: it raises, sets a stop flag, or ends the process. Outside the main thread
    this holds nothing.

    Examples
    --------
    >>> import os, signal
    >>> try:
    ...     with held_signals():
    ...         os.kill(os.getpid(), signal.SIGINT)
    ...         done = "the block ran to its end"
    ... except KeyboardInterrupt:
    ...     print(done, "before the interrupt")
    the block ran to its end before the interrupt
    """
    came: list[int] = []
    try:
        with replaced_handlers(lambda signum, frame: came.append(signum), signals):
            yield
    finally:  # also when the block failed: the stop is still owed
        if came:
            signal.raise_signal(came[0])
