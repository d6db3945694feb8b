"""GRMU's placement problem as a configuration model (``--model grmu``, the default).

No objective of GRMU (Eqs. 3-5) depends on start slots, so a GPU's state can be the
multiset of profiles it holds, as long as that multiset can be indexed into legal
starts around the GPU's pinned instances. Indexability is closed under removal, so a
GPU only needs to choose among the *maximal* indexable multisets of its type
(:func:`~mipopt.exact.preprocess.indexing.maximal_multisets`: 44 on an empty A100-80GB);
whatever it holds, per profile, is at most what the chosen configuration offers.
Start slots come back afterwards, per GPU, from the exact indexing search, keeping
running workloads on their own starts wherever possible. See ``models/grmu.md``.

Five variants of one builder serve the staged solve of :mod:`mipopt.exact.driver`:

* ``aggregate``: every movable running workload joins the pool of its shape (it must
  be placed, anywhere); GPUs of one host and one type (model, pinned instances) are
  counted per configuration (``N``), not named. Acceptance and hardware are exact
  here; migrations are not modelled.
* ``restricted``: every movable running workload stays on its own GPU (its start may
  change), so every point has 0 migrations; GPUs of one host, type and running
  multiset are counted.
* ``detailed``: a GPU holding movable running workloads is named (a binary per
  configuration) and counts its stayers per class of identical running workloads;
  leavers join the pool; other GPUs are counted. Acceptance, hardware and migrations
  are exact; restarts and the budget's measures count the leavers only, so they are lower
  bounds (``relaxed``): a start change on a GPU is the decoding's, and the driver checks the
  decoded placement (and finishes on the slot model when they differ).
* ``keep``: every movable running workload stays on its own GPU; per GPU a configuration
  is chosen with the set of its stayers kept on their own starts (the others restart on
  the GPU). Restarts are exact over the placements that keep every running workload on its
  GPU: the restarts stage once 0 migrations is proven (``models/grmu.md``).
* ``kept``: the detailed variant whose named GPUs choose, with their configuration, the set
  of their running workloads kept on their own starts, as ``keep`` does; the others stay
  (restarted on the GPU) or leave. Acceptance, hardware, migrations and restarts are exact:
  the restarts stage when running workloads must move (``models/grmu.md``, "The kept variant").

Items (pool workloads) are counted per (shape, host, GPU model, profile): a host's GPUs of
one model offer, per profile, the spots of their chosen configurations, less the spots
their stayers use. Assigning counted items to the GPUs' spots is a transport problem
per profile with no interaction between profiles, so the counts are exact. A new
memory-sized workload's shape has an item per profile it may take (its profile is a
decision, ``models/grmu.md``, "Memory-sized workloads"); every other shape one per model.
"""

from __future__ import annotations

import functools
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from itertools import combinations
from typing import Any, Literal, cast

import numpy as np
import numpy.typing as npt
import pyomo.environ as pyo

from mipopt.catalog import GpuModel
from mipopt.exact.models.grmu_slots import OBJECTIVES, leaver_memory
from mipopt.exact.preprocess import (
    FixedState,
    Shape,
    fixed_ids,
    fixed_states,
    held_profile,
    home_gpu,
    home_profile,
    host_classes,
    movable_shapes,
    placement_key,
    profile_options,
    profile_taken,
)
from mipopt.exact.preprocess.indexing import index_keeping, maximal_multisets
from mipopt.instance import Instance, Workload

Mode = Literal["aggregate", "restricted", "detailed", "keep", "kept"]
MODES: tuple[Mode, ...] = ("aggregate", "restricted", "detailed", "keep", "kept")
Vector = tuple[int, ...]
Placed = dict[str, tuple[str, int]]


@dataclass
class _Unit:
    """GPUs that choose configurations together: named (one GPU) or counted (a group)."""

    host: str
    model: GpuModel
    gpus: tuple[str, ...]
    configs: tuple[Vector, ...]
    required: Vector  # per-GPU counts held by stayers forced in place (restricted mode)
    forced: bool  # every GPU of the unit is active (pinned or forced stayers)
    named: bool  # one GPU with a binary per configuration and counted stayers
    # keep variant: per configuration, the stayers (positions in ``stayers``) it holds on their
    # own starts, and the (sum of delta, count) of the others, restarted on their GPU
    kept: tuple[frozenset[int], ...] = ()
    costs: tuple[tuple[float, int], ...] = ()
    stayers: tuple[tuple[int, int, float], ...] = ()  # (profile index, start, delta), sorted


@dataclass
class ConfigModel:
    """A built configuration model and what is needed to read a placement back out of it.

    Attributes
    ----------
    mode
        ``aggregate``, ``restricted``, ``detailed`` or ``keep`` (module docstring).
    model
        The Pyomo model; objective expressions in ``model.obj_expr[name]``.
    units
        Unit k owns variables ``model.N[k, c]`` (count of its GPUs in configuration c).
    items
        Key k of ``model.X[k]``: (shape index, host id, GPU model name, profile index).
    stays
        Key k of ``model.K[k]``: (unit index, running workload ids of one class on its GPU).
    accept
        Class k of ``model.A[k]``: (shape index, new workload ids of one weight).
    """

    instance: Instance
    mode: Mode
    model: pyo.ConcreteModel
    shapes: list[Shape]
    units: list[_Unit]
    items: list[tuple[int, str, str, int]]
    stays: list[tuple[int, tuple[str, ...]]]
    accept: list[tuple[int, tuple[str, ...]]]
    fixed: dict[str, tuple[str, int]]
    options_of: dict[tuple[int, str], tuple[int, ...]]  # (shape, model name) -> its profile indices
    objectives: tuple[str, ...]
    stats: dict[str, int] = field(default_factory=dict)
    relaxed: frozenset[str] = frozenset()
    profiles: dict[str, str] = field(default_factory=dict)  # the last decode's, memory-sized workloads

    def expression(self, name: str) -> pyo.Expression:
        return self.model.obj_expr[name]

    def host_of(self, var: Any) -> str | None:
        """The host whose GPUs, items or power ``var`` decides; None for the acceptance
        classes (:mod:`mipopt.exact.lns` frees a host's variables together)."""
        name, index = var.parent_component().local_name, var.index()
        if name == "N":
            return self.units[index[0]].host
        if name == "K":
            return self.units[self.stays[index][0]].host
        if name == "X":
            return self.items[index][1]
        if name == "Z":
            return str(index[2])
        return str(index) if name == "PHI" else None

    # --- reading a placement back

    def decode(self, prefer: Placed | None = None) -> dict[str, tuple[str, int]]:
        """The placement in the model's current values: workload -> (GPU, start), as close to
        ``prefer`` (the placement the solve started from) as those values allow.

        Per unit, configurations go to GPUs (in the aggregated variant by an assignment that
        keeps the most running workloads on their own starts, which are then held there);
        stayers stay; a shape's counted items on a host go to
        its leavers from that host first, then to other leavers, then to accepted new
        workloads; each GPU's content is indexed keeping the most running workloads on
        their own starts (:func:`~mipopt.exact.preprocess.indexing.index_keeping`). The
        profile of each memory-sized workload is the item's it fills (:attr:`profiles`).
        With ``prefer``, the accepted workloads and the stayers of a class are those it places
        first, and each goes to its GPU there before any other: where the values did not
        change, neither does the content of a GPU, so its running workloads keep their starts.
        """
        prefer = prefer or {}
        m = self.model
        config_of: dict[str, Vector] = {}
        stayers: dict[str, list[str]] = defaultdict(list)  # gpu -> running workloads kept there
        held: dict[str, dict[str, tuple[int, int]]] = {}  # gpu -> running workloads kept on their starts
        for k, unit in enumerate(self.units):
            chosen = [c for c in range(len(unit.configs)) for _ in range(_count(m.N[k, c]))]
            if self.mode == "aggregate":
                held.update(self._assign_keeping(unit, [unit.configs[c] for c in chosen], config_of))
                continue
            # a unit's GPUs are alike (named: one GPU): any takes any of its configurations
            config_of.update(zip(unit.gpus, (unit.configs[c] for c in chosen), strict=False))
            if unit.kept:
                for gpu_id, c in zip(unit.gpus, chosen, strict=False):
                    held[gpu_id] = self._kept_stayers(unit.model, unit.stayers, gpu_id, unit.kept[c])
        for k, (u, members) in enumerate(self.stays):
            gpu = self.units[u].gpus[0]
            first = held.get(gpu, {})  # the kept variant's kept stayers first, then the preferred's
            ordered = sorted(members, key=lambda w: (w not in first, prefer.get(w, ("", 0))[0] != gpu))
            stayers[gpu].extend(ordered[: _count(m.K[k])])
        quota: dict[tuple[int, str, str, int], int] = {
            key: _count(m.X[k]) for k, key in enumerate(self.items)
        }
        if self.mode in ("restricted", "keep"):
            for shape in self.shapes:
                for wid in shape.running:
                    stayers[home_gpu(self.instance, wid)].append(wid)
        elif self.mode == "aggregate":  # running workloads keep their GPU where its configuration has room
            self._aggregate_stayers(config_of, quota, stayers, held)
        return self._place(config_of, stayers, quota, held, prefer)

    def _assign_keeping(
        self, unit: _Unit, configs: list[Vector], config_of: dict[str, Vector]
    ) -> dict[str, dict[str, tuple[int, int]]]:
        """Aggregated variant: give the unit's chosen configurations to its GPUs, the GPUs with
        the most running delta first, each the configuration that keeps the most of it on their
        own starts; return, per GPU, the running workloads held there with (profile index, start)."""
        out: dict[str, dict[str, tuple[int, int]]] = {}
        left = list(configs)
        order = sorted(unit.gpus, key=lambda g: -sum(w.migration_weight for w in self._movable_on(g)))
        for gpu_id in order[: len(configs)]:
            gains = [self._keeps(unit.model, gpu_id, cfg) for cfg in left]
            best = max(range(len(left)), key=lambda i: gains[i][0])
            config_of[gpu_id] = left.pop(best)
            stayers = _stayers(unit.model, self._movable_on(gpu_id))
            out[gpu_id] = self._kept_stayers(unit.model, stayers, gpu_id, gains[best][1])
        return out

    def _keeps(self, model: GpuModel, gpu_id: str, config: Vector) -> tuple[float, frozenset[int]]:
        """The most delta of ``gpu_id``'s movable running workloads that ``config`` can hold on
        their own starts, and their positions in :func:`_stayers`: the keep variant's best option
        (kept set K, multiset around it) that contains ``config`` and whose K it contains."""
        running = self._movable_on(gpu_id)
        if not running:
            return 0.0, frozenset()
        stayers = _stayers(model, running)
        st = self._states[gpu_id]
        own = tuple(sorted(self._profiles_in_use[model.name] | {x[0] for x in stayers}))
        zeros = (0,) * len(model.profiles)
        best: tuple[float, frozenset[int]] = (0.0, frozenset())
        for vec, keep in _kept_options(model, st.mask, st.counts, st.media_used, own, zeros, stayers, True):
            delta = sum(stayers[x][2] for x in keep)
            if delta <= best[0] or any(a > b for a, b in zip(config, vec, strict=True)):
                continue
            need = list(zeros)
            for x in keep:
                need[stayers[x][0]] += 1
            if all(a >= b for a, b in zip(config, need, strict=True)):
                best = (delta, keep)
        return best

    def _movable_on(self, gpu_id: str) -> list[Workload]:
        return [w for w in self._running_on.get(gpu_id, ()) if w.id not in self.fixed]

    @functools.cached_property
    def _states(self) -> dict[str, FixedState]:
        return {st.gpu: st for st in fixed_states(self.instance, frozenset(self.fixed))}

    @functools.cached_property
    def _profiles_in_use(self) -> dict[str, set[int]]:
        out: dict[str, set[int]] = defaultdict(set)
        for (_, name), indices in self.options_of.items():
            out[name].update(indices)
        return out

    def _aggregate_stayers(
        self,
        config_of: dict[str, Vector],
        quota: dict[tuple[int, str, str, int], int],
        stayers: dict[str, list[str]],
        held: dict[str, dict[str, tuple[int, int]]],
    ) -> None:
        """Running workloads stay on their GPU where its configuration has room and their shape's
        items on the host are not used up: those the configuration holds on their own starts
        (``held``) first, then by delta; a held one that cannot stay is no longer held."""
        inst = self.instance
        shape_of = {w: c for c, shape in enumerate(self.shapes) for w in shape.running}
        room = {g: list(c) for g, c in config_of.items()}
        kept = {w for ws in held.values() for w in ws}
        for w in sorted(
            (inst.workload(w) for s in self.shapes for w in s.running),
            key=lambda w: (w.id not in kept, -w.migration_weight),
        ):
            gpu = inst.gpu(home_gpu(self.instance, w.id))
            p = gpu.model.profiles.index(home_profile(inst, w))
            key = (shape_of[w.id], gpu.host, gpu.model.name, p)
            if gpu.id in room and room[gpu.id][p] > 0 and quota.get(key, 0) > 0:
                room[gpu.id][p] -= 1
                quota[key] -= 1
                stayers[gpu.id].append(w.id)
            elif w.id in kept:
                del held[gpu.id][w.id]

    @functools.cached_property
    def _running_on(self) -> dict[str, list[Workload]]:
        out: dict[str, list[Workload]] = defaultdict(list)
        for w in self.instance.running:
            if w.placement is not None:
                out[w.placement.gpu].append(w)
        return out

    def _kept_stayers(
        self, model: GpuModel, stayers: tuple[tuple[int, int, float], ...], gpu_id: str, kept: frozenset[int]
    ) -> dict[str, tuple[int, int]]:
        """The movable running workloads of ``gpu_id`` at positions ``kept`` of ``stayers`` (its
        :func:`_stayers`), with (profile index, start)."""
        out: dict[str, tuple[int, int]] = {}
        want = [stayers[i] for i in sorted(kept)]
        for w in self._running_on.get(gpu_id, ()):
            key = _stayer(model, w)
            if w.id not in self.fixed and key in want:
                want.remove(key)
                out[w.id] = key[:2]
        return out

    def _place(
        self,
        config_of: dict[str, Vector],
        stayers: dict[str, list[str]],
        quota: dict[tuple[int, str, str, int], int],
        held: dict[str, dict[str, tuple[int, int]]] | None = None,
        prefer: Placed | None = None,
    ) -> dict[str, tuple[str, int]]:
        inst = self.instance
        prefer = prefer or {}
        content: dict[str, list[tuple[str, int]]] = defaultdict(list)  # gpu -> (workload, profile)
        room = {g: list(c) for g, c in config_of.items()}
        for gpu_id, ws in stayers.items():
            model = inst.gpu(gpu_id).model
            for wid in ws:
                p = model.profiles.index(home_profile(inst, inst.workload(wid)))
                room[gpu_id][p] -= 1
                content[gpu_id].append((wid, p))
        by_host_model: dict[tuple[str, str], list[str]] = defaultdict(list)
        for g in inst.gpus:
            if g.id in room:
                by_host_model[g.host, g.model.name].append(g.id)
        stayed = {w for ws in stayers.values() for w in ws}

        def put(wid: str, key: tuple[int, str, str, int], prefer: str | None, only: bool = False) -> bool:
            _, host, model_name, p = key
            gpus = by_host_model[host, model_name]
            order = ([prefer] if prefer in gpus else []) + ([] if only else gpus)
            for gpu_id in order:
                if room[gpu_id][p] > 0:
                    room[gpu_id][p] -= 1
                    content[gpu_id].append((wid, p))
                    quota[key] -= 1
                    return True
            return False

        accepted: dict[int, list[str]] = defaultdict(list)
        for k, (c, members) in enumerate(self.accept):  # those the preferred placement accepts first
            ordered = sorted(members, key=lambda w: w not in prefer)
            accepted[c].extend(ordered[: _count(self.model.A[k])])
        leavers = {
            c: sorted(
                (inst.workload(w) for w in shape.running if w not in stayed),
                key=lambda w: -w.migration_weight,
            )
            for c, shape in enumerate(self.shapes)
        }

        keys_at: dict[tuple[int, str, str], list[tuple[int, str, str, int]]] = defaultdict(list)
        for key in quota:
            keys_at[key[:3]].append(key)

        def preferred(wid: str, c: int, host: str | None) -> bool:
            """``wid`` onto its GPU in the preferred placement, if that is on ``host`` (when given)."""
            at = prefer.get(wid)
            g = inst.gpu(at[0]) if at is not None else None
            if g is None or (host is not None and g.host != host):
                return False
            for key in keys_at[c, g.host, g.model.name]:
                if quota[key] > 0 and put(wid, key, g.id, True):
                    stayed.add(wid)
                    return True
            return False

        for c in range(len(self.shapes)):
            keys = [key for key in quota if key[0] == c]
            # leavers by weight, on their own host first (the same-host count Eq. 5 needs); each to
            # its preferred GPU when that key is open, else its own GPU's key
            for same_host in (True, False):
                for w in leavers[c]:
                    if w.id in stayed:
                        continue
                    home = inst.gpu(home_gpu(self.instance, w.id))
                    if preferred(w.id, c, home.host if same_host else None):
                        continue
                    for key in keys:
                        near = key[1] == home.host or not same_host
                        if quota[key] > 0 and near and put(w.id, key, home.id):
                            stayed.add(w.id)
                            break
            for wid in accepted[c]:
                if wid in stayed or preferred(wid, c, None):
                    continue
                for key in keys:
                    if quota[key] > 0 and put(wid, key, None):
                        break
        placed = dict(self.fixed)
        fixed_by_gpu: dict[str, dict[str, tuple[int, int]]] = defaultdict(dict)
        for wid, (gpu_id, start) in self.fixed.items():
            p = inst.gpu(gpu_id).model.profiles.index(home_profile(inst, inst.workload(wid)))
            fixed_by_gpu[gpu_id][wid] = (p, start)
        for gpu_id, kept in (held or {}).items():  # placed around: the model chose them
            fixed_by_gpu[gpu_id].update(kept)
            content[gpu_id] = [(wid, p) for wid, p in content[gpu_id] if wid not in kept]
            placed.update({wid: (gpu_id, start) for wid, (_, start) in kept.items()})
        for gpu_id, items in content.items():
            model = inst.gpu(gpu_id).model
            own_starts = {
                wid: w.placement.start
                for wid, _ in items
                if (w := inst.workload(wid)).placement is not None and w.placement.gpu == gpu_id
            }
            starts = index_keeping(model, fixed_by_gpu.get(gpu_id), items, own_starts)
            assert starts is not None, f"{gpu_id}: a configuration's content did not index"
            for wid, s in starts.items():
                placed[wid] = (gpu_id, s)
        self.profiles = {
            wid: inst.gpu(gpu_id).model.profiles[p].name
            for gpu_id, items in content.items()
            for wid, p in items
            if inst.workload(wid).memory_sized
        }
        return placed

    def _symmetric(self, placed: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
        """``placed`` with the contents of identical empty hosts in the order the symmetry rows want."""
        inst = self.instance
        on: dict[str, list[str]] = defaultdict(list)
        for wid, (gpu_id, _) in placed.items():
            on[gpu_id].append(wid)
        out = dict(placed)
        for cls in host_classes(inst):

            def gpus(host: str) -> list[str]:
                return sorted(inst.host(host).gpus, key=lambda g: inst.gpu(g).model.name)

            def active(host: str) -> int:
                return sum(1 for g in inst.host(host).gpus if on[g])

            order = sorted(cls.members, key=lambda h: -active(h))  # stable: ties keep instance order
            for target, source in zip(cls.members, order, strict=True):
                for g_to, g_from in zip(gpus(target), gpus(source), strict=True):
                    for wid in on[g_from]:
                        out[wid] = (g_to, placed[wid][1])
        return out

    # --- writing a placement in

    def warm_start(
        self, placed: dict[str, tuple[str, int]], profiles: dict[str, str] | None = None
    ) -> dict[str, float]:
        """Variable values (by name) that encode ``placed`` (with the ``profiles`` chosen for
        memory-sized workloads, the smallest that fits where not given); {} when this variant
        cannot hold it.

        A restricted model holds only placements that keep every movable running
        workload on its own GPU.
        """
        inst, m = self.instance, self.model
        chosen = profiles or {}
        placed = self._symmetric(placed)
        values: dict[str, float] = {}
        shape_of = {w: c for c, s in enumerate(self.shapes) for w in s.members()}
        stays_on = {w for _, members in self.stays for w in members}
        on_gpu: dict[str, list[str]] = defaultdict(list)
        for wid, (gpu_id, _) in placed.items():
            on_gpu[gpu_id].append(wid)
        if self.mode in ("restricted", "keep") and any(
            placed.get(w, ("", 0))[0] != home_gpu(self.instance, w) for s in self.shapes for w in s.running
        ):
            return {}
        for k, unit in enumerate(self.units):
            counts: dict[int, int] = defaultdict(int)
            for gpu_id in unit.gpus:
                held = [0] * len(unit.model.profiles)
                for wid in on_gpu.get(gpu_id, []):
                    if wid in self.fixed:
                        continue
                    held[profile_taken(inst, wid, unit.model, chosen)] += 1
                if not any(held) and not unit.forced:
                    continue
                fits = [
                    i
                    for i, cfg in enumerate(unit.configs)
                    if all(a >= b for a, b in zip(cfg, held, strict=True))
                ]
                if unit.kept:  # keep and kept variants: the fewest restarts for this content
                    staying = self._staying(unit, gpu_id, placed)
                    fits = sorted((i for i in fits if unit.kept[i] <= staying), key=lambda i: unit.costs[i])
                c = fits[0] if fits else None
                if c is None:
                    return {}
                counts[c] += 1
            for c in range(len(unit.configs)):
                values[m.N[k, c].name] = float(counts.get(c, 0))
        pool: dict[tuple[int, str, str, int], int] = defaultdict(int)
        landed: dict[tuple[int, str], int] = defaultdict(int)
        for wid, (gpu_id, _) in placed.items():
            if wid in self.fixed or wid not in shape_of:
                continue
            g = inst.gpu(gpu_id)
            home = inst.workload(wid).placement
            if self.mode in ("restricted", "keep") and home is not None:
                continue
            if (
                self.mode in ("detailed", "kept")
                and home is not None
                and home.gpu == gpu_id
                and wid in stays_on
            ):
                continue
            pool[shape_of[wid], g.host, g.model.name, profile_taken(inst, wid, g.model, chosen)] += 1
            if home is not None and inst.gpu(home.gpu).host == g.host:
                landed[shape_of[wid], g.host] += 1
        for k, key in enumerate(self.items):
            values[m.X[k].name] = float(pool.get(key, 0))
        for k, (u, members) in enumerate(self.stays):
            gpu = self.units[u].gpus[0]
            values[m.K[k].name] = float(sum(1 for w in members if placed.get(w, ("", 0))[0] == gpu))
        for k, (_, members) in enumerate(self.accept):
            values[m.A[k].name] = float(sum(1 for w in members if w in placed))
        if hasattr(m, "Z"):
            for key in m.Z:
                c, delta, host = key
                movers = sum(
                    1
                    for w in self.shapes[c].running
                    if inst.workload(w).migration_weight == delta
                    and inst.gpu(home_gpu(self.instance, w)).host == host
                    and w in placed
                    and placed[w][0] != home_gpu(self.instance, w)
                    and inst.gpu(placed[w][0]).host == host
                )
                values[m.Z[key].name] = float(min(movers, landed[c, host]))
                landed[c, host] -= int(values[m.Z[key].name])
        used = {gpu_id for gpu_id, _ in placed.values()}
        hosts = {inst.gpu(g).host for g in used}
        for h in inst.hosts:
            values[m.PHI[h.id].name] = 1.0 if h.id in hosts else 0.0
        return values

    def _staying(self, unit: _Unit, gpu_id: str, placed: dict[str, tuple[str, int]]) -> frozenset[int]:
        """Positions in ``unit.stayers`` of the GPU's running workloads that ``placed`` keeps on
        the GPU (at any start: an option keeping them on their own starts encodes the same
        content with fewer restarts, which the decoding then indexes)."""
        here = {
            _stayer(unit.model, w)
            for w in self._running_on.get(gpu_id, ())
            if placed.get(w.id, ("", 0))[0] == gpu_id
        }
        return frozenset(i for i, st in enumerate(unit.stayers) if st in here)


def _stayer(model: GpuModel, w: Workload) -> tuple[int, int, float]:
    """A running workload as the keep variant lists it: (profile index, start, delta)."""
    p = model.profiles.index(held_profile(model, w))
    assert w.placement is not None
    return (p, w.placement.start, w.migration_weight)


def _stayers(model: GpuModel, running: list[Workload]) -> tuple[tuple[int, int, float], ...]:
    """A GPU's running workloads as sorted :func:`_stayer` tuples."""
    return tuple(sorted(_stayer(model, w) for w in running))


def _keep_options(
    unit: _Unit,
    state: FixedState,
    own: set[int],
    stayers: tuple[tuple[int, int, float], ...],
    prune: bool = True,
) -> None:
    """The keep and kept variants' configurations of ``unit``: for each set K of its GPUs'
    stayers kept on their own starts, the maximal multisets around them (the others anywhere
    on the GPU), each with the restarts of the stayers not in K. With ``prune`` (the keep
    variant, where every stayer stays on the GPU) an option is left out when a larger kept set
    offers as much; not in the kept variant, where a stayer may leave and the larger set would
    hold it there."""
    key = (state.mask, state.counts, state.media_used, tuple(sorted(own)), unit.required)
    options = _kept_options(unit.model, *key, stayers, prune)
    unit.configs = tuple(vec for vec, _ in options)
    unit.kept = tuple(keep for _, keep in options)
    n = len(stayers)
    unit.costs = tuple(
        (sum(stayers[i][2] for i in range(n) if i not in keep), n - len(keep)) for _, keep in options
    )
    unit.stayers = stayers


@functools.lru_cache(maxsize=4096)
def _kept_options(
    model: GpuModel,
    mask: int,
    counts: tuple[int, ...],
    media_used: bool,
    own: tuple[int, ...],
    required: Vector,
    stayers: tuple[tuple[int, int, float], ...],
    prune: bool,
) -> tuple[tuple[Vector, frozenset[int]], ...]:
    """:func:`_keep_options`' (configuration, kept set) pairs of one GPU state, shared by the
    GPUs alike (many GPUs hold the same stayers at the same starts)."""
    n = len(stayers)
    totals: dict[frozenset[int], npt.NDArray[np.int_]] = {}  # kept set -> its configurations, a row each
    options: list[tuple[Vector, frozenset[int]]] = []
    for size in range(n, -1, -1):
        for subset in combinations(range(n), size):
            keep = frozenset(subset)
            held, held_counts, media = mask, list(counts), media_used
            for i in keep:
                p, start, _ = stayers[i]
                held |= model.profiles[p].slot_mask(start)
                held_counts[p] += 1
                media |= model.profiles[p].media_extension
            around = FixedState("", model, held, tuple(held_counts), media, ())
            found = []
            for c in maximal_multisets(model, around, own):
                total = list(c)
                for i in keep:
                    total[stayers[i][0]] += 1
                vec = tuple(total)
                if not all(a >= b for a, b in zip(vec, required, strict=True)):
                    continue
                found.append(vec)
                larger = (totals[keep | {i}] for i in range(n) if i not in keep and prune)
                if not any((rows >= vec).all(axis=1).any() for rows in larger):
                    options.append((vec, keep))
            totals[keep] = np.array(found, dtype=int).reshape(len(found), len(model.profiles))
    return tuple(options)


def _count(var: pyo.Var) -> int:
    return 0 if var.value is None else max(round(var.value), 0)


def build_config(
    instance: Instance,
    *,
    mode: Mode = "detailed",
    fixed: Iterable[str] | None = None,
    closed: Iterable[str] = (),
) -> ConfigModel:
    """Build the configuration model of ``instance`` in one of its four variants.

    Parameters
    ----------
    instance
        The instance.
    mode
        ``aggregate``, ``restricted``, ``detailed`` or ``keep`` (see the module docstring).
    fixed
        Running workloads held in place (their GPU and start); None for the pinned ones.
    closed
        GPUs that must stay off (empty GPUs only: the WPM compaction use case).

    Raises
    ------
    TooManyMultisets
        When a GPU type has more indexable multisets than the enumeration allows (the
        caller falls back to the slot model).
    """
    ids = fixed_ids(instance, fixed)
    fixed_at = {wid: at for wid, at in instance.current_placement().items() if wid in ids}
    m = pyo.ConcreteModel(name=f"grmu-config[{mode}][{instance.name}]")
    sets = _sets(instance, mode, ids, closed)
    _eq19_units_on(m, sets)
    _eq8_eq11_pool(m, sets)
    _eq12_eq16_spots(m, sets)
    _stay_spots(m, sets)
    _kept_stay(m, sets)
    _eq6_eq7_host_cpu_ram(m, sets, fixed_at)
    z_keys = _eq5_same_host_leavers(m, sets)
    _symmetry_identical_hosts(m, sets)
    relaxed = _eq3_eq5_objectives(m, sets, z_keys)
    stats = {
        "variables": m.nvariables(),
        "constraints": m.nconstraints(),
        "shapes": len(sets.shapes),
        "units": len(sets.units),
        "configurations": sum(len(u.configs) for u in sets.units),
    }
    return ConfigModel(
        instance,
        mode,
        m,
        sets.shapes,
        sets.units,
        sets.items,
        sets.stays,
        sets.accept,
        fixed_at,
        sets.options_of,
        tuple(name for name in m.obj_expr if name in OBJECTIVES),
        stats,
        relaxed,
    )


# --- the index sets (models/grmu.md, Sets)


@dataclass
class _Sets:
    """The index sets that the configuration model's rows share (``models/grmu.md``, Sets)."""

    instance: Instance
    mode: Mode
    shapes: list[Shape]
    options_of: dict[tuple[int, str], tuple[int, ...]]  # (shape, model name) -> its profile indices
    shape_of: dict[str, int]  # movable running workload -> its shape
    movable_on: dict[str, list[Workload]]  # GPU -> its movable running workloads
    units: list[_Unit]
    units_on: dict[str, list[int]]  # host -> its units
    stays: list[tuple[int, tuple[str, ...]]]  # stayer class: (named unit, members); detailed only
    items: list[tuple[int, str, str, int]]  # (shape, host, GPU model name, profile index)
    accept: list[tuple[int, tuple[str, ...]]]  # class of new workloads: (shape, members of one weight)

    @property
    def stay(self) -> bool:
        """Every movable running workload stays on its GPU (restricted and keep variants)."""
        return self.mode in ("restricted", "keep")

    def stay_profile(self, k: int) -> int:
        """The profile index, on its unit's model, of stayer class ``k``."""
        ui, members = self.stays[k]
        return self.units[ui].model.profiles.index(
            home_profile(self.instance, self.instance.workload(members[0]))
        )


def _sets(instance: Instance, mode: Mode, ids: frozenset[str], closed: Iterable[str]) -> _Sets:
    """Shapes, units and their configurations, stayer classes, items and classes of new workloads."""
    shapes, _ = movable_shapes(instance, ids)
    options_of = {
        (c, name): tuple(model.profiles.index(prof) for prof in options)
        for c, s in enumerate(shapes)
        for name, model in instance.models.items()
        if (options := profile_options(instance, s.example, model))
    }
    movable_on: dict[str, list[Workload]] = defaultdict(list)
    for s in shapes:
        for wid in s.running:
            w = instance.workload(wid)
            assert w.placement is not None
            movable_on[w.placement.gpu].append(w)
    units = _units(instance, mode, ids, closed, options_of, movable_on)
    units_on: dict[str, list[int]] = {h.id: [] for h in instance.hosts}
    for k, u in enumerate(units):
        units_on[u.host].append(k)
    host_models = {(g.host, g.model.name) for g in instance.gpus}
    items = [
        (c, host, name, p)
        for c in range(len(shapes))
        for host, name in sorted(host_models)
        for p in options_of.get((c, name), ())
    ]
    return _Sets(
        instance,
        mode,
        shapes,
        options_of,
        {w: c for c, s in enumerate(shapes) for w in s.running},
        movable_on,
        units,
        units_on,
        _stayer_classes(instance, units, movable_on),
        items,
        [(c, tuple(ws)) for c, s in enumerate(shapes) for ws in s.new.values()],
    )


def _units(
    instance: Instance,
    mode: Mode,
    ids: frozenset[str],
    closed: Iterable[str],
    options_of: dict[tuple[int, str], tuple[int, ...]],
    movable_on: dict[str, list[Workload]],
) -> list[_Unit]:
    """The units: named GPUs (detailed, movable running workloads on them) or counted groups."""
    states = {s.gpu: s for s in fixed_states(instance, ids)}
    profiles: dict[str, set[int]] = {name: set() for name in instance.models}  # in use, per model
    for (_, name), indices in options_of.items():
        profiles[name].update(indices)
    stay = mode in ("restricted", "keep")  # every movable running workload stays on its GPU
    units: list[_Unit] = []
    groups: dict[tuple[object, ...], list[str]] = defaultdict(list)
    shut = set(closed)
    for g in instance.gpus:
        if g.id in shut:
            continue
        st = states[g.id]
        held = [0] * len(g.model.profiles)
        if stay:
            for w in movable_on[g.id]:
                held[g.model.profiles.index(home_profile(instance, w))] += 1
        if mode in ("detailed", "kept") and movable_on[g.id]:
            configs = maximal_multisets(g.model, st, profiles[g.model.name])
            unit = _Unit(g.host, g.model, (g.id,), configs, tuple(held), bool(st.workloads), True)
            if mode == "kept":
                stayers = _stayers(g.model, movable_on[g.id])
                _keep_options(unit, st, profiles[g.model.name], stayers, prune=False)
            units.append(unit)
            continue
        key: tuple[object, ...] = (g.host, g.model.name, st.mask, st.counts, st.media_used, tuple(held))
        if mode == "keep":  # and the stayers' own starts and weights
            key += (_stayers(g.model, movable_on[g.id]),)
        groups[key].append(g.id)
    for key, members in groups.items():
        host, required = str(key[0]), cast(Vector, key[5])
        first = instance.gpu(members[0])
        state = states[first.id]
        own = profiles[first.model.name] | {p for p, n in enumerate(required) if n}
        configs = tuple(
            c
            for c in maximal_multisets(first.model, state, own)
            if all(a >= b for a, b in zip(c, required, strict=True))
        )
        forced = bool(state.workloads) or any(required)
        unit = _Unit(host, first.model, tuple(members), configs, required, forced, False)
        if mode == "keep" and any(required):
            _keep_options(unit, state, own, cast(tuple[tuple[int, int, float], ...], key[6]))
        units.append(unit)
    return units


def _stayer_classes(
    instance: Instance, units: list[_Unit], movable_on: dict[str, list[Workload]]
) -> list[tuple[int, tuple[str, ...]]]:
    """The stayers of the named GPUs, per class of identical running workloads on one GPU."""
    stays: list[tuple[int, tuple[str, ...]]] = []
    for k, u in enumerate(units):
        if not u.named:
            continue
        classes: dict[object, list[str]] = defaultdict(list)
        for w in movable_on[u.gpus[0]]:
            classes[placement_key(instance, w), w.weight, w.migration_weight].append(w.id)
        stays.extend((k, tuple(ws)) for ws in classes.values())
    return stays


# --- the rows, one function per family (models/grmu.md, Constraints)


def _active(m: pyo.ConcreteModel, sets: _Sets, k: int) -> Any:
    """Sum over c of N[k, c]: the GPUs of unit ``k`` that are on."""
    return sum(m.N[k, c] for c in range(len(sets.units[k].configs)))


def _eq19_units_on(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """Eq. 19, ``unit_active``: a unit's GPUs are on only on an active host, and all of them where forced."""
    units = sets.units
    m.N = pyo.Var(
        [(k, c) for k, u in enumerate(units) for c in range(len(u.configs))],
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _m, k, _c: (0, len(units[k].gpus)),
    )
    m.PHI = pyo.Var([h.id for h in sets.instance.hosts], domain=pyo.Binary)
    m.unit_active = pyo.ConstraintList()
    for k, u in enumerate(units):
        size = len(u.gpus)
        if u.forced:  # pinned instances or stayers
            m.unit_active.add(_active(m, sets, k) == size)
            m.PHI[u.host].fix(1)
        else:
            m.unit_active.add(_active(m, sets, k) <= size * m.PHI[u.host])


def _eq8_eq11_pool(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """Eqs. 8-11, ``pool``: per shape, the items X are the accepted new workloads A plus the leavers."""
    stays, accept, items = sets.stays, sets.accept, sets.items
    m.K = pyo.Var(
        range(len(stays)), domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, len(stays[k][1]))
    )
    m.A = pyo.Var(
        range(len(accept)), domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, len(accept[k][1]))
    )
    supply_max = [len(s.running) + sum(len(ws) for ws in s.new.values()) for s in sets.shapes]
    m.X = pyo.Var(
        range(len(items)), domain=pyo.NonNegativeIntegers, bounds=lambda _m, k: (0, supply_max[items[k][0]])
    )
    m.pool = pyo.ConstraintList()
    items_of: dict[int, list[int]] = defaultdict(list)
    for k, (c, *_) in enumerate(items):
        items_of[c].append(k)
    stays_of: dict[int, list[int]] = defaultdict(list)
    for k, (_, members) in enumerate(stays):
        stays_of[sets.shape_of[members[0]]].append(k)
    for c, shape in enumerate(sets.shapes):
        accepted = sum(m.A[k] for k, (cc, _) in enumerate(accept) if cc == c)
        if sets.mode in ("detailed", "kept"):
            leavers = sum(len(stays[k][1]) - m.K[k] for k in stays_of[c])
        elif sets.mode == "aggregate":
            leavers = len(shape.running)
        else:
            leavers = 0
        m.pool.add(sum(m.X[k] for k in items_of[c]) == accepted + leavers)


def _eq12_eq16_spots(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """Eqs. 12-16 and 20, ``spots``: per host, model and profile, items and named stayers within the offer."""
    m.spots = pyo.ConstraintList()
    offer: dict[tuple[str, str, int], list[object]] = defaultdict(list)
    for k, u in enumerate(sets.units):
        for c, cfg in enumerate(u.configs):
            for p, n in enumerate(cfg):
                if n - u.required[p] > 0:
                    offer[u.host, u.model.name, p].append((n - u.required[p]) * m.N[k, c])
    demand: dict[tuple[str, str, int], list[object]] = defaultdict(list)
    for k, (_, host, name, p) in enumerate(sets.items):
        demand[host, name, p].append(m.X[k])
    for k, (ui, _) in enumerate(sets.stays):
        unit = sets.units[ui]
        demand[unit.host, unit.model.name, sets.stay_profile(k)].append(m.K[k])
    for key, terms in demand.items():
        m.spots.add(sum(terms) <= sum(offer.get(key, [])))  # type: ignore[arg-type]


def _stay_spots(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """``stay_spots``: a named GPU's stayers of one profile fit the configuration the GPU chooses."""
    m.stay_spots = pyo.ConstraintList()
    classes: dict[tuple[int, int], list[int]] = defaultdict(list)  # (unit, profile) -> stayer classes
    for k, (ui, _) in enumerate(sets.stays):
        classes[ui, sets.stay_profile(k)].append(k)
    for (ui, pi), ks in classes.items():
        configs = sets.units[ui].configs
        m.stay_spots.add(
            sum(m.K[k] for k in ks) <= sum(cfg[pi] * m.N[ui, c] for c, cfg in enumerate(configs) if cfg[pi])
        )


def _kept_stay(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """``kept_stay`` (kept variant): a named GPU's stayers of one class include those its option keeps."""
    if sets.mode != "kept":
        return
    m.kept_stay = pyo.ConstraintList()
    for k, (ui, members) in enumerate(sets.stays):
        unit = sets.units[ui]
        positions = {unit.stayers.index(_stayer(unit.model, sets.instance.workload(w))) for w in members}
        kept = [(len(keep & positions), c) for c, keep in enumerate(unit.kept)]
        if any(n for n, _ in kept):
            m.kept_stay.add(m.K[k] >= sum(n * m.N[ui, c] for n, c in kept if n))


def _eq6_eq7_host_cpu_ram(m: pyo.ConcreteModel, sets: _Sets, fixed_at: dict[str, tuple[str, int]]) -> None:
    """Eqs. 6-7, ``eq6_cpu`` and ``eq7_ram``: per host, items and stayers within what is not held."""
    instance, items, stays = sets.instance, sets.items, sets.stays
    m.eq6_cpu = pyo.ConstraintList()
    m.eq7_ram = pyo.ConstraintList()
    items_at: dict[str, list[int]] = defaultdict(list)
    for k, (_, host, *_) in enumerate(items):
        items_at[host].append(k)
    stays_at: dict[str, list[int]] = defaultdict(list)
    for k, (ui, _) in enumerate(stays):
        stays_at[sets.units[ui].host].append(k)
    held_at: dict[str, list[Workload]] = defaultdict(list)
    for wid, (gid, _) in fixed_at.items():
        held_at[instance.gpu(gid).host].append(instance.workload(wid))
    for h in instance.hosts:
        for cap, attr, cons in ((h.cpu, "cpu", m.eq6_cpu), (h.ram_gb, "ram_gb", m.eq7_ram)):
            if cap is None:
                continue
            held_amount = sum(getattr(w, attr) for w in held_at[h.id])
            if sets.stay:
                held_amount += sum(getattr(w, attr) for gid in h.gpus for w in sets.movable_on[gid])
            need: list[tuple[float, pyo.Var]] = [
                (getattr(sets.shapes[items[k][0]].example, attr), m.X[k]) for k in items_at[h.id]
            ]
            need += [(getattr(instance.workload(stays[k][1][0]), attr), m.K[k]) for k in stays_at[h.id]]
            need = [(a, v) for a, v in need if a > 0]
            if need:
                cons.add(sum(a * v for a, v in need) <= cap - held_amount)


def _eq5_same_host_leavers(m: pyo.ConcreteModel, sets: _Sets) -> list[tuple[int, float, str]]:
    """Eq. 5, ``Z``: leavers that land on their own host (2 delta, not 4); returns Z's keys."""
    stays = sets.stays
    leavers_of: dict[tuple[int, float, str], list[int]] = defaultdict(list)  # -> stayer classes
    for k, (ui, members) in enumerate(stays):
        first = sets.instance.workload(members[0])
        leavers_of[sets.shape_of[members[0]], first.migration_weight, sets.units[ui].host].append(k)
    hosts_of_shape = {(c, host) for c, host, *_ in sets.items}
    z_keys = [key for key in leavers_of if key[1] > 0 and (key[0], key[2]) in hosts_of_shape]
    m.Z = pyo.Var(
        z_keys,
        domain=pyo.NonNegativeIntegers,
        bounds=lambda _m, *key: (0, sum(len(stays[k][1]) for k in leavers_of[key])),
    )
    m.eq5_same_host_leavers = pyo.ConstraintList()
    m.eq5_same_host_slots = pyo.ConstraintList()
    items_on: dict[tuple[int, str], list[int]] = defaultdict(list)  # (shape, host) -> items
    for k, (c, host, *_) in enumerate(sets.items):
        items_on[c, host].append(k)
    by_shape_host: dict[tuple[int, str], list[tuple[int, float, str]]] = defaultdict(list)
    for zk in z_keys:
        m.eq5_same_host_leavers.add(m.Z[zk] <= sum(len(stays[k][1]) - m.K[k] for k in leavers_of[zk]))
        by_shape_host[zk[0], zk[2]].append(zk)
    for (c, host), zks in by_shape_host.items():
        m.eq5_same_host_slots.add(sum(m.Z[zk] for zk in zks) <= sum(m.X[k] for k in items_on[c, host]))
    return z_keys


def _symmetry_identical_hosts(m: pyo.ConcreteModel, sets: _Sets) -> None:
    """``symmetry``: identical empty hosts are used in order, the one with most active GPUs first."""
    # a placement is permuted to this order by ConfigModel.warm_start
    m.symmetry = pyo.ConstraintList()
    for cls in host_classes(sets.instance):
        busy = [sum(_active(m, sets, k) for k in sets.units_on[h]) for h in cls.members]
        for a, b in zip(range(len(busy)), range(1, len(busy)), strict=False):
            m.symmetry.add(m.PHI[cls.members[a]] >= m.PHI[cls.members[b]])
            if sets.units_on[cls.members[a]]:
                m.symmetry.add(busy[a] >= busy[b])


# --- the objectives (models/grmu.md, Objectives)


def _eq3_eq5_objectives(
    m: pyo.ConcreteModel, sets: _Sets, z_keys: list[tuple[int, float, str]]
) -> frozenset[str]:
    """Eqs. 3-5, restarts and the budget's measures as ``m.obj_expr``; returns those that are lower bounds."""
    instance, mode = sets.instance, sets.mode
    acceptance = sum(w.weight for w in instance.running) + sum(
        instance.workload(members[0]).weight * m.A[k] for k, (_, members) in enumerate(sets.accept)
    )
    hardware = sum(
        h.weight * (m.PHI[h.id] + sum(_active(m, sets, k) for k in sets.units_on[h.id]))
        for h in instance.hosts
    )
    exprs: dict[str, Any] = {"acceptance": acceptance, "hardware": hardware}
    if mode in ("detailed", "kept"):
        exprs.update(_eq5_leavers_moved(m, sets, z_keys))
    if mode == "kept":
        exprs.update(_kept_restarts(m, sets))
    elif mode == "restricted":
        exprs.update(migrations=0.0, restarts=0.0, restarted=0.0, moved_memory_gb=0.0)
    elif mode == "keep":
        exprs.update(_keep_restarts(m, sets))
    exact = {"keep": ("restarts", "restarted", "moved_memory_gb"), "kept": ("restarts", "restarted")}
    relaxed = frozenset(
        n for n in ("restarts", "restarted", "moved_memory_gb") if n in exprs and n not in exact.get(mode, ())
    )
    if not any(s.running for s in sets.shapes):  # every running workload held in place: nothing moves
        exprs.update(migrations=0.0, restarts=0.0, restarted=0.0, moved_memory_gb=0.0)
        relaxed = frozenset()
    m.obj_expr = pyo.Expression(list(exprs), rule=lambda _m, name: exprs[name])
    return relaxed


def _eq5_leavers_moved(
    m: pyo.ConcreteModel, sets: _Sets, z_keys: list[tuple[int, float, str]]
) -> dict[str, Any]:
    """Eq. 5 (4 delta a leaver, 2 delta back per Z), and restarts and measures of the leavers only."""
    instance, stays = sets.instance, sets.stays
    migrations = sum(
        4 * instance.workload(ms[0]).migration_weight * (len(ms) - m.K[k]) for k, (_, ms) in enumerate(stays)
    ) - sum(2 * key[1] * m.Z[key] for key in z_keys)
    # start changes on a GPU are decided by the decoding, so these are lower bounds (``relaxed``)
    leaving = [(instance.workload(ms[0]), len(ms) - m.K[k]) for k, (_, ms) in enumerate(stays)]
    return {
        "migrations": migrations,
        "restarts": sum(w.migration_weight * n for w, n in leaving),
        "restarted": sum(n for _, n in leaving),
        "moved_memory_gb": sum(leaver_memory(instance, w)[0] * n for w, n in leaving),
    }


def _keep_restarts(m: pyo.ConcreteModel, sets: _Sets) -> dict[str, Any]:
    """The keep variant's restarts: per chosen configuration, its GPU's stayers off their own starts."""
    # exact for the placements that keep every running workload on its GPU
    moved = [(cost, m.N[k, c]) for k, u in enumerate(sets.units) for c, cost in enumerate(u.costs) if cost[1]]
    return {
        "migrations": 0.0,
        "restarts": sum(cost[0] * n for cost, n in moved),
        "restarted": sum(cost[1] * n for cost, n in moved),
        "moved_memory_gb": 0.0,
    }


def _kept_restarts(m: pyo.ConcreteModel, sets: _Sets) -> dict[str, Any]:
    """The kept variant's restarts: per named GPU, its movable running workloads less those its
    chosen option keeps on their own starts (all of them when the GPU is off)."""
    restarts: list[Any] = []
    restarted: list[Any] = []
    for k, u in enumerate(sets.units):
        if not u.named:
            continue
        delta = sum(st[2] for st in u.stayers)
        restarts.append(delta - sum((delta - cost[0]) * m.N[k, c] for c, cost in enumerate(u.costs)))
        n = len(u.stayers)
        restarted.append(n - sum((n - cost[1]) * m.N[k, c] for c, cost in enumerate(u.costs)))
    return {"restarts": sum(restarts), "restarted": sum(restarted)}
