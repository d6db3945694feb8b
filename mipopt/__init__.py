"""mipopt: optimal and heuristic placement of workloads onto NVIDIA MIG instances.

The public API is re-exported here from where each part lives; ``import mipopt`` itself is
cheap, and each name imports its module on first use (so ``mipopt info`` never loads a
solver).

Examples
--------
>>> import mipopt
>>> inst = mipopt.load_instance("instances/quickstart.json")
>>> sol = mipopt.solve(inst, method="ff")
>>> mipopt.verify(inst, sol).valid
True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

#: Public name -> module it lives in.
_EXPORTS = {
    "InstanceError": "mipopt.errors",
    "ParameterTypeError": "mipopt.errors",
    "UnknownMethodError": "mipopt.errors",
    "load_instance": "mipopt.io",
    "load_solution": "mipopt.io",
    "Budget": "mipopt.instance",
    "Instance": "mipopt.instance",
    "InstanceBuilder": "mipopt.instance",
    "Solution": "mipopt.instance",
    "Status": "mipopt.instance",
    "Termination": "mipopt.instance",
    "MethodSpec": "mipopt.registry",
    "methods": "mipopt.registry",
    "solve": "mipopt.registry",
    "verify": "mipopt.verifier",
    "rejection_reasons": "mipopt.verifier",
    "instance_from_nvidia_smi": "mipopt.interop",
    "instance_from_kubernetes": "mipopt.interop",
    "plan_migration": "mipopt.migrate",
    "sweep": "mipopt.registry",
    "simulate": "mipopt.simulation.engine",
    "make_policy": "mipopt.heuristics.policies",
    "compare_methods": "mipopt.compare",
    "get_model": "mipopt.catalog",
    "make_executor": "mipopt.executors",
    "hindsight_optimum": "mipopt.exact.hindsight",
}

__all__ = [
    "Budget",
    "Instance",
    "InstanceBuilder",
    "InstanceError",
    "MethodSpec",
    "ParameterTypeError",
    "Solution",
    "Status",
    "Termination",
    "UnknownMethodError",
    "__version__",
    "catalog",
    "compare_methods",
    "examples",
    "get_model",
    "hindsight_optimum",
    "instance_from_kubernetes",
    "instance_from_nvidia_smi",
    "load_instance",
    "load_solution",
    "make_executor",
    "make_policy",
    "methods",
    "plan_migration",
    "rejection_reasons",
    "simulate",
    "solve",
    "sweep",
    "verify",
]

if TYPE_CHECKING:
    from mipopt import catalog, examples
    from mipopt.catalog import get_model
    from mipopt.compare import compare_methods
    from mipopt.errors import InstanceError, ParameterTypeError, UnknownMethodError
    from mipopt.exact.hindsight import hindsight_optimum
    from mipopt.executors import make_executor
    from mipopt.heuristics.policies import make_policy
    from mipopt.instance import Budget, Instance, InstanceBuilder, Solution, Status, Termination
    from mipopt.interop import instance_from_kubernetes, instance_from_nvidia_smi
    from mipopt.io import load_instance, load_solution
    from mipopt.migrate import plan_migration
    from mipopt.registry import MethodSpec, methods, solve, sweep
    from mipopt.simulation.engine import simulate
    from mipopt.verifier import rejection_reasons, verify


#: Public modules, imported on first use too.
_MODULES = ("catalog", "examples")


def __getattr__(name: str) -> Any:
    if name in _MODULES:
        return importlib.import_module(f"mipopt.{name}")
    if name not in _EXPORTS:
        raise AttributeError(f"module 'mipopt' has no attribute {name!r}")
    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
