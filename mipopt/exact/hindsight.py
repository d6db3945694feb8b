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

import pyomo.environ as pyo

from mipopt.catalog import GpuModel
from mipopt.errors import InstanceError
from mipopt.exact.preprocess.candidates import FixedState, fixed_states
from mipopt.exact.preprocess.indexing import index_keeping, maximal_multisets
from mipopt.instance import Instance, Status, Termination
from mipopt.solvers import get_backend
from mipopt.solvers.base import SolverOptions, relative_gap

__all__ = ["MIGRATIONS", "Epoch", "HindsightResult", "epochs_of", "hindsight_optimum"]

Migrations = Literal["free", "forbidden"]
MIGRATIONS: tuple[Migrations, ...] = ("free", "forbidden")
SOLVERS = ("highs", "cpsat")
Placed = dict[str, tuple[str, int]]


class RequestLike(Protocol):
    """What the model reads of a request (:class:`mipopt.workloads.trace.Request`)."""

    @property
    def id(self) -> str: ...
    @property
    def profile(self) -> str: ...
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
    """What the model reads of a trace (:class:`mipopt.workloads.trace.Trace`, a layer above)."""

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
        Every epoch (maximal clique of alive requests), in time order, with its placement.
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

    @classmethod
    def of(cls, trace: TraceLike) -> _Cluster:
        inst = trace.cluster
        running = inst.current_placement()
        fixed = {s.gpu: s for s in fixed_states(inst, running)}
        models = inst.models
        profile = []
        for r in trace.requests:
            allowed = {}
            for name, model in models.items():
                if r.gpu_models is not None and name not in r.gpu_models:
                    continue
                p = model.index(r.profile)
                if p is not None:
                    allowed[name] = p
            profile.append(allowed)
        return cls(inst, fixed, running, profile)


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


def _first_fit(trace: TraceLike, cl: _Cluster, only: set[int] | None = None) -> Placed:
    """Requests in arrival order (departures first at equal times), each at the first GPU and legal
    start free then: a whole-trace placement with no migrations, feasible for both variants.
    ``only``: the request indices to try (the others are rejected)."""
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


def _interval_greedy(trace: TraceLike, cl: _Cluster, order: Sequence[int]) -> Placed:
    """Requests in ``order`` (any order: a request's whole interval is checked), each at the first
    GPU and legal start that keeps every epoch of its life valid on that GPU: a placement without
    migrations. Sizes first or lifetimes first find more than arrival order on crowded traces."""
    reqs = trace.requests
    epochs = epochs_of(reqs)
    life: dict[int, list[int]] = defaultdict(list)
    for e, (_, alive) in enumerate(epochs):
        for i in alive:
            life[i].append(e)
    held: dict[tuple[str, int], list[tuple[int, int]]] = defaultdict(list)  # (gpu, epoch) -> [(p, start)]
    out: Placed = {}
    for i in order:
        for g in cl.instance.gpus:
            p = cl.profile[i].get(g.model.name)
            if p is None:
                continue
            m, f = g.model, cl.fixed[g.id]
            q = m.profiles[p]
            fixed_compute = sum(c * pr.compute for c, pr in zip(f.counts, m.profiles, strict=True))
            for start in q.starts:
                ok = True
                for e in life[i]:
                    mask, counts, compute, media = f.mask, list(f.counts), fixed_compute, f.media_used
                    for pp, ss in held[(g.id, e)]:
                        mask |= m.profiles[pp].slot_mask(ss)
                        counts[pp] += 1
                        compute += m.profiles[pp].compute
                        media = media or m.profiles[pp].media_extension
                    if (
                        mask & q.slot_mask(start)
                        or counts[p] >= q.max_instances
                        or (media and q.media_extension)
                        or compute + q.compute > m.compute_slices
                    ):
                        ok = False
                        break
                if ok:
                    out[reqs[i].id] = (g.id, start)
                    for e in life[i]:
                        held[(g.id, e)].append((p, start))
                    break
            if reqs[i].id in out:
                break
    return out


def _best_greedy(trace: TraceLike, cl: _Cluster, only: set[int] | None = None) -> Placed:
    """The heaviest of first fit over time and interval greedy placements in several orders
    (restricted to ``only`` when given, e.g. the requests the free optimum accepts)."""
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
    candidates = [_first_fit(trace, cl, only), *(_interval_greedy(trace, cl, o) for o in orders)]
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
    epochs = epochs_of(reqs)

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
    trace: TraceLike, cl: _Cluster, model: pyo.ConcreteModel, f: _Free, accepted: set[int]
) -> list[Epoch]:
    reqs = trace.requests
    class_of = {i: k for k, m in enumerate(f.classes) for i in m}
    previous: Placed = {}
    out = []
    for e, (t_e, alive) in enumerate(f.epochs):
        spots: dict[tuple[str, int], list[tuple[str, int]]] = defaultdict(list)  # (model, p) -> [(gpu, n)]
        for t, (m, _, gpus, cs) in enumerate(f.types):
            chosen = [c for c in range(len(cs)) for _ in range(round(pyo.value(model.X[e, t, c])))]
            for gpu, c in zip(gpus, chosen, strict=False):
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
            starts = index_keeping(cl.instance.gpu(gpu).model, cl.fixed[gpu], held, kept)
            if starts is None:
                raise RuntimeError(f"epoch {e}: the content of {gpu} cannot be indexed (decoding)")
            placed.update({w: (gpu, s) for w, s in starts.items()})
        previous = placed
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
    start |= {v.name: 0.0 for v in model.X.values()} | {v.name: 0.0 for v in model.U.values()}
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
                start[model.U[e, class_of[i], name].name] += 1
        for gpu, vector in content.items():
            t = type_of[gpu]
            cs = f.types[t][3]
            c = next(c for c in range(len(cs)) if all(a <= b for a, b in zip(vector, cs[c], strict=True)))
            start[model.X[e, t, c].name] += 1
    return start


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
    epochs = epochs_of(reqs)
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
        A :class:`mipopt.workloads.trace.Trace` (or anything with its ``name``, ``cluster`` and
        ``requests``). Its running workloads stay where they are; host cpu and ram are not
        modelled (requests needing them on hosts that limit them are refused).
    migrations
        ``"free"``: alive instances may be re-arranged at every event at no cost; ``"forbidden"``:
        an instance keeps its GPU and start from arrival to departure (module docstring).
    time_limit_s
        Wall-clock limit of the solve (None: none); at the limit the result holds the best
        placement found, the bound and the gap, status ``feasible``.
    threads
        Solver threads (None: the solver's default).
    solver
        ``"highs"`` or ``"cpsat"``.
    seed
        The solver's random seed: the same seed and trace give the same result (without a time limit
        reached).
    free_bound
        ``forbidden`` only: solve the ``free`` variant first (within the same time limit; it is
        fast) and use its bound, since forbidding migrations never gains: the result's bound is
        at most it, and HiGHS stops as soon as it reaches it (``objective_target``).

    Returns
    -------
    HindsightResult

    Raises
    ------
    InstanceError
        On a bad argument or a trace the model does not handle, naming the parameter or request.

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
    upper: float | None = None
    free_accepted: set[int] | None = None
    if migrations == "forbidden" and free_bound:
        free = hindsight_optimum(
            trace, migrations="free", time_limit_s=time_limit_s, threads=threads, solver=solver, seed=seed
        )
        upper = free.bound
        chosen = set(free.accepted)
        free_accepted = {i for i, r in enumerate(trace.requests) if r.id in chosen}
    cl = _Cluster.of(trace)
    model = pyo.ConcreteModel(name=f"hindsight-{migrations}")
    built: _Free | _Forbidden = (
        _build_free(trace, cl, model) if migrations == "free" else _build_forbidden(trace, cl, model)
    )
    stats = {
        "requests": len(trace.requests),
        "gpus": len(cl.instance.gpus),
        "epochs": len(built.epochs),
        "variables": sum(len(v) for v in model.component_objects(pyo.Var)),
        "constraints": len(model.rows),
    }
    if isinstance(built, _Free):
        stats["configurations"] = sum(len(cs) for *_, cs in built.types)
    greedy = _best_greedy(trace, cl)
    if free_accepted:
        weight = {r.id: r.weight for r in trace.requests}
        greedy = max(greedy, _best_greedy(trace, cl, free_accepted), key=lambda c: sum(weight[w] for w in c))
    greedy = _relabel(trace, cl, greedy)
    if isinstance(built, _Free):
        warm = _start_free(trace, cl, model, built, greedy)
    else:
        index = {k: j for j, k in enumerate(built.keys)}
        warm = {model.Y[i].name: float(r.id in greedy) for i, r in enumerate(trace.requests)}
        warm |= {v.name: 0.0 for v in model.W.values()}
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
        deadline=deadline,
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
    if isinstance(built, _Free):
        epochs = _decode_free(trace, cl, model, built, accepted)
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
        message=res.message,
        stats=stats,
    )
