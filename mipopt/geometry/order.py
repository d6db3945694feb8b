"""The driver's start order on an empty GPU (IBM WPM Table 1) and the first start of it among free ones.

:func:`preference_order` is the order in which repeated default placements (GRMU Eq. 2,
:attr:`GeometryTables.default_start <mipopt.geometry.tables.GeometryTables.default_start>`)
fill an empty GPU with one profile; :func:`preferred_starts` tabulates, per profile and
bitmask of starts, the first of that order in the bitmask. The rule-based heuristics
(IBM's, MFI's best index), the WPM indexing step and Alg. 1's slot order read them.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel, Profile
from mipopt.geometry.tables import tables_for

__all__ = ["preference_order", "preferred_starts"]


def preference_order(model: GpuModel, profile: Profile) -> tuple[int, ...]:
    """The starts of ``profile`` in the order the driver fills an empty GPU with it.

    Repeated default placements (GRMU Eq. 2, :mod:`mipopt.geometry`), ignoring
    ``max_instances``; this is IBM's Table 1 (1g.10gb on A100-80GB: 6, 4, 5, 0, 1, 2, 3).
    """
    tables = tables_for(model)
    p = model.profiles.index(profile)
    mask, order = 0, []
    while (start := int(tables.default_start[mask, p])) >= 0:
        order.append(start)
        mask |= profile.slot_mask(start)
    return (*order, *(s for s in sorted(profile.starts) if s not in order))


@lru_cache(maxsize=64)
def preferred_starts(model: GpuModel) -> npt.NDArray[np.int64]:
    """``[p, bits]``: the first start of profile ``p``'s :func:`preference_order` among the starts in ``bits``, or -1.

    ``bits`` is a bitmask of starts, such as a row of ``tables_for(model).legal``.
    """
    table = np.full((len(model.profiles), 1 << model.slots), -1, dtype=np.int64)
    bits = np.arange(1 << model.slots, dtype=np.int64)
    for i, profile in enumerate(model.profiles):
        for s in reversed(preference_order(model, profile)):  # earlier starts overwrite later ones
            table[i] = np.where(bits >> s & 1, s, table[i])
    return table
