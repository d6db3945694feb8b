"""Placement heuristics, batch and (later) online, deciding through the geometry tables."""

from collections.abc import Callable

from mipopt.heuristics.first_fit import first_fit
from mipopt.heuristics.ibm_baselines import ibm_first_fit, load_balanced
from mipopt.heuristics.ibm_rules import ibm_compaction, ibm_initial, ibm_joint, ibm_reconfiguration
from mipopt.instance import Instance, Solution

#: Batch heuristics by their ``mipopt solve --method`` name.
BATCH: dict[str, Callable[[Instance], Solution]] = {
    "first-fit": first_fit,
    "ibm-first-fit": ibm_first_fit,
    "load-balanced": load_balanced,
    "ibm-initial": ibm_initial,
    "ibm-compaction": ibm_compaction,
    "ibm-reconfiguration": ibm_reconfiguration,
    "ibm-joint": ibm_joint,
}

__all__ = [
    "BATCH",
    "first_fit",
    "ibm_compaction",
    "ibm_first_fit",
    "ibm_initial",
    "ibm_joint",
    "ibm_reconfiguration",
    "load_balanced",
]
