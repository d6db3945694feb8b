"""The cluster's occupancy as arrays, one entry per GPU: what every heuristic and the simulator update.

Every feasibility question is asked of all GPUs at once through the geometry tables
(:func:`mipopt.geometry.tables_for`), so a decision costs a few numpy operations per
request whatever the cluster's size. :class:`Cluster` is the
:class:`~mipopt.state.occupancy.Occupancy` (occupied-slot mask, instances per profile, the
``+me`` holder, host cpu and ram) that also knows which workload sits where; it places,
removes and moves workloads and records every relocation (:class:`Relocation`) by kind.

The GPUs are grouped by model (:class:`Group`). A lookup reads one column of a table at
the GPUs' states, ``g.tables.legal[:, p].take(cluster.mask[g.at])``: a quarter of the
time of ``legal[masks, p]`` (numpy's two-dimensional fancy indexing), and ``g.at`` is a
slice, a view without a copy, when the group's positions are contiguous (always on a
one-model cluster).

A workload normally occupies its own profile on the GPU's model. MIG-Adapter places a
request at a larger profile ("borrowing"): pass that profile to :meth:`Cluster.place`;
the cluster remembers it per workload, so removing and moving stay exact.

Relocations of running workloads that must be safe at every instant (GRMU's
defragmentation and consolidation) are planned and executed by the layer above,
:func:`mipopt.migrate.execute.execute`, through :meth:`Cluster.place`,
:meth:`Cluster.remove` and :meth:`Cluster.record`.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any, Self

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel, Profile
from mipopt.geometry import GeometryTables, preferred_starts, tables_for
from mipopt.instance import Instance, Workload
from mipopt.state.occupancy import Occupancy, Spot, move_kind

__all__ = ["Cluster", "Group", "Relocation", "id_key"]

IntArray = npt.NDArray[np.int64]

_DIGITS = re.compile(r"(\d+)")


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
class Relocation:
    """One executed relocation of a running workload: GPU positions and starts before and after, and its kind.

    Not a step of a migration plan (:class:`mipopt.migrate.plan.Move`, in GPU ids, part of
    the plan format): the record of what happened to the cluster. A relocation executed
    from a plan (:func:`mipopt.migrate.execute.execute`) carries its round (1, 2, ...; 0
    for a direct :meth:`Cluster.move`), whether it parks the workload on the way to its
    target, and whether it restores a drained workload (``disruptive``: the workload was
    down from its drain, in the same or an earlier round, until this relocation; the plan
    calls it a create with a source).
    """

    workload: str
    source: tuple[int, int]
    target: tuple[int, int]
    kind: str  # one of mipopt.state.occupancy.MOVE_KINDS
    round: int = 0
    park: bool = False
    disruptive: bool = False


_BY_PLACEMENT = "a Cluster changes only by place, remove and move, which keep track of where workloads sit"


class Cluster(Occupancy):
    """Occupancy of every GPU of ``instance`` and where each workload sits; running workloads are placed at construction.

    Attributes
    ----------
    mask, compute, used, size, media, count, host, cpu, ram, cpu_cap, ram_cap, position
        As in :class:`~mipopt.state.occupancy.Occupancy` (arrays indexed by GPU position in
        ``instance.gpus``).
    id_rank
        Rank of each GPU in natural id order.
    groups
        The GPUs by model (:class:`Group`), in order of their first GPU.
    host_gpus
        Host position -> positions of its GPUs.
    placed
        Workload id -> (GPU id, start) of everything on the cluster now.
    moves
        Counter of relocations by kind (parks and restores included); ``log`` the
        relocations themselves (:class:`Relocation`).
    planned
        Counts of the migration plans executed on the cluster, kept by
        :func:`mipopt.migrate.execute.execute` (:data:`mipopt.migrate.execute.PLAN_COUNTS`).
    """

    def __init__(self, instance: Instance) -> None:
        super().__init__(instance)
        gpus = instance.gpus
        n = len(gpus)
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
        self.log: list[Relocation] = []
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
                group_bits[self.media[g.at] > 0] = 0
            bits[g.at] = group_bits
        room = self.host_room(w)
        if not room.all():
            bits[~room[self.host]] = 0
        return bits

    def host_room(self, w: Workload) -> npt.NDArray[np.bool_]:
        """Per host, whether its free cpu and ram take ``w``'s (GPU ``k``'s host: ``self.host[k]``)."""
        return self.room(w.cpu, w.ram_gb)

    def _index(self, w: Workload, model: GpuModel, profile: str | None) -> int | None:
        """Position in ``model.profiles`` of ``profile`` (default: ``w``'s own), None where ``w`` may not run."""
        if w.gpu_models is not None and model.name not in w.gpu_models:
            return None
        if profile is None and w.profile is not None:
            return model.index(w.profile)
        if profile is None:  # a memory-sized one's default: the smallest that fits
            own = self.instance.profile_on(w, model)
            return None if own is None else model.index(own.name)
        return model.index(profile)

    def as_placed(self, wid: str) -> Workload:
        """Workload ``wid`` as it runs now: a MIG-Adapter borrower, and a memory-sized workload,
        asks for the profile it occupies, on its GPU's model (a move keeps its profile)."""
        w = self.instance.workload(wid)
        model = self.instance.gpu(self.placed[wid][0]).model
        p = self.profile_of[wid]
        if p == self._index(w, model, None) and not w.memory_sized:
            return w
        placement = w.placement and dataclasses.replace(w.placement, profile=None)  # the profile says it
        return dataclasses.replace(
            w,
            profile=model.profiles[p].name,
            gpu_models=(model.name,),
            memory_gb=None,
            min_compute=None,
            placement=placement,
        )

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

    def first_in_order(
        self, w: Workload, *, balanced: bool, allowed: npt.NDArray[np.bool_] | None = None
    ) -> tuple[int, int] | None:
        """IBM's baselines: the first GPU in their order that takes ``w``, at its lowest legal start.

        The first GPU of an order that takes ``w`` is the one with the smallest key
        among those that do: the id for first fit; the joint slice utilization
        ``(s_m + s_c) / (S_m + S_c)`` (IBM WPM section 4.2), then the id, for load
        balancing. So no GPU list is sorted per workload. ``allowed`` (a mask per GPU)
        leaves the other GPUs out.
        """
        bits = self.legal(w)
        if allowed is not None:
            bits = np.where(allowed, bits, 0)
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

    def mean_fragmentation(self) -> tuple[float, float]:
        """FBK's fragmentation F (MFI paper, Alg. 1) and GRMU's, each averaged over the active
        GPUs (0 when none is): the one place the simulator's and reopt's means are computed."""
        fbk = grmu = 0.0
        active = 0
        for g in self.groups:
            masks = self.mask[g.at]
            busy = masks[masks != 0]
            fbk += float(g.tables.fbk.take(busy).sum())
            grmu += float(g.tables.grmu.take(busy).sum())
            active += len(busy)
        return (fbk / active, grmu / active) if active else (0.0, 0.0)

    # --- changes

    def hold(self, wid: str, spot: Spot) -> None:
        """Refused: a cluster keeps where each workload sits, so it changes only by :meth:`place`,
        :meth:`remove` and :meth:`move` (plans hold instances on a plain :class:`Occupancy`)."""
        raise TypeError(_BY_PLACEMENT)

    def release(self, wid: str, spot: Spot) -> None:
        """Refused, as :meth:`hold`."""
        raise TypeError(_BY_PLACEMENT)

    def place(self, w: Workload, k: int, start: int, profile: str | None = None) -> None:
        """Put ``w`` on GPU ``k`` at ``start``, at its own profile or at ``profile`` (borrowed)."""
        model = self.model(k)
        p = self._index(w, model, profile)
        assert p is not None, f"{w.id} cannot run on {model.name}"
        self.occupy(k, p, start, w.cpu, w.ram_gb)
        self.placed[w.id] = (self.instance.gpus[k].id, start)
        self.profile_of[w.id] = p
        self._on.setdefault(k, {})[w.id] = None

    def remove(self, w: Workload) -> tuple[str, int]:
        """Take ``w`` off its GPU (the inverse of :meth:`place`); returns where it was."""
        gpu_id, start = self.placed.pop(w.id)
        p = self.profile_of.pop(w.id)
        k = self.position[gpu_id]
        self.occupy(k, p, start, w.cpu, w.ram_gb, -1)
        on = self._on[k]
        del on[w.id]
        if not on:
            del self._on[k]
        return gpu_id, start

    def move(self, w: Workload, k: int, start: int, profile: str | None = None) -> Relocation:
        """Migrate ``w`` to GPU ``k`` at ``start`` (its own profile unless ``profile``); recorded by kind.

        Directly, in one step: a relocation that must be safe at every instant goes
        through a plan (:func:`mipopt.migrate.execute.execute`).
        """
        gpu_id, old_start = self.remove(w)
        self.place(w, k, start, profile)
        return self.record(w.id, (self.position[gpu_id], old_start), (k, start))

    def to_back(self, wid: str) -> None:
        """Put ``wid`` last in its GPU's placement order (:meth:`on_gpu`), as if removed and placed again."""
        on = self._on[self.position[self.placed[wid][0]]]
        del on[wid]
        on[wid] = None

    def record(
        self,
        wid: str,
        source: tuple[int, int],
        target: tuple[int, int],
        number: int = 0,
        park: bool = False,
        disruptive: bool = False,
    ) -> Relocation:
        """Count and log a relocation of ``wid`` from ``source`` to ``target`` (GPU positions and starts) made on the cluster."""
        gpus = self.instance.gpus
        kind = move_kind(self.instance, (gpus[source[0]].id, source[1]), (gpus[target[0]].id, target[1]))
        relocation = Relocation(wid, source, target, kind, number, park, disruptive)
        self.moves[kind] += 1
        self.log.append(relocation)
        return relocation

    def copy(self) -> Self:
        """An independent copy, for trial placements that may be thrown away."""
        other = super().copy()
        other.placed = dict(self.placed)
        other.profile_of = dict(self.profile_of)
        other._on = {k: dict(on) for k, on in self._on.items()}
        other.moves = Counter(self.moves)
        other.planned = Counter(self.planned)
        other.log = list(self.log)
        return other
