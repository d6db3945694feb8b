"""Which online policy a name means: one explicit table, and :func:`make_policy` that reads it.

Policies are named after their paper because the papers use the same words for
different rules: ``ff`` is GRMU's first fit (driver default start), ``ff-agnostic`` the
MFI paper's MIG-agnostic one, and so on. Options go after a colon,
``grmu:heavy=0.3,consolidation=24``; ``adapter(<policy>)`` wraps any policy in
MIG-Adapter. Importing this module registers nothing anywhere: the table below is the
whole list.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from types import MappingProxyType

from mipopt._fields import parse_options, shown
from mipopt.errors import InstanceError
from mipopt.heuristics.adapter import Adapter
from mipopt.heuristics.grmu import BestFit, FirstFit, Grmu, MaxCC, MaxExpectedCC
from mipopt.heuristics.mfi import (
    BestFitBestIndex,
    FirstFitAgnostic,
    IbmInitial,
    LoadBalanced,
    MinimumFragmentationIncrement,
    RoundRobin,
    WorstFitBestIndex,
)
from mipopt.heuristics.online import Policy
from mipopt.heuristics.reopt import Reopt
from mipopt.limits import MAX_SPEC_CHARS, beyond

__all__ = ["POLICIES", "Factory", "make_policy", "policy_names"]

Factory = Callable[..., Policy]

#: Policy factories by name (``adapter`` takes the policy it wraps first).
POLICIES: Mapping[str, Factory] = MappingProxyType(
    {
        # GRMU paper (Siavashi et al.), mipopt.heuristics.grmu
        "ff": FirstFit,
        "bf": BestFit,
        "mcc": MaxCC,
        "mecc": MaxExpectedCC,
        "grmu": Grmu,
        # MFI paper, mipopt.heuristics.mfi
        "ff-agnostic": FirstFitAgnostic,
        "rr": RoundRobin,
        "bf-bi": BestFitBestIndex,
        "wf-bi": WorstFitBestIndex,
        "mfi": MinimumFragmentationIncrement,
        "lb": LoadBalanced,
        # IBM WPM paper, online (mipopt.heuristics.mfi)
        "ibm-initial": IbmInitial,
        # MIG-Adapter, mipopt.heuristics.adapter
        "adapter": Adapter,
        # exact re-optimization over a base policy (issue 16), mipopt.heuristics.reopt
        "reopt": Reopt,
    }
)

_SPEC = re.compile(r"^(?P<name>[a-z0-9-]+)(?::(?P<options>.*))?$")
_ADAPTERS = re.compile(r"(?:adapter\(\s*)*")

#: How deep ``adapter(...)`` may nest (an adapter around an adapter borrows nothing more; a
#: spec nested 2,000 deep would exhaust the stack).
MAX_ADAPTER_DEPTH = 4


def policy_names() -> list[str]:
    """Every policy name :func:`make_policy` accepts (``adapter(...)`` wraps any of them)."""
    return sorted(POLICIES)


def make_policy(spec: str, path: str = "policy") -> Policy:
    """A policy from its name and options: ``mfi``, ``grmu:heavy=0.3``, ``adapter(ff)``.

    Raises
    ------
    InstanceError
        Naming ``path`` on an unknown policy or option, a malformed value, an option given twice,
        or ``adapter(...)`` nested deeper than :data:`MAX_ADAPTER_DEPTH`.

    Examples
    --------
    >>> make_policy("grmu:heavy=0.3").name
    'grmu'
    >>> make_policy("adapter(mfi)").name
    'adapter(mfi)'
    """
    spec = spec.strip()
    if len(spec) > MAX_SPEC_CHARS:
        raise InstanceError(path, f"{beyond(len(spec), 'characters', MAX_SPEC_CHARS)}: {shown(spec[:40])}...")
    depth = _ADAPTERS.match(spec)[0].count("(")  # type: ignore[index]  # matches at least ""
    if depth > MAX_ADAPTER_DEPTH:
        raise InstanceError(
            path,
            f"adapter(...) nested {depth} deep, more than the limit of {MAX_ADAPTER_DEPTH} (docs/limits.md)",
        )
    inner = re.fullmatch(r"adapter\((?P<inner>.+)\)(?::(?P<options>.*))?", spec)
    if inner:
        wrapped = make_policy(inner["inner"], path)
        factory, options = POLICIES["adapter"], parse_options(inner["options"], path)
        args: tuple[Policy, ...] = (wrapped,)
    else:
        match = _SPEC.match(spec)
        if match is None or match["name"] not in POLICIES or match["name"] == "adapter":
            known = ", ".join(n for n in policy_names() if n != "adapter")
            raise InstanceError(path, f"unknown policy {shown(spec)} (known: {known}, adapter(<policy>))")
        factory, options, args = POLICIES[match["name"]], parse_options(match["options"], path), ()
    try:
        return factory(*args, **options)
    except TypeError as err:  # an option the policy does not take (adapter(ff):heavy=0.3 too)
        raise InstanceError(path, f"policy {shown(spec)}: {err}") from None
