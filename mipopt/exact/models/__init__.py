"""Pyomo models of the placement problem; each builds a model and decodes a solution.

A formulation knows nothing of the backend that solves it (:mod:`mipopt.solvers`).
It exposes the objectives as named Pyomo expressions so that a driver
(:mod:`mipopt.exact.driver`) can optimize them lexicographically, as a weighted sum, or
under epsilon constraints. Every formulation satisfies :class:`Formulation`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

import pyomo.environ as pyo

from mipopt.errors import InstanceError
from mipopt.exact.models.grmu_slots import MEASURES, OBJECTIVES, SENSE, SlotModel, build_slots
from mipopt.instance import Instance


class Formulation(Protocol):
    """What :mod:`mipopt.exact.driver` needs from a built model."""

    instance: Instance
    model: pyo.ConcreteModel
    stats: dict[str, int]
    objectives: tuple[str, ...]
    relaxed: frozenset[str]  # expressions that only bound the verifier's value from below
    profiles: dict[str, str]  # set by decode: the profile of each memory-sized workload it placed

    def expression(self, name: str) -> pyo.Expression: ...

    def decode(self) -> dict[str, tuple[str, int]]: ...

    def warm_start(
        self, placed: dict[str, tuple[str, int]], profiles: dict[str, str] | None = None
    ) -> dict[str, float]: ...


def _build_config(instance: Instance) -> Formulation:
    from mipopt.exact.models.config import build_config

    return build_config(instance, mode="detailed")


def _build_grmu_paper(instance: Instance) -> Formulation:
    from mipopt.exact.models.grmu_paper import build_grmu_paper

    return build_grmu_paper(instance)


#: Formulation name (``--model``) -> (builder, one-line description).
MODELS: dict[str, tuple[Callable[[Instance], Formulation], str]] = {
    "grmu": (_build_config, "configuration model: multisets of profiles per GPU, staged proofs"),
    "grmu-slots": (build_slots, "tight GRMU model over candidate placements (start slots)"),
    "grmu-paper": (_build_grmu_paper, "GRMU ILP as printed (Eqs. 3-26)"),
}


def build(name: str, instance: Instance) -> Formulation:
    """Build formulation ``name`` of ``instance``.

    Raises
    ------
    InstanceError
        Naming ``model`` when the name is unknown.
    """
    if name not in MODELS:
        raise InstanceError("model", f"unknown model {name!r} (known: {', '.join(MODELS)})")
    return MODELS[name][0](instance)


__all__ = ["MEASURES", "MODELS", "OBJECTIVES", "SENSE", "Formulation", "SlotModel", "build", "build_slots"]
