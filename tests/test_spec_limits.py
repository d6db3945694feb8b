"""Method, policy, workload and objective specs: hostile ones refused in one line, and a fuzz test
of each parser (a valid parse, or an :class:`~mipopt.errors.InstanceError` of one short line,
never another exception: ``adapter(`` nested 2,000 deep was a RecursionError)."""

from __future__ import annotations

import math

import pytest
from factories import INSTANCES
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt._fields import parse_options
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.exact.driver import MAX_WEIGHT, parse_objective
from mipopt.heuristics.policies import MAX_ADAPTER_DEPTH, make_policy, policy_names
from mipopt.limits import MAX_SPEC_CHARS
from mipopt.registry import MethodSpec, get_method, methods

Capsys = pytest.CaptureFixture[str]
INSTANCE = str(INSTANCES / "grmu_fig2b.json")
DEEP = "adapter(" * 2000 + "ff" + ")" * 2000


def refusal(parse: object, *args: object) -> str:
    with pytest.raises(InstanceError) as err:
        parse(*args)  # type: ignore[operator]
    return str(err.value)


@pytest.mark.parametrize(
    ("parse", "spec", "message"),
    [
        (
            get_method,
            DEEP,
            f"method: 18,002 characters, more than the limit of {MAX_SPEC_CHARS:,} (docs/limits.md): ",
        ),
        (
            get_method,
            "adapter(" * 2000,
            "method: 16,000 characters, more than the limit of 1,000 (docs/limits.md): ",
        ),
        (make_policy, DEEP, "policy: 18,002 characters, more than the limit of 1,000 (docs/limits.md): "),
        (
            get_method,
            "adapter(" * 5 + "ff" + ")" * 5,
            f"method: adapter(...) nested 5 deep, more than the limit of {MAX_ADAPTER_DEPTH} (docs/limits.md)",
        ),
        (make_policy, "grmu:heavy=0.3,heavy=0.5", "policy: option 'heavy' is given twice"),
        (  # found by the fuzz test below: a TypeError until now
            make_policy,
            "adapter(ff):heavy=0.3",
            "policy: policy adapter has no option 'heavy' (its options: full)",
        ),
        (get_method, "grmu:heavy=0.3,heavy=0.5", "method: option 'heavy' is given twice"),
        (get_method, "ff:x=nan", "method: option 'x' is nan, not a number"),
        (get_method, "exact:model=wpm,model=grmu", "method: option 'model' is given twice"),
        (parse_options, "gpus=4,gpus=8", "workload: option 'gpus' is given twice"),
        (parse_options, "gpus-per-host=1,gpus_per_host=2", "workload: option 'gpus_per_host' is given twice"),
        (parse_objective, "weighted:nan,1,1", "objective: the weight of acceptance, 'nan', is not a number"),
        (
            parse_objective,
            "weighted:1e308,1,1",
            "objective: the weight of acceptance, '1e308', is more than the limit of 1e+09 (docs/limits.md): "
            "the weighted objective could overflow, or the smaller weights vanish in the solver's tolerances",
        ),
        (
            parse_objective,
            "weighted:1,inf",
            "objective: the weight of hardware, 'inf', is more than the limit",
        ),
        (parse_objective, "weighted:1,-1", "objective: the weight of hardware, '-1', is negative"),
        (
            parse_objective,
            "lex:acceptance@nan",
            "objective: tolerance of acceptance must be in [0, 1), got nan",
        ),
        (parse_objective, "x" * 10_000, "objective: must start with lex: or weighted:, or be a priority"),
    ],
    ids=lambda v: v[:30] if isinstance(v, str) else getattr(v, "__name__", ""),
)
def test_refused_in_one_line(parse: object, spec: str, message: str) -> None:
    got = refusal(parse, spec, "workload") if parse is parse_options else refusal(parse, spec)
    assert got.startswith(message) and "\n" not in got and len(got) < 500


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["solve", INSTANCE, "--method", DEEP], "--method: 18,002 characters, more than the limit of 1,000"),
        (
            ["solve", INSTANCE, "--method", "grmu:heavy=0.3,heavy=0.5"],
            "--method: option 'heavy' is given twice",
        ),
        (
            ["solve", INSTANCE, "--objective", "weighted:nan,1,1"],
            "--objective: the weight of acceptance, 'nan', is",
        ),
        (
            ["solve", INSTANCE, "--objective", "weighted:1e308,1,1"],
            "--objective: the weight of acceptance, '1e308'",
        ),
        (
            ["simulate", "--workload", "fbk:gpus=4,gpus=8", "--policy", "ff"],
            "--workload: option 'gpus' is given twice",
        ),
        (
            ["simulate", "--workload", "fbk:gpus=4", "--policy", DEEP],
            "--policy: 18,002 characters, more than",
        ),
    ],
    ids=[
        "deep-method",
        "duplicate-option",
        "nan-weight",
        "huge-weight",
        "duplicate-workload-option",
        "deep-policy",
    ],
)
def test_the_command_exits_2_in_one_line(capsys: Capsys, argv: list[str], message: str) -> None:
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1 and err.startswith(f"mipopt: error: {message}"), err[:300]


def test_adapters_nested_within_the_limit_still_work() -> None:
    spec = "adapter(" * MAX_ADAPTER_DEPTH + "ff" + ")" * MAX_ADAPTER_DEPTH
    assert get_method(spec).name == spec and make_policy(spec).name == spec


# --- fuzz

NAMES = st.sampled_from([*(m.name for m in methods()), *policy_names(), "adapter", "exact", "nope", ""])
KEYS = st.sampled_from(
    ["heavy", "model", "objective", "use_case", "solver", "seed", "x", "gpus", "gpus-per-host", ""]
)
VALUES = st.one_of(
    st.sampled_from(
        ["0.3", "nan", "inf", "-1", "1e308", "wpm", "grmu", "lex:acceptance", "", "9" * 5000, "true"]
    ),
    st.text(max_size=20),
)
OPTIONS = st.lists(st.builds(lambda k, v: f"{k}={v}", KEYS, VALUES) | st.text(max_size=10), max_size=4).map(
    ",".join
)


@st.composite
def method_specs(draw: st.DrawFn) -> str:
    spec = draw(NAMES)
    if draw(st.booleans()):
        spec += ":" + draw(OPTIONS)
    for _ in range(draw(st.integers(min_value=0, max_value=7))):
        spec = f"adapter({spec})" + (":" + draw(OPTIONS) if draw(st.booleans()) else "")
    return draw(st.sampled_from([spec, spec[: len(spec) // 2], spec + ")", "(" + spec]))


def one_line(err: InstanceError) -> bool:
    return "\n" not in str(err) and len(str(err)) < 1000


@settings(max_examples=300, deadline=None)
@given(st.one_of(method_specs(), st.text(max_size=40)))
def test_a_method_spec_is_a_method_or_one_line_of_error(spec: str) -> None:
    try:
        assert isinstance(get_method(spec), MethodSpec)
    except InstanceError as err:
        assert one_line(err), str(err)[:300]
    try:
        make_policy(spec)
    except InstanceError as err:
        assert one_line(err), str(err)[:300]


@settings(max_examples=300, deadline=None)
@given(st.one_of(OPTIONS, st.text(max_size=40)))
def test_options_parse_to_unique_keys_without_nan_or_one_line_of_error(text: str) -> None:
    try:
        options = parse_options(text, "workload")
    except InstanceError as err:
        assert one_line(err)
        return
    # a piece without a key= continues the value before it (objective=lex:acceptance,hardware);
    # keys are ASCII identifiers (mipopt.specs), so "À=" continues a value too
    pieces = [item.partition("=") for item in text.split(",")]
    names = [k.strip().replace("-", "_") for k, sep, _ in pieces if sep]
    keys = [k for k in names if k.isascii() and k.isidentifier()]
    assert len(keys) == len(set(keys)) == len(options)  # each once
    assert all(v == v for v in options.values())  # no nan


WEIGHTS = st.one_of(
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.sampled_from(["1e308", "1.7e308", "nan", "-0", "1e9", "1000000001", "", "x", "9" * 400]),
)


@settings(max_examples=300, deadline=None)
@given(
    st.one_of(
        st.lists(WEIGHTS, max_size=6).map(lambda ws: "weighted:" + ",".join(ws)),
        st.lists(
            st.builds(
                lambda n, t: n + t,
                st.sampled_from(["acceptance", "hardware", "migrations", "restarts", "intra_moves", "x"]),
                st.sampled_from(["", "@0.05", "@nan", "@1", "@-0.1", "@x", "@1e400"]),
            ),
            max_size=5,
        ).map(lambda items: "lex:" + ",".join(items)),
        st.sampled_from(["hardware", "disruption", "paper"]),
        st.text(max_size=40),
    )
)
def test_an_objective_is_parsed_within_its_bounds_or_one_line_of_error(text: str) -> None:
    try:
        spec = parse_objective(text)
    except InstanceError as err:
        assert one_line(err), str(err)[:300]
        return
    if spec.mode == "weighted":
        assert all(math.isfinite(w) and 0 <= w <= MAX_WEIGHT for w in spec.values)
    else:
        assert all(0 <= t < 1 for t in spec.values) and len(set(spec.names)) == len(spec.names)
