"""Reading and writing mipopt files: JSON in, atomic JSON out."""

from __future__ import annotations

import json
import math
import os
import re
import tempfile
from collections.abc import Callable
from itertools import accumulate
from pathlib import Path
from typing import Any

from mipopt import _fields as f
from mipopt.errors import InstanceError, ParameterTypeError
from mipopt.instance import (
    Instance,
    Solution,
    instance_from_dict,
    solution_from_dict,
    solution_to_dict,
)

# --- the one reader of every JSON input (docs/limits.md)

#: How deep arrays and objects may nest in a JSON input. mipopt's own files nest 6 deep,
#: ``kubectl ... -o json`` about 15 (its managedFields); the bound is checked before the parser
#: recurses, so a file nested 100,000 deep is one line of error, not a RecursionError.
MAX_JSON_DEPTH = 100

#: The largest integer (written without fraction or exponent) a JSON input may hold: a 64-bit
#: one, as solvers and numpy hold them. Other numbers must be finite floats (below 1.8e308).
MAX_JSON_INTEGER = 2**63 - 1

# a string, its closing quote optional so that no match fails: an unterminated string, or escaped
# quotes by the thousand, cost one pass instead of one per quote
_STRING = r'"[^"\\]*(?:\\.[^"\\]*)*"?'
_NOT_BRACKET_OR_QUOTE = bytes(sorted(set(range(256)) - set(b'"[]{}')))
_BRACKET_OR_STRING = re.compile(rf"{_STRING}|[\[\]{{}}]", re.DOTALL)
_DEPTH_CHANGE = {ord("["): 1, ord("{"): 1, ord("]"): -1, ord("}"): -1}
_SURROGATE = re.compile("[\ud800-\udfff]")


def parse_json(text: str | bytes, source: str = "") -> Any:
    """Parse JSON text (or UTF-8 bytes) as every mipopt input is read; refuse what JSON readers
    disagree on or what could exhaust memory or the stack.

    Refused, each with the JSON path of the value (or the line and column where there is none)
    and the rule: text that is not UTF-8; nesting deeper than :data:`MAX_JSON_DEPTH`; a key given
    twice in one object (which one wins differs between readers); ``NaN`` and ``Infinity``;
    numbers beyond a float's range (``1e400``) and integers beyond :data:`MAX_JSON_INTEGER`; lone
    surrogates (``"\\ud800"``, which no UTF-8 output can carry). A UTF-8 byte-order mark is skipped.

    Parameters
    ----------
    text
        The document, as text or as the bytes of a file.
    source
        The file as errors name it; errors then say ``SOURCE: PATH: rule``. Empty (the default):
        ``PATH: rule``, for a caller who names the file itself.

    Raises
    ------
    InstanceError
        For any of the above; ``path`` names where.

    Examples
    --------
    >>> parse_json('{"cpu": 1, "ram_gb": [1, 2]}')
    {'cpu': 1, 'ram_gb': [1, 2]}
    >>> parse_json('{"workloads": [{"cpu": -5, "cpu": 64}]}', "x.json")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: x.json: workloads[0].cpu: duplicate key 'cpu' (JSON readers differ on which one counts)
    >>> parse_json('{"weight": 1e400}')
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: weight: 1e400 is beyond the range of a float (1.8e308)
    >>> parse_json("[" * 100_000)
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: line 1 column 101: nested deeper than 100 arrays and objects
    """
    if isinstance(text, bytes | bytearray):
        text = _decoded(bytes(text), source)
    elif not text.isascii() and (hit := _SURROGATE.search(text)):  # decoded bytes cannot hold one
        raise _error(source, _position(text, hit.start()), _LONE_SURROGATE.format(f.shown(hit.group())))
    text = text.removeprefix("\ufeff")
    _check_depth(text, source)
    reader = _Reader(checks_numbers=_long_numbers(text))
    try:
        data = json.loads(text, **reader.hooks())
    except json.JSONDecodeError as err:
        raise _error(source, _position(text, err.pos), f"not valid JSON: {err.msg}") from None
    if reader.refused or "\\ud" in text or "\\uD" in text:  # (a surrogate is written escaped)
        problem = _first_problem(data, "")
        if problem is not None:
            raise _error(source, problem[0] or "(document)", problem[1])
    return data


def read_json(path: str | Path) -> Any:
    """Parse a JSON file with :func:`parse_json`; an unreadable or refused file raises
    :class:`InstanceError` (whose path is the JSON path: the caller names the file).
    """
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InstanceError("", f"cannot read {f.as_printed(str(path))}: {err.strerror or err}") from None
    return parse_json(data)


def _decoded(data: bytes, source: str) -> str:
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InstanceError(source, "UTF-16 text (as Windows PowerShell writes with >): save it as UTF-8")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        rule = f"byte 0x{data[err.start]:02x} is not UTF-8 text"
        raise _error(source, _position(data, err.start), rule) from None


def _position(text: str | bytes, offset: int) -> str:
    """``line L column C`` of ``offset`` in ``text`` (columns count characters, or bytes)."""
    newline = "\n" if isinstance(text, str) else b"\n"
    line = text.count(newline, 0, offset) + 1  # type: ignore[arg-type]
    column = offset - (text.rfind(newline, 0, offset) + 1) + 1  # type: ignore[arg-type]
    return f"line {line} column {column}"


def _error(source: str, where: str, rule: str) -> InstanceError:
    return InstanceError(f"{source}: {where}" if source else where, rule)


_LONE_SURROGATE = "a lone surrogate {} is not text (no UTF-8 output can carry it)"


def _check_depth(text: str, source: str) -> None:
    """Refuse nesting beyond :data:`MAX_JSON_DEPTH`, before a parser recurses into it."""
    if text.count("[") + text.count("{") <= MAX_JSON_DEPTH:
        return
    # the brackets outside strings, by byte operations only: escapes go (a pair of backslashes,
    # then an escaped quote), everything but quotes and brackets goes, then pairs of adjacent
    # quotes (which keeps the parity of the quotes before each bracket, so whether it is in a
    # string); the few quotes left split the strings off. 0.07 s for a 16,000-GPU instance
    data = text.encode()
    if b"\\" in data:
        data = data.replace(b"\\\\", b"").replace(b'\\"', b"")
    kept = data.translate(None, _NOT_BRACKET_OR_QUOTE).replace(b'""', b"")
    outside = b"".join(kept.split(b'"')[::2])
    if max(accumulate(map(_DEPTH_CHANGE.__getitem__, outside)), default=0) <= MAX_JSON_DEPTH:
        return
    # too deep: find the bracket beyond the bound
    depth = 0
    for match in _BRACKET_OR_STRING.finditer(text):
        ch = match.group()
        if ch in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                rule = f"nested deeper than {MAX_JSON_DEPTH} arrays and objects"
                raise _error(source, _position(text, match.start()), rule)
        elif ch in "]}":
            depth -= 1


def _long_numbers(text: str) -> bool:
    """Whether ``text`` may hold a number beyond the bounds: 19 digits in a row or an exponent of
    three (perhaps inside a string: the parse then checks numbers, a little slower)."""
    digits = text.translate(_DIGITS_AS_ZERO)
    return "0" * 19 in digits or any(f"{e}{sign}000" in digits for e in "eE" for sign in ("", "+", "-"))


_DIGITS_AS_ZERO = str.maketrans("123456789", "000000000")


class _Refused:
    """A value the reader refuses, left in the parsed data for :func:`_first_problem` to name."""

    __slots__ = ("rule",)

    def __init__(self, rule: str) -> None:
        self.rule = rule


class _Duplicated(dict[str, Any]):
    """An object that repeated ``key``."""

    __slots__ = ("key",)
    key: str


class _Reader:
    """The parser's hooks: each marks a refused value instead of raising, so that the error can
    name the value's JSON path, which the hooks do not know."""

    def __init__(self, *, checks_numbers: bool) -> None:
        self.checks_numbers = checks_numbers
        self.refused = False

    def hooks(self) -> dict[str, Any]:
        hooks: dict[str, Any] = {"object_pairs_hook": self.object, "parse_constant": self.constant}
        if self.checks_numbers:  # rare: the hooks cost a Python call per number
            hooks |= {"parse_int": self.integer, "parse_float": self.real}
        return hooks

    def object(self, pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out = dict(pairs)
        if len(out) == len(pairs):
            return out
        self.refused = True
        seen: set[str] = set()
        key = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        marked = _Duplicated(out)
        marked.key = key
        return marked

    def constant(self, name: str) -> _Refused:
        self.refused = True
        return _Refused(f"{name} is not valid JSON (a number must be finite)")

    def integer(self, digits: str) -> int | _Refused:
        # the length first: int() refuses more than 4,300 digits, and takes long below that
        if len(digits.lstrip("-")) <= 19 and abs(int(digits)) <= MAX_JSON_INTEGER:
            return int(digits)
        self.refused = True
        what = digits if len(digits) <= 24 else f"an integer of {len(digits.lstrip('-'))} digits"
        return _Refused(f"{what} is beyond the largest integer ({MAX_JSON_INTEGER})")

    def real(self, literal: str) -> float | _Refused:
        value = float(literal)
        if math.isfinite(value):
            return value
        self.refused = True
        shown_literal = (
            literal if len(literal) <= 24 else f"{literal[:12]}...{literal[-8:]} ({len(literal)} chars)"
        )
        return _Refused(f"{shown_literal} is beyond the range of a float (1.8e308)")


def _first_problem(value: Any, path: str) -> tuple[str, str] | None:
    """The JSON path and rule of the first refused value in document order, or None.

    Recursion is safe: the depth was checked before parsing.
    """
    if isinstance(value, _Refused):
        return path, value.rule
    if isinstance(value, str):
        hit = _SURROGATE.search(value)
        return None if hit is None else (path, _LONE_SURROGATE.format(f.shown(hit.group())))
    if isinstance(value, list):
        for i, item in enumerate(value):
            problem = _first_problem(item, f.join(path, i))
            if problem is not None:
                return problem
        return None
    if isinstance(value, dict):
        if isinstance(value, _Duplicated):
            rule = f"duplicate key {f.shown(value.key)} (JSON readers differ on which one counts)"
            return f.join(path, value.key), rule
        for key, item in value.items():
            hit = _SURROGATE.search(key)
            if hit is not None:
                return f.join(path, key), "a key with " + _LONE_SURROGATE.format(f.shown(hit.group()))
            problem = _first_problem(item, f.join(path, key))
            if problem is not None:
                return problem
    return None


def load_instance(path: str | Path) -> Instance:
    """Read and validate an instance file (its name defaults to the file stem).

    Raises
    ------
    InstanceError
        For an unreadable file, malformed JSON or a broken rule, naming the JSON path.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> inst.name, len(inst.gpus), [w.id for w in inst.new]
    ('quickstart', 3, ['batch-d', 'infer-e', 'llm-f', 'infer-g', 'llm-h'])
    """
    stem = Path(path).stem  # the default name, when it may be one: the file's name is not the input's
    name = stem if stem and f.name_problem(stem) is None else "instance"
    return instance_from_dict(read_json(path), default_name=name, source=Path(path).resolve())


def instance_argument(value: object, name: str = "instance") -> Instance:
    """``value`` when it is an :class:`Instance`; else a :class:`ParameterTypeError` naming
    ``name``, which says to read a path with :func:`mipopt.load_instance`.

    Examples
    --------
    >>> instance_argument("instances/quickstart.json")
    Traceback (most recent call last):
    ...
    mipopt.errors.ParameterTypeError: instance: must be an Instance, got the path 'instances/quickstart.json': read it with mipopt.load_instance('instances/quickstart.json')
    """
    if isinstance(value, Instance):
        return value
    if isinstance(value, str | os.PathLike):
        path = os.fspath(value)
        raise ParameterTypeError(
            name, f"must be an Instance, got the path {path!r}: read it with mipopt.load_instance({path!r})"
        )
    raise ParameterTypeError(
        name, f"must be an Instance (mipopt.load_instance reads one), got {type(value).__name__}"
    )


def load_solution(path: str | Path) -> Solution:
    """Read a solution file, checking its shape.

    Its rules are checked against an instance by :func:`mipopt.verifier.verify`.

    Raises
    ------
    InstanceError
        For an unreadable file, malformed JSON or a bad field, naming the JSON path.

    Examples
    --------
    >>> import mipopt
    >>> sol = mipopt.load_solution("docs/examples/hand_solution.json")
    >>> sol.method, len(sol.placements)
    ('hand-written', 7)
    >>> mipopt.verify(mipopt.load_instance("instances/quickstart.json"), sol).valid
    True
    """
    return solution_from_dict(read_json(path))


def json_text(data: Any) -> str:
    """``data`` as the JSON text mipopt writes: indented, a final newline, no NaN nor Infinity."""
    return json.dumps(data, indent=2, allow_nan=False) + "\n"


def write_json(path: str | Path, data: Any) -> None:
    """Write JSON atomically (see :func:`write_atomic`)."""
    text = json_text(data)
    write_atomic(Path(path), lambda fh: fh.write(text), text=True)


def save_json(path: str | Path, data: Any, *, read_from: Path | None) -> None:
    """Write JSON atomically (:func:`write_json`), never over ``read_from``: the file the
    instance behind ``data`` was read from (``save`` of an instance, solution or plan).

    Raises
    ------
    InstanceError
        Naming ``path`` when it is ``read_from``.
    """
    if read_from is not None and Path(path).resolve() == read_from:
        raise InstanceError(
            "path", f"{path} is the file the instance was read from; write it to another file"
        )
    write_json(path, data)


def write_text(path: str | Path, text: str, *, executable: bool = False) -> None:
    """Write ``text`` atomically (see :func:`write_atomic`); ``executable`` adds the x bits (a script)."""
    write_atomic(Path(path), lambda fh: fh.write(text), text=True, executable=executable)


def write_atomic(path: Path, write: Callable[[Any], object], *, text: bool, executable: bool = False) -> None:
    """Write through ``write(file)`` to a temporary file beside ``path``, then rename it into place.

    A device, a named pipe or a standard stream (:func:`written_in_place`) is written in place:
    renaming over it would replace the device with a file. The file gets the permissions of
    the file it replaces, or of a new file under the process's umask (``mkstemp`` alone
    would leave it readable by its owner only).
    """
    if written_in_place(path):
        try:
            with open(path, "w", encoding="utf-8", newline="") if text else open(path, "wb") as fh:
                write(fh)
        except OSError as err:  # a write error names no file: name the one the user asked for
            raise OSError(err.errno, err.strerror, str(path)) from None
        return
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent or ".")
    except OSError as err:  # name the file the user asked for, not the temporary one
        raise OSError(err.errno, err.strerror, str(path)) from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline="") if text else os.fdopen(fd, "wb") as fh:
            write(fh)
        mode = path.stat().st_mode & 0o7777 if path.is_file() else 0o666 & ~_umask()
        os.chmod(tmp, mode | (0o111 & ~_umask()) if executable else mode)
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def written_in_place(path: str | Path) -> bool:
    """Whether ``path`` is written in place rather than replaced by a rename: a device or a named
    pipe (``/dev/null``), or a standard stream (``/dev/stdout``, ``/proc/self/fd/1``), which may
    lead to a regular file but must stay the link it is.

    >>> written_in_place("/dev/stdout"), written_in_place("out.json")
    (True, False)
    """
    path = Path(os.path.abspath(path))
    if str(path.parent) in ("/dev", "/dev/fd") or path.parts[1:2] == ("proc",):
        return True
    return path.exists() and not path.is_file() and not path.is_dir()


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def write_solution(path: str | Path, solution: Solution) -> None:
    write_json(path, solution_to_dict(solution))
