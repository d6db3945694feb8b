"""Single-GPU geometry: occupancy bitmasks and the quantities defined on them.

* :mod:`mipopt.geometry.reference`: the definitions, one state at a time (CC, the
  driver's default start, FBK and GRMU fragmentation, compute and memory waste);
* :mod:`mipopt.geometry.tables`: the same over all ``2**slots`` states, as numpy
  tables vectorized over many GPUs;
* :mod:`mipopt.geometry.order`: the driver's start order on an empty GPU (IBM's
  Table 1) and its first start among free ones;
* :mod:`mipopt.geometry.configs`: enumeration of all configurations of one GPU
  (GRMU section 5.1).
"""

from mipopt.geometry.order import preference_order, preferred_starts
from mipopt.geometry.reference import (
    compute_waste,
    configuration_capability,
    default_start,
    fbk_fragmentation,
    grmu_fragmentation,
    legal_starts,
    memory_waste,
)
from mipopt.geometry.tables import NO_START, GeometryTables, tables_for

__all__ = [
    "NO_START",
    "GeometryTables",
    "compute_waste",
    "configuration_capability",
    "default_start",
    "fbk_fragmentation",
    "grmu_fragmentation",
    "legal_starts",
    "memory_waste",
    "preference_order",
    "preferred_starts",
    "tables_for",
]
