"""The dense class: few hosts of many GPUs whose cpu and ram bind (issue 26's exact benchmark).

The IBM set-up binds on the GPUs' geometry and the hard class on many small hosts; real
clusters are often a handful of dense servers (4-8 GPUs each, a DGX or an HGX board) whose cpu
and ram run out before their GPUs do, with some running workloads that may not move. The
acceptance and hardware stages are easy there, while the migrations stage must choose among
many hosts' worth of stayers and leavers against binding host rows.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.geometry import default_start, tables_for
from mipopt.instance import Instance, InstanceBuilder
from mipopt.workloads.layout import GpuFill, check_gpus, check_integers, check_shares, host_layout

__all__ = ["DENSE_CPU", "DENSE_RAM_GB", "dense_instance"]

#: Host cpu and ram (GB) a host draws from, uniformly.
DENSE_CPU = (32, 48, 64, 80, 96)
DENSE_RAM_GB = (128, 192, 256, 384, 512)


def dense_instance(
    hosts: int,
    *,
    seed: int,
    gpus_per_host: int = 8,
    models: Sequence[str] = ("A100-80GB",),
    used_share: float = 0.5,
    pinned_share: float = 0.3,
    load: float = 0.7,
    restricted_share: float = 0.2,
    name: str | None = None,
) -> Instance:
    """A seeded instance of the dense class: few hosts of many GPUs, binding host cpu and ram.

    Every random choice is drawn from ``numpy.random.default_rng(seed)``, in this order:

    1. **Cluster.** ``hosts`` hosts of ``gpus_per_host`` GPUs (ids from
       :func:`mipopt.workloads.layout.host_layout`); GPU ``i`` of every host is of
       ``models[i % len(models)]``: one model per cluster by default, or two (say
       ``("A100-40GB", "H100-80GB")``) mixed on every host. Each host draws its weight from
       {1, 2}, its cpu from :data:`DENSE_CPU` (32-96) and its ram from :data:`DENSE_RAM_GB`
       (128-512 GB), uniformly.
    2. **Running workloads.** Each GPU, in host order, is used with probability ``used_share``
       and then draws 1-4 workloads; each draws a profile uniformly among its model's
       profiles without a media extension that still fit (a legal free start, below
       ``max_instances``), cpu uniformly from 2-8 and ram from {8, 16, 24, 32} GB, and sits at
       the driver's default start (:func:`mipopt.geometry.default_start`: the start that
       leaves the most configuration capability, the lowest on ties), as a cluster grown by
       ``nvidia-smi mig -cgi`` without placements would have it. A workload its host's cpu or
       ram cannot take is not drawn again (the GPU ends there). A running workload is pinned
       with probability ``pinned_share`` and draws its migration weight from {1, 0.5}.
    3. **New workloads.** Drawn until their memory slots add up to ``load`` of the cluster's
       (on the smallest of the models having the profile): each draws a profile name
       uniformly among the cluster's models' profiles without a media extension, cpu from
       2-16, ram from {8, 16, ..., 64} GB and weight from {1, 2, 3}; with probability
       ``restricted_share`` it is restricted to one of the models having its profile
       (``gpu_models``). Their cpu and ram add up to about what the hosts have left, so the
       hosts bind before the GPUs do.

    Parameters
    ----------
    hosts
        Hosts, at least 1.
    seed
        Seed of the generator: the same arguments give the same instance.
    gpus_per_host
        GPUs per host, at least 1.
    models
        One or two GPU model names (catalog names or aliases), mixed on every host.
    used_share, pinned_share, load, restricted_share
        As above; shares in [0, 1] (``load`` in (0, 1]).
    name
        Instance name; default ``dense-{hosts}x{gpus_per_host}-seed{seed}``.

    Raises
    ------
    ValueError
        Naming the parameter, the rule and the bad value.

    Examples
    --------
    >>> inst = dense_instance(5, seed=0, gpus_per_host=8)
    >>> len(inst.hosts), len(inst.gpus), {h.cpu for h in inst.hosts} <= set(DENSE_CPU)
    (5, 40, True)
    """
    _check(hosts, seed, gpus_per_host, used_share, pinned_share, load, restricted_share, models)
    gpu_models = [get_model(m) for m in models]
    rng = np.random.default_rng(seed)

    # 1. hosts
    layout = host_layout(hosts * gpus_per_host, gpus_per_host)
    model_of = {gid: gpu_models[i % len(gpu_models)] for _, gids in layout for i, gid in enumerate(gids)}
    weight = {hid: float(rng.choice([1, 2])) for hid, _ in layout}
    cpu_cap = {hid: float(rng.choice(DENSE_CPU)) for hid, _ in layout}
    ram_cap = {hid: float(rng.choice(DENSE_RAM_GB)) for hid, _ in layout}

    # 2. running workloads: (profile, GPU, start, cpu, ram, pinned, delta)
    running: list[tuple[Profile, str, int, float, float, bool, float]] = []
    for hid, gids in layout:
        cpu_used = ram_used = 0.0
        for gid in gids:
            if rng.random() >= used_share:
                continue
            model = model_of[gid]
            tables = tables_for(model)
            state = GpuFill()
            for _ in range(int(rng.integers(1, 5))):
                fits = [
                    p
                    for k, p in enumerate(model.profiles)
                    if not p.media_extension and state.admits(tables, k, p)
                ]
                cpu, ram = float(rng.integers(2, 9)), float(rng.choice([8, 16, 24, 32]))
                if not fits or cpu_used + cpu > cpu_cap[hid] or ram_used + ram > ram_cap[hid]:
                    break
                p = fits[int(rng.integers(len(fits)))]
                start = default_start(model, state.mask, p)
                assert start is not None  # p has a legal free start
                state.take(p, start)
                cpu_used, ram_used = cpu_used + cpu, ram_used + ram
                pinned = bool(rng.random() < pinned_share)
                running.append((p, gid, start, cpu, ram, pinned, float(rng.choice([1.0, 0.5]))))

    # 3. new workloads: (profile name, cpu, ram, weight, models)
    names = list(dict.fromkeys(p.name for m in gpu_models for p in m.profiles if not p.media_extension))
    having = {n: [m for m in dict.fromkeys(gpu_models) if m.find(n) is not None] for n in names}
    slots = {n: min(_slots(m, n) for m in having[n]) for n in names}
    target = load * sum(m.slots for m in model_of.values())
    new: list[tuple[str, float, float, float, tuple[str, ...] | None]] = []
    asked = 0
    while asked < target:
        n = names[int(rng.integers(len(names)))]
        cpu, ram = float(rng.integers(2, 17)), float(8 * rng.integers(1, 9))
        w = float(rng.integers(1, 4))
        only: tuple[str, ...] | None = None
        if rng.random() < restricted_share:
            only = (having[n][int(rng.integers(len(having[n])))].name,)
        new.append((n, cpu, ram, w, only))
        asked += slots[n]

    # 4. the instance
    b = InstanceBuilder(name or f"dense-{hosts}x{gpus_per_host}-seed{seed}")
    kinds = " and ".join(dict.fromkeys(m.name for m in gpu_models))
    b.description = (
        f"dense class (mipopt.workloads.dense), seed {seed}: {hosts} hosts of {gpus_per_host} GPUs ({kinds}), "
        f"host cpu {sum(cpu_cap.values()):g} and ram {sum(ram_cap.values()):g} GB in all; {len(running)} running "
        f"workloads ({sum(1 for *_, pin, _ in running if pin)} pinned) holding "
        f"{sum(c for *_, c, _, _, _ in running):g} cpu; {len(new)} new workloads asking "
        f"{sum(c for _, c, *_ in new):g} cpu and {asked} memory slots ({load:g} of the cluster's)"
    )
    for hid, gids in layout:
        b.add_host(
            hid,
            {gid: model_of[gid].name for gid in gids},
            cpu=cpu_cap[hid],
            ram_gb=ram_cap[hid],
            weight=weight[hid],
        )
    width = max(4, len(str(max(len(running), len(new), 1))))
    for i, (p, gid, start, cpu, ram, pinned, delta) in enumerate(running):
        b.add_workload(
            f"run{i + 1:0{width}d}",
            p.name,
            placement=(gid, start),
            pinned=pinned,
            cpu=cpu,
            ram_gb=ram,
            weight=float(p.compute),
            migration_weight=delta,
        )
    for i, (n, cpu, ram, w, only) in enumerate(new):
        b.add_workload(f"new{i + 1:0{width}d}", n, cpu=cpu, ram_gb=ram, weight=w, gpu_models=only)
    return b.build()


def _slots(model: GpuModel, name: str) -> int:
    profile = model.find(name)
    assert profile is not None
    return profile.memory_slots


def _check(
    hosts: int,
    seed: int,
    gpus_per_host: int,
    used_share: float,
    pinned_share: float,
    load: float,
    restricted_share: float,
    models: Sequence[str],
) -> None:
    check_integers(("hosts", hosts, 1), ("seed", seed, 0), ("gpus_per_host", gpus_per_host, 1))
    check_gpus(hosts * gpus_per_host, "hosts x gpus_per_host")
    check_shares(
        ("used_share", used_share), ("pinned_share", pinned_share), ("restricted_share", restricted_share)
    )
    if not 0 < load <= 1:
        raise ValueError(f"load must be in (0, 1], got {load!r}")
    if not 1 <= len(models) <= 2:
        raise ValueError(f"models must name one or two GPU models, got {list(models)!r}")
