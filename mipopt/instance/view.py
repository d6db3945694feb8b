"""The text view of a placement: each GPU a row of memory slots with its instances.

Plain text, no plotting library: :meth:`mipopt.Solution.summary`, ``mipopt show`` and
``mipopt solve`` print it; :mod:`mipopt.render.placement` draws the same rows as a picture.
"""

from __future__ import annotations

from collections.abc import Mapping

from mipopt.geometry import reference as geo
from mipopt.instance.types import Instance

CELL = 9  # characters per memory slot in the text view


def occupants(
    instance: Instance, placed: dict[str, tuple[str, int]], profiles: Mapping[str, str] | None = None
) -> dict[str, list[tuple[int, int, str, str]]]:
    """Per GPU: (start, size, workload id, profile name) sorted by start; ``profiles`` are the
    profiles chosen for memory-sized workloads (default: :meth:`Instance.profile_on`)."""
    rows: dict[str, list[tuple[int, int, str, str]]] = {g.id: [] for g in instance.gpus}
    chosen = profiles or {}
    for wid, (gpu_id, start) in placed.items():
        model = instance.gpu(gpu_id).model
        name = chosen.get(wid)
        profile = (
            model.profile(name) if name is not None else instance.profile_on(instance.workload(wid), model)
        )
        assert profile is not None, f"{wid} cannot run on {gpu_id}"
        rows[gpu_id].append((start, profile.memory_slots, wid, profile.name))
    for items in rows.values():
        items.sort()
    return rows


def gpus_text(
    instance: Instance, placed: dict[str, tuple[str, int]], profiles: Mapping[str, str] | None = None
) -> str:
    """Each GPU as a row of slots with its instances, CC and FBK fragmentation (``profiles``:
    :func:`occupants`)."""
    rows = occupants(instance, placed, profiles)
    width_id = max([len(g.id) for g in instance.gpus] + [3])
    width_model = max([len(g.model.name) for g in instance.gpus] + [5])
    lines = []
    slots_max = max((g.model.slots for g in instance.gpus), default=0)
    header = " ".join(str(s).center(CELL - 1) for s in range(slots_max))
    lines.append(f"{'GPU':<{width_id}}  {'model':<{width_model}}  {header}")
    for g in instance.gpus:
        cells = []
        mask = 0
        pos = 0
        for start, size, wid, pname in rows[g.id]:
            cells.extend(["·".center(CELL - 1)] * (start - pos))
            inner = size * CELL - 3
            label = f"{wid} {pname}" if len(f"{wid} {pname}") <= inner else wid
            cells.append("[" + label[:inner].center(inner) + "]")
            pos = start + size
            mask |= ((1 << size) - 1) << start
        cells.extend(["·".center(CELL - 1)] * (g.model.slots - pos))
        cc = geo.configuration_capability(g.model, mask)
        frag = geo.fbk_fragmentation(g.model, mask)
        lines.append(
            f"{g.id:<{width_id}}  {g.model.name:<{width_model}}  {' '.join(cells)}   CC={cc} F={frag}"
        )
    return "\n".join(lines)
