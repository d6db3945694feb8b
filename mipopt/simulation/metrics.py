"""MIGBench's replay metrics, on NVIDIA's MIG geometry.

MIGBench (FouoF/MIG-scheduler-benchmark, ``internal/simulator/simulator.go`` at commit
228c2122, functions ``fragmentation``, ``maxPack``, ``integrate``, ``candidates``, ``summary``,
``quantile``) models a GPU as 7 GPC slots in a row plus a memory pool: an instance of ``g`` GPCs
takes ``g`` consecutive slots at one of its profile's starts and ``memoryGB`` from the pool. mipopt's
geometry is NVIDIA's: an instance takes consecutive *memory slots* (8 on A100/H100/B200) at the
starts ``nvidia-smi mig -lgipp`` lists, and the catalog says which memory slots each *compute
slice* owns (``GpuModel.gpu_slices``: on 8-slot parts the last of the 7 slices owns slots 6 and 7).
MIGBench's definitions carry over as follows.

Slots
    A GPU's slots are its compute slices (7 on A100/H100/B200, as MIGBench's GPC slots). A slice
    is *free* when none of the memory slots it owns is occupied; an instance spans every slice that
    owns one of its memory slots, so ``3g.40gb`` at start 0 (memory slots 0-3) takes slices 0-3:
    slice 3 cannot hold anything beside it on a real H100 (MIGBench counts it free, and would put a
    ``1g`` there). The *longest free run* is the longest row of consecutive free slices.
Compute
    A profile's compute slices (``Profile.compute``, MIGBench's ``gpc``). Utilization counts the
    compute slices of the instances (``3g`` counts 3), over the cluster's compute slices.
Memory
    Memory slots (on the parts MIGBench models, 10 GB each on H100-80GB: the same ratio as
    MIGBench's GB pool for its profile subset). On NVIDIA geometry a placement that fits the
    free memory slots fits the memory, so max-pack needs no separate memory pool.
Physical fragmentation (per GPU)
    ``(free slices - longest free run) / free slices``, 0 on a full GPU.
Max-pack and stranded capacity (per GPU)
    Max-pack is the largest total compute of legal, non-overlapping placements of the given
    profiles (default: the model's base profiles; MIGBench: the cluster's profile subset) on the
    free memory slots; stranded capacity is ``(free slices - max-pack) / free slices``, 0 on a full
    GPU. Exact, by a search over all ``2**slots`` occupancy states (:func:`state_metrics`, cached
    per model and profile set). With a ``1g`` profile every free slice can be filled, so stranding
    needs a profile set without one (MIGBench's subset has ``1g.10gb``: its published runs report
    0); the slice a ``3g`` at start 0 spans counts as taken, not stranded.
Cluster values
    Means over all GPUs, full ones included (MIGBench's ``fragmentation``), time-weighted over the
    measurement window by the replay.
Request fragmentation
    A job is request-fragmented when no GPU has a legal placement of its profile while the cluster's
    summed free slices and free memory slots hold it (:func:`request_fragmented`; MIGBench's
    ``candidates``: GPUs of every eligible node count, full ones too). The replay counts each job once.
Waits, makespan, throughput
    Percentiles by linear interpolation between order statistics (MIGBench's ``quantile``, numpy's
    default); makespan is the last finish; throughput is completed jobs per hour of makespan.
Time-weighted values
    Over a window ``[start, end]`` of a step series (a value holds from its time to the next):
    mean utilization, the peak over steps of positive length inside the window, and the fraction
    of the window with a job waiting (MIGBench's ``integrate``: 0 when the window is empty).

Examples
--------
>>> from mipopt.catalog import get_model
>>> h100 = get_model("H100-80GB")
>>> three_at_0 = h100.profile("3g.40gb").slot_mask(0)
>>> free_slices(h100, three_at_0), max_pack(h100, three_at_0)
(3, 3)
>>> one_at_0_and_2 = 0b101
>>> physical_fragmentation(h100, one_at_0_and_2), stranded_capacity(h100, one_at_0_and_2)
(0.2, 0.0)
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel, Profile

__all__ = [
    "StateMetrics",
    "backlogged_time_fraction",
    "capacity_holds",
    "cluster_fragmentation",
    "free_slices",
    "longest_free_run",
    "makespan",
    "max_pack",
    "pack_profiles",
    "peak_value",
    "physical_fragmentation",
    "request_fragmented",
    "state_metrics",
    "stranded_capacity",
    "throughput_per_hour",
    "time_weighted_mean",
    "wait_summary",
]

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

#: Milliseconds per hour: MIGBench's traces are in ms (``throughput_per_hour``'s default unit).
MS_PER_HOUR = 3_600_000.0


def _slice_masks(model: GpuModel) -> tuple[int, ...]:
    """The memory-slot mask each compute slice owns."""
    return tuple(sum(1 << s for s in owned) for owned in model.gpu_slices)


def free_slice_bits(model: GpuModel, mask: int) -> int:
    """Bitmask of the free compute slices of a GPU in state ``mask`` (bit ``c``: slice ``c`` free)."""
    return sum(1 << c for c, owned in enumerate(_slice_masks(model)) if not mask & owned)


def free_slices(model: GpuModel, mask: int) -> int:
    """Compute slices none of whose memory slots is occupied."""
    return free_slice_bits(model, mask).bit_count()


def longest_free_run(model: GpuModel, mask: int) -> int:
    """The longest row of consecutive free compute slices."""
    bits, best, run = free_slice_bits(model, mask), 0, 0
    for c in range(model.compute_slices):
        run = run + 1 if bits >> c & 1 else 0
        best = max(best, run)
    return best


def physical_fragmentation(model: GpuModel, mask: int) -> float:
    """MIGBench's physical fragmentation of one GPU: ``(free - longest free run) / free``, 0 when full."""
    free = free_slices(model, mask)
    return (free - longest_free_run(model, mask)) / free if free else 0.0


def pack_profiles(model: GpuModel, profiles: Iterable[str] | None = None) -> tuple[Profile, ...]:
    """The profiles max-pack may use: the named ones the model has (aliases and ids resolve), or its
    base profiles. Names the model lacks are left out (a mixed cluster shares one profile list)."""
    if profiles is None:
        return tuple(p for p in model.profiles if p.base)
    found = (model.find(name) for name in profiles)
    return tuple(dict.fromkeys(p for p in found if p is not None))


@dataclass(frozen=True, eq=False)
class StateMetrics:
    """Per-state arrays of one model and profile set, indexed by occupancy mask.

    Attributes
    ----------
    free_slices, longest_run, max_pack
        Free compute slices, their longest run, and max-pack (compute).
    physical_fragmentation, stranded_capacity
        The per-GPU metrics (0 on a full GPU).
    free_memory_slots
        Memory slots free.
    """

    model: GpuModel
    profiles: tuple[Profile, ...]
    free_slices: IntArray
    longest_run: IntArray
    max_pack: IntArray
    physical_fragmentation: FloatArray
    stranded_capacity: FloatArray
    free_memory_slots: IntArray


@lru_cache(maxsize=64)
def _state_metrics(model: GpuModel, profiles: tuple[Profile, ...]) -> StateMetrics:
    n = 1 << model.slots
    free = np.array([free_slices(model, m) for m in range(n)], dtype=np.int64)
    run = np.array([longest_free_run(model, m) for m in range(n)], dtype=np.int64)
    blocks = [(p.compute, p.slot_mask(s)) for p in profiles for s in p.starts]
    # best[m]: max-pack of state m. Adding a block sets bits, so the states in decreasing order
    # have every successor's value before their own.
    best = np.zeros(n, dtype=np.int64)
    for m in range(n - 1, -1, -1):
        best[m] = max((c + best[m | b] for c, b in blocks if not m & b), default=0)
    safe = np.maximum(free, 1)
    physical = np.where(free > 0, (free - run) / safe, 0.0)
    # Max-pack never exceeds the free slices in a state the placements can reach (a test checks
    # every model); in the others (slot 7 held without slot 6) the clip keeps stranding >= 0.
    stranded = np.where(free > 0, np.clip(free - best, 0, None) / safe, 0.0)
    free_memory = model.slots - np.array([m.bit_count() for m in range(n)], dtype=np.int64)
    return StateMetrics(model, profiles, free, run, best, physical, stranded, free_memory)


def state_metrics(model: GpuModel, profiles: Iterable[str] | None = None) -> StateMetrics:
    """The per-state metric arrays of ``model`` with max-pack over ``profiles`` (cached).

    Parameters
    ----------
    model
        The GPU model.
    profiles
        Profile names max-pack may use (MIGBench: the cluster's profile subset); default the
        model's base profiles.
    """
    return _state_metrics(model, pack_profiles(model, profiles))


def max_pack(model: GpuModel, mask: int, profiles: Iterable[str] | None = None) -> int:
    """The largest compute of legal non-overlapping placements of ``profiles`` on the free slots."""
    return int(state_metrics(model, profiles).max_pack[mask])


def stranded_capacity(model: GpuModel, mask: int, profiles: Iterable[str] | None = None) -> float:
    """MIGBench's stranded capacity of one GPU: ``(free - max-pack) / free``, 0 when full."""
    return float(state_metrics(model, profiles).stranded_capacity[mask])


def cluster_fragmentation(
    gpus: Iterable[tuple[GpuModel, npt.ArrayLike]], profiles: Iterable[str] | None = None
) -> tuple[float, float]:
    """Physical fragmentation and stranded capacity, each averaged over all GPUs.

    Parameters
    ----------
    gpus
        ``(model, masks)`` per group of GPUs of one model (``masks``: their occupancy states,
        e.g. one :class:`~mipopt.state.cluster.Group` of a cluster and ``cluster.mask[group.ks]``).
    profiles
        As for :func:`state_metrics`.

    Returns
    -------
    physical, stranded
        0, 0 for a cluster without GPUs.
    """
    names = None if profiles is None else tuple(profiles)
    count, physical, stranded = 0, 0.0, 0.0
    for model, masks in gpus:
        states = np.asarray(masks, dtype=np.int64)
        table = state_metrics(model, names)
        count += states.size
        physical += float(table.physical_fragmentation[states].sum())
        stranded += float(table.stranded_capacity[states].sum())
    return (physical / count, stranded / count) if count else (0.0, 0.0)


def capacity_holds(gpus: Iterable[tuple[GpuModel, npt.ArrayLike]], profile: str) -> bool:
    """Whether the summed free slices and free memory slots of the GPUs whose model has ``profile``
    hold one instance of it (MIGBench's ``totalEnough``)."""
    compute = memory = 0
    needed: Profile | None = None
    for model, masks in gpus:
        p = model.find(profile)
        if p is None:
            continue
        states = np.asarray(masks, dtype=np.int64)
        table = state_metrics(model)
        compute += int(table.free_slices[states].sum())
        memory += int(table.free_memory_slots[states].sum())
        needed = p
        if compute >= p.compute and memory >= p.memory_slots:
            return True
    return needed is not None and compute >= needed.compute and memory >= needed.memory_slots


def request_fragmented(gpus: Sequence[tuple[GpuModel, npt.ArrayLike]], profile: str) -> bool:
    """A job of ``profile`` is request-fragmented now: no GPU has a legal start for it, while the
    cluster's summed free capacity holds it (:func:`capacity_holds`).

    "Legal" is the geometry's (a free run at one of the profile's starts); a replay whose policy
    found no placement for other reasons (``max_instances``, host limits) asks this predicate after
    it, so only geometry counts as fragmentation.
    """
    for model, masks in gpus:
        p = model.find(profile)
        if p is None:
            continue
        blocks = [p.slot_mask(s) for s in p.starts]
        if any(not m & b for m in np.asarray(masks, dtype=np.int64).ravel().tolist() for b in blocks):
            return False
    return capacity_holds(gpus, profile)


def wait_summary(waits: npt.ArrayLike) -> dict[str, float]:
    """``mean_wait``, ``p50_wait``, ``p95_wait``, ``p99_wait`` (linear interpolation; 0 for no jobs).

    >>> wait_summary([0, 10, 20, 30])
    {'mean_wait': 15.0, 'p50_wait': 15.0, 'p95_wait': 28.5, 'p99_wait': 29.7}
    """
    values = np.asarray(waits, dtype=np.float64)
    if not values.size:
        return {"mean_wait": 0.0, "p50_wait": 0.0, "p95_wait": 0.0, "p99_wait": 0.0}
    p50, p95, p99 = (round(float(v), 9) for v in np.percentile(values, [50, 95, 99]))
    return {"mean_wait": float(values.mean()), "p50_wait": p50, "p95_wait": p95, "p99_wait": p99}


def makespan(finishes: npt.ArrayLike) -> float:
    """The last finish (0 when nothing finished)."""
    values = np.asarray(finishes, dtype=np.float64)
    return float(values.max()) if values.size else 0.0


def throughput_per_hour(completed: int, span: float, unit_per_hour: float = MS_PER_HOUR) -> float:
    """Completed jobs per hour of ``span`` (in units of which ``unit_per_hour`` make an hour); 0 for an
    empty span.

    >>> throughput_per_hour(500, 23_835_780)
    75.51672317834785
    """
    return completed * unit_per_hour / span if span > 0 else 0.0


def _steps(
    times: npt.ArrayLike, values: npt.ArrayLike, window: tuple[float, float]
) -> tuple[FloatArray, FloatArray]:
    """Each step's overlap with ``window`` and its value; a value holds to the next time, the last to
    the window's end."""
    t = np.asarray(times, dtype=np.float64)
    v = np.asarray(values, dtype=np.float64)
    if t.shape != v.shape or t.ndim != 1:
        raise ValueError(f"times and values: one value per time (shapes {t.shape} and {v.shape})")
    if t.size and np.any(np.diff(t) < 0):
        raise ValueError("times: not in increasing order")
    start, end = window
    ends = np.append(t[1:], max(end, t[-1]) if t.size else end)
    overlap = np.clip(np.minimum(ends, end) - np.maximum(t, start), 0.0, None)
    return overlap, v


def time_weighted_mean(times: npt.ArrayLike, values: npt.ArrayLike, window: tuple[float, float]) -> float:
    """The mean of a step series over ``window`` (0 for an empty window, as MIGBench's ``summary``).

    >>> time_weighted_mean([0, 10, 30], [1.0, 0.5, 0.0], (5, 25))
    0.625
    """
    overlap, v = _steps(times, values, window)
    total = overlap.sum()
    return float((overlap * v).sum() / total) if total > 0 else 0.0


def peak_value(times: npt.ArrayLike, values: npt.ArrayLike, window: tuple[float, float]) -> float:
    """The largest value held for a positive time inside ``window`` (0 for an empty window)."""
    overlap, v = _steps(times, values, window)
    held = v[overlap > 0]
    return float(held.max()) if held.size else 0.0


def backlogged_time_fraction(
    times: npt.ArrayLike, queued: npt.ArrayLike, window: tuple[float, float]
) -> float:
    """The fraction of ``window`` with at least one job waiting (0 for an empty window)."""
    return time_weighted_mean(times, np.asarray(queued, dtype=np.float64) > 0, window)
