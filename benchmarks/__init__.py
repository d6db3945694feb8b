"""The benchmark scripts of mipopt: ``python -m benchmarks.bench_NAME [--render] [--quick] ...``.

Each ``bench_*`` module measures one thing and says how its table reads; the harness they
share (arguments, rows with their provenance, the latest run, the README tables, child
processes under limits) is :mod:`benchmarks.common`.
"""
