"""Stopping a solve from outside: a shared flag, a deadline, Ctrl-C, and a watched solver thread.

A long run (several lexicographic stages, a sweep) shares one :class:`StopFlag` between all its
solves: Ctrl-C under :func:`catch_sigint` sets it, every backend sees it within a fraction of a
second and returns its incumbent with termination ``interrupted``, and later stages see it before
they start. A deadline is an absolute ``time.monotonic()`` value, so it can be handed from stage to
stage without arithmetic on what is left.

The backends run the solver itself in a worker thread (:func:`run_watched`); the calling thread
waits in short slices, so Python signal handlers run at once instead of when the solver returns,
and it asks the solver to stop when the flag is set or the deadline passes. A solver that does not
stop within :data:`GRACE_S` of that request (HiGHS does not check for interrupts during some root
cut-separation passes, which took up to 47 s on a 400-GPU model) is left to finish in the
background: the backend returns the best solution it has seen, the thread winds down at the
solver's next interrupt check, and the process waits for it at exit (see
:func:`background_solves`), because a native thread returning into a finalizing interpreter aborts
the process.

Examples
--------
>>> flag = StopFlag()
>>> flag.is_set, flag.reason
(False, None)
>>> flag.set()
>>> flag.set("a later reason is ignored")
>>> flag.is_set, flag.reason
(True, 'interrupted')
>>> StopFlag(deadline=0.0).expired
True
"""

from __future__ import annotations

import atexit
import math
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from types import FrameType
from typing import Generic, TypeVar

from mipopt._signals import replaced_handlers

REASON_INTERRUPTED = "interrupted"
"""The reason :meth:`StopFlag.set` records by default, and the one Ctrl-C gives."""

REASON_TIME_LIMIT = "time limit"
"""The reason :meth:`Limits.reason` gives once the deadline has passed."""

GRACE_S = 0.5
"""Seconds a solver may take to stop after it was asked to, before it is left in the background."""

POLL_S = 0.05
"""Seconds between two looks at the flag and the deadline while a solver runs."""

T = TypeVar("T")


class StopFlag:
    """A cooperative request to stop, shared across threads and across the stages of a solve.

    Parameters
    ----------
    deadline
        Absolute ``time.monotonic()`` seconds after which work should stop, or None. The deadline
        does not set the flag; :attr:`expired` reports it.

    Attributes
    ----------
    signum
        The number of the signal whose handler set the flag (:func:`catch_sigint`), or None.

    Notes
    -----
    The first reason given to :meth:`set` is kept. The lock is reentrant, so the flag can be set
    from a signal handler that interrupts the main thread while it holds the lock.
    """

    __slots__ = ("_cond", "_reason", "deadline", "signum")

    def __init__(self, deadline: float | None = None) -> None:
        if deadline is not None and math.isnan(deadline):
            raise ValueError("deadline must be a number, got nan")
        self.deadline = deadline
        self._reason: str | None = None
        self.signum: int | None = None
        self._cond = threading.Condition(threading.RLock())

    def set(self, reason: str = REASON_INTERRUPTED, *, signum: int | None = None) -> None:
        """Ask every solve sharing this flag to stop; the first reason given is kept, with the
        number of the signal that gave it (:attr:`signum`, None when no signal did)."""
        with self._cond:
            if self._reason is None:
                self._reason = reason
                self.signum = signum
            self._cond.notify_all()

    @property
    def is_set(self) -> bool:
        """True once :meth:`set` has been called (a passed deadline does not count)."""
        return self._reason is not None

    @property
    def reason(self) -> str | None:
        """The reason given to the first :meth:`set`, or None while unset."""
        return self._reason

    def remaining(self) -> float | None:
        """Seconds until the deadline (zero or negative once passed); None without a deadline."""
        return None if self.deadline is None else self.deadline - time.monotonic()

    @property
    def expired(self) -> bool:
        """True when the deadline has passed."""
        return self.deadline is not None and time.monotonic() >= self.deadline

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the flag is set or ``timeout`` seconds pass; return :attr:`is_set`."""
        with self._cond:
            return self._cond.wait_for(lambda: self._reason is not None, timeout)

    def __repr__(self) -> str:
        return f"StopFlag(reason={self._reason!r}, deadline={self.deadline!r})"


@contextmanager
def catch_sigint(
    flag: StopFlag | None = None, *, signals: Sequence[int] = (signal.SIGINT,)
) -> Iterator[StopFlag]:
    """Turn the first Ctrl-C into ``flag.set("interrupted")``; a second one raises KeyboardInterrupt.

    Parameters
    ----------
    flag
        The flag to set; None makes a new one.
    signals
        The signals caught, Ctrl-C's SIGINT by default; ``(SIGINT, SIGTERM)`` stops on SIGTERM
        too, as the ``mipopt`` command does. The first of them sets the flag and records its
        number in :attr:`StopFlag.signum`; a second one goes to the handler that was there before
        (Python's for SIGINT raises KeyboardInterrupt), or raises KeyboardInterrupt when that
        was the system default.

    Yields
    ------
    StopFlag
        ``flag`` (or the new flag).

    Notes
    -----
    Signal handlers can only be installed from the main thread: elsewhere, and for a signal that
    is ignored (SIGINT of a process started in the background), this does nothing but yield the
    flag. The previous handlers are restored on exit.

    Examples
    --------
    >>> import os, signal
    >>> with catch_sigint() as flag:
    ...     os.kill(os.getpid(), signal.SIGINT)
    ...     _ = flag.wait(5)
    >>> flag.reason, flag.signum == signal.SIGINT
    ('interrupted', True)
    """
    flag = flag if flag is not None else StopFlag()
    presses = 0
    previous: dict[int, object] = {}

    def on_signal(signum: int, frame: FrameType | None) -> None:
        nonlocal presses
        presses += 1
        if presses == 1:
            flag.set(REASON_INTERRUPTED, signum=signum)
            return
        before = previous.get(signum)
        if callable(before):
            before(signum, frame)
        raise KeyboardInterrupt

    with replaced_handlers(on_signal, tuple(signals)) as replaced:
        previous.update(replaced)
        yield flag


@dataclass(frozen=True, slots=True)
class Limits:
    """When one backend call must stop: an absolute deadline and a shared flag, either optional.

    Attributes
    ----------
    deadline
        Absolute ``time.monotonic()`` seconds, or None.
    stop
        The shared flag, or None.
    """

    deadline: float | None = None
    stop: StopFlag | None = None

    def reason(self) -> str | None:
        """Why the work should stop now: the flag's reason, ``"time limit"``, or None to go on."""
        if self.stop is not None and self.stop.is_set:
            return self.stop.reason
        if self.deadline is not None and time.monotonic() >= self.deadline:
            return REASON_TIME_LIMIT
        return None

    def remaining(self) -> float | None:
        """Seconds left before the deadline (zero once passed), or None without one."""
        return None if self.deadline is None else max(self.deadline - time.monotonic(), 0.0)


@dataclass(frozen=True, slots=True)
class Watched(Generic[T]):
    """What :func:`run_watched` saw.

    Attributes
    ----------
    finished
        The work returned; False when it was left running in the background.
    value
        What the work returned (None when it did not finish).
    reason
        Why a stop was requested (:meth:`Limits.reason`), or None if it never was.
    """

    finished: bool
    value: T | None
    reason: str | None


_background: set[threading.Thread] = set()
_background_lock = threading.Lock()
_atexit_registered = False


def run_watched(
    work: Callable[[], T],
    limits: Limits,
    request_stop: Callable[[], None],
    *,
    grace_s: float = GRACE_S,
    poll_s: float = POLL_S,
    name: str = "mipopt-solver",
) -> Watched[T]:
    """Run ``work`` in a worker thread, asking it to stop when ``limits`` say so.

    Parameters
    ----------
    work
        The solver call; it must release the GIL while it computes.
    limits
        Checked every ``poll_s`` seconds.
    request_stop
        Asks the solver to stop (called repeatedly, from the calling thread, once ``limits``
        give a reason); it must be cheap and safe to call while ``work`` runs.
    grace_s
        How long the solver may take to stop before it is left running in the background.
    poll_s
        Seconds between two looks at ``limits``.
    name
        Thread name, for debuggers.

    Returns
    -------
    Watched

    Raises
    ------
    BaseException
        Whatever ``work`` raised; a KeyboardInterrupt (or other exception) raised in the calling
        thread while it waits is re-raised after the solver has been asked to stop and given
        ``grace_s`` to do so.
    """
    done = threading.Event()
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = work()
        except BaseException as exc:  # handed to the caller, never lost in the thread
            box["error"] = exc
        finally:
            done.set()

    # Daemon, so a thread left behind does not hold up the interpreter's thread shutdown; the
    # atexit hook below waits for it instead (see the module docstring).
    thread = threading.Thread(target=target, name=name, daemon=True)
    thread.start()
    reason: str | None = None
    asked_at = 0.0
    try:
        while not done.wait(poll_s):
            now_reason = limits.reason()
            if now_reason is None:
                continue
            if reason is None:
                reason, asked_at = now_reason, time.monotonic()
            request_stop()
            if time.monotonic() - asked_at >= grace_s:
                leave_in_background(thread)
                return Watched(finished=False, value=None, reason=reason)
    except BaseException:
        request_stop()
        if not done.wait(grace_s):
            leave_in_background(thread)
        raise
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return Watched(finished=True, value=box.get("value"), reason=reason or limits.reason())  # type: ignore[arg-type]


def leave_in_background(thread: threading.Thread) -> None:
    """Count ``thread``, a solver's that did not stop in time, among :func:`background_solves`,
    and have the interpreter wait for it at exit: a native solver returning into a finalizing
    interpreter aborts the process ("terminate called without an active exception")."""
    global _atexit_registered
    with _background_lock:
        _background.add(thread)
        if not _atexit_registered:
            atexit.register(_wait_at_exit)
            _atexit_registered = True


def background_solves() -> int:
    """How many solver threads left running by a stop (see :func:`run_watched`) are still alive.

    A program that has written its results and wants to exit at once while this is not zero
    can end with ``os._exit(code)`` after flushing its output; otherwise the interpreter waits
    for those threads at exit.
    """
    with _background_lock:
        _background.difference_update([t for t in _background if not t.is_alive()])
        return len(_background)


def wait_for_background(timeout: float | None = None) -> bool:
    """Wait until every solver thread left in the background has ended; False on timeout."""
    end = None if timeout is None else time.monotonic() + timeout
    with _background_lock:
        threads = list(_background)
    for thread in threads:
        thread.join(None if end is None else max(end - time.monotonic(), 0.0))
    return background_solves() == 0


def _wait_at_exit() -> None:
    # A native solver thread that returns into Python while the interpreter finalizes makes
    # CPython 3.11 end it with pthread_exit, which aborts the process from inside C++ code
    # ("terminate called without an active exception", exit status 134). Waiting here, while
    # the interpreter is still whole, avoids that; the threads end at their next interrupt
    # check. A second Ctrl-C gives up waiting.
    with suppress(KeyboardInterrupt):
        wait_for_background()
