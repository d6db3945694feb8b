"""Smoke test of benchmarks/bench_migrate.py at tiny sizes, into a tmp dir; its target generators."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mipopt.instance import Status, Termination
from mipopt.verifier import PlanReport, solution_for, verify
from mipopt.workloads.ibm import ibm_instance
from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COMMITTED = [RESULTS / "migrate.csv", README]

COLUMNS = [
    "commit", "date", "machine", "python", "case", "gpus", "seed", "target", "target_runtime_s", "method",
    "workloads", "movers", "rounds", "moves", "extra_moves", "disruptive_moves", "moved_memory_slots",
    "moves_intra_gpu", "moves_inter_gpu", "moves_inter_host", "sequential_migrations", "repeats", "runtime_s",
    "max_runtime_s", "planner", "proven", "valid", "status",
    "message",
]  # fmt: skip


@pytest.mark.integration
def test_migrate_benchmark_small(tmp_path: Path) -> None:
    before = [digest(p) for p in COMMITTED]
    out = tmp_path / "out"
    # 4 and 16 GPUs, one seed, 2 repeats; WPM and rule-based compaction targets and exact plans at 4 GPUs
    run("bench_migrate", "--quick", "--out-dir", str(out))
    rows = read_csv(out / "migrate.csv", COLUMNS)
    exact = load("bench_migrate").exact_available()
    seen = {(r["gpus"], r["case"], r["target"], r["method"]) for r in rows}
    expected = {
        ("4", case, target, method)
        for case, target in [
            ("compaction", "wpm"), ("compaction", "rule-based"), ("reconfiguration", "wpm"),
            ("reconfiguration", "rule-based"), ("random", "random"), ("full-cycles", "random"),
            ("full-permuted", "random"),
        ]
        for method in (["graph", "exact"] if exact else ["graph"])
    }  # fmt: skip
    # 16 GPUs: above the WPM, rule-based compaction and exact limits
    expected |= {
        ("16", case, target, "graph")
        for case, target in [
            ("reconfiguration", "rule-based"), ("random", "random"), ("full-cycles", "random"),
            ("full-permuted", "random"),
        ]
    }  # fmt: skip
    assert seen == expected
    assert len(rows) == len(expected)
    assert all(r["valid"] == "True" and r["status"] == "ok" for r in rows)
    for r in rows:
        assert int(r["movers"]) <= int(r["workloads"])
        # every mover moves (no creates here), and parks and drains come on top of direct moves
        assert int(r["moves"]) == int(r["movers"]) + int(r["extra_moves"])
        kinds = ("moves_intra_gpu", "moves_inter_gpu", "moves_inter_host")
        assert sum(int(r[k]) for k in kinds) == int(r["moves"])
        if r["method"] == "graph":
            assert r["planner"] == "graph" and r["proven"] == "" and r["repeats"] == "2"
        else:
            assert r["proven"] in ("True", "False") and r["repeats"] == "1"
    # a full cluster has nowhere to park: its cycles are broken by drains
    assert all(int(r["disruptive_moves"]) > 0 for r in rows if r["case"] == "full-cycles")
    text = (out / "README.md").read_text()
    assert "<!-- migrate:begin -->" in text and "<!-- migrate:end -->" in text
    assert "Target: a 16-GPU plan in under 2 s with the graph planner: PASS" in text
    assert ("Rounds: fewer / same / more" in text) == exact
    assert [digest(p) for p in COMMITTED] == before


def test_invalid_plan_stops_the_run(monkeypatch: pytest.MonkeyPatch) -> None:
    bench = load("bench_migrate")
    args = bench.parse_args(["--sizes", "4", "--seeds", "1", "--cases", "random", "--repeats", "1"])
    (case,) = bench.cases(args)
    monkeypatch.setattr(bench, "verify_plan", lambda *_a, **_k: PlanReport(False, ("rounds[0]: broken",)))
    with pytest.raises(RuntimeError, match="invalid plan: rounds\\[0\\]: broken"):
        bench.plan_rows(case, args, exact=False)


def test_a_runaway_graph_plan_is_stopped_and_recorded() -> None:
    bench = load("bench_migrate")
    args = bench.parse_args(
        ["--sizes", "16", "--seeds", "1", "--cases", "full-cycles", "--plan-timeout", "0.001"]
    )
    (case,) = bench.cases(args)
    (row,) = bench.plan_rows(case, args, exact=False)
    assert row["status"] == "timeout" and row["rounds"] == "" and row["valid"] == ""
    assert bench._timeout_s(row) == 0.001
    table = bench.speed([{k: str(v) for k, v in row.items()} | {"date": "d"}], 16)
    assert "| full-cycles | random | 1 | > 0.001 | > 0.001 | 1 | FAIL |" in table
    assert "graph planner: FAIL" in table


@pytest.mark.parametrize("seed", range(5))
def test_random_target_is_a_valid_placement_of_the_same_workloads(seed: int) -> None:
    bench = load("bench_migrate")
    inst = ibm_instance(24, seed=seed, load=0.0)
    target = bench.random_target(inst, np.random.default_rng(seed))
    assert set(target) == {w.id for w in inst.running}
    sol = solution_for(inst, target, method="t", termination=Termination.COMPLETED, status=Status.FEASIBLE)
    assert verify(inst, sol).valid
    assert target != inst.current_placement()


@pytest.mark.parametrize(("max_cycle", "seed"), [(None, 1), (3, 0), (3, 1), (3, 2), (3, 3), (8, 4)])
def test_full_cluster_has_no_room_and_its_permutation_is_valid(max_cycle: int | None, seed: int) -> None:
    bench = load("bench_migrate")
    inst = bench.full_cluster(11, seed=seed)
    placed = inst.current_placement()
    for gpu in inst.gpus:  # no profile has a free legal start on any GPU
        fill = bench._Fill()
        for wid, (g, start) in placed.items():
            if g == gpu.id:
                fill.add(gpu.model, str(inst.workload(wid).profile), start)
        assert not any(fill.fits(gpu.model, p.name, s) for p in gpu.model.profiles for s in p.starts)
    target = bench.permuted_target(inst, np.random.default_rng(seed), max_cycle)
    sol = solution_for(inst, target, method="t", termination=Termination.COMPLETED, status=Status.FEASIBLE)
    assert verify(inst, sol).valid
    moved = {placed[w][0] for w in placed if target[w] != placed[w]}
    if max_cycle is not None:  # every GPU is on a cycle of 2 or more: all contents move
        assert moved == {g.id for g in inst.gpus if any(s[0] == g.id for s in placed.values())}
