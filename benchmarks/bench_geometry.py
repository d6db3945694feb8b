"""Benchmark: one placement request against many GPUs, tables versus a Python loop.

For one request (a profile) and every GPU of a cluster, a placement method needs
the legal starts, the driver's default start (best by CC, GRMU Eq. 2) and the
start that raises the FBK fragmentation least (MFI Alg. 1) with that increase.
This script answers that for ``--gpus`` GPUs two ways:

* ``tables``: four lookups in the per-state tables of
  :func:`mipopt.geometry.tables.tables_for`, vectorized over all GPUs;
* ``python-loop``: a plain loop over the GPUs calling the one-state definitions
  of :mod:`mipopt.geometry.reference`.

Both must give identical answers on every GPU (the run stops otherwise). The
target (issue 2) is under 1 ms per request through the tables.

GPU states are reachable ones: each GPU lives through a random history of
arrivals (a random base profile at the driver's default start, rejected when it
does not fit) and departures (a random running instance leaves).

Usage::

    python -m benchmarks.bench_geometry [--gpus 10000] [--repeats 7] [--seed 0]
        [--loop-repeats N] [--models MODEL ...] [--out-dir DIR] [--readme FILE] [--render] [--quick]

Rows go to ``OUT_DIR/geometry.csv``; the README section ``geometry`` is regenerated from
all rows of that file.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_geometry.py
    import _as_module  # noqa: F401

import argparse
import time
import zlib
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from benchmarks import common
from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.geometry import reference
from mipopt.geometry.tables import NO_START, GeometryTables, tables_for

IntArray = npt.NDArray[np.int64]

MODELS = ("A100-40GB", "H100-80GB", "RTX-PRO-6000-Blackwell-96GB")
TARGET_MS = 1.0
# Requests timed per repeat on the table path: enough that one repeat lasts
# well above the clock's resolution and the scheduler's noise.
TABLE_REQUESTS = 600
DEPART_PROBABILITY = 0.3

COLUMNS = (
    "numpy",
    "method",
    "model",
    "gpus",
    "profiles",
    "seed",
    "repeats",
    "requests_per_repeat",
    "median_per_request_ms",
    "min_per_request_ms",
    "runtime_s",
    "speedup",
    "target_ms",
    "answers_checked",
    "mismatches",
    "fits_fraction",
    "mean_used_slots",
)


# --- workload: reachable GPU states ------------------------------------------


def random_states(model: GpuModel, gpus: int, rng: np.random.Generator) -> IntArray:
    """Occupancy bitmasks of ``gpus`` GPUs after random histories of default placements.

    Each GPU gets a random number of events (0 to ``3 * slots``, so loads range
    from empty to full). An event is a departure of a random running instance
    with probability ``DEPART_PROBABILITY`` (when one runs), else an arrival of a
    uniformly drawn base profile at the driver's default start, rejected when
    the profile does not fit. Every state is thus one a real GPU can be in.
    """
    tables = tables_for(model)
    base = np.array([i for i, p in enumerate(model.profiles) if p.base])
    sizes = np.array([p.memory_slots for p in model.profiles])
    rows = np.arange(gpus)
    # One column per possible instance (at most one per slot): the instance's slot mask, 0 when free.
    instances = np.zeros((gpus, model.slots), dtype=np.int64)
    steps = 3 * model.slots
    events = rng.integers(0, steps + 1, size=gpus)
    for step in range(steps):
        active = step < events
        state = instances.sum(axis=1)  # instances never overlap, so the sum is their union
        running = instances != 0
        depart = active & running.any(axis=1) & (rng.random(gpus) < DEPART_PROBABILITY)
        leaving = np.argmax(np.where(running, rng.random((gpus, model.slots)), -1.0), axis=1)
        instances[rows[depart], leaving[depart]] = 0

        profile = rng.choice(base, size=gpus)
        start = tables.default_start[state, profile]
        arrive = active & ~depart & (start != NO_START)
        mask = ((1 << sizes[profile]) - 1) << np.maximum(start, 0)
        free_column = np.argmax(~running, axis=1)
        instances[rows[arrive], free_column[arrive]] = mask[arrive]
    return instances.sum(axis=1)


# --- the two methods ----------------------------------------------------------


@dataclass(frozen=True)
class Answers:
    """Per-GPU answers to one request: legal-start bitmask, default start, min-frag start and increase."""

    legal: IntArray
    default_start: IntArray
    min_frag_start: IntArray
    frag_increment: IntArray


def tables_request(tables: GeometryTables, masks: IntArray, p: int) -> Answers:
    """Answer a request for profile ``p`` on every GPU with four table lookups."""
    return Answers(
        tables.legal[masks, p],
        tables.default_start[masks, p],
        tables.min_frag_start[masks, p],
        tables.frag_increment[masks, p],
    )


def loop_request(model: GpuModel, masks: Sequence[int], profile: Profile) -> Answers:
    """Answer a request for ``profile`` GPU by GPU with the one-state definitions.

    The fragmentation increase is returned only where the profile fits (0 elsewhere).
    """
    legal, default, frag_start, frag_inc = [], [], [], []
    for mask in masks:
        starts = reference.legal_starts(model, mask, profile)
        legal.append(sum(1 << s for s in starts))
        start = reference.default_start(model, mask, profile)
        default.append(NO_START if start is None else start)
        before = reference.fbk_fragmentation(model, mask)
        best, best_inc = NO_START, 0
        for s in sorted(starts):  # ascending with strict '<': ties go to the lowest start
            inc = reference.fbk_fragmentation(model, mask | profile.slot_mask(s)) - before
            if best == NO_START or inc < best_inc:
                best, best_inc = s, inc
        frag_start.append(best)
        frag_inc.append(best_inc)
    return Answers(*(np.array(a, dtype=np.int64) for a in (legal, default, frag_start, frag_inc)))


def mismatches(a: Answers, b: Answers) -> int:
    """GPUs on which two answers differ in anything (the increase only counts where the profile fits)."""
    fits = a.min_frag_start != NO_START
    differ = (a.legal != b.legal) | (a.default_start != b.default_start)
    differ |= a.min_frag_start != b.min_frag_start
    differ |= fits & (a.frag_increment != b.frag_increment)
    return int(differ.sum())


# --- timing -------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    per_request_s: list[float]  # one value per repeat
    requests_per_repeat: int
    runtime_s: float


def time_tables(tables: GeometryTables, masks: IntArray, profiles: list[int], repeats: int) -> Timing:
    """Per-request time of the table path: each repeat runs a batch of requests cycling over profiles."""
    rounds = max(1, TABLE_REQUESTS // len(profiles))
    batch = profiles * rounds
    for p in profiles:  # warm caches and numpy's dispatch
        tables_request(tables, masks, p)
    per_request, total = [], 0.0
    for _ in range(repeats):
        t0 = time.perf_counter()
        for p in batch:
            tables_request(tables, masks, p)
        elapsed = time.perf_counter() - t0
        per_request.append(elapsed / len(batch))
        total += elapsed
    return Timing(per_request, len(batch), total)


def time_loop(
    model: GpuModel, masks: list[int], profiles: list[int], repeats: int
) -> tuple[Timing, dict[int, Answers]]:
    """Per-request time of the loop path (one request per profile per repeat), and its answers."""
    per_request, total = [], 0.0
    answers: dict[int, Answers] = {}
    for _ in range(repeats):
        elapsed = 0.0
        for p in profiles:
            t0 = time.perf_counter()
            answers[p] = loop_request(model, masks, model.profiles[p])
            elapsed += time.perf_counter() - t0
        per_request.append(elapsed / len(profiles))
        total += elapsed
    return Timing(per_request, len(profiles), total), answers


# --- one model ----------------------------------------------------------------


def bench_model(name: str, gpus: int, repeats: int, loop_repeats: int, seed: int) -> list[dict[str, object]]:
    """Benchmark one model; return its two CSV rows. Raises AssertionError if the methods disagree."""
    model = get_model(name)
    tables = tables_for(model)
    # One generator per model, seeded from (seed, model), so each model's states do not depend on
    # which other models run.
    rng = np.random.default_rng([seed, zlib.crc32(name.encode())])
    masks = random_states(model, gpus, rng)
    profiles = [i for i, p in enumerate(model.profiles) if p.base]

    common.progress(f"{name}: tables, {repeats} repeats x {TABLE_REQUESTS} requests")
    table_timing = time_tables(tables, masks, profiles, repeats)
    common.progress(f"{name}: python loop, {loop_repeats} repeats x {len(profiles)} requests")
    loop_timing, loop_answers = time_loop(model, masks.tolist(), profiles, loop_repeats)

    bad = sum(mismatches(tables_request(tables, masks, p), loop_answers[p]) for p in profiles)
    assert bad == 0, f"{name}: tables and python loop disagree on {bad} (GPU, profile) answers"

    fits = float(np.mean([(tables.legal[masks, p] != 0).mean() for p in profiles]))
    used = float((model.slots - tables.free_slots[masks]).mean())
    table_ms = common.median(table_timing.per_request_s) * 1e3
    loop_ms = common.median(loop_timing.per_request_s) * 1e3
    shared = {
        "numpy": np.__version__,
        "model": name,
        "gpus": gpus,
        "profiles": ";".join(model.profiles[p].name for p in profiles),
        "seed": seed,
        "target_ms": TARGET_MS,
        "answers_checked": gpus * len(profiles),
        "mismatches": bad,
        "fits_fraction": f"{fits:.4f}",
        "mean_used_slots": f"{used:.3f}",
    }
    return [
        {
            **shared,
            "method": "tables",
            "repeats": repeats,
            "requests_per_repeat": table_timing.requests_per_repeat,
            "median_per_request_ms": f"{table_ms:.6f}",
            "min_per_request_ms": f"{min(table_timing.per_request_s) * 1e3:.6f}",
            "runtime_s": f"{table_timing.runtime_s:.3f}",
            "speedup": f"{loop_ms / table_ms:.1f}",
        },
        {
            **shared,
            "method": "python-loop",
            "repeats": loop_repeats,
            "requests_per_repeat": loop_timing.requests_per_repeat,
            "median_per_request_ms": f"{loop_ms:.3f}",
            "min_per_request_ms": f"{min(loop_timing.per_request_s) * 1e3:.3f}",
            "runtime_s": f"{loop_timing.runtime_s:.3f}",
            "speedup": None,
        },
    ]


# --- README table -------------------------------------------------------------


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """The README section: the latest run of each (model, GPUs, profiles) configuration, tables beside loop."""
    runs = common.latest(rows, lambda r: (r["model"], r["gpus"], r["profiles"]))

    def order(config: tuple[str, str, str]) -> tuple[int, str, int]:
        known = MODELS.index(config[0]) if config[0] in MODELS else len(MODELS)
        return known, config[0], int(config[1])

    # (tables row, python-loop row or None) of each configuration's latest run
    pairs = [
        (
            next(r for r in runs[c] if r["method"] == "tables"),
            next((r for r in runs[c] if r["method"] == "python-loop"), None),
        )
        for c in sorted(runs, key=order)
        if any(r["method"] == "tables" for r in runs[c])
    ]
    Pair = tuple[dict[str, str], dict[str, str] | None]

    def verdict(pair: Pair) -> str:
        t = pair[0]
        passed = float(t["median_per_request_ms"]) < float(t["target_ms"])
        return f"{'PASS' if passed else 'FAIL'} (< {float(t['target_ms']):g} ms)"

    columns: list[common.Column[Pair]] = [
        common.Column("Model", lambda p: p[0]["model"]),
        common.Column("GPUs", lambda p: f"{int(p[0]['gpus']):,}", "r"),
        common.Column("Request profiles", lambda p: p[0]["profiles"].replace(";", ", ")),
        common.Column(
            "Tables, per request", lambda p: f"{float(p[0]['median_per_request_ms']) * 1e3:.1f} µs", "r"
        ),
        common.Column(
            "Python loop, per request",
            lambda p: f"{float(p[1]['median_per_request_ms']):.1f} ms" if p[1] else "-",
            "r",
        ),
        common.Column(
            "Speedup", lambda p: f"{float(p[0]['speedup']):,.0f}x" if p[0]["speedup"] else "-", "r"
        ),
        common.Column("Target", verdict),
        common.Column("Mismatches", lambda p: p[0]["mismatches"], "r"),
        common.Column("Commit", lambda p: p[0]["commit"]),
        common.Column("Date", lambda p: p[0]["date"][:10]),
        common.Column("Machine", lambda p: p[0]["machine"]),
    ]
    note = (
        f"_Generated by `benchmarks/bench_geometry.py` from {len(rows)} rows of "
        f"`{source}`: the latest run of each configuration; times are medians over the "
        "run's repeats of the mean time per request across the listed profiles._"
    )
    return f"{note}\n\n{common.table(columns, pairs)}"


# --- command line -------------------------------------------------------------


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--gpus", type=int, default=10_000, help="GPUs per request (default 10000)")
    parser.add_argument("--repeats", type=int, default=7, help="timed repeats of the table path (default 7)")
    parser.add_argument(
        "--loop-repeats",
        type=int,
        default=None,
        help="timed repeats of the python loop, which is slow at large --gpus (default: --repeats)",
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the GPU-state generator (default 0)")
    parser.add_argument(
        "--models", nargs="+", default=list(MODELS), help=f"GPU models (default: {' '.join(MODELS)})"
    )


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.gpus < 1 or args.repeats < 1:
        parser.error("--gpus and --repeats must be at least 1")
    if args.loop_repeats is None:
        args.loop_repeats = args.repeats
    if args.loop_repeats < 1:
        parser.error("--loop-repeats must be at least 1")
    for name in args.models:
        try:
            get_model(name)
        except KeyError as exc:
            parser.error(str(exc.args[0]))


def measure(args: argparse.Namespace) -> list[dict[str, object]]:
    rows: list[dict[str, object]] = []
    for name in args.models:
        rows += bench_model(name, args.gpus, args.repeats, args.loop_repeats, args.seed)
    return rows


def report(args: argparse.Namespace, rows: list[dict[str, object]]) -> None:
    print(f"{'model':<30} {'method':<12} {'per request':>14} {'speedup':>9}")
    for row in rows:
        ms = float(str(row["median_per_request_ms"]))
        shown = f"{ms * 1e3:.1f} us" if row["method"] == "tables" else f"{ms:.1f} ms"
        speedup = f"{float(str(row['speedup'])):.0f}x" if row["speedup"] else ""
        print(f"{row['model']!s:<30} {row['method']!s:<12} {shown:>14} {speedup:>9}")


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("geometry.csv", COLUMNS, {"geometry": readme_table})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=("--gpus", "200", "--repeats", "1"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
