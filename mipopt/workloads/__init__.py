"""Seeded generators of the workload set-ups the papers evaluate on.

Each generator turns a size and a seed into a valid :class:`mipopt.instance.Instance`;
the same arguments always give the same instance, so benchmarks and tests can name
an instance by its arguments alone.

* :func:`ibm_instance`: the IBM WPM paper's test cases (Turkkan et al., section 5.1):
  hosts of 8 GPUs, about 60 % of the GPUs partly used by running workloads, new
  workloads worth about 60 % of the cluster's compute.
"""

from mipopt.workloads.ibm import ibm_instance

__all__ = ["ibm_instance"]
