"""The cluster state: which workload sits where, and what can still go where.

* :mod:`~mipopt.state.occupancy`: :class:`Occupancy`, the one bookkeeping of what GPUs and
  hosts hold and of the rules a state obeys (the migration planners hold instances in
  it); :data:`MOVE_KINDS` and :func:`move_kind`, the kinds of relocations;
* :mod:`~mipopt.state.cluster`: :class:`Cluster`, the occupancy that also knows where each
  workload sits, which the heuristics and the simulator place into, remove from and move
  within; :class:`Relocation`, the record of a relocation made on it.

Planning and executing migration plans on a cluster is the layer above
(:mod:`mipopt.migrate`).
"""

from mipopt.state.cluster import Cluster, Group, Relocation, id_key
from mipopt.state.occupancy import MOVE_KINDS, Occupancy, Spot, move_kind

__all__ = ["MOVE_KINDS", "Cluster", "Group", "Occupancy", "Relocation", "Spot", "id_key", "move_kind"]
