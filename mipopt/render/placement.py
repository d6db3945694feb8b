"""Pictures of GPUs: each GPU a row of memory slots, as a PNG (the text view is :mod:`mipopt.instance.view`)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from mipopt.instance import Instance
from mipopt.instance.view import occupants
from mipopt.io import write_atomic


def profile_colors(names: Iterable[str]) -> dict[str, Any]:
    """One color per profile name, in sorted order, so pictures of one cluster agree."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    cmap = plt.get_cmap("tab20")
    return {n: cmap(i % 20) for i, n in enumerate(sorted(set(names)))}


def draw_gpu(
    ax: Any,
    slots: int,
    items: list[tuple[int, int, str, str]],
    x: float,
    y: float,
    color: dict[str, Any],
    *,
    fontsize: float = 8,
    marked: frozenset[str] = frozenset(),
    chars_per_slot: float | None = None,
) -> None:
    """Draw one GPU of ``slots`` memory slots with its instances (see :func:`occupants`) at ``(x, y)``.

    Slot ``s`` spans ``[x + s, x + s + 1]`` and the GPU ``[y + 0.1, y + 0.9]``; instances of
    workloads in ``marked`` get a thick red edge. With ``chars_per_slot``, a workload id longer
    than its instance has room for is cut short (ending in ``~``).
    """
    from matplotlib.patches import Rectangle

    for s in range(slots):
        ax.add_patch(Rectangle((x + s, y + 0.1), 1, 0.8, facecolor="white", edgecolor="0.75", lw=0.8))
    for start, size, wid, pname in items:
        hot = wid in marked
        ax.add_patch(
            Rectangle(
                (x + start, y + 0.1),
                size,
                0.8,
                facecolor=color[pname],
                edgecolor="red" if hot else "black",
                lw=2.2 if hot else 1,
            )
        )
        room = int(size * chars_per_slot) if chars_per_slot else len(wid)
        label = wid if len(wid) <= room else wid[: max(room - 1, 1)] + "~"
        ax.text(x + start + size / 2, y + 0.5, label, ha="center", va="center", fontsize=fontsize)


def legend(ax: Any, color: dict[str, Any], *, below: bool = False) -> None:
    """The profiles' colors, right of the axes (or below them, in one line)."""
    from matplotlib.patches import Rectangle

    if not color:
        return
    handles = [Rectangle((0, 0), 1, 1, facecolor=c, edgecolor="black") for c in color.values()]
    if below:
        ax.legend(
            handles,
            list(color),
            loc="upper center",
            bbox_to_anchor=(0.5, 0),
            ncol=min(len(color), 8),
            fontsize=8,
            frameon=False,
        )
    else:
        ax.legend(handles, list(color), loc="upper left", bbox_to_anchor=(1.01, 1), fontsize=8, frameon=False)


def save_png(fig: Any, path: str | Path, dpi: int = 120) -> None:
    """Write a matplotlib figure to ``path`` atomically and close it."""
    import matplotlib.pyplot as plt

    try:
        write_atomic(Path(path), lambda fh: fig.savefig(fh, format="png", dpi=dpi), text=False)
    finally:
        plt.close(fig)


def png(
    instance: Instance,
    placed: dict[str, tuple[str, int]],
    path: str | Path,
    title: str = "",
    profiles: Mapping[str, str] | None = None,
) -> None:
    """Draw each GPU as a row of slots, instances colored by profile, to a PNG file
    (``profiles``: those chosen for memory-sized workloads, :func:`mipopt.instance.view.occupants`)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    rows = occupants(instance, placed, profiles)
    color = profile_colors(p for items in rows.values() for *_, p in items)
    n = len(instance.gpus)
    slots_max = max((g.model.slots for g in instance.gpus), default=8)
    fig, ax = plt.subplots(figsize=(1.6 + 0.9 * slots_max, 0.9 + 0.45 * max(n, 1)))
    for row, g in enumerate(instance.gpus):
        draw_gpu(ax, g.model.slots, rows[g.id], 0, n - 1 - row, color)
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
    legend(ax, color)
    ax.set_title(title or instance.name, fontsize=10)
    fig.tight_layout()
    save_png(fig, path)
