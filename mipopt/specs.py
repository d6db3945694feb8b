"""Spec strings: the one grammar of methods, policies, workloads and executors.

A spec names a thing and gives its options; a wrapper names the spec it wraps in parentheses::

    spec    := name [ "(" spec ")" ] [ ":" options ]
    options := option { "," option }
    option  := key "=" value

``grmu:heavy=0.3,release=false``, ``adapter(ff):full=true``, ``exact:model=wpm,use_case=initial``,
``poisson:gpus=16,load=0.9``, ``local:workers=4``. :func:`parse_spec` reads one into a
:class:`Spec`; :func:`bind_options` checks its options against what the named thing takes (the
keyword parameters of its factory) and gives them their declared types. Both refuse bad input in
one line naming ``path`` (``--policy``, ``method``, ...) and the rule.

The rules, the same for every kind of spec:

* A name is letters, digits, ``-``, ``_`` and ``.``; it comes first.
* Options are split at the commas outside parentheses (``reopt:base=adapter(ff),interval=5``);
  a piece without ``=`` continues the value before it, so a value may hold commas
  (``exact:objective=lex:acceptance,hardware``); the first piece must have one.
* In a key, ``-`` is ``_`` (``gpus-per-host=2`` is ``gpus_per_host``); each key at most once.
* A value is text until it is bound: a parameter declared ``bool`` reads ``true``/``false``
  (also ``on``/``off``, ``yes``/``no``), ``int`` an integer, ``float`` a number, one that may be
  None reads ``none`` (or nothing); ``nan`` is never a value.
* At most :data:`MAX_DEPTH` parentheses deep and :data:`~mipopt.limits.MAX_SPEC_CHARS`
  characters (``docs/limits.md``).

Examples
--------
>>> parse_spec("adapter(grmu:heavy=0.5):full=true")
Spec(name='adapter', options={'full': 'true'}, inner=Spec(name='grmu', options={'heavy': '0.5'}, inner=None))
>>> str(parse_spec("exact: objective = lex:acceptance,hardware"))
'exact:objective=lex:acceptance,hardware'
>>> parse_spec("grmu:heavy=0.3,heavy=0.5", "--policy")
Traceback (most recent call last):
...
mipopt.errors.InstanceError: --policy: option 'heavy' is given twice
"""

from __future__ import annotations

import inspect
import math
import re
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass, field
from typing import Any

from mipopt._fields import shown
from mipopt.errors import InstanceError, ParameterTypeError
from mipopt.limits import MAX_SPEC_CHARS, beyond

__all__ = [
    "MAX_DEPTH",
    "Spec",
    "bind_options",
    "guess_value",
    "option_list",
    "parse_options",
    "parse_spec",
    "takes",
]

#: How deep specs may nest in parentheses (an adapter around an adapter borrows nothing more; a
#: spec nested 2,000 deep exhausted the stack).
MAX_DEPTH = 4

_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]*")
_KEY = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TRUE, _FALSE, _NONE = ("true", "on", "yes"), ("false", "off", "no"), ("none", "")


@dataclass(frozen=True, slots=True)
class Spec:
    """A parsed spec: its name, its options as written (text, keys with ``_``), the spec it wraps.

    Attributes
    ----------
    name
        What the spec names (``grmu``, ``adapter``, ``poisson``, ``local``).
    options
        Key -> value as written (stripped); :func:`bind_options` types them.
    inner
        The spec in parentheses (``adapter(ff)``'s ``ff``), or None.
    """

    name: str
    options: Mapping[str, str] = field(default_factory=dict)
    inner: Spec | None = None

    def __str__(self) -> str:
        text = self.name if self.inner is None else f"{self.name}({self.inner})"
        return text + (":" + ",".join(f"{k}={v}" for k, v in self.options.items()) if self.options else "")


def parse_spec(text: str, path: str = "spec") -> Spec:
    """``text`` read by the grammar of this module.

    Raises
    ------
    InstanceError
        Naming ``path``: no name, unbalanced parentheses, text after the closing one, nesting
        beyond :data:`MAX_DEPTH`, an option not ``key=value``, an option given twice, a ``nan``
        value, or more than :data:`~mipopt.limits.MAX_SPEC_CHARS` characters.

    Examples
    --------
    >>> parse_spec("ff:start=lowest").options
    {'start': 'lowest'}
    >>> parse_spec("adapter(ff", "method")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: method: 'adapter(ff' opens a parenthesis it does not close
    """
    if not isinstance(text, str):
        raise ParameterTypeError(path, f"must be a spec string, got {type(text).__name__} {text!r}"[:200])
    text = text.strip()
    if len(text) > MAX_SPEC_CHARS:
        raise InstanceError(path, f"{beyond(len(text), 'characters', MAX_SPEC_CHARS)}: {shown(text[:40])}...")
    deepest = _deepest(text, path)
    if deepest > MAX_DEPTH:
        outer = text.split("(", 1)[0].strip() or "spec"
        raise InstanceError(
            path, f"{outer}(...) nested {deepest} deep, more than the limit of {MAX_DEPTH} (docs/limits.md)"
        )
    return _parse(text, path)


def _deepest(text: str, path: str) -> int:
    """The deepest nesting of parentheses in ``text``; unbalanced ones are refused."""
    depth = deepest = 0
    for ch in text:
        if ch == "(":
            depth += 1
            deepest = max(deepest, depth)
        elif ch == ")":
            depth -= 1
            if depth < 0:
                raise InstanceError(path, f"{shown(text)} closes a parenthesis it did not open")
    if depth:
        raise InstanceError(path, f"{shown(text)} opens a parenthesis it does not close")
    return deepest


def _parse(text: str, path: str) -> Spec:
    match = _NAME.match(text)
    if match is None:
        got = "nothing" if not text else shown(text)
        raise InstanceError(path, f"a spec starts with a name (letters, digits, -, _, .), got {got}")
    name, rest = match[0], text[match.end() :].lstrip()
    inner = None
    if rest.startswith("("):
        close = _closing(rest)
        inner = _parse(rest[1:close].strip(), path)
        rest = rest[close + 1 :].lstrip()
    if rest and not rest.startswith(":"):
        raise InstanceError(
            path,
            f"{shown(text)}: expected ':' and options after {shown(text[: len(text) - len(rest)].rstrip())}",
        )
    return Spec(name, _options(rest[1:], path), inner)


def _closing(text: str) -> int:
    """Where the parenthesis that opens ``text`` closes (balance was checked)."""
    depth = 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if depth == 0:
            return i
    raise AssertionError("unbalanced parentheses pass _deepest")


def pieces(text: str) -> list[str]:
    """``text`` split at the commas outside parentheses (``adapter(grmu:heavy=0.3,consolidation=24),ff``: two)."""
    found, depth, begin = [], 0, 0
    for i, ch in enumerate(text):
        depth += (ch == "(") - (ch == ")")
        if ch == "," and depth == 0:
            found.append(text[begin:i])
            begin = i + 1
    found.append(text[begin:])
    return found


def _options(text: str, path: str) -> dict[str, str]:
    pairs: list[list[str]] = []
    for piece in pieces(text):
        if not piece.strip():  # ff:start=lowest, (a trailing comma) or ,, say nothing
            continue
        if "=" in piece and _KEY.fullmatch(piece.partition("=")[0].strip().replace("-", "_")):
            pairs.append(list(piece.partition("=")[::2]))
        elif pairs:  # a value with commas: objective=lex:acceptance,hardware
            pairs[-1][1] += "," + piece
        else:
            what = "is not key=value" if "=" not in piece else "does not start with a name"
            raise InstanceError(path, f"option {shown(piece.strip())} {what}")
    out: dict[str, str] = {}
    for key, value in pairs:
        key = key.strip().replace("-", "_")
        if key in out:
            raise InstanceError(path, f"option {shown(key)} is given twice")
        out[key] = value.strip()
        if _is_nan(out[key]):
            raise InstanceError(path, f"option {shown(key)} is nan, not a number")
    return out


def parse_options(text: str | None, path: str) -> dict[str, Any]:
    """The options of a spec, after its colon (``gpus=4,load=0.9``), each value guessed
    (:func:`guess_value`): for callers that have no signature to bind them to.

    Examples
    --------
    >>> parse_options("gpus=4,load=0.9,mix=uniform", "workload")
    {'gpus': 4, 'load': 0.9, 'mix': 'uniform'}
    >>> parse_options("gpus=4,gpus=8", "workload")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: workload: option 'gpus' is given twice
    """
    text = text or ""
    if _deepest(text, path) > MAX_DEPTH:
        raise InstanceError(path, f"options nested more than {MAX_DEPTH} deep (docs/limits.md)")
    return {k: guess_value(v) for k, v in _options(text, path).items()}


def _is_nan(text: str) -> bool:
    try:
        return math.isnan(float(text))
    except ValueError:
        return False


def guess_value(text: str) -> Any:
    """A value read without a declared type: a boolean, None, an int, a float, or the text.

    >>> [guess_value(v) for v in ("on", "none", "4", "0.9", "uniform")]
    [True, None, 4, 0.9, 'uniform']
    """
    lowered = text.lower()
    if lowered in _TRUE:
        return True
    if lowered in _FALSE:
        return False
    if lowered in _NONE:
        return None
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text


# --- binding: a spec's options against the keyword parameters of what it names

#: The type names of annotations a value is read as; any other annotation takes a guessed value.
_KINDS = {"bool": "true or false", "int": "an integer", "float": "a number", "None": "none"}
_TEXT = ("str", "Path")


def takes(target: Callable[..., Any], skip: Collection[str] = ()) -> dict[str, inspect.Parameter]:
    """The keyword parameters of ``target`` an option may set (not ``*args``, ``**kwargs``, ``skip``)."""
    kinds = (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY)
    params = inspect.signature(target).parameters.values()
    return {p.name: p for p in params if p.kind in kinds and p.name not in skip}


def option_list(target: Callable[..., Any], skip: Collection[str] = ()) -> str:
    """The options ``target`` takes with their defaults, for help texts: ``heavy=0.3, release=true``.

    >>> def f(heavy: float = 0.3, release: bool = True, base: str = "mfi", gap=None): ...
    >>> option_list(f)
    'heavy=0.3, release=true, base=mfi, gap=none'
    """
    shown_params = []
    for name, p in takes(target, skip).items():
        default = p.default
        if default is inspect.Parameter.empty:
            shown_params.append(name)
        else:
            value = (
                "none" if default is None else str(default).lower() if isinstance(default, bool) else default
            )
            shown_params.append(f"{name}={value}")
    return ", ".join(shown_params)


def bind_options(
    spec: Spec,
    target: Callable[..., Any],
    path: str,
    what: str = "",
    *,
    skip: Collection[str] = (),
) -> dict[str, Any]:
    """``spec``'s options as keyword arguments of ``target``, each read as its parameter declares.

    Parameters
    ----------
    spec
        A parsed spec.
    target
        What its name means: a class or function whose keyword parameters are the options.
    path
        What to name in errors (``--policy``).
    what
        The kind of thing named, for messages (``policy``, ``workload``).
    skip
        Parameters that are not options (``seed``, the policy an adapter wraps).

    Raises
    ------
    InstanceError
        Naming ``path``: an option ``target`` does not take (the message lists those it does), or a
        value its parameter cannot read.

    Examples
    --------
    >>> def grmu(heavy: float | None = 0.3, release: bool = True): ...
    >>> bind_options(parse_spec("grmu:heavy=0.5,release=off"), grmu, "policy", "policy")
    {'heavy': 0.5, 'release': False}
    >>> bind_options(parse_spec("grmu:hevy=0.5"), grmu, "--policy", "policy")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: --policy: policy grmu has no option 'hevy' (its options: heavy, release)
    >>> bind_options(parse_spec("grmu:heavy=0.3,release"), grmu, "--policy", "policy")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: --policy: option heavy of policy grmu must be a number or none, got '0.3,release'
    """
    params = takes(target, skip)
    label = f"{what} {spec.name}".strip()
    out: dict[str, Any] = {}
    for key, text in spec.options.items():
        if key not in params:
            listed = ", ".join(params) or "none"
            raise InstanceError(path, f"{label} has no option {shown(key)} (its options: {listed})")
        out[key] = _read(text, params[key], f"option {key} of {label}", path)
    return out


def _declared(param: inspect.Parameter) -> tuple[str, ...] | None:
    """The type names a value of ``param`` is read as (``('float', 'None')``), or None where it
    declares none (a ``Literal`` alias): then the value is guessed (:func:`guess_value`)."""
    note = param.annotation
    if note is inspect.Parameter.empty:
        default = param.default
        if default is inspect.Parameter.empty or default is None:
            return None
        note = type(default).__name__
    parts = tuple(p.strip() for p in str(getattr(note, "__name__", note)).split("|"))
    if all(p in _KINDS or p in _TEXT for p in parts):
        return parts
    if any(p in _TEXT for p in parts):  # text or an object (a Policy, a list): the text as written
        return ("str", "None") if "None" in parts else ("str",)
    return None


def _whole(text: str) -> int:
    """An integer written as one (``4``) or as a whole number (``1e8``, as JSON's ``4.0`` is one)."""
    try:
        return int(text)
    except ValueError:
        x = float(text)
        if not x.is_integer():  # inf raises OverflowError in int() below, nan is refused earlier
            raise
        return int(x)


def _read(text: str, param: inspect.Parameter, label: str, path: str) -> Any:
    kinds = _declared(param)
    if kinds is None:
        return guess_value(text)
    lowered = text.lower()
    if "None" in kinds and lowered in _NONE:
        return None
    if "bool" in kinds and lowered in (*_TRUE, *_FALSE):
        return lowered in _TRUE
    for kind, read in (("int", _whole), ("float", float)):
        if kind in kinds:
            try:
                return read(text)
            except (ValueError, OverflowError):
                pass
    if any(k in _TEXT for k in kinds):
        return text
    expected = " or ".join(_KINDS[k] for k in kinds)
    raise InstanceError(path, f"{label} must be {expected}, got {shown(text)}")
