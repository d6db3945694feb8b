"""IBM's free partitions P_g of a partially used GPU (WPM paper, Alg. 1) and their merged form.

The WPM model treats the free space of a GPU with workloads that stay put as a
set of bins. Alg. 1 builds them: walk the slot indices in order, and at every
slot not yet partitioned record the largest base profile that can start there
(legal start, slots free, ``max_instances`` not reached), placing it as a
hypothetical load so that later slots see it. Profiles are ranked by compute
slices ("GPU slice size"), then memory slots, then catalog order.

The slot order ``K`` of Alg. 1 is not printed in the paper. We take it from the
preference order of Table 1 (the driver's default order on an empty GPU),
largest profiles first: on an 8-slot part 7g ``0``, 3g ``4, 0``, 2g ``4, 0, 2``,
1g.20gb ``6, 4, 0, 2``, 1g ``6, 4, 5, 0, 1, 2, 3`` give ``K = 0, 4, 2, 6, 5, 1, 3``,
then the slots no profile starts at. The 1g order alone (``6, 4, ...``) would
split an empty GPU into 1g.20gb, 2g and 4g instead of one 7g; ``K`` as chosen
reproduces both examples of the paper, and on every built-in model it yields the
same partitions as the ascending order ``0, 1, 2, ...`` (tested over all states).

Merged partitions (the paper's ``{6g.60gb}``): adjacent Alg. 1 partitions form
runs; a run of two or more is replaced by one merged partition when Assumption 1
holds on it, i.e. every multiset of the GPU's profiles whose compute and memory
slots fit the run's totals (and that respects ``max_instances`` and the one
``+me``) can be placed at legal starts inside the run. Otherwise the run keeps
its Alg. 1 partitions: the Fig. 7 run 1..4 admits a 3g.40gb by totals but not by
starts, so it stays ``{1g@1, 2g@2, 1g@4}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

from mipopt.catalog import GpuModel
from mipopt.exact.preprocess.candidates import FixedState, fixed_states
from mipopt.geometry import preference_order
from mipopt.instance import Instance

__all__ = [
    "GpuPartitions",
    "Partition",
    "free_partitions",
    "gpu_partitions",
    "slot_order",
]


@dataclass(frozen=True, slots=True)
class Partition:
    """A free bin on one GPU: an Alg. 1 partition ``(profile, start)`` or a merged free run.

    Attributes
    ----------
    start
        First memory slot.
    slots
        Memory slots covered (``start .. start + slots - 1``).
    compute
        Compute slices, the bin's C_p in the WPM model.
    memory_gb
        Memory, the bin's memory capacity (sum of the parts' profile memory).
    profile
        Profile name for an Alg. 1 partition; None for a merged run.
    parts
        For a merged run, the Alg. 1 partitions it replaces, by start.
    """

    start: int
    slots: int
    compute: int
    memory_gb: float
    profile: str | None = None
    parts: tuple[Partition, ...] = ()

    @property
    def merged(self) -> bool:
        return self.profile is None

    @property
    def name(self) -> str:
        """The profile name, or ``<compute>g.<memory>gb`` for a merged run (``6g.60gb``)."""
        return self.profile if self.profile is not None else f"{self.compute}g.{self.memory_gb:g}gb"

    @property
    def mask(self) -> int:
        return ((1 << self.slots) - 1) << self.start

    def to_dict(self) -> dict[str, object]:
        return {
            "name": self.name,
            "profile": self.profile,
            "start": self.start,
            "slots": self.slots,
            "compute": self.compute,
            "memory_gb": self.memory_gb,
            "merged": self.merged,
        }


@dataclass(frozen=True, slots=True)
class GpuPartitions:
    """The free partitions of one GPU around its fixed workloads."""

    fixed: FixedState
    partitions: tuple[Partition, ...]

    @property
    def gpu(self) -> str:
        return self.fixed.gpu

    @property
    def model(self) -> GpuModel:
        return self.fixed.model


def _ranked(model: GpuModel) -> tuple[int, ...]:
    """Base profile positions, largest first: compute, then memory slots, then catalog order."""
    base = [i for i, p in enumerate(model.profiles) if p.base]
    return tuple(sorted(base, key=lambda i: (-model.profiles[i].compute, -model.profiles[i].memory_slots, i)))


@lru_cache(maxsize=64)
def slot_order(model: GpuModel) -> tuple[int, ...]:
    """Alg. 1's slot order K: Table 1 preference orders merged, largest profiles first."""
    order: list[int] = []
    for i in _ranked(model):
        order += [s for s in preference_order(model, model.profiles[i]) if s not in order]
    return (*order, *(s for s in range(model.slots) if s not in order))


def free_partitions(
    model: GpuModel,
    mask: int,
    counts: Sequence[int] | None = None,
    media_used: bool = False,
    *,
    merged: bool = False,
    order: Iterable[int] | None = None,
) -> tuple[Partition, ...]:
    """P_g of one GPU state (WPM Alg. 1), optionally merged.

    Parameters
    ----------
    model
        The GPU model.
    mask
        Occupied memory slots (fixed workloads).
    counts
        Fixed instances per profile (``model.profiles`` order), for ``max_instances``.
    media_used
        Whether a fixed ``+me`` instance holds the media engines (matters only for merging).
    merged
        Replace runs of adjacent partitions by one merged partition where Assumption 1 holds.
    order
        Slot order K; :func:`slot_order` when None.

    Returns
    -------
    tuple of Partition
        By start; empty for a full GPU, one 7g for an empty 8-slot GPU.
    """
    fixed_counts = tuple(counts) if counts is not None else (0,) * len(model.profiles)
    used = list(fixed_counts)
    state = mask
    found: list[Partition] = []
    ranked = _ranked(model)
    for k in slot_order(model) if order is None else order:
        if state >> k & 1:
            continue  # already partitioned: fixed, or inside an earlier hypothetical load
        for i in ranked:
            p = model.profiles[i]
            if k in p.starts and not state & p.slot_mask(k) and used[i] < p.max_instances:
                state |= p.slot_mask(k)
                used[i] += 1
                found.append(Partition(k, p.memory_slots, p.compute, p.memory_gb, p.name))
                break
    parts = tuple(sorted(found, key=lambda q: q.start))
    if not merged:
        return parts
    # what the run's future tenants may use: the limits less the fixed instances
    limits = tuple(
        0 if (p.media_extension and media_used) else p.max_instances - c
        for p, c in zip(model.profiles, fixed_counts, strict=True)
    )
    return _merge(model, parts, limits)


def _runs(parts: tuple[Partition, ...]) -> list[list[Partition]]:
    runs: list[list[Partition]] = []
    for q in parts:
        if runs and runs[-1][-1].start + runs[-1][-1].slots == q.start:
            runs[-1].append(q)
        else:
            runs.append([q])
    return runs


def _merge(model: GpuModel, parts: tuple[Partition, ...], limits: tuple[int, ...]) -> tuple[Partition, ...]:
    out: list[Partition] = []
    for run in _runs(parts):
        compute = sum(q.compute for q in run)
        slots = sum(q.slots for q in run)
        if len(run) > 1 and _assumption_1(model, run[0].start, slots, compute, limits):
            memory = sum(q.memory_gb for q in run)
            out.append(Partition(run[0].start, slots, compute, memory, None, tuple(run)))
        else:
            out.extend(run)
    return tuple(out)


@lru_cache(maxsize=4096)
def _assumption_1(model: GpuModel, start: int, slots: int, compute: int, limits: tuple[int, ...]) -> bool:
    """Whether every multiset of profiles fitting the run's totals can be placed inside the run.

    Placeability only shrinks when profiles are removed, so only the multisets to
    which no profile can be added are placed.
    """
    run = ((1 << slots) - 1) << start
    profiles = model.profiles
    n = len(profiles)
    media = [i for i, p in enumerate(profiles) if p.media_extension]

    def addable(i: int, chosen: list[int], c: int, m: int) -> bool:
        p = profiles[i]
        if chosen.count(i) >= limits[i] or c + p.compute > compute or m + p.memory_slots > slots:
            return False
        return not (p.media_extension and any(j in media for j in chosen))

    def placeable(chosen: list[int], free: int) -> bool:
        if not chosen:
            return True
        p = profiles[chosen[0]]  # chosen is sorted largest first: place big ones first
        for s in p.starts:
            block = p.slot_mask(s)
            if block & free == block and placeable(chosen[1:], free & ~block):
                return True
        return False

    order = sorted(range(n), key=lambda i: (-profiles[i].memory_slots, -profiles[i].compute, i))

    def walk(pos: int, chosen: list[int], c: int, m: int) -> bool:
        maximal = True
        for j in range(pos, n):
            i = order[j]
            if addable(i, chosen, c, m):
                maximal = False
                p = profiles[i]
                if not walk(j, [*chosen, i], c + p.compute, m + p.memory_slots):
                    return False
        if maximal:
            return placeable(chosen, run)
        return True

    return walk(0, [], 0, 0)


def gpu_partitions(
    instance: Instance, fixed: Iterable[str] | None = None, *, merged: bool = False
) -> tuple[GpuPartitions, ...]:
    """Free partitions of every GPU that holds a fixed workload (the WPM paper's set G').

    Parameters
    ----------
    instance
        The instance.
    fixed
        Ids of the workloads that stay; None for **all running workloads**, as in
        the WPM paper, where pre-existing workloads partition G' (this differs from
        :func:`mipopt.exact.preprocess.candidates`, whose default is the pinned ones).
    merged
        Merge runs where Assumption 1 holds (see the module docstring).

    Returns
    -------
    tuple of GpuPartitions
        In ``instance.gpus`` order, GPUs without fixed workloads left out.
    """
    ids = [w.id for w in instance.running] if fixed is None else fixed
    out = []
    for state in fixed_states(instance, ids):
        if not state.workloads:
            continue
        parts = free_partitions(state.model, state.mask, state.counts, state.media_used, merged=merged)
        out.append(GpuPartitions(state, parts))
    return tuple(out)
