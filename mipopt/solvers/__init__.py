"""Solver layer: one Pyomo model, several MIP backends behind one interface.

A formulation builds a Pyomo model; :func:`get_backend` picks a backend (``"highs"`` or
``"cpsat"``); ``backend.solve(model, SolverOptions(...))`` returns a :class:`SolveResult` and
loads the solution into the model's variables, ready for the formulation to decode. Each backend
declares its :class:`Capabilities`. Details of the outcome mapping are in
:mod:`mipopt.solvers.base`, of each backend in :mod:`mipopt.solvers.highs` and
:mod:`mipopt.solvers.cpsat`.

A run is stopped from outside with a :class:`StopFlag` (set by the first Ctrl-C inside
:func:`catch_sigint`) or a deadline, both passed in :class:`SolverOptions`; the backend returns
its incumbent with termination ``interrupted`` or ``time_limit`` (:mod:`mipopt.solvers.stop`).

Examples
--------
>>> import pyomo.environ as pyo
>>> m = pyo.ConcreteModel()
>>> m.x = pyo.Var([1, 2], domain=pyo.Binary)
>>> m.c = pyo.Constraint(expr=m.x[1] + m.x[2] <= 1)
>>> m.o = pyo.Objective(expr=2 * m.x[1] + 3 * m.x[2], sense=pyo.maximize)
>>> get_backend("highs").solve(m, SolverOptions(mip_rel_gap=0)).objective
3.0
>>> flag = StopFlag()
>>> flag.set()
>>> get_backend("highs").solve(m, SolverOptions(stop=flag)).termination.value
'interrupted'
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from importlib import import_module
from typing import TYPE_CHECKING

from mipopt.solvers.base import (
    Backend,
    Capabilities,
    SolveResult,
    SolverOptions,
    UnsupportedModelError,
    UnsupportedOptionError,
    is_proven,
    relative_gap,
)
from mipopt.solvers.stop import StopFlag, background_solves, catch_sigint, wait_for_background

if TYPE_CHECKING:
    from mipopt.solvers.cpsat import CpSatBackend
    from mipopt.solvers.highs import HighsBackend

#: Each backend's module and class. A backend module imports its solver (cpsat: OR-Tools, which
#: loads pandas), so it is imported on first use: a HiGHS solve never pays for OR-Tools.
_BACKEND_CLASSES = {
    "highs": ("mipopt.solvers.highs", "HighsBackend"),
    "cpsat": ("mipopt.solvers.cpsat", "CpSatBackend"),
}


class _Backends(Mapping[str, "type[HighsBackend] | type[CpSatBackend]"]):
    """Backend name to class, importing the backend's module when its class is first looked up."""

    def __getitem__(self, name: str) -> type[HighsBackend] | type[CpSatBackend]:
        module, cls = _BACKEND_CLASSES[name]
        backend: type[HighsBackend] | type[CpSatBackend] = getattr(import_module(module), cls)
        return backend

    def __iter__(self) -> Iterator[str]:
        return iter(_BACKEND_CLASSES)

    def __len__(self) -> int:
        return len(_BACKEND_CLASSES)


BACKENDS: Mapping[str, type[HighsBackend] | type[CpSatBackend]] = _Backends()


def __getattr__(name: str) -> object:
    """``CpSatBackend`` and ``HighsBackend``, imported when first named."""
    for key, (_, cls) in _BACKEND_CLASSES.items():
        if cls == name:
            return BACKENDS[key]
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def get_backend(name: str) -> Backend:
    """The backend called ``name``.

    Parameters
    ----------
    name
        ``"highs"`` or ``"cpsat"``.

    Raises
    ------
    ValueError
        For an unknown name; the message lists the known ones.
    """
    try:
        return BACKENDS[name]()
    except KeyError:
        raise ValueError(f"unknown solver {name!r}; choose one of {', '.join(BACKENDS)}") from None


__all__ = [
    "BACKENDS",
    "Backend",
    "Capabilities",
    "CpSatBackend",
    "HighsBackend",
    "SolveResult",
    "SolverOptions",
    "StopFlag",
    "UnsupportedModelError",
    "UnsupportedOptionError",
    "background_solves",
    "catch_sigint",
    "get_backend",
    "is_proven",
    "relative_gap",
    "wait_for_background",
]
