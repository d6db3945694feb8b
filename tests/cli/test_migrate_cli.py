"""``mipopt plan`` and ``mipopt solve --plan``: the plan's text, JSON, NVML operations and picture."""

from __future__ import annotations

import json
import re
from importlib import resources
from pathlib import Path

import jsonschema
import pytest
from factories import INSTANCES

from mipopt.cli import main
from mipopt.instance import InstanceBuilder
from mipopt.interop.emit import plan_operations
from mipopt.io import load_instance, load_solution
from mipopt.migrate import plan_migration
from mipopt.render.plan import plan_states, png_gpus

MOVES, MOVES_TARGET = INSTANCES / "moves.json", INSTANCES / "moves.target.json"
SWAP, SWAP_TARGET = INSTANCES / "swap.json", INSTANCES / "swap.target.json"
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

Capsys = pytest.CaptureFixture[str]


def run(capsys: Capsys, *argv: str | Path) -> tuple[int, str, str]:
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


def rounds_of(text: str) -> list[list[str]]:
    """The lines under each ``round N`` header of the text form, whitespace collapsed."""
    rounds: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("round "):
            rounds.append([])
        elif rounds and line.strip() and line.startswith("  "):
            rounds[-1].append(" ".join(line.split()))
    return rounds


def test_plan_text_of_moves(capsys: Capsys) -> None:
    code, out, err = run(capsys, "plan", MOVES, MOVES_TARGET)
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("plan for 'moves': create-first, graph planner, 2 rounds (")
    assert lines[1:6] == [
        "moves: 3 (1 intra-GPU, 1 inter-GPU, 1 inter-host), of which 0 extra (parking)",
        "disruptive moves: 0",
        "new workloads created: 1",
        "moved memory: 7 slots, 70 GB",  # 3g.40gb (4 slots) + 2g.20gb (2) + 1g.10gb (1)
        "IBM sequential migrations: 0",
    ]
    # `new` (4g.40gb at h1-g0:0) waits for both instances leaving h1-g0: round 2
    assert rounds_of(out) == [
        [
            "move to-other-host 3g.40gb h1-g0:0 -> h2-g0:0 inter-host",
            "move to-other-gpu 2g.20gb h1-g0:4 -> h1-g1:4 inter-GPU",
            "move new-start 1g.10gb h1-g1:0 -> h1-g1:1 intra-GPU",
        ],
        ["create new 4g.40gb -> h1-g0:0 new"],
    ]


def test_plan_text_of_a_swap_names_the_park(capsys: Capsys) -> None:
    code, out, err = run(capsys, "plan", SWAP, SWAP_TARGET)
    assert (code, err) == (0, "")
    assert "moves: 3 (1 intra-GPU, 2 inter-GPU, 0 inter-host), of which 1 extra (parking)" in out
    assert rounds_of(out) == [
        ["move a 3g.20gb g0:0 -> g1:0 inter-GPU park"],
        ["move b 3g.20gb g0:4 -> g0:0 intra-GPU"],
        ["move a 3g.20gb g1:0 -> g0:4 inter-GPU"],
    ]


def test_plan_json_and_out_are_one_document(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "plan.json"
    code, out, err = run(capsys, "plan", MOVES, MOVES_TARGET, "--json", "--out", path)
    assert (code, err) == (0, "")
    printed = json.loads(out)  # --json prints nothing but the JSON, also with --out
    assert json.loads(path.read_text()) == printed
    assert (printed["format"], printed["version"], printed["instance"]) == ("mipopt-plan", 1, "moves")
    assert [len(r["moves"]) for r in printed["rounds"]] == [3, 0]
    assert printed["rounds"][1]["creates"] == [{"workload": "new", "to": {"gpu": "h1-g0", "start": 0}}]
    final = {p["workload"]: [p["gpu"], p["start"]] for p in printed["final"]}
    target = {w: list(spot) for w, spot in load_solution(MOVES_TARGET).placed().items()}
    assert final == target
    assert printed["metrics"]["moves"] == 3 and printed["metrics"]["rounds"] == 2


def test_plan_out_prints_text_and_where(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "plan.json"
    code, out, err = run(capsys, "plan", SWAP, SWAP_TARGET, "--out", path)
    assert (code, err) == (0, "")
    assert out.splitlines()[-1] == f"wrote {path}"
    assert json.loads(path.read_text())["metrics"]["extra_moves"] == 1


SWAP_OPS_CREATE_FIRST = """\
round 1
  create GPU instance of profile 3g.20gb (id 9) at start 0 on GPU g1  # a: park (temporary, breaks a cycle of waits) from g0:0
  destroy GPU instance 3g.20gb (profile id 9) at start 0 on GPU g0  # a: moved to g1:0
round 2
  create GPU instance of profile 3g.20gb (id 9) at start 0 on GPU g0  # b: intra-GPU move from g0:4
  destroy GPU instance 3g.20gb (profile id 9) at start 4 on GPU g0  # b: moved to g0:0
round 3
  create GPU instance of profile 3g.20gb (id 9) at start 4 on GPU g0  # a: inter-GPU move from g1:0
  destroy GPU instance 3g.20gb (profile id 9) at start 0 on GPU g1  # a: moved to g0:4
"""

SWAP_OPS_DESTROY_FIRST = """\
round 1
  destroy GPU instance 3g.20gb (profile id 9) at start 0 on GPU g0  # a: drain (down until restored)
  destroy GPU instance 3g.20gb (profile id 9) at start 4 on GPU g0  # b: drain (down until restored)
  create GPU instance of profile 3g.20gb (id 9) at start 4 on GPU g0  # a: restore (drained from g0:0)
  create GPU instance of profile 3g.20gb (id 9) at start 0 on GPU g0  # b: restore (drained from g0:4)
"""


@pytest.mark.parametrize(
    ("semantics", "expected"),
    [("create-first", SWAP_OPS_CREATE_FIRST), ("destroy-first", SWAP_OPS_DESTROY_FIRST)],
)
def test_plan_ops_of_a_swap(semantics: str, expected: str, capsys: Capsys) -> None:
    # 3g.20gb is profile id 9 on an A100-40GB (`nvidia-smi mig -lgip`)
    code, out, err = run(capsys, "plan", SWAP, SWAP_TARGET, "--ops", "--semantics", semantics)
    assert (code, err) == (0, "")
    assert out == expected


def test_plan_ops_use_the_profile_id_of_each_model(capsys: Capsys) -> None:
    # 1g.10gb is id 19 on an H100-80GB, 2g.20gb id 14, 3g.40gb id 9, 4g.40gb id 5
    code, out, err = run(capsys, "plan", MOVES, MOVES_TARGET, "--ops", "--json")
    assert (code, err) == (0, "")
    ops = json.loads(out)
    assert sorted({o["round"] for o in ops}) == [1, 2]
    assert [(o["op"], o["phase"], o["workload"], o["profile_id"]) for o in ops if o["round"] == 1] == [
        ("create", "create", "to-other-host", 9),
        ("create", "create", "to-other-gpu", 14),
        ("create", "create", "new-start", 19),
        ("destroy", "destroy", "to-other-host", 9),
        ("destroy", "destroy", "to-other-gpu", 14),
        ("destroy", "destroy", "new-start", 19),
    ]
    assert [o for o in ops if o["round"] == 2] == [
        {
            "round": 2,
            "phase": "create",
            "op": "create",
            "reason": "new",
            "workload": "new",
            "host": "h1",
            "gpu": "h1-g0",
            "gpu_index": 0,
            "gpu_index_known": False,
            "gpu_uuid": None,
            "profile": "4g.40gb",
            "profile_id": 5,
            "start": 0,
            "size": 4,
            "compute": 4,
            "gpu_instance_id": None,
            "comment": "new request",
            "before": [],
            "after": ["5:0"],
            "peer": None,
        }
    ]


def test_a_drain_is_destroyed_before_any_create() -> None:
    # one GPU holding a and b: no free space, so the swap drains one of them
    b = InstanceBuilder("full")
    b.add_host("h1", gpus={"g0": "A100-40GB"})
    b.add_workload("a", "3g.20gb", placement=("g0", 0))
    b.add_workload("b", "3g.20gb", placement=("g0", 4))
    inst = b.build()
    plan = plan_migration(inst, {"a": ("g0", 4), "b": ("g0", 0)})
    assert plan.metrics["disruptive_moves"] == 1 and len(plan.disrupted) == 1
    ops = list(plan_operations(inst, plan))
    drained = plan.disrupted[0]
    first = ops.index(next(o for o in ops if o.phase == "drain"))
    assert (ops[first].workload, ops[first].comment) == (drained, "drain (down until restored)")
    assert all(o.phase != "create" for o in ops[:first])
    assert plan_states(inst, plan)[-1] == plan.final


def test_plan_png(tmp_path: Path, capsys: Capsys) -> None:
    path = tmp_path / "plan.png"
    code, out, err = run(capsys, "plan", SWAP, SWAP_TARGET, "--png", path)
    assert (code, err) == (0, "")
    assert path.read_bytes()[:8] == PNG_SIGNATURE
    assert out.splitlines()[-1] == f"wrote {path}"
    assert [p.name for p in tmp_path.iterdir()] == ["plan.png"]  # no temporary file left


def test_png_of_a_large_cluster_shows_the_touched_gpus() -> None:
    b = InstanceBuilder("wide")
    b.add_host("h1", gpus={f"g{i}": "A100-40GB" for i in range(20)})
    b.add_workload("a", "3g.20gb", placement=("g3", 0))
    b.add_workload("b", "1g.5gb", placement=("g7", 0))
    inst = b.build()
    plan = plan_migration(inst, {"a": ("g11", 4), "b": ("g7", 0)})
    gpus, left_out = png_gpus(inst, plan)
    assert ([g.id for g in gpus], left_out) == (["g3", "g11"], 0)


def test_solve_plan_plans_to_the_solution(tmp_path: Path, capsys: Capsys) -> None:
    sol_path, plan_path = tmp_path / "sol.json", tmp_path / "plan.json"
    code, out, err = run(
        capsys, "solve", MOVES, "--method", "ibm-compaction", "--out", sol_path, "--plan", plan_path
    )
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [f"wrote {sol_path}", f"wrote {plan_path}"]
    assert "\nplan for 'moves': create-first, graph planner, " in out
    plan = json.loads(plan_path.read_text())
    placed = load_solution(sol_path).placed()
    assert {p["workload"]: (p["gpu"], p["start"]) for p in plan["final"]} == placed
    moved = {w for w, spot in load_instance(MOVES).current_placement().items() if placed.get(w) != spot}
    assert {m["workload"] for r in plan["rounds"] for m in r["moves"]} == moved
    assert moved  # compaction moves something, or this test would check nothing


def test_solve_plan_destroy_first(tmp_path: Path, capsys: Capsys) -> None:
    plan_path = tmp_path / "plan.json"
    code, _out, err = run(
        capsys,
        "solve",
        MOVES,
        "--method",
        "ibm-compaction",
        "--plan",
        plan_path,
        "--semantics",
        "destroy-first",
    )
    assert (code, err) == (0, "")
    plan = json.loads(plan_path.read_text())
    assert plan["semantics"] == "destroy-first"
    assert plan["metrics"]["disruptive_moves"] == plan["metrics"]["moves"] > 0


@pytest.mark.parametrize("semantics", ["create-first", "destroy-first"])
def test_expected_plans_of_shipped_instances(semantics: str) -> None:
    want = json.loads(SWAP.read_text())["expected"]["plan"][semantics]
    plan = plan_migration(load_instance(SWAP), load_solution(SWAP_TARGET), semantics=semantics)  # type: ignore[arg-type]
    for key, value in want["metrics"].items():
        assert plan.metrics[key] == value, key


@pytest.fixture(scope="module")
def plan_validator() -> jsonschema.protocols.Validator:
    schema = json.loads(resources.files("mipopt").joinpath("schemas/plan.schema.json").read_text())
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


@pytest.mark.parametrize("semantics", ["create-first", "destroy-first"])
@pytest.mark.parametrize(
    ("instance", "target"), [(MOVES, MOVES_TARGET), (SWAP, SWAP_TARGET)], ids=["moves", "swap"]
)
def test_written_plans_match_schema(
    instance: Path, target: Path, semantics: str, tmp_path: Path, capsys: Capsys, plan_validator
) -> None:
    path = tmp_path / "plan.json"
    assert run(capsys, "plan", instance, target, "--semantics", semantics, "--out", path)[0] == 0
    assert [e.message for e in plan_validator.iter_errors(json.loads(path.read_text()))] == []


@pytest.mark.parametrize(
    ("mutate", "fragment"),
    [
        (lambda d: d.pop("rounds"), "'rounds' is a required property"),
        (lambda d: d.update(semantics="fast"), "'fast' is not one of ['create-first', 'destroy-first']"),
        (lambda d: d["rounds"][0]["moves"][0].update(kind="far"), "'far' is not one of"),
        (lambda d: d["rounds"][0]["moves"][0]["to"].update(start=-1), "-1 is less than the minimum of 0"),
        (lambda d: d["rounds"][0].update(steps=[]), "Additional properties are not allowed ('steps' was"),
        (
            lambda d: d["rounds"][0]["creates"].append(
                {"workload": "x", "to": {"gpu": "g1", "start": 0}, "kind": "intra_gpu"}
            ),
            "'from' is a dependency of 'kind'",
        ),
    ],
)
def test_plan_schema_refuses_malformed_plans(
    mutate, fragment: str, tmp_path: Path, capsys: Capsys, plan_validator
) -> None:
    path = tmp_path / "plan.json"
    assert run(capsys, "plan", SWAP, SWAP_TARGET, "--out", path)[0] == 0
    data = json.loads(path.read_text())
    mutate(data)
    messages = [e.message for e in plan_validator.iter_errors(data)]
    assert any(fragment in m for m in messages), messages


def _write(path: Path, data: object) -> Path:
    path.write_text(json.dumps(data))
    return path


def _swap_target(**placements: tuple[str, int]) -> dict:
    data = json.loads(SWAP_TARGET.read_text())
    data["placements"] = [{"workload": w, "gpu": g, "start": s} for w, (g, s) in placements.items()]
    return data


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["plan", "{tmp}/missing.json", SWAP_TARGET],
            "{tmp}/missing.json: cannot read {tmp}/missing.json: No such file or directory",
        ),
        (
            ["plan", SWAP, "{tmp}/missing.json"],
            "{tmp}/missing.json: cannot read {tmp}/missing.json: No such file or directory",
        ),
        (
            ["plan", SWAP, MOVES_TARGET],
            f"{MOVES_TARGET}: not a valid placement for 'swap': instance: solution is for 'moves', not 'swap'",
        ),
        (
            ["plan", SWAP, "{tmp}/overlap.json"],
            "{tmp}/overlap.json: not a valid placement for 'swap': GPU 'g0': 'b' overlaps 'a'",
        ),
        (
            ["plan", SWAP, "{tmp}/start.json"],
            "{tmp}/start.json: not a valid placement for 'swap': placements[0].start: "
            "1 is not a legal start of 3g.20gb on A100-40GB (0, 4)",
        ),
        (
            ["plan", SWAP, SWAP_TARGET, "--semantics", "fast"],
            "--semantics: must be one of create-first, destroy-first, got 'fast'",
        ),
        (
            ["plan", SWAP, SWAP_TARGET, "--method", "best"],
            "--method: must be one of graph, exact, auto, got 'best'",
        ),
        (
            ["solve", SWAP, "--method", "ff", "--semantics", "fast", "--out", "{tmp}/sol.json"],
            "--semantics: must be one of create-first, destroy-first, got 'fast'",
        ),
    ],
    ids=[
        "missing-instance",
        "missing-target",
        "other-instance",
        "overlap",
        "illegal-start",
        "semantics",
        "method",
        "solve-semantics",
    ],
)
def test_bad_input_is_one_line_and_writes_nothing(
    argv: list, message: str, tmp_path: Path, capsys: Capsys
) -> None:
    _write(tmp_path / "overlap.json", _swap_target(a=("g0", 0), b=("g0", 0)))
    _write(tmp_path / "start.json", _swap_target(a=("g0", 1), b=("g0", 4)))
    before = sorted(p.name for p in tmp_path.iterdir())
    args = [str(a).replace("{tmp}", str(tmp_path)) for a in argv]
    if args[0] == "plan":
        args += ["--out", str(tmp_path / "plan.json"), "--png", str(tmp_path / "plan.png")]
    else:
        args += ["--plan", str(tmp_path / "plan.json")]
    code, out, err = run(capsys, *args)
    assert (code, out) == (2, "")
    assert err == f"mipopt: error: {message.replace('{tmp}', str(tmp_path))}\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_a_bad_time_limit_is_refused_while_parsing(tmp_path: Path, capsys: Capsys) -> None:
    out = tmp_path / "plan.json"
    with pytest.raises(SystemExit) as exit_:
        main(["plan", str(SWAP), str(SWAP_TARGET), "--time-limit", "0", "--out", str(out)])
    assert exit_.value.code == 2
    _, err = capsys.readouterr()
    assert (
        err.splitlines()[-1] == "mipopt plan: error: argument --time-limit: must be positive seconds, got 0"
    )
    assert not out.exists()


def test_a_target_that_drops_a_running_workload_is_refused(tmp_path: Path, capsys: Capsys) -> None:
    bad = _swap_target(a=("g0", 0))
    code, _, err = run(capsys, "plan", SWAP, _write(tmp_path / "t.json", bad), "--out", tmp_path / "p.json")
    assert code == 2
    assert err == (
        f"mipopt: error: {tmp_path / 't.json'}: not a valid placement for 'swap': "
        "workload 'b': running workloads must stay placed\n"
    )
    assert not (tmp_path / "p.json").exists()


def test_formats_md_shows_what_mipopt_prints(capsys: Capsys) -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "formats.md").read_text()
    section = text[text.index("## Plans") :]
    example = json.loads(re.search(r"```json\n(.*?)```", section, re.S)[1])
    code, out, _ = run(capsys, "plan", SWAP, SWAP_TARGET, "--json")
    printed = json.loads(out)
    assert code == 0 and example.pop("runtime_s") >= 0
    printed.pop("runtime_s")
    assert example == printed
    assert SWAP_OPS_CREATE_FIRST in section
