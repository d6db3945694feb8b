"""MIG-Adapter: the chain of compatible profiles, borrowing, returning, batch use."""

from __future__ import annotations

import numpy as np

import mipopt.heuristics.mfi  # noqa: F401  (registers the inner policies)
from mipopt.catalog import GpuModel, Profile, get_model
from mipopt.heuristics.adapter import Adapter, chain
from mipopt.heuristics.online import run_batch
from mipopt.heuristics.policies import make_policy
from mipopt.instance import InstanceBuilder
from mipopt.state.cluster import Cluster
from mipopt.verifier import verify
from mipopt.workloads.ibm import ibm_instance


def limited_a100() -> GpuModel:
    """An A100-80GB that allows two 1g.10gb instances and has no 1g.20gb: 1g.10gb borrows 2g.20gb."""
    a100 = get_model("A100-80GB")
    keep = [p for p in a100.profiles if p.base and p.name != "1g.20gb"]
    profiles = tuple(
        Profile(p.name, p.id, p.compute, p.memory_slots, p.memory_gb, 2 if p.name == "1g.10gb" else p.max_instances,
                p.placements)
        for p in keep
    )  # fmt: skip
    return GpuModel("A100-lim", a100.slots, a100.compute_slices, a100.memory_gb, profiles, a100.gpu_slices)


def limited_cluster() -> Cluster:
    model = limited_a100()
    b = InstanceBuilder("borrow", custom_models=[model])
    b.add_host("h0", gpus={"g0": model})
    b.add_workload("a", "1g.10gb", placement=("g0", 0))
    b.add_workload("b", "1g.10gb", placement=("g0", 1))
    b.add_workload("c", "1g.10gb")
    return Cluster(b.build())


def test_chain_of_the_a100_and_of_the_articles_mixed_cluster() -> None:
    b = InstanceBuilder("chains")
    b.add_host("h0", gpus={"g0": "A100-80GB"})
    b.add_workload("w", "1g.10gb")
    c = Cluster(b.build())
    assert chain(c, c.instance.workload("w")) == ["1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb"]
    assert chain(c, c.instance.workload("w"), full=True)[-1] == "7g.80gb"
    b = InstanceBuilder("mixed")
    b.add_host("h0", gpus={"g0": "A100-40GB", "g1": "H100-80GB"})
    b.add_workload("w", "1g.5gb")
    c = Cluster(b.build())
    # the article: 1g5gb -> 1g10b -> 2g10gb -> 2g20gb -> 3g20gb -> 3g40gb -> 4g20gb -> 4g40gb,
    # and the H100's 1g.20gb, which the article predates
    assert chain(c, c.instance.workload("w")) == [
        "1g.10gb", "1g.20gb", "2g.10gb", "2g.20gb", "3g.20gb", "3g.40gb", "4g.20gb", "4g.40gb",
    ]  # fmt: skip


def test_borrow_a_2g_for_a_1g_then_return_it_after_a_departure() -> None:
    c = limited_cluster()
    policy = make_policy("adapter(mfi)")
    assert isinstance(policy, Adapter)
    assert policy.name == "adapter(mfi)"
    policy.start(c, np.random.default_rng(0))
    w = c.instance.workload("c")
    assert policy.inner.choose(c, w, 0.0) is None  # two 1g.10gb already: max_instances
    assert policy.arrive(c, w, 0.0)
    assert c.occupied_profile("c").name == "2g.20gb"
    assert c.placed["c"] == ("g0", 2)  # MFI's start for the 2g.20gb (F 13 -> 19 beats 23 at 4)
    counters = (policy.borrows, policy.borrowed_slots, policy.borrowed_slots_total, policy.returns)
    assert counters == (1, 1, 1, 0)
    assert policy.borrowers == {"c": "2g.20gb"}

    policy.depart(c, c.instance.workload("a"), 1.0)
    assert c.occupied_profile("c").name == "1g.10gb"
    assert c.placed["c"] == ("g0", 0)  # back on its GPU, at the driver's default start (b is at 1)
    assert (policy.borrowed_slots, policy.borrowed_slots_total, policy.returns) == (0, 1, 1)
    assert c.moves["intra_gpu"] == 1
    assert policy.borrowers == {}


def test_a_borrower_that_leaves_is_forgotten() -> None:
    c = limited_cluster()
    policy = make_policy("adapter(ff-agnostic)")
    policy.start(c, np.random.default_rng(0))
    assert policy.arrive(c, c.instance.workload("c"), 0.0)
    # ff-agnostic's first free index for the 2g.20gb is 2, a legal start
    assert c.placed["c"] == ("g0", 2)
    policy.depart(c, c.instance.workload("c"), 1.0)
    assert (policy.borrowed_slots, policy.returns, int(c.mask[0])) == (0, 0, 0b11)


def test_mixed_cluster_borrows_on_the_other_model_and_returns_across_gpus() -> None:
    b = InstanceBuilder("mixed")
    b.add_host("h0", gpus={"g0": "A100-40GB", "g1": "H100-80GB"})
    for s in range(7):
        b.add_workload(f"a{s}", "1g.5gb", placement=("g0", s))
    b.add_workload("w", "1g.5gb")
    c = Cluster(b.build())
    policy = make_policy("adapter(bf-bi)")
    policy.start(c, np.random.default_rng(0))
    assert isinstance(policy, Adapter)
    assert policy.arrive(c, c.instance.workload("w"), 0.0)
    assert c.placed["w"] == ("g1", 6) and c.occupied_profile("w").name == "1g.10gb"
    assert policy.borrowed_slots == 0  # 5 GB rounds up to one 10 GB slot of the H100
    policy.depart(c, c.instance.workload("a3"), 1.0)
    assert c.placed["w"] == ("g0", 3) and c.occupied_profile("w").name == "1g.5gb"
    assert (policy.borrows, policy.returns, c.moves["inter_gpu"]) == (1, 1, 1)


def test_batch_leaves_borrowers_out_and_the_solution_verifies() -> None:
    c = limited_cluster()
    solution = run_batch(make_policy("adapter(mfi)"), c.instance)
    report = verify(c.instance, solution)
    assert report.valid
    assert "c" not in solution.placed()
    assert report.objectives.acceptance == 2.0  # the two running ones


def test_adapter_in_batch_on_an_ibm_snapshot() -> None:
    inst = ibm_instance(8, seed=0)
    for inner, acceptance in (("mfi", 49.0), ("ff-agnostic", 42.0)):
        policy = make_policy(f"adapter({inner})")
        report = verify(inst, run_batch(policy, inst))
        assert report.valid, report.violations
        assert report.objectives.acceptance == acceptance
    # ff-agnostic alone accepts more (46): its borrowers hold space, then batch drops them
    assert isinstance(policy, Adapter) and policy.borrows >= 1


def test_hooks_delegate_to_the_inner_policy() -> None:
    calls: list[str] = []
    inner = make_policy("mfi")
    inner.tick = 24.0
    inner.on_tick = lambda cluster, now: calls.append(f"tick {now}")  # type: ignore[method-assign]
    adapter = Adapter(inner)
    assert adapter.tick == 24.0
    adapter.on_tick(limited_cluster(), 24.0)
    assert calls == ["tick 24.0"]
