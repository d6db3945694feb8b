"""The method registry: one table, options checked, every method verified, the docs in sync."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from factories import ROOT

import mipopt
from mipopt.errors import InstanceError, ParameterTypeError, UnknownMethodError
from mipopt.heuristics.online import Decision, Policy
from mipopt.instance import Workload
from mipopt.registry import get_method, methods, methods_text
from mipopt.state.cluster import Cluster


def test_docs_hold_the_table() -> None:
    page = (ROOT / "docs" / "methods.md").read_text()
    (block,) = re.findall(r"^```\n(.*?)^```", page, re.S | re.M)
    assert block.rstrip("\n") == methods_text()


def test_names_are_unique_and_kinds_are_two() -> None:
    names = [m.name for m in methods()]
    assert len(names) == len(set(names)) == 2 + 5 + 15
    assert {m.kind for m in methods()} == {"exact", "heuristic"}
    assert "first-fit" not in names and "load-balanced" not in names  # the policies ff and lb


@pytest.mark.parametrize("name", [m.name for m in methods() if m.kind == "heuristic"] + ["adapter(mfi)"])
def test_every_heuristic_gives_a_verified_solution(name: str, fbk_fig3: mipopt.Instance) -> None:
    sol = mipopt.solve(fbk_fig3, name)
    assert mipopt.verify(fbk_fig3, sol).valid, name
    assert sol.status is mipopt.Status.FEASIBLE


@pytest.mark.parametrize(
    ("method", "options", "message"),
    [
        ("mfi", {"objective": "lex:acceptance"}, "objective: method mfi takes no objective (it takes: seed)"),
        ("ibm-joint", {"seed": 3}, "seed: method ibm-joint takes no seed (it takes: budget)"),
        (
            "exact",
            {"model": "wpm", "objective": "lex:acceptance"},
            "objective: method exact with model wpm takes no objective (it takes: model, use_case, "
            "warm_start, budget, solver, time_limit_s, threads, seed, gap)",
        ),
        ("exact-initial", {"use_case": "joint"}, "use_case: method exact-initial sets use_case itself"),
        (
            "exact:model=grmu-paper",
            {"model": "grmu"},
            "model: method exact:model=grmu-paper sets model itself",
        ),
        ("nope", {}, "method: unknown method 'nope' (known: exact, exact-initial, "),
        (
            "grmu:nope=1",
            {},
            "method: policy grmu has no option 'nope' (its options: heavy, defrag, consolidation, release)",
        ),
        (
            "exact:color=red",
            {},
            "method: method exact has no option 'color' in its name (its options there: model, objective, "
            "use_case, solver)",
        ),
        ("exact", {"model": "tight"}, "model: unknown model 'tight'"),
        ("exact", {"warm_start": "ff"}, "warm_start: expected a Solution, True or False, got str"),
    ],
)
def test_an_option_a_method_does_not_take_is_an_error(
    method: str, options: dict, message: str, fbk_fig3: mipopt.Instance
) -> None:
    with pytest.raises(InstanceError) as info:
        mipopt.solve(fbk_fig3, method, **options)
    assert str(info.value).startswith(message)


def test_options_in_the_name_are_the_options_of_the_call(fbk_fig3: mipopt.Instance) -> None:
    by_name = mipopt.solve(fbk_fig3, "exact:model=grmu-slots,objective=lex:acceptance,hardware")
    by_call = mipopt.solve(fbk_fig3, model="grmu-slots", objective="lex:acceptance,hardware")
    assert by_name.objectives == by_call.objectives
    assert by_name.method == by_call.method == "grmu-slots / highs, lex:acceptance,hardware"
    assert get_method("exact:model=wpm").takes({}) == get_method("exact").takes({"model": "wpm"})


def test_exact_initial_keeps_running_workloads_home(fbk_fig3: mipopt.Instance) -> None:
    sol = mipopt.solve(fbk_fig3, "exact-initial")
    assert (
        mipopt.verify(fbk_fig3, sol).metrics["moves_inter_gpu"]
        + mipopt.verify(fbk_fig3, sol).metrics["moves_inter_host"]
        == 0
    )
    assert sol.status is mipopt.Status.OPTIMAL


def test_a_given_warm_start_must_verify(fbk_fig3: mipopt.Instance) -> None:
    ff = mipopt.solve(fbk_fig3, "ff")
    assert mipopt.solve(fbk_fig3, warm_start=ff).objectives == mipopt.solve(fbk_fig3).objectives
    broken = ff.__class__(**{**{f: getattr(ff, f) for f in ff.__slots__}, "placements": ff.placements * 2})
    with pytest.raises(InstanceError, match=r"^warm_start: not a valid placement of fbk_fig3: "):
        mipopt.solve(fbk_fig3, warm_start=broken)


# --- arguments of the wrong type or value name the parameter


@pytest.mark.parametrize(
    ("method", "options", "kind", "message"),
    [
        (
            "exact",
            {"time_limit_s": "10"},
            ParameterTypeError,
            "time_limit_s: must be a number (seconds), got str '10'",
        ),
        ("exact", {"time_limit_s": 0}, InstanceError, "time_limit_s: must be positive, got 0"),
        ("exact", {"time_limit_s": float("nan")}, InstanceError, "time_limit_s: must be positive, got nan"),
        ("exact", {"threads": 2.5}, ParameterTypeError, "threads: must be an integer, got float 2.5"),
        ("exact", {"threads": True}, ParameterTypeError, "threads: must be an integer, got bool True"),
        ("exact", {"threads": 0}, InstanceError, "threads: must be >= 1, got 0"),
        ("exact", {"gap": 2}, InstanceError, "gap: must be in [0, 1), got 2"),
        ("exact", {"gap": float("nan")}, InstanceError, "gap: must be in [0, 1), got nan"),
        (
            "exact",
            {"gap": "0.1"},
            ParameterTypeError,
            "gap: must be a number (a relative gap), got str '0.1'",
        ),
        ("exact", {"seed": "x"}, ParameterTypeError, "seed: must be an integer, got str 'x'"),
        ("exact", {"seed": -1}, InstanceError, "seed: must be >= 0, got -1"),
        ("exact", {"seed": 2**31}, InstanceError, "seed: must be <= 2147483647, got 2147483648"),
        ("mfi", {"seed": "x"}, ParameterTypeError, "seed: must be an integer, got str 'x'"),
        ("ff", {"seed": 1.5}, ParameterTypeError, "seed: must be an integer, got float 1.5"),
    ],
)
def test_a_wrong_type_or_value_names_the_parameter(
    method: str, options: dict, kind: type[Exception], message: str, fig2b: mipopt.Instance
) -> None:
    with pytest.raises(InstanceError) as info:
        mipopt.solve(fig2b, method, **options)
    assert type(info.value) is kind
    assert str(info.value) == message
    assert isinstance(info.value, ValueError)
    assert isinstance(info.value, TypeError) is (kind is ParameterTypeError)


def test_numpy_numbers_are_numbers(fig2b: mipopt.Instance) -> None:
    import numpy as np

    by_numpy = mipopt.solve(fig2b, time_limit_s=np.float64(30), threads=np.int64(1), seed=np.int32(2))
    assert by_numpy.objectives == mipopt.solve(fig2b, time_limit_s=30, threads=1, seed=2).objectives


@pytest.mark.parametrize(
    ("instance", "message"),
    [
        (
            "x.json",
            "instance: must be an Instance, got the path 'x.json': read it with mipopt.load_instance('x.json')",
        ),
        (
            Path("instances/quickstart.json"),
            "instance: must be an Instance, got the path 'instances/quickstart.json': read it with "
            "mipopt.load_instance('instances/quickstart.json')",
        ),
        (None, "instance: must be an Instance (mipopt.load_instance reads one), got NoneType"),
    ],
)
def test_solve_takes_an_instance_and_says_how_to_read_a_path(instance: object, message: str) -> None:
    with pytest.raises(ParameterTypeError) as info:
        mipopt.solve(instance, "ff")  # type: ignore[arg-type]
    assert (str(info.value), info.value.path) == (message, "instance")


def test_a_method_is_a_name_or_a_policy(fig2b: mipopt.Instance) -> None:
    with pytest.raises(ParameterTypeError) as info:
        mipopt.solve(fig2b, None)  # type: ignore[arg-type]
    assert (
        str(info.value) == "method: must be a method name (mipopt.methods()) or a Policy, got NoneType None"
    )
    with pytest.raises(
        TypeError, match=r"^method: must be a method name \(mipopt.methods\(\)\) or a Policy, got int 3$"
    ):
        get_method(3)  # type: ignore[arg-type]


def test_an_unknown_method_is_a_value_error_naming_method(fig2b: mipopt.Instance) -> None:
    with pytest.raises(ValueError) as info:
        mipopt.solve(fig2b, "first-fit")
    assert type(info.value) is UnknownMethodError
    assert info.value.path == "method"
    assert str(info.value).startswith("method: unknown method 'first-fit' (known: exact, exact-initial, ")
    assert not isinstance(info.value, TypeError)


def test_an_unknown_method_on_the_command_line_is_one_line_and_exit_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    from mipopt.cli import main

    code = main(["solve", str(ROOT / "instances" / "grmu_fig2b.json"), "--method", "first-fit"])
    err = capsys.readouterr().err
    assert code == 2
    assert err.startswith("mipopt: error: --method: unknown method 'first-fit' (known: exact, ")
    assert err.count("\n") == 1


def test_threads_beyond_the_cores_are_capped_with_a_warning(
    fig2b: mipopt.Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    import mipopt.executors

    monkeypatch.setattr(mipopt.executors, "cpu_count", lambda: 2)
    with pytest.warns(UserWarning) as caught:
        sol = mipopt.solve(fig2b, threads=1000)
    assert [str(w.message) for w in caught] == ["threads: 1000 is more than this machine's 2 cores; using 2"]
    assert sol.status is mipopt.Status.OPTIMAL


# --- a Policy object as a method


class LastFit(Policy):
    """The last GPU where the workload fits, at its highest legal start."""

    name = "last-fit"

    def choose(self, cluster: Cluster, w: Workload, now: float) -> Decision:
        legal = cluster.legal(w)
        fits = [k for k, bits in enumerate(legal) if bits]
        return (fits[-1], int(legal[fits[-1]]).bit_length() - 1) if fits else None


class Unnamed(LastFit):
    name = ""


def test_a_policy_object_is_solved_in_batch(quickstart: mipopt.Instance) -> None:
    sol = mipopt.solve(quickstart, LastFit(), seed=3)
    assert mipopt.verify(quickstart, sol).valid
    assert (sol.method, sol.status, sol.objectives.acceptance) == (
        "last-fit (batch)",
        mipopt.Status.FEASIBLE,
        8.0,
    )
    assert sol.placed()["infer-e"] == ("h2-g0", 6)  # the last GPU, its highest start
    spec = get_method(Unnamed())
    assert (spec.name, spec.kind, spec.options, spec.moves) == ("Unnamed", "heuristic", ("seed",), False)
    with pytest.raises(
        InstanceError, match=r"^objective: method last-fit takes no objective \(it takes: seed\)$"
    ):
        mipopt.solve(quickstart, LastFit(), objective="lex:acceptance")


def test_a_made_policy_is_the_named_method(fig2b: mipopt.Instance) -> None:
    by_object = mipopt.solve(fig2b, mipopt.make_policy("mfi"))
    by_name = mipopt.solve(fig2b, "mfi")
    assert (by_object.placements, by_object.method) == (by_name.placements, by_name.method)
    grmu = get_method(mipopt.make_policy("grmu"))  # it may move running workloads: it holds a budget
    assert (grmu.moves, grmu.options) == (get_method("grmu").moves, get_method("grmu").options)
    assert (grmu.moves, grmu.options) == (True, ("seed", "budget"))
    held = mipopt.solve(fig2b, mipopt.make_policy("grmu"), max_restarts=0)
    assert held.placements == mipopt.solve(fig2b, "grmu", max_restarts=0).placements


# --- time for the rejection reasons (issue 24)


def test_a_time_limited_exact_solve_leaves_the_reasons_their_time(
    fig2b: mipopt.Instance, monkeypatch: pytest.MonkeyPatch
) -> None:
    import time

    import mipopt.exact.driver
    from mipopt.registry import EXPLAIN_S_PER_WORKLOAD

    seen: list[float | None] = []
    solve_exact = mipopt.exact.driver.solve_exact

    def spy(*args: object, **kw: Any) -> mipopt.Solution:
        seen.append(kw["options"].deadline)
        return solve_exact(*args, **kw)  # type: ignore[arg-type]

    monkeypatch.setattr(mipopt.exact.driver, "solve_exact", spy)
    reserve = EXPLAIN_S_PER_WORKLOAD * len(fig2b.workloads)
    before = time.monotonic()
    sol = mipopt.solve(fig2b, time_limit_s=30)
    after = time.monotonic()
    (deadline,) = seen
    assert deadline is not None and before + 30 - reserve <= deadline <= after + 30 - reserve
    assert sol.status is mipopt.Status.OPTIMAL
    # a caller's deadline earlier than the limit is the one moved
    seen.clear()
    mipopt.solve(fig2b, time_limit_s=30, deadline=before + 20)
    assert seen == [before + 20 - reserve]
    # no limit, no deadline: none is made up
    seen.clear()
    mipopt.solve(fig2b)
    assert seen == [None]
