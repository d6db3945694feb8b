"""The plan replay: a migration plan checked step by step, independently of the planner.

:func:`verify_plan` reads a plan's JSON form (``mipopt-plan`` version 1, as written by
``mipopt plan``) and replays it from the instance's running placements. It shares no
code with :mod:`mipopt.migrate`: it reads the JSON itself, keeps its own record of the
instances each workload holds, and checks each round's largest state with the rules of
:func:`mipopt.verifier.rules.check_state`, the verifier's own.

A round runs in three phases (``docs`` of :mod:`mipopt.migrate.plan`):

1. drain: each drained workload must be held at its ``from``; it is then down;
2. create: a move's workload must be held at its ``from`` and now holds ``to`` as well;
   a create without ``from`` makes a new workload (not running, never created before);
   a create with ``from`` restores a workload drained earlier or in this round, ``from``
   being where it ran. The state after this phase obeys every rule;
3. destroy: the moves' sources go.

Also: pinned workloads never move or drain; each move's and restore's ``kind`` is the one
its GPUs give; after the last round the held state equals ``final`` (and the target, when
given), no drained workload is left down, and ``disrupted`` names exactly the drained
workloads. The counts of the replay (:class:`PlanReport`) can be set beside the plan's own.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from mipopt.errors import InstanceError
from mipopt.instance import Instance
from mipopt.verifier.rules import Held, check_state

__all__ = ["KINDS", "PlanReport", "verify_plan"]

#: Kinds of relocation, as the replay computes them.
KINDS = ("intra_gpu", "inter_gpu", "inter_host")

Spot = tuple[str, int]


@dataclass(frozen=True, slots=True)
class PlanReport:
    """The replay's verdict on one plan, and its own counts.

    Attributes
    ----------
    moves
        Relocations of running workloads: moves (parks included) and restores of drained
        workloads.
    parks, drains, restores, creates
        Park moves, drains, restores, creates of new workloads.
    moves_by_kind
        Relocations by the kind their GPUs give (``intra_gpu``, ``inter_gpu``, ``inter_host``).
    moved_memory_slots, moved_memory_gb
        Memory of every relocation, sized on its target GPU's model.
    final
        Workload id -> (GPU id, start) held after the last round.
    disrupted
        The workloads drained, in the order of their drains, each once.
    """

    valid: bool
    violations: tuple[str, ...]
    rounds: int = 0
    moves: int = 0
    parks: int = 0
    drains: int = 0
    restores: int = 0
    creates: int = 0
    moves_by_kind: dict[str, int] = field(default_factory=dict)
    moved_memory_slots: int = 0
    moved_memory_gb: float = 0.0
    final: dict[str, Spot] = field(default_factory=dict)
    disrupted: tuple[str, ...] = ()

    @property
    def metrics(self) -> dict[str, float]:
        """The counts under the names of :func:`mipopt.migrate.plan_metrics`."""
        return {
            "rounds": self.rounds,
            "moves": self.moves,
            "extra_moves": self.parks,
            "disruptive_moves": self.drains,
            "creates": self.creates,
            "moved_memory_slots": self.moved_memory_slots,
            "moved_memory_gb": self.moved_memory_gb,
            **{f"moves_{k}": self.moves_by_kind.get(k, 0) for k in KINDS},
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "valid": self.valid,
            "violations": list(self.violations),
            "metrics": self.metrics,
            "final": [{"workload": w, "gpu": g, "start": s} for w, (g, s) in self.final.items()],
            "disrupted": list(self.disrupted),
        }


class _Malformed(Exception):
    """A plan whose shape the replay cannot read: the message names the JSON path."""


def verify_plan(instance: Instance, plan: Any, target: Mapping[str, Spot] | None = None) -> PlanReport:
    """Replay ``plan`` on ``instance`` round by round and check every step (module docstring).

    Parameters
    ----------
    instance
        Its running workloads are where the replay starts.
    plan
        The plan's JSON form (a dict); an object with a ``to_dict()`` method is read
        through it.
    target
        Workload id -> (GPU id, start) the plan must reach, when given.

    Returns
    -------
    PlanReport
        Valid when no step breaks a rule. Violations are one line each, naming the JSON
        path and phase: ``rounds[2].moves[0]: 'a' overlaps 'b' on GPU 'g0' during the
        create phase``. A plan whose shape cannot be read gets one violation and no counts.
    """
    if not isinstance(plan, dict) and callable(getattr(plan, "to_dict", None)):
        plan = plan.to_dict()
    try:
        instance = _at_chosen_profiles(instance, plan)
        return _Replay(instance, plan, target).run()
    except _Malformed as err:
        return PlanReport(False, (str(err),))


def _at_chosen_profiles(instance: Instance, plan: Any) -> Instance:
    """``instance`` with the new memory-sized workloads at the profiles the plan's ``final``
    names (:meth:`Instance.at_profiles`): the profiles its creates make."""
    final = plan.get("final") if isinstance(plan, dict) else None
    if not isinstance(final, list):
        return instance
    spots: dict[str, Spot] = {}
    profiles: dict[str, str] = {}
    for i, x in enumerate(final):
        if isinstance(x, dict) and "profile" in x:
            path = f"final[{i}]"
            wid = _str(x.get("workload"), f"{path}.workload")
            spots[wid] = _spot(x, path)
            profiles[wid] = _str(x["profile"], f"{path}.profile")
    try:
        return instance.at_profiles(spots, profiles)
    except InstanceError as err:
        raise _Malformed(f"final: {err.path}: {err.rule}") from None


# --- reading the JSON form (its own reader: nothing shared with the planner)


def _obj(value: Any, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise _Malformed(f"{path or '(document)'}: must be an object, got {type(value).__name__}")
    return value


def _list(value: Any, path: str) -> list[Any]:
    if not isinstance(value, list):
        raise _Malformed(f"{path}: must be a list, got {type(value).__name__}")
    return value


def _str(value: Any, path: str) -> str:
    if not isinstance(value, str) or not value:
        raise _Malformed(f"{path}: must be a non-empty string, got {value!r}")
    return value


def _spot(value: Any, path: str) -> Spot:
    d = _obj(value, path)
    start = d.get("start")
    if isinstance(start, bool) or not isinstance(start, int) or start < 0:
        raise _Malformed(f"{path}.start: must be a non-negative integer, got {start!r}")
    return _str(d.get("gpu"), f"{path}.gpu"), start


def _at(spot: Spot) -> str:
    return f"{spot[0]}:{spot[1]}"


class _Replay:
    """One replay: the instances each workload holds, round by round."""

    def __init__(self, instance: Instance, plan: Any, target: Mapping[str, Spot] | None) -> None:
        self.instance = instance
        self.plan = _obj(plan, "")
        self.target = target
        self.v: list[str] = []
        # workload -> [(holder id, spot)]: one instance between rounds, two while moving
        self.held: dict[str, list[tuple[str, Spot]]] = {}
        for i, w in enumerate(instance.workloads):
            if w.placement is not None:
                self.held[w.id] = [(f"workloads[{i}].placement", (w.placement.gpu, w.placement.start))]
        self.down: dict[str, tuple[Spot, str]] = {}  # drained workload -> (where it ran, drain path)
        self.created: dict[str, str] = {}  # new workload -> the create's path
        self.drained: list[str] = []
        self.parks: list[tuple[str, str, Spot]] = []  # (path, workload, to)
        self.counts: Counter[str] = Counter()
        self.kinds: Counter[str] = Counter()
        self.memory_slots = 0
        self.memory_gb = 0.0
        self.rank = {w.id: i for i, w in enumerate(instance.workloads)}

    # --- checks shared by the phases

    def known(self, wid: Any, path: str) -> str | None:
        wid = _str(wid, f"{path}.workload")
        if not self.instance.has_workload(wid):
            self.v.append(f"{path}.workload: {wid!r} is not a workload of the instance")
            return None
        return wid

    def holds(self, wid: str, spot: Spot, path: str) -> bool:
        """Whether ``wid`` holds exactly one instance, at ``spot``; a violation at ``path.from`` if not."""
        have = self.held.get(wid, [])
        if len(have) == 1 and have[0][1] == spot:
            return True
        if wid in self.down:
            now = f"it is down since {self.down[wid][1]}"
        elif not have:
            now = "it does not run"
        else:
            now = "it is at " + ", ".join(_at(s) for _, s in have)
        self.v.append(f"{path}.from: {wid!r} is not at {_at(spot)} ({now})")
        return False

    def kind(self, source: Spot, target: Spot) -> str | None:
        if not (self.instance.has_gpu(source[0]) and self.instance.has_gpu(target[0])):
            return None
        if source[0] == target[0]:
            return "intra_gpu"
        same_host = self.instance.gpu(source[0]).host == self.instance.gpu(target[0]).host
        return "inter_gpu" if same_host else "inter_host"

    def relocation(self, wid: str, source: Spot, target: Spot, stated: Any, path: str) -> None:
        """Check the stated kind, count the relocation and its memory."""
        kind = self.kind(source, target)
        if kind is None:
            return  # an unknown GPU: reported by the state check
        if stated != kind:
            self.v.append(f"{path}.kind: {stated!r}, but {_at(source)} -> {_at(target)} is {kind}")
        self.kinds[kind] += 1
        profile = self.instance.profile_on(self.instance.workload(wid), self.instance.gpu(target[0]).model)
        if profile is not None:
            self.memory_slots += profile.memory_slots
            self.memory_gb += profile.memory_gb

    def pinned(self, wid: str, path: str, what: str) -> None:
        if self.instance.workload(wid).pinned:
            self.v.append(f"{path}: {wid!r} is pinned and may not be {what}")

    # --- the replay

    def run(self) -> PlanReport:
        p = self.plan
        if p.get("format") != "mipopt-plan":
            self.v.append(f"format: expected 'mipopt-plan', got {p.get('format')!r}")
        if p.get("version") != 1:
            self.v.append(f"version: this replay reads version 1, got {p.get('version')!r}")
        if p.get("instance") != self.instance.name:
            self.v.append(f"instance: plan is for {p.get('instance')!r}, not {self.instance.name!r}")
        semantics = p.get("semantics")
        if semantics not in ("create-first", "destroy-first"):
            self.v.append(f"semantics: must be create-first or destroy-first, got {semantics!r}")
        rounds = _list(p.get("rounds"), "rounds")
        for r, rnd in enumerate(rounds):
            self.round(r, _obj(rnd, f"rounds[{r}]"), semantics == "destroy-first")
        final = self.final()
        self.after(final)
        return PlanReport(
            valid=not self.v,
            violations=tuple(self.v),
            rounds=len(rounds),
            moves=sum(self.kinds.values()),
            parks=self.counts["parks"],
            drains=self.counts["drains"],
            restores=self.counts["restores"],
            creates=self.counts["creates"],
            moves_by_kind={k: self.kinds[k] for k in KINDS},
            moved_memory_slots=self.memory_slots,
            moved_memory_gb=self.memory_gb,
            final={w: have[0][1] for w, have in self.held.items() if len(have) == 1},
            disrupted=tuple(dict.fromkeys(self.drained)),
        )

    def round(self, r: int, rnd: dict[str, Any], destroy_first: bool) -> None:
        path = f"rounds[{r}]"
        if rnd.get("round", r + 1) != r + 1:
            self.v.append(f"{path}.round: {rnd.get('round')!r}, expected {r + 1}")
        drains = _list(rnd.get("drains", []), f"{path}.drains")
        moves = _list(rnd.get("moves", []), f"{path}.moves")
        creates = _list(rnd.get("creates", []), f"{path}.creates")
        if not (drains or moves or creates):
            self.v.append(f"{path}: an empty round")

        # phase 1: drain
        for j, item in enumerate(drains):
            at = f"{path}.drains[{j}]"
            wid = self.known(_obj(item, at).get("workload"), at)
            source = _spot(item.get("from"), f"{at}.from")
            if wid is None:
                continue
            self.pinned(wid, at, "drained")
            if self.holds(wid, source, at):
                del self.held[wid]
                self.down[wid] = (source, at)
                self.drained.append(wid)
                self.counts["drains"] += 1

        # phase 2: create every target
        fresh: list[Held] = []  # this round's instances, in order
        sources: list[tuple[str, str, Spot]] = []  # (workload, holder, spot) to destroy in phase 3
        acted: dict[str, str] = {}  # workload -> the phase-2 item that moved or created it
        for j, item in enumerate(moves):
            at = f"{path}.moves[{j}]"
            d = _obj(item, at)
            wid = self.known(d.get("workload"), at)
            source, dest = _spot(d.get("from"), f"{at}.from"), _spot(d.get("to"), f"{at}.to")
            if wid is None or not self.once(wid, at, acted):
                continue
            if destroy_first:
                self.v.append(f"{at}: a create-before-destroy move under destroy-first semantics")
            self.pinned(wid, at, "moved")
            if source == dest:
                self.v.append(f"{at}.to: {wid!r} moves to where it is ({_at(source)})")
                continue
            if not self.holds(wid, source, at):
                continue
            holder = self.held[wid][0][0]
            self.held[wid].append((f"{at}.to", dest))
            fresh.append((f"{at}.to", wid, *dest))
            sources.append((wid, holder, source))
            self.relocation(wid, source, dest, d.get("kind"), at)
            if d.get("park", False):
                self.counts["parks"] += 1
                self.parks.append((at, wid, dest))
        for j, item in enumerate(creates):
            at = f"{path}.creates[{j}]"
            d = _obj(item, at)
            wid = self.known(d.get("workload"), at)
            dest = _spot(d.get("to"), f"{at}.to")
            if wid is None or not self.once(wid, at, acted):
                continue
            if "from" in d:
                source = _spot(d.get("from"), f"{at}.from")
                if wid not in self.down:
                    self.v.append(f"{at}: {wid!r} is not drained, so it cannot be restored")
                    continue
                ran, _ = self.down.pop(wid)
                if source != ran:
                    self.v.append(f"{at}.from: {wid!r} ran at {_at(ran)}, not {_at(source)}")
                self.relocation(wid, ran, dest, d.get("kind"), at)
                self.counts["restores"] += 1
            else:
                w = self.instance.workload(wid)
                if w.running:
                    self.v.append(f"{at}: {wid!r} is running, not new (a restore names its 'from')")
                    continue
                if wid in self.created:
                    self.v.append(f"{at}: {wid!r} was already created by {self.created[wid]}")
                    continue
                self.created[wid] = at
                self.counts["creates"] += 1
            self.held[wid] = [(f"{at}.to", dest)]
            fresh.append((f"{at}.to", wid, *dest))
        self.check(path, fresh)

        # phase 3: destroy the moves' sources
        for wid, holder, spot in sources:
            self.held[wid] = [(h, s) for h, s in self.held[wid] if (h, s) != (holder, spot)]

    def once(self, wid: str, at: str, acted: dict[str, str]) -> bool:
        if wid in acted:
            self.v.append(f"{at}: {wid!r} is already moved or created in this round ({acted[wid]})")
            return False
        acted[wid] = at
        return True

    def check(self, path: str, fresh: list[Held]) -> None:
        """Every rule on the round's largest state: after phase 2, this round's instances last."""
        new = {item[0] for item in fresh}
        state: list[Held] = [
            (h, wid, *spot) for wid, have in self.held.items() for h, spot in have if h not in new
        ]
        found: dict[str, None] = {}  # one line each (a mover's two instances may break a rule alike)
        for b in check_state(self.instance, state + fresh).breaches:
            # name the instance this round added; a breach without one was reported in its own round
            culprit = next((h for h in reversed(b.holders) if h in new), None)
            if culprit is None:
                continue
            if b.field is not None:
                found[b.message()] = None
                continue
            culprit = culprit.removesuffix(".to")
            if b.rule == "overlap":
                found[f"{culprit}: {b.text} on {b.scope} during the create phase"] = None
            else:
                found[f"{culprit}: {b.scope}: {b.text} during the create phase"] = None
        self.v += found

    def final(self) -> dict[str, Spot]:
        final: dict[str, Spot] = {}
        for i, item in enumerate(_list(self.plan.get("final", []), "final")):
            at = f"final[{i}]"
            d = _obj(item, at)
            wid = _str(d.get("workload"), f"{at}.workload")
            if wid in final:
                self.v.append(f"{at}.workload: {wid!r} is listed twice")
            final[wid] = _spot(d, at)
        return final

    def after(self, final: dict[str, Spot]) -> None:
        """The end state against ``final``, the target, the drains and ``disrupted``."""
        for wid, (_, at) in self.down.items():
            self.v.append(f"workload {wid!r}: drained by {at} and never restored")
        end = {w: have[0][1] for w, have in self.held.items() if have}
        for what, want in (("final", final), ("target", self.target)):
            if want is None:
                continue
            for wid in sorted(set(end) | set(want), key=self.order):
                got, need = end.get(wid), want.get(wid)
                if got == need:
                    continue
                if got is not None and need is None:
                    self.v.append(f"{what}: {wid!r} runs at {_at(got)} after the last round, not listed")
                elif got is None and need is not None:
                    self.v.append(f"{what}: {wid!r} at {_at(need)}, but it does not run after the last round")
                elif got is not None and need is not None:
                    self.v.append(
                        f"{what}: {wid!r} at {_at(need)}, but it is at {_at(got)} after the last round"
                    )
        for at, wid, dest in self.parks:
            if final.get(wid) == dest:
                self.v.append(f"{at}.park: {wid!r} parks at its final place {_at(dest)}")
        listed = _list(self.plan.get("disrupted", []), "disrupted")
        for i, wid in enumerate(listed):
            if wid in listed[:i]:
                self.v.append(f"disrupted[{i}]: {wid!r} is listed twice")
            elif wid not in self.drained:
                self.v.append(f"disrupted[{i}]: {wid!r} is never drained")
        for wid in dict.fromkeys(self.drained):
            if wid not in listed:
                self.v.append(f"disrupted: {wid!r} is drained but not listed")

    def order(self, wid: str) -> tuple[int, str]:
        return self.rank.get(wid, len(self.rank)), wid
