"""The hindsight optimum of a trace: the most acceptance any placement could reach, knowing the future.

For a trace whose arrivals and departures are all known, :func:`hindsight_optimum` finds the
maximum weighted acceptance (GRMU Eq. 3 over the requests) of any placement over the whole trace,
as a time-expanded model: an accepted request holds an instance from its arrival to its
departure (accepted at arrival or never: no queue), and the cluster changes only at events.
Dividing an online policy's acceptance by it gives the policy's competitive ratio on that trace
(``benchmarks/bench_hindsight.py``). Two variants (``models/hindsight.md``):

* ``migrations="free"``: at every event the alive instances may be re-arranged at no cost, so the
  accepted set only has to be packable at every instant. Only the instants right after arrivals
  followed by a departure matter (the maximal cliques of the requests' intervals: every alive set
  is contained in one, and packability is closed under removal). Per such *epoch* and per GPU type
  (model and pinned content), the configuration model's ideas (``models/grmu.md``) count GPUs per
  maximal indexable multiset of profiles: ``x[e, t, c]`` GPUs of type t in configuration c, and per
  model and profile the alive accepted requests are at most the spots the configurations offer.
* ``migrations="forbidden"``: an instance keeps its GPU and start for its whole life: a slot model
  over time, a binary per (request, GPU, legal start), and per epoch and GPU the slot, compute,
  per-profile and ``+me`` rules over the requests alive then (pairwise-overlapping intervals share
  an instant, so the epochs' rows are exact). Identical empty GPUs are first used in order, and
  the free optimum bounds it (solved first, ``free_bound``).

The cluster's running workloads stay where they are in both variants (they hold their GPU's slots
throughout, like pinned ones); host cpu and ram are not modelled, so a trace whose requests need
them on a host that limits them is refused.

Every epoch's state comes back as a concrete placement (``Epoch.placement``): for ``free`` the
configurations are spread over GPUs, requests over their spots, and starts found per GPU by the
exact indexing search (:func:`~mipopt.exact.preprocess.indexing.index_keeping`, keeping the
previous epoch's starts where it can); for ``forbidden`` the one whole-trace placement restricted
to the requests alive. The tests check every epoch with the independent verifier.
"""

from __future__ import annotations

import math
import time
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

import numpy as np
import pyomo.environ as pyo

from mipopt.catalog import GpuModel
from mipopt.errors import InstanceError
from mipopt.exact.preprocess.candidates import FixedState, fixed_states
from mipopt.exact.preprocess.indexing import index_keeping, maximal_multisets
from mipopt.instance import Instance, Status, Termination
from mipopt.solvers import get_backend
from mipopt.solvers.base import SolverOptions, relative_gap
from mipopt.solvers.stop import GRACE_S

__all__ = ["MIGRATIONS", "Epoch", "HindsightResult", "epochs_of", "hindsight_optimum"]

Migrations = Literal["free", "forbidden"]
MIGRATIONS: tuple[Migrations, ...] = ("free", "forbidden")
SOLVERS = ("highs", "cpsat")
Placed = dict[str, tuple[str, int]]


class RequestLike(Protocol):
    """What the model reads of a request (:class:`mipopt.instance.trace.Request`)."""

    @property
    def id(self) -> str: ...
    @property
    def profile(self) -> str | None: ...
    @property
    def arrival(self) -> float: ...
    @property
    def departure(self) -> float: ...
    @property
    def cpu(self) -> float: ...
    @property
    def ram_gb(self) -> float: ...
    @property
    def weight(self) -> float: ...
    @property
    def gpu_models(self) -> tuple[str, ...] | None: ...


class TraceLike(Protocol):
    """What the model reads of a trace (:class:`mipopt.instance.trace.Trace`, a layer above)."""

    @property
    def name(self) -> str: ...
    @property
    def cluster(self) -> Instance: ...
    @property
    def requests(self) -> Sequence[RequestLike]: ...


@dataclass(frozen=True, slots=True)
class Epoch:
    """One maximal set of requests alive together, and where the optimum holds them.

    Attributes
    ----------
    time
        An arrival time right after which these requests are alive (departures at that time
        already left).
    alive
        Ids of the *accepted* requests alive then, in trace order.
    placement
        Workload id -> (GPU id, start) of the accepted requests alive and the cluster's running
        workloads: a state of the cluster to verify.
    """

    time: float
    alive: tuple[str, ...]
    placement: Mapping[str, tuple[str, int]]


@dataclass(frozen=True, slots=True)
class HindsightResult:
    """The hindsight optimum of a trace, or the best found and a bound.

    Attributes
    ----------
    value
        Acceptance (the accepted requests' weights summed) of the best placement found; None
        without one.
    bound
        Upper bound on the optimum: the solver's, rounded down to the values acceptance can take
        when every weight is an integer, at most the weight of every request; None without a
        solution.
    gap
        ``(bound - value) / value``; 0 when proven.
    status
        ``optimal`` (proven), ``feasible`` (value and bound) or ``none``.
    accepted
        Ids of the accepted requests, in trace order.
    epochs
        Every epoch (maximal clique of alive requests), in time order, with its placement; for
        ``free``, the first epochs only when the time limit ends the decoding of the answer into
        placements (``stats["epochs"]`` counts them all, ``message`` says so).
    placement
        ``forbidden``: the whole-trace placement, request id -> (GPU, start); ``free``: None.
    stats
        Sizes: requests, epochs, variables, constraints, configurations (``free``).
    """

    trace: str
    migrations: str
    solver: str
    status: Status
    termination: Termination
    value: float | None
    bound: float | None
    gap: float | None
    accepted: tuple[str, ...]
    epochs: tuple[Epoch, ...]
    placement: Mapping[str, tuple[str, int]] | None
    runtime_s: float
    message: str = ""
    stats: dict[str, int] = field(default_factory=dict)

    @property
    def proven(self) -> bool:
        return self.status is Status.OPTIMAL

    def to_dict(self) -> dict[str, Any]:
        return {
            "trace": self.trace,
            "migrations": self.migrations,
            "solver": self.solver,
            "status": self.status.value,
            "termination": self.termination.value,
            "value": self.value,
            "bound": self.bound,
            "gap": self.gap,
            "accepted": list(self.accepted),
            "runtime_s": self.runtime_s,
            "message": self.message,
            "stats": dict(self.stats),
        }


# --- epochs


def epochs_of(requests: Sequence[RequestLike]) -> list[tuple[float, list[int]]]:
    """The maximal cliques of the requests' intervals ``[arrival, departure)``, in time order.

    The alive set right after the arrivals at time t only grows until the next departure, so t
    is an epoch when a request alive at t leaves at or before the next arrival time (or t is the
    last arrival time). Returns ``(t, indices of the requests alive)`` per epoch.
    """
    times = sorted({r.arrival for r in requests})
    out: list[tuple[float, list[int]]] = []
    order = sorted(range(len(requests)), key=lambda i: requests[i].arrival)
    alive: list[int] = []
    k = 0
    for j, t in enumerate(times):
        alive = [i for i in alive if requests[i].departure > t]
        while k < len(order) and requests[order[k]].arrival <= t:
            alive.append(order[k])
            k += 1
        following = times[j + 1] if j + 1 < len(times) else math.inf
        if not math.isfinite(following) or any(requests[i].departure <= following for i in alive):
            out.append((t, sorted(alive)))
    return out


# --- checks


def _check(
    trace: TraceLike, migrations: str, solver: str, time_limit_s: float | None, threads: int | None
) -> None:
    if migrations not in MIGRATIONS:
        raise InstanceError("migrations", f"must be 'free' or 'forbidden', got {migrations!r}")
    if solver not in SOLVERS:
        raise InstanceError("solver", f"must be 'highs' or 'cpsat', got {solver!r}")
    if time_limit_s is not None and not time_limit_s > 0:
        raise InstanceError("time_limit_s", f"must be positive, got {time_limit_s!r}")
    if threads is not None and threads < 1:
        raise InstanceError("threads", f"must be at least 1, got {threads!r}")
    limits_cpu = any(h.cpu is not None for h in trace.cluster.hosts)
    limits_ram = any(h.ram_gb is not None for h in trace.cluster.hosts)
    for i, r in enumerate(trace.requests):
        for name, need, limited in (("cpu", r.cpu, limits_cpu), ("ram_gb", r.ram_gb, limits_ram)):
            if need > 0 and limited:
                raise InstanceError(
                    f"requests[{i}].{name}",
                    f"{need:g} on hosts that limit {name}: the hindsight optimum does not model host "
                    f"cpu and ram (drop the requests' {name} or the hosts' limits)",
                )
        if not (r.weight >= 0 and math.isfinite(r.weight)):
            raise InstanceError(f"requests[{i}].weight", f"must be finite and non-negative, got {r.weight!r}")


# --- the shared view of the cluster


@dataclass
class _Cluster:
    instance: Instance
    fixed: dict[str, FixedState]  # GPU id -> what the running workloads hold
    running: Placed
    profile: list[dict[str, int]]  # per request: model name -> profile index (eligible models only)
    epochs: list[tuple[float, list[int]]]  # epochs_of the requests, made once

    @classmethod
    def of(cls, trace: TraceLike) -> _Cluster:
        inst = trace.cluster
        running = inst.current_placement()
        fixed = {s.gpu: s for s in fixed_states(inst, running)}
        models = inst.models
        profile = []
        for i, r in enumerate(trace.requests):
            if r.profile is None:
                raise InstanceError(
                    f"requests[{i}].profile", "the hindsight model needs every request to name its profile"
                )
            allowed = {}
            for name, model in models.items():
                if r.gpu_models is not None and name not in r.gpu_models:
                    continue
                p = model.index(r.profile)
                if p is not None:
                    allowed[name] = p
            profile.append(allowed)
        return cls(inst, fixed, running, profile, epochs_of(trace.requests))


def _fits_fixed(model: GpuModel, fixed: FixedState, p: int, start: int) -> bool:
    """Whether an instance of profile ``p`` at ``start`` fits beside the GPU's running workloads alone."""
    q = model.profiles[p]
    compute = sum(c * pr.compute for c, pr in zip(fixed.counts, model.profiles, strict=True))
    return (
        not fixed.mask & q.slot_mask(start)
        and fixed.counts[p] < q.max_instances
        and not (fixed.media_used and q.media_extension)
        and compute + q.compute <= model.compute_slices
    )


# --- greedy placements without migrations: the warm starts of both variants


def _first_fit(
    trace: TraceLike, cl: _Cluster, only: set[int] | None = None, deadline: float | None = None
) -> Placed:
    """Requests in arrival order (departures first at equal times), each at the first GPU and legal
    start free then: a whole-trace placement with no migrations, feasible for both variants.
    ``only``: the request indices to try (the others are rejected); the requests arriving after
    ``deadline`` is passed are rejected too."""
    reqs = trace.requests
    gpus = cl.instance.gpus
    state: dict[str, list[Any]] = {}  # gpu -> [mask, counts, compute, media]
    for g in gpus:
        f = cl.fixed[g.id]
        compute = sum(c * pr.compute for c, pr in zip(f.counts, g.model.profiles, strict=True))
        state[g.id] = [f.mask, list(f.counts), compute, f.media_used]
    leaving: list[tuple[float, int]] = []
    out: Placed = {}
    for i, r in enumerate(reqs):
        if only is not None and i not in only:
            continue
        if deadline is not None and i % 32 == 0 and time.monotonic() > deadline:
            break
        leaving.sort()
        while leaving and leaving[0][0] <= r.arrival:
            _, j = leaving.pop(0)
            held, at = out[reqs[j].id]
            m = cl.instance.gpu(held).model
            pj = cl.profile[j][m.name]
            q, st = m.profiles[pj], state[held]
            st[0] &= ~q.slot_mask(at)
            st[1][pj] -= 1
            st[2] -= q.compute
            st[3] = st[3] and not q.media_extension
        for g in gpus:
            found = cl.profile[i].get(g.model.name)
            if found is None:
                continue
            p = found
            q, st = g.model.profiles[p], state[g.id]
            if (
                st[1][p] >= q.max_instances
                or (st[3] and q.media_extension)
                or st[2] + q.compute > g.model.compute_slices
            ):
                continue
            s = next((s for s in q.starts if not st[0] & q.slot_mask(s)), None)
            if s is None:
                continue
            st[0] |= q.slot_mask(s)
            st[1][p] += 1
            st[2] += q.compute
            st[3] = st[3] or q.media_extension
            out[r.id] = (g.id, s)
            leaving.append((r.departure, i))
            break
    return out


def _interval_greedy(
    trace: TraceLike, cl: _Cluster, order: Sequence[int], deadline: float | None = None
) -> Placed:
    """Requests in ``order`` (any order: a request's whole interval is checked), each at the first
    GPU and legal start that keeps every epoch of its life valid on that GPU: a placement without
    migrations. Sizes first or lifetimes first find more than arrival order on crowded traces.

    The state of every (GPU, epoch) (slots, instances per profile, compute, ``+me``) is kept in
    arrays per GPU model, so that a request is checked against all GPUs of a model at once over
    its life (a request is alive in consecutive epochs). At ``deadline`` the requests not yet
    tried are left out: the placement is still one without migrations, only smaller.
    """
    reqs = trace.requests
    epochs = cl.epochs
    life: dict[int, tuple[int, int]] = {}  # request -> its first epoch and the one after its last
    for e, (_, alive) in enumerate(epochs):
        for i in alive:
            life[i] = (life[i][0] if i in life else e, e + 1)
    groups = [_Group.of(cl, name, len(epochs)) for name in cl.instance.models]
    out: Placed = {}
    for n, i in enumerate(order):
        if deadline is not None and n % 32 == 0 and time.monotonic() > deadline:
            break
        if i not in life:
            continue
        e0, e1 = life[i]
        best: tuple[int, str, int, _Group, int] | None = None  # (cluster position, GPU, start, group, row)
        for group in groups:
            p = cl.profile[i].get(group.model.name)
            if p is None:
                continue
            found = group.first_fit(p, e0, e1)
            if found is not None and (best is None or group.position[found[0]] < best[0]):
                best = (group.position[found[0]], group.gpus[found[0]], found[1], group, found[0])
        if best is not None:
            _, gpu, start, group, row = best
            out[reqs[i].id] = (gpu, start)
            group.place(row, cl.profile[i][group.model.name], start, e0, e1)
    return out


@dataclass
class _Group:
    """The GPUs of one model over the epochs, for :func:`_interval_greedy`: per GPU and epoch the
    slots held (a bitmask), the instances per profile, the compute slices and whether ``+me`` is held."""

    model: GpuModel
    gpus: list[str]
    position: list[int]  # each GPU's place in the cluster's order
    mask: np.ndarray  # (GPUs, epochs)
    counts: np.ndarray  # (GPUs, epochs, profiles)
    compute: np.ndarray  # (GPUs, epochs)
    media: np.ndarray  # (GPUs, epochs)

    @classmethod
    def of(cls, cl: _Cluster, name: str, n_epochs: int) -> _Group:
        gpus = [(k, g) for k, g in enumerate(cl.instance.gpus) if g.model.name == name]
        model = gpus[0][1].model
        fixed = [cl.fixed[g.id] for _, g in gpus]
        shape = (len(gpus), n_epochs)
        computes = np.array(
            [sum(c * pr.compute for c, pr in zip(f.counts, model.profiles, strict=True)) for f in fixed]
        )
        return cls(
            model,
            [g.id for _, g in gpus],
            [k for k, _ in gpus],
            np.broadcast_to(np.array([f.mask for f in fixed], dtype=np.int64)[:, None], shape).copy(),
            np.broadcast_to(
                np.array([f.counts for f in fixed], dtype=np.int32)[:, None, :], (*shape, len(model.profiles))
            ).copy(),
            np.broadcast_to(computes[:, None], shape).copy(),
            np.broadcast_to(np.array([f.media_used for f in fixed])[:, None], shape).copy(),
        )

    def first_fit(self, p: int, e0: int, e1: int) -> tuple[int, int] | None:
        """The first GPU (its row) and start where profile ``p`` fits from epoch ``e0`` to ``e1``."""
        q = self.model.profiles[p]
        used = np.bitwise_or.reduce(self.mask[:, e0:e1], axis=1)
        ok = (self.counts[:, e0:e1, p].max(axis=1) < q.max_instances) & (
            self.compute[:, e0:e1].max(axis=1) + q.compute <= self.model.compute_slices
        )
        if q.media_extension:
            ok &= ~self.media[:, e0:e1].any(axis=1)
        starts = q.starts
        fits = np.array([(used & q.slot_mask(s)) == 0 for s in starts]) & ok  # (starts, GPUs)
        rows = np.flatnonzero(fits.any(axis=0))
        if not len(rows):
            return None
        row = int(rows[0])
        return row, starts[int(np.argmax(fits[:, row]))]

    def place(self, row: int, p: int, start: int, e0: int, e1: int) -> None:
        q = self.model.profiles[p]
        self.mask[row, e0:e1] |= q.slot_mask(start)
        self.counts[row, e0:e1, p] += 1
        self.compute[row, e0:e1] += q.compute
        if q.media_extension:
            self.media[row, e0:e1] = True


def _best_greedy(
    trace: TraceLike, cl: _Cluster, only: set[int] | None = None, deadline: float | None = None
) -> Placed:
    """The heaviest of first fit over time and interval greedy placements in several orders
    (restricted to ``only`` when given, e.g. the requests the free optimum accepts); at
    ``deadline`` the orders not yet tried are skipped and the one under way is cut short."""
    reqs = trace.requests
    pool = [i for i in range(len(reqs)) if only is None or i in only]
    size = {
        i: max((cl.instance.models[n].profiles[p].memory_slots for n, p in cl.profile[i].items()), default=0)
        for i in pool
    }
    orders = [
        sorted(pool, key=lambda i: (-size[i], i)),
        sorted(pool, key=lambda i: (-(min(reqs[i].departure, 1e18) - reqs[i].arrival) * size[i], i)),
        sorted(pool, key=lambda i: (-reqs[i].weight, i)),
    ]
    candidates = [_first_fit(trace, cl, only, deadline)]
    for order in orders:
        if deadline is not None and time.monotonic() > deadline:
            break
        candidates.append(_interval_greedy(trace, cl, order, deadline))
    weight = {r.id: r.weight for r in reqs}
    return max(candidates, key=lambda c: sum(weight[w] for w in c))


def _relabel(trace: TraceLike, cl: _Cluster, placed: Placed) -> Placed:
    """The same placement with identical empty GPUs renamed in order of first use (arrival order),
    as the forbidden model's symmetry rows ask."""
    classes: dict[tuple[str, int, tuple[int, ...], bool], list[str]] = defaultdict(list)
    for g in cl.instance.gpus:
        f = cl.fixed[g.id]
        if not f.workloads:
            classes[(g.model.name, f.mask, f.counts, f.media_used)].append(g.id)
    first: dict[str, int] = {}
    for i, r in enumerate(trace.requests):
        if r.id in placed:
            first.setdefault(placed[r.id][0], i)
    rename: dict[str, str] = {}
    for gpus in classes.values():
        used = sorted((g for g in gpus if g in first), key=first.__getitem__)
        rename.update(zip(used, gpus, strict=False))
    return {w: (rename.get(g, g), s) for w, (g, s) in placed.items()}


# --- migrations free: configurations per epoch


@dataclass
class _Free:
    types: list[tuple[GpuModel, FixedState, list[str], tuple[tuple[int, ...], ...]]]
    classes: list[tuple[int, ...]]  # class -> request indices
    class_models: list[dict[str, int]]  # class -> model name -> profile index
    epochs: list[tuple[float, list[int]]]


def _build_free(trace: TraceLike, cl: _Cluster, model: pyo.ConcreteModel) -> _Free:
    reqs = trace.requests
    key_of: dict[tuple[tuple[str, int], ...], int] = {}
    class_of: list[int] = []
    members: list[list[int]] = []
    class_models: list[dict[str, int]] = []
    for i, allowed in enumerate(cl.profile):
        key = tuple(sorted(allowed.items()))
        if key not in key_of:
            key_of[key] = len(members)
            members.append([])
            class_models.append(dict(allowed))
        class_of.append(key_of[key])
        members[key_of[key]].append(i)
    used: dict[str, set[int]] = defaultdict(set)
    for allowed in cl.profile:
        for name, p in allowed.items():
            used[name].add(p)
    groups: dict[tuple[str, int, tuple[int, ...], bool], list[str]] = defaultdict(list)
    for g in cl.instance.gpus:
        s = cl.fixed[g.id]
        groups[(g.model.name, s.mask, s.counts, s.media_used)].append(g.id)
    types = []
    for gpus in groups.values():
        gpu = cl.instance.gpu(gpus[0])
        configs = tuple(
            c for c in maximal_multisets(gpu.model, cl.fixed[gpus[0]], sorted(used[gpu.model.name])) if any(c)
        )
        if configs:
            types.append((gpu.model, cl.fixed[gpus[0]], gpus, configs))
    epochs = cl.epochs

    n = len(reqs)
    model.Y = pyo.Var(range(n), domain=pyo.Binary)
    for i, allowed in enumerate(cl.profile):
        if not allowed:
            model.Y[i].fix(0)
    xkeys = [
        (e, t, c) for e in range(len(epochs)) for t, (_, _, _, cs) in enumerate(types) for c in range(len(cs))
    ]
    model.X = pyo.Var(xkeys, domain=pyo.NonNegativeIntegers, bounds=lambda m, e, t, c: (0, len(types[t][2])))
    ukeys = []
    alive_of: list[dict[int, list[int]]] = []  # epoch -> class -> alive request indices
    for e, (_, alive) in enumerate(epochs):
        by_class: dict[int, list[int]] = defaultdict(list)
        for i in alive:
            if cl.profile[i]:
                by_class[class_of[i]].append(i)
        alive_of.append(by_class)
        ukeys += [
            (e, k, name) for k in by_class if len(class_models[k]) > 1 for name in sorted(class_models[k])
        ]
    model.U = pyo.Var(
        ukeys, domain=pyo.NonNegativeIntegers, bounds=lambda m, e, k, name: (0, len(alive_of[e][k]))
    )
    model.rows = pyo.ConstraintList()
    for e in range(len(epochs)):
        for t, (_, _, gpus, cs) in enumerate(types):
            model.rows.add(pyo.quicksum(model.X[e, t, c] for c in range(len(cs))) <= len(gpus))
        demand: dict[tuple[str, int], list[Any]] = defaultdict(list)
        for k, alive in alive_of[e].items():
            ys = pyo.quicksum(model.Y[i] for i in alive)
            if len(class_models[k]) == 1:
                ((name, p),) = class_models[k].items()
                demand[(name, p)].append(ys)
            else:
                model.rows.add(pyo.quicksum(model.U[e, k, name] for name in class_models[k]) == ys)
                for name, p in class_models[k].items():
                    demand[(name, p)].append(model.U[e, k, name])
        for (name, p), terms in demand.items():
            spots = pyo.quicksum(
                cs[c][p] * model.X[e, t, c]
                for t, (m, _, _, cs) in enumerate(types)
                if m.name == name
                for c in range(len(cs))
                if cs[c][p]
            )
            model.rows.add(pyo.quicksum(terms) <= spots)
    model.obj = pyo.Objective(
        expr=pyo.quicksum(r.weight * model.Y[i] for i, r in enumerate(reqs)), sense=pyo.maximize
    )
    return _Free(types, [tuple(m) for m in members], class_models, epochs)


def _decode_free(
    trace: TraceLike,
    cl: _Cluster,
    model: pyo.ConcreteModel,
    f: _Free,
    accepted: set[int],
    deadline: float | None = None,
) -> list[Epoch]:
    """The answer's placement at every epoch, in time order; at ``deadline``, the epochs so far.

    Each epoch's configurations go to the GPUs of their type, a GPU keeping the one it had where
    the epoch still has it (any spread is valid; keeping one keeps its requests where they are,
    and a GPU whose content is unchanged needs no indexing search)."""
    reqs = trace.requests
    class_of = {i: k for k, m in enumerate(f.classes) for i in m}
    previous: Placed = {}
    before: dict[str, int] = {}  # GPU -> how many requests it held in the previous epoch
    had: dict[str, int] = {}  # GPU -> its configuration in the previous epoch
    out = []
    for e, (t_e, alive) in enumerate(f.epochs):
        if deadline is not None and time.monotonic() > deadline:
            break
        spots: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)  # (model, p) -> [(gpu, n)]
        for t, (m, _, gpus, cs) in enumerate(f.types):
            left = [round(pyo.value(model.X[e, t, c])) for c in range(len(cs))]
            given: dict[str, int] = {}
            for gpu in gpus:
                c = had.get(gpu)
                if c is not None and left[c] > 0:
                    given[gpu] = c
                    left[c] -= 1
            others = iter([c for c in range(len(cs)) for _ in range(left[c])])
            for gpu in gpus:
                if gpu not in given and (c := next(others, None)) is not None:
                    given[gpu] = c
            had.update(given)
            for gpu in (g for g in gpus if g not in given):
                had.pop(gpu, None)
            for gpu in gpus:
                if gpu not in given:
                    continue
                c = given[gpu]
                for p, count in enumerate(cs[c]):
                    if count:
                        spots[(m.name, p)].append((gpu, count))
        todo: dict[tuple[str, int], list[int]] = defaultdict(list)
        by_class: dict[int, list[int]] = defaultdict(list)
        for i in alive:
            if i in accepted:
                by_class[class_of[i]].append(i)
        for k, items in by_class.items():
            models = f.class_models[k]
            if len(models) == 1:
                ((name, p),) = models.items()
                todo[(name, p)] += items
                continue
            rest = list(items)
            for name in sorted(models):
                n = round(pyo.value(model.U[e, k, name]))
                todo[(name, models[name])] += rest[:n]
                rest = rest[n:]
            if rest:
                raise RuntimeError(f"epoch {e}: class {k} has {len(rest)} requests on no model")
        content: dict[str, list[tuple[str, int]]] = defaultdict(list)
        for (name, p), items in todo.items():
            # requests already on a GPU with a spot of their profile stay there first
            free = {gpu: n for gpu, n in spots[(name, p)]}
            later = []
            for i in items:
                home = previous.get(reqs[i].id)
                if home and free.get(home[0], 0) > 0:
                    free[home[0]] -= 1
                    content[home[0]].append((reqs[i].id, p))
                else:
                    later.append(i)
            for i in later:
                spot = next((g for g, n in free.items() if n > 0), None)
                if spot is None:
                    raise RuntimeError(f"epoch {e}: no spot of profile {p} on {name} left (decoding)")
                free[spot] -= 1
                content[spot].append((reqs[i].id, p))
        placed: Placed = dict(cl.running)
        for gpu, held in content.items():
            kept = {w: previous[w][1] for w, _ in held if w in previous and previous[w][0] == gpu}
            starts: dict[str, int] | None = kept
            if not (len(kept) == len(held) and before.get(gpu) == len(held)):
                # unless the GPU holds what it held, where it held it, search
                starts = index_keeping(cl.instance.gpu(gpu).model, cl.fixed[gpu], held, kept)
            if starts is None:
                raise RuntimeError(f"epoch {e}: the content of {gpu} cannot be indexed (decoding)")
            placed.update({w: (gpu, s) for w, s in starts.items()})
        previous = placed
        before = {gpu: len(held) for gpu, held in content.items()}
        ids = tuple(reqs[i].id for i in alive if i in accepted)
        out.append(Epoch(t_e, ids, placed))
    return out


def _start_free(
    trace: TraceLike, cl: _Cluster, model: pyo.ConcreteModel, f: _Free, placed: Placed
) -> dict[str, float]:
    """The warm start of the free model from a whole-trace placement: per epoch, each GPU's
    content in a configuration of its type that contains it."""
    reqs = trace.requests
    type_of = {gpu: t for t, (_, _, gpus, _) in enumerate(f.types) for gpu in gpus}
    class_of = {i: k for k, m in enumerate(f.classes) for i in m}
    start = {model.Y[i].name: float(reqs[i].id in placed) for i in range(len(reqs))}
    # variables not named start at 0 (a name costs Pyomo more than a lookup: name only what counts)
    counted: dict[tuple[Any, tuple[Any, ...]], float] = defaultdict(float)  # (X or U, index) -> value
    config_of: dict[tuple[int, tuple[int, ...]], int] = {}  # (type, content) -> a configuration holding it
    for e, (_, alive) in enumerate(f.epochs):
        content: dict[str, list[int]] = {}
        for i in alive:
            if reqs[i].id not in placed:
                continue
            gpu = placed[reqs[i].id][0]
            name = cl.instance.gpu(gpu).model.name
            vector = content.setdefault(gpu, [0] * len(cl.instance.gpu(gpu).model.profiles))
            vector[cl.profile[i][name]] += 1
            if (e, class_of[i], name) in model.U:
                counted[model.U, (e, class_of[i], name)] += 1
        for gpu, vector in content.items():
            t = type_of[gpu]
            key = (t, tuple(vector))
            if key not in config_of:  # contents repeat from epoch to epoch: search each once
                cs = f.types[t][3]
                config_of[key] = next(
                    c for c in range(len(cs)) if all(a <= b for a, b in zip(vector, cs[c], strict=True))
                )
            counted[model.X, (e, t, config_of[key])] += 1
    return start | {var[index].name: n for (var, index), n in counted.items()}


# --- migrations forbidden: slots over time


@dataclass
class _Forbidden:
    keys: list[tuple[int, str, int]]  # (request, GPU, start)
    epochs: list[tuple[float, list[int]]]


def _build_forbidden(trace: TraceLike, cl: _Cluster, model: pyo.ConcreteModel) -> _Forbidden:
    reqs = trace.requests
    inst = cl.instance
    # identical empty GPUs: the j-th of a class is first used by a request of index >= j
    rank: dict[str, int] = {}
    seen: dict[tuple[str, int, tuple[int, ...], bool], int] = defaultdict(int)
    for g in inst.gpus:
        s = cl.fixed[g.id]
        k = (g.model.name, s.mask, s.counts, s.media_used)
        rank[g.id] = seen[k] if not s.workloads else 0
        seen[k] += 1
    keys: list[tuple[int, str, int]] = []
    for i, allowed in enumerate(cl.profile):
        for g in inst.gpus:
            p = allowed.get(g.model.name)
            if p is None or rank[g.id] > i:
                continue
            keys += [
                (i, g.id, s) for s in g.model.profiles[p].starts if _fits_fixed(g.model, cl.fixed[g.id], p, s)
            ]
    model.Y = pyo.Var(range(len(reqs)), domain=pyo.Binary)
    model.W = pyo.Var(range(len(keys)), domain=pyo.Binary)
    by_request: dict[int, list[int]] = defaultdict(list)
    by_gpu: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))  # gpu -> request -> keys
    for j, (i, gid, _) in enumerate(keys):
        by_request[i].append(j)
        by_gpu[gid][i].append(j)
    model.rows = pyo.ConstraintList()
    for i in range(len(reqs)):
        model.rows.add(pyo.quicksum(model.W[j] for j in by_request[i]) == model.Y[i])
    epochs = cl.epochs
    done: set[tuple[str, tuple[int, ...]]] = set()
    for _, alive in epochs:
        for g in inst.gpus:
            here = [i for i in alive if i in by_gpu[g.id]]
            if len(here) < 2 or (g.id, tuple(here)) in done:
                continue
            done.add((g.id, tuple(here)))
            m, fixed = g.model, cl.fixed[g.id]
            js = [j for i in here for j in by_gpu[g.id][i]]
            for slot in range(m.slots):
                terms = [
                    j
                    for j in js
                    if m.profiles[cl.profile[keys[j][0]][m.name]].slot_mask(keys[j][2]) >> slot & 1
                ]
                if len({keys[j][0] for j in terms}) > 1:
                    model.rows.add(pyo.quicksum(model.W[j] for j in terms) <= 1)
            used = sum(c * pr.compute for c, pr in zip(fixed.counts, m.profiles, strict=True))
            ps = [cl.profile[i][m.name] for i in here]
            if sum(m.profiles[p].compute for p in ps) > m.compute_slices - used:
                model.rows.add(
                    pyo.quicksum(m.profiles[cl.profile[keys[j][0]][m.name]].compute * model.W[j] for j in js)
                    <= m.compute_slices - used
                )
            for p in set(ps):
                room = m.profiles[p].max_instances - fixed.counts[p]
                if ps.count(p) > room:
                    model.rows.add(
                        pyo.quicksum(
                            model.W[j] for i in here if cl.profile[i][m.name] == p for j in by_gpu[g.id][i]
                        )
                        <= room
                    )
            media = [i for i, p in zip(here, ps, strict=True) if m.profiles[p].media_extension]
            if len(media) > 1:
                model.rows.add(pyo.quicksum(model.W[j] for i in media for j in by_gpu[g.id][i]) <= 1)
    model.obj = pyo.Objective(
        expr=pyo.quicksum(r.weight * model.Y[i] for i, r in enumerate(reqs)), sense=pyo.maximize
    )
    return _Forbidden(keys, epochs)


# --- the solve

#: Share of the time limit of a ``forbidden`` solve for the ``free`` one that bounds it.
FREE_BOUND_SHARE = 0.4
#: Share of the time left (after the model is built) for the greedy warm starts.
GREEDY_SHARE = 0.2
#: Seconds the parts of a solve that no deadline can cut take, per request alive at an epoch
#: (the free model's build, warm start and decoding), and per such request and GPU (the forbidden
#: model's build), measured on a 2-core Xeon (FBK traces of 20 to 600 GPUs): what a trace costs
#: before the solver searches at all.
FREE_S_PER_ALIVE = 1.2e-5
FORBIDDEN_S_PER_ALIVE_GPU = 5e-5
#: Of the free model's share, what decoding its answer into placements takes (kept back from the solver).
DECODE_S_PER_ALIVE = 6e-6
#: Seconds of decoding per second the model took to build (1.5 at 200 GPUs on a loaded machine).
DECODE_PER_BUILD = 1.5
#: The most seconds of that work a trace may cost without a time limit (docs/limits.md).
MAX_HINDSIGHT_S = 3600.0


def _share(deadline: float | None, share: float) -> float | None:
    """The time ``share`` of what is left before ``deadline`` ends, or None without one."""
    return None if deadline is None else time.monotonic() + share * max(deadline - time.monotonic(), 0.0)


def _decode_s(cl: _Cluster, build_s: float) -> float:
    """Seconds to keep back for decoding the free answer: the estimate, or more on a machine
    slower than the estimate's (decoding takes about what building took, measured on a loaded
    one); and the time a solver may take to stop after its deadline (:data:`GRACE_S`)."""
    decode = max(DECODE_S_PER_ALIVE * sum(len(alive) for _, alive in cl.epochs), DECODE_PER_BUILD * build_s)
    return decode + GRACE_S


def _check_size(cl: _Cluster, migrations: str, free_bound: bool, time_limit_s: float | None) -> None:
    """Refuse a trace whose model would take longer to build and decode than the time limit (or
    :data:`MAX_HINDSIGHT_S` without one), before anything is built: no deadline cuts that work."""
    alive = sum(len(a) for _, a in cl.epochs)
    gpus = len(cl.instance.gpus)
    work = FREE_S_PER_ALIVE * alive if migrations == "free" or free_bound else 0.0
    if migrations == "forbidden":
        work += FORBIDDEN_S_PER_ALIVE_GPU * alive * gpus
    limit = MAX_HINDSIGHT_S if time_limit_s is None else time_limit_s
    if work > limit:
        what = "the time limit" if time_limit_s is not None else "the most hindsight takes (docs/limits.md)"
        raise InstanceError(
            "time_limit_s" if time_limit_s is not None else "trace",
            f"the {migrations} model of {len(cl.profile):,} requests over {len(cl.epochs):,} epochs on "
            f"{gpus:,} GPUs ({alive:,} request-epochs) takes about {work:,.0f} s to build and decode, more "
            f"than {what}, {limit:g} s: give a longer limit, fewer GPUs or a shorter trace",
        )


def hindsight_optimum(
    trace: TraceLike,
    *,
    migrations: Migrations = "free",
    time_limit_s: float | None = 60.0,
    threads: int | None = None,
    solver: str = "highs",
    seed: int = 0,
    free_bound: bool = True,
) -> HindsightResult:
    """The maximum weighted acceptance any placement reaches over ``trace``, knowing every arrival and departure.

    Parameters
    ----------
    trace
        A :class:`mipopt.instance.trace.Trace` (or anything with its ``name``, ``cluster`` and
        ``requests``). Its running workloads stay where they are; host cpu and ram are not
        modelled (requests needing them on hosts that limit them are refused).
    migrations
        ``"free"``: alive instances may be re-arranged at every event at no cost; ``"forbidden"``:
        an instance keeps its GPU and start from arrival to departure (module docstring).
    time_limit_s
        Wall-clock limit of the whole call (None: none): building, the greedy warm starts, the
        solve and decoding; at the limit the result holds the best placement found, the bound and
        the gap, status ``feasible``. A trace whose model alone takes longer to build and decode
        (estimated before anything is built, :data:`FREE_S_PER_ALIVE`) is refused.
    threads
        Solver threads (None: the solver's default).
    solver
        ``"highs"`` or ``"cpsat"``.
    seed
        The solver's random seed: the same seed and trace give the same result (without a time limit
        reached).
    free_bound
        ``forbidden`` only: solve the ``free`` variant first (within :data:`FREE_BOUND_SHARE` of
        the time limit; it is fast) and use its bound, since forbidding migrations never gains: the result's bound is
        at most it, and HiGHS stops as soon as it reaches it (``objective_target``).

    Returns
    -------
    HindsightResult

    Raises
    ------
    InstanceError
        On a bad argument or a trace the model does not handle, naming the parameter or request;
        naming ``time_limit_s`` (``trace`` without a limit: :data:`MAX_HINDSIGHT_S`) for a trace
        whose model takes longer to build and decode than the limit.

    Examples
    --------
    >>> from mipopt.workloads import fbk_trace
    >>> trace = fbk_trace(gpus=2, seed=1, lifetimes=4, demand=200)
    >>> result = hindsight_optimum(trace)
    >>> result.status.value, result.value == len(result.accepted)
    ('optimal', True)
    """
    _check(trace, migrations, solver, time_limit_s, threads)
    t0 = time.perf_counter()
    deadline = None if time_limit_s is None else time.monotonic() + time_limit_s
    cl = _Cluster.of(trace)
    _check_size(cl, migrations, free_bound, time_limit_s)
    upper: float | None = None
    free_accepted: set[int] | None = None
    if migrations == "forbidden" and free_bound:
        # its share of the limit, and at least what its model takes to build (within the limit)
        least = 1.5 * FREE_S_PER_ALIVE * sum(len(a) for _, a in cl.epochs)
        free = hindsight_optimum(
            trace,
            migrations="free",
            time_limit_s=None
            if time_limit_s is None
            else min(max(FREE_BOUND_SHARE * time_limit_s, least), time_limit_s),
            threads=threads,
            solver=solver,
            seed=seed,
        )
        upper = free.bound
        chosen = set(free.accepted)
        free_accepted = {i for i, r in enumerate(trace.requests) if r.id in chosen}
    model = pyo.ConcreteModel(name=f"hindsight-{migrations}")
    built_at = time.monotonic()
    built: _Free | _Forbidden = (
        _build_free(trace, cl, model) if migrations == "free" else _build_forbidden(trace, cl, model)
    )
    build_s = time.monotonic() - built_at
    stats = {
        "requests": len(trace.requests),
        "gpus": len(cl.instance.gpus),
        "epochs": len(built.epochs),
        "variables": sum(len(v) for v in model.component_objects(pyo.Var)),
        "constraints": len(model.rows),
    }
    if isinstance(built, _Free):
        stats["configurations"] = sum(len(cs) for *_, cs in built.types)
    cut = _share(deadline, GREEDY_SHARE)  # the greedy starts stop there, with what they placed
    greedy = _best_greedy(trace, cl, deadline=cut)
    if free_accepted:
        weight = {r.id: r.weight for r in trace.requests}
        greedy = max(
            greedy, _best_greedy(trace, cl, free_accepted, cut), key=lambda c: sum(weight[w] for w in c)
        )
    greedy = _relabel(trace, cl, greedy)
    if isinstance(built, _Free):
        warm = _start_free(trace, cl, model, built, greedy)
    else:
        index = {k: j for j, k in enumerate(built.keys)}
        warm = {
            model.Y[i].name: float(r.id in greedy) for i, r in enumerate(trace.requests)
        }  # W: 0 unless named
        for i, r in enumerate(trace.requests):
            if r.id in greedy:
                warm[model.W[index[(i, *greedy[r.id])]].name] = 1.0
    stats["greedy"] = len(greedy)
    if upper is not None:
        stats["free_bound"] = round(upper)
    target = upper if upper is not None and solver == "highs" else None
    options = SolverOptions(
        threads=threads,
        seed=seed,
        mip_rel_gap=0.0,
        warm_start=warm,
        # the free variant's answer is decoded into placements after the solve, within the limit
        deadline=deadline
        if deadline is None or not isinstance(built, _Free)
        else deadline - _decode_s(cl, build_s),
        objective_target=target,
    )
    res = get_backend(solver).solve(model, options)
    reqs = trace.requests
    if not res.has_solution:
        return HindsightResult(
            trace.name, migrations, solver, res.status, res.termination, None, res.bound, None, (), (), None,
            time.perf_counter() - t0, res.message, stats,
        )  # fmt: skip
    accepted = {i for i in range(len(reqs)) if pyo.value(model.Y[i]) > 0.5}
    value = float(sum(reqs[i].weight for i in accepted))
    placement: Placed | None = None
    message = res.message
    if isinstance(built, _Free):
        epochs = _decode_free(trace, cl, model, built, accepted, deadline)
        if len(epochs) < len(built.epochs):
            message += (
                f"; placements decoded for the first {len(epochs)} of {len(built.epochs)} epochs (time limit)"
            )
    else:
        placement = {}
        for j, (i, g, s) in enumerate(built.keys):
            if i in accepted and pyo.value(model.W[j]) > 0.5:
                placement[reqs[i].id] = (g, s)
        epochs = [
            Epoch(t, tuple(reqs[i].id for i in alive if i in accepted),
                  {**cl.running, **{reqs[i].id: placement[reqs[i].id] for i in alive if i in accepted}})
            for t, alive in built.epochs
        ]  # fmt: skip
    # every request accepted is a bound too (the solver may stop before it reports one)
    everything = float(sum(r.weight for r, allowed in zip(reqs, cl.profile, strict=True) if allowed))
    bound = min(b for b in (res.bound, everything, upper) if b is not None)
    if all(float(r.weight).is_integer() for r in reqs):
        bound = float(math.floor(bound + 1e-6))
    bound = max(bound, value)
    gap = relative_gap(value, bound)
    proven = res.status is Status.OPTIMAL or gap == 0.0
    return HindsightResult(
        trace=trace.name,
        migrations=migrations,
        solver=solver,
        status=Status.OPTIMAL if proven else Status.FEASIBLE,
        termination=res.termination,
        value=value,
        bound=value if proven else bound,
        gap=0.0 if proven else gap,
        accepted=tuple(reqs[i].id for i in sorted(accepted)),
        epochs=tuple(epochs),
        placement=placement,
        runtime_s=time.perf_counter() - t0,
        message=message,
        stats=stats,
    )
