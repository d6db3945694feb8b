"""Building an instance from what ``nvidia-smi`` printed on each host (issue 14, section 1).

The parsers in :mod:`mipopt.interop.nvidia_smi` say what the text says; this module decides
what an instance takes from it: the GPUs and their models from ``-L``, plain ``nvidia-smi``,
``-q`` or ``-q -x``, and the running workloads from ``nvidia-smi mig -lgi``, the one output that
prints each GPU instance's profile id and start. Starts are never guessed: a GPU whose MIG
devices are listed without an ``-lgi`` row to place them is refused.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from mipopt.catalog import GpuModel, get_model
from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder
from mipopt.interop.nvidia_smi import (
    PARSERS,
    GpuInstanceRow,
    ListedGpu,
    QueryReport,
    SummaryReport,
    detect,
)

_LGI_NEEDED = "the output of `nvidia-smi mig -lgi` is needed for the starts"


@dataclass
class _Gpu:
    """One GPU of a host as the files tell it: model, where it was listed, its MIG devices."""

    model: GpuModel
    where: str  # FILE:LINE of the line naming the GPU
    devices: list[tuple[str, int | None, str]] = field(default_factory=list)  # name, GI id, where


@dataclass
class _Host:
    gpus: dict[int, _Gpu] = field(default_factory=dict)
    rows: list[tuple[GpuInstanceRow, str]] = field(default_factory=list)  # -lgi row, file


def _model(product: str, where: str) -> GpuModel:
    try:
        return get_model(product)
    except KeyError as err:
        raise InstanceError(where, str(err.args[0])) from None


def _add_gpu(host: _Host, index: int, product: str, file: str, line: int) -> _Gpu:
    where = f"{file}:{line}"
    model = _model(product, where)
    known = host.gpus.get(index)
    if known is None:
        known = host.gpus[index] = _Gpu(model, where)
    elif known.model.name != model.name:
        raise InstanceError(
            where, f"GPU {index} is {model.name} here but {known.model.name} at {known.where}"
        )
    return known


def _read_file(host: _Host, path: Path) -> None:
    file = str(path)
    try:
        text = path.read_text()
    except OSError as err:
        raise InstanceError(file, f"cannot be read: {err.strerror}") from None
    form = detect(text, file)
    if form not in PARSERS:
        raise InstanceError(file, f"a {form} file has no GPUs or GPU instances to import")
    parsed = PARSERS[form](text, file)
    if form == "L":
        listed: tuple[ListedGpu, ...] = parsed
        for gpu in listed:
            entry = _add_gpu(host, gpu.index, gpu.product_name, file, gpu.line)
            for dev in gpu.mig_devices:
                entry.devices.append((dev.name, dev.gpu_instance_id, f"{file}:{dev.line}"))
    elif form == "nvidia-smi":
        summary: SummaryReport = parsed
        for sgpu in summary.gpus:
            _add_gpu(host, sgpu.index, sgpu.product_name, file, sgpu.line)
        for sdev in summary.mig_devices:
            if sdev.gpu not in host.gpus:
                raise InstanceError(
                    f"{file}:{sdev.line}", f"MIG device on GPU {sdev.gpu}, which is not listed"
                )
            host.gpus[sdev.gpu].devices.append(
                (f"GI {sdev.gpu_instance_id}", sdev.gpu_instance_id, f"{file}:{sdev.line}")
            )
    elif form in ("q", "q-x"):
        report: QueryReport = parsed
        # -q prints no GPU index; its GPUs come in index (PCI bus) order, as nvidia-smi numbers them.
        for index, qgpu in enumerate(report.gpus):
            product = qgpu.product_name or qgpu.pci_device_id
            if product is None:
                raise InstanceError(
                    f"{file}:{qgpu.line}", "GPU with neither a product name nor a PCI device id"
                )
            entry = _add_gpu(host, index, product, file, qgpu.line)
            for qdev in qgpu.mig_devices:
                entry.devices.append(
                    (f"GI {qdev.gpu_instance_id}", qdev.gpu_instance_id, f"{file}:{qdev.line}")
                )
    elif form == "lgi":
        host.rows.extend((row, file) for row in parsed)
    # -lgip, -lgipp and -lci add nothing here: profiles come from the catalog, and a compute
    # instance runs inside a GPU instance that -lgi lists.


def _build_host(
    builder: InstanceBuilder,
    host_id: str,
    host: _Host,
    gpu_model: str | None,
    cpu: float | None,
    ram_gb: float | None,
) -> None:
    listed = bool(host.gpus)
    for row, file in host.rows:
        where = f"{file}:{row.line}"
        if row.gpu in host.gpus:
            continue
        if listed:
            raise InstanceError(where, f"GPU {row.gpu} is not among the listed GPUs {sorted(host.gpus)}")
        if gpu_model is None:
            raise InstanceError(where, "no file names the GPU's product; give gpu_model")
        host.gpus[row.gpu] = _Gpu(_model(gpu_model, where), where)
    gi_ids: dict[int, set[int]] = {}
    for row, _ in host.rows:
        gi_ids.setdefault(row.gpu, set()).add(row.instance_id)
    for index, gpu in sorted(host.gpus.items()):
        for name, gi_id, where in gpu.devices:
            if index not in gi_ids:
                raise InstanceError(
                    where, f"MIG device {name} on GPU {index} has no known start; {_LGI_NEEDED}"
                )
            if gi_id is not None and gi_id not in gi_ids[index]:
                raise InstanceError(
                    where,
                    f"GPU instance {gi_id} on GPU {index} is not in the -lgi output "
                    f"(instances {sorted(gi_ids[index])}): the files show different states",
                )
    builder.add_host(
        host_id,
        {f"{host_id}-gpu{index}": gpu.model for index, gpu in sorted(host.gpus.items())},
        cpu=cpu,
        ram_gb=ram_gb,
    )
    for row, file in host.rows:
        model = host.gpus[row.gpu].model
        profile = next((p for p in model.profiles if p.id == row.profile_id), None)
        if profile is None:
            raise InstanceError(
                f"{file}:{row.line}", f"profile id {row.profile_id} is not a profile of {model.name}"
            )
        gpu_id = f"{host_id}-gpu{row.gpu}"
        builder.add_workload(f"{gpu_id}-gi{row.instance_id}", profile.name, placement=(gpu_id, row.start))


def instance_from_nvidia_smi(
    hosts: Mapping[str, Sequence[str | Path]],
    *,
    gpu_model: str | None = None,
    cpu: float | None = None,
    ram_gb: float | None = None,
    name: str = "imported",
) -> Instance:
    """An instance from recorded ``nvidia-smi`` outputs, per host.

    Each file's form is told by :func:`~mipopt.interop.nvidia_smi.detect`. GPUs (index and
    product) come from ``-L``, plain ``nvidia-smi``, ``-q`` or ``-q -x``, their models from the
    catalog (:func:`mipopt.catalog.get_model`); running workloads from ``nvidia-smi mig -lgi``
    rows, with the profile that has the printed NVML profile id and the printed start.

    Parameters
    ----------
    hosts
        Host id -> the files read on that host.
    gpu_model
        The model of GPUs that no file names (a lone ``-lgi``); a catalog id or product name.
    cpu, ram_gb
        Each host's capacity (``None``: unlimited).
    name
        The instance's name.

    Returns
    -------
    Instance
        GPUs ``{host}-gpu{index}``; workloads ``{host}-gpu{index}-gi{instance_id}``, running.

    Raises
    ------
    InstanceError
        With path ``FILE`` or ``FILE:LINE``: unreadable or unparsable text, an unknown product,
        a profile id the model lacks, an ``-lgi`` GPU index not among the listed GPUs, MIG
        devices listed without the ``-lgi`` output that gives their starts, files that show
        different GPU instances; and whatever the built instance breaks (overlaps, illegal starts).

    Examples
    --------
    >>> import tempfile, pathlib
    >>> lgi = '''+----------------------------------------------------+
    ... | GPU instances:                                     |
    ... | GPU   Name          Profile  Instance   Placement  |
    ... |                       ID       ID       Start:Size |
    ... |====================================================|
    ... |   0  MIG 3g.20gb       9        2          4:4     |
    ... +----------------------------------------------------+
    ... '''
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "lgi.txt"  # hand-made
    >>> _ = path.write_text(lgi)
    >>> inst = instance_from_nvidia_smi({"n1": [path]}, gpu_model="A100-40GB")
    >>> [(w.id, w.profile, w.placement.gpu, w.placement.start) for w in inst.workloads]
    [('n1-gpu0-gi2', '3g.20gb', 'n1-gpu0', 4)]
    """
    builder = InstanceBuilder(name)
    for host_id, files in hosts.items():
        host = _Host()
        for file in files:
            _read_file(host, Path(file))
        _build_host(builder, host_id, host, gpu_model, cpu, ram_gb)
    return builder.build()
