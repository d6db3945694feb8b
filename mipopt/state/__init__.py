"""The cluster state: which workload sits where, and what can still go where.

* :mod:`~mipopt.state.cluster`: :class:`Cluster`, the vectorized state the heuristics and the
  simulator place into, remove from and move within.
"""
