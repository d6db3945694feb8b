"""Pyomo models of the placement problem; each builds a model and decodes a solution.

A formulation knows nothing of the backend that solves it (:mod:`mipopt.solvers`).
It exposes the objectives as named Pyomo expressions so that a driver
(:mod:`mipopt.exact`) can optimize them lexicographically, as a weighted sum, or
under epsilon constraints.
"""

from mipopt.formulations.grmu import GrmuModel, build_grmu

__all__ = ["GrmuModel", "build_grmu"]
