"""What the simulator replays: a cluster and a stream of requests with arrival and departure times.

Workload generators (:mod:`mipopt.workloads`: ``fbk``, ``poisson``, ``alibaba``) produce a
:class:`Trace`; :func:`mipopt.simulation.simulate` replays it under a policy. Times are in
the trace's own unit (``time_unit``: ``"slot"`` for the FBK set-up, ``"h"`` for the
Alibaba trace and Poisson streams). A trace may start from a cluster's current state:
the running workloads of its ``cluster`` are placed at time 0 and stay.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Any

from mipopt.errors import InstanceError
from mipopt.instance.types import Instance, Workload

__all__ = ["Request", "Trace"]


@dataclass(frozen=True, slots=True)
class Request:
    """One workload request: it arrives at ``arrival`` and, when placed, leaves at ``departure``.

    ``departure`` is ``math.inf`` for a workload that never leaves. ``profile`` is a
    profile name of the trace's GPU model(s), resolved per model (``1g.10gb`` is two
    memory slots on an A100-40GB, one on an H100-80GB); ``gpu_models`` restricts the
    models it may run on.
    """

    id: str
    profile: str
    arrival: float
    departure: float = math.inf
    cpu: float = 0.0
    ram_gb: float = 0.0
    weight: float = 1.0
    gpu_models: tuple[str, ...] | None = None

    @property
    def duration(self) -> float:
        return self.departure - self.arrival


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
        seen: set[str] = {w.id for w in self.cluster.running}
        for i, r in enumerate(self.requests):
            if r.profile not in known:
                known[r.profile] = any(m.find(r.profile) is not None for m in models)
            if not known[r.profile]:
                names = ", ".join(sorted(m.name for m in models))
                raise InstanceError(f"requests[{i}].profile", f"{r.profile!r} is not a profile of {names}")
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

    def instance(self) -> Instance:
        """The cluster's running workloads and every request as a new workload: what policies and
        the verifier see."""
        requests = tuple(
            Workload(r.id, r.profile, r.cpu, r.ram_gb, r.weight, gpu_models=r.gpu_models)
            for r in self.requests
        )
        return dataclasses.replace(self.cluster, name=self.name, workloads=self.cluster.running + requests)
