"""Programmatic construction of instances."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mipopt.catalog import GpuModel, get_model
from mipopt.errors import InstanceError
from mipopt.instance.types import Gpu, Host, IdleInstance, Instance, Placement, Workload


@dataclass
class InstanceBuilder:
    """A mutable builder; :meth:`build` checks every rule and returns a frozen :class:`Instance`.

    Examples
    --------
    >>> b = InstanceBuilder("demo")
    >>> b.add_host("h1", cpu=64, gpus={"h1-g0": "A100-40GB"})
    >>> b.add_workload("w1", "3g.20gb", placement=("h1-g0", 4))
    >>> b.add_workload("w2", "4g.20gb")
    >>> len(b.build().workloads)
    2
    """

    name: str = "instance"
    description: str = ""
    custom_models: list[GpuModel] = field(default_factory=list)
    _hosts: list[Host] = field(default_factory=list)
    _gpus: list[Gpu] = field(default_factory=list)
    _workloads: list[Workload] = field(default_factory=list)
    _idle: list[IdleInstance] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    def add_host(
        self,
        host_id: str,
        gpus: dict[str, str | GpuModel] | None = None,
        *,
        cpu: float | None = None,
        ram_gb: float | None = None,
        weight: float = 1.0,
        device_indices: Mapping[str, int] | None = None,
        uuids: Mapping[str, str] | None = None,
        unknown_layout: Iterable[str] = (),
    ) -> None:
        """Add a host with its GPUs (GPU id -> model name or model).

        ``device_indices`` and ``uuids`` (GPU id -> value) say how each GPU is addressed on
        the host (``nvidia-smi -i``, NVML), when known; the GPUs in ``unknown_layout`` hold
        MIG devices at places nobody has read (:attr:`mipopt.instance.Gpu.layout_known`).
        """
        unknown = set(unknown_layout)
        custom = {m.name: m for m in self.custom_models}
        ids = []
        for gid, model in (gpus or {}).items():
            if isinstance(model, str):
                try:
                    model = get_model(model, custom)
                except KeyError as err:
                    raise InstanceError(f"hosts[{len(self._hosts)}].gpus", str(err.args[0])) from None
            device = None if device_indices is None else device_indices.get(gid)
            uuid = None if uuids is None else uuids.get(gid)
            self._gpus.append(Gpu(gid, model, host_id, len(self._gpus), device, uuid, gid not in unknown))
            ids.append(gid)
        self._hosts.append(Host(host_id, tuple(ids), cpu, ram_gb, weight))

    def add_workload(
        self,
        workload_id: str,
        profile: str | int | None = None,
        *,
        memory_gb: float | None = None,
        min_compute: int | None = None,
        placement: tuple[str, int] | None = None,
        running_profile: str | None = None,
        pinned: bool = False,
        cpu: float = 0.0,
        ram_gb: float = 0.0,
        weight: float = 1.0,
        migration_weight: float = 1.0,
        gpu_models: tuple[str, ...] | list[str] | None = None,
        gpu_instance_id: int | None = None,
    ) -> None:
        """Add a workload of a ``profile``, or sized by ``memory_gb`` (and ``min_compute``
        compute slices): exactly one of the two. With ``placement=(gpu_id, start)`` it is
        running; ``running_profile`` is the profile a memory-sized one runs at (default: the
        smallest that fits).

        ``gpu_instance_id`` is the id the driver gave the running instance, when known.

        >>> b = InstanceBuilder("demo")
        >>> b.add_host("h1", gpus={"h1-g0": "H100-80GB"})
        >>> b.add_workload("chat", memory_gb=12)
        >>> inst = b.build()
        >>> inst.profile_on(inst.workload("chat"), inst.gpu("h1-g0").model).name
        '1g.20gb'
        """
        self._workloads.append(
            Workload(
                workload_id,
                profile,
                cpu,
                ram_gb,
                weight,
                migration_weight,
                None if gpu_models is None else tuple(gpu_models),
                None if placement is None else Placement(*placement, gpu_instance_id, running_profile),
                pinned,
                memory_gb,
                min_compute,
            )
        )

    def add_idle(self, gpu: str, profile: str | int, start: int, gpu_instance_id: int | None = None) -> None:
        """Add a GPU instance that exists at ``start`` of ``gpu`` but that no workload uses."""
        self._idle.append(IdleInstance(gpu, profile, start, gpu_instance_id))

    def build(self) -> Instance:
        return Instance(
            self.name,
            tuple(self._hosts),
            tuple(self._gpus),
            tuple(self._workloads),
            tuple(self.custom_models),
            self.description,
            tuple(self._idle),
            tuple(self.notes),
        )
