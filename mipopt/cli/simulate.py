"""``mipopt simulate``: replay arrivals and departures under online policies and compare them."""

from __future__ import annotations

import argparse
import textwrap

from mipopt._fields import parse_options
from mipopt.cli.common import (
    EXIT_OK,
    BadInput,
    ProgressBar,
    executor_argument,
    flagged,
    horizon,
    positive,
    print_json,
    progress_argument,
    run_count,
)
from mipopt.cli.common import _number as number
from mipopt.cli.outputs import Outputs
from mipopt.errors import InstanceError

#: The epilog of ``mipopt simulate --help``, followed there by the table of policies.
POLICY_LIST = "policies (--policy NAME[:KEY=VALUE,...]) and their options, with the defaults:"


class PolicyListHelp(argparse.RawDescriptionHelpFormatter):
    """Help that lists every policy with its options (:func:`mipopt.heuristics.policies.policies_text`),
    read from the one table of policies only when help is printed (it imports the heuristics)."""

    def add_text(self, text: str | None) -> None:
        if text == POLICY_LIST:
            from mipopt.heuristics.policies import policies_text

            text = text + "\n" + textwrap.indent(policies_text(), "  ")
        super().add_text(text)


#: ``--queue-timeout``: a positive time, or inf (an unbounded queue).
timeout = number(float, "a positive time or inf", lambda v: v > 0)

#: The files ``--out DIR`` holds.
OUT_FILES = ("series.csv", "summary.csv", "series.png", "jobs.csv")


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = sub.add_parser(
        "simulate",
        help="replay arrivals and departures under online policies",
        formatter_class=PolicyListHelp,
        epilog=POLICY_LIST,
    )
    p.add_argument(
        "--workload",
        required=True,
        metavar="SPEC",
        help="fbk[:distribution=uniform,gpus=100], poisson[:gpus=...,load=...,mix=...] or "
        "poisson:cluster=instance.json[,requests=false] (its running workloads stay, its new ones arrive first), "
        "alibaba:path=DIR[,compress=...,host_fraction=...,gpus_per_host=...,duration_scale=...,departures=false,"
        "iqr=false,phases=Running+Succeeded,cpu_pods=false,share=product|compute|memory], "
        "migbench:path=FILE.jsonl[,nodes=2,gpus_per_node=4,model=H100-80GB,profiles=1g.10gb+2g.20gb+3g.40gb+7g.80gb|all,"
        "create_ms=250,delete_ms=100,measure_from_ms=30000,jobs=N] (docs/migbench.md)",
    )
    p.add_argument(
        "--policy",
        action="append",
        required=True,
        metavar="SPEC",
        help="repeatable: a policy of the list below, with options after a colon (grmu:heavy=0.5, "
        "ff:start=lowest) or wrapped (adapter(ff), reopt(mfi)); the same names as solve --method",
    )
    p.add_argument("--runs", type=run_count, default=1, help="traces of seeds S .. S+N-1 (default 1)")
    p.add_argument("--seed", type=int, default=0, help="first seed (default 0)")
    p.add_argument(
        "--horizon",
        type=horizon,
        metavar="T",
        help="end of the measured window in the trace's unit (default: the last arrival; inf: every departure)",
    )
    p.add_argument(
        "--bucket",
        type=positive,
        default=1.0,
        help="sampling step of the series in the trace's unit; rows only where something changed (default 1)",
    )
    p.add_argument("--batch-interval", type=positive, help="decide arrivals at multiples of this interval")
    p.add_argument(
        "--queue-timeout",
        type=timeout,
        metavar="T",
        help="let rejected requests wait this long instead of dropping them (adds waiting times, abandoned); "
        "inf: an unbounded queue replayed as MIGBench does (every request placed, the window not stretched)",
    )
    p.add_argument(
        "--queue-order",
        choices=("fifo", "newest"),  # mipopt.simulation.engine.QUEUE_ORDERS, not imported before it runs
        default="fifo",
        help="the order waiting requests are retried in: fifo (oldest first, default) or newest first",
    )
    p.add_argument("--debug", action="store_true", help="verify the state after every event (slow)")
    p.add_argument(
        "--out",
        metavar="DIR",
        help="write series.csv, summary.csv, series.png and jobs.csv (one row per request: arrival, decision, "
        "start, finish, wait, profile, host, GPU, start slot) there, replacing an earlier run's as a set",
    )
    p.add_argument("--json", action="store_true", help="print the summary as JSON")
    executor_argument(p, "replays (runs x policies)")
    progress_argument(p, "progress bar")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from pathlib import Path

    import pandas as pd

    from mipopt.io import write_text
    from mipopt.simulation.runs import compare, format_table, plot_series, run_header, summary_table

    options = {
        "bucket": args.bucket,
        "horizon": args.horizon,
        "batch_interval": args.batch_interval,
        "queue_timeout": args.queue_timeout,
        "queue_order": args.queue_order,
        "debug": args.debug,
    }
    outputs = Outputs(workload_files(args.workload))
    outputs.directory("--out", args.out, OUT_FILES)
    jobs: list[pd.DataFrame] = []
    with ProgressBar.for_args(args) as bar:
        try:
            series, summary = compare(
                args.workload,
                args.policy,
                runs=args.runs,
                seed=args.seed,
                progress=bar.draw,
                executor=args.executor,
                jobs=jobs,
                **options,
            )
        except ValueError as err:  # InstanceError too
            raise BadInput(flagged(err)) from None
    table = summary_table(summary)
    header = run_header(args.workload, summary)
    if args.out:
        out = Path(args.out)
        with outputs.writing() as staged:
            for name, frame in (
                ("series.csv", series),
                ("summary.csv", summary),
                ("jobs.csv", pd.concat(jobs)),
            ):
                write_text(staged.path(out / name), frame.to_csv(index=False))
            unit = str(summary["time_unit"].iloc[0])
            plot_series(series, staged.path(out / "series.png"), title=header, time_unit=unit)
    if args.json:
        print_json(
            {"summary": summary.to_dict(orient="records"), "means": table.reset_index().to_dict("records")}
        )
    else:
        print(header)
        print(format_table(summary))
        if args.out:
            print(f"\nwrote {args.out}/series.csv, summary.csv, series.png, jobs.csv")
    return EXIT_OK


def workload_files(spec: str) -> list[str]:
    """The files a workload spec reads (``cluster=``, ``path=``), which no output may replace."""
    try:
        options = parse_options(spec.partition(":")[2], "--workload")
    except InstanceError:  # a bad spec is reported when the trace is made
        return []
    return [options[key] for key in ("cluster", "path") if isinstance(options.get(key), str)]
