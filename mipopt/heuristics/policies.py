"""Which online policy a name means: one explicit table, and :func:`make_policy` that reads it.

Policies are named after their paper because the papers use the same words for
different rules: ``ff`` is GRMU's first fit (driver default start), ``ff-agnostic`` the
MFI paper's MIG-agnostic one, ``ff:start=lowest`` MIGBench's first fit, and so on. A spec
follows the grammar of :mod:`mipopt.specs`: options after a colon,
``grmu:heavy=0.3,consolidation=24``; ``adapter(<policy>)`` wraps any policy in MIG-Adapter,
``reopt(<policy>)`` re-optimizes over any base policy (``reopt:base=<policy>`` says the same).
An option a policy does not take is refused naming the ones it takes. Importing this module
registers nothing anywhere: the table below is the whole list.

A name means the same everywhere (``mipopt simulate --policy``, ``mipopt solve --method``,
:func:`mipopt.solve`): IBM's rule-based initial deployment applied per arrival is
``ibm-initial-online``; ``ibm-initial`` is IBM's batch rule, which sorts all new workloads
first and so is no online policy (:data:`RENAMED` says so in one line).
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Mapping
from types import MappingProxyType

from mipopt._fields import shown
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
from mipopt.heuristics.packing import BinPack, Spread
from mipopt.heuristics.reopt import Reopt
from mipopt.specs import MAX_DEPTH, Spec, bind_options, option_list, parse_spec

__all__ = ["POLICIES", "RENAMED", "Factory", "make_policy", "policies_text", "policy_names"]

Factory = Callable[..., Policy]

#: Policy factories by name (``adapter`` and ``reopt`` take the policy they wrap first).
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
        # IBM WPM paper, its batch rule applied per arrival (mipopt.heuristics.mfi)
        "ibm-initial-online": IbmInitial,
        # MIGBench (HAMi's scheduling policies), mipopt.heuristics.packing
        "binpack": BinPack,
        "spread": Spread,
        # MIG-Adapter, mipopt.heuristics.adapter
        "adapter": Adapter,
        # exact re-optimization over a base policy (issue 16), mipopt.heuristics.reopt
        "reopt": Reopt,
    }
)

#: The policies that wrap another one, and the parameter it goes to: ``adapter(ff)``, ``reopt(mfi)``.
WRAPPERS: Mapping[str, str] = MappingProxyType({"adapter": "inner", "reopt": "base"})

#: Names that are no online policy, each with the one line that says what to use.
RENAMED: Mapping[str, str] = MappingProxyType(
    {
        "ibm-initial": "ibm-initial is IBM's batch rule (mipopt solve --method ibm-initial: largest new "
        "workload first); the same rule per arrival is the policy ibm-initial-online",
    }
)
#: The batch methods of :mod:`mipopt.registry` that are no online policy (a test keeps it equal).
BATCH_ONLY = ("exact", "exact-initial", "ibm-first-fit", "ibm-compaction", "ibm-reconfiguration", "ibm-joint")

#: How deep ``adapter(...)`` may nest: :data:`mipopt.specs.MAX_DEPTH`, the bound of every spec.
MAX_ADAPTER_DEPTH = MAX_DEPTH


def policy_names() -> list[str]:
    """Every policy name :func:`make_policy` accepts (``adapter(...)`` wraps any of them)."""
    return sorted(POLICIES)


def make_policy(spec: str | Spec, path: str = "policy") -> Policy:
    """A policy from its spec: ``mfi``, ``grmu:heavy=0.3``, ``adapter(ff)``, ``ff:start=lowest``.

    Parameters
    ----------
    spec
        A spec string (:mod:`mipopt.specs`) or a parsed :class:`~mipopt.specs.Spec`.
    path
        What to name in errors (``policy``; the CLI passes ``--policy``).

    Raises
    ------
    InstanceError
        Naming ``path`` on an unknown policy (a batch method's name says where it runs), an option
        the policy does not take (naming those it does), a value it cannot read, an option given
        twice, or a spec nested deeper than :data:`MAX_ADAPTER_DEPTH`.

    Examples
    --------
    >>> make_policy("grmu:heavy=0.3").name
    'grmu'
    >>> make_policy("adapter(mfi)").name
    'adapter(mfi)'
    >>> make_policy("mfi:heavy=0.3", "--policy")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: --policy: policy mfi has no option 'heavy' (its options: none)
    """
    parsed = spec if isinstance(spec, Spec) else parse_spec(spec, path)
    return _make(parsed, path)


def _make(spec: Spec, path: str) -> Policy:
    name = spec.name
    if name not in POLICIES:
        raise InstanceError(path, _unknown(name))
    factory, wraps = POLICIES[name], WRAPPERS.get(name)
    if spec.inner is not None and wraps is None:
        raise InstanceError(path, f"policy {name} wraps no policy: {shown(str(spec))}")
    if name == "adapter" and spec.inner is None:
        raise InstanceError(path, "adapter wraps a policy: adapter(<policy>), e.g. adapter(ff)")
    options: dict[str, object] = bind_options(spec, factory, path, "policy", skip=("inner",))
    if name == "reopt":
        base = spec.inner if spec.inner is not None else parse_spec(str(options.pop("base", "mfi")), path)
        if "base" in spec.options and spec.inner is not None:
            raise InstanceError(path, "reopt(<policy>) names its base policy: give no base= beside it")
        if base.name == "reopt":
            raise InstanceError(path, "the base policy of reopt must be another policy than reopt")
        options["base"] = _make(base, path)
    args = (_make(spec.inner, path),) if name == "adapter" and spec.inner is not None else ()
    try:
        return factory(*args, **options)
    except (TypeError, ValueError) as err:  # a value the policy refuses (mecc:window=-1)
        if isinstance(err, InstanceError):
            raise
        raise InstanceError(path, f"policy {shown(str(spec))}: {err}") from None


def _unknown(name: str) -> str:
    if name in RENAMED:
        return RENAMED[name]
    known = ", ".join(n if n not in WRAPPERS else f"{n}(<policy>)" for n in POLICIES)
    if name in BATCH_ONLY:
        return f"{name} is a batch method (mipopt solve --method {name}), not an online policy (policies: {known})"
    return f"unknown policy {shown(name)} (known: {known})"


def policies_text(width: int = 20) -> str:
    """Every policy with its options and their defaults, one line each, from :data:`POLICIES`:
    ``mipopt simulate --help`` and ``mipopt solve --list-methods`` print it.

    Examples
    --------
    >>> print(policies_text().splitlines()[4])
    grmu                 heavy=0.3, defrag=true, consolidation=none, release=true
    """
    lines = []
    for name, factory in POLICIES.items():
        wraps = WRAPPERS.get(name)
        shown_name = f"{name}(<policy>)" if wraps else name
        options = option_list(factory, skip=("inner",))
        lines += textwrap.wrap(
            f"{shown_name:<{width}} {options or '-'}",
            100,
            subsequent_indent=" " * (width + 1),
            break_on_hyphens=False,
        )
    return "\n".join(lines)
