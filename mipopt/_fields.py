"""Typed access to fields of parsed JSON, each failure an :class:`InstanceError` naming the path.

Shared by the catalog (custom GPU models), the instance and the solution readers, so
that every bad value in every file gets the same kind of one-line message. The arguments of
library calls get the same (:func:`seconds_argument` and its neighbours): :func:`mipopt.solve`
and :class:`mipopt.solvers.SolverOptions` check their limits, threads, seeds and gaps with them.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Iterable
from typing import Any

from mipopt.errors import InstanceError, ParameterTypeError

_TYPE_NAMES = {dict: "an object", list: "a list", str: "a string", bool: "true or false"}


def type_name(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int | float):
        return "a number"
    return _TYPE_NAMES.get(type(value), type(value).__name__)


def obj(value: Any, path: str, required: Iterable[str] = (), optional: Iterable[str] = ()) -> dict[str, Any]:
    """Check that ``value`` is an object with the required keys and no unknown ones."""
    if not isinstance(value, dict):
        raise InstanceError(path or "(document)", f"must be an object, got {type_name(value)}")
    required = tuple(required)
    allowed = set(required) | set(optional)
    for key in required:
        if key not in value:
            raise InstanceError(join(path, key), "missing required field")
    for key in value:
        if key not in allowed:
            names = ", ".join(sorted(allowed))
            raise InstanceError(join(path, key), f"unknown field (allowed: {names})")
    return value


#: The most characters of an input value an error message shows.
SHOWN_CHARS = 120


def shown(value: object) -> str:
    """``value`` as an error message shows it: its ``repr`` (control characters, bidirectional
    overrides and lone surrogates escaped), cut short.

    >>> shown("ok"), shown("a\\x1b[2Jb"), shown("\\u202etxt.exe")
    ("'ok'", "'a\\\\x1b[2Jb'", "'\\\\u202etxt.exe'")
    >>> shown("x" * 200)[-20:]
    'xxxxx... (202 chars)'
    """
    if isinstance(value, int) and value.bit_length() > 4 * SHOWN_CHARS:  # repr would be long, or refused
        return f"an integer of {value.bit_length()} bits"
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 5]}... ({len(text)} chars)"


def as_printed(text: str) -> str:
    """``text`` that the user gave (a file name) as a message prints it: as is when it is one
    printable line, else quoted with its control characters escaped.

    >>> print(as_printed("node1/lgi.txt"), as_printed("node1/\\x1b[2J.txt"))
    node1/lgi.txt 'node1/\\x1b[2J.txt'
    """
    return text if text.isprintable() else repr(text)


def join(path: str, key: str | int) -> str:
    """``path`` and ``key`` as a JSON path (``workloads[3].cpu``); a key that is not one short
    printable line is shown quoted (:func:`shown`), so that no path prints a hostile key raw.

    >>> join("workloads", 3), join("workloads[3]", "cpu"), join("metrics", "a\\x1b[2J")
    ('workloads[3]', 'workloads[3].cpu', "metrics['a\\\\x1b[2J']")
    """
    if isinstance(key, int):
        return f"{path}[{key}]"
    if not key.isprintable() or len(key) > SHOWN_CHARS or not key:
        return f"{path}[{shown(key)}]"
    return f"{path}.{key}" if path else key


def lst(value: Any, path: str, *, nonempty: bool = False) -> list[Any]:
    if not isinstance(value, list):
        raise InstanceError(path, f"must be a list, got {type_name(value)}")
    if nonempty and not value:
        raise InstanceError(path, "must not be empty")
    return value


def name_problem(value: str) -> str | None:
    """Why ``value`` cannot be a name (an id, host, UUID, profile, model), or None.

    A name is one line of printable characters not starting with ``-``: no control character
    (newline, NUL, the ESC of an ANSI sequence), no bidirectional override, no line separator,
    nothing :meth:`str.isprintable` refuses (lone surrogates among them). Such a name cannot end a
    comment in an emitted script, rewrite a terminal, add a key to a YAML file, or pass for an
    option of ``ssh`` or ``nvidia-smi``.

    >>> name_problem("default/infer-0#1") is None
    True
    >>> name_problem("x\\ntouch pwned")
    "must be one line of printable characters: 'x\\\\ntouch pwned' has '\\\\n' at 1"
    >>> name_problem("-oProxyCommand=sh")
    "must not start with '-': '-oProxyCommand=sh'"
    """
    if value.startswith("-"):
        return f"must not start with '-': {shown(value)}"
    return text_problem(value, lines=False)


def text_problem(value: str, *, lines: bool = True) -> str | None:
    """Why ``value`` cannot be free text (a description, a note), or None: printable lines
    (newlines allowed where ``lines``), as :func:`name_problem` says."""
    if value.isprintable() or (lines and value.replace("\n", "").isprintable()):
        return None  # the common case, without a loop in Python
    for i, ch in enumerate(value):
        if not ch.isprintable() and not (lines and ch == "\n"):
            cut = value if len(value) <= 60 else value[:57] + "..."
            what = "one line of printable characters" if not lines else "printable text"
            return f"must be {what}: {cut!r} has {ch!r} at {i}"
    return None


def string(value: Any, path: str, *, nonempty: bool = True) -> str:
    if not isinstance(value, str):
        raise InstanceError(path, f"must be a string, got {type_name(value)}")
    if nonempty and not value.strip():
        raise InstanceError(path, "must not be empty")
    return value


def identifier(value: Any, path: str) -> str:
    """A string that may be a name (an id, a model, a profile): :func:`name_problem` says none.

    >>> identifier("h1-g0", "placements[0].gpu")
    'h1-g0'
    >>> identifier("-rf", "placements[0].gpu")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: placements[0].gpu: must not start with '-': '-rf'
    """
    problem = name_problem(string(value, path))
    if problem:
        raise InstanceError(path, problem)
    return value


def text(value: Any, path: str, *, lines: bool = True) -> str:
    """A string of printable lines (one line unless ``lines``), perhaps empty (a description, a
    note, a message)."""
    problem = text_problem(string(value, path, nonempty=False), lines=lines)
    if problem:
        raise InstanceError(path, problem)
    return value


def choice(value: Any, path: str, choices: Iterable[str]) -> str:
    """One of the strings ``choices`` (a status, a termination, a reason code).

    >>> choice({}, "status", ["optimal", "feasible", "none"])
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: status: must be one of optimal, feasible, none, got an object
    """
    choices = tuple(choices)
    if isinstance(value, str) and value in choices:
        return value
    got = type_name(value) if value is None or isinstance(value, dict | list | bool) else shown(value)
    raise InstanceError(path, f"must be one of {', '.join(choices)}, got {got}")


def boolean(value: Any, path: str) -> bool:
    if not isinstance(value, bool):
        raise InstanceError(path, f"must be true or false, got {type_name(value)}")
    return value


#: The largest quantity an instance may state: a weight, cpu, ram_gb or memory_gb. Sums over a
#: million workloads stay below ``2**53``, exact in a float and far from overflowing (docs/limits.md).
MAX_QUANTITY = 1e9


def number(value: Any, path: str, *, minimum: float | None = 0.0, maximum: float | None = None) -> float:
    """A finite JSON number (not a boolean), at least ``minimum`` and at most ``maximum`` when given.

    >>> number(1.7e308, "workloads[0].weight", maximum=MAX_QUANTITY)
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: workloads[0].weight: must be <= 1e+09, got 1.7e+308
    """
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InstanceError(path, f"must be a number, got {type_name(value)}")
    try:
        x = float(value)
    except OverflowError:  # an int beyond a float's range
        x = math.inf if value > 0 else -math.inf
    if not math.isfinite(x):
        raise InstanceError(path, f"must be a finite number, got {shown(value)}")
    if minimum is not None and x < minimum:
        raise InstanceError(path, f"must be >= {minimum:g}, got {x:g}")
    if maximum is not None and x > maximum:
        raise InstanceError(path, f"must be <= {maximum:g}, got {x:g}")
    return x


def integer(value: Any, path: str, *, minimum: int | None = 0, maximum: int | None = None) -> int:
    """A JSON integer (``4`` or ``4.0``, not ``4.5`` nor ``true``) within the bounds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InstanceError(path, f"must be an integer, got {type_name(value)}")
    if isinstance(value, float) and not (math.isfinite(value) and value.is_integer()):
        raise InstanceError(path, f"must be an integer, got {value}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise InstanceError(path, f"must be >= {minimum}, got {shown(value)}")
    if maximum is not None and value > maximum:
        raise InstanceError(path, f"must be <= {maximum}, got {shown(value)}")
    return value


def unique_ids(items: list[Any], path: str, key: str = "id") -> None:
    """Raise on the first repeated ``key`` among already type-checked objects."""
    seen: dict[Any, int] = {}
    for i, item in enumerate(items):
        ident = item[key]
        if ident in seen:
            raise InstanceError(
                join(join(path, i), key), f"duplicate id {ident!r} (also {path}[{seen[ident]}])"
            )
        seen[ident] = i


def parse_options(text: str | None, path: str) -> dict[str, Any]:
    """``key=value,...`` options of a spec, values guessed: :func:`mipopt.specs.parse_options`
    (the one grammar of spec strings; kept here for the callers that import it from here)."""
    from mipopt.specs import parse_options as by_grammar

    return by_grammar(text, path)


# --- arguments of library calls: a wrong type is a ParameterTypeError (a TypeError too), a
# wrong value an InstanceError, each naming the parameter; None (the default) is the caller's

#: The largest seed: both backends take a 32-bit one (CP-SAT refuses a larger one).
MAX_SEED = 2**31 - 1


def _got(value: Any) -> str:
    return f"got {type(value).__name__} {value!r}"


def _real(value: Any, name: str, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ParameterTypeError(name, f"must be a number ({what}), {_got(value)}")
    return float(value)


def _whole(value: Any, name: str, minimum: int, maximum: int | None = None) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise ParameterTypeError(name, f"must be an integer, {_got(value)}")
    return integer(int(value), name, minimum=minimum, maximum=maximum)  # int(): numpy's integers too


def seconds_argument(value: Any, name: str) -> float:
    """A time limit: a positive number of seconds (``inf``: none).

    >>> seconds_argument(0, "time_limit_s")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: time_limit_s: must be positive, got 0
    """
    seconds = _real(value, name, "seconds")
    if not seconds > 0:  # nan fails too
        raise InstanceError(name, f"must be positive, got {value!r}")
    return seconds


def count_argument(value: Any, name: str) -> int:
    """A count of at least 1 (threads, workers), an integer, not a float nor a bool.

    >>> count_argument(2.5, "threads")
    Traceback (most recent call last):
    ...
    mipopt.errors.ParameterTypeError: threads: must be an integer, got float 2.5
    """
    return _whole(value, name, 1)


def seed_argument(value: Any, name: str) -> int:
    """A random seed: an integer from 0 to :data:`MAX_SEED`."""
    return _whole(value, name, 0, MAX_SEED)


def gap_argument(value: Any, name: str) -> float:
    """A relative gap at which a solve may stop: a number in [0, 1) (0: prove).

    >>> gap_argument(float("nan"), "gap")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: gap: must be in [0, 1), got nan
    """
    gap = _real(value, name, "a relative gap")
    if not 0 <= gap < 1:  # nan fails too
        raise InstanceError(name, f"must be in [0, 1), got {value!r}")
    return gap
