"""Placement heuristics: IBM's batch rules and the online policies, deciding through the geometry
tables.

* :mod:`~mipopt.heuristics.ibm_rules`, :mod:`~mipopt.heuristics.ibm_baselines`: IBM WPM's
  rule-based heuristics and its first-fit baseline, batch;
* :mod:`~mipopt.heuristics.online`: the online :class:`~mipopt.heuristics.online.Policy` interface
  and :func:`~mipopt.heuristics.online.run_batch` (any policy in batch);
* :mod:`~mipopt.heuristics.grmu`, :mod:`~mipopt.heuristics.mfi`, :mod:`~mipopt.heuristics.adapter`:
  the policies of the GRMU, MFI and IBM papers and MIG-Adapter;
* :mod:`~mipopt.heuristics.policies`: the table of policies by name (:func:`make_policy`).

Which code a method name means, batch or online, is :mod:`mipopt.registry`'s table.
"""

from mipopt.heuristics.ibm_baselines import ibm_first_fit
from mipopt.heuristics.ibm_rules import ibm_compaction, ibm_initial, ibm_joint, ibm_reconfiguration

__all__ = ["ibm_compaction", "ibm_first_fit", "ibm_initial", "ibm_joint", "ibm_reconfiguration"]
