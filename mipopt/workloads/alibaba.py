"""The Alibaba GPU cluster trace 2023 ("openb"), mapped to MIG as in the GRMU paper (section 8.1).

The trace (Weng et al., *Beware of Fragmentation*, USENIX ATC 2023;
https://github.com/alibaba/clusterdata, ``cluster-trace-gpu-v2023``) is for research or
study use only and is never copied into this repository: :func:`alibaba_trace` reads it
from a directory holding ``openb_node_list_gpu_node.csv`` and ``openb_pod_list_default.csv``.

The GRMU paper's mapping (section 8.1, Eqs. 27-30), as implemented here:

1. Every GPU node becomes a host of A100-40GB GPUs, as many as its ``gpu`` column
   (1,213 hosts; ``gpus_per_host`` caps it). Hosts keep the node's cpu (``cpu_milli / 1000``) and ram
   (``memory_mib / 1024`` GB), pods theirs, unless ``resources=False``.
2. Arrival-time outliers are removed by the IQR rule: with Q1, Q3 the 25th and 75th
   percentiles of ``creation_time`` over all pods of the list, pods outside
   ``[Q1 - 1.5 IQR, Q3 + 1.5 IQR]`` are dropped (14 early pods of the real trace).
3. A pod's GPU need is u = ``num_gpu * gpu_milli / 1000`` GPUs; pods needing more than one
   full GPU (u > 1: the 75 pods of 2, 4 or 8 full GPUs) are dropped.
4. u is normalized by its maximum over the pods kept (Eq. 27; 1 on the real trace, as
   the paper drops multi-GPU pods first), each profile scored ``compute x memory
   slots`` normalized by the largest score (Eqs. 28-29; only the six profiles of the
   paper's Table 1, no ``+me``), and the nearest score wins (Eq. 30; ties go to the
   smaller profile). A pod without GPUs (u = 0) gets the smallest profile, 1g.5gb,
   which is also the nearest.

On the real trace, steps 2 and 3 leave exactly the paper's 8,063 workloads whichever
order they run in and whichever percentile interpolation is used (all give the same 14
outliers, none of them multi-GPU). Normalizing u after dropping the multi-GPU pods
makes full-GPU pods 7g.40gb, consistent with the paper's remark that 7g.40gb is
abundant (normalizing by the 8-GPU maximum would map them to 2g.10gb instead).

:func:`mipopt.simulation.snapshot.alibaba_snapshot` turns the mapped trace into one
exact-model instance: the whole cluster at one moment (by default the peak of requests
alive, :func:`alibaba_peak`), what a first-fit replay has running there, and the requests
of the next hours as new workloads. It replays the trace in the simulator, so it lives
in the simulation layer.
"""

from __future__ import annotations

import csv
import math
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from mipopt.catalog import Profile, get_model
from mipopt.errors import InstanceError
from mipopt.instance import InstanceBuilder
from mipopt.instance.trace import Request, Trace

__all__ = [
    "NODE_FILE",
    "POD_FILE",
    "POD_PHASES",
    "SHARES",
    "alibaba_peak",
    "alibaba_summary",
    "alibaba_trace",
]

NODE_FILE = "openb_node_list_gpu_node.csv"
POD_FILE = "openb_pod_list_default.csv"
_NODE_COLUMNS = ("sn", "cpu_milli", "memory_mib", "gpu")
_POD_COLUMNS = ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "creation_time", "deletion_time")
_PHASE_COLUMN = "pod_phase"
#: Kubernetes pod phases (the trace has Running, Failed, Pending and Succeeded).
POD_PHASES = ("Pending", "Running", "Succeeded", "Failed", "Unknown")
#: How a pod's GPU need u is compared with a profile (``share`` of :func:`alibaba_trace`).
SHARES = ("product", "compute", "memory")
_MODEL = "A100-40GB"
_HOUR_S = 3600.0
# The trace counts time in whole seconds; a pod deleted in the second it was created
# (one Pending pod of the real trace) is given that second as its duration.
_MIN_DURATION_S = 1.0


def alibaba_trace(
    path: str | Path,
    *,
    compress: float = 1.0,
    host_fraction: float = 1.0,
    departures: bool = True,
    seed: int = 0,
    resources: bool = True,
    gpus_per_host: int | None = None,
    duration_scale: float = 1.0,
    iqr: bool = True,
    phases: str | Sequence[str] | None = None,
    cpu_pods: bool = True,
    share: str = "product",
) -> Trace:
    """Read the Alibaba GPU trace 2023 from ``path`` and map it to MIG requests (GRMU section 8.1).

    See the module docstring for the mapping. Arrival = ``creation_time``, departure =
    ``deletion_time`` (the trace's end of the pod, whatever its phase); times are in
    hours from the first arrival kept.

    The raw timestamps load the cluster lightly, hence five load controls:

    * ``compress``: inter-arrival times are divided by it (durations unchanged), so the
      offered load is multiplied by it and the arrivals span ``1 / compress`` of the
      trace's time.
    * ``host_fraction``: keep a seeded uniform sample of ``round(host_fraction *
      hosts)`` hosts (at least one), in their order; all workloads stay.
    * ``departures=False``: workloads never leave (departure = infinity), the cluster
      only fills.
    * ``duration_scale``: durations are multiplied by it (arrivals unchanged), so the
      offered load is multiplied by it on the trace's own time axis (unlike ``compress``,
      hourly series and intervals in hours keep their meaning); 3600 reads the trace's
      seconds of lifetime as hours.
    * ``gpus_per_host``: each node keeps at most this many of its GPUs (the first
      ones); 1 reads section 8.1's "each GPU mapped to an NVIDIA A100" as one A100 per
      node (1,213 GPUs instead of 6,212).

    Readings of section 8.1 where the paper leaves a choice (the defaults give its 8,063
    workloads):

    * ``iqr=False`` keeps the arrival-time outliers (step 2 skipped).
    * ``phases``: only pods whose ``pod_phase`` is one of these count as VMs, e.g.
      ``"Running+Succeeded+Failed"`` (the pods that were scheduled; a string joins
      phases with ``+``); None keeps every phase. The IQR rule then runs over those pods.
    * ``cpu_pods=False`` drops the pods that ask for no GPU (``num_gpu`` or
      ``gpu_milli`` 0; 1,088 of the real trace, all mapped to 1g.5gb otherwise).
    * ``share``: what u is compared with. ``"product"`` is Eqs. 28-29 (compute x
      memory slots, normalized); ``"compute"`` the profile's share of the compute
      slices (1/7 ... 7/7) and ``"memory"`` its share of the memory slots (1/8 ... 8/8),
      each the GPU fraction the profile gives. Ties go to the smaller profile.

    Parameters
    ----------
    path
        Directory holding ``openb_node_list_gpu_node.csv`` and ``openb_pod_list_default.csv``.
    compress
        Factor dividing inter-arrival times, positive.
    host_fraction
        Share of hosts kept, in (0, 1].
    departures
        Whether workloads leave at their deletion time.
    seed
        Seed of the host sample.
    resources
        Whether hosts and workloads keep their cpu and ram (False: GPUs only).
    gpus_per_host
        At most this many GPUs per host, at least 1; None keeps every GPU of the node.
    duration_scale
        Factor multiplying durations, positive.
    iqr
        Whether arrival-time outliers are removed.
    phases
        Pod phases that count as VMs (names from :data:`POD_PHASES`); None: all.
    cpu_pods
        Whether pods without GPUs count as VMs.
    share
        One of :data:`SHARES`.

    Returns
    -------
    Trace
        ``time_unit="h"``; hosts named by the node's ``sn``, GPUs ``{sn}-g0``, ...; requests
        named by the pod's ``name``, weight 1. ``meta`` holds the arguments, the counts
        dropped per rule, the IQR bounds and the GPU-need to profile table.

    Raises
    ------
    InstanceError
        Naming the file and column (or row) that is missing or bad.
    ValueError
        For a bad load control.
    """
    if not compress > 0 or compress == math.inf:
        raise ValueError(f"compress must be a positive finite number, got {compress!r}")
    if not 0 < host_fraction <= 1:
        raise ValueError(f"host_fraction must be in (0, 1], got {host_fraction!r}")
    if not duration_scale > 0 or duration_scale == math.inf:
        raise ValueError(f"duration_scale must be a positive finite number, got {duration_scale!r}")
    if gpus_per_host is not None and (
        isinstance(gpus_per_host, bool) or not isinstance(gpus_per_host, int) or gpus_per_host < 1
    ):
        raise ValueError(f"gpus_per_host must be a whole number >= 1 or None, got {gpus_per_host!r}")
    if share not in SHARES:
        raise ValueError(f"share must be one of {', '.join(SHARES)}, got {share!r}")
    wanted = _phases(phases)
    root = Path(path)
    nodes = _read(root / NODE_FILE, _NODE_COLUMNS)
    pods = _read(root / POD_FILE, _POD_COLUMNS + ((_PHASE_COLUMN,) if wanted is not None else ()))
    node_file, pod_file = str(root / NODE_FILE), str(root / POD_FILE)

    model = get_model(_MODEL)
    profiles = [p for p in model.profiles if not p.media_extension]
    score = np.array([_share(p, share) for p in profiles], dtype=float)
    score /= score.max()
    # Ties (none among the six profiles under "product") go to the smaller profile.
    order = sorted(
        range(len(profiles)), key=lambda k: (score[k], profiles[k].memory_slots, profiles[k].compute)
    )
    profiles = [profiles[k] for k in order]
    score = score[order]

    names = pods["name"]
    created = _numbers(pods, "creation_time", pod_file)
    deleted = _numbers(pods, "deletion_time", pod_file)
    need = _numbers(pods, "num_gpu", pod_file) * _numbers(pods, "gpu_milli", pod_file) / 1000.0
    vm = np.ones(len(names), dtype=bool)
    if wanted is not None:
        vm &= np.isin(np.asarray(pods[_PHASE_COLUMN], dtype=object), list(wanted))
    if not cpu_pods:
        vm &= need > 0
    q1, q3 = np.percentile(created[vm], [25, 75]) if vm.any() else (0.0, 0.0)
    low, high = q1 - 1.5 * (q3 - q1), q3 + 1.5 * (q3 - q1)
    inlier = (created >= low) & (created <= high) if iqr else np.ones(len(names), dtype=bool)
    single = need <= 1.0
    keep = np.flatnonzero(vm & inlier & single)
    if not len(keep):
        raise InstanceError(
            pod_file, "no pod left after selecting VMs and removing arrival outliers and multi-GPU pods"
        )
    u = need[keep]
    u_hat = u / u.max() if u.max() > 0 else u
    chosen = np.abs(u_hat[:, None] - score[None, :]).argmin(axis=1)
    cpu = _numbers(pods, "cpu_milli", pod_file)[keep] / 1000.0
    ram = _numbers(pods, "memory_mib", pod_file)[keep] / 1024.0

    # Times: arrivals in hours from the first kept arrival, gaps divided by ``compress``.
    arrival_s = created[keep]
    duration_s = np.maximum(deleted[keep] - arrival_s, _MIN_DURATION_S)
    arrival_h = (arrival_s - arrival_s.min()) / _HOUR_S / compress
    duration_h = duration_s / _HOUR_S * duration_scale
    # Stable order by arrival, ties in file order.
    rank = np.argsort(arrival_h, kind="stable")
    requests = tuple(
        Request(
            names[int(keep[i])],
            profiles[int(chosen[i])].name,
            float(arrival_h[i]),
            float(arrival_h[i] + duration_h[i]) if departures else math.inf,
            cpu=float(cpu[i]) if resources else 0.0,
            ram_gb=float(ram[i]) if resources else 0.0,
        )
        for i in rank
    )

    gpu_count = _numbers(nodes, "gpu", node_file)
    node_cpu = _numbers(nodes, "cpu_milli", node_file) / 1000.0
    node_ram = _numbers(nodes, "memory_mib", node_file) / 1024.0
    bad = np.flatnonzero((gpu_count < 1) | (gpu_count != np.round(gpu_count)))
    if len(bad):
        row = int(bad[0])
        raise InstanceError(
            f"{node_file}: row {row + 2} column 'gpu'",
            f"needs a whole number of GPUs >= 1, got {gpu_count[row]}",
        )
    n_nodes = len(gpu_count)
    n_hosts = max(1, round(host_fraction * n_nodes))
    hosts = (
        np.arange(n_nodes)
        if n_hosts == n_nodes
        else np.sort(np.random.default_rng(seed).choice(n_nodes, size=n_hosts, replace=False))
    )
    b = InstanceBuilder("alibaba-gpu-v2023")
    for j in hosts:
        sn = nodes["sn"][j]
        b.add_host(
            sn,
            {f"{sn}-g{k}": _MODEL for k in range(int(min(gpu_count[j], gpus_per_host or gpu_count[j])))},
            cpu=float(node_cpu[j]) if resources else None,
            ram_gb=float(node_ram[j]) if resources else None,
        )
    return Trace(
        name=f"alibaba-gpu-v2023-x{compress:g}"
        + (f"-hosts{host_fraction:g}" if host_fraction < 1 else "")
        + (f"-gpus{gpus_per_host}" if gpus_per_host is not None else "")
        + (f"-d{duration_scale:g}" if duration_scale != 1 else "")
        + ("" if iqr else "-noiqr")
        + ("" if wanted is None else "-" + "+".join(wanted))
        + ("" if cpu_pods else "-gpupods")
        + ("" if share == "product" else f"-{share}"),
        cluster=b.build(),
        requests=requests,
        time_unit="h",
        meta={
            "generator": "alibaba",
            "path": str(root),
            "compress": compress,
            "host_fraction": host_fraction,
            "departures": departures,
            "seed": seed,
            "resources": resources,
            "gpus_per_host": gpus_per_host,
            "duration_scale": duration_scale,
            "iqr": iqr,
            "phases": None if wanted is None else list(wanted),
            "cpu_pods": cpu_pods,
            "share": share,
            "pods": len(names),
            "dropped_not_vm": int((~vm).sum()),
            "dropped_outliers": int((vm & ~inlier).sum()),
            "dropped_multi_gpu": int((vm & inlier & ~single).sum()),
            "iqr_bounds_s": [float(low), float(high)],
            "profile_scores": {p.name: float(s) for p, s in zip(profiles, score, strict=True)},
        },
    )


def alibaba_summary(trace: Trace) -> dict[str, Any]:
    """Counts of a trace and the peak memory-slot use it would cause if every request were accepted.

    Parameters
    ----------
    trace
        Any trace (meant for :func:`alibaba_trace`'s).

    Returns
    -------
    dict
        ``hosts``, ``gpus``, ``workloads``, ``profiles`` (name -> count, largest first),
        ``capacity_slots``, ``peak_slots`` and ``peak_fraction`` (peak over capacity; a
        departure at the same time as an arrival counts first), ``peak_time``, and
        ``span`` (last arrival minus first, in the trace's unit).
    """
    cluster = trace.cluster
    sizes: dict[str, int] = {}
    for g in cluster.gpus:
        for p in g.model.profiles:
            sizes.setdefault(p.name, p.memory_slots)
    capacity = sum(g.model.slots for g in cluster.gpus)
    times = []
    deltas = []
    for r in trace.requests:
        size = sizes.get(r.size, 0)  # a request sized by memory counts 0
        times += [r.arrival, r.departure]
        deltas += [size, -size]
    peak, peak_time = 0, 0.0
    if times:
        t = np.asarray(times)
        d = np.asarray(deltas)
        # Departures (negative) before arrivals at equal times.
        order = np.lexsort((d, t))
        use = np.cumsum(d[order])
        at = int(use.argmax())
        peak, peak_time = int(use[at]), float(t[order][at])
    counts = Counter(r.size for r in trace.requests)
    arrivals = [r.arrival for r in trace.requests]
    return {
        "hosts": len(cluster.hosts),
        "gpus": len(cluster.gpus),
        "workloads": len(trace.requests),
        "profiles": dict(sorted(counts.items(), key=lambda kv: (-sizes.get(kv[0], 0), kv[0]))),
        "capacity_slots": capacity,
        "peak_slots": peak,
        "peak_fraction": peak / capacity if capacity else 0.0,
        "peak_time": peak_time,
        "span": (max(arrivals) - min(arrivals)) if arrivals else 0.0,
    }


def alibaba_peak(trace: Trace) -> tuple[float, int]:
    """The moment the most requests are alive, and how many: ``(time, count)``.

    A request is alive at ``t`` when ``arrival <= t < departure`` (whether or not a policy
    would accept it: this counts what is asked for). A departure at the same time as an
    arrival counts first, as in the simulator; on ties the earliest moment wins. The
    peak is always an arrival time. ``(0.0, 0)`` for a trace without requests.
    """
    if not trace.requests:
        return 0.0, 0
    times = np.array([t for r in trace.requests for t in (r.arrival, r.departure)])
    deltas = np.tile([1, -1], len(trace.requests))
    order = np.lexsort((deltas, times))  # by time, departures (-1) first
    alive = np.cumsum(deltas[order])
    k = int(alive.argmax())  # the first maximum: the earliest moment
    return float(times[order][k]), int(alive[k])


def _phases(phases: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """``phases`` as a tuple of known pod phases (``"Running+Failed"`` split on ``+``); ValueError otherwise."""
    if phases is None:
        return None
    items = [x.strip() for x in phases.split("+")] if isinstance(phases, str) else [str(x) for x in phases]
    bad = [x for x in items if x not in POD_PHASES]
    if bad or not items:
        raise ValueError(f"phases must be pod phases joined by '+' ({', '.join(POD_PHASES)}), got {phases!r}")
    return tuple(dict.fromkeys(items))


def _share(profile: Profile, share: str) -> float:
    """The quantity of ``profile`` compared with a pod's GPU need (before normalizing)."""
    if share == "compute":
        return float(profile.compute)
    if share == "memory":
        return float(profile.memory_slots)
    return float(profile.compute * profile.memory_slots)


def _read(file: Path, columns: tuple[str, ...]) -> dict[str, list[str]]:
    """A CSV file's needed columns as lists of strings; InstanceError on a missing file or column."""
    try:
        with file.open(newline="") as f:
            reader = csv.DictReader(f)
            header = reader.fieldnames or []
            missing = [c for c in columns if c not in header]
            if missing:
                raise InstanceError(f"{file}: column {missing[0]!r}", "is missing from the header")
            out: dict[str, list[str]] = {c: [] for c in columns}
            for row in reader:
                for c in columns:
                    out[c].append(row[c] or "")
    except OSError as exc:
        raise InstanceError(str(file), f"cannot read the file ({exc.strerror or exc})") from None
    return out


def _numbers(table: dict[str, list[str]], column: str, file: str) -> np.ndarray:
    """A column as floats; InstanceError naming the file, row and column of a non-number."""
    values = table[column]
    out = np.empty(len(values))
    for i, v in enumerate(values):
        try:
            out[i] = float(v)
        except ValueError:
            raise InstanceError(f"{file}: row {i + 2} column {column!r}", f"is not a number: {v!r}") from None
        if not math.isfinite(out[i]):
            raise InstanceError(f"{file}: row {i + 2} column {column!r}", f"is not a finite number: {v!r}")
    return out
