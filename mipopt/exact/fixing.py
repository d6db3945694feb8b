"""Hosts that no placement within a kept hardware can power: reduced-cost fixing across stages.

Once the hardware stage holds hardware at most H, a host whose power would lift the LP
relaxation's hardware above H is off in every placement the later stages may return. The LP says
which (``models/grmu.md``, "Hosts that must stay off"): minimize hardware over the detailed model
under the kept stages; at an optimal vertex of value L, every placement x of hardware h(x)
satisfies h(x) >= L + Σ d_j (x_j - l_j) over the columns at their lower bound l_j, with reduced
costs d_j >= 0, and so a column at 0 with d_j > H - L is 0 in every placement with h(x) <= H. A
host is off there when its power column PHI[h] is, or every count of its GPUs on, N[k, c] (the
LP's vertex is degenerate: on a small cluster the power column of a host of weight 3 had reduced
cost 0 while each of its GPU counts had 4). The later stages (migrations, restarts) then know
that the running workloads of such a host must move host, which their own LP relaxations do not
see.

On the whole Alibaba snapshot (1,213 hosts, hardware 278, LP 277.875) this fixes 595 hosts off,
the 20 holding running workloads among them, and proves migrations 180 (every running workload
moves) without a solve, where the detailed model's root bound was 176 and its proof took 67.6 s."""

from __future__ import annotations

from collections.abc import Iterable

import pyomo.environ as pyo

from mipopt.exact.models.config import ConfigModel, Placed
from mipopt.instance import Instance
from mipopt.solvers import SolverOptions
from mipopt.solvers.highs import lp_relaxation
from mipopt.solvers.matrix import compile_model

#: margin added to ``H - L`` against the LP's tolerances, relative to ``max(1, |H|)``
FIX_TOL = 1e-6


def dark_homes(work: Instance, placed: Placed, fixed: Iterable[str]) -> bool:
    """Whether ``placed`` powers off a host that holds a movable running workload (one not in
    ``fixed``). Fixing can only turn off hosts that every placement within the kept hardware has
    off, ``placed`` among them; only a host with running workloads on it moves the later stages'
    bounds, so where ``placed`` keeps every such host on the LP is not worth its time (IBM set-up,
    1,000 GPUs: 6.5 s for no host)."""
    on = {work.gpu(gpu).host for gpu, _ in placed.values()}
    held = set(fixed)
    return any(
        work.gpu(w.placement.gpu).host not in on
        for w in work.running
        if w.placement is not None and w.id not in held
    )


def hosts_off(built: ConfigModel, hardware_at_most: float, options: SolverOptions) -> frozenset[str] | None:
    """The hosts that the LP relaxation of ``built`` (with the constraints it holds, the kept
    stages among them), minimizing hardware, prices out: their power column, or every count of
    their GPUs on, would lift it above ``hardware_at_most``. They are off in every placement of at
    most that hardware. None when the relaxation was not solved to
    optimality within ``options``' limits. Leaves ``built`` with a ``stage_objective`` of
    hardware, which the next solve replaces."""
    m = built.model
    m.del_component("stage_objective")
    m.stage_objective = pyo.Objective(expr=built.expression("hardware"), sense=pyo.minimize)
    form = compile_model(m)
    lp = lp_relaxation(form, options)
    if lp is None:
        return None
    # a column is fixed when raising it costs more than the slack, with a margin to spare
    slack = hardware_at_most - lp.value + FIX_TOL * max(1.0, abs(hardware_at_most))
    power: dict[str, bool] = {}  # the host's power column priced out
    gpus: dict[str, bool] = {}  # every count of the host's GPUs on priced out
    for var, x, d in zip(form.columns, lp.x, lp.reduced_costs, strict=True):
        name = var.parent_component().local_name
        if name not in ("PHI", "N"):
            continue
        host = built.host_of(var)
        assert host is not None
        out = bool(x <= 1e-9 and d > slack)
        if name == "PHI":
            power[host] = out
        else:
            gpus[host] = gpus.get(host, True) and out
    # a host whose power column is fixed (held on) is no column: it never appears in ``power``
    return frozenset(h for h in power if power[h] or gpus.get(h, False))
