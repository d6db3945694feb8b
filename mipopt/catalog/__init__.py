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
"""

from __future__ import annotations

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
    "Profile",
    "builtin_models",
    "get_model",
    "model_from_dict",
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
            key = int(key) if key.isdigit() else key.lower()
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
    name = f.string(d["model"], f.join(path, "model"))
    slots = f.integer(d["slots"], f.join(path, "slots"), minimum=1, maximum=MAX_SLOTS)
    compute = f.integer(d["compute_slices"], f.join(path, "compute_slices"), minimum=1)
    memory_gb = f.number(d["memory_gb"], f.join(path, "memory_gb"))
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
        f.string(v, f.join(f.join(path, "variants"), i))
        for i, v in enumerate(f.lst(variants, f.join(path, "variants")))
    )
    note = f.string(d.get("source_note", ""), f.join(path, "source_note"), nonempty=False)
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
    name = f.string(d["name"], f.join(path, "name"))
    pid = f.integer(d["id"], f.join(path, "id"))
    pc = f.integer(d["compute"], f.join(path, "compute"), minimum=1, maximum=compute)
    size = f.integer(d["memory_slots"], f.join(path, "memory_slots"), minimum=1, maximum=slots)
    memory_gb = f.number(d["memory_gb"], f.join(path, "memory_gb"))
    max_instances = f.integer(d["max_instances"], f.join(path, "max_instances"), minimum=1)
    pl_path = f.join(path, "placements")
    placements = []
    for i, pl in enumerate(f.lst(d["placements"], pl_path, nonempty=True)):
        pp = f.join(pl_path, i)
        pair = f.lst(pl, pp)
        if len(pair) != 2:
            raise InstanceError(pp, f"must be [start, size], got {pair!r}")
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
            f.join(path, "placement_status"), f"must be confirmed, inferred or custom, got {status!r}"
        )
    aliases = tuple(
        f.string(a, f.join(f.join(path, "aliases"), i))
        for i, a in enumerate(f.lst(d.get("aliases", []), f.join(path, "aliases")))
    )
    return Profile(name, pid, pc, size, memory_gb, max_instances, tuple(placements), status, aliases)


def _unique(profiles: tuple[Profile, ...], path: str) -> None:
    seen: dict[str | int, int] = {}
    for i, p in enumerate(profiles):
        keys: list[tuple[str | int, str]] = [(p.id, "id"), (p.name.lower(), "name")]
        keys += [(a.lower(), "aliases") for a in p.aliases]
        for key, what in keys:
            if key in seen and seen[key] != i:
                raise InstanceError(
                    f.join(f.join(f.join(path, "profiles"), i), what),
                    f"{key!r} already names profiles[{seen[key]}]",
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
def _builtin() -> dict[str, GpuModel]:
    text = resources.files(__package__).joinpath("gpu_models.json").read_text()
    data = json.loads(text)
    models = [
        model_from_dict(m, f"gpu_models.json:models[{i}]", builtin=True) for i, m in enumerate(data["models"])
    ]
    return {m.name: m for m in models}


def builtin_models() -> dict[str, GpuModel]:
    """The shipped GPU models by model id, in catalog order."""
    return dict(_builtin())


def get_model(name: str, custom: dict[str, GpuModel] | None = None) -> GpuModel:
    """A built-in (or given custom) model by id, case-insensitively.

    Raises
    ------
    KeyError
        Naming the known models.

    Examples
    --------
    >>> import mipopt
    >>> model = mipopt.get_model("a100-40gb")
    >>> model.name, model.slots, model.compute_slices, [p.name for p in model.profiles][:3]
    ('A100-40GB', 8, 7, ['1g.5gb', '1g.5gb+me', '1g.10gb'])
    """
    models = {**_builtin(), **(custom or {})}
    if name in models:
        return models[name]
    for key, model in models.items():
        if key.lower() == name.lower():
            return model
    raise KeyError(f"unknown GPU model {name!r} (known: {', '.join(models)})")
