"""Poisson request streams at a chosen offered load, for any cluster and profile mix.

:func:`poisson_trace` takes a cluster and a mix as Python objects; :func:`poisson_stream`
takes what a workload spec can say (``mipopt simulate --workload poisson:gpus=16,load=0.9``):
a number of GPUs of one model or an instance file (its hosts and GPUs, its running workloads
as the state at time 0, and its new workloads as the first arrivals), and a mix named after
a column of the MFI paper's Table II or written ``profile:weight;profile:weight``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Literal

import numpy as np

from mipopt.catalog import get_model
from mipopt.instance import Instance, InstanceBuilder
from mipopt.instance.trace import Request, Trace
from mipopt.limits import MAX_REQUESTS, beyond
from mipopt.workloads.fbk import FBK_DISTRIBUTIONS, table_ii_mix
from mipopt.workloads.layout import check_gpus, host_layout

__all__ = ["poisson_stream", "poisson_trace"]

Lifetime = Literal["exponential", "uniform"]


def poisson_trace(
    cluster: Instance,
    *,
    load: float,
    mix: Mapping[str, float],
    mean_lifetime: float,
    horizon: float,
    seed: int,
    lifetime: Lifetime = "exponential",
    name: str | None = None,
    first: Sequence[Request] = (),
) -> Trace:
    """Requests arriving as a Poisson process whose offered load is ``load``.

    The offered load is the expected number of memory slots requested by the
    workloads present at a time (as if every request were accepted) over the
    cluster's memory slots. By Little's law that is ``rate * mean_lifetime * mean
    size / capacity``, so the arrival rate is ``load * capacity / (mean_lifetime *
    mean size)``, where the mean size is the ``mix``-weighted memory slots of the
    profiles. Arrivals fall in ``[0, horizon)``; departures may lie beyond it. The
    stream starts empty, so the load it offers reaches ``load`` after a few mean
    lifetimes. The cluster's running workloads are the state at time 0; they stay and
    are not part of the offered load. ``first``, requests arriving at time 0 before the
    stream, are not part of it either.

    Parameters
    ----------
    cluster
        Hosts, GPUs and running workloads (its new workloads are ignored: pass them as
        ``first``); its capacity is the memory slots of all its GPUs.
    load
        Offered load, positive (above 1 offers more than the cluster holds).
    mix
        Profile name -> relative frequency (normalized here; non-negative, positive
        sum). Each profile must belong to a GPU model of the cluster; its size is its
        memory slots there, averaged over the cluster's GPUs that have it when the
        models differ (``1g.10gb``: 2 slots on an A100-40GB, 1 on an H100-80GB).
    mean_lifetime
        Mean lifetime in hours, positive.
    horizon
        Arrivals happen in ``[0, horizon)`` hours, positive.
    seed
        Seed of the generator: the same arguments give the same trace.
    lifetime
        ``"exponential"`` (memoryless) or ``"uniform"`` on ``(0, 2 * mean_lifetime]``.
    name
        Trace name; default ``poisson-load{load}-seed{seed}``.
    first
        Requests arriving at time 0 before the stream (their ids must differ from the
        stream's ``p000000``, ...).

    Returns
    -------
    Trace
        ``time_unit="h"``; requests ``p000000``, ...; every request weighs 1 and needs no
        cpu or ram. ``meta`` holds the arguments, ``rate`` (arrivals per hour),
        ``mean_size`` and ``capacity_slots``.

    Raises
    ------
    ValueError
        Naming the parameter, the rule and the bad value.
    """
    for label, value in (("load", load), ("mean_lifetime", mean_lifetime), ("horizon", horizon)):
        if not value > 0 or value == float("inf"):  # also rejects NaN
            raise ValueError(f"{label} must be a positive finite number, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if lifetime not in ("exponential", "uniform"):
        raise ValueError(f"lifetime must be 'exponential' or 'uniform', got {lifetime!r}")
    if not cluster.gpus:
        raise ValueError("cluster: has no GPUs")
    names = list(mix)
    weights = np.array([float(mix[p]) for p in names])
    if not names or (weights < 0).any() or not weights.sum() > 0:
        raise ValueError(f"mix must give non-negative frequencies with a positive sum, got {dict(mix)!r}")
    sizes = np.array([_memory_slots(cluster, p) for p in names])
    probs = weights / weights.sum()
    capacity = sum(g.model.slots for g in cluster.gpus)
    mean_size = float(probs @ sizes)
    rate = load * capacity / (mean_lifetime * mean_size)

    # the number of requests, told before any is drawn (and after: a draw may exceed its mean)
    expected = rate * horizon
    if expected > MAX_REQUESTS:
        raise ValueError(
            f"load={load:g} over horizon={horizon:g} h (mean lifetime {mean_lifetime:g} h) draws about "
            f"{beyond(round(expected), 'requests', MAX_REQUESTS)}"
        )
    rng = np.random.default_rng(seed)
    count = int(rng.poisson(expected))
    if count > MAX_REQUESTS:
        raise ValueError(
            f"seed={seed} draws {beyond(count, 'requests', MAX_REQUESTS)}; lower load or horizon"
        )
    # Given their number, the arrival times of a Poisson process are uniform order statistics.
    arrivals = np.sort(rng.uniform(0.0, horizon, size=count))
    profiles = rng.choice(len(names), size=count, p=probs)
    durations = _lifetimes(rng, lifetime, mean_lifetime, count)
    width = max(6, len(str(count - 1)))
    requests = tuple(first) + tuple(
        Request(f"p{i:0{width}d}", names[int(k)], float(a), float(a + d))
        for i, (a, k, d) in enumerate(zip(arrivals, profiles, durations, strict=True))
    )
    return Trace(
        name=name or f"poisson-load{load:g}-seed{seed}",
        cluster=cluster,
        requests=requests,
        time_unit="h",
        meta={
            "generator": "poisson",
            "load": load,
            "mix": {p: float(q) for p, q in zip(names, probs, strict=True)},
            "mean_lifetime": mean_lifetime,
            "horizon": horizon,
            "seed": seed,
            "lifetime": lifetime,
            "rate": rate,
            "mean_size": mean_size,
            "capacity_slots": capacity,
            "running": len(cluster.running),
            "first": len(first),
        },
    )


def poisson_stream(
    *,
    seed: int,
    gpus: int = 16,
    model: str = "A100-80GB",
    gpus_per_host: int = 8,
    cluster: str | None = None,
    load: float = 0.8,
    mix: str = "uniform",
    mean_lifetime: float = 10.0,
    horizon: float = 200.0,
    lifetime: Lifetime = "exponential",
    requests: bool = True,
) -> Trace:
    """:func:`poisson_trace` from plain options: the ``poisson`` workload of ``mipopt simulate``.

    Parameters
    ----------
    seed
        Seed of the generator.
    gpus, model, gpus_per_host
        The cluster: ``gpus`` GPUs of ``model``, ``gpus_per_host`` to a host (the last
        host holds the remainder); hosts have no cpu or ram limits.
    cluster
        Path of an instance JSON file whose hosts and GPUs are the cluster instead;
        ``gpus``, ``model`` and ``gpus_per_host`` then do not apply. Its running
        workloads are placed at time 0 and stay; its new workloads arrive at time 0, in
        the file's order, before the stream (lifetimes drawn as the stream's).
    requests
        With ``cluster``: whether the instance's new workloads arrive (``false``: they
        are left out).
    load, mean_lifetime, horizon, lifetime
        As in :func:`poisson_trace` (hours).
    mix
        A column of Table II (``uniform``, ``skew-small``, ``skew-big``, ``bimodal``)
        on the cluster's first GPU model, or ``profile:weight;profile:weight``.

    Raises
    ------
    ValueError
        Naming the option, the rule and the bad value.
    """
    first: list[Request] = []
    if cluster is not None:
        from mipopt.io import load_instance

        instance = load_instance(Path(cluster))
        if requests:
            first = _first_arrivals(instance, mean_lifetime, lifetime, seed)
    else:
        if requests is not True:
            raise ValueError(
                f"requests: only with cluster (an instance file's new workloads), got {requests!r}"
            )
        check_gpus(gpus, "gpus")
        if isinstance(gpus_per_host, bool) or not isinstance(gpus_per_host, int) or gpus_per_host < 1:
            raise ValueError(f"gpus_per_host must be an integer of at least 1, got {gpus_per_host!r}")
        gpu_model = get_model(str(model))
        b = InstanceBuilder(f"{gpus}x{gpu_model.name}")
        for hid, gpu_ids in host_layout(gpus, gpus_per_host):
            b.add_host(hid, dict.fromkeys(gpu_ids, gpu_model.name))
        instance = b.build()
    return poisson_trace(
        instance,
        load=load,
        mix=_mix(instance, str(mix)),
        mean_lifetime=mean_lifetime,
        horizon=horizon,
        seed=seed,
        lifetime=lifetime,
        first=first,
    )


def _first_arrivals(instance: Instance, mean_lifetime: float, lifetime: Lifetime, seed: int) -> list[Request]:
    """An instance's new workloads as requests at time 0, lifetimes drawn as the stream's
    (from a generator of their own, so the stream stays the one ``seed`` gives)."""
    if not mean_lifetime > 0 or mean_lifetime == float("inf"):
        raise ValueError(f"mean_lifetime must be a positive finite number, got {mean_lifetime!r}")
    new = instance.new
    rng = np.random.default_rng(np.random.SeedSequence(seed).spawn(1)[0])
    durations = _lifetimes(rng, lifetime, mean_lifetime, len(new))
    return [
        Request(
            w.id,
            str(w.profile),
            0.0,
            float(d),
            cpu=w.cpu,
            ram_gb=w.ram_gb,
            weight=w.weight,
            gpu_models=w.gpu_models,
        )
        for w, d in zip(new, durations, strict=True)
    ]


def _lifetimes(rng: np.random.Generator, lifetime: Lifetime, mean: float, n: int) -> np.ndarray:
    """``n`` lifetimes of mean ``mean``: exponential, or uniform on ``(0, 2 * mean]``."""
    if lifetime == "exponential":
        durations = rng.exponential(mean, size=n)
    else:
        durations = 2.0 * mean * (1.0 - rng.uniform(size=n))
    # A zero draw (probability ~0) would make a request leave as it arrives, which Trace forbids.
    return np.maximum(durations, 1e-9 * mean)


def _mix(cluster: Instance, text: str) -> dict[str, float]:
    """A mix option: a Table II column name, or ``profile:weight;profile:weight``."""
    if text in FBK_DISTRIBUTIONS:
        if not cluster.gpus:
            raise ValueError("cluster: has no GPUs")
        return table_ii_mix(cluster.gpus[0].model, text)
    out: dict[str, float] = {}
    for item in filter(None, text.split(";")):
        name, sep, weight = item.partition(":")
        try:
            out[name.strip()] = float(weight) if sep else 1.0
        except ValueError:
            raise ValueError(f"mix: weight {weight!r} of {name!r} is not a number") from None
    if not out:
        known = ", ".join(sorted(FBK_DISTRIBUTIONS))
        raise ValueError(f"mix must be one of {known} or profile:weight;profile:weight, got {text!r}")
    return out


def _memory_slots(cluster: Instance, profile: str) -> float:
    """Memory slots of ``profile``, averaged over the cluster's GPUs whose model has it.

    Raises
    ------
    ValueError
        When no GPU model of the cluster has the profile.
    """
    sizes = [p.memory_slots for g in cluster.gpus if (p := g.model.find(profile))]
    if not sizes:
        models = sorted({g.model.name for g in cluster.gpus})
        raise ValueError(f"mix: {profile!r} is not a profile of the cluster's GPU models {models}")
    return sum(sizes) / len(sizes)
