"""A migration plan: ordered rounds that take a cluster from its current placement to a target.

A round runs in three phases, and an operator executes them in this order:

1. **drain**: destroy the instances of the round's drained workloads (a disruptive move
   starts here: the workload is down until it is restored);
2. **create**: create every target instance of the round at once: the targets of its
   moves, its new workloads, and the restores of drained workloads;
3. **destroy**: destroy the sources of the round's moves.

So a (non-disruptive, create-before-destroy) move holds its source and its target during
phase 2, and the state after phase 2 is the largest of the round: a plan is valid when
that state obeys every rule in every round (no overlap, legal starts, one ``+me`` per GPU,
per-profile limits, host cpu and ram) and the state after the last round is the target.
Moves of one round do not depend on each other, so they may run in parallel.

A *park* move takes a workload to a temporary place (free space) to break a cycle of
waits; the workload moves on to its target in a later round. A *drained* workload is
destroyed in one round and created at its target (restored) in the same or a later one.

The JSON form (``mipopt-plan``, version 1)::

    {"format": "mipopt-plan", "version": 1, "instance": "...", "semantics": "create-first",
     "method": "graph", "rounds": [
        {"round": 1,
         "drains":  [{"workload": "w3", "from": {"gpu": "g0", "start": 0}}],
         "moves":   [{"workload": "w1", "from": {"gpu": "g0", "start": 4},
                      "to": {"gpu": "g1", "start": 0}, "kind": "inter_gpu", "park": false}],
         "creates": [{"workload": "w9", "to": {"gpu": "g1", "start": 4}},
                     {"workload": "w3", "to": {"gpu": "g0", "start": 4},
                      "from": {"gpu": "g0", "start": 0}, "kind": "intra_gpu"}]}],
     "final": [{"workload": "w1", "gpu": "g1", "start": 0}, ...],
     "disrupted": ["w3"], "metrics": {...}, "runtime_s": 0.01, "message": ""}

A create with ``from`` restores a drained workload; without it, it creates a new one.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from mipopt import _fields as f
from mipopt.errors import InstanceError
from mipopt.instance import Instance
from mipopt.state.occupancy import MOVE_KINDS, MOVE_LABELS, Spot

__all__ = ["FORMAT", "SEMANTICS", "Create", "Drain", "Move", "Plan", "Round", "Spot", "plan_from_dict"]

FORMAT = "mipopt-plan"
VERSION = 1
SEMANTICS = ("create-first", "destroy-first")
Semantics = Literal["create-first", "destroy-first"]


def _spot(spot: Spot) -> dict[str, Any]:
    return {"gpu": spot[0], "start": spot[1]}


@dataclass(frozen=True, slots=True)
class Move:
    """A step of a plan: a running workload moves from ``source`` to ``target``, create before destroy.

    What the cluster records when it carries the step out is a
    :class:`~mipopt.state.Relocation` (GPU positions, the round, restores of drained
    workloads too).
    """

    workload: str
    source: Spot
    target: Spot
    kind: str  # one of MOVE_KINDS
    park: bool = False  # to a temporary place, to break a cycle

    def to_dict(self) -> dict[str, Any]:
        return {
            "workload": self.workload,
            "from": _spot(self.source),
            "to": _spot(self.target),
            "kind": self.kind,
            "park": self.park,
        }


@dataclass(frozen=True, slots=True)
class Drain:
    """A running workload's instance at ``source`` is destroyed: it is down until restored."""

    workload: str
    source: Spot

    def to_dict(self) -> dict[str, Any]:
        return {"workload": self.workload, "from": _spot(self.source)}


@dataclass(frozen=True, slots=True)
class Create:
    """An instance is created at ``target``: a new workload, or a drained one restored (``source`` set)."""

    workload: str
    target: Spot
    source: Spot | None = None  # where a restored workload ran before it was drained
    kind: str | None = None  # of a restore, as for a move

    def to_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"workload": self.workload, "to": _spot(self.target)}
        if self.source is not None:
            out["from"] = _spot(self.source)
            out["kind"] = self.kind
        return out


@dataclass(frozen=True, slots=True)
class Round:
    """One round: drains, then every create (moves' targets, creates), then the moves' sources go."""

    drains: tuple[Drain, ...] = ()
    moves: tuple[Move, ...] = ()
    creates: tuple[Create, ...] = ()

    def to_dict(self, number: int) -> dict[str, Any]:
        return {
            "round": number,
            "drains": [d.to_dict() for d in self.drains],
            "moves": [m.to_dict() for m in self.moves],
            "creates": [c.to_dict() for c in self.creates],
        }


@dataclass(frozen=True, slots=True)
class Plan:
    """Rounds from an instance's current placement to a target placement.

    Attributes
    ----------
    final
        Workload id -> (GPU id, start) after the last round: the target's placement.
    profiles
        Workload id -> the profile the target chose for a new memory-sized workload where it is
        not the smallest that fits (:meth:`Instance.at_profiles <mipopt.instance.Instance.at_profiles>`):
        its create makes that profile. Written as ``final[i].profile``.
    disrupted
        Running workloads drained (down between their drain and their restore).
    metrics
        Counts (see :func:`mipopt.migrate.plan_metrics`).

    A plan made by :func:`mipopt.plan_migration` remembers the :class:`~mipopt.instance.Instance`
    it starts from (``_instance``, neither written nor compared), so :meth:`summary` needs no
    argument; one read from a file does not.
    """

    instance: str
    semantics: Semantics
    method: str
    rounds: tuple[Round, ...]
    final: dict[str, Spot]
    disrupted: tuple[str, ...] = ()
    metrics: dict[str, float] = field(default_factory=dict)
    runtime_s: float = 0.0
    message: str = ""
    profiles: dict[str, str] = field(default_factory=dict)
    _instance: Instance | None = field(default=None, kw_only=True, repr=False, compare=False)

    def summary(self, instance: Instance | None = None) -> str:
        """The plan as a person reads it, as ``mipopt plan`` prints it: a header of metrics,
        then each round's drains, moves and creates.

        Parameters
        ----------
        instance
            The instance the plan starts from, for the profile of each step; by default the one
            the plan remembers. Without either, the steps are listed without their profiles, and
            a line says so.

        Returns
        -------
        str
            Lines without a trailing newline.

        Examples
        --------
        >>> import mipopt
        >>> inst = mipopt.load_instance("instances/swap.json")
        >>> plan = mipopt.plan_migration(inst, mipopt.load_solution("instances/swap.target.json"))
        >>> plan.summary().splitlines()[7:10]
        ['round 1', '  move  a  3g.20gb  g0:0  ->  g1:0  inter-GPU  park', '']
        """
        instance = instance if instance is not None else self._instance

        def at(spot: Spot) -> str:
            return f"{spot[0]}:{spot[1]}"

        def n(value: float) -> str:
            return f"{value:g}"

        def profile(wid: str, gpu: str) -> str:
            if wid in self.profiles:
                return self.profiles[wid]
            if instance is None:
                return ""
            found = instance.profile_on(instance.workload(wid), instance.gpu(gpu).model)
            if found is None:
                raise KeyError(f"workload {wid!r} has no profile on GPU {gpu!r}")
            return found.name

        m = self.metrics
        rounds = len(self.rounds)
        lines = [
            f"plan for {self.instance!r}: {self.semantics}, {self.method} planner, "
            f"{rounds} round{'s' if rounds != 1 else ''} ({self.runtime_s:.3f} s)"
        ]
        by_kind = ", ".join(f"{n(m.get(f'moves_{k}', 0))} {MOVE_LABELS[k]}" for k in MOVE_KINDS)
        lines.append(
            f"moves: {n(m.get('moves', 0))} ({by_kind}), of which {n(m.get('extra_moves', 0))} extra (parking)"
        )
        disrupted = f" ({', '.join(self.disrupted)})" if self.disrupted else ""
        lines.append(f"disruptive moves: {n(m.get('disruptive_moves', 0))}{disrupted}")
        lines.append(f"new workloads created: {n(m.get('creates', 0))}")
        lines.append(
            f"moved memory: {n(m.get('moved_memory_slots', 0))} slots, {n(m.get('moved_memory_gb', 0))} GB"
        )
        lines.append(f"IBM sequential migrations: {n(m.get('sequential_migrations', 0))}")
        if self.message:
            lines.append(f"note: {self.message}")
        if not self.rounds:
            lines.append("\nnothing to do: the current placement is the target")
            return "\n".join(lines)
        if instance is None:
            lines.append(
                "profiles not shown: the plan does not know its instance (pass it: summary(instance))"
            )

        restored_in = {
            c.workload: i for i, r in enumerate(self.rounds, 1) for c in r.creates if c.source is not None
        }
        table: list[tuple[int, tuple[str, ...]]] = []
        for i, r in enumerate(self.rounds, 1):
            for d in r.drains:
                back = f"round {restored_in[d.workload]}" if d.workload in restored_in else "never"
                p = profile(d.workload, d.source[0])
                table.append(
                    (i, ("drain", d.workload, p, at(d.source), "", "", f"disruptive, restored in {back}"))
                )
            for mv in r.moves:
                p = profile(mv.workload, mv.target[0])
                note = "park" if mv.park else ""
                table.append(
                    (i, ("move", mv.workload, p, at(mv.source), at(mv.target), MOVE_LABELS[mv.kind], note))
                )
            for c in r.creates:
                p = profile(c.workload, c.target[0])
                if c.source is None:
                    table.append((i, ("create", c.workload, p, "", at(c.target), "", "new")))
                else:
                    kind = MOVE_LABELS.get(c.kind or "", "")
                    table.append((i, ("create", c.workload, p, at(c.source), at(c.target), kind, "restore")))
        widths = [max(len(row[k]) for _, row in table) for k in range(7)]
        current = 0
        for i, (verb, wid, prof, src, dst, kind, note) in table:
            if i != current:
                current = i
                lines.append(f"\nround {i}")
            arrow = "->" if dst else "  "
            cells = [verb.ljust(widths[0]), wid.ljust(widths[1])]
            cells += [prof.ljust(widths[2])] if instance is not None else []
            cells += [src.rjust(widths[3]), arrow, dst.ljust(widths[4]), kind.ljust(widths[5]), note]
            lines.append(("  " + "  ".join(cells)).rstrip())
        return "\n".join(lines)

    def save(self, path: str | Path) -> None:
        """Write :meth:`to_dict` to ``path`` as ``mipopt-plan`` JSON, atomically (what ``mipopt
        plan --out`` writes; :func:`load_plan` reads it back).

        Raises
        ------
        InstanceError
            Naming ``path`` when it is the file the plan's instance was read from.

        Examples
        --------
        >>> import mipopt, pathlib, tempfile
        >>> inst = mipopt.load_instance("instances/swap.json")
        >>> plan = mipopt.plan_migration(inst, mipopt.load_solution("instances/swap.target.json"))
        >>> with tempfile.TemporaryDirectory() as tmp:
        ...     plan.save(pathlib.Path(tmp, "plan.json"))
        ...     load_plan(pathlib.Path(tmp, "plan.json")) == plan
        True
        """
        from mipopt.io import save_json

        read_from = self._instance._path if self._instance is not None else None
        save_json(path, self.to_dict(), read_from=read_from)

    def to_dict(self) -> dict[str, Any]:
        return {
            "format": FORMAT,
            "version": VERSION,
            "instance": self.instance,
            "semantics": self.semantics,
            "method": self.method,
            "rounds": [r.to_dict(i + 1) for i, r in enumerate(self.rounds)],
            "final": [
                {"workload": w, "gpu": g, "start": s}
                | ({"profile": self.profiles[w]} if w in self.profiles else {})
                for w, (g, s) in self.final.items()
            ],
            "disrupted": list(self.disrupted),
            "metrics": dict(self.metrics),
            "runtime_s": self.runtime_s,
            "message": self.message,
        }


def load_plan(path: str | Path) -> Plan:
    """Read a plan file (``mipopt plan --out``, :meth:`Plan.save`) as every JSON input is read
    (:func:`mipopt.io.parse_json`), checking its shape with :func:`plan_from_dict`.

    Raises
    ------
    InstanceError
        For an unreadable file, JSON the reader refuses or a malformed field, naming the JSON path.
    """
    from mipopt.io import read_json

    return plan_from_dict(read_json(path))


def plan_from_dict(data: Any) -> Plan:
    """Read a plan's JSON form, checking its shape (not its validity: see :func:`mipopt.verifier.verify_plan`).

    Raises
    ------
    InstanceError
        Naming the JSON path of the first malformed field.
    """
    d = f.obj(
        data,
        "",
        required=("format", "version", "instance", "semantics", "rounds"),
        optional=("method", "final", "disrupted", "metrics", "runtime_s", "message", "operations"),
    )
    if d["format"] != FORMAT:
        raise InstanceError("format", f"expected {FORMAT!r}, got {f.shown(d['format'])}")
    if d["version"] != VERSION:
        raise InstanceError(
            "version", f"unsupported version {f.shown(d['version'])} (this mipopt reads {VERSION})"
        )
    semantics = f.choice(d["semantics"], "semantics", SEMANTICS)
    rounds = []
    for i, r in enumerate(f.lst(d["rounds"], "rounds")):
        path = f"rounds[{i}]"
        rd = f.obj(r, path, optional=("round", "drains", "moves", "creates"))
        if "round" in rd and f.integer(rd["round"], f"{path}.round") != i + 1:
            raise InstanceError(f"{path}.round", f"must be {i + 1}, got {f.shown(rd['round'])}")
        drains = []
        for j, x in enumerate(f.lst(rd.get("drains", []), f"{path}.drains")):
            p = f"{path}.drains[{j}]"
            x = f.obj(x, p, required=("workload", "from"))
            drains.append(
                Drain(f.identifier(x["workload"], f"{p}.workload"), _spot_of(x["from"], f"{p}.from"))
            )
        moves = []
        for j, x in enumerate(f.lst(rd.get("moves", []), f"{path}.moves")):
            p = f"{path}.moves[{j}]"
            x = f.obj(x, p, required=("workload", "from", "to", "kind"), optional=("park",))
            moves.append(
                Move(
                    f.identifier(x["workload"], f"{p}.workload"),
                    _spot_of(x["from"], f"{p}.from"),
                    _spot_of(x["to"], f"{p}.to"),
                    _kind(x["kind"], f"{p}.kind"),
                    f.boolean(x.get("park", False), f"{p}.park"),
                )
            )
        creates = []
        for j, x in enumerate(f.lst(rd.get("creates", []), f"{path}.creates")):
            p = f"{path}.creates[{j}]"
            x = f.obj(x, p, required=("workload", "to"), optional=("from", "kind"))
            restored = "from" in x
            if restored != ("kind" in x):
                raise InstanceError(p, "a restore has both 'from' and 'kind', a new workload neither")
            creates.append(
                Create(
                    f.identifier(x["workload"], f"{p}.workload"),
                    _spot_of(x["to"], f"{p}.to"),
                    _spot_of(x["from"], f"{p}.from") if restored else None,
                    _kind(x["kind"], f"{p}.kind") if restored else None,
                )
            )
        rounds.append(Round(tuple(drains), tuple(moves), tuple(creates)))
    final: dict[str, Spot] = {}
    profiles: dict[str, str] = {}
    for i, x in enumerate(f.lst(d.get("final", []), "final")):
        p = f"final[{i}]"
        x = f.obj(x, p, required=("workload", "gpu", "start"), optional=("profile",))
        wid = f.identifier(x["workload"], f"{p}.workload")
        final[wid] = (f.identifier(x["gpu"], f"{p}.gpu"), f.integer(x["start"], f"{p}.start"))
        if "profile" in x:
            profiles[wid] = f.identifier(x["profile"], f"{p}.profile")
    disrupted = tuple(
        f.identifier(w, f"disrupted[{i}]") for i, w in enumerate(f.lst(d.get("disrupted", []), "disrupted"))
    )
    metrics = d.get("metrics", {})
    f.obj(
        metrics, "metrics", optional=metrics if isinstance(metrics, dict) else ()
    )  # any names, numbers only
    return Plan(
        instance=f.identifier(d["instance"], "instance"),
        semantics=semantics,  # type: ignore[arg-type]  # checked against SEMANTICS above
        method=f.text(d.get("method", ""), "method", lines=False),
        rounds=tuple(rounds),
        final=final,
        disrupted=disrupted,
        metrics={
            f.identifier(k, f.join("metrics", k)): f.number(v, f.join("metrics", k))
            for k, v in metrics.items()
        },
        runtime_s=f.number(d.get("runtime_s", 0.0), "runtime_s"),
        message=f.text(d.get("message", ""), "message"),
        profiles=profiles,
    )


#: Where a spot's GPU and instance are on the machine (written by ``mipopt plan --emit json``).
ADDRESS_FIELDS = ("host", "gpu_index", "gpu_uuid", "gpu_instance_id")


def _spot_of(x: Any, path: str) -> Spot:
    """A ``{gpu, start}`` object, perhaps with its address (:data:`ADDRESS_FIELDS`, informational)."""
    d = f.obj(x, path, required=("gpu", "start"), optional=ADDRESS_FIELDS)
    return f.identifier(d["gpu"], f.join(path, "gpu")), f.integer(d["start"], f.join(path, "start"))


def _kind(value: Any, path: str) -> str:
    return f.choice(value, path, MOVE_KINDS)
