"""Why a workload is rejected: the first reason that holds, in words, with the numbers.

The reasons, tried in the order of :data:`mipopt.instance.types.REJECTION_CODES`:

``no-profile``
    No GPU model of the cluster has the workload's profile (a name, or an ``-lgip`` id
    resolved per model, so ``19`` is ``1g.5gb`` on an A100-40GB and ``1g.10gb`` on an
    H100-80GB).
``gpu-models``
    Its ``gpu_models`` excludes every GPU that has the profile.
``host-capacity``
    No host with an eligible GPU has the cpu or ram for the workload alone (capacities,
    not what is left).
``not-chosen``
    It fits somewhere, but the method preferred others. The message says which case:
    it fits in the space the solution leaves (then the objective preferred leaving it
    out: which one, and by how much), or no eligible spot is left (the acceptance
    objective, or the heuristic, placed others there), or the spots are held by pinned
    workloads, or the method found no placement at all.

The first three depend on the instance alone (:func:`unplaceable`, what ``mipopt
validate`` reports); the fourth on the solution (:func:`rejection_reasons`). Like the
rest of the verifier, the space left is computed here from the catalog's placement
lists, sharing no placement code with the methods.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from mipopt.catalog import GpuModel
from mipopt.instance import Assignment, Instance, Solution, Status, Workload
from mipopt.instance.types import REJECTION_CODES, Rejection

__all__ = ["REJECTION_CODES", "Rejection", "explain", "rejection_reasons", "spot_left", "unplaceable"]

#: How many ids a message lists before it says how many more.
SHOWN = 3


def unplaceable(instance: Instance) -> tuple[Rejection, ...]:
    """The new workloads that no method can ever place, and why (``no-profile``,
    ``gpu-models`` or ``host-capacity``), in instance order.

    Examples
    --------
    >>> import mipopt
    >>> b = mipopt.InstanceBuilder("small")
    >>> b.add_host("h1", {"g0": "A100-40GB"}, cpu=8)
    >>> b.add_workload("big", "3g.20gb", cpu=16)
    >>> b.add_workload("ok", "1g.5gb")
    >>> inst = b.build()
    >>> [(r.workload, r.code, r.message) for r in unplaceable(inst)]
    [('big', 'host-capacity', 'needs cpu 16, the most any host with an eligible GPU has is 8 (h1)')]
    """
    return tuple(r for w in instance.new if (r := _never(instance, w)) is not None)


def rejection_reasons(
    instance: Instance, solution: Solution, *, exact: bool | None = None
) -> tuple[Rejection, ...]:
    """Why each workload of ``instance`` that ``solution`` does not place is rejected.

    Parameters
    ----------
    instance
        The instance ``solution`` solves.
    solution
        Any solution; placements that break a rule alone (unknown GPU, excluded model,
        illegal start) are left out of the space taken.
    exact
        Whether an exact method (a MIP optimum) made the solution, as
        :attr:`mipopt.registry.MethodSpec.kind` says; None reads it off the solution:
        exact when it has stages. An exact method's ``not-chosen`` names the objective
        (its stages' ``objective``), a heuristic's names the heuristic
        (:attr:`~mipopt.instance.Solution.method`).

    Returns
    -------
    tuple[Rejection, ...]
        One per workload not placed, in instance order; empty when all are placed.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> [r.message for r in rejection_reasons(inst, mipopt.solve(inst, "ff"))]
    ["no room left on its eligible GPU (h2-g0): held by pinned workload 'llm-c'"]
    """
    if exact is None:
        exact = bool(solution.stages)
    space = _Space(instance, solution.placements)
    pinned = _Space(instance, _pinned(instance))
    out = []
    for w in instance.workloads:
        if w.id in space.placed:
            continue
        reason = _never(instance, w) or _not_chosen(instance, solution, w, space, pinned, exact)
        out.append(reason)
    return tuple(out)


def explain(instance: Instance, solution: Solution, *, exact: bool | None = None) -> Solution:
    """``solution`` carrying :func:`rejection_reasons` in its ``rejections``: its summary and
    JSON then say why each rejected workload is rejected.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> sol = explain(inst, mipopt.solve(inst, "ff"))
    >>> [(r.workload, r.code) for r in sol.rejections]
    [('llm-f', 'not-chosen')]
    """
    return replace(solution, rejections=rejection_reasons(instance, solution, exact=exact))


def spot_left(instance: Instance, solution: Solution, workload: str) -> tuple[str, int] | None:
    """Where the workload called ``workload`` would fit in the space ``solution`` leaves
    (GPU id, start), the spot adding the least hardware (GRMU Eq. 4) first; None when no
    spot is left. A workload ``solution`` places is taken out first, so its own spot counts.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> spot_left(inst, mipopt.solve(inst, "ff"), "llm-f") is None
    True
    """
    w = instance.workload(workload)
    space = _Space(instance, [a for a in solution.placements if a.workload != workload])
    spots = space.spots(w)
    return None if not spots else (spots[0][0], spots[0][1])


# --- the instance alone


def _never(instance: Instance, w: Workload) -> Rejection | None:
    """``no-profile``, ``gpu-models`` or ``host-capacity``, or None when none holds."""
    models = instance.models
    having = [m for m in models.values() if m.find(w.profile) is not None]
    if not having:
        if not models:
            return Rejection(w.id, "no-profile", "the cluster has no GPUs")
        return Rejection(
            w.id,
            "no-profile",
            f"no GPU model here has profile {w.profile!r} (models here: {', '.join(models)})",
        )
    eligible = [m for m in having if instance.profile_on(w, m) is not None]
    if not eligible:
        assert w.gpu_models is not None
        return Rejection(
            w.id,
            "gpu-models",
            f"gpu_models allows only {', '.join(w.gpu_models)}; the GPUs with profile {w.profile!r} "
            f"are {', '.join(m.name for m in having)}",
        )
    hosts = _eligible_hosts(instance, eligible)
    if any(_room(h.cpu, w.cpu) and _room(h.ram_gb, w.ram_gb) for h in hosts):
        return None
    return Rejection(w.id, "host-capacity", _capacity_text(w, hosts))


def _eligible_hosts(instance: Instance, models: list[GpuModel]) -> list[_HostCaps]:
    names = {m.name for m in models}
    with_gpu = {g.host for g in instance.gpus if g.model.name in names}
    return [_HostCaps(h.id, h.cpu, h.ram_gb) for h in instance.hosts if h.id in with_gpu]


@dataclass(frozen=True, slots=True)
class _HostCaps:
    id: str
    cpu: float | None
    ram_gb: float | None


def _room(capacity: float | None, need: float) -> bool:
    return capacity is None or need <= capacity + 1e-9


def _capacity_text(w: Workload, hosts: list[_HostCaps]) -> str:
    """Which of cpu and ram no eligible host has, with the largest there is."""
    short = []
    for what, need, unit in (("cpu", w.cpu, ""), ("ram_gb", w.ram_gb, " GB")):
        caps = [(getattr(h, what), h.id) for h in hosts]
        if all(not _room(cap, need) for cap, _ in caps):
            most = max(cap for cap, _ in caps)
            at = ", ".join(h for cap, h in caps if cap == most)
            short.append((what.removesuffix("_gb"), need, most, unit, at))
    if len(short) == 1:
        what, need, most, unit, at = short[0]
        return f"needs {what} {need:g}{unit}, the most any host with an eligible GPU has is {most:g}{unit} ({at})"
    if short:
        needs = " and ".join(f"{what} {need:g}{unit}" for what, need, _, unit, _ in short)
        mosts = " and ".join(f"{what} {most:g}{unit} ({at})" for what, _, most, unit, at in short)
        return f"needs {needs}, the most any host with an eligible GPU has is {mosts}"
    listed = "; ".join(f"{h.id}: cpu {_cap(h.cpu)}, ram {_cap(h.ram_gb, ' GB')}" for h in hosts[:SHOWN])
    more = f"; {len(hosts) - SHOWN} more" if len(hosts) > SHOWN else ""
    return (
        f"needs cpu {w.cpu:g} and ram {w.ram_gb:g} GB on one host; no host with an eligible GPU has "
        f"both ({listed}{more})"
    )


def _cap(capacity: float | None, unit: str = "") -> str:
    return "unlimited" if capacity is None else f"{capacity:g}{unit}"


# --- the space a solution leaves


@dataclass
class _Space:
    """GPUs and hosts as a set of placements leaves them: slots, counts, +me, compute, cpu, ram."""

    instance: Instance
    placements: Iterable[Assignment]
    placed: dict[str, str] = field(default_factory=dict)  # workload -> GPU
    masks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    counts: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    media: set[str] = field(default_factory=set)
    compute: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    ram: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_gpu: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    _free: dict[tuple[str | int, tuple[str, ...] | None], list[tuple[str, int]]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        inst = self.instance
        for a in self.placements:
            wid, gpu_id, start = a.workload, a.gpu, a.start
            if wid in self.placed or not inst.has_workload(wid) or not inst.has_gpu(gpu_id):
                continue
            w = inst.workload(wid)
            gpu = inst.gpu(gpu_id)
            profile = inst.profile_on(w, gpu.model)
            if profile is None or (start, profile.memory_slots) not in profile.placements:
                continue
            self.placed[wid] = gpu_id
            self.masks[gpu_id] |= profile.slot_mask(start)
            self.counts[gpu_id, profile.name] += 1
            if profile.media_extension:
                self.media.add(gpu_id)
            self.compute[gpu_id] += profile.compute
            self.cpu[gpu.host] += w.cpu
            self.ram[gpu.host] += w.ram_gb
            self.by_gpu[gpu_id].append(wid)

    def free(self, w: Workload) -> list[tuple[str, int]]:
        """The first free legal start on each eligible GPU, by the GPU's own rules (no host)."""
        key = (w.profile, w.gpu_models)
        if key not in self._free:
            found = []
            for g in self.instance.gpus:
                profile = self.instance.profile_on(w, g.model)
                if profile is None:
                    continue
                if self.counts[g.id, profile.name] >= profile.max_instances:
                    continue
                if profile.media_extension and g.id in self.media:
                    continue
                if self.compute[g.id] + profile.compute > g.model.compute_slices:
                    continue
                for start, size in profile.placements:
                    if size == profile.memory_slots and not self.masks[g.id] & profile.slot_mask(start):
                        found.append((g.id, start))
                        break
            self._free[key] = found
        return self._free[key]

    def host_fits(self, w: Workload, gpu_id: str) -> bool:
        h = self.instance.host(self.instance.gpu(gpu_id).host)
        return _room(h.cpu, self.cpu[h.id] + w.cpu) and _room(h.ram_gb, self.ram[h.id] + w.ram_gb)

    def added_hardware(self, gpu_id: str) -> float:
        """What placing one more workload on ``gpu_id`` adds to hardware (GRMU Eq. 4)."""
        gpu = self.instance.gpu(gpu_id)
        host = self.instance.host(gpu.host)
        host_active = any(self.by_gpu.get(g) for g in host.gpus)
        return host.weight * ((not host_active) + (not self.by_gpu.get(gpu_id)))

    def spots(self, w: Workload) -> list[tuple[str, int, float]]:
        """Where ``w`` fits in full (GPU, start, added hardware), the least hardware first."""
        found = [(g, s, self.added_hardware(g)) for g, s in self.free(w) if self.host_fits(w, g)]
        return sorted(found, key=lambda spot: spot[2])


def _pinned(instance: Instance) -> list[Assignment]:
    """The pinned workloads where they run: no method may move them."""
    return [
        Assignment(w.id, w.placement.gpu, w.placement.start)
        for w in instance.workloads
        if w.pinned and w.placement is not None
    ]


# --- the solution's choice


def _not_chosen(
    instance: Instance, solution: Solution, w: Workload, space: _Space, pinned: _Space, exact: bool
) -> Rejection:
    def reason(text: str) -> Rejection:
        return Rejection(w.id, "not-chosen", text)

    if solution.status is Status.NONE:
        return reason(f"{solution.method} found no placement (termination {solution.termination.value})")
    spots = space.spots(w)
    if spots:
        gpu, start, hardware = spots[0]
        return reason(_left_out(solution, w, f"{gpu}:{start}", hardware, exact))
    eligible = [g.id for g in instance.gpus if instance.profile_on(w, g.model) is not None]
    where = f"no room left on its eligible GPU{'s' if len(eligible) > 1 else ''} ({_ids(eligible)})"
    if not pinned.spots(w):
        holders = [p for g in eligible for p in pinned.by_gpu.get(g, ())]
        return reason(
            f"{where}: held by pinned workload{'s' if len(holders) > 1 else ''} {_ids(holders, quote=True)}"
        )
    full = [g for g, _ in space.free(w)]
    if full:  # free slots on some GPU, but its host has no cpu or ram left
        where += f"; {_ids(full)} {'have' if len(full) > 1 else 'has'} free slots but no cpu or ram left on the host"
    if not exact:
        return reason(f"{where}: the heuristic {solution.method} placed others first")
    objective = solution.stages[0].objective if solution.stages else None
    preferred = f"the {objective} objective" if objective else f"the objective of {solution.method}"
    return reason(f"{where}: {preferred} preferred others ({_proof(solution)})")


def _left_out(solution: Solution, w: Workload, where: str, hardware: float, exact: bool) -> str:
    """It fits in the space left: which objective preferred leaving it out, and by how much."""
    fits = f"fits in the space left ({where})"
    if not exact:
        return f"{fits}, but the heuristic {solution.method} left it out"
    effect = {"acceptance": w.weight, "hardware": hardware}
    for st in solution.stages:
        if st.objective == "weighted":
            return (
                f"{fits}, adding acceptance {w.weight:g} and hardware {hardware:g}: the weighted objective "
                f"preferred leaving it out ({_proof(solution)})"
            )
        change = effect.get(st.objective, 0.0)
        if change == 0:
            continue  # this stage is indifferent: the next one decides
        if st.objective == "hardware":
            return (
                f"{fits}, but it would add {hardware:g} to hardware (an idle GPU or host): the hardware "
                f"objective preferred leaving it out ({_proof(solution)})"
            )
        # placing it would raise acceptance: only a stage that stopped short leaves it out
        if st.proven:
            return f"{fits} and would raise acceptance by {w.weight:g}, though the acceptance stage is proven"
        gap = "-" if st.gap is None else f"{st.gap:.2%}"
        return (
            f"{fits} and would raise acceptance by {w.weight:g}: the acceptance stage stopped before placing "
            f"it (termination {st.termination.value}, gap {gap})"
        )
    if not solution.stages:
        return f"{fits}, but the objective of {solution.method} preferred leaving it out ({_proof(solution)})"
    names = ", ".join(st.objective for st in solution.stages)
    return f"{fits}; placing it changes none of {names}: one of equal optima ({_proof(solution)})"


def _proof(solution: Solution) -> str:
    if solution.status is Status.OPTIMAL:
        return "proven optimal"
    return f"best found, not proven: termination {solution.termination.value}"


def _ids(ids: list[str], *, quote: bool = False) -> str:
    shown = [repr(i) if quote else i for i in ids[:SHOWN]]
    more = f" and {len(ids) - SHOWN} more" if len(ids) > SHOWN else ""
    return ", ".join(shown) + more
