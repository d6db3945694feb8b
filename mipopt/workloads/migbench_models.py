"""MIGBench's generated workloads (``poisson``, ``burst``, ``profile-skew``, ``adversarial``) as mipopt traces.

Transcribed from MIGBench's generator, ``internal/workload/workload.go`` (``Generate``) of
FouoF/MIG-scheduler-benchmark at commit 228c2122ed975cbaa2abd5dfcac5b9b38f2d611f, with the
parameters of its published saturated run (``experiment.control-plane.saturated.yaml``, same
commit: 500 jobs, 56 prefill jobs, mean inter-arrival 15,000 ms, lognormal duration of median
600,000 ms and sigma 0.8, profile weights 1g.10gb 35, 2g.20gb 25, 3g.40gb 25, 7g.80gb 5).

Job ``i`` (from 0), with the profiles sorted by compute then memory:

* a *prefill* job (``i < prefill``) arrives at 0 and asks for the smallest profile;
* otherwise its arrival advances from the previous one: by an exponential draw of mean
  ``arrival_mean_ms`` (``poisson``, ``profile-skew``); by ``arrival_mean_ms`` every ``burst_size``
  jobs (``burst``: groups arriving together); by ``arrival_mean_ms`` every job (``adversarial``);
* its profile is drawn by the weights; ``adversarial`` overrides it: the smallest profile for the
  first half of the jobs, the largest for the second (small jobs fragment the GPUs the large ones
  then need);
* its duration is ``exp(log(median) + sigma * N(0, 1))`` ms truncated to an integer (at least 1);
  a ``resource-bound-v2`` job asks for the profile's memory (``memoryMB``) and its work is the
  duration times the profile's compute percent (``computeCoreMS``), a ``profile-bound-v1`` job
  names the profile and its ``durationMS``.

MIGBench draws from Go's PCG generator; mipopt draws from numpy's (seeded, same order of draws per
job), so the distributions are MIGBench's but a seed gives other jobs than MIGBench's seed. In
MIGBench's code ``profile-skew`` is ``poisson`` with the weights the experiment file gives; its
published files name no skewed weights, so mipopt's default for it is an assumption, stated in
:data:`SKEW_WEIGHTS`: most jobs ask for 3g and 7g.
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mipopt.catalog import get_model
from mipopt.errors import InstanceError
from mipopt.instance.trace import Trace, compute_percent
from mipopt.io import write_text
from mipopt.workloads.migbench import PUBLISHED_PROFILES, migbench_trace

__all__ = ["KINDS", "PUBLISHED_WEIGHTS", "SKEW_WEIGHTS", "migbench_generated", "migbench_jobs", "write_jobs"]

#: MIGBench's workload models.
KINDS = ("poisson", "burst", "profile-skew", "adversarial")
#: The profile weights of MIGBench's published saturated run.
PUBLISHED_WEIGHTS = {"1g.10gb": 35.0, "2g.20gb": 25.0, "3g.40gb": 25.0, "7g.80gb": 5.0}
#: mipopt's default weights for ``profile-skew`` (MIGBench publishes none): skewed to the large profiles.
SKEW_WEIGHTS = {"1g.10gb": 10.0, "2g.20gb": 10.0, "3g.40gb": 50.0, "7g.80gb": 30.0}


def _weights(weights: str | Mapping[str, float] | None, kind: str, names: Sequence[str]) -> dict[str, float]:
    if weights is None:
        table = SKEW_WEIGHTS if kind == "profile-skew" else PUBLISHED_WEIGHTS
        if not set(names) <= set(table):
            return dict.fromkeys(names, 1.0)  # MIGBench: equal weights when none are given
        return {n: table[n] for n in names}
    if isinstance(weights, str):
        pairs = [part.partition("=") for part in weights.split("+")]
        try:
            found = {name: float(value) for name, _, value in pairs}
        except ValueError:
            raise InstanceError("weights", f"must be profile=weight joined by '+', got {weights!r}") from None
    else:
        found = {str(k): float(v) for k, v in weights.items()}
    unknown = sorted(set(found) - set(names))
    if unknown:
        raise InstanceError("weights", f"{unknown[0]!r} is not one of the profiles ({'+'.join(names)})")
    table = {n: found.get(n, 0.0) for n in names}
    if any(not math.isfinite(w) or w < 0 for w in table.values()) or sum(table.values()) <= 0:
        raise InstanceError("weights", f"must be finite, non-negative and not all 0, got {weights!r}")
    return table


def migbench_jobs(
    kind: str = "poisson",
    jobs: int = 500,
    prefill: int = 56,
    arrival_mean_ms: float = 15_000.0,
    duration_median_ms: float = 600_000.0,
    duration_sigma: float = 0.8,
    weights: str | Mapping[str, float] | None = None,
    burst_size: int = 10,
    model: str = "H100-80GB",
    profiles: str | Sequence[str] = "+".join(PUBLISHED_PROFILES),
    job_format: str = "resource-bound-v2",
    seed: int = 0,
) -> list[dict[str, Any]]:
    """Jobs of one of MIGBench's workload models, as the JSON objects of its trace files.

    Parameters
    ----------
    kind
        ``poisson``, ``burst``, ``profile-skew`` or ``adversarial`` (the module docstring).
    jobs, prefill
        Jobs in all, and how many of the first arrive at 0 asking for the smallest profile.
    arrival_mean_ms, duration_median_ms, duration_sigma, burst_size
        MIGBench's ``arrivalMeanMS``, ``durationMedianMS``, ``durationSigma``, ``burstSize``.
    weights
        Profile weights, ``"1g.10gb=35+2g.20gb=25+..."`` or a mapping; default the published
        run's (:data:`SKEW_WEIGHTS` for ``profile-skew``), equal weights for other profile sets.
    model, profiles
        The GPU model and its profiles jobs ask for (names joined by ``+``).
    job_format
        ``resource-bound-v2`` (memory and work) or ``profile-bound-v1`` (profile and duration).
    seed
        Seeds numpy's generator.

    Raises
    ------
    InstanceError
        Naming the parameter.

    Examples
    --------
    >>> jobs = migbench_jobs("adversarial", jobs=6, prefill=2, seed=1)
    >>> [(j["arrivalMS"], j["memoryMB"]) for j in jobs]
    [(0, 10240), (0, 10240), (15000, 10240), (30000, 81920), (45000, 81920), (60000, 81920)]
    """
    if kind not in KINDS:
        raise InstanceError("kind", f"must be one of {', '.join(KINDS)}, got {kind!r}")
    if job_format not in ("resource-bound-v2", "profile-bound-v1"):
        raise InstanceError(
            "job_format", f"must be resource-bound-v2 or profile-bound-v1, got {job_format!r}"
        )
    for label, count in (("jobs", jobs), ("prefill", prefill), ("burst_size", burst_size)):
        if isinstance(count, bool) or not isinstance(count, int) or count < (1 if label != "prefill" else 0):
            raise InstanceError(
                label,
                f"must be a {'positive' if label != 'prefill' else 'non-negative'} integer, got {count!r}",
            )
    for label, value in (
        ("arrival_mean_ms", arrival_mean_ms),
        ("duration_median_ms", duration_median_ms),
        ("duration_sigma", duration_sigma),
    ):
        if (
            not isinstance(value, int | float)
            or not math.isfinite(value)
            or value < 0
            or (label == "duration_median_ms" and value <= 0)
        ):
            raise InstanceError(label, f"must be a finite number >= 0 (median > 0), got {value!r}")
    gpu = get_model(model)
    names = tuple(profiles.split("+")) if isinstance(profiles, str) else tuple(profiles)
    found = []
    for name in names:
        p = gpu.find(name)
        if p is None:
            raise InstanceError("profiles", f"{name!r} is not a profile of {gpu.name}")
        found.append(p)
    found.sort(key=lambda p: (p.compute, p.memory_gb))
    table = _weights(weights, kind, [p.name for p in found])
    cumulative = np.cumsum([table[p.name] for p in found])
    rng = np.random.default_rng(seed)
    out: list[dict[str, Any]] = []
    arrival = 0
    for i in range(jobs):
        is_prefill = i < prefill
        if is_prefill:
            arrival = 0
        elif kind in ("poisson", "profile-skew"):
            arrival += int(rng.exponential() * arrival_mean_ms)
        elif kind == "burst":
            if i > 0 and i % burst_size == 0:
                arrival += int(arrival_mean_ms)
        else:
            arrival += int(arrival_mean_ms)
        # MIGBench's choose: the first profile whose running weight reaches a uniform draw
        pick = min(int(np.searchsorted(cumulative, rng.random() * cumulative[-1])), len(found) - 1)
        profile = found[pick]
        if is_prefill:
            profile = found[0]
        elif kind == "adversarial":
            profile = found[0] if i < jobs // 2 else found[-1]
        duration = max(
            1, int(math.exp(math.log(duration_median_ms) + duration_sigma * rng.standard_normal()))
        )
        job: dict[str, Any] = {"jobID": f"job-{i + 1:06d}", "format": job_format, "arrivalMS": arrival}
        if job_format == "profile-bound-v1":
            job |= {"durationMS": duration, "profile": profile.name}
        else:
            job |= {
                "computeCoreMS": duration * compute_percent(profile, gpu),
                "memoryMB": round(profile.memory_gb * 1024),
            }
        out.append(job)
    return out


def write_jobs(path: str | Path, jobs: Sequence[Mapping[str, Any]]) -> None:
    """Write jobs as MIGBench's JSONL (one object per line, MIGBench's field names), atomically."""
    write_text(Path(path), "".join(json.dumps(dict(job), separators=(",", ":")) + "\n" for job in jobs))


def migbench_generated(
    kind: str = "poisson",
    jobs: int = 500,
    prefill: int = 56,
    arrival_mean_ms: float = 15_000.0,
    duration_median_ms: float = 600_000.0,
    duration_sigma: float = 0.8,
    weights: str | None = None,
    burst_size: int = 10,
    nodes: int = 2,
    gpus_per_node: int = 4,
    model: str = "H100-80GB",
    profiles: str = "+".join(PUBLISHED_PROFILES),
    create_ms: float = 250.0,
    delete_ms: float = 100.0,
    measure_from_ms: float = 30_000.0,
    seed: int = 0,
) -> Trace:
    """A generated MIGBench workload (:func:`migbench_jobs`) on MIGBench's cluster, read as a trace
    file is (:func:`~mipopt.workloads.migbench.migbench_trace`): ``mipopt simulate --workload
    migbench-gen:kind=burst``.

    >>> trace = migbench_generated("burst", jobs=30, prefill=0, seed=3)
    >>> len(trace.requests), trace.time_unit, trace.requests[10].arrival
    (30, 'ms', 15000.0)
    """
    found = migbench_jobs(
        kind, jobs, prefill, arrival_mean_ms, duration_median_ms, duration_sigma, weights, burst_size,
        model, profiles, seed=seed,
    )  # fmt: skip
    handle, name = tempfile.mkstemp(prefix=f"migbench-{kind}-", suffix=".jsonl")
    os.close(handle)
    try:
        write_jobs(name, found)
        trace = migbench_trace(
            name, nodes, gpus_per_node, model, profiles, create_ms, delete_ms, measure_from_ms
        )
    finally:
        Path(name).unlink(missing_ok=True)
    meta = {"kind": kind, "jobs": jobs, "prefill": prefill, "seed": seed, "generator": "migbench_jobs"}
    return Trace(
        f"migbench-{kind}(seed={seed})",
        trace.cluster,
        trace.requests,
        time_unit=trace.time_unit,
        meta=meta,
        profiles=trace.profiles,
        create_delay=trace.create_delay,
        delete_delay=trace.delete_delay,
        measure_from=trace.measure_from,
    )
