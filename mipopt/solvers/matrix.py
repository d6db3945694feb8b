"""A Pyomo model as arrays, the form both backends hand to their solver.

The model is walked once with the linear visitor of Pyomo's ``LinearStandardFormCompiler``
into a constraint matrix in CSC form with one row per bound of each constraint; this
module turns that into row and column bounds, integrality and the objective, which is
what HiGHS (``passModel``) and OR-Tools (``fill_model_from_sparse_data``) take. Compiling
this way is 20-30 times faster than building a solver model term by term (APPSI) or
writing an MPS file: 0.02-0.04 s for the 80-GPU benchmark models, 0.2-0.4 s for the
1,000-GPU ones.

:func:`compile_model` takes the compiler's steps with numpy (:func:`compile_arrays`)
rather than calling it (:func:`compile_pyomo`), which builds the matrix with scipy: with
Pyomo loaded, importing scipy also runs Pyomo's deferred-import hook, which loads
scipy.stats, integrate and spatial (0.6-1 s, more than a whole small solve). Both take
the same time from 8 to 16,000 GPUs and give the same arrays; Pyomo's compiler remains
the reference the tests hold the numpy one to, and compiles templated expressions.

Fixed variables are constants in the matrix (folded into the bounds and the objective's
offset); variables that appear nowhere are left out. Both keep their values.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from itertools import chain
from typing import Any

import numpy as np
import numpy.typing as npt
import pyomo.environ as pyo
from pyomo.common.errors import InfeasibleConstraintException, InvalidConstraintError, InvalidExpressionError
from pyomo.common.gc_manager import PauseGC
from pyomo.common.numeric_types import native_types
from pyomo.core.base import ExternalFunction
from pyomo.core.base.var import VarData
from pyomo.network import Port
from pyomo.repn.linear import LinearRepnVisitor
from pyomo.repn.util import (
    FileDeterminism,
    FileDeterminism_to_SortComponents,
    TemplateVarRecorder,
    categorize_valid_components,
)

from mipopt.solvers.base import single_objective

FloatArray = npt.NDArray[np.float64]
IndexArray = npt.NDArray[np.int32]


@dataclass(frozen=True)
class CscMatrix:
    """A sparse matrix in compressed sparse column form (scipy's ``csc_array`` layout).

    Attributes
    ----------
    indptr
        Column ``j``'s entries are ``indptr[j]:indptr[j + 1]`` of ``indices`` and ``data``.
    indices
        The row of each entry, increasing within a column.
    data
        The value of each entry (no explicit zeros).
    shape
        (rows, columns).
    """

    indptr: IndexArray
    indices: IndexArray
    data: FloatArray
    shape: tuple[int, int]

    def __matmul__(self, x: FloatArray) -> FloatArray:
        """The product with a column vector."""
        columns = np.repeat(np.arange(self.shape[1]), np.diff(self.indptr))
        product = np.bincount(self.indices, weights=self.data * x[columns], minlength=self.shape[0])
        return product.astype(np.float64, copy=False)


@dataclass
class MatrixForm:
    """``optimize cost @ x + offset`` s.t. ``row_lower <= A @ x <= row_upper``, column bounds and integrality.

    Attributes
    ----------
    columns
        The Pyomo variable of each column.
    matrix
        The constraint matrix, CSC.
    integer
        True for integer (and binary) columns.
    maximize
        The objective's sense.
    """

    columns: list[VarData]
    matrix: CscMatrix
    row_lower: FloatArray
    row_upper: FloatArray
    col_lower: FloatArray
    col_upper: FloatArray
    integer: npt.NDArray[np.bool_]
    cost: FloatArray
    offset: float
    maximize: bool
    objective: pyo.Objective

    def start(self, values: Mapping[str, float]) -> FloatArray | None:
        """A column vector from warm-start values by variable name; None when no column is named.

        Raises
        ------
        KeyError
            If a name is not a variable of the model.
        """
        if not values:
            return None
        model = self.objective.model()
        known = {v.name: v for v in model.component_data_objects(pyo.Var, descend_into=True)}
        unknown = [name for name in values if name not in known]
        if unknown:
            raise KeyError(f"warm_start: {unknown[0]!r} is not a variable of the model")
        x = np.array([values.get(v.name, 0.0) for v in self.columns], dtype=float)
        return np.clip(x, self.col_lower, self.col_upper)

    def better(self, a: float, b: float, tol: float = 0.0) -> bool:
        """Whether objective value ``a`` beats ``b`` by more than ``tol``, in the objective's sense."""
        return a > b + tol if self.maximize else a < b - tol

    def load(self, x: FloatArray) -> None:
        """Put a solution vector into the model's variables (integer columns rounded)."""
        x = np.where(self.integer, np.round(x), x)
        for var, value in zip(self.columns, x.tolist(), strict=True):
            var.set_value(value, skip_validation=True)


@dataclass
class _Rows:
    """What a compiler hands on: columns, matrix, and per row its bound and kind (-1 >=, 0 ==, 1 <=)."""

    columns: list[VarData]
    matrix: CscMatrix
    rhs: FloatArray
    kind: npt.NDArray[np.int_]
    cost: FloatArray
    offset: float


def compile_model(model: pyo.ConcreteModel) -> MatrixForm:
    """The model's one active objective and its constraints as arrays (:func:`compile_arrays`).

    Raises
    ------
    UnsupportedModelError
        If the model does not have exactly one active objective.
    """
    return compile_arrays(model)


def compile_pyomo(model: pyo.ConcreteModel) -> MatrixForm:
    """:func:`compile_model` by Pyomo's ``LinearStandardFormCompiler`` itself (imports scipy).

    Raises
    ------
    UnsupportedModelError
        If the model does not have exactly one active objective.
    """
    from pyomo.repn.plugins.standard_form import LinearStandardFormCompiler

    objective = single_objective(model)
    info = LinearStandardFormCompiler().write(model, mixed_form=True, set_sense=None)
    columns = list(info.columns)
    n = len(columns)
    a = info.A.tocsc() if info.A.shape[0] else None
    matrix = (
        CscMatrix(
            np.asarray(a.indptr, dtype=np.int32),
            np.asarray(a.indices, dtype=np.int32),
            np.asarray(a.data, dtype=float),
            (a.shape[0], n),
        )
        if a is not None
        else CscMatrix(np.zeros(n + 1, dtype=np.int32), np.zeros(0, dtype=np.int32), np.zeros(0), (0, n))
    )
    rows = _Rows(
        columns=columns,
        matrix=matrix,
        rhs=np.asarray(info.rhs, dtype=float),
        kind=np.array([row.bound_type for row in info.rows], dtype=int),
        cost=np.asarray(info.c.toarray()[0], dtype=float) if info.c.shape[0] else np.zeros(n),
        offset=float(info.c_offset[0]) if len(info.c_offset) else 0.0,
    )
    return _form(rows, objective)


def compile_arrays(model: pyo.ConcreteModel) -> MatrixForm:
    """:func:`compile_model` with numpy, without scipy: ``LinearStandardFormCompiler``'s steps.

    The same visitor, variable recorder, constraint order and row rules as Pyomo's compiler
    in mixed form (one row per equality, per upper and per lower bound; a ranged constraint
    gives two), so both give the same columns and rows in the same order, and a solver the
    same run. A model with templated expressions goes to :func:`compile_pyomo`.

    Raises
    ------
    UnsupportedModelError
        If the model does not have exactly one active objective.
    ValueError
        If the model has an active component the compiler cannot process.
    InvalidConstraintError, InvalidExpressionError
        If a constraint or the objective is not linear.
    InfeasibleConstraintException
        If a constraint without variables is violated by its constant.
    """
    objective = single_objective(model)
    # As Pyomo's compiler: the walk makes and drops many small objects, the collector would
    # revisit the whole model each time (twice the compile time at 16,000 GPUs).
    with PauseGC():
        return _compile_arrays(model, objective)


def _compile_arrays(model: pyo.ConcreteModel, objective: pyo.Objective) -> MatrixForm:
    sorter = FileDeterminism_to_SortComponents(FileDeterminism.ORDERED)
    _, unknown = categorize_valid_components(
        model,
        active=True,
        sort=sorter,
        valid={
            pyo.Block,
            pyo.Constraint,
            pyo.Var,
            pyo.Param,
            pyo.Expression,
            ExternalFunction,
            pyo.Set,
            pyo.RangeSet,
            Port,
        },
        targets={pyo.Suffix, pyo.Objective},
    )
    if unknown:
        names = "\n\t".join(f"{k}:\n\t\t" + "\n\t\t".join(c.name for c in v) for k, v in unknown.items())
        raise ValueError(
            f"The model ('{model.name}') contains the following active components that the "
            f"Linear Standard Form compiler does not know how to process:\n\t{names}"
        )
    if hasattr(objective, "template_expr"):
        return compile_pyomo(model)  # templated expressions: Pyomo's compiler expands them

    var_map: dict[int, VarData] = {}
    visitor = LinearRepnVisitor({}, var_recorder=TemplateVarRecorder(var_map, sorter))
    repn = visitor.walk_expression(objective.expr)
    if repn.nonlinear is not None:
        raise InvalidExpressionError(
            f"Model objective ({objective.name}) contains nonlinear terms that "
            "cannot be compiled to standard (linear) form."
        )
    obj_ids, obj_coefs, offset = list(repn.linear), list(repn.linear.values()), repn.constant

    ids: list[Any] = []  # per row, its variables' ids (one iterable per row)
    coefs: list[Any] = []
    counts: list[int] = []
    rhs: list[Any] = []
    kind: list[int] = []
    for con in model.component_data_objects(pyo.Constraint, active=True, sort=sorter):
        if hasattr(con, "template_expr"):
            return compile_pyomo(model)
        lb, body, ub = con.to_bounded_expression()
        if lb.__class__ not in native_types:
            lb = pyo.value(lb)
        if ub.__class__ not in native_types:
            ub = pyo.value(ub)
        repn = visitor.walk_expression(body)
        if repn.nonlinear is not None:
            raise InvalidConstraintError(
                f"Model constraint ({con.name}) contains nonlinear terms that "
                "cannot be compiled to standard (linear) form."
            )
        if lb is None and ub is None:
            continue
        n_terms, constant = len(repn.linear), repn.constant
        if not n_terms and constant.__class__ in native_types:
            if (lb is None or lb <= constant) and (ub is None or ub >= constant):
                continue
            raise InfeasibleConstraintException(
                f"model contains a trivially infeasible constraint, '{con.name}'"
            )
        bounds = [(0, ub)] if lb == ub else [(1, ub), (-1, lb)]
        for sign, bound in bounds:
            if bound is not None:
                ids.append(repn.linear.keys())
                coefs.append(repn.linear.values())
                counts.append(n_terms)
                rhs.append(bound - constant)
                kind.append(sign)

    column_of = {vid: j for j, vid in enumerate(var_map)}
    columns = list(var_map.values())
    n, m = len(columns), len(counts)
    nnz = sum(counts)
    a_cols = np.fromiter(map(column_of.__getitem__, chain.from_iterable(ids)), np.int64, nnz)
    a_data = np.fromiter(chain.from_iterable(coefs), np.float64, nnz)
    a_rows = np.repeat(np.arange(m, dtype=np.int32), counts)
    c_cols = np.fromiter(map(column_of.__getitem__, obj_ids), np.int64, len(obj_ids))
    c_data = np.fromiter(obj_coefs, np.float64, len(obj_coefs))

    # Column order, as scipy's CSR -> CSC conversion (rows increasing within a column); no
    # explicit zeros (eliminate_zeros).
    keep = a_data != 0
    order = np.argsort(a_cols[keep], kind="stable")
    a_cols, a_rows, a_data = a_cols[keep][order], a_rows[keep][order], a_data[keep][order]
    keep = c_data != 0
    c_cols, c_data = c_cols[keep], c_data[keep]

    in_a = np.bincount(a_cols, minlength=n)
    active = (in_a > 0) | (np.bincount(c_cols, minlength=n) > 0)
    # A fixed variable is in the matrix when its component was recorded through another index.
    fixed = np.array([v.fixed for v in columns], dtype=bool) & active
    rhs_array = np.array(rhs, dtype=float) if m else np.zeros(0)
    if fixed.any():
        x = np.array([v.value if f else 0.0 for v, f in zip(columns, fixed, strict=True)], dtype=float)
        in_fixed = fixed[a_cols]
        rhs_array = rhs_array - np.bincount(
            a_rows[in_fixed], weights=a_data[in_fixed] * x[a_cols[in_fixed]], minlength=m
        )
        in_fixed = fixed[c_cols]
        offset = offset + sum((c_data[in_fixed] * x[c_cols[in_fixed]]).tolist())
        active &= ~fixed
    kept = active[a_cols]
    matrix = CscMatrix(
        indptr=np.concatenate(([0], np.cumsum(in_a[active]))).astype(np.int32),
        indices=a_rows[kept].astype(np.int32),
        data=a_data[kept],
        shape=(m, int(active.sum())),
    )
    cost = np.zeros(n)
    cost[c_cols] = c_data
    rows = _Rows(
        columns=[v for v, a in zip(columns, active.tolist(), strict=True) if a],
        matrix=matrix,
        rhs=rhs_array,
        kind=np.array(kind, dtype=int),
        cost=cost[active],
        offset=float(offset),
    )
    return _form(rows, objective)


def _form(rows: _Rows, objective: pyo.Objective) -> MatrixForm:
    row_lower = np.where(rows.kind <= 0, rows.rhs, -np.inf)
    row_upper = np.where(rows.kind >= 0, rows.rhs, np.inf)
    bounds = [v.bounds for v in rows.columns]
    return MatrixForm(
        columns=rows.columns,
        matrix=rows.matrix,
        row_lower=row_lower,
        row_upper=row_upper,
        col_lower=np.array([-np.inf if lb is None else lb for lb, _ in bounds], dtype=float),
        col_upper=np.array([np.inf if ub is None else ub for _, ub in bounds], dtype=float),
        integer=np.array([v.is_integer() for v in rows.columns], dtype=bool),
        cost=rows.cost,
        offset=rows.offset,
        maximize=objective.sense == pyo.maximize,
        objective=objective,
    )
