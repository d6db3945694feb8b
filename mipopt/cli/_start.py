"""Ctrl-C while the command starts: one line and exit code 130, not a traceback from an import.

:mod:`mipopt.cli` imports this module before the commands' modules, which take about 0.3 s to
import (the catalog, the instance types, the registry): a Ctrl-C then, while ``mipopt validate
big.json`` seems to be loading its file, ends the command as a Ctrl-C later does
(:func:`mipopt.cli.main` reports those). :func:`done` puts Python's own handler back once they are
imported, so that importing :mod:`mipopt.cli` from Python changes nothing. A handler other than
Python's own (Ctrl-C ignored in a background job, a caller's) is left as it is.
"""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType


def _interrupted(signum: int, frame: FrameType | None) -> None:
    sys.stderr.write("mipopt: interrupted\n")
    raise SystemExit(128 + signal.SIGINT)


_own = threading.current_thread() is threading.main_thread() and (
    signal.getsignal(signal.SIGINT) is signal.default_int_handler
)
if _own:
    signal.signal(signal.SIGINT, _interrupted)


def done() -> None:
    """Python's handler back (the commands' modules are imported)."""
    if _own and signal.getsignal(signal.SIGINT) is _interrupted:
        signal.signal(signal.SIGINT, signal.default_int_handler)
