"""The two compilers of a Pyomo model into arrays agree: numpy's (mipopt's) and Pyomo's (scipy).

Each real model (every committed instance, every formulation, every objective) and a hand-made
model with the corner cases (fixed variables, ranged, equality and one-sided rows, a constant in
the objective, no constraints) is compiled both ways; the forms must be equal up to the order of
rows and columns, and HiGHS must find the same optimum on either.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable

import numpy as np
import pyomo.environ as pyo
import pytest
from factories import INSTANCES, ROOT

import mipopt
from mipopt.exact import models
from mipopt.exact.models.config import build_config
from mipopt.exact.models.grmu_slots import SENSE
from mipopt.solvers import HighsBackend
from mipopt.solvers import highs as highs_module
from mipopt.solvers.matrix import CscMatrix, MatrixForm, compile_arrays, compile_model, compile_pyomo

Compiler = Callable[[pyo.ConcreteModel], MatrixForm]

INSTANCE_FILES = sorted(
    path
    for path in INSTANCES.glob("*.json")
    if not path.name.endswith(".target.json") and json.loads(path.read_text())["format"] == "mipopt-instance"
)

BUILDERS: dict[str, Callable[[mipopt.Instance], models.Formulation]] = {
    "grmu-slots": lambda inst: models.build("grmu-slots", inst),
    "grmu-paper": lambda inst: models.build("grmu-paper", inst),
    "config-detailed": lambda inst: build_config(inst, mode="detailed"),
    "config-aggregate": lambda inst: build_config(inst, mode="aggregate"),
}


def canonical(form: MatrixForm) -> tuple[list[tuple], list[tuple], float, bool]:
    """The form with rows and columns sorted: columns by name, rows by their bounds and terms.

    Returns (columns as (name, lower, upper, integer, cost), rows as (lower, upper, terms),
    offset, maximize).
    """
    names = [v.name for v in form.columns]
    assert len(set(names)) == len(names)
    columns = sorted(
        (name, lo, up, bool(i), c)
        for name, lo, up, i, c in zip(
            names,
            form.col_lower.tolist(),
            form.col_upper.tolist(),
            form.integer,
            form.cost.tolist(),
            strict=True,
        )
    )
    a = form.matrix
    terms: list[list[tuple[str, float]]] = [[] for _ in range(a.shape[0])]
    for j in range(a.shape[1]):
        for k in range(a.indptr[j], a.indptr[j + 1]):
            terms[a.indices[k]].append((names[j], float(a.data[k])))
    rows = sorted(
        (lo, up, tuple(sorted(t)))
        for lo, up, t in zip(form.row_lower.tolist(), form.row_upper.tolist(), terms, strict=True)
    )
    return columns, rows, form.offset, form.maximize


def assert_same(model: pyo.ConcreteModel) -> MatrixForm:
    """Both compilers' forms of ``model`` are equal up to row and column order; numpy's form."""
    arrays, scipy_form = compile_arrays(model), compile_pyomo(model)
    for form in (arrays, scipy_form):
        a = form.matrix
        assert a.shape == (len(form.row_lower), len(form.columns))
        assert len(a.indptr) == a.shape[1] + 1 and a.indptr[-1] == len(a.indices) == len(a.data)
        assert np.all(a.data != 0)
    assert canonical(arrays) == canonical(scipy_form)
    return arrays


def objective_models() -> list[tuple[str, str, str]]:
    """(instance file stem, formulation, objective name): every model the driver may compile."""
    cases = []
    for path in INSTANCE_FILES:
        inst = mipopt.load_instance(path)
        for label, build in BUILDERS.items():
            cases += [(path.stem, label, name) for name in build(inst).objectives]
    return cases


def built(stem: str, label: str, objective: str) -> pyo.ConcreteModel:
    f = BUILDERS[label](mipopt.load_instance(INSTANCES / f"{stem}.json"))
    f.model.stage_objective = pyo.Objective(expr=f.expression(objective), sense=SENSE[objective])
    return f.model


def highs_optimum(model: pyo.ConcreteModel, compiler: Compiler, monkeypatch: pytest.MonkeyPatch) -> float:
    with monkeypatch.context() as patch:
        patch.setattr(highs_module, "compile_model", compiler)
        result = HighsBackend().solve(model)
    assert result.termination is mipopt.Termination.OPTIMAL, result.message
    assert result.objective is not None
    return result.objective


CASES = objective_models()

#: Compiled both ways but not solved: HiGHS needs minutes to prove the printed formulation's
#: hardware optimum of fbk_fig3 when acceptance is not held first (the driver never asks that).
NOT_SOLVED = {("fbk_fig3", "grmu-paper", "hardware")}


def test_every_committed_instance_is_covered() -> None:
    stems = {stem for stem, _, _ in CASES}
    assert {"quickstart", "grmu_fig2b", "fbk_fig3", "moves"} <= stems
    assert not {"moves.target", "swap.target"} & stems
    assert {label for _, label, _ in CASES} == set(BUILDERS)


@pytest.mark.parametrize(("stem", "label", "objective"), CASES, ids=["-".join(c) for c in CASES])
def test_compilers_agree_on_real_models(
    stem: str, label: str, objective: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    model = built(stem, label, objective)
    form = assert_same(model)
    assert form.matrix.shape[0] > 0 and len(form.columns) > 0
    if (stem, label, objective) in NOT_SOLVED:
        return
    optimum = highs_optimum(model, compile_arrays, monkeypatch)
    assert highs_optimum(model, compile_pyomo, monkeypatch) == pytest.approx(optimum, abs=1e-9)


def corner_cases() -> pyo.ConcreteModel:
    """Every row kind, fixed variables, an unused variable and a constant in the objective.

    max x[0] + 2 x[1] + 3 y + z[1] + 4 s.t. (x, y integer in 0..5; z[0] fixed to 2, z[1] fixed to 3;
    w unused):
    ``1 <= x[0] + x[1] <= 4`` (ranged: two rows), ``x[0] - y == 1`` (equality), ``x[1] + z[0] <= 5``
    (z[0] folded: x[1] <= 3), ``y + 2 z[1] >= 6`` (z[1] in the objective as well: y >= 0),
    ``z[0] + z[1] <= 9`` (only fixed variables: dropped), ``p <= 3`` with parameter p = 2 (a constant: dropped).
    x[0] = y + 1 and x[0] + x[1] <= 4 leave 4 y + 2 x[1] + 8 with y + x[1] <= 3: optimum 20 at y = 3,
    x[0] = 4, x[1] = 0.
    """
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1], domain=pyo.Integers, bounds=(0, 5))
    m.y = pyo.Var(domain=pyo.Integers, bounds=(0, 5))
    m.z = pyo.Var([0, 1], bounds=(0, 10))
    m.w = pyo.Var(domain=pyo.Binary)
    m.z[0].fix(2)
    m.z[1].fix(3)
    m.ranged = pyo.Constraint(expr=pyo.inequality(1, m.x[0] + m.x[1], 4))
    m.equal = pyo.Constraint(expr=m.x[0] - m.y == 1)
    m.upper = pyo.Constraint(expr=m.x[1] + m.z[0] <= 5)
    m.lower = pyo.Constraint(expr=m.y + 2 * m.z[1] >= 6)
    m.all_fixed = pyo.Constraint(expr=m.z[0] + m.z[1] <= 9)
    m.p = pyo.Param(initialize=2, mutable=True)
    m.constant = pyo.Constraint(expr=m.p <= 3)
    m.obj = pyo.Objective(expr=m.x[0] + 2 * m.x[1] + 3 * m.y + m.z[1] + 4, sense=pyo.maximize)
    return m


def test_corner_cases_by_hand(monkeypatch: pytest.MonkeyPatch) -> None:
    model = corner_cases()
    form = assert_same(model)
    columns, rows, offset, maximize = canonical(form)
    inf = float("inf")
    assert columns == [
        ("x[0]", 0.0, 5.0, True, 1.0),
        ("x[1]", 0.0, 5.0, True, 2.0),
        ("y", 0.0, 5.0, True, 3.0),
    ]
    assert rows == [
        (-inf, 3.0, (("x[1]", 1.0),)),
        (-inf, 4.0, (("x[0]", 1.0), ("x[1]", 1.0))),
        (0.0, inf, (("y", 1.0),)),
        (1.0, 1.0, (("x[0]", 1.0), ("y", -1.0))),
        (1.0, inf, (("x[0]", 1.0), ("x[1]", 1.0))),
    ]
    assert (offset, maximize) == (7.0, True)  # 4 + z[1]
    assert highs_optimum(model, compile_arrays, monkeypatch) == pytest.approx(20.0)
    assert highs_optimum(corner_cases(), compile_pyomo, monkeypatch) == pytest.approx(20.0)


def test_fixed_variable_recorded_through_its_component() -> None:
    # z[0] is met after z[1] made its component known: Pyomo's visitor keeps it as a term and the
    # compiler folds it afterwards (rows stay, even with no term left).
    m = pyo.ConcreteModel()
    m.z = pyo.Var([0, 1], bounds=(0, 4))
    m.z[0].fix(1.5)
    m.obj = pyo.Objective(expr=m.z[1] + 2 * m.z[0])
    m.c = pyo.Constraint(expr=m.z[1] + 3 * m.z[0] >= 2)
    m.only_fixed = pyo.Constraint(expr=m.z[0] <= 2)
    form = assert_same(m)
    assert [v.name for v in form.columns] == ["z[1]"]
    assert form.offset == 3.0
    assert canonical(form)[1] == [(-float("inf"), 0.5, ()), (-2.5, float("inf"), (("z[1]", 1.0),))]


def test_model_without_constraints(monkeypatch: pytest.MonkeyPatch) -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var([0, 1], domain=pyo.Binary)
    m.obj = pyo.Objective(expr=m.x[0] - m.x[1] + 1, sense=pyo.maximize)
    form = assert_same(m)
    assert form.matrix.shape == (0, 2) and form.matrix.indptr.tolist() == [0, 0, 0]
    assert highs_optimum(m, compile_arrays, monkeypatch) == 2.0
    assert highs_optimum(m, compile_pyomo, monkeypatch) == 2.0


def test_constant_objective() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 1))
    m.c = pyo.Constraint(expr=m.x >= 0.5)
    m.obj = pyo.Objective(expr=pyo.quicksum([], linear=True) + 2.5)
    form = assert_same(m)
    assert form.cost.tolist() == [0.0] and form.offset == 2.5


def test_trivially_infeasible_constraint_raises_in_both() -> None:
    m = pyo.ConcreteModel()
    m.x = pyo.Var(bounds=(0, 1))
    m.x.fix(1)
    m.c = pyo.Constraint(expr=m.x >= 2)
    m.obj = pyo.Objective(expr=m.x)
    for compiler in (compile_arrays, compile_pyomo):
        with pytest.raises(Exception, match="trivially infeasible"):
            compiler(m)


def test_csc_product() -> None:
    a = CscMatrix(
        indptr=np.array([0, 2, 2, 3], dtype=np.int32),
        indices=np.array([0, 1, 1], dtype=np.int32),
        data=np.array([1.0, 2.0, -1.0]),
        shape=(2, 3),
    )
    assert (a @ np.array([3.0, 5.0, 7.0])).tolist() == [3.0, -1.0]


def test_compile_model_compiles_without_pyomos_compiler(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(model: pyo.ConcreteModel) -> MatrixForm:
        raise AssertionError("Pyomo's compiler called")

    monkeypatch.setattr("mipopt.solvers.matrix.compile_pyomo", refuse)
    model = built("quickstart", "grmu-slots", "acceptance")
    assert canonical(compile_model(model)) == canonical(compile_arrays(model))


def test_small_solve_does_not_import_scipy() -> None:
    code = (
        "import sys\n"
        "from mipopt.cli import main\n"
        "code = main(['solve', 'instances/quickstart.json'])\n"
        "assert not code, code\n"
        "print(sorted(m for m in ('scipy', 'networkx') if m in sys.modules))\n"
    )
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert run.returncode == 0, run.stderr
    assert run.stdout.splitlines()[-1] == "[]", run.stdout
