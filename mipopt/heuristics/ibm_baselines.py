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

The paper compares both baselines with its methods on compaction and reconfiguration too
(Figs. 10 and 11) without saying how they answer those questions. mipopt's readings
(:func:`ibm_baseline`), chosen because they reproduce what the paper reports of them:

* **reconfiguration** ("place as many existing workloads on new GPUs", section 5.2.3):
  every running workload that may move is placed again from scratch, one by one in the
  baseline's order, on all GPUs (:func:`lifted`); a workload that fits nowhere is
  pending. Load balancing then spreads the workloads over every GPU, one per GPU at index
  0 first, and a 4g.40gb (index 0 only) that comes late finds every index 0 taken: the
  paper's "some workloads with profile 5 [...] stay in pending state since they can only
  be placed at index 0".
* **compaction** ("vacating underutilized GPUs by migrating existing workloads to other
  GPUs", section 2.3.2): IBM's compaction loop (section 4.2, Steps 1-3: GPUs by ascending
  joint utilization, each vacated when all its workloads fit on the other allocated GPUs
  at slots free now) with the baseline's choice of GPU and start in place of
  "maximum utilization" and Table 1's preference order, and without the free GPU of
  Fig. 8 (a rule of IBM's own heuristic). Nothing lands on a slot occupied at the start,
  so no move is sequential and nothing is pending. The other reading, the running
  workloads placed from scratch on the GPUs used at the start
  (``compaction="scratch"``), spreads them over all those GPUs as in reconfiguration.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Literal

import numpy as np

from mipopt.heuristics.base import completed
from mipopt.instance import Instance, Solution, Workload
from mipopt.state.cluster import Cluster, id_key

__all__ = ["ibm_baseline", "ibm_first_fit", "id_key", "lifted", "pending_running"]

METHOD_FIRST_FIT = "ibm-first-fit (GPUs and workloads by id, first free index from 0)"

UseCase = Literal["initial", "compaction", "reconfiguration"]
Baseline = Literal["load-balanced", "first-fit"]
CompactionReading = Literal["vacate", "scratch"]


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


def lifted(instance: Instance) -> Instance:
    """``instance`` with every running workload that may move made new again: the question of a from-scratch re-placement.

    Same ids, GPUs and order; pinned workloads keep running where they are. A solution of
    the lifted instance that places every workload is also a solution of ``instance``
    (the verifier then counts the moves); one that leaves a workload pending is not (a
    running workload is never evicted), so it is verified against the lifted instance.
    """
    workloads = tuple(
        replace(w, placement=None) if w.running and not w.pinned else w for w in instance.workloads
    )
    return replace(instance, workloads=workloads)


def _in_order(workloads: list[Workload] | tuple[Workload, ...], balanced: bool) -> list[Workload]:
    """First fit takes workloads by id; load balancing "in the order of which they are received" (instance order)."""
    return list(workloads) if balanced else sorted(workloads, key=lambda w: id_key(w.id))


def ibm_baseline(
    instance: Instance,
    *,
    use_case: UseCase = "initial",
    baseline: Baseline = "load-balanced",
    compaction: CompactionReading = "vacate",
) -> Solution:
    """IBM's first-fit or load-balanced baseline answering one of the paper's three use cases.

    Parameters
    ----------
    instance
        The case; new workloads are placed only in ``"initial"``.
    use_case
        ``"initial"``: running workloads stay, new ones are placed in the baseline's order
        (load-balanced is the batch ``lb`` policy, first-fit :func:`ibm_first_fit`);
        ``"compaction"`` and ``"reconfiguration"``: the running workloads move as the
        module docstring reads the paper, new workloads are left out.
    baseline
        ``"load-balanced"``: GPUs by ascending joint slice utilization, recomputed after
        every placement (ties by id), workloads in instance order; ``"first-fit"``: GPUs
        and workloads by id. Both take the lowest legal free start.
    compaction
        ``"vacate"`` (default) or ``"scratch"``: the two readings of compaction.

    Returns
    -------
    Solution
        ``termination`` completed, ``status`` feasible; a solution of ``instance``,
        except when reconfiguration or the ``"scratch"`` compaction leaves a running
        workload pending: then a solution of :func:`lifted` ``(instance)``, whose
        rejected workloads are the pending ones (:func:`pending_running` tells).

    Raises
    ------
    ValueError
        Naming the parameter and its allowed values.
    """
    if use_case not in ("initial", "compaction", "reconfiguration"):
        raise ValueError(f"use_case must be initial, compaction or reconfiguration, got {use_case!r}")
    if baseline not in ("load-balanced", "first-fit"):
        raise ValueError(f"baseline must be load-balanced or first-fit, got {baseline!r}")
    if compaction not in ("vacate", "scratch"):
        raise ValueError(f"compaction must be vacate or scratch, got {compaction!r}")
    t0 = time.perf_counter()
    balanced = baseline == "load-balanced"
    method = f"ibm-{baseline} ({use_case}{', ' + compaction if use_case == 'compaction' else ''})"
    if use_case == "initial":
        cluster = Cluster(instance)
        for w in _in_order(instance.new, balanced):
            if (at := cluster.first_in_order(w, balanced=balanced)) is not None:
                cluster.place(w, *at)
        return completed(instance, cluster.placed, method, t0)
    if use_case == "compaction" and compaction == "vacate":
        return completed(instance, _vacated(instance, balanced), method, t0)
    start = Cluster(instance)
    targets = start.used > 0 if use_case == "compaction" else np.ones(len(instance.gpus), dtype=bool)
    question = lifted(instance)
    cluster = Cluster(question)
    moving = [w for w in question.new if instance.workload(w.id).running]
    for w in _in_order(moving, balanced):
        if (at := cluster.first_in_order(w, balanced=balanced, allowed=targets)) is not None:
            cluster.place(w, *at)
    if all(w.id in cluster.placed for w in moving):  # nothing pending: an answer to the instance itself
        return completed(instance, cluster.placed, method, t0)
    return completed(question, cluster.placed, method, t0)


def _vacated(instance: Instance, balanced: bool) -> dict[str, tuple[str, int]]:
    """Compaction's loop of IBM section 4.2 with the baseline's choice of GPU and start (module docstring)."""
    cluster = Cluster(instance)
    allocated = cluster.used > 0
    ks = np.flatnonzero(allocated).tolist()
    order = sorted(ks, key=lambda k: (cluster.used[k] / cluster.size[k], cluster.id_rank[k]))
    gone = np.zeros(len(instance.gpus), dtype=bool)
    for k in order:
        lifted_here = [instance.workload(wid) for wid in cluster.on_gpu(k)]
        if any(w.pinned for w in lifted_here):
            continue
        targets = allocated & ~gone
        targets[k] = False
        trial = cluster.copy()
        for w in lifted_here:
            trial.remove(w)
        for w in _in_order(lifted_here, balanced):
            at = trial.first_in_order(w, balanced=balanced, allowed=targets)
            if at is None:
                break
            trial.place(w, *at)
        else:
            cluster = trial
            gone[k] = True
    return {wid: where for wid, where in cluster.placed.items() if instance.workload(wid).running}


def pending_running(instance: Instance, solution: Solution) -> list[str]:
    """The running workloads of ``instance`` that ``solution`` leaves pending (verify it against :func:`lifted` then)."""
    placed = {p.workload for p in solution.placements}
    return [w.id for w in instance.running if w.id not in placed]
