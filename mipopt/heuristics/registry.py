"""Importing this module registers every online policy with :mod:`mipopt.heuristics.policy`."""

import mipopt.heuristics.adapter
import mipopt.heuristics.grmu
import mipopt.heuristics.mfi  # noqa: F401
