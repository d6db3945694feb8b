"""Replays that start from a cluster's current state, on mixed clusters, and what the CLI says of them."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from mipopt.errors import InstanceError
from mipopt.heuristics.policies import make_policy
from mipopt.io import load_instance
from mipopt.simulation import Request, Trace, simulate
from mipopt.simulation.runs import compare, make_trace, plot_series, requests_per_run
from mipopt.workloads import poisson_trace

QUICKSTART = Path(__file__).parents[2] / "instances" / "quickstart.json"
MIXED = f"poisson:cluster={QUICKSTART},mix=1g.10gb:3;3g.40gb:1,horizon=40"


def test_a_cluster_keeps_its_running_workloads_and_its_requests_arrive_first() -> None:
    trace = make_trace(MIXED, seed=3)
    assert [w.id for w in trace.cluster.running] == ["train-a", "notebook-b", "llm-c"]
    first = ["batch-d", "infer-e", "llm-f", "infer-g", "llm-h"]
    assert [r.id for r in trace.requests[:5]] == first
    assert all(r.arrival == 0.0 for r in trace.requests[:5]) and trace.requests[5].id == "p000000"
    assert trace.requests[3].weight == 2.0 and trace.requests[2].gpu_models == ("H100-80GB",)
    result = simulate(trace, make_policy("ff"), seed=3, horizon=math.inf, debug=True)
    # the running workloads never leave; llm-c is pinned where it was
    assert {w: result.placed[w] for w in ("train-a", "notebook-b", "llm-c")} == {
        "train-a": ("h1-g0", 4),
        "notebook-b": ("h1-g0", 0),
        "llm-c": ("h2-g0", 4),
    }
    assert result.summary["arrived"] == len(trace.requests)
    without = make_trace(MIXED + ",requests=false", seed=3)
    assert without.requests[0].id == "p000000" and len(without.cluster.running) == 3
    assert without.requests == trace.requests[5:]  # the stream is the same
    with pytest.raises(
        InstanceError, match=r"requests: only with cluster \(an instance file's new workloads\)"
    ):
        make_trace("poisson:gpus=4,requests=false", seed=3)


def test_a_profile_name_is_sized_per_gpu_model() -> None:
    # 1g.10gb: 2 slots on each A100-40GB, 1 on the H100-80GB; 3g.40gb only on the H100 (4 slots)
    trace = make_trace(MIXED, seed=3)
    assert trace.meta["mean_size"] == pytest.approx(0.75 * 5 / 3 + 0.25 * 4)
    assert trace.meta["capacity_slots"] == 24
    # every policy resolves the name on the GPU it chooses; the verifier checks every state
    for spec in ("mfi", "grmu", "bf-bi", "adapter(ff)"):
        res = simulate(trace, make_policy(spec), seed=3, debug=True)
        assert 0 < res.summary["acceptance_rate_1g.10gb"] <= 1


def test_request_ids_may_not_repeat_a_running_workload() -> None:
    cluster = load_instance(QUICKSTART)
    with pytest.raises(InstanceError, match=r"requests\[0\]\.id: duplicate id 'llm-c' \(of a request or"):
        Trace("t", cluster, (Request("llm-c", "1g.10gb", 0.0, 1.0),))
    with pytest.raises(
        ValueError,
        match=r"mix: '9g.90gb' is not a profile of the cluster's GPU models \['A100-40GB', 'H100-80GB'\]",
    ):
        poisson_trace(cluster, load=1.0, mix={"9g.90gb": 1}, mean_lifetime=1, horizon=1, seed=0)


def test_header_counts_and_plot_with_several_runs(tmp_path: Path) -> None:
    series, summary = compare("fbk:gpus=6,distribution=uniform", ["mfi", "ff"], runs=3, seed=1)
    arrived = summary.drop_duplicates("run")["arrived"].tolist()
    assert len(set(arrived)) > 1  # the seeds give different lengths
    mean = sum(arrived) / 3
    assert requests_per_run(summary) == (
        f"{mean:,.1f} requests per run on average ({min(arrived):,}-{max(arrived):,})"
    )
    assert requests_per_run(summary[summary["run"] == 0]) == f"{arrived[0]:,} requests per run"
    drawn, title = plot_series(series, tmp_path / "s.png", title="fbk", time_unit="slot")
    assert "mean of 3 runs, shaded from the lowest to the highest run" in title
    # no request waits and (here) nobody migrates: stated, not drawn
    assert "migrations" not in drawn and "queued" not in drawn
    constant = title.splitlines()[-1]
    assert constant.startswith("constant throughout: ") and "migrations 0" in constant
    assert (tmp_path / "s.png").stat().st_size > 10_000


def test_cli_horizon_and_queue_metrics(capsys: pytest.CaptureFixture[str]) -> None:
    from mipopt.cli import main

    spec = "poisson:gpus=2,gpus_per_host=2,load=1.5,mean_lifetime=2,horizon=10,mix=skew-big"
    assert main(["simulate", "--workload", spec, "--policy", "ff", "--queue-timeout", "1", "--json"]) == 0
    row = json.loads(capsys.readouterr().out)["summary"][0]
    assert row["abandoned"] > 0 and row["waited"] > 0 and row["queued_at_end"] == 0
    assert 0 < row["mean_wait"] <= row["p95_wait"] <= 1.0
    assert row["arrived"] == row["accepted"] + row["dropped"]
    assert main(["simulate", "--workload", spec, "--policy", "ff", "--horizon", "5"]) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0].endswith("1 run(s), up to t = 5 h")
    with pytest.raises(SystemExit) as exit_:
        main(["simulate", "--workload", spec, "--policy", "ff", "--horizon", "-1"])
    assert exit_.value.code == 2
    assert "argument --horizon: must be a non-negative time or inf, got -1" in capsys.readouterr().err
