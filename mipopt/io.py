"""Reading and writing mipopt files: JSON in, atomic JSON out."""

from __future__ import annotations

import json
import os
import re
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from mipopt.errors import InstanceError, ParameterTypeError
from mipopt.instance import (
    Instance,
    Solution,
    instance_from_dict,
    solution_from_dict,
    solution_to_dict,
)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not valid JSON")


def _constant_position(text: str) -> str:
    """`` at line L column C`` of the first NaN/Infinity outside a string, or ``""``."""
    for match in re.finditer(r'"(?:[^"\\]|\\.)*"|-?Infinity|NaN', text):
        if not match.group(0).startswith('"'):
            line = text.count("\n", 0, match.start()) + 1
            column = match.start() - (text.rfind("\n", 0, match.start()) + 1) + 1
            return f" at line {line} column {column}"
    return ""


def read_json(path: str | Path) -> Any:
    """Parse a JSON file; an unreadable or malformed file raises :class:`InstanceError`.

    ``NaN`` and ``Infinity`` are refused as the JSON standard does.
    """
    try:
        text = Path(path).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise InstanceError("", f"cannot read {path}: {getattr(err, 'strerror', None) or err}") from None
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise InstanceError("", f"not valid JSON: {err}") from None
    except ValueError as err:  # NaN or Infinity: json gives no position, so find it
        where = _constant_position(text)
        raise InstanceError("", f"not valid JSON: {err}{where}") from None


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
    return instance_from_dict(read_json(path), default_name=Path(path).stem, source=Path(path).resolve())


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

    A path that exists and is not a regular file (``/dev/null``, a pipe) is written in place:
    renaming over it would replace the device with a file. The file gets the permissions of
    the file it replaces, or of a new file under the process's umask (``mkstemp`` alone
    would leave it readable by its owner only).
    """
    if path.exists() and not path.is_file() and not path.is_dir():
        with open(path, "w", encoding="utf-8", newline="") if text else open(path, "wb") as fh:
            write(fh)
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


def _umask() -> int:
    mask = os.umask(0)  # the only way to read it is to set it
    os.umask(mask)
    return mask


def write_solution(path: str | Path, solution: Solution) -> None:
    write_json(path, solution_to_dict(solution))
