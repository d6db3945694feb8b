"""Building an instance from what ``nvidia-smi`` printed on each host (issue 14, section 1).

The parsers in :mod:`mipopt.interop.nvidia_smi` say what the text says; this module decides
what an instance takes from it: the GPUs and their models from ``-L``, plain ``nvidia-smi``,
``-q`` or ``-q -x``, and the running workloads from ``nvidia-smi mig -lgi``, the one output that
prints each GPU instance's profile id and start. Starts are never guessed: a GPU whose MIG
devices are listed without an ``-lgi`` row to place them is refused, and so are a listing and
an ``-lgi`` that show different GPU instances. What the files cannot tell is kept as such:
a GPU that a lone ``-lgi`` implies but does not show is of unknown layout, a GPU instance no
process uses (plain ``nvidia-smi``'s process table) is idle, and the notes say so.

A GPU whose product is not in the catalog becomes a custom model when the host's
``-lgip`` and ``-lgipp`` outputs are given (profiles, ids, counts, placements as printed);
for a catalog model those outputs are checked against the catalog. :func:`merge_import`
lays an import over an existing instance, so new requests can be added and kept.
"""

from __future__ import annotations

import dataclasses
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeVar

from mipopt.catalog import GpuModel, Profile, get_model, model_from_dict
from mipopt.errors import InstanceError
from mipopt.instance import Gpu, Host, Instance, InstanceBuilder, Workload
from mipopt.interop._names import checked_name, file_name
from mipopt.interop.nvidia_smi import (
    MAX_TEXT_BYTES,
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
from mipopt.limits import MAX_GPUS, beyond

_T = TypeVar("_T")
_LGI_NEEDED = "the output of `nvidia-smi mig -lgi` is needed for the starts"
_DIFFERENT = "the files show different states"


@dataclass(frozen=True, slots=True)
class _Device:
    """A MIG device a listing shows: its name as printed (``3g.40gb``, ``1c.2g.12gb``, or
    ``GI 2`` where only the GPU-instance id is printed) and that id where known."""

    name: str
    gpu_instance_id: int | None
    where: str  # FILE:LINE


@dataclass(frozen=True, slots=True)
class _Listing:
    """Every MIG device one file shows on one GPU (none is a statement too)."""

    where: str  # FILE:LINE of the GPU's line, or of the MIG devices table
    devices: tuple[_Device, ...]

    def shows(self) -> str:
        """The devices, in words, for errors: ``none``, ``GI 1, GI 2`` or ``3g.40gb, 1g.10gb``."""
        named = [d.name if d.gpu_instance_id is None else f"GI {d.gpu_instance_id}" for d in self.devices]
        return ", ".join(named) or "none"


@dataclass
class _Gpu:
    """One GPU of a host as the files tell it: product, where it was listed, its MIG devices."""

    product: str
    where: str  # FILE:LINE of the line naming the GPU
    uuid: str | None = None
    listings: list[_Listing] = field(default_factory=list)
    mig_off: str | None = None  # "MIG mode Disabled (FILE:LINE)" where a file says so
    model: GpuModel | None = None  # resolved once every file is read


@dataclass(frozen=True, slots=True)
class _Table:
    """Plain nvidia-smi's MIG devices or processes table: every MIG device or process of the
    GPUs it covers (the output's own GPUs; every GPU of the host for an excerpt without them)."""

    where: str  # FILE:LINE of the table's title
    gpus: frozenset[int] | None  # None: every GPU of the host
    report: SummaryReport

    def covers(self, index: int) -> bool:
        return self.gpus is None or index in self.gpus


@dataclass
class _Host:
    gpus: dict[int, _Gpu] = field(default_factory=dict)
    rows: list[tuple[GpuInstanceRow, str]] = field(default_factory=list)  # -lgi row, file
    profiles: list[tuple[GpuInstanceProfileRow, str]] = field(default_factory=list)  # -lgip
    placements: list[tuple[ProfilePlacements, str]] = field(default_factory=list)  # -lgipp
    mig_tables: list[_Table] = field(default_factory=list)
    process_tables: list[_Table] = field(default_factory=list)
    attached: list[tuple[str, int, int]] = field(default_factory=list)  # -q: file, printed, attached


def _add_gpu(host: _Host, index: int, product: str, file: str, line: int, uuid: str | None = None) -> _Gpu:
    where = f"{file}:{line}"
    known = host.gpus.get(index)
    if known is None:
        _check_index(index, where)
        known = host.gpus[index] = _Gpu(product, where)
    elif _same_product(known.product, product) is False:
        raise InstanceError(where, f"GPU {index} is {product!r} here but {known.product!r} at {known.where}")
    if uuid is not None:
        if known.uuid is not None and known.uuid != uuid:
            raise InstanceError(where, f"GPU {index} is {uuid} here but {known.uuid} at {known.where}")
        known.uuid = uuid
    return known


def _check_index(index: int, where: str) -> None:
    """A GPU index below :data:`~mipopt.limits.MAX_GPUS`: a host holds no more GPUs."""
    if index >= MAX_GPUS:
        raise InstanceError(where, f"GPU {index}: a host of {beyond(index + 1, 'GPUs', MAX_GPUS)}")


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


def read_output(path: Path, file: str) -> str:
    """The text of an nvidia-smi output: at most :data:`MAX_TEXT_BYTES` bytes of UTF-8 without NUL.

    Only that many bytes (and one more) are read, so that a device or a huge file costs no more.
    A binary, Latin-1 or UTF-16 file is refused naming the line and column of its first byte that
    is not text.

    Raises
    ------
    InstanceError
        With path ``FILE`` or ``FILE:LINE``.
    """
    try:
        with path.open("rb") as stream:
            data = stream.read(MAX_TEXT_BYTES + 1)
    except OSError as err:
        raise InstanceError(file, f"cannot be read: {err.strerror}") from None
    if len(data) > MAX_TEXT_BYTES:
        raise InstanceError(file, f"holds more than {MAX_TEXT_BYTES:,} bytes, the limit (docs/limits.md)")
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        raise InstanceError(file, "UTF-16 text (as Windows PowerShell writes with >): save it as UTF-8")
    bad = data.find(b"\0")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as err:
        if not 0 <= bad < err.start:
            rule = f"byte 0x{data[err.start]:02x} at {_column(data, err.start)} is not UTF-8 text"
            raise InstanceError(
                _where(file, data, err.start), f"{rule}: nvidia-smi prints UTF-8 (a Latin-1 or binary file?)"
            ) from None
        text = ""
    if bad >= 0:
        rule = f"a NUL byte at {_column(data, bad)}"
        raise InstanceError(_where(file, data, bad), f"{rule}: nvidia-smi prints text (a binary file?)")
    return text


def _where(file: str, data: bytes, offset: int) -> str:
    """``FILE:LINE`` of byte ``offset`` of ``data``."""
    line = data.count(b"\n", 0, offset) + 1
    return f"{file}:{line}"


def _column(data: bytes, offset: int) -> str:
    column = offset - data.rfind(b"\n", 0, offset)
    return f"column {column}"


def _read_file(host: _Host, path: Path) -> None:
    file = file_name(path)
    text = read_output(path, file)
    form = detect(text, file)
    if form not in PARSERS:
        raise InstanceError(file, f"a {form} file has no GPUs or GPU instances to import")
    parsed = PARSERS[form](text, file)
    if form == "L":
        listed: tuple[ListedGpu, ...] = parsed
        for gpu in listed:
            entry = _add_gpu(host, gpu.index, gpu.product_name, file, gpu.line, gpu.uuid)
            devices = (_Device(d.name, d.gpu_instance_id, f"{file}:{d.line}") for d in gpu.mig_devices)
            entry.listings.append(_Listing(f"{file}:{gpu.line}", tuple(devices)))
    elif form == "nvidia-smi":
        _read_summary(host, file, parsed)
    elif form in ("q", "q-x"):
        report: QueryReport = parsed
        # -q prints no GPU index; its GPUs come in index (PCI bus) order, as nvidia-smi numbers them.
        if report.attached_gpus is not None and report.attached_gpus > len(report.gpus):
            host.attached.append((file, len(report.gpus), report.attached_gpus))
        for index, qgpu in enumerate(report.gpus):
            product = qgpu.product_name or qgpu.pci_device_id
            if product is None:
                raise InstanceError(
                    f"{file}:{qgpu.line}", "GPU with neither a product name nor a PCI device id"
                )
            entry = _add_gpu(host, index, product, file, qgpu.line, qgpu.uuid)
            devices = (
                _Device(f"GI {d.gpu_instance_id}", d.gpu_instance_id, f"{file}:{d.line}")
                for d in qgpu.mig_devices
            )
            entry.listings.append(_Listing(f"{file}:{qgpu.line}", tuple(devices)))
            if qgpu.mig_mode_current in ("Disabled", "N/A"):
                entry.mig_off = f"MIG mode {qgpu.mig_mode_current} ({file}:{qgpu.line})"
    elif form == "lgi":
        host.rows.extend((row, file) for row in parsed)
    elif form == "lgip":
        host.profiles.extend((row, file) for row in parsed)
    elif form == "lgipp":
        host.placements.extend((row, file) for row in parsed)
    # -lci adds nothing: a compute instance runs inside a GPU instance that -lgi lists.


def _read_summary(host: _Host, file: str, summary: SummaryReport) -> None:
    """Plain nvidia-smi: its GPUs, and its MIG devices and processes tables for the checks."""
    for sgpu in summary.gpus:
        entry = _add_gpu(host, sgpu.index, sgpu.product_name, file, sgpu.line)
        if sgpu.mig_mode in ("Disabled", "N/A"):
            entry.mig_off = f"MIG mode {sgpu.mig_mode} ({file}:{sgpu.line})"
    own = frozenset(g.index for g in summary.gpus) if summary.gpus else None
    for sdev in summary.mig_devices:
        if own is not None and sdev.gpu not in own:
            raise InstanceError(f"{file}:{sdev.line}", f"MIG device on GPU {sdev.gpu}, which is not listed")
    if summary.mig_table is not None:
        host.mig_tables.append(_Table(f"{file}:{summary.mig_table}", own, summary))
    if summary.process_table is not None:
        host.process_tables.append(_Table(f"{file}:{summary.process_table}", own, summary))


def _name_gpus(host_id: str, host: _Host, gpu_model: str | None, notes: list[str]) -> list[int]:
    """Complete ``host.gpus`` with the GPUs only ``-lgi``, ``-lgip`` or ``-lgipp`` name; return the
    indices of those whose layout is unknown.

    With a GPU listing (``-L``, ``-q``, plain nvidia-smi) the GPUs are the listed ones, and a GPU
    no ``-lgi`` row is on is empty as its listing shows it. Without one, ``-lgi`` may have been
    run on some GPUs only (``-i``): a GPU it shows no instance on, but that ``-lgip``/``-lgipp``
    name or that lies below the highest index seen (indices run from 0), is of unknown layout,
    and a GPU above the highest is not seen at all; a note says so.
    """
    named = [(r.gpu, f"{file}:{r.line}") for r, file in host.rows]
    named += [(r.gpu, f"{file}:{r.line}") for r, file in host.profiles]
    named += [(r.gpu, f"{file}:{r.line}") for r, file in host.placements]
    if host.gpus:
        for index, where in named:
            if index not in host.gpus:
                raise InstanceError(where, f"GPU {index} is not among the listed GPUs {sorted(host.gpus)}")
        return []
    if not named:
        raise InstanceError(
            host_id, "no GPUs in its files (-lci lists compute instances only): give -L, -q, -q -x, "
            "plain nvidia-smi or mig -lgi"
        )  # fmt: skip
    if gpu_model is None:
        raise InstanceError(named[0][1], "no file names the GPU's product; give gpu_model")
    first: dict[int, str] = {}
    for index, where in named:
        first.setdefault(index, where)
    _check_index(max(first), first[max(first)])
    for index in range(max(first) + 1):
        host.gpus[index] = _Gpu(gpu_model, first.get(index, first[max(first)]))
    placed = {r.gpu for r, _ in host.rows}
    unknown = [index for index in host.gpus if index not in placed]
    note = f"{host_id}: no file lists its GPUs, so a GPU after GPU {max(first)} is not seen (add the host's nvidia-smi -L)"
    if unknown:
        note += (
            f"; GPU {_indices(unknown)} {'has' if len(unknown) == 1 else 'have'} no -lgi row: layout unknown"
        )
    notes.append(note)
    return unknown


def _indices(indices: Sequence[int]) -> str:
    return ", ".join(map(str, indices))


def _check_gi_ids(index: int, rows: Sequence[tuple[GpuInstanceRow, str]]) -> None:
    """A GPU-instance id is printed once per GPU."""
    seen: dict[int, str] = {}
    for row, where in rows:
        other = seen.setdefault(row.instance_id, where)
        if other != where:
            raise InstanceError(where, f"GPU instance {row.instance_id} on GPU {index} is also at {other}")


def _check_listing(index: int, listing: _Listing, rows: Sequence[tuple[GpuInstanceRow, str]]) -> None:
    """A listing and ``-lgi`` show the same GPU instances on GPU ``index``.

    Devices that print their GPU-instance id are matched by id; names only (``-L`` of drivers
    after R450) by GPU-instance profile, as many devices as instances at least (a GPU instance
    with several compute instances shows several devices).
    """
    if not rows:
        if listing.devices:
            d = listing.devices[0]
            raise InstanceError(
                d.where, f"MIG device {d.name} on GPU {index} has no known start; {_LGI_NEEDED}"
            )
        return
    lgi = f"the -lgi output ({rows[0][1]}: GPU instances {_indices([r.instance_id for r, _ in rows])})"
    in_lgi = {r.instance_id for r, _ in rows}
    names = Counter(r.name for r, _ in rows)
    for d in listing.devices:
        if d.gpu_instance_id is not None and d.gpu_instance_id not in in_lgi:
            raise InstanceError(
                d.where, f"GPU instance {d.gpu_instance_id} on GPU {index} is not in {lgi}: {_DIFFERENT}"
            )
        if d.gpu_instance_id is None and gpu_instance_profile_name(d.name) not in names:
            raise InstanceError(d.where, f"MIG device {d.name} on GPU {index} is not in {lgi}: {_DIFFERENT}")
    ids = {d.gpu_instance_id for d in listing.devices}
    names_only = None in ids
    unmatched = Counter(gpu_instance_profile_name(d.name) for d in listing.devices)
    for row, where in rows:
        unmatched[row.name] -= 1
        if (unmatched[row.name] < 0) if names_only else (row.instance_id not in ids):
            raise InstanceError(
                where,
                f"GPU instance {row.instance_id} ({row.name}) on GPU {index} is not among the MIG devices "
                f"{listing.where} shows ({listing.shows()}): {_DIFFERENT} (a listing printed in a "
                "container shows only the container's devices)",
            )


def _idle_rows(host: _Host, rows: Mapping[int, Sequence[tuple[GpuInstanceRow, str]]]) -> set[str]:
    """The ``-lgi`` rows (by ``FILE:LINE``) of GPU instances that no process uses, where a process
    table covers their GPU: every table that covers it shows no process in the instance."""
    idle: set[str] = set()
    # per table, GPU -> the GPU instances its processes run in (one pass over each table)
    used_by = [
        (t, _by_gpu((p.gpu, p.gpu_instance_id) for p in t.report.processes)) for t in host.process_tables
    ]
    for index, gpu_rows in rows.items():
        tables = [used for t, used in used_by if t.covers(index)]
        if not tables:
            continue
        used = {gi for table in tables for gi in table.get(index, ())}
        idle.update(where for row, where in gpu_rows if row.instance_id not in used)
    return idle


def _by_gpu(pairs: Iterable[tuple[int, _T]]) -> dict[int, list[_T]]:
    """``(GPU index, item)`` pairs grouped by GPU, in their order: one pass instead of one per GPU."""
    out: dict[int, list[_T]] = {}
    for index, item in pairs:
        out.setdefault(index, []).append(item)
    return out


_PROFILE_NAME = re.compile(r"^(\d+)g\.(\d+(?:\.\d+)?)gb")


#: What ``-lgip`` and ``-lgipp`` printed for one GPU: its profile rows and placement lines, with their files.
_Printed = tuple[Sequence[tuple[GpuInstanceProfileRow, str]], Sequence[tuple[ProfilePlacements, str]]]


def _custom_model(name: str, printed: _Printed, index: int, where: str) -> GpuModel:
    """A model built from what ``-lgip`` and ``-lgipp`` printed for GPU ``index``."""
    rows = printed[0]
    places = {p.profile_id: (p, file) for p, file in printed[1]}
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


def _check_profiles(model: GpuModel, printed_rows: _Printed) -> None:
    """What ``-lgip``/``-lgipp`` printed for a GPU of a catalog model agrees with the catalog."""
    for row, file in printed_rows[0]:
        printed = gpu_instance_profile_name(row.name)
        profile = model.find(row.profile_id)
        if profile is None or model.find(printed) is not profile:
            raise InstanceError(
                f"{file}:{row.line}",
                f"{printed} (id {row.profile_id}) is not a profile of {model.name} in the catalog; "
                "see `mipopt info` or report the output",
            )
    for placed, file in printed_rows[1]:
        profile = model.find(placed.profile_id)
        if profile is None or set(placed.starts) != set(profile.starts):
            raise InstanceError(
                f"{file}:{placed.line}",
                f"placements {sorted(placed.starts)} of profile id {placed.profile_id} differ from "
                f"{model.name}'s in the catalog",
            )


def _resolve(index: int, gpu: _Gpu, custom: dict[str, GpuModel], printed: _Printed) -> GpuModel:
    try:
        model = get_model(gpu.product, custom)
    except KeyError:
        name = re.sub(r"^NVIDIA[ -]", "", gpu.product).strip().replace(" ", "-")
        model = custom[name] if name in custom else _custom_model(name, printed, index, gpu.where)
        if custom.setdefault(name, model) != model:
            raise InstanceError(
                gpu.where, f"custom model {name!r} differs from the one built before"
            ) from None
        return model
    _check_profiles(model, printed)
    return model


@dataclass
class _Sources:
    """Where each part of the instance being built was read (``FILE:LINE``), by its place in
    the instance, so that what :class:`~mipopt.instance.Instance` refuses (an illegal start,
    an overlap, a profile limit) is reported at the line that says it."""

    gpus: list[list[str]] = field(default_factory=list)  # per host, per GPU
    workloads: list[str] = field(default_factory=list)
    idle: list[str] = field(default_factory=list)

    def locate(self, err: InstanceError) -> InstanceError:
        m = re.match(r"^(?:hosts\[(\d+)\]\.gpus\[(\d+)\]|workloads\[(\d+)\]|idle\[(\d+)\])", err.path)
        if m is None:
            return err
        if m[1] is not None:
            return InstanceError(self.gpus[int(m[1])][int(m[2])], err.rule)
        return InstanceError(
            self.workloads[int(m[3])] if m[3] is not None else self.idle[int(m[4])], err.rule
        )


def _build_host(
    builder: InstanceBuilder,
    host_id: str,
    host: _Host,
    gpu_model: str | None,
    cpu: float | None,
    ram_gb: float | None,
    custom: dict[str, GpuModel],
    sources: _Sources,
) -> None:
    """Add the host with its GPUs, running workloads, idle instances and notes to ``builder``."""
    unknown = _name_gpus(host_id, host, gpu_model, builder.notes)
    for file, printed, attached in host.attached:
        if attached > len(host.gpus) or not all(i in host.gpus for i in range(attached)):
            taken = "GPU 0" if printed == 1 else f"GPUs 0 to {printed - 1}"
            builder.notes.append(
                f"{host_id}: {file} prints {printed} of its {attached} attached GPUs: the others are not "
                f"imported, and the printed are taken as {taken} (wrong for nvidia-smi -q -i N)"
            )
    lgip = _by_gpu((r.gpu, (r, file)) for r, file in host.profiles)
    lgipp = _by_gpu((p.gpu, (p, file)) for p, file in host.placements)
    for index, gpu in host.gpus.items():
        gpu.model = _resolve(index, gpu, custom, (lgip.get(index, []), lgipp.get(index, [])))
    for table in host.mig_tables:
        file = table.where.rsplit(":", 1)[0]
        shown = _by_gpu(
            (d.gpu, _Device(f"GI {d.gpu_instance_id}", d.gpu_instance_id, f"{file}:{d.line}"))
            for d in table.report.mig_devices
        )
        for index, gpu in host.gpus.items():
            if table.covers(index):
                gpu.listings.append(_Listing(table.where, tuple(shown.get(index, ()))))
    rows: dict[int, list[tuple[GpuInstanceRow, str]]] = {}
    for row, file in host.rows:
        rows.setdefault(row.gpu, []).append((row, f"{file}:{row.line}"))
    for index, gpu in sorted(host.gpus.items()):
        _check_gi_ids(index, rows.get(index, []))
        for listing in gpu.listings:
            _check_listing(index, listing, rows.get(index, []))
        if gpu.mig_off and index in rows:
            row, where = rows[index][0]
            raise InstanceError(
                where, f"GPU instance {row.instance_id} on GPU {index}, which has {gpu.mig_off}: {_DIFFERENT}"
            )
        if gpu.mig_off:
            builder.notes.append(
                f"{host_id}: GPU {index} has {gpu.mig_off}: imported empty; enable MIG on it (a GPU "
                "reset) before a plan creates instances there"
            )
    gpus = sorted(host.gpus.items())
    sources.gpus.append([gpu.where for _, gpu in gpus])
    builder.add_host(
        host_id,
        {f"{host_id}-gpu{index}": gpu.model for index, gpu in gpus if gpu.model is not None},
        cpu=cpu,
        ram_gb=ram_gb,
        device_indices={f"{host_id}-gpu{index}": index for index, _ in gpus},
        uuids={f"{host_id}-gpu{index}": gpu.uuid for index, gpu in gpus if gpu.uuid is not None},
        unknown_layout=[f"{host_id}-gpu{index}" for index in unknown],
    )
    idle = _idle_rows(host, rows)
    idle_named = []
    for row, file in host.rows:
        model = host.gpus[row.gpu].model
        assert model is not None
        where = f"{file}:{row.line}"
        profile = _lgi_profile(model, row, where)
        gpu_id = f"{host_id}-gpu{row.gpu}"
        if where in idle:
            sources.idle.append(where)
            builder.add_idle(gpu_id, profile.name, row.start, row.instance_id)
            idle_named.append(f"GPU {row.gpu} GI {row.instance_id} ({profile.name})")
        else:
            sources.workloads.append(where)
            builder.add_workload(
                f"{gpu_id}-gi{row.instance_id}", profile.name, placement=(gpu_id, row.start),
                gpu_instance_id=row.instance_id,
            )  # fmt: skip
    if idle_named:
        tables = ", ".join(t.where for t in host.process_tables)
        builder.notes.append(
            f"{host_id}: {', '.join(idle_named)} imported idle: no process runs in them by {tables} "
            "(a process table printed in a container shows only the container's processes)"
        )


def _lgi_profile(model: GpuModel, row: GpuInstanceRow, where: str) -> Profile:
    """The profile of an ``-lgi`` row: the one with its profile id, whose name and size it prints too.

    A row whose name or size is not its id's (a ``1g.10gb`` with id 19, which is ``1g.5gb`` on an
    A100-40GB) is refused: the output is of another model, or edited, and no reading is safe.
    """
    profile = model.find(row.profile_id)
    if profile is None:
        raise InstanceError(where, f"profile id {row.profile_id} is not a profile of {model.name}")
    printed = gpu_instance_profile_name(row.name)
    if model.find(printed) is not profile or row.size != profile.memory_slots:
        raise InstanceError(
            where,
            f"GPU instance {row.instance_id} is {printed} of size {row.size} with profile id {row.profile_id}, "
            f"but id {row.profile_id} is {profile.name} of size {profile.memory_slots} on {model.name} "
            f"(`mipopt info {model.name}`): the row disagrees with the catalog",
        )
    return profile


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
    catalog (:func:`mipopt.catalog.get_model`); GPU instances from ``nvidia-smi mig -lgi`` rows,
    with the profile that has the printed NVML profile id and the printed start. A GPU instance
    is a running workload, unless a process table of plain ``nvidia-smi`` covers its GPU and
    shows no process in it: then it is idle (:class:`~mipopt.instance.IdleInstance`).

    Every listing of MIG devices (``-L``, ``-q``, the MIG devices table of plain ``nvidia-smi``)
    must show the GPU instances ``-lgi`` shows, and the reverse. A host without a GPU listing
    has the GPUs ``-lgi``, ``-lgip`` and ``-lgipp`` name, and those below the highest index; a
    GPU without ``-lgi`` rows among them is of unknown layout. What the import cannot know is
    said in the instance's notes: such GPUs, GPUs whose MIG mode is not enabled, idle instances.

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
        ``{host}-gpu{index}-gi{instance_id}``, running, with their GPU-instance id; idle
        instances; notes.

    Raises
    ------
    InstanceError
        With path ``hosts`` for a host id that cannot be a name (one printable line, not
        starting with ``-``); else ``FILE`` or ``FILE:LINE``: unreadable or unparsable text, a
        name read that cannot be a name, an unknown product, a profile id the model lacks, an
        ``-lgi`` GPU index not among the listed GPUs, MIG devices listed without the ``-lgi``
        output that gives their starts, files that show different GPU instances, a GPU-instance
        id or UUID printed twice, an ``-lgi`` row whose profile name or size is not its profile
        id's; sizes beyond ``docs/limits.md`` (a file of more than :data:`MAX_TEXT_BYTES` bytes,
        a GPU index or a GPU count beyond :data:`~mipopt.limits.MAX_GPUS`); and what the built
        instance breaks (illegal starts, overlaps),
        at the line of the ``-lgi`` row or GPU concerned.

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
    >>> print(inst.notes[0])
    n1: no file lists its GPUs, so a GPU after GPU 0 is not seen (add the host's nvidia-smi -L)
    """
    for host_id in hosts:
        checked_name(host_id, "host name", "hosts")
    custom: dict[str, GpuModel] = {}
    builder = InstanceBuilder(name, custom_models=[])
    sources = _Sources()
    uuids: dict[str, tuple[str, int, str]] = {}  # UUID -> host, index, where
    total = 0  # GPUs of the hosts read
    for host_id, files in hosts.items():
        host = _Host()
        paths = _files(files)
        if not paths:
            raise InstanceError(host_id, "no files given for this host")
        for path in paths:
            _read_file(host, path)
        for index, gpu in sorted(host.gpus.items()):
            if gpu.uuid is None:
                continue
            other = uuids.setdefault(gpu.uuid, (host_id, index, gpu.where))
            if other[:2] != (host_id, index):
                raise InstanceError(
                    gpu.where, f"UUID {gpu.uuid} is also GPU {other[1]} of host {other[0]} ({other[2]})"
                )
        _build_host(builder, host_id, host, gpu_model, cpu, ram_gb, custom, sources)
        total += len(host.gpus)  # each host has fewer than MAX_GPUS (_check_index)
        if total > MAX_GPUS:
            raise InstanceError(host_id, f"the hosts so far have {beyond(total, 'GPUs', MAX_GPUS)}")
    builder.custom_models.extend(custom.values())
    try:
        return builder.build()
    except InstanceError as err:
        raise sources.locate(err) from None


def merge_import(base: Instance, imported: Instance) -> tuple[Instance, tuple[str, ...]]:
    """Lay an import over an existing instance; the import is the truth about its hosts.

    Hosts of ``base`` that were not imported stay as they are; an imported host replaces the
    base's host of that id: its GPUs, running workloads and idle instances as imported; cpu
    and ram as imported where given, else the base's; the base's weight. A GPU of the base's
    host that the import lacks is kept with an unknown layout (a lone ``-lgi`` does not show
    a GPU without GPU instances), so nothing is placed there and nothing is dropped unsaid. A
    base workload running on an imported host keeps its id and attributes (cpu, ram, weight,
    pinned) when the import shows an instance of its profile at its GPU and start; one the
    import does not show is dropped. New requests of ``base`` are kept, so requests added to
    an imported instance survive the next import.

    The merged instance's notes are the base's, less those about an imported host (``HOST:``
    or ``node HOST:``, which described what the import replaces), then the import's, then
    this merge's.

    Returns
    -------
    tuple of (Instance, tuple of str)
        The merged instance, and this merge's own notes: one per base workload dropped or kept
        under its own id where the import names it otherwise, one per host whose GPUs the
        import lacks.

    Raises
    ------
    InstanceError
        Two custom models of one name that differ, or what the merged instance breaks
        (a new request whose ``gpu_models`` no longer exist, host capacities).
    """
    notes: list[str] = []
    new_hosts = {h.id: h for h in imported.hosts}
    replaced = {h.id for h in base.hosts if h.id in new_hosts}
    hosts: list[Host] = []
    kept_gpus: dict[str, Gpu] = {}
    for h in base.hosts:
        if h.id in new_hosts:
            n = new_hosts.pop(h.id)
            missing = [g for g in h.gpus if not imported.has_gpu(g)]
            if missing:
                notes.append(
                    f"{h.id}: {', '.join(missing)} not in the import; kept with an unknown layout "
                    "(import the host's nvidia-smi -L with its -lgi, or remove them)"
                )
                kept_gpus.update((g, dataclasses.replace(base.gpu(g), layout_known=False)) for g in missing)
            cpu = h.cpu if n.cpu is None else n.cpu
            ram = h.ram_gb if n.ram_gb is None else n.ram_gb
            hosts.append(
                dataclasses.replace(n, gpus=n.gpus + tuple(missing), cpu=cpu, ram_gb=ram, weight=h.weight)
            )
        else:
            hosts.append(h)
    hosts.extend(new_hosts.values())
    imported_hosts = {h.id for h in imported.hosts}
    gpus = {g.id: g for g in base.gpus if g.host not in imported_hosts}
    gpus.update((g.id, g) for g in imported.gpus)
    gpus.update(kept_gpus)
    ordered = [gpus[gid] for h in hosts for gid in h.gpus]
    ordered = [dataclasses.replace(g, index=i) for i, g in enumerate(ordered)]

    shown = {_spot(w, imported): w for w in imported.workloads if w.placement is not None}
    idle_spots = {
        (i.gpu, i.start, str(imported.gpu(i.gpu).model.profile(i.profile).name)) for i in imported.idle
    }
    kept: list[Workload] = []
    for w in base.workloads:
        if w.placement is None or base.gpu(w.placement.gpu).host not in imported_hosts:
            kept.append(w)
            continue
        match = shown.pop(_spot(w, base), None)
        if w.placement.gpu in kept_gpus:
            notes.append(f"{w.id}: on {w.placement.gpu}, which the import does not show; dropped")
        elif match is None and _spot(w, base) in idle_spots:
            notes.append(
                f"{w.id}: idle now at {w.placement.gpu} start {w.placement.start}; dropped as a workload"
            )
        elif match is None:
            notes.append(
                f"{w.id}: not running at {w.placement.gpu} start {w.placement.start} any more; dropped"
            )
        else:
            kept.append(dataclasses.replace(w, placement=match.placement))
            if match.id != w.id:
                notes.append(f"{w.id}: kept its id; the import calls it {match.id}")
    kept.extend(shown.values())
    idle = [i for i in base.idle if base.gpu(i.gpu).host not in imported_hosts] + list(imported.idle)

    custom = {m.name: m for m in base.custom_models}
    for m in imported.custom_models:
        if custom.setdefault(m.name, m) != m:
            raise InstanceError("custom_gpu_models", f"imported model {m.name!r} differs from the base's")
    stale = tuple(f"{prefix}{h}: " for h in replaced for prefix in ("", "node "))
    all_notes = [n for n in base.notes if not n.startswith(stale)] + list(imported.notes) + notes
    merged = Instance(
        base.name, tuple(hosts), tuple(ordered), tuple(kept), tuple(custom.values()), base.description,
        tuple(idle), tuple(all_notes),
    )  # fmt: skip
    return merged, tuple(notes)


def _spot(w: Workload, inst: Instance) -> tuple[str, int, str]:
    """Where a running workload sits and what it is: GPU, start and profile name."""
    assert w.placement is not None
    gpu = inst.gpu(w.placement.gpu)
    profile = inst.profile_on(w, gpu.model)
    return w.placement.gpu, w.placement.start, profile.name if profile else w.size
