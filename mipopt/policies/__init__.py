"""Placement heuristics, batch and (later) online, deciding through the geometry tables."""

from mipopt.policies.first_fit import first_fit

__all__ = ["first_fit"]
