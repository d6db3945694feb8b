"""Whether a request can be placed at all: the space a set of placements leaves, and a search
for an answer that places the request with every running workload placed.

The rejection reasons (:mod:`mipopt.verifier.reasons`) ask one question per request: does
some answer place it with every running workload placed (none evicted), the pinned ones
where they run, the running workloads a method keeps where they run, and a
:class:`~mipopt.instance.Budget` on restarts and GB moved held? Other new workloads may be
left out. Like the rest of the verifier, everything here reads the catalog's placement
lists and shares no placement code with the methods.

:func:`find_room` answers, when the request does not fit beside the running workloads
where they run, in three steps, cheapest first:

1. Totals: with it, the running workloads need more memory slots, compute slices, cpu or
   ram than the GPUs and hosts have (each counted at its smallest size over the models it
   may run on): no answer exists.
2. A greedy search: the request at a legal start that only movable running workloads
   hold, those moved to the first place that takes them (their own GPU first, then their
   host's, then any), the starts held by the fewest tried first; an answer it finds
   restarting one workload has the fewest restarts.
3. An exact check: a CP-SAT model of its own (a boolean per workload and legal placement,
   the rules of :mod:`mipopt.verifier.rules` as constraints, cpu and ram in thousandths)
   within a time limit, when it has at most :data:`MAX_CANDIDATES` placements; infeasible
   is a proof that no answer exists, and, asked for, its optimum has the fewest restarts.

:func:`~mipopt.verifier.rules.check_state` checks every answer found again, and the budget
is recomputed from it.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from functools import cached_property

from mipopt.catalog import Profile
from mipopt.instance import Assignment, Budget, Instance, Workload
from mipopt.verifier.rules import check_state

__all__ = [
    "MAX_CANDIDATES",
    "AsRun",
    "Block",
    "Search",
    "Space",
    "Witness",
    "find_room",
    "legal_starts",
    "room_for",
]

#: The exact check runs when its model has at most this many candidate placements.
MAX_CANDIDATES = 50_000
#: How many starts of the request the greedy search tries.
GREEDY_TRIES = 32
#: cpu and ram enter the exact check as whole thousandths.
_SCALE = 1000


def legal_starts(profile: Profile) -> list[int]:
    """The starts of ``profile`` in its catalog placement list (full size only)."""
    return [s for s, size in profile.placements if size == profile.memory_slots]


def room_for(capacity: float | None, need: float) -> bool:
    """Whether a capacity (None: unlimited) has room for ``need``."""
    return capacity is None or need <= capacity + 1e-9


@dataclass(frozen=True, slots=True)
class Block:
    """Why a workload does not fit on one GPU of a :class:`Space`.

    Attributes
    ----------
    gpu
        The GPU.
    rule
        ``starts`` (every legal start overlaps a workload), ``media`` (its one ``+me``
        instance is taken), ``max_instances``, ``compute``, ``cpu`` or ``ram_gb`` (its host's).
    starts
        For ``starts``: each legal start and the workloads holding its slots.
    holders
        For the other rules: the workloads using up the count, ``+me``, compute or the host.
    used, capacity
        For ``compute``, ``cpu`` and ``ram_gb``: what the holders use, and what there is.
    """

    gpu: str
    rule: str
    starts: tuple[tuple[int, tuple[str, ...]], ...] = ()
    holders: tuple[str, ...] = ()
    used: float = 0.0
    capacity: float = 0.0


@dataclass
class Space:
    """GPUs and hosts as a set of placements leaves them: slots, counts, ``+me``, compute,
    cpu and ram, and who holds what. A placement that breaks a rule alone (unknown GPU or
    workload, excluded model, missing profile, illegal start) or repeats a workload is
    left out."""

    instance: Instance
    placements: Iterable[Assignment] = ()
    at: dict[str, tuple[str, int, Profile]] = field(default_factory=dict)  # workload -> GPU, start, profile
    masks: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    counts: dict[tuple[str, str], int] = field(default_factory=lambda: defaultdict(int))
    media: dict[str, str] = field(default_factory=dict)  # GPU -> the workload holding its +me
    compute: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    cpu: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    ram: dict[str, float] = field(default_factory=lambda: defaultdict(float))
    by_gpu: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    by_host: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    _eligible: dict[tuple[Hashable, tuple[str, ...] | None], list[tuple[str, Profile]]] = field(
        default_factory=dict
    )
    _free: dict[tuple[Hashable, tuple[str, ...] | None], list[tuple[str, int]]] = field(default_factory=dict)
    _spot: dict[tuple[Hashable, tuple[str, ...] | None, float, float], tuple[str, int, float] | None] = field(
        default_factory=dict
    )
    _gpu_blocks: dict[tuple[Hashable, tuple[str, ...] | None], list[tuple[str, Profile, Block | None]]] = (
        field(default_factory=dict)
    )
    _ranked: dict[tuple[Hashable, tuple[str, ...] | None], list[tuple[str, tuple[str, int, float]]]] = field(
        default_factory=dict
    )

    def __post_init__(self) -> None:
        for a in self.placements:
            self.add(a.workload, a.gpu, a.start, a.profile)

    def copy(self) -> Space:
        """A space holding what this one holds, to change apart from it."""
        return Space(
            self.instance,
            at=dict(self.at),
            masks=defaultdict(int, self.masks),
            counts=defaultdict(int, self.counts),
            media=dict(self.media),
            compute=defaultdict(int, self.compute),
            cpu=defaultdict(float, self.cpu),
            ram=defaultdict(float, self.ram),
            by_gpu=defaultdict(list, {g: list(ids) for g, ids in self.by_gpu.items()}),
            by_host=defaultdict(list, {h: list(ids) for h, ids in self.by_host.items()}),
            _eligible=dict(self._eligible),
        )

    def add(self, wid: str, gpu_id: str, start: int, chosen: str | None = None) -> bool:
        """Take the slots, count, compute, cpu and ram of ``wid`` at ``gpu_id:start``, at the
        profile ``chosen`` for a memory-sized ``wid`` (default: :meth:`Instance.profile_on`);
        False (nothing taken) when the placement breaks a rule alone."""
        inst = self.instance
        if wid in self.at or not inst.has_workload(wid) or not inst.has_gpu(gpu_id):
            return False
        w = inst.workload(wid)
        gpu = inst.gpu(gpu_id)
        profile = inst.profile_on(w, gpu.model)
        if chosen is not None:
            found = gpu.model.find(chosen)
            profile = found if found in inst.profiles_on(w, gpu.model) else None
        if profile is None or not gpu.layout_known or (start, profile.memory_slots) not in profile.placements:
            return False
        self.at[wid] = (gpu_id, start, profile)
        self.masks[gpu_id] |= profile.slot_mask(start)
        self.counts[gpu_id, profile.name] += 1
        if profile.media_extension:
            self.media[gpu_id] = wid
        self.compute[gpu_id] += profile.compute
        self.cpu[gpu.host] += w.cpu
        self.ram[gpu.host] += w.ram_gb
        self.by_gpu[gpu_id].append(wid)
        self.by_host[gpu.host].append(wid)
        self._free.clear()
        self._spot.clear()
        self._gpu_blocks.clear()
        self._ranked.clear()
        return True

    def remove(self, wid: str) -> None:
        """Give back what :meth:`add` took for ``wid``."""
        gpu_id, start, profile = self.at.pop(wid)
        w = self.instance.workload(wid)
        host = self.instance.gpu(gpu_id).host
        self.masks[gpu_id] &= ~profile.slot_mask(start)
        self.counts[gpu_id, profile.name] -= 1
        if self.media.get(gpu_id) == wid:
            del self.media[gpu_id]
        self.compute[gpu_id] -= profile.compute
        self.cpu[host] -= w.cpu
        self.ram[host] -= w.ram_gb
        self.by_gpu[gpu_id].remove(wid)
        self.by_host[host].remove(wid)
        self._free.clear()
        self._spot.clear()
        self._gpu_blocks.clear()
        self._ranked.clear()

    def eligible(self, w: Workload) -> list[tuple[str, Profile]]:
        """The GPUs (of known layout) that may run ``w``, with its profile there."""
        key = (w.sizing, w.gpu_models)
        if key not in self._eligible:
            found = []
            on: dict[str, Profile | None] = {}  # model -> the profile there: resolved once a model
            for g in self.instance.gpus:
                if g.model.name not in on:
                    on[g.model.name] = self.instance.profile_on(w, g.model)
                profile = on[g.model.name]
                if profile is not None and g.layout_known:
                    found.append((g.id, profile))
            self._eligible[key] = found
        return self._eligible[key]

    def gpu_takes(self, gpu_id: str, profile: Profile, start: int) -> bool:
        """Whether ``profile`` at ``start`` fits on ``gpu_id`` by the GPU's own rules."""
        if self.counts[gpu_id, profile.name] >= profile.max_instances:
            return False
        if profile.media_extension and gpu_id in self.media:
            return False
        if self.compute[gpu_id] + profile.compute > self.instance.gpu(gpu_id).model.compute_slices:
            return False
        return not self.masks[gpu_id] & profile.slot_mask(start)

    def host_fits(self, w: Workload, gpu_id: str) -> bool:
        h = self.instance.host(self.instance.gpu(gpu_id).host)
        return room_for(h.cpu, self.cpu[h.id] + w.cpu) and room_for(h.ram_gb, self.ram[h.id] + w.ram_gb)

    def fits(self, w: Workload, gpu_id: str, start: int) -> bool:
        """Whether ``w`` fits at ``gpu_id:start``, GPU and host."""
        profile = self.instance.profile_on(w, self.instance.gpu(gpu_id).model)
        return (
            profile is not None
            and (start, profile.memory_slots) in profile.placements
            and self.gpu_takes(gpu_id, profile, start)
            and self.host_fits(w, gpu_id)
        )

    def free(self, w: Workload) -> list[tuple[str, int]]:
        """The first free legal start on each eligible GPU, by the GPU's own rules (no host)."""
        key = (w.sizing, w.gpu_models)
        if key not in self._free:
            found = []
            starts: dict[int, list[int]] = {}  # id of a profile -> its legal starts
            for gpu_id, profile in self.eligible(w):
                if id(profile) not in starts:
                    starts[id(profile)] = legal_starts(profile)
                for start in starts[id(profile)]:
                    if self.gpu_takes(gpu_id, profile, start):
                        found.append((gpu_id, start))
                        break
            self._free[key] = found
        return self._free[key]

    def added_hardware(self, gpu_id: str) -> float:
        """What placing one more workload on ``gpu_id`` adds to hardware (GRMU Eq. 4)."""
        host = self.instance.host(self.instance.gpu(gpu_id).host)
        return host.weight * ((not self.by_host.get(host.id)) + (not self.by_gpu.get(gpu_id)))

    def spot(self, w: Workload) -> tuple[str, int, float] | None:
        """Where ``w`` fits in full with the least added hardware (GPU, start, added hardware;
        on ties the first GPU of the instance), or None; once for alike requests until the
        space changes. The GPUs' part is the same for every cpu and ram: per host, its first
        GPU in that order, and a request takes the first host that has its cpu and ram (dense
        class, 3,200 GPUs: 1,221 groups of alike requests, each scanned 400 hosts, not 3,000
        GPUs, in three spaces)."""
        key = (w.sizing, w.gpu_models, w.cpu, w.ram_gb)
        if key not in self._spot:
            alike = (w.sizing, w.gpu_models)
            if alike not in self._ranked:
                ranked = sorted(((g, s, self.added_hardware(g)) for g, s in self.free(w)), key=lambda x: x[2])
                first: dict[str, tuple[str, int, float]] = {}  # host -> its first spot, in order
                for spot in ranked:
                    first.setdefault(self.instance.gpu(spot[0]).host, spot)
                self._ranked[alike] = list(first.items())
            self._spot[key] = next(
                (spot for host, spot in self._ranked[alike] if self.host_fits(w, spot[0])), None
            )
        return self._spot[key]

    def blocked(self, w: Workload) -> list[tuple[Block, Profile]]:
        """Why ``w`` does not fit on each eligible GPU where it does not, with its profile there,
        in GPU order. The GPU's own rules are read once for alike requests (the same sizing and
        ``gpu_models``) until the space changes; only the host's cpu and ram are ``w``'s own
        (the dense class at 3,200 GPUs, 4,274 rejected requests of random cpu and ram: their
        reasons take 4.4 s, 7.6 s when each request read every GPU)."""
        key = (w.sizing, w.gpu_models)
        if key not in self._gpu_blocks:
            self._gpu_blocks[key] = [(g, p, self._gpu_block(g, p)) for g, p in self.eligible(w)]
        found = []
        for gpu_id, profile, block in self._gpu_blocks[key]:
            if block is None:
                block = self._host_block(w, gpu_id)
            if block is not None:
                found.append((block, profile))
        return found

    def _gpu_block(self, gpu_id: str, profile: Profile) -> Block | None:
        """Why ``profile`` fits at no start of ``gpu_id`` by the GPU's own rules, or None."""
        on_gpu = self.by_gpu.get(gpu_id, [])
        held = []
        for start in legal_starts(profile):
            mask = profile.slot_mask(start)
            held.append((start, tuple(o for o in on_gpu if self.mask(o) & mask)))
        if all(holders for _, holders in held):
            return Block(gpu_id, "starts", tuple(held))
        model = self.instance.gpu(gpu_id).model
        if profile.media_extension and gpu_id in self.media:
            return Block(gpu_id, "media", holders=(self.media[gpu_id],))
        if self.counts[gpu_id, profile.name] >= profile.max_instances:
            same = tuple(o for o in on_gpu if self.at[o][2].name == profile.name)
            return Block(gpu_id, "max_instances", holders=same)
        if self.compute[gpu_id] + profile.compute > model.compute_slices:
            return Block(gpu_id, "compute", (), tuple(on_gpu), self.compute[gpu_id], model.compute_slices)
        return None

    def _host_block(self, w: Workload, gpu_id: str) -> Block | None:
        """Why ``w`` does not fit the host of ``gpu_id`` (its cpu, then its ram), or None."""
        host = self.instance.host(self.instance.gpu(gpu_id).host)
        on_host = tuple(self.by_host.get(host.id, []))
        if not room_for(host.cpu, self.cpu[host.id] + w.cpu):
            return Block(gpu_id, "cpu", (), on_host, self.cpu[host.id], host.cpu or 0.0)
        if not room_for(host.ram_gb, self.ram[host.id] + w.ram_gb):
            return Block(gpu_id, "ram_gb", (), on_host, self.ram[host.id], host.ram_gb or 0.0)
        return None

    def in_way(self, w: Workload, gpu_id: str, profile: Profile, start: int) -> list[str]:
        """What keeps ``w`` (``profile`` there) from ``gpu_id:start``: the workloads on its
        slots, else those using up ``+me``, the count or compute, else those on the host."""
        on_gpu = self.by_gpu.get(gpu_id, [])
        mask = profile.slot_mask(start)
        if overlap := [o for o in on_gpu if self.mask(o) & mask]:
            return overlap
        if profile.media_extension and gpu_id in self.media:
            return [self.media[gpu_id]]
        if self.counts[gpu_id, profile.name] >= profile.max_instances:
            return [o for o in on_gpu if self.at[o][2].name == profile.name]
        if self.compute[gpu_id] + profile.compute > self.instance.gpu(gpu_id).model.compute_slices:
            return list(on_gpu)
        if self.host_fits(w, gpu_id):
            return []
        return list(self.by_host.get(self.instance.gpu(gpu_id).host, []))

    def mask(self, wid: str) -> int:
        """The slots ``wid`` holds."""
        _, start, profile = self.at[wid]
        return profile.slot_mask(start)


# --- the search


@dataclass(frozen=True, slots=True)
class Witness:
    """An answer placing the request: where it goes, and the running workloads it moves.

    Attributes
    ----------
    gpu, start
        The request's place.
    moves
        Running workloads placed elsewhere than where they run: (id, GPU, start).
    moved_gb
        The memory of those moved to another GPU (the verifier's ``moved_memory_gb``).
    """

    gpu: str
    start: int
    moves: tuple[tuple[str, str, int], ...] = ()
    moved_gb: float = 0.0

    @property
    def restarts(self) -> int:
        return len(self.moves)

    def within(self, budget: Budget) -> bool:
        """Whether its restarts and GB moved are within ``budget``."""
        return budget.allows({"restarted": self.restarts, "moved_memory_gb": self.moved_gb})


@dataclass(frozen=True, slots=True)
class Search:
    """What :func:`find_room` found: an answer, a proof that none exists, or neither.

    Attributes
    ----------
    witness
        An answer placing the request, checked by the verifier's rules; None when none was found.
    impossible
        Proven: no answer places it.
    how
        How it was decided, or why it was not, in words.
    fewest
        The witness has the fewest restarts (proven by the exact check).
    """

    witness: Witness | None = None
    impossible: bool = False
    how: str = ""
    fewest: bool = False


class AsRun:
    """The running workloads where they run, read once for the searches of many requests of one
    instance (the reasons of a solution, the claims :func:`mipopt.verify` checks): the space they
    take, and the totals they need (step 1 of :func:`find_room`). Rebuilt for each request, they
    cost 0.5 s at 16,000 GPUs and 25,000 running workloads.

    Parameters
    ----------
    instance
        An instance whose GPUs all have a known layout (:meth:`Instance.placeable`).
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.space = Space(instance, _running(instance))

    @cached_property
    def _totals(self) -> _Totals:
        return _Totals(self.instance)

    def short(self, w: Workload) -> str | None:
        """Which total the running workloads and ``w`` need beyond what the cluster has, or None."""
        return self._totals.short(w)


def find_room(
    instance: Instance,
    w: Workload,
    *,
    movable: frozenset[str],
    budget: Budget,
    deadline: float,
    fewest_restarts: bool = False,
    as_run: AsRun | None = None,
) -> Search:
    """Whether some answer places ``w`` with every running workload placed (module docstring).

    Parameters
    ----------
    instance
        An instance whose GPUs all have a known layout (:meth:`Instance.placeable`).
    w
        The request: a new workload of ``instance``.
    movable
        The running workloads that may move; the others stay where they run.
    budget
        At most this many of them restarted, and GB moved to another GPU.
    deadline
        A ``time.monotonic()`` time by which to stop; the exact check gets what is left.
    fewest_restarts
        Ask for an answer with the fewest restarts: one of the greedy search's that restarts
        one, else the exact check's optimum.
    as_run
        ``instance``'s running workloads as they run, shared by the searches of many requests
        (default: read here).

    Returns
    -------
    Search
        An answer, a proof that none exists, or why neither was found.
    """
    as_run = as_run or AsRun(instance)
    spot = as_run.space.spot(w)
    if spot is not None:
        return Search(Witness(spot[0], spot[1]), how="it fits as they run", fewest=True)
    short = as_run.short(w)
    if short:
        return Search(impossible=True, how=short)
    found = _greedy(as_run.space, w, movable, budget, deadline)
    # it does not fit as they run: an answer restarting one is one with the fewest
    if found is not None and (found.restarts == 1 or not fewest_restarts):
        return Search(found, how="a greedy search", fewest=found.restarts == 1)
    exact = _exact(instance, w, movable, budget, deadline, fewest_restarts)
    if found is not None and exact.witness is None:
        return Search(found, how="a greedy search")
    return exact


class _Totals:
    """What the running workloads need in all, each counted at its smallest size over the
    models it may run on, and what the GPUs and hosts have."""

    def __init__(self, instance: Instance) -> None:
        gpus = [g for g in instance.gpus if g.layout_known]
        self.instance = instance
        self.models = {g.model.name: g.model for g in gpus}
        self.need = {"memory slots": 0, "compute slices": 0}
        for x in instance.running:
            self.add(self.need, x)
        self.have = {
            "memory slots": sum(g.model.slots for g in gpus),
            "compute slices": sum(g.model.compute_slices for g in gpus),
        }
        hosts = [h for h in instance.hosts if h.gpus]
        self.caps: dict[str, float] = {}  # cpu, ram_gb: only where no host is unlimited
        self.used: dict[str, float] = {}
        for what in ("cpu", "ram_gb"):
            caps = [getattr(h, what) for h in hosts]
            if caps and None not in caps:
                self.caps[what] = sum(caps)
                self.used[what] = sum(getattr(x, what) for x in instance.running)

    def add(self, need: dict[str, int], x: Workload) -> None:
        sizes = [p for m in self.models.values() if (p := self.instance.profile_on(x, m)) is not None]
        if sizes:  # a workload with no place at all is another reason's business
            need["memory slots"] += min(p.memory_slots for p in sizes)
            need["compute slices"] += min(p.compute for p in sizes)

    def short(self, w: Workload) -> str | None:
        for what, unit in (("cpu", ""), ("ram_gb", " GB")):
            if what in self.caps:
                total = self.used[what] + getattr(w, what)
                if total > self.caps[what] + 1e-9:
                    return (
                        f"with it, the running workloads need {what.removesuffix('_gb')} {total:g}{unit}, "
                        f"the hosts with GPUs have {self.caps[what]:g}{unit} in all"
                    )
        need = dict(self.need)
        self.add(need, w)
        for what, n in need.items():
            if n > self.have[what]:
                return (
                    f"with it, the running workloads need {n} {what}, the GPUs have {self.have[what]} in all"
                )
        return None


def _greedy(
    space: Space, w: Workload, movable: frozenset[str], budget: Budget, deadline: float
) -> Witness | None:
    """The request at a start whose way only movable workloads block, those moved to the
    first place that takes them (``space``: the running workloads where they run, left as
    it was); the first answer within the budget, the fewest in the way tried first."""
    if time.monotonic() > deadline:
        return None
    tries = []
    for gpu_id, profile in space.eligible(w):
        on_gpu = space.by_gpu.get(gpu_id, [])
        for start in legal_starts(profile):
            mask = profile.slot_mask(start)
            in_way = [o for o in on_gpu if space.mask(o) & mask]
            if in_way and all(o in movable for o in in_way):
                tries.append((len(in_way), gpu_id, start, in_way))
    tries.sort(key=lambda t: t[0])
    space = space.copy()  # a try takes workloads out and puts them back last on their GPU
    for _, gpu_id, start, in_way in tries[:GREEDY_TRIES]:
        if time.monotonic() > deadline:
            return None
        witness = _make_way(space, w, gpu_id, start, in_way)
        if witness is not None and witness.within(budget):
            return witness
    return None


def _make_way(space: Space, w: Workload, gpu_id: str, start: int, in_way: list[str]) -> Witness | None:
    """``w`` at ``gpu_id:start`` with ``in_way`` moved to the first places that take them
    (the largest first); ``space`` is left as it was."""
    before = {o: space.at[o] for o in in_way}
    for o in in_way:
        space.remove(o)
    moves: list[tuple[str, str, int]] = []
    made = space.fits(w, gpu_id, start)
    if made:
        space.add(w.id, gpu_id, start)
        for o in sorted(in_way, key=lambda o: -before[o][2].memory_slots):
            spot = _first_place(space, space.instance.workload(o), gpu_id)
            if spot is None:
                made = False
                break
            space.add(o, *spot)
            moves.append((o, *spot))
        space.remove(w.id)
    for o, _, _ in moves:
        space.remove(o)
    for o, (g, s, _) in before.items():
        space.add(o, g, s)
    witness = _witness(space.instance, gpu_id, start, moves) if made else None
    return witness if witness is not None and _checked(space.instance, w, witness) else None


def _first_place(space: Space, w: Workload, near: str) -> tuple[str, int] | None:
    """The first place that takes ``w``: on ``near``, then on its host, then anywhere."""
    inst = space.instance
    host = inst.gpu(near).host
    eligible = space.eligible(w)
    order = [gp for gp in eligible if gp[0] == near]
    order += [gp for gp in eligible if gp[0] != near and inst.gpu(gp[0]).host == host]
    order += [gp for gp in eligible if inst.gpu(gp[0]).host != host]
    for gpu_id, profile in order:
        if space.host_fits(w, gpu_id):
            for start in legal_starts(profile):
                if space.gpu_takes(gpu_id, profile, start):
                    return gpu_id, start
    return None


def _scaled(capacity: float | None, used: float) -> int | None:
    """What is left of a host's cpu or ram, in whole thousandths (None: unlimited)."""
    return None if capacity is None else round((capacity - used) * _SCALE)


def _running(instance: Instance) -> list[Assignment]:
    return [
        Assignment(w.id, w.placement.gpu, w.placement.start)
        for w in instance.running
        if w.placement is not None
    ]


def _witness(instance: Instance, gpu_id: str, start: int, moves: Iterable[tuple[str, str, int]]) -> Witness:
    """A witness with its moves (those that change place) and the GB they move to another GPU."""
    changed = []
    gb = 0.0
    for wid, g, s in moves:
        x = instance.workload(wid)
        assert x.placement is not None
        if (g, s) == (x.placement.gpu, x.placement.start):
            continue
        changed.append((wid, g, s))
        if g != x.placement.gpu:
            profile = instance.profile_on(x, instance.gpu(g).model)
            gb += 0.0 if profile is None else profile.memory_gb
    return Witness(gpu_id, start, tuple(changed), gb)


def _checked(instance: Instance, w: Workload, witness: Witness) -> bool:
    """The verifier's rules hold for the running workloads where ``witness`` puts them, and ``w``."""
    moved = {wid: (g, s) for wid, g, s in witness.moves}
    held = [(a.workload, a.workload, *moved.get(a.workload, (a.gpu, a.start))) for a in _running(instance)]
    held.append((w.id, w.id, witness.gpu, witness.start))
    return check_state(instance, held).valid


def _exact(
    instance: Instance, w: Workload, movable: frozenset[str], budget: Budget, deadline: float, fewest: bool
) -> Search:
    """The CP-SAT check: an answer, a proof that none exists, or neither within the deadline."""
    left = deadline - time.monotonic()
    if left <= 0:
        return Search(how="the time for checks ran out before the exact check")
    running = [x for x in instance.running if x.placement is not None]
    fixed = Space(instance, [a for a in _running(instance) if a.workload not in movable])
    movers = [x for x in running if x.id in movable]
    starts: dict[tuple[Hashable, tuple[str, ...] | None], int] = {}
    for x in [*movers, w]:  # at most this many candidates: too many, and the model is not even built
        key = (x.sizing, x.gpu_models)
        if key not in starts:
            starts[key] = sum(len(legal_starts(p)) for _, p in fixed.eligible(x))
    most = sum(starts[x.sizing, x.gpu_models] for x in [*movers, w])
    if most > MAX_CANDIDATES:
        return Search(
            how=f"the exact check was not run ({most} placements to weigh, more than {MAX_CANDIDATES})"
        )
    candidates: dict[str, list[tuple[str, int, Profile]]] = {}
    for x in [*movers, w]:
        candidates[x.id] = [
            (g, s, p)
            for g, p in fixed.eligible(x)
            if fixed.host_fits(x, g)
            for s in legal_starts(p)
            if fixed.gpu_takes(g, p, s)
        ]

    from ortools.sat.python import cp_model

    model = cp_model.CpModel()
    lits: dict[str, list[tuple[str, int, Profile, cp_model.IntVar]]] = {}
    slot_users: dict[tuple[str, int], list[cp_model.IntVar]] = defaultdict(list)
    by_profile: dict[tuple[str, str], list[cp_model.IntVar]] = defaultdict(list)
    media_users: dict[str, list[cp_model.IntVar]] = defaultdict(list)
    compute_use: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    cpu_use: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    ram_use: dict[str, list[tuple[int, cp_model.IntVar]]] = defaultdict(list)
    workloads = {x.id: x for x in [*movers, w]}
    for wid, cands in candidates.items():
        x = workloads[wid]
        lits[wid] = []
        for g, s, p in cands:
            lit = model.new_bool_var(f"{wid}@{g}:{s}")
            lits[wid].append((g, s, p, lit))
            for k in range(s, s + p.memory_slots):
                slot_users[g, k].append(lit)
            by_profile[g, p.name].append(lit)
            if p.media_extension:
                media_users[g].append(lit)
            compute_use[g].append((p.compute, lit))
            host = instance.gpu(g).host
            cpu_use[host].append((round(x.cpu * _SCALE), lit))
            ram_use[host].append((round(x.ram_gb * _SCALE), lit))
        model.add_exactly_one(lit for *_, lit in lits[wid])
    for users in slot_users.values():
        if len(users) > 1:
            model.add_at_most_one(users)
    for (g, name), users in by_profile.items():
        room = instance.gpu(g).model.profile(name).max_instances - fixed.counts[g, name]
        if len(users) > room:
            model.add(sum(users) <= room)
    for users in media_users.values():
        if len(users) > 1:
            model.add_at_most_one(users)
    left_over: list[tuple[list[tuple[int, cp_model.IntVar]], int | None]] = []
    left_over += [
        (uses, instance.gpu(g).model.compute_slices - fixed.compute[g]) for g, uses in compute_use.items()
    ]
    left_over += [(uses, _scaled(instance.host(h).cpu, fixed.cpu[h])) for h, uses in cpu_use.items()]
    left_over += [(uses, _scaled(instance.host(h).ram_gb, fixed.ram[h])) for h, uses in ram_use.items()]
    for uses, limit in left_over:
        if limit is not None and sum(n for n, _ in uses) > limit:
            model.add(sum(n * lit for n, lit in uses) <= limit)
    stay = []
    moved_gb = []
    for x in movers:
        assert x.placement is not None
        for g, s, p, lit in lits[x.id]:
            if (g, s) == (x.placement.gpu, x.placement.start):
                stay.append(lit)
            elif g != x.placement.gpu:
                moved_gb.append((round(p.memory_gb * 100), lit))
    restarts = len(movers) - sum(stay)
    if budget.max_restarts is not None:
        model.add(restarts <= budget.max_restarts)
    if budget.max_moved_gb is not None:
        model.add(sum(gb * lit for gb, lit in moved_gb) <= int(budget.max_moved_gb * 100 + 1e-6))
    if fewest:
        model.minimize(restarts)

    solver = cp_model.CpSolver()
    solver.parameters.max_time_in_seconds = left
    solver.parameters.num_workers = 1
    solver.parameters.random_seed = 0
    status = solver.solve(model)
    if status == cp_model.INFEASIBLE:
        return Search(
            impossible=True,
            how="no re-packing of the running workloads makes room (an exact check proves it)",
        )
    if status not in (cp_model.OPTIMAL, cp_model.FEASIBLE):
        return Search(how=f"no answer placing it found within {left:.2g} s")
    chosen = {wid: next((g, s) for g, s, _, lit in ls if solver.value(lit)) for wid, ls in lits.items()}
    witness = _witness(instance, *chosen.pop(w.id), ((wid, g, s) for wid, (g, s) in chosen.items()))
    if not _checked(instance, w, witness) or not witness.within(budget):
        return Search(how="the exact check's answer breaks a rule (a bug: please report it)")
    return Search(witness, how="an exact check", fewest=fewest and status == cp_model.OPTIMAL)
