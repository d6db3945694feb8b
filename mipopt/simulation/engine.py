"""Event-driven replay of a :class:`~mipopt.workloads.trace.Trace` under one policy.

Events are processed in time order; at equal times departures come first, then the
policy's periodic tick, then arrivals in trace order (FIFO). A request is decided when
it arrives, or, with ``batch_interval``, at the next multiple of the interval together
with the requests that arrived since (still FIFO). A request the policy cannot place is
dropped (the papers' assumption) or, with ``queue_timeout``, waits: the queue is retried
in FIFO order after every departure and tick, and a request that waited longer than the
timeout is dropped. A placed request leaves ``duration`` after it was placed.

The state is a :class:`~mipopt.state.cluster.Cluster`; every migration a policy makes
goes through it and is counted by kind. GRMU's defragmentation and consolidation run
through the migration planner (:func:`mipopt.migrate.execute.execute`, create before
destroy): a plan's parking moves
are migrations too, and its drains are counted as disruptive moves. ``debug=True``
checks the state with the independent verifier after every event (after a whole plan:
the planner checks the states inside it).

The time series has one row per ``bucket`` (default one time unit: a slot or an hour),
sampled at the bucket's end (before the events of that instant): arrivals and
acceptances (overall and per profile, cumulative), active hosts and GPUs, GRMU hardware
(Eq. 4), memory and compute utilization of the cluster, mean fragmentation of the active
GPUs (FBK's F and GRMU's value, from the geometry tables), queue length, and, cumulative,
migrations by kind (``moves_intra_gpu``, ``moves_inter_gpu``, ``moves_inter_host``: every
executed relocation, parks and restores of drained workloads included) and the plans'
counts (``plans``, ``plan_rounds``, ``parking_moves``, ``disruptive_moves``).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mipopt.heuristics.policy import Policy
from mipopt.instance import Instance, Status, Termination
from mipopt.migrate.execute import PLAN_COUNTS
from mipopt.state import MOVE_KINDS, Cluster
from mipopt.verifier import solution_for, verify
from mipopt.workloads.trace import Trace

__all__ = ["SimulationError", "SimulationResult", "simulate"]

_DEPART, _TICK, _DECIDE = 0, 1, 2  # order of events at equal times


class SimulationError(RuntimeError):
    """A state broke a rule (``debug=True``): the policy or the simulator is wrong."""


@dataclass
class SimulationResult:
    """What one replay produced.

    Attributes
    ----------
    policy, trace
        Names.
    series
        One row per bucket (see the module docstring for the columns).
    summary
        Totals: arrivals, accepted, acceptance rate, per-profile acceptance, hardware
        area (sum of hardware x bucket width, GRMU Table 6), mean active GPUs,
        migrations (every executed relocation, parks included) by kind and per
        accepted workload, the plans' counts (plans, rounds, parking and disruptive
        moves), runtime.
    placed
        The final placement (workload id -> (GPU id, start)).
    """

    policy: str
    trace: str
    series: pd.DataFrame
    summary: dict[str, Any]
    placed: dict[str, tuple[str, int]] = field(default_factory=dict)


class _State:
    """Counters the series samples, and the cluster's totals it needs."""

    def __init__(self, trace: Trace, instance: Instance, cluster: Cluster) -> None:
        self.profiles = sorted({r.profile for r in trace.requests})
        self.arrived: Counter[str] = Counter()
        self.accepted: Counter[str] = Counter()
        self.dropped = 0
        gpus = instance.gpus
        self.slots = sum(g.model.slots for g in gpus)
        self.compute_slices = sum(g.model.compute_slices for g in gpus)
        self.host_weight = np.array([h.weight for h in instance.hosts])
        self.n_hosts = len(instance.hosts)
        self.cluster = cluster

    def sample(self, now: float, queue: int) -> dict[str, Any]:
        c = self.cluster
        active = c.active
        hosts_on = np.bincount(c.host[active], minlength=self.n_hosts)
        used_slots = 0
        fbk = grmu = 0.0
        for g in c.groups:
            masks = c.mask[g.at]
            used_slots += int((g.model.slots - g.tables.free_slots.take(masks)).sum())
            busy = masks[masks != 0]
            fbk += float(g.tables.fbk.take(busy).sum())
            grmu += float(g.tables.grmu.take(busy).sum())
        n_active = int(active.sum())
        row: dict[str, Any] = {
            "time": now,
            "arrived": sum(self.arrived.values()),
            "accepted": sum(self.accepted.values()),
            "dropped": self.dropped,
            "queued": queue,
            "active_hosts": int((hosts_on > 0).sum()),
            "active_gpus": n_active,
            "hardware": float((self.host_weight * ((hosts_on > 0) + hosts_on)).sum()),
            "memory_utilization": used_slots / self.slots,
            "compute_utilization": int(c.compute.sum()) / self.compute_slices,
            "fragmentation_fbk": fbk / n_active if n_active else 0.0,
            "fragmentation_grmu": grmu / n_active if n_active else 0.0,
            **{f"moves_{k}": c.moves[k] for k in MOVE_KINDS},
            **{k: c.planned[k] for k in PLAN_COUNTS},
        }
        row["acceptance"] = row["accepted"] / row["arrived"] if row["arrived"] else 1.0
        for p in self.profiles:
            row[f"accepted_{p}"] = self.accepted[p]
            row[f"arrived_{p}"] = self.arrived[p]
        return row


def simulate(
    trace: Trace,
    policy: Policy,
    *,
    seed: int = 0,
    bucket: float = 1.0,
    batch_interval: float | None = None,
    queue_timeout: float | None = None,
    debug: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SimulationResult:
    """Replay ``trace`` under ``policy``.

    Parameters
    ----------
    seed
        Seeds the policy's random generator (policies that draw use only it).
    bucket
        Width of a time-series row in the trace's time unit.
    batch_interval
        Decide arrivals at multiples of this interval instead of on arrival.
    queue_timeout
        Let rejected requests wait this long (retried after departures and ticks)
        instead of dropping them.
    debug
        Verify the whole state after every event (slow; for tests and small runs).
    progress
        Called with the fraction of requests handled, now and then.

    Raises
    ------
    SimulationError
        In debug mode, on the first state that breaks a rule.

    Examples
    --------
    >>> import mipopt
    >>> from mipopt.workloads import fbk_trace
    >>> trace = fbk_trace(gpus=4, seed=1)
    >>> result = mipopt.simulate(trace, mipopt.make_policy("mfi"), debug=True)
    >>> result.summary["arrived"], result.summary["accepted"], result.summary["peak_active_gpus"]
    (9, 9, 4)
    """
    if bucket <= 0:
        raise ValueError(f"bucket must be positive, got {bucket}")
    t0 = time.perf_counter()
    instance = trace.instance()
    cluster = Cluster(instance)
    policy.start(cluster, np.random.default_rng(seed))
    state = _State(trace, instance, cluster)
    workloads = {w.id: w for w in instance.workloads}
    requests = {r.id: r for r in trace.requests}

    events: list[tuple[float, int, int, str]] = []
    seq = 0

    def push(at: float, kind: int, wid: str = "") -> None:
        nonlocal seq
        heapq.heappush(events, (at, kind, seq, wid))
        seq += 1

    for r in trace.requests:
        at = r.arrival if batch_interval is None else math.ceil(r.arrival / batch_interval) * batch_interval
        push(at, _DECIDE, r.id)
    end = max((r.arrival for r in trace.requests), default=0.0)
    if policy.tick:
        for k in range(1, int(end // policy.tick) + 1):
            push(k * policy.tick, _TICK)

    queue: list[str] = []  # FIFO of waiting request ids
    rows: list[dict[str, Any]] = []
    next_sample = bucket
    handled = 0

    def decide(wid: str, now: float) -> bool:
        r = requests[wid]
        if policy.arrive(cluster, workloads[wid], now):
            state.accepted[r.profile] += 1
            if math.isfinite(r.departure):
                push(now + r.duration, _DEPART, wid)
            return True
        return False

    def retry(now: float) -> None:
        for wid in list(queue):
            if now - requests[wid].arrival > queue_timeout:  # type: ignore[operator]
                queue.remove(wid)
                state.dropped += 1
            elif decide(wid, now):
                queue.remove(wid)

    while events:
        now, kind, _, wid = heapq.heappop(events)
        if now >= next_sample:
            # Buckets without events between them all sample the same state.
            row = state.sample(next_sample, len(queue))
            while now >= next_sample:
                rows.append({**row, "time": next_sample})
                next_sample += bucket
        if kind == _DEPART:
            policy.depart(cluster, workloads[wid], now)
            if queue:
                retry(now)
        elif kind == _TICK:
            policy.on_tick(cluster, now)
            if queue:
                retry(now)
        else:
            r = requests[wid]
            state.arrived[r.profile] += 1
            handled += 1
            if not decide(wid, now):
                if queue_timeout is None:
                    state.dropped += 1
                else:
                    queue.append(wid)
            if progress is not None and handled % 256 == 0:
                progress(handled / len(requests))
        if debug:
            _check(instance, cluster, f"after event {kind} of {wid or 'tick'} at {now:g}")
    rows.append(state.sample(next_sample, len(queue)))
    if progress is not None:
        progress(1.0)

    series = pd.DataFrame(rows)
    return SimulationResult(
        policy.name,
        trace.name,
        series,
        _summary(series, state, bucket, time.perf_counter() - t0),
        dict(cluster.placed),
    )


def _summary(series: pd.DataFrame, state: _State, bucket: float, runtime_s: float) -> dict[str, Any]:
    last = series.iloc[-1]
    arrived, accepted = int(last["arrived"]), int(last["accepted"])
    moves = {f"moves_{k}": int(last[f"moves_{k}"]) for k in MOVE_KINDS}
    total_moves = sum(moves.values())
    return {
        "arrived": arrived,
        "accepted": accepted,
        "acceptance": accepted / arrived if arrived else 1.0,
        "dropped": state.dropped,
        **{
            f"acceptance_{p}": state.accepted[p] / state.arrived[p]
            for p in state.profiles
            if state.arrived[p]
        },
        "hardware_area": float(series["hardware"].sum() * bucket),
        "mean_active_gpus": float(series["active_gpus"].mean()),
        "peak_active_gpus": int(series["active_gpus"].max()),
        "mean_memory_utilization": float(series["memory_utilization"].mean()),
        "mean_fragmentation_fbk": float(series["fragmentation_fbk"].mean()),
        **moves,
        **{k: int(last[k]) for k in PLAN_COUNTS},
        "migrations": total_moves,
        "migrations_per_accepted": total_moves / accepted if accepted else 0.0,
        "runtime_s": runtime_s,
    }


def _check(instance: Instance, cluster: Cluster, where: str) -> None:
    """Verify the cluster's state; a borrowed instance is checked at the profile it occupies."""
    borrowed = {
        wid: w for wid in cluster.placed if (w := cluster.as_placed(wid)) is not instance.workload(wid)
    }
    if borrowed:
        instance = dataclasses.replace(
            instance, workloads=tuple(borrowed.get(w.id, w) for w in instance.workloads)
        )
    report = verify(
        instance,
        solution_for(
            instance,
            cluster.placed,
            method="state",
            termination=Termination.COMPLETED,
            status=Status.FEASIBLE,
        ),
    )
    if not report.valid:
        raise SimulationError(f"{where}: {report.violations[0]}")
