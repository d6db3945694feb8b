"""The graph planner: rounds from a dependency graph, cycles broken by parking or, failing that, draining.

Semantics ``create-first`` (the default; the IBM paper's non-disruptive migration): a move
creates its target instance before it destroys its source, so while it runs the workload
holds both. Move (or create) A **waits for** move B when A's target slots overlap B's
source slots on one GPU: B must have left before A can be created. These waits form a
directed graph (networkx). Without cycles, a move can run in the round after the last
move it waits for, and the rounds are the graph's layers (longest path).

A **cycle** of waits (two 3g instances swapping starts, a ring across GPUs, or a move onto
its own slots) cannot run as it stands. It is broken by *parking*: some workloads of the
cycle first move to free space (slots free now that no move needs later), which frees their
sources; they go on to their targets in a later round. The parked set is a feedback vertex
set of the cycle's strongly connected component with the fewest members that have no free
space to park in, then the fewest members, then the least memory (exact by enumeration for
components of up to ``EXACT_FVS_NODES`` moves, greedy above). Components others wait for
are parked first. A workload of that set for which no free space exists is **drained**
instead (destroyed, then restored at its target: a disruptive move) and named in the plan,
unless the space it could use was taken by another park of the round: then it waits for
that space to come back (cycles take turns on the free space rather than drain).

Rules the graph does not see (per-profile limits, the one ``+me`` set, host cpu and ram
while a workload is held twice) are checked when a round is filled: each round takes, in
order of the longest chain of waits behind them, every pending move whose target fits the
round's largest state. If none fits, one more workload is parked (a breaker first, else
the mover most others wait for), or drained when none can park.

No disruption if avoidable comes first: when a plan drains, variants are planned too and
the best kept (drains, then rounds, then parks): new workloads created only after every
running one has reached its target (an early create may take the room a park needs), and
no drain before the plan is stuck (moves may free room to park in).

Semantics ``destroy-first``: every move is drained and restored in a single round (all
sources are destroyed, then every target is created): one round, every move disruptive.

**Parks under a budget** (:class:`ParkLimit`). A park restarts its workload once more than the
target needs (it is relocated twice), and one on another GPU moves its memory across GPUs on
the way. Given a limit on parks and on the GB they add, a breaker parks only while both hold,
and is drained otherwise (a drain restarts the workload once, at its target): so a plan
without parks, whatever its drains, always exists.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

import networkx as nx

from mipopt.instance import Instance, Workload
from mipopt.migrate.plan import Create, Drain, Move, Round, Semantics
from mipopt.state.occupancy import Occupancy, Spot, move_kind

__all__ = ["EXACT_FVS_NODES", "Key", "ParkLimit", "graph_rounds", "plan_key"]

#: Largest strongly connected component whose minimum feedback vertex set is found by enumeration.
EXACT_FVS_NODES = 12


@dataclass(frozen=True, slots=True)
class ParkLimit:
    """How much parking a plan may do: at most ``parks`` parks, adding at most ``gb`` GB moved
    between GPUs (a park on another GPU and the way on to the target, less the direct way);
    None: no limit."""

    parks: int | None = None
    gb: float | None = None


class _Planner:
    """State of one graph planning run (see the module docstring)."""

    def __init__(
        self,
        instance: Instance,
        target: dict[str, Spot],
        creates_last: bool = False,
        patient: bool = False,
        limit: ParkLimit | None = None,
    ) -> None:
        self.instance = instance
        self.target = target
        self.limit = limit or ParkLimit()
        self.parks = 0  # made so far, and the GB they added: held within ``limit``
        self.park_gb = 0.0
        self.creates_last = creates_last  # new workloads wait until every running one is at its target
        self.patient = patient  # no drain before the plan is stuck: moves may free space to park in
        current = instance.current_placement()
        self.at: dict[str, Spot | None] = {
            w.id: current.get(w.id) for w in instance.workloads if w.id in target
        }
        # pending: every workload not yet at its target (movers, new workloads), in file order
        self.pending = dict.fromkeys(wid for wid in self.at if self.at[wid] != target[wid])
        self.occ = Occupancy(instance, ((wid, spot) for wid, spot in current.items()))
        self.parked: set[str] = set()
        self.drained: dict[str, Spot] = {}  # workload -> where it ran before its drain
        self.rounds: list[Round] = []
        self.rank = {w.id: i for i, w in enumerate(instance.workloads)}  # ties go to file order
        self.breakers: list[str] = []  # the feedback vertex sets of the waits graph's cycles
        # Between parks and drains the waits graph only loses workloads that reached their
        # targets, and a pending workload's waiters cannot arrive before it leaves, so the
        # graph and the heights are rebuilt only after a round that parks or drains.
        self._graph: nx.DiGraph | None = None
        self._height: dict[str, int] | None = None
        # Whether a target fits depends only on its GPU and host: a workload that did not
        # fit is checked again only once a round has changed one of them.
        self.unfit: set[str] = set()
        self.by_gpu: dict[str, set[str]] = {}
        self.by_host: dict[str, set[str]] = {}
        for wid in self.pending:
            gpu_id = target[wid][0]
            self.by_gpu.setdefault(gpu_id, set()).add(wid)
            self.by_host.setdefault(instance.gpu(gpu_id).host, set()).add(wid)
        self.need: Counter[str] = Counter()  # GPU id -> slots pending workloads will need
        for wid in self.pending:
            if not (creates_last and not instance.workload(wid).running):
                self.need[target[wid][0]] |= self.occ.slots(wid, target[wid])

    # --- the graph

    def waits(self) -> nx.DiGraph:
        """Edges B -> A: pending A's target slots overlap pending mover B's slots now (cached)."""
        if self._graph is None:
            self._graph = self._waits()
        return self._graph

    def _waits(self) -> nx.DiGraph:
        graph = nx.DiGraph()
        graph.add_nodes_from(self.pending)
        by_gpu: dict[str, list[tuple[str, int]]] = {}
        for wid in self.pending:
            spot = self.at[wid]
            if spot is not None:
                by_gpu.setdefault(spot[0], []).append((wid, self.occ.slots(wid, spot)))
        for a in self.pending:
            gpu_id = self.target[a][0]
            bits = self.occ.slots(a, self.target[a])
            for b, held in by_gpu.get(gpu_id, ()):
                if bits & held:
                    graph.add_edge(b, a)
        return graph

    def memory(self, wid: str) -> int:
        spot = self.at[wid] or self.target[wid]
        profile = self.occ.profile(wid, spot[0])
        return profile.memory_slots if profile else 0

    def feedback_set(self, component: nx.DiGraph) -> list[str]:
        """A set of nodes whose removal leaves ``component`` acyclic.

        Fewest members without free space to park in now (each would be drained) first,
        then fewest members, then least memory; found by enumeration up to
        ``EXACT_FVS_NODES`` nodes, greedily above.
        """
        nodes = sorted(component, key=self._order)
        loops = [n for n in nodes if component.has_edge(n, n)]
        rest = [n for n in nodes if n not in loops]
        if len(nodes) <= EXACT_FVS_NODES:
            need = self.targeted()
            stay = {n for n in nodes if self.park_spot(n, self.occ, need) is None}  # would be drained
            parkable = sum(n not in stay for n in rest)
            best: tuple[int, int, int, list[str]] | None = None
            for k in range(len(rest) + 1):
                if best is not None and best[0] <= len(stay & set(loops)) + max(0, k - parkable):
                    break  # no larger set can drain fewer
                for subset in itertools.combinations(rest, k):
                    picked = set(loops) | set(subset)
                    if nx.is_directed_acyclic_graph(component.subgraph(n for n in nodes if n not in picked)):
                        cost = (len(picked & stay), k, sum(self.memory(n) for n in picked))
                        if best is None or cost < best[:3]:
                            best = (*cost, sorted(picked, key=self._order))
            if best is not None:
                return best[3]
        chosen: list[str] = list(loops)
        remaining = component.subgraph(rest).copy()
        while not nx.is_directed_acyclic_graph(remaining):
            # in file order, so that ties go the same way in every process (sets of strings do not)
            cyclic = sorted(
                (n for c in nx.strongly_connected_components(remaining) if len(c) > 1 for n in c),
                key=self._order,
            )
            n = max(cyclic, key=lambda n: (remaining.in_degree(n) * remaining.out_degree(n), -self.memory(n)))
            chosen.append(n)
            remaining.remove_node(n)
        return chosen

    def _order(self, wid: str) -> tuple[int, str]:
        return self.rank[wid], wid

    # --- parking

    def targeted(self) -> dict[str, int]:
        """GPU id -> slots that pending workloads will need (running ones only, when creates come last:
        new workloads are created once every park has moved on, so their slots may be parked on)."""
        return self.need

    def spare(self, state: Occupancy, need: dict[str, int]) -> list[str]:
        """GPUs with a slot free in ``state`` that no pending workload needs: where parking is possible."""
        masks = state.mask.tolist()
        return [
            g.id
            for k, g in enumerate(self.instance.gpus)
            if (masks[k] | need.get(g.id, 0)) != g.model.full_mask
        ]

    def park_spot(
        self, wid: str, state: Occupancy, need: dict[str, int], spare: list[str] | None = None
    ) -> Spot | None:
        """Free space for ``wid`` in ``state`` that no pending workload needs: same GPU, same host, others.

        ``spare``: :meth:`spare` of the same ``state`` and ``need``, when the caller asks for many workloads.
        """
        here = self.at[wid]
        assert here is not None
        host = self.instance.gpu(here[0]).host

        def rank(gpu_id: str) -> int:
            return 0 if gpu_id == here[0] else 1 if self.instance.gpu(gpu_id).host == host else 2

        if self.limit.parks is not None and self.parks >= self.limit.parks:
            return None
        for g in sorted(self.spare(state, need) if spare is None else spare, key=rank):
            profile = state.profile(wid, g)
            if profile is None:
                continue
            if self.limit.gb is not None and self.park_gb + self.extra_gb(wid, g) > self.limit.gb + 1e-9:
                continue
            taken = state.taken(g) | need.get(g, 0)
            for start, _ in profile.placements:
                if (
                    (g, start) != here
                    and not profile.slot_mask(start) & taken
                    and state.fits(wid, (g, start))
                ):
                    return g, start
        return None

    def extra_gb(self, wid: str, park: str) -> float:
        """GB moved between GPUs that parking ``wid`` on GPU ``park`` adds to its direct way."""
        here = self.at[wid]
        assert here is not None
        target = self.target[wid][0]

        def hop(a: str, b: str) -> float:
            profile = self.occ.profile(wid, b)
            return 0.0 if a == b or profile is None else profile.memory_gb

        return hop(here[0], park) + hop(park, target) - hop(here[0], target)

    # --- rounds

    def run(self) -> list[Round]:
        graph = self.waits()
        # cycles others wait for come first (sources of the condensation), so that free
        # space taken by a park is given back before a cycle downstream needs it
        condensed = nx.condensation(graph)
        first = {c: min(self._order(n) for n in condensed.nodes[c]["members"]) for c in condensed}
        self.breakers = [
            n
            for c in nx.lexicographical_topological_sort(condensed, key=first.__getitem__)
            for comp in [condensed.nodes[c]["members"]]
            if len(comp) > 1 or graph.has_edge(*(2 * tuple(comp)))
            for n in self.feedback_set(graph.subgraph(comp))
        ]
        self.fill(self.breakers, defer=True)
        while self.pending:
            if not self.fill([]):
                self.fill([self.stuck()])
        return self.rounds

    def stuck(self) -> str:
        """No pending move fits: the mover to park (or, if none can park, to drain).

        A breaker not yet parked comes first, then the mover most others wait for (first
        in order among equals); the first of these that has free space and is the first
        or waited for is parked, else the first is drained.
        """
        graph = self.waits()
        movers = [w for w in self.pending if self.at[w] is not None and w not in self.drained]
        fresh = [w for w in movers if w not in self.parked] or movers
        ranked = [w for w in self.breakers if w in set(fresh)]
        ranked += sorted(fresh, key=lambda w: (-graph.out_degree(w), self._order(w)))
        need = self.targeted()
        spare = self.spare(self.occ, need)
        # Whether free space takes a workload depends only on its shape (its own slots are
        # taken), so a shape that found none is not searched again in this state.
        no_room: set[tuple[object, ...]] = set()
        for wid in ranked:
            if wid in self.parked or not (wid == ranked[0] or graph.out_degree(wid)):
                continue
            w = self.instance.workload(wid)
            shape = (w.sizing, w.cpu, w.ram_gb, w.gpu_models)
            if shape in no_room:
                continue
            if self.park_spot(wid, self.occ, need, spare) is not None:
                return wid
            no_room.add(shape)
        return ranked[0]

    def fill(self, breakers: list[str], defer: bool = False) -> bool:
        """One round: park or drain ``breakers``, then every pending move whose target fits. False if empty.

        With ``defer``, a breaker without free space is not drained when the space it
        could park in was taken by this round's parks: that space comes back once their
        cycles have moved, and :meth:`stuck` parks the breaker then (no disruption if
        avoidable). A ``patient`` planner defers every such drain.
        """
        peak = self.occ.copy()
        need = self.targeted()
        drains, moves, creates = [], [], []
        for wid in breakers:
            spot = self.park_spot(wid, peak, need) if wid not in self.parked else None
            source = self.at[wid]
            assert source is not None
            if spot is not None:
                peak.hold(wid, spot)
                moves.append(Move(wid, source, spot, move_kind(self.instance, source, spot), park=True))
                self.parks += 1  # a round with a park is always applied
                self.park_gb += self.extra_gb(wid, spot[0])
            elif defer and (self.patient or self.park_spot(wid, self.occ, need) is not None):
                continue  # this round's parks took the space it could park in: it parks later
            else:
                peak.release(wid, source)
                drains.append(Drain(wid, source))
        draining = {d.workload for d in drains}
        for d in drains:  # a drain frees its GPU before this round's creates
            self._recheck(d.source[0])
        busy = {m.workload for m in moves} | draining
        height = self.heights()
        running = self.creates_last and any(self.instance.workload(w).running for w in self.pending)
        candidates = [w for w in self.pending if w not in self.unfit or w in draining]
        for wid in sorted(candidates, key=lambda w: (-height[w], self._order(w))):
            if wid in busy and wid not in draining:
                continue
            if running and not self.instance.workload(wid).running:
                continue
            target = self.target[wid]
            if not peak.fits(wid, target):
                self.unfit.add(wid)
                continue
            peak.hold(wid, target)
            source = self.at[wid]
            if source is None or wid in draining:
                origin = self.drained.get(wid) or (source if wid in draining else None)
                kind = None if origin is None else move_kind(self.instance, origin, target)
                creates.append(Create(wid, target, origin, kind))
            else:
                moves.append(Move(wid, source, target, move_kind(self.instance, source, target)))
        if not (drains or moves or creates):
            return False
        self.apply(Round(tuple(drains), tuple(moves), tuple(creates)))
        return True

    def heights(self) -> dict[str, int]:
        """Per pending workload, the longest chain of pending workloads waiting behind it (cached)."""
        if self._height is None:
            self._height = self._heights()
        return self._height

    def _heights(self) -> dict[str, int]:
        graph = self.waits().copy()
        graph.remove_edges_from(list(nx.selfloop_edges(graph)))
        height = dict.fromkeys(graph, 0)
        if nx.is_directed_acyclic_graph(graph):
            for n in reversed(list(nx.topological_sort(graph))):
                height[n] = max((height[s] + 1 for s in graph.successors(n)), default=0)
        return height

    def _recheck(self, gpu_id: str) -> None:
        """Targets on ``gpu_id`` or its host may fit now."""
        self.unfit -= self.by_gpu.get(gpu_id, set())
        self.unfit -= self.by_host.get(self.instance.gpu(gpu_id).host, set())

    def apply(self, rnd: Round) -> None:
        touched = {d.source[0] for d in rnd.drains} | {c.target[0] for c in rnd.creates}
        touched |= {spot[0] for m in rnd.moves for spot in (m.source, m.target)}
        for gpu_id in touched:
            self._recheck(gpu_id)
        if rnd.drains or any(m.park for m in rnd.moves):
            self._graph = self._height = None
        for d in rnd.drains:
            self.occ.release(d.workload, d.source)
            self.drained[d.workload] = d.source
            self.at[d.workload] = None
        for c in rnd.creates:
            self.occ.hold(c.workload, c.target)
            self.at[c.workload] = c.target
        for m in rnd.moves:
            self.occ.hold(m.workload, m.target)
            self.occ.release(m.workload, m.source)
            self.at[m.workload] = m.target
            if m.park:
                self.parked.add(m.workload)
        for wid in [c.workload for c in rnd.creates] + [m.workload for m in rnd.moves if not m.park]:
            if self.at[wid] == self.target[wid]:
                del self.pending[wid]
                self.need[self.target[wid][0]] &= ~self.occ.slots(
                    wid, self.target[wid]
                )  # targets are disjoint
        self.rounds.append(rnd)


def graph_rounds(
    instance: Instance, target: dict[str, Spot], semantics: Semantics, limit: ParkLimit | None = None
) -> list[Round]:
    """The rounds of the graph planner (module docstring) from ``instance``'s running state to ``target``.

    ``target`` maps every workload to place (running ones included) to its (GPU id, start);
    it must be a valid placement (the caller verifies it). ``limit`` bounds the parks (a
    breaker beyond it is drained).
    """
    if semantics == "destroy-first":
        current = instance.current_placement()
        movers = [wid for wid, spot in current.items() if target[wid] != spot]
        drains = tuple(Drain(wid, current[wid]) for wid in movers)
        creates = tuple(
            Create(
                wid,
                spot,
                current.get(wid),
                move_kind(instance, current[wid], spot) if wid in current else None,
            )
            for wid, spot in target.items()
            if current.get(wid) != spot
        )
        return [Round(drains, (), creates)] if drains or creates else []
    rounds = _Planner(instance, target, limit=limit).run()
    if any(r.drains for r in rounds) and _room_can_appear(instance, target):
        # Drains may be avoidable in another order: new workloads created early may take
        # the space or host capacity a park needs, and moves may free space to park in.
        # Disruption comes first, so the variants are tried and the best plan kept.
        fresh = any(c.source is None for r in rounds for c in r.creates)
        early = bool(rounds[0].drains)
        variants = [(last, patient) for last in (False, fresh) for patient in (False, early)]
        tried = dict.fromkeys(v for v in variants if v != (False, False))
        plans = [_Planner(instance, target, last, patient, limit).run() for last, patient in tried]
        rounds = min([rounds, *plans], key=lambda plan: plan_key(instance, plan)[:3])
    return rounds


def _room_can_appear(instance: Instance, target: dict[str, Spot]) -> bool:
    """Whether a workload could ever park: a moving workload has a legal start on slots the target leaves free.

    A slot the target fills is, at every moment, either held by the workload that ends
    there or needed by it, so it is never free space to park in. When no moving
    workload fits the slots the target leaves free, no order of the moves avoids a
    drain, and the variants are not tried.
    """
    final: Counter[str] = Counter()
    for wid, (gpu_id, start) in target.items():
        profile = instance.profile_on(instance.workload(wid), instance.gpu(gpu_id).model)
        assert profile is not None
        final[gpu_id] |= profile.slot_mask(start)
    current = instance.current_placement()
    shapes: dict[tuple[object, ...], Workload] = {}  # one moving workload per (profile, allowed models)
    for wid, spot in current.items():
        if target[wid] != spot:
            w = instance.workload(wid)
            shapes.setdefault((w.sizing, w.gpu_models), w)
    for g in instance.gpus:
        for w in shapes.values():
            profile = instance.profile_on(w, g.model)
            if profile is not None and any(not profile.slot_mask(s) & final[g.id] for s in profile.starts):
                return True
    return False


#: A plan's objectives in order: drains, rounds, parks, memory relocated (GB).
Key = tuple[int, int, int, float]


def plan_key(instance: Instance, rounds: Iterable[Round]) -> Key:
    """The lexicographic objectives of a plan: drains, rounds, parks, GB relocated."""
    drains = parks = count = 0
    gb = 0.0
    for r in rounds:
        count += 1
        drains += len(r.drains)
        parks += sum(1 for m in r.moves if m.park)
        moved = [(m.workload, m.target) for m in r.moves]
        moved += [(c.workload, c.target) for c in r.creates if c.source is not None]
        for wid, (gpu_id, _) in moved:
            profile = instance.profile_on(instance.workload(wid), instance.gpu(gpu_id).model)
            assert profile is not None
            gb += profile.memory_gb
    return drains, count, parks, gb
