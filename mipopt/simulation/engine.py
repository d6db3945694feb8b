"""Event-driven replay of a :class:`~mipopt.instance.trace.Trace` under one policy.

A :class:`Replay` holds the state in named fields and handles one event kind per method
(:meth:`Replay.on_departure`, :meth:`~Replay.on_tick`, :meth:`~Replay.on_abandonment`,
:meth:`~Replay.on_arrival`); :func:`simulate` runs one. Events are processed in time
order; at equal times departures come first, then the policy's periodic tick, then
abandonments, then arrivals in trace order. A request is decided when it arrives, or,
with ``batch_interval``, at the next multiple of the interval together with the requests
that arrived since. A request the policy cannot place is dropped (the papers'
assumption) or, with ``queue_timeout``, waits: the queue is retried in its order
(``queue_order``: ``"fifo"``, oldest first, or ``"newest"`` first) after every departure
and tick, and a request still waiting ``queue_timeout`` after its arrival is abandoned.

``queue_timeout=math.inf`` is an unbounded queue, replayed as MIGBench replays its
traces: at a time ``T`` every finish at ``T`` is released, the arrivals at ``T`` join the
queue, and passes over the queue place every request that fits (a request that does not
is skipped, later ones may go: backfill) until a pass places nothing; every event is
replayed (each request waits until it is placed and its finish is released), and the
window is not stretched.

A placed request decided at ``t`` starts at ``t + trace.create_delay`` and its instance
is released at ``start + runtime + trace.delete_delay``; the runtime is its duration, or
for a request with ``work``, ``ceil(work / compute percent)`` of the profile it got
(:meth:`~mipopt.instance.trace.Request.runtime`). Its wait is ``start - arrival``. The
trace's running workloads (a cluster's current state) are placed at time 0 and stay.

The replay covers a *window* ``[trace.measure_from, horizon]``: by default up to the
last decision (the last arrival, or its batch; plus a finite ``queue_timeout``, so that
every waiting request is placed or abandoned), as the papers' simulators stop once the
last request is decided; departures after it change nothing that is measured.
``horizon=math.inf`` replays every departure. Memory and time grow with the events, not
with the window. Time-weighted summaries are over the window; counts (accepted, waits,
makespan) over everything replayed.

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
GRMU's value, from the geometry tables), MIGBench's physical fragmentation and stranded
capacity averaged over all GPUs (:mod:`mipopt.simulation.metrics`), and, cumulative,
``creates`` and ``deletes`` of instances, migrations by kind
(``moves_intra_gpu``, ``moves_inter_gpu``, ``moves_inter_host``: every executed
relocation, parks and restores of drained workloads included) and the plans' counts
(``plans``, ``plan_rounds``, ``parking_moves``, ``disruptive_moves``). Summaries over
the window are time-weighted over these steps (resolution: the bucket).
:attr:`SimulationResult.jobs` has one row per request: arrival, decision, start, finish,
wait, profile, host, GPU and start slot.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
import time
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from mipopt.heuristics.online import Policy
from mipopt.instance import Instance, Status, Termination, Workload
from mipopt.instance.trace import Trace
from mipopt.migrate.execute import PLAN_COUNTS
from mipopt.simulation import metrics
from mipopt.state import MOVE_KINDS, Cluster
from mipopt.verifier import solution_for, verify

__all__ = [
    "JOB_COLUMNS",
    "QUEUE_ORDERS",
    "Replay",
    "ReplaySummary",
    "SimulationError",
    "SimulationResult",
    "on_grid",
    "simulate",
]

_DEPART, _TICK, _ABANDON, _DECIDE = 0, 1, 2, 3  # order of events at equal times
_EVENT_NAMES = ("departure", "tick", "abandonment", "arrival")

#: The orders a queue is retried in.
QUEUE_ORDERS = ("fifo", "newest")
#: The columns of :attr:`SimulationResult.jobs` (``--out DIR``'s ``jobs.csv``).
JOB_COLUMNS = (
    "id",
    "size",
    "arrival",
    "decision",
    "start",
    "finish",
    "wait",
    "profile",
    "host",
    "gpu",
    "start_slot",
)

_HOURS = {"ms": metrics.MS_PER_HOUR, "h": 1.0}  # time units per hour (a slot has none)


class SimulationError(RuntimeError):
    """A state broke a rule (``debug=True``): the policy or the simulator is wrong."""


@dataclass
class ReplaySummary(Mapping[str, Any]):
    """The totals of one replay, a typed record; read as a mapping in :meth:`as_dict`'s order.

    Attributes
    ----------
    horizon
        The replay's end (its last row).
    arrived, accepted, acceptance, acceptance_rate, dropped
        Requests arrived and placed, GRMU Eq. 3's weighted sum, the share placed, and those
        never placed (rejected or abandoned).
    acceptance_rate_by_profile
        Per requested size (a profile, or ``>=20gb``): the share placed (``acceptance_rate_<size>``).
    hardware_area, mean_hardware, mean_active_gpus, peak_active_gpus, mean_memory_utilization, mean_fragmentation_fbk
        Time-weighted over the window: GRMU Table 6's area, its mean, active GPUs, memory
        slots in use, FBK's F over the active GPUs; the peak of active GPUs.
    moves, plans
        Migrations by kind (``moves_<kind>``), the plans' counts.
    migrations, migrations_per_accepted
        Every executed relocation, and per placed request.
    waits
        ``waited`` (placed after a wait), ``mean_wait`` and ``p95_wait``: with a queue or batches only.
    queue
        ``abandoned`` and ``queued_at_end``: with a queue only.
    policy_stats
        The policy's :attr:`~mipopt.heuristics.online.Policy.stats` (``policy_<name>``).
    migbench
        MIGBench's metrics (:mod:`mipopt.simulation.metrics`): window, makespan, throughput,
        wait percentiles, utilizations, fragmentation, stranded capacity, request
        fragmentation, backlogged time fraction, creates and deletes.
    runtime_s
        Wall time of the replay.
    """

    horizon: float
    arrived: int
    accepted: int
    acceptance: float
    acceptance_rate: float
    dropped: int
    acceptance_rate_by_profile: dict[str, float]
    hardware_area: float
    mean_hardware: float
    mean_active_gpus: float
    peak_active_gpus: int
    mean_memory_utilization: float
    mean_fragmentation_fbk: float
    moves: dict[str, int]
    plans: dict[str, int]
    migrations: int
    migrations_per_accepted: float
    waits: dict[str, float] | None = None
    queue: dict[str, int] | None = None
    policy_stats: dict[str, Any] = field(default_factory=dict)
    migbench: dict[str, float] = field(default_factory=dict)
    runtime_s: float = 0.0

    def as_dict(self) -> dict[str, Any]:
        """The flat summary: one column each (``summary.csv``, ``--json``)."""
        return {
            "horizon": self.horizon,
            "arrived": self.arrived,
            "accepted": self.accepted,
            "acceptance": self.acceptance,
            "acceptance_rate": self.acceptance_rate,
            "dropped": self.dropped,
            **{f"acceptance_rate_{p}": v for p, v in self.acceptance_rate_by_profile.items()},
            "hardware_area": self.hardware_area,
            "mean_hardware": self.mean_hardware,
            "mean_active_gpus": self.mean_active_gpus,
            "peak_active_gpus": self.peak_active_gpus,
            "mean_memory_utilization": self.mean_memory_utilization,
            "mean_fragmentation_fbk": self.mean_fragmentation_fbk,
            **{f"moves_{k}": v for k, v in self.moves.items()},
            **self.plans,
            "migrations": self.migrations,
            "migrations_per_accepted": self.migrations_per_accepted,
            **(self.waits or {}),
            **(self.queue or {}),
            **{f"policy_{k}": v for k, v in self.policy_stats.items()},
            **self.migbench,
            "runtime_s": self.runtime_s,
        }

    def __getitem__(self, key: str) -> Any:
        return self.as_dict()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self.as_dict())

    def __len__(self) -> int:
        return len(self.as_dict())


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
        The totals (:class:`ReplaySummary`, read as a mapping).
    placed
        The placement at the window's end (workload id -> (GPU id, start)).
    jobs
        One row per request arrived (:data:`JOB_COLUMNS`; NaN and empty for one never placed).
    """

    policy: str
    trace: str
    series: pd.DataFrame
    summary: ReplaySummary
    placed: dict[str, tuple[str, int]] = field(default_factory=dict)
    jobs: pd.DataFrame = field(default_factory=lambda: pd.DataFrame(columns=list(JOB_COLUMNS)))


@dataclass
class _Job:
    """Where and when one placed request ran."""

    decision: float
    start: float
    finish: float
    profile: str
    host: str
    gpu: str
    start_slot: int


class Replay:
    """One replay of a trace under a policy (the arguments are :func:`simulate`'s).

    The state lives in named fields: the event heap, the queue, the counters, the rows of
    the series and the jobs placed; :meth:`run` pops events and hands each to its handler.
    """

    def __init__(
        self,
        trace: Trace,
        policy: Policy,
        *,
        seed: int = 0,
        bucket: float = 1.0,
        horizon: float | None = None,
        batch_interval: float | None = None,
        queue_timeout: float | None = None,
        queue_order: str = "fifo",
        debug: bool = False,
        progress: Callable[[float], None] | None = None,
    ) -> None:
        for label, value in (("bucket", bucket), ("batch_interval", batch_interval)):
            if value is not None and not 0 < value < math.inf:
                raise ValueError(f"{label} must be a positive finite number, got {value!r}")
        if queue_timeout is not None and not queue_timeout > 0:  # also rejects NaN
            raise ValueError(f"queue_timeout must be a positive number (or math.inf), got {queue_timeout!r}")
        if horizon is not None and not horizon >= 0:  # also rejects NaN
            raise ValueError(f"horizon must be a non-negative number (or math.inf), got {horizon!r}")
        if queue_order not in QUEUE_ORDERS:
            raise ValueError(f"queue_order must be one of {', '.join(QUEUE_ORDERS)}, got {queue_order!r}")
        self.trace, self.policy = trace, policy
        self.seed, self.bucket, self.batch_interval = seed, bucket, batch_interval
        self.queue_timeout, self.newest_first = queue_timeout, queue_order == "newest"
        #: MIGBench's semantics: an unbounded queue, decided once every event of an instant is in.
        self.stepwise = queue_timeout is not None and math.isinf(queue_timeout)
        self.debug, self.progress = debug, progress

        self.instance = trace.instance()
        self.cluster = Cluster(self.instance)
        self.workloads = {w.id: w for w in self.instance.workloads}
        self.requests = {r.id: r for r in trace.requests}
        self.sizes = sorted({r.size for r in trace.requests})
        gpus = self.instance.gpus
        self.slots = sum(g.model.slots for g in gpus)
        self.compute_slices = sum(g.model.compute_slices for g in gpus)
        self.host_weight = np.array([h.weight for h in self.instance.hosts])
        self.n_hosts = len(self.instance.hosts)

        last = max((self.decision_time(r.arrival) for r in trace.requests), default=0.0)
        self.last_decision = last + (0.0 if queue_timeout is None or self.stepwise else queue_timeout)
        if horizon is not None:
            self.end = self.window_end = horizon
        else:
            self.window_end = self.last_decision
            self.end = math.inf if self.stepwise else self.last_decision
        self.tick_end = min(self.end, self.last_decision) if math.isinf(self.end) else self.end

        # the state
        self.events: list[tuple[float, int, int, str]] = []
        self.seq = 0
        self.queue: list[str] = []  # waiting request ids, oldest first
        self.arrived: Counter[str] = Counter()
        self.accepted: Counter[str] = Counter()
        self.acceptance = 0.0
        self.dropped = 0
        self.abandoned = 0
        self.departed = 0
        self.seen: list[str] = []  # the requests arrived (decided at least once), in order
        self.jobs: dict[str, _Job] = {}
        self.fragmented: set[str] = set()  # requests that ever met request fragmentation
        self._holds: dict[str, bool] = {}  # request fragmentation by profile, for the state now
        self.rows: list[dict[str, Any]] = []
        self.previous: dict[str, Any] = {}
        self.k = 0  # the next sample is at k * bucket
        self.last_event = 0.0
        self.due = False  # stepwise: a pass over the queue is due at this instant

    # --- scheduling events

    def decision_time(self, arrival: float) -> float:
        """When a request arriving at ``arrival`` is decided (its batch's time)."""
        if self.batch_interval is None:
            return arrival
        return math.ceil(arrival / self.batch_interval) * self.batch_interval

    def push(self, at: float, kind: int, wid: str = "") -> None:
        """Schedule an event (left out past the replay's end)."""
        if at <= self.end:
            heapq.heappush(self.events, (at, kind, self.seq, wid))
            self.seq += 1

    # --- the loop

    def run(self) -> SimulationResult:
        """Replay every event and summarize."""
        t0 = time.perf_counter()
        self.policy.start(self.cluster, np.random.default_rng(self.seed))
        for r in self.trace.requests:
            self.push(self.decision_time(r.arrival), _DECIDE, r.id)
        if self.policy.tick:
            self.push(self.policy.tick, _TICK)
        handlers = (self.on_departure, self.on_tick, self.on_abandonment, self.on_arrival)
        while self.events:
            now, kind, _, wid = heapq.heappop(self.events)
            self.last_event = now
            if now > self.k * self.bucket:
                # Every sample time before ``now`` sees the same state: one row, then skip ahead.
                self.sample(self.k * self.bucket)
                self.k = max(self.k + 1, math.ceil(now / self.bucket))
            handlers[kind](now, wid)
            if self.debug:
                what = f"the {_EVENT_NAMES[kind]} of {wid}" if wid else "a tick"
                _check(self.instance, self.cluster, f"after {what} at {now:g}")
            if self.due and (not self.events or self.events[0][0] > now):
                self.due = False
                self.drain(now)
                if self.debug:
                    _check(self.instance, self.cluster, f"after the queue's passes at {now:g}")
        # Sample times from k * bucket on see the final state; the last row marks the replay's end.
        final_at = self.end if math.isfinite(self.end) else max(self.last_event, self.last_decision)
        if self.k * self.bucket < final_at:
            self.sample(self.k * self.bucket)
        self.rows.append({"time": final_at, **self.state()})
        if self.progress is not None:
            self.progress(1.0)
        series = pd.DataFrame(self.rows)
        summary = self.summarize(series)
        summary.runtime_s = time.perf_counter() - t0
        return SimulationResult(
            self.policy.name, self.trace.name, series, summary, dict(self.cluster.placed), self.job_table()
        )

    # --- one handler per event kind

    def on_departure(self, now: float, wid: str) -> None:
        """A placed request's instance is released."""
        self.policy.depart(self.cluster, self.workloads[wid], now)
        self.departed += 1
        self._holds.clear()
        self.retry(now)

    def on_tick(self, now: float, wid: str) -> None:
        """The policy's periodic tick; the next one is scheduled."""
        self.policy.on_tick(self.cluster, now)
        self._holds.clear()
        self.retry(now)
        tick = self.policy.tick
        if tick and now + tick <= self.tick_end:
            self.push(now + tick, _TICK)

    def on_abandonment(self, now: float, wid: str) -> None:
        """A request still waiting ``queue_timeout`` after its arrival gives up."""
        if wid in self.queue:
            self.queue.remove(wid)
            self.dropped += 1
            self.abandoned += 1

    def on_arrival(self, now: float, wid: str) -> None:
        """A request is decided (at its arrival or its batch's time); one that does not fit waits or is dropped."""
        r = self.requests[wid]
        self.arrived[r.size] += 1
        self.seen.append(wid)
        if self.stepwise:
            self.queue.append(wid)
            self.due = True
        elif not self.decide(wid, now):
            if self.queue_timeout is None:
                self.dropped += 1
            else:
                self.queue.append(wid)
                self.push(r.arrival + self.queue_timeout, _ABANDON, wid)
        if self.progress is not None and len(self.seen) % 256 == 0:
            self.progress(len(self.seen) / len(self.requests))

    # --- decisions

    def retry(self, now: float) -> None:
        """After a departure or tick: the queue once in its order (stepwise: a pass is due at this instant)."""
        if not self.queue:
            return
        if self.stepwise:
            self.due = True
            return
        for wid in self.in_order():
            if self.decide(wid, now):
                self.queue.remove(wid)

    def drain(self, now: float) -> None:
        """MIGBench's passes: place every waiting request that fits, in the queue's order, until a pass places nothing.

        Within the passes the cluster only fills (no departure comes between them), so a
        request alike to one that found no place (same size, models, cpu and ram) finds none
        either and is not asked again, until a migration changes the state.
        """
        placed = True
        failed: set[tuple[Any, ...]] = set()
        moved = self.cluster.moves.total()
        while placed and self.queue:
            placed = False
            for wid in self.in_order():
                w = self.workloads[wid]
                alike = (w.profile, w.memory_gb, w.min_compute, w.gpu_models, w.cpu, w.ram_gb)
                if self.cluster.moves.total() != moved:
                    failed.clear()
                    moved = self.cluster.moves.total()
                if alike in failed:
                    self.note_fragmentation(w)
                elif self.decide(wid, now):
                    self.queue.remove(wid)
                    placed = True
                else:
                    failed.add(alike)

    def in_order(self) -> list[str]:
        """The waiting requests in the order they are retried."""
        return self.queue[::-1] if self.newest_first else list(self.queue)

    def decide(self, wid: str, now: float) -> bool:
        """Ask the policy to place ``wid`` now; record it and schedule its finish when placed."""
        r = self.requests[wid]
        w = self.workloads[wid]
        if not self.policy.arrive(self.cluster, w, now):
            self.note_fragmentation(w)
            return False
        self._holds.clear()
        self.accepted[r.size] += 1
        self.acceptance += r.weight
        gpu_id, slot = self.cluster.placed[wid]
        gpu = self.instance.gpu(gpu_id)
        profile = self.cluster.occupied_profile(wid)
        start = now + self.trace.create_delay
        finish = start + r.runtime(profile, gpu.model) + self.trace.delete_delay
        self.jobs[wid] = _Job(now, start, finish, profile.name, gpu.host, gpu_id, slot)
        if math.isfinite(finish):
            self.push(finish, _DEPART, wid)
        return True

    def note_fragmentation(self, w: Workload) -> None:
        """Count ``w`` once if no GPU has a legal start for its profile while the cluster's summed
        free capacity holds it (MIGBench's request fragmentation)."""
        if w.id in self.fragmented:
            return
        groups = [g for g in self.cluster.groups if self.instance.profile_on(w, g.model) is not None]
        if not groups:
            return
        name = self.instance.profile_on(w, groups[0].model).name  # type: ignore[union-attr]
        if name not in self._holds:
            self._holds[name] = metrics.request_fragmented(
                [(g.model, self.cluster.mask[g.at]) for g in groups], name
            )
        if self._holds[name]:
            self.fragmented.add(w.id)

    # --- the series

    def sample(self, at: float) -> None:
        """A row at ``at`` unless the state is the previous row's."""
        row = self.state()
        if row != self.previous:
            self.rows.append({"time": at, **row})
            self.previous = row

    def state(self) -> dict[str, Any]:
        """The series' columns for the state now."""
        c = self.cluster
        active = c.active
        hosts_on = np.bincount(c.host[active], minlength=self.n_hosts)
        used_slots = 0
        for g in c.groups:
            used_slots += int((g.model.slots - g.tables.free_slots.take(c.mask[g.at])).sum())
        fbk, grmu = c.mean_fragmentation()
        physical, stranded = metrics.cluster_fragmentation(
            ((g.model, c.mask[g.at]) for g in c.groups), self.trace.profiles
        )
        n_active = int(active.sum())
        arrived, accepted = sum(self.arrived.values()), sum(self.accepted.values())
        moves = sum(c.moves.values())
        row: dict[str, Any] = {
            "arrived": arrived,
            "accepted": accepted,
            "acceptance": self.acceptance,
            "acceptance_rate": accepted / arrived if arrived else 1.0,
            "dropped": self.dropped,
            "queued": len(self.queue),
            "active_hosts": int((hosts_on > 0).sum()),
            "active_gpus": n_active,
            "hardware": float((self.host_weight * ((hosts_on > 0) + hosts_on)).sum()),
            "memory_utilization": used_slots / self.slots,
            "compute_utilization": int(c.compute.sum()) / self.compute_slices,
            "fragmentation_fbk": fbk,
            "fragmentation_grmu": grmu,
            "physical_fragmentation": physical,
            "stranded_capacity": stranded,
            "creates": accepted + moves,
            "deletes": self.departed + moves,
            **{f"moves_{k}": c.moves[k] for k in MOVE_KINDS},
            **{k: c.planned[k] for k in PLAN_COUNTS},
        }
        for p in self.sizes:
            row[f"accepted_{p}"] = self.accepted[p]
            row[f"arrived_{p}"] = self.arrived[p]
        return row

    # --- the summary and the jobs

    def summarize(self, series: pd.DataFrame) -> ReplaySummary:
        """The totals: counts from the end, time-weighted values over the window."""
        last = series.iloc[-1]
        times = series["time"].to_numpy(dtype=float)
        lo, hi = self.trace.measure_from, min(self.window_end, float(times[-1]))
        width, span = _widths(times, lo, hi)

        def mean(column: str) -> float:
            values = series[column].to_numpy(dtype=float)
            return float(values @ width / span) if span > 0 else float(values[-1])

        arrived, accepted = int(last["arrived"]), int(last["accepted"])
        moves = {k: int(last[f"moves_{k}"]) for k in MOVE_KINDS}
        total_moves = sum(moves.values())
        jobs = list(self.jobs.values())
        waits = np.array([j.start - self.requests[wid].arrival for wid, j in self.jobs.items()])
        summary = ReplaySummary(
            horizon=float(times[-1]),
            arrived=arrived,
            accepted=accepted,
            acceptance=self.acceptance,
            acceptance_rate=accepted / arrived if arrived else 1.0,
            dropped=self.dropped,
            acceptance_rate_by_profile={
                p: self.accepted[p] / self.arrived[p] for p in self.sizes if self.arrived[p]
            },
            hardware_area=float(series["hardware"].to_numpy(dtype=float) @ width),
            mean_hardware=mean("hardware"),
            mean_active_gpus=mean("active_gpus"),
            peak_active_gpus=int(
                series["active_gpus"].to_numpy()[width > 0].max(initial=last["active_gpus"])
            ),
            mean_memory_utilization=mean("memory_utilization"),
            mean_fragmentation_fbk=mean("fragmentation_fbk"),
            moves=moves,
            plans={k: int(last[k]) for k in PLAN_COUNTS},
            migrations=total_moves,
            migrations_per_accepted=total_moves / accepted if accepted else 0.0,
            policy_stats=dict(self.policy.stats),
        )
        # numpy's default interpolation, unrounded (as the replays before MIGBench's metrics).
        p50, p95, p99 = (float(v) for v in np.percentile(waits, [50, 95, 99])) if len(waits) else (0.0,) * 3
        spread = {"mean_wait": float(waits.mean()) if len(waits) else 0.0, "p50_wait": p50, "p95_wait": p95}
        spread["p99_wait"] = p99
        if self.queue_timeout is not None or self.batch_interval is not None:
            summary.waits = {
                "waited": int((waits > 0).sum()),
                "mean_wait": spread["mean_wait"],
                "p95_wait": p95,
            }
        if self.queue_timeout is not None:
            summary.queue = {"abandoned": self.abandoned, "queued_at_end": len(self.queue)}
        done = [j.finish for j in jobs if j.finish <= self.last_event]
        span_all = metrics.makespan(done)
        window = (lo, hi)
        t, q = series["time"], series["queued"]
        summary.migbench = {
            "window_start": lo,
            "window_end": hi,
            "completed": len(done),
            "makespan": span_all,
            "throughput_per_hour": (
                metrics.throughput_per_hour(len(done), span_all, _HOURS[self.trace.time_unit])
                if self.trace.time_unit in _HOURS
                else math.nan
            ),
            **spread,
            "gpc_utilization": metrics.time_weighted_mean(t, series["compute_utilization"], window),
            "memory_utilization": metrics.time_weighted_mean(t, series["memory_utilization"], window),
            "peak_gpc_utilization": metrics.peak_value(t, series["compute_utilization"], window),
            "physical_fragmentation": metrics.time_weighted_mean(t, series["physical_fragmentation"], window),
            "stranded_capacity": metrics.time_weighted_mean(t, series["stranded_capacity"], window),
            "request_fragmentation": len(self.fragmented),
            "backlogged_time_fraction": metrics.backlogged_time_fraction(t, q, window),
            "creates": int(last["creates"]),
            "deletes": int(last["deletes"]),
        }
        return summary

    def job_table(self) -> pd.DataFrame:
        """One row per request arrived, in the order they were decided (:data:`JOB_COLUMNS`)."""
        rows = []
        for wid in self.seen:
            r, j = self.requests[wid], self.jobs.get(wid)
            if j is None:
                rows.append((r.id, r.size, r.arrival, math.nan, math.nan, math.nan, math.nan, "", "", "", -1))
            else:
                wait = j.start - r.arrival
                rows.append(
                    (
                        r.id,
                        r.size,
                        r.arrival,
                        j.decision,
                        j.start,
                        j.finish,
                        wait,
                        j.profile,
                        j.host,
                        j.gpu,
                        j.start_slot,
                    )
                )
        return pd.DataFrame(rows, columns=list(JOB_COLUMNS))


def simulate(
    trace: Trace,
    policy: Policy,
    *,
    seed: int = 0,
    bucket: float = 1.0,
    horizon: float | None = None,
    batch_interval: float | None = None,
    queue_timeout: float | None = None,
    queue_order: str = "fifo",
    debug: bool = False,
    progress: Callable[[float], None] | None = None,
) -> SimulationResult:
    """Replay ``trace`` under ``policy`` (a :class:`Replay`).

    Parameters
    ----------
    seed
        Seeds the policy's random generator (policies that draw use only it).
    bucket
        Sampling step of the time series in the trace's time unit.
    horizon
        End of the window in the trace's time unit: events after it are not replayed and
        not measured. Default: the last decision (last arrival, or its batch) plus a finite
        ``queue_timeout``; ``math.inf``: every departure (periodic ticks stop at the
        default end then).
    batch_interval
        Decide arrivals at multiples of this interval instead of on arrival.
    queue_timeout
        Let rejected requests wait this long (retried after departures and ticks)
        instead of dropping them; ``math.inf``: an unbounded queue with MIGBench's
        semantics (see the module docstring).
    queue_order
        ``"fifo"`` (oldest first) or ``"newest"`` first: the order the queue is retried in.
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
    return Replay(
        trace,
        policy,
        seed=seed,
        bucket=bucket,
        horizon=horizon,
        batch_interval=batch_interval,
        queue_timeout=queue_timeout,
        queue_order=queue_order,
        debug=debug,
        progress=progress,
    ).run()


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


def _widths(times: np.ndarray, lo: float, hi: float) -> tuple[np.ndarray, float]:
    """How long each row of a step series holds inside the window ``[lo, hi]`` (the last row
    to the series' end), and the window's length; the whole series when the window holds it."""
    if lo <= times[0] and hi >= times[-1]:
        return np.diff(times, append=times[-1]), float(times[-1] - times[0])
    lo = max(lo, float(times[0]))
    ends = np.append(times[1:], times[-1])
    width = np.clip(np.minimum(ends, hi) - np.maximum(times, lo), 0.0, None)
    return width, max(0.0, min(hi, float(times[-1])) - lo)


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
