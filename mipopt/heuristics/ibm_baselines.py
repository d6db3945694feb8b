"""The IBM WPM paper's two baselines (Turkkan et al., section 5.1).

* **first-fit**: "sorts GPUs and workloads by their respective IDs, and then assigns
  each workload to the available partitions on the ordered set of GPUs by starting
  at index 0 for each GPU" (:func:`ibm_first_fit`);
* **resource-based dynamic load balancing**: "sorts the GPUs by their total compute
  and memory slice utilization in the ascending order. Then, it processes each
  workload in the order of which they are received and assigns them to the
  available partitions on the ordered set of GPUs, starting from index 0":
  the online policy ``lb`` (:class:`mipopt.heuristics.mfi.LoadBalanced`), which in batch
  (``mipopt.solve(instance, "lb")``) is this baseline: new workloads arrive in instance order.

Both "check the feasibility of the placement decisions at each step": a workload
goes only to a legal start whose slots are free (the geometry tables), below its
profile's ``max_instances``, without a second ``+me`` instance on the GPU, on a
model it may run on, and within its host's cpu and ram. A workload that fits
nowhere stays pending (rejected). Running workloads stay where they are, as in the
paper's initial-deployment runs of these baselines.

How mipopt reads what the paper leaves open:

* "index 0 upwards": among the legal free starts, the lowest; unlike
  GRMU's first fit (the policy ``ff``), not the driver's preferred start;
* "by their respective IDs": ids in natural order (digit runs compared as numbers,
  so ``g2`` comes before ``g10``); for ids whose numbers have equal widths, as
  the IBM generator writes them, this is plain string order;
* "total compute and memory slice utilization": the joint slice utilization the
  paper defines in section 4.2, ``(s_m + s_c) / (S_m + S_c)`` (used memory slots
  and compute slices over the GPU's own), so GPUs of different models compare
  fairly; it is recomputed after every placement, and ties go to the GPU whose id
  comes first.
"""

from __future__ import annotations

import time

from mipopt.heuristics.base import completed
from mipopt.instance import Instance, Solution
from mipopt.state.cluster import Cluster, id_key

__all__ = ["ibm_first_fit", "id_key"]

METHOD_FIRST_FIT = "ibm-first-fit (GPUs and workloads by id, first free index from 0)"


def ibm_first_fit(instance: Instance) -> Solution:
    """The IBM first-fit baseline: GPUs and new workloads by id, first free index from 0.

    Parameters
    ----------
    instance
        Running workloads stay where they are; new ones are placed or left pending.

    Returns
    -------
    Solution
        ``termination`` completed, ``status`` feasible; new workloads that fit
        nowhere are listed as rejected.
    """
    t0 = time.perf_counter()
    cluster = Cluster(instance)
    for w in sorted(instance.new, key=lambda w: id_key(w.id)):
        if (at := cluster.first_in_order(w, balanced=False)) is not None:
            cluster.place(w, *at)
    return completed(instance, cluster.placed, METHOD_FIRST_FIT, t0)
