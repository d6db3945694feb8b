"""The method registry: one table, options checked, every method verified, the docs in sync."""

from __future__ import annotations

import re

import pytest
from factories import ROOT

import mipopt
from mipopt.errors import InstanceError
from mipopt.registry import get_method, methods, methods_text


def test_docs_hold_the_table() -> None:
    page = (ROOT / "docs" / "methods.md").read_text()
    (block,) = re.findall(r"^```\n(.*?)^```", page, re.S | re.M)
    assert block.rstrip("\n") == methods_text()


def test_names_are_unique_and_kinds_are_two() -> None:
    names = [m.name for m in methods()]
    assert len(names) == len(set(names)) == 2 + 5 + 13
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
            "warm_start, solver, time_limit_s, threads, seed, gap)",
        ),
        ("exact-initial", {"use_case": "joint"}, "use_case: method exact-initial sets use_case itself"),
        (
            "exact:model=grmu-paper",
            {"model": "grmu"},
            "model: method exact:model=grmu-paper sets model itself",
        ),
        ("nope", {}, "method: unknown method 'nope' (known: exact, exact-initial, "),
        ("grmu:nope=1", {}, "method: policy 'grmu:nope=1'"),
        ("exact:color=red", {}, "method: exact takes model, objective, use_case or solver in its name"),
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
