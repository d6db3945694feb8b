"""An instance from a trace by replay: the Alibaba cluster at one moment, as a first-fit scheduler leaves it.

:func:`alibaba_snapshot` replays the mapped Alibaba GPU trace 2023
(:func:`mipopt.workloads.alibaba_trace`) in the simulator up to one moment and turns the
state there, with the requests of the next hours, into an exact-model instance. It needs
the simulator and a policy, so it sits in the simulation layer, above the workloads it
reads.
"""

from __future__ import annotations

import math
from dataclasses import replace
from pathlib import Path

from mipopt.heuristics.policies import make_policy
from mipopt.instance import Instance, InstanceBuilder
from mipopt.instance.trace import Trace
from mipopt.simulation.engine import simulate
from mipopt.workloads.alibaba import alibaba_peak, alibaba_trace

__all__ = ["alibaba_snapshot"]


def alibaba_snapshot(
    path: str | Path,
    *,
    at: float | None = None,
    window_h: float = 24.0,
    gpus_per_host: int | None = None,
    duration_scale: float = 1.0,
    seed: int = 0,
) -> Instance:
    """The mapped Alibaba cluster at one moment: what runs there then, and the next requests, as an instance.

    Built from :func:`alibaba_trace` (the GRMU mapping of the module docstring: 1,213
    hosts, 6,212 A100-40GB GPUs, 8,063 requests with the defaults), in four steps:

    1. **The moment** ``t``, in hours from the first kept arrival (the trace's time axis):
       ``at`` when given, else the trace's peak, the moment the most requests are alive
       (:func:`alibaba_peak`: ``arrival <= t < departure``, counted whether or not a
       policy accepts them; the earliest such moment on ties).
    2. **The replay.** The requests that arrived by ``t`` are replayed from the trace's
       start with :func:`mipopt.simulation.simulate` under GRMU's first fit (``ff``: hosts
       and GPUs in order, the driver's default start), departures included, so the
       cluster state at ``t`` is the one a first-fit scheduler would have built. A
       request still alive at ``t`` (``departure > t``) never departs in the replay, so
       the replay's final placement is the state at ``t``. A request the replay rejects
       was dropped when it arrived (the papers' assumption) and is not in the instance.
    3. **Running workloads**: the requests alive at ``t`` that the replay placed, at their
       GPU and start there, movable (not pinned), with the pod's cpu and ram; hosts keep
       the node's cpu and ram (the trace's, so they bind only where the trace's pods do).
    4. **New workloads**: the requests arriving after ``t`` and no later than
       ``t + window_h`` hours, in arrival order. The default 24 h gives a few hundred on
       the real trace (239 at its peak, beside 45 running workloads).

    Every workload has acceptance weight a_i = 1 (one request, one unit, as the GRMU
    paper's acceptance rate counts) and migration weight delta_i = 1. Workload ids are
    the pods' names, host and GPU ids those of :func:`alibaba_trace`.

    Parameters
    ----------
    path
        Directory holding ``openb_node_list_gpu_node.csv`` and ``openb_pod_list_default.csv``.
    at
        The moment in hours from the first kept arrival; None: the peak.
    window_h
        Hours after ``t`` whose arrivals become new workloads, non-negative.
    gpus_per_host
        At most this many GPUs per host (as :func:`alibaba_trace`); None keeps every GPU.
    duration_scale
        Factor multiplying the pods' lifetimes (as :func:`alibaba_trace`); the raw
        timestamps (1) load the cluster lightly, GRMU Fig. 10's load is 20,000 with
        ``gpus_per_host=1``.
    seed
        Seeds the replay's policy generator (first fit draws nothing) and
        :func:`alibaba_trace`'s (which draws nothing with all hosts kept): the snapshot is
        a function of the trace and the other arguments.

    Returns
    -------
    Instance
        Named ``alibaba-snapshot-{t:.2f}h``; its description gives ``t``, the requests
        alive and placed, and the window.

    Raises
    ------
    InstanceError
        As :func:`alibaba_trace`, on missing or bad files.
    ValueError
        For a bad ``at`` or ``window_h`` (or a bad load control).
    """
    if at is not None and not math.isfinite(at):
        raise ValueError(f"at must be a finite time in hours or None, got {at!r}")
    if not 0 <= window_h < math.inf:
        raise ValueError(f"window_h must be a non-negative finite number of hours, got {window_h!r}")
    trace = alibaba_trace(path, gpus_per_host=gpus_per_host, duration_scale=duration_scale, seed=seed)
    t, _ = alibaba_peak(trace) if at is None else (float(at), 0)
    arrived = [r for r in trace.requests if r.arrival <= t]
    alive = [r for r in arrived if r.departure > t]
    replay = Trace(
        name=f"{trace.name}-until-{t:g}h",
        cluster=trace.cluster,
        requests=tuple(r if r.departure <= t else replace(r, departure=math.inf) for r in arrived),
        time_unit=trace.time_unit,
        meta=trace.meta,
    )
    placed = simulate(replay, make_policy("ff"), seed=seed, horizon=max(t, 0.0)).placed
    running = [r for r in alive if r.id in placed]
    new = [r for r in trace.requests if t < r.arrival <= t + window_h]

    b = InstanceBuilder(f"alibaba-snapshot-{t:.2f}h")
    b.description = (
        f"Alibaba GPU trace 2023 (GRMU mapping) at t = {t:g} h"
        + (" (the peak of requests alive)" if at is None else "")
        + f": {len(alive)} requests alive, {len(running)} of them placed by a first-fit replay and "
        f"running (movable); {len(new)} new requests arriving in the next {window_h:g} h"
        + (f"; lifetimes x{duration_scale:g}" if duration_scale != 1 else "")
    )
    cluster = trace.cluster
    for h in cluster.hosts:
        b.add_host(h.id, {g: cluster.gpu(g).model.name for g in h.gpus}, cpu=h.cpu, ram_gb=h.ram_gb)
    for r in running:
        b.add_workload(r.id, r.profile, placement=placed[r.id], cpu=r.cpu, ram_gb=r.ram_gb)
    for r in new:
        b.add_workload(r.id, r.profile, cpu=r.cpu, ram_gb=r.ram_gb)
    return b.build()
