"""The cluster's occupancy as arrays, one entry per GPU: what every heuristic and the simulator update.

Every feasibility question is asked of all GPUs at once through the geometry tables
(:func:`mipopt.geometry.tables_for`), so a decision costs a few numpy operations per
request whatever the cluster's size. :class:`Cluster` holds the occupied-slot mask,
instances per profile, the ``+me`` holder and host cpu and ram; it places, removes and
moves workloads and counts the moves by kind.

The GPUs are grouped by model (:class:`Group`). A lookup reads one column of a table at
the GPUs' states, ``g.tables.legal[:, p].take(cluster.mask[g.at])``: a quarter of the
time of ``legal[masks, p]`` (numpy's two-dimensional fancy indexing), and ``g.at`` is a
slice, a view without a copy, when the group's positions are contiguous (always on a
one-model cluster).

A workload normally occupies its own profile on the GPU's model. MIG-Adapter places a
request at a larger profile ("borrowing"): pass that profile to :meth:`Cluster.place`;
the cluster remembers it per workload, so removing and moving stay exact.

Relocations of running workloads that must be safe at every instant (GRMU's
defragmentation and consolidation) go through :meth:`Cluster.migrate`: the migration
planner (:func:`mipopt.migrate.graph.graph_rounds`, create-before-destroy) plans them on a
small instance cut from the cluster, and the cluster executes the plan's rounds: parking
moves and drains (disruptive moves) included, each counted.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel, Profile
from mipopt.geometry import GeometryTables, preferred_starts, tables_for
from mipopt.instance import Host, Instance, Placement, Workload
from mipopt.migrate.graph import graph_rounds
from mipopt.migrate.plan import Round

__all__ = ["MOVE_KINDS", "PLAN_COUNTS", "Cluster", "Group", "Move", "id_key"]

IntArray = npt.NDArray[np.int64]

_DIGITS = re.compile(r"(\d+)")

#: Kinds of moves, as the verifier counts them.
MOVE_KINDS = ("intra_gpu", "inter_gpu", "inter_host")
#: What :meth:`Cluster.migrate` counts of the plans it executes (``Cluster.planned``).
PLAN_COUNTS = ("plans", "plan_rounds", "parking_moves", "disruptive_moves")
#: How many times :meth:`Cluster.migrate` widens its cut of the cluster to avoid a drain.
SPARE_ROUNDS = 3


def id_key(identifier: str) -> tuple[str | int, ...]:
    """Natural sort key of an id: ``'h1-g10'`` -> ``('h', 1, '-g', 10, '')``.

    ``re.split`` with a capturing group alternates text and digit runs, starting
    with text, so two keys compare text with text and numbers with numbers.
    """
    return tuple(int(part) if k % 2 else part for k, part in enumerate(_DIGITS.split(identifier)))


@dataclass(frozen=True, slots=True, eq=False)
class Group:
    """The GPUs of one model: their positions, how to index per-GPU arrays with them, the model's tables.

    A group unpacks as ``(model, ks)``, the pair groups were before they carried their
    tables, so ``for model, ks in cluster.groups`` still reads.

    Attributes
    ----------
    model
        The GPU model.
    ks
        Positions in ``instance.gpus``, ascending.
    at
        ``ks`` as a slice when the positions are contiguous (indexing with it gives a
        view, no copy), else ``ks`` itself; ``cluster.mask[g.at]`` is ``cluster.mask[g.ks]``.
    tables
        ``tables_for(model)``.
    """

    model: GpuModel
    ks: IntArray
    at: slice | IntArray
    tables: GeometryTables

    @classmethod
    def of(cls, model: GpuModel, ks: list[int]) -> Group:
        """The group of ``model``'s GPUs at positions ``ks`` (ascending, not empty)."""
        positions = np.array(ks, dtype=np.int64)
        run = slice(ks[0], ks[0] + len(ks))
        contiguous = ks == list(range(run.start, run.stop))
        return cls(model, positions, run if contiguous else positions, tables_for(model))

    def __iter__(self) -> Iterator[Any]:
        yield self.model
        yield self.ks


@dataclass(frozen=True, slots=True)
class Move:
    """One executed migration: GPU positions and starts before and after, and its kind.

    A move of a plan (:meth:`Cluster.migrate`) carries its round (1, 2, ...; 0 for a
    direct :meth:`Cluster.move`), whether it parks the workload on the way to its target,
    and whether it restores a drained workload (``disruptive``: the workload was down
    from its drain, in the same or an earlier round, until this move).
    """

    workload: str
    source: tuple[int, int]
    target: tuple[int, int]
    kind: str  # one of MOVE_KINDS
    round: int = 0
    park: bool = False
    disruptive: bool = False


class Cluster:
    """Occupancy of every GPU of ``instance``; running workloads are placed at construction.

    Attributes (arrays indexed by GPU position in ``instance.gpus``)
    ----------------------------------------------------------------
    mask
        Occupied memory slots (a state of the geometry tables).
    compute
        Compute slices in use.
    used
        Memory slots plus compute slices in use (IBM's joint slice utilization numerator).
    size
        Memory slots plus compute slices of the GPU's model.
    media
        Whether the GPU's one ``+me`` set is taken.
    count
        ``[gpu, profile]`` instances per profile (``max_instances``).
    host
        Host position of each GPU; ``cpu``, ``ram`` (per host) are in use.
    id_rank
        Rank of each GPU in natural id order.
    groups
        The GPUs by model (:class:`Group`), in order of their first GPU.
    placed
        Workload id -> (GPU id, start) of everything on the cluster now.
    moves
        Counter of executed moves by kind (parks and restores included); ``log`` the
        moves themselves.
    planned
        Counter of :data:`PLAN_COUNTS`: plans executed by :meth:`migrate`, their rounds,
        parking moves and disruptive moves (drains).
    """

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        gpus = instance.gpus
        n = len(gpus)
        self.mask = np.zeros(n, dtype=np.int64)
        self.compute = np.zeros(n, dtype=np.int64)
        self.used = np.zeros(n, dtype=np.int64)
        self.size = np.array([g.model.slots + g.model.compute_slices for g in gpus], dtype=np.int64)
        self.media = np.zeros(n, dtype=bool)
        self.count = np.zeros((n, max((len(g.model.profiles) for g in gpus), default=0)), dtype=np.int64)
        host_index = {h.id: j for j, h in enumerate(instance.hosts)}
        self.host = np.array([host_index[g.host] for g in gpus], dtype=np.int64)
        self.cpu = np.zeros(len(instance.hosts))
        self.ram = np.zeros(len(instance.hosts))
        self.cpu_cap = np.array([np.inf if h.cpu is None else h.cpu for h in instance.hosts])
        self.ram_cap = np.array([np.inf if h.ram_gb is None else h.ram_gb for h in instance.hosts])
        self.position = {g.id: k for k, g in enumerate(gpus)}
        self.host_gpus: list[list[int]] = [[] for _ in instance.hosts]  # host position -> GPU positions
        for k, j in enumerate(self.host.tolist()):
            self.host_gpus[j].append(k)
        groups: dict[str, list[int]] = {}
        for k, g in enumerate(gpus):
            groups.setdefault(g.model.name, []).append(k)
        self.groups = [Group.of(gpus[ks[0]].model, ks) for ks in groups.values()]
        self.id_rank = np.empty(n, dtype=np.int64)
        self.id_rank[sorted(range(n), key=lambda k: id_key(gpus[k].id))] = np.arange(n)
        self.placed: dict[str, tuple[str, int]] = {}
        self.profile_of: dict[str, int] = {}  # workload id -> profile index it occupies
        # GPU position -> ids of its workloads in placement order (a dict keeps insertion
        # order); GPUs without workloads have no entry, so a copy costs the busy GPUs only.
        self._on: dict[int, dict[str, None]] = {}
        self.moves: Counter[str] = Counter()
        self.planned: Counter[str] = Counter()
        self.log: list[Move] = []
        for w in instance.running:
            assert w.placement is not None
            self.place(w, self.position[w.placement.gpu], w.placement.start)

    # --- questions

    def model(self, k: int) -> GpuModel:
        return self.instance.gpus[k].model

    def profile_index(self, w: Workload, model: GpuModel) -> int | None:
        """Position of ``w``'s own profile in ``model.profiles``, or None where it cannot run."""
        return self._index(w, model, None)

    def legal(self, w: Workload, profile: str | None = None) -> IntArray:
        """Per GPU, the bitmask of starts where ``w`` may go now by every rule (0: none).

        ``profile`` asks for another profile name than ``w``'s own (a borrowed one).
        """
        bits = np.zeros(len(self.mask), dtype=np.int64)
        for g in self.groups:
            p = self._index(w, g.model, profile)
            if p is None:
                continue
            prof = g.model.profiles[p]
            group_bits = g.tables.legal[:, p].take(self.mask[g.at])
            # Instances of one profile never overlap, so with at least as many allowed as
            # the profile has starts, reaching the limit leaves no start free anyway.
            if prof.max_instances < len(prof.starts):
                group_bits[self.count[g.at, p] >= prof.max_instances] = 0
            if prof.media_extension:
                group_bits[self.media[g.at]] = 0
            bits[g.at] = group_bits
        room = self.host_room(w)
        if not room.all():
            bits[~room[self.host]] = 0
        return bits

    def host_room(self, w: Workload) -> npt.NDArray[np.bool_]:
        """Per host, whether its free cpu and ram take ``w``'s (GPU ``k``'s host: ``self.host[k]``)."""
        return (self.cpu + w.cpu <= self.cpu_cap + 1e-9) & (self.ram + w.ram_gb <= self.ram_cap + 1e-9)

    def _index(self, w: Workload, model: GpuModel, profile: str | None) -> int | None:
        """Position in ``model.profiles`` of ``profile`` (default: ``w``'s own), None where ``w`` may not run."""
        if w.gpu_models is not None and model.name not in w.gpu_models:
            return None
        return model.index(w.profile if profile is None else profile)

    def as_placed(self, wid: str) -> Workload:
        """Workload ``wid`` as it runs now: a MIG-Adapter borrower asks for the profile it occupies, on its GPU's model."""
        w = self.instance.workload(wid)
        model = self.instance.gpu(self.placed[wid][0]).model
        p = self.profile_of[wid]
        if p == self._index(w, model, None):
            return w
        return dataclasses.replace(w, profile=model.profiles[p].name, gpu_models=(model.name,))

    def occupied_profile(self, wid: str) -> Profile:
        """The profile workload ``wid`` occupies now (its own, or a borrowed larger one)."""
        gpu_id, _ = self.placed[wid]
        return self.instance.gpu(gpu_id).model.profiles[self.profile_of[wid]]

    def on_gpu(self, k: int) -> list[str]:
        """Ids of the workloads on GPU ``k`` now, in placement order."""
        return list(self._on.get(k, ()))

    def joint_size(self, w: Workload) -> IntArray:
        """Per GPU, the memory slots plus compute slices ``w`` takes there (0 where it cannot run)."""
        size = np.zeros(len(self.mask), dtype=np.int64)
        for g in self.groups:
            profile = self.instance.profile_on(w, g.model)
            if profile is not None:
                size[g.at] = profile.memory_slots + profile.compute
        return size

    def preferred_start(self, w: Workload, k: int, bits: int) -> int:
        """The first start of IBM Table 1's preference order (:func:`mipopt.geometry.preference_order`) among the legal free ``bits`` of GPU ``k``."""
        model = self.instance.gpus[k].model
        p = self.profile_index(w, model)
        assert p is not None and bits, f"{w.id} has no legal start on GPU {k}"
        return int(preferred_starts(model)[p, bits])

    def first_in_order(self, w: Workload, *, balanced: bool) -> tuple[int, int] | None:
        """IBM's baselines: the first GPU in their order that takes ``w``, at its lowest legal start.

        The first GPU of an order that takes ``w`` is the one with the smallest key
        among those that do: the id for first fit; the joint slice utilization
        ``(s_m + s_c) / (S_m + S_c)`` (IBM WPM section 4.2), then the id, for load
        balancing. So no GPU list is sorted per workload.
        """
        bits = self.legal(w)
        fits = bits != 0
        if not fits.any():
            return None
        if balanced:
            share = np.where(fits, self.used / self.size, np.inf)
            fits = share == share.min()
        k = int(np.argmin(np.where(fits, self.id_rank, len(fits))))  # ranks are 0 .. GPUs - 1
        b = int(bits[k])
        return k, (b & -b).bit_length() - 1  # the lowest set bit: index 0 upwards

    @property
    def active(self) -> npt.NDArray[np.bool_]:
        """GPUs holding at least one instance."""
        return self.mask != 0

    # --- changes

    def place(self, w: Workload, k: int, start: int, profile: str | None = None) -> None:
        """Put ``w`` on GPU ``k`` at ``start``, at its own profile or at ``profile`` (borrowed)."""
        model = self.model(k)
        p = self._index(w, model, profile)
        assert p is not None, f"{w.id} cannot run on {model.name}"
        prof = model.profiles[p]
        self.mask[k] |= prof.slot_mask(start)
        self.compute[k] += prof.compute
        self.used[k] += prof.memory_slots + prof.compute
        self.count[k, p] += 1
        self.media[k] |= prof.media_extension
        self.cpu[self.host[k]] += w.cpu
        self.ram[self.host[k]] += w.ram_gb
        self.placed[w.id] = (self.instance.gpus[k].id, start)
        self.profile_of[w.id] = p
        self._on.setdefault(k, {})[w.id] = None

    def remove(self, w: Workload) -> tuple[str, int]:
        """Take ``w`` off its GPU (the inverse of :meth:`place`); returns where it was."""
        gpu_id, start = self.placed.pop(w.id)
        p = self.profile_of.pop(w.id)
        k = self.position[gpu_id]
        prof = self.model(k).profiles[p]
        self.mask[k] &= ~prof.slot_mask(start)
        self.compute[k] -= prof.compute
        self.used[k] -= prof.memory_slots + prof.compute
        self.count[k, p] -= 1
        if prof.media_extension:  # at most one +me instance per GPU
            self.media[k] = False
        self.cpu[self.host[k]] -= w.cpu
        self.ram[self.host[k]] -= w.ram_gb
        on = self._on[k]
        del on[w.id]
        if not on:
            del self._on[k]
        return gpu_id, start

    def move(self, w: Workload, k: int, start: int, profile: str | None = None) -> Move:
        """Migrate ``w`` to GPU ``k`` at ``start`` (its own profile unless ``profile``); counted by kind."""
        gpu_id, old_start = self.remove(w)
        self.place(w, k, start, profile)
        return self._record(w.id, (self.position[gpu_id], old_start), (k, start))

    def rearrange(self, k: int, target: dict[str, int]) -> list[Move]:
        """Move GPU ``k``'s workloads to the starts of ``target`` (intra-GPU migrations), through :meth:`migrate`.

        Each workload keeps the profile it occupies. Moving one workload at a time could
        land it on slots another mover has not left yet; the plan orders the moves and
        parks (or drains) a workload where the new arrangement is a cycle of waits.
        """
        return self.migrate({wid: (k, start) for wid, start in target.items()})

    def migrate(self, target: Mapping[str, tuple[int, int]]) -> list[Move]:
        """Relocate running workloads through the migration planner; the moves executed, in order.

        The graph planner (:func:`mipopt.migrate.graph.graph_rounds`, ``create-first``:
        a move's target is created before its source is destroyed) plans on a small
        instance cut from the cluster: the GPUs of the moves' sources and targets, every
        other GPU of their hosts (room to park), their occupants at the profiles they
        occupy (a MIG-Adapter borrower at its borrowed one, on its model), and each host
        with what the rest of the cluster leaves of its cpu and ram. When the plan drains
        a workload, the cut gains a GPU of the same model where that workload fits now
        (an empty one first) and is planned again, at most :data:`SPARE_ROUNDS` times.
        The rounds are then executed in order, each as drains, moves (parks too),
        restores; every relocation is recorded as :meth:`move` records it, and
        :attr:`planned` counts the plan, its rounds, its parks and its drains.

        Parameters
        ----------
        target
            Workload id -> (GPU position, start) of running workloads; it must be a
            valid placement of them given where the others are (the policies compute it
            on the cluster's rules). Workloads already at their target stay.

        Returns
        -------
        list[Move]
            Every relocation made, parks and restores of drained workloads included,
            with its round; empty when nothing moves (no plan is counted then). The
            movers end last in their GPUs' placement order (:meth:`on_gpu`), in the
            order of ``target``, as if each were removed and placed again.
        """
        moving: dict[str, tuple[str, int]] = {}
        for wid, (k, start) in target.items():
            spot = (self.instance.gpus[k].id, start)
            if self.placed[wid] != spot:
                moving[wid] = spot
        if not moving:
            return []
        ks = {self.position[self.placed[wid][0]] for wid in moving} | {
            self.position[g] for g, _ in moving.values()
        }
        cut = {k2 for j in {int(self.host[k]) for k in ks} for k2 in self.host_gpus[j]}
        rounds = self._plan(cut, moving)
        for _ in range(SPARE_ROUNDS):
            drained = [d.workload for r in rounds for d in r.drains]
            spare = self._spare(drained, cut)
            if not spare:
                break
            cut |= spare
            rounds = self._plan(cut, moving)
        done = self._execute(rounds)
        # The movers end last in their GPU's placement order, in the order of ``target``, as
        # if removed and placed again whatever the plan's order: GRMU's mock arrangement
        # reads that order, and a different one would make the next defragmentation move
        # the same workloads back and forth.
        for wid, (gpu_id, _) in moving.items():
            on = self._on[self.position[gpu_id]]
            del on[wid]
            on[wid] = None
        return done

    def _plan(self, cut: set[int], moving: Mapping[str, tuple[str, int]]) -> list[Round]:
        """The graph planner's rounds for ``moving`` on the instance of the GPUs ``cut`` (see :meth:`migrate`)."""
        inst = self.instance
        gpus = []
        hosts: dict[int, list[str]] = {}
        workloads: list[Workload] = []
        cpu: defaultdict[int, float] = defaultdict(float)
        ram: defaultdict[int, float] = defaultdict(float)
        for k in sorted(cut):
            g = inst.gpus[k]
            j = int(self.host[k])
            gpus.append(g)
            hosts.setdefault(j, []).append(g.id)
            for wid in self._on.get(k, ()):
                w = self.as_placed(wid)  # a borrower is kept at its profile and model
                gpu_id, start = self.placed[wid]
                workloads.append(dataclasses.replace(w, placement=Placement(gpu_id, start)))
                cpu[j] += w.cpu
                ram[j] += w.ram_gb
        host_list = []
        for j, ids in hosts.items():
            h = inst.hosts[j]
            # What the GPUs outside the cut hold of the host's cpu and ram is not for the plan.
            host_cpu = None if h.cpu is None else h.cpu - (float(self.cpu[j]) - cpu[j])
            host_ram = None if h.ram_gb is None else h.ram_gb - (float(self.ram[j]) - ram[j])
            host_list.append(Host(h.id, tuple(ids), host_cpu, host_ram, h.weight))
        sub = Instance(
            f"{inst.name}-migration", tuple(host_list), tuple(gpus), tuple(workloads), inst.custom_models
        )
        placement = {w.id: moving.get(w.id, self.placed[w.id]) for w in workloads}
        return graph_rounds(sub, placement, "create-first")

    def _spare(self, drained: Iterable[str], cut: set[int]) -> set[int]:
        """Per drained workload, a GPU outside ``cut`` of its model where it fits now at its profile (empty first)."""
        spare: set[int] = set()
        for wid in drained:
            w = self.instance.workload(wid)
            k = self.position[self.placed[wid][0]]
            model = self.model(k)
            group = next(g for g in self.groups if g.model is model)
            bits = self.legal(w, model.profiles[self.profile_of[wid]].name)[group.ks]
            taken = np.isin(group.ks, list(cut | spare))
            fits = (bits != 0) & ~taken
            empty = fits & (self.mask[group.ks] == 0)
            pick = np.flatnonzero(empty if empty.any() else fits)
            if pick.size:
                spare.add(int(group.ks[pick[0]]))
        return spare

    def _execute(self, rounds: list[Round]) -> list[Move]:
        """Carry out a plan's rounds on the cluster state; the moves made."""
        done: list[Move] = []
        down: dict[str, tuple[tuple[int, int], str]] = {}  # drained workload -> (source, profile)
        for number, rnd in enumerate(rounds, start=1):
            for d in rnd.drains:
                w = self.instance.workload(d.workload)
                profile = self.occupied_profile(d.workload).name
                gpu_id, start = self.remove(w)
                down[d.workload] = ((self.position[gpu_id], start), profile)
            for m in rnd.moves:
                w = self.instance.workload(m.workload)
                profile = self.occupied_profile(m.workload).name
                gpu_id, start = self.remove(w)
                k = self.position[m.target[0]]
                self._place_checked(w, k, m.target[1], profile)
                done.append(
                    self._record(m.workload, (self.position[gpu_id], start), (k, m.target[1]), number, m.park)
                )
            for c in rnd.creates:
                source, profile = down.pop(c.workload)
                w = self.instance.workload(c.workload)
                k = self.position[c.target[0]]
                self._place_checked(w, k, c.target[1], profile)
                done.append(self._record(c.workload, source, (k, c.target[1]), number, disruptive=True))
            parks = sum(m.park for m in rnd.moves)
            if parks:  # counts that never happen get no key, as in ``moves``
                self.planned["parking_moves"] += parks
            if rnd.drains:
                self.planned["disruptive_moves"] += len(rnd.drains)
        assert not down, f"drained and never restored: {sorted(down)}"
        self.planned["plans"] += 1
        self.planned["plan_rounds"] += len(rounds)
        return done

    def _place_checked(self, w: Workload, k: int, start: int, profile: str) -> None:
        """:meth:`place`, refusing slots that are taken (a plan that breaks a rule is a planner bug)."""
        model = self.model(k)
        p = model.index(profile)
        assert p is not None and not self.mask[k] & model.profiles[p].slot_mask(start), (
            f"{w.id}: {profile} at {start} on GPU {k} overlaps"
        )
        self.place(w, k, start, profile)

    def _record(
        self,
        wid: str,
        source: tuple[int, int],
        target: tuple[int, int],
        number: int = 0,
        park: bool = False,
        disruptive: bool = False,
    ) -> Move:
        if source[0] == target[0]:
            kind = "intra_gpu"
        elif self.host[source[0]] == self.host[target[0]]:
            kind = "inter_gpu"
        else:
            kind = "inter_host"
        move = Move(wid, source, target, kind, number, park, disruptive)
        self.moves[kind] += 1
        self.log.append(move)
        return move

    def copy(self) -> Self:
        """An independent copy, for trial placements that may be thrown away."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        for name in ("mask", "compute", "used", "media", "count", "cpu", "ram"):
            setattr(other, name, getattr(self, name).copy())
        other.placed = dict(self.placed)
        other.profile_of = dict(self.profile_of)
        other._on = {k: dict(on) for k, on in self._on.items()}
        other.moves = Counter(self.moves)
        other.planned = Counter(self.planned)
        other.log = list(self.log)
        return other
