"""Relocating running workloads of a :class:`~mipopt.state.Cluster` through a migration plan.

Relocations that must be safe at every instant (GRMU's defragmentation and consolidation)
go through :func:`execute`: the graph planner (:func:`mipopt.migrate.graph.graph_rounds`,
create-before-destroy) plans them on a small instance cut from the cluster, and the
cluster carries out the plan's rounds: parking moves and drains (disruptive moves)
included, each recorded (:meth:`Cluster.record <mipopt.state.Cluster.record>`) and
counted (``cluster.planned``, :data:`PLAN_COUNTS`).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Mapping

import numpy as np

from mipopt.instance import Host, Instance, Placement, Workload
from mipopt.migrate.graph import graph_rounds
from mipopt.migrate.plan import Round
from mipopt.state import Cluster, Relocation

__all__ = ["PLAN_COUNTS", "SPARE_ROUNDS", "execute", "rearrange"]

#: What :func:`execute` counts of the plans it carries out (``cluster.planned``).
PLAN_COUNTS = ("plans", "plan_rounds", "parking_moves", "disruptive_moves")
#: How many times :func:`execute` widens its cut of the cluster to avoid a drain.
SPARE_ROUNDS = 3


def execute(cluster: Cluster, target: Mapping[str, tuple[int, int]]) -> list[Relocation]:
    """Relocate running workloads of ``cluster`` to ``target`` through the migration planner; the relocations made, in order.

    The graph planner (:func:`mipopt.migrate.graph.graph_rounds`, ``create-first``: a
    move's target is created before its source is destroyed) plans on a small instance
    cut from the cluster: the GPUs of the moves' sources and targets, every other GPU of
    their hosts (room to park), their occupants at the profiles they occupy (a
    MIG-Adapter borrower at its borrowed one, on its model), and each host with what the
    rest of the cluster leaves of its cpu and ram. When the plan drains a workload, the
    cut gains a GPU of the same model where that workload fits now (an empty one first)
    and is planned again, at most :data:`SPARE_ROUNDS` times. The rounds are then
    executed in order, each as drains, moves (parks too), restores; every relocation is
    recorded as :meth:`Cluster.move <mipopt.state.Cluster.move>` records it, and
    ``cluster.planned`` counts the plan, its rounds, its parks and its drains.

    Parameters
    ----------
    cluster
        Changed in place.
    target
        Workload id -> (GPU position, start) of running workloads; it must be a valid
        placement of them given where the others are (the policies compute it on the
        cluster's rules). Workloads already at their target stay.

    Returns
    -------
    list[Relocation]
        Every relocation made, parks and restores of drained workloads included, with
        its round; empty when nothing moves (no plan is counted then). The movers end
        last in their GPUs' placement order (:meth:`Cluster.on_gpu
        <mipopt.state.Cluster.on_gpu>`), in the order of ``target``, as if each were
        removed and placed again.
    """
    moving: dict[str, tuple[str, int]] = {}
    for wid, (k, start) in target.items():
        spot = (cluster.instance.gpus[k].id, start)
        if cluster.placed[wid] != spot:
            moving[wid] = spot
    if not moving:
        return []
    ks = {cluster.position[cluster.placed[wid][0]] for wid in moving} | {
        cluster.position[g] for g, _ in moving.values()
    }
    cut = {k2 for j in {int(cluster.host[k]) for k in ks} for k2 in cluster.host_gpus[j]}
    rounds = _plan(cluster, cut, moving)
    for _ in range(SPARE_ROUNDS):
        drained = [d.workload for r in rounds for d in r.drains]
        spare = _spare(cluster, drained, cut)
        if not spare:
            break
        cut |= spare
        rounds = _plan(cluster, cut, moving)
    done = _carry_out(cluster, rounds)
    # The movers end last in their GPU's placement order, in the order of ``target``, as
    # if removed and placed again whatever the plan's order: GRMU's mock arrangement
    # reads that order, and a different one would make the next defragmentation move
    # the same workloads back and forth.
    for wid in moving:
        cluster.to_back(wid)
    return done


def rearrange(cluster: Cluster, k: int, target: Mapping[str, int]) -> list[Relocation]:
    """Move GPU ``k``'s workloads to the starts of ``target`` (intra-GPU migrations), through :func:`execute`.

    Each workload keeps the profile it occupies. Moving one workload at a time could
    land it on slots another mover has not left yet; the plan orders the moves and
    parks (or drains) a workload where the new arrangement is a cycle of waits.
    """
    return execute(cluster, {wid: (k, start) for wid, start in target.items()})


def _plan(cluster: Cluster, cut: set[int], moving: Mapping[str, tuple[str, int]]) -> list[Round]:
    """The graph planner's rounds for ``moving`` on the instance of the GPUs ``cut`` (see :func:`execute`)."""
    inst = cluster.instance
    gpus = []
    hosts: dict[int, list[str]] = {}
    workloads: list[Workload] = []
    cpu: defaultdict[int, float] = defaultdict(float)
    ram: defaultdict[int, float] = defaultdict(float)
    for k in sorted(cut):
        g = inst.gpus[k]
        j = int(cluster.host[k])
        gpus.append(g)
        hosts.setdefault(j, []).append(g.id)
        for wid in cluster.on_gpu(k):
            w = cluster.as_placed(wid)  # a borrower is kept at its profile and model
            gpu_id, start = cluster.placed[wid]
            workloads.append(dataclasses.replace(w, placement=Placement(gpu_id, start)))
            cpu[j] += w.cpu
            ram[j] += w.ram_gb
    host_list = []
    for j, ids in hosts.items():
        h = inst.hosts[j]
        # What the GPUs outside the cut hold of the host's cpu and ram is not for the plan.
        host_cpu = None if h.cpu is None else h.cpu - (float(cluster.cpu[j]) - cpu[j])
        host_ram = None if h.ram_gb is None else h.ram_gb - (float(cluster.ram[j]) - ram[j])
        host_list.append(Host(h.id, tuple(ids), host_cpu, host_ram, h.weight))
    sub = Instance(
        f"{inst.name}-migration", tuple(host_list), tuple(gpus), tuple(workloads), inst.custom_models
    )
    placement = {w.id: moving.get(w.id, cluster.placed[w.id]) for w in workloads}
    return graph_rounds(sub, placement, "create-first")


def _spare(cluster: Cluster, drained: Iterable[str], cut: set[int]) -> set[int]:
    """Per drained workload, a GPU outside ``cut`` of its model where it fits now at its profile (empty first)."""
    spare: set[int] = set()
    for wid in drained:
        w = cluster.instance.workload(wid)
        k = cluster.position[cluster.placed[wid][0]]
        model = cluster.model(k)
        group = next(g for g in cluster.groups if g.model is model)
        bits = cluster.legal(w, model.profiles[cluster.profile_of[wid]].name)[group.ks]
        taken = np.isin(group.ks, list(cut | spare))
        fits = (bits != 0) & ~taken
        empty = fits & (cluster.mask[group.ks] == 0)
        pick = np.flatnonzero(empty if empty.any() else fits)
        if pick.size:
            spare.add(int(group.ks[pick[0]]))
    return spare


def _carry_out(cluster: Cluster, rounds: list[Round]) -> list[Relocation]:
    """Carry out a plan's rounds on the cluster state; the relocations made."""
    done: list[Relocation] = []
    down: dict[str, tuple[tuple[int, int], str]] = {}  # drained workload -> (source, profile)
    for number, rnd in enumerate(rounds, start=1):
        for d in rnd.drains:
            w = cluster.instance.workload(d.workload)
            profile = cluster.occupied_profile(d.workload).name
            gpu_id, start = cluster.remove(w)
            down[d.workload] = ((cluster.position[gpu_id], start), profile)
        for m in rnd.moves:
            w = cluster.instance.workload(m.workload)
            profile = cluster.occupied_profile(m.workload).name
            gpu_id, start = cluster.remove(w)
            k = cluster.position[m.target[0]]
            _place_checked(cluster, w, k, m.target[1], profile)
            done.append(
                cluster.record(
                    m.workload, (cluster.position[gpu_id], start), (k, m.target[1]), number, m.park
                )
            )
        for c in rnd.creates:
            source, profile = down.pop(c.workload)
            w = cluster.instance.workload(c.workload)
            k = cluster.position[c.target[0]]
            _place_checked(cluster, w, k, c.target[1], profile)
            done.append(cluster.record(c.workload, source, (k, c.target[1]), number, disruptive=True))
        parks = sum(m.park for m in rnd.moves)
        if parks:  # counts that never happen get no key, as in ``moves``
            cluster.planned["parking_moves"] += parks
        if rnd.drains:
            cluster.planned["disruptive_moves"] += len(rnd.drains)
    assert not down, f"drained and never restored: {sorted(down)}"
    cluster.planned["plans"] += 1
    cluster.planned["plan_rounds"] += len(rounds)
    return done


def _place_checked(cluster: Cluster, w: Workload, k: int, start: int, profile: str) -> None:
    """:meth:`Cluster.place <mipopt.state.Cluster.place>`, refusing slots that are taken (a plan that breaks a rule is a planner bug)."""
    model = cluster.model(k)
    p = model.index(profile)
    assert p is not None and not cluster.mask[k] & model.profiles[p].slot_mask(start), (
        f"{w.id}: {profile} at {start} on GPU {k} overlaps"
    )
    cluster.place(w, k, start, profile)
