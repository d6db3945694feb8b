"""A hard class for the exact model's migrations stage: many small hosts whose cpu and ram bind.

The IBM set-up (:mod:`mipopt.workloads.ibm`) has hosts of eight GPUs of one model, demands
that are a function of the profile alone and hosts with 90 % of what their GPUs could
demand, so the GPUs' geometry decides nearly everything and workloads of one profile are
interchangeable. :func:`hard_instance` removes each of those simplifications at once: hosts
of two GPUs (many hosts, so many host-capacity rows and many ways to switch a host off),
two GPU models alternating by host, cpu and ram drawn per workload (no two workloads need
be alike) and host capacities below what the GPUs could demand, and half of all workloads
running and movable. Which running workloads to move, and where, is then the question the
migrations stage has to prove optimal over a great many near-equivalent answers.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.geometry import tables_for
from mipopt.instance import Instance, InstanceBuilder
from mipopt.workloads.layout import GpuFill, check_gpus, check_integers, host_layout

__all__ = ["hard_instance"]


def hard_instance(
    n_gpus: int,
    *,
    seed: int,
    gpus_per_host: int = 2,
    models: Sequence[str] = ("A100-80GB", "H100-80GB"),
    running_share: float = 0.5,
    host_fraction: float = 0.65,
    cpu_per_compute: Sequence[float] = (3.0, 4.0, 5.0),
    ram_gb_per_memory_gb: Sequence[float] = (1.0,),
    migration_weights: Sequence[float] = (1.0, 1.2, 1.4),
    name: str | None = None,
) -> Instance:
    """A seeded instance of the hard class: small hosts, binding host cpu and ram, half running.

    Every random choice is drawn from ``numpy.random.default_rng(seed)``, in this order:

    1. **Cluster.** ``ceil(n_gpus / gpus_per_host)`` hosts of ``gpus_per_host`` GPUs (the last
       holds the remainder; ids from :func:`mipopt.workloads.layout.host_layout`); host ``j``
       has GPUs of ``models[j % len(models)]`` (default A100-80GB and H100-80GB alternating).
       All hosts weigh 1.
    2. **Host capacities.** A host's cpu is ``host_fraction`` of what its GPUs could demand
       when every compute slice runs at the mean cpu rate, ``GPUs x compute slices x
       mean(cpu_per_compute)``, and its ram ``host_fraction`` of ``GPUs x memory GB x
       mean(ram_gb_per_memory_gb)``, both rounded to whole units. With the defaults a host of
       two 80 GB GPUs has ``round(0.65 x 2 x 7 x 4) = 36`` cpu and ``round(0.65 x 2 x 80 x 1) =
       104`` GB of ram: a host binds at about two thirds of its GPUs' compute, before the
       GPUs are full.
    3. **Running workloads.** Every GPU, in host order, gets a target drawn uniformly from 1
       to ``compute_slices - 1`` compute slices (1-6 on these models: about half the GPU on
       average, never full, so free space is left on every GPU) and is filled until no
       profile fits the rest of the target. Each workload first draws its cpu rate from
       ``cpu_per_compute`` and its ram rate from ``ram_gb_per_memory_gb`` (uniformly, each on
       its own), so it needs ``rate x compute slices`` cpu and ``rate x memory GB`` ram. By
       default the cpu rate is 3, 4 or 5 per compute slice and the ram rate 1 GB per GB:
       cpu varies per workload, ram is a function of the profile (it still binds, through
       the capacity). Drawing ram per workload as well (say 0.75, 1 or 1.25) makes every
       host two knapsacks, and the acceptance stage, not migrations, the one that runs out
       of time (measured with the configuration model and HiGHS at 40 GPUs, seed 0: over
       60 s; with the defaults, seeds 0-2, all three stages are proven in 2.5-6.5 s, a third
       to a half of it in the migrations stage). Its profile is
       drawn uniformly among the GPU model's profiles that still fit (compute within the
       target left, a legal free start in the geometry tables, below ``max_instances``, no
       second ``+me`` on the GPU, room in the host's cpu and ram at the drawn rates), and
       its start uniformly among that profile's legal free starts. A draw with no fitting
       profile ends the GPU (so a host whose cpu or ram is nearly used ends early). Running
       workloads are never pinned.
    4. **New workloads.** ``round(running x (1 - running_share) / running_share)`` of them
       (as many as the running ones with the default 0.5). Each takes the profile of a
       running workload drawn uniformly (so the new requests have the mix the cluster
       already runs; among profile names every model of the cluster has, and uniformly among
       those names when nothing runs), then draws its cpu and ram rates as in step 3. The
       new workloads then ask for about as much compute, cpu and ram as the running ones
       hold. The GPUs have about that much compute free (the running ones hold about half
       of it), but the hosts have only a fifth to a quarter of their cpu and ram left (at
       40 GPUs, seeds 0-2: the new workloads ask 2.4-4 times the free cpu and 3.4-4.7
       times the free ram), so cpu and ram, far more than free slots, limit what the
       cluster can take, and accepting more means moving running workloads to the hosts
       with room.
    5. **Weights.** Acceptance weight a_i (GRMU Eq. 3) = compute slices of the profile, as
       in the IBM set-up; migration weight delta_i (Eq. 5) drawn uniformly from
       ``migration_weights`` for every workload (running and new), so that moves are not
       interchangeable either.

    Parameters
    ----------
    n_gpus
        GPUs in the cluster, at least 1.
    seed
        Seed of the generator: the same arguments give the same instance.
    gpus_per_host
        GPUs per host, at least 1.
    models
        GPU model names (catalog names or aliases), assigned to hosts in turn.
    running_share
        Share of all workloads that are running, in (0, 1].
    host_fraction
        Host cpu and ram as a share of the GPUs' demand at the mean rates, positive.
    cpu_per_compute, ram_gb_per_memory_gb
        Rates a workload's cpu (per compute slice) and ram (per GB of GPU memory) are drawn
        from, uniformly; non-negative, not empty.
    migration_weights
        Values delta_i is drawn from, uniformly; positive, not empty.
    name
        Instance name; default ``hard-{n_gpus}gpus-seed{seed}``.

    Returns
    -------
    Instance
        Hosts ``h000``, ...; GPUs ``h000-g0``, ``h000-g1``, ...; running workloads ``run0001``,
        ...; new workloads ``new0001``, ... (wider numbers when needed).

    Raises
    ------
    ValueError
        Naming the parameter, the rule and the bad value.

    Examples
    --------
    >>> inst = hard_instance(40, seed=0)
    >>> len(inst.hosts), len(inst.gpus), len(inst.running) == len(inst.new)
    (20, 40, True)
    """
    _check(n_gpus, seed, gpus_per_host, running_share, host_fraction)
    if not models:
        raise ValueError("models must name at least one GPU model")
    gpu_models = [get_model(m) for m in models]
    cpu_rates = _rates("cpu_per_compute", cpu_per_compute, positive=False)
    ram_rates = _rates("ram_gb_per_memory_gb", ram_gb_per_memory_gb, positive=False)
    deltas = _rates("migration_weights", migration_weights, positive=True)
    common = [
        p.name for p in gpu_models[0].profiles if all(m.find(p.name) is not None for m in gpu_models[1:])
    ]
    if not common:
        raise ValueError(f"models {list(models)!r} share no profile name")
    rng = np.random.default_rng(seed)
    mean_cpu, mean_ram = float(np.mean(cpu_rates)), float(np.mean(ram_rates))

    # 1-2. hosts, models, capacities
    hosts = host_layout(n_gpus, gpus_per_host)
    model_of: dict[str, GpuModel] = {}
    cpu_cap: dict[str, float] = {}
    ram_cap: dict[str, float] = {}
    for j, (hid, gids) in enumerate(hosts):
        model = gpu_models[j % len(gpu_models)]
        model_of[hid] = model
        cpu_cap[hid] = float(round(host_fraction * len(gids) * model.compute_slices * mean_cpu))
        ram_cap[hid] = float(round(host_fraction * len(gids) * model.memory_gb * mean_ram))

    def draw_rates() -> tuple[float, float, float]:
        return (
            cpu_rates[int(rng.integers(len(cpu_rates)))],
            ram_rates[int(rng.integers(len(ram_rates)))],
            deltas[int(rng.integers(len(deltas)))],
        )

    # 3. running workloads: (profile, GPU, start, cpu, ram, delta)
    running: list[tuple[Profile, str, int, float, float, float]] = []
    host_cpu = dict.fromkeys(cpu_cap, 0.0)
    host_ram = dict.fromkeys(ram_cap, 0.0)
    for hid, gids in hosts:
        model = model_of[hid]
        tables = tables_for(model)
        for gid in gids:
            state = GpuFill()
            left = int(rng.integers(1, max(model.compute_slices - 1, 1) + 1))
            while True:
                c_rate, r_rate, delta = draw_rates()
                fits = [
                    (k, p)
                    for k, p in enumerate(model.profiles)
                    if p.compute <= left
                    and state.admits(tables, k, p)
                    and host_cpu[hid] + c_rate * p.compute <= cpu_cap[hid] + 1e-9
                    and host_ram[hid] + r_rate * p.memory_gb <= ram_cap[hid] + 1e-9
                ]
                if not fits:
                    break
                k, p = fits[int(rng.integers(len(fits)))]
                starts = state.free_starts(tables, k, p)
                start = starts[int(rng.integers(len(starts)))]
                state.take(p, start)
                cpu, ram = c_rate * p.compute, r_rate * p.memory_gb
                host_cpu[hid] += cpu
                host_ram[hid] += ram
                left -= p.compute
                running.append((p, gid, start, cpu, ram, delta))

    # 4. new workloads
    n_new = round(len(running) * (1 - running_share) / running_share)
    by_name = {p.name: p for p in gpu_models[0].profiles}
    new: list[tuple[Profile, float, float, float]] = []
    pool = [p.name for p, *_ in running if p.name in common] or common
    for _ in range(n_new):
        q = by_name[pool[int(rng.integers(len(pool)))]]
        c_rate, r_rate, delta = draw_rates()
        new.append((q, c_rate * q.compute, r_rate * q.memory_gb, delta))

    # 5. the instance
    b = InstanceBuilder(name or f"hard-{n_gpus}gpus-seed{seed}")
    names = ", ".join(dict.fromkeys(m.name for m in gpu_models))
    b.description = (
        f"hard class (mipopt.workloads.hard), seed {seed}: {n_gpus} GPUs ({names} alternating by host) "
        f"in {len(hosts)} host{'s' if len(hosts) > 1 else ''} of up to {gpus_per_host}, host cpu and ram "
        f"{host_fraction:g} x the GPUs' demand at mean rates; {len(running)} running workloads (movable) "
        f"holding {sum(p.compute for p, *_ in running)} of "
        f"{sum(len(g) * model_of[h].compute_slices for h, g in hosts)} compute slices, "
        f"{sum(c for *_, c, _, _ in running):g} of {sum(cpu_cap.values()):g} cpu; {len(new)} new workloads "
        f"asking {sum(p.compute for p, *_ in new)} compute slices and {sum(c for _, c, _, _ in new):g} cpu"
    )
    for hid, gids in hosts:
        b.add_host(hid, dict.fromkeys(gids, model_of[hid].name), cpu=cpu_cap[hid], ram_gb=ram_cap[hid])
    width = max(4, len(str(max(len(running), len(new)))))
    for i, (p, gid, start, cpu, ram, delta) in enumerate(running):
        b.add_workload(
            f"run{i + 1:0{width}d}",
            p.name,
            placement=(gid, start),
            cpu=cpu,
            ram_gb=ram,
            weight=float(p.compute),
            migration_weight=delta,
        )
    for i, (p, cpu, ram, delta) in enumerate(new):
        b.add_workload(
            f"new{i + 1:0{width}d}",
            p.name,
            cpu=cpu,
            ram_gb=ram,
            weight=float(p.compute),
            migration_weight=delta,
        )
    return b.build()


def _rates(label: str, values: Sequence[float], *, positive: bool) -> list[float]:
    out = [float(v) for v in values]
    if not out:
        raise ValueError(f"{label} must hold at least one value")
    for v in out:
        if not (v > 0 if positive else v >= 0) or v == float("inf"):  # also false for NaN
            rule = "positive" if positive else "non-negative"
            raise ValueError(f"{label} must hold {rule} finite numbers, got {v!r}")
    return out


def _check(n_gpus: int, seed: int, gpus_per_host: int, running_share: float, host_fraction: float) -> None:
    check_integers(("n_gpus", n_gpus, 1), ("seed", seed, 0), ("gpus_per_host", gpus_per_host, 1))
    check_gpus(n_gpus, "n_gpus")
    if not 0 < running_share <= 1:  # also false for NaN
        raise ValueError(f"running_share must be in (0, 1], got {running_share!r}")
    if not 0 < host_fraction < float("inf"):
        raise ValueError(f"host_fraction must be a positive finite number, got {host_fraction!r}")
