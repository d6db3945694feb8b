"""The configuration model: its enumeration, its three variants, and equal optima with the slot
and paper forms on both backends."""

from __future__ import annotations

from pathlib import Path

import pyomo.environ as pyo
import pytest
from factories import INSTANCES, instances, proven_triple
from hypothesis import HealthCheck, given, settings

from mipopt.catalog import get_model
from mipopt.exact.driver import solve_exact
from mipopt.exact.models.config import build_config
from mipopt.exact.preprocess.indexing import index_keeping, maximal_multisets
from mipopt.instance import Instance, Status, Termination
from mipopt.io import load_instance
from mipopt.solvers import SolverOptions, get_backend
from mipopt.verifier import solution_for, verify
from mipopt.workloads import ibm_instance

FILES = sorted(p for p in INSTANCES.glob("*.json") if not p.name.endswith(".target.json"))


def test_maximal_multisets_of_an_empty_a100() -> None:
    model = get_model("A100-80GB")
    every = maximal_multisets(model, None, range(len(model.profiles)))
    assert len(every) == 44  # of 127 non-empty indexable multisets
    names = [p.name for p in model.profiles]
    seven = [0] * len(names)
    seven[names.index("7g.80gb")] = 1
    assert tuple(seven) in every
    # only 1g.10gb and 3g.40gb in use: seven 1g; a 3g (4 slots at 0 or 4) and four 1g on the
    # other half (compute 3 + 4 = 7); two 3g (8 slots)
    used = [names.index("1g.10gb"), names.index("3g.40gb")]
    two = {(v[used[0]], v[used[1]]) for v in maximal_multisets(model, None, used)}
    assert two == {(7, 0), (4, 1), (0, 2)}


def test_maximal_multisets_around_a_pinned_instance() -> None:
    model = get_model("A100-80GB")
    p3 = [p.name for p in model.profiles].index("3g.40gb")
    p1 = [p.name for p in model.profiles].index("1g.10gb")
    got = maximal_multisets(model, {"pinned": (p3, 4)}, [p1, p3])
    assert {(v[p1], v[p3]) for v in got} == {(4, 0), (0, 1)}  # slots 0-3 free: four 1g or a 3g


def test_index_keeping_keeps_the_most_running_starts() -> None:
    model = get_model("A100-80GB")
    names = [p.name for p in model.profiles]
    one, three = names.index("1g.10gb"), names.index("3g.40gb")
    # a 1g at 1 and a new 3g: the 3g goes to 4, the 1g keeps its start
    assert index_keeping(model, None, [("a", one), ("b", three)], {"a": 1}) == {"a": 1, "b": 4}
    # 1g at 1 and at 5, and a 3g: one half must be cleared, so exactly one 1g moves
    home = {"a": 1, "c": 5}
    starts = index_keeping(model, None, [("a", one), ("c", one), ("b", three)], home)
    assert starts is not None and sum(starts[w] != s for w, s in home.items()) == 1
    # two 3g and a 1g need 9 slots: no indexing at all
    assert index_keeping(model, None, [("a", one), ("b", three), ("d", three)], {"a": 1}) is None


@pytest.mark.parametrize("mode", ["aggregate", "restricted", "detailed"])
def test_each_variant_decodes_to_a_verified_placement(mode: str) -> None:
    inst = ibm_instance(16, seed=3)
    built = build_config(inst, mode=mode)  # type: ignore[arg-type]
    built.model.o = pyo.Objective(expr=built.expression("acceptance"), sense=pyo.maximize)
    result = get_backend("highs").solve(built.model, SolverOptions(mip_rel_gap=0))
    assert result.termination is Termination.OPTIMAL
    placed = built.decode()
    sol = solution_for(inst, placed, method=mode, termination=Termination.OPTIMAL, status=Status.FEASIBLE)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert report.objectives.acceptance == pytest.approx(result.objective)
    if mode == "restricted":
        assert report.objectives.migrations == 0
    # the warm start of a placement reproduces it in the variant's variables
    assert built.warm_start(placed)


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_committed_instances_equal_optima_configuration_and_slots(path: Path, solver: str) -> None:
    inst = load_instance(path)
    assert proven_triple(inst, "grmu", solver) == proven_triple(inst, "grmu-slots", solver)


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.stem)
def test_committed_instances_equal_optima_configuration_and_paper(path: Path) -> None:
    inst = load_instance(path)
    if len(inst.gpus) > 4:
        pytest.skip("the paper form's ordering binaries grow too fast beyond four GPUs")
    assert proven_triple(inst, "grmu") == proven_triple(inst, "grmu-paper")


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_hosts=3, max_gpus=3, max_running_per_gpu=3, max_new=6))
def test_random_instances_equal_optima_configuration_and_slots(inst: Instance) -> None:
    assert proven_triple(inst, "grmu") == proven_triple(inst, "grmu-slots")


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_hosts=2, max_gpus=2, max_running_per_gpu=2, max_new=4))
def test_random_instances_equal_optima_on_cpsat_and_paper(inst: Instance) -> None:
    want = proven_triple(inst, "grmu")
    assert proven_triple(inst, "grmu", "cpsat") == want
    assert proven_triple(inst, "grmu-paper") == want


@pytest.mark.parametrize("use_case", ["initial", "compaction", "reconfiguration"])
def test_use_cases_equal_optima_configuration_and_slots(use_case: str) -> None:
    inst = ibm_instance(16, seed=5)
    a = solve_exact(inst, model="grmu", use_case=use_case)
    b = solve_exact(inst, model="grmu-slots", use_case=use_case)
    for sol in (a, b):
        assert verify(inst, sol).valid
        assert sol.status is Status.OPTIMAL
    assert a.objectives == b.objectives
