"""The readable summary of a solution: what ``mipopt solve`` prints and
:meth:`mipopt.Solution.summary` returns."""

from __future__ import annotations

from mipopt.instance.types import Instance, Solution
from mipopt.instance.view import gpus_text


def value_text(value: float | None) -> str:
    """A number as tables print it (``g`` format), ``-`` for none."""
    return "-" if value is None else f"{value:g}"


def solution_summary(inst: Instance, sol: Solution, *, joint: bool = False) -> str:
    """Termination, objectives, stages, moves, one row per workload, metrics and the GPUs drawn.

    ``joint`` says that running workloads were free to move, so a move is explained as such.
    """
    lines = [
        f"instance {inst.name!r}: {len(inst.hosts)} hosts, {len(inst.gpus)} GPUs, {len(inst.workloads)} workloads"
    ]
    lines.append(f"method: {sol.method}")
    lines.append(
        f"termination: {sol.termination.value}, status: {sol.status.value}, runtime {sol.runtime_s:.3f} s"
    )
    if sol.objectives is not None:
        o = sol.objectives
        lines.append(
            f"objectives: acceptance {o.acceptance:g}, hardware {o.hardware:g}, migrations {o.migrations:g}"
        )
    if sol.status.value != "optimal" and sol.bound is not None:
        gap = "-" if sol.gap is None else f"{sol.gap:.2%}"
        lines.append(f"unproven: bound {sol.bound:g}, gap {gap} (the first unproven stage's, in its units)")
    if sol.stages:
        lines.append("")
        lines.append(
            f"{'stage':<12} {'value':>10} {'bound':>10} {'gap':>8}  {'proven':<6} {'model':<10} {'time':>8}"
        )
        for st in sol.stages:
            gap = "-" if st.gap is None else f"{st.gap:.2%}"
            lines.append(
                f"{st.objective:<12} {value_text(st.value):>10} {value_text(st.bound):>10} {gap:>8}  "
                f"{'yes' if st.proven else 'no':<6} {st.model:<10} {st.runtime_s:>7.2f}s"
            )
    m = sol.metrics
    if m and inst.running:
        moved = int(m.get("moves_inter_host", 0) + m.get("moves_inter_gpu", 0))
        line = (
            f"moves: {moved} of {len(inst.running)} running workloads move to another GPU "
            f"({m.get('moved_memory_gb', 0.0):g} GB)"
        )
        if m.get("moves_intra_gpu"):
            line += f", {m['moves_intra_gpu']:g} change start on their own GPU"
        lines.append(line)
        if moved and joint:
            lines.append("  (--use-case initial keeps running workloads where they are)")
    lines.append("")
    lines.append(f"{'workload':<14} {'profile':<12} {'gpu':<14} {'start':>5}  note")
    where = sol.placement_of()
    for w in inst.workloads:
        a = where.get(w.id)
        if a is None:
            lines.append(f"{w.id:<14} {w.profile!s:<12} {'-':<14} {'-':>5}  rejected")
            continue
        if w.placement is None:
            note = "new"
        elif (w.placement.gpu, w.placement.start) == (a.gpu, a.start):
            note = "running, stays"
        else:
            note = f"running, moved from {w.placement.gpu}:{w.placement.start}"
        lines.append(f"{w.id:<14} {w.profile!s:<12} {a.gpu:<14} {a.start:>5}  {note}")
    if m:
        lines.append("")
        lines.append(
            f"accepted {m['accepted']:g}/{m['workloads']:g}, active hosts {m['active_hosts']:g}, "
            f"active GPUs {m['active_gpus']:g}, memory utilization {m['memory_utilization']:.0%}, "
            f"compute utilization {m['compute_utilization']:.0%}"
        )
    lines.append("")
    lines.append(gpus_text(inst, sol.placed()))
    return "\n".join(lines)
