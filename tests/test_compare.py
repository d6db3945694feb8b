"""Heuristics against the proven optimum: mipopt.compare, `mipopt bench` and benchmarks/bench_gap.py."""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import subprocess
import sys
import time
from pathlib import Path

import pytest
from factories import ROOT

import mipopt.exact.driver
from mipopt.cli import main
from mipopt.compare import (
    COLUMNS,
    EXACT,
    EXACT_INITIAL,
    GapRow,
    InvalidSolutionError,
    compare_methods,
    heuristic_names,
    parse_methods,
    summarize,
    summary_table,
)
from mipopt.errors import InstanceError, ParameterTypeError, UnknownMethodError
from mipopt.heuristics.online import Decision, Policy
from mipopt.instance import Instance, Objectives, Solution, Status, Termination, Workload
from mipopt.io import load_instance
from mipopt.registry import MethodSpec, _methods, solve
from mipopt.state.cluster import Cluster
from mipopt.verifier import no_solution, solution_for, verify
from mipopt.workloads.ibm import ibm_instance

INSTANCES = ROOT / "instances"
FIG2B = INSTANCES / "grmu_fig2b.json"
FBK = INSTANCES / "fbk_fig3.json"
# grmu_fig2b's lexicographic optimum, by hand (tests/exact/test_exact.py, OPTIMA): moving the two
# 1g instances inside g0 costs no migration (Eq. 5) and frees slots 0-3 for the 4g.20gb, 4-7
# for the 3g.20gb; the 2g.10gb then has no room: 4 of 5 accepted on one host and one GPU.
FIG2B_OPTIMUM = (4.0, 2.0, 0.0)
# Moving nothing (the initial use case), the 1g.5gb at slots 0 and 3 block the 4g.20gb (start 0);
# the 2g.10gb and the 3g.20gb both need slots from 4: one of them, 3 of 5 accepted, as first fit.
FIG2B_INITIAL_OPTIMUM = (3.0, 2.0, 0.0)

Capsys = pytest.CaptureFixture[str]


def expected(path: Path) -> dict:
    return json.loads(path.read_text())["expected"]


def by_method(rows: list[GapRow]) -> dict[str, GapRow]:
    return {r.method: r for r in rows}


# --- the library


def test_heuristics_that_cannot_move_are_measured_against_the_initial_optimum() -> None:
    inst = load_instance(FIG2B)
    rows = by_method(compare_methods([inst], ["ff", "ff-agnostic", "grmu"]))
    assert list(rows) == [EXACT, EXACT_INITIAL, "ff", "ff-agnostic", "grmu"]
    joint, initial, ff, agnostic, grmu = rows.values()
    # both optima, proven; moving one running 1g.5gb inside g0 buys one workload (Eq. 5 counts
    # no migration for it, the moves column shows it)
    assert (joint.acceptance, joint.hardware, joint.migrations, joint.moves) == (*FIG2B_OPTIMUM, 1)
    assert (initial.acceptance, initial.hardware, initial.migrations, initial.moves) == (
        *FIG2B_INITIAL_OPTIMUM,
        0,
    )
    assert (joint.proven, joint.termination, joint.reference, joint.reference_use_case, joint.may_move) == (
        True,
        "optimal",
        "optimal",
        "joint",
        True,
    )
    assert (initial.proven, initial.reference, initial.reference_use_case, initial.may_move) == (
        True,
        "optimal",
        "initial",
        False,
    )
    assert (joint.acceptance_gain, joint.acceptance_gain_pct, joint.hardware_gain_pct) == (
        1.0,
        pytest.approx(100 / 3),
        0.0,
    )
    assert all(r.acceptance_gain is None for r in (initial, ff, agnostic, grmu))
    for ref in (joint, initial):
        assert (ref.acceptance_gap, ref.acceptance_gap_pct, ref.hardware_gap_pct, ref.matches_reference) == (
            0.0,
            0.0,
            0.0,
            True,
        )
    # first fit cannot move anything: against the initial optimum it is optimal (against the
    # joint one it was 25 % short, a gain only migrations buy)
    want = expected(FIG2B)["first_fit"]["objectives"]
    assert (ff.acceptance, ff.hardware, ff.migrations, ff.moves) == (
        want["acceptance"],
        want["hardware"],
        want["migrations"],
        0,
    )
    assert (ff.reference_use_case, ff.may_move, ff.reference) == ("initial", False, "optimal")
    assert (ff.accepted_gap, ff.acceptance_gap, ff.acceptance_gap_pct) == (0, 0.0, 0.0)
    assert (ff.hardware_gap_pct, ff.matches_reference) == (0.0, True)
    assert (ff.kind, ff.termination, ff.status, ff.proven, ff.gap) == (
        "policy",
        "completed",
        "feasible",
        None,
        None,
    )
    # the MFI paper's MIG-agnostic first fit starts the 2g.10gb at 2 and then fits nothing
    assert (agnostic.kind, agnostic.reference_use_case, agnostic.acceptance) == ("policy", "initial", 2.0)
    assert agnostic.acceptance_gap_pct == pytest.approx(100 / 3)
    # GRMU defragments on a rejection (two moves inside g0), so the joint optimum is its reference
    assert (grmu.may_move, grmu.reference_use_case, grmu.moves) == (True, "joint", 2)
    assert (grmu.acceptance, grmu.acceptance_gap_pct) == (3.0, 25.0)


def test_which_methods_may_move_running_workloads() -> None:
    moving = {m.name for m in mipopt.methods() if m.moves}
    assert moving == {"exact", "ibm-compaction", "ibm-reconfiguration", "ibm-joint", "grmu", "reopt"}
    from mipopt.registry import get_method

    assert [get_method(n).moves for n in ("adapter(ff)", "adapter(grmu)", "grmu:defrag=false")] == [
        False,
        True,
        False,
    ]
    assert [
        get_method(n).moves
        for n in ("exact:use_case=initial", "exact:model=wpm", "exact:use_case=compaction")
    ] == [
        False,
        True,
        True,
    ]


def test_rows_carry_the_verifiers_numbers() -> None:
    inst = load_instance(FBK)
    rows = by_method(compare_methods([inst], ["ff", "mfi"]))
    for name, sol in (("ff", solve(inst, "ff")),):
        report = verify(inst, sol)
        r = rows[name]
        assert report.valid
        assert (r.acceptance, r.hardware, r.migrations) == (
            report.objectives.acceptance,
            report.objectives.hardware,
            report.objectives.migrations,
        )
        assert (r.accepted, r.active_gpus) == (report.metrics["accepted"], report.metrics["active_gpus"])
    # fbk_fig3: everything fits either way, but the joint optimum empties a GPU (two moves, the
    # fewest restarts: 4 migrations by Eq. 5): 3 hardware, not 4; moving nothing, first fit and MFI
    # are optimal
    joint, initial = rows[EXACT], rows[EXACT_INITIAL]
    assert (joint.acceptance, joint.hardware, joint.migrations, joint.moves) == (8.0, 3.0, 4.0, 2)
    assert (initial.acceptance, initial.hardware, initial.migrations, initial.moves) == (8.0, 4.0, 0.0, 0)
    assert (joint.acceptance_gain, joint.hardware_gain_pct) == (0.0, -25.0)
    for name in ("ff", "mfi"):
        r = rows[name]
        assert (r.reference_use_case, r.acceptance_gap, r.accepted_gap, r.hardware_gap_pct) == (
            "initial",
            0.0,
            0,
            0.0,
        )
        assert r.matches_reference
    summaries = {s.method: s for s in summarize(rows.values())}
    s = summaries["ff"]
    assert (s.reference_use_case, s.acceptance_optimal, s.optimal, s.proven_references, s.runs) == (
        "initial",
        1,
        1,
        1,
        1,
    )
    assert (s.mean_hardware_gap_pct, s.mean_migrations, s.mean_moves) == (0.0, 0.0, 0.0)
    j = summaries[EXACT]
    assert (
        j.reference_use_case,
        j.mean_migrations,
        j.mean_moves,
        j.mean_acceptance_gain,
        j.mean_hardware_gain_pct,
    ) == (
        "joint",
        4.0,
        2.0,
        0.0,
        -25.0,
    )


def _broken(inst: Instance) -> Solution:
    sol = solve(inst, "ff")
    return dataclasses.replace(sol, placements=(*sol.placements, sol.placements[0]))


def _boasting(inst: Instance) -> Solution:
    sol = solve(inst, "ff")
    assert sol.objectives is not None
    return dataclasses.replace(sol, objectives=Objectives(99.0, 0.0, 0.0))


@pytest.mark.parametrize(
    ("method", "message"),
    [(_broken, "is placed twice"), (_boasting, "objectives.acceptance: solution says 99")],
)
def test_a_solution_the_verifier_rejects_is_an_error(method, message, monkeypatch) -> None:
    monkeypatch.setitem(_methods(), "bad", MethodSpec("bad", "heuristic", "a broken method", (), method))
    with pytest.raises(InvalidSolutionError, match=rf"^bad on grmu_fig2b: .*{message}"):
        compare_methods([load_instance(FIG2B)], ["bad"])


def test_an_unproven_reference_is_flagged_and_compared_as_incumbent(monkeypatch) -> None:
    def stopped(inst: Instance, **_: object) -> Solution:  # a time limit holding first fit's placement
        return solution_for(
            inst,
            solve(inst, "ff").placed(),
            method="grmu / highs",
            termination=Termination.TIME_LIMIT,
            status=Status.FEASIBLE,
            bound=5.0,
            gap=0.4,
        )

    monkeypatch.setattr(mipopt.exact.driver, "solve_exact", stopped)
    rows = by_method(compare_methods([load_instance(FIG2B)], ["ff-agnostic"]))
    agnostic = rows["ff-agnostic"]
    for ref in (rows[EXACT], rows[EXACT_INITIAL]):
        assert (ref.proven, ref.termination, ref.reference, ref.acceptance, ref.gap) == (
            False,
            "time_limit",
            "incumbent",
            3.0,
            0.4,
        )
    assert (agnostic.reference, agnostic.reference_use_case, agnostic.acceptance_gap) == (
        "incumbent",
        "initial",
        1.0,
    )
    assert agnostic.matches_reference is False
    summaries = summarize(rows.values())
    (s,) = [s for s in summaries if s.method == "ff-agnostic"]
    assert (s.proven_references, s.acceptance_optimal, s.optimal) == (0, 0, 0)
    assert summary_table(summaries).splitlines()[0] == (
        "1 GPUs: 1 instance(s); proven optimal: initial optimum on 0, joint optimum on 0"
    )

    def nothing(inst: Instance, **_: object) -> Solution:
        return no_solution(
            inst, method="grmu / highs", termination=Termination.TIME_LIMIT, runtime_s=60.0, message="stopped"
        )

    monkeypatch.setattr(mipopt.exact.driver, "solve_exact", nothing)
    rows = by_method(compare_methods([load_instance(FIG2B)], ["ff-agnostic"]))
    assert (rows[EXACT].acceptance, rows[EXACT].reference, rows[EXACT].acceptance_gain) == (
        None,
        "none",
        None,
    )
    assert (rows[EXACT_INITIAL].acceptance, rows[EXACT_INITIAL].reference) == (None, "none")
    assert (rows["ff-agnostic"].acceptance, rows["ff-agnostic"].acceptance_gap) == (2.0, None)
    text = summary_table(summarize(rows.values()))
    assert "-" in text and "joint optimum (exact) over" not in text


def test_same_arguments_same_rows() -> None:
    instances = [ibm_instance(4, seed=s) for s in (0, 1)]
    methods = ["ff", "rr", "mfi", "grmu", "lb", "exact-initial"]

    def strip(rows: list[GapRow]) -> list[dict]:
        return [{k: v for k, v in r.to_dict().items() if k != "runtime_s"} for r in rows]

    first = compare_methods(instances, methods, seed=3)
    assert strip(first) == strip(compare_methods(instances, methods, seed=3))
    assert [(r.instance, r.method) for r in first] == [
        (i.name, m) for i in instances for m in [EXACT, EXACT_INITIAL, "ff", "rr", "mfi", "grmu", "lb"]
    ]
    # no method beats its own reference: the initial optimum for those that move nothing
    for r in first:
        assert r.reference == "optimal"
        assert r.reference_use_case == ("joint" if r.method in (EXACT, "grmu") else "initial")
        assert r.acceptance_gap is not None and r.acceptance_gap >= 0
        assert r.migrations == 0 or r.method in (EXACT, "grmu")


def test_method_lists() -> None:
    everything = heuristic_names()
    assert "ibm-compaction" not in everything and "ibm-reconfiguration" not in everything
    assert {"ff", "ibm-initial", "ibm-initial-online", "mfi", "grmu", "adapter(ff)"} <= set(everything)
    assert parse_methods("all") == everything
    assert parse_methods("grmu:heavy=0.3,consolidation=24, ff,adapter(mfi)") == [
        "grmu:heavy=0.3,consolidation=24",
        "ff",
        "adapter(mfi)",
    ]
    # an objective's commas stay in its method; a piece naming a method starts the next one
    assert parse_methods("ff,exact:objective=lex:acceptance,hardware,mfi") == [
        "ff",
        "exact:objective=lex:acceptance,hardware",
        "mfi",
    ]
    assert parse_methods("exact:objective=weighted:1,1,1,adapter(grmu:heavy=0.3,consolidation=24)") == [
        "exact:objective=weighted:1,1,1",
        "adapter(grmu:heavy=0.3,consolidation=24)",
    ]
    with pytest.raises(InstanceError, match=r"^methods: method 'ff' is named twice$"):
        parse_methods("ff,mfi,ff")
    with pytest.raises(UnknownMethodError, match=r"^methods: unknown method 'nope'"):
        compare_methods([load_instance(FIG2B)], ["nope"])


@pytest.mark.parametrize(
    ("arguments", "kind", "message"),
    [
        ({"time_limit_s": 0}, InstanceError, "time_limit_s: must be positive, got 0"),
        (
            {"time_limit_s": "60"},
            ParameterTypeError,
            "time_limit_s: must be a number (seconds), got str '60'",
        ),
        ({"threads": 0}, InstanceError, "threads: must be >= 1, got 0"),
        ({"threads": 1.5}, ParameterTypeError, "threads: must be an integer, got float 1.5"),
        ({"seed": -1}, InstanceError, "seed: must be >= 0, got -1"),
        (
            {"method_names": [None]},
            ParameterTypeError,
            "methods: must be a method name (mipopt.methods()) or a Policy, got NoneType None",
        ),
        (
            {"instances": [str(FIG2B)]},
            ParameterTypeError,
            f"instances[0]: must be an Instance, got the path {str(FIG2B)!r}: read it with "
            f"mipopt.load_instance({str(FIG2B)!r})",
        ),
    ],
)
def test_bad_arguments_name_the_parameter_before_any_solve(
    arguments: dict, kind: type[Exception], message: str
) -> None:
    call = {"instances": [load_instance(FIG2B)], "method_names": ["ff"], **arguments}
    with pytest.raises(InstanceError) as info:
        compare_methods(**call)
    assert (type(info.value), str(info.value)) == (kind, message)


class TopStart(Policy):
    """The first GPU where the workload fits, at its highest legal start."""

    name = "top-start"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        legal = cluster.legal(w)
        fits = [k for k, bits in enumerate(legal) if bits]
        return (fits[0], int(legal[fits[0]]).bit_length() - 1) if fits else None


def test_a_policy_object_is_measured_against_the_optimum() -> None:
    """Your own policy beside named ones: verified, against the initial optimum (it moves nothing)."""
    fig2b = load_instance(FIG2B)
    rows = by_method(compare_methods([fig2b], [TopStart(), mipopt.make_policy("ff-agnostic"), "mfi"]))
    assert list(rows) == [EXACT, EXACT_INITIAL, "top-start", "ff-agnostic", "mfi"]
    top = rows["top-start"]
    assert (top.kind, top.may_move, top.reference_use_case, top.reference) == (
        "policy",
        False,
        "initial",
        "optimal",
    )
    assert (top.acceptance, top.acceptance_gap, top.matches_reference) == (3.0, 0.0, True)
    assert (rows["ff-agnostic"].acceptance, rows["ff-agnostic"].acceptance_gap) == (2.0, 1.0)


def test_gap_row_round_trips_through_csv(tmp_path: Path) -> None:
    from mipopt.compare import write_csv

    rows = compare_methods([load_instance(FIG2B)], ["ff"])
    write_csv(tmp_path / "rows.csv", rows)
    with (tmp_path / "rows.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert tuple(reader.fieldnames or ()) == COLUMNS
        back = [GapRow.from_dict(r) for r in reader]
    assert back == rows


# --- mipopt bench


def run(capsys: Capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_cli_table_and_csv(tmp_path: Path, capsys: Capsys) -> None:
    out_csv = tmp_path / "gap.csv"
    code, out, err = run(capsys, "bench", str(FIG2B), "--methods", "ff,ff-agnostic", "--out", str(out_csv))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "1 GPUs: 1 instance(s); proven optimal: initial optimum on 1, joint optimum on 1"
    assert lines[1].split()[:8] == [
        "method",
        "ref.",
        "runs",
        "accepted",
        "acceptance",
        "hardware",
        "migr.",
        "moves",
    ]
    cells = {line.split()[0]: line.split()[1:-1] for line in lines[2:6]}
    # method: ref., runs, accepted, acceptance, hardware, migr., moves, acc. gap, max gap, hw gap,
    # acc. opt, optimal
    assert cells == {
        "exact": ["joint", "1", "4.0", "4.0", "2.0", "0.0", "1.0", *["0.00", "%"] * 2, "+0.00", "%", "1/1", "1/1"],
        "exact-initial": ["initial", "1", "3.0", "3.0", "2.0", "0.0", "0.0", *["0.00", "%"] * 2, "+0.00", "%", "1/1", "1/1"],
        "ff": ["initial", "1", "3.0", "3.0", "2.0", "0.0", "0.0", *["0.00", "%"] * 2, "+0.00", "%", "1/1", "1/1"],
        "ff-agnostic": ["initial", "1", "2.0", "2.0", "2.0", "0.0", "0.0", *["33.33", "%"] * 2, "+0.00", "%", "0/1", "0/1"],
    }  # fmt: skip
    assert lines[6] == (
        "joint optimum (exact) over the initial optimum (exact-initial): acceptance +1.0 (+33.33 %), "
        "hardware +0.00 %, with 0.0 migrations (Eq. 5) and 1.0 moves"
    )
    assert lines[-1] == f"wrote {out_csv}"
    with out_csv.open(newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [
        (
            r["method"],
            r["reference_use_case"],
            r["acceptance"],
            r["acceptance_gap_pct"],
            r["moves"],
            r["acceptance_gain"],
        )
        for r in rows
    ] == [
        ("exact", "joint", "4.0", "0.0", "1", "1.0"),
        ("exact-initial", "initial", "3.0", "0.0", "0", ""),
        ("ff", "initial", "3.0", "0.0", "0", ""),
        ("ff-agnostic", "initial", "2.0", str(100 / 3), "0", ""),
    ]


def test_cli_generated_json(capsys: Capsys) -> None:
    code, out, err = run(
        capsys, "bench", "--generate", "ibm", "--gpus", "2", "--seeds", "2", "--first-seed", "3", "--methods", "ff",
        "--json", "--no-progress",
    )  # fmt: skip
    assert (code, err) == (0, "")
    data = json.loads(out)
    assert [(r["instance"], r["method"], r["reference_use_case"]) for r in data["rows"]] == [
        (f"ibm-2gpus-seed{s}", m, case)
        for s in (3, 4)
        for m, case in (("exact", "joint"), ("exact-initial", "initial"), ("ff", "initial"))
    ]
    assert all(r["reference"] == "optimal" for r in data["rows"])
    assert [(s["gpus"], s["method"], s["reference_use_case"], s["runs"]) for s in data["summary"]] == [
        (2, "exact", "joint", 2),
        (2, "exact-initial", "initial", 2),
        (2, "ff", "initial", 2),
    ]
    joint = data["summary"][0]
    gains = [r["acceptance_gain"] for r in data["rows"] if r["method"] == "exact"]
    assert joint["mean_acceptance_gain"] == pytest.approx(sum(gains) / 2) and all(g >= 0 for g in gains)


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        ((), "instance: give instance files or --generate ibm"),
        ((str(FIG2B), "--gpus", "8"), "--gpus: only with --generate ibm"),
        ((str(FIG2B), "--methods", "ff,ff"), "--methods: method 'ff' is named twice"),
        ((str(FIG2B), "--methods", ","), "--methods: no method named; give e.g. ff,mfi or all"),
        ((str(FIG2B), "--methods", "nope"), "--methods: unknown method 'nope' (known: exact, "),
        (
            (str(FIG2B), "--methods", "grmu:bogus=1"),
            "--methods: policy grmu has no option 'bogus' (its options: heavy, defrag, consolidation, release)",
        ),
        (("missing.json",), "missing.json: cannot read missing.json"),
    ],
)
def test_cli_bad_input_exits_2_with_one_line(
    argv: tuple[str, ...], message: str, tmp_path: Path, capsys: Capsys
) -> None:
    out_csv = tmp_path / "never.csv"
    code, out, err = run(capsys, "bench", *argv, "--out", str(out_csv))
    assert (code, out) == (2, "")
    assert err.startswith(f"mipopt: error: {message}") and err.count("\n") == 1
    assert not out_csv.exists()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--generate", "ibm", "--gpus", "0"), "--gpus: must be at least 1, got 0"),
        (("--generate", "ibm", "--seeds", "0"), "--seeds: must be at least 1, got 0"),
        (("--generate", "ibm", "--first-seed", "-1"), "--first-seed: must be non-negative, got -1"),
        ((str(FIG2B), "--time-limit", "0"), "--time-limit: must be positive seconds, got 0"),
        ((str(FIG2B), "--time-limit", "nan"), "--time-limit: must be positive seconds, got nan"),
        ((str(FIG2B), "--threads", "0"), "--threads: must be at least 1, got 0"),
        ((str(FIG2B), "--seed", "-2"), "--seed: must be non-negative, got -2"),
        ((str(FIG2B), "--threads", "two"), "--threads: invalid int value: 'two'"),
    ],
)
def test_cli_option_rules_are_checked_while_parsing(
    argv: tuple[str, ...], message: str, tmp_path: Path, capsys: Capsys
) -> None:
    out_csv = tmp_path / "never.csv"
    with pytest.raises(SystemExit) as exit_:
        main(["bench", *argv, "--out", str(out_csv)])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err.splitlines()[-1] == f"mipopt bench: error: argument {message}"
    assert not out_csv.exists()


# --- benchmarks/bench_gap.py


def _digest(path: Path) -> str | None:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def test_bench_gap_smoke(tmp_path: Path) -> None:
    committed = [ROOT / "benchmarks" / "results" / "gap.csv", ROOT / "benchmarks" / "README.md"]
    before = [_digest(p) for p in committed]
    script = ROOT / "benchmarks" / "bench_gap.py"
    args = [
        "--sizes",
        "2",
        "4",
        "--seeds",
        "2",
        "1",
        "--out-dir",
        str(tmp_path),
        "--readme",
        str(tmp_path / "README.md"),
    ]
    subprocess.run([sys.executable, str(script), *args], cwd=ROOT, check=True, capture_output=True)
    time.sleep(1.1)  # runs are told apart by their start time, to the second (benchmarks.common.utc_now)
    # a second run of two methods: the tables show each method's latest run
    subprocess.run(
        [sys.executable, str(script), *args, "--methods", "ff,lb"],
        cwd=ROOT,
        check=True,
        capture_output=True,
    )
    with (tmp_path / "gap.csv").open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames is not None and reader.fieldnames[-len(COLUMNS) :] == list(COLUMNS)
        rows = list(reader)
    methods = [EXACT, EXACT_INITIAL, *heuristic_names()]
    assert len(rows) == 3 * len(methods) + 3 * 4
    assert {(r["gpus"], r["seed"]) for r in rows} == {("2", "0"), ("2", "1"), ("4", "0")}
    assert all(r["reference"] == "optimal" and r["proven"] in ("True", "") for r in rows)
    assert {r["method"]: r["reference_use_case"] for r in rows if r["method"] in (EXACT, "grmu", "ff")} == {
        EXACT: "joint",
        "grmu": "joint",
        "ff": "initial",
    }
    readme = (tmp_path / "README.md").read_text()
    section = readme[readme.index("<!-- gap:begin -->") : readme.index("<!-- gap:end -->")]
    assert (
        "**2 GPUs**: 2 snapshots (seeds 0-1)" in section and "**4 GPUs**: 1 snapshots (seeds 0-0)" in section
    )
    assert "the initial optimum (`exact-initial`) proven on 2/2" in section
    assert (
        "the joint optimum (`exact`) proven on 1/1" in section
        and "What migrations buy: acceptance +" in section
    )
    table = [line for line in section.splitlines() if line.startswith("| `")]
    assert len(table) == 2 * len(methods)
    assert table[0].startswith("| `exact` | exact | joint | 2 | ") and "| 2/2 | 2/2 |" in table[0]
    assert table[1].startswith("| `exact-initial` | exact | initial | 2 | ") and "| 2/2 | 2/2 |" in table[1]
    (ff,) = [line for line in table[: len(methods)] if line.startswith("| `ff` |")]
    assert ff.startswith("| `ff` | policy | initial | 2 | ")
    assert [_digest(p) for p in committed] == before


def test_exact_initial_keeps_running_workloads_home_in_a_comparison() -> None:
    # ibm 8 GPUs seed 2: the joint optimum moves 6 running workloads; exact-initial may move none
    # (its preset use_case="initial" once got lost when compare_methods ran a method directly)
    rows = by_method(compare_methods([ibm_instance(8, seed=2)], ["exact-initial"]))
    assert (rows[EXACT].migrations, rows["exact-initial"].migrations) == (6.0, 0.0)
    assert rows["exact-initial"].hardware == 9.0 and rows[EXACT].hardware == 8.0
    # what those migrations buy: one GPU off (8 hardware, not 9), the same acceptance
    assert (rows[EXACT].acceptance_gain, rows[EXACT].hardware_gain_pct) == (0.0, pytest.approx(-100 / 9))
