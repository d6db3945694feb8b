"""Exact methods: MIP models of the placement problem and the drivers that solve them.

* :mod:`~mipopt.exact.models`: the GRMU formulations (configuration, slots, as printed);
* :mod:`~mipopt.exact.driver`: :func:`solve_exact`, the staged lexicographic solve;
* :mod:`~mipopt.exact.sweep`: :func:`sweep`, the Pareto front by epsilon constraints;
* :mod:`~mipopt.exact.wpm`: IBM's WPM profit model and its indexing;
* :mod:`~mipopt.exact.preprocess`: candidates, free partitions, classes and indexing shared by
  the models.
"""
