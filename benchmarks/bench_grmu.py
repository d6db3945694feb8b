"""Benchmark: the GRMU paper's evaluation (section 8, Figs. 6-12 and Table 6) on the mapped Alibaba trace.

The trace is read from a directory (default ``../shared/data/alibaba-gpu-v2023`` next to the
repository; it is never copied into it) and mapped as in the paper's section 8.1 by
:func:`mipopt.workloads.alibaba_trace` (1,213 hosts, 8,063 workloads, times in hours). A
*setting* is a string of that function's load options (``gpus_per_host=1,duration_scale=3e4``);
every replay of a setting uses the same trace. As the paper's simulator (Cloudy) stops once
the last request has been decided, departures after the last arrival are dropped: the hourly
series, the hardware area (Table 6) and the rates cover the arrival window only.

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

``--explore`` runs instead the grid of load settings that chose the default one (``ff``,
``mcc`` and ``grmu`` on each): nodes with all their GPUs or one, all hosts or a seeded half
or 30 %, durations as recorded, x60, x3600 (seconds read as hours), x10,000, x20,000, x30,000
or no departures; and two one-GPU settings without hosts' cpu and ram. Its README table marks the setting whose GRMU acceptance is nearest the
paper's 3,168 / 8,063 = 39.3 % among those with the paper's order (GRMU > MCC > FF).

Usage::

    python -m benchmarks.bench_grmu [TRACE_DIR] [--settings paper raw] [--parts basket consolidation compare]
        [--heavy 0.2 0.3 ...] [--intervals 6 12 24 48 96] [--seed 0]
        [--out-dir DIR] [--readme FILE] [--render] [--quick]
    python -m benchmarks.bench_grmu [TRACE_DIR] --explore [--explore-policies ff mcc grmu]

Rows go to ``OUT_DIR/grmu.csv``; the README sections ``grmu`` and ``grmu-explore`` are
regenerated from all rows of that file.
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_grmu.py
    import _as_module  # noqa: F401

import argparse
import dataclasses
import math
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from benchmarks import common
from mipopt._fields import parse_options
from mipopt.heuristics.policies import make_policy
from mipopt.io import write_atomic
from mipopt.simulation import simulate
from mipopt.workloads import alibaba_trace
from mipopt.workloads.alibaba import NODE_FILE, POD_FILE
from mipopt.workloads.trace import Trace

DEFAULT_TRACE = common.REPO_ROOT.parent / "shared" / "data" / "alibaba-gpu-v2023"
#: Load settings by name (options of ``alibaba_trace``); ``paper`` was chosen by ``--explore``.
SETTINGS = {"paper": "gpus_per_host=1,duration_scale=20000", "raw": ""}
PARTS = ("basket", "consolidation", "compare")
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
    "acceptance",
    *(f"acceptance_{p}" for p in PROFILES),
    "mean_profile_acceptance",
    "hardware_area",
    "mean_hardware_rate",
    "mean_active_gpus",
    "migrations",
    "moves_intra_gpu",
    "moves_inter_gpu",
    "moves_inter_host",
    "migrations_per_accepted",
    "runtime_s",
]


# --- traces and replays ----------------------------------------------------------


def load(trace_dir: Path, options: str, seed: int = 0) -> Trace:
    """The mapped trace under ``options`` (host sample seeded by ``seed``), without departures after the last arrival."""
    trace = alibaba_trace(trace_dir, **{"seed": seed, **parse_options(options, "--settings")})
    end = max(r.arrival for r in trace.requests)
    requests = tuple(
        r if r.departure <= end else dataclasses.replace(r, departure=math.inf) for r in trace.requests
    )
    return dataclasses.replace(trace, requests=requests)


def replay(trace: Trace, spec: str, seed: int) -> tuple[dict[str, Any], pd.DataFrame]:
    """One replay's row values (without the run and setting columns) and its hourly series."""
    t0 = time.perf_counter()
    res = simulate(trace, make_policy(spec), seed=seed)
    runtime = time.perf_counter() - t0
    s, series = res.summary, res.series
    hardware_max = len(trace.cluster.hosts) + len(trace.cluster.gpus)
    per_profile = {p: s.get(f"acceptance_{p}") for p in PROFILES}
    present = [v for v in per_profile.values() if v is not None]
    row = {
        "policy": spec,
        "seed": seed,
        "accepted": s["accepted"],
        "acceptance": f"{s['acceptance']:.6f}",
        **{f"acceptance_{p}": "" if v is None else f"{v:.6f}" for p, v in per_profile.items()},
        "mean_profile_acceptance": f"{sum(present) / len(present):.6f}" if present else "",
        "hardware_area": f"{s['hardware_area']:.1f}",
        "mean_hardware_rate": f"{series['hardware'].mean() / hardware_max:.6f}",
        "mean_active_gpus": f"{s['mean_active_gpus']:.2f}",
        "migrations": s["migrations"],
        "moves_intra_gpu": s["moves_intra_gpu"],
        "moves_inter_gpu": s["moves_inter_gpu"],
        "moves_inter_host": s["moves_inter_host"],
        "migrations_per_accepted": f"{s['migrations_per_accepted']:.6f}",
        "runtime_s": f"{runtime:.2f}",
    }
    return row, series


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
        "hours": math.ceil(max(r.arrival for r in trace.requests)),
    }
    rows, series, done = [], {}, {}
    for part in parts:
        for label, spec in part_runs(part, args.heavy, args.intervals):
            if spec not in done:
                done[spec] = replay(trace, spec, args.seed)
                row = done[spec][0]
                common.progress(
                    f"{name} {part} {label} ({spec}): accepted {row['accepted']} "
                    f"({float(row['acceptance']):.1%}), migrations {row['migrations']}, {row['runtime_s']} s"
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
    return out + [f"gpus_per_host=1,{GRID_LOADS[k]},resources=false" for k in ("x20000", "no departures")]


def bench_explore(trace_dir: Path, policies: Sequence[str], seed: int) -> list[dict[str, Any]]:
    rows = []
    for options in explore_settings():
        trace = load(trace_dir, options, seed)
        shared = {
            "setting": "explore",
            "options": options,
            "hosts": len(trace.cluster.hosts),
            "gpus": len(trace.cluster.gpus),
            "requests": len(trace.requests),
            "hours": math.ceil(max(r.arrival for r in trace.requests)),
        }
        found = []
        for spec in policies:
            row, _ = replay(trace, spec, seed)
            rows.append({**shared, "part": "explore", "label": spec, **row})
            found.append(f"{spec} {float(row['acceptance']):.1%}")
        common.progress(f"explore [{options or 'raw'}] {len(trace.cluster.gpus)} GPUs: {', '.join(found)}")
    return rows


# --- plots -------------------------------------------------------------------------


def plot_compare(
    series: dict[str, pd.DataFrame], path_acceptance: Path, path_hardware: Path, title: str
) -> None:
    """Figs. 10 and 12: hourly cumulative acceptance and active hardware (Eq. 4), one line per policy."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    for path, column, label in (
        (path_acceptance, "acceptance", "acceptance rate (cumulative)"),
        (path_hardware, "hardware", "active hardware (hosts + GPUs, Eq. 4)"),
    ):
        fig, ax = plt.subplots(figsize=(8, 4.2))
        for spec, frame in series.items():
            ax.plot(frame["time"], frame[column], label=spec, linewidth=1.1)
        ax.set_xlabel("time (h)")
        ax.set_ylabel(label)
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        fig.tight_layout()
        write_atomic(path, lambda fh, fig=fig: fig.savefig(fh, format="png", dpi=110), text=False)
        plt.close(fig)


def plot_sweeps(rows: list[dict[str, Any]], path: Path, title: str) -> None:
    """Figs. 6-9: the basket sweep (acceptance, hardware rate, per profile) and the consolidation runs."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    basket = [r for r in rows if r["part"] == "basket"]
    consolidation = [r for r in rows if r["part"] == "consolidation"]
    fig, axes = plt.subplots(1, 3, figsize=(14, 4))
    if basket:
        x = [r["label"] for r in basket]
        axes[0].plot(x, [float(r["acceptance"]) for r in basket], "o-", label="overall acceptance")
        axes[0].plot(
            x, [float(r["mean_hardware_rate"]) for r in basket], "s-", label="mean active hardware rate"
        )
        axes[0].plot(
            x, [float(r["mean_profile_acceptance"] or "nan") for r in basket], "^-", label="mean per-profile"
        )
        for p in PROFILES:
            axes[1].plot(x, [float(r[f"acceptance_{p}"] or "nan") for r in basket], "o-", label=p)
    axes[0].set_title("Figs. 6, 8: heavy-basket capacity", fontsize=9)
    axes[1].set_title("Fig. 7: acceptance per profile", fontsize=9)
    if consolidation:
        x = [r["label"] for r in consolidation]
        axes[2].plot(x, [float(r["acceptance"]) for r in consolidation], "o-", label="acceptance")
        axes[2].plot(x, [float(r["mean_hardware_rate"]) for r in consolidation], "s-", label="hardware rate")
        twin = axes[2].twinx()
        twin.bar(
            x, [int(r["migrations"]) for r in consolidation], alpha=0.25, color="gray", label="migrations"
        )
        twin.set_ylabel("migrations")
    axes[2].set_title("Fig. 9: consolidation interval", fontsize=9)
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
        grmu = float(by["grmu"]["acceptance"]) if "grmu" in by else None
        top_area = max(float(r["hardware_area"]) for r in rs)
        body = []
        for spec in [p for p in COMPARED if p in by] + [p for p in by if p not in COMPARED]:
            r = by[spec]
            acc = float(r["acceptance"])
            gain = f"{grmu / acc - 1:+.1%}" if grmu is not None and spec != "grmu" and acc else "-"
            paper_gain = f"+{PAPER_GAIN[spec]:.0%}" if spec in PAPER_GAIN else "-"
            paper_norm = PAPER_AREA[spec] / max(PAPER_AREA.values()) if spec in PAPER_AREA else None
            body.append(
                [
                    spec,
                    f"{int(r['accepted']):,}",
                    _pct(acc),
                    _pct(PAPER_ACCEPTANCE.get(spec)),
                    gain,
                    paper_gain,
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
            "Policy", "Accepted", "Acceptance", "Paper", "GRMU over it", "Paper: GRMU over it", "Hardware area",
            "Normalized", "Paper normalized", "Mean hardware rate", "Migrations", "Per accepted", "Paper migrations",
        ]  # fmt: skip
        out.append(
            f"**{_setting(options, rs)}**, {rs[0]['commit']}, {rs[0]['date'][:10]}:\n\n"
            + common.markdown_table(header, body, align="lrrrrrrrrrrrr")
        )
        profile_rows = [[spec] + [_pct(by[spec][f"acceptance_{p}"]) for p in PROFILES] for spec in by]
        if "grmu" in by and "mcc" in by:
            ratios = []
            for p in PROFILES:
                g, m = by["grmu"][f"acceptance_{p}"], by["mcc"][f"acceptance_{p}"]
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
            "Per-profile acceptance (Fig. 11):\n\n"
            + common.markdown_table(["Policy", *PROFILES], profile_rows, align="l" + "r" * len(PROFILES))
        )
    return "\n\n".join(out)


def basket_tables(rows: list[dict[str, str]]) -> str:
    out = []
    for options, rs in latest(rows, "basket").items():
        body = [
            [
                r["label"],
                _pct(r["acceptance"]),
                _pct(r["mean_hardware_rate"]),
                *(_pct(r[f"acceptance_{p}"]) for p in PROFILES),
                _pct(r["mean_profile_acceptance"]),
                r["migrations"],
            ]
            for r in rs
        ]
        header = [
            "Heavy basket",
            "Acceptance",
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
                _pct(r["acceptance"]),
                _pct(r["mean_hardware_rate"]),
                r["mean_active_gpus"],
                r["migrations"],
                f"{r['moves_intra_gpu']} / {r['moves_inter_gpu']} / {r['moves_inter_host']}",
                _pct(r["migrations_per_accepted"]),
            ]
            for r in rs
        ]
        header = [
            "Run", "Acceptance", "Mean hardware rate", "Mean active GPUs", "Migrations",
            "Intra-GPU / inter-GPU / inter-host", "Per accepted",
        ]  # fmt: skip
        out.append(
            f"Consolidation interval (Fig. 9), heavy basket 30 %, {_setting(options, rs)}:\n\n"
            + common.markdown_table(header, body, align="lrrrrrr")
        )
    return "\n\n".join(out)


def readme_section(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    note = (
        f"_Generated by `benchmarks/bench_grmu.py` from `{source}`: the latest run of each (setting, part). "
        "Acceptance is the share of the 8,063 requests placed; hardware is GRMU Eq. 4 with b_j = 1 (active "
        "hosts + active GPUs), its area the sum of the hourly samples over the arrival window (Table 6; the "
        "paper's absolute areas are in its own units, so compare the normalized columns, each divided by the "
        "highest policy), its rate the hourly mean over all hosts + GPUs. Paper acceptance for MCC and FF is "
        "derived from GRMU's 3,168 / 8,063 and the stated +22 % and +39 %._"
    )
    parts = [compare_tables(rows), basket_tables(rows), consolidation_tables(rows)]
    return "\n\n".join([note, *(p for p in parts if p)])


def explore_choice(rows: list[dict[str, str]]) -> tuple[str | None, str | None]:
    """(nearest GRMU acceptance to the paper's among settings in the paper's order, nearest overall)."""
    target = PAPER_ACCEPTANCE["grmu"]
    ordered, anyone = [], []
    for options, rs in latest(rows, "explore").items():
        acc = {r["label"]: float(r["acceptance"]) for r in rs}
        if "grmu" not in acc:
            continue
        gap = abs(acc["grmu"] - target)
        anyone.append((gap, options))
        if "mcc" in acc and "ff" in acc and acc["grmu"] > acc["mcc"] > acc["ff"]:
            ordered.append((gap, options))
    return (min(ordered)[1] if ordered else None, min(anyone)[1] if anyone else None)


def explore_section(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    groups = latest(rows, "explore")
    if not groups:
        return "_No `--explore` rows yet._"
    chosen, nearest = explore_choice(rows)
    body = []
    for options, rs in groups.items():
        opts = parse_options(options, "options")
        acc = {r["label"]: float(r["acceptance"]) for r in rs}
        if opts.get("departures") is False:
            load_name = "no departures"
        else:
            load_name = f"x{float(opts['duration_scale']):g}" if "duration_scale" in opts else "as recorded"
        grmu = acc.get("grmu")
        mark = []
        if options == chosen:
            mark.append("**chosen**")
        if options == nearest and options != chosen:
            mark.append("nearest overall")
        if options == SETTINGS["paper"]:
            mark.append("default `paper`")
        body.append(
            [
                "1" if opts.get("gpus_per_host") == 1 else "all",
                "no" if opts.get("resources") is False else "yes",
                f"{float(opts.get('host_fraction', 1.0)):.0%}",
                load_name,
                f"{int(rs[0]['gpus']):,}",
                *(_pct(acc.get(p)) for p in ("ff", "mcc", "grmu")),
                f"{grmu / acc['mcc'] - 1:+.1%}" if grmu is not None and acc.get("mcc") else "-",
                f"{grmu / acc['ff'] - 1:+.1%}" if grmu is not None and acc.get("ff") else "-",
                "yes" if grmu is not None and grmu > acc.get("mcc", 1) > acc.get("ff", 1) else "no",
                f"{100 * (grmu - PAPER_ACCEPTANCE['grmu']):+.1f}" if grmu is not None else "-",
                ", ".join(mark),
            ]
        )
    header = [
        "GPUs per node", "CPU/RAM", "Hosts", "Durations", "GPUs", "FF", "MCC", "GRMU", "GRMU over MCC", "GRMU over FF",
        "Paper's order", "GRMU - 39.3 (points)", "",
    ]  # fmt: skip
    note = (
        f"_Generated by `benchmarks/bench_grmu.py --explore` from `{source}`: the latest run of each load "
        "setting, acceptance of FF, MCC and GRMU (heavy 30 %, defragmentation). Paper: FF 28.3 %, MCC 32.2 %, "
        "GRMU 39.3 %, GRMU +22 % over MCC and +39 % over FF. **chosen**: nearest GRMU acceptance to 39.3 % "
        "among settings with the paper's order GRMU > MCC > FF._"
    )
    return f"{note}\n\n" + common.markdown_table(header, body, align="lllllrrrrrrrl")


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
    parser.add_argument("--explore-policies", nargs="+", default=["ff", "mcc", "grmu"])
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the policies and host samples (default 0)"
    )


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
        return bench_explore(args.trace, args.explore_policies, args.seed)
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
            f"{float(r['acceptance']):>10.1%} {r['migrations']:>10}"
        )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("grmu.csv", COLUMNS, {"grmu": readme_section, "grmu-explore": explore_section})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=("--heavy", "0.2", "0.5", "--intervals", "6"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
