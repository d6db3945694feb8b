"""MIGBench's policies: binpack, spread and first fit (``ff:start=lowest``), as its Go adapter sorts.

One hand-made cluster where each rule picks a different GPU: hosts listed out of name order
(``node-b`` before ``node-a``), so the host-name tie rule shows against the instance order that
``ff`` uses; a tie of free compute slices that the host name breaks; memory-sized requests at
the smallest fitting profile; every policy in batch, checked by the verifier.
"""

from __future__ import annotations

import pytest
from factories import instances
from hypothesis import given, settings

import mipopt
from mipopt.heuristics.policies import make_policy
from mipopt.instance import Instance, InstanceBuilder, Workload
from mipopt.state.cluster import Cluster

H100 = "H100-80GB"


def two_nodes(new: list[str] | None = None, memory_gb: float | None = None) -> Instance:
    """``node-b`` (listed first): gb0 with a 4g.40gb at 0 (3 compute slices free), gb1 empty (7);
    ``node-a``: ga0 with a 2g.20gb at 0 (5 free), ga1 with a 4g.40gb at 0 (3 free)."""
    b = InstanceBuilder("two-nodes")
    b.add_host("node-b", gpus={"gb0": H100, "gb1": H100})
    b.add_host("node-a", gpus={"ga0": H100, "ga1": H100})
    b.add_workload("rb0", "4g.40gb", placement=("gb0", 0))
    b.add_workload("ra0", "2g.20gb", placement=("ga0", 0))
    b.add_workload("ra1", "4g.40gb", placement=("ga1", 0))
    for i, profile in enumerate(new or ["1g.10gb"]):
        b.add_workload(f"n{i}", profile)
    if memory_gb is not None:
        b.add_workload("m0", memory_gb=memory_gb)
    return b.build()


def decision(spec: str, inst: Instance, wid: str = "n0") -> tuple[str, int] | None:
    cluster = Cluster(inst)
    at = make_policy(spec).choose(cluster, inst.workload(wid), 0.0)
    return None if at is None else (inst.gpus[at[0]].id, at[1])


@pytest.mark.parametrize(
    ("spec", "where"),
    [
        ("ff:start=lowest", ("ga0", 2)),  # node-a < node-b; GPU 0; slots 0-1 held, so 2
        ("binpack", ("ga1", 4)),  # 3 free on ga1 and gb0: node-a first; 4g.40gb holds 0-3
        ("spread", ("gb1", 0)),  # the empty GPU, lowest start
        ("ff", ("gb0", 6)),  # GRMU's: instance order, the driver's default start
    ],
)
def test_each_rule_picks_its_own_gpu(spec: str, where: tuple[str, int]) -> None:
    assert decision(spec, two_nodes()) == where


def test_binpack_and_spread_count_compute_slices_before_placing() -> None:
    inst = two_nodes(new=["3g.40gb"])
    # a 3g.40gb fits at 4 on every GPU but the empty one (0 there); binpack: fewest free first
    assert decision("binpack", inst) == ("ga1", 4)
    assert decision("spread", inst) == ("gb1", 0)
    assert decision("ff:start=lowest", inst) == ("ga0", 4)
    # a 7g.80gb fits on the empty GPU only: every rule agrees
    full = two_nodes(new=["7g.80gb"])
    assert {decision(s, full) for s in ("binpack", "spread", "ff:start=lowest")} == {("gb1", 0)}


def test_a_memory_sized_request_takes_the_smallest_fitting_profile() -> None:
    inst = two_nodes(memory_gb=15)  # 1g.20gb: one compute slice, 20 GB, starts 0, 2, 4, 6
    model = inst.gpus[0].model
    assert inst.profile_on(inst.workload("m0"), model).name == "1g.20gb"
    assert decision("binpack", inst, "m0") == ("ga1", 4)
    assert decision("spread", inst, "m0") == ("gb1", 0)
    assert decision("ff:start=lowest", inst, "m0") == ("ga0", 2)


@pytest.mark.parametrize(
    ("spec", "placed"),
    [
        # three 1g.10gb arrive in order; binpack fills the fullest GPUs (node-a first),
        ("binpack", {"n0": ("ga1", 4), "n1": ("ga1", 5), "n2": ("ga1", 6)}),
        # spread spreads over the emptiest: gb1 (7, then 6 free), then ga0 (5) against gb1 (5): node-a
        ("spread", {"n0": ("gb1", 0), "n1": ("gb1", 1), "n2": ("ga0", 2)}),
        ("ff:start=lowest", {"n0": ("ga0", 2), "n1": ("ga0", 3), "n2": ("ga0", 4)}),
    ],
)
def test_in_batch_the_answers_verify(spec: str, placed: dict[str, tuple[str, int]]) -> None:
    inst = two_nodes(new=["1g.10gb"] * 3)
    sol = mipopt.solve(inst, spec)
    assert mipopt.verify(inst, sol).valid
    assert {a.workload: (a.gpu, a.start) for a in sol.placements if a.workload in placed} == placed
    assert sol.objectives.acceptance == 6  # the 3 running and the 3 new
    assert ("gb1" in {a.gpu for a in sol.placements}) is (spec == "spread")  # only spread opens gb1


def test_ff_start_takes_default_or_lowest() -> None:
    with pytest.raises(mipopt.InstanceError) as err:
        make_policy("ff:start=highest", "--policy")
    assert (
        str(err.value)
        == "--policy: policy 'ff:start=highest': start must be default or lowest, got 'highest'"
    )
    assert make_policy("ff:start=lowest").describe().startswith("MIGBench first fit")


# --- every decision is MIGBench's sort of its candidate list, on random instances


def migbench_choice(cluster: Cluster, w: Workload, free_sign: int) -> tuple[int, int] | None:
    """adapter.go's Choose, literally: every (GPU, start) where the profile fits by the occupancy's
    own rule (``fits_at``), sorted by (free_sign x free compute slices, host id, GPU index on its
    host, start); free slices counted from the workloads on the GPU."""
    inst = cluster.instance
    index = {g.id: [x.id for x in inst.gpus if x.host == g.host].index(g.id) for g in inst.gpus}
    candidates = []
    for k, gpu in enumerate(inst.gpus):
        profile = inst.profile_on(w, gpu.model)
        if profile is None or (w.gpu_models is not None and gpu.model.name not in w.gpu_models):
            continue
        p = gpu.model.profiles.index(profile)
        held = sum(cluster.occupied_profile(wid).compute for wid in cluster.on_gpu(k))
        free = gpu.model.compute_slices - held
        for s in profile.starts:
            if cluster.fits_at(k, p, s, w.cpu, w.ram_gb):
                candidates.append(((free_sign * free, gpu.host, index[gpu.id], s), (k, s)))
    return min(candidates)[1] if candidates else None


@settings(max_examples=60, deadline=None)
@given(instances(max_hosts=3, max_gpus=3, max_new=6))
def test_every_decision_is_migbench_sort(inst: Instance) -> None:
    for spec, sign in (("binpack", 1), ("spread", -1), ("ff:start=lowest", 0)):
        policy, cluster = make_policy(spec), Cluster(inst)
        for w in inst.new:  # placed one after the other, as in batch
            at = policy.choose(cluster, w, 0.0)
            assert at == migbench_choice(cluster, w, sign), (spec, w.id)
            if at is not None:
                cluster.place(w, *at)
        assert mipopt.verify(inst, mipopt.solve(inst, spec)).valid
