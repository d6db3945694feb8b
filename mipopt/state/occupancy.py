"""What every GPU and host of an instance holds, and the rules a state must obey: the one bookkeeping.

:class:`Occupancy` keeps, per GPU, the occupied-slot mask, compute slices and memory slots
in use, instances per profile (``max_instances``) and ``+me`` sets, and per host the cpu
and ram in use. The migration planners hold instances in it by workload and spot
(:meth:`Occupancy.hold`, :meth:`Occupancy.fits`): a workload may hold two at once, its
source and its target while a create-before-destroy move runs. :class:`~mipopt.state.Cluster`
is an occupancy that also knows which workload sits where.

Compute slices are counted but not a rule: the catalog refuses models whose
non-overlapping placements could exceed them.

A relocation of a running workload is of one of :data:`MOVE_KINDS` (:func:`move_kind`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Self

import numpy as np
import numpy.typing as npt

from mipopt.catalog import Profile
from mipopt.geometry import tables_for
from mipopt.instance import Instance

__all__ = ["MOVE_KINDS", "MOVE_LABELS", "Occupancy", "Spot", "move_kind"]

Spot = tuple[str, int]  # (GPU id, start)

#: Kinds of relocations, as the verifier, the plans and the simulator count them.
MOVE_KINDS = ("intra_gpu", "inter_gpu", "inter_host")
#: How people read the move kinds.
MOVE_LABELS = {"intra_gpu": "intra-GPU", "inter_gpu": "inter-GPU", "inter_host": "inter-host"}

#: Slack of the host cpu and ram checks (sums of floats).
EPS = 1e-9


def move_kind(instance: Instance, source: Spot, target: Spot) -> str:
    """``intra_gpu``, ``inter_gpu`` (same host) or ``inter_host``: one of :data:`MOVE_KINDS`."""
    if source[0] == target[0]:
        return "intra_gpu"
    if instance.gpu(source[0]).host == instance.gpu(target[0]).host:
        return "inter_gpu"
    return "inter_host"


class Occupancy:
    """The instances held on ``instance``'s GPUs, as arrays indexed by GPU position in ``instance.gpus``.

    Attributes
    ----------
    mask
        Occupied memory slots (a state of the geometry tables).
    compute
        Compute slices in use.
    used
        Memory slots plus compute slices in use (IBM's joint slice utilization numerator).
    size
        Memory slots plus compute slices of the GPU's model.
    media
        ``+me`` instances held (at most one where the rules hold).
    count
        ``[gpu, profile]`` instances per profile (``max_instances``).
    host
        Host position of each GPU; ``cpu``, ``ram`` (per host) are in use, ``cpu_cap``,
        ``ram_cap`` the hosts' capacities (inf where unlimited).
    position
        GPU id -> position.
    """

    def __init__(self, instance: Instance, held: Iterable[tuple[str, Spot]] = ()) -> None:
        self.instance = instance
        gpus = instance.gpus
        n = len(gpus)
        self.mask = np.zeros(n, dtype=np.int64)
        self.compute = np.zeros(n, dtype=np.int64)
        self.used = np.zeros(n, dtype=np.int64)
        self.size = np.array([g.model.slots + g.model.compute_slices for g in gpus], dtype=np.int64)
        self.media = np.zeros(n, dtype=np.int64)
        self.count = np.zeros((n, max((len(g.model.profiles) for g in gpus), default=0)), dtype=np.int64)
        host_index = {h.id: j for j, h in enumerate(instance.hosts)}
        self.host = np.array([host_index[g.host] for g in gpus], dtype=np.int64)
        self.cpu = np.zeros(len(instance.hosts))
        self.ram = np.zeros(len(instance.hosts))
        self.cpu_cap = np.array([np.inf if h.cpu is None else h.cpu for h in instance.hosts])
        self.ram_cap = np.array([np.inf if h.ram_gb is None else h.ram_gb for h in instance.hosts])
        self.position = {g.id: k for k, g in enumerate(gpus)}
        # (workload id, model name) -> position of its profile on the model, or None: facts
        # of the instance, shared by copies
        self._profiles: dict[tuple[str, str], int | None] = {}
        for wid, spot in held:
            self.hold(wid, spot)

    # --- the one bookkeeping, at GPU positions

    def occupy(self, k: int, p: int, start: int, cpu: float, ram_gb: float, sign: int = 1) -> None:
        """Add (``sign`` 1) or take away (-1) one instance of profile ``p`` at ``start`` on GPU ``k``, and its host use."""
        prof = self.instance.gpus[k].model.profiles[p]
        bits = prof.slot_mask(start)
        if sign > 0:
            self.mask[k] |= bits
        else:
            self.mask[k] &= ~bits
        self.compute[k] += sign * prof.compute
        self.used[k] += sign * (prof.memory_slots + prof.compute)
        self.count[k, p] += sign
        self.media[k] += sign * prof.media_extension
        j = self.host[k]
        self.cpu[j] += sign * cpu
        self.ram[j] += sign * ram_gb

    def fits_at(self, k: int, p: int, start: int, cpu: float, ram_gb: float) -> bool:
        """Whether one more instance of profile ``p`` at ``start`` on GPU ``k`` (and its host use) keeps every rule."""
        model = self.instance.gpus[k].model
        prof = model.profiles[p]
        if not int(tables_for(model).legal[self.mask[k], p]) >> start & 1:  # legal start, slots free
            return False
        if self.count[k, p] >= prof.max_instances or (prof.media_extension and self.media[k]):
            return False
        j = self.host[k]
        return bool(
            self.cpu[j] + cpu <= self.cpu_cap[j] + EPS and self.ram[j] + ram_gb <= self.ram_cap[j] + EPS
        )

    def room(self, cpu: float, ram_gb: float) -> npt.NDArray[np.bool_]:
        """Per host, whether its free cpu and ram take ``cpu`` and ``ram_gb`` more (GPU ``k``'s host: ``self.host[k]``)."""
        return (self.cpu + cpu <= self.cpu_cap + EPS) & (self.ram + ram_gb <= self.ram_cap + EPS)

    # --- instances of workloads at spots (GPU id, start)

    def _own(self, wid: str, gpu_id: str) -> int | None:
        """Position of ``wid``'s own profile on ``gpu_id``'s model, or None where it cannot run (remembered per model)."""
        model = self.instance.gpu(gpu_id).model
        key = (wid, model.name)
        if key not in self._profiles:
            profile = self.instance.profile_on(self.instance.workload(wid), model)
            self._profiles[key] = None if profile is None else model.profiles.index(profile)
        return self._profiles[key]

    def profile(self, wid: str, gpu_id: str) -> Profile | None:
        """``wid``'s own profile on ``gpu_id``'s model, or None where it cannot run."""
        p = self._own(wid, gpu_id)
        return None if p is None else self.instance.gpu(gpu_id).model.profiles[p]

    def slots(self, wid: str, spot: Spot) -> int:
        """The slot bits ``wid`` takes at ``spot``."""
        profile = self.profile(wid, spot[0])
        assert profile is not None, f"{wid} cannot run on {spot[0]}"
        return profile.slot_mask(spot[1])

    def taken(self, gpu_id: str) -> int:
        """The occupied slot bits of GPU ``gpu_id``."""
        return int(self.mask[self.position[gpu_id]])

    def fits(self, wid: str, spot: Spot) -> bool:
        """Whether one more instance of ``wid`` at ``spot`` keeps every rule."""
        p = self._own(wid, spot[0])
        if p is None:
            return False
        w = self.instance.workload(wid)
        return self.fits_at(self.position[spot[0]], p, spot[1], w.cpu, w.ram_gb)

    def hold(self, wid: str, spot: Spot) -> None:
        """One more instance of ``wid`` at ``spot``."""
        self._change(wid, spot, 1)

    def release(self, wid: str, spot: Spot) -> None:
        """One instance fewer of ``wid`` at ``spot``."""
        self._change(wid, spot, -1)

    def _change(self, wid: str, spot: Spot, sign: int) -> None:
        p = self._own(wid, spot[0])
        assert p is not None, f"{wid} cannot run on {spot[0]}"
        w = self.instance.workload(wid)
        self.occupy(self.position[spot[0]], p, spot[1], w.cpu, w.ram_gb, sign)

    def copy(self) -> Self:
        """An independent copy (arrays copied, facts of the instance shared)."""
        other = object.__new__(type(self))
        other.__dict__.update(self.__dict__)
        for name in ("mask", "compute", "used", "media", "count", "cpu", "ram"):
            setattr(other, name, getattr(self, name).copy())
        return other
