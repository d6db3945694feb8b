"""GPU models, MIG profiles and their legal placements.

The built-in models come from ``gpu_models.json`` beside this file, built by
``tools/build_catalog.py`` from the shared MIG facts (``shared/mig``). Users add
models of their own with :func:`model_from_dict`, validated by the same rules.

Placements are ``(start, size)`` in memory-slot units, exactly as
``nvidia-smi mig -lgipp`` prints ``{starts}:size``.

Examples
--------
>>> from mipopt import catalog
>>> "H100-80GB" in catalog.builtin_models()
True
>>> [(p.name, p.placements) for p in catalog.get_model("A100-40GB").profiles if p.compute == 3]
[('3g.20gb', ((0, 4), (4, 4)))]

Product names and PCI device ids as ``nvidia-smi`` and NVML print them resolve too:

>>> catalog.get_model("NVIDIA A100-SXM4-40GB").name, catalog.resolve_product("0x2321").name
('A100-40GB', 'H100-94GB')
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from typing import Any

from mipopt import _fields as f
from mipopt.errors import InstanceError

__all__ = [
    "GpuModel",
    "Product",
    "Profile",
    "builtin_models",
    "get_model",
    "model_from_dict",
    "normalize_pci_device_id",
    "normalize_product_name",
    "products",
    "resolve_product",
]

# The bitmask geometry keeps one bit per memory slot in a machine integer and
# tabulates all 2**slots states, so the slot count is bounded.
MAX_SLOTS = 16
_BASE_NAME = re.compile(r"^\d+g\.\d+gb$")


@dataclass(frozen=True, slots=True)
class Profile:
    """One GPU-instance profile of one GPU model.

    Attributes
    ----------
    name
        Profile name as ``nvidia-smi mig -lgip`` prints it, e.g. ``3g.40gb``.
    id
        GPU-instance profile id printed by ``-lgip`` (not the NVML enum index).
    compute
        Compute slices.
    memory_slots
        Memory slots occupied (the placement size).
    memory_gb
        Nominal memory from the profile name.
    max_instances
        Most instances of this profile on one GPU.
    placements
        Legal ``(start, size)`` pairs in the order ``-lgipp`` prints them.
    placement_status
        ``confirmed`` (read off real ``-lgipp`` output), ``inferred`` or ``custom``.
    aliases
        Other names drivers print for this profile (``3g.39gb`` for ``3g.40gb``).
    source_note
        Where the profile's id, count and placements come from (built-in models).
    """

    name: str
    id: int
    compute: int
    memory_slots: int
    memory_gb: float
    max_instances: int
    placements: tuple[tuple[int, int], ...]
    placement_status: str = "custom"
    aliases: tuple[str, ...] = ()
    source_note: str = field(default="", compare=False, repr=False)

    @property
    def starts(self) -> tuple[int, ...]:
        return tuple(start for start, _ in self.placements)

    @property
    def media_extension(self) -> bool:
        """``+me`` profiles share the GPU's one media-engine set: one per GPU in all."""
        return "+me" in self.name

    @property
    def base(self) -> bool:
        """A plain ``<c>g.<m>gb`` profile, no media or graphics variant.

        CC (GRMU Eq. 1) and both fragmentation scores range over base profiles, as
        the papers do (their profile lists have no ``+me`` variants).
        """
        return bool(_BASE_NAME.match(self.name))

    def slot_mask(self, start: int) -> int:
        """Bitmask of the memory slots an instance at ``start`` occupies."""
        return ((1 << self.memory_slots) - 1) << start

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "id": self.id,
            "compute": self.compute,
            "memory_slots": self.memory_slots,
            "memory_gb": self.memory_gb,
            "max_instances": self.max_instances,
            "placements": [list(p) for p in self.placements],
            "placement_status": self.placement_status,
            "aliases": list(self.aliases),
            **({"source_note": self.source_note} if self.source_note else {}),
        }


@dataclass(frozen=True, slots=True)
class GpuModel:
    """A MIG-capable GPU model: its slots, compute slices and profiles.

    Attributes
    ----------
    name
        Model id, e.g. ``A100-40GB``.
    slots
        Memory slots (placement units): 8 on A100/H100/B200, 4 on A30, 12 on RTX PRO 6000.
    compute_slices
        Compute slices: 7 on A100/H100/B200.
    memory_gb
        Total memory.
    profiles
        The profiles, in catalog order.
    gpu_slices
        Memory slots of each compute slice; the last compute slice of an 8-slot part
        owns slots 6 and 7. Compute and memory waste are measured against it.
    """

    name: str
    slots: int
    compute_slices: int
    memory_gb: float
    profiles: tuple[Profile, ...]
    gpu_slices: tuple[tuple[int, ...], ...]
    variants: tuple[str, ...] = ()
    source_note: str = ""
    builtin: bool = False
    _lookup: dict[str | int, int] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        lookup = self._lookup
        for i, p in enumerate(self.profiles):
            lookup.setdefault(p.id, i)
            lookup.setdefault(p.name.lower(), i)
        for i, p in enumerate(self.profiles):
            for alias in p.aliases:
                lookup.setdefault(alias.lower(), i)

    def __hash__(self) -> int:
        return hash((self.name, self.slots, self.profiles))

    def find(self, key: str | int) -> Profile | None:
        """The profile with this name, alias or ``-lgip`` profile id, or None.

        A string of digits counts as an id, so ``"9"`` finds ``3g.40gb``.
        """
        index = self.index(key)
        return None if index is None else self.profiles[index]

    def index(self, key: str | int) -> int | None:
        """Position of the profile with this name, alias or id, or None."""
        if isinstance(key, str):
            key = int(key) if key.isascii() and key.isdigit() else key.lower()
        return self._lookup.get(key)

    def profile(self, key: str | int) -> Profile:
        """Like :meth:`find` but raises ``KeyError`` naming the model."""
        found = self.find(key)
        if found is None:
            raise KeyError(f"{key!r} is not a profile of {self.name}")
        return found

    @property
    def full_mask(self) -> int:
        return (1 << self.slots) - 1

    def to_dict(self) -> dict[str, Any]:
        """The shape of ``mipopt info MODEL --json`` and of ``custom_gpu_models`` entries."""
        return {
            "model": self.name,
            "slots": self.slots,
            "compute_slices": self.compute_slices,
            "memory_gb": self.memory_gb,
            "gpu_slices": [list(s) for s in self.gpu_slices],
            "profiles": [p.to_dict() for p in self.profiles],
        }


def default_gpu_slices(slots: int, compute: int) -> tuple[tuple[int, ...], ...] | None:
    """Memory slots of each compute slice by the hardware's rule, or None if no rule applies.

    Equal counts pair one to one (A30); a multiple gives equal runs (RTX PRO 6000: 3
    units a slice); one more slot than slices gives the last slice two (A100, H100).
    """
    if slots == compute:
        return tuple((s,) for s in range(slots))
    if slots % compute == 0:
        k = slots // compute
        return tuple(tuple(range(c * k, (c + 1) * k)) for c in range(compute))
    if slots == compute + 1:
        return (*((s,) for s in range(compute - 1)), (compute - 1, compute))
    return None


_MODEL_FIELDS = ("model", "slots", "compute_slices", "memory_gb", "profiles")
_MODEL_OPTIONAL = ("gpu_slices", "variants", "source_note")
_PROFILE_FIELDS = ("name", "id", "compute", "memory_slots", "memory_gb", "max_instances", "placements")
_PROFILE_OPTIONAL = ("placement_status", "aliases", "source_note")


def model_from_dict(data: Any, path: str = "", *, builtin: bool = False) -> GpuModel:
    """Build and validate a :class:`GpuModel` from its JSON form.

    Parameters
    ----------
    data
        An object shaped like ``mipopt info MODEL --json``.
    path
        JSON path of ``data``, used in error messages (``custom_gpu_models[0]``).

    Raises
    ------
    InstanceError
        On any rule broken, naming the path: missing or mistyped fields, placements
        that leave the GPU or do not match the profile size, duplicate names or ids,
        compute slices that placements could exceed.
    """
    d = f.obj(data, path, _MODEL_FIELDS, _MODEL_OPTIONAL)
    name = f.identifier(d["model"], f.join(path, "model"))
    slots = f.integer(d["slots"], f.join(path, "slots"), minimum=1, maximum=MAX_SLOTS)
    compute = f.integer(d["compute_slices"], f.join(path, "compute_slices"), minimum=1)
    memory_gb = f.number(d["memory_gb"], f.join(path, "memory_gb"), maximum=f.MAX_QUANTITY)
    if "gpu_slices" in d:
        gpu_slices = _gpu_slices(d["gpu_slices"], f.join(path, "gpu_slices"), slots, compute)
    else:
        derived = default_gpu_slices(slots, compute)
        if derived is None:
            raise InstanceError(
                f.join(path, "gpu_slices"),
                f"required: no default mapping of {slots} memory slots onto {compute} compute slices",
            )
        gpu_slices = derived
    raw_profiles = f.lst(d["profiles"], f.join(path, "profiles"), nonempty=True)
    profiles = tuple(
        _profile(p, f.join(f.join(path, "profiles"), i), slots, compute) for i, p in enumerate(raw_profiles)
    )
    _unique(profiles, path)
    variants = d.get("variants", [])
    variants = tuple(
        f.identifier(v, f.join(f.join(path, "variants"), i))
        for i, v in enumerate(f.lst(variants, f.join(path, "variants")))
    )
    note = f.text(d.get("source_note", ""), f.join(path, "source_note"))
    model = GpuModel(name, slots, compute, memory_gb, profiles, gpu_slices, variants, note, builtin)
    _check_compute_bound(model, path)
    return model


def _gpu_slices(value: Any, path: str, slots: int, compute: int) -> tuple[tuple[int, ...], ...]:
    groups = f.lst(value, path)
    if len(groups) != compute:
        raise InstanceError(path, f"must list {compute} compute slices, got {len(groups)}")
    out = []
    for i, g in enumerate(groups):
        gp = f.join(path, i)
        members = tuple(
            f.integer(s, f.join(gp, j), maximum=slots - 1) for j, s in enumerate(f.lst(g, gp, nonempty=True))
        )
        out.append(members)
    flat = [s for g in out for s in g]
    if flat != list(range(slots)):
        raise InstanceError(path, f"must split slots 0..{slots - 1} into consecutive runs in order")
    return tuple(out)


def _profile(data: Any, path: str, slots: int, compute: int) -> Profile:
    d = f.obj(data, path, _PROFILE_FIELDS, _PROFILE_OPTIONAL)
    name = f.identifier(d["name"], f.join(path, "name"))
    pid = f.integer(d["id"], f.join(path, "id"))
    pc = f.integer(d["compute"], f.join(path, "compute"), minimum=1, maximum=compute)
    size = f.integer(d["memory_slots"], f.join(path, "memory_slots"), minimum=1, maximum=slots)
    memory_gb = f.number(d["memory_gb"], f.join(path, "memory_gb"), maximum=f.MAX_QUANTITY)
    max_instances = f.integer(d["max_instances"], f.join(path, "max_instances"), minimum=1)
    pl_path = f.join(path, "placements")
    placements = []
    for i, pl in enumerate(f.lst(d["placements"], pl_path, nonempty=True)):
        pp = f.join(pl_path, i)
        pair = f.lst(pl, pp)
        if len(pair) != 2:
            raise InstanceError(pp, f"must be [start, size], got {f.shown(pair)}")
        start = f.integer(pair[0], f.join(pp, 0))
        psize = f.integer(pair[1], f.join(pp, 1), minimum=1)
        if psize != size:
            raise InstanceError(pp, f"size {psize} differs from memory_slots {size}")
        if start + size > slots:
            raise InstanceError(pp, f"[{start}, {size}] runs past slot {slots - 1}")
        if (start, size) in placements:
            raise InstanceError(pp, f"duplicate placement [{start}, {size}]")
        placements.append((start, size))
    status = d.get("placement_status", "custom")
    if status not in ("confirmed", "inferred", "custom"):
        raise InstanceError(
            f.join(path, "placement_status"), f"must be confirmed, inferred or custom, got {f.shown(status)}"
        )
    aliases = tuple(
        f.identifier(a, f.join(f.join(path, "aliases"), i))
        for i, a in enumerate(f.lst(d.get("aliases", []), f.join(path, "aliases")))
    )
    note = f.text(d.get("source_note", ""), f.join(path, "source_note"))
    return Profile(name, pid, pc, size, memory_gb, max_instances, tuple(placements), status, aliases, note)


def _unique(profiles: tuple[Profile, ...], path: str) -> None:
    seen: dict[str | int, int] = {}
    for i, p in enumerate(profiles):
        keys: list[tuple[str | int, str]] = [(p.id, "id"), (p.name.lower(), "name")]
        keys += [(a.lower(), "aliases") for a in p.aliases]
        for key, what in keys:
            if key in seen and seen[key] != i:
                raise InstanceError(
                    f.join(f.join(f.join(path, "profiles"), i), what),
                    f"{f.shown(key)} already names profiles[{seen[key]}]",
                )
            seen[key] = i


def _check_compute_bound(model: GpuModel, path: str) -> None:
    """Reject models where non-overlapping placements could need more compute than exists.

    mipopt's geometry decides feasibility from the occupied slots alone; that is exact
    only when every set of non-overlapping placements fits the compute slices, as it
    does on every NVIDIA part. Weighted interval scheduling gives the largest compute
    any such set can use.
    """
    best = [0] * (model.slots + 1)  # best[s]: most compute in slots s.. onwards
    for s in range(model.slots - 1, -1, -1):
        best[s] = best[s + 1]
        for p in model.profiles:
            if s in p.starts:
                best[s] = max(best[s], p.compute + best[s + p.memory_slots])
    if best[0] > model.compute_slices:
        raise InstanceError(
            f.join(path, "profiles") if path else "profiles",
            f"non-overlapping placements can use {best[0]} compute slices "
            f"> compute_slices {model.compute_slices}",
        )


@cache
def _catalog() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(resources.files(__package__).joinpath("gpu_models.json").read_text())
    return data


@cache
def _builtin() -> dict[str, GpuModel]:
    data = _catalog()
    models = [
        model_from_dict(m, f"gpu_models.json:models[{i}]", builtin=True) for i, m in enumerate(data["models"])
    ]
    return {m.name: m for m in models}


def builtin_models() -> dict[str, GpuModel]:
    """The shipped GPU models by model id, in catalog order."""
    return dict(_builtin())


# --- product names and PCI device ids

NVIDIA_VENDOR_ID = "10DE"
_PCI_ID = re.compile(r"^(?:0x)?([0-9a-f]{4})(10de)?$|^(?:0x)?10de:(?:0x)?([0-9a-f]{4})$", re.IGNORECASE)
_TRUNCATED = ("...", "\u2026")


@dataclass(frozen=True, slots=True)
class Product:
    """One GPU product as nvidia-smi and NVML name it, and the catalog model it is.

    Attributes
    ----------
    model
        Catalog model id, e.g. ``H100-94GB``.
    names
        Product names as ``nvidia-smi -L``/``-q`` print them, e.g. ``NVIDIA H100 NVL``.
    pci_device_ids
        PCI ids as ``-q`` prints "Device Id" (``0x232110DE``: device 0x2321, vendor 0x10DE).
    attested
        Where each name and id was seen (recorded outputs in ``shared/interop``, the MIG facts
        in ``shared/mig``, NVIDIA's mig-parted config, the MIG user guide).
    """

    model: str
    names: tuple[str, ...]
    pci_device_ids: tuple[str, ...]
    attested: str


def normalize_product_name(name: str) -> str:
    """The key a product name is looked up by: case, ``NVIDIA`` prefix and separators ignored.

    Case is folded, a leading ``NVIDIA`` dropped (R450 printed ``A100-SXM4-40GB``,
    later drivers ``NVIDIA A100-SXM4-40GB``) and runs of spaces, ``-`` and
    ``_`` become one space, so ``NVIDIA A100-SXM4-40GB``, ``a100 sxm4 40gb`` and
    ``A100_SXM4_40GB`` are one key.

    >>> normalize_product_name("NVIDIA  A100-SXM4-40GB")
    'a100 sxm4 40gb'
    """
    key = re.sub(r"[\s_\-]+", " ", name.casefold()).strip()
    return key.removeprefix("nvidia ").strip()


def normalize_pci_device_id(text: str) -> str | None:
    """``0x<device><vendor>`` in upper case as ``nvidia-smi -q`` prints "Device Id", or None.

    Accepts ``0x20B010DE``, ``20B010DE`` (``-q -x``), ``0x20B0``/``20b0`` (device alone,
    NVIDIA's vendor id assumed) and ``10de:20b0`` (``lspci -n``).

    >>> normalize_pci_device_id("10de:20b0"), normalize_pci_device_id("GH200")
    ('0x20B010DE', None)
    """
    m = _PCI_ID.match(text.strip())
    if m is None:
        return None
    device = m.group(1) or m.group(3)
    return f"0x{device.upper()}{NVIDIA_VENDOR_ID}"


@cache
def _products() -> tuple[tuple[Product, ...], dict[str, str], dict[str, str]]:
    """The shipped products, and model ids by normalized name and by PCI id."""
    models = _builtin()
    out: list[Product] = []
    by_name: dict[str, str] = {}
    by_pci: dict[str, str] = {}
    for i, raw in enumerate(_catalog().get("products", [])):
        product = Product(raw["model"], tuple(raw["names"]), tuple(raw["pci_device_ids"]), raw["attested"])
        path = f"gpu_models.json:products[{i}]"
        if product.model not in models:
            raise InstanceError(f.join(path, "model"), f"unknown GPU model {product.model!r}")
        for name in product.names:
            key = normalize_product_name(name)
            if by_name.setdefault(key, product.model) != product.model:
                raise InstanceError(f.join(path, "names"), f"{name!r} already names {by_name[key]}")
        for pci in product.pci_device_ids:
            key = normalize_pci_device_id(pci) or ""
            if key != pci:
                raise InstanceError(f.join(path, "pci_device_ids"), f"{pci!r} is not written 0xDDDD10DE")
            if by_pci.setdefault(key, product.model) != product.model:
                raise InstanceError(f.join(path, "pci_device_ids"), f"{pci!r} already names {by_pci[key]}")
        out.append(product)
    return tuple(out), by_name, by_pci


def products() -> tuple[Product, ...]:
    """The product names and PCI device ids the built-in models answer to, with their sources."""
    return _products()[0]


def _find_product(text: str) -> GpuModel | None:
    _, by_name, by_pci = _products()
    models = _builtin()
    pci = normalize_pci_device_id(text)
    if pci in by_pci:
        return models[by_pci[pci]]
    # "B200" reads as a device id too; as a name it is NVIDIA B200
    key = normalize_product_name(text)
    if key in by_name:
        return models[by_name[key]]
    stem = text.strip()
    for mark in _TRUNCATED:
        if stem.endswith(mark):
            # nvidia-smi's table cuts long names ("NVIDIA RTX PRO 6000 Blac..."): a prefix is
            # enough when every product it starts names the same model.
            prefix = normalize_product_name(stem.removesuffix(mark))
            hits = {model for name, model in by_name.items() if prefix and name.startswith(prefix)}
            return models[hits.pop()] if len(hits) == 1 else None
    return None


def _close_matches(name: str, custom: dict[str, GpuModel] | None = None) -> list[str]:
    """Model ids and product names spelled most like ``name``, best first."""
    spellings = {normalize_product_name(m): m for m in {**_builtin(), **(custom or {})}}
    for product in products():
        for product_name in product.names:
            spellings.setdefault(normalize_product_name(product_name), product_name)
    keys = difflib.get_close_matches(normalize_product_name(name), list(spellings), n=3, cutoff=0.6)
    return [spellings[k] for k in keys]


def resolve_product(name_or_pci_id: str) -> GpuModel:
    """The built-in model of a product name or PCI device id as nvidia-smi and NVML print them.

    The rule: a PCI device id (any form :func:`normalize_pci_device_id` accepts) is looked up
    among the ids the catalog lists; anything else is a product name, compared after
    :func:`normalize_product_name` (case, the ``NVIDIA`` prefix, spaces, ``-`` and ``_``
    ignored); a name cut short with ``...`` by nvidia-smi's table matches when all products
    it starts belong to one model. Names and ids are listed one by one, each with its source
    (:func:`products`, ``tools/build_catalog.py``); memory sizes and form factors are not
    guessed from the text, so ``NVIDIA H100 PCIe`` is H100-80GB because a recorded output says
    so, and an unlisted product is unknown.

    Attested (recorded outputs in ``shared/interop`` unless said otherwise):

    ========================================================  ===========================  =====================
    name                                                      PCI device id                model
    ========================================================  ===========================  =====================
    NVIDIA A30                                                0x20B710DE                   A30-24GB
    NVIDIA A100-SXM4-40GB (R450: A100-SXM4-40GB), A100-PCIE   0x20B010DE, 0x20F110DE       A100-40GB
    NVIDIA A100-SXM4-80GB, NVIDIA A100 80GB PCIe              0x20B210DE, 0x20B510DE       A100-80GB
    NVIDIA H100 80GB HBM3, NVIDIA H100 PCIe                   0x233010DE, 0x233110DE       H100-80GB
    NVIDIA H100 NVL                                           0x232110DE                   H100-94GB
    NVIDIA GH200 480GB, NVIDIA GH200 96GB HBM3                0x234210DE, 0x233D10DE, ...  H100-96GB
    NVIDIA H200, NVIDIA H200 NVL (MIG guide, no output)       0x233510DE, 0x233B10DE       H200-141GB
    NVIDIA GH200 144G HBM3e (mig-parted config)               0x234810DE                   GH200-144GB
    NVIDIA B200 (NVIDIA/gpu-operator#2155)                    0x290110DE                   B200-180GB
    NVIDIA GB200                                              0x294110DE                   GB200-186GB
    NVIDIA RTX PRO 6000 Blackwell Server Edition              0x2BB510DE                   RTX-PRO-6000-...
    (Workstation, Max-Q Workstation Edition: names only)
    ========================================================  ===========================  =====================

    Parameters
    ----------
    name_or_pci_id
        ``NVIDIA H100 NVL``, ``0x232110DE``, ``232110DE``, ``0x2321`` or ``10de:2321``.

    Raises
    ------
    KeyError
        One line naming the text and the closest model ids and product names.

    Examples
    --------
    >>> resolve_product("NVIDIA RTX PRO 6000 Blackwell Server Edition").name
    'RTX-PRO-6000-Blackwell-96GB'
    >>> resolve_product("232110DE").name
    'H100-94GB'
    """
    model = _find_product(name_or_pci_id)
    if model is None:
        what = "PCI device id" if normalize_pci_device_id(name_or_pci_id) else "GPU product"
        close = _close_matches(name_or_pci_id)
        hint = f" (closest: {', '.join(close)})" if close else " (see `mipopt info`)"
        raise KeyError(f"unknown {what} {name_or_pci_id!r}{hint}")
    return model


def get_model(name: str, custom: dict[str, GpuModel] | None = None) -> GpuModel:
    """A built-in (or given custom) model by id, case-insensitively, or by product name or PCI id.

    Model ids come first (custom models before built-in ones of the same id); then
    :func:`resolve_product` for the names and ids ``nvidia-smi`` prints.

    Raises
    ------
    KeyError
        One line naming the known models and the closest spellings.

    Examples
    --------
    >>> import mipopt
    >>> model = mipopt.get_model("a100-40gb")
    >>> model.name, model.slots, model.compute_slices, [p.name for p in model.profiles][:3]
    ('A100-40GB', 8, 7, ['1g.5gb', '1g.5gb+me', '1g.10gb'])
    >>> mipopt.get_model("NVIDIA H100 80GB HBM3").name
    'H100-80GB'
    """
    models = {**_builtin(), **(custom or {})}
    if name in models:
        return models[name]
    for key, model in models.items():
        if key.lower() == name.lower():
            return model
    found = _find_product(name)
    if found is not None:
        return found
    close = _close_matches(name, custom)
    hint = f"; closest: {', '.join(close)}" if close else ""
    raise KeyError(f"unknown GPU model {name!r} (known: {', '.join(models)}{hint})")
