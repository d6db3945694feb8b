"""Per-state lookup tables of one GPU model, vectorized over many GPUs.

Every question a placement method asks about one GPU (which starts are legal,
how much of each profile still fits, CC, the driver's default start, the
fragmentation scores and the start that raises them least) is answered for all
``2**slots`` occupancy states at once when the tables are built, so that asking
it for 10,000 GPUs is one numpy indexing operation.

Build cost: about 2 ms for 8-slot models, 5 ms for the 12-unit RTX PRO 6000.
Tables are cached per model (:func:`tables_for`).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel, Profile

IntArray = npt.NDArray[np.int64]
NO_START = -1


def _popcount(values: npt.NDArray[np.integer]) -> IntArray:
    values = values.astype(np.int64)
    count = np.zeros_like(values)
    while np.any(values):
        count += values & 1
        values >>= 1
    return count


@dataclass(frozen=True, eq=False)
class GeometryTables:
    """Lookup tables of one GPU model over all occupancy bitmasks.

    Arrays indexed ``[state]`` or ``[state, profile]`` (profile = position in
    ``model.profiles``). A state is the bitmask of occupied memory slots.

    Attributes
    ----------
    legal
        ``[state, p]`` bitmask of legal starts: bit ``s`` set when profile ``p``
        fits at start ``s``.
    capacity
        ``[state, p]`` number of legal starts, the per-profile remaining capacity
        of GRMU Table 3 (placements of one profile never overlap each other).
    cc
        ``[state]`` Configuration Capability, GRMU Eq. 1 (base profiles).
    default_start
        ``[state, p]`` the driver's default start (GRMU Eq. 2), or -1.
    fbk
        ``[state]`` fragmentation score F(m) of the MFI paper, Alg. 1.
    grmu
        ``[state]`` GRMU's Fragmentation value, Alg. 4.
    min_frag_start, frag_increment
        ``[state, p]`` start with the smallest increase of F (ties: lowest start)
        and that increase; -1 and a large number where the profile does not fit.
    compute_waste, memory_waste
        ``[p, start]`` slices stranded by one instance at that start (0 where illegal).
    """

    model: GpuModel
    free_slots: IntArray
    legal: IntArray
    capacity: IntArray
    cc: IntArray
    default_start: IntArray
    fbk: IntArray
    grmu: npt.NDArray[np.float64]
    min_frag_start: IntArray
    frag_increment: IntArray
    compute_waste: IntArray
    memory_waste: IntArray

    # --- vectorized questions over many GPUs (``masks`` is an int array of states)

    def fits(
        self,
        masks: npt.ArrayLike,
        p: int,
        counts: npt.ArrayLike | None = None,
        media_used: npt.ArrayLike | None = None,
    ) -> npt.NDArray[np.bool_]:
        """Whether profile ``p`` has a legal start on each GPU.

        ``counts`` (GPUs x profiles) enforces each profile's ``max_instances``;
        ``media_used`` (per GPU) blocks a second ``+me`` instance.
        """
        ok = self.legal[np.asarray(masks), p] != 0
        profile = self.model.profiles[p]
        if counts is not None:
            ok &= np.asarray(counts)[:, p] < profile.max_instances
        if media_used is not None and profile.media_extension:
            ok &= ~np.asarray(media_used, dtype=bool)
        return ok

    def starts_of(self, masks: npt.ArrayLike, p: int) -> npt.NDArray[np.bool_]:
        """``[gpu, start]`` boolean matrix of legal starts of profile ``p``."""
        bits = self.legal[np.asarray(masks), p]
        return ((bits[:, None] >> np.arange(self.model.slots)) & 1).astype(bool)


def _build(model: GpuModel) -> GeometryTables:
    n = 1 << model.slots
    states = np.arange(n, dtype=np.int64)
    nprof = len(model.profiles)
    free_slots = model.slots - _popcount(states)

    legal = np.zeros((n, nprof), dtype=np.int64)
    for i, p in enumerate(model.profiles):
        for s in p.starts:
            legal[:, i] |= np.where(states & p.slot_mask(s) == 0, 1 << s, 0)
    capacity = _popcount(legal)
    base = np.array([p.base for p in model.profiles])
    cc = capacity[:, base].sum(axis=1)

    sizes = np.array([p.memory_slots for p in model.profiles])
    fbk = np.zeros(n, dtype=np.int64)
    grmu = np.zeros(n, dtype=np.float64)
    for i, p in enumerate(model.profiles):
        if not p.base:
            continue
        eligible = p.memory_slots <= free_slots
        blocked = len(p.starts) - capacity[:, i]
        fbk += np.where(eligible, blocked * p.memory_slots, 0)
        left = (model.full_mask & ~states).astype(np.int64)
        for s in p.starts:
            block = p.slot_mask(s)
            left = np.where(left & block == block, left & ~block, left)
        grmu += np.where(eligible, _popcount(left) / sizes[i], 0.0)

    default_start = np.full((n, nprof), NO_START, dtype=np.int64)
    min_frag_start = np.full((n, nprof), NO_START, dtype=np.int64)
    big = np.iinfo(np.int64).max // 4
    frag_increment = np.full((n, nprof), big, dtype=np.int64)
    for i, p in enumerate(model.profiles):
        best_cc = np.full(n, -1, dtype=np.int64)
        for s in sorted(p.starts):  # ascending, and strict '>' keeps the lowest start on ties
            block = p.slot_mask(s)
            ok = states & block == 0
            after = states | block
            score = np.where(ok, cc[after], -1)
            better = score > best_cc
            default_start[better, i] = s
            best_cc = np.maximum(best_cc, score)
            inc = np.where(ok, fbk[after] - fbk, big)
            lower = inc < frag_increment[:, i]
            min_frag_start[lower, i] = s
            frag_increment[:, i] = np.minimum(frag_increment[:, i], inc)

    from mipopt.geometry import reference

    cw = np.zeros((nprof, model.slots), dtype=np.int64)
    mw = np.zeros((nprof, model.slots), dtype=np.int64)
    for i, p in enumerate(model.profiles):
        for s in p.starts:
            cw[i, s] = reference.compute_waste(model, p, s)
            mw[i, s] = reference.memory_waste(model, p, s)

    return GeometryTables(
        model, free_slots, legal, capacity, cc, default_start, fbk, grmu,
        min_frag_start, frag_increment, cw, mw,
    )  # fmt: skip


@lru_cache(maxsize=64)
def tables_for(model: GpuModel) -> GeometryTables:
    """The (cached) tables of a model."""
    return _build(model)


def profile_index(model: GpuModel, profile: Profile) -> int:
    """Position of ``profile`` in ``model.profiles``."""
    return model.profiles.index(profile)
