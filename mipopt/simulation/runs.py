"""Many replays: workload sources by name, every policy on the same traces, tables and plots.

A workload spec names a generator of :mod:`mipopt.workloads` and its options:
``fbk:distribution=skew-big,gpus=100``, ``poisson:gpus=16,load=0.9``,
``alibaba:path=../shared/data/alibaba-gpu-v2023,compress=60``. Run ``r`` of a
comparison replays the trace of seed ``seed + r`` (generated sources) under every
policy, so policies always meet the same requests.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from mipopt._fields import shown
from mipopt.errors import InstanceError
from mipopt.executors import Executor, parse_executor, run_jobs, runs_here
from mipopt.heuristics.policies import make_policy
from mipopt.instance.trace import Trace
from mipopt.io import write_atomic
from mipopt.limits import MAX_RUNS, beyond
from mipopt.simulation.engine import on_grid, simulate
from mipopt.specs import bind_options, parse_spec, takes

__all__ = [
    "SOURCES",
    "compare",
    "format_table",
    "make_trace",
    "plain",
    "plot_series",
    "requests_per_run",
    "run_header",
    "summary_table",
]


def _sources() -> dict[str, Callable[..., Trace]]:
    from mipopt import workloads
    from mipopt.workloads.migbench_models import migbench_generated

    found = {
        name: getattr(workloads, attr)
        for name, attr in (
            ("fbk", "fbk_trace"),
            ("poisson", "poisson_stream"),
            ("alibaba", "alibaba_trace"),
            ("migbench", "migbench_trace"),
        )
        if hasattr(workloads, attr)
    }
    return {**found, "migbench-gen": migbench_generated}


SOURCES = ("fbk", "poisson", "alibaba", "migbench", "migbench-gen")


def make_trace(spec: str, seed: int, path: str = "workload") -> Trace:
    """The trace a workload spec names, generated with ``seed`` (sources without randomness ignore it).

    Raises
    ------
    InstanceError
        Naming ``path`` on an unknown source or option, an option given twice, a bad value, or
        a size beyond ``docs/limits.md`` (GPUs, requests drawn, the spec's length).
    """
    parsed = parse_spec(spec, path)
    sources = _sources()
    if parsed.name not in sources or parsed.inner is not None:
        raise InstanceError(
            path, f"unknown workload {shown(parsed.name)} (known: {', '.join(sorted(sources))})"
        )
    factory = sources[parsed.name]
    if "seed" in parsed.options:  # run r replays seed + r: a seed in the spec would be overruled
        raise InstanceError(
            path, f"workload {parsed.name} takes its seed from the run (--seed, seed=), not its spec"
        )
    options = bind_options(parsed, factory, path, "workload", skip=("seed",))
    if "seed" in takes(factory):
        options["seed"] = seed
    try:
        return factory(**options)
    except (TypeError, ValueError) as err:
        if isinstance(err, InstanceError):
            raise
        raise InstanceError(path, f"workload {shown(spec)}: {err}") from None


def compare(
    workload: str,
    policies: Sequence[str],
    *,
    runs: int = 1,
    seed: int = 0,
    progress: Callable[[float], None] | None = None,
    executor: str | Executor | None = None,
    jobs: list[pd.DataFrame] | None = None,
    **simulate_options: Any,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Replay ``runs`` traces of ``workload`` under every policy.

    Each (run, policy) replay is a job of ``executor`` (:func:`mipopt.executors.make_executor`:
    ``serial`` in this process, the default; ``local[:N]`` processes; ``dask``/``ray`` clusters):
    the frames are the same whatever runs them, in run-then-policy order. When the replays run in
    this process (``serial``, or a single replay) the progress advances within each replay,
    otherwise as each replay ends.

    Returns
    -------
    series, summary
        ``series``: every time-series row with ``policy`` and ``run`` columns;
        ``summary``: one row per (policy, run) with the trace's name and time unit and
        the totals of :func:`~mipopt.simulation.simulate`. Given a list ``jobs``, each
        replay's :attr:`~mipopt.simulation.SimulationResult.jobs` (with ``policy`` and ``run``
        columns) is appended to it, in the same order.

    Raises
    ------
    InstanceError
        A bad workload or policy, or ``runs`` beyond :data:`~mipopt.limits.MAX_RUNS` (before any
        job is listed).
    """
    if runs > MAX_RUNS:  # checked before any job is listed
        raise InstanceError("runs", beyond(runs, "runs", MAX_RUNS))
    for p in policies:
        make_policy(p)  # bad names fail before any replay
    parsed = executor if isinstance(executor, Executor) else parse_executor(executor or "serial")
    replays: list[tuple[str, str, int, int, dict[str, Any]]] = [
        (workload, spec, seed + r, r, simulate_options) for r in range(runs) for spec in policies
    ]
    steps = len(replays)
    if runs_here(parsed, steps):
        done = []
        for i, job in enumerate(replays):

            def step(fraction: float, i: int = i) -> None:
                if progress is not None:
                    progress((i + fraction) / steps)

            done.append(_replay(*job, progress=step))
        _LAST_TRACE.clear()
    else:
        finished = 0

        def ended(i: int, result: object) -> None:
            nonlocal finished
            finished += 1
            if progress is not None:
                progress(finished / steps)

        done = run_jobs(_replay, replays, parsed, ended)
    if jobs is not None:
        jobs.extend(table for _, _, table in done)
    series = [frame for frame, _, _ in done]
    return pd.concat(series, ignore_index=True), pd.DataFrame([row for _, row, _ in done])


#: The last trace :func:`_replay` made in this process, by (workload, seed): the policies of one
#: run meet the same trace without generating (or loading) it again.
_LAST_TRACE: dict[tuple[str, int], Trace] = {}


def _replay(
    workload: str,
    spec: str,
    seed: int,
    run: int,
    simulate_options: dict[str, Any],
    progress: Callable[[float], None] | None = None,
) -> tuple[pd.DataFrame, dict[str, Any], pd.DataFrame]:
    """One job of :func:`compare`: run ``run``'s trace (seed ``seed``) under the policy ``spec``."""
    trace = _LAST_TRACE.get((workload, seed))
    if trace is None:
        trace = make_trace(workload, seed)
        _LAST_TRACE.clear()
        _LAST_TRACE[workload, seed] = trace
    res = simulate(trace, make_policy(spec), seed=seed, progress=progress, **simulate_options)
    row = {"policy": spec, "run": run, "trace": trace.name, "time_unit": trace.time_unit, **res.summary}
    return res.series.assign(policy=spec, run=run), row, res.jobs.assign(policy=spec, run=run)


#: The columns of :func:`summary_table`, then the queue's and MIGBench's metrics where a replay has them.
TABLE_COLUMNS = (
    "accepted",
    "acceptance_rate",
    "hardware_area",
    "mean_active_gpus",
    "mean_fragmentation_fbk",
    "migrations",
)
QUEUE_COLUMNS = ("mean_wait", "p95_wait", "abandoned")
#: MIGBench's summary (:mod:`mipopt.simulation.metrics`), in its order.
METRIC_COLUMNS = (
    "makespan",
    "throughput_per_hour",
    "mean_wait",
    "p50_wait",
    "p95_wait",
    "p99_wait",
    "gpc_utilization",
    "memory_utilization",
    "peak_gpc_utilization",
    "physical_fragmentation",
    "stranded_capacity",
    "request_fragmentation",
    "backlogged_time_fraction",
    "creates",
    "deletes",
)


def _columns(summary: pd.DataFrame) -> list[str]:
    optional = (c for c in (*QUEUE_COLUMNS, *METRIC_COLUMNS) if c in summary)
    return [*TABLE_COLUMNS, *dict.fromkeys(optional), "runtime_s"]


def summary_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Means over runs per policy, in the order the policies were given."""
    table = summary.groupby("policy", sort=False)[_columns(summary)].mean()
    table.insert(0, "runs", summary.groupby("policy", sort=False).size())
    return table


def plain(value: float) -> str:
    """A number as the tables print it: four significant digits, thousands separated, never
    e-notation (digits past the sixth decimal are dropped).

    >>> [plain(v) for v in (17720.3, 0.98857, 44.7, 173.0, 0.000123456, -2.5e-9, 2874508.1)]
    ['17,720', '0.9886', '44.7', '173', '0.000123', '0', '2,874,508']
    """
    if not np.isfinite(value):
        return str(value)
    if float(value).is_integer() or abs(value) >= 1000:
        text = f"{value:,.0f}"
    else:
        decimals = min(6, max(0, 3 - int(np.floor(np.log10(abs(value))))))
        text = f"{value:.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def format_table(summary: pd.DataFrame) -> str:
    """The table ``mipopt simulate`` prints: per policy the mean over runs of every column of
    :func:`summary_table`, and with several runs their range beside it, ``mean [min..max]``.
    Columns no replay measured (all NaN) are left out.

    Examples
    --------
    >>> summary = pd.DataFrame({"policy": ["ff", "ff"], "accepted": [9, 12], "acceptance_rate": [0.75, 1.0],
    ...     "hardware_area": [31000.0, 29000.0], "mean_active_gpus": [2.0, 2.0],
    ...     "mean_fragmentation_fbk": [0.5, 0.25], "migrations": [0, 0], "runtime_s": [0.01, 0.03]})
    >>> print(format_table(summary).splitlines()[2])
    ff        2  10.5 [9..12]  0.875 [0.75..1]  30,000 [29,000..31,000]                2      0.375 [0.25..0.5]          0  0.02 [0.01..0.03]
    """
    measured = [c for c in _columns(summary) if summary[c].notna().any()]
    groups = summary.groupby("policy", sort=False)[measured]
    means, lows, highs = groups.mean(), groups.min(), groups.max()
    cells = means.map(plain)
    varies = (lows != highs) & lows.notna()
    cells = cells.where(~varies, cells + " [" + lows.map(plain) + ".." + highs.map(plain) + "]")
    cells.insert(0, "runs", groups.size().astype(str))
    return cells.to_string()


def requests_per_run(summary: pd.DataFrame) -> str:
    """``"230 requests per run"``, or with runs of different lengths their mean and range."""
    counts = summary.drop_duplicates("run")["arrived"].astype(int)
    if counts.nunique() == 1:
        return f"{counts.iloc[0]:,} requests per run"
    return f"{counts.mean():,.1f} requests per run on average ({counts.min():,}-{counts.max():,})"


def run_header(workload: str, summary: pd.DataFrame) -> str:
    """The line ``mipopt simulate`` prints (and ``series.png`` is titled) before its table.

    Examples
    --------
    >>> summary = pd.DataFrame({"run": [0, 0], "arrived": [9, 9], "horizon": [8.0, 8.0], "time_unit": "slot"})
    >>> run_header("fbk:gpus=4", summary)
    'workload fbk:gpus=4: 9 requests per run, 1 run(s), up to t = 8 slot'
    """
    ends = summary["horizon"]
    until = plain(ends.iloc[0]) if ends.nunique() == 1 else f"{plain(ends.min())}..{plain(ends.max())}"
    runs = summary["run"].nunique()
    unit = summary["time_unit"].iloc[0]
    return f"workload {workload}: {requests_per_run(summary)}, {runs} run(s), up to t = {until} {unit}"


#: The panels of :func:`plot_series`: column and title.
PANELS = (
    ("acceptance_rate", "acceptance rate (cumulative)"),
    ("active_gpus", "active GPUs"),
    ("fragmentation_fbk", "mean fragmentation F of the active GPUs"),
    ("migrations", "migrations (cumulative)"),
    ("queued", "requests waiting"),
)


def plot_series(
    series: pd.DataFrame, path: Path, *, title: str = "", time_unit: str = "", points: int = 400
) -> tuple[list[str], str]:
    """The series over time, one line per policy: acceptance rate, active GPUs, fragmentation,
    migrations and (when any request waited) the queue.

    With several runs a line is their mean on a grid of ``points`` times, shaded between
    the lowest and highest run. A metric that never changes (the same value in every
    policy, run and time) is named in the title instead of drawn.

    Returns
    -------
    columns, title
        The columns drawn, and the figure's title as written.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    data = series.assign(migrations=series.filter(like="moves_").sum(axis=1))
    runs = int(data["run"].nunique()) if "run" in data else 1
    # Runs whose windows differ are drawn up to the shortest: a mean over fewer runs would jump.
    ends = data.groupby(["policy", "run"])["time"].max() if runs > 1 else data["time"].max()
    shown = float(np.min(ends))
    grid = np.linspace(0.0, shown, points)
    drawn, constant = [], []
    for column, label in PANELS:
        if column not in data:
            continue
        values = data[column].unique()
        if len(values) == 1:
            if column != "queued":
                constant.append(f"{label.split(' (')[0]} {values[0]:g}")
            continue
        drawn.append((column, label))
    ncols = 2 if len(drawn) > 1 else 1
    nrows = max(1, -(-len(drawn) // ncols))
    fig, axes = plt.subplots(
        nrows, ncols, figsize=(5.5 * ncols, 3.3 * nrows + 0.8), sharex=True, squeeze=False
    )
    for ax, (column, label) in zip(axes.flat[: len(drawn)], drawn, strict=True):
        for policy, rows in data.groupby("policy", sort=False):
            if runs == 1:
                ax.step(rows["time"], rows[column], where="post", label=str(policy), linewidth=1.2)
                continue
            table = np.stack(
                [on_grid(run, grid)[column].to_numpy(dtype=float) for _, run in rows.groupby("run")]
            )
            (line,) = ax.plot(grid, table.mean(axis=0), label=str(policy), linewidth=1.2)
            ax.fill_between(grid, table.min(axis=0), table.max(axis=0), color=line.get_color(), alpha=0.15)
        ax.set_title(label, fontsize=10)
        ax.grid(alpha=0.3)
    for ax in axes.flat[len(drawn) :]:
        ax.set_visible(False)
    for col in range(ncols):  # the lowest panel drawn in each column carries the time axis
        bottom = [axes[row][col] for row in range(nrows) if row * ncols + col < len(drawn)]
        if bottom:
            bottom[-1].xaxis.set_tick_params(labelbottom=True)
            bottom[-1].set_xlabel(f"time ({time_unit})" if time_unit else "time")
    if drawn:
        axes[0][0].legend(fontsize=8)
    lines = textwrap.wrap(title, 100) if title else []
    if runs > 1:
        until = f" (up to t = {shown:g}, where the shortest run ends)" if shown < data["time"].max() else ""
        lines.append(f"mean of {runs} runs, shaded from the lowest to the highest run{until}")
    if constant:
        lines.append("constant throughout: " + ", ".join(constant))
    fig.suptitle("\n".join(lines), fontsize=10)
    fig.tight_layout()
    write_atomic(path, lambda fh: fig.savefig(fh, format="png", dpi=110), text=False)
    plt.close(fig)
    return [column for column, _ in drawn], "\n".join(lines)
