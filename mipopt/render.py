"""Pictures of GPUs: each GPU a row of memory slots, as text and as a PNG."""

from __future__ import annotations

from pathlib import Path

from mipopt.geometry import reference as geo
from mipopt.instance import Instance
from mipopt.io import write_atomic

CELL = 9  # characters per memory slot in the text view


def _occupants(
    instance: Instance, placed: dict[str, tuple[str, int]]
) -> dict[str, list[tuple[int, int, str, str]]]:
    """Per GPU: (start, size, workload id, profile name) sorted by start."""
    rows: dict[str, list[tuple[int, int, str, str]]] = {g.id: [] for g in instance.gpus}
    for wid, (gpu_id, start) in placed.items():
        profile = instance.gpu(gpu_id).model.profile(instance.workload(wid).profile)
        rows[gpu_id].append((start, profile.memory_slots, wid, profile.name))
    for items in rows.values():
        items.sort()
    return rows


def text(instance: Instance, placed: dict[str, tuple[str, int]]) -> str:
    """Each GPU as a row of slots with its instances, CC and FBK fragmentation."""
    rows = _occupants(instance, placed)
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


def png(instance: Instance, placed: dict[str, tuple[str, int]], path: str | Path, title: str = "") -> None:
    """Draw each GPU as a row of slots, instances colored by profile, to a PNG file."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle

    rows = _occupants(instance, placed)
    names = sorted({p for items in rows.values() for *_, p in items})
    cmap = plt.get_cmap("tab20")
    color = {n: cmap(i % 20) for i, n in enumerate(names)}
    n = len(instance.gpus)
    slots_max = max((g.model.slots for g in instance.gpus), default=8)
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * slots_max, 0.9 + 0.45 * max(n, 1)))
    for row, g in enumerate(instance.gpus):
        y = n - 1 - row
        for s in range(g.model.slots):
            ax.add_patch(Rectangle((s, y + 0.1), 1, 0.8, facecolor="white", edgecolor="0.75", lw=0.8))
        for start, size, wid, pname in rows[g.id]:
            ax.add_patch(
                Rectangle((start, y + 0.1), size, 0.8, facecolor=color[pname], edgecolor="black", lw=1)
            )
            ax.text(start + size / 2, y + 0.5, wid, ha="center", va="center", fontsize=8)
    ax.set_xlim(0, slots_max)
    ax.set_ylim(0, max(n, 1))
    ax.set_yticks(
        [n - 1 - r + 0.5 for r in range(n)], [f"{g.id} ({g.model.name})" for g in instance.gpus], fontsize=8
    )
    ax.set_xticks([s + 0.5 for s in range(slots_max)], [str(s) for s in range(slots_max)])
    ax.set_xlabel("memory slot")
    ax.tick_params(length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    if names:
        handles = [Rectangle((0, 0), 1, 1, facecolor=color[p], edgecolor="black") for p in names]
        ax.legend(handles, names, loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)
    ax.set_title(title or instance.name, fontsize=10)
    fig.tight_layout()
    try:
        write_atomic(Path(path), lambda fh: fig.savefig(fh, format="png", dpi=120), text=False)
    finally:
        plt.close(fig)
