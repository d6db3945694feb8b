"""Host and GPU ids of a generated cluster, and a GPU being filled: shared by every generator."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

__all__ = ["GpuFill", "host_layout"]


@dataclass
class GpuFill:
    """One GPU being filled by a generator: occupied slots, instances per profile, the +me holder."""

    mask: int = 0
    counts: dict[str, int] = field(default_factory=dict)
    media_used: bool = False


def host_layout(gpus: int, gpus_per_host: int) -> list[tuple[str, list[str]]]:
    """``gpus`` GPUs in hosts of ``gpus_per_host`` (the last holds the remainder): (host id, GPU ids).

    Host ids are ``h000``, ``h001``, ... (wider when needed, so that they sort in order);
    GPU ids are ``<host>-g0``, ``<host>-g1``, ...
    """
    n_hosts = math.ceil(gpus / gpus_per_host)
    width = max(3, len(str(n_hosts - 1)))
    out = []
    for j in range(n_hosts):
        hid = f"h{j:0{width}d}"
        out.append((hid, [f"{hid}-g{k}" for k in range(min(gpus_per_host, gpus - j * gpus_per_host))]))
    return out
