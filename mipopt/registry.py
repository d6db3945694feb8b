"""The one table of methods: which code a method name means, and which options it takes.

Every way mipopt places workloads is a :class:`MethodSpec` of :func:`methods`: the exact
models, IBM's batch rules and every online policy run in batch (the instance's new workloads
arrive in file order at time 0). :func:`solve`, ``mipopt solve --method``, ``mipopt bench``
(:func:`mipopt.compare.compare_methods`) and the docs (``mipopt solve --list-methods``) all
look names up here and nowhere else.

A method name may carry options, read by the one grammar of spec strings (:mod:`mipopt.specs`),
as a policy's are: ``grmu:heavy=0.3``, ``adapter(ff)``, ``exact:model=wpm,use_case=initial``. An
option the method does not take is an error naming the option, the method and the options it
takes, never ignored. An online policy has one name, the same here as in the simulator
(:data:`mipopt.heuristics.policies.POLICIES`).

Examples
--------
>>> import mipopt
>>> [m.name for m in mipopt.methods() if m.kind == "exact"]
['exact', 'exact-initial']
>>> inst = mipopt.load_instance("instances/grmu_fig2b.json")
>>> mipopt.solve(inst, "ff").objectives.acceptance, mipopt.solve(inst).objectives.acceptance
(3.0, 4.0)
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from functools import cache
from typing import TYPE_CHECKING, Any, Literal

from mipopt import _fields as f
from mipopt._fields import shown
from mipopt.errors import InstanceError, ParameterTypeError, UnknownMethodError
from mipopt.executors import capped_threads
from mipopt.instance import Budget, Instance, Solution
from mipopt.io import instance_argument
from mipopt.specs import Spec, option_list, parse_spec
from mipopt.state.idle import reuse_idle

if TYPE_CHECKING:
    from mipopt.exact.driver import Heuristic
    from mipopt.exact.sweep import Front
    from mipopt.heuristics.online import Policy

__all__ = [
    "MethodSpec",
    "checked_options",
    "default_portfolio",
    "get_method",
    "methods",
    "solve",
    "sweep",
]

Kind = Literal["exact", "heuristic"]

#: Options of the exact methods' solver, shared by every model.
SOLVER_OPTIONS = ("solver", "time_limit_s", "threads", "seed", "gap", "stop", "deadline")
#: The formulations of ``exact``: the GRMU models and IBM's WPM.
EXACT_MODELS = ("grmu", "grmu-slots", "grmu-paper", "wpm")
#: What ``exact`` takes with a GRMU model, and with ``model="wpm"``.
GRMU_OPTIONS = ("model", "objective", "use_case", "warm_start", "progress", "budget", *SOLVER_OPTIONS)
WPM_OPTIONS = ("model", "use_case", "warm_start", "budget", *SOLVER_OPTIONS)
#: Seconds the rejection checks of a time-limited call may take when its limit is spent.
EXPLAIN_MIN_S = 0.25
#: Seconds per workload a time-limited exact method leaves for the rejection reasons after it (0.9 s
#: at 16,000 GPUs and 50,000 workloads on a 2-core Xeon, each group of alike requests read once).
EXPLAIN_S_PER_WORKLOAD = 2e-5
#: The heuristics the exact driver tries as warm starts; among equal answers the first listed is
#: kept. They run last first while the time for them lasts (all take 0.1-0.2 s at 1,000 GPUs):
#: ``ibm-initial`` was the best of them on 8 of 10 IBM snapshots at 400 and 1,000 GPUs, and run
#: last a 2 s limit left it out at 1,000.
PORTFOLIO = ("ff", "mfi", "bf", "ibm-initial")


def _threads(value: Any, name: str) -> int:
    """A count (:func:`mipopt._fields.count_argument`) capped at the machine's cores; the warning
    points at the caller of :func:`solve` or :func:`mipopt.compare_methods`."""
    return capped_threads(f.count_argument(value, name), name, stacklevel=5)


#: The rule each numeric option of :func:`solve` obeys (:class:`mipopt.solvers.SolverOptions`
#: checks its own fields by the same rules).
OPTION_RULES: Mapping[str, Callable[[Any, str], Any]] = {
    "time_limit_s": f.seconds_argument,
    "threads": _threads,
    "seed": f.seed_argument,
    "gap": f.gap_argument,
}


@dataclass(frozen=True, slots=True)
class MethodSpec:
    """A named method: what it is, which options it takes, and how to run it.

    Attributes
    ----------
    name
        The name :func:`solve` and ``--method`` take (with options: ``grmu:heavy=0.3``).
    kind
        ``exact`` (a MIP, time-limited, with a bound) or ``heuristic``.
    summary
        One line for ``--list-methods`` and the docs.
    options
        The keyword options :attr:`run` takes beyond the instance.
    run
        ``run(instance, **options) -> Solution``.
    policy
        For an online policy run in batch: the policy spec it makes (``ibm-initial-online``, ``grmu:heavy=0.5``), or for a
        :class:`~mipopt.heuristics.online.Policy` object given instead of a name, its name.
    preset
        Options fixed by the name (``exact-initial`` is ``exact`` with ``use_case="initial"``).
    moves
        Whether the method may move running workloads: the exact models but ``use_case="initial"``,
        IBM's compaction, reconfiguration and joint rules, a policy that migrates when a request
        finds no place (GRMU's defragmentation; MIG-Adapter as its inner policy). Run in batch,
        no policy ticks or sees a departure. :func:`mipopt.compare.compare_methods` measures a
        method that cannot move against the initial optimum, one that may against the joint one.

    Examples
    --------
    >>> spec = get_method("adapter(ff)")
    >>> spec.kind, spec.options
    ('heuristic', ('seed',))
    """

    name: str
    kind: Kind
    summary: str
    options: tuple[str, ...]
    run: Callable[..., Solution] = field(repr=False, compare=False)
    policy: str | None = None
    preset: Mapping[str, Any] = field(default_factory=dict)
    moves: bool = False

    def takes(self, options: Mapping[str, Any]) -> tuple[str, ...]:
        """The options this method takes, given the others (``wpm`` takes no ``objective``)."""
        model = options.get("model", self.preset.get("model"))
        return WPM_OPTIONS if self.kind == "exact" and model == "wpm" else self.options

    def refused(self, options: Mapping[str, Any]) -> list[str]:
        """The names in ``options`` this method does not take, or that its name already sets.

        Examples
        --------
        >>> get_method("mfi").refused({"seed": 1, "objective": "lex:acceptance"})
        ['objective']
        """
        takes = self.takes({**self.preset, **options})
        return [k for k in options if k in self.preset or k not in takes]

    def solve(self, instance: Instance, **options: Any) -> Solution:
        """Run the method on ``instance`` with its preset options and ``options``.

        Raises
        ------
        InstanceError
            Naming the first option the method does not take, or that its name already sets.
        """
        for key in self.refused(options):
            if key in self.preset:
                raise InstanceError(key, f"method {self.name} sets {key} itself ({key}={self.preset[key]!r})")
            takes = self.takes({**self.preset, **options})
            what = f"{self.name} with model wpm" if takes is WPM_OPTIONS else self.name
            listed = ", ".join(o for o in takes if o not in ("stop", "deadline")) or "no options"
            raise InstanceError(key, f"method {what} takes no {key} (it takes: {listed})")
        return self.run(instance, **self.preset, **options)


def _exact(instance: Instance, *, model: str = "grmu", warm_start: Any = None, **options: Any) -> Solution:
    from mipopt.exact.driver import solve_exact
    from mipopt.exact.wpm.solve import solve_wpm
    from mipopt.solvers import SolverOptions

    solver = options.pop("solver", "highs")
    solver_options = SolverOptions(
        time_limit_s=options.pop("time_limit_s", None),
        threads=options.pop("threads", None),
        seed=options.pop("seed", 0),
        mip_rel_gap=options.pop("gap", None),
        stop=options.pop("stop", None),
        deadline=options.pop("deadline", None),
    )
    if model == "wpm":
        if warm_start not in (None, True, False):
            raise InstanceError("warm_start", "model wpm starts from IBM's rules (True) or not (False)")
        rules = {
            n: get_method(n).solve
            for n in ("ibm-initial", "ibm-compaction", "ibm-reconfiguration", "ibm-joint")
        }
        return solve_wpm(
            instance,
            use_case=options.pop("use_case", None) or "joint",
            solver=solver,
            options=solver_options,
            warm_start=bool(warm_start),
            heuristics=rules,
            budget=options.pop("budget", None),
        )
    if model not in EXACT_MODELS:
        raise InstanceError("model", f"unknown model {model!r} (known: {', '.join(EXACT_MODELS)})")
    portfolio = () if warm_start is False else default_portfolio()
    given = warm_start if isinstance(warm_start, Solution) else None
    if warm_start not in (None, True, False) and given is None:
        raise InstanceError(
            "warm_start", f"expected a Solution, True or False, got {type(warm_start).__name__}"
        )
    return solve_exact(
        instance,
        model=model,
        solver=solver,
        options=solver_options,
        portfolio=portfolio,
        warm_start=given,
        **options,
    )


def default_portfolio() -> tuple[Heuristic, ...]:
    """The heuristics of :data:`PORTFOLIO` as (name, run) pairs, for the exact driver's warm start."""
    return tuple((n, get_method(n).solve) for n in PORTFOLIO)


def sweep(instance: Instance, **options: Any) -> Front:
    """The Pareto front of ``instance``: :func:`mipopt.exact.sweep.sweep` (its parameters), each
    point seeded with the fast heuristics of :data:`PORTFOLIO`.

    Examples
    --------
    >>> import mipopt
    >>> front = mipopt.sweep(mipopt.load_instance("instances/grmu_fig2b.json"))
    >>> [(p.acceptance, p.hardware, p.migrations) for p in front.points]
    [(4.0, 2.0, 0.0)]
    """
    from mipopt.exact.sweep import sweep as exact_sweep

    options.setdefault("portfolio", default_portfolio())
    return exact_sweep(instance, **options)


def _rule(function: str) -> Callable[..., Solution]:
    def run(instance: Instance, **options: Any) -> Solution:
        from mipopt import heuristics  # exports IBM's five batch rules

        solution: Solution = getattr(heuristics, function)(instance, **options)  # budget, if it moves
        return solution

    return run


def _policy(spec: str) -> Callable[..., Solution]:
    def run(instance: Instance, *, seed: int = 0, budget: Budget | None = None) -> Solution:
        from mipopt.heuristics.online import run_batch
        from mipopt.heuristics.policies import make_policy

        return run_batch(make_policy(spec, "method"), instance, seed=seed, budget=budget)

    return run


def _exact_spec(name: str, summary: str, preset: Mapping[str, Any]) -> MethodSpec:
    options = tuple(o for o in GRMU_OPTIONS if o not in preset)
    return MethodSpec(
        name, "exact", summary, options, _exact, preset=dict(preset), moves=_exact_moves(preset)
    )


def _exact_moves(preset: Mapping[str, Any]) -> bool:
    """An exact model may move running workloads unless its use case is ``initial``."""
    return preset.get("use_case") != "initial"


def _policy_moves(policy: Policy) -> bool:
    """Whether a policy run in batch may move running workloads: only by acting when a request
    finds no place (:meth:`Policy.on_reject`), as GRMU's defragmentation does; MIG-Adapter's own
    borrowing moves nothing that runs, its inner policy may."""
    from mipopt.heuristics.adapter import Adapter
    from mipopt.heuristics.online import Policy

    if isinstance(policy, Adapter):
        return _policy_moves(policy.inner)
    return type(policy).on_reject is not Policy.on_reject and getattr(policy, "defrag", True) is not False


def _policy_options(policy: Policy) -> tuple[str, ...]:
    """A policy in batch takes a seed, and a budget when it may move running workloads."""
    return ("seed", "budget") if _policy_moves(policy) else ("seed",)


def _table() -> dict[str, MethodSpec]:
    """Every method by name, in the order the docs list them."""
    from mipopt.heuristics.policies import POLICIES, make_policy

    specs = [
        _exact_spec(
            "exact",
            "lexicographic optimum (acceptance, hardware, migrations, restarts) of a MIP model: grmu (default), "
            "grmu-slots, grmu-paper, or IBM's wpm",
            {},
        ),
        _exact_spec(
            "exact-initial",
            "exact with use_case='initial': running workloads stay where they run",
            {"use_case": "initial"},
        ),
        MethodSpec(
            "ibm-first-fit",
            "heuristic",
            "IBM baseline: GPUs and workloads by id, first free index from 0",
            (),
            _rule("ibm_first_fit"),
        ),
        MethodSpec(
            "ibm-initial",
            "heuristic",
            "IBM rule-based initial deployment (WPM section 4.2), largest first",
            (),
            _rule("ibm_initial"),
        ),
        MethodSpec(
            "ibm-compaction",
            "heuristic",
            "IBM rule-based compaction: moves running workloads only",
            ("budget",),
            _rule("ibm_compaction"),
            moves=True,
        ),
        MethodSpec(
            "ibm-reconfiguration",
            "heuristic",
            "IBM rule-based reconfiguration: moves running workloads only",
            ("budget",),
            _rule("ibm_reconfiguration"),
            moves=True,
        ),
        MethodSpec(
            "ibm-joint",
            "heuristic",
            "IBM reconfiguration, then initial deployment",
            ("budget",),
            _rule("ibm_joint"),
            moves=True,
        ),
    ]
    for policy in POLICIES:
        if policy == "adapter":
            continue
        made = make_policy(policy)
        summary = f"online policy: {made.describe()}"
        specs.append(
            MethodSpec(
                policy,
                "heuristic",
                summary,
                _policy_options(made),
                _policy(policy),
                policy=policy,
                moves=_policy_moves(made),
            )
        )
    return {s.name: s for s in specs}


@cache
def _methods() -> dict[str, MethodSpec]:
    return _table()


def methods() -> list[MethodSpec]:
    """Every method, exact first, then IBM's batch rules, then the online policies in batch.

    ``adapter(<policy>)`` (MIG-Adapter around any policy) is not listed; :func:`get_method`
    makes it.

    Examples
    --------
    >>> [m.name for m in methods()][:3]
    ['exact', 'exact-initial', 'ibm-first-fit']
    """
    return list(_methods().values())


#: The options of an exact method its name may carry (``exact:model=wpm``).
NAME_OPTIONS = ("model", "objective", "use_case", "solver")


def methods_text() -> str:
    """The table of methods as text, two lines each: ``mipopt solve --list-methods`` prints it,
    ``docs/methods.md`` holds it. ``options`` are the keyword options of :func:`solve` (the
    command's flags); ``in the name`` those a name carries (``grmu:heavy=0.5``), with their
    defaults, from :data:`mipopt.heuristics.policies.POLICIES` for the policies.

    Examples
    --------
    >>> print(methods_text().splitlines()[-2])
    adapter(<policy>)    heuristic  MIG-Adapter around any online policy, e.g. adapter(ff)
    """
    from mipopt.heuristics.adapter import Adapter
    from mipopt.heuristics.policies import POLICIES, WRAPPERS

    Row = tuple[str, str, str, tuple[str, ...], str]
    rows: list[Row] = []
    for m in [*methods(), None]:
        row: Row
        if m is None:  # adapter(<policy>) is made from its spec, not listed by methods()
            summary = "MIG-Adapter around any online policy, e.g. adapter(ff)"
            row = ("adapter(<policy>)", "heuristic", summary, ("seed",), option_list(Adapter, ("inner",)))
        elif m.kind == "exact":
            row = (
                m.name,
                m.kind,
                m.summary,
                m.options,
                ", ".join(o for o in NAME_OPTIONS if o not in m.preset),
            )
        else:
            named = "" if m.policy is None else option_list(POLICIES[m.policy])
            if m.policy in WRAPPERS:
                named = f"{named} (or {m.policy}(<policy>))"
            row = (m.name, m.kind, m.summary, m.options, named)
        rows.append(row)
    lines = []
    for name, kind, summary, options, named in rows:
        listed = ", ".join(o for o in options if o not in ("stop", "deadline")) or "-"
        lines.append(f"{name:<20} {kind:<10} {summary}")
        lines.append(f"{'':<31} options: {listed}" + (f"; in the name: {named}" if named else ""))
    return "\n".join(lines)


def get_method(spec: str | Policy, path: str = "method") -> MethodSpec:
    """The method a name means, with the options its name carries bound.

    Parameters
    ----------
    spec
        A name of :func:`methods`, with options after a colon by the grammar of
        :mod:`mipopt.specs`: ``grmu:heavy=0.3`` (a policy's own options),
        ``exact:model=wpm,use_case=initial`` (an exact method's), ``adapter(<policy>)``,
        ``reopt(<policy>)``; or a :class:`~mipopt.heuristics.online.Policy` object (yours, or
        one of :func:`mipopt.make_policy`), run in batch as a named policy is. A policy's name
        means the same here as in :func:`mipopt.simulate` (``ibm-initial-online``).
    path
        What to name in errors (``method``; the CLI passes ``--method``).

    Raises
    ------
    UnknownMethodError
        Naming ``path``: an unknown name (an :class:`InstanceError`, a :class:`ValueError`).
    ParameterTypeError
        Naming ``path``: neither a name nor a policy.
    InstanceError
        Naming ``path``: an option the name may not carry (naming those it may), a value it cannot
        read, a malformed spec.

    Examples
    --------
    >>> get_method("exact:model=grmu-slots").preset
    {'model': 'grmu-slots'}
    >>> get_method("nope")
    Traceback (most recent call last):
    ...
    mipopt.errors.UnknownMethodError: method: unknown method 'nope' (known: exact, exact-initial, ...)
    >>> import mipopt
    >>> get_method(mipopt.make_policy("mfi")).name
    'mfi'
    """
    if not isinstance(spec, str):
        return _policy_method(spec, path)
    from mipopt.heuristics.policies import POLICIES, RENAMED, make_policy

    parsed = parse_spec(spec, path)
    spec = spec.strip()
    table = _methods()
    base = table.get(parsed.name)
    if base is not None and base.policy is None:
        if parsed.inner is not None:
            raise InstanceError(path, f"method {base.name} wraps no policy: {shown(spec)}")
        if base.kind == "exact":
            given = _exact_options(parsed, base, path)
            preset = {**base.preset, **given}
            return replace(
                base,
                name=spec,
                preset=preset,
                options=tuple(o for o in base.options if o not in given),
                moves=_exact_moves(preset),
            )
        if parsed.options:
            raise InstanceError(path, f"method {base.name} takes no options in its name, got {shown(spec)}")
        return base
    if parsed.name not in POLICIES:
        if parsed.name in RENAMED:  # a name the online policies had: one line saying what it is now
            raise UnknownMethodError(path, RENAMED[parsed.name])
        known = ", ".join(table)
        raise UnknownMethodError(
            path, f"unknown method {shown(spec)} (known: {known}, adapter(<policy>), reopt(<policy>))"
        )
    if base is not None and parsed == Spec(parsed.name):
        return base
    made = make_policy(parsed, path)  # bad policy options fail here, naming path
    return MethodSpec(
        spec,
        "heuristic",
        f"online policy: {made.describe()}",
        _policy_options(made),
        _policy(spec),
        policy=spec,
        moves=_policy_moves(made),
    )


def _policy_method(policy: object, path: str) -> MethodSpec:
    """A :class:`~mipopt.heuristics.online.Policy` object as a method: in batch, as a named
    policy runs (its name, or its class's name when it has none)."""
    from mipopt.heuristics.online import Policy, run_batch

    if not isinstance(policy, Policy):
        raise ParameterTypeError(
            path,
            f"must be a method name (mipopt.methods()) or a Policy, got {type(policy).__name__} {policy!r}",
        )

    def run(instance: Instance, *, seed: int = 0, budget: Budget | None = None) -> Solution:
        return run_batch(policy, instance, seed=seed, budget=budget)

    name = policy.name or type(policy).__name__
    summary = f"online policy: {policy.describe()}"
    options = _policy_options(policy)
    return MethodSpec(name, "heuristic", summary, options, run, policy=name, moves=_policy_moves(policy))


def _exact_options(spec: Spec, base: MethodSpec, path: str) -> dict[str, Any]:
    """The options an exact method's name carries (``exact:model=wpm``): those of :data:`NAME_OPTIONS`
    its name does not already set, as text."""
    allowed = [o for o in NAME_OPTIONS if o not in base.preset]
    for key in spec.options:
        if key in base.preset:
            raise InstanceError(path, f"method {base.name} sets {key} itself ({key}={base.preset[key]!r})")
        if key not in allowed:
            listed = ", ".join(allowed)
            raise InstanceError(
                path,
                f"method {base.name} has no option {shown(key)} in its name (its options there: {listed})",
            )
    return dict(spec.options)


def solve(
    instance: Instance,
    method: str | Policy = "exact",
    *,
    model: str | None = None,
    solver: str | None = None,
    objective: str | None = None,
    use_case: str | None = None,
    time_limit_s: float | None = None,
    threads: int | None = None,
    seed: int | None = None,
    gap: float | None = None,
    warm_start: Solution | bool | None = None,
    progress: Callable[..., None] | None = None,
    stop: Any = None,
    deadline: float | None = None,
    max_restarts: int | None = None,
    max_moved_gb: float | None = None,
) -> Solution:
    """Place ``instance``'s new workloads with any method, exact or heuristic.

    Parameters
    ----------
    instance
        The cluster and its workloads (:func:`mipopt.load_instance`).
    method
        A name of :func:`methods` (default ``exact``), with options after a colon
        (``grmu:heavy=0.3``, ``exact:model=wpm``), or ``adapter(<policy>)``; or a
        :class:`~mipopt.heuristics.online.Policy` object, yours or :func:`mipopt.make_policy`'s,
        run in batch (the new workloads arrive in file order).
    model
        Exact only: ``grmu`` (default: the configuration model, staged proofs), ``grmu-slots``,
        ``grmu-paper`` or ``wpm`` (IBM's profit MIP).
    solver
        Exact only: ``highs`` (default) or ``cpsat``.
    objective
        Exact GRMU models only: ``lex:acceptance,hardware,migrations`` (default),
        ``lex:NAME[@TOL],...`` or ``weighted:W1,W2,W3[,W4]``.
    use_case
        Exact only: the WPM paper's ``initial``, ``compaction``, ``reconfiguration`` or
        ``joint``.
    time_limit_s, threads, gap
        Exact only: limit for the whole call in positive seconds, the rejection reasons after
        the method included (it ends :data:`EXPLAIN_S_PER_WORKLOAD` per workload early); solver
        threads (at least 1; more than the machine's cores is capped at their number with one
        :class:`UserWarning` saying so, since more only slow the solver down); relative gap in
        [0, 1) at which each stage stops (default 0: prove).
    seed
        Solver seed (exact) or the policy's random generator seed (online policies), from 0 to
        2,147,483,647 (32 bits); default 0.
    warm_start
        Exact only: a :class:`Solution` of ``instance`` to start from (it must verify);
        ``False`` skips the fast heuristics the GRMU driver tries first (for ``wpm``, ``True``
        tries IBM's rules first).
    progress
        Exact GRMU models only: called with a :class:`mipopt.exact.driver.StageEvent` as each
        stage starts and ends.
    stop, deadline
        Exact only: a :class:`mipopt.solvers.StopFlag` that ends the solve early keeping the best
        answer (Ctrl-C in the CLI), and a ``time.monotonic()`` deadline.
    max_restarts, max_moved_gb
        A :class:`~mipopt.instance.Budget`: at most this many running workloads change GPU or
        start, and at most this many GB of them move to another GPU. Every method that may move
        running workloads holds it (the exact ones prove the optimum within it); one that never
        moves them holds it trivially.

    Returns
    -------
    Solution
        Its status says what was proven; a time-limited exact answer carries its bound and gap;
        ``rejections`` says why each rejected workload is (:func:`mipopt.verifier.rejection_reasons`);
        it remembers ``instance``, so ``summary()`` needs no argument.

    Raises
    ------
    InstanceError
        Naming the parameter: an option the method does not take (``objective`` with a
        heuristic, or with ``model="wpm"``), or a bad value (``gap=2``, ``threads=0``).
    UnknownMethodError
        Naming ``method``: a name :func:`methods` does not know (an :class:`InstanceError`).
    ParameterTypeError
        Naming the parameter: a wrong type (``time_limit_s="10"``, ``threads=2.5``, a path
        for ``instance``: :func:`mipopt.load_instance` reads one); a :class:`TypeError` and an
        :class:`InstanceError`.

    Examples
    --------
    >>> import mipopt
    >>> inst = mipopt.load_instance("instances/quickstart.json")
    >>> sol = mipopt.solve(inst, time_limit_s=30)
    >>> sol.status.value, sol.objectives.acceptance
    ('optimal', 8.0)
    >>> mipopt.solve(inst, "mfi", objective="lex:acceptance")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: objective: method mfi takes no objective (it takes: seed)
    """
    started = time.monotonic()
    instance = instance_argument(instance)
    spec = get_method(method)
    budget = Budget(max_restarts, max_moved_gb)
    given = {
        k: v
        for k, v in {
            "model": model,
            "solver": solver,
            "objective": objective,
            "use_case": use_case,
            "time_limit_s": time_limit_s,
            "threads": threads,
            "seed": seed,
            "gap": gap,
            "warm_start": warm_start,
            "progress": progress,
            "stop": stop,
            "deadline": deadline,
            "budget": None if budget.unlimited or not spec.moves else budget,
        }.items()
        if v is not None
    }
    given = checked_options(given)
    from mipopt.verifier import explain
    from mipopt.verifier.reasons import CHECKS_S

    # GPUs of unknown layout hold MIG devices nobody has read: no method sees them; idle
    # instances are free space to every method, reused afterwards where the answer allows
    placeable = instance.placeable()
    free = replace(placeable, idle=()) if placeable.idle else placeable  # a new Instance is checked again
    ends = [t for t in (deadline, None if time_limit_s is None else started + time_limit_s) if t is not None]
    if ends and "deadline" in spec.takes(given):  # the method ends in time for the reasons after it
        given["deadline"] = min(ends) - EXPLAIN_S_PER_WORKLOAD * len(instance.workloads)
    solution = _reuse_idle(placeable, spec.solve(free, **given))
    # why each rejected workload is rejected (Solution.rejections); the answer is to the caller's instance
    # the rejection checks search too: within what the call's time limit leaves (at least a glance)
    checks = CHECKS_S if not ends else min(CHECKS_S, max(min(ends) - time.monotonic(), EXPLAIN_MIN_S))
    explained = explain(
        placeable, solution, exact=spec.kind == "exact", moves=spec.moves, budget=budget, time_limit_s=checks
    )
    return replace(explained, _instance=instance)


def checked_options(options: Mapping[str, Any]) -> dict[str, Any]:
    """``options`` with every one of :data:`OPTION_RULES` checked (and made a plain ``int`` or
    ``float``); None, the method's default, and the other options pass as they are. ``threads``
    beyond the machine's cores is capped here, once for the whole call, with a :class:`UserWarning`
    (:func:`mipopt.executors.capped_threads`).

    Raises
    ------
    InstanceError
        Naming the option whose value breaks its rule.
    ParameterTypeError
        Naming the option whose value is of the wrong type.

    Examples
    --------
    >>> checked_options({"gap": 2})
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: gap: must be in [0, 1), got 2
    """
    return {k: v if v is None or k not in OPTION_RULES else OPTION_RULES[k](v, k) for k, v in options.items()}


def _reuse_idle(instance: Instance, solution: Solution) -> Solution:
    """``solution`` with new workloads moved onto idle instances of their profile on the GPU
    chosen (:func:`mipopt.state.idle.reuse_idle`); the objectives stay, the metrics are
    computed again."""
    placed = solution.placed()
    moved = reuse_idle(instance, placed, solution.profiles())
    if moved == placed:
        return solution
    from mipopt.verifier import evaluate

    _, metrics = evaluate(instance, moved, solution.profiles())
    return replace(
        solution,
        placements=tuple(
            replace(a, gpu=moved[a.workload][0], start=moved[a.workload][1]) for a in solution.placements
        ),
        metrics={k: metrics.get(k, v) for k, v in solution.metrics.items()},
    )
