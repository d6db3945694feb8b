"""Hostile names through every entry: none gets in, and no message prints one raw.

A name (an id, a model, a profile, a UUID) that holds an ANSI escape, a bidirectional override, a
NUL, a newline or a lone surrogate, or starts with ``-``, could rewrite a terminal, hide what a
line says, end a comment of an emitted script or pass for an option (``mipopt._fields.name_problem``).
Each such name is put, one at a time, in every field of every file the commands read (instance,
solution, ``kubectl`` JSON) and in every argument of the Python API that takes a name; each is
refused in one line naming the JSON path or the parameter, and the line printed shows the name
escaped, never raw.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from factories import INSTANCES, PROVEN_STAGE, ROOT

from mipopt.catalog import get_model
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder, instance_from_dict, solution_from_dict
from mipopt.migrate import load_plan, plan_from_dict

HOSTILE = {
    "ansi": "a\x1b[2Jb",
    "bidi": "txt\u202eexe.sh",
    "nul": "a\x00b",
    "newline": "a\ntouch pwned",
    "surrogate": "a\ud800b",
    "dash": "-oProxyCommand=sh",
}
#: What each refusal says of the value: the name rule, or (a surrogate) the reader's.
RULES = {
    "ansi": "must be one line of printable characters: 'a\\x1b[2Jb' has '\\x1b' at 1",
    "bidi": "must be one line of printable characters: 'txt\\u202eexe.sh' has '\\u202e' at 3",
    "nul": "must be one line of printable characters: 'a\\x00b' has '\\x00' at 1",
    "newline": "must be one line of printable characters: 'a\\ntouch pwned' has '\\n' at 1",
    "surrogate": "a lone surrogate '\\ud800' is not text (no UTF-8 output can carry it)",
    "dash": "must not start with '-': '-oProxyCommand=sh'",
}

QUICKSTART = INSTANCES / "quickstart.json"
HAND_SOLUTION = ROOT / "docs" / "examples" / "hand_solution.json"
KUBERNETES_NODES = ROOT / "tests" / "fixtures" / "kubernetes" / "handmade_nodes.json"

Capsys = pytest.CaptureFixture[str]
Edit = Callable[[dict[str, Any], str], None]


def _custom_model(doc: dict[str, Any], name: str) -> dict[str, Any]:
    """The A100-40GB as a custom model named ``name``, given to the first GPU."""
    from mipopt.catalog import builtin_models

    model = builtin_models()["A100-40GB"].to_dict() | {"model": name}
    doc["custom_gpu_models"] = [model]
    doc["hosts"][0]["gpus"][0]["model"] = name
    return model


def _set_profile_name(doc: dict[str, Any], name: str) -> None:
    _custom_model(doc, "MyA100")["profiles"][0]["name"] = name


def _set_alias(doc: dict[str, Any], name: str) -> None:
    _custom_model(doc, "MyA100")["profiles"][0]["aliases"] = [name]


#: Instance fields: (JSON path the error names, how to put the name there). A name that refers to
#: something (a GPU, a model) is refused as unknown, quoted; one that defines something by the rule.
INSTANCE_FIELDS: dict[str, tuple[str, Edit]] = {
    "name": ("name", lambda d, v: d.__setitem__("name", v)),
    "host-id": ("hosts[0].id", lambda d, v: d["hosts"][0].__setitem__("id", v)),
    "gpu-id": ("hosts[0].gpus[0].id", lambda d, v: d["hosts"][0]["gpus"][0].__setitem__("id", v)),
    "gpu-uuid": ("hosts[0].gpus[0].uuid", lambda d, v: d["hosts"][0]["gpus"][0].__setitem__("uuid", v)),
    "gpu-model": ("hosts[0].gpus[0].model", lambda d, v: d["hosts"][0]["gpus"][0].__setitem__("model", v)),
    "workload-id": ("workloads[0].id", lambda d, v: d["workloads"][0].__setitem__("id", v)),
    "profile": ("workloads[3].profile", lambda d, v: d["workloads"][3].__setitem__("profile", v)),
    "gpu-models": (
        "workloads[3].gpu_models[0]",
        lambda d, v: d["workloads"][3].__setitem__("gpu_models", [v]),
    ),
    "placement-gpu": (
        "workloads[0].placement.gpu",
        lambda d, v: d["workloads"][0]["placement"].__setitem__("gpu", v),
    ),
    "custom-model": ("custom_gpu_models[0].model", lambda d, v: _custom_model(d, v)),
    "custom-profile": ("custom_gpu_models[0].profiles[0].name", _set_profile_name),
    "custom-alias": ("custom_gpu_models[0].profiles[0].aliases[0]", _set_alias),
}

#: Solution fields, read by ``mipopt verify`` (and ``show``, ``plan``).
SOLUTION_FIELDS: dict[str, tuple[str, Edit]] = {
    "instance": ("instance", lambda d, v: d.__setitem__("instance", v)),
    "method": ("method", lambda d, v: d.__setitem__("method", v)),
    "placement-workload": (
        "placements[0].workload",
        lambda d, v: d["placements"][0].__setitem__("workload", v),
    ),
    "placement-gpu": ("placements[0].gpu", lambda d, v: d["placements"][0].__setitem__("gpu", v)),
    "rejected": ("rejected[0]", lambda d, v: d.__setitem__("rejected", [v])),
    "rejection-workload": (
        "rejections[0].workload",
        lambda d, v: d.__setitem__("rejections", [{"workload": v, "reason": "no-room", "message": "full"}]),
    ),
    "stage-objective": (
        "stages[0].objective",
        lambda d, v: d.__setitem__("stages", [PROVEN_STAGE | {"objective": v}]),
    ),
}


def _written(tmp_path: Path, source: Path, edit: Edit, value: str) -> Path:
    doc = json.loads(source.read_text())
    edit(doc, value)
    path = tmp_path / "hostile.json"
    path.write_text(json.dumps(doc))  # ensure_ascii: every hostile character written escaped
    return path


def _refused_in_one_line(capsys: Capsys, argv: list[str], prefix: str) -> str:
    """Run ``argv``: exit 2, nothing on stdout, one printable line on stderr starting ``prefix``."""
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out) == (2, "")
    assert err.startswith(f"mipopt: error: {prefix}") and err.endswith("\n"), err
    line = err[:-1]
    assert line.isprintable(), f"printed raw: {line!r}"  # no escape, override, NUL, newline
    return line


#: Every field of a file that holds a name: (its JSON path, how to put the name there, the file
#: it is put in, the commands that read it, each with the instance first when the file is a solution).
FILE_FIELDS: dict[str, tuple[str, Edit, Path, tuple[str, ...]]] = {
    **{
        f"instance-{k}": (path, edit, QUICKSTART, ("validate", "solve", "show", "partitions"))
        for k, (path, edit) in INSTANCE_FIELDS.items()
    },
    **{
        f"solution-{k}": (path, edit, HAND_SOLUTION, ("verify", "show", "plan"))
        for k, (path, edit) in SOLUTION_FIELDS.items()
    },
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
@pytest.mark.parametrize("field", sorted(FILE_FIELDS))
def test_file_fields_refuse_hostile_names(field: str, hostile: str, tmp_path: Path, capsys: Capsys) -> None:
    path, edit, source, commands = FILE_FIELDS[field]
    if (field, hostile) == ("instance-custom-model", "surrogate"):  # the reader meets the GPU's use first
        path = "hosts[0].gpus[0].model"
    file = _written(tmp_path, source, edit, HOSTILE[hostile])
    inputs = [str(QUICKSTART), str(file)] if source == HAND_SOLUTION else [str(file)]
    for command in commands:
        line = _refused_in_one_line(capsys, [command, *inputs], f"{file}: {path}: ")
        if field in ("instance-gpu-model", "instance-placement-gpu") and hostile != "surrogate":
            assert "unknown GPU" in line  # a reference to nothing: refused as such, quoted
        else:
            assert line.endswith(RULES[hostile]), line


def test_a_solution_metric_named_with_an_escape_is_refused_quoted(tmp_path: Path, capsys: Capsys) -> None:
    file = _written(tmp_path, HAND_SOLUTION, lambda d, v: d["metrics"].__setitem__(v, 1), HOSTILE["ansi"])
    line = _refused_in_one_line(capsys, ["verify", str(QUICKSTART), str(file)], f"{file}: ")
    assert line == f"mipopt: error: {file}: metrics['a\\x1b[2Jb']: {RULES['ansi']}"


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
def test_kubernetes_node_names_refused(hostile: str, tmp_path: Path, capsys: Capsys) -> None:
    doc = json.loads(KUBERNETES_NODES.read_text())
    doc["items"][0]["metadata"]["name"] = HOSTILE[hostile]
    file = tmp_path / "nodes.json"
    file.write_text(json.dumps(doc))
    line = _refused_in_one_line(
        capsys, ["import", "kubernetes", "--nodes", str(file)], f"{file}: items[0].metadata.name: "
    )
    assert line.endswith(RULES[hostile] if hostile == "surrogate" else f"a node name {RULES[hostile]}")


def test_a_hostile_file_name_is_printed_escaped(tmp_path: Path, capsys: Capsys) -> None:
    # the file's name is not the instance's: an instance without "name" is called "instance"
    file = tmp_path / "-x\x1b[2J.json"
    file.write_text("{")
    line = _refused_in_one_line(capsys, ["validate", str(file)], repr(str(file)))
    assert line.endswith("line 1 column 2: not valid JSON: Expecting property name enclosed in double quotes")
    doc = json.loads(QUICKSTART.read_text())
    del doc["name"]
    file.write_text(json.dumps(doc))
    assert main(["validate", str(file)]) == 0
    assert capsys.readouterr().out.startswith(f"{file}: valid instance 'instance'")


# --- plans: read by load_plan and plan_from_dict


def _plan_doc() -> dict[str, Any]:
    import mipopt

    inst = mipopt.load_instance(INSTANCES / "moves.json")
    return mipopt.plan_migration(inst, mipopt.load_solution(INSTANCES / "moves.target.json")).to_dict()


PLAN_FIELDS: dict[str, tuple[str, Edit]] = {
    "instance": ("instance", lambda d, v: d.__setitem__("instance", v)),
    "move-workload": (
        "rounds[0].moves[0].workload",
        lambda d, v: d["rounds"][0]["moves"][0].__setitem__("workload", v),
    ),
    "move-to-gpu": (
        "rounds[0].moves[0].to.gpu",
        lambda d, v: d["rounds"][0]["moves"][0]["to"].__setitem__("gpu", v),
    ),
    "final-gpu": ("final[0].gpu", lambda d, v: d["final"][0].__setitem__("gpu", v)),
    "disrupted": ("disrupted[0]", lambda d, v: d.__setitem__("disrupted", [v])),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
@pytest.mark.parametrize("field", sorted(PLAN_FIELDS))
def test_plan_fields_refuse_hostile_names(field: str, hostile: str, tmp_path: Path) -> None:
    path, edit = PLAN_FIELDS[field]
    doc = _plan_doc()
    assert doc["rounds"][0]["moves"], "the plan of moves.json moves in its first round"
    edit(doc, HOSTILE[hostile])
    file = tmp_path / "plan.json"
    file.write_text(json.dumps(doc))
    with pytest.raises(InstanceError) as err:
        load_plan(file)
    assert str(err.value) == f"{path}: {RULES[hostile]}"
    if hostile != "surrogate":  # from Python, a surrogate meets the name rule (json never made it)
        with pytest.raises(InstanceError) as err:
            plan_from_dict(doc)
        assert str(err.value) == f"{path}: {RULES[hostile]}"


# --- the Python API: the builder, Instance itself, the dict readers


def _builder() -> InstanceBuilder:
    b = InstanceBuilder("demo")
    b.add_host("h1", {"h1-g0": "A100-40GB"}, uuids={"h1-g0": "GPU-1"})
    b.add_workload("w1", "3g.20gb", placement=("h1-g0", 4))
    return b


def _with_custom_model(b: InstanceBuilder, v: str) -> None:
    b.add_host("h2", {"h2-g0": dataclasses.replace(get_model("A100-40GB"), name=v)})


#: Python calls: (what the error names, how to pass the name).
API: dict[str, tuple[str, Callable[[InstanceBuilder, str], None]]] = {
    "builder-name": ("name", lambda b, v: setattr(b, "name", v)),
    "host-id": ("hosts[1].id", lambda b, v: b.add_host(v, {"g9": "A100-40GB"})),
    "gpu-id": ("hosts[1].gpus[0].id", lambda b, v: b.add_host("h2", {v: "A100-40GB"})),
    "uuid": ("hosts[1].gpus[0].uuid", lambda b, v: b.add_host("h2", {"g9": "A100-40GB"}, uuids={"g9": v})),
    "workload-id": ("workloads[1].id", lambda b, v: b.add_workload(v, "1g.5gb")),
    "profile": ("workloads[1].profile", lambda b, v: b.add_workload("w2", v)),
    "gpu-models": ("workloads[1].gpu_models[0]", lambda b, v: b.add_workload("w2", "1g.5gb", gpu_models=[v])),
    "model-object": ("hosts[1].gpus[0].model", _with_custom_model),
}


@pytest.mark.parametrize("hostile", sorted(HOSTILE))
@pytest.mark.parametrize("entry", sorted(API))
def test_the_python_api_refuses_hostile_names(entry: str, hostile: str) -> None:
    path, call = API[entry]
    b = _builder()
    call(b, HOSTILE[hostile])
    with pytest.raises(InstanceError) as err:
        b.build()
    rule = RULES[hostile]
    if hostile == "surrogate":  # no JSON reader in between: the name rule refuses it
        rule = "must be one line of printable characters: 'a\\ud800b' has '\\ud800' at 1"
    assert str(err.value) == f"{path}: {rule}"


def test_instance_and_dict_readers_name_the_path() -> None:
    doc = json.loads(QUICKSTART.read_text())
    doc["workloads"][1]["id"] = HOSTILE["ansi"]
    with pytest.raises(InstanceError) as err:
        instance_from_dict(doc)
    assert str(err.value) == f"workloads[1].id: {RULES['ansi']}"
    inst = _builder().build()
    with pytest.raises(InstanceError) as err:
        Instance(HOSTILE["dash"], inst.hosts, inst.gpus, inst.workloads)
    assert str(err.value) == f"name: {RULES['dash']}"
    sol = json.loads(HAND_SOLUTION.read_text())
    sol["message"] = "done\x1b]0;pwned\x07"  # free text: lines allowed, escapes not
    with pytest.raises(InstanceError) as err:
        solution_from_dict(sol)
    assert str(err.value) == "message: must be printable text: 'done\\x1b]0;pwned\\x07' has '\\x1b' at 4"
    sol["message"] = "two\nlines"
    assert solution_from_dict(sol).message == "two\nlines"
