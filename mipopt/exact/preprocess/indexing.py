"""WPM's indexing step: start slots for what the bin-packing model put on each GPU.

The WPM MIP (IBM WPM paper, section 4.1) decides *what* goes on each GPU from
compute and memory totals only; Assumption 1 says every such content "can be
permuted to match at least one feasible GPU partition profile", so start slots
can be chosen afterwards. This module is that step and its check:

* :func:`index_gpu`: starts for the items of one GPU around its fixed
  (unmovable) instances. Items go largest profile first, each trying its starts
  in Table 1's preference order (:func:`~mipopt.geometry.preference_order`),
  with backtracking over the geometry tables' legal-start bitmasks, so an
  indexing is found whenever one exists. When none exists it returns the
  smallest set of items to drop (the repair primitive), why each could not be
  indexed, and a minimal conflicting subset.
* :func:`index_solution`: every GPU of a WPM result, with a per-GPU report of
  where fixed workloads break Assumption 1.
* :func:`assumption1_counterexamples`: the assumption itself, by enumerating every
  multiset of profiles within a GPU's compute and memory (``memory_gb``, as the
  paper states it: "memory limit of 80gb, compute limit of 7g and at most one
  me") and searching each for an indexing.

See ``models/preprocess.md``, section "Indexing (WPM Assumption 1)".
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Literal

from mipopt.catalog import GpuModel
from mipopt.exact.preprocess.candidates import FixedState, fixed_ids, fixed_states
from mipopt.geometry import preference_order, tables_for
from mipopt.instance import Instance

__all__ = [
    "GpuIndex",
    "IndexReport",
    "IndexResult",
    "Unindexed",
    "assumption1_counterexamples",
    "index_gpu",
    "index_solution",
    "profile_multisets",
]

Reason = Literal["max_instances", "media", "compute", "memory", "no_start", "alignment"]
# the reasons that are about starts, not totals: the content fits but cannot be indexed
START_REASONS: frozenset[str] = frozenset({"no_start", "alignment"})


@dataclass(frozen=True, slots=True)
class Unindexed:
    """An item left out of a GPU's indexing, and why.

    Attributes
    ----------
    workload
        The item's workload id.
    profile
        Its profile name.
    reason
        Why it cannot join the items kept: ``max_instances`` (the profile's limit,
        fixed instances included), ``media`` (a second ``+me``), ``compute`` or
        ``memory`` (the GPU's compute slices or memory slots would be exceeded),
        ``no_start`` (no legal start of the profile is free around the fixed
        instances) or ``alignment`` (it fits every total but no starts combine it
        with the items kept). The last two break Assumption 1.
    detail
        One line for people.
    """

    workload: str
    profile: str
    reason: Reason
    detail: str

    @property
    def assumption1(self) -> bool:
        """True when the item fits the totals but not the starts (Assumption 1 fails)."""
        return self.reason in START_REASONS

    def to_dict(self) -> dict[str, str]:
        return {
            "workload": self.workload,
            "profile": self.profile,
            "reason": self.reason,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True)
class IndexResult:
    """The indexing of one GPU's items.

    Attributes
    ----------
    model
        The GPU model.
    starts
        Start slot per indexed item (workload id), in the order the items were given.
        All items on success; on failure, the items kept.
    unindexed
        The smallest set of items to drop so that the rest can be indexed (the rule
        is in :func:`index_gpu`), each with its reason; empty on success.
    conflict
        On failure, a minimal subset of the items that cannot be indexed together
        around the fixed instances (removing any one of them makes it indexable):
        the combination a re-solve must exclude. Empty on success.
    fits_totals
        Whether all items together respect every start-free rule: ``max_instances``,
        one ``+me``, the compute slices and the memory slots left by the fixed
        instances. A failure with ``fits_totals`` is a breach of Assumption 1.
    """

    model: GpuModel = field(repr=False)
    starts: Mapping[str, int]
    unindexed: tuple[Unindexed, ...] = ()
    conflict: tuple[str, ...] = ()
    fits_totals: bool = True

    @property
    def ok(self) -> bool:
        return not self.unindexed

    @property
    def dropped(self) -> tuple[str, ...]:
        """Ids of the items left out: the repair set."""
        return tuple(u.workload for u in self.unindexed)

    @property
    def assumption1_broken(self) -> bool:
        """The items fit every total but have no legal indexing."""
        return not self.ok and self.fits_totals

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "starts": dict(self.starts),
            "unindexed": [u.to_dict() for u in self.unindexed],
            "conflict": list(self.conflict),
            "fits_totals": self.fits_totals,
        }


# --- one GPU


@dataclass(frozen=True, slots=True)
class _Fixed:
    """What the fixed instances hold: the parts of a FixedState the search reads."""

    mask: int
    counts: tuple[int, ...]
    media: bool
    compute: int
    ids: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class _Item:
    wid: str
    p: int
    position: int  # priority: earlier items are kept first on ties
    order: tuple[int, ...]  # starts to try, best first


@lru_cache(maxsize=64)
def _legal(model: GpuModel) -> tuple[tuple[int, ...], ...]:
    """``[state][p]`` legal-start bitmasks as Python ints (faster to index than numpy scalars)."""
    return tuple(tuple(int(b) for b in row) for row in tables_for(model).legal.tolist())


@lru_cache(maxsize=64)
def _preferences(model: GpuModel) -> tuple[tuple[int, ...], ...]:
    return tuple(preference_order(model, p) for p in model.profiles)


def _rank_key(model: GpuModel, p: int) -> tuple[int, int, int]:
    """Largest first, as Alg. 1 ranks profiles: compute, then memory slots, then catalog order."""
    q = model.profiles[p]
    return (-q.compute, -q.memory_slots, p)


def _normalize_fixed(model: GpuModel, fixed: FixedState | Mapping[str, tuple[int, int]] | None) -> _Fixed:
    n = len(model.profiles)
    if fixed is None:
        return _Fixed(0, (0,) * n, False, 0, ())
    if isinstance(fixed, FixedState):
        if fixed.model != model:
            raise ValueError(f"fixed state is for {fixed.model.name}, not {model.name}")
        compute = sum(c * p.compute for c, p in zip(fixed.counts, model.profiles, strict=True))
        return _Fixed(fixed.mask, fixed.counts, fixed.media_used, compute, fixed.workloads)
    mask, counts, media, compute = 0, [0] * n, False, 0
    for wid, (p, start) in fixed.items():
        if not 0 <= p < n:
            raise ValueError(f"fixed {wid!r}: profile index {p} is not a profile of {model.name}")
        q = model.profiles[p]
        if start not in q.starts:
            raise ValueError(f"fixed {wid!r}: {start} is not a legal start of {q.name} on {model.name}")
        if mask & q.slot_mask(start):
            raise ValueError(f"fixed {wid!r}: {q.name}@{start} overlaps another fixed instance")
        if q.media_extension and media:
            raise ValueError(f"fixed {wid!r}: a second +me instance on one GPU")
        mask |= q.slot_mask(start)
        counts[p] += 1
        if counts[p] > q.max_instances:
            raise ValueError(f"fixed {wid!r}: more than {q.max_instances} {q.name} on one GPU")
        media |= q.media_extension
        compute += q.compute
    return _Fixed(mask, tuple(counts), media, compute, tuple(fixed))


def _search(model: GpuModel, mask: int, items: Sequence[_Item]) -> list[int] | None:
    """Starts for ``items`` (in this order) around ``mask``, or None: exact depth-first search.

    A failure depends only on the next item's position and the occupied slots, so
    failed ``(position, mask)`` pairs are remembered; this also cuts the
    permutations of interchangeable items, which reach the same masks.
    """
    legal = _legal(model)
    profiles = model.profiles
    need = [0] * (len(items) + 1)  # memory slots the items from k on need
    for k in range(len(items) - 1, -1, -1):
        need[k] = need[k + 1] + profiles[items[k].p].memory_slots
    full = model.full_mask
    out = [0] * len(items)
    failed: set[tuple[int, int]] = set()

    def place(k: int, occupied: int) -> bool:
        if k == len(items):
            return True
        if (k, occupied) in failed or (full & ~occupied).bit_count() < need[k]:
            return False
        item = items[k]
        bits = legal[occupied][item.p]
        q = profiles[item.p]
        for s in item.order:
            if bits >> s & 1:
                out[k] = s
                if place(k + 1, occupied | q.slot_mask(s)):
                    return True
        failed.add((k, occupied))
        return False

    return out if place(0, mask) else None


def _totals_violation(
    model: GpuModel, fixed: _Fixed, kept: Sequence[int], extra: int | None = None
) -> tuple[Reason, str] | None:
    """The first start-free rule that ``kept`` (+ ``extra``) break on top of the fixed instances, or None."""
    ps = [*kept] if extra is None else [*kept, extra]
    counts = list(fixed.counts)
    for p in ps:
        counts[p] += 1
    profiles = model.profiles
    media = int(fixed.media) + sum(profiles[p].media_extension for p in ps)
    if media > 1:
        return "media", "one +me instance per GPU (one media-engine set)" + (
            ": a fixed instance holds it" if fixed.media else ""
        )
    for p in sorted(set(ps), key=lambda i: (i != extra, i)):  # the extra item's own rules first
        q = profiles[p]
        if counts[p] > q.max_instances:
            return "max_instances", (
                f"at most {q.max_instances} {q.name} per GPU: {fixed.counts[p]} fixed, {counts[p] - fixed.counts[p]} here"
            )
    compute = fixed.compute + sum(profiles[p].compute for p in ps)
    if compute > model.compute_slices:
        return "compute", (
            f"{compute} compute slices needed ({fixed.compute} fixed), {model.compute_slices} on {model.name}"
        )
    slots = fixed.mask.bit_count() + sum(profiles[p].memory_slots for p in ps)
    if slots > model.slots:
        return "memory", (
            f"{slots} memory slots needed ({fixed.mask.bit_count()} fixed), {model.slots} on {model.name}"
        )
    return None


def _indexable(model: GpuModel, fixed: _Fixed, items: Sequence[_Item]) -> list[int] | None:
    if _totals_violation(model, fixed, [it.p for it in items]) is not None:
        return None
    return _search(model, fixed.mask, items)


def _sub_counts(
    model: GpuModel, fixed: _Fixed, by_profile: dict[int, list[_Item]]
) -> Iterator[dict[int, int]]:
    """Every count vector ``kept[p] <= len(by_profile[p])`` within the start-free rules (pruned as it goes)."""
    profiles = model.profiles
    keys = sorted(by_profile)
    free_compute = model.compute_slices - fixed.compute
    free_slots = model.slots - fixed.mask.bit_count()

    def walk(j: int, kept: dict[int, int], compute: int, slots: int, media: int) -> Iterator[dict[int, int]]:
        if j == len(keys):
            yield dict(kept)
            return
        p = keys[j]
        q = profiles[p]
        most = min(len(by_profile[p]), q.max_instances - fixed.counts[p])
        for k in range(max(most, 0) + 1):
            c, s, m = compute + k * q.compute, slots + k * q.memory_slots, media + k * q.media_extension
            if c > free_compute or s > free_slots or m > (0 if fixed.media else 1):
                break
            kept[p] = k
            yield from walk(j + 1, kept, c, s, m)
        kept.pop(p, None)

    yield from walk(0, {}, 0, 0, 0)


def _best_kept(model: GpuModel, fixed: _Fixed, items: Sequence[_Item]) -> tuple[list[_Item], list[int]]:
    """The kept items and their starts under the drop rule of :func:`index_gpu`."""
    by_profile: dict[int, list[_Item]] = {}
    for it in sorted(items, key=lambda it: it.position):
        by_profile.setdefault(it.p, []).append(it)
    profiles = model.profiles
    options = []
    for kept in _sub_counts(model, fixed, by_profile):
        # of one profile the items latest in priority are dropped: they are interchangeable otherwise
        dropped = [it for p, group in by_profile.items() for it in group[kept.get(p, 0) :]]
        key = (
            len(dropped),
            sum(profiles[it.p].compute for it in dropped),
            sum(profiles[it.p].memory_slots for it in dropped),
            tuple(-pos for pos in sorted((it.position for it in dropped), reverse=True)),
        )
        options.append((key, kept))
    options.sort(key=lambda o: o[0])
    for _, kept in options:
        chosen = [it for p, group in by_profile.items() for it in group[: kept.get(p, 0)]]
        chosen.sort(key=lambda it: (_rank_key(model, it.p), it.position))
        starts = _search(model, fixed.mask, chosen)
        if starts is not None:
            return chosen, starts
    raise AssertionError("the empty set is always indexable")  # pragma: no cover


def _conflict(model: GpuModel, fixed: _Fixed, items: Sequence[_Item]) -> tuple[str, ...]:
    """A minimal non-indexable subset (deletion filter, latest-priority items removed first)."""
    keep = sorted(items, key=lambda it: (_rank_key(model, it.p), it.position))
    for it in sorted(items, key=lambda it: -it.position):
        trial = [x for x in keep if x is not it]
        if _indexable(model, fixed, trial) is None:
            keep = trial
    return tuple(it.wid for it in sorted(keep, key=lambda it: it.position))


def _reason(model: GpuModel, fixed: _Fixed, kept: Sequence[_Item], item: _Item) -> Unindexed:
    """Why ``item`` cannot join ``kept``: first what rules it out alone, then what it breaks with them."""
    q = model.profiles[item.p]
    found = _totals_violation(model, fixed, [], item.p)
    if found is None and not _legal(model)[fixed.mask][item.p]:
        free = [s for s in range(model.slots) if not fixed.mask >> s & 1]
        starts = ", ".join(map(str, q.starts))
        detail = f"no start of {q.name} ({starts}) is free around the fixed instances (free slots {free})"
        return Unindexed(item.wid, q.name, "no_start", detail)
    found = found or _totals_violation(model, fixed, [it.p for it in kept], item.p)
    if found is not None:
        return Unindexed(item.wid, q.name, found[0], found[1])
    detail = f"{q.name} fits the totals left but no starts combine it with the items kept"
    return Unindexed(item.wid, q.name, "alignment", detail)


def index_gpu(
    model: GpuModel,
    fixed: FixedState | Mapping[str, tuple[int, int]] | None,
    items: Sequence[tuple[str, int]],
    *,
    prefer: Mapping[str, int] | None = None,
    avoid: int = 0,
) -> IndexResult:
    """Start slots for the items of one GPU around its fixed instances (WPM's indexing step).

    Items are placed largest profile first (compute, then memory slots, then
    catalog order; ties keep the given order), each trying its starts in Table 1's
    preference order (:func:`~mipopt.geometry.preference_order`, a
    ``prefer``-red start first, starts that touch ``avoid`` last), depth-first with
    backtracking. The search is
    exhaustive, so it finds an indexing whenever any exists; among the
    indexings it returns the first in that order.

    When none exists, the result names the **smallest set of items to drop** so
    that the rest can be indexed, chosen by, in this order: (1) fewest items;
    (2) least compute, then fewest memory slots dropped (the GPU keeps as much of
    its content as it can; small items are the easiest to place elsewhere);
    (3) the items latest in the given order (put the items to keep first). Each
    dropped item carries its reason (:class:`Unindexed`): what rules it out next
    to the fixed instances alone, else the first rule it breaks with the kept
    items, else ``alignment``. ``conflict`` is a minimal subset that cannot be
    indexed together, for a no-good cut in a re-solve.

    Parameters
    ----------
    model
        The GPU model.
    fixed
        The unmovable instances: a :class:`~mipopt.exact.preprocess.FixedState`, a mapping
        ``workload id -> (profile index, start)``, or None for an empty GPU.
    items
        ``(workload id, profile index)`` pairs to index, in priority order.
    prefer
        Optional start to try first per workload id (e.g. where a running workload
        already is); ignored where it is not a legal start of the profile.
    avoid
        Bitmask of memory slots to use only when nothing else works (e.g. slots that
        running workloads leave: a workload placed there must wait for them, IBM's
        sequential migration).

    Returns
    -------
    IndexResult

    Raises
    ------
    ValueError
        On a profile index outside ``model.profiles``, a repeated workload id, or
        fixed instances that break a rule (start, overlap, ``max_instances``, a
        second ``+me``) or belong to another model.
    """
    state = _normalize_fixed(model, fixed)
    prefer = prefer or {}
    seen = set(state.ids)
    prefs = _preferences(model)
    entries: list[_Item] = []
    for position, (wid, p) in enumerate(items):
        if wid in seen:
            raise ValueError(f"workload {wid!r} appears twice among the fixed instances and items")
        seen.add(wid)
        if not 0 <= p < len(model.profiles):
            raise ValueError(f"item {wid!r}: profile index {p} is not a profile of {model.name}")
        first = prefer.get(wid)
        profile = model.profiles[p]
        order = prefs[p]
        if avoid:
            clear = tuple(s for s in order if not profile.slot_mask(s) & avoid)
            order = clear + tuple(s for s in order if s not in clear)
        if first is not None and first in profile.starts:
            order = (first, *(s for s in order if s != first))
        entries.append(_Item(wid, p, position, order))

    ordered = sorted(entries, key=lambda it: (_rank_key(model, it.p), it.position))
    fits = _totals_violation(model, state, [it.p for it in entries]) is None
    starts = _search(model, state.mask, ordered) if fits else None
    if starts is not None:
        found = {it.wid: s for it, s in zip(ordered, starts, strict=True)}
        return IndexResult(model, {it.wid: found[it.wid] for it in entries}, fits_totals=True)

    kept, kept_starts = _best_kept(model, state, entries)
    found = {it.wid: s for it, s in zip(kept, kept_starts, strict=True)}
    kept_ids = set(found)
    unindexed = tuple(_reason(model, state, kept, it) for it in entries if it.wid not in kept_ids)
    return IndexResult(
        model,
        {it.wid: found[it.wid] for it in entries if it.wid in kept_ids},
        unindexed,
        _conflict(model, state, entries),
        fits,
    )


# --- a whole solution


@dataclass(frozen=True, slots=True)
class GpuIndex:
    """The indexing of one GPU of a solution.

    Attributes
    ----------
    gpu
        GPU id.
    fixed
        Ids of the fixed (unmovable) workloads on it.
    items
        Ids of the workloads the content put on it, in the priority used.
    result
        The indexing (:func:`index_gpu`).
    """

    gpu: str
    fixed: tuple[str, ...]
    items: tuple[str, ...]
    result: IndexResult

    @property
    def ok(self) -> bool:
        return self.result.ok

    @property
    def assumption1_broken(self) -> bool:
        """The content fits the GPU's totals left by the fixed workloads but cannot be indexed."""
        return self.result.assumption1_broken

    def message(self) -> str:
        """One line: what could not be indexed here, and why."""
        r = self.result
        if r.ok:
            return f"GPU {self.gpu!r}: {len(self.items)} items indexed"
        around = f" around fixed {', '.join(map(repr, self.fixed))}" if self.fixed else ""
        head = f"GPU {self.gpu!r} ({r.model.name}): cannot index {', '.join(map(repr, self.items))}{around}"
        if r.assumption1_broken:
            head += " (Assumption 1 fails: the content fits the compute and memory left, not the starts)"
        drops = "; ".join(f"{u.workload!r} ({u.profile}): {u.reason}, {u.detail}" for u in r.unindexed)
        return f"{head}; drop {drops}; conflicting together: {', '.join(map(repr, r.conflict))}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "fixed": list(self.fixed),
            "items": list(self.items),
            "assumption1_broken": self.assumption1_broken,
            **self.result.to_dict(),
        }


@dataclass(frozen=True, slots=True)
class IndexReport:
    """What the indexing step did to a whole solution.

    Attributes
    ----------
    gpus
        Per GPU that has content or fixed workloads, in ``instance.gpus`` order.
    unassigned
        Running workloads that are neither fixed nor in any GPU's content (they
        must stay placed: the caller has to put them somewhere).
    """

    gpus: tuple[GpuIndex, ...]
    unassigned: tuple[str, ...] = field(default=())

    @property
    def ok(self) -> bool:
        return all(g.ok for g in self.gpus) and not self.unassigned

    @property
    def failed(self) -> tuple[GpuIndex, ...]:
        return tuple(g for g in self.gpus if not g.ok)

    @property
    def dropped(self) -> tuple[str, ...]:
        """Every workload left out, GPU by GPU."""
        return tuple(w for g in self.gpus for w in g.result.dropped)

    def messages(self) -> list[str]:
        out = [g.message() for g in self.failed]
        if self.unassigned:
            out.append(f"running workloads in no GPU's content: {', '.join(map(repr, self.unassigned))}")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "gpus": [g.to_dict() for g in self.gpus],
            "dropped": list(self.dropped),
            "unassigned": list(self.unassigned),
        }


def index_solution(
    instance: Instance,
    contents: Mapping[str, Sequence[str]],
    fixed: Iterable[str] | None = None,
    *,
    keep_starts: bool = True,
) -> tuple[dict[str, tuple[str, int]], IndexReport]:
    """Index every GPU of a bin-packing result (the WPM MIP's ``x``), GPU by GPU.

    Parameters
    ----------
    instance
        The instance.
    contents
        ``gpu id -> workload ids`` put on it. A fixed workload may be listed on its
        own GPU (it is skipped: it is already there) but not on another.
    fixed
        Running workloads that keep their GPU and start; None for the pinned ones
        (as :func:`~mipopt.exact.preprocess.candidates`).
    keep_starts
        A running workload whose content GPU is its current GPU tries its current
        start first (no move inside the GPU when one is not needed), and the slots
        that movable running workloads hold now are tried last by everything else
        (no sequential migration when one is not needed).

    Returns
    -------
    placed, report
        ``placed`` maps workload id to ``(gpu, start)`` for the fixed workloads and
        every indexed item; items that could not be indexed are left out and listed
        per GPU in ``report`` (with the repair set and the conflict of
        :class:`IndexResult`). Per GPU the priority for the drop rule is: running
        workloads before new ones, then the order of ``contents``.

    Raises
    ------
    ValueError
        On an unknown GPU or workload, a workload in two contents, a fixed workload
        moved to another GPU, or a workload whose profile the GPU's model lacks.
    """
    ids = fixed_ids(instance, fixed)
    states = {s.gpu: s for s in fixed_states(instance, ids)}
    where: dict[str, str] = {}
    for gid, wids in contents.items():
        if not instance.has_gpu(gid):
            raise ValueError(f"contents: {gid!r} is not a GPU of instance {instance.name!r}")
        for wid in wids:
            if not instance.has_workload(wid):
                raise ValueError(
                    f"contents[{gid!r}]: {wid!r} is not a workload of instance {instance.name!r}"
                )
            if wid in where:
                raise ValueError(f"contents: {wid!r} is on both {where[wid]!r} and {gid!r}")
            where[wid] = gid
            w = instance.workload(wid)
            if wid in ids and w.placement is not None and w.placement.gpu != gid:
                raise ValueError(f"contents[{gid!r}]: {wid!r} is fixed on {w.placement.gpu!r}")

    leaving: dict[str, int] = defaultdict(int)  # GPU -> slots its movable running workloads hold now
    for w in instance.running:
        if w.id not in ids and w.placement is not None:
            model = instance.gpu(w.placement.gpu).model
            profile = instance.profile_on(w, model)
            assert profile is not None  # a running workload runs on its GPU's model
            leaving[w.placement.gpu] |= profile.slot_mask(w.placement.start)
    placed: dict[str, tuple[str, int]] = {}
    gpus: list[GpuIndex] = []
    for g in instance.gpus:
        state = states[g.id]
        wids = [wid for wid in contents.get(g.id, ()) if wid not in ids]
        if not wids and not state.workloads:
            continue
        for wid in state.workloads:
            w = instance.workload(wid)
            assert w.placement is not None  # fixed workloads are running
            placed[wid] = (g.id, w.placement.start)
        wids.sort(key=lambda wid: not instance.workload(wid).running)  # stable: contents order within
        items, prefer = [], {}
        avoid = leaving.get(g.id, 0) if keep_starts else 0
        for wid in wids:
            w = instance.workload(wid)
            profile = instance.profile_on(w, g.model)
            if profile is None:
                raise ValueError(f"contents[{g.id!r}]: {wid!r} ({w.profile}) cannot run on {g.model.name}")
            items.append((wid, g.model.profiles.index(profile)))
            if keep_starts and w.placement is not None and w.placement.gpu == g.id:
                prefer[wid] = w.placement.start
        result = index_gpu(g.model, state, items, prefer=prefer, avoid=avoid)
        placed.update((wid, (g.id, s)) for wid, s in result.starts.items())
        gpus.append(GpuIndex(g.id, state.workloads, tuple(wids), result))

    unassigned = tuple(w.id for w in instance.running if w.id not in ids and w.id not in where)
    return placed, IndexReport(tuple(gpus), unassigned)


# --- Assumption 1 by enumeration


def _free_totals(
    model: GpuModel, state: _Fixed, memory: Literal["gb", "slots"]
) -> tuple[int, float, list[int], int]:
    """Compute, memory (in ``memory``'s unit), per-profile counts and ``+me`` left by the fixed instances."""
    profiles = model.profiles
    if memory == "gb":
        used = sum(c * p.memory_gb for c, p in zip(state.counts, profiles, strict=True))
        mem_left: float = model.memory_gb - used
    else:
        mem_left = model.slots - state.mask.bit_count()
    counts = [p.max_instances - c for p, c in zip(profiles, state.counts, strict=True)]
    return model.compute_slices - state.compute, mem_left, counts, 0 if state.media else 1


def profile_multisets(
    model: GpuModel,
    fixed: FixedState | Mapping[str, tuple[int, int]] | None = None,
    *,
    memory: Literal["gb", "slots"] = "gb",
    media: bool = True,
) -> list[tuple[int, ...]]:
    """Every non-empty multiset of profiles that fits the bin-packing limits of one GPU.

    The limits are the WPM model's: total compute within the compute slices, total
    memory within the GPU's memory (``memory="gb"``: ``Profile.memory_gb`` against
    ``GpuModel.memory_gb``, as the paper states it; ``"slots"``: memory slots), at
    most one ``+me`` instance, and ``max_instances`` per profile. With ``fixed``,
    the limits are what the fixed instances leave. ``media=False`` leaves the
    ``+me`` profiles out.

    Returns
    -------
    list of tuple of int
        Each multiset as profile indices, largest profile first (the order of
        :func:`index_gpu`), the list in lexicographic order of that form.
    """
    state = _normalize_fixed(model, fixed)
    compute_left, mem_left, count_left, media_left = _free_totals(model, state, memory)
    profiles = model.profiles
    ranked = sorted(
        (i for i, p in enumerate(profiles) if media or not p.media_extension),
        key=lambda i: _rank_key(model, i),
    )
    size = [p.memory_gb if memory == "gb" else p.memory_slots for p in profiles]
    out: list[tuple[int, ...]] = []

    def walk(j: int, chosen: list[int], compute: int, mem: float, used_media: int) -> None:
        if chosen:
            out.append(tuple(chosen))
        for k in range(j, len(ranked)):
            i = ranked[k]
            p = profiles[i]
            if (
                compute + p.compute > compute_left
                or mem + size[i] > mem_left + 1e-9
                or chosen.count(i) >= count_left[i]
                or used_media + p.media_extension > media_left
            ):
                continue
            chosen.append(i)
            walk(k, chosen, compute + p.compute, mem + size[i], used_media + p.media_extension)
            chosen.pop()

    walk(0, [], 0, 0.0, 0)
    return out


def assumption1_counterexamples(
    model: GpuModel,
    fixed: FixedState | Mapping[str, tuple[int, int]] | None = None,
    *,
    memory: Literal["gb", "slots"] = "gb",
    media: bool = True,
) -> list[tuple[str, ...]]:
    """The multisets of :func:`profile_multisets` that have no legal indexing (WPM Assumption 1).

    Assumption 1 holds on ``model`` (around ``fixed``) exactly when this is empty.
    Every multiset is searched exhaustively (:func:`index_gpu`'s search).

    Returns
    -------
    list of tuple of str
        Profile names, largest first, in the order of :func:`profile_multisets`.
    """
    state = _normalize_fixed(model, fixed)
    out = []
    for multiset in profile_multisets(model, fixed, memory=memory, media=media):
        items = [_Item(str(k), p, k, _preferences(model)[p]) for k, p in enumerate(multiset)]
        if _search(model, state.mask, items) is None:
            out.append(tuple(model.profiles[p].name for p in multiset))
    return out


# --- configurations: maximal indexable multisets, for the configuration model


class TooManyMultisets(ValueError):
    """The indexable multisets of a GPU type are more than the caller's limit."""


def maximal_multisets(
    model: GpuModel,
    fixed: FixedState | Mapping[str, tuple[int, int]] | None,
    profiles: Iterable[int],
    *,
    limit: int = 20_000,
) -> tuple[tuple[int, ...], ...]:
    """The maximal multisets of ``profiles`` that can be indexed around ``fixed``, as count vectors.

    A multiset is *indexable* when legal, non-overlapping starts exist for all of its
    instances around the fixed ones (and the start-free rules hold: compute,
    ``max_instances``, one ``+me``). Indexability is closed under removal, so a GPU
    can hold a multiset exactly when some maximal one contains it: the configuration
    model (``models/grmu.md``) chooses among these. On an empty A100-80GB with all
    19 profiles there are 44 maximal multisets out of 127 non-empty indexable ones.

    Parameters
    ----------
    model
        The GPU model.
    fixed
        The unmovable instances (see :func:`index_gpu`), or None.
    profiles
        Profile indices that may be used; the others count 0.
    limit
        Most indexable multisets to enumerate before giving up.

    Returns
    -------
    tuple of tuple of int
        Count vectors indexed like ``model.profiles``, in enumeration order; the empty
        vector alone when nothing fits.

    Raises
    ------
    TooManyMultisets
        When more than ``limit`` multisets are indexable.
    """
    state = _normalize_fixed(model, fixed)
    key = (model, state.mask, state.counts, state.media, tuple(sorted(set(profiles))))
    return _maximal_multisets(*key, limit)


@lru_cache(maxsize=4096)
def _maximal_multisets(
    model: GpuModel, mask: int, counts: tuple[int, ...], media: bool, profiles: tuple[int, ...], limit: int
) -> tuple[tuple[int, ...], ...]:
    compute = sum(c * p.compute for c, p in zip(counts, model.profiles, strict=True))
    state = _Fixed(mask, counts, media, compute, ())
    ranked = sorted(profiles, key=lambda p: _rank_key(model, p))
    prefs = _preferences(model)
    n = len(model.profiles)
    found: list[tuple[int, ...]] = []
    seen: set[tuple[int, ...]] = set()

    def walk(j: int, chosen: list[int]) -> None:
        vector = [0] * n
        for p in chosen:
            vector[p] += 1
        found.append(tuple(vector))
        seen.add(found[-1])
        if len(found) > limit:
            raise TooManyMultisets(f"{model.name}: more than {limit} indexable multisets")
        for k in range(j, len(ranked)):
            trial = [*chosen, ranked[k]]
            items = [_Item(str(i), p, i, prefs[p]) for i, p in enumerate(trial)]
            if _indexable(model, state, items) is not None:
                walk(k, trial)

    walk(0, [])
    maximal = []
    for vector in found:
        bigger = (tuple(c + (q == p) for q, c in enumerate(vector)) for p in profiles)
        if not any(b in seen for b in bigger):
            maximal.append(vector)
    return tuple(maximal)


def index_keeping(
    model: GpuModel,
    fixed: FixedState | Mapping[str, tuple[int, int]] | None,
    items: Sequence[tuple[str, int]],
    home: Mapping[str, int],
) -> dict[str, int] | None:
    """Starts for ``items`` around ``fixed`` that change the fewest ``home`` starts, or None.

    ``home`` maps the items that already run on this GPU to their current start.
    The search is exact: it tries to keep every such item where it is, then every
    subset with one fewer, and so on (at most ``2**len(home)`` small searches, and a
    GPU holds at most 7 instances), indexing the rest around the kept ones.

    Returns
    -------
    dict or None
        Workload id -> start; None when ``items`` cannot be indexed at all.
    """
    state = _normalize_fixed(model, fixed)
    prefs = _preferences(model)
    stayers = [wid for wid, _ in items if wid in home]
    profile_of = dict(items)
    if _totals_violation(model, state, [p for _, p in items]) is not None:
        return None
    from itertools import combinations

    for released in range(len(stayers) + 1):
        for moved in combinations(stayers, released):
            kept = [w for w in stayers if w not in moved]
            mask, ok = state.mask, True
            for w in kept:
                q = model.profiles[profile_of[w]]
                bits = q.slot_mask(home[w])
                if mask & bits or home[w] not in q.starts:
                    ok = False
                    break
                mask |= bits
            if not ok:
                continue
            rest = [(w, p) for w, p in items if w not in kept]
            entries = [
                _Item(w, p, i, (home[w], *(s for s in prefs[p] if s != home[w])) if w in home else prefs[p])
                for i, (w, p) in enumerate(rest)
            ]
            ordered = sorted(entries, key=lambda it: (_rank_key(model, it.p), it.position))
            starts = _search(model, mask, ordered)
            if starts is not None:
                out = {w: home[w] for w in kept}
                out.update({it.wid: s for it, s in zip(ordered, starts, strict=True)})
                return out
    return None
