"""GRMU's placement ILP as printed (``--model grmu-paper``), Eqs. 3-26 of the GRMU paper.

The paper's variables, one for one: ``x[i,j]`` (VM i on host j), ``y[i,j,k]`` (its
GPU instance on GPU k of host j), ``z[i,j,k]`` (start offset), ``alpha[i,i',j,k]``
(order of two instances on one GPU), ``beta[i]`` (start = g_i beta_i),
``phi[j]`` and ``gamma[j,k]`` (host and GPU powered on), ``m[i,j]`` and
``omega[i,j,k]`` (allocation changed against the current placement x', y').
Constraints carry their equation number (``eq12_order``, ``eq16_last_start`` ...).
What the paper leaves out and the decision problem needs (running workloads kept,
one ``+me`` per GPU, per-profile maxima, legal starts that are not the multiples
of g_i, exact phi, m and omega) is added under names without a number.
``models/grmu-paper.md`` reads beside this file, equation by equation.

A new memory-sized workload's profile is a decision: where it has a choice it enters the
model as one copy ``i@p`` per profile name p it may take on some GPU model, each copy a
workload of profile p, and ``eq8_one_profile`` places at most one copy (``models/grmu-paper.md``,
"Memory-sized workloads").

The model exists to reproduce the paper and to show why formulation matters: the
overlap constraints (Eqs. 12-13) are big-M disjunctions over every ordered pair of
workloads on every GPU, so the model has ``O(|N|^2 |GPUs|)`` binaries and an LP
relaxation that knows almost nothing. :mod:`mipopt.exact.models.grmu_slots` is the same
decision problem written tightly.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Any

import pyomo.environ as pyo

from mipopt.catalog import Profile
from mipopt.exact.models.grmu_slots import OBJECTIVES
from mipopt.exact.preprocess import profile_options
from mipopt.instance import Host, Instance, Workload

__all__ = ["OBJECTIVES", "GrmuPaperModel", "build_grmu_paper"]


@dataclass
class GrmuPaperModel:
    """A built paper-form model and the parameters needed to read placements in and out.

    Attributes
    ----------
    instance
        The instance the model was built from.
    model
        The Pyomo model, no objective active; objective expressions are ``model.obj_expr[name]``.
    big_m
        The constant B of Eqs. 12-15 and 17-18: the smallest single value valid for all of them.
    g, s
        Table 5's g_i (memory slots) and s_i (last legal start) of workload i on GPU k, keyed
        ``(workload id, GPU id)``, for the GPUs whose model has the workload's profile and is
        allowed to it.
    regular
        The ``(workload id, GPU id)`` pairs whose legal starts are exactly the multiples of g_i
        up to s_i, so that Eqs. 14-16 state them; the others choose a start with ``lam``.
    x_prev, y_prev
        The parameters x'_ij and y'_ijk of Table 4 (the current placement).
    copies
        A new memory-sized workload's copies: copy id -> (workload id, profile name).
    stats
        Model size: variables, constraints, binaries, alpha (ordering binaries), big_m.
    objectives
        The objective names :meth:`expression` knows.
    """

    instance: Instance
    model: pyo.ConcreteModel
    big_m: int
    g: dict[tuple[str, str], int]
    s: dict[tuple[str, str], int]
    regular: set[tuple[str, str]]
    x_prev: dict[tuple[str, str], int]
    y_prev: dict[tuple[str, str, str], int]
    copies: dict[str, tuple[str, str]] = field(default_factory=dict)
    stats: dict[str, int] = field(default_factory=dict)
    objectives: tuple[str, ...] = OBJECTIVES
    relaxed: frozenset[str] = frozenset()
    profiles: dict[str, str] = field(default_factory=dict)  # the last decode's, memory-sized workloads

    def expression(self, name: str) -> pyo.Expression:
        """Objective ``name`` (Eq. 3, 4 or 5, restarts, or a measure of
        :data:`~mipopt.exact.models.grmu_slots.MEASURES`); pinned workloads' terms are included."""
        return self.model.obj_expr[name]

    def decode(self) -> dict[str, tuple[str, int]]:
        """The placement in the model's current variable values: workload -> (GPU, start); a
        memory-sized workload takes the profile of its placed copy (:attr:`profiles`)."""
        mdl = self.model
        placed: dict[str, tuple[str, int]] = {}
        self.profiles = {}
        for i, j, k in mdl.IJK:
            value = mdl.y[i, j, k].value
            if value is not None and value > 0.5:
                wid, name = self.copies.get(i, (i, ""))
                placed[wid] = (k, round(mdl.z[i, j, k].value))
                if name:
                    self.profiles[wid] = name
        return placed

    def warm_start(
        self, placed: dict[str, tuple[str, int]], profiles: dict[str, str] | None = None
    ) -> dict[str, float]:
        """Values of every variable, by name, that encode ``placed`` (a legal placement, with the
        ``profiles`` chosen for memory-sized workloads: the smallest that fits where not given).

        Absent instances get ``z = 0`` and ``beta = 0``; ``alpha[i,i',j,k]`` is 0 when i
        comes before i' on GPU k, or i is absent there, and 1 otherwise. With B chosen as in
        :func:`build_grmu_paper` these satisfy Eqs. 12-15 (``models/grmu-paper.md``, Big-M).
        """
        mdl = self.model
        values: dict[str, float] = {}
        placed = self._by_copy(placed, profiles or {})

        def put(var: Any, value: float) -> None:
            values[var.name] = float(value)

        start_on = {(wid, gpu): start for wid, (gpu, start) in placed.items()}
        host_on = {(wid, self.instance.gpu(gpu).host) for wid, (gpu, _) in placed.items()}
        for i, j, k in mdl.IJK:
            put(mdl.y[i, j, k], (i, k) in start_on)
            put(mdl.z[i, j, k], start_on.get((i, k), 0))
            put(mdl.omega[i, j, k], ((i, k) in start_on) != self.y_prev[i, j, k])
        for i, j in mdl.IJ:
            put(mdl.x[i, j], (i, j) in host_on)
            put(mdl.m[i, j], ((i, j) in host_on) != self.x_prev[i, j])
        for i in mdl.N:
            gpu, start = placed.get(i, ("", 0))
            put(mdl.beta[i], start // self.g[i, gpu] if (i, gpu) in self.regular else 0)
        for i, j, k, t in mdl.LAM:
            put(mdl.lam[i, j, k, t], start_on.get((i, k)) == t)
        for i, ii, j, k in mdl.PAIRS:
            zi, zii = start_on.get((i, k)), start_on.get((ii, k))
            put(mdl.alpha[i, ii, j, k], zi is not None and (zii is None or zii < zi))
        for j in mdl.M:
            put(mdl.phi[j], any(h == j for _, h in host_on))
        gpus_on = {gpu for gpu, _ in placed.values()}
        for j, k in mdl.JK:
            put(mdl.gamma[j, k], k in gpus_on)
        current = self.instance.current_placement()
        for i in mdl.keep:
            put(mdl.keep[i], placed.get(i) == current[i])
        return values

    def _by_copy(
        self, placed: dict[str, tuple[str, int]], chosen: dict[str, str]
    ) -> dict[str, tuple[str, int]]:
        """``placed`` with each memory-sized workload under the copy of the profile it takes."""
        if not self.copies:
            return placed
        copy_of = {(wid, name): i for i, (wid, name) in self.copies.items()}
        out: dict[str, tuple[str, int]] = {}
        for wid, (gpu, start) in placed.items():
            w = self.instance.workload(wid)
            name = chosen.get(wid)
            if name is None and w.memory_sized:
                default = self.instance.profile_on(w, self.instance.gpu(gpu).model)
                name = None if default is None else default.name
            out[copy_of.get((wid, name or ""), wid)] = (gpu, start)
        return out


def build_grmu_paper(instance: Instance, *, big_m: int | None = None) -> GrmuPaperModel:
    """Build the GRMU ILP of ``instance`` as the paper prints it (Eqs. 6-26).

    Running workloads stay placed (``running_kept``); pinned ones have x, y, z and beta
    fixed at their placement; new ones may be rejected. The objective expressions
    ``acceptance`` (Eq. 3), ``hardware`` (Eq. 4) and ``migrations`` (Eq. 5) are built, and
    (not in the paper) ``restarts`` with the budget's measures, through a binary ``keep`` per
    running workload that is 1 only if it ends on its GPU at its start;
    no objective is active.

    Parameters
    ----------
    instance
        Any valid instance; GPU models may differ between GPUs and hosts.
    big_m
        Override B. Only to show what a B below the smallest valid value does: it cuts
        off feasible placements (``tests/exact/test_grmu_paper.py``).

    Returns
    -------
    GrmuPaperModel
    """
    p = _parameters(instance, big_m)
    mdl = pyo.ConcreteModel(name=f"grmu-paper[{instance.name}]")
    _index_sets(mdl, p)
    _eq26_variables(mdl, p)
    _eq6_eq7_host_cpu_ram(mdl, p)
    _eq8_eq11_one_host_one_gpu(mdl, p)
    _eq8_one_profile(mdl, p)
    _running_kept(mdl, p)
    _eq12_eq13_order(mdl, p)
    _eq14_eq15_start_multiple(mdl, p)
    _start_choice(mdl, p)
    _eq16_last_start(mdl, p)
    _eq17_eq18_characteristic(mdl, p)
    _media_once(mdl, p)
    _profile_max(mdl, p)
    _eq19_eq21_powered_on(mdl, p)
    _host_off(mdl, p)
    _eq22_eq23_host_changed(mdl, p)
    _eq24_eq25_gpu_changed(mdl, p)
    _pinned_fixed(mdl, p)
    exprs = _eq3_eq5_objectives(mdl, p)
    exprs.update(_restarts(mdl, p))
    mdl.obj_expr = pyo.Expression(list(exprs), rule=lambda _, name: exprs[name])
    stats = {
        "variables": mdl.nvariables(),
        "constraints": mdl.nconstraints(),
        "binaries": sum(1 for v in mdl.component_data_objects(pyo.Var) if v.is_binary()),
        "alpha": len(mdl.PAIRS),
        "big_m": p.big_m,
    }
    return GrmuPaperModel(instance, mdl, p.big_m, p.g, p.s, p.regular, p.x_prev, p.y_prev, p.copies, stats)


# --- the paper's parameters (Tables 4-5) and sets


@dataclass
class _Parameters:
    """The paper's parameters (Tables 4-5) and the index maps that the rows share."""

    instance: Instance
    host_of: dict[str, str]  # GPU -> host
    hosts: dict[str, Host]
    work: dict[str, Workload]
    current: dict[str, tuple[str, int]]  # running workload -> (GPU, start)
    gpus_of: dict[str, list[str]]  # host -> its GPUs (P_j)
    profile: dict[tuple[str, str], Profile]  # (workload, GPU) -> profile, where it may go
    g: dict[tuple[str, str], int]  # memory slots
    s: dict[tuple[str, str], int]  # last legal start
    regular: set[tuple[str, str]]  # legal starts are the multiples of g up to s
    irregular: list[tuple[str, str, str]]  # (i, j, k) that choose a start with lam
    H: dict[str, int]  # H_jk, per GPU
    h: dict[tuple[str, str], int]  # h_i, per (workload, GPU)
    beta_max: dict[str, int]
    big_m: int  # B
    x_prev: dict[tuple[str, str], int]  # x'_ij
    y_prev: dict[tuple[str, str, str], int]  # y'_ijk
    copies: dict[str, tuple[str, str]]  # a new memory-sized workload's copy -> (workload, profile name)


def _parameters(inst: Instance, big_m: int | None) -> _Parameters:
    """Tables 4-5 per (workload, GPU), the codes H and h, B and the current placement x', y'."""
    gpus = inst.gpus
    host_of = {gpu.id: gpu.host for gpu in gpus}
    hosts = {h.id: h for h in inst.hosts}
    current = inst.current_placement()

    # Table 5 per (workload, GPU): a workload's profile depends on the GPU's model; a new
    # memory-sized workload with a choice has a copy per profile name it may take on some model
    work: dict[str, Workload] = {}
    profile: dict[tuple[str, str], Profile] = {}
    copies: dict[str, tuple[str, str]] = {}
    taken = {w.id for w in inst.workloads}
    for w in inst.workloads:
        options = {gpu.id: profile_options(inst, w, gpu.model) for gpu in gpus}
        if all(len(ps) <= 1 for ps in options.values()):  # no choice: one profile per model
            work[w.id] = w
            profile.update(((w.id, k), ps[0]) for k, ps in options.items() if ps)
            continue
        for name in dict.fromkeys(q.name for ps in options.values() for q in ps):
            i = f"{w.id}@{name}"
            while i in taken:  # an id of the instance already
                i += "@"
            taken.add(i)
            work[i], copies[i] = replace(w, id=i), (w.id, name)
            profile.update(((i, k), q) for k, ps in options.items() for q in ps if q.name == name)
    g = {key: p.memory_slots for key, p in profile.items()}
    s = {key: max(p.starts) for key, p in profile.items()}
    regular = {key for key, p in profile.items() if set(p.starts) == set(range(0, s[key] + 1, g[key]))}
    H, h = _characteristics(inst, work, profile)

    # B, the smallest single constant valid everywhere (models/grmu-paper.md, "Big-M"):
    # Eqs. 12-13 need the largest GPU's slot count, Eq. 15 with i absent needs g_ik beta_i,
    # Eqs. 17-18 with y = 0 need |h_i - H_jk|.
    beta_max: dict[str, int] = defaultdict(int)
    for key in regular:
        beta_max[key[0]] = max(beta_max[key[0]], s[key] // g[key])
    smallest = max(
        [
            max((gpu.model.slots for gpu in gpus), default=0),
            *(g[key] * beta_max[key[0]] for key in regular),
            *(abs(h[key] - H[key[1]]) for key in h),
        ]
    )

    return _Parameters(
        inst,
        host_of,
        hosts,
        work,
        current,
        {j: [gpu.id for gpu in gpus if gpu.host == j] for j in hosts},
        profile,
        g,
        s,
        regular,
        [(i, host_of[k], k) for i in work for k in host_of if (i, k) in profile and (i, k) not in regular],
        H,
        h,
        beta_max,
        smallest if big_m is None else big_m,
        # parameters x', y' (Table 4): the current placement
        {(i, j): int(i in current and host_of[current[i][0]] == j) for i in work for j in hosts},
        {(i, host_of[k], k): int(i in current and current[i][0] == k) for i in work for k in host_of},
        copies,
    )


def _characteristics(
    inst: Instance, work: dict[str, Workload], profile: dict[tuple[str, str], Profile]
) -> tuple[dict[str, int], dict[tuple[str, str], int]]:
    """H_jk per GPU and h_i per (workload, GPU) of Eqs. 17-18."""
    # H_jk: a code per GPU model (Table 5's 100 for A100 is one such code). h_i: the code of
    # the one model workload i may use; a workload allowed on several models (or none) gets,
    # per GPU, H_jk where it may run and 0 where not: one number cannot name a set of models.
    gpus = inst.gpus
    code: dict[str, int] = {}
    for gpu in gpus:
        code.setdefault(gpu.model.name, len(code) + 1)
    H = {gpu.id: code[gpu.model.name] for gpu in gpus}
    h: dict[tuple[str, str], int] = {}
    for i in work:
        usable = {H[gpu.id] for gpu in gpus if (i, gpu.id) in profile}
        for gpu in gpus:
            if len(usable) == 1:
                h[i, gpu.id] = next(iter(usable))
            else:
                h[i, gpu.id] = H[gpu.id] if (i, gpu.id) in profile else 0
    return H, h


def _index_sets(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """The paper's sets: workloads N, hosts M, GPUs (j, k), and the pairs and triples of the rows."""
    work, hosts, host_of = p.work, p.hosts, p.host_of
    mdl.N = pyo.Set(initialize=list(work), ordered=True)
    mdl.M = pyo.Set(initialize=list(hosts), ordered=True)
    mdl.JK = pyo.Set(initialize=[(gpu.host, gpu.id) for gpu in p.instance.gpus], dimen=2, ordered=True)
    mdl.IJ = pyo.Set(initialize=[(i, j) for i in work for j in hosts], dimen=2, ordered=True)
    mdl.IJK = pyo.Set(initialize=[(i, host_of[k], k) for i in work for k in host_of], dimen=3, ordered=True)
    mdl.PAIRS = pyo.Set(
        initialize=[(i, ii, j, k) for j, k in mdl.JK for i in work for ii in work if i != ii],
        dimen=4,
        ordered=True,
    )
    mdl.LAM = pyo.Set(
        initialize=[(i, j, k, t) for i, j, k in p.irregular for t in p.profile[i, k].starts],
        dimen=4,
        ordered=True,
    )


def _eq26_variables(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eq. 26, the domains, with finite bounds on z and beta so that CP-SAT accepts them."""
    inst = p.instance
    mdl.x = pyo.Var(mdl.IJ, domain=pyo.Binary)
    mdl.y = pyo.Var(mdl.IJK, domain=pyo.Binary)
    mdl.z = pyo.Var(
        mdl.IJK, domain=pyo.NonNegativeIntegers, bounds=lambda _, i, j, k: (0, inst.gpu(k).model.slots)
    )
    mdl.alpha = pyo.Var(mdl.PAIRS, domain=pyo.Binary)
    mdl.beta = pyo.Var(mdl.N, domain=pyo.Integers, bounds=lambda _, i: (0, p.beta_max[i]))
    mdl.phi = pyo.Var(mdl.M, domain=pyo.Binary)
    mdl.gamma = pyo.Var(mdl.JK, domain=pyo.Binary)
    mdl.m = pyo.Var(mdl.IJ, domain=pyo.Binary)
    mdl.omega = pyo.Var(mdl.IJK, domain=pyo.Binary)
    mdl.lam = pyo.Var(mdl.LAM, domain=pyo.Binary)  # not in the paper: irregular legal starts


# --- the rows, one function per equation or family (models/grmu-paper.md, Constraints)


def _eq6_eq7_host_cpu_ram(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 6-7, ``eq6_cpu`` and ``eq7_ram``: host cpu and ram; None is unlimited."""
    x, workloads = mdl.x, list(p.work.values())

    def capacity(attr: str) -> pyo.Constraint:
        def rule(_: Any, j: str) -> Any:
            cap = getattr(p.hosts[j], attr)
            need = [(getattr(w, attr), w.id) for w in workloads if getattr(w, attr) > 0]
            if cap is None or not need:
                return pyo.Constraint.Skip
            return sum(a * x[i, j] for a, i in need) <= cap

        return pyo.Constraint(mdl.M, rule=rule)

    mdl.eq6_cpu = capacity("cpu")
    mdl.eq7_ram = capacity("ram_gb")


def _eq8_eq11_one_host_one_gpu(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 8-11: at most one host and one GPU per workload, and the two agree."""
    x, y, hosts = mdl.x, mdl.y, p.hosts
    mdl.eq8_one_host = pyo.Constraint(mdl.N, rule=lambda _, i: sum(x[i, j] for j in hosts) <= 1)
    mdl.eq9_one_gpu = pyo.Constraint(mdl.N, rule=lambda _, i: sum(y[i, j, k] for j, k in mdl.JK) <= 1)
    mdl.eq10_gpu_if_host = pyo.Constraint(
        mdl.IJ, rule=lambda _, i, j: x[i, j] <= sum(y[i, j, k] for k in p.gpus_of[j])
    )
    mdl.eq11_host_if_gpu = pyo.Constraint(mdl.IJK, rule=lambda _, i, j, k: y[i, j, k] <= x[i, j])


def _eq8_one_profile(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """``eq8_one_profile`` (Eq. 8 over a memory-sized workload's copies): one copy placed at most."""
    copies_of: dict[str, list[str]] = defaultdict(list)
    for i, (wid, _) in p.copies.items():
        copies_of[wid].append(i)
    if copies_of:
        mdl.eq8_one_profile = pyo.Constraint(
            list(copies_of), rule=lambda _, w: sum(mdl.x[i, j] for i in copies_of[w] for j in p.hosts) <= 1
        )


def _running_kept(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """``running_kept`` (not in the paper, where eviction costs 2 delta_i): running workloads stay placed."""
    x, hosts = mdl.x, p.hosts
    mdl.running_kept = pyo.Constraint(list(p.current), rule=lambda _, i: sum(x[i, j] for j in hosts) == 1)


def _eq12_eq13_order(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 12-13: no overlap, for every ordered pair on every GPU, placed there or not."""
    y, z, alpha, B = mdl.y, mdl.z, mdl.alpha, p.big_m

    def size(i: str, j: str, k: str) -> Any:
        """g_i y_ijk; g_i is 0 on a GPU without the profile (y_ijk is 0 there by Eqs. 17-18)."""
        return p.g.get((i, k), 0) * y[i, j, k]

    mdl.eq12_order = pyo.Constraint(
        mdl.PAIRS,
        rule=lambda _, i, ii, j, k: z[i, j, k] + size(i, j, k) <= z[ii, j, k] + B * alpha[i, ii, j, k],
    )
    mdl.eq13_order = pyo.Constraint(
        mdl.PAIRS,
        rule=lambda _, i, ii, j, k: z[ii, j, k] + size(ii, j, k) <= z[i, j, k] + B * (1 - alpha[i, ii, j, k]),
    )


def _eq14_eq15_start_multiple(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 14-15: z = g_i beta_i when placed, where the legal starts are those multiples."""
    y, z, beta, g, B = mdl.y, mdl.z, mdl.beta, p.g, p.big_m
    on_grid = [(i, j, k) for i, j, k in mdl.IJK if (i, k) in p.regular]
    mdl.eq14_start_multiple_le = pyo.Constraint(
        on_grid, rule=lambda _, i, j, k: z[i, j, k] <= g[i, k] * beta[i] + B * (1 - y[i, j, k])
    )
    mdl.eq15_start_multiple_ge = pyo.Constraint(
        on_grid, rule=lambda _, i, j, k: -z[i, j, k] <= -g[i, k] * beta[i] + B * (1 - y[i, j, k])
    )


def _start_choice(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """``start_choice``, ``start_value`` (not in the paper): other legal starts, one picked with lam."""
    y, z, lam, profile = mdl.y, mdl.z, mdl.lam, p.profile
    mdl.start_choice = pyo.Constraint(
        p.irregular,
        rule=lambda _, i, j, k: sum(lam[i, j, k, t] for t in profile[i, k].starts) == y[i, j, k],
    )
    mdl.start_value = pyo.Constraint(
        p.irregular,
        rule=lambda _, i, j, k: z[i, j, k] == sum(t * lam[i, j, k, t] for t in profile[i, k].starts),
    )


def _eq16_last_start(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eq. 16: z at most the last legal start s_i (0 on a GPU without the profile)."""
    z = mdl.z
    mdl.eq16_last_start = pyo.Constraint(mdl.IJK, rule=lambda _, i, j, k: z[i, j, k] <= p.s.get((i, k), 0))


def _eq17_eq18_characteristic(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 17-18: y_ijk = 1 only where h_i = H_jk."""
    y, h, H, B = mdl.y, p.h, p.H, p.big_m
    mdl.eq17_characteristic = pyo.Constraint(
        mdl.IJK, rule=lambda _, i, j, k: h[i, k] <= H[k] + B * (1 - y[i, j, k])
    )
    mdl.eq18_characteristic = pyo.Constraint(
        mdl.IJK, rule=lambda _, i, j, k: -h[i, k] <= -H[k] + B * (1 - y[i, j, k])
    )


def _media_once(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """``media_once`` (not in the paper): one ``+me`` instance per GPU, where more could go there."""
    y, host_of = mdl.y, p.host_of
    media: dict[str, list[str]] = defaultdict(list)
    for (i, k), prof in p.profile.items():
        if prof.media_extension:
            media[k].append(i)
    mdl.media_once = pyo.Constraint(
        [k for k, ids in media.items() if len(ids) > 1],
        rule=lambda _, k: sum(y[i, host_of[k], k] for i in media[k]) <= 1,
    )


def _profile_max(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """``profile_max`` (not in the paper): per GPU and profile, max_instances where more could go there."""
    y, host_of = mdl.y, p.host_of
    same: dict[tuple[str, str], list[str]] = defaultdict(list)
    for (i, k), prof in p.profile.items():
        same[k, prof.name].append(i)
    limit = {key: p.profile[ids[0], key[0]].max_instances for key, ids in same.items()}
    mdl.profile_max = pyo.Constraint(
        [key for key, ids in same.items() if len(ids) > limit[key]],
        rule=lambda _, k, name: sum(y[i, host_of[k], k] for i in same[k, name]) <= limit[k, name],
    )


def _eq19_eq21_powered_on(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 19-21: a workload only on a powered-on host and GPU; a GPU is on only if something is on it."""
    x, y, work = mdl.x, mdl.y, p.work
    mdl.eq19_host_on = pyo.Constraint(mdl.IJ, rule=lambda _, i, j: x[i, j] <= mdl.phi[j])
    mdl.eq20_gpu_on = pyo.Constraint(mdl.IJK, rule=lambda _, i, j, k: y[i, j, k] <= mdl.gamma[j, k])
    mdl.eq21_gpu_off = pyo.Constraint(
        mdl.JK, rule=lambda _, j, k: mdl.gamma[j, k] <= sum(y[i, j, k] for i in work)
    )


def _host_off(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """``host_off`` (not in the paper): the host counterpart of Eq. 21, phi_j is 1 only on a used host."""
    x, work = mdl.x, p.work
    mdl.host_off = pyo.Constraint(mdl.M, rule=lambda _, j: mdl.phi[j] <= sum(x[i, j] for i in work))


def _eq22_eq23_host_changed(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 22-23: m >= |x - x'|; ``m_exact`` (not in the paper) makes them equal."""
    x, x_prev = mdl.x, p.x_prev
    mdl.eq22_m_up = pyo.Constraint(mdl.IJ, rule=lambda _, i, j: x[i, j] - x_prev[i, j] <= mdl.m[i, j])
    mdl.eq23_m_down = pyo.Constraint(mdl.IJ, rule=lambda _, i, j: x_prev[i, j] - x[i, j] <= mdl.m[i, j])
    mdl.m_exact = pyo.Constraint(
        mdl.IJ, rule=lambda _, i, j: mdl.m[i, j] <= (1 - x[i, j] if x_prev[i, j] else x[i, j])
    )


def _eq24_eq25_gpu_changed(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Eqs. 24-25: omega >= |y - y'|; ``omega_exact`` (not in the paper) makes them equal."""
    y, y_prev = mdl.y, p.y_prev
    mdl.eq24_omega_up = pyo.Constraint(
        mdl.IJK, rule=lambda _, i, j, k: y[i, j, k] - y_prev[i, j, k] <= mdl.omega[i, j, k]
    )
    mdl.eq25_omega_down = pyo.Constraint(
        mdl.IJK, rule=lambda _, i, j, k: y_prev[i, j, k] - y[i, j, k] <= mdl.omega[i, j, k]
    )
    mdl.omega_exact = pyo.Constraint(
        mdl.IJK,
        rule=lambda _, i, j, k: mdl.omega[i, j, k] <= (1 - y[i, j, k] if y_prev[i, j, k] else y[i, j, k]),
    )


def _pinned_fixed(mdl: pyo.ConcreteModel, p: _Parameters) -> None:
    """Pinned workloads (not in the paper): every placement variable fixed at the current placement."""
    for w in p.instance.workloads:
        if not w.pinned:
            continue
        at, start = p.current[w.id]
        for j, k in mdl.JK:
            mdl.y[w.id, j, k].fix(int(k == at))
            mdl.z[w.id, j, k].fix(start if k == at else 0)
        for i, j, k, t in mdl.LAM:
            if i == w.id:
                mdl.lam[i, j, k, t].fix(int(k == at and t == start))
        for j in p.hosts:
            mdl.x[w.id, j].fix(int(p.host_of[at] == j))
        mdl.beta[w.id].fix(start // p.g[w.id, at] if (w.id, at) in p.regular else 0)


# --- the objectives (models/grmu-paper.md, Objectives)


def _eq3_eq5_objectives(mdl: pyo.ConcreteModel, p: _Parameters) -> dict[str, Any]:
    """Eqs. 3-5: acceptance, hardware and migrations; delta_i = 0 for new workloads, as in the paper."""
    x, work, hosts, gpus_of = mdl.x, p.work, p.hosts, p.gpus_of
    delta = {i: work[i].migration_weight if i in p.current else 0.0 for i in work}
    return {
        "acceptance": sum(work[i].weight * x[i, j] for i, j in mdl.IJ),
        "hardware": sum(
            hosts[j].weight * (mdl.phi[j] + sum(mdl.gamma[j, k] for k in gpus_of[j])) for j in hosts
        ),
        "migrations": sum(
            delta[i] * (mdl.m[i, j] + sum(mdl.omega[i, j, k] for k in gpus_of[j]))
            for i, j in mdl.IJ
            if delta[i] > 0
        ),
    }


def _restarts(mdl: pyo.ConcreteModel, p: _Parameters) -> dict[str, Any]:
    """Restarts and the budget's measures (not in the paper), through ``keep`` and its rows."""
    # keep_i = 1 only if running workload i ends on its GPU at its start
    y, z, current = mdl.y, mdl.z, p.current
    movable = [w for w in p.instance.workloads if w.id in current and not w.pinned]
    mdl.keep = pyo.Var([w.id for w in movable], domain=pyo.Binary)
    mdl.keep_gpu = pyo.ConstraintList()
    mdl.keep_start = pyo.ConstraintList()
    for w in movable:
        k0, t0 = current[w.id]
        j0, keep, span = p.host_of[k0], mdl.keep[w.id], p.instance.gpu(k0).model.slots
        mdl.keep_gpu.add(keep <= y[w.id, j0, k0])
        mdl.keep_start.add(z[w.id, j0, k0] - t0 <= span * (1 - keep))
        mdl.keep_start.add(t0 - z[w.id, j0, k0] <= span * (1 - keep))
    return {
        "restarts": sum(p.work[w.id].migration_weight * (1 - mdl.keep[w.id]) for w in movable),
        "restarted": sum(1 - mdl.keep[w.id] for w in movable),
        "moved_memory_gb": sum(
            p.profile[w.id, k].memory_gb * y[w.id, j, k]
            for w in movable
            for j, k in mdl.JK
            if k != current[w.id][0] and (w.id, k) in p.profile
        ),
    }
