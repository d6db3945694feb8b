"""What the simulator replays: a cluster and a stream of requests with arrival and departure times.

Workload generators (:mod:`mipopt.workloads`: ``fbk``, ``poisson``, ``alibaba``) produce a
:class:`Trace`; :func:`mipopt.simulation.simulate` replays it under a policy. Times are in
the trace's own unit (``time_unit``: ``"slot"`` for the FBK set-up, ``"h"`` for the
Alibaba trace and Poisson streams).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder

__all__ = ["Request", "Trace"]


@dataclass(frozen=True, slots=True)
class Request:
    """One workload request: it arrives at ``arrival`` and, when placed, leaves at ``departure``.

    ``departure`` is ``math.inf`` for a workload that never leaves. ``profile`` is a
    profile name of the trace's GPU model(s).
    """

    id: str
    profile: str
    arrival: float
    departure: float = math.inf
    cpu: float = 0.0
    ram_gb: float = 0.0
    weight: float = 1.0

    @property
    def duration(self) -> float:
        return self.departure - self.arrival


@dataclass(frozen=True, slots=True)
class Trace:
    """A cluster (hosts and GPUs, no workloads) and its requests, sorted by arrival then id order.

    Attributes
    ----------
    name
        Shown in reports.
    cluster
        The hosts and GPUs; its workloads, if any, are ignored.
    requests
        The requests in arrival order (ties keep their order).
    time_unit
        ``"slot"`` or ``"h"``: the unit of arrival and departure times and of the time series.
    meta
        What the generator did (parameters, counts), for reports.
    """

    name: str
    cluster: Instance
    requests: tuple[Request, ...]
    time_unit: str = "slot"
    meta: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        models = {self.cluster.gpu(g).model for h in self.cluster.hosts for g in h.gpus}
        known: dict[str, bool] = {}  # profile name -> some model of the cluster has it
        seen: set[str] = set()
        for i, r in enumerate(self.requests):
            if r.profile not in known:
                known[r.profile] = any(m.find(r.profile) is not None for m in models)
            if not known[r.profile]:
                names = ", ".join(sorted(m.name for m in models))
                raise InstanceError(f"requests[{i}].profile", f"{r.profile!r} is not a profile of {names}")
            if r.id in seen:
                raise InstanceError(f"requests[{i}].id", f"duplicate id {r.id!r}")
            seen.add(r.id)
            if not r.departure > r.arrival:
                raise InstanceError(
                    f"requests[{i}].departure", f"{r.departure} is not after arrival {r.arrival}"
                )
            if i and r.arrival < self.requests[i - 1].arrival:
                raise InstanceError(f"requests[{i}].arrival", "requests must be sorted by arrival")

    def instance(self) -> Instance:
        """The cluster with every request as a new workload: what policies and the verifier see."""
        b = InstanceBuilder(self.name, custom_models=list(self.cluster.custom_models))
        for h in self.cluster.hosts:
            b.add_host(
                h.id,
                {g: self.cluster.gpu(g).model for g in h.gpus},
                cpu=h.cpu,
                ram_gb=h.ram_gb,
                weight=h.weight,
            )
        for r in self.requests:
            b.add_workload(r.id, r.profile, cpu=r.cpu, ram_gb=r.ram_gb, weight=r.weight)
        return b.build()
