"""Seeded generators of the workload set-ups the papers evaluate on, and trace loaders.

Each instance generator turns a size and a seed into a valid :class:`mipopt.instance.Instance`;
each stream generator or loader returns a :class:`mipopt.instance.trace.Trace` for the
simulator. The same arguments always give the same result, so benchmarks and tests can
name an instance or trace by its arguments alone.

* :func:`ibm_instance`: the IBM WPM paper's test cases (Turkkan et al., section 5.1):
  hosts of 8 GPUs, about 60 % of the GPUs partly used by running workloads, new
  workloads worth about 60 % of the cluster's compute.
* :func:`fbk_trace`: the MFI paper's online set-up (section VI): one request per slot,
  profiles from Table II, lifetimes uniform in [1, T], metrics against GPU demand.
* :func:`poisson_trace`: Poisson arrivals at a chosen offered load, any mix and cluster;
  :func:`poisson_stream` builds one from plain options (``mipopt simulate --workload poisson:...``).
* :func:`hard_instance`: the hard class of the exact model's migrations stage: hosts of
  two GPUs of two models, host cpu and ram drawn per workload and binding, half of the
  workloads running and movable.
* :func:`dense_instance`: the dense class of the exact model (issue 26): few hosts of 4-8 GPUs
  (one model, or two mixed on every host) whose cpu and ram bind, some running workloads pinned.
* :func:`alibaba_trace`: the Alibaba GPU trace 2023 mapped to MIG as in the GRMU paper
  (section 8.1); :func:`alibaba_summary` counts it and its peak load (:func:`alibaba_peak`).
  The mapped cluster at its peak as a first-fit replay leaves it is an instance by replay,
  :func:`mipopt.simulation.alibaba_snapshot` (the simulator sits above this layer).
* :func:`migbench_trace`: a MIGBench JSONL trace (:func:`read_migbench`) on MIGBench's
  cluster, profile subset and create/delete costs (``mipopt simulate --workload migbench:path=...``).
"""

from mipopt.workloads.alibaba import alibaba_peak, alibaba_summary, alibaba_trace
from mipopt.workloads.dense import dense_instance
from mipopt.workloads.fbk import FBK_DISTRIBUTIONS, fbk_trace
from mipopt.workloads.hard import hard_instance
from mipopt.workloads.ibm import ibm_instance
from mipopt.workloads.migbench import migbench_trace, read_migbench
from mipopt.workloads.poisson import poisson_stream, poisson_trace

__all__ = [
    "FBK_DISTRIBUTIONS",
    "alibaba_peak",
    "alibaba_summary",
    "alibaba_trace",
    "dense_instance",
    "fbk_trace",
    "hard_instance",
    "ibm_instance",
    "migbench_trace",
    "poisson_stream",
    "poisson_trace",
    "read_migbench",
]
