"""Text parsers for what ``nvidia-smi`` prints about MIG: one parser per output form.

Each parser takes the text and a file name (used in errors only) and returns frozen records,
exactly what the text says and nothing inferred: building an instance from them is the
importer's job. Lines are skipped only where nvidia-smi prints decorations (table borders,
``|===`` rules, column headers above them, blank lines, "No MIG-enabled devices found." and
the like); any other line must read as data, or the parser raises :class:`NvidiaSmiError`
naming the file and line. Sizes are bounded (``docs/limits.md``): at most :data:`MAX_TEXT_LINES`
lines, numbers of at most 9 digits, names of at most :data:`MAX_NAME_CHARS` characters; an
error quotes at most a short excerpt of a line.

The forms, as :func:`detect` names them (and as ``../shared/interop/`` names its files):

=============  ===========================================  =======================
form           command                                      parser
=============  ===========================================  =======================
``L``          ``nvidia-smi -L``                            :func:`parse_list`
``lgip``       ``nvidia-smi mig -lgip``                     :func:`parse_lgip`
``lgipp``      ``nvidia-smi mig -lgipp``                    :func:`parse_lgipp`
``lgi``        ``nvidia-smi mig -lgi``                      :func:`parse_lgi`
``lci``        ``nvidia-smi mig -lci``                      :func:`parse_lci`
``nvidia-smi`` ``nvidia-smi`` (GPU and MIG devices tables)  :func:`parse_summary`
``q``          ``nvidia-smi -q``                            :func:`parse_query`
``q-x``        ``nvidia-smi -q -x``                         :func:`parse_query_xml`
``mig-parted`` a mig-parted config (YAML)                   none here
=============  ===========================================  =======================
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any
from xml.parsers import expat

from mipopt._fields import name_problem
from mipopt.errors import InstanceError
from mipopt.interop._names import shown
from mipopt.limits import beyond

#: Bytes of one output the importer reads (-L of 50,000 GPUs with 7 MIG devices each: about 33 MB).
MAX_TEXT_BYTES = 64 * 2**20
#: Lines of one output a parser reads (-L of 50,000 GPUs with 7 MIG devices each: 400,000).
MAX_TEXT_LINES = 2_000_000
#: Characters of a name read (a product name, a UUID, a profile; the longest printed are ~60).
MAX_NAME_CHARS = 256


class NvidiaSmiError(InstanceError):
    """Text that is not what nvidia-smi prints: ``FILE:LINE: expected ..., got '...'``.

    Parameters
    ----------
    file
        The file name the text came from.
    line
        1-based line number of the offending line.
    expected
        What a line there must be.
    got
        What it is (the line as read, stripped of surrounding blanks, or a description); shown
        quoted, control characters escaped, cut when long (:func:`mipopt.interop._names.shown`).
    rule
        Instead of ``expected`` and ``got``, the whole rule broken (a name's, say).

    Examples
    --------
    >>> err = NvidiaSmiError("node1-lgi.txt", 6, "a GPU instance row", "|   0  MIG 1g.5gb  x |")
    >>> print(err)
    node1-lgi.txt:6: expected a GPU instance row, got '|   0  MIG 1g.5gb  x |'
    >>> err.path, err.line
    ('node1-lgi.txt:6', 6)
    """

    def __init__(
        self, file: str, line: int, expected: str = "", got: str = "", *, rule: str | None = None
    ) -> None:
        self.file = file
        self.line = line
        super().__init__(f"{file}:{line}", f"expected {expected}, got {shown(got)}" if rule is None else rule)


def _name(value: str, what: str, file: str, line: int) -> str:
    """``value``, when it may be a name; else :class:`NvidiaSmiError` with the rule.

    A product name, a UUID or a profile reaches instance ids, terminals and emitted scripts, so
    it must be one printable line not starting with ``-`` (:func:`mipopt._fields.name_problem`).

    >>> _name("A100\\x1b[2J", "product name", "L.txt", 1)
    Traceback (most recent call last):
    ...
    mipopt.interop.nvidia_smi.NvidiaSmiError: L.txt:1: product name must be one line of printable characters: 'A100\\x1b[2J' has '\\x1b' at 4
    """
    if len(value) > MAX_NAME_CHARS:
        raise NvidiaSmiError(
            file, line, rule=f"{what} {shown(value)} has {beyond(len(value), 'characters', MAX_NAME_CHARS)}"
        )
    problem = name_problem(value)
    if problem:
        raise NvidiaSmiError(file, line, rule=f"{what} {problem}")
    return value


# -- records ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListedMigDevice:
    """A ``MIG ... Device N:`` line of ``nvidia-smi -L``.

    ``name`` is the profile as printed: a GPU-instance profile (``3g.40gb``) or, where the
    device is one compute instance of a larger GPU instance, a compute-instance name
    (``1c.2g.12gb``; see :func:`gpu_instance_profile_name`). R450 drivers print UUIDs of the
    form ``MIG-GPU-<uuid>/GI/CI``, which carry the GPU- and compute-instance ids; later
    drivers' UUIDs do not, and the ids are ``None``.
    """

    name: str
    device: int
    uuid: str
    gpu_instance_id: int | None
    compute_instance_id: int | None
    line: int


@dataclass(frozen=True, slots=True)
class ListedGpu:
    """A ``GPU N: NAME (UUID: GPU-...)`` line of ``nvidia-smi -L`` with its MIG devices."""

    index: int
    product_name: str
    uuid: str
    mig_devices: tuple[ListedMigDevice, ...]
    line: int


@dataclass(frozen=True, slots=True)
class GpuInstanceProfileRow:
    """One profile of ``nvidia-smi mig -lgip`` on one GPU (both of its table lines)."""

    gpu: int
    name: str
    profile_id: int
    free: int
    total: int
    memory_gib: float
    p2p: bool
    sm: int
    dec: int
    enc: int
    ce: int
    jpeg: int
    ofa: int
    line: int


@dataclass(frozen=True, slots=True)
class ProfilePlacements:
    """One line of ``nvidia-smi mig -lgipp``: where a profile may start on a GPU, and its size."""

    gpu: int
    profile_id: int
    starts: tuple[int, ...]
    size: int
    line: int


@dataclass(frozen=True, slots=True)
class GpuInstanceRow:
    """One GPU instance of ``nvidia-smi mig -lgi``."""

    gpu: int
    name: str
    profile_id: int
    instance_id: int
    start: int
    size: int
    line: int


@dataclass(frozen=True, slots=True)
class ComputeInstanceRow:
    """One compute instance of ``nvidia-smi mig -lci``.

    ``start`` and ``size`` are the compute slices inside the GPU instance; drivers before the
    ``Placement`` column print none and they are ``None``.
    """

    gpu: int
    gpu_instance_id: int
    name: str
    profile_id: int
    instance_id: int
    start: int | None
    size: int | None
    line: int


@dataclass(frozen=True, slots=True)
class SummaryGpu:
    """A GPU of plain ``nvidia-smi``'s GPU table.

    ``product_name`` is as printed, which may be cut short (``NVIDIA RTX PRO 6000 Blac...``).
    ``mig_mode`` is the ``MIG M.`` cell (``Enabled``, ``Disabled``, ``N/A``), ``None`` where the
    layout has no such cell.
    """

    index: int
    product_name: str
    bus_id: str
    mig_mode: str | None
    line: int


@dataclass(frozen=True, slots=True)
class SummaryMigDevice:
    """A row of plain ``nvidia-smi``'s "MIG devices" table (memory ``None`` where ``N/A``)."""

    gpu: int
    gpu_instance_id: int
    compute_instance_id: int
    device: int
    memory_used_mib: int | None
    memory_total_mib: int | None
    sm: int | None
    line: int


@dataclass(frozen=True, slots=True)
class SummaryProcess:
    """A row of plain ``nvidia-smi``'s "Processes" table (ids ``None`` where ``N/A``)."""

    gpu: int
    gpu_instance_id: int | None
    compute_instance_id: int | None
    pid: int
    kind: str
    name: str
    memory_mib: int | None
    line: int


@dataclass(frozen=True, slots=True)
class SummaryReport:
    """Plain ``nvidia-smi`` output: driver version, GPUs, MIG devices and processes.

    ``mig_table`` and ``process_table`` are the lines of the "MIG devices" and "Processes"
    titles, ``None`` where the text has no such table (nvidia-smi prints the MIG devices table
    only when some GPU has MIG enabled): a table printed lists every MIG device, or every
    process nvidia-smi could see, even when it says there is none. ``driver_version`` is
    ``None`` for an excerpt that starts below the banner, as documentation prints it.
    """

    driver_version: str | None
    gpus: tuple[SummaryGpu, ...]
    mig_devices: tuple[SummaryMigDevice, ...]
    processes: tuple[SummaryProcess, ...]
    mig_table: int | None = None
    process_table: int | None = None


@dataclass(frozen=True, slots=True)
class QueryMigDevice:
    """A MIG device listed by ``nvidia-smi -q`` or ``-q -x``."""

    index: int
    gpu_instance_id: int
    compute_instance_id: int
    line: int


@dataclass(frozen=True, slots=True)
class QueryGpu:
    """A GPU of ``nvidia-smi -q`` / ``-q -x``; fields the text does not carry are ``None``.

    ``pci_device_id`` is as printed (``0x20B210DE`` in text, ``20B210DE`` in XML), upper case
    without ``0x``. ``mig_mode_current``/``pending`` are ``Enabled``, ``Disabled`` or ``N/A``.
    """

    bus_id: str
    product_name: str | None
    uuid: str | None
    pci_device_id: str | None
    mig_mode_current: str | None
    mig_mode_pending: str | None
    mig_devices: tuple[QueryMigDevice, ...]
    line: int


@dataclass(frozen=True, slots=True)
class QueryReport:
    """``nvidia-smi -q`` / ``-q -x`` output.

    ``attached_gpus`` counts every GPU of the machine, while ``gpus`` holds those printed:
    ``nvidia-smi -q -i 0`` prints one GPU of several, so fewer is not an error.
    """

    driver_version: str | None
    attached_gpus: int | None
    gpus: tuple[QueryGpu, ...]


def gpu_instance_profile_name(name: str) -> str:
    """The GPU-instance profile of a MIG device name: ``1c.3g.40gb`` -> ``3g.40gb``.

    A compute instance that takes only some compute slices of its GPU instance is named
    ``<c>c.<GPU-instance profile>``; other names are GPU-instance profiles already.

    >>> gpu_instance_profile_name("1c.2g.12gb"), gpu_instance_profile_name("1g.10gb+me")
    ('2g.12gb', '1g.10gb+me')
    """
    return re.sub(r"^\d+c\.", "", name)


# -- shared line handling --------------------------------------------------------------------


#: What :meth:`str.splitlines` ends a line at (``\r\n`` is one end, counted apart).
_LINE_ENDS = ("\n", "\r", "\v", "\f", "\x1c", "\x1d", "\x1e", "\x85", "\u2028", "\u2029")


def _lines(text: str, file: str) -> list[tuple[int, str]]:
    """(1-based number, line without trailing blanks) pairs; CRLF and a leading BOM are taken off.

    More than :data:`MAX_TEXT_LINES` lines are refused before any is split off.
    """
    ends = sum(map(text.count, _LINE_ENDS)) - text.count("\r\n")
    if ends > MAX_TEXT_LINES:
        raise NvidiaSmiError(
            file, MAX_TEXT_LINES + 1, rule=f"the text has {beyond(ends, 'lines', MAX_TEXT_LINES)}"
        )
    return [(i, line.rstrip()) for i, line in enumerate(text.lstrip("\ufeff").splitlines(), 1)]


_BORDER = re.compile(r"^[+|]-[-+|]*$")  # +----+, |----+-----|
_RULE = re.compile(r"^\|=[=+|]*$")  # |=====+=====|
_NOTHING = re.compile(r"^\|\s*No (MIG devices|running processes) found\s*\|$")
_NO_MIG = "No MIG-enabled devices found."
_TITLES = {
    "GPU instance profiles:": "lgip",
    "GPU instances:": "lgi",
    "Compute instances:": "lci",
    "MIG devices:": "mig",
    "Processes:": "processes",
}


#: The most column-header rows a table prints between its title and its ``|===`` rule (-lci: 4).
_HEADER_ROWS = 4


@dataclass(frozen=True, slots=True)
class _Group:
    """Data rows of one table between two borders, with the table they belong to; or, with
    ``title``, the table's title row (for plain nvidia-smi's GPU table, its banner)."""

    table: str
    rows: tuple[tuple[int, str], ...]
    title: bool = False


def _groups(
    text: str, file: str, data_outside: Callable[[int, str], bool] = lambda n, line: False
) -> Iterator[_Group]:
    """The data rows of nvidia-smi's box tables, grouped between borders.

    A table starts at a title row (``| GPU instances:``, ``| NVIDIA-SMI ...``), yielded as a
    ``title`` group; its rows up to the ``|===`` rule are column headers and skipped (at most
    :data:`_HEADER_ROWS` of them, so that a table whose rule is missing is refused rather than
    read as headers). ``data_outside`` may accept a line outside any table (a time stamp); any
    other line there is an error.
    """
    table = ""
    header: int | None = None  # header rows seen since the title; None below the rule
    last = (0, "")
    rows: list[tuple[int, str]] = []
    for n, line in _lines(text, file):
        stripped = line.strip()
        cell = stripped.strip("|").strip()
        last = (n, stripped) if stripped else last
        if _BORDER.match(stripped) or _RULE.match(stripped) or not stripped:
            if rows:
                yield _Group(table, tuple(rows))
                rows = []
            if _RULE.match(stripped):
                header = None
            continue
        if stripped.startswith("|") and (cell in _TITLES or cell.startswith("NVIDIA-SMI ")):
            if rows:
                yield _Group(table, tuple(rows))
                rows = []
            table, header = _TITLES.get(cell, "gpus"), 0
            yield _Group(table, ((n, cell),), title=True)
            continue
        if header is not None:
            header += 1
            if header > _HEADER_ROWS:
                raise NvidiaSmiError(file, n, "the '|===' rule under the column headers", stripped)
            continue
        if _NOTHING.match(stripped) or stripped == _NO_MIG:
            continue
        if stripped.startswith("|") and stripped.endswith("|") and table:
            rows.append((n, stripped))
            continue
        if data_outside(n, stripped):
            continue
        raise NvidiaSmiError(file, n, "a row of an nvidia-smi table or a border", stripped)
    if header is not None:
        raise NvidiaSmiError(file, last[0], "the '|===' rule under the column headers", "the end of the text")
    if rows:
        yield _Group(table, tuple(rows))


def _int(value: str) -> int | None:
    return None if value == "N/A" else int(value)


# -- nvidia-smi -L ---------------------------------------------------------------------------

_L_GPU = re.compile(r"^GPU (\d{1,9}): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)$")
_L_MIG = re.compile(r"^\s+MIG (\S+)\s+Device\s+(\d{1,9}): \(UUID: (MIG-\S+)\)$")
_L_R450_UUID = re.compile(r"^MIG-GPU-[0-9a-fA-F-]+/(\d{1,9})/(\d{1,9})$")


def parse_list(text: str, file: str) -> tuple[ListedGpu, ...]:
    """Read ``nvidia-smi -L``: GPUs with their MIG devices.

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    tuple of ListedGpu
        In the order printed.

    Raises
    ------
    NvidiaSmiError
        A line that is neither a GPU nor a MIG device line, a MIG device before any GPU, a
        GPU index printed twice (outputs of several machines or containers run together), or a
        name or UUID that is not one printable line.

    Examples
    --------
    >>> text = "GPU 0: NVIDIA H100 PCIe (UUID: GPU-7cd6)\\n  MIG 3g.40gb     Device  0: (UUID: MIG-da06)\\n"
    >>> (gpu,) = parse_list(text, "node1-L.txt")
    >>> gpu.product_name, [(m.name, m.device) for m in gpu.mig_devices]
    ('NVIDIA H100 PCIe', [('3g.40gb', 0)])
    """
    gpus: list[ListedGpu] = []
    devices: list[ListedMigDevice] = []
    seen: dict[int, int] = {}  # GPU index -> its line
    for n, line in _lines(text, file):
        if not line:
            continue
        if m := _L_GPU.match(line):
            if gpus:
                gpus[-1] = _with_devices(gpus[-1], devices)
            index = int(m[1])
            if seen.setdefault(index, n) != n:
                raise NvidiaSmiError(
                    file, n, f"one line per GPU index (GPU {index} is on line {seen[index]})", line
                )
            gpus.append(ListedGpu(index, _name(m[2], "product name", file, n), m[3], (), n))
            devices = []
        elif m := _L_MIG.match(line):
            if not gpus:
                raise NvidiaSmiError(file, n, "a GPU line before its MIG devices", line.strip())
            ids = _L_R450_UUID.match(m[3])
            gi, ci = (int(ids[1]), int(ids[2])) if ids else (None, None)
            name, uuid = _name(m[1], "MIG device name", file, n), _name(m[3], "MIG device UUID", file, n)
            devices.append(ListedMigDevice(name, int(m[2]), uuid, gi, ci, n))
        else:
            raise NvidiaSmiError(
                file, n, "'GPU N: NAME (UUID: GPU-...)' or '  MIG PROFILE Device N: (UUID: MIG-...)'", line
            )
    if gpus:
        gpus[-1] = _with_devices(gpus[-1], devices)
    return tuple(gpus)


def _with_devices(gpu: ListedGpu, devices: list[ListedMigDevice]) -> ListedGpu:
    return ListedGpu(gpu.index, gpu.product_name, gpu.uuid, tuple(devices), gpu.line)


# -- nvidia-smi mig -lgip / -lgipp / -lgi / -lci ---------------------------------------------

_LGIP_1 = re.compile(
    r"^\|\s+(\d{1,9})\s+MIG\s+(\S+)\s+(\d{1,9})\s+(\d{1,9})/(\d{1,9})\s+(\d{1,9}(?:\.\d{1,9})?)\s+(Yes|No)"
    r"\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s*\|$"
)
_LGIP_2 = re.compile(r"^\|\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s*\|$")


def _only(groups: Iterator[_Group], table: str, file: str) -> Iterator[_Group]:
    """The data groups of ``table``; a row of another table is an error."""
    for group in groups:
        if group.title:
            continue
        if group.table != table:
            n, row = group.rows[0]
            raise NvidiaSmiError(file, n, f"a row of the {table!r} table", row)
        yield group


def parse_lgip(text: str, file: str) -> tuple[GpuInstanceProfileRow, ...]:
    """Read ``nvidia-smi mig -lgip``: the GPU-instance profiles of each GPU.

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    tuple of GpuInstanceProfileRow
        One per GPU and profile, in the order printed.

    Raises
    ------
    NvidiaSmiError
        A profile whose two lines (GPU .. ENC, then CE JPEG OFA) do not read as such, or a
        profile name that is not one printable line.
    """
    found: list[GpuInstanceProfileRow] = []
    for group in _only(_groups(text, file), "lgip", file):
        rows = iter(group.rows)
        for n, row in rows:
            if not (a := _LGIP_1.match(row)):
                raise NvidiaSmiError(
                    file, n, "'| GPU  MIG NAME  ID  FREE/TOTAL  GiB  P2P  SM  DEC  ENC |'", row
                )
            n2, row2 = next(rows, (n + 1, "the end of the profile"))
            if not (b := _LGIP_2.match(row2)):
                raise NvidiaSmiError(file, n2, f"the 'CE JPEG OFA' line of profile {a[2]}", row2)
            _name(a[2], "profile name", file, n)
            found.append(
                GpuInstanceProfileRow(
                    gpu=int(a[1]), name=a[2], profile_id=int(a[3]), free=int(a[4]), total=int(a[5]),
                    memory_gib=float(a[6]), p2p=a[7] == "Yes", sm=int(a[8]), dec=int(a[9]),
                    enc=int(a[10]), ce=int(b[1]), jpeg=int(b[2]), ofa=int(b[3]), line=n,
                )
            )  # fmt: skip
    return tuple(found)


_LGIPP = re.compile(
    r"^GPU\s+(\d{1,9})\s+Profile ID\s+(\d{1,9})\s+Placements?\s*:\s*\{(\d{1,9}(?:,\d{1,9})*)\}:(\d{1,9})$"
)


def parse_lgipp(text: str, file: str) -> tuple[ProfilePlacements, ...]:
    """Read ``nvidia-smi mig -lgipp``: the legal starts and the size of each profile on each GPU.

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    tuple of ProfilePlacements
        One per GPU and profile, in the order printed.

    Raises
    ------
    NvidiaSmiError
        A line other than ``GPU  0 Profile ID 19 Placements: {0,1,...}:1`` (blank lines and
        "No MIG-enabled devices found." aside).

    Examples
    --------
    >>> (p,) = parse_lgipp("GPU  0 Profile ID  9 Placements: {0,4}:4\\n", "node1-lgipp.txt")
    >>> p.profile_id, p.starts, p.size
    (9, (0, 4), 4)
    """
    found = []
    for n, line in _lines(text, file):
        if not line or line == _NO_MIG:
            continue
        if not (m := _LGIPP.match(line)):
            raise NvidiaSmiError(file, n, "'GPU N Profile ID P Placements: {S,...}:SIZE'", line)
        found.append(
            ProfilePlacements(int(m[1]), int(m[2]), tuple(int(s) for s in m[3].split(",")), int(m[4]), n)
        )
    return tuple(found)


#: A row of ``-lgi`` or ``-lci``: GPU, the GPU-instance id (``-lci`` only), the profile's name and
#: id, the instance id and the placement ``START:SIZE`` (which ``-lci`` of older drivers lacks).
_INSTANCE_ROW = re.compile(
    r"^\|\s+(\d{1,9})\s+(?:(\d{1,9})\s+)?MIG\s+(\S+)\s+(\d{1,9})\s+(\d{1,9})(?:\s+(\d{1,9}):(\d{1,9}))?\s*\|$"
)
_INSTANCE_SHAPE = {
    "lgi": "'| GPU  MIG NAME  PROFILE-ID  INSTANCE-ID  START:SIZE |'",
    "lci": "'| GPU  GI-ID  MIG NAME  PROFILE-ID  INSTANCE-ID  START:SIZE |'",
}


def _instance_rows(text: str, file: str, table: str) -> Iterator[tuple[int, re.Match[str]]]:
    """(line number, match of :data:`_INSTANCE_ROW`) of each row of the ``-lgi`` or ``-lci``
    table (``table``); a row of another shape, or a profile name that cannot be a name, is an error."""
    lci = table == "lci"
    for group in _only(_groups(text, file), table, file):
        for n, line in group.rows:
            m = _INSTANCE_ROW.match(line)
            if not m or (m[2] is not None) != lci or (not lci and m[6] is None):
                raise NvidiaSmiError(file, n, _INSTANCE_SHAPE[table], line)
            _name(m[3], "profile name", file, n)
            yield n, m


def parse_lgi(text: str, file: str) -> tuple[GpuInstanceRow, ...]:
    """Read ``nvidia-smi mig -lgi``: the GPU instances, with their profile id and placement.

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    tuple of GpuInstanceRow
        In the order printed (nvidia-smi sorts by profile, not by start).

    Raises
    ------
    NvidiaSmiError
        A row that is not ``| GPU  MIG NAME  PROFILE-ID  INSTANCE-ID  START:SIZE |``, or a
        profile name that is not one printable line.

    Examples
    --------
    >>> text = "| GPU instances: |\\n|====|\\n|   0  MIG 3g.40gb   9   2   4:4   |\\n+----+\\n"
    >>> [(r.profile_id, r.instance_id, r.start, r.size) for r in parse_lgi(text, "node1-lgi.txt")]
    [(9, 2, 4, 4)]
    """
    return tuple(
        GpuInstanceRow(int(m[1]), m[3], int(m[4]), int(m[5]), int(m[6]), int(m[7]), n)
        for n, m in _instance_rows(text, file, "lgi")
    )


def parse_lci(text: str, file: str) -> tuple[ComputeInstanceRow, ...]:
    """Read ``nvidia-smi mig -lci``: the compute instances of each GPU instance.

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    tuple of ComputeInstanceRow
        In the order printed.

    Raises
    ------
    NvidiaSmiError
        A row that is not ``| GPU  GI-ID  MIG NAME  PROFILE-ID  INSTANCE-ID  [START:SIZE] |``,
        or a profile name that is not one printable line.
    """
    found = []
    for n, m in _instance_rows(text, file, "lci"):
        start, size = (None, None) if m[6] is None else (int(m[6]), int(m[7]))
        found.append(ComputeInstanceRow(int(m[1]), int(m[2]), m[3], int(m[4]), int(m[5]), start, size, n))
    return tuple(found)


# -- plain nvidia-smi ------------------------------------------------------------------------

_BANNER = re.compile(r"^NVIDIA-SMI (\S+)\s")
_TIMESTAMP = re.compile(r"^\w{3} \w{3} [ \d]\d \d\d:\d\d:\d\d \d{4}$")
_GPU_ROW = re.compile(
    r"^\|\s+(\d{1,9})\s+(.+?)\s+(On|Off|N/A)\s*\|\s*([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.\d)\s"
)
_MIG_ROW = re.compile(
    r"^\|\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s+(\d{1,9})\s+\|\s*(?:(\d{1,9})MiB\s*/\s*(\d{1,9})MiB|N/A)\s*\|\s*(\d{1,9}|N/A)\s+\S+\s*\|"
    r"(?:\s+(?:\d+|N/A)){5}\s*\|$"
)
_MIG_ROW_2 = re.compile(r"^\|\s+\|\s*(?:\d+MiB\s*/\s*\d+MiB|N/A)\s*\|\s*\|\s*\|$")
_PROCESS = re.compile(
    r"^\|\s+(\d{1,9})\s+(\d{1,9}|N/A)\s+(\d{1,9}|N/A)\s+(\d{1,9})\s+(\S+)\s+(.+?)\s+(\d{1,9}MiB|N/A)\s*\|$"
)


def parse_summary(text: str, file: str) -> SummaryReport:
    """Read plain ``nvidia-smi``: its GPU table, its "MIG devices" table and its processes.

    The layouts of drivers R450 to R610 are read (79-, 87- and 89-column tables, ``KMD
    Version`` banners, ``Shared Memory-Usage`` headers, a missing blank line between tables),
    and excerpts that start at the "MIG devices" or "Processes" table, as documentation prints
    them (no banner, no GPU table).

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    SummaryReport

    Raises
    ------
    NvidiaSmiError
        Neither an ``NVIDIA-SMI`` banner nor a "MIG devices" or "Processes" table, a row of
        one of the tables that does not read as such, or a product name that is not one
        printable line.
    """
    driver = None
    titles: dict[str, int] = {}
    gpus: list[SummaryGpu] = []
    devices: list[SummaryMigDevice] = []
    processes: list[SummaryProcess] = []
    for group in _groups(text, file, lambda n, line: bool(_TIMESTAMP.match(line))):
        n, row = group.rows[0]
        if group.title and group.table == "gpus":
            if not (m := _BANNER.match(row)):
                raise NvidiaSmiError(file, n, "'NVIDIA-SMI VERSION ...'", row)
            driver = m[1]
        elif group.title and group.table in ("mig", "processes"):
            titles[group.table] = n
        elif group.table == "gpus":
            if not (m := _GPU_ROW.match(row)):
                raise NvidiaSmiError(file, n, "'| INDEX  NAME  PERSISTENCE | BUS-ID ...' (a GPU row)", row)
            mig_mode = None
            if len(group.rows) >= 3:
                mig_mode = group.rows[2][1].rsplit("|", 2)[1].strip()
                if mig_mode not in ("Enabled", "Disabled", "N/A"):
                    raise NvidiaSmiError(
                        file, group.rows[2][0], "a MIG mode (Enabled, Disabled, N/A)", mig_mode
                    )
            gpus.append(SummaryGpu(int(m[1]), _name(m[2], "product name", file, n), m[4], mig_mode, n))
        elif group.table == "mig":
            if not (m := _MIG_ROW.match(row)):
                raise NvidiaSmiError(
                    file, n, "'| GPU  GI  CI  MIG | USED / TOTAL | SM ... |' (a MIG device row)", row
                )
            for n2, row2 in group.rows[1:]:
                if not _MIG_ROW_2.match(row2):
                    raise NvidiaSmiError(file, n2, "the BAR1 line of the MIG device", row2)
            used, total = (int(m[5]), int(m[6])) if m[5] is not None else (None, None)
            devices.append(
                SummaryMigDevice(int(m[1]), int(m[2]), int(m[3]), int(m[4]), used, total, _int(m[7]), n)
            )
        elif group.table == "processes":
            for n, row in group.rows:
                if not (p := _PROCESS.match(row)):
                    raise NvidiaSmiError(
                        file, n, "'| GPU  GI  CI  PID  TYPE  NAME  MEMORY |' (a process row)", row
                    )
                memory = None if p[7] == "N/A" else int(p[7].removesuffix("MiB"))
                processes.append(
                    SummaryProcess(int(p[1]), _int(p[2]), _int(p[3]), int(p[4]), p[5], p[6], memory, n)
                )
        else:
            raise NvidiaSmiError(file, n, "a table of plain nvidia-smi output", row)
    if driver is None and not titles:
        raise NvidiaSmiError(file, 1, "the '| NVIDIA-SMI VERSION ...' banner", "no banner in the text")
    return SummaryReport(
        driver, tuple(gpus), tuple(devices), tuple(processes), titles.get("mig"), titles.get("processes")
    )


# -- nvidia-smi -q (text) --------------------------------------------------------------------

_Q_HEADER = re.compile(r"^=+NVSMI LOG=+$")
_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]+:[0-9A-Fa-f]+:[0-9A-Fa-f]+\.\d)$")
_Q_FIELD = re.compile(r"^( *)(\S(?:.*?\S)?)\s*:(?:\s+(.*))?$")
_Q_SECTION = re.compile(r"^( *)(\S(?:.*\S)?)$")


@dataclass(slots=True)
class _Node:
    key: str
    value: str | None
    line: int
    children: list[_Node]


def _hex_id(value: str) -> str:
    return value.upper().removeprefix("0X")


def parse_query(text: str, file: str) -> QueryReport:
    """Read ``nvidia-smi -q``: product name, UUID, PCI device id, MIG mode and MIG devices per GPU.

    The text is read as the nested ``Key : Value`` outline nvidia-smi prints (sections are keys
    without a value, nested by indentation); fields not printed (an excerpt) are ``None``.

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    QueryReport

    Raises
    ------
    NvidiaSmiError
        A field before the first GPU other than the log's own (time stamp, versions, attached
        GPUs), an indented line before any GPU, an id that is not a number, or a value read
        (product name, UUID, MIG mode) that is not one printable line.
    """
    driver: str | None = None
    attached: int | None = None
    gpus: list[tuple[str, int, _Node]] = []
    stack: list[tuple[int, _Node]] = []
    for n, line in _lines(text, file):
        if not line or _Q_HEADER.match(line):
            continue
        if m := _Q_GPU.match(line):
            root = _Node("GPU", m[1], n, [])
            gpus.append((m[1], n, root))
            stack = [(0, root)]
            continue
        field = _Q_FIELD.match(line)
        if field:
            indent, node = len(field[1]), _Node(field[2], field[3], n, [])
        else:
            section = _Q_SECTION.match(line)
            if not section:  # a tab or other odd indentation
                raise NvidiaSmiError(file, n, "a 'Key : Value' field or a section name", line)
            indent, node = len(section[1]), _Node(section[2], None, n, [])
        if indent == 0:
            if not field or gpus:
                raise NvidiaSmiError(file, n, "'GPU BUS-ID' or a 'Key : Value' field of the log", line)
            if field[2] == "Driver Version":
                driver = field[3]
            elif field[2] == "Attached GPUs":
                attached = _q_int(file, n, field[3])
            continue
        if not stack:
            raise NvidiaSmiError(file, n, "'GPU BUS-ID' before its fields", line.strip())
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        stack[-1][1].children.append(node)
        stack.append((indent, node))
    return QueryReport(driver, attached, tuple(_query_gpu(file, bus, n, root) for bus, n, root in gpus))


def _q_int(file: str, n: int, value: str | None) -> int:
    if value is None or not (value.isascii() and value.isdigit()):  # "²".isdigit(), and int() fails
        raise NvidiaSmiError(file, n, "a whole number", value or "nothing")
    if len(value) > 9:
        raise NvidiaSmiError(file, n, "a whole number of at most 9 digits", value)
    return int(value)


def _child(node: _Node, *keys: str) -> _Node | None:
    for key in keys:
        found = next((c for c in node.children if c.key == key), None)
        if found is None:
            return None
        node = found
    return node


def _query_gpu(file: str, bus: str, line: int, root: _Node) -> QueryGpu:
    def value(*keys: str) -> str | None:
        node = _child(root, *keys)
        if node is None or node.value is None:
            return None
        return _name(node.value, " ".join(keys), file, node.line)

    uuid = value("GPU UUID") or value("UUID")
    device_id = value("PCI", "Device Id")
    devices = []
    section = _child(root, "MIG Devices")
    for dev in section.children if section is not None else []:
        if dev.key != "MIG Device":
            raise NvidiaSmiError(file, dev.line, "'MIG Device' under 'MIG Devices'", dev.key)
        fields = {c.key: c for c in dev.children}
        ids = []
        for key in ("Index", "GPU Instance ID", "Compute Instance ID"):
            if key not in fields:
                raise NvidiaSmiError(file, dev.line, f"a {key!r} field in the MIG device", "none")
            ids.append(_q_int(file, fields[key].line, fields[key].value))
        devices.append(QueryMigDevice(ids[0], ids[1], ids[2], dev.line))
    return QueryGpu(
        bus_id=bus,
        product_name=value("Product Name"),
        uuid=uuid,
        pci_device_id=None if device_id is None else _hex_id(device_id),
        mig_mode_current=value("MIG Mode", "Current"),
        mig_mode_pending=value("MIG Mode", "Pending"),
        mig_devices=tuple(devices),
        line=line,
    )


# -- nvidia-smi -q -x ------------------------------------------------------------------------


#: expat's errors for a document that ends before its elements close
_CUT_SHORT = {
    expat.errors.codes[e] for e in (expat.errors.XML_ERROR_NO_ELEMENTS, expat.errors.XML_ERROR_UNCLOSED_TOKEN)
}


def _read_xml(text: str, file: str) -> tuple[ET.Element, dict[int, int]]:
    """The element tree of ``text`` and the line each element starts on (by ``id``).

    Expat drives an :class:`xml.etree.ElementTree.TreeBuilder` so that line numbers, which
    ElementTree does not keep, are known for errors. External DTDs are not fetched.
    """
    builder = ET.TreeBuilder()
    lines: dict[int, int] = {}
    parser = expat.ParserCreate()

    def start(tag: str, attrs: dict[str, str]) -> None:
        lines[id(builder.start(tag, attrs))] = parser.CurrentLineNumber

    parser.StartElementHandler = start
    parser.EndElementHandler = builder.end
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(text.lstrip("\ufeff"), True)
    except UnicodeEncodeError as err:  # a lone surrogate: expat takes the text as UTF-8
        line = text.count("\n", 0, err.start) + 1
        raise NvidiaSmiError(file, line, "well-formed nvidia-smi -q -x XML", "a lone surrogate") from None
    except expat.ExpatError as err:
        last = max(len(text.splitlines()), 1)
        reason = expat.ErrorString(err.code) or str(err)
        if err.lineno >= last and err.code in _CUT_SHORT:
            # expat reports an unclosed document one line past the text: say that it ends early
            raise NvidiaSmiError(
                file, last, "well-formed nvidia-smi -q -x XML", f"the end of the text ({reason})"
            ) from None
        raise NvidiaSmiError(file, err.lineno, "well-formed nvidia-smi -q -x XML", reason) from None
    return builder.close(), lines


def parse_query_xml(text: str, file: str) -> QueryReport:
    """Read ``nvidia-smi -q -x``: as :func:`parse_query`, from the XML (DTD versions 11 to 13).

    Parameters
    ----------
    text
        The output.
    file
        Its file name, for errors.

    Returns
    -------
    QueryReport

    Raises
    ------
    NvidiaSmiError
        Text that is not well-formed XML (an excerpt cut short, say), a root other than
        ``<nvidia_smi_log>``, a ``<gpu>`` without ``id``, a MIG device id that is not a number, or
        a value read (bus id, product name, UUID, MIG mode) that is not one printable line.
    """
    root, lines = _read_xml(text, file)

    def text_of(element: ET.Element, path: str) -> str | None:
        found = element.find(path)
        if found is None or found.text is None:
            return None
        return _name(found.text.strip(), f"<{path}>", file, lines[id(found)])

    def number(element: ET.Element, path: str) -> int:
        found = element.find(path)
        if found is None:
            raise NvidiaSmiError(file, lines[id(element)], f"a <{path}> element", "none")
        return _q_int(file, lines[id(found)], (found.text or "").strip())

    if root.tag != "nvidia_smi_log":
        raise NvidiaSmiError(file, lines[id(root)], "<nvidia_smi_log>", f"<{root.tag}>")
    gpus = []
    for gpu in root.findall("gpu"):
        if "id" not in gpu.attrib:
            raise NvidiaSmiError(file, lines[id(gpu)], '<gpu id="BUS-ID">', "<gpu> without id")
        devices = tuple(
            QueryMigDevice(
                number(dev, "index"), number(dev, "gpu_instance_id"), number(dev, "compute_instance_id"),
                lines[id(dev)],
            )
            for dev in gpu.findall("mig_devices/mig_device")
        )  # fmt: skip
        device_id = text_of(gpu, "pci/pci_device_id")
        gpus.append(
            QueryGpu(
                bus_id=_name(gpu.attrib["id"], "<gpu id>", file, lines[id(gpu)]),
                product_name=text_of(gpu, "product_name"),
                uuid=text_of(gpu, "uuid"),
                pci_device_id=None if device_id is None else _hex_id(device_id),
                mig_mode_current=text_of(gpu, "mig_mode/current_mig"),
                mig_mode_pending=text_of(gpu, "mig_mode/pending_mig"),
                mig_devices=devices,
                line=lines[id(gpu)],
            )
        )
    attached = root.find("attached_gpus")
    count = None if attached is None else _q_int(file, lines[id(attached)], (attached.text or "").strip())
    return QueryReport(text_of(root, "driver_version"), count, tuple(gpus))


# -- which form ------------------------------------------------------------------------------

#: The parser of each form :func:`detect` names (mig-parted configs have none here).
PARSERS: dict[str, Callable[[str, str], Any]] = {
    "L": parse_list,
    "lgip": parse_lgip,
    "lgipp": parse_lgipp,
    "lgi": parse_lgi,
    "lci": parse_lci,
    "nvidia-smi": parse_summary,
    "q": parse_query,
    "q-x": parse_query_xml,
}


def detect(text: str, file: str = "<text>") -> str:
    """Which form ``text`` is: a key of :data:`PARSERS`, or ``mig-parted`` for a mig-parted config.

    Only the text is looked at (not the file name). The form is told by the first sign of it:
    the XML root, the ``NVSMI LOG`` header, a table title, the ``NVIDIA-SMI`` banner, a
    ``-lgipp`` line, a ``-L`` GPU line, or mig-parted's ``mig-configs:`` key.

    Raises
    ------
    NvidiaSmiError
        No sign of any form (``FILE:1``).

    Examples
    --------
    >>> detect("GPU  0 Profile ID  0 Placement : {0}:8\\n")
    'lgipp'
    >>> detect("version: v1\\nmig-configs:\\n  all-disabled: []\\n")
    'mig-parted'
    """
    for _, line in _lines(text, file):
        stripped = line.strip()
        cell = stripped.strip("|").strip()
        if stripped.startswith(("<?xml", "<nvidia_smi_log")):
            return "q-x"
        if _Q_HEADER.match(stripped):
            return "q"
        if stripped.startswith("|") and cell in _TITLES:
            return _TITLES[cell] if _TITLES[cell] in PARSERS else "nvidia-smi"
        if stripped.startswith("|") and cell.startswith("NVIDIA-SMI "):
            return "nvidia-smi"
        if _LGIPP.match(stripped):
            return "lgipp"
        if _L_GPU.match(stripped):
            return "L"
        if re.match(r"^mig-configs:\s*$", stripped):
            return "mig-parted"
    raise NvidiaSmiError(
        file, 1, "the output of nvidia-smi (-L, -q, -q -x, mig -lgip/-lgipp/-lgi/-lci) or a mig-parted config",
        "none of these",
    )  # fmt: skip
