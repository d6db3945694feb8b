"""What the importers take from their input as names, and how their errors show input.

A name read from a file (a host, a GPU's product or UUID, a node, a pod) ends up in instance
ids, terminal output and emitted scripts, so it must pass :func:`mipopt._fields.name_problem`;
an error shows input only through :func:`mipopt._fields.shown`, which never echoes a control character raw
nor a huge value whole.
"""

from __future__ import annotations

from pathlib import Path

from mipopt._fields import SHOWN_CHARS, as_printed, name_problem, shown
from mipopt.errors import InstanceError

__all__ = ["SHOWN_CHARS", "checked_name", "file_name", "shown"]


def file_name(path: Path) -> str:
    """``path`` as errors and notes name it: as is, or quoted with its control characters escaped.

    >>> print(file_name(Path("node1/lgi.txt")), file_name(Path("node1/\\x1b[2J.txt")))
    node1/lgi.txt 'node1/\\x1b[2J.txt'
    """
    return as_printed(str(path))


def checked_name(value: str, what: str, where: str) -> str:
    """``value``, when it may be a name; else :class:`InstanceError` at ``where`` with the rule.

    >>> checked_name("node-1", "host name", "hosts")
    'node-1'
    >>> checked_name("-oProxyCommand=sh", "host name", "hosts")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: hosts: host name must not start with '-': '-oProxyCommand=sh'
    """
    problem = name_problem(value)
    if problem:
        raise InstanceError(where, f"{what} {problem}")
    return value
