"""The readable summary of a solution: what ``mipopt solve`` prints and
:meth:`mipopt.Solution.summary` returns."""

from __future__ import annotations

import re
from collections.abc import Sequence

from mipopt.instance.types import REJECTION_CODES, Assignment, Instance, Rejection, Solution, Workload
from mipopt.instance.view import gpus_text

#: Up to this many rejections, one line each; beyond, one line per reason with counts.
REJECTIONS_LISTED = 10
#: Ids shown per reason when rejections are grouped.
IDS_SHOWN = 5


def value_text(value: float | None) -> str:
    """A number as tables print it (``g`` format), ``-`` for none."""
    return "-" if value is None else f"{value:g}"


def solution_summary(inst: Instance, sol: Solution, *, joint: bool = False) -> str:
    """Termination, objectives, stages, moves, one row per workload, metrics, the GPUs drawn
    and, when the solution carries them, why workloads are rejected (:func:`rejections_text`).

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
        line = (
            f"objectives: acceptance {o.acceptance:g}, hardware {o.hardware:g}, migrations {o.migrations:g}"
        )
        lines.append(line + ("" if o.restarts is None else f", restarts {o.restarts:g}"))
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
        warning = restart_warning(inst, sol)
        if warning:
            lines.append(warning)
        if moved and joint:
            lines.append("  (--use-case initial keeps running workloads where they are)")
    lines.append("")
    lines.append(f"{'workload':<14} {'profile':<12} {'gpu':<14} {'start':>5}  note")
    where = sol.placement_of()
    for w in inst.workloads:
        a = where.get(w.id)
        if a is None:
            lines.append(f"{w.id:<14} {w.size:<12} {'-':<14} {'-':>5}  rejected")
            continue
        if w.placement is None:
            note = "new"
        elif (w.placement.gpu, w.placement.start) == (a.gpu, a.start):
            note = "running, stays"
        else:
            note = f"running, moved from {w.placement.gpu}:{w.placement.start}"
        profile, sized = _profile_text(inst, w, a)
        lines.append(f"{w.id:<14} {profile:<12} {a.gpu:<14} {a.start:>5}  {note}{sized}")
    if m:
        lines.append("")
        lines.append(
            f"accepted {m['accepted']:g}/{m['workloads']:g}, active hosts {m['active_hosts']:g}, "
            f"active GPUs {m['active_gpus']:g}, memory utilization {m['memory_utilization']:.0%}, "
            f"compute utilization {m['compute_utilization']:.0%}"
        )
    lines.append("")
    lines.append(gpus_text(inst, sol.placed(), sol.profiles()))
    if state := state_text(inst):
        lines.append(state)
    if sol.rejections:
        lines.append("")
        lines.append(rejections_text(sol.rejections))
    return "\n".join(lines)


def _profile_text(inst: Instance, w: Workload, a: Assignment) -> tuple[str, str]:
    """A placed workload's profile and, for a memory-sized one, what it asked for and whether
    the profile is larger than the smallest that fits."""
    if not w.memory_sized or not inst.has_gpu(a.gpu):
        return str(w.profile if w.profile is not None else a.profile), ""
    model = inst.gpu(a.gpu).model
    fitting = inst.profiles_on(w, model)
    default = inst.profile_on(w, model)
    chosen = a.profile or (default.name if default else "?")
    note = f" (sized {w.size}"
    if fitting and model.find(chosen) != fitting[0]:
        note += f"; larger than the smallest that fits, {fitting[0].name}"
    return chosen, note + ")"


def state_text(inst: Instance) -> str:
    """What the GPUs drawn do not show: the GPUs of unknown layout, the idle GPU instances and
    the instance's notes (what its import could not know), or ``""``.

    Examples
    --------
    >>> from mipopt.instance import InstanceBuilder
    >>> b = InstanceBuilder("k8s")
    >>> b.add_host("n1", {"n1-gpu0": "A100-40GB", "n1-gpu1": "A100-40GB"}, unknown_layout=["n1-gpu1"])
    >>> b.add_idle("n1-gpu0", "3g.20gb", 4, gpu_instance_id=1)
    >>> b.notes.append("node n1: 7 MIG devices; which GPU and start each has is not known")
    >>> print(state_text(b.build()))
    layout unknown, nothing placed there: n1-gpu1
    idle GPU instances, free to reuse or destroy: n1-gpu0 3g.20gb@4 (GI 1)
    notes:
      node n1: 7 MIG devices; which GPU and start each has is not known
    """
    lines = []
    if inst.unknown_layout:
        lines.append(f"layout unknown, nothing placed there: {', '.join(inst.unknown_layout)}")
    if inst.idle:
        idle = (
            f"{i.gpu} {i.profile}@{i.start}"
            + ("" if i.gpu_instance_id is None else f" (GI {i.gpu_instance_id})")
            for i in inst.idle
        )
        lines.append(f"idle GPU instances, free to reuse or destroy: {', '.join(idle)}")
    if inst.notes:
        lines.append("notes:")
        lines.extend("  " + note.replace("\n", "\n    ") for note in inst.notes)
    return "\n".join(lines)


def rejections_text(rejections: Sequence[Rejection], *, head: str = "rejected") -> str:
    """Why workloads are rejected: one line each, or, beyond :data:`REJECTIONS_LISTED`, one
    line per reason with its count, the first ids and the first one's message.

    ``head`` opens the first line, before the count (``mipopt validate`` says ``no method
    can place``).

    Examples
    --------
    >>> print(rejections_text([Rejection("w1", "host-capacity", "needs cpu 16, ...")]))
    rejected 1 workload, why:
      w1             host-capacity  needs cpu 16, ...
    >>> many = [Rejection(f"w{i}", "not-chosen", f"no room left ({i})") for i in range(12)]
    >>> print(rejections_text(many))
    rejected 12 workloads, why (by reason, the first ids):
      not-chosen       12  w0, w1, w2, w3, w4 and 7 more
                           e.g. w0: no room left (0)
    """
    n = len(rejections)
    if n <= REJECTIONS_LISTED:
        lines = [f"{head} {n} workload{'s' if n != 1 else ''}, why:"]
        lines += [f"  {r.workload:<14} {r.code:<14} {r.message}" for r in rejections]
        return "\n".join(lines)
    lines = [f"{head} {n} workloads, why (by reason, the first ids):"]
    by_code: dict[str, list[Rejection]] = {}
    for r in rejections:
        by_code.setdefault(r.code, []).append(r)
    order = {code: i for i, code in enumerate(REJECTION_CODES)}
    for code, group in sorted(by_code.items(), key=lambda item: order.get(item[0], len(order))):
        ids = ", ".join(r.workload for r in group[:IDS_SHOWN])
        more = f" and {len(group) - IDS_SHOWN} more" if len(group) > IDS_SHOWN else ""
        lines.append(f"  {code:<14} {len(group):>4}  {ids}{more}")
        lines.append(f"  {'':<14} {'':>4}  e.g. {group[0].workload}: {group[0].message}")
    return "\n".join(lines)


#: Share of the running workloads above which a summary warns of the restarts.
RESTART_WARNING_SHARE = 0.10


def restart_warning(inst: Instance, sol: Solution) -> str | None:
    """One line when ``sol`` restarts more than :data:`RESTART_WARNING_SHARE` of the running
    workloads, or optimized restarts without proving them; None otherwise.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/moves.json")
    >>> print(restart_warning(inst, mipopt.load_solution("instances/moves.target.json")))
    warning: 3 of 5 running workloads restart (more than 10 %); --max-restarts N bounds them, --priority disruption keeps them home unless a new workload needs the room
    """
    where = sol.placed()
    restarted = sum(
        1 for w in inst.running if w.placement and where.get(w.id) != (w.placement.gpu, w.placement.start)
    )
    # an exact answer whose restarts no stage proved (a time limit, Ctrl-C) may restart more than needed
    unproven = (
        restarted > 0
        and bool(sol.stages)
        and sol.status.value != "optimal"
        and not any(st.objective == "restarts" and st.proven for st in sol.stages)
    )
    budget = re.search(r"at most (\d+) restarts", sol.method)  # the method names the budget it held
    bounds = f"within the budget of {budget.group(1)}" if budget else "--max-restarts N bounds them"
    how = f"{bounds}, --priority disruption keeps them home unless a new workload needs the room"
    if unproven:
        return f"warning: {restarted} of {len(inst.running)} running workloads restart, not proven the fewest; {how}"
    if restarted > RESTART_WARNING_SHARE * len(inst.running):
        return (
            f"warning: {restarted} of {len(inst.running)} running workloads restart (more than 10 %); {how}"
        )
    return None
