"""The IBM WPM paper's test cases (Turkkan et al., *Optimal Workload Placement on Multi-Instance GPUs*).

Section 5.1 of the paper describes its generator in four sentences: a cluster of
nodes of eight GPUs; "we allocated about 60 % of GPUs and left the remaining GPUs
free"; "for each GPU, utilization (up to 100 %) is randomly assigned", then
workloads and their profiles "to achieve the assigned GPU utilization are both
randomly generated from the profiles listed in Table 1"; and new workloads whose
"total size [...] corresponds to the 60 % of the total capacity of the cluster".
:func:`ibm_instance` follows those sentences and settles what they leave open
(the docstring says how), so that every choice is written down and seeded.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np

from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.geometry import tables_for
from mipopt.instance import Instance, InstanceBuilder
from mipopt.workloads.layout import GpuFill, check_gpus, check_shares, host_layout

LoadBasis = Literal["cluster", "free"]
Weights = Literal["size", "unit"]


def ibm_instance(
    n_gpus: int,
    *,
    seed: int,
    used_fraction: float = 0.6,
    load: float = 0.6,
    load_basis: LoadBasis = "cluster",
    model: str = "A100-80GB",
    gpus_per_host: int = 8,
    pinned_fraction: float = 0.0,
    profiles: Sequence[str] | None = None,
    weights: Weights = "size",
    cpu_per_compute: float = 4.0,
    ram_gb_per_memory_gb: float = 1.0,
    host_fraction: float | None = 0.9,
    name: str | None = None,
) -> Instance:
    """A seeded test case of the IBM WPM paper's set-up (section 5.1).

    The cluster is ``ceil(n_gpus / gpus_per_host)`` hosts of ``gpus_per_host`` GPUs
    of one model (the last host holds the remainder), then:

    1. **Running workloads.** ``round(used_fraction * n_gpus)`` GPUs, drawn uniformly
       without replacement, are used. Each gets a target utilization drawn uniformly
       from 1 to all of its compute slices (the paper's "utilization up to 100 %",
       in compute slices: 1-7 on an A100) and is filled with workloads until no
       profile fits the rest of the target: each workload's profile is drawn
       uniformly among the profiles that still fit (compute within the target left,
       a legal free start in the geometry tables, below ``max_instances``, no second
       ``+me`` instance on the GPU, room in the host's cpu and ram), and its start
       uniformly among that profile's legal free starts, so layouts are as
       fragmented as a cluster's history leaves them. A GPU drawn as used stays
       empty only in the rare case that its host's cpu or ram is already full, so
       the used share is "about" ``used_fraction``.
    2. **New workloads.** Profiles drawn uniformly from the profiles, each draw among
       those whose compute fits what is left, until the new workloads' compute
       slices add up to exactly ``round(load * B)``, where B is, with
       ``load_basis="cluster"`` (the default, the paper's "60 % of the total
       capacity of the cluster"), the compute slices of all GPUs, used or free
       (``n_gpus * 7`` on A100); with ``load_basis="free"``, the compute slices the
       running workloads leave free. With the defaults the running workloads hold
       about a third of the cluster's compute and the new ones ask for 60 % more,
       so the cluster ends highly allocated and some new workloads may not fit.

    Profiles are those of the model (default: all of them, which for A100-80GB are
    exactly the paper's Table 1: 7g.80gb, 4g.40gb, 3g.40gb, 2g.20gb, 1g.20gb,
    1g.10gb and 1g.10gb+me), drawn with equal probability as Table 1 gives no
    frequencies.

    Every demand and weight is a function of the profile alone, so all workloads of
    one profile are interchangeable (the tight model aggregates them into classes):
    cpu is ``cpu_per_compute`` per compute slice and ram ``ram_gb_per_memory_gb`` per
    GB of GPU memory. Hosts get ``host_fraction`` of the cpu and ram their GPUs
    could demand when fully packed (all compute slices; all GPU memory): with the
    default 0.9, a host binds only when it is packed beyond 90 %, so the GPUs'
    geometry stays the main constraint. ``None`` leaves hosts unlimited. All hosts
    weigh 1 (GRMU Eq. 4 then counts active hosts plus active GPUs).

    Parameters
    ----------
    n_gpus
        GPUs in the cluster, at least 1.
    seed
        Seed of the generator: the same arguments give the same instance.
    used_fraction
        Share of the GPUs with running workloads, in [0, 1].
    load
        Compute of the new workloads as a share of ``load_basis``, in [0, 1].
    load_basis
        ``"cluster"``: all compute slices of the cluster (the paper's reading);
        ``"free"``: the compute slices left free by the running workloads.
    model
        GPU model of every GPU (a catalog name).
    gpus_per_host
        GPUs per host, at least 1.
    pinned_fraction
        Share of the running workloads pinned (may not move), drawn uniformly, in
        [0, 1]. Running workloads are movable by default.
    profiles
        Profile names to draw from; default all profiles of ``model``.
    weights
        ``"size"``: acceptance weight a_i (GRMU Eq. 3) = compute slices, so acceptance
        counts placed compute as the paper's pending size does, and migration weight
        delta_i (Eq. 5) = memory slots, as the paper's migration size counts moved
        memory; ``"unit"``: both 1.
    cpu_per_compute, ram_gb_per_memory_gb
        Host cpu per compute slice and host ram per GB of GPU memory a workload needs.
    host_fraction
        Host capacity as a share of its GPUs' packed demand (positive), or None for
        unlimited hosts.
    name
        Instance name; default ``ibm-{n_gpus}gpus-seed{seed}``.

    Returns
    -------
    Instance
        Hosts ``h000``, ``h001``, ...; GPUs ``h000-g0`` ... ``h000-g7``; running workloads
        ``run0001``, ...; new workloads ``new0001``, ... (wider numbers when needed).

    Raises
    ------
    ValueError
        Naming the parameter, the rule and the bad value.
    """
    _check_arguments(n_gpus, used_fraction, load, pinned_fraction, gpus_per_host, host_fraction)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    if load_basis not in ("cluster", "free"):
        raise ValueError(f"load_basis must be 'cluster' or 'free', got {load_basis!r}")
    if weights not in ("size", "unit"):
        raise ValueError(f"weights must be 'size' or 'unit', got {weights!r}")
    gpu_model = get_model(model)
    drawn = _profiles(gpu_model, profiles)
    rng = np.random.default_rng(seed)

    def cpu(p: Profile) -> float:
        return cpu_per_compute * p.compute

    def ram(p: Profile) -> float:
        return ram_gb_per_memory_gb * p.memory_gb

    def weight(p: Profile) -> tuple[float, float]:
        return (float(p.compute), float(p.memory_slots)) if weights == "size" else (1.0, 1.0)

    hosts = host_layout(n_gpus, gpus_per_host)
    host_of = {gid: hid for hid, gids in hosts for gid in gids}
    cpu_cap: dict[str, float | None] = {}
    ram_cap: dict[str, float | None] = {}
    for hid, gids in hosts:
        if host_fraction is None:
            cpu_cap[hid] = ram_cap[hid] = None
        else:
            full_cpu = len(gids) * gpu_model.compute_slices * cpu_per_compute
            full_ram = len(gids) * gpu_model.memory_gb * ram_gb_per_memory_gb
            cpu_cap[hid] = float(round(host_fraction * full_cpu))
            ram_cap[hid] = float(round(host_fraction * full_ram))

    # 1. running workloads on the used GPUs
    gpu_ids = [gid for _, gids in hosts for gid in gids]
    n_used = round(used_fraction * n_gpus)
    used = sorted(rng.choice(n_gpus, size=n_used, replace=False).tolist())
    tables = tables_for(gpu_model)
    index = {p.name: gpu_model.profiles.index(p) for p in drawn}
    host_cpu = dict.fromkeys(cpu_cap, 0.0)
    host_ram = dict.fromkeys(ram_cap, 0.0)
    running: list[tuple[Profile, str, int]] = []
    for g in used:
        gid = gpu_ids[g]
        hid = host_of[gid]
        state = GpuFill()
        left = int(rng.integers(1, gpu_model.compute_slices + 1))
        while True:
            fits = [
                p
                for p in drawn
                if p.compute <= left
                and state.admits(tables, index[p.name], p)
                and _room(cpu_cap[hid], host_cpu[hid], cpu(p))
                and _room(ram_cap[hid], host_ram[hid], ram(p))
            ]
            if not fits:
                break
            p = fits[int(rng.integers(len(fits)))]
            starts = state.free_starts(tables, index[p.name], p)
            start = starts[int(rng.integers(len(starts)))]
            state.take(p, start)
            host_cpu[hid] += cpu(p)
            host_ram[hid] += ram(p)
            left -= p.compute
            running.append((p, gid, start))
    n_pinned = round(pinned_fraction * len(running))
    pinned = set(rng.choice(len(running), size=n_pinned, replace=False).tolist())

    # 2. new workloads worth round(load * basis) compute slices
    cluster_compute = n_gpus * gpu_model.compute_slices
    running_compute = sum(p.compute for p, _, _ in running)
    basis = cluster_compute if load_basis == "cluster" else cluster_compute - running_compute
    target = round(load * basis)
    new: list[Profile] = []
    left = target
    while True:
        fits = [p for p in drawn if p.compute <= left]
        if not fits:
            break
        p = fits[int(rng.integers(len(fits)))]
        new.append(p)
        left -= p.compute

    b = InstanceBuilder(name or f"ibm-{n_gpus}gpus-seed{seed}")
    b.description = (
        f"IBM WPM set-up (Turkkan et al., section 5.1), seed {seed}: {n_gpus} {gpu_model.name} GPUs "
        f"in {len(hosts)} host{'s' if len(hosts) > 1 else ''} of up to {gpus_per_host}; "
        f"{len({g for _, g, _ in running})} of them used by "
        f"{len(running)} running workloads ({n_pinned} pinned) holding {running_compute} of "
        f"{cluster_compute} compute slices; {len(new)} new workloads of {target} compute slices "
        f"= {load:g} x {basis} ({'all' if load_basis == 'cluster' else 'free'} compute slices)"
    )
    for hid, gids in hosts:
        b.add_host(hid, dict.fromkeys(gids, gpu_model.name), cpu=cpu_cap[hid], ram_gb=ram_cap[hid])
    width = max(4, len(str(max(len(running), len(new)))))
    for i, (p, gid, start) in enumerate(running):
        a, delta = weight(p)
        b.add_workload(
            f"run{i + 1:0{width}d}",
            p.name,
            placement=(gid, start),
            pinned=i in pinned,
            cpu=cpu(p),
            ram_gb=ram(p),
            weight=a,
            migration_weight=delta,
        )
    for i, p in enumerate(new):
        a, delta = weight(p)
        b.add_workload(
            f"new{i + 1:0{width}d}", p.name, cpu=cpu(p), ram_gb=ram(p), weight=a, migration_weight=delta
        )
    return b.build()


def _room(capacity: float | None, used: float, need: float) -> bool:
    return capacity is None or used + need <= capacity + 1e-9


def _profiles(model: GpuModel, names: Sequence[str] | None) -> list[Profile]:
    if names is None:
        return list(model.profiles)
    if not names:
        raise ValueError("profiles must name at least one profile (omit it for all)")
    out = []
    for name in names:
        p = model.find(name)
        if p is None:
            raise ValueError(f"profiles: {name!r} is not a profile of {model.name}")
        if p not in out:
            out.append(p)
    return out


def _check_arguments(
    n_gpus: int,
    used_fraction: float,
    load: float,
    pinned_fraction: float,
    gpus_per_host: int,
    host_fraction: float | None,
) -> None:
    check_gpus(n_gpus, "n_gpus")
    if isinstance(gpus_per_host, bool) or not isinstance(gpus_per_host, int) or gpus_per_host < 1:
        raise ValueError(f"gpus_per_host must be an integer of at least 1, got {gpus_per_host!r}")
    check_shares(("used_fraction", used_fraction), ("load", load), ("pinned_fraction", pinned_fraction))
    if host_fraction is not None and not host_fraction > 0:
        raise ValueError(
            f"host_fraction must be positive (or None for unlimited hosts), got {host_fraction!r}"
        )
