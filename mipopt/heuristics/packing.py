"""MIGBench's placement policies: HAMi's ``binpack`` and ``spread``, and its first fit.

MIGBench (FouoF/MIG-scheduler-benchmark, ``internal/adapter/adapter.go``) lists every legal
(node, GPU, start) of a request's profile with the free compute slices (GPCs) of that GPU
before placing, sorts them, and takes the first:

* ``binpack``: fewest free compute slices first (fill the fullest GPU);
* ``spread``: most free compute slices first (the emptiest GPU);
* first fit: none of that, only the order of the ties, which is the same for all three:
  node name, then the GPU's index on its node, then the lowest start.

Here a node is a host, ordered by its id as a string (Go compares node names byte by byte;
MIGBench's ``mig-node-001`` ... sort the same either way), and a GPU's index is its position
among its host's GPUs in the instance. A legal start is one every rule of
:meth:`Cluster.legal <mipopt.state.cluster.Cluster.legal>` allows (NVIDIA's geometry, not
MIGBench's 7 free slots plus a memory pool). A request placed by memory takes the smallest
profile that fits (:meth:`Instance.profile_on <mipopt.instance.Instance.profile_on>`), as
MIGBench's own scheduler does. MIGBench's first fit is the option ``start=lowest`` of ``ff``
(:class:`mipopt.heuristics.grmu.FirstFit`), which calls :func:`first_by_name`.
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from mipopt.heuristics.online import Decision, Policy
from mipopt.instance import Instance, Workload
from mipopt.state.cluster import Cluster

__all__ = ["BinPack", "NameOrder", "Spread", "first_by_name"]

IntArray = npt.NDArray[np.int64]


class NameOrder:
    """Per GPU of one instance: its rank by (host id, index on its host) and its compute slices.

    Computed once per instance and kept while the cluster's instance stays the same object.
    """

    def __init__(self) -> None:
        self._instance: Instance | None = None
        self.rank: IntArray = np.zeros(0, dtype=np.int64)
        self.slices: IntArray = np.zeros(0, dtype=np.int64)

    def of(self, cluster: Cluster) -> NameOrder:
        """This order, brought up to ``cluster``'s instance."""
        if cluster.instance is not self._instance:
            gpus = cluster.instance.gpus
            index = np.zeros(len(gpus), dtype=np.int64)
            for ks in cluster.host_gpus:
                index[ks] = np.arange(len(ks))
            order = sorted(range(len(gpus)), key=lambda k: (gpus[k].host, int(index[k])))
            self.rank = np.empty(len(gpus), dtype=np.int64)
            self.rank[order] = np.arange(len(gpus))
            self.slices = np.array([g.model.compute_slices for g in gpus], dtype=np.int64)
            self._instance = cluster.instance
        return self


def _lowest_start(bits: int) -> int:
    return (bits & -bits).bit_length() - 1


def first_by_name(cluster: Cluster, w: Workload, order: NameOrder, free_sign: int = 0) -> Decision:
    """The first legal (GPU, start) of ``w`` by (``free_sign`` x free compute slices before
    placing, host id, GPU index on its host, start): ``free_sign`` 1 is binpack, -1 spread, 0
    first fit.

    Returns
    -------
    Decision
        (GPU position, lowest legal start), or None when ``w`` fits nowhere.
    """
    bits = cluster.legal(w)
    fits = np.flatnonzero(bits)
    if fits.size == 0:
        return None
    order = order.of(cluster)
    rank = order.rank[fits]
    if free_sign:
        free = order.slices[fits] - cluster.compute[fits]
        k = int(fits[np.lexsort((rank, free_sign * free))[0]])
    else:
        k = int(fits[np.argmin(rank)])
    return k, _lowest_start(int(bits[k]))


class BinPack(Policy):
    """MIGBench binpack: the GPU with the fewest free compute slices before placing; ties by host, GPU, lowest start."""

    name = "binpack"

    def __init__(self) -> None:
        self._order = NameOrder()

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return first_by_name(cluster, w, self._order, 1)


class Spread(Policy):
    """MIGBench spread: the GPU with the most free compute slices before placing; ties by host, GPU, lowest start."""

    name = "spread"

    def __init__(self) -> None:
        self._order = NameOrder()

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        return first_by_name(cluster, w, self._order, -1)
