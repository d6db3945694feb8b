"""Benchmark: migration plans (issue 6) from the current placement to compaction, reconfiguration and random targets.

Cases (seeded by ``--seeds``/``--first-seed``), each a current placement and a target:

* ``compaction`` and ``reconfiguration``: the WPM issue's test cases
  (:func:`mipopt.workloads.ibm.ibm_instance` with ``load=0``: running workloads only, as
  ``bench_wpm.py`` builds them), targets from the WPM MIP (``wpm``, up to ``--wpm-max-gpus``,
  ``--wpm-time-limit`` per solve) and from IBM's rule-based heuristics (``rule-based``;
  compaction up to ``--compaction-max-gpus``: it takes about 40 s at 1,000 GPUs);
* ``random``: the same running workloads re-placed at random (:func:`random_target`): a
  seeded first-fit of the workloads, in random order, over the GPUs in one random order, each
  at a random legal free start; drawn without the planner, checked by the verifier;
* ``full-cycles`` and ``full-permuted``: a cluster with no free space (:func:`full_cluster`:
  every GPU filled at random until no profile fits) whose GPUs' contents move to other GPUs
  (:func:`permuted_target`): along short cycles of 2 to 8 GPUs, or along one uniform random
  permutation (whose longest cycle spans most of the cluster). Cycles of waits then have no
  room to park, so drains appear.

For each case the graph planner runs ``--repeats`` times (fewer when the runs pass
``--repeat-budget`` seconds; the row keeps the median runtime and the number of runs),
and the exact planner once (up to ``--exact-max-gpus``, ``--exact-time-limit``) when
:mod:`mipopt.migrate.optimal` is present. Every plan is replayed by
:func:`mipopt.verifier.verify_plan` against the target; an invalid plan, or a replay whose
counts differ from the plan's own metrics, stops the run with an error.

**Target: a 1,000-GPU plan in under 2 s with the graph planner** (median per case; PASS/FAIL
in the README for the ``--target-gpus`` size).

Usage::

    python -m benchmarks.bench_migrate [--sizes 8 80 1000] [--seeds 5] [--first-seed 0] [--repeats 5]
        [--exact-max-gpus 8] [--exact-time-limit 30] [--wpm-max-gpus 80] [--wpm-time-limit 30]
        [--compaction-max-gpus 80] [--target-gpus 1000] [--out-dir DIR] [--readme FILE] [--render] [--quick]

Rows go to ``OUT_DIR/migrate.csv``; the README section ``migrate`` is regenerated from all
rows of that file.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_migrate.py
    import _as_module  # noqa: F401

import argparse
import functools
import importlib.util
import math
import re
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from benchmarks import common
from mipopt.catalog import GpuModel, get_model
from mipopt.exact.wpm.solve import solve_wpm
from mipopt.heuristics.ibm_rules import ibm_compaction, ibm_reconfiguration
from mipopt.instance import Instance, InstanceBuilder, Solution, Status
from mipopt.migrate import Plan, plan_migration
from mipopt.solvers import SolverOptions
from mipopt.verifier import verify, verify_plan
from mipopt.workloads.ibm import ibm_instance
from mipopt.workloads.layout import host_layout

CASES = ("compaction", "reconfiguration", "random", "full-cycles", "full-permuted")
FULL_CYCLE = 8  # longest cycle of GPUs in ``full-cycles``
SOURCES = ("wpm", "rule-based", "random")
METHODS = ("graph", "exact")
TARGET_S = 2.0
Spot = tuple[str, int]
# Plan metrics kept in a row; the replay's own counts must match those it computes.
PLAN_METRICS = (
    "rounds",
    "moves",
    "extra_moves",
    "disruptive_moves",
    "moved_memory_slots",
    "moves_intra_gpu",
    "moves_inter_gpu",
    "moves_inter_host",
    "sequential_migrations",
)
COLUMNS = [
    "case",
    "gpus",
    "seed",
    "target",
    "target_runtime_s",
    "method",
    "workloads",
    "movers",
    *PLAN_METRICS,
    "repeats",
    "runtime_s",
    "max_runtime_s",
    "planner",
    "proven",
    "valid",
    "status",
    "message",
]


def exact_available() -> bool:
    """Whether the exact planner (``mipopt.migrate.optimal``) is installed."""
    return importlib.util.find_spec("mipopt.migrate.optimal") is not None


# --- targets drawn without the planner


@dataclass
class _Fill:
    """One GPU being filled: occupied slots, instances per profile, the +me holder."""

    mask: int = 0
    counts: dict[str, int] | None = None
    media: bool = False

    def fits(self, model: GpuModel, profile_name: str, start: int) -> bool:
        p = model.find(profile_name)
        assert p is not None
        counts = self.counts or {}
        return (
            start in p.starts
            and not self.mask & p.slot_mask(start)
            and counts.get(p.name, 0) < p.max_instances
            and not (p.media_extension and self.media)
        )

    def add(self, model: GpuModel, profile_name: str, start: int) -> None:
        p = model.find(profile_name)
        assert p is not None
        self.counts = self.counts or {}
        self.mask |= p.slot_mask(start)
        self.counts[p.name] = self.counts.get(p.name, 0) + 1
        self.media |= p.media_extension


def random_target(instance: Instance, rng: np.random.Generator) -> dict[str, Spot]:
    """The running workloads re-placed at random: a first-fit over one random GPU order.

    Workloads in random order; each goes to the first GPU of the order with a legal free
    start for its profile (room in the host's cpu and ram too), at a start drawn uniformly
    among those. So the target packs the workloads onto a random subset of GPUs, at random
    starts, and nearly every workload moves.

    Raises
    ------
    RuntimeError
        When a workload fits nowhere (cannot happen when the current placement is valid
        and the GPUs are all of one model, as in the IBM cases, except through host limits).
    """
    gpus = [instance.gpus[i] for i in rng.permutation(len(instance.gpus))]
    fill = {g.id: _Fill() for g in gpus}
    cpu: dict[str, float] = defaultdict(float)
    ram: dict[str, float] = defaultdict(float)
    running = list(instance.running)
    target: dict[str, Spot] = {}
    for k in rng.permutation(len(running)):
        w = running[k]
        for g in gpus:
            p = instance.profile_on(w, g.model)
            host = instance.host(g.host)
            if p is None or (host.cpu is not None and cpu[host.id] + w.cpu > host.cpu + 1e-9):
                continue
            if host.ram_gb is not None and ram[host.id] + w.ram_gb > host.ram_gb + 1e-9:
                continue
            starts = [s for s in p.starts if fill[g.id].fits(g.model, p.name, s)]
            if starts:
                start = int(starts[rng.integers(len(starts))])
                fill[g.id].add(g.model, p.name, start)
                cpu[host.id] += w.cpu
                ram[host.id] += w.ram_gb
                target[w.id] = (g.id, start)
                break
        else:
            raise RuntimeError(f"random_target: workload {w.id!r} ({w.profile}) fits on no GPU")
    return target


def full_cluster(n_gpus: int, seed: int, model: str = "A100-80GB", gpus_per_host: int = 8) -> Instance:
    """A cluster with no free space: every GPU filled with running workloads until no profile fits.

    Per GPU, a profile is drawn uniformly among those with a legal free start (and below
    ``max_instances``, one ``+me`` per GPU) and placed at a start drawn uniformly among
    those, until none fits. Hosts have no cpu or ram limit, so only the GPUs' geometry binds.
    """
    rng = np.random.default_rng([seed, n_gpus, 6])
    gpu_model = get_model(model)
    b = InstanceBuilder(name=f"full-{n_gpus}-s{seed}", description="bench_migrate: full cluster")
    names = [p.name for p in gpu_model.profiles]
    n = 0
    for host_id, gpu_ids in host_layout(n_gpus, gpus_per_host):
        b.add_host(host_id, dict.fromkeys(gpu_ids, model))
        for gid in gpu_ids:
            fill = _Fill()
            while True:
                options = [
                    (name, [s for s in gpu_model.find(name).starts if fill.fits(gpu_model, name, s)])  # type: ignore[union-attr]
                    for name in names
                ]
                options = [(name, starts) for name, starts in options if starts]
                if not options:
                    break
                name, starts = options[rng.integers(len(options))]
                start = starts[rng.integers(len(starts))]
                fill.add(gpu_model, name, start)
                b.add_workload(f"w{n}", name, placement=(gid, start))
                n += 1
    return b.build()


def permuted_target(
    instance: Instance, rng: np.random.Generator, max_cycle: int | None = None
) -> dict[str, Spot]:
    """Every GPU's workloads moved, at the same starts, to another GPU along a random permutation.

    With ``max_cycle``, the GPUs are shuffled and cut into cycles of 2 to ``max_cycle`` GPUs
    (lengths uniform; a last GPU left over joins the cycle before it): each GPU's contents
    go to the next GPU of its cycle. Without it, the permutation is uniform, whose longest
    cycle covers about 62 % of the GPUs on average.
    """
    ids = [g.id for g in instance.gpus]
    order = [ids[i] for i in rng.permutation(len(ids))]
    if max_cycle is None:
        to = dict(zip(ids, order, strict=True))
    else:
        cycles: list[list[str]] = []
        i = 0
        while i < len(order):
            n = int(rng.integers(2, max_cycle + 1))
            cycles.append(order[i : i + n])
            i += n
        if len(cycles) > 1 and len(cycles[-1]) == 1:
            last = cycles.pop()
            cycles[-1].extend(last)
        to = {c[k]: c[(k + 1) % len(c)] for c in cycles for k in range(len(c))}
    return {wid: (to[gpu], start) for wid, (gpu, start) in instance.current_placement().items()}


# --- cases


@dataclass(frozen=True)
class Case:
    """One current placement and one target, with where the target came from."""

    case: str
    gpus: int
    seed: int
    source: str
    instance: Instance
    target: Solution | dict[str, Spot] | None  # None: the source found no target
    target_runtime_s: float


def targets(
    case: str, gpus: int, seed: int, args: argparse.Namespace
) -> list[tuple[str, Instance, Callable[[], Solution | dict[str, Spot]]]]:
    """(source, instance, target maker) of one (case, size, seed), as ``args`` allow."""
    if case in ("full-cycles", "full-permuted"):
        inst = full_cluster(gpus, seed)
        cycle = FULL_CYCLE if case == "full-cycles" else None
        rng = np.random.default_rng([seed, gpus, 7])
        return [("random", inst, lambda: permuted_target(inst, rng, cycle))]
    inst = ibm_instance(gpus, seed=seed, load=0.0)
    if case == "random":
        return [("random", inst, lambda: random_target(inst, np.random.default_rng([seed, gpus, 5])))]
    out: list[tuple[str, Instance, Callable[[], Solution | dict[str, Spot]]]] = []
    if gpus <= args.wpm_max_gpus:
        opts = SolverOptions(time_limit_s=args.wpm_time_limit)
        out.append(("wpm", inst, lambda: solve_wpm(inst, use_case=case, options=opts)))
    if case == "reconfiguration" or gpus <= args.compaction_max_gpus:
        rule = ibm_compaction if case == "compaction" else ibm_reconfiguration
        out.append(("rule-based", inst, lambda: rule(inst)))
    return out


def cases(args: argparse.Namespace) -> list[Case]:
    """Every case of the run, its target drawn or solved (and checked by the verifier)."""
    out = []
    for gpus in args.sizes:
        for seed in range(args.first_seed, args.first_seed + args.seeds):
            for case in args.cases:
                for source, inst, make in targets(case, gpus, seed, args):
                    t0 = time.perf_counter()
                    target: Solution | dict[str, Spot] | None = make()
                    runtime = time.perf_counter() - t0
                    if isinstance(target, Solution):
                        if target.status is Status.NONE:
                            common.progress(f"{gpus} GPUs seed {seed} {case} {source}: no target, skipped")
                            target = None
                        elif not verify(inst, target).valid:
                            raise RuntimeError(f"{gpus} GPUs seed {seed} {case} {source}: invalid target")
                    out.append(Case(case, gpus, seed, source, inst, target, runtime))
    return out


# --- planning


def _placed(instance: Instance, target: Solution | dict[str, Spot]) -> dict[str, Spot]:
    return target.placed() if isinstance(target, Solution) else dict(target)


def checked(c: Case, plan: Plan, target: dict[str, Spot]) -> None:
    """Stop the run unless the replay finds ``plan`` valid, reaching ``target``, with the plan's counts."""
    report = verify_plan(c.instance, plan.to_dict(), target)
    where = f"{c.gpus} GPUs seed {c.seed} {c.case} {c.source} {plan.method}"
    if not report.valid:
        raise RuntimeError(f"{where}: invalid plan: {'; '.join(report.violations[:5])}")
    differ = {k: (v, plan.metrics.get(k)) for k, v in report.metrics.items() if plan.metrics.get(k) != v}
    if differ:
        raise RuntimeError(f"{where}: replay counts (replay, plan) differ from the plan's: {differ}")


def proven(plan: Plan) -> str:
    """For an exact run: ``True`` when the exact planner proved its plan optimal (within its round budget).

    Empty for the graph planner. The exact planner says what it proved in its message
    (``optimal...``) and falls back to the graph plan (method ``graph``) when it finds none.
    """
    return str(plan.method.startswith("exact") and plan.message.startswith("optimal"))


def plan_rows(c: Case, args: argparse.Namespace, exact: bool) -> list[dict[str, Any]]:
    if c.target is None:
        return []
    target = _placed(c.instance, c.target)
    current = c.instance.current_placement()
    movers = sum(1 for wid, spot in target.items() if current.get(wid) != spot)
    runs: list[tuple[str, int]] = [("graph", args.repeats)]
    if exact and c.gpus <= args.exact_max_gpus:
        runs.append(("exact", 1))
    rows = []
    for method, repeats in runs:
        row: dict[str, Any] = {
            "case": c.case,
            "gpus": c.gpus,
            "seed": c.seed,
            "target": c.source,
            "target_runtime_s": f"{c.target_runtime_s:.3f}",
            "method": method,
            "workloads": len(current),
            "movers": movers,
        }
        plans: list[Plan] = []
        while len(plans) < repeats and sum(p.runtime_s for p in plans) < args.repeat_budget:
            if method == "graph" and args.plan_timeout > 0:
                # The planner has no time limit of its own: one that runs away is stopped.
                job = functools.partial(plan_migration, c.instance, c.target, method="graph")
                child = common.run_isolated(job, args.plan_timeout)
                if child.error and not child.timed_out:
                    raise RuntimeError(
                        f"{c.gpus} GPUs seed {c.seed} {c.case} {c.source} graph: {child.error}"
                    )
                one = child.value
            else:
                one = plan_migration(c.instance, c.target, method=method, time_limit_s=args.exact_time_limit)  # type: ignore[arg-type]
            if one is None:
                break
            plans.append(one)
        if not plans:
            rows.append(
                {
                    **row,
                    **dict.fromkeys(PLAN_METRICS, ""),
                    **dict.fromkeys(("repeats", "runtime_s", "max_runtime_s", "proven", "valid"), ""),
                    "planner": method,
                    "status": "timeout",
                    "message": f"no plan within {args.plan_timeout:g} s: stopped",
                }
            )
            common.progress(
                f"{c.gpus} GPUs seed {c.seed} {c.case} {c.source} {method}: {movers} movers, "
                f"no plan within {args.plan_timeout:g} s"
            )
            continue
        plan = plans[0]
        checked(c, plan, target)
        times = [p.runtime_s for p in plans]
        done: dict[str, Any] = {
            **row,
            **{k: plan.metrics[k] for k in PLAN_METRICS},
            "repeats": len(plans),
            "runtime_s": f"{common.median(times):.4f}",
            "max_runtime_s": f"{max(times):.4f}",
            "planner": plan.method,
            "proven": proven(plan) if method == "exact" else "",
            "valid": True,
            "status": "ok",
            "message": plan.message.replace("\n", " "),
        }
        rows.append(done)
        m = plan.metrics
        common.progress(
            f"{c.gpus} GPUs seed {c.seed} {c.case} {c.source} {method}: {movers} movers, "
            f"{m['rounds']} rounds, {m['extra_moves']} extra, {m['disruptive_moves']} drains, "
            f"{common.median(times):.3f} s"
        )
    return rows


def bench(args: argparse.Namespace) -> list[dict[str, Any]]:
    exact = exact_available() and not args.no_exact
    if not exact:
        common.progress(
            "exact planner not run (mipopt.migrate.optimal missing or --no-exact): graph rows only"
        )
    rows = []
    for c in cases(args):
        rows += plan_rows(c, args, exact)
    return rows


# --- README


_mean = common.mean


def _order(k: tuple[int, str, str, str]) -> tuple[int, int, int, int]:
    gpus, case, source, method = k
    return gpus, CASES.index(case), SOURCES.index(source), METHODS.index(method)


Group = tuple[tuple[int, str, str, str], list[dict[str, str]], int]  # key, plans made, plans timed out


def _of_plans(cell: Callable[[list[dict[str, str]]], object]) -> Callable[[Group], object]:
    """A cell computed from a group's plans; ``-`` for a group whose plans all timed out."""
    return lambda g: cell(g[1]) if g[1] else "-"


def _mean_of(header: str, column: str, digits: int) -> common.Column[Group]:
    """The column of a metric's mean over a group's plans."""
    return common.Column(header, _of_plans(lambda rs: f"{_mean(rs, column):.{digits}f}"), "r")


MAIN_COLUMNS: list[common.Column[Group]] = [
    common.Column("GPUs", lambda g: f"{g[0][0]:,}", "r"),
    common.Column("Case", lambda g: g[0][1]),
    common.Column("Target", lambda g: g[0][2]),
    common.Column("Planner", lambda g: g[0][3]),
    common.Column("Plans", lambda g: len(g[1]), "r"),
    common.Column("Timed out", lambda g: g[2], "r"),
    _mean_of("Workloads", "workloads", 1),
    _mean_of("Movers", "movers", 1),
    _mean_of("Rounds", "rounds", 2),
    common.Column("Max rounds", _of_plans(lambda rs: max(int(r["rounds"]) for r in rs)), "r"),
    _mean_of("Moves", "moves", 1),
    _mean_of("Extra moves", "extra_moves", 2),
    _mean_of("Drains", "disruptive_moves", 2),
    common.Column(
        "Plans with drains", _of_plans(lambda rs: sum(int(r["disruptive_moves"]) > 0 for r in rs)), "r"
    ),
    _mean_of("Moved memory", "moved_memory_slots", 1),
    _mean_of("Inter-host", "moves_inter_host", 1),
    _mean_of("Sequential", "sequential_migrations", 1),
    common.Column(
        "Median s", _of_plans(lambda rs: f"{common.median(float(r['runtime_s']) for r in rs):.3f}"), "r"
    ),
    common.Column("Max s", _of_plans(lambda rs: f"{max(float(r['runtime_s']) for r in rs):.3f}"), "r"),
    common.Column(
        "Proven",
        lambda g: (
            f"{sum(r['proven'] == 'True' for r in g[1])}/{len(g[1])}" if g[1] and g[0][3] == "exact" else "-"
        ),
        "r",
    ),
]


def readme_table(rows: list[dict[str, str]], source: str, args: argparse.Namespace) -> str:
    """The latest run of each (GPUs, case, target, planner), exact against graph, the speed target."""

    def key(r: dict[str, str]) -> tuple[int, str, str, str]:
        return int(r["gpus"]), r["case"], r["target"], r["method"]

    groups = common.latest(rows, key, when=common.run_minute)
    rows = common.latest_rows(rows, key, when=common.run_minute)
    body = [
        (k, [r for r in rs if r["status"] == "ok"], sum(r["status"] != "ok" for r in rs))
        for k, rs in sorted(groups.items(), key=lambda kv: _order(kv[0]))
    ]
    note = (
        f"_Generated by `benchmarks/bench_migrate.py` from `{source}`: the latest run of each (GPUs, case, "
        "target, planner), means over its seeds (Max rounds, Plans with drains, Max s: over the seeds). "
        "Movers: workloads whose target differs from where they run. Extra moves: parks; Drains: disruptive "
        "moves; Moved memory in memory slots; Sequential: IBM's sequential migrations of the target. "
        "Graph runtimes are the median of the run's repeats per plan; every plan was replayed by "
        "`verify_plan` and found valid. Timed out: graph plans stopped at the run's `--plan-timeout`, left out "
        "of the means._"
    )
    parts = [note, common.table(MAIN_COLUMNS, body), comparison(rows), speed(rows, args.target_gpus)]
    return "\n\n".join(p for p in parts if p)


def comparison(rows: list[dict[str, str]]) -> str:
    """Exact against graph on the same plans: how often each is better in rounds, extra moves, drains."""
    pairs: dict[tuple[int, str, str, str], dict[str, dict[str, str]]] = defaultdict(dict)
    for r in rows:
        if r["status"] == "ok":
            pairs[int(r["gpus"]), r["case"], r["target"], r["seed"]][r["method"]] = r
    by_group: dict[tuple[int, str, str], list[tuple[dict[str, str], dict[str, str]]]] = defaultdict(list)
    for (gpus, case, src, _seed), m in pairs.items():
        if "exact" in m and "graph" in m:
            by_group[gpus, case, src].append((m["exact"], m["graph"]))
    if not by_group:
        return "_No exact plans in the latest runs: no exact-vs-graph comparison._"

    def tally(ps: list[tuple[dict[str, str], dict[str, str]]], col: str) -> str:
        fewer = sum(int(e[col]) < int(g[col]) for e, g in ps)
        more = sum(int(e[col]) > int(g[col]) for e, g in ps)
        return f"{fewer} / {len(ps) - fewer - more} / {more}"

    header = [
        "GPUs", "Case", "Target", "Plans", "Rounds (exact / graph)", "Rounds: fewer / same / more",
        "Extra moves (exact / graph)", "Extra: fewer / same / more", "Drains: fewer / same / more",
        "Moved memory: less / same / more", "Exact proven", "Exact median s",
    ]  # fmt: skip
    body = []
    all_pairs: list[tuple[dict[str, str], dict[str, str]]] = []
    for (gpus, case, src), ps in sorted(by_group.items(), key=lambda kv: _order((*kv[0], "graph"))):
        all_pairs += ps
        body.append(_comparison_row(f"{gpus:,}", case, src, ps, tally))
    if len(by_group) > 1:
        body.append(_comparison_row("all", "", "", all_pairs, tally))
    note = (
        "_Exact against graph on the same (case, target, seed): means of each, then how many plans the exact "
        "planner makes with fewer / the same / more rounds, extra moves, drains and moved memory than the "
        "graph planner. The exact planner optimizes drains, then rounds, then extra moves, then memory; a "
        "plan it does not prove optimal within its time limit is its best found._"
    )
    return f"{note}\n\n" + common.markdown_table(header, body, align="rllr" + "r" * 8)


def _comparison_row(
    gpus: str,
    case: str,
    src: str,
    ps: list[tuple[dict[str, str], dict[str, str]]],
    tally: Callable[[list[tuple[dict[str, str], dict[str, str]]], str], str],
) -> list[Any]:
    ex = [e for e, _ in ps]
    gr = [g for _, g in ps]
    return [
        gpus,
        case,
        src,
        len(ps),
        f"{_mean(ex, 'rounds'):.2f} / {_mean(gr, 'rounds'):.2f}",
        tally(ps, "rounds"),
        f"{_mean(ex, 'extra_moves'):.2f} / {_mean(gr, 'extra_moves'):.2f}",
        tally(ps, "extra_moves"),
        tally(ps, "disruptive_moves"),
        tally(ps, "moved_memory_slots"),
        f"{sum(e['proven'] == 'True' for e in ex)}/{len(ex)}",
        f"{common.median(float(e['runtime_s']) for e in ex):.2f}",
    ]


def _timeout_s(row: dict[str, str]) -> float:
    """The time limit a timed-out row names in its message (``no plan within 60 s: stopped``)."""
    found = re.search(r"within ([0-9.]+) s", row["message"])
    return float(found.group(1)) if found else math.nan


def speed(rows: list[dict[str, str]], target_gpus: int) -> str:
    """The speed target: graph plans at ``target_gpus`` GPUs under 2 s (median per plan, every case)."""
    big = [r for r in rows if r["method"] == "graph" and int(r["gpus"]) == target_gpus]
    if not big:
        return f"_No graph plans at {target_gpus:,} GPUs in the latest runs: speed target not measured._"
    body = []
    for case in CASES:
        rs = [r for r in big if r["case"] == case]
        for src in SOURCES:
            sel = [r for r in rs if r["target"] == src]
            if not sel:
                continue
            late = [r for r in sel if r["status"] != "ok"]
            # a timed-out plan counts as longer than any finished one
            times = sorted(float(r["runtime_s"]) for r in sel if r["status"] == "ok") + [math.inf] * len(late)
            limit = max((_timeout_s(r) for r in late), default=0.0)
            mid, top = common.median(times), times[-1]
            body.append(
                [
                    case,
                    src,
                    len(sel),
                    f"{mid:.3f}" if mid < math.inf else f"> {limit:g}",
                    f"{top:.3f}" if top < math.inf else f"> {limit:g}",
                    len(late),
                    "PASS" if top < TARGET_S else "FAIL",
                ]
            )
    verdict = "PASS" if all(row[-1] == "PASS" for row in body) else "FAIL"
    note = (
        f"**Target: a {target_gpus:,}-GPU plan in under {TARGET_S:g} s with the graph planner: {verdict}** "
        "(every plan's median runtime over the repeats below the target, none timed out; machine and commit "
        "in the CSV)."
    )
    header = ["Case", "Target", "Plans", "Median s", "Max s", "Timed out", "Under 2 s"]
    return f"{note}\n\n" + common.markdown_table(header, body, align="llrrrrl")


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--sizes", type=int, nargs="+", default=[8, 80, 1000], help="GPUs (8 80 1000)")
    parser.add_argument("--cases", nargs="+", choices=CASES, default=list(CASES))
    parser.add_argument("--seeds", type=int, default=5, help="cases per size (default 5)")
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--repeats", type=int, default=5, help="graph planner runs per plan (default 5)")
    parser.add_argument(
        "--repeat-budget", type=float, default=20.0, help="no further repeat of a plan after this many s (20)"
    )
    parser.add_argument(
        "--plan-timeout",
        type=float,
        default=60.0,
        help="stop a graph plan after this many s, recorded as a timeout (60; 0: no limit)",
    )
    parser.add_argument("--exact-max-gpus", type=int, default=8, help="exact planner up to (default 8)")
    parser.add_argument("--exact-time-limit", type=float, default=30.0, help="per exact plan (default 30)")
    parser.add_argument("--no-exact", action="store_true", help="graph planner only")
    parser.add_argument("--wpm-max-gpus", type=int, default=80, help="WPM targets up to (default 80)")
    parser.add_argument("--wpm-time-limit", type=float, default=30.0, help="per WPM solve (default 30)")
    parser.add_argument(
        "--compaction-max-gpus", type=int, default=80, help="rule-based compaction targets up to (default 80)"
    )
    parser.add_argument("--target-gpus", type=int, default=1000, help="size of the speed target (1000)")


# A small run: 4 and 16 GPUs, one seed, targets and the exact planner at 4 GPUs only.
QUICK = (
    "--sizes", "4", "16", "--seeds", "1", "--repeats", "2", "--wpm-max-gpus", "4", "--wpm-time-limit", "5",
    "--exact-max-gpus", "4", "--exact-time-limit", "10", "--compaction-max-gpus", "4", "--target-gpus", "16",
)  # fmt: skip
BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("migrate.csv", COLUMNS, {"migrate": readme_table})],
    arguments=arguments,
    measure=bench,
    quick=QUICK,
)
main = BENCH.main
parse_args = BENCH.parse_args

if __name__ == "__main__":
    raise SystemExit(main())
