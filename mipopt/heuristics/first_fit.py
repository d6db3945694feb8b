"""First-fit with the driver's default start: the baseline every paper starts from.

Hosts in order, GPUs in order; each new workload goes to the first GPU whose
model allows it and has a legal start for its profile (counting per-profile
maxima, the one ``+me`` set and host cpu and ram), at the start the driver
would choose (GRMU Eq. 2). Running workloads stay where they are.
"""

from __future__ import annotations

import time

from mipopt.geometry import NO_START, tables_for
from mipopt.heuristics.base import completed
from mipopt.instance import Instance, Solution

METHOD = "first-fit (hosts and GPUs in order, driver default start)"


def first_fit(instance: Instance) -> Solution:
    """Place the new workloads of ``instance`` in file order by first fit.

    Returns
    -------
    Solution
        ``termination`` completed, ``status`` feasible: first fit proves nothing.
    """
    t0 = time.perf_counter()
    mask = {g.id: 0 for g in instance.gpus}
    count: dict[tuple[str, int], int] = {}
    media = {g.id: False for g in instance.gpus}
    cpu = {h.id: 0.0 for h in instance.hosts}
    ram = {h.id: 0.0 for h in instance.hosts}
    placed: dict[str, tuple[str, int]] = {}

    def occupy(wid: str, gpu_id: str, start: int) -> None:
        gpu = instance.gpu(gpu_id)
        w = instance.workload(wid)
        p = gpu.model.index(w.profile)
        assert p is not None
        profile = gpu.model.profiles[p]
        mask[gpu_id] |= profile.slot_mask(start)
        count[gpu_id, p] = count.get((gpu_id, p), 0) + 1
        media[gpu_id] |= profile.media_extension
        cpu[gpu.host] += w.cpu
        ram[gpu.host] += w.ram_gb
        placed[wid] = (gpu_id, start)

    for w in instance.running:
        assert w.placement is not None
        occupy(w.id, w.placement.gpu, w.placement.start)

    for w in instance.new:
        for host in instance.hosts:
            if (host.cpu is not None and cpu[host.id] + w.cpu > host.cpu + 1e-9) or (
                host.ram_gb is not None and ram[host.id] + w.ram_gb > host.ram_gb + 1e-9
            ):
                continue
            start = _first_gpu(instance, w.id, host.gpus, mask, count, media)
            if start is not None:
                occupy(w.id, *start)
                break
    return completed(instance, placed, METHOD, t0)


def _first_gpu(
    instance: Instance,
    wid: str,
    gpu_ids: tuple[str, ...],
    mask: dict[str, int],
    count: dict[tuple[str, int], int],
    media: dict[str, bool],
) -> tuple[str, int] | None:
    w = instance.workload(wid)
    for gpu_id in gpu_ids:
        model = instance.gpu(gpu_id).model
        profile = instance.profile_on(w, model)
        if profile is None:
            continue
        p = model.profiles.index(profile)
        if count.get((gpu_id, p), 0) >= profile.max_instances:
            continue
        if profile.media_extension and media[gpu_id]:
            continue
        start = int(tables_for(model).default_start[mask[gpu_id], p])
        if start != NO_START:
            return gpu_id, start
    return None
