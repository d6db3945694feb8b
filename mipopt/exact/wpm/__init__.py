"""IBM's WPM profit MIP (Turkkan et al.): the model over free partitions
(:mod:`~mipopt.exact.wpm.model`) and its solve with indexing (:mod:`~mipopt.exact.wpm.solve`)."""

from mipopt.exact.wpm.model import WpmModel, WpmWeights, build_wpm
from mipopt.exact.wpm.solve import solve_wpm

__all__ = ["WpmModel", "WpmWeights", "build_wpm", "solve_wpm"]
