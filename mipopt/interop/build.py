"""Building an instance from what ``nvidia-smi`` printed on each host (issue 14, section 1).

The parsers in :mod:`mipopt.interop.nvidia_smi` say what the text says; this module decides
what an instance takes from it: the GPUs and their models from ``-L``, plain ``nvidia-smi``,
``-q`` or ``-q -x``, and the running workloads from ``nvidia-smi mig -lgi``, the one output that
prints each GPU instance's profile id and start. Starts are never guessed: a GPU whose MIG
devices are listed without an ``-lgi`` row to place them is refused.

A GPU whose product is not in the catalog becomes a custom model when the host's
``-lgip`` and ``-lgipp`` outputs are given (profiles, ids, counts, placements as printed);
for a catalog model those outputs are checked against the catalog. :func:`merge_import`
lays an import over an existing instance, so new requests can be added and kept.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mipopt.catalog import GpuModel, get_model, model_from_dict
from mipopt.errors import InstanceError
from mipopt.instance import Host, Instance, InstanceBuilder, Workload
from mipopt.interop.nvidia_smi import (
    PARSERS,
    GpuInstanceProfileRow,
    GpuInstanceRow,
    ListedGpu,
    ProfilePlacements,
    QueryReport,
    SummaryReport,
    detect,
    gpu_instance_profile_name,
)

_LGI_NEEDED = "the output of `nvidia-smi mig -lgi` is needed for the starts"


@dataclass
class _Gpu:
    """One GPU of a host as the files tell it: product, where it was listed, its MIG devices."""

    product: str
    where: str  # FILE:LINE of the line naming the GPU
    uuid: str | None = None
    devices: list[tuple[str, int | None, str]] = field(default_factory=list)  # name, GI id, where
    model: GpuModel | None = None  # resolved once every file is read


@dataclass
class _Host:
    gpus: dict[int, _Gpu] = field(default_factory=dict)
    rows: list[tuple[GpuInstanceRow, str]] = field(default_factory=list)  # -lgi row, file
    profiles: list[tuple[GpuInstanceProfileRow, str]] = field(default_factory=list)  # -lgip
    placements: list[tuple[ProfilePlacements, str]] = field(default_factory=list)  # -lgipp


def _add_gpu(host: _Host, index: int, product: str, file: str, line: int, uuid: str | None = None) -> _Gpu:
    where = f"{file}:{line}"
    known = host.gpus.get(index)
    if known is None:
        known = host.gpus[index] = _Gpu(product, where)
    elif _same_product(known.product, product) is False:
        raise InstanceError(where, f"GPU {index} is {product!r} here but {known.product!r} at {known.where}")
    if uuid is not None:
        if known.uuid is not None and known.uuid != uuid:
            raise InstanceError(where, f"GPU {index} is {uuid} here but {known.uuid} at {known.where}")
        known.uuid = uuid
    return known


def _same_product(a: str, b: str) -> bool | None:
    """Whether two printed products name one model (None: either is not in the catalog)."""
    try:
        return get_model(a).name == get_model(b).name
    except KeyError:
        return None if a != b else True


def _files(paths: Sequence[str | Path]) -> list[Path]:
    """The files given, a directory standing for the files in it (sorted, hidden ones skipped)."""
    out: list[Path] = []
    for p in map(Path, paths):
        if p.is_dir():
            out.extend(sorted(q for q in p.iterdir() if q.is_file() and not q.name.startswith(".")))
        else:
            out.append(p)
    return out


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
            entry = _add_gpu(host, gpu.index, gpu.product_name, file, gpu.line, gpu.uuid)
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
            entry = _add_gpu(host, index, product, file, qgpu.line, qgpu.uuid)
            for qdev in qgpu.mig_devices:
                entry.devices.append(
                    (f"GI {qdev.gpu_instance_id}", qdev.gpu_instance_id, f"{file}:{qdev.line}")
                )
    elif form == "lgi":
        host.rows.extend((row, file) for row in parsed)
    elif form == "lgip":
        host.profiles.extend((row, file) for row in parsed)
    elif form == "lgipp":
        host.placements.extend((row, file) for row in parsed)
    # -lci adds nothing: a compute instance runs inside a GPU instance that -lgi lists.


_PROFILE_NAME = re.compile(r"^(\d+)g\.(\d+(?:\.\d+)?)gb")


def _custom_model(name: str, host: _Host, index: int, where: str) -> GpuModel:
    """A model built from what ``-lgip`` and ``-lgipp`` printed for GPU ``index``."""
    rows = [(r, file) for r, file in host.profiles if r.gpu == index]
    places = {p.profile_id: (p, file) for p, file in host.placements if p.gpu == index}
    if not rows or not places:
        missing = " and ".join(form for form, given in (("-lgip", rows), ("-lgipp", places)) if not given)
        raise InstanceError(
            where,
            f"{name!r} is not in the catalog; give the host's `nvidia-smi mig {missing}` output "
            "to build it as a custom model",
        )
    profiles: list[dict[str, Any]] = []
    slots = compute = 0
    memory_gb = 0.0
    for row, file in rows:
        pname = gpu_instance_profile_name(row.name)
        m = _PROFILE_NAME.match(pname)
        if m is None:
            raise InstanceError(f"{file}:{row.line}", f"profile name {row.name!r} is not NgC.Mgb")
        if row.profile_id not in places:
            raise InstanceError(
                f"{file}:{row.line}", f"profile id {row.profile_id} of GPU {index} has no -lgipp placements"
            )
        placed, _ = places[row.profile_id]
        slots = max(slots, *(s + placed.size for s in placed.starts))
        compute, memory_gb = max(compute, int(m.group(1))), max(memory_gb, float(m.group(2)))
        profiles.append(
            {
                "name": pname,
                "id": row.profile_id,
                "compute": int(m.group(1)),
                "memory_slots": placed.size,
                "memory_gb": float(m.group(2)),
                "max_instances": row.total,
                "placements": [[s, placed.size] for s in placed.starts],
                "placement_status": "confirmed",
            }
        )
    data = {
        "model": name,
        "slots": slots,
        "compute_slices": compute,
        "memory_gb": memory_gb,
        "profiles": profiles,
        "source_note": f"built from nvidia-smi mig -lgip/-lgipp ({where})",
    }
    return model_from_dict(data, where)


def _check_profiles(model: GpuModel, host: _Host, index: int) -> None:
    """What ``-lgip``/``-lgipp`` printed for a catalog model agrees with the catalog."""
    for row, file in host.profiles:
        if row.gpu != index:
            continue
        printed = gpu_instance_profile_name(row.name)
        profile = model.find(row.profile_id)
        if profile is None or model.find(printed) is not profile:
            raise InstanceError(
                f"{file}:{row.line}",
                f"{printed} (id {row.profile_id}) is not a profile of {model.name} in the catalog; "
                "see `mipopt info` or report the output",
            )
    for placed, file in host.placements:
        profile = model.find(placed.profile_id) if placed.gpu == index else None
        if placed.gpu == index and (profile is None or set(placed.starts) != set(profile.starts)):
            raise InstanceError(
                f"{file}:{placed.line}",
                f"placements {sorted(placed.starts)} of profile id {placed.profile_id} differ from "
                f"{model.name}'s in the catalog",
            )


def _resolve(host: _Host, index: int, gpu: _Gpu, custom: dict[str, GpuModel]) -> GpuModel:
    try:
        model = get_model(gpu.product, custom)
    except KeyError:
        name = re.sub(r"^NVIDIA[ -]", "", gpu.product).strip().replace(" ", "-")
        model = custom[name] if name in custom else _custom_model(name, host, index, gpu.where)
        if custom.setdefault(name, model) != model:
            raise InstanceError(
                gpu.where, f"custom model {name!r} differs from the one built before"
            ) from None
        return model
    _check_profiles(model, host, index)
    return model


def _build_host(
    builder: InstanceBuilder,
    host_id: str,
    host: _Host,
    gpu_model: str | None,
    cpu: float | None,
    ram_gb: float | None,
    custom: dict[str, GpuModel],
) -> None:
    listed = bool(host.gpus)
    unnamed = [(r.gpu, f"{file}:{r.line}") for r, file in host.rows]
    unnamed += [(r.gpu, f"{file}:{r.line}") for r, file in host.profiles]
    unnamed += [(r.gpu, f"{file}:{r.line}") for r, file in host.placements]
    for index, where in unnamed:
        if index in host.gpus:
            continue
        if listed:
            raise InstanceError(where, f"GPU {index} is not among the listed GPUs {sorted(host.gpus)}")
        if gpu_model is None:
            raise InstanceError(where, "no file names the GPU's product; give gpu_model")
        host.gpus[index] = _Gpu(gpu_model, where)
    if not host.gpus:
        raise InstanceError(
            host_id, "no GPUs in its files (-lci lists compute instances only): give -L, -q, -q -x, "
            "plain nvidia-smi or mig -lgi"
        )  # fmt: skip
    for index, gpu in host.gpus.items():
        gpu.model = _resolve(host, index, gpu, custom)
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
    gpus = sorted(host.gpus.items())
    builder.add_host(
        host_id,
        {f"{host_id}-gpu{index}": gpu.model for index, gpu in gpus if gpu.model is not None},
        cpu=cpu,
        ram_gb=ram_gb,
        device_indices={f"{host_id}-gpu{index}": index for index, _ in gpus},
        uuids={f"{host_id}-gpu{index}": gpu.uuid for index, gpu in gpus if gpu.uuid is not None},
    )
    for row, file in host.rows:
        model = host.gpus[row.gpu].model
        assert model is not None
        profile = next((p for p in model.profiles if p.id == row.profile_id), None)
        if profile is None:
            raise InstanceError(
                f"{file}:{row.line}", f"profile id {row.profile_id} is not a profile of {model.name}"
            )
        gpu_id = f"{host_id}-gpu{row.gpu}"
        builder.add_workload(
            f"{gpu_id}-gi{row.instance_id}",
            profile.name,
            placement=(gpu_id, row.start),
            gpu_instance_id=row.instance_id,
        )


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
        Host id -> the files read on that host; a directory stands for the files in it.
    gpu_model
        The model of GPUs that no file names (a lone ``-lgi``): a catalog id or product name,
        or the name of a custom model built from the host's ``-lgip`` and ``-lgipp``.
    cpu, ram_gb
        Each host's capacity (``None``: unlimited).
    name
        The instance's name.

    Returns
    -------
    Instance
        GPUs ``{host}-gpu{index}`` with their device index (and UUID where printed); workloads
        ``{host}-gpu{index}-gi{instance_id}``, running, with their GPU-instance id.

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
    custom: dict[str, GpuModel] = {}
    builder = InstanceBuilder(name, custom_models=[])
    for host_id, files in hosts.items():
        host = _Host()
        paths = _files(files)
        if not paths:
            raise InstanceError(host_id, "no files given for this host")
        for path in paths:
            _read_file(host, path)
        _build_host(builder, host_id, host, gpu_model, cpu, ram_gb, custom)
    builder.custom_models.extend(custom.values())
    return builder.build()


def merge_import(base: Instance, imported: Instance) -> tuple[Instance, tuple[str, ...]]:
    """Lay an import over an existing instance; the import is the truth about its hosts.

    Hosts of ``base`` that were not imported stay as they are; an imported host replaces the
    base's host of that id (its GPUs and running workloads as imported; cpu and ram as
    imported where given, else the base's; the base's weight). A base workload running on
    an imported host keeps its id and attributes (cpu, ram, weight, pinned) when the import
    shows an instance of its profile at its GPU and start; one the import does not show is
    dropped. New requests of ``base`` are kept, so requests added to an imported instance
    survive the next import.

    Returns
    -------
    tuple of (Instance, tuple of str)
        The merged instance, and one note per base workload dropped, or kept under its own
        id where the import names it otherwise.

    Raises
    ------
    InstanceError
        Two custom models of one name that differ, or what the merged instance breaks
        (a new request whose ``gpu_models`` no longer exist, host capacities).
    """
    notes: list[str] = []
    new_hosts = {h.id: h for h in imported.hosts}
    hosts: list[Host] = []
    for h in base.hosts:
        if h.id in new_hosts:
            n = new_hosts.pop(h.id)
            cpu = h.cpu if n.cpu is None else n.cpu
            ram = h.ram_gb if n.ram_gb is None else n.ram_gb
            hosts.append(dataclasses.replace(n, cpu=cpu, ram_gb=ram, weight=h.weight))
        else:
            hosts.append(h)
    hosts.extend(new_hosts.values())
    gpus = {g.id: g for g in base.gpus if g.host not in imported._host}
    gpus.update((g.id, g) for g in imported.gpus)
    ordered = [gpus[gid] for h in hosts for gid in h.gpus]
    ordered = [dataclasses.replace(g, index=i) for i, g in enumerate(ordered)]

    shown = {_spot(w, imported): w for w in imported.workloads if w.placement is not None}
    kept: list[Workload] = []
    for w in base.workloads:
        if w.placement is None or base.gpu(w.placement.gpu).host not in imported._host:
            kept.append(w)
            continue
        match = shown.pop(_spot(w, base), None)
        if match is None:
            notes.append(
                f"{w.id}: not running at {w.placement.gpu} start {w.placement.start} any more; dropped"
            )
        else:
            kept.append(dataclasses.replace(w, placement=match.placement))
            if match.id != w.id:
                notes.append(f"{w.id}: kept its id; the import calls it {match.id}")
    kept.extend(shown.values())

    custom = {m.name: m for m in base.custom_models}
    for m in imported.custom_models:
        if custom.setdefault(m.name, m) != m:
            raise InstanceError("custom_gpu_models", f"imported model {m.name!r} differs from the base's")
    merged = Instance(
        base.name, tuple(hosts), tuple(ordered), tuple(kept), tuple(custom.values()), base.description
    )
    return merged, tuple(notes)


def _spot(w: Workload, inst: Instance) -> tuple[str, int, str]:
    """Where a running workload sits and what it is: GPU, start and profile name."""
    assert w.placement is not None
    gpu = inst.gpu(w.placement.gpu)
    profile = gpu.model.find(w.profile)
    return w.placement.gpu, w.placement.start, profile.name if profile else str(w.profile)
