"""Event-driven replay of a :class:`~mipopt.instance.trace.Trace` under one policy.

Events are processed in time order; at equal times departures come first, then the
policy's periodic tick, then abandonments, then arrivals in trace order (FIFO). A
request is decided when it arrives, or, with ``batch_interval``, at the next multiple
of the interval together with the requests that arrived since (still FIFO). A request
the policy cannot place is dropped (the papers' assumption) or, with ``queue_timeout``,
waits: the queue is retried in FIFO order after every departure and tick, and a request
still waiting ``queue_timeout`` after its arrival is abandoned. A placed request leaves ``duration`` after it was placed. The
trace's running workloads (a cluster's current state) are placed at time 0 and stay.

The replay covers a *window* ``[0, horizon]``: by default up to the last decision (the
last arrival, or its batch; plus ``queue_timeout``, so that every waiting request is
placed or abandoned), as the papers' simulators stop once the last request is decided;
departures after it change nothing that is measured. ``horizon=math.inf``
replays every departure. Memory and time grow with the events, not with the window.

The state is a :class:`~mipopt.state.cluster.Cluster`; every migration a policy makes
goes through it and is counted by kind. GRMU's defragmentation and consolidation run
through the migration planner (:func:`mipopt.migrate.execute.execute`, create before
destroy): a plan's parking moves are migrations too, and its drains are counted as
disruptive moves. ``debug=True`` checks the state with the independent verifier after
every event (after a whole plan: the planner checks the states inside it).

The time series is a step function: a row at time ``t`` is the state after every event
at or before ``t`` and holds until the next row. The state is sampled at ``0``, at the
multiples of ``bucket`` (default one time unit: a slot or an hour) and at the window's
end, and a sample equal to the previous row (but for its time) is left out, so a quiet
stretch costs one row. Columns: arrivals, ``accepted`` (count), ``acceptance`` (the
weighted sum of GRMU Eq. 3) and ``acceptance_rate`` (accepted over arrived), overall
and per profile (cumulative); ``dropped`` (never placed: rejected, or abandoned after
waiting) and ``queued``; active hosts and GPUs, GRMU hardware (Eq. 4), memory and
compute utilization of the cluster, mean fragmentation of the active GPUs (FBK's F and
GRMU's value, from the geometry tables), and, cumulative, migrations by kind
(``moves_intra_gpu``, ``moves_inter_gpu``, ``moves_inter_host``: every executed
relocation, parks and restores of drained workloads included) and the plans' counts
(``plans``, ``plan_rounds``, ``parking_moves``, ``disruptive_moves``). Summaries over
the window are time-weighted over these steps (resolution: the bucket).
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mipopt.heuristics.online import Policy
from mipopt.instance import Instance, Status, Termination
from mipopt.instance.trace import Trace
from mipopt.migrate.execute import PLAN_COUNTS
from mipopt.state import MOVE_KINDS, Cluster
from mipopt.verifier import solution_for, verify

__all__ = ["SimulationError", "SimulationResult", "on_grid", "simulate"]

_DEPART, _TICK, _ABANDON, _DECIDE = 0, 1, 2, 3  # order of events at equal times
_EVENT_NAMES = ("departure", "tick", "abandonment", "arrival")


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
        The time series, one row per change (see the module docstring for the columns).
    summary
        Totals over the window: ``arrived``, ``accepted``, ``acceptance`` (weighted),
        ``acceptance_rate`` and ``acceptance_rate_<profile>``, ``dropped``, ``horizon``
        (the window's end); time-weighted ``hardware_area`` (GRMU Table 6), ``mean_hardware``,
        ``mean_active_gpus``, ``mean_memory_utilization``, ``mean_fragmentation_fbk``, and
        ``peak_active_gpus``; migrations (every executed relocation, parks included) by
        kind and per accepted workload, the plans' counts (plans, rounds, parking and
        disruptive moves); with a queue or batches, the waits of accepted requests
        (``mean_wait``, ``p95_wait``, ``waited``: how many waited at all) and, with a
        queue, ``abandoned`` and ``queued_at_end``; a policy's own counters (its ``stats``,
        e.g. reopt's solves and GB moved) as ``policy_<name>``; ``runtime_s``.
    placed
        The placement at the window's end (workload id -> (GPU id, start)).
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
        self.acceptance = 0.0
        self.dropped = 0
        self.abandoned = 0
        self.waits: list[float] = []
        gpus = instance.gpus
        self.slots = sum(g.model.slots for g in gpus)
        self.compute_slices = sum(g.model.compute_slices for g in gpus)
        self.host_weight = np.array([h.weight for h in instance.hosts])
        self.n_hosts = len(instance.hosts)
        self.cluster = cluster

    def sample(self, queue: int) -> dict[str, Any]:
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
        arrived, accepted = sum(self.arrived.values()), sum(self.accepted.values())
        row: dict[str, Any] = {
            "arrived": arrived,
            "accepted": accepted,
            "acceptance": self.acceptance,
            "acceptance_rate": accepted / arrived if arrived else 1.0,
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
    horizon: float | None = None,
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
        Sampling step of the time series in the trace's time unit.
    horizon
        End of the window in the trace's time unit: events after it are not replayed and
        not measured. Default: the last decision (last arrival, or its batch) plus
        ``queue_timeout``; ``math.inf``: every departure (periodic ticks stop at the
        default end then).
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
    ValueError
        Naming the parameter and the rule.
    SimulationError
        In debug mode, on the first state that breaks a rule.

    Examples
    --------
    >>> import mipopt
    >>> from mipopt.workloads import fbk_trace
    >>> trace = fbk_trace(gpus=4, seed=1)
    >>> result = mipopt.simulate(trace, mipopt.make_policy("mfi"), debug=True)
    >>> result.summary["arrived"], result.summary["accepted"], result.summary["peak_active_gpus"]
    (9, 8, 4)
    """
    for label, value in (
        ("bucket", bucket),
        ("batch_interval", batch_interval),
        ("queue_timeout", queue_timeout),
    ):
        if value is not None and not 0 < value < math.inf:
            raise ValueError(f"{label} must be a positive finite number, got {value!r}")
    if horizon is not None and not horizon >= 0:  # also rejects NaN
        raise ValueError(f"horizon must be a non-negative number (or math.inf), got {horizon!r}")
    t0 = time.perf_counter()
    instance = trace.instance()
    cluster = Cluster(instance)
    policy.start(cluster, np.random.default_rng(seed))
    state = _State(trace, instance, cluster)
    workloads = {w.id: w for w in instance.workloads}
    requests = {r.id: r for r in trace.requests}

    def decision_time(arrival: float) -> float:
        return arrival if batch_interval is None else math.ceil(arrival / batch_interval) * batch_interval

    last_decision = max((decision_time(r.arrival) for r in trace.requests), default=0.0)
    last_decision += queue_timeout or 0.0
    end = last_decision if horizon is None else horizon
    tick_end = min(end, last_decision) if math.isinf(end) else end

    events: list[tuple[float, int, int, str]] = []
    seq = 0

    def push(at: float, kind: int, wid: str = "") -> None:
        nonlocal seq
        if at <= end:
            heapq.heappush(events, (at, kind, seq, wid))
            seq += 1

    for r in trace.requests:
        push(decision_time(r.arrival), _DECIDE, r.id)
    tick = policy.tick
    if tick:
        push(tick, _TICK)

    queue: list[str] = []  # FIFO of waiting request ids
    rows: list[dict[str, Any]] = []
    previous: dict[str, Any] = {}
    k = 0  # the next sample is at k * bucket
    handled = 0
    last_event = 0.0

    def sample(at: float) -> None:
        nonlocal previous
        row = state.sample(len(queue))
        if row != previous:
            rows.append({"time": at, **row})
            previous = row

    def decide(wid: str, now: float) -> bool:
        r = requests[wid]
        if policy.arrive(cluster, workloads[wid], now):
            state.accepted[r.profile] += 1
            state.acceptance += r.weight
            state.waits.append(now - r.arrival)
            if math.isfinite(r.departure):
                push(now + r.duration, _DEPART, wid)
            return True
        return False

    def retry(now: float) -> None:
        for wid in list(queue):
            if decide(wid, now):
                queue.remove(wid)

    while events:
        now, kind, _, wid = heapq.heappop(events)
        last_event = now
        if now > k * bucket:
            # Every sample time before ``now`` sees the same state: one row, then skip ahead.
            sample(k * bucket)
            k = max(k + 1, math.ceil(now / bucket))
        if kind == _DEPART:
            policy.depart(cluster, workloads[wid], now)
            if queue:
                retry(now)
        elif kind == _TICK:
            policy.on_tick(cluster, now)
            if queue:
                retry(now)
            if tick and now + tick <= tick_end:
                push(now + tick, _TICK)
        elif kind == _ABANDON:
            if wid in queue:
                queue.remove(wid)
                state.dropped += 1
                state.abandoned += 1
        else:
            r = requests[wid]
            state.arrived[r.profile] += 1
            handled += 1
            if not decide(wid, now):
                if queue_timeout is None:
                    state.dropped += 1
                else:
                    queue.append(wid)
                    push(r.arrival + queue_timeout, _ABANDON, wid)
            if progress is not None and handled % 256 == 0:
                progress(handled / len(requests))
        if debug:
            what = f"the {_EVENT_NAMES[kind]} of {wid}" if wid else "a tick"
            _check(instance, cluster, f"after {what} at {now:g}")
    # Sample times from k * bucket on see the final state; the last row marks the window's end.
    final_at = end if math.isfinite(end) else max(last_event, last_decision)
    if k * bucket < final_at:
        sample(k * bucket)
    rows.append({"time": final_at, **state.sample(len(queue))})
    if progress is not None:
        progress(1.0)

    series = pd.DataFrame(rows)
    summary = _summary(series, state, time.perf_counter() - t0)
    if queue_timeout is not None or batch_interval is not None:
        waits = np.asarray(state.waits)
        summary["waited"] = int((waits > 0).sum())
        summary["mean_wait"] = float(waits.mean()) if len(waits) else 0.0
        summary["p95_wait"] = float(np.percentile(waits, 95)) if len(waits) else 0.0
    if queue_timeout is not None:
        summary["abandoned"] = state.abandoned
        summary["queued_at_end"] = len(queue)
    # A policy that keeps counters of its own (reopt's solves, moves, GB moved) reports them here.
    summary.update({f"policy_{k}": v for k, v in getattr(policy, "stats", {}).items()})
    summary["runtime_s"] = summary.pop("runtime_s")
    return SimulationResult(policy.name, trace.name, series, summary, dict(cluster.placed))


def on_grid(series: pd.DataFrame, times: Sequence[float] | np.ndarray) -> pd.DataFrame:
    """One replay's series read at ``times``: each the last row at or before it (a step function).

    Examples
    --------
    >>> import pandas as pd
    >>> s = pd.DataFrame({"time": [0.0, 2.5, 4.0], "active_gpus": [1, 3, 2]})
    >>> on_grid(s, [0, 1, 2, 3, 4])["active_gpus"].tolist()
    [1, 1, 1, 3, 2]
    """
    at = np.asarray(times, dtype=float)
    index = np.searchsorted(series["time"].to_numpy(), at, side="right") - 1
    out = series.iloc[np.maximum(index, 0)].reset_index(drop=True)
    return out.assign(time=at)


def _summary(series: pd.DataFrame, state: _State, runtime_s: float) -> dict[str, Any]:
    last = series.iloc[-1]
    times = series["time"].to_numpy(dtype=float)
    span = float(times[-1] - times[0])
    width = np.diff(times, append=times[-1])

    def mean(column: str) -> float:
        values = series[column].to_numpy(dtype=float)
        return float(values @ width / span) if span > 0 else float(values[-1])

    arrived, accepted = int(last["arrived"]), int(last["accepted"])
    moves = {f"moves_{k}": int(last[f"moves_{k}"]) for k in MOVE_KINDS}
    total_moves = sum(moves.values())
    return {
        "horizon": float(times[-1]),
        "arrived": arrived,
        "accepted": accepted,
        "acceptance": state.acceptance,
        "acceptance_rate": accepted / arrived if arrived else 1.0,
        "dropped": state.dropped,
        **{
            f"acceptance_rate_{p}": state.accepted[p] / state.arrived[p]
            for p in state.profiles
            if state.arrived[p]
        },
        "hardware_area": float(series["hardware"].to_numpy(dtype=float) @ width),
        "mean_hardware": mean("hardware"),
        "mean_active_gpus": mean("active_gpus"),
        "peak_active_gpus": int(series["active_gpus"].max()),
        "mean_memory_utilization": mean("memory_utilization"),
        "mean_fragmentation_fbk": mean("fragmentation_fbk"),
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
