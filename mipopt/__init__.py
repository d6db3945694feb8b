"""mipopt: optimal and heuristic placement of workloads onto NVIDIA MIG instances."""

from mipopt.errors import InstanceError

__version__ = "0.1.0"
__all__ = ["InstanceError", "__version__"]
