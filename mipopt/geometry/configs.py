"""All configurations of one GPU (GRMU section 5.1) and what the paper counts over them.

A configuration is a set of GPU instances, each a (profile, start) pair, that
obey every placement rule: legal starts, no overlap, per-profile maximum counts,
at most one ``+me`` instance. The enumeration is the paper's depth-first search
from the empty GPU, adding one instance at a time, each configuration once.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

from mipopt.catalog import GpuModel
from mipopt.geometry.tables import NO_START, tables_for

Instance = tuple[int, int]  # (profile index, start)
Configuration = frozenset[Instance]
CcRule = Literal["<=", "==", "<", "any"]
CC_RULES: tuple[CcRule, ...] = ("<=", "==", "<", "any")


def base_profiles(model: GpuModel) -> list[int]:
    """Indices of the base profiles (no ``+me`` or graphics variants): the papers' profile set."""
    return [i for i, p in enumerate(model.profiles) if p.base]


def family_profiles(model: GpuModel) -> list[int]:
    """One base profile per compute size, the one with the fewest memory slots.

    These are the profiles of NVIDIA's "MIG profiles on A100" figure: 1g.5gb, 2g.10gb,
    3g.20gb, 4g.20gb and 7g.40gb (the two-slot 1g.10gb left out).
    """
    best: dict[int, int] = {}
    for i in base_profiles(model):
        p = model.profiles[i]
        if p.compute not in best or p.memory_slots < model.profiles[best[p.compute]].memory_slots:
            best[p.compute] = i
    return sorted(best.values(), key=lambda i: model.profiles[i].compute)


def occupancy(model: GpuModel, config: Iterable[Instance]) -> int:
    mask = 0
    for p, s in config:
        mask |= model.profiles[p].slot_mask(s)
    return mask


def addable(model: GpuModel, config: Configuration, profiles: Sequence[int]) -> list[Instance]:
    """Every instance of the given profiles that can join ``config``."""
    mask = occupancy(model, config)
    counts = Counter(p for p, _ in config)
    media = any(model.profiles[p].media_extension for p, _ in config)
    out: list[Instance] = []
    for i in profiles:
        prof = model.profiles[i]
        if counts[i] >= prof.max_instances or (media and prof.media_extension):
            continue
        out.extend((i, s) for s in prof.starts if not mask & prof.slot_mask(s))
    return out


def enumerate_configurations(
    model: GpuModel, profiles: Sequence[int] | None = None
) -> tuple[set[Configuration], set[Configuration]]:
    """All configurations reachable from the empty GPU, and the terminal ones among them.

    Parameters
    ----------
    profiles
        Profile indices to use; default the base profiles.

    Returns
    -------
    (configurations, terminal)
        Terminal configurations admit no further instance.
    """
    profiles = base_profiles(model) if profiles is None else list(profiles)
    empty: Configuration = frozenset()
    seen, terminal, stack = {empty}, set(), [empty]
    while stack:
        config = stack.pop()
        children = addable(model, config, profiles)
        if not children:
            terminal.add(config)
        for inst in children:
            child = config | {inst}
            if child not in seen:
                seen.add(child)
                stack.append(child)
    return seen, terminal


def default_reachable(model: GpuModel, profiles: Sequence[int] | None = None) -> set[Configuration]:
    """Configurations that sequential default placement reaches from the empty GPU.

    Any arrival order of the given profiles, each instance at the driver's
    default start (:func:`mipopt.geometry.default_start`), no departures.
    """
    profiles = base_profiles(model) if profiles is None else list(profiles)
    t = tables_for(model)
    empty: Configuration = frozenset()
    seen, stack = {empty}, [empty]
    while stack:
        config = stack.pop()
        allowed = {p for p, _ in addable(model, config, profiles)}
        mask = occupancy(model, config)
        for p in allowed:
            s = int(t.default_start[mask, p])
            if s != NO_START:
                child = config | {(p, s)}
                if child not in seen:
                    seen.add(child)
                    stack.append(child)
    return seen


def suboptimal(model: GpuModel, configs: Iterable[Configuration]) -> set[Configuration]:
    """Configurations whose CC is below the best CC of any arrangement of the same instances.

    The best arrangement is taken over all configurations of the same multiset of
    profiles, enumerated with the same profile set (GRMU section 5.1).
    """
    configs = list(configs)
    cc = tables_for(model).cc
    key = {c: tuple(sorted(p for p, _ in c)) for c in configs}
    best: dict[tuple[int, ...], int] = {}
    for c in configs:
        best[key[c]] = max(best.get(key[c], -1), int(cc[occupancy(model, c)]))
    return {c for c in configs if cc[occupancy(model, c)] < best[key[c]]}


def profile_vectors(
    model: GpuModel, configs: Sequence[Configuration]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Per configuration: instances per base profile, CC, and capacity per base profile.

    Returns ``(counts, cc, capacity)``: ``counts[c, k]`` instances of the k-th base
    profile in configuration ``c``, ``cc[c]`` its CC (Eq. 1) and ``capacity[c, k]``
    the legal starts left for the k-th base profile (GRMU Table 3); ``capacity``
    sums to ``cc`` along a row.
    """
    bp = base_profiles(model)
    position = {p: k for k, p in enumerate(bp)}
    t = tables_for(model)
    counts = np.zeros((len(configs), len(bp)), dtype=np.int64)
    masks = np.zeros(len(configs), dtype=np.int64)
    for c, config in enumerate(configs):
        for p, _ in config:
            counts[c, position[p]] += 1
        masks[c] = occupancy(model, config)
    capacity = t.capacity[masks][:, bp].astype(np.int64)
    return counts, t.cc[masks].astype(np.int64), capacity


def _group_ids(keys: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    _, inverse = np.unique(keys, axis=0, return_inverse=True)
    return inverse.reshape(-1).astype(np.int64)


def better_alternative(
    groups: npt.NDArray[np.int64],
    cc: npt.NDArray[np.int64],
    capacity: npt.NDArray[np.int64],
    cc_rule: CcRule = "<=",
) -> npt.NDArray[np.bool_]:
    """Which items have an alternative in their group that fits some profile more often.

    Item ``i`` is flagged when some item ``j`` of the same group (the same
    instances arranged differently) has ``capacity[j, k] > capacity[i, k]`` for
    some profile ``k`` while its CC compares to ``cc[i]`` as ``cc_rule`` says
    (``"<="``: the same or lower CC, GRMU section 5.1; ``"any"``: no condition).
    Vectorized: items are sorted by (group, CC) and, per profile, the running
    maximum of the capacity within the group answers for every item at once.
    """
    n = len(groups)
    flagged = np.zeros(n, dtype=bool)
    if n == 0:
        return flagged
    key = np.zeros_like(cc) if cc_rule == "any" else cc
    order = np.lexsort((key, groups))
    g, c = groups[order], key[order]
    new_run = np.r_[True, (g[1:] != g[:-1]) | (c[1:] != c[:-1])]
    run_starts = np.flatnonzero(new_run)
    run_id = np.cumsum(new_run) - 1
    run_end = np.r_[run_starts[1:] - 1, n - 1]
    new_group = np.r_[True, g[1:] != g[:-1]]
    group_id = np.cumsum(new_group) - 1
    for k in range(capacity.shape[1]):
        v = capacity[order, k]
        if cc_rule == "==":
            best = np.maximum.reduceat(v, run_starts)[run_id]
        else:
            offset = group_id * (int(v.max()) + 1)
            running = np.maximum.accumulate(v + offset) - offset  # restarts at each group
            if cc_rule == "<":
                before = np.where(new_group[run_starts], -1, running[np.maximum(run_starts - 1, 0)])
                best = before[run_id]
            else:
                best = running[run_end[run_id]]
        flagged[order] |= best > v
    return flagged


def profile_alternatives(
    model: GpuModel, configs: Iterable[Configuration], *, cc_rule: CcRule = "<="
) -> set[Configuration]:
    """Configurations that another arrangement of the same instances beats on some profile.

    GRMU section 5.1: a configuration counts when a configuration with the same
    multiset of profiles at other starts, with the same or lower CC
    (``cc_rule``), has more legal starts left for at least one profile (Table 3:
    the same CC 11, one more 1g.10gb). On the A100-40GB: 138 of 723.
    """
    configs = list(configs)
    counts, cc, capacity = profile_vectors(model, configs)
    flagged = better_alternative(_group_ids(counts), cc, capacity, cc_rule)
    return {c for c, f in zip(configs, flagged, strict=True) if f}


def pair_profile_alternatives(
    model: GpuModel,
    configs: Iterable[Configuration],
    *,
    cc_rule: CcRule = "<=",
    redistribute: bool = True,
) -> tuple[int, int]:
    """GRMU section 5.1 for two GPUs: ``(pairs, pairs with a better alternative)``.

    Pairs are unordered with repetition (``C(n + 1, 2)``: 261,726 for 723
    configurations). A pair counts when another pair holding the same instances,
    with the same or lower total CC (``cc_rule``), has more legal starts left in
    total for at least one profile. ``redistribute=True`` lets the alternative
    move instances between the two GPUs (the paper's 205,575 on the A100-40GB);
    ``False`` keeps each GPU's multiset of profiles. Vectorized over all pairs.
    """
    configs = list(configs)
    counts, cc, capacity = profile_vectors(model, configs)
    i, j = np.triu_indices(len(configs))
    if redistribute:
        groups = _group_ids(counts[i] + counts[j])
    else:
        single = _group_ids(counts)
        groups = _group_ids(np.c_[np.minimum(single[i], single[j]), np.maximum(single[i], single[j])])
    flagged = better_alternative(groups, cc[i] + cc[j], capacity[i] + capacity[j], cc_rule)
    return len(i), int(flagged.sum())


def maximal_layouts(model: GpuModel, *, pre_r510: bool = False) -> list[Configuration]:
    """Maximal layouts of the family profiles (NVIDIA's figure: 19 on A100, 18 before R510).

    ``pre_r510`` forbids a (4 memory, 4 compute) profile beside a (4 memory,
    3 compute) one, which drivers before R510 did not support.
    """
    profiles = family_profiles(model)

    def allowed(config: Configuration) -> bool:
        shapes = {(model.profiles[p].memory_slots, model.profiles[p].compute) for p, _ in config}
        return not (pre_r510 and {(4, 4), (4, 3)} <= shapes)

    configs, _ = enumerate_configurations(model, profiles)
    configs = {c for c in configs if allowed(c)}
    return sorted(
        (c for c in configs if c and not any(allowed(c | {i}) for i in addable(model, c, profiles))),
        key=lambda c: sorted((s, p) for p, s in c),
    )


@dataclass(frozen=True, slots=True)
class ConfigStats:
    """What ``mipopt configs`` reports for one model."""

    model: str
    profiles: list[str]
    configurations: int
    terminal: int
    suboptimal: int
    multisets: int
    default_reachable: int
    default_reachable_suboptimal: int
    profile_alternatives: int
    gpu_pairs: int
    pair_profile_alternatives: int
    maximal_layouts: int
    maximal_layouts_pre_r510: int

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


def config_stats(model: GpuModel) -> ConfigStats:
    """Enumeration statistics over the base profiles (GRMU section 5.1)."""
    configs, terminal = enumerate_configurations(model)
    reach = default_reachable(model)
    sub = suboptimal(model, configs)
    pairs, pairs_flagged = pair_profile_alternatives(model, configs)
    return ConfigStats(
        model=model.name,
        profiles=[model.profiles[i].name for i in base_profiles(model)],
        configurations=len(configs),
        terminal=len(terminal),
        suboptimal=len(sub),
        multisets=len({tuple(sorted(p for p, _ in c)) for c in configs}),
        default_reachable=len(reach),
        default_reachable_suboptimal=len(reach & sub),
        profile_alternatives=len(profile_alternatives(model, configs)),
        gpu_pairs=pairs,
        pair_profile_alternatives=pairs_flagged,
        maximal_layouts=len(maximal_layouts(model)),
        maximal_layouts_pre_r510=len(maximal_layouts(model, pre_r510=True)),
    )


def describe(model: GpuModel, config: Iterable[Instance]) -> str:
    """``1g.5gb@0 3g.20gb@4``: instances in start order."""
    return " ".join(f"{model.profiles[p].name}@{s}" for p, s in sorted(config, key=lambda x: x[1]))
