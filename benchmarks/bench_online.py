"""Benchmark: online decisions and replays, per-state tables versus a per-GPU Python loop.

Issue 5's speed targets, each measured two ways that must make the same decisions:

* ``decision``: one MFI decision (:class:`~mipopt.heuristics.mfi.MinimumFragmentationIncrement`,
  Alg. 2) over ``--decision-gpus`` A100-80GB GPUs (default 6,000) in reachable states;
  target under 1 ms;
* ``alibaba``: a full replay of the mapped Alibaba GPU trace (raw timestamps, default
  options of :func:`mipopt.workloads.alibaba_trace`: 8,063 requests on 6,212 GPUs) under
  each policy; target under 3 s per policy;
* ``fbk``: ``--fbk-runs`` replays (default 100) of the MFI paper's set-up
  (:func:`mipopt.workloads.fbk_trace`: 100 A100-80GB GPUs, uniform profiles, loaded to
  saturation, seeds 0-99) under each policy, total time; target under 30 s per policy.

``tables`` is the library as it is: :class:`~mipopt.state.cluster.Cluster` and the
policies read the per-state geometry tables for all GPUs at once. ``python-loop`` is the
straightforward alternative, written here for ``ff`` (GRMU's first fit at the driver's
default start) and ``mfi``: a policy whose ``choose`` visits the GPUs one by one, checks
the cluster's rules on each and evaluates placements with the one-state definitions of
:mod:`mipopt.geometry.reference`. Both replay through the same simulator; the script
records every decision of both and stops with an error if they differ anywhere.

The loop is slow, so it replays only the first ``--loop-requests`` requests of the
Alibaba trace and the first ``--loop-runs`` FBK runs, and its time is extrapolated
linearly to the full size (the table says so).

Usage::

    python -m benchmarks.bench_online [--parts decision alibaba fbk] [--policies ...]
        [--alibaba ../shared/data/alibaba-gpu-v2023] [--repeats 3] [--loop-requests 250]
        [--decision-gpus 6000] [--decision-repeats 7] [--fbk-runs 100] [--loop-runs 5]
        [--seed 0] [--out-dir DIR] [--readme FILE] [--render] [--quick]

Rows go to ``OUT_DIR/online.csv``; the README section ``online`` is regenerated from all
rows of that file. When the Alibaba trace is not at ``--alibaba``, that part is skipped
with a message.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_online.py
    import _as_module  # noqa: F401

import argparse
import dataclasses
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from benchmarks import common
from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.geometry import NO_START, reference, tables_for
from mipopt.heuristics.online import Decision, Policy
from mipopt.heuristics.policies import make_policy
from mipopt.instance import Instance, InstanceBuilder, Workload
from mipopt.instance.trace import Trace
from mipopt.simulation import simulate
from mipopt.state.cluster import Cluster
from mipopt.workloads import alibaba_trace, fbk_trace
from mipopt.workloads.alibaba import NODE_FILE, POD_FILE

PARTS = ("decision", "alibaba", "fbk")
POLICIES = (
    "ff",
    "bf",
    "mcc",
    "mecc",
    "grmu",
    "ff-agnostic",
    "rr",
    "bf-bi",
    "wf-bi",
    "mfi",
    "lb",
    "ibm-initial-online",
    "adapter(mfi)",
)
#: Policies measured under an earlier name: the online IBM rule was ``ibm-initial`` until issue 25
#: (a name that means IBM's batch rule in ``mipopt solve``).
RENAMED = {"ibm-initial": "ibm-initial-online"}
TARGET_S = {"decision": 1e-3, "alibaba": 3.0, "fbk": 30.0}
DEFAULT_ALIBABA = common.REPO_ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023"

DECISION_MODEL = "A100-80GB"
GPUS_PER_HOST = 8
# Decisions timed per repeat on the table path: enough that one repeat lasts well above
# the clock's resolution and the scheduler's noise.
DECISION_REQUESTS = 600
DEPART_PROBABILITY = 0.3
FBK_MODEL = "A100-80GB"
FBK_DISTRIBUTION: Literal["uniform"] = "uniform"
# The tolerance Cluster allows on host cpu and ram.
HOST_SLACK = 1e-9

COLUMNS = (
    "numpy",
    "measurement",
    "policy",
    "method",
    "workload",
    "gpus",
    "requests",
    "runs",
    "repeats",
    "timed_fraction",
    "time_s",
    "min_time_s",
    "runtime_s",
    "ratio",
    "target_s",
    "decisions_checked",
    "mismatches",
    "acceptance_rate",
    "seed",
)


class DecisionsDiffer(common.Failed):
    """The table and loop methods decided differently: a bug in one of them."""


# --- the per-GPU loop baseline -------------------------------------------------


class LoopPolicy(Policy):
    """A policy that visits the GPUs one by one in plain Python (the baseline of this benchmark)."""

    @staticmethod
    def candidates(cluster: Cluster, w: Workload) -> Iterator[tuple[int, GpuModel, Profile, int]]:
        """GPUs, in position order, where every rule but the free slots allows ``w``: (k, model, profile, mask).

        The rules of :meth:`Cluster.legal`, one GPU at a time: a model ``w`` may run on
        and has its profile, fewer instances of the profile than ``max_instances``, no
        second ``+me`` instance, room for ``w``'s cpu and ram on the GPU's host.
        """
        for k, gpu in enumerate(cluster.instance.gpus):
            profile = cluster.instance.profile_on(w, gpu.model)
            if profile is None:
                continue
            p = gpu.model.profiles.index(profile)
            if cluster.count[k, p] >= profile.max_instances:
                continue
            if profile.media_extension and cluster.media[k]:
                continue
            h = cluster.host[k]
            if cluster.cpu[h] + w.cpu > cluster.cpu_cap[h] + HOST_SLACK:
                continue
            if cluster.ram[h] + w.ram_gb > cluster.ram_cap[h] + HOST_SLACK:
                continue
            yield k, gpu.model, profile, int(cluster.mask[k])


class LoopFirstFit(LoopPolicy):
    """GRMU ff, GPU by GPU: the first GPU where the profile fits, at the driver's default start."""

    name = "ff"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        for k, model, profile, mask in self.candidates(cluster, w):
            start = reference.default_start(model, mask, profile)
            if start is not None:
                return k, start
        return None


class LoopMfi(LoopPolicy):
    """MFI Alg. 2, GPU by GPU: the (GPU, start) raising F least; ties to the lowest GPU, then start."""

    name = "mfi"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        best: Decision = None
        best_increase = 0
        for k, model, profile, mask in self.candidates(cluster, w):
            before = reference.fbk_fragmentation(model, mask)
            for start in sorted(reference.legal_starts(model, mask, profile)):
                increase = reference.fbk_fragmentation(model, mask | profile.slot_mask(start)) - before
                if best is None or increase < best_increase:
                    best, best_increase = (k, start), increase
        return best


LOOP_POLICIES: dict[str, type[LoopPolicy]] = {"ff": LoopFirstFit, "mfi": LoopMfi}


class Recording(Policy):
    """Another policy, recording every answer of its ``choose``: what the two methods must agree on."""

    def __init__(self, inner: Policy) -> None:
        self.inner = inner
        self.tick = inner.tick
        self.decisions: list[tuple[str, Decision]] = []

    def start(self, cluster: Cluster, rng: np.random.Generator) -> None:
        self.decisions.clear()
        self.inner.start(cluster, rng)

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        at = self.inner.choose(cluster, w, now)
        self.decisions.append((w.id, at))
        return at

    def on_reject(self, cluster: Cluster, w: Workload, now: float) -> bool:
        return self.inner.on_reject(cluster, w, now)

    def depart(self, cluster: Cluster, w: Workload, now: float) -> None:
        self.inner.depart(cluster, w, now)

    def on_tick(self, cluster: Cluster, now: float) -> None:
        self.inner.on_tick(cluster, now)


def check_same(what: str, tables: list[tuple[str, Decision]], loop: list[tuple[str, Decision]]) -> int:
    """Number of decisions compared; raises :class:`DecisionsDiffer` at the first difference."""
    if len(tables) != len(loop):
        raise DecisionsDiffer(f"{what}: {len(tables)} table decisions, {len(loop)} loop decisions")
    for i, (a, b) in enumerate(zip(tables, loop, strict=True)):
        if a != b:
            raise DecisionsDiffer(f"{what}: decision {i} differs: tables {a}, python loop {b}")
    return len(tables)


# --- one decision over many GPUs ----------------------------------------------


def decision_instance(gpus: int, seed: int) -> tuple[Instance, list[str]]:
    """``gpus`` A100-80GB GPUs (hosts of 8) in reachable states, and one new workload per base profile.

    Each GPU lives through a random history of 0 to ``3 x slots`` events, as in
    ``bench_geometry.py``: with probability ``DEPART_PROBABILITY`` (when one runs) a
    random running instance leaves, else a uniformly drawn base profile arrives at the
    driver's default start (rejected when it does not fit). What is left runs.
    """
    model = get_model(DECISION_MODEL)
    tables = tables_for(model)
    base = [p for p in model.profiles if p.base]
    rng = np.random.default_rng(seed)
    b = InstanceBuilder(f"decision-{gpus}")
    n = 0
    for h in range((gpus + GPUS_PER_HOST - 1) // GPUS_PER_HOST):
        ids = [f"h{h}-g{i}" for i in range(min(GPUS_PER_HOST, gpus - h * GPUS_PER_HOST))]
        b.add_host(f"h{h}", {g: DECISION_MODEL for g in ids})
        for g in ids:
            running: list[tuple[Profile, int]] = []
            mask = 0
            for _ in range(int(rng.integers(0, 3 * model.slots + 1))):
                if running and rng.random() < DEPART_PROBABILITY:
                    profile, start = running.pop(int(rng.integers(len(running))))
                    mask &= ~profile.slot_mask(start)
                    continue
                profile = base[int(rng.integers(len(base)))]
                start = int(tables.default_start[mask, model.profiles.index(profile)])
                if start != NO_START:
                    running.append((profile, start))
                    mask |= profile.slot_mask(start)
            for profile, start in running:
                b.add_workload(f"w{n}", profile.name, placement=(g, start))
                n += 1
    requests = [f"new-{p.name}" for p in base]
    for wid, p in zip(requests, base, strict=True):
        b.add_workload(wid, p.name)
    return b.build(), requests


def bench_decision(gpus: int, repeats: int, loop_repeats: int, seed: int) -> list[dict[str, Any]]:
    """Time one MFI decision over ``gpus`` GPUs, tables and loop; their rows."""
    instance, request_ids = decision_instance(gpus, seed)
    cluster = Cluster(instance)
    requests = [instance.workload(wid) for wid in request_ids]
    tables, loop = make_policy("mfi"), LoopMfi()
    tables.start(cluster, np.random.default_rng(seed))

    batch = requests * max(1, DECISION_REQUESTS // len(requests))
    common.progress(f"decision: mfi tables, {repeats} repeats x {len(batch)} decisions on {gpus:,} GPUs")
    answers = [(w.id, tables.choose(cluster, w, 0.0)) for w in requests]  # also warms numpy's dispatch
    times, total = [], 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for w in batch:
            tables.choose(cluster, w, 0.0)
        elapsed = time.perf_counter() - t0
        times.append(elapsed / len(batch))
        total += elapsed
    table_timing = Timing(times, total, len(batch))

    common.progress(f"decision: mfi python loop, {loop_repeats} repeats x {len(requests)} decisions")
    times, total, checked = [], 0.0, 0
    for _ in range(loop_repeats):
        t0 = time.perf_counter()
        decided = [(w.id, loop.choose(cluster, w, 0.0)) for w in requests]
        elapsed = time.perf_counter() - t0
        times.append(elapsed / len(requests))
        total += elapsed
        checked += check_same("decision", answers, decided)
    loop_timing = Timing(times, total, len(requests))

    shared = {
        "measurement": "decision",
        "policy": "mfi",
        "workload": f"{gpus:,} {DECISION_MODEL} GPUs, {len(cluster.placed):,} instances running; "
        "one request per base profile",
        "gpus": gpus,
        "decisions_checked": checked,
        "mismatches": 0,
        "acceptance_rate": "",
        "seed": seed,
    }
    return rows_for(shared, table_timing, loop_timing)


# --- replays ------------------------------------------------------------------


def replay_time(trace: Trace, spec: str, seed: int) -> tuple[float, float]:
    """Wall time of one replay of ``trace`` under a fresh ``spec`` policy, and its acceptance rate."""
    policy = make_policy(spec)
    t0 = time.perf_counter()
    result = simulate(trace, policy, seed=seed)
    return time.perf_counter() - t0, float(result.summary["acceptance_rate"])


def recorded_replay(trace: Trace, policy: Policy, seed: int) -> tuple[float, list[tuple[str, Decision]]]:
    """Wall time of one replay under ``policy`` and every decision it made."""
    recording = Recording(policy)
    t0 = time.perf_counter()
    simulate(trace, recording, seed=seed)
    return time.perf_counter() - t0, recording.decisions


def bench_alibaba(
    path: Path, policies: Sequence[str], repeats: int, loop_requests: int, seed: int
) -> list[dict[str, Any]]:
    """Full replays of the mapped Alibaba trace per policy; the loop on its first requests."""
    trace = alibaba_trace(path)
    n = len(trace.requests)
    gpus = len(trace.cluster.gpus)
    prefix = n if loop_requests <= 0 else min(loop_requests, n)
    head = dataclasses.replace(trace, requests=trace.requests[:prefix])
    rows: list[dict[str, Any]] = []
    for spec in policies:
        common.progress(f"alibaba: {spec} tables, {repeats} replays of {n:,} requests")
        times, rate = [], 0.0
        for _ in range(repeats):
            elapsed, rate = replay_time(trace, spec, seed)
            times.append(elapsed)
        shared = {
            "measurement": "alibaba",
            "policy": spec,
            "workload": f"alibaba-gpu-v2023, raw timestamps: {n:,} requests on {gpus:,} GPUs",
            "gpus": gpus,
            "acceptance_rate": f"{rate:.4f}",
            "seed": seed,
        }
        tables = Timing(times, sum(times), n, 1)
        if spec not in LOOP_POLICIES:
            rows += rows_for(shared, tables, None)
            continue
        common.progress(f"alibaba: {spec} python loop, first {prefix:,} of {n:,} requests")
        _, expected = recorded_replay(head, make_policy(spec), seed)
        elapsed, decided = recorded_replay(head, LOOP_POLICIES[spec](), seed)
        shared |= {"decisions_checked": check_same(f"alibaba {spec}", expected, decided), "mismatches": 0}
        loop = Timing([elapsed * n / prefix], elapsed, prefix, 1, prefix / n)
        rows += rows_for(shared, tables, loop)
    return rows


def bench_fbk(
    policies: Sequence[str], gpus: int, runs: int, repeats: int, loop_runs: int, seed: int
) -> list[dict[str, Any]]:
    """``runs`` FBK replays per policy (seeds ``seed`` to ``seed + runs - 1``); the loop on the first ``loop_runs``."""
    common.progress(f"fbk: generating {runs} traces")
    traces = [
        # lifetimes uniform in [1, T] (the reading of the rows before issue 15, so they stay comparable)
        fbk_trace(
            gpus=gpus, distribution=FBK_DISTRIBUTION, seed=seed + r, model=FBK_MODEL, lifetimes="demand"
        )
        for r in range(runs)
    ]
    requests = sum(len(t.requests) for t in traces)
    loop_runs = min(loop_runs, runs)
    rows: list[dict[str, Any]] = []
    for spec in policies:
        common.progress(f"fbk: {spec} tables, {repeats} x {runs} replays")
        totals, rates = [], 0.0
        for _ in range(repeats):
            total = rates = 0.0
            for r, trace in enumerate(traces):
                elapsed, rate = replay_time(trace, spec, seed + r)
                total += elapsed
                rates += rate
            totals.append(total)
        shared = {
            "measurement": "fbk",
            "policy": spec,
            "workload": f"fbk {FBK_DISTRIBUTION}, {gpus} {FBK_MODEL} GPUs to saturation, "
            f"seeds {seed}-{seed + runs - 1}",
            "gpus": gpus,
            "acceptance_rate": f"{rates / runs:.4f}",
            "seed": seed,
        }
        tables = Timing(totals, sum(totals), requests, runs)
        if spec not in LOOP_POLICIES or loop_runs == 0:
            rows += rows_for(shared, tables, None)
            continue
        common.progress(f"fbk: {spec} python loop, {loop_runs} of {runs} replays")
        elapsed, checked = 0.0, 0
        for r, trace in enumerate(traces[:loop_runs]):
            _, expected = recorded_replay(trace, make_policy(spec), seed + r)
            spent, decided = recorded_replay(trace, LOOP_POLICIES[spec](), seed + r)
            checked += check_same(f"fbk {spec} run {r}", expected, decided)
            elapsed += spent
        shared |= {"decisions_checked": checked, "mismatches": 0}
        timed = sum(len(t.requests) for t in traces[:loop_runs])
        loop = Timing([elapsed * runs / loop_runs], elapsed, timed, loop_runs, loop_runs / runs)
        rows += rows_for(shared, tables, loop)
    return rows


# --- rows ---------------------------------------------------------------------


@dataclasses.dataclass(frozen=True)
class Timing:
    """What one method's timing measured.

    ``times_s`` has one value per repeat, already scaled to the full size (one decision,
    one whole replay, all runs): divided by ``fraction``, the share of it actually timed.
    """

    times_s: list[float]
    runtime_s: float  # wall time actually spent timing
    requests: int  # requests (decisions) actually timed per repeat
    runs: int | str = ""  # replays actually timed per repeat
    fraction: float = 1.0


def rows_for(shared: dict[str, Any], tables: Timing, loop: Timing | None) -> list[dict[str, Any]]:
    """The ``tables`` row and, when the loop ran, the ``python-loop`` row of one (measurement, policy)."""
    table_s = common.median(tables.times_s)
    base = {**shared, "numpy": np.__version__, "target_s": TARGET_S[shared["measurement"]]}
    if loop is None:
        base |= {"decisions_checked": "", "mismatches": ""}
    rows = []
    for method, timing in (("tables", tables), ("python-loop", loop)):
        if timing is None:
            continue
        median = common.median(timing.times_s)
        ratio = (
            f"{common.median(loop.times_s) / table_s:.1f}" if loop is not None and method == "tables" else ""
        )
        rows.append(
            {
                **base,
                "method": method,
                "requests": timing.requests,
                "runs": timing.runs,
                "repeats": len(timing.times_s),
                "timed_fraction": f"{timing.fraction:.6g}",
                "time_s": f"{median:.6g}",
                "min_time_s": f"{min(timing.times_s):.6g}",
                "runtime_s": f"{timing.runtime_s:.3f}",
                "ratio": ratio,
            }
        )
    return rows


# --- README table -------------------------------------------------------------


def _duration(seconds: float) -> str:
    if seconds < 1e-3:
        return f"{seconds * 1e6:.0f} µs"
    if seconds < 1:
        return f"{seconds * 1e3:.1f} ms"
    if seconds < 600:
        return f"{seconds:.2f} s"
    return f"{seconds / 60:.0f} min"


Pair = tuple[dict[str, str], dict[str, str] | None]  # a run's tables row and its python-loop row


def _loop_cell(pair: Pair) -> str:
    t, loop = pair
    if loop is None:
        return "-"
    text = _duration(float(loop["time_s"]))
    if float(loop["timed_fraction"]) < 1:
        if t["measurement"] == "alibaba":
            timed = f"the first {int(loop['requests']):,} of {int(t['requests']):,} requests"
        else:
            timed = f"{loop['runs']} of {t['runs']} runs"
        text += f" (extrapolated from {timed})"
    return text


def _target_cell(pair: Pair) -> str:
    table_s, target_s = float(pair[0]["time_s"]), float(pair[0]["target_s"])
    verdict = "PASS" if table_s < target_s else "FAIL"
    return f"{verdict} (< {target_s * 1e3:g} ms)" if target_s < 1 else f"{verdict} (< {target_s:g} s)"


COLUMNS_README: list[common.Column[Pair]] = [
    common.Column("Measurement", lambda p: p[0]["measurement"]),
    common.Column("Policy", lambda p: p[0]["policy"]),
    common.Column("Workload", lambda p: p[0]["workload"]),
    common.Column("Tables", lambda p: _duration(float(p[0]["time_s"])), "r"),
    common.Column("Python loop", _loop_cell, "r"),
    common.Column("Ratio", lambda p: f"{float(p[0]['ratio']):,.0f}x" if p[0]["ratio"] else "-", "r"),
    common.Column("Target", _target_cell),
    common.Column("Same decisions", lambda p: f"{int(p[1]['decisions_checked']):,}" if p[1] else "-", "r"),
    common.Column("Commit", lambda p: p[0]["commit"]),
    common.Column("Date", lambda p: p[0]["date"][:10]),
    common.Column("Machine", lambda p: p[0]["machine"]),
]


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """The README section: the latest run of each (measurement, policy, workload)."""
    rows = [{**r, "policy": RENAMED.get(r["policy"], r["policy"])} for r in rows]
    runs = common.latest(rows, lambda r: (r["measurement"], r["policy"], r["workload"]))

    def order(config: tuple[str, str, str]) -> tuple[int, int, str]:
        policy = POLICIES.index(config[1]) if config[1] in POLICIES else len(POLICIES)
        return PARTS.index(config[0]), policy, config[2]

    pairs = [
        (
            next(r for r in runs[c] if r["method"] == "tables"),
            next((r for r in runs[c] if r["method"] == "python-loop"), None),
        )
        for c in sorted(runs, key=order)
        if any(r["method"] == "tables" for r in runs[c])
    ]
    note = (
        f"_Generated by `benchmarks/bench_online.py` from {len(rows)} rows of `{source}`: the latest "
        "run of each (measurement, policy, workload). Times are medians over the run's repeats: per "
        "decision (`decision`), per full replay (`alibaba`), for all runs together (`fbk`). The "
        "Python loop replays a prefix and is extrapolated linearly where the column says so; "
        "'Same decisions' counts the decisions on which both methods were compared (they agreed on "
        "all, or the run would have failed)._"
    )
    return f"{note}\n\n{common.table(COLUMNS_README, pairs)}"


# --- command line -------------------------------------------------------------


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), help="what to measure")
    parser.add_argument(
        "--policies", nargs="+", default=list(POLICIES), help="policies of the replays (default: all online)"
    )
    parser.add_argument(
        "--alibaba",
        type=Path,
        default=DEFAULT_ALIBABA,
        help="directory of the Alibaba GPU trace 2023 (default: ../shared/data/alibaba-gpu-v2023 from the repo)",
    )
    parser.add_argument("--repeats", type=int, default=3, help="timed repeats of each replay (default 3)")
    parser.add_argument(
        "--loop-requests",
        type=int,
        default=250,
        help="Alibaba requests the python loop replays, extrapolated to all (default 250; 0: all)",
    )
    parser.add_argument("--decision-gpus", type=int, default=6000, help="GPUs of one decision (default 6000)")
    parser.add_argument(
        "--decision-repeats", type=int, default=7, help="timed repeats of the decision (default 7)"
    )
    parser.add_argument(
        "--decision-loop-repeats", type=int, default=3, help="timed repeats of the loop decision (default 3)"
    )
    parser.add_argument("--fbk-runs", type=int, default=100, help="FBK replays per policy (default 100)")
    parser.add_argument("--fbk-gpus", type=int, default=100, help="GPUs of the FBK set-up (default 100)")
    parser.add_argument(
        "--loop-runs", type=int, default=5, help="FBK runs the python loop replays, extrapolated (default 5)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of states, traces and policies (default 0)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    for name in (
        "repeats",
        "decision_gpus",
        "decision_repeats",
        "decision_loop_repeats",
        "fbk_runs",
        "fbk_gpus",
    ):
        if getattr(args, name) < 1:
            parser.error(f"--{name.replace('_', '-')} must be at least 1")
    if args.loop_runs < 0:
        parser.error("--loop-runs must be at least 0")
    for spec in args.policies:
        try:
            make_policy(spec)
        except ValueError as exc:
            parser.error(str(exc))


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """Every requested measurement's rows; :class:`DecisionsDiffer` when the two methods disagree."""
    rows: list[dict[str, Any]] = []
    if "decision" in args.parts:
        rows += bench_decision(
            args.decision_gpus, args.decision_repeats, args.decision_loop_repeats, args.seed
        )
    if "alibaba" in args.parts:
        if (args.alibaba / NODE_FILE).is_file() and (args.alibaba / POD_FILE).is_file():
            rows += bench_alibaba(args.alibaba, args.policies, args.repeats, args.loop_requests, args.seed)
        else:
            common.progress(
                f"alibaba: skipped, no {NODE_FILE} and {POD_FILE} in {args.alibaba} (pass --alibaba DIR)"
            )
    if "fbk" in args.parts:
        rows += bench_fbk(
            args.policies, args.fbk_gpus, args.fbk_runs, args.repeats, args.loop_runs, args.seed
        )
    return rows


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'measurement':<12} {'policy':<14} {'method':<12} {'time':>12} {'ratio':>8} {'target':>8}")
    for row in rows:
        ratio = f"{float(row['ratio']):,.0f}x" if row["ratio"] else ""
        verdict = "PASS" if float(row["time_s"]) < float(row["target_s"]) else "FAIL"
        target = verdict if row["method"] == "tables" else ""
        shown = _duration(float(row["time_s"]))
        print(
            f"{row['measurement']:<12} {row['policy']:<14} {row['method']:<12} {shown:>12} {ratio:>8} {target:>8}"
        )


# A small run of every part, for smoke tests.
QUICK = (
    "--policies", "ff", "mfi", "--repeats", "1", "--loop-requests", "15", "--decision-gpus", "40",
    "--decision-repeats", "1", "--decision-loop-repeats", "1", "--fbk-runs", "2", "--fbk-gpus", "8",
    "--loop-runs", "1",
)  # fmt: skip

BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("online.csv", COLUMNS, {"online": readme_table})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=QUICK,
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
