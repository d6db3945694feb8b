"""Relative gap and proof: when a bound proves an objective value optimal.

Defined once, below the solvers and the verifier, so that a backend's proof and the
verifier's check of a solution's claimed ``gap`` and ``proven`` flags are the same test.
:mod:`mipopt.solvers` re-exports them.
"""

from __future__ import annotations

import math

__all__ = ["PROOF_ABS_TOL", "is_proven", "relative_gap"]

PROOF_ABS_TOL = 1e-6
"""Absolute difference between objective and bound still taken as a proof (HiGHS's ``mip_abs_gap``)."""


def relative_gap(objective: float | None, bound: float | None) -> float | None:
    """The relative gap between an incumbent and a bound, as on :class:`mipopt.solvers.SolveResult`.

    ``|objective - bound| / |objective|``; 0 when they differ by at most 1e-9 relative,
    infinite when ``objective`` is 0 (or either is infinite) and they differ.

    Parameters
    ----------
    objective, bound
        Incumbent objective and best bound; either may be None or infinite.

    Returns
    -------
    float or None
        None when either value is missing.
    """
    if objective is None or bound is None:
        return None
    if not (math.isfinite(objective) and math.isfinite(bound)):
        return math.inf
    diff = abs(objective - bound)
    if diff <= 1e-9 * max(1.0, abs(objective)):
        return 0.0
    if objective == 0:
        return math.inf
    return diff / abs(objective)


def is_proven(objective: float | None, bound: float | None) -> bool:
    """True when ``bound`` proves ``objective`` optimal.

    They must differ by at most 1e-9 relative (:func:`relative_gap` is 0) or by
    :data:`PROOF_ABS_TOL`, the absolute gap HiGHS still calls optimal with ``mip_rel_gap`` 0
    (its ``mip_abs_gap``). A solver stopped by a relative gap tolerance (``mip_rel_gap``, or
    HiGHS's default 1e-4) also calls its incumbent optimal; this is the test that tells a proof
    from such a stop.

    Examples
    --------
    >>> is_proven(500.0, 500.0000000001), is_proven(1.53, 1.5300005), is_proven(482.0, 500.0)
    (True, True, False)
    """
    if objective is None or bound is None:
        return False
    return relative_gap(objective, bound) == 0.0 or abs(objective - bound) <= PROOF_ABS_TOL
