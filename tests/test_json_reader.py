"""The one reader of every JSON input (``mipopt.io.parse_json``) and the readers built on it.

What the reader refuses is checked value by value (each with the message naming where); then,
for every reader of a JSON document (instance, solution, plan, ``kubectl ... -o json``), a fuzz
test feeds it valid documents with one field mutated (a wrong type, a huge number, deep nesting, a
duplicate key, a lone surrogate, a hostile string) and raw bytes: each is read, or refused with an
:class:`~mipopt.errors.InstanceError` of one printable line, never another exception. Last, the
commands that read those files exit 2 with one line on stderr.
"""

from __future__ import annotations

import copy
import json
import tempfile
from collections.abc import Callable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from factories import INSTANCES, PROVEN_STAGE, ROOT
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.executors import parse_executor
from mipopt.instance import instance_from_dict, solution_from_dict
from mipopt.interop.kubernetes import instance_from_kubernetes
from mipopt.io import MAX_JSON_DEPTH, MAX_JSON_INTEGER, load_instance, parse_json, read_json
from mipopt.migrate import load_plan, plan_from_dict

KUBERNETES = ROOT / "tests" / "fixtures" / "kubernetes"
QUICKSTART = INSTANCES / "quickstart.json"

Capsys = pytest.CaptureFixture[str]


def refusal(read: Callable[[], object]) -> str:
    """The message of the InstanceError ``read`` raises."""
    with pytest.raises(InstanceError) as err:
        read()
    return str(err.value)


# --- what the reader refuses, and where it says it is

REFUSED: list[tuple[str, str | bytes, str]] = [
    (
        "duplicate-key",
        '{"workloads": [{"id": "w", "cpu": -5, "cpu": 64}]}',
        "workloads[0].cpu: duplicate key 'cpu' (JSON readers differ on which one counts)",
    ),
    (
        "duplicate-top-key",
        '{"a": 1, "a": 1}',
        "a: duplicate key 'a' (JSON readers differ on which one counts)",
    ),
    (
        "deep",
        "[" * 100_000 + "]" * 100_000,
        "line 1 column 101: nested deeper than 100 arrays and objects",
    ),
    (
        "deep-objects-on-line-2",
        '{"a":\n' + '{"a": ' * 200 + "1" + "}" * 201,
        "line 2 column 595: nested deeper than 100 arrays and objects",
    ),
    ("float-overflow", '{"w": [1, 1e400]}', "w[1]: 1e400 is beyond the range of a float (1.8e308)"),
    ("negative-overflow", '{"w": -1e400}', "w: -1e400 is beyond the range of a float (1.8e308)"),
    (
        "long-mantissa",
        '{"w": ' + "9" * 400 + ".5}",
        "w: 999999999999...999999.5 (402 chars) is beyond the range of a float (1.8e308)",
    ),
    (
        "big-integer",
        '{"n": 9223372036854775808}',
        "n: 9223372036854775808 is beyond the largest integer (9223372036854775807)",
    ),
    (
        "huge-integer",  # 5,000 digits: int() itself would refuse it with a ValueError
        '{"n": ' + "7" * 5000 + "}",
        "n: an integer of 5000 digits is beyond the largest integer (9223372036854775807)",
    ),
    ("nan", '{"a": {"cpu": NaN}}', "a.cpu: NaN is not valid JSON (a number must be finite)"),
    ("infinity", "[1, -Infinity]", "[1]: -Infinity is not valid JSON (a number must be finite)"),
    ("document-nan", "NaN", "(document): NaN is not valid JSON (a number must be finite)"),
    (
        "lone-surrogate",
        '{"hosts": [{"id": "h\\ud800"}]}',
        "hosts[0].id: a lone surrogate '\\ud800' is not text (no UTF-8 output can carry it)",
    ),
    (
        "lone-low-surrogate-key",
        '{"m": {"a\\udc00": 1}}',
        "m['a\\udc00']: a key with a lone surrogate '\\udc00' is not text (no UTF-8 output can carry it)",
    ),
    (
        "raw-surrogate-in-text",
        '{"id": "a\ud800"}',
        "line 1 column 10: a lone surrogate '\\ud800' is not text (no UTF-8 output can carry it)",
    ),
    ("latin-1", b'{"id":\n  "caf\xe9"}', "line 2 column 7: byte 0xe9 is not UTF-8 text"),
    (
        "utf-16",
        '{"a": 1}'.encode("utf-16"),
        "UTF-16 text (as Windows PowerShell writes with >): save it as UTF-8",
    ),
    ("syntax", '{"a": 1,\n "b": }', "line 2 column 7: not valid JSON: Expecting value"),
    (
        "duplicate-key-shown-escaped",
        '{"\\u001b[2J": 1, "\\u001b[2J": 2}',
        "['\\x1b[2J']: duplicate key '\\x1b[2J' (JSON readers differ on which one counts)",
    ),
]


@pytest.mark.parametrize(("text", "message"), [c[1:] for c in REFUSED], ids=[c[0] for c in REFUSED])
def test_the_reader_refuses_naming_where(text: str | bytes, message: str) -> None:
    assert refusal(lambda: parse_json(text)) == message
    assert refusal(lambda: parse_json(text, "f.json")) == f"f.json: {message}"


def nested(depth: int) -> list[Any]:
    """``depth`` lists, one in the other."""
    value: list[Any] = []
    for _ in range(depth - 1):
        value = [value]
    return value


ACCEPTED: list[tuple[str, str | bytes, Any]] = [
    ("at-the-depth-bound", "[" * MAX_JSON_DEPTH + "]" * MAX_JSON_DEPTH, nested(MAX_JSON_DEPTH)),
    ("brackets-in-strings", '["' + "[" * 500 + '", "\\"{{{"]', ["[" * 500, '"{{{']),
    ("largest-integers", f"[{MAX_JSON_INTEGER}, -{MAX_JSON_INTEGER}]", [MAX_JSON_INTEGER, -MAX_JSON_INTEGER]),
    ("largest-floats", "[1.7e308, -1e308, 1e-400, 0.000000000000000000001]", [1.7e308, -1e308, 0.0, 1e-21]),
    (
        "long-digits-in-a-string",
        '{"uuid": "12345678901234567890123e999"}',
        {"uuid": "12345678901234567890123e999"},
    ),
    ("surrogate-pair", '{"name": "\\ud83d\\ude00"}', {"name": "\U0001f600"}),
    ("utf-8-bom", "\ufeff{}".encode(), {}),
    ("same-key-in-two-objects", '[{"a": 1}, {"a": 2}]', [{"a": 1}, {"a": 2}]),
]


@pytest.mark.parametrize(("text", "value"), [c[1:] for c in ACCEPTED], ids=[c[0] for c in ACCEPTED])
def test_the_reader_accepts_valid_json(text: str | bytes, value: Any) -> None:
    assert parse_json(text) == value


@pytest.mark.parametrize("depth", [MAX_JSON_DEPTH, MAX_JSON_DEPTH + 1])
def test_brackets_quotes_and_backslashes_in_strings_do_not_count(depth: int) -> None:
    # strings that close brackets, hold escaped quotes and backslashes, beside each level
    value: Any = []
    for _ in range(depth - 2):  # each level a list; the innermost's dict and its list: 2 more
        value = ['\\"]]}', value, {'k["\\': "}}", "\\": ['"']}]
    text = json.dumps(value)
    if depth <= MAX_JSON_DEPTH:
        assert parse_json(text) == value
    else:
        assert "nested deeper than 100 arrays and objects" in refusal(lambda: parse_json(text))


def test_escaped_quotes_by_the_hundred_thousand_are_one_pass() -> None:
    # each quote once started a scan to the end of the text: quadratic, minutes for this one
    text = "[" * (MAX_JSON_DEPTH + 1) + '"' + '\\"' * 100_000
    assert refusal(lambda: parse_json(text)) == "line 1 column 101: nested deeper than 100 arrays and objects"


def test_read_json_and_load_instance_use_the_reader(tmp_path: Path) -> None:
    path = tmp_path / "dup.json"
    data = json.loads(QUICKSTART.read_text())
    path.write_text(json.dumps(data).replace('"cpu": 16', '"cpu": -5, "cpu": 16', 1))
    message = "workloads[0].cpu: duplicate key 'cpu' (JSON readers differ on which one counts)"
    assert refusal(lambda: read_json(path)) == message
    assert refusal(lambda: load_instance(path)) == message


# --- fuzz: valid documents with one field mutated, and raw bytes

SENTINEL = "\x00mutant\x00"
SENTINEL_KEY = "\x00duplicate\x00"

#: Mutations written as JSON text: what json.dumps cannot write.
RAW = [
    "1e400",
    "-1e400",
    "NaN",
    "Infinity",
    "123456789012345678901234567890",
    "7" * 5000,
    '"\\ud800"',
    '"a\\udc00b"',
    "[" * 5000 + "]" * 5000,
    '{"a": ' * 150 + "1" + "}" * 150,
    '"\\u001b[2J\\u202e\\u0000"',
]
#: Mutations as values: wrong types, extremes, hostile strings.
VALUES: list[Any] = [
    {},
    [],
    None,
    True,
    "",
    "x",
    0,
    -1,
    0.5,
    1.7e308,
    -1.7e308,
    2**63 - 1,
    [1, 2],
    {"a": 1},
    "\x1b[2J",
    "a\u202eb",
    "a\nb",
    "-rf",
    "a" * 10_000,
]


def _paths(value: Any, path: tuple[str | int, ...] = ()) -> Iterator[tuple[str | int, ...]]:
    yield path
    if isinstance(value, dict):
        for key, item in value.items():
            yield from _paths(item, (*path, key))
    elif isinstance(value, list):
        for i, item in enumerate(value):
            yield from _paths(item, (*path, i))


def _at(doc: Any, path: tuple[str | int, ...]) -> Any:
    for key in path:
        doc = doc[key]
    return doc


def _replaced(doc: Any, path: tuple[str | int, ...], value: Any) -> Any:
    """A copy of ``doc`` with ``value`` at ``path`` (``doc`` itself stays as it is: it is shared)."""
    if not path:
        return value
    out = copy.deepcopy(doc)
    _at(out, path[:-1])[path[-1]] = value
    return out


@st.composite
def mutated(draw: st.DrawFn, docs: list[Any]) -> bytes:
    """One of ``docs`` as JSON bytes, one field mutated (or a few bytes of it replaced)."""
    doc = draw(st.sampled_from(docs))
    paths = list(_paths(doc))
    path = draw(st.sampled_from(paths))
    kind = draw(st.sampled_from(["value", "raw", "duplicate", "drop", "bytes"]))
    if kind == "value":
        return json.dumps(_replaced(doc, path, draw(st.sampled_from(VALUES)))).encode()
    if kind == "raw":
        text = json.dumps(_replaced(doc, path, SENTINEL))
        return text.replace(json.dumps(SENTINEL), draw(st.sampled_from(RAW))).encode()
    target = _at(doc, path)
    if kind == "duplicate" and isinstance(target, dict) and target:
        key = draw(st.sampled_from(sorted(target)))
        text = json.dumps(_replaced(doc, path, {SENTINEL_KEY: draw(st.sampled_from(VALUES)), **target}))
        return text.replace(json.dumps(SENTINEL_KEY), json.dumps(key)).encode()
    if kind == "drop" and path:
        parent = copy.deepcopy(_at(doc, path[:-1]))
        del parent[path[-1]]
        return json.dumps(_replaced(doc, path[:-1], parent)).encode()
    data = json.dumps(doc).encode()
    at = draw(st.integers(0, len(data)))
    cut = draw(st.integers(0, 8))
    return data[:at] + draw(st.binary(max_size=8)) + data[at + cut :]


def check_one_line(read: Callable[[bytes], object], data: bytes) -> None:
    """``read(data)`` returns, or refuses in one printable line; any other exception fails."""
    try:
        read(data)
    except InstanceError as err:
        message = str(err)
        assert message and message.isprintable(), message  # one line: no newline, no escape raw


FUZZ = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@cache
def instance_docs() -> list[Any]:
    return [json.loads(p.read_text()) for p in sorted(INSTANCES.glob("*.json")) if ".target" not in p.name]


@cache
def solution_docs() -> list[Any]:
    """The committed solutions, and one with every field a method writes."""
    docs = [json.loads(p.read_text()) for p in sorted(INSTANCES.glob("*.target.json"))]
    docs.append(json.loads((ROOT / "docs" / "examples" / "hand_solution.json").read_text()))
    full = copy.deepcopy(docs[-1]) | {
        "method": "grmu / highs",
        "termination": "optimal",
        "status": "optimal",
        "runtime_s": 0.5,
        "bound": 8.0,
        "gap": 0.0,
        "rejected": ["llm-f"],
        "message": "",
        "stages": [PROVEN_STAGE],
        "rejections": [{"workload": "llm-f", "reason": "no-room", "message": "no legal start is free"}],
    }
    return [*docs, full]


@cache
def plan_docs() -> list[Any]:
    import mipopt

    plans = []
    for name in ("moves", "swap"):
        inst = mipopt.load_instance(INSTANCES / f"{name}.json")
        target = mipopt.load_solution(INSTANCES / f"{name}.target.json")
        plans.append(mipopt.plan_migration(inst, target).to_dict())
    return plans


def _instance(data: bytes) -> object:
    return instance_from_dict(parse_json(data))


def _solution(data: bytes) -> object:
    return solution_from_dict(parse_json(data))


def _plan(data: bytes) -> object:
    return plan_from_dict(parse_json(data))


@FUZZ
@given(st.one_of(mutated(instance_docs()), st.binary(max_size=300)))
def test_fuzz_instance_reader(data: bytes) -> None:
    check_one_line(_instance, data)


@FUZZ
@given(st.one_of(mutated(solution_docs()), st.binary(max_size=300)))
def test_fuzz_solution_reader(data: bytes) -> None:
    check_one_line(_solution, data)


@FUZZ
@given(st.one_of(mutated(plan_docs()), st.binary(max_size=300)))
def test_fuzz_plan_reader(data: bytes) -> None:
    check_one_line(_plan, data)


@cache
def kubernetes_docs() -> tuple[Any, Any]:
    return tuple(json.loads((KUBERNETES / f"handmade_{kind}.json").read_text()) for kind in ("nodes", "pods"))


@FUZZ
@given(
    which=st.sampled_from(["nodes", "pods"]),
    data=st.one_of(mutated([kubernetes_docs()[0]]), mutated([kubernetes_docs()[1]]), st.binary(max_size=300)),
)
def test_fuzz_kubernetes_reader(which: str, data: bytes) -> None:
    nodes, pods = (json.dumps(d).encode() for d in kubernetes_docs())
    with tempfile.TemporaryDirectory() as tmp:
        files = {"nodes": Path(tmp, "nodes.json"), "pods": Path(tmp, "pods.json")}
        files["nodes"].write_bytes(data if which == "nodes" else nodes)
        files["pods"].write_bytes(data if which == "pods" else pods)
        check_one_line(lambda _: instance_from_kubernetes(files["nodes"], files["pods"]), data)


@FUZZ
@given(
    st.one_of(
        st.text(max_size=40),
        st.builds(
            "".join,
            st.lists(
                st.sampled_from(
                    ["local", "serial", "dask", "ray", ":", "//", "local:", "8", "-1", "1e9", "\x1b", "h:1"]
                ),
                max_size=5,
            ),
        ),
    )
)
def test_fuzz_executor_spec(spec: str) -> None:
    check_one_line(lambda _: parse_executor(spec), spec.encode("utf-8", "surrogatepass"))


def test_load_plan_reads_what_save_writes_and_refuses_a_deep_file(tmp_path: Path) -> None:
    import mipopt

    inst = mipopt.load_instance(INSTANCES / "swap.json")
    plan = mipopt.plan_migration(inst, mipopt.load_solution(INSTANCES / "swap.target.json"))
    plan.save(tmp_path / "plan.json")
    assert load_plan(tmp_path / "plan.json") == plan
    (tmp_path / "deep.json").write_text("[" * 5000 + "]" * 5000)
    assert refusal(lambda: load_plan(tmp_path / "deep.json")) == (
        "line 1 column 101: nested deeper than 100 arrays and objects"
    )


# --- the commands: exit 2, one line on stderr, nothing on stdout

#: A valid document's text made bad, and what the command says of it.
BAD_FILES: dict[str, tuple[Callable[[str], str], str]] = {
    "deep": (
        lambda text: "[" * 100_000 + "]" * 100_000,
        "line 1 column 101: nested deeper than 100 arrays and objects",
    ),
    "duplicate": (
        lambda text: text.replace("{", '{"dup": 1, "dup": 2, ', 1),
        "dup: duplicate key 'dup' (JSON readers differ on which one counts)",
    ),
    "overflow": (
        lambda text: text.replace("{", '{"x": 1e400, ', 1),
        "x: 1e400 is beyond the range of a float (1.8e308)",
    ),
}


def _bad_file(tmp_path: Path, kind: str, source: Path) -> Path:
    path = tmp_path / f"{kind}.json"
    path.write_text(BAD_FILES[kind][0](json.dumps(json.loads(source.read_text()))))
    return path


@pytest.mark.parametrize("kind", sorted(BAD_FILES))
@pytest.mark.parametrize("command", ["validate", "solve", "show", "partitions", "verify", "plan", "import"])
def test_commands_refuse_bad_json_in_one_line(
    command: str, kind: str, tmp_path: Path, capsys: Capsys
) -> None:
    target = INSTANCES / "quickstart.json"
    solution = ROOT / "docs" / "examples" / "hand_solution.json"
    if command in ("verify", "plan"):  # the solution is the bad file
        bad = _bad_file(tmp_path, kind, solution)
        argv = [command, str(target), str(bad)]
    elif command == "import":
        bad = _bad_file(tmp_path, kind, KUBERNETES / "handmade_nodes.json")
        argv = ["import", "kubernetes", "--nodes", str(bad)]
    else:
        bad = _bad_file(tmp_path, kind, target)
        argv = [command, str(bad)]
    code = main(argv)
    out, err = capsys.readouterr()
    assert (code, out, err) == (2, "", f"mipopt: error: {bad}: {BAD_FILES[kind][1]}\n")


def test_a_refusal_crosses_a_process_boundary_as_itself() -> None:
    # executors run readers in worker processes: the error must unpickle as what it was
    import pickle

    from mipopt.errors import ParameterTypeError

    err = pickle.loads(pickle.dumps(InstanceError("workloads[0].cpu", "duplicate key 'cpu'")))
    assert (type(err), err.path, err.rule, str(err)) == (
        InstanceError,
        "workloads[0].cpu",
        "duplicate key 'cpu'",
        "workloads[0].cpu: duplicate key 'cpu'",
    )
    assert (
        type(pickle.loads(pickle.dumps(ParameterTypeError("threads", "must be an integer"))))
        is ParameterTypeError
    )
