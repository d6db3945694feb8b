"""Hypothesis strategies for random valid instances.

The running state is drawn from the catalog's placement lists directly (free
slots, per-profile maxima, one ``+me`` per GPU, host capacities), so the
strategies share no code with the placement methods they feed.
"""

from __future__ import annotations

import csv
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hypothesis import strategies as st

from mipopt.catalog import GpuModel, Profile, builtin_models
from mipopt.instance import Instance, InstanceBuilder

#: The checkout, and its committed instances (tests read them in place).
ROOT = Path(__file__).resolve().parents[1]
INSTANCES = ROOT / "instances"

#: One stage of a solution file, as an exact method writes it (the quickstart's acceptance, proven).
PROVEN_STAGE: dict[str, Any] = {
    "objective": "acceptance",
    "value": 8,
    "bound": 8,
    "gap": 0,
    "proven": True,
    "termination": "optimal",
    "runtime_s": 0.1,
    "model": "aggregate",
}

MODELS: tuple[GpuModel, ...] = tuple(builtin_models().values())
CPU = (0, 2, 4, 8, 16)
RAM_GB = (0, 16, 32, 64)
WEIGHTS = (1.0, 1.0, 2.0, 0.5)
HEADROOM_CPU = (0, 0, 4, 16)
HEADROOM_RAM_GB = (0, 0, 32, 128)


@dataclass
class GpuState:
    """Occupancy of one GPU while drawing: slot mask, profile counts, ``+me`` in use."""

    model: GpuModel
    mask: int = 0
    counts: Counter[str] = field(default_factory=Counter)
    media: bool = False

    def free_starts(self, profile: Profile) -> list[int]:
        """Starts where ``profile`` may go now, by every per-GPU rule."""
        if self.counts[profile.name] >= profile.max_instances:
            return []
        if profile.media_extension and self.media:
            return []
        return [s for s in profile.starts if not self.mask & profile.slot_mask(s)]

    def take(self, profile: Profile, start: int) -> None:
        self.mask |= profile.slot_mask(start)
        self.counts[profile.name] += 1
        self.media |= profile.media_extension


def _profiles(draw: st.DrawFn, model: GpuModel) -> Profile:
    """A profile of ``model``, ``+me`` ones drawn more often than their share so they meet."""
    media = [p for p in model.profiles if p.media_extension]
    if media and draw(st.integers(0, 3)) == 0:
        return draw(st.sampled_from(media))
    return draw(st.sampled_from(model.profiles))


@st.composite
def instances(
    draw: st.DrawFn,
    *,
    max_hosts: int = 3,
    max_gpus: int = 4,
    max_running_per_gpu: int = 3,
    max_new: int = 8,
    models: tuple[GpuModel, ...] = MODELS,
) -> Instance:
    """A random valid instance.

    1..``max_hosts`` hosts of 1..``max_gpus`` GPUs of random models; on each GPU up
    to ``max_running_per_gpu`` running workloads at free legal starts (some pinned,
    some named by profile id, some restricted to their model); up to ``max_new``
    new workloads of profiles of the models present (some restricted to models
    that have the profile). Some hosts get cpu/ram capacities a little above
    what their running workloads use, so that capacity decides some placements.
    """
    hosts: list[tuple[str, dict[str, GpuModel]]] = []
    states: dict[str, GpuState] = {}
    for h in range(draw(st.integers(1, max_hosts))):
        gpus = {}
        for g in range(draw(st.integers(1, max_gpus))):
            gid = f"h{h}-g{g}"
            gpus[gid] = draw(st.sampled_from(models))
            states[gid] = GpuState(gpus[gid])
        hosts.append((f"h{h}", gpus))

    running: list[dict[str, Any]] = []  # InstanceBuilder.add_workload arguments
    used: Counter[str] = Counter()
    used_ram: Counter[str] = Counter()
    for host_id, gpus in hosts:
        for gid, model in gpus.items():
            state = states[gid]
            for _ in range(draw(st.integers(0, max_running_per_gpu))):
                profile = _profiles(draw, model)
                starts = state.free_starts(profile)
                if not starts:
                    continue
                start = draw(st.sampled_from(starts))
                state.take(profile, start)
                by_id = draw(st.integers(0, 4)) == 0
                restricted = by_id or draw(st.booleans())
                cpu, ram = draw(st.sampled_from(CPU)), draw(st.sampled_from(RAM_GB))
                used[host_id] += cpu
                used_ram[host_id] += ram
                running.append(
                    dict(
                        workload_id=f"r{len(running)}",
                        profile=profile.id if by_id else profile.name,
                        gpu_models=[model.name] if restricted else None,
                        placement=(gid, start),
                        pinned=draw(st.integers(0, 3)) == 0,
                        cpu=cpu,
                        ram_gb=ram,
                        migration_weight=draw(st.sampled_from(WEIGHTS)),
                        weight=draw(st.sampled_from(WEIGHTS)),
                    )
                )

    present = {m.name: m for _, gpus in hosts for m in gpus.values()}
    new: list[dict[str, Any]] = []
    for n in range(draw(st.integers(0, max_new))):
        model = present[draw(st.sampled_from(sorted(present)))]
        profile = _profiles(draw, model)
        gpu_models = None
        if draw(st.booleans()):
            having = sorted(name for name, m in present.items() if m.find(profile.name) is not None)
            gpu_models = draw(st.lists(st.sampled_from(having), min_size=1, unique=True))
        new.append(
            dict(
                workload_id=f"n{n}",
                profile=profile.name,
                gpu_models=gpu_models,
                cpu=draw(st.sampled_from(CPU)),
                ram_gb=draw(st.sampled_from(RAM_GB)),
                weight=draw(st.sampled_from(WEIGHTS)),
                migration_weight=draw(st.sampled_from(WEIGHTS)),
            )
        )

    b = InstanceBuilder(name=f"random-{len(states)}-gpus")
    for host_id, gpus in hosts:
        # tight more often than not: headroom 0 makes any further cpu/ram-using workload too much
        cap_cpu = used[host_id] + draw(st.sampled_from(HEADROOM_CPU)) if draw(st.integers(0, 2)) else None
        cap_ram = (
            used_ram[host_id] + draw(st.sampled_from(HEADROOM_RAM_GB)) if draw(st.integers(0, 2)) else None
        )
        b.add_host(host_id, dict(gpus), cpu=cap_cpu, ram_gb=cap_ram, weight=draw(st.sampled_from(WEIGHTS)))
    for kwargs in draw(st.permutations(running + new)):
        b.add_workload(**kwargs)
    return b.build()


def capped_a100(workloads: int) -> Instance:
    """One custom A100-40GB ("Capped-40GB") whose 1g.5gb may run only twice, with new 1g.5gb workloads w0, w1, ..."""
    from mipopt.catalog import get_model, model_from_dict

    data = get_model("A100-40GB").to_dict()
    data["model"] = "Capped-40GB"
    data["profiles"][0]["max_instances"] = 2
    b = InstanceBuilder("capped", custom_models=[model_from_dict(data)])
    b.add_host("h1", {"c0": "Capped-40GB"})
    for k in range(workloads):
        b.add_workload(f"w{k}", "1g.5gb")
    return b.build()


# ---------------------------------------------------------------- Alibaba trace files (synthetic)

ALIBABA_NODE_HEADER = ["sn", "cpu_milli", "memory_mib", "gpu", "model"]
ALIBABA_POD_HEADER = [
    "name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli", "gpu_spec", "qos", "pod_phase",
    "creation_time", "deletion_time", "scheduled_time",
]  # fmt: skip


def write_alibaba_csvs(
    root: Path, nodes: list[tuple[str, int]], pods: list[tuple[str, int, int, int, int]]
) -> Path:
    """Write the two files of the Alibaba GPU trace 2023 that mipopt reads, with their real columns.

    ``nodes``: (name, GPUs); ``pods``: (name, num_gpu, gpu_milli, creation_time, deletion_time),
    in seconds. Every node has 96 cores and 768 GiB, every pod asks 4 cores and 8 GiB.
    """
    root.mkdir(parents=True, exist_ok=True)
    with (root / "openb_node_list_gpu_node.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(ALIBABA_NODE_HEADER)
        writer.writerows([name, 96000, 786432, gpus, "G2"] for name, gpus in nodes)
    with (root / "openb_pod_list_default.csv").open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(ALIBABA_POD_HEADER)
        writer.writerows(
            [name, 4000, 8192, n, milli, "", "LS", "Running", t0, t1, t0] for name, n, milli, t0, t1 in pods
        )
    return root


def proven_triple(inst: Instance, model: str, solver: str = "highs") -> tuple[float, float, float]:
    """The lexicographic optimum (acceptance, hardware, migrations) of ``model``, proven and verified."""
    from mipopt.exact.driver import solve_exact
    from mipopt.instance import Status, Termination
    from mipopt.verifier import verify

    sol = solve_exact(inst, model=model, solver=solver)
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert (sol.termination, sol.status) == (Termination.OPTIMAL, Status.OPTIMAL), sol.message
    o = report.objectives
    return (o.acceptance, o.hardware, o.migrations)


# --- a node of IBM WPM Figs. 4 and 5, shared by the verifier and the IBM rule tests


def ibm_fig4() -> Instance:
    """A node consistent with the text of IBM's Figs. 4 and 5 (the figures are not in the text).

    gpu1: w1 2g.20gb at 0, w2 1g.20gb at 2 (one compute, two slots: a stranded compute slice);
    gpu2: w3 4g.40gb at 0, w4 and w5 1g.10gb at 4 and 5; gpu3: w6 3g.40gb at 0 (a stranded
    compute slice), w7 1g.10gb at 4; gpu4 and gpu5 free. "13 slices out of 21" compute and "15
    out of 24" memory used, "2 wasted compute slices (w_2 and w_6 being the culprits)"; gpu1 "has
    availability for 3g.40gb" (slots 4-7) and gpu2 for "1g.20gb" (slots 6-7).
    """
    b = InstanceBuilder("ibm_fig4")
    b.add_host("node", {f"gpu{k}": "A100-80GB" for k in range(1, 6)})
    b.add_workload("w1", "2g.20gb", placement=("gpu1", 0))
    b.add_workload("w2", "1g.20gb", placement=("gpu1", 2))
    b.add_workload("w3", "4g.40gb", placement=("gpu2", 0))
    b.add_workload("w4", "1g.10gb", placement=("gpu2", 4))
    b.add_workload("w5", "1g.10gb", placement=("gpu2", 5))
    b.add_workload("w6", "3g.40gb", placement=("gpu3", 0))
    b.add_workload("w7", "1g.10gb", placement=("gpu3", 4))
    return b.build()


FIG4_COMPACTED = {"w6": ("gpu1", 4), "w7": ("gpu2", 6)}  # gpu3 vacated into the free partitions
