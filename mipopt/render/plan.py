"""A plan for people: its text form, the NVML operations an operator runs, and a picture.

- :func:`plan_text`: the metrics, then per round its drains, moves and creates;
- :func:`format_operations`: the GPU-instance operations of
  :func:`mipopt.interop.emit.plan_operations` as text, per round in execution order (the three
  phases of :mod:`mipopt.migrate.plan`). Profile ids are the catalog's (``nvidia-smi mig
  -lgip``), which differ between models for one profile name;
- :func:`plan_png`: the GPUs before the plan and after each round, one row per state.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from mipopt.instance import Gpu, Instance
from mipopt.interop.emit import Operation
from mipopt.migrate.plan import Plan, Spot
from mipopt.render import placement as render

__all__ = ["format_operations", "plan_png", "plan_states", "plan_text", "png_gpus"]

#: A cluster of more GPUs than this is drawn with only the GPUs the plan touches ...
PNG_ALL_GPUS = 8
#: ... and at most this many of them,
PNG_MAX_GPUS = 12
#: ... side by side, this many to a line.
PNG_PER_LINE = 4


def _at(spot: Spot) -> str:
    return f"{spot[0]}:{spot[1]}"


def _n(value: float) -> str:
    return f"{value:g}"


def plan_states(instance: Instance, plan: Plan) -> list[dict[str, Spot]]:
    """The placement before the plan, then after each round's phase 3 (drained workloads absent until restored)."""
    state = dict(instance.current_placement())
    states = [dict(state)]
    for r in plan.rounds:
        for d in r.drains:
            state.pop(d.workload, None)
        for m in r.moves:
            state[m.workload] = m.target
        for c in r.creates:
            state[c.workload] = c.target
        states.append(dict(state))
    return states


def plan_text(instance: Instance, plan: Plan) -> str:
    """The plan as a person reads it: a header of metrics, then each round's drains, moves and
    creates (:meth:`Plan.summary <mipopt.migrate.plan.Plan.summary>`).

    Parameters
    ----------
    instance
        The instance the plan starts from (for profile names).
    plan
        A plan for ``instance``.

    Returns
    -------
    str
        Lines without a trailing newline.
    """
    return plan.summary(instance)


def format_operations(operations: Sequence[Operation]) -> str:
    """:func:`mipopt.interop.emit.plan_operations` as text: ``round N`` then one line per operation."""
    lines: list[str] = []
    current = None
    for o in operations:
        if o.round != current:
            current = o.round
            lines.append(f"round {o.round}")
        gi = "" if o.gpu_instance_id is None else f" {o.gpu_instance_id}"
        if o.op == "create":
            what = f"create GPU instance of profile {o.profile} (id {o.profile_id})"
        elif o.op == "reuse":
            what = f"reuse idle GPU instance{gi} {o.profile} (profile id {o.profile_id})"
        else:
            what = f"destroy GPU instance{gi} {o.profile} (profile id {o.profile_id})"
        lines.append(f"  {what} at start {o.start} on GPU {o.gpu}  # {o.workload or 'idle'}: {o.comment}")
    return "\n".join(lines)


def png_gpus(instance: Instance, plan: Plan) -> tuple[list[Gpu], int]:
    """The GPUs :func:`plan_png` draws, and how many touched GPUs it leaves out.

    Every GPU of a cluster of up to ``PNG_ALL_GPUS``; above that, the GPUs the plan touches
    (a drain, a move's source or target, a create), in instance order, at most ``PNG_MAX_GPUS``.
    """
    if len(instance.gpus) <= PNG_ALL_GPUS:
        return list(instance.gpus), 0
    touched: set[str] = set()
    for r in plan.rounds:
        touched.update(d.source[0] for d in r.drains)
        for mv in r.moves:
            touched.update((mv.source[0], mv.target[0]))
        touched.update(c.target[0] for c in r.creates)
    gpus = [g for g in instance.gpus if g.id in touched] or list(instance.gpus[:1])
    return gpus[:PNG_MAX_GPUS], max(len(gpus) - PNG_MAX_GPUS, 0)


def _round_caption(plan: Plan, index: int, limit: int = 3, width: int = 36) -> str:
    r = plan.rounds[index]
    items = [f"drain {d.workload}" for d in r.drains]
    items += [
        f"{mv.workload} {_at(mv.source)}→{_at(mv.target)}{' park' if mv.park else ''}" for mv in r.moves
    ]
    items += [f"{'create' if c.source is None else 'restore'} {c.workload}" for c in r.creates]
    items = [i if len(i) <= width else i[: width - 1] + "~" for i in items]
    shown = items[:limit] + ([f"... {len(items) - limit} more"] if len(items) > limit else [])
    return "\n".join(shown)


def plan_png(instance: Instance, plan: Plan, path: str | Path, title: str = "") -> None:
    """Draw the GPUs before the plan and after each round, one row of GPUs per state, to a PNG.

    Instances created in a round (moves, parks, new workloads, restores) have a red edge in
    that round's row; the right margin lists the round's steps. A cluster of more than
    ``PNG_ALL_GPUS`` GPUs shows only the GPUs the plan touches (at most ``PNG_MAX_GPUS``).
    The file is written atomically.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    instance = instance.at_profiles(plan.final, plan.profiles)  # draw the profiles chosen
    gpus, left_out = png_gpus(instance, plan)
    states = plan_states(instance, plan)
    labels = ["before"] + [f"after round {i}" for i in range(1, len(plan.rounds) + 1)]
    if plan.rounds:
        labels[-1] += "\n(target)"
    if states[-1] != plan.final:  # a plan read from elsewhere: show where it should end too
        states.append(dict(plan.final))
        labels.append("target")
    occupied = [render.occupants(instance, s) for s in states]
    color = render.profile_colors(p for rows in occupied for g in gpus for *_, p in rows[g.id])
    marked: list[frozenset[str]] = [frozenset()] + [
        frozenset([mv.workload for mv in r.moves] + [c.workload for c in r.creates]) for r in plan.rounds
    ]
    marked += [frozenset()] * (len(states) - len(marked))

    # GPUs side by side, PNG_PER_LINE to a line: a state of more GPUs wraps onto several lines,
    # each GPU then labelled on every line so that a tall figure still reads.
    per_line = max(min(len(gpus), PNG_PER_LINE), 1)
    lines = -(-len(gpus) // per_line)
    wrapped = lines > 1
    column = max(g.model.slots for g in gpus) + 1.0
    width = per_line * column - 1.0
    pitch = 1.35 if wrapped else 1.0
    block = lines * pitch + (0.5 if wrapped else 0.0)
    head = 0.0 if wrapped else 0.4
    n = len(states)
    height = n * block + head
    slot_in = 0.42
    fig, ax = plt.subplots(figsize=(slot_in * width + 4.8, 1.3 + 0.62 * height))
    ticks = []
    for row, (rows, hot) in enumerate(zip(occupied, marked, strict=True)):
        top = height - head - row * block
        ticks.append(top - lines * pitch / 2)
        for k, g in enumerate(gpus):
            gx, y = (k % per_line) * column, top - (k // per_line + 1) * pitch
            render.draw_gpu(
                ax,
                g.model.slots,
                rows[g.id],
                gx,
                y,
                color,
                fontsize=7,
                marked=hot,
                chars_per_slot=slot_in * 17,
            )
            if wrapped or row == 0:
                ax.text(
                    gx + g.model.slots / 2,
                    y + 0.95,
                    f"{g.id} ({g.model.name})",
                    ha="center",
                    va="bottom",
                    fontsize=6.5 if wrapped else 8,
                    color="0.3" if wrapped else "black",
                )
        if wrapped and row:
            ax.axhline(top + 0.25, color="0.8", lw=0.8)
        if 0 < row <= len(plan.rounds):
            caption = _round_caption(plan, row - 1, limit=3 * lines)
            ax.text(width + 0.5, ticks[-1], caption, va="center", fontsize=7, family="monospace")
    ax.set_xlim(-0.2, width + 0.2)
    ax.set_ylim(0, height)
    ax.set_yticks(ticks, labels, fontsize=8)
    ax.set_xticks([])
    ax.tick_params(length=0)
    for side in ("top", "right", "left", "bottom"):
        ax.spines[side].set_visible(False)
    render.legend(ax, color, below=True)
    m = plan.metrics
    summary = (
        f"{plan.semantics}, {len(plan.rounds)} round{'' if len(plan.rounds) == 1 else 's'}, "
        f"{_n(m.get('moves', 0))} moves "
        f"({_n(m.get('extra_moves', 0))} parking), {_n(m.get('disruptive_moves', 0))} disruptive"
    )
    if left_out:
        summary += f"; {left_out} more GPUs touched, not shown"
    ax.set_title(f"{title or plan.instance}\n{summary}", fontsize=10)
    fig.tight_layout()
    render.save_png(fig, path)
