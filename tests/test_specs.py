"""The one grammar of spec strings (mipopt.specs) and what methods, policies, workloads and
executors make of it: parsed results, one-line refusals, unknown options naming the valid ones,
a name meaning the same in solve and simulate, and the generated listings."""

from __future__ import annotations

from typing import Any

import pytest
from factories import INSTANCES
from hypothesis import given, settings
from hypothesis import strategies as st

import mipopt
from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.executors import ExecutorSpec, parse_executor
from mipopt.heuristics.policies import BATCH_ONLY, POLICIES, WRAPPERS, make_policy, policies_text
from mipopt.registry import get_method, methods
from mipopt.simulation.runs import make_trace
from mipopt.specs import Spec, bind_options, parse_options, parse_spec

Capsys = pytest.CaptureFixture[str]
FIG2B = str(INSTANCES / "grmu_fig2b.json")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("mfi", Spec("mfi")),
        ("  mfi  ", Spec("mfi")),
        ("grmu:heavy=0.3,release=false", Spec("grmu", {"heavy": "0.3", "release": "false"})),
        ("grmu: heavy = 0.3 ", Spec("grmu", {"heavy": "0.3"})),
        ("fbk:gpus-per-host=2", Spec("fbk", {"gpus_per_host": "2"})),
        ("adapter(ff)", Spec("adapter", inner=Spec("ff"))),
        (
            "adapter(ff:start=lowest):full=true",
            Spec("adapter", {"full": "true"}, Spec("ff", {"start": "lowest"})),
        ),
        ("adapter(adapter(mfi))", Spec("adapter", inner=Spec("adapter", inner=Spec("mfi")))),
        # a piece without key= continues the value before it
        ("exact:objective=lex:acceptance,hardware", Spec("exact", {"objective": "lex:acceptance,hardware"})),
        (
            "exact:model=grmu,objective=weighted:1,2,3,use_case=initial",
            Spec("exact", {"model": "grmu", "objective": "weighted:1,2,3", "use_case": "initial"}),
        ),
        # commas inside parentheses belong to the value
        (
            "reopt:base=adapter(ff:full=true),interval=5",
            Spec("reopt", {"base": "adapter(ff:full=true)", "interval": "5"}),
        ),
        ("alibaba:path=../data/a=b", Spec("alibaba", {"path": "../data/a=b"})),
        ("dask:address=10.0.0.5:8786", Spec("dask", {"address": "10.0.0.5:8786"})),
        ("ff:", Spec("ff")),
        ("ff:start=lowest,", Spec("ff", {"start": "lowest"})),
        ("grmu:,heavy=0.5,,release=off", Spec("grmu", {"heavy": "0.5", "release": "off"})),
        ("poisson:cluster=", Spec("poisson", {"cluster": ""})),
    ],
)
def test_a_spec_parses_to_its_parts(text: str, parsed: Spec) -> None:
    assert parse_spec(text) == parsed
    assert parse_spec(str(parsed)) == parsed  # the canonical text reads back the same


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "--policy: a spec starts with a name (letters, digits, -, _, .), got nothing"),
        (":x=1", "--policy: a spec starts with a name (letters, digits, -, _, .), got ':x=1'"),
        ("adapter(ff", "--policy: 'adapter(ff' opens a parenthesis it does not close"),
        ("ff)", "--policy: 'ff)' closes a parenthesis it did not open"),
        ("adapter(ff)x", "--policy: 'adapter(ff)x': expected ':' and options after 'adapter(ff)'"),
        ("grmu heavy", "--policy: 'grmu heavy': expected ':' and options after 'grmu'"),
        ("grmu:heavy", "--policy: option 'heavy' is not key=value"),
        ("grmu:=3", "--policy: option '=3' does not start with a name"),
        ("grmu:heavy=0.3,heavy=0.5", "--policy: option 'heavy' is given twice"),
        ("fbk:gpus-per-host=1,gpus_per_host=2", "--policy: option 'gpus_per_host' is given twice"),
        ("ff:x=nan", "--policy: option 'x' is nan, not a number"),
        ("ff:x=-NaN", "--policy: option 'x' is nan, not a number"),
        (
            "adapter(" * 5 + "ff" + ")" * 5,
            "--policy: adapter(...) nested 5 deep, more than the limit of 4 (docs/limits.md)",
        ),
        ("x" * 1001, "--policy: 1,001 characters, more than the limit of 1,000 (docs/limits.md): 'xxxx"),
    ],
)
def test_a_bad_spec_is_one_line(text: str, message: str) -> None:
    with pytest.raises(InstanceError) as err:
        parse_spec(text, "--policy")
    assert str(err.value).startswith(message) and "\n" not in str(err.value)
    if not text.startswith("x"):
        assert str(err.value) == message


def _target(
    flag: bool = True, count: int = 3, share: float | None = 0.5, name: str = "a", where: str | None = None
) -> None:
    """Options of every declared kind."""


@pytest.mark.parametrize(
    ("options", "bound"),
    [
        ("flag=off,count=4", {"flag": False, "count": 4}),
        ("flag=YES,count=1e3", {"flag": True, "count": 1000}),
        ("share=none,name=none", {"share": None, "name": "none"}),  # text stays text
        ("share=2,where=", {"share": 2.0, "where": None}),
        ("name=4", {"name": "4"}),
    ],
)
def test_options_take_the_declared_types(options: str, bound: dict[str, Any]) -> None:
    got = bind_options(parse_spec(f"t:{options}"), _target, "p", "thing")
    assert got == bound and [type(v) for v in got.values()] == [type(v) for v in bound.values()]


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ("flag=2", "p: option flag of thing t must be true or false, got '2'"),
        ("count=2.5", "p: option count of thing t must be an integer, got '2.5'"),
        ("count=none", "p: option count of thing t must be an integer, got 'none'"),
        ("share=half", "p: option share of thing t must be a number or none, got 'half'"),
        ("colour=red", "p: thing t has no option 'colour' (its options: flag, count, share, name, where)"),
    ],
)
def test_an_option_the_target_cannot_read_is_one_line(options: str, message: str) -> None:
    with pytest.raises(InstanceError) as err:
        bind_options(parse_spec(f"t:{options}"), _target, "p", "thing")
    assert str(err.value) == message


def test_parse_options_guesses_values() -> None:
    assert parse_options("gpus=4,load=0.9,requests=false,cluster=none,mix=skew-big", "w") == {
        "gpus": 4,
        "load": 0.9,
        "requests": False,
        "cluster": None,
        "mix": "skew-big",
    }


# --- an unknown option names the valid ones, for every kind of spec


@pytest.mark.parametrize(
    ("make", "spec", "message"),
    [
        (
            make_policy,
            "reopt:bogus=1",
            "policy: policy reopt has no option 'bogus' (its options: base, interval, "
            "on_reject, fragmentation, max_moves, time_limit, drains, budget_s, solver, gpus)",
        ),
        (make_policy, "mfi:heavy=0.3", "policy: policy mfi has no option 'heavy' (its options: none)"),
        (make_policy, "ff:begin=lowest", "policy: policy ff has no option 'begin' (its options: start)"),
        (
            make_policy,
            "adapter(ff):heavy=1",
            "policy: policy adapter has no option 'heavy' (its options: full)",
        ),
        (
            make_policy,
            "adapter(grmu:hevy=1)",
            "policy: policy grmu has no option 'hevy' (its options: heavy, defrag, consolidation, release)",
        ),
        (get_method, "reopt:bogus=1", "method: policy reopt has no option 'bogus' (its options: base, "),
        (
            get_method,
            "exact:colour=red",
            "method: method exact has no option 'colour' in its name (its options "
            "there: model, objective, use_case, solver)",
        ),
        (
            get_method,
            "exact-initial:use_case=joint",
            "method: method exact-initial sets use_case itself (use_case='initial')",
        ),
        (
            get_method,
            "ibm-joint:seed=1",
            "method: method ibm-joint takes no options in its name, got 'ibm-joint:seed=1'",
        ),
        (
            lambda s: make_trace(s, 0),
            "fbk:colour=red",
            "workload: workload fbk has no option 'colour' (its "
            "options: gpus, distribution, model, slots, gpus_per_host, lifetimes, ",
        ),
        (
            lambda s: make_trace(s, 0),
            "poisson:load=high",
            "workload: option load of workload poisson must be a number, got 'high'",
        ),
        (
            parse_executor,
            "local:threads=2",
            "executor: executor local has no option 'threads' (its options: workers)",
        ),
        (
            parse_executor,
            "serial:workers=2",
            "executor: executor serial has no option 'workers' (its options: none)",
        ),
        (
            parse_executor,
            "dask:workers=two",
            "executor: option workers of executor dask must be an integer or none, got 'two'",
        ),
    ],
)
def test_an_unknown_option_names_the_valid_ones(make: Any, spec: str, message: str) -> None:
    with pytest.raises(InstanceError) as err:
        make(spec)
    assert str(err.value).startswith(message) and "\n" not in str(err.value), str(err.value)


def test_a_bad_reopt_option_was_a_type_error_and_is_one_line_on_the_command(capsys: Capsys) -> None:
    assert main(["solve", FIG2B, "--method", "reopt:bogus=1"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err.startswith(
        "mipopt: error: --method: policy reopt has no option 'bogus' (its options:"
    )


@pytest.mark.parametrize(
    ("text", "spec"),
    [
        ("local:workers=4", ExecutorSpec("local", workers=4)),
        ("local:4", ExecutorSpec("local", workers=4)),
        ("dask:workers=2", ExecutorSpec("dask", workers=2)),
        ("dask:local:2", ExecutorSpec("dask", workers=2)),
        ("dask:address=10.0.0.5:8786", ExecutorSpec("dask", address="10.0.0.5:8786")),
        ("ray:address=head:10001", ExecutorSpec("ray", address="head:10001")),
    ],
)
def test_executors_take_options_and_their_short_forms(text: str, spec: ExecutorSpec) -> None:
    assert parse_executor(text) == spec


# --- a name means the same in solve and simulate


def test_every_policy_is_a_method_of_the_same_name() -> None:
    by_name = {m.name: m for m in methods()}
    for name in POLICIES:
        if name == "adapter":
            continue
        assert by_name[name].policy == name and make_policy(name).name == name
    assert set(BATCH_ONLY) == {m.name for m in methods() if m.policy is None} - {"ibm-initial"}


def test_ibm_initial_is_the_batch_rule_and_the_online_one_has_its_own_name(fig2b: mipopt.Instance) -> None:
    assert get_method("ibm-initial").policy is None  # IBM's batch rule, largest first
    online = mipopt.solve(fig2b, "ibm-initial-online")
    assert online.method == "ibm-initial-online (batch)" and mipopt.verify(fig2b, online).valid
    pointer = (
        "ibm-initial is IBM's batch rule (mipopt solve --method ibm-initial: largest new workload first); "
    )
    pointer += "the same rule per arrival is the policy ibm-initial-online"
    for refuse in (lambda: make_policy("ibm-initial"), lambda: get_method("adapter(ibm-initial)")):
        with pytest.raises(InstanceError) as err:
            refuse()
        assert err.value.rule == pointer


def test_simulate_takes_the_online_name_and_points_from_the_batch_one(capsys: Capsys) -> None:
    base = ["simulate", "--workload", "fbk:gpus=2,per_slot=1", "--executor", "serial", "--no-progress"]
    assert main([*base, "--policy", "ibm-initial-online", "--json"]) == 0
    capsys.readouterr()
    assert main([*base, "--policy", "ibm-initial"]) == 2
    out, err = capsys.readouterr()
    assert out == ""
    assert err == (
        "mipopt: error: --policy: ibm-initial is IBM's batch rule (mipopt solve --method ibm-initial: largest "
        "new workload first); the same rule per arrival is the policy ibm-initial-online\n"
    )
    assert main([*base, "--policy", "ibm-joint"]) == 2
    assert capsys.readouterr().err.startswith(
        "mipopt: error: --policy: ibm-joint is a batch method (mipopt solve --method ibm-joint), not an online policy"
    )


# --- the listings come from the tables


def test_list_methods_lists_every_policy_with_its_options(capsys: Capsys) -> None:
    assert main(["solve", "--list-methods"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    reopt = lines[[line.split(" ")[0] for line in lines].index("reopt") + 1]
    assert reopt.strip() == (
        "options: seed, budget; in the name: base=mfi, interval=none, on_reject=true, fragmentation=none, "
        "max_moves=16, time_limit=2.0, drains=false, budget_s=none, solver=highs, gpus=32 (or reopt(<policy>))"
    )
    for name in POLICIES:
        assert (f"{name}(<policy>)" if name == "adapter" else name) in {line.split(" ")[0] for line in lines}
    assert "in the name: start=default" in lines[[line.split(" ")[0] for line in lines].index("ff") + 1]


def test_simulate_help_lists_every_policy_with_its_options(capsys: Capsys) -> None:
    with pytest.raises(SystemExit):
        main(["simulate", "--help"])
    out = capsys.readouterr().out
    listed = out.split("and their options, with the defaults:\n", 1)[1]
    assert listed.rstrip("\n") == "\n".join("  " + line for line in policies_text().splitlines())
    names = [line.split()[0] for line in policies_text().splitlines() if not line.startswith(" ")]
    assert names == [f"{n}(<policy>)" if n in WRAPPERS else n for n in POLICIES]


# --- the canonical text of any spec reads back as the same spec

NAMES = st.from_regex(r"[a-z0-9][a-z0-9_.-]{0,8}", fullmatch=True)
KEYS = st.from_regex(r"[a-z_][a-z0-9_]{0,6}", fullmatch=True)
# values: no '(' or ')' (a value's parentheses must balance: tested above), commas only before a
# piece that is no key=value, never nan
VALUES = st.from_regex(r"[A-Za-z0-9./:+;@-]{0,8}(,[A-Za-z0-9./:+;@-]{1,5})?", fullmatch=True).filter(
    lambda v: v == v.strip() and not v.lower().lstrip("+-").startswith("nan")
)


@st.composite
def specs(draw: st.DrawFn, depth: int = 0) -> Spec:
    inner = draw(specs(depth + 1)) if depth < 4 and draw(st.booleans()) else None
    return Spec(draw(NAMES), draw(st.dictionaries(KEYS, VALUES, max_size=3)), inner)


@settings(max_examples=300, deadline=None)
@given(specs())
def test_the_text_of_a_spec_reads_back(spec: Spec) -> None:
    assert parse_spec(str(spec)) == spec
