"""How much room placement alone leaves on a trace: relaxed geometries and floors.

A placement policy decides where a job goes, not how much work there is. Three references say how
far better placement could take a replay of a trace:

* :func:`any_start_trace`: the same trace on GPUs without start constraints
  (:func:`any_start_model`): a profile may begin at any memory slot where its run of slots fits.
  Fragmentation remains (freed holes are where they are), but no instance is refused for its start.
* :func:`capacity_replay`: no geometry at all. Each GPU is its compute slices and memory slots as two
  pools; a job fits where both have room. MIGBench's event semantics otherwise (create and delete
  delays, releases before arrivals, repeated backfill passes over the queue, FIFO or newest first),
  placing on the first GPU in node and GPU order. No fragmentation can ever hold a job back.
* :func:`makespan_floor`: no replay of the trace can finish before the job whose arrival plus
  create, runtime and delete is largest, nor before the cluster's compute slices (or memory slots)
  have held every job's instance for its whole life (area bounds). Every job takes its default
  profile (the smallest that fits, as MIGBench's schedulers).

The first two are replays, not proofs: an online replay is not monotone in its room (a job placed
earlier can block a larger one), so they are what a scheduler freed of the geometry would do with
the same rules, and the floor is the bound.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any

import numpy as np

from mipopt.catalog import GpuModel, Profile
from mipopt.errors import InstanceError
from mipopt.instance import InstanceBuilder
from mipopt.instance.trace import Trace
from mipopt.simulation.metrics import wait_summary

__all__ = ["any_start_model", "any_start_trace", "capacity_replay", "makespan_floor"]

QUEUE_ORDERS = ("fifo", "newest")


def any_start_model(model: GpuModel) -> GpuModel:
    """``model`` without start constraints: every profile may start at any memory slot where its
    run fits, except that the last compute slice's extra slots (slot 7 of an 8-slot part, which
    compute slice 6 owns with slot 6) only join an instance that spans more memory slots than it has
    compute: so no layout exceeds the compute slices. Every start NVIDIA allows stays allowed.

    >>> from mipopt.catalog import get_model
    >>> free = any_start_model(get_model("H100-80GB"))
    >>> free.name, free.profile("2g.20gb").starts, free.profile("3g.40gb").starts
    ('H100-80GB-any-start', (0, 1, 2, 3, 4, 5), (0, 1, 2, 3, 4))
    """
    last = model.gpu_slices[-1]
    extra = len(last) - 1  # memory slots of the last compute slice beyond its first
    profiles = []
    for p in model.profiles:
        room = model.slots if p.memory_slots - p.compute >= extra else model.slots - extra
        starts = tuple(range(0, room - p.memory_slots + 1))
        kept = tuple(s for s in p.starts if s + p.memory_slots > room)  # NVIDIA's, where they use more
        placements = tuple((s, p.memory_slots) for s in sorted({*starts, *kept}))
        profiles.append(dataclasses.replace(p, placements=placements, placement_status="custom"))
    return dataclasses.replace(model, name=f"{model.name}-any-start", profiles=tuple(profiles), builtin=False)


def any_start_trace(trace: Trace) -> Trace:
    """``trace`` on the same cluster with every GPU's model replaced by :func:`any_start_model`.

    Raises
    ------
    InstanceError
        ``trace``: the cluster runs workloads (their placements belong to the real geometry).
    """
    cluster = trace.cluster
    if cluster.running:
        raise InstanceError("trace", "the cluster runs workloads: relax an empty cluster only")
    relaxed: dict[str, GpuModel] = {}
    b = InstanceBuilder(f"{cluster.name}-any-start")
    for host in cluster.hosts:
        gpus: dict[str, str | GpuModel] = {}
        for gid in host.gpus:
            model = cluster.gpu(gid).model
            gpus[gid] = relaxed.setdefault(model.name, any_start_model(model))
        b.add_host(host.id, gpus, cpu=host.cpu, ram_gb=host.ram_gb, weight=host.weight)
    names = {old: new.name for old, new in relaxed.items()}
    requests = tuple(
        r
        if r.gpu_models is None
        else dataclasses.replace(r, gpu_models=tuple(names.get(m, m) for m in r.gpu_models))
        for r in trace.requests
    )
    return dataclasses.replace(trace, name=f"{trace.name} (any start)", cluster=b.build(), requests=requests)


def _sizing(trace: Trace) -> tuple[list[tuple[GpuModel, str]], list[list[tuple[Profile, float] | None]]]:
    """The GPUs (model, id) in node and GPU order, and per request per GPU its profile and runtime."""
    gpus = [(trace.cluster.gpu(g).model, g) for h in trace.cluster.hosts for g in h.gpus]
    sizes = []
    for r in trace.requests:
        row: list[tuple[Profile, float] | None] = []
        for model, _ in gpus:
            p = trace.profile_for(r, model) if r.gpu_models is None or model.name in r.gpu_models else None
            row.append(None if p is None else (p, float(r.runtime(p, model))))
        sizes.append(row)
    return gpus, sizes


def makespan_floor(trace: Trace) -> dict[str, float]:
    """Lower bounds on the makespan of any replay of ``trace`` in which every job takes its default
    profile (the smallest that fits) on the GPUs' models.

    Returns
    -------
    dict
        ``latest_job``: the largest arrival + create + runtime + delete (the fastest GPU model a
        job may use); ``compute_area`` and ``memory_area``: the first arrival plus the compute
        slices (memory slots) x lifetime of all jobs over the cluster's; ``floor``: the largest.

    Raises
    ------
    InstanceError
        ``trace``: a request no GPU of the cluster can take.
    """
    gpus, sizes = _sizing(trace)
    if not trace.requests:
        return {"latest_job": 0.0, "compute_area": 0.0, "memory_area": 0.0, "floor": 0.0}
    overhead = trace.create_delay + trace.delete_delay
    latest = compute = memory = 0.0
    for r, row in zip(trace.requests, sizes, strict=True):
        options = [s for s in row if s is not None]
        if not options:
            raise InstanceError("trace", f"request {r.id!r} fits no GPU of the cluster")
        life = min(runtime for _, runtime in options) + overhead
        latest = max(latest, r.arrival + life)
        compute += min(p.compute * (runtime + overhead) for p, runtime in options)
        memory += min(p.memory_slots * (runtime + overhead) for p, runtime in options)
    start = min(r.arrival for r in trace.requests)
    total_compute = sum(model.compute_slices for model, _ in gpus)
    total_memory = sum(model.slots for model, _ in gpus)
    bounds = {
        "latest_job": latest,
        "compute_area": start + compute / total_compute,
        "memory_area": start + memory / total_memory,
    }
    return {**bounds, "floor": max(bounds.values())}


def capacity_replay(
    trace: Trace, queue_order: str = "fifo", window: Sequence[float] | None = None
) -> dict[str, Any]:
    """Replay ``trace`` on GPUs without geometry (compute slices and memory slots as pools) with
    MIGBench's semantics, first fit in node and GPU order.

    Parameters
    ----------
    trace
        The trace (memory-sized or profiled requests; runtimes from :meth:`Request.runtime`).
    queue_order
        ``"fifo"`` or ``"newest"``: the order each pass goes over the waiting jobs.
    window
        ``(start, end)`` of the time-weighted utilization; default ``[trace.measure_from, last arrival]``.

    Returns
    -------
    dict
        ``completed``, ``makespan``, ``throughput_per_hour`` (ms traces), ``mean_wait``, ``p50_wait``,
        ``p95_wait``, ``p99_wait``, ``gpc_utilization``, ``memory_utilization`` (time-weighted over the
        window), ``waits`` (per request, in trace order; NaN for one never placed).

    Raises
    ------
    ValueError
        ``queue_order`` not one of ``fifo``, ``newest``.
    InstanceError
        A request no GPU can ever take.
    """
    if queue_order not in QUEUE_ORDERS:
        raise ValueError(f"queue_order must be one of {', '.join(QUEUE_ORDERS)}, got {queue_order!r}")
    gpus, sizes = _sizing(trace)
    for r, row in zip(trace.requests, sizes, strict=True):
        if all(s is None for s in row):
            raise InstanceError("trace", f"request {r.id!r} fits no GPU of the cluster")
    free_c = np.array([m.compute_slices for m, _ in gpus], dtype=np.int64)
    free_m = np.array([m.slots for m, _ in gpus], dtype=np.int64)
    total_c, total_m = int(free_c.sum()), int(free_m.sum())
    requests = trace.requests
    waits = np.full(len(requests), np.nan)
    running: list[tuple[float, int, int, int]] = []  # (finish, gpu, compute, memory)
    pending: list[int] = []
    arrivals = sorted(range(len(requests)), key=lambda i: requests[i].arrival)  # stable
    last_arrival = requests[arrivals[-1]].arrival if requests else 0.0
    start, end = (
        (trace.measure_from, last_arrival) if window is None else (float(window[0]), float(window[1]))
    )
    area_c = area_m = 0.0
    now, nxt, finished = 0.0, 0, 0.0

    def integrate(until: float) -> None:
        nonlocal area_c, area_m
        overlap = max(0.0, min(until, end) - max(now, start))
        area_c += overlap * (total_c - int(free_c.sum())) / total_c
        area_m += overlap * (total_m - int(free_m.sum())) / total_m

    while nxt < len(arrivals) or pending or running:
        times = [f for f, *_ in running]
        if nxt < len(arrivals):
            times.append(requests[arrivals[nxt]].arrival)
        t = min(times)
        integrate(t)
        now = t
        for job in [j for j in running if j[0] == now]:
            running.remove(job)
            free_c[job[1]] += job[2]
            free_m[job[1]] += job[3]
        while nxt < len(arrivals) and requests[arrivals[nxt]].arrival == now:
            pending.append(arrivals[nxt])
            nxt += 1
        progress = True
        while progress:
            progress = False
            order = pending if queue_order == "fifo" else pending[::-1]
            for i in list(order):
                for k, size in enumerate(sizes[i]):
                    if size is None:
                        continue
                    p, runtime = size
                    if free_c[k] >= p.compute and free_m[k] >= p.memory_slots:
                        free_c[k] -= p.compute
                        free_m[k] -= p.memory_slots
                        begin = now + trace.create_delay
                        finish = begin + runtime + trace.delete_delay
                        running.append((finish, k, p.compute, p.memory_slots))
                        waits[i] = begin - requests[i].arrival
                        finished = max(finished, finish)
                        pending.remove(i)
                        progress = True
                        break
        if not running and nxt >= len(arrivals) and pending:
            raise InstanceError("trace", f"request {requests[pending[0]].id!r} can never be placed")
    span = end - start
    placed = waits[~np.isnan(waits)]
    return {
        "completed": int(placed.size),
        "makespan": finished,
        "throughput_per_hour": placed.size * 3_600_000.0 / finished if finished > 0 else 0.0,
        **wait_summary(placed),
        "gpc_utilization": area_c / span if span > 0 else 0.0,
        "memory_utilization": area_m / span if span > 0 else 0.0,
        "waits": waits,
    }
