"""The IBM WPM paper's rule-based heuristics (Turkkan et al., section 4.2), one per use case.

The paper solves each use case "separately by considering only the use case
specific goals and constraints" and restricts the heuristics "to minimize
sequential migration". All three share the vectorized cluster state of
:mod:`mipopt.heuristics.ibm_baselines` (legal free starts from the geometry tables,
``max_instances``, one ``+me``, allowed models, host cpu and ram) and these readings:

* **size** ("we use profile id as a proxy for size"): compute slices, then memory
  slots, descending, on the first model of the instance the workload may run on;
  on the A100 and H100 this is ascending profile id (7g 0, 4g 5, 3g 9, 2g 14,
  1g.20gb 15, 1g 19). Among equal sizes a ``+me`` profile comes first, although
  its id is larger (1g.10gb+me is 20): at most one ``+me`` fits a GPU, so placed
  after the plain 1g.10gb ones they may find every GPU without a ``+me`` full.
  Other ties keep the instance (arrival) order.
* **joint slice utilization** ``(s_m + s_c) / (S_m + S_c)``: used memory slots plus
  compute slices over the GPU's own; GPU ties go to the id that comes first.
* **index**: the first legal free start in Table 1's preference order
  (:func:`mipopt.geometry.preference_order`).

The rules that move running workloads (compaction, reconfiguration, joint) take a
:class:`~mipopt.instance.Budget` (``max_restarts``, ``max_moved_gb``): a step whose result
would restart more running workloads, or move more GB of them to another GPU, than the budget
allows, counted from where they ran at the start (:func:`mipopt.instance.budget.disruption`),
is skipped. Each function's docstring says what its steps are.
"""

from __future__ import annotations

import math
import time
from dataclasses import replace

import numpy as np
import numpy.typing as npt

from mipopt.heuristics.base import completed
from mipopt.instance import Budget, Instance, Solution, Workload
from mipopt.instance.budget import budget_note, disruption
from mipopt.state.cluster import Cluster

__all__ = ["ibm_compaction", "ibm_initial", "ibm_joint", "ibm_reconfiguration", "min_gpus"]

METHOD_INITIAL = "ibm-initial (rule-based, IBM WPM section 4.2)"
METHOD_COMPACTION = "ibm-compaction (rule-based, IBM WPM section 4.2)"
METHOD_RECONFIGURATION = "ibm-reconfiguration (rule-based, IBM WPM section 4.2)"
METHOD_JOINT = "ibm-joint (reconfiguration, then initial deployment; rule-based)"


def _size_key(instance: Instance, w: Workload) -> tuple[int, int, bool]:
    for model in instance.models.values():
        profile = instance.profile_on(w, model)
        if profile is not None:
            return (-profile.compute, -profile.memory_slots, not profile.media_extension)
    return (0, 0, True)


def _by_size(instance: Instance, workloads: list[Workload] | tuple[Workload, ...]) -> list[Workload]:
    """Largest first (the paper's ascending profile id); ``sorted`` is stable, so ties keep arrival order."""
    return sorted(workloads, key=lambda w: _size_key(instance, w))


def _by_utilization(cluster: Cluster, ks: list[int] | npt.NDArray[np.int64]) -> list[int]:
    """GPU positions by ascending joint slice utilization, ties by id."""
    return sorted(ks, key=lambda k: (cluster.used[k] / cluster.size[k], cluster.id_rank[k]))


def _assign(cluster: Cluster, w: Workload, allowed: npt.NDArray[np.bool_]) -> bool:
    """Place ``w`` where :func:`_choose` says; False if it fits none."""
    at = _choose(cluster, w, allowed)
    if at is None:
        return False
    cluster.place(w, *at)
    return True


def _choose(cluster: Cluster, w: Workload, allowed: npt.NDArray[np.bool_]) -> tuple[int, int] | None:
    """Initial deployment's Step 3 for one workload, over the ``allowed`` GPUs: (GPU, start) or None.

    "Assign each workload to the GPU partition which provides maximum utilization
    after assignment [...] If there is no available partition for the workload,
    allocate a new GPU": among allowed GPUs that hold something, the one with the
    highest joint utilization after the assignment; else the first empty allowed
    GPU by id. The start is the first free legal one in preference order.
    """
    bits = np.where(allowed, cluster.legal(w), 0)
    fits = np.flatnonzero(bits)
    if fits.size == 0:
        return None
    used = fits[cluster.used[fits] > 0]
    if used.size:
        after = (cluster.used[used] + cluster.joint_size(w)[used]) / cluster.size[used]
        best = used[after == after.max()]
    else:
        best = fits
    k = int(best[np.argmin(cluster.id_rank[best])])
    return k, cluster.preferred_start(w, k, int(bits[k]))


def ibm_initial(instance: Instance) -> Solution:
    """IBM rule-based initial deployment: new workloads placed, running ones fixed.

    Section 4.2, "Initial deployment recommendations aim to place new workloads to
    minimize the compute and memory wastage while maximizing utilization":

    * "Step 1: Sort the new workloads in descending order of their size. We use
      profile id as a proxy for size": largest first (module docstring).
    * "Step 2: Sort the GPUs according to the sum of their joint memory and compute
      slice utilization [...] (s_m + s_c)/(S_m + S_c)".
    * "Step 3: Assign each workload to the GPU partition which provides maximum
      utilization after assignment. To decide the placement index, use the
      preference order in Table 1. If there is no available partition for the
      workload, allocate a new GPU to place the workload."

    Reading: Step 2's order is applied through Step 3, recomputed after every
    placement: the used GPU with a free legal start that is most utilized after
    the assignment (on one model, the most utilized that fits: a best fit), ties
    by id; the "new GPU" is the first empty GPU by id that takes the workload. A
    workload that fits nowhere is pending (rejected).

    Returns
    -------
    Solution
        ``termination`` completed, ``status`` feasible.
    """
    t0 = time.perf_counter()
    return completed(instance, _deployed(instance), METHOD_INITIAL, t0)


def _deployed(instance: Instance) -> dict[str, tuple[str, int]]:
    """Initial deployment's placement (see :func:`ibm_initial`)."""
    cluster = Cluster(instance)
    everywhere = np.ones(len(instance.gpus), dtype=bool)
    for w in _by_size(instance, instance.new):
        _assign(cluster, w, everywhere)
    return cluster.placed


def _try_vacate(cluster: Cluster, k: int, targets: npt.NDArray[np.bool_]) -> Cluster | None:
    """Compaction's Step 3 for GPU ``k``: its workloads onto ``targets`` (a copy of the state), or None.

    Only slots free in the current state are used, and the current state of every
    target contains its initial state (targets are never vacated GPUs), so no move
    lands on a slot occupied at the start: no sequential migration.
    """
    inst = cluster.instance
    lifted = _on(cluster, k)
    if any(w.pinned for w in lifted):
        return None
    ts = np.flatnonzero(targets)
    # "Check the number of available slices on other allocated GPUs"
    if sum(int(cluster.joint_size(w)[k]) for w in lifted) > int((cluster.size[ts] - cluster.used[ts]).sum()):
        return None
    trial = cluster.copy()
    for w in lifted:
        trial.remove(w)
    for w in _by_size(inst, lifted):
        if not _assign(trial, w, targets):
            return None
    return trial


def _within(budget: Budget | None, instance: Instance, placed: dict[str, tuple[str, int]]) -> bool:
    """Whether ``placed`` keeps ``budget`` (None: no limit)."""
    return budget is None or budget.allows(disruption(instance, placed))


def ibm_compaction(instance: Instance, *, budget: Budget | None = None) -> Solution:
    """IBM rule-based compaction: vacate GPUs by moving running workloads onto other used GPUs.

    New workloads are not considered (rejected). Section 4.2, "Compaction
    recommendations target vacating an underutilized GPU by migrating workloads to
    other GPUs with existing workloads":

    * "Step 1: Sort the GPUs per the sum of their memory and compute slice
      utilization."
    * "Step 2: For each GPU starting from the least utilized, retrieve the existing
      workloads."
    * "Step 3: Check the number of available slices on other allocated GPUs. If the
      available slices are enough to place the retrieved workloads, assign them to
      other GPUs by the process used in initial deployment which targets maximizing
      utilization."
    * "Sequential migration can solve this issue but in this heuristic approach we
      avoid sequential migration. Instead, we add a free GPU to the list of
      allocated GPUs and rerun Step 3. If Step 3 allows saving more than one GPU, it
      leads to a feasible compaction solution." (Fig. 8: GPU1 and GPU2 vacated onto
      GPU3 and the added GPU4.)

    Readings: "available slices" are joint (memory slots plus compute slices), and
    a GPU is vacated only when all its workloads are placed (largest first, Step 3
    of :func:`ibm_initial`) onto the other allocated, not vacated GPUs at slots free
    at the start, so nothing migrates sequentially. A GPU with a pinned workload is
    never vacated. First a pass over all used GPUs, least utilized first (Step 1's
    order, fixed at the start); then, for each GPU not vacated (the paper names
    those with enough slices but not the right partitions; mipopt retries those
    short of slices too, which the free GPU may cover), in the same order and while
    a free GPU remains: add the first free GPU by id, rerun Step 3 for that GPU,
    then try the other GPUs not vacated yet in order, and keep the result as soon as two GPUs are vacated (one
    saved net), else discard it. Running at least one pass first keeps the paper's
    Fig. 4 answer (gpu3 into the free partitions of gpu1 and gpu2) rather than
    spending a free GPU on the least utilized GPU.

    Parameters
    ----------
    budget
        The steps are the GPUs vacated: a vacating (with its free GPU, the two GPUs of a
        second-pass step together) whose result would break the budget is skipped, and the
        next GPU in order is tried.

    Returns
    -------
    Solution
        ``termination`` completed, ``status`` feasible; new workloads rejected.
    """
    t0 = time.perf_counter()
    cluster = Cluster(instance)

    def within(trial: Cluster) -> bool:
        return _within(budget, instance, trial.placed)

    allocated = cluster.used > 0
    order = _by_utilization(cluster, np.flatnonzero(allocated))
    vacated: set[int] = set()
    failed: list[int] = []

    def targets_for(k: int, alloc: npt.NDArray[np.bool_], gone: set[int]) -> npt.NDArray[np.bool_]:
        t = alloc.copy()
        t[list(gone | {k})] = False
        return t

    for k in order:
        trial = _try_vacate(cluster, k, targets_for(k, allocated, vacated))
        if trial is not None and within(trial):
            cluster = trial
            vacated.add(k)
        elif not any(w.pinned for w in _on(cluster, k)):
            failed.append(k)

    for k in failed:
        if k in vacated:
            continue
        free = [f for f in np.flatnonzero(~allocated & (cluster.used == 0))]
        if not free:
            break
        f = int(min(free, key=lambda f: cluster.id_rank[f]))
        alloc = allocated.copy()
        alloc[f] = True
        trial = _try_vacate(cluster, k, targets_for(k, alloc, vacated))
        if trial is None:
            continue
        gone = {k}
        for other in order:
            if len(gone) >= 2:
                break
            if other in vacated or other in gone:
                continue
            attempt = _try_vacate(trial, other, targets_for(other, alloc, vacated | gone))
            if attempt is not None and within(attempt):
                trial = attempt
                gone.add(other)
        if len(gone) >= 2 and within(trial):
            cluster, allocated = trial, alloc
            vacated |= gone

    placed = {wid: where for wid, where in cluster.placed.items() if instance.workload(wid).running}
    return completed(instance, placed, METHOD_COMPACTION, t0)


def _on(cluster: Cluster, k: int) -> list[Workload]:
    """The workloads on GPU ``k`` now, in placement order."""
    return [cluster.instance.workload(wid) for wid in cluster.on_gpu(k)]


def min_gpus(instance: Instance, workloads: list[Workload] | tuple[Workload, ...]) -> int:
    """IBM WPM Eq. 3: ``max{sum c_w / C, sum m_w / M}``, rounded up.

    ``c_w``, ``m_w`` are compute slices and memory slots; on a cluster of several
    models each workload counts its smallest share ``c_w / C`` and ``m_w / M`` over
    the models it may run on, so the value stays a lower bound.
    """
    compute = memory = 0.0
    for w in workloads:
        shares = [
            (p.compute / m.compute_slices, p.memory_slots / m.slots)
            for m in instance.models.values()
            if (p := instance.profile_on(w, m)) is not None
        ]
        if shares:
            compute += min(c for c, _ in shares)
            memory += min(s for _, s in shares)
    return math.ceil(max(compute, memory) - 1e-9)


def _extra_memory(cluster: Cluster, w: Workload, k: int) -> bool:
    """Profiles that use the extra memory slot: more memory slots than compute slices.

    On the A100-80GB these are the paper's profiles 0, 9 and 15 (7g.80gb, 3g.40gb,
    1g.20gb; section 3.2.3, "Constraint 3").
    """
    p = cluster.instance.profile_on(w, cluster.instance.gpus[k].model)
    return p is not None and p.memory_slots > p.compute


def ibm_reconfiguration(instance: Instance, *, budget: Budget | None = None) -> Solution:
    """IBM rule-based reconfiguration: redeploy the running workloads onto as few GPUs as it can.

    New workloads are not considered (rejected); pinned workloads stay. Section 4.2:

    * "Step 1: Calculate the minimum number of GPUs needed for placing all
      workloads using Equation 3" (:func:`min_gpus`).
    * "Step 2: Sort the GPUs by the sum of their compute and memory slice
      utilization and take the minimum number of GPUs from the least utilized
      GPUs."
    * "Step 3: Assign workloads with additional memory profiles (first profile 9 and
      then profile 15) first until either all workloads are assigned or there is
      one for each GPU."
    * "Step 4: Sort all remaining workloads by their profile ids".
    * "Step 5: Place workloads in GPUs found in Step 2 by using first-fit bin
      packing algorithm", checking allowed indexes and using the preference order.
    * "if a feasible bin-packing solution is not found [...] minimum GPU count is
      increased by one and Step 2-5 are re-executed".

    Readings: utilization is that of the initial state, so free GPUs come first and
    "If there are enough free GPUs [...] Step 2 ensures using only free GPUs". The
    movable running workloads are all lifted and redeployed; pinned ones stay where
    they are, count in Eq. 3, and their GPUs are always among the chosen ones
    (they stay used anyway), ahead of the least utilized others. Step 3 gives the
    chosen GPUs, in Step 2's order, one extra-memory workload each, largest first:
    3g.40gb ones ("first profile 9"), then 1g.20gb ("then profile 15"), preceded by
    7g.80gb ones, which section 3.2.3 names with them (profile 0 uses the extra slot
    too) and which need an empty GPU: handing every GPU a 1g.20gb first would leave
    none for them. Each goes to its preferred start (the one using the extra memory
    slot). The paper's heuristic does not mention ``+me`` profiles (Table 1's
    1g.10gb+me, profile 20), of which a GPU holds one; a second round of Step 3
    gives them out the same way, one per chosen GPU: left to the first fit, they
    come after the GPUs have been filled and each opens a GPU of its own (on the
    80-GPU IBM cases of seeds 0, 1, 2: 39, 48 and 38 GPUs instead of 32, 34 and 28,
    about what WPM finds). Step 5's first fit walks the chosen GPUs in Step 2's
    order. If no count up to all GPUs works, the running placement is returned
    unchanged.

    Parameters
    ----------
    budget
        The steps are the GPU counts n tried. The rule's redeployment on n GPUs is kept only
        when it holds the budget; when it does not, the same n is tried keeping in place the
        workloads of the n most utilized used GPUs (pinned ones' first, then by joint slice
        utilization, ties by id) and redeploying (Steps 3-5) only those of the other GPUs
        onto them. Moving fewer workloads the larger n is, this reaches the running placement
        unchanged at n = the used GPUs, so some n holds any budget.

    Returns
    -------
    Solution
        ``termination`` completed, ``status`` feasible; new workloads rejected.
    """
    t0 = time.perf_counter()
    return completed(instance, _reconfigured(instance, budget), METHOD_RECONFIGURATION, t0)


def _reconfigured(instance: Instance, budget: Budget | None = None) -> dict[str, tuple[str, int]]:
    """Reconfiguration's placement of the running workloads (see :func:`ibm_reconfiguration`)."""
    start = Cluster(instance)
    base = start.copy()
    ranked = _by_utilization(base, np.arange(len(instance.gpus)))
    movable = [w for w in instance.running if not w.pinned]
    for w in movable:
        base.remove(w)
    pinned_gpus = [k for k in ranked if base.used[k] > 0]
    others = [k for k in ranked if base.used[k] == 0]
    # under a budget: the used GPUs to keep as they are, pinned ones first, then the fullest
    used = [k for k in ranked if start.used[k] > 0 and k not in pinned_gpus]
    keep = pinned_gpus + sorted(used, key=lambda k: (-start.used[k] / start.size[k], start.id_rank[k]))
    n = max(min_gpus(instance, instance.running), len(pinned_gpus))
    while n <= len(instance.gpus):
        chosen = pinned_gpus + others[: n - len(pinned_gpus)]
        placed = _redeploy(base, movable, chosen)
        if placed is not None and _within(budget, instance, placed):
            return placed
        if budget is not None and n <= len(keep):
            placed = _redeploy_around(start, keep[:n], ranked)
            if placed is not None and _within(budget, instance, placed):
                return placed
        n += 1
    return instance.current_placement()


def _redeploy_around(start: Cluster, kept: list[int], ranked: list[int]) -> dict[str, tuple[str, int]] | None:
    """Steps 3-5 for the movable workloads off the ``kept`` GPUs, onto the ``kept`` GPUs (in
    Step 2's order) around what they hold; None if some workload fits none."""
    base = start.copy()
    on = set(kept)
    movers = [
        w for w in start.instance.running if not w.pinned and start.position[start.placed[w.id][0]] not in on
    ]
    for w in movers:
        base.remove(w)
    return _redeploy(base, movers, [k for k in ranked if k in on])


def _media(cluster: Cluster, w: Workload, k: int) -> bool:
    p = cluster.instance.profile_on(w, cluster.instance.gpus[k].model)
    return p is not None and p.media_extension


def _redeploy(base: Cluster, movable: list[Workload], chosen: list[int]) -> dict[str, tuple[str, int]] | None:
    """Steps 3-5 of :func:`ibm_reconfiguration` on the ``chosen`` GPUs; None if some workload fits none."""
    cluster = base.copy()
    rest = _by_size(cluster.instance, movable)
    for one_per_gpu in (_extra_memory, _media):  # Step 3, then the same for +me
        gpus, left = list(chosen), []
        for w in rest:
            if gpus and one_per_gpu(cluster, w, gpus[0]):
                k = gpus.pop(0)
                free = int(cluster.legal(w)[k])
                if free:
                    cluster.place(w, k, cluster.preferred_start(w, k, free))
                    continue
            left.append(w)  # e.g. a pinned workload holds the slot: first fit with the rest
        rest = left
    for w in rest:  # Steps 4 and 5: still largest first
        bits = cluster.legal(w)
        target = next((k for k in chosen if bits[k]), None)
        if target is None:
            return None
        cluster.place(w, target, cluster.preferred_start(w, target, int(bits[target])))
    return cluster.placed


def ibm_joint(instance: Instance, *, budget: Budget | None = None) -> Solution:
    """The joint question with the rules: reconfigure the running workloads, then deploy the new ones.

    The paper has no rule-based joint heuristic (the joint MIP answers it); this is the
    composition of its two: :func:`ibm_reconfiguration` on the running workloads, then
    :func:`ibm_initial` for the new ones around where the running ones now sit. Migrations
    count against where they ran at the start.

    Parameters
    ----------
    budget
        Held by the reconfiguration (see :func:`ibm_reconfiguration`); the deployment moves
        nothing. A request that the rules place without the budget but not with it is named
        in the solution's ``message`` as left out by the budget
        (:func:`mipopt.instance.budget.left_out_by_budget`).
    """
    t0 = time.perf_counter()
    placed = _joint(instance, budget)
    note = ""
    if budget is not None and not budget.unlimited:
        free = _joint(instance, None)
        if free != placed:
            moves = disruption(instance, free)
            why = (
                f"placing it needed the reconfiguration without the budget, which restarts "
                f"{moves['restarted']:g} running workloads and moves {moves['moved_memory_gb']:g} GB: "
                f"{budget.exceeded(moves)}"
            )
            note = budget_note(
                budget, {w.id: why for w in instance.new if w.id in free and w.id not in placed}
            )
    return completed(instance, placed, METHOD_JOINT, t0, note)


def _joint(instance: Instance, budget: Budget | None) -> dict[str, tuple[str, int]]:
    """:func:`ibm_joint`'s placement: reconfiguration within ``budget``, then initial deployment."""
    moved = _reconfigured(instance, budget)
    after = replace(
        instance,
        workloads=tuple(
            replace(w, placement=instance.moved_to(w, *moved[w.id])) if w.id in moved else w
            for w in instance.workloads
        ),
    )
    return _deployed(after)
