"""Candidate placements once the workloads that cannot move are fixed.

Every exact model chooses, for each movable workload, a ``(gpu, start)`` among
the placements that stay legal around the fixed workloads: their slots are
taken, a fixed ``+me`` instance uses the GPU's one media-engine set, and fixed
instances count towards each profile's ``max_instances``. By default the fixed
workloads are the pinned ones; running workloads that may move are not fixed.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel
from mipopt.exact.preprocess.classes import profile_options
from mipopt.geometry import tables_for
from mipopt.instance import Instance

__all__ = [
    "Candidate",
    "Candidates",
    "FixedState",
    "GpuCandidates",
    "candidates",
    "fixed_ids",
    "fixed_masks",
    "fixed_states",
    "open_placements",
]


@dataclass(frozen=True, slots=True)
class FixedState:
    """What the fixed workloads hold on one GPU.

    Attributes
    ----------
    gpu
        GPU id.
    model
        The GPU's model.
    mask
        Bitmask of the memory slots fixed workloads occupy.
    counts
        Fixed instances per profile, indexed like ``model.profiles``.
    media_used
        True when a fixed ``+me`` instance holds the media-engine set.
    workloads
        Ids of the fixed workloads on this GPU, in instance order.
    """

    gpu: str
    model: GpuModel
    mask: int
    counts: tuple[int, ...]
    media_used: bool
    workloads: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class GpuCandidates:
    """The placements still open on one GPU.

    Attributes
    ----------
    fixed
        The fixed occupancy the placements were computed against.
    placements
        ``(profile index, start)`` pairs, by profile index then start.
    """

    fixed: FixedState
    placements: tuple[tuple[int, int], ...]

    @property
    def gpu(self) -> str:
        return self.fixed.gpu

    @property
    def model(self) -> GpuModel:
        return self.fixed.model

    def starts(self, profile: int) -> tuple[int, ...]:
        """Open starts of the profile at position ``profile`` of ``model.profiles``."""
        return tuple(s for p, s in self.placements if p == profile)

    def matrix(self) -> npt.NDArray[np.bool_]:
        """``[profile, start]`` boolean matrix of the open placements."""
        out = np.zeros((len(self.model.profiles), self.model.slots), dtype=bool)
        for p, s in self.placements:
            out[p, s] = True
        return out


@dataclass(frozen=True, slots=True)
class Candidate:
    """One place a workload may go: GPU, start, and its profile on that GPU's model."""

    gpu: str
    start: int
    profile: str
    profile_index: int


@dataclass(frozen=True, slots=True)
class Candidates:
    """Candidate placements of an instance around its fixed workloads.

    Attributes
    ----------
    fixed
        Ids of the workloads held in place.
    gpus
        Per GPU, in ``instance.gpus`` order.
    workloads
        Per movable workload (instance order), its candidates by GPU order then
        start. Fixed workloads have no entry. Read-only by convention.
    """

    fixed: frozenset[str]
    gpus: tuple[GpuCandidates, ...]
    workloads: Mapping[str, tuple[Candidate, ...]]

    def gpu(self, gpu_id: str) -> GpuCandidates:
        for g in self.gpus:
            if g.gpu == gpu_id:
                return g
        raise KeyError(f"unknown GPU {gpu_id!r}")


def fixed_ids(instance: Instance, fixed: Iterable[str] | None = None) -> frozenset[str]:
    """The fixed workload ids: ``fixed`` checked, or the pinned workloads when None.

    Raises
    ------
    ValueError
        When an id is unknown or names a workload that is not running.
    """
    if fixed is None:
        return frozenset(w.id for w in instance.workloads if w.pinned)
    out = frozenset(fixed)
    for wid in sorted(out):
        if not instance.has_workload(wid):
            raise ValueError(f"fixed workload {wid!r} is not in instance {instance.name!r}")
        if not instance.workload(wid).running:
            raise ValueError(f"fixed workload {wid!r} is not running, so it has no place to stay")
    return out


def fixed_states(instance: Instance, fixed: Iterable[str] | None = None) -> tuple[FixedState, ...]:
    """Per GPU (``instance.gpus`` order), what the fixed workloads hold.

    ``fixed`` defaults to the pinned workloads (see :func:`fixed_ids`).
    """
    ids = fixed_ids(instance, fixed)
    masks = {g.id: 0 for g in instance.gpus}
    counts = {g.id: [0] * len(g.model.profiles) for g in instance.gpus}
    media = {g.id: False for g in instance.gpus}
    held: dict[str, list[str]] = {g.id: [] for g in instance.gpus}
    for w in instance.workloads:
        if w.id not in ids or w.placement is None:
            continue
        gid = w.placement.gpu
        model = instance.gpu(gid).model
        profile = instance.profile_on(w, model)  # a memory-sized one's: the profile it runs at
        assert profile is not None  # the instance checked it
        index = model.profiles.index(profile)
        masks[gid] |= profile.slot_mask(w.placement.start)
        counts[gid][index] += 1
        media[gid] |= profile.media_extension
        held[gid].append(w.id)
    return tuple(
        FixedState(g.id, g.model, masks[g.id], tuple(counts[g.id]), media[g.id], tuple(held[g.id]))
        for g in instance.gpus
    )


def fixed_masks(instance: Instance, fixed: Iterable[str] | None = None) -> npt.NDArray[np.int64]:
    """Fixed occupancy bitmask per GPU, ``instance.gpus`` order, ready to index geometry tables."""
    return np.array([s.mask for s in fixed_states(instance, fixed)], dtype=np.int64)


def _open_placements(state: FixedState) -> tuple[tuple[int, int], ...]:
    tables = tables_for(state.model)
    out: list[tuple[int, int]] = []
    for p, profile in enumerate(state.model.profiles):
        if state.counts[p] >= profile.max_instances:
            continue
        if profile.media_extension and state.media_used:
            continue
        bits = int(tables.legal[state.mask, p])
        out.extend((p, s) for s in range(state.model.slots) if bits >> s & 1)
    return tuple(out)


def open_placements(instance: Instance, fixed: Iterable[str] | None = None) -> tuple[GpuCandidates, ...]:
    """Per GPU (``instance.gpus`` order), the ``(profile, start)`` pairs legal around the fixed workloads.

    The GPU half of :func:`candidates`, without the per-workload lists, for
    models that place classes of workloads rather than single ones.
    """
    return tuple(GpuCandidates(s, _open_placements(s)) for s in fixed_states(instance, fixed))


def candidates(instance: Instance, fixed: Iterable[str] | None = None) -> Candidates:
    """Candidate placements per GPU and per movable workload.

    Parameters
    ----------
    instance
        The instance.
    fixed
        Ids of running workloads that may not move; None for the pinned ones.

    Returns
    -------
    Candidates
        Per GPU, the ``(profile, start)`` pairs legal around the fixed workloads
        (free slots, no second ``+me``, ``max_instances`` less the fixed count);
        per movable workload, those of its profile on the GPUs whose model it
        may use (of each profile it may take, :func:`~mipopt.exact.preprocess.profile_options`,
        for a new memory-sized one). A candidate is legal alone; combining several is the
        model's job.

    Raises
    ------
    ValueError
        As :func:`fixed_ids`.
    """
    ids = fixed_ids(instance, fixed)
    gpus = open_placements(instance, ids)
    by_workload: dict[str, tuple[Candidate, ...]] = {}
    for w in instance.workloads:
        if w.id in ids:
            continue
        found: list[Candidate] = []
        for g in gpus:
            for profile in profile_options(instance, w, g.model):
                index = g.model.profiles.index(profile)
                found.extend(Candidate(g.gpu, s, profile.name, index) for s in g.starts(index))
        by_workload[w.id] = tuple(found)
    return Candidates(ids, gpus, by_workload)
