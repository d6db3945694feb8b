"""The sizes input may ask of mipopt across readers, and the words that refuse a larger one.

A size read from input (a GPU count, a device request, a generator's size, a number of runs)
is checked against a limit where it is read, before anything of that size is allocated, and
refused with the limit in the message (:func:`beyond`). The limits one reader alone checks
live beside it (:data:`mipopt.io.MAX_JSON_DEPTH`, :data:`mipopt.interop.nvidia_smi.MAX_TEXT_BYTES`,
...); those several readers share live here. ``docs/limits.md`` lists every one with where it is
checked, and a test keeps that table and the numbers equal.

The sizes are well above what mipopt is measured on (``benchmarks/README.md``: 16,000 GPUs and
50,000 workloads in one solve) and well below what would exhaust a machine: an instance of
100,000 GPUs and 300,000 workloads takes about 0.3 GB and 5 s to build.

Examples
--------
>>> beyond(100_000_000, "GPUs", MAX_GPUS)
'100,000,000 GPUs, more than the limit of 100,000 (docs/limits.md)'
"""

from __future__ import annotations

#: GPUs of one instance made from input: a generator's ``gpus``, the ``nvidia.com/gpu.count``
#: labels of a Kubernetes import, the GPUs of one host's nvidia-smi outputs.
MAX_GPUS = 100_000
#: Workloads of one instance made from input: the MIG devices pending pods ask for (200,000 new
#: workloads take about 7 s and 0.4 GB to import).
MAX_WORKLOADS = 200_000
#: Requests of one generated trace: a Poisson stream's, an FBK stream's (1,000,000 take about
#: 10 s and 0.35 GB to draw).
MAX_REQUESTS = 1_000_000
#: Characters of a spec: a method, a policy, a workload, an objective (the longest real ones
#: are below 200).
MAX_SPEC_CHARS = 1_000
#: Replays or generated instances of one call: ``simulate --runs``, ``bench --seeds``.
MAX_RUNS = 10_000


def beyond(value: float, what: str, limit: float) -> str:
    """The rule broken when ``value`` of ``what`` exceeds ``limit``, as an error message says it.

    >>> beyond(12_000_000, "runs", MAX_RUNS), beyond(float("inf"), "GPUs", MAX_GPUS)[:29]
    ('12,000,000 runs, more than the limit of 10,000 (docs/limits.md)', 'inf GPUs, more than the limit')
    """
    return f"{_number(value)} {what}, more than the limit of {_number(limit)} (docs/limits.md)"


def _number(x: float) -> str:
    """``x`` with thousands separators, or in ``g`` form when it is not a whole number below 1e18."""
    if isinstance(x, float) and not (x.is_integer() and abs(x) < 1e18):
        return f"{x:g}"
    return f"{int(x):,}"
