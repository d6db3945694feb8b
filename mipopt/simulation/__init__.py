"""Event-driven cluster simulation: traces of requests replayed under online policies.

* :mod:`~mipopt.workloads.trace`: :class:`Trace` and :class:`Request`, what workload
  generators (:mod:`mipopt.workloads`) produce;
* :mod:`~mipopt.simulation.engine`: :func:`simulate`, one replay under one policy, with
  its time series and summary.
"""

from mipopt.simulation.engine import SimulationError, SimulationResult, simulate
from mipopt.workloads.trace import Request, Trace

__all__ = ["Request", "SimulationError", "SimulationResult", "Trace", "simulate"]
