"""Event-driven cluster simulation: traces of requests replayed under online policies.

* :mod:`~mipopt.instance.trace`: :class:`Trace` and :class:`Request`, what workload
  generators (:mod:`mipopt.workloads`) produce;
* :mod:`~mipopt.simulation.engine`: :func:`simulate`, one replay under one policy, with
  its time series and summary;
* :mod:`~mipopt.simulation.snapshot`: :func:`alibaba_snapshot`, an exact-model instance
  from the Alibaba trace by a first-fit replay up to its peak.
"""

from mipopt.instance.trace import Request, Trace
from mipopt.simulation.engine import SimulationError, SimulationResult, on_grid, simulate
from mipopt.simulation.snapshot import alibaba_snapshot

__all__ = [
    "Request",
    "SimulationError",
    "SimulationResult",
    "Trace",
    "alibaba_snapshot",
    "on_grid",
    "simulate",
]
