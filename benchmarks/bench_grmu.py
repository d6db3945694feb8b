"""Benchmark: the GRMU paper's evaluation (section 8, Figs. 6-12 and Table 6) on the mapped Alibaba trace.

The trace is read from a directory (default ``../shared/data/alibaba-gpu-v2023`` next to the
repository; it is never copied into it) and mapped as in the paper's section 8.1 by
:func:`mipopt.workloads.alibaba_trace` (1,213 hosts, 8,063 workloads, times in hours). A
*setting* is a string of that function's load options (``gpus_per_host=1,duration_scale=3e4``);
every replay of a setting uses the same trace. As the paper's simulator (Cloudy) stops once
the last request has been decided, every replay uses the simulator's default window, which
ends at the last arrival: the hourly series, the hardware area (Table 6) and the time-weighted
means (from the replay's summary) cover the arrival window only. Times in the CSV (``hours``,
``hardware_area``, ``horizon``) are hours of the trace's own clock, also under ``compress``. Acceptance is reported both
overall (accepted / arrived at the end, ``acceptance_rate``) and hourly (Fig. 10: per hour
with arrivals, accepted / arrived in that hour, then their mean, ``mean_hourly_acceptance_rate``).

Parts (``--parts``), each a list of :func:`mipopt.simulation.simulate` replays:

* ``basket`` (Figs. 6-8): ``grmu:heavy=H,defrag=false`` for H in ``--heavy`` (20-80 %),
  consolidation off: overall acceptance, average active hardware rate (mean over the hours
  of hardware, GRMU Eq. 4 with b_j = 1, over the cluster's hosts plus GPUs), per-profile
  acceptance and their mean;
* ``consolidation`` (Fig. 9): ``DB`` (baskets only, ``defrag=false``), ``Disabled``
  (defragmentation, no consolidation) and consolidation every ``--intervals`` hours
  (defragmentation on), heavy 30 %: acceptance, hardware rate, migrations by kind;
* ``compare`` (Figs. 10-12, Table 6): ``ff``, ``bf``, ``mcc``, ``mecc`` (24 h window) and
  ``grmu`` (heavy 30 %, defragmentation, no consolidation: the paper's final choice):
  overall and per-profile acceptance, hardware area, migrations; plus PNGs of the hourly
  cumulative acceptance and active hardware per policy (``grmu_acceptance.png``,
  ``grmu_hardware.png``) and of the two sweeps (``grmu_sweeps.png``).

``--readings`` runs instead the readings of section 8.1 that the paper leaves open, each on
top of the ``paper`` setting (``ff``, ``mcc``, ``grmu`` and ``grmu:heavy=0.5`` on each): the
IQR filter off, which pods count as VMs (by ``pod_phase``; without the GPU-less pods), the
GPU-share mapping (compute or memory share instead of Eq. 28's product), every GPU of a node,
arrival compression instead of longer lifetimes, and two simulator readings (decisions once an
hour, rejected requests waiting up to 24 h: ``batch_interval`` and ``queue_timeout`` in a
setting's options go to ``simulate``, in trace hours).

``--explore`` runs instead the grid of load settings that chose the default one (``ff``,
``mcc`` and ``grmu`` on each): nodes with all their GPUs or one, all hosts or a seeded half
or 30 %, durations as recorded, x60, x3600 (seconds read as hours), x10,000, x20,000, x30,000
or no departures; two one-GPU settings without hosts' cpu and ram; and, with one GPU per node,
the GPU-share readings (product, compute, memory) at 100, 80 and 60 % of the hosts and four
loads. Its README table marks the setting nearest the paper's three rates (FF 28.3 %, MCC
32.2 %, GRMU 3,168 / 8,063 = 39.3 %) among those with the paper's order (GRMU > MCC > FF) that
keep the hosts' cpu and ram.

Usage::

    python -m benchmarks.bench_grmu [TRACE_DIR] [--settings paper raw] [--parts basket consolidation compare]
        [--heavy 0.2 0.3 ...] [--intervals 6 12 24 48 96] [--seed 0]
        [--out-dir DIR] [--readme FILE] [--render] [--quick]
    python -m benchmarks.bench_grmu [TRACE_DIR] --explore [--explore-policies ff mcc grmu]
    python -m benchmarks.bench_grmu [TRACE_DIR] --readings

Rows go to ``OUT_DIR/grmu.csv``; the README sections ``grmu``, ``grmu-claims``,
``grmu-readings`` and ``grmu-explore`` are regenerated from all rows of that file.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_grmu.py
    import _as_module  # noqa: F401

import argparse
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from benchmarks import common
from mipopt._fields import parse_options
from mipopt.catalog import get_model
from mipopt.geometry.configs import config_stats
from mipopt.heuristics.policies import make_policy
from mipopt.instance.trace import Trace
from mipopt.io import write_atomic
from mipopt.simulation import simulate
from mipopt.simulation.engine import on_grid
from mipopt.workloads import alibaba_trace
from mipopt.workloads.alibaba import NODE_FILE, POD_FILE

DEFAULT_TRACE = common.REPO_ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023"
#: Load settings by name (options of ``alibaba_trace``); ``paper`` was chosen by ``--explore``.
SETTINGS = {"paper": "gpus_per_host=1,duration_scale=20000", "raw": ""}
PARTS = ("basket", "consolidation", "compare")
#: --readings: (name, options added to the ``paper`` setting's; later keys win).
READINGS = (
    ("paper setting", ""),
    ("no IQR filter", "iqr=false"),
    ("scheduled pods only (no Pending)", "phases=Running+Succeeded+Failed"),
    ("Running and Succeeded pods only", "phases=Running+Succeeded"),
    ("pods with a GPU only", "cpu_pods=false"),
    ("GPU share = compute share", "share=compute"),
    ("GPU share = memory share", "share=memory"),
    ("every GPU of a node", "gpus_per_host=none"),
    ("arrivals compressed x20000 instead", "duration_scale=1,compress=20000"),
    ("compute share, lifetimes x10000", "share=compute,duration_scale=10000"),
    ("compute share, lifetimes x30000", "share=compute,duration_scale=30000"),
    ("compute share, no departures", "share=compute,departures=false"),
    ("memory share, no departures", "share=memory,departures=false"),
    ("decisions once an hour (simulator)", "batch_interval=1"),
    ("rejected requests wait up to 24 h (simulator)", "queue_timeout=24"),
)
#: Options of a setting that go to ``simulate`` rather than ``alibaba_trace`` (in trace hours).
SIMULATE_OPTIONS = ("batch_interval", "queue_timeout")
READING_POLICIES = ("ff", "mcc", "grmu", "grmu:heavy=0.5", "grmu:release=false")
PROFILES = ("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb")
COMPARED = ("ff", "bf", "mcc", "mecc", "grmu")
HEAVY = (0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8)
INTERVALS = (6, 12, 24, 48, 96)
# --explore's grid: GPUs kept per node, share of hosts, durations.
GRID_GPUS: tuple[int | None, ...] = (None, 1)
GRID_HOSTS = (1.0, 0.5, 0.3)
GRID_LOADS = {
    "as recorded": "",
    "x60": "duration_scale=60",
    "x3600": "duration_scale=3600",
    "x10000": "duration_scale=10000",
    "x20000": "duration_scale=20000",
    "x30000": "duration_scale=30000",
    "no departures": "departures=false",
}

# ... and on one GPU per node, the GPU-share readings at hosts 100, 80 and 60 % and four loads.
GRID_SHARES = ("product", "compute", "memory")
GRID_SHARE_HOSTS = (1.0, 0.8, 0.6)
GRID_SHARE_LOADS = ("x3600", "x10000", "x20000", "no departures")

# The paper's numbers (section 8.3, Table 6). Acceptance: GRMU 3,168 of 8,063; MCC and FF from
# "22 % higher than MCC" and "39 % improvement" over FF.
PAPER_ACCEPTED, PAPER_ARRIVED = 3168, 8063
PAPER_ACCEPTANCE = {
    "grmu": PAPER_ACCEPTED / PAPER_ARRIVED,
    "mcc": PAPER_ACCEPTED / PAPER_ARRIVED / 1.22,
    "ff": PAPER_ACCEPTED / PAPER_ARRIVED / 1.39,
}
PAPER_GAIN = {"mcc": 0.22, "ff": 0.39}
PAPER_AREA = {"ff": 102169.44, "bf": 102380.56, "mcc": 107363.19, "mecc": 107056.60, "grmu": 87546.53}
PAPER_MIGRATIONS = {"ff": 0, "bf": 0, "mcc": 0, "mecc": 0, "grmu": 37}
PAPER_GRMU_OVER_MCC = {"2g.10gb": 1.14, "3g.20gb": 1.43, "4g.20gb": 2.29, "7g.40gb": 0.6}

COLUMNS = [
    "setting",
    "options",
    "hosts",
    "gpus",
    "requests",
    "hours",
    "part",
    "label",
    "policy",
    "seed",
    "accepted",
    "acceptance_rate",
    *(f"acceptance_rate_{p}" for p in PROFILES),
    "mean_profile_acceptance_rate",
    "hardware_area",
    "mean_hardware_rate",
    "mean_active_gpus",
    "migrations",
    "moves_intra_gpu",
    "moves_inter_gpu",
    "moves_inter_host",
    "migrations_per_accepted",
    "runtime_s",
    "mean_hourly_acceptance_rate",
    "hardware_rate_area",
    "horizon",
]


# --- traces and replays ----------------------------------------------------------


def merged_options(options: str, path: str) -> dict[str, Any]:
    """``key=value,...`` options where a later key wins: a reading's options follow its setting's
    (:data:`READINGS`), which :func:`mipopt._fields.parse_options` alone refuses as given twice."""
    merged: dict[str, Any] = {}
    for item in filter(None, options.split(",")):
        merged.update(parse_options(item, path))
    return merged


def split_options(options: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """A setting's options: those of ``alibaba_trace`` and those of ``simulate`` (:data:`SIMULATE_OPTIONS`)."""
    given = merged_options(options, "--settings")
    return (
        {k: v for k, v in given.items() if k not in SIMULATE_OPTIONS},
        {k: v for k, v in given.items() if k in SIMULATE_OPTIONS},
    )


def load(trace_dir: Path, options: str, seed: int = 0) -> Trace:
    """The mapped trace under ``options`` (host sample seeded by ``seed``; simulator options ignored)."""
    return alibaba_trace(trace_dir, **{"seed": seed, **split_options(options)[0]})


def trace_hours(trace: Trace) -> int:
    """Hours from the first to the last arrival on the trace's own clock (before ``compress``)."""
    return math.ceil(max(r.arrival for r in trace.requests) * float(trace.meta.get("compress", 1.0)) - 1e-9)


def hourly(series: pd.DataFrame, hour: float = 1.0) -> pd.DataFrame:
    """The replay on whole hours of the trace (``hour`` time units each: ``1 / compress``): the
    state at each hour (cumulative counts, hardware) and, per hour, ``arrived_in_hour``,
    ``accepted_in_hour`` and their ratio ``hourly_acceptance_rate`` (NaN in an hour without
    arrivals). Hour ``h`` covers ``((h - 1) hour, h hour]``; ``time`` is in trace hours."""
    end = float(series["time"].iloc[-1]) / hour
    grid = on_grid(series, hour * np.arange(0.0, math.ceil(end - 1e-9) + 1.0))
    grid["time"] = grid["time"] / hour
    arrived = grid["arrived"].diff().fillna(grid["arrived"])
    accepted = grid["accepted"].diff().fillna(grid["accepted"])
    with np.errstate(invalid="ignore", divide="ignore"):
        rate = np.where(arrived > 0, accepted / arrived.where(arrived > 0), np.nan)
    return grid.assign(arrived_in_hour=arrived, accepted_in_hour=accepted, hourly_acceptance_rate=rate)


def replay(
    trace: Trace, spec: str, seed: int, simulate_options: dict[str, Any] | None = None
) -> tuple[dict[str, Any], pd.DataFrame]:
    """One replay's row values (without the run and setting columns) and its hourly series.

    ``simulate_options`` (``batch_interval``, ``queue_timeout``) are in trace hours."""
    # Compressed arrivals squeeze the trace's hours: sample and count per trace hour.
    hour = 1.0 / float(trace.meta.get("compress", 1.0))
    t0 = time.perf_counter()
    extra = {k: v * hour for k, v in (simulate_options or {}).items()}
    res = simulate(trace, make_policy(spec), seed=seed, bucket=hour, **extra)
    runtime = time.perf_counter() - t0
    s = res.summary
    hours = hourly(res.series, hour)
    hardware_max = len(trace.cluster.hosts) + len(trace.cluster.gpus)
    per_profile = {p: s.get(f"acceptance_rate_{p}") for p in PROFILES}
    present = [v for v in per_profile.values() if v is not None]
    row = {
        "policy": spec,
        "seed": seed,
        "accepted": s["accepted"],
        "acceptance_rate": f"{s['acceptance_rate']:.6f}",
        **{f"acceptance_rate_{p}": "" if v is None else f"{v:.6f}" for p, v in per_profile.items()},
        "mean_profile_acceptance_rate": f"{sum(present) / len(present):.6f}" if present else "",
        "hardware_area": f"{s['hardware_area'] / hour:.1f}",
        "mean_hardware_rate": f"{s['mean_hardware'] / hardware_max:.6f}",
        "mean_active_gpus": f"{s['mean_active_gpus']:.2f}",
        "migrations": s["migrations"],
        "moves_intra_gpu": s["moves_intra_gpu"],
        "moves_inter_gpu": s["moves_inter_gpu"],
        "moves_inter_host": s["moves_inter_host"],
        "migrations_per_accepted": f"{s['migrations_per_accepted']:.6f}",
        "runtime_s": f"{runtime:.2f}",
        "mean_hourly_acceptance_rate": f"{np.nanmean(hours['hourly_acceptance_rate']):.6f}",
        "hardware_rate_area": f"{100 * s['hardware_area'] / hardware_max / hour:.1f}",
        "horizon": f"{s['horizon'] / hour:.4f}",
    }
    return row, hours.assign(hardware_rate=100 * hours["hardware"] / hardware_max)


def part_runs(part: str, heavy: Sequence[float], intervals: Sequence[float]) -> list[tuple[str, str]]:
    """(label, policy spec) of every replay of ``part``."""
    if part == "basket":
        return [(f"{h:.0%}", f"grmu:heavy={h:g},defrag=false") for h in heavy]
    if part == "consolidation":
        return [("DB", "grmu:heavy=0.3,defrag=false"), ("Disabled", "grmu:heavy=0.3")] + [
            (f"{i:g} h", f"grmu:heavy=0.3,consolidation={i:g}") for i in intervals
        ]
    return [(p, p) for p in COMPARED]


def bench_setting(
    trace_dir: Path, name: str, options: str, parts: Sequence[str], args: argparse.Namespace
) -> tuple[list[dict[str, Any]], dict[str, pd.DataFrame]]:
    """Every part's rows for one setting, and the hourly series of the compared policies."""
    trace = load(trace_dir, options, args.seed)
    shared = {
        "setting": name,
        "options": options,
        "hosts": len(trace.cluster.hosts),
        "gpus": len(trace.cluster.gpus),
        "requests": len(trace.requests),
        "hours": trace_hours(trace),
    }
    rows, series, done = [], {}, {}
    for part in parts:
        for label, spec in part_runs(part, args.heavy, args.intervals):
            if spec not in done:
                done[spec] = replay(trace, spec, args.seed, split_options(options)[1])
                row = done[spec][0]
                common.progress(
                    f"{name} {part} {label} ({spec}): accepted {row['accepted']} "
                    f"({float(row['acceptance_rate']):.1%}), migrations {row['migrations']}, {row['runtime_s']} s"
                )
            row, frame = done[spec]
            rows.append({**shared, "part": part, "label": label, **row})
            if part == "compare":
                series[spec] = frame
    return rows, series


def explore_settings() -> list[str]:
    """--explore's load settings, as option strings."""
    out = []
    for gpus in GRID_GPUS:
        for hosts in GRID_HOSTS:
            for load_options in GRID_LOADS.values():
                parts = [f"gpus_per_host={gpus}"] if gpus else []
                parts += [f"host_fraction={hosts:g}"] if hosts < 1 else []
                parts += [load_options] if load_options else []
                out.append(",".join(parts))
    # Do hosts' cpu and ram bind? The one-GPU settings again with GPUs only.
    out += [f"gpus_per_host=1,{GRID_LOADS[k]},resources=false" for k in ("x20000", "no departures")]
    # The GPU-share readings and host counts between 100 % and 50 %, one GPU per node.
    for share in GRID_SHARES:
        for hosts in GRID_SHARE_HOSTS:
            if share == "product" and hosts == 1:
                continue  # in the grid above
            for name in GRID_SHARE_LOADS:
                parts = ["gpus_per_host=1", f"host_fraction={hosts:g}" if hosts < 1 else "", GRID_LOADS[name]]
                parts += [f"share={share}"] if share != "product" else []
                out.append(",".join(x for x in parts if x))
    return out


def grid_setting(
    trace_dir: Path, part: str, name: str, options: str, policies: Sequence[str], seed: int
) -> tuple[list[dict[str, Any]], str]:
    """One job of :func:`bench_grid`: every policy on one setting; its rows and a progress line."""
    trace = load(trace_dir, options, seed)
    shared = {
        "setting": part,
        "options": options,
        "hosts": len(trace.cluster.hosts),
        "gpus": len(trace.cluster.gpus),
        "requests": len(trace.requests),
        "hours": trace_hours(trace),
    }
    rows, found = [], []
    for spec in policies:
        row, _ = replay(trace, spec, seed, split_options(options)[1])
        rows.append({**shared, "part": part, "label": spec, **row})
        found.append(f"{spec} {float(row['acceptance_rate']):.1%}")
    message = (
        f"{part} [{name}] {len(trace.requests)} requests, {len(trace.cluster.gpus)} GPUs: {', '.join(found)}"
    )
    return rows, message


def bench_grid(
    trace_dir: Path,
    part: str,
    settings: Sequence[tuple[str, str]],
    policies: Sequence[str],
    seed: int,
    executor: str = "serial",
) -> list[dict[str, Any]]:
    """Rows of ``part`` (``setting`` = ``part``): every policy on each (name, options) setting, a
    setting per job of ``executor``."""
    jobs = [(trace_dir, part, name, options, tuple(policies), seed) for name, options in settings]
    done = common.run_grid(grid_setting, jobs, executor, say=lambda result: result[1])
    return [row for rows, _ in done for row in rows]


def bench_explore(
    trace_dir: Path, policies: Sequence[str], seed: int, executor: str = "serial"
) -> list[dict[str, Any]]:
    """--explore: the grid of load settings."""
    settings = [(o or "raw", o) for o in explore_settings()]
    return bench_grid(trace_dir, "explore", settings, policies, seed, executor)


# --- plots -------------------------------------------------------------------------


def plot_compare(
    series: dict[str, pd.DataFrame], path_acceptance: Path, path_hardware: Path, title: str
) -> None:
    """Fig. 10 (acceptance rate: cumulative, and per hour over a trailing day) and Fig. 12
    (active hardware rate, Eq. 4 over all hosts + GPUs), one line per policy, on the hourly grid."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    if all((frame["acceptance_rate"] == 1).all() for frame in series.values()):
        # Nothing to draw: a flat line at 100 % says less than a sentence.
        arrived = int(next(iter(series.values()))["arrived"].iloc[-1])
        text_figure(
            path_acceptance,
            f"Fig. 10: acceptance rate per policy\n{title}",
            f"Every policy ({', '.join(series)}) accepted all {arrived:,} requests:\n"
            "the acceptance rate stays at 100 % throughout, hour by hour.",
        )
    else:
        plot_acceptance(series, path_acceptance, title)

    fig, ax = plt.subplots(figsize=(8.5, 4.2))
    for spec, frame in series.items():
        ax.plot(frame["time"], frame["hardware_rate"], label=spec, linewidth=1.1)
    ax.set_xlabel("time since the first arrival (h)")
    ax.set_ylabel("active hardware rate (% of hosts + GPUs)")
    ax.set_title(f"Fig. 12: active hardware (GRMU Eq. 4, b_j = 1) per policy\n{title}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, ncol=5)
    fig.tight_layout()
    write_atomic(path_hardware, lambda fh: fig.savefig(fh, format="png", dpi=110), text=False)
    plt.close(fig)


def text_figure(path: Path, title: str, message: str) -> None:
    """A picture that states in words what a plot of constant lines would show."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(9, 2.6))
    ax.axis("off")
    ax.text(0.5, 0.5, message, ha="center", va="center", fontsize=10)
    ax.set_title(title, fontsize=9)
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=110), text=False)
    plt.close(fig)


def plot_acceptance(series: dict[str, pd.DataFrame], path: Path, title: str) -> None:
    """Fig. 10's two panels: the cumulative acceptance rate and the rate over the trailing 24 h."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (top, bottom) = plt.subplots(2, 1, figsize=(8.5, 6.4), sharex=True)
    for spec, frame in series.items():
        top.plot(frame["time"], 100 * frame["acceptance_rate"], label=spec, linewidth=1.1)
        day_arrived = frame["arrived_in_hour"].rolling(24, min_periods=1).sum()
        day_accepted = frame["accepted_in_hour"].rolling(24, min_periods=1).sum()
        bottom.plot(
            frame["time"], 100 * day_accepted / day_arrived.where(day_arrived > 0), label=spec, linewidth=1.0
        )
    top.set_ylabel("acceptance rate so far (%)")
    top.set_title(f"Fig. 10: acceptance rate per policy\n{title}", fontsize=9)
    bottom.set_ylabel("acceptance rate, last 24 h (%)")
    bottom.set_xlabel("time since the first arrival (h)")
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8, ncol=5)
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=110), text=False)
    plt.close(fig)


def plot_sweeps(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Figs. 6-9: the basket sweep (acceptance, hardware rate, per profile) and the consolidation runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    def pct(rs: list[dict[str, Any]], column: str) -> list[float]:
        return [100 * float(r[column] or "nan") for r in rs]

    basket = [r for r in rows if r["part"] == "basket"]
    consolidation = [r for r in rows if r["part"] == "consolidation"]
    if all(float(r["acceptance_rate"]) == 1 for r in basket + consolidation):
        moves = sorted({int(r["migrations"]) for r in consolidation})
        text_figure(
            path,
            f"Figs. 6-9: heavy-basket capacity and consolidation interval\n{title}",
            f"Every run ({len(basket)} basket capacities, {len(consolidation)} consolidation runs) accepted "
            "every request (100 %, every profile);\nmean active hardware rates "
            f"{min(100 * float(r['mean_hardware_rate']) for r in basket + consolidation):.1f}-"
            f"{max(100 * float(r['mean_hardware_rate']) for r in basket + consolidation):.1f} %, "
            f"migrations {min(moves, default=0)}-{max(moves, default=0)}: see the README tables.",
        )
        return
    fig, axes = plt.subplots(1, 3, figsize=(15, 4.4))
    if basket:
        x = [r["label"] for r in basket]
        axes[0].plot(x, pct(basket, "acceptance_rate"), "o-", label="overall acceptance rate")
        axes[0].plot(x, pct(basket, "mean_hardware_rate"), "s-", label="mean active hardware rate")
        axes[0].plot(x, pct(basket, "mean_profile_acceptance_rate"), "^-", label="mean of per-profile rates")
        for p in PROFILES:
            axes[1].plot(x, pct(basket, f"acceptance_rate_{p}"), "o-", label=p)
    axes[0].set_title("Figs. 6, 8: heavy-basket capacity (defrag., consolidation off)", fontsize=9)
    axes[1].set_title("Fig. 7: acceptance rate per profile", fontsize=9)
    for ax in axes[:2]:
        ax.set_xlabel("heavy-basket capacity (% of GPUs)")
        ax.set_ylabel("%")
    if consolidation:
        x = [r["label"] for r in consolidation]
        axes[2].plot(x, pct(consolidation, "acceptance_rate"), "o-", label="acceptance rate")
        axes[2].plot(x, pct(consolidation, "mean_hardware_rate"), "s-", label="mean active hardware rate")
        twin = axes[2].twinx()
        twin.bar(x, [int(r["migrations"]) for r in consolidation], alpha=0.25, color="gray")
        twin.set_ylabel("migrations (bars)")
        axes[2].set_ylim(0, 100)
        axes[2].set_zorder(twin.get_zorder() + 1)  # lines above the bars
        axes[2].patch.set_visible(False)
    axes[2].set_title("Fig. 9: consolidation interval (heavy basket 30 %)", fontsize=9)
    axes[2].set_xlabel("run (DB: baskets only; Disabled: defragmentation only; every N h)")
    axes[2].set_ylabel("%")
    for ax in axes:
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=9)
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=100), text=False)
    plt.close(fig)


# --- README tables -------------------------------------------------------------------


def latest(rows: list[dict[str, str]], part: str) -> dict[str, list[dict[str, str]]]:
    """Per setting options, the rows of ``part`` from the latest run that has that part."""
    return common.latest((r for r in rows if r["part"] == part), lambda r: r["options"])


_pct = common.percent


def _setting(options: str, rows: list[dict[str, str]]) -> str:
    name = rows[0]["setting"]
    return f"{name} (`{options or 'loader defaults'}`, {int(rows[0]['gpus']):,} GPUs)"


def compare_tables(rows: list[dict[str, str]]) -> str:
    out = []
    for options, rs in latest(rows, "compare").items():
        by = {r["policy"]: r for r in rs}
        grmu = float(by["grmu"]["acceptance_rate"]) if "grmu" in by else None
        top_area = max(float(r["hardware_area"]) for r in rs)
        body = []
        for spec in [p for p in COMPARED if p in by] + [p for p in by if p not in COMPARED]:
            r = by[spec]
            acc = float(r["acceptance_rate"])
            gain = f"{grmu / acc - 1:+.1%}" if grmu is not None and spec != "grmu" and acc else "-"
            paper_gain = f"+{PAPER_GAIN[spec]:.0%}" if spec in PAPER_GAIN else "-"
            paper_norm = PAPER_AREA[spec] / max(PAPER_AREA.values()) if spec in PAPER_AREA else None
            body.append(
                [
                    spec,
                    f"{int(r['accepted']):,}",
                    _pct(acc),
                    _pct(r["mean_hourly_acceptance_rate"]),
                    _pct(PAPER_ACCEPTANCE.get(spec)),
                    gain,
                    paper_gain,
                    f"{float(r['hardware_rate_area']):,.0f}" if r["hardware_rate_area"] else "-",
                    f"{PAPER_AREA[spec]:,.0f}" if spec in PAPER_AREA else "-",
                    f"{float(r['hardware_area']):,.0f}",
                    f"{float(r['hardware_area']) / top_area:.4f}",
                    f"{paper_norm:.4f}" if paper_norm is not None else "-",
                    _pct(r["mean_hardware_rate"]),
                    r["migrations"],
                    _pct(r["migrations_per_accepted"]),
                    str(PAPER_MIGRATIONS.get(spec, "-")),
                ]
            )
        header = [
            "Policy", "Accepted", "Acceptance rate", "Hourly mean", "Paper", "GRMU over it", "Paper: GRMU over it",
            "Rate area (% h)", "Paper area", "Hardware area (h)", "Normalized", "Paper normalized",
            "Mean hardware rate", "Migrations", "Per accepted", "Paper migrations",
        ]  # fmt: skip
        out.append(
            f"**{_setting(options, rs)}**, {rs[0]['commit']}, {rs[0]['date'][:10]}:\n\n"
            + common.markdown_table(header, body, align="l" + "r" * (len(header) - 1))
        )
        profile_rows = [[spec] + [_pct(by[spec][f"acceptance_rate_{p}"]) for p in PROFILES] for spec in by]
        if "grmu" in by and "mcc" in by:
            ratios = []
            for p in PROFILES:
                g, m = by["grmu"][f"acceptance_rate_{p}"], by["mcc"][f"acceptance_rate_{p}"]
                ratios.append(f"{float(g) / float(m):.2f}x" if g and m and float(m) else "-")
            profile_rows.append(["GRMU / MCC", *ratios])
            profile_rows.append(
                [
                    "paper: GRMU / MCC",
                    *(
                        f"{PAPER_GRMU_OVER_MCC[p]:.2f}x" if p in PAPER_GRMU_OVER_MCC else "-"
                        for p in PROFILES
                    ),
                ]
            )
        out.append(
            "Per-profile acceptance rate (Fig. 11):\n\n"
            + common.markdown_table(["Policy", *PROFILES], profile_rows, align="l" + "r" * len(PROFILES))
        )
    return "\n\n".join(out)


def basket_tables(rows: list[dict[str, str]]) -> str:
    out = []
    for options, rs in latest(rows, "basket").items():
        body = [
            [
                r["label"],
                _pct(r["acceptance_rate"]),
                _pct(r["mean_hardware_rate"]),
                *(_pct(r[f"acceptance_rate_{p}"]) for p in PROFILES),
                _pct(r["mean_profile_acceptance_rate"]),
                r["migrations"],
            ]
            for r in rs
        ]
        header = [
            "Heavy basket",
            "Acceptance rate",
            "Mean hardware rate",
            *PROFILES,
            "Mean per profile",
            "Migrations",
        ]
        out.append(
            f"Heavy-basket sweep (Figs. 6-8), defragmentation and consolidation off, {_setting(options, rs)}:\n\n"
            + common.markdown_table(header, body, align="l" + "r" * (len(header) - 1))
        )
    return "\n\n".join(out)


def consolidation_tables(rows: list[dict[str, str]]) -> str:
    out = []
    for options, rs in latest(rows, "consolidation").items():
        body = [
            [
                r["label"],
                _pct(r["acceptance_rate"]),
                _pct(r["mean_hardware_rate"]),
                r["mean_active_gpus"],
                r["migrations"],
                f"{r['moves_intra_gpu']} / {r['moves_inter_gpu']} / {r['moves_inter_host']}",
                _pct(r["migrations_per_accepted"]),
            ]
            for r in rs
        ]
        header = [
            "Run", "Acceptance rate", "Mean hardware rate", "Mean active GPUs", "Migrations",
            "Intra-GPU / inter-GPU / inter-host", "Per accepted",
        ]  # fmt: skip
        out.append(
            f"Consolidation interval (Fig. 9), heavy basket 30 %, {_setting(options, rs)}:\n\n"
            + common.markdown_table(header, body, align="lrrrrrr")
        )
    return "\n\n".join(out)


def readme_section(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    note = (
        f"_Generated by `benchmarks/bench_grmu.py` from `{source}`: the latest run of each (setting, part), "
        "each replay over the simulator's default window (first to last arrival). Acceptance rate: accepted "
        "/ arrived at the end; hourly mean: the mean over the hours with arrivals of accepted / arrived in "
        "that hour (Fig. 10). Hardware is GRMU Eq. 4 with b_j = 1 (active hosts + active GPUs); hardware area "
        "its time integral (h); rate area the integral of the active hardware rate in % of all hosts + GPUs "
        "(% h), the unit under which the paper's Table 6 areas (102,169 for FF) read as mean rates over its "
        "1,254-hour window; normalized: each area over the highest policy's. Mean hardware rate: time-weighted "
        "mean of hardware over all hosts + GPUs. Paper acceptance for MCC and FF is derived from GRMU's 3,168 "
        "/ 8,063 and the stated +22 % and +39 %._"
    )
    parts = [compare_tables(rows), basket_tables(rows), consolidation_tables(rows)]
    return "\n\n".join([note, *(p for p in parts if p)])


def bench_readings(trace_dir: Path, seed: int, executor: str = "serial") -> list[dict[str, Any]]:
    """--readings: each reading of section 8.1 on top of the ``paper`` setting, READING_POLICIES on each."""
    settings = [(name, reading_options(extra)) for name, extra in READINGS]
    return bench_grid(trace_dir, "readings", settings, READING_POLICIES, seed, executor)


def reading_options(extra: str) -> str:
    """The ``paper`` setting's options with a reading's added (later keys win)."""
    return ",".join(x for x in (SETTINGS["paper"], extra) if x)


def _gain(a: float | None, b: float | None) -> str:
    return f"{a / b - 1:+.1%}" if a is not None and b else "-"


def readings_section(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    groups = latest(rows, "readings")
    if not groups:
        return "_No `--readings` rows yet._"
    names = {reading_options(extra): (name, extra) for name, extra in READINGS}
    body = []
    for options, rs in groups.items():
        by = {r["label"]: r for r in rs}

        def get(spec: str, column: str, by: dict[str, dict[str, str]] = by) -> float | None:
            value = by.get(spec, {}).get(column, "")
            return float(value) if value else None

        name, extra = names.get(options, ("other", options))
        grmu, mcc, ff = (get(p, "acceptance_rate") for p in ("grmu", "mcc", "ff"))
        hourly = {p: get(p, "mean_hourly_acceptance_rate") for p in ("ff", "mcc", "grmu")}
        areas = get("ff", "hardware_area"), get("grmu", "hardware_area")
        body.append(
            [
                name,
                f"`{extra}`" if extra else "-",
                f"{int(rs[0]['requests']):,}",
                f"{int(rs[0]['gpus']):,}",
                _pct(ff),
                _pct(mcc),
                _pct(grmu),
                _gain(grmu, mcc),
                _gain(grmu, ff),
                " / ".join(_pct(hourly[p]) for p in ("ff", "mcc", "grmu")),
                _gain(hourly["grmu"], hourly["mcc"]),
                _pct(get("grmu:heavy=0.5", "acceptance_rate")),
                _pct(get("grmu:release=false", "acceptance_rate")),
                _gain(areas[0], areas[1]),
                f"{by['grmu']['migrations']} ({_pct(by['grmu']['migrations_per_accepted'])})"
                if "grmu" in by
                else "-",
            ]
        )
    header = [
        "Reading", "Options added", "Requests", "GPUs", "FF", "MCC", "GRMU", "GRMU over MCC", "GRMU over FF",
        "Hourly mean FF / MCC / GRMU", "Hourly: GRMU over MCC", "GRMU heavy 50 %", "GRMU, emptied GPUs keep their basket",
        "FF area over GRMU's",
        "GRMU migrations",
    ]  # fmt: skip
    note = (
        f"_Generated by `benchmarks/bench_grmu.py --readings` from `{source}`: the latest run of each reading, "
        f"each on top of the `paper` setting (`{SETTINGS['paper']}`; later options win). Acceptance rates at the "
        "end of the window; hourly mean as in the tables above; GRMU is heavy 30 % with defragmentation, "
        "GRMU heavy 50 % the same with the heavy basket at 50 %, and with `release=false` a GPU emptied by a "
        "departure stays in its basket instead of going back to the pool; FF area over GRMU's is the paper's "
        '"17 % less active hardware" (Table 6: 102,169 / 87,547 = +16.7 %). Paper: FF 28.3 %, MCC 32.2 %, GRMU '
        "39.3 %; +22 % over MCC, +39 % over FF; 37 migrations (1.2 % of accepted)._"
    )
    return f"{note}\n\n" + common.markdown_table(header, body, align="ll" + "r" * (len(header) - 2))


def beaten_on(by: dict[str, dict[str, str]]) -> str:
    """The profiles on which some other compared policy accepts a larger share than GRMU."""
    if "grmu" not in by:
        return "-"
    worse = []
    for p in PROFILES:
        mine = by["grmu"][f"acceptance_rate_{p}"]
        others = [
            float(r[f"acceptance_rate_{p}"])
            for k, r in by.items()
            if k != "grmu" and r[f"acceptance_rate_{p}"]
        ]
        if mine and others and float(mine) < max(others):
            worse.append(p)
    return "below another policy only on " + ", ".join(worse) if worse else "never below another policy"


def claims_section(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    """One row per claim of the paper: its value, mipopt's at the ``paper`` setting, the readings' range."""
    compare = latest(rows, "compare").get(SETTINGS["paper"])
    if not compare:
        return "_No `compare` rows of the `paper` setting yet._"
    by = {r["policy"]: r for r in compare}

    def acc(spec: str, column: str = "acceptance_rate") -> float:
        return float(by[spec][column])

    readings = latest(rows, "readings")

    def spread(f: Any, sign: str = "+") -> str:
        values = []
        for rs in readings.values():
            rb = {r["label"]: r for r in rs}
            try:
                values.append(f(rb))
            except (KeyError, ValueError, ZeroDivisionError):
                continue
        return f"{min(values):{sign}.1%} to {max(values):{sign}.1%}" if values else "-"

    def gain_of(a: str, b: str) -> Any:
        return lambda rb: float(rb[a]["acceptance_rate"]) / float(rb[b]["acceptance_rate"]) - 1

    top_area = max(float(r["hardware_area"]) for r in compare)
    areas = ", ".join(
        f"{p.upper()} {float(by[p]['hardware_area']) / top_area:.3f}" for p in COMPARED if p in by
    )
    paper_areas = ", ".join(f"{p.upper()} {PAPER_AREA[p] / max(PAPER_AREA.values()):.3f}" for p in COMPARED)
    ratios = ", ".join(
        f"{p} {float(by['grmu'][f'acceptance_rate_{p}']) / float(by['mcc'][f'acceptance_rate_{p}']):.2f}x"
        for p in PAPER_GRMU_OVER_MCC
        if by["grmu"][f"acceptance_rate_{p}"] and float(by["mcc"][f"acceptance_rate_{p}"] or 0)
    )
    basket = latest(rows, "basket").get(SETTINGS["paper"], [])
    best_heavy = max(basket, key=lambda r: float(r["acceptance_rate"]))["label"] if basket else "-"
    consolidation = latest(rows, "consolidation").get(SETTINGS["paper"], [])
    cons = ", ".join(f"{r['label']} {r['migrations']}" for r in consolidation) or "-"
    stats = config_stats(get_model("A100-40GB"))
    body = [
        ["0a", "Section 5.1: configurations, terminal, suboptimal (A100)", "723, 78, 482", f"{stats.configurations}, {stats.terminal}, {stats.suboptimal}", "-"],
        ["0b", "Section 5.1: reached by default placement, of which suboptimal", "248, 172", f"{stats.default_reachable}, {stats.default_reachable_suboptimal}", "-"],
        ["0c", "Section 5.1: beaten on a profile by a rearrangement (one GPU)", "138 (19 %)", f"{stats.profile_alternatives} ({100 * stats.profile_alternatives / stats.configurations:.0f} %)", "-"],
        ["0d", "Section 5.1: two-GPU pairs beaten on a profile", "205,575 of 261,726 (79 %)", f"{stats.pair_profile_alternatives:,} of {stats.gpu_pairs:,} ({100 * stats.pair_profile_alternatives / stats.gpu_pairs:.0f} %)", "-"],
        ["1", "GRMU acceptance rate", "39.3 % (3,168 / 8,063)", _pct(acc("grmu")), spread(lambda rb: float(rb["grmu"]["acceptance_rate"]), sign="")],
        ["2", "GRMU over MCC (overall)", "+22 %", _gain(acc("grmu"), acc("mcc")), spread(gain_of("grmu", "mcc"))],
        ["3", "GRMU over FF (overall)", "+39 %", _gain(acc("grmu"), acc("ff")), spread(gain_of("grmu", "ff"))],
        ["4", "GRMU over MCC, hourly (Fig. 10)", "not stated apart from the overall", _gain(acc("grmu", "mean_hourly_acceptance_rate"), acc("mcc", "mean_hourly_acceptance_rate")), spread(lambda rb: float(rb["grmu"]["mean_hourly_acceptance_rate"]) / float(rb["mcc"]["mean_hourly_acceptance_rate"]) - 1)],
        ["5", "Active hardware: FF area over GRMU's (\"-17 %\")", "+16.7 % (Table 6)", _gain(float(by["ff"]["hardware_area"]), float(by["grmu"]["hardware_area"])), spread(lambda rb: float(rb["ff"]["hardware_area"]) / float(rb["grmu"]["hardware_area"]) - 1)],
        ["6", "Table 6 normalized areas", paper_areas, areas, "-"],
        ["7", "Table 6 area of FF (rate area, % h)", "102,169", f"{float(by['ff']['hardware_rate_area']):,.0f}", "-"],
        ["8", "GRMU migrations", "37 (1.2 % of accepted)", f"{by['grmu']['migrations']} ({_pct(by['grmu']['migrations_per_accepted'])})", spread(lambda rb: float(rb["grmu"]["migrations_per_accepted"]), sign="")],
        ["9", "Fig. 11: GRMU / MCC per profile", "2g.10gb 1.14x, 3g.20gb 1.43x, 4g.20gb 2.29x, 7g.40gb 0.60x", ratios, "-"],
        ["9b", "Fig. 11: GRMU at least as good as every other policy on every profile but 7g.40gb", "yes", beaten_on(by), "-"],
        ["9c", "MECC like MCC, better only on 7g.40gb", "yes", f"MECC {_pct(acc('mecc'))} vs MCC {_pct(acc('mcc'))}; 7g.40gb {_pct(acc('mecc', 'acceptance_rate_7g.40gb'))} vs {_pct(acc('mcc', 'acceptance_rate_7g.40gb'))}" if "mecc" in by else "-", "-"],
        ["10", "Figs. 6-8: heavy basket, best balance", "30 %", f"best overall acceptance at {best_heavy}", "-"],
        ["11", "Fig. 9: consolidation off is best", "Disabled", f"migrations: {cons}", "-"],
    ]  # fmt: skip
    note = (
        f"_Generated by `benchmarks/bench_grmu.py` from `{source}`: mipopt at the `paper` setting "
        f"(`{SETTINGS['paper']}`, latest `compare`, `basket` and `consolidation` rows); the last column is "
        "the range over the latest `--readings` rows. The explanations are below the table._"
    )
    header = ["#", "Claim", "Paper", "mipopt (`paper` setting)", "Range over the readings"]
    return f"{note}\n\n" + common.markdown_table(header, body)


def explore_choice(rows: list[dict[str, str]]) -> tuple[str | None, str | None]:
    """(chosen, GRMU nearest): among the settings with the paper's order (GRMU > MCC > FF) that keep
    the hosts' cpu and ram, the one nearest the paper's three rates (:func:`paper_distance`), and the
    one whose GRMU rate alone is nearest 39.3 %."""
    by_distance, by_grmu = [], []
    for options, rs in latest(rows, "explore").items():
        acc = {r["label"]: float(r["acceptance_rate"]) for r in rs}
        distance = paper_distance(acc)
        if distance is None or merged_options(options, "options").get("resources") is False:
            continue
        if acc["grmu"] > acc["mcc"] > acc["ff"]:
            by_distance.append((distance, options))
            by_grmu.append((abs(acc["grmu"] - PAPER_ACCEPTANCE["grmu"]), options))
    return (min(by_distance)[1] if by_distance else None, min(by_grmu)[1] if by_grmu else None)


def paper_distance(acc: dict[str, float]) -> float | None:
    """Euclidean distance in points between (FF, MCC, GRMU) acceptance rates and the paper's."""
    if not all(p in acc for p in ("ff", "mcc", "grmu")):
        return None
    return 100 * math.sqrt(sum((acc[p] - PAPER_ACCEPTANCE[p]) ** 2 for p in ("ff", "mcc", "grmu")))


def explore_section(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    groups = latest(rows, "explore")
    if not groups:
        return "_No `--explore` rows yet._"
    chosen, nearest = explore_choice(rows)
    distances = {
        options: paper_distance({r["label"]: float(r["acceptance_rate"]) for r in rs})
        for options, rs in groups.items()
    }
    body = []
    for options, rs in groups.items():
        opts = merged_options(options, "options")
        acc = {r["label"]: float(r["acceptance_rate"]) for r in rs}
        if opts.get("departures") is False:
            load_name = "no departures"
        else:
            load_name = f"x{float(opts['duration_scale']):g}" if "duration_scale" in opts else "as recorded"
        grmu = acc.get("grmu")
        mark = []
        if options == chosen:
            mark.append("**chosen**")
        if options == nearest and options != chosen:
            mark.append("GRMU nearest 39.3 %")
        if options == SETTINGS["paper"]:
            mark.append("default `paper`")
        body.append(
            [
                "1" if opts.get("gpus_per_host") == 1 else "all",
                "no" if opts.get("resources") is False else "yes",
                f"{float(opts.get('host_fraction', 1.0)):.0%}",
                load_name,
                str(opts.get("share", "product")),
                f"{int(rs[0]['gpus']):,}",
                *(_pct(acc.get(p)) for p in ("ff", "mcc", "grmu")),
                f"{grmu / acc['mcc'] - 1:+.1%}" if grmu is not None and acc.get("mcc") else "-",
                f"{grmu / acc['ff'] - 1:+.1%}" if grmu is not None and acc.get("ff") else "-",
                "yes" if grmu is not None and grmu > acc.get("mcc", 1) > acc.get("ff", 1) else "no",
                f"{100 * (grmu - PAPER_ACCEPTANCE['grmu']):+.1f}" if grmu is not None else "-",
                f"{distances[options]:.1f}" if distances[options] is not None else "-",
                ", ".join(mark),
            ]
        )
    header = [
        "GPUs per node", "CPU/RAM", "Hosts", "Durations", "Share", "GPUs", "FF", "MCC", "GRMU", "GRMU over MCC",
        "GRMU over FF", "Paper's order", "GRMU - 39.3 (points)", "Distance (points)", "",
    ]  # fmt: skip
    note = (
        f"_Generated by `benchmarks/bench_grmu.py --explore` from `{source}`: the latest run of each load "
        "setting, acceptance rate (accepted / arrived at the end of the window) of FF, MCC and GRMU (heavy 30 %, defragmentation). Paper: FF 28.3 %, MCC 32.2 %, "
        "GRMU 39.3 %, GRMU +22 % over MCC and +39 % over FF. Distance: Euclidean, in points, between the "
        "(FF, MCC, GRMU) rates and the paper's. **chosen**: the smallest distance among the settings with "
        "the paper's order GRMU > MCC > FF that keep the hosts' cpu and ram (as the paper's hosts do); "
        "GRMU nearest 39.3 %: the same settings' GRMU rate alone nearest the paper's; share: the `share` option of `alibaba_trace` "
        "(product: Eq. 28)._"
    )
    return f"{note}\n\n" + common.markdown_table(header, body, align="llllll" + "r" * 9 + "l")


# --- command line ----------------------------------------------------------------------


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "trace",
        nargs="?",
        type=Path,
        default=DEFAULT_TRACE,
        help="directory of the Alibaba GPU trace 2023 (default: ../shared/data/alibaba-gpu-v2023 from the repo)",
    )
    parser.add_argument(
        "--settings",
        nargs="+",
        default=["paper"],
        help=f"load settings: names ({', '.join(f'{k}: {v or chr(39) * 2}' for k, v in SETTINGS.items())}) "
        "or alibaba_trace options like gpus_per_host=1,departures=false (default: paper)",
    )
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS))
    parser.add_argument("--heavy", type=float, nargs="+", default=list(HEAVY), help="heavy-basket capacities")
    parser.add_argument(
        "--intervals", type=float, nargs="+", default=list(INTERVALS), help="consolidation, h"
    )
    parser.add_argument("--explore", action="store_true", help="run the grid of load settings instead")
    parser.add_argument(
        "--readings", action="store_true", help="run the readings of section 8.1 on the paper setting instead"
    )
    parser.add_argument("--explore-policies", nargs="+", default=["ff", "mcc", "grmu"])
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the policies and host samples (default 0)"
    )
    common.executor_argument(parser, "settings of --explore and --readings")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if any(not 0 <= h <= 1 for h in args.heavy):
        parser.error("--heavy values must be fractions in [0, 1]")
    if any(i <= 0 for i in args.intervals):
        parser.error("--intervals must be positive")
    if not args.render and not ((args.trace / NODE_FILE).is_file() and (args.trace / POD_FILE).is_file()):
        parser.error(
            f"no {NODE_FILE} and {POD_FILE} in {args.trace}; pass the directory of the "
            "Alibaba GPU trace 2023 (cluster-trace-gpu-v2023) as the first argument"
        )


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The replays of ``--explore`` or of every setting's parts; the plots of the latter beside the CSV."""
    if args.explore:
        return bench_explore(args.trace, args.explore_policies, args.seed, args.executor)
    if args.readings:
        return bench_readings(args.trace, args.seed, args.executor)
    rows: list[dict[str, Any]] = []
    args.out_dir.mkdir(parents=True, exist_ok=True)
    for setting in args.settings:
        name = setting if setting in SETTINGS else "custom"
        options = SETTINGS.get(setting, setting)
        found, series = bench_setting(args.trace, name, options, args.parts, args)
        rows += found
        prefix = "grmu" if name == "paper" else f"grmu_{name}"
        title = f"{name}: {options or 'loader defaults'} ({found[0]['gpus']:,} GPUs)"
        if series:
            plot_compare(
                series,
                args.out_dir / f"{prefix}_acceptance.png",
                args.out_dir / f"{prefix}_hardware.png",
                title,
            )
        if any(r["part"] in ("basket", "consolidation") for r in found):
            plot_sweeps(found, args.out_dir / f"{prefix}_sweeps.png", title)
    return rows


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    print(f"{'setting':<8} {'part':<13} {'run':<9} {'policy':<36} {'acceptance':>10} {'migrations':>10}")
    for r in rows:
        print(
            f"{r['setting']:<8} {r['part']:<13} {r['label']:<9} {r['policy']:<36} "
            f"{float(r['acceptance_rate']):>10.1%} {r['migrations']:>10}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[
        common.Output(
            "grmu.csv",
            COLUMNS,
            {
                "grmu": readme_section,
                "grmu-claims": claims_section,
                "grmu-readings": readings_section,
                "grmu-explore": explore_section,
            },
        )
    ],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=("--heavy", "0.2", "0.5", "--intervals", "6"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
