"""Pareto fronts by the epsilon-constraint sweep: exact fronts, verified points, files and the command."""

from __future__ import annotations

import csv
import functools
import itertools
import json
from dataclasses import replace
from pathlib import Path

import pytest
from factories import INSTANCES, instances
from hypothesis import HealthCheck, given, settings

import mipopt.exact.sweep as sweep_module
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.exact.driver import solve_exact
from mipopt.exact.sweep import CSV_COLUMNS, Front, SweepProgress, parse_objectives, steps, sweep
from mipopt.instance import Assignment, Instance, InstanceBuilder, Solution, Status, Termination
from mipopt.io import load_instance, load_solution
from mipopt.verifier import verify

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
Triple = tuple[float, float, float]

# Fronts (acceptance, hardware, migrations), best acceptance first, checked by hand:
# host_capacity: h1 (weight 1) has cpu for `run` and `fits-h1` only, h2 weighs 3 per host or GPU,
#   `needs-ram` fits nowhere. All three on h2-g0 after moving `run` across hosts (4 x 1): 3 at
#   2 x 3 = 6; keeping `run` on h1 puts `needs-cpu` on h2: 3 at 2 + 6 = 8; h1 alone holds 2 at 2.
# moves: the lexicographic optimum repacks h1-g0 (start changes are free) and brings both 1g
#   instances over from h1-g1 (2 x 2): 6 at h1 + 1 GPU + h2 + 1 GPU = 4; staying put costs a GPU.
# quickstart: h1-g0 (running, A100-only 3g.20gb) and h2-g0 (pinned llm-c) are always on: 5 at
#   least, where 7 fit; the second A100 (6) takes the 8th.
# fbk_fig3: emptying g1 takes two inter-GPU moves (2 x 2) and saves one GPU.
# grmu_fig2b: one GPU, always on, whose moves are free: one point.
FRONTS: dict[str, list[Triple]] = {
    "host_capacity": [(3, 6, 4), (3, 8, 0), (2, 2, 0)],
    "moves": [(6, 4, 4), (6, 5, 0)],
    "quickstart": [(8, 6, 0), (7, 5, 0)],
    "fbk_fig3": [(8, 3, 4), (8, 4, 0)],
    "grmu_fig2b": [(4, 2, 0)],
}


@functools.cache
def committed_front(name: str) -> tuple[Instance, Front]:
    """The default sweep of a committed instance, computed once for the tests that read it."""
    inst = load_instance(INSTANCES / f"{name}.json")
    return inst, sweep(inst)


def triples(front: Front) -> list[Triple]:
    return [(p.acceptance, p.hardware, p.migrations) for p in front.points]


def dominates(a: Triple, b: Triple, axes: tuple[int, ...] = (0, 1, 2)) -> bool:
    """``a`` at least as good as ``b`` on ``axes`` (acceptance up, the others down) and not equal there."""
    sign = (-1, 1, 1)
    pa, pb = [sign[i] * a[i] for i in axes], [sign[i] * b[i] for i in axes]
    return all(x <= y for x, y in zip(pa, pb, strict=True)) and pa != pb


def tiny() -> Instance:
    """Three A30s on two hosts (h2 weighs 2), two movable running instances, two requests.

    Front, by hand: all four fit only with the 4g on h2's GPU (5 at 1 + 2 + 2 x 2 = 7); dropping
    the 2g request lets `b` join `a` on g1 (2 x 0.5) and the 4g take g2 (4 at 3, 1); the 2g
    request instead fills g1 with nothing moved (3 at 3, 0); `a` and `b` on one GPU (2 at 2, 1).
    """
    b = InstanceBuilder(name="tiny")
    b.add_host("h1", {"g1": "A30-24GB", "g2": "A30-24GB"}, weight=1)
    b.add_host("h2", {"g3": "A30-24GB"}, weight=2)
    b.add_workload("a", "2g.12gb", placement=("g1", 0))
    b.add_workload("b", "1g.6gb", placement=("g2", 3), migration_weight=0.5)
    b.add_workload("n1", "4g.24gb", weight=2)
    b.add_workload("n2", "2g.12gb")
    return b.build()


TINY_FRONT: list[Triple] = [(5, 7, 0), (4, 3, 1), (3, 3, 0), (2, 2, 1)]


def brute_force(inst: Instance) -> set[Triple]:
    """Objective vectors of every valid placement: each workload at every (GPU, start), or rejected if new."""
    options = []
    for w in inst.workloads:
        here: list[tuple[str, int] | None] = [
            (g.id, s) for g in inst.gpus if (p := inst.profile_on(w, g.model)) for s in p.starts
        ]
        options.append(here if w.running else [*here, None])
    found = set()
    for combo in itertools.product(*options):
        placed = tuple(Assignment(w.id, *c) for w, c in zip(inst.workloads, combo, strict=True) if c)
        rejected = tuple(w.id for w, c in zip(inst.workloads, combo, strict=True) if not c)
        report = verify(
            inst, Solution(inst.name, "brute force", Termination.COMPLETED, Status.FEASIBLE, placed, rejected)
        )
        if report.valid:
            o = report.objectives
            found.add((o.acceptance, o.hardware, o.migrations))
    return found


def non_dominated(points: set[Triple], axes: tuple[int, ...] = (0, 1, 2)) -> set[tuple[float, ...]]:
    return {tuple(p[i] for i in axes) for p in points if not any(dominates(q, p, axes) for q in points)}


def check_front(inst: Instance, front: Front) -> None:
    """Every point verifies with the objectives it reports, and no point dominates another."""
    for p in front.points:
        report = verify(inst, p.solution)
        assert report.valid, report.violations
        o = report.objectives
        assert (o.acceptance, o.hardware, o.migrations) == (p.acceptance, p.hardware, p.migrations)
        assert p.proven == (p.termination is Termination.OPTIMAL)
    axes = tuple(("acceptance", "hardware", "migrations").index(n) for n in front.objectives)
    for a, b in itertools.permutations(triples(front), 2):
        assert not dominates(a, b, axes), (a, b)


def lex_optimum(inst: Instance, objective: str = "lex:acceptance,hardware,migrations") -> Triple:
    o = solve_exact(inst, objective=objective).objectives
    assert o is not None
    return (o.acceptance, o.hardware, o.migrations)


# --- exact fronts


def test_tiny_front_equals_brute_force_and_the_hand_count() -> None:
    inst = tiny()
    front = sweep(inst)
    assert triples(front) == TINY_FRONT
    assert front.complete and front.proven
    assert front.solves == 7  # 2 payoff-table solves, 4 points, 1 solve that proves the end
    check_front(inst, front)
    every = brute_force(inst)
    assert len(every) == 39
    assert non_dominated(every) == set(TINY_FRONT)
    # acceptance vs hardware only: (3, 3) falls behind (4, 3); migrations still break ties
    two = sweep(inst, objectives=("acceptance", "hardware"))
    assert triples(two) == [(5, 7, 0), (4, 3, 1), (2, 2, 1)]
    assert {(a, h) for a, h, _ in triples(two)} == non_dominated(every, (0, 1))
    check_front(inst, two)


def test_the_front_does_not_depend_on_which_objective_is_primary() -> None:
    inst = tiny()
    front = sweep(inst, objectives="migrations,hardware,acceptance", solver="cpsat")
    assert sorted(triples(front)) == sorted(TINY_FRONT)
    assert triples(front)[0] == (3, 3, 0)  # sorted by the primary: fewest migrations, then hardware
    assert sorted(triples(sweep(inst, objectives="hardware,migrations"))) == [(2, 2, 1), (3, 3, 0)]


@pytest.mark.parametrize("name", sorted(FRONTS))
def test_committed_instance_fronts(name: str) -> None:
    inst, front = committed_front(name)
    assert triples(front) == FRONTS[name]
    assert front.complete and front.proven
    check_front(inst, front)
    assert lex_optimum(inst) in triples(front)


def test_front_equals_solving_at_every_bound_value() -> None:
    """host_capacity by brute force over the epsilons: hardware takes whole values (host weights 1 and
    3), migrations 0, 2 or 4 (one movable workload, delta 1)."""
    inst = load_instance(INSTANCES / "host_capacity.json")
    found = set()
    for h, m in itertools.product(
        range(2, 10), (0, 2, 4)
    ):  # below 2 nothing fits: `run` keeps h1 and h1-g0 on
        sol = solve_exact(inst, bounds=[("hardware", "<=", h), ("migrations", "<=", m)])
        if sol.objectives is not None:
            o = sol.objectives
            found.add((o.acceptance, o.hardware, o.migrations))
    assert non_dominated(found) == set(FRONTS["host_capacity"])
    two = sweep(inst, objectives="acceptance,hardware")
    assert triples(two) == [(3, 6, 4), (2, 2, 0)]


def test_lattice_steps_are_the_gcd_of_the_weights() -> None:
    assert steps(tiny()) == {"acceptance": 1.0, "hardware": 1.0, "migrations": 1.0}
    b = InstanceBuilder(name="steps")
    b.add_host("h1", {"g1": "A30-24GB"}, weight=0.75)
    b.add_host("h2", {"g2": "A30-24GB"}, weight=0.5)
    b.add_workload("r", "1g.6gb", placement=("g1", 0), migration_weight=0.3, pinned=True)
    b.add_workload("n1", "1g.6gb", weight=0.1)
    b.add_workload("n2", "1g.6gb", weight=0.25)
    # pinned: no migrations at all
    assert steps(b.build()) == {"acceptance": 0.05, "hardware": 0.25, "migrations": None}


# --- what a sweep reports


def test_progress_rises_to_one_and_counts_solves() -> None:
    seen: list[SweepProgress] = []
    front = sweep(tiny(), progress=seen.append)
    fractions = [p.fraction for p in seen]
    assert fractions == sorted(fractions) and fractions[-1] == 1.0 and fractions[0] < 1
    assert seen[-1].solves == front.solves and seen[-1].points == 4
    assert seen[-1].message == "done"


def test_max_points_cuts_the_front_and_says_so() -> None:
    front = sweep(tiny(), max_points=1)
    assert len(front.points) == 1 and not front.complete
    assert "may be incomplete" in front.table().splitlines()[-1]


def test_time_limited_points_are_marked_unproven(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every solve that ends at the all-accepted point is made to look cut by the time limit."""
    real = sweep_module.solve_exact

    def times_out_at_five(*args, **kwargs):
        sol = real(*args, **kwargs)
        if sol.objectives is not None and sol.objectives.acceptance == 5:
            return replace(sol, termination=Termination.TIME_LIMIT, status=Status.FEASIBLE)
        return sol

    monkeypatch.setattr(sweep_module, "solve_exact", times_out_at_five)
    front = sweep(tiny())
    assert triples(front) == TINY_FRONT
    assert [p.proven for p in front.points] == [False, True, True, True]
    assert front.points[0].termination is Termination.TIME_LIMIT
    assert not front.complete and not front.proven
    assert front.table().splitlines()[-1].endswith("front may be incomplete (1 unproven)")
    assert front.rows()[0]["proven"] is False and front.rows()[0]["termination"] == "time_limit"


@pytest.mark.parametrize(
    ("objectives", "message"),
    [
        ("acceptance", "objectives: a front needs 2 or 3 objectives, e.g. acceptance,hardware; got 1"),
        (
            "acceptance,power",
            "objectives: unknown objective 'power' (known: acceptance, hardware, migrations)",
        ),
        ("hardware,hardware", "objectives: each objective at most once, got hardware,hardware"),
    ],
)
def test_bad_objectives(objectives: str, message: str) -> None:
    with pytest.raises(InstanceError) as info:
        parse_objectives(objectives)
    assert str(info.value) == message


# --- files


def test_csv_png_and_solution_files(tmp_path: Path) -> None:
    inst, front = committed_front("host_capacity")
    front = front.save_solutions(tmp_path / "solutions")
    front.to_csv(tmp_path / "front.csv")
    front.plot(tmp_path / "front.png")
    with open(tmp_path / "front.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert tuple(rows[0]) == CSV_COLUMNS
    assert [(r["point"], r["acceptance"], r["hardware"], r["migrations"]) for r in rows] == [
        ("1", "3", "6", "4"),
        ("2", "3", "8", "0"),
        ("3", "2", "2", "0"),
    ]
    assert {(r["proven"], r["termination"]) for r in rows} == {("true", "optimal")}
    assert all(float(r["runtime_s"]) > 0 for r in rows)
    for row, p in zip(rows, front.points, strict=True):
        assert row["solution"] == str(tmp_path / "solutions" / f"point-{row['point'].zfill(3)}.json")
        report = verify(inst, load_solution(row["solution"]))
        assert report.valid and (report.objectives.hardware, report.objectives.migrations) == (
            p.hardware,
            p.migrations,
        )
    assert (tmp_path / "front.png").read_bytes()[:8] == PNG_SIGNATURE
    assert sorted(f.name for f in tmp_path.iterdir()) == [
        "front.csv",
        "front.png",
        "solutions",
    ]  # no temp files left


# --- command line

Capsys = pytest.CaptureFixture[str]


def test_cli_sweep_round_trip(tmp_path: Path, capsys: Capsys) -> None:
    path = INSTANCES / "moves.json"
    code = main(
        ["sweep", str(path), "--out-dir", str(tmp_path / "out"), "--solutions", str(tmp_path / "sol")]
    )
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")  # stderr is not a terminal here: no progress bar
    lines = out.splitlines()
    assert (
        lines[0]
        == "Pareto front of 'moves': acceptance (max), hardware (min), migrations (min); grmu / highs"
    )
    assert [line.split()[:5] for line in lines[2:4]] == [
        ["1", "6", "4", "4", "yes"],
        ["2", "6", "5", "0", "yes"],
    ]
    assert lines[4].startswith("2 points from ") and lines[4].endswith("front complete, every point proven")
    csv_path, png_path = tmp_path / "out" / "moves.front.csv", tmp_path / "out" / "moves.front.png"
    assert lines[-2:] == [f"wrote {csv_path}", f"wrote {png_path}"]
    assert csv_path.read_text().splitlines()[1].startswith("1,6,4,4,true,optimal,")
    assert png_path.read_bytes()[:8] == PNG_SIGNATURE
    assert main(["verify", str(path), str(tmp_path / "sol" / "point-002.json")]) == 0
    assert capsys.readouterr().out == "valid: acceptance 6, hardware 5, migrations 0\n"

    code = main(["sweep", str(path), "--objectives", "acceptance,hardware", "--solver", "cpsat", "--json"])
    out, err = capsys.readouterr()
    data = json.loads(out)
    assert (code, data["objectives"], data["complete"]) == (0, ["acceptance", "hardware"], True)
    assert [(p["acceptance"], p["hardware"], p["migrations"]) for p in data["points"]] == [(6, 4, 4)]
    assert data["points"][0]["placements"]["new"] == ["h2-g0", 0]


def test_cli_progress_bar_when_forced(capsys: Capsys) -> None:
    code = main(["sweep", str(INSTANCES / "grmu_fig2b.json"), "--progress"])
    _out, err = capsys.readouterr()
    assert code == 0
    frames = err.split("\r")[1:]
    assert frames[-1].startswith("[" + "#" * 30 + "] 100%  ") and frames[-1].rstrip().endswith("done")
    assert err.endswith("\n") and err.count("\n") == 1


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--objectives", "acceptance"],
            "--objectives: a front needs 2 or 3 objectives, e.g. acceptance,hardware; got 1",
        ),
        (["--out-dir", "x", "--png", "y.png"], "--out-dir: give either --out-dir or --csv/--png, not both"),
    ],
)
def test_cli_sweep_bad_input_is_one_line(argv: list[str], message: str, capsys: Capsys) -> None:
    code = main(["sweep", str(INSTANCES / "quickstart.json"), *argv])
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"mipopt: error: {message}\n")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--time-limit", "0"], "--time-limit: must be positive seconds, got 0"),
        (["--max-points", "0"], "--max-points: must be at least 1, got 0"),
        (["--threads", "0"], "--threads: must be at least 1, got 0"),
    ],
)
def test_cli_sweep_option_rules_are_checked_while_parsing(
    argv: list[str], message: str, capsys: Capsys
) -> None:
    with pytest.raises(SystemExit) as exit_:
        main(["sweep", str(INSTANCES / "quickstart.json"), *argv])
    assert exit_.value.code == 2
    out, err = capsys.readouterr()
    assert (out, err.splitlines()[-1]) == ("", f"mipopt sweep: error: argument {message}")


# --- property


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_hosts=2, max_gpus=2, max_running_per_gpu=2, max_new=3))
def test_random_fronts_are_non_dominated_and_hold_every_lex_optimum(inst: Instance) -> None:
    front = sweep(inst)
    assert front.complete
    check_front(inst, front)
    on_front = triples(front)
    for order in (
        "acceptance,hardware,migrations",
        "hardware,migrations,acceptance",
        "migrations,acceptance,hardware",
    ):
        assert lex_optimum(inst, f"lex:{order}") in on_front, order


def test_cli_json_keeps_the_profile_each_point_chose(capsys: Capsys) -> None:
    """instances/memory_sized.json, acceptance against hardware: every point's placements give a
    memory-sized workload its chosen profile (a third entry), a workload with a profile none, and
    the profiles are those of the point's own solution."""
    inst = load_instance(INSTANCES / "memory_sized.json")
    code = main(
        ["sweep", str(INSTANCES / "memory_sized.json"), "--objectives", "acceptance,hardware", "--json"]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["points"]
    front = sweep(inst, objectives=("acceptance", "hardware"))
    for row, point in zip(data["points"], front.points, strict=True):
        chosen = {a.workload: a.profile for a in point.solution.placements}
        assert row["placements"]["named-1g"][2:] == []
        assert row["placements"]["train-35gb"] == ["h1-g0", 0, "4g.40gb"]
        assert {w: p[2] for w, p in row["placements"].items() if len(p) == 3} == {
            w: p for w, p in chosen.items() if p is not None
        }
