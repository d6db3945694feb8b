"""Host and GPU ids of a generated cluster, and a GPU being filled: shared by every generator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from mipopt.limits import MAX_GPUS, beyond

if TYPE_CHECKING:
    from mipopt.catalog import Profile
    from mipopt.geometry.tables import GeometryTables

__all__ = ["GpuFill", "check_gpus", "host_layout"]


@dataclass
class GpuFill:
    """One GPU being filled by a generator: occupied slots, instances per profile, the +me holder."""

    mask: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    media_used: bool = False

    def admits(self, tables: GeometryTables, k: int, p: Profile) -> bool:
        """Whether profile ``p`` (position ``k`` in its model's ``tables``) fits beside what the GPU
        holds: a free legal start, an instance left under ``max_instances``, the one ``+me``."""
        return (
            tables.legal[self.mask, k] != 0
            and self.counts.get(p.name, 0) < p.max_instances
            and not (p.media_extension and self.media_used)
        )

    def free_starts(self, tables: GeometryTables, k: int, p: Profile) -> list[int]:
        """The legal starts of ``p`` (position ``k``) whose slots are free."""
        bits = int(tables.legal[self.mask, k])
        return [s for s in p.starts if bits >> s & 1]

    def take(self, p: Profile, start: int) -> None:
        """Hold an instance of ``p`` at ``start``."""
        self.mask |= p.slot_mask(start)
        self.counts[p.name] = self.counts.get(p.name, 0) + 1
        self.media_used |= p.media_extension


def check_gpus(value: Any, label: str) -> int:
    """A generator's number of GPUs: an integer from 1 to :data:`~mipopt.limits.MAX_GPUS`.

    Raises
    ------
    ValueError
        Naming ``label``, the rule and the value.

    Examples
    --------
    >>> check_gpus(100_000_000, "gpus")
    Traceback (most recent call last):
    ...
    ValueError: gpus: 100,000,000 GPUs, more than the limit of 100,000 (docs/limits.md)
    """
    if isinstance(value, int | float) and not isinstance(value, bool) and value > MAX_GPUS:  # gpus=1e8 too
        raise ValueError(f"{label}: {beyond(value, 'GPUs', MAX_GPUS)}")
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{label} must be an integer of at least 1, got {value!r}")
    return value


def check_integers(*items: tuple[str, Any, int]) -> None:
    """Each (label, value, least) a whole number of at least ``least``; else ValueError naming it."""
    for label, value, low in items:
        if isinstance(value, bool) or not isinstance(value, int) or value < low:
            raise ValueError(f"{label} must be an integer of at least {low}, got {value!r}")


def check_shares(*items: tuple[str, float]) -> None:
    """Each (label, value) a share in [0, 1]; else ValueError naming it (NaN too)."""
    for label, value in items:
        if not 0 <= value <= 1:  # also false for NaN
            raise ValueError(f"{label} must be in [0, 1], got {value!r}")


def host_layout(gpus: int, gpus_per_host: int) -> list[tuple[str, list[str]]]:
    """``gpus`` GPUs in hosts of ``gpus_per_host`` (the last holds the remainder): (host id, GPU ids).

    Host ids are ``h000``, ``h001``, ... (wider when needed, so that they sort in order);
    GPU ids are ``<host>-g0``, ``<host>-g1``, ...
    """
    check_gpus(gpus, "gpus")
    n_hosts = math.ceil(gpus / gpus_per_host)
    width = max(3, len(str(n_hosts - 1)))
    out = []
    for j in range(n_hosts):
        hid = f"h{j:0{width}d}"
        out.append((hid, [f"{hid}-g{k}" for k in range(min(gpus_per_host, gpus - j * gpus_per_host))]))
    return out
