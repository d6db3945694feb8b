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
``no-room``
    No answer of this run places it: with every running workload placed (none is ever
    evicted), the pinned ones where they run, and the running workloads the run may not
    move where they run, every legal start of its profile on every eligible GPU is held,
    or its host lacks the cpu or ram. The message names the starts of its profile per
    GPU model and what holds each (pinned or running workloads by name, a profile's
    count, the ``+me`` instance, compute, the host's cpu or ram), the first
    :data:`SHOWN` GPUs in full and beyond them every GPU counted by cause, the most common
    first, and, where running workloads might move, why moving them makes no room.
``needs-restarts``
    Room exists only by restarting running workloads, which this run does not allow:
    the method keeps them where they run (``exact-initial``, a heuristic that never
    moves them) or the caller's :class:`~mipopt.instance.Budget` (``--max-restarts``,
    ``--max-moved-gb``) is too small. The message names an answer that would place it
    and the restarts it needs ("at least" when the exact check proves no answer needs
    fewer).
``undecided``
    The run may move running workloads, the request fits only if some move, and within
    the time for checks no answer was found nor proven impossible.
``not-chosen``
    Some answer of this run places it, and the method left it out. The message says
    which case: it fits in the space the solution leaves (then which objective preferred
    leaving it out, and by how much), or an answer places it elsewhere: what holds it off
    each GPU of the solution (as for ``no-room``: where hosts bind, their cpu or ram, not
    the GPUs' starts), where that answer places it (moving which running workloads), and
    that the solution put others there (which objective preferred them, "proven optimal"
    when the solution is; which heuristic placed them first), or the method found no
    placement at all.

The first three depend on the instance alone (:func:`unplaceable`, what ``mipopt
validate`` reports); the others on the solution and the run (:func:`rejection_reasons`):
whether the method may move running workloads, and the budget.

Whether an answer places a request is decided by :mod:`mipopt.verifier.room`, once for
each group of identical requests (profile, cpu, ram, ``gpu_models``): first from the
space the solution leaves, then beside the pinned workloads, then beside the running
workloads where they run, all read off the catalog's placement lists (no placement code
is shared with the methods); only a request that fits beside the pinned workloads but
not beside the running ones needs a search (totals, a greedy search, then an exact
CP-SAT check of the verifier's own, within :data:`CHECK_S` seconds a group and
:data:`CHECKS_S` a call). Every answer found is checked again by the verifier's rules.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Hashable
from dataclasses import dataclass, replace

from mipopt.catalog import GpuModel, Profile
from mipopt.instance import Assignment, Budget, Instance, Solution, Status, Workload
from mipopt.instance.budget import UNLIMITED
from mipopt.instance.types import REJECTION_CODES, Rejection, fitting_profiles
from mipopt.verifier.room import AsRun, Block, Search, Space, Witness, find_room, legal_starts, room_for

__all__ = ["REJECTION_CODES", "Rejection", "explain", "rejection_reasons", "spot_left", "unplaceable"]

#: How many ids (or GPUs) a message lists before it says how many more.
SHOWN = 3
#: Seconds the searches for one group of identical requests may take, and one call's in all.
CHECK_S = 1.0
CHECKS_S = 3.0


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
    never = _Never(instance)
    return tuple(r for w in instance.new if (r := never(w)) is not None)


def rejection_reasons(
    instance: Instance,
    solution: Solution,
    *,
    exact: bool | None = None,
    moves: bool = True,
    budget: Budget | None = None,
    time_limit_s: float = CHECKS_S,
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
    moves
        Whether the method may move running workloads that are not pinned
        (:attr:`mipopt.registry.MethodSpec.moves`); when not, a request that fits only if
        some move is ``needs-restarts`` or ``no-room``, never ``not-chosen``.
    budget
        The run's limit on restarts and GB moved (None: no limit).
    time_limit_s
        Seconds the searches of this call may take in all (:data:`CHECKS_S`); a request
        left undecided by then is ``undecided``.

    Returns
    -------
    tuple[Rejection, ...]
        One per workload not placed, in instance order; empty when all are placed.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> [(r.code, r.message) for r in rejection_reasons(inst, mipopt.solve(inst, "ff"))]
    [('no-room', "7g.80gb may start only at 0 on H100-80GB; on h2-g0 start 0 is held by pinned 'llm-c' (2g.20gb at 4)")]
    """
    if exact is None:
        exact = bool(solution.stages)
    work = instance.placeable() if instance.unknown_layout else instance
    why = _Explainer(work, solution, exact, moves, budget or UNLIMITED, time.monotonic() + time_limit_s)
    never = _Never(instance)
    out = []
    for w in instance.workloads:
        if w.id not in why.space.at:
            out.append(never(w) or why.reason(w))
    return tuple(out)


def explain(
    instance: Instance,
    solution: Solution,
    *,
    exact: bool | None = None,
    moves: bool = True,
    budget: Budget | None = None,
    time_limit_s: float = CHECKS_S,
) -> Solution:
    """``solution`` carrying :func:`rejection_reasons` (same parameters) in its
    ``rejections``: its summary and JSON then say why each rejected workload is rejected.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> sol = explain(inst, mipopt.solve(inst, "ff"))
    >>> [(r.workload, r.code) for r in sol.rejections]
    [('llm-f', 'no-room')]
    """
    reasons = rejection_reasons(
        instance, solution, exact=exact, moves=moves, budget=budget, time_limit_s=time_limit_s
    )
    return replace(solution, rejections=reasons)


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
    space = Space(instance, [a for a in solution.placements if a.workload != workload])
    spot = space.spot(w)
    return None if spot is None else (spot[0], spot[1])


# --- the instance alone


class _Never:
    """``no-profile``, ``gpu-models`` or ``host-capacity`` for the workloads of one instance: the
    hosts indexed by the GPU models they hold once, and one answer per group of alike requests
    (a scan of every GPU per workload took 70 s at 16,000 GPUs and 25,000 requests)."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.models = instance.models
        self.held: dict[str, set[str]] = defaultdict(set)  # host -> the models of its GPUs
        for g in instance.gpus:
            self.held[g.host].add(g.model.name)
        self.hosts: dict[frozenset[str], list[_HostCaps]] = {}
        self.found: dict[_Key, tuple[str, str] | None] = {}

    def __call__(self, w: Workload) -> Rejection | None:
        """The first of the three reasons that holds for ``w``, or None when none holds."""
        key = _key(w)
        if key not in self.found:
            self.found[key] = self.reason(w)
        found = self.found[key]
        return None if found is None else Rejection(w.id, *found)

    def reason(self, w: Workload) -> tuple[str, str] | None:
        models = self.models
        having = [m for m in models.values() if has_profile(m, w)]
        wanted = f"profile {w.profile!r}" if w.profile is not None else f"a profile that fits {w.size}"
        if not having:
            if not models:
                return "no-profile", "the cluster has no GPUs"
            return (
                "no-profile",
                f"no GPU model here has {wanted} (models here: {', '.join(models)})",
            )
        eligible = [m for m in having if self.instance.profile_on(w, m) is not None]
        if not eligible:
            assert w.gpu_models is not None
            return (
                "gpu-models",
                f"gpu_models allows only {', '.join(w.gpu_models)}; the GPUs with {wanted} "
                f"are {', '.join(m.name for m in having)}",
            )
        hosts = self.eligible_hosts(frozenset(m.name for m in eligible))
        if any(room_for(h.cpu, w.cpu) and room_for(h.ram_gb, w.ram_gb) for h in hosts):
            return None
        return "host-capacity", _capacity_text(w, hosts)

    def eligible_hosts(self, names: frozenset[str]) -> list[_HostCaps]:
        """The hosts with a GPU of one of the models ``names``, in instance order."""
        if names not in self.hosts:
            self.hosts[names] = [
                _HostCaps(h.id, h.cpu, h.ram_gb)
                for h in self.instance.hosts
                if not names.isdisjoint(self.held.get(h.id, ()))
            ]
        return self.hosts[names]


@dataclass(frozen=True, slots=True)
class _HostCaps:
    id: str
    cpu: float | None
    ram_gb: float | None


def _capacity_text(w: Workload, hosts: list[_HostCaps]) -> str:
    """Which of cpu and ram no eligible host has, with the largest there is."""
    short = []
    for what, need, unit in (("cpu", w.cpu, ""), ("ram_gb", w.ram_gb, " GB")):
        caps = [(getattr(h, what), h.id) for h in hosts]
        if all(not room_for(cap, need) for cap, _ in caps):
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


# --- the solution and the run

#: Requests alike in all that decides where they fit: one room serves them all.
_Key = tuple[Hashable, tuple[str, ...] | None, float, float]


def has_profile(model: GpuModel, w: Workload) -> bool:
    """Whether ``model`` has ``w``'s profile, or one that fits a memory-sized ``w`` (``gpu_models`` aside)."""
    if w.profile is not None:
        return model.find(w.profile) is not None
    return bool(fitting_profiles(model, w.memory_gb or 0.0, w.min_compute))


def _key(w: Workload) -> _Key:
    return (w.sizing, w.gpu_models, w.cpu, w.ram_gb)


@dataclass(frozen=True, slots=True)
class _Room:
    """An answer of the run placing a request (``witness``), or the code and message of why none does."""

    code: str
    message: str = ""
    witness: Witness | None = None


class _Explainer:
    """The reasons of one solution: the spaces it reads, and one room per group of identical requests."""

    def __init__(
        self,
        instance: Instance,
        solution: Solution,
        exact: bool,
        moves: bool,
        budget: Budget,
        deadline: float,
    ) -> None:
        self.instance = instance
        self.solution = solution
        self.exact = exact
        self.moves = moves
        self.budget = budget
        self.deadline = deadline
        self.space = Space(instance, solution.placements)
        running = [
            Assignment(w.id, w.placement.gpu, w.placement.start)
            for w in instance.running
            if w.placement is not None
        ]
        self.runs_at = instance.current_placement()
        self.as_run = AsRun(instance)  # shared by every search
        self.initial = self.as_run.space
        self.pinned = Space(instance, [a for a in running if instance.workload(a.workload).pinned])
        # the solution with a request added is an answer only if it keeps every running workload placed
        self.holds_running = solution.status is not Status.NONE and all(
            a.workload in self.space.at for a in running
        )
        self.movable = frozenset(x.id for x in instance.running if not x.pinned)
        self.left: dict[_Key, tuple[str, int, float] | None] = {}  # per group, its spot in the space left
        self.rooms: dict[_Key, _Room] = {}
        self.full: dict[_Key, str] = {}

    def reason(self, w: Workload) -> Rejection:
        sol = self.solution
        if w.placement is not None:  # a running workload the solution leaves out: where it runs is an answer
            at = f"{w.placement.gpu}:{w.placement.start}"
            if sol.status is Status.NONE:
                return Rejection(
                    w.id,
                    "not-chosen",
                    f"{sol.method} found no placement (termination {sol.termination.value})",
                )
            return Rejection(w.id, "not-chosen", f"it runs at {at}, and {sol.method} left it out")
        key = _key(w)
        if self.holds_running:
            if key not in self.left:
                self.left[key] = self.space.spot(w)
            if (spot := self.left[key]) is not None:
                gpu, start, hardware = spot
                return Rejection(
                    w.id, "not-chosen", _left_out(sol, w, f"{gpu}:{start}", hardware, self.exact)
                )
        if key not in self.rooms:
            self.rooms[key] = self.room(w)
        room = self.rooms[key]
        if room.witness is None:
            return Rejection(w.id, room.code, room.message)
        return Rejection(w.id, "not-chosen", self.not_chosen(w, room.witness))

    def room(self, w: Workload) -> _Room:
        """Whether an answer of the run places ``w`` (module docstring): where, or why none does."""
        eligible = self.pinned.eligible(w)
        if not eligible:
            return _Room(
                "no-room", "its eligible GPUs all have an unknown layout (their MIG devices were not read)"
            )
        head = _starts_text(eligible, self.instance)
        if self.pinned.spot(w) is None:
            return _Room("no-room", f"{head}; {_held(self.pinned, w)}")
        spot = self.initial.spot(w)
        if spot is not None:
            return _Room("fits", witness=Witness(spot[0], spot[1]))
        # it fits beside the pinned workloads, not beside the running ones where they run
        held = f"{head}; {_held(self.initial, w)}"
        deadline = min(self.deadline, time.monotonic() + CHECK_S)
        movable = self.movable
        keeps = not self.moves or self.budget.max_restarts == 0
        within: Search | None = None
        if not keeps:
            within = self.search(w, movable, self.budget, deadline)
            if within.witness is not None:
                return _Room("fits", witness=within.witness)
            if self.budget.unlimited:
                if within.impossible:
                    return _Room("no-room", f"{held}; {within.how}")
                return _Room("undecided", f"{held}; moving running workloads might make room: {within.how}")
        # this run may restart none or too few: would more make room?
        free = self.search(w, movable, UNLIMITED, deadline, fewest=True)
        found = free.witness
        if found is not None and not keeps and found.within(self.budget):
            return _Room("fits", witness=found)
        most = self.budget.max_restarts
        # needs-restarts only when proven: this run restarts nothing, none within its budget
        # places it, or no answer restarts as few as the budget allows
        proven = keeps or (within is not None and within.impossible)
        if found is not None and free.fewest and most is not None:
            proven = proven or found.restarts > most
        if found is not None and proven:
            return _Room("needs-restarts", f"{held}; {_restarts_text(free)}; {self.forbids(found)}")
        if free.impossible:
            return _Room("no-room", f"{held}; {free.how}")
        if within is None:
            return _Room("no-room", f"{held}; {self.forbids(None)}")
        if within.impossible:
            return _Room(
                "no-room", f"{held}; no answer within the budget ({self.budget}) places it ({within.how})"
            )
        return _Room("undecided", f"{held}; moving running workloads might make room: {within.how}")

    def search(
        self, w: Workload, movable: frozenset[str], budget: Budget, deadline: float, fewest: bool = False
    ) -> Search:
        return find_room(
            self.instance,
            w,
            movable=movable,
            budget=budget,
            deadline=deadline,
            fewest_restarts=fewest,
            as_run=self.as_run,
        )

    def forbids(self, found: Witness | None) -> str:
        """What keeps this run from restarting running workloads as ``found`` does."""
        if not self.moves:
            if self.exact:
                return "the method keeps running workloads where they run (use case initial)"
            return f"the heuristic {self.solution.method} never moves running workloads"
        b = self.budget
        parts = []
        if b.max_restarts is not None and (found is None or found.restarts > b.max_restarts):
            parts.append(f"--max-restarts {b.max_restarts} allows {b.max_restarts or 'none'}")
        if b.max_moved_gb is not None and found is not None and found.moved_gb > b.max_moved_gb + 1e-9:
            parts.append(
                f"--max-moved-gb {b.max_moved_gb:g} allows {b.max_moved_gb:g} GB, that answer moves {found.moved_gb:g} GB"
            )
        return " and ".join(parts) or f"no answer within the budget ({b}) places it"

    def not_chosen(self, w: Workload, found: Witness) -> str:
        """An answer places ``w`` at ``found``: what the solution put there instead, and why."""
        sol = self.solution
        goes = f"{found.gpu}:{found.start} would take it"
        if found.moves:
            n = found.restarts
            goes += f" with running {_moves_text(found.moves)} ({n} restart{'s' if n > 1 else ''})"
        else:
            goes += " beside the running workloads as they run"
        if sol.status is Status.NONE:
            return f"{sol.method} found no placement (termination {sol.termination.value}); {goes}"
        where = self.full_text(w)
        new, running = self.taken(w, found)
        weight = sum(self.instance.workload(o).weight for o in new)
        bought = [f"{_ids(new, quote=True)} (weight {weight:g})"] if new else []
        bought += [f"running {_ids(running, quote=True)}"] if running else []
        what = " and ".join(bought) or "others"
        if not self.exact:
            return f"{where}; {goes}, but the heuristic {sol.method} placed {what} there first"
        names = [st.objective for st in sol.stages]
        if names[:1] == ["acceptance"] and weight > w.weight:
            objective = "the acceptance objective"
        elif names:
            objective = (
                f"the {names[0]} objective" if len(names) == 1 else f"the objective lex:{','.join(names)}"
            )
        else:
            objective = f"the objective of {sol.method}"
        than = f" to it (weight {w.weight:g})" if new else ""
        return f"{where}; {goes}, but there {objective} preferred {what}{than} ({_proof(sol)})"

    def full_text(self, w: Workload) -> str:
        """``no room left in this answer: ...``, what holds ``w`` off each eligible GPU of the
        solution (:func:`_held`: the host's cpu or ram where hosts bind, the starts held where
        slots do), once per group of identical requests; once the call's time is spent, which
        GPUs only (:func:`_held` reads every eligible GPU: 0.3 s a group at 16,000 GPUs)."""
        key = _key(w)
        if key not in self.full:
            held = _held(self.space, w) if self.holds_running and time.monotonic() < self.deadline else ""
            if not held:  # no time left, or the solution left a running workload out (no answer)
                eligible = self.space.eligible(w)
                named = _ids([g for g, _ in eligible[:SHOWN]], count=len(eligible))
                held = f"on its eligible GPU{'s' if len(eligible) > 1 else ''} ({named})"
            self.full[key] = f"no room left in this answer: {held}"
        return self.full[key]

    def taken(self, w: Workload, found: Witness) -> tuple[list[str], list[str]]:
        """What the solution put in the way of ``w`` at ``found`` (:meth:`Space.in_way`): its new
        workloads, and its running ones not where they run; all in the way when none is."""
        gpu = self.instance.gpu(found.gpu)
        profile = self.instance.profile_on(w, gpu.model)
        assert profile is not None
        there = self.space.in_way(w, gpu.id, profile, found.start)
        put = [o for o in there if self.space.at[o][:2] != self.runs_at.get(o)]
        running = [o for o in put or there if self.instance.workload(o).running]
        return [o for o in put or there if o not in running], running


def _starts_text(eligible: list[tuple[str, Profile]], instance: Instance) -> str:
    """``3g.40gb may start only at 0 or 4 on A100-80GB``, one clause per eligible model."""
    seen: dict[str, str] = {}
    profiles: set[int] = set()  # a model's profiles are its own: one GPU read per model
    for gpu_id, profile in eligible:
        if id(profile) in profiles:
            continue
        profiles.add(id(profile))
        model: GpuModel = instance.gpu(gpu_id).model
        if model.name not in seen:
            seen[model.name] = (
                f"{profile.name} may start only at {_or(legal_starts(profile))} on {model.name}"
            )
    return "; ".join(seen.values())


def _held(space: Space, w: Workload) -> str:
    """What holds ``w`` off every eligible GPU of ``space``: each in full, or, beyond
    :data:`SHOWN`, counted by cause, the most common first, with its first GPU in full."""
    blocks = space.blocked(w)
    if len(blocks) <= SHOWN:
        return "; ".join(_block_text(space, w, b, p) for b, p in blocks)
    causes: dict[str, list[tuple[Block, Profile]]] = {}
    for b, p in blocks:
        causes.setdefault(_cause(space, b, p), []).append((b, p))
    ranked = sorted(causes.items(), key=lambda item: -len(item[1]))  # stable: ties in GPU order
    counted = ", ".join(f"{len(held)} {cause} ({_ids([b.gpu for b, _ in held])})" for cause, held in ranked)
    return f"on its {len(blocks)} eligible GPUs: {counted}; e.g. {_block_text(space, w, *ranked[0][1][0])}"


def _cause(space: Space, b: Block, p: Profile) -> str:
    if b.rule == "starts":
        kinds = sorted({_kind(space.instance.workload(o)) for _, held in b.starts for o in held})
        return f"with every start held by {' and '.join(kinds)} workloads"
    return {
        "max_instances": f"with as many {p.name} as allowed ({p.max_instances})",
        "media": "with the +me instance taken",
        "compute": "with the compute slices taken",
        "cpu": "whose host has too little cpu left",
        "ram_gb": "whose host has too little ram left",
    }[b.rule]


def _block_text(space: Space, w: Workload, b: Block, p: Profile) -> str:
    on = f"on {b.gpu}"
    if b.rule == "starts":
        by_holders: dict[tuple[str, ...], list[int]] = {}
        for start, ids in b.starts:
            by_holders.setdefault(ids, []).append(start)
        if len(by_holders) == 1 and len(b.starts) > 1:
            return f"{on} every start is held by {_who(space, b.starts[0][1], at=True)}"
        held: list[str] = []
        for ids, starts in by_holders.items():
            which = f"starts {_or(starts, 'and')}" if len(starts) > 1 else f"start {starts[0]}"
            verb = "" if held else " are held" if len(starts) > 1 else " is held"
            held.append(f"{which}{verb} by {_who(space, ids, at=True)}")
        return f"{on} {', '.join(held)}"
    who = _who(space, b.holders, at=b.rule == "media")
    if b.rule == "max_instances":
        return f"{on} {p.name} is at its most, {p.max_instances} ({who})"
    if b.rule == "media":
        return f"{on} the one +me instance is {who}"
    if b.rule == "compute":
        return f"{on} {b.used:g} of {b.capacity:g} compute slices are taken ({who}), it needs {p.compute}"
    host = space.instance.gpu(b.gpu).host
    what, need, unit = ("cpu", w.cpu, "") if b.rule == "cpu" else ("ram", w.ram_gb, " GB")
    rest = f" (the rest held by {who})" if b.used else ""
    return (
        f"{on} its host {host} has {what} {b.capacity - b.used:g}{unit} of {b.capacity:g}{unit} "
        f"left{rest}, it needs {need:g}{unit}"
    )


def _kind(w: Workload) -> str:
    return "pinned" if w.pinned else "running" if w.running else "new"


def _who(space: Space, ids: tuple[str, ...] | list[str], *, at: bool = False) -> str:
    """``pinned 'a' (1g.10gb at 0) and 'b' (1g.10gb at 2)``: the kind said when it changes."""
    parts = []
    last = ""
    for o in ids[:SHOWN]:
        kind = _kind(space.instance.workload(o))
        text = f"'{o}'"
        if at:
            _, start, profile = space.at[o]
            text += f" ({profile.name} at {start})"
        parts.append(text if kind == last else f"{kind} {text}")
        last = kind
    if len(ids) > SHOWN:
        return ", ".join(parts) + f" and {len(ids) - SHOWN} more"
    return _or(parts, "and") if parts else "nothing"


def _or(items: list[int] | list[str], word: str = "or") -> str:
    texts = [str(i) for i in items]
    return texts[0] if len(texts) < 2 else f"{', '.join(texts[:-1])} {word} {texts[-1]}"


def _moves_text(moves: tuple[tuple[str, str, int], ...]) -> str:
    """``'x' moved to g1:0, 'y' to g1:4``."""
    texts = [f"'{wid}' {'moved ' if i == 0 else ''}to {g}:{s}" for i, (wid, g, s) in enumerate(moves[:SHOWN])]
    more = f" and {len(moves) - SHOWN} more" if len(moves) > SHOWN else ""
    return ", ".join(texts) + more


def _restarts_text(search: Search) -> str:
    found = search.witness
    assert found is not None
    n = found.restarts
    least = "at least " if search.fewest else ""
    return (
        f"placing it needs restarting {least}{n} running workload{'s' if n > 1 else ''} (an answer: "
        f"running {_moves_text(found.moves)}, it at {found.gpu}:{found.start})"
    )


# --- left out of the space left


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


def _ids(ids: list[str], *, quote: bool = False, count: int | None = None) -> str:
    """The first :data:`SHOWN` of ``ids`` and how many more (of ``count`` in all, default all of ``ids``)."""
    count = len(ids) if count is None else count
    shown = [repr(i) if quote else i for i in ids[:SHOWN]]
    more = f" and {count - SHOWN} more" if count > SHOWN else ""
    return ", ".join(shown) + more
