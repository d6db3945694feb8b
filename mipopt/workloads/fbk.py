"""The MFI paper's online set-up (FBK; *MIG fragmentation-aware scheduling*, section VI).

The paper simulates "an empty cluster of M = 100 A100 GPUs that is progressively
loaded up to its maximum capacity": one request per scheduling slot, its MIG profile
drawn from one of four distributions (Table II), its lifetime "a value between [1, T],
where T correspond to the number of scheduling slots required to saturate the cluster
capacity". Metrics are plotted against the *GPU demand*: the resources requested by the
requests arrived so far as a share of the cluster's, ignoring departures.
:func:`fbk_trace` follows those sentences; its docstring says how it settles what
they leave open.
"""

from __future__ import annotations

import math
from typing import Literal

import numpy as np

from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.instance import InstanceBuilder
from mipopt.workloads.layout import host_layout
from mipopt.workloads.trace import Request, Trace

__all__ = ["FBK_DISTRIBUTIONS", "fbk_trace", "table_ii_mix"]

Distribution = Literal["uniform", "skew-small", "skew-big", "bimodal"]

# Table II, rows in the paper's order: 7g.80gb, 4g.40gb, 3g.40gb, 2g.20gb, 1g.20gb, 1g.10gb,
# keyed by (compute slices, memory slots) so that any A100/H100-like model can use it.
_SHAPES: tuple[tuple[int, int], ...] = ((7, 8), (4, 4), (3, 4), (2, 2), (1, 2), (1, 1))
FBK_DISTRIBUTIONS: dict[str, tuple[float, ...]] = {
    "uniform": (1 / 6,) * 6,
    "skew-small": (0.05, 0.10, 0.10, 0.20, 0.25, 0.30),
    "skew-big": (0.30, 0.25, 0.20, 0.10, 0.10, 0.05),
    "bimodal": (0.30, 0.15, 0.05, 0.05, 0.15, 0.30),
}


def fbk_trace(
    *,
    gpus: int = 100,
    distribution: Distribution = "uniform",
    seed: int,
    model: str = "A100-80GB",
    slots: int | None = None,
    gpus_per_host: int = 1,
) -> Trace:
    """A seeded request stream of the MFI paper's set-up (section VI, Table II).

    * **Cluster.** ``gpus`` GPUs of ``model``. The paper is GPU-centric (no hosts, no
      cpu or ram), so by default every GPU is its own host (``gpus_per_host=1``) with
      unlimited cpu and ram; hosts then only matter to the hardware objective, which
      counts each active GPU twice (host and GPU) and so ranks policies as the paper's
      "active GPUs" does.
    * **Requests.** One per slot, arriving at slots 0, 1, 2, ...; the profile is drawn
      from ``distribution`` (Table II: the six non-``+me`` profiles, matched to the
      model's profiles by compute slices and memory slots, so A100-40GB and H100 work
      too). Every request weighs 1 and needs no cpu or ram.
    * **Capacity and demand.** Resources are counted in memory slots (8 per A100,
      the "slices" of the paper's utilization metric). The demand after a request is
      the memory slots of all requests so far over ``gpus * slots per GPU``, in percent;
      it is stored per request in ``trace.meta["demand"]``.
    * **T** is the *realized* saturation slot of this seed's stream: the number of
      requests after which the demand first reaches 100 % (so ``meta["demand"][T - 1]``
      is at least 100 and the one before is below). The expected-size value,
      ``ceil(capacity / mean size)``, is stored as ``meta["T_expected"]`` for comparison;
      the two differ by a few slots at M = 100.
    * **Lifetimes** are uniform integers in [1, T]: a request arriving at slot t leaves
      at slot t + lifetime.
    * **Length.** ``slots`` requests; by default T, as the paper loads the cluster "up to
      its maximum capacity" (its figures stop at 100 % demand). Pass e.g. ``2 * T``
      (see ``meta["T"]`` of a default run) to continue into the steady state where
      departures balance arrivals.

    Parameters
    ----------
    gpus
        GPUs in the cluster, at least 1 (the paper's M).
    distribution
        A column of Table II: ``"uniform"``, ``"skew-small"``, ``"skew-big"`` or ``"bimodal"``.
    seed
        Seed of the generator: the same arguments give the same trace.
    model
        GPU model of every GPU (a catalog name).
    slots
        Number of requests (= slots); default T.
    gpus_per_host
        GPUs per host (the last host holds the remainder).

    Returns
    -------
    Trace
        ``time_unit="slot"``; requests ``r000000``, ...; ``meta`` holds the arguments, ``T``,
        ``T_expected``, ``capacity_slots``, ``demand`` (percent, aligned with requests) and
        ``profile_counts``.

    Raises
    ------
    ValueError
        Naming the parameter, the rule and the bad value.
    """
    for label, value in (("gpus", gpus), ("gpus_per_host", gpus_per_host)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ValueError(f"{label} must be an integer of at least 1, got {value!r}")
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if distribution not in FBK_DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {sorted(FBK_DISTRIBUTIONS)}, got {distribution!r}")
    if slots is not None and (isinstance(slots, bool) or not isinstance(slots, int) or slots < 1):
        raise ValueError(f"slots must be an integer of at least 1 (or None for T), got {slots!r}")
    gpu_model = get_model(model)
    profiles = _table_profiles(gpu_model)
    probs = np.asarray(FBK_DISTRIBUTIONS[distribution])
    probs = probs / probs.sum()
    sizes = np.array([p.memory_slots for p in profiles])
    capacity = gpus * gpu_model.slots
    # Separate streams, so that a longer run (larger ``slots``) extends a shorter one.
    profile_seed, lifetime_seed = np.random.SeedSequence(seed).spawn(2)
    rng = np.random.default_rng(profile_seed)

    # Profiles are drawn in blocks until the stream is long enough both to reach 100 %
    # demand (to know T) and to give ``slots`` requests; T is only known once drawn.
    drawn = np.empty(0, dtype=np.int64)
    total = 0
    while True:
        block = rng.choice(len(profiles), size=max(64, capacity), p=probs)
        drawn = np.concatenate([drawn, block])
        total = int(sizes[drawn].sum())
        if total >= capacity and (slots is None or len(drawn) >= slots):
            break
    cumulative = np.cumsum(sizes[drawn])
    t_realized = int(np.searchsorted(cumulative, capacity)) + 1
    n = t_realized if slots is None else slots
    chosen = drawn[:n]
    lifetimes = np.random.default_rng(lifetime_seed).integers(1, t_realized + 1, size=n)
    demand = (100.0 * cumulative[:n] / capacity).tolist()

    b = InstanceBuilder(f"fbk-{distribution}-{gpus}gpus-seed{seed}")
    for hid, gpu_ids in host_layout(gpus, gpus_per_host):
        b.add_host(hid, dict.fromkeys(gpu_ids, gpu_model.name))
    rwidth = max(6, len(str(n - 1)))
    requests = tuple(
        Request(f"r{t:0{rwidth}d}", profiles[int(chosen[t])].name, float(t), float(t + int(lifetimes[t])))
        for t in range(n)
    )
    expected_size = float(probs @ sizes)
    counts = np.bincount(chosen, minlength=len(profiles))
    return Trace(
        name=f"fbk-{distribution}-{gpus}gpus-seed{seed}",
        cluster=b.build(),
        requests=requests,
        time_unit="slot",
        meta={
            "generator": "fbk",
            "gpus": gpus,
            "gpus_per_host": gpus_per_host,
            "distribution": distribution,
            "seed": seed,
            "model": gpu_model.name,
            "slots": n,
            "T": t_realized,
            "T_expected": math.ceil(capacity / expected_size),
            "capacity_slots": capacity,
            "demand": demand,
            "profile_counts": {p.name: int(c) for p, c in zip(profiles, counts, strict=True)},
        },
    )


def table_ii_mix(model: GpuModel, distribution: str) -> dict[str, float]:
    """A column of Table II as profile name of ``model`` -> probability.

    Raises
    ------
    ValueError
        On an unknown distribution or a model without the six A100-like profiles.
    """
    if distribution not in FBK_DISTRIBUTIONS:
        raise ValueError(f"distribution must be one of {sorted(FBK_DISTRIBUTIONS)}, got {distribution!r}")
    return {p.name: q for p, q in zip(_table_profiles(model), FBK_DISTRIBUTIONS[distribution], strict=True)}


def _table_profiles(model: GpuModel) -> list[Profile]:
    """The model's profiles in Table II's row order (largest first), ``+me`` variants left out."""
    out = []
    for compute, memory in _SHAPES:
        match = [
            p
            for p in model.profiles
            if p.compute == compute and p.memory_slots == memory and not p.media_extension
        ]
        if not match:
            raise ValueError(
                f"model: {model.name} has no profile of {compute} compute and {memory} memory slots "
                "(the FBK set-up needs the six A100-like profiles of Table II)"
            )
        out.append(match[0])
    return out
