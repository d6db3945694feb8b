"""Many replays: workload sources by name, every policy on the same traces, tables and plots.

A workload spec names a generator of :mod:`mipopt.workloads` and its options:
``fbk:distribution=skew-big,gpus=100``, ``poisson:gpus=16,load=0.9``,
``alibaba:path=../shared/data/alibaba-gpu-v2023,compress=60``. Run ``r`` of a
comparison replays the trace of seed ``seed + r`` (generated sources) under every
policy, so policies always meet the same requests.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from mipopt._fields import parse_options
from mipopt.errors import InstanceError
from mipopt.heuristics.policies import make_policy
from mipopt.io import write_atomic
from mipopt.simulation.engine import simulate
from mipopt.workloads.trace import Trace

__all__ = ["SOURCES", "compare", "make_trace", "plot_series", "summary_table"]


def _sources() -> dict[str, Callable[..., Trace]]:
    from mipopt import workloads

    return {
        name: getattr(workloads, attr)
        for name, attr in (("fbk", "fbk_trace"), ("poisson", "poisson_stream"), ("alibaba", "alibaba_trace"))
        if hasattr(workloads, attr)
    }


SOURCES = ("fbk", "poisson", "alibaba")


def make_trace(spec: str, seed: int, path: str = "workload") -> Trace:
    """The trace a workload spec names, generated with ``seed`` (sources without randomness ignore it).

    Raises
    ------
    InstanceError
        Naming ``path`` on an unknown source or option, or a bad value.
    """
    name, _, text = spec.partition(":")
    sources = _sources()
    if name not in sources:
        raise InstanceError(path, f"unknown workload {name!r} (known: {', '.join(sorted(sources))})")
    factory = sources[name]
    options = parse_options(text, path)
    params = inspect.signature(factory).parameters
    unknown = sorted(set(options) - set(params))
    if unknown:
        known = ", ".join(p for p in params if p != "seed")
        raise InstanceError(path, f"workload {name!r} has no option {unknown[0]!r} (options: {known})")
    if "seed" in params:
        options["seed"] = seed
    try:
        return factory(**options)
    except (TypeError, ValueError) as err:
        if isinstance(err, InstanceError):
            raise
        raise InstanceError(path, f"workload {spec!r}: {err}") from None


def compare(
    workload: str,
    policies: Sequence[str],
    *,
    runs: int = 1,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
    **simulate_options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay ``runs`` traces of ``workload`` under every policy.

    Returns
    -------
    series, summary
        ``series``: every time-series row with ``policy`` and ``run`` columns;
        ``summary``: one row per (policy, run) with the totals of
        :func:`~mipopt.simulation.simulate`.
    """
    made = [make_policy(p) for p in policies]  # bad names fail before any replay
    series, summary = [], []
    steps = runs * len(policies)
    for r in range(runs):
        trace = make_trace(workload, seed + r)
        for i, spec in enumerate(policies):
            policy = made[i] if r == 0 else make_policy(spec)
            done = r * len(policies) + i

            def step(fraction: float, done: int = done) -> None:
                if progress is not None:
                    progress((done + fraction) / steps)

            res = simulate(trace, policy, seed=seed + r, progress=step, **simulate_options)
            series.append(res.series.assign(policy=spec, run=r))
            summary.append({"policy": spec, "run": r, "trace": trace.name, **res.summary})
    return pd.concat(series, ignore_index=True), pd.DataFrame(summary)


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Means over runs per policy, in the order the policies were given."""
    columns = [
        "accepted",
        "acceptance",
        "hardware_area",
        "mean_active_gpus",
        "mean_fragmentation_fbk",
        "migrations",
        "runtime_s",
    ]
    table = summary.groupby("policy", sort=False)[columns].mean()
    table.insert(0, "runs", summary.groupby("policy", sort=False).size())
    return table


def plot_series(series: pd.DataFrame, path: Path, time_unit: str = "") -> None:
    """Acceptance, active GPUs, mean fragmentation and migrations over time, one line per policy (mean over runs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [
        ("acceptance", "acceptance (cumulative)"),
        ("active_gpus", "active GPUs"),
        ("fragmentation_fbk", "mean fragmentation F (active GPUs)"),
        ("migrations", "migrations (cumulative)"),
    ]
    data = series.assign(migrations=series.filter(like="moves_").sum(axis=1))
    fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharex=True)
    for ax, (column, label) in zip(axes.flat, panels, strict=True):
        for policy, rows in data.groupby("policy", sort=False):
            mean = rows.groupby("time")[column].mean()
            ax.plot(mean.index, mean.to_numpy(), label=str(policy), linewidth=1.2)
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes[1]:
        ax.set_xlabel(f"time ({time_unit})" if time_unit else "time")
    axes[0][0].legend(fontsize=8)
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=110), text=False)
    plt.close(fig)
