"""What the simulator replays: a cluster and a stream of requests with arrival and departure times.

Workload generators (:mod:`mipopt.workloads`: ``fbk``, ``poisson``, ``alibaba``) produce a
:class:`Trace`; :func:`mipopt.simulation.simulate` replays it under a policy. Times are in
the trace's own unit (``time_unit``: ``"slot"`` for the FBK set-up, ``"h"`` for the
Alibaba trace and Poisson streams, ``"ms"`` for MIGBench's traces). A trace may start
from a cluster's current state: the running workloads of its ``cluster`` are placed at
time 0 and stay.

A request names its profile, or gives the memory it needs (``memory_gb``, optionally
``min_compute`` compute slices) and the policy picks the profile (the smallest that fits by
default); a trace's ``profiles`` restricts the profiles memory-sized requests may get, each
then taking the smallest of them that fits (MIGBench's rule: it waits rather than take a
larger one). A request lasts ``departure - arrival``, or, with ``work`` (compute-core time,
MIGBench's ``computeCoreMS``), ``ceil(work / compute percent)`` of the profile it gets
(:func:`compute_percent`). A trace's ``create_delay`` and ``delete_delay`` hold an instance
from the decision to the finish: a request decided at ``t`` starts at ``t + create_delay``
and its instance is freed at ``start + runtime + delete_delay``.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from mipopt.catalog import GpuModel, Profile
from mipopt.errors import InstanceError
from mipopt.instance.types import Instance, Workload, fitting_profiles

__all__ = ["MIGBENCH_COMPUTE_PERCENT", "Request", "Trace", "compute_percent"]

#: MIGBench's compute percent of an H100 profile by its compute slices (its ``H100Profiles``).
MIGBENCH_COMPUTE_PERCENT = {1: 14, 2: 28, 3: 42, 4: 57, 7: 100}


def compute_percent(profile: Profile, model: GpuModel) -> int:
    """The share of ``model``'s compute that ``profile`` has, in percent, as MIGBench counts it.

    MIGBench's table on GPUs of 7 compute slices; elsewhere the share rounded down.

    >>> from mipopt.catalog import get_model
    >>> h100 = get_model("H100-80GB")
    >>> [compute_percent(h100.find(n), h100) for n in ("1g.10gb", "3g.40gb", "4g.40gb", "7g.80gb")]
    [14, 42, 57, 100]
    """
    if model.compute_slices == 7 and profile.compute in MIGBENCH_COMPUTE_PERCENT:
        return MIGBENCH_COMPUTE_PERCENT[profile.compute]
    return max(1, 100 * profile.compute // model.compute_slices)


@dataclass(frozen=True, slots=True)
class Request:
    """One workload request: it arrives at ``arrival`` and, when placed, leaves at ``departure``.

    ``departure`` is ``math.inf`` for a workload that never leaves. ``profile`` is a
    profile name of the trace's GPU model(s), resolved per model (``1g.10gb`` is two
    memory slots on an A100-40GB, one on an H100-80GB); or ``profile`` is None and
    ``memory_gb`` (with ``min_compute`` compute slices) sizes the request, as
    :class:`~mipopt.instance.Workload` does. ``gpu_models`` restricts the models it may run
    on. ``work`` (compute-core time units, MIGBench's ``computeCoreMS``) makes the runtime
    depend on the profile the request gets (:meth:`runtime`); such a request has no
    ``departure`` of its own.
    """

    id: str
    profile: str | None
    arrival: float
    departure: float = math.inf
    cpu: float = 0.0
    ram_gb: float = 0.0
    weight: float = 1.0
    gpu_models: tuple[str, ...] | None = None
    memory_gb: float | None = None
    min_compute: int | None = None
    work: float | None = None

    @property
    def duration(self) -> float:
        return self.departure - self.arrival

    @property
    def size(self) -> str:
        """What the request asks for: its profile, or ``>=20gb`` (``>=20gb,2g``)."""
        if self.profile is not None:
            return self.profile
        extra = "" if self.min_compute is None else f",{self.min_compute}g"
        return f">={self.memory_gb:g}gb{extra}"

    def runtime(self, profile: Profile, model: GpuModel) -> float:
        """How long the request runs at ``profile`` on ``model``: its duration, or
        ``ceil(work / compute percent)`` (MIGBench's rule, :func:`compute_percent`).

        >>> from mipopt.catalog import get_model
        >>> h100 = get_model("H100-80GB")
        >>> Request("j", None, 0.0, memory_gb=20, work=1000).runtime(h100.find("2g.20gb"), h100)
        36
        """
        if self.work is None:
            return self.duration
        return math.ceil(self.work / compute_percent(profile, model))


@dataclass(frozen=True, slots=True)
class Trace:
    """A cluster and its requests, sorted by arrival then id order.

    Attributes
    ----------
    name
        Shown in reports.
    cluster
        The hosts and GPUs, and the running workloads at time 0 (they never leave); its
        new workloads are not requests of the trace (a source may turn them into some).
    requests
        The requests in arrival order (ties keep their order).
    time_unit
        ``"slot"``, ``"h"`` or ``"ms"``: the unit of arrival and departure times and of the time series.
    meta
        What the generator did (parameters, counts), for reports.
    profiles
        The profiles memory-sized requests may get (None: every profile of the catalog);
        each takes the smallest of them that fits (:meth:`profile_for`).
    create_delay, delete_delay
        Time from a decision to the request's start, and from its end to its instance's
        release (MIGBench's ``createMS`` and ``deleteMS``).
    measure_from
        Start of the window the summaries are time-weighted over (MIGBench's 30,000 ms).
    """

    name: str
    cluster: Instance
    requests: tuple[Request, ...]
    time_unit: str = "slot"
    meta: dict[str, Any] = field(default_factory=dict)
    profiles: tuple[str, ...] | None = None
    create_delay: float = 0.0
    delete_delay: float = 0.0
    measure_from: float = 0.0

    def __post_init__(self) -> None:
        models = {self.cluster.gpu(g).model for h in self.cluster.hosts for g in h.gpus}
        names = ", ".join(sorted(m.name for m in models))
        for label, value in (
            ("create_delay", self.create_delay),
            ("delete_delay", self.delete_delay),
            ("measure_from", self.measure_from),
        ):
            if not 0 <= value < math.inf:
                raise InstanceError(label, f"must be a non-negative finite number, got {value!r}")
        for i, name in enumerate(self.profiles or ()):
            if all(m.find(name) is None for m in models):
                raise InstanceError(f"profiles[{i}]", f"{name!r} is not a profile of {names}")
        known: dict[str, bool] = {}  # request size -> some model of the cluster takes it
        seen: set[str] = {w.id for w in self.cluster.running}
        for i, r in enumerate(self.requests):
            if (r.profile is None) == (r.memory_gb is None):
                raise InstanceError(f"requests[{i}]", "give exactly one of profile and memory_gb")
            if r.size not in known:
                known[r.size] = any(self._fitting(r, m) for m in models)
            if not known[r.size]:
                what = "profile" if r.profile is not None else "memory_gb"
                rule = "is not a profile of" if r.profile is not None else "fits no profile of"
                subset = "" if r.profile is not None or self.profiles is None else " (in profiles)"
                raise InstanceError(f"requests[{i}].{what}", f"{r.size!r} {rule} {names}{subset}")
            if r.work is not None and not (0 < r.work < math.inf and math.isinf(r.departure)):
                raise InstanceError(
                    f"requests[{i}].work", f"must be positive and finite, without a departure, got {r.work!r}"
                )
            if r.id in seen:
                raise InstanceError(
                    f"requests[{i}].id", f"duplicate id {r.id!r} (of a request or a running workload)"
                )
            seen.add(r.id)
            if not r.departure > r.arrival:
                raise InstanceError(
                    f"requests[{i}].departure", f"{r.departure} is not after arrival {r.arrival}"
                )
            if i and r.arrival < self.requests[i - 1].arrival:
                raise InstanceError(f"requests[{i}].arrival", "requests must be sorted by arrival")

    def _fitting(self, r: Request, model: GpuModel) -> tuple[Profile, ...]:
        """The profiles ``r`` may get on ``model``, smallest first (its own, or those of ``profiles`` that fit)."""
        if r.gpu_models is not None and model.name not in r.gpu_models:
            return ()
        if r.profile is not None:
            own = model.find(r.profile)
            return () if own is None else (own,)
        fit = fitting_profiles(model, r.memory_gb or 0.0, r.min_compute)
        return fit if self.profiles is None else tuple(p for p in fit if p.name in self.profiles)

    def profile_for(self, r: Request, model: GpuModel) -> Profile | None:
        """The profile ``r`` takes on ``model`` by default: its own, or the smallest that fits
        (of ``profiles`` when the trace restricts them), None where it cannot run."""
        fit = self._fitting(r, model)
        return fit[0] if fit else None

    def instance(self) -> Instance:
        """The cluster's running workloads and every request as a new workload: what policies and
        the verifier see.

        With ``profiles``, a memory-sized request becomes a workload of the profile it takes
        (:meth:`profile_for`, the same name on every model it may run on), so that no policy
        gives it another.
        """
        models = {self.cluster.gpu(g).model for h in self.cluster.hosts for g in h.gpus}
        requests = tuple(self._workload(i, r, models) for i, r in enumerate(self.requests))
        return dataclasses.replace(self.cluster, name=self.name, workloads=self.cluster.running + requests)

    def _workload(self, i: int, r: Request, models: set[GpuModel]) -> Workload:
        profile: str | None = r.profile
        if profile is None and self.profiles is not None:
            taken = {p.name for m in models if (p := self.profile_for(r, m)) is not None}
            if len(taken) > 1:
                raise InstanceError(
                    f"requests[{i}].memory_gb",
                    f"takes different profiles on the cluster's models ({', '.join(sorted(taken))}): "
                    "a profile subset needs one",
                )
            profile = taken.pop()
        memory = r.memory_gb if profile is None else None
        minimum = r.min_compute if profile is None else None
        return Workload(
            r.id,
            profile,
            r.cpu,
            r.ram_gb,
            r.weight,
            gpu_models=r.gpu_models,
            memory_gb=memory,
            min_compute=minimum,
        )
