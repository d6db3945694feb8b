"""The tight GRMU model against a brute-force oracle, and its class aggregation."""

from __future__ import annotations

import math
from itertools import product

import pyomo.environ as pyo
import pytest
from factories import instances
from hypothesis import HealthCheck, assume, given, settings

from mipopt.exact.driver import solve_exact
from mipopt.exact.models import build_slots
from mipopt.exact.preprocess import candidates
from mipopt.instance import Instance, InstanceBuilder, Status, Termination
from mipopt.verifier import evaluate, solution_for, verify

DONE, FEASIBLE = Termination.COMPLETED, Status.FEASIBLE


def _brute_force(inst: Instance) -> tuple[float, float, float]:
    """Lexicographic optimum (acceptance, hardware, migrations) over every valid placement."""
    cands = candidates(inst)
    movable = [w for w in inst.workloads if w.id in cands.workloads]
    options = [
        [(c.gpu, c.start) for c in cands.workloads[w.id]] + ([] if w.running else [None]) for w in movable
    ]
    pinned = {wid: at for wid, at in inst.current_placement().items() if wid not in cands.workloads}
    best: tuple[float, float, float] | None = None
    for choice in product(*options):
        placed = dict(pinned)
        placed.update({w.id: at for w, at in zip(movable, choice, strict=True) if at is not None})
        report = verify(
            inst, solution_for(inst, placed, method="brute force", termination=DONE, status=FEASIBLE)
        )
        if not report.valid:
            continue
        o = report.objectives
        key = (o.acceptance, -o.hardware, -o.migrations)
        if best is None or key > (best[0], -best[1], -best[2]):
            best = (o.acceptance, o.hardware, o.migrations)
    assert best is not None  # keeping everything where it is, rejecting the new ones, is valid
    return best


def _options(inst: Instance) -> int:
    cands = candidates(inst)
    return math.prod(len(c) + 1 for c in cands.workloads.values())


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much]
)
@given(instances(max_hosts=2, max_gpus=2, max_running_per_gpu=2, max_new=3))
def test_optimum_equals_brute_force(inst: Instance) -> None:
    assume(_options(inst) <= 3000)
    sol = solve_exact(inst)
    report = verify(inst, sol)
    assert report.valid, report.violations
    o = report.objectives
    assert (o.acceptance, o.hardware, o.migrations) == pytest.approx(_brute_force(inst))


def _violated(model: pyo.ConcreteModel) -> list[str]:
    bad = []
    for c in model.component_data_objects(pyo.Constraint, active=True):
        body = pyo.value(c.body)
        if (c.lower is not None and body < pyo.value(c.lower) - 1e-6) or (
            c.upper is not None and body > pyo.value(c.upper) + 1e-6
        ):
            bad.append(c.name)
    return bad


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances(max_hosts=3, max_gpus=3, max_new=6))
def test_warm_start_of_a_placement_is_feasible_and_prices_it(inst: Instance) -> None:
    """Encoding any valid placement gives a feasible point whose expressions equal the verifier's."""
    placed = solve_exact(inst, objective="lex:acceptance").placed()  # a valid placement with moves likely
    built = build_slots(inst)
    values = built.warm_start(placed)
    for var in built.model.component_data_objects(pyo.Var):
        var.set_value(values[var.name], skip_validation=True)
    assert _violated(built.model) == []
    o, _ = evaluate(inst, placed)
    assert pyo.value(built.expression("acceptance")) == pytest.approx(o.acceptance)
    assert pyo.value(built.expression("hardware")) == pytest.approx(o.hardware)
    assert pyo.value(built.expression("migrations")) == pytest.approx(o.migrations)
    decoded = built.decode()
    assert evaluate(inst, decoded)[0] == o


def _two_gpus_with(n_new: int) -> Instance:
    b = InstanceBuilder("many")
    b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"}, cpu=64)
    b.add_workload("r0", "3g.20gb", placement=("g0", 4), cpu=4)
    for i in range(n_new):
        b.add_workload(f"n{i}", "1g.5gb", cpu=4)
    return b.build()


def test_model_size_grows_with_classes_not_workloads() -> None:
    few, many = build_slots(_two_gpus_with(3)), build_slots(_two_gpus_with(60))
    assert few.stats["variables"] == many.stats["variables"]
    assert few.stats["shapes"] == 2  # the running 3g.20gb and the 1g.5gb class
    sol = solve_exact(_two_gpus_with(60))
    assert verify(_two_gpus_with(60), sol).valid
    # cpu 64 = 16 instances of 4; the 3g.20gb holds one: 14 slots of 1g.5gb are free across
    # both GPUs (g0: 0-3 as 4 x 1g, g1: 7 x 1g), so 11 of the 60 get in.
    assert sol.objectives is not None and sol.objectives.acceptance == 1 + 11


def test_weight_classes_of_one_shape_take_the_heavier_first() -> None:
    b = InstanceBuilder("weights")
    b.add_host("h0", {"g0": "A100-40GB"})
    for i, weight in enumerate((1.0, 1.0, 5.0)):
        b.add_workload(f"n{i}", "3g.20gb", weight=weight)
    inst = b.build()
    sol = solve_exact(inst)
    assert verify(inst, sol).valid
    assert sol.objectives is not None and sol.objectives.acceptance == 6
    assert "n2" in sol.placed()
    assert build_slots(inst).stats["shapes"] == 1


def _leave_for_a_7g(other_host: bool) -> Instance:
    """r0 sits where a 7g.40gb must go; its only other place is g1, on h0 or on h1."""
    b = InstanceBuilder("leave")
    if other_host:
        b.add_host("h0", {"g0": "A100-40GB"})
        b.add_host("h1", {"g1": "A100-40GB"})
    else:
        b.add_host("h0", {"g0": "A100-40GB", "g1": "A100-40GB"})
    b.add_workload("r0", "3g.20gb", placement=("g0", 0), migration_weight=1.5)
    b.add_workload("p0", "4g.20gb", placement=("g1", 0), pinned=True)
    b.add_workload("n0", "7g.40gb", weight=10)
    return b.build()


@pytest.mark.parametrize("solver", ["highs", "cpsat"])
@pytest.mark.parametrize(("other_host", "expected"), [(False, (12, 3, 3.0)), (True, (12, 4, 6.0))])
def test_a_leaver_costs_two_delta_on_its_host_and_four_off_it(
    other_host: bool, expected: tuple[float, float, float], solver: str
) -> None:
    inst = _leave_for_a_7g(other_host)
    sol = solve_exact(inst, solver=solver)
    report = verify(inst, sol)
    assert report.valid, report.violations
    o = report.objectives
    assert (o.acceptance, o.hardware, o.migrations) == expected
    assert sol.placed()["r0"] == ("g1", 4)
