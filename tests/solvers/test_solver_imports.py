"""highspy and OR-Tools load together, in either order.

OR-Tools 9.15 bundles HiGHS 1.12.0 as ``libhighs.so.1``; with any other highspy, whichever of
the two is imported second fails in a process that already loaded the other. Each order runs in
a fresh interpreter, since a process can import each library only once.
"""

from __future__ import annotations

import subprocess
import sys
from importlib.metadata import version

import pytest

_HIGHSPY = """
import highspy
h = highspy.Highs()
h.setOptionValue("output_flag", False)
h.addVar(0.0, 4.0)
h.changeColCost(0, -1.0)
h.run()
print("highs", h.getInfo().objective_function_value)
"""

_ORTOOLS = """
from ortools.sat.python import cp_model
import ortools.linear_solver.pywraplp
m = cp_model.CpModel()
x = m.new_int_var(0, 5, "x")
m.maximize(x)
solver = cp_model.CpSolver()
solver.solve(m)
print("cpsat", solver.value(x))
"""


@pytest.mark.parametrize("first", ["highspy", "ortools"])
def test_import_both_orders_in_fresh_process(first: str) -> None:
    code = _HIGHSPY + _ORTOOLS if first == "highspy" else _ORTOOLS + _HIGHSPY
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert "highs -4.0" in lines and "cpsat 5" in lines, run.stdout


def test_pinned_versions() -> None:
    assert version("highspy") == "1.12.0"
    assert version("ortools").startswith("9.15")
