"""Tiny generic Pyomo models for the solver tests, with optima checked by hand.

The solver layer must know nothing of the formulations, so its tests build their own models.
"""

from __future__ import annotations

import random

import pyomo.environ as pyo

from mipopt.solvers import SolverOptions

BACKENDS = ["highs", "cpsat"]
PROOF = SolverOptions(mip_rel_gap=0, threads=1)


def knapsack() -> pyo.ConcreteModel:
    """Values 10, 13, 7, 8; weights 5, 6, 3, 4; capacity 10.

    Pairs within 10: {0,2} 17, {0,3} 18, {1,2} 20, {1,3} 21, {2,3} 15; every triple weighs at
    least 12. Optimum 21 with items 1 and 3.
    """
    m = pyo.ConcreteModel()
    value, weight = [10, 13, 7, 8], [5, 6, 3, 4]
    m.x = pyo.Var(range(4), domain=pyo.Binary)
    m.cap = pyo.Constraint(expr=sum(weight[i] * m.x[i] for i in range(4)) <= 10)
    m.obj = pyo.Objective(expr=sum(value[i] * m.x[i] for i in range(4)), sense=pyo.maximize)
    return m


def multi_knapsack(seed: int = 1, n: int = 60, k: int = 5) -> pyo.ConcreteModel:
    """Random 0/1 multi-knapsack, each capacity half the total weight: about 0.5 s for HiGHS."""
    rng = random.Random(seed)
    m = pyo.ConcreteModel()
    m.x = pyo.Var(range(n), domain=pyo.Binary)
    weight = [[rng.randint(5, 60) for _ in range(n)] for _ in range(k)]
    profit = [rng.randint(10, 100) for _ in range(n)]
    m.cap = pyo.Constraint(
        range(k), rule=lambda m, d: sum(weight[d][i] * m.x[i] for i in range(n)) <= sum(weight[d]) // 2
    )
    m.obj = pyo.Objective(expr=sum(profit[i] * m.x[i] for i in range(n)), sense=pyo.maximize)
    return m
