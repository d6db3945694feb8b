"""Plain per-GPU definitions of the geometry quantities, one GPU state at a time.

These are the definitions, written as directly as the papers state them. The
per-state tables of :mod:`mipopt.geometry.tables` are built independently (with
numpy) and the tests check the two agree on every state of every model; the
benchmark compares them for speed.

A state is an ``int`` bitmask over the model's memory slots, bit ``s`` set when
slot ``s`` is occupied.
"""

from __future__ import annotations

from mipopt.catalog import GpuModel, Profile


def fits_at(mask: int, profile: Profile, start: int) -> bool:
    """True when every slot of ``profile`` at ``start`` is free in ``mask``."""
    return not mask & profile.slot_mask(start)


def legal_starts(model: GpuModel, mask: int, profile: Profile) -> list[int]:
    """The profile's starts, in ``-lgipp`` order, whose slots are all free."""
    return [s for s in profile.starts if fits_at(mask, profile, s)]


def configuration_capability(model: GpuModel, mask: int) -> int:
    """CC, GRMU Eq. 1: the number of (base profile, start) pairs that still fit."""
    return sum(len(legal_starts(model, mask, p)) for p in model.profiles if p.base)


def default_start(model: GpuModel, mask: int, profile: Profile) -> int | None:
    """The driver's default placement (GRMU Eq. 2, Alg. 1 ``Assign``).

    Among the legal starts, the one that leaves the highest CC; ties go to the
    lowest start. None when the profile does not fit.
    """
    best, best_cc = None, -1
    for start in sorted(legal_starts(model, mask, profile)):
        cc = configuration_capability(model, mask | profile.slot_mask(start))
        if cc > best_cc:
            best, best_cc = start, cc
    return best


def fbk_fragmentation(model: GpuModel, mask: int) -> int:
    """F(m) of the MFI paper, Alg. 1, with weights = memory slots.

    For each base profile that the free slots could hold by count, every start
    whose slots are not all free adds the profile's memory slots.
    """
    free = model.slots - mask.bit_count()
    score = 0
    for p in model.profiles:
        if p.base and p.memory_slots <= free:
            score += p.memory_slots * sum(1 for s in p.starts if not fits_at(mask, p, s))
    return score


def grmu_fragmentation(model: GpuModel, mask: int) -> float:
    """GRMU's ``Fragmentation`` (Alg. 4, lines 8-17).

    For each base profile no larger than the free slots: on a copy of the free
    slots, take the profile's starts in order wherever they fit, then add the
    free slots left over divided by the profile size. Read with the copy made
    afresh per profile (see ``docs/geometry.md`` on why).
    """
    free = model.full_mask & ~mask
    total = 0.0
    for p in model.profiles:
        if not p.base or p.memory_slots > free.bit_count():
            continue
        left = free
        for s in p.starts:
            block = p.slot_mask(s)
            if block & left == block:
                left &= ~block
        total += left.bit_count() / p.memory_slots
    return total


def compute_waste(model: GpuModel, profile: Profile, start: int) -> int:
    """Compute slices an instance strands (IBM WPM paper, Table 3).

    An instance spans every compute slice that owns one of its memory slots; the
    spanned slices beyond its own compute are wasted (3g at start 0 spans four,
    uses three; a one-compute two-slot profile anywhere but the last slice spans two).
    """
    slots = set(range(start, start + profile.memory_slots))
    spanned = sum(1 for g in model.gpu_slices if slots & set(g))
    return max(spanned - profile.compute, 0)


def memory_waste(model: GpuModel, profile: Profile, start: int) -> int:
    """Memory slots an instance strands: slots of its spanned compute slices it does not use.

    A one-slot instance at start 6 of an 8-slot part takes compute slice 6, which
    owns slots 6 and 7, so slot 7 is stranded.
    """
    slots = set(range(start, start + profile.memory_slots))
    spanned = set().union(*(set(g) for g in model.gpu_slices if slots & set(g)))
    return len(spanned - slots)
