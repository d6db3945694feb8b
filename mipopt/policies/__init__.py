"""Placement heuristics, batch and (later) online, deciding through the geometry tables."""

from mipopt.policies.first_fit import first_fit
from mipopt.policies.ibm_baselines import ibm_first_fit, load_balanced

__all__ = ["first_fit", "ibm_first_fit", "load_balanced"]
