"""The IBM WPM baselines, first-fit and load-balanced (Turkkan et al., section 5.1), by hand."""

from __future__ import annotations

import json
import re
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from factories import GpuState, capped_a100, instances
from hypothesis import given, settings

from mipopt.cli import main
from mipopt.heuristics import ibm_first_fit
from mipopt.heuristics.ibm_baselines import id_key
from mipopt.instance import Instance, InstanceBuilder, Solution, Status, Termination
from mipopt.io import load_instance
from mipopt.registry import solve
from mipopt.verifier import evaluate, verify
from mipopt.workloads.ibm import ibm_instance

FIG7 = Path(__file__).resolve().parents[2] / "instances" / "ibm_fig7.json"
Policy = Callable[[Instance], Solution]
POLICIES: dict[str, Policy] = {"ibm-first-fit": ibm_first_fit, "lb": lambda inst: solve(inst, "lb")}


def placed(inst: Instance, sol: Solution) -> dict[str, tuple[str, int]]:
    """The solution's placements after checking that the verifier accepts it."""
    report = verify(inst, sol)
    assert report.valid, report.violations
    assert sol.metrics == report.metrics
    assert (sol.termination, sol.status) == (Termination.COMPLETED, Status.FEASIBLE)
    return sol.placed()


def new_only(inst: Instance, where: dict[str, tuple[str, int]]) -> dict[str, tuple[str, int]]:
    return {w: g for w, g in where.items() if not inst.workload(w).running}


# --- the paper's situations


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_fig7(policy: Policy) -> None:
    # 1g.10gb at 0, 5, 6: free slots 1-4 and 7. First-fit takes the ids in order (n1g, n2g, n3g):
    # n1g at index 1 (the first free), n2g at 2 (0 is taken), the 3g nowhere. Load-balanced takes
    # the file order (n3g, n2g, n1g) and reaches the same layout on its one GPU.
    inst = load_instance(FIG7)
    sol = policy(inst)
    assert new_only(inst, placed(inst, sol)) == {"n1g": ("g0", 1), "n2g": ("g0", 2)}
    assert sol.rejected == ("n3g",)
    m = sol.metrics
    # c (1g.10gb at 6) strands slot 7; only GPU slice 4 is left free; the pending 3g.40gb is
    # 4 memory slices and 4 GPU slices (Table 1), so availability is 1 - 4
    assert (m["memory_waste"], m["compute_waste"]) == (1, 0)
    assert (m["available_gpu_slices"], m["pending_memory_slots"], m["availability"]) == (1, 4, -3)


def fig3() -> Instance:
    """IBM Fig. 3 as the text tells it: one running workload on each of two GPUs, then a 3g and a 4g.

    GPU1's workload sits in the upper half (so a 3g fits only at 0), GPU2's in the lower half
    (so no 4g fits there).
    """
    b = InstanceBuilder("ibm_fig3")
    b.add_host("h1", {"gpu1": "A100-80GB", "gpu2": "A100-80GB"})
    b.add_workload("e1", "1g.10gb", placement=("gpu1", 6))
    b.add_workload("e2", "1g.10gb", placement=("gpu2", 0))
    b.add_workload("w1", "3g.40gb")
    b.add_workload("w2", "4g.40gb")
    return b.build()


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_fig3_baselines_leave_the_4g_pending(policy: Policy) -> None:
    # "The first-fit algorithm [...] puts w1 on GPU1, which uses 4 GPU slices [...] and wastes a
    # compute slice. [...] w2 [...] is stuck in the pending state." Load-balanced does the same:
    # both GPUs are equally used (a tie, broken by id).
    inst = fig3()
    sol = policy(inst)
    assert new_only(inst, placed(inst, sol)) == {"w1": ("gpu1", 0)}
    assert sol.rejected == ("w2",)
    m = sol.metrics
    # gpu1: w1 spans slices 0-3, e1 slice 6 -> 4, 5 free; gpu2: e2 on slice 0 -> 6 free
    assert (m["compute_waste"], m["available_gpu_slices"], m["pending_memory_slots"]) == (1, 8, 4)
    assert m["availability"] == 8 - 4
    # the paper's better placement: w1 at GPU2 index 4, w2 at GPU1 index 0, nothing wasted,
    # nothing pending; free slices 4, 5 on gpu1 and 1-3 on gpu2
    _, better = evaluate(inst, {"e1": ("gpu1", 6), "e2": ("gpu2", 0), "w1": ("gpu2", 4), "w2": ("gpu1", 0)})
    assert (better["compute_waste"], better["pending_memory_slots"], better["availability"]) == (0, 0, 5)


# --- where the two baselines differ


def two_empty(*profiles: str) -> Instance:
    b = InstanceBuilder("two-empty")
    b.add_host("h1", {"g0": "A100-80GB", "g1": "A100-80GB"})
    for k, name in enumerate(profiles):
        b.add_workload(f"w{k}", name)
    return b.build()


def test_load_balancing_leaves_a_4g_pending_that_first_fit_places() -> None:
    # the paper (5.2.3): load-balanced "leads to having some workloads with profile 5 to stay in
    # pending state since they can only be placed at index 0"
    inst = two_empty("3g.40gb", "3g.40gb", "4g.40gb")
    ff = ibm_first_fit(inst)
    lb = solve(inst, "lb")
    # first fit: both 3g on g0 (indices 0 and 4), the 4g at g1 index 0
    assert placed(inst, ff) == {"w0": ("g0", 0), "w1": ("g0", 4), "w2": ("g1", 0)}
    # load balancing: the second 3g goes to the emptier g1, at index 0; no index 0 is left
    assert placed(inst, lb) == {"w0": ("g0", 0), "w1": ("g1", 0)}
    assert (ff.rejected, lb.rejected) == ((), ("w2",))
    assert (ff.metrics["compute_waste"], lb.metrics["compute_waste"]) == (1, 2)
    assert (ff.metrics["pending_memory_slots"], lb.metrics["pending_memory_slots"]) == (0, 4)
    # ff: g0 full (slice 3 stranded), g1 slices 4-6 free; lb: slices 4-6 free on each, minus 4
    assert (ff.metrics["availability"], lb.metrics["availability"]) == (3, 6 - 4)


def test_first_fit_packs_and_load_balancing_spreads() -> None:
    b = InstanceBuilder("spread")
    b.add_host("h1", {"g0": "A100-80GB", "g1": "A100-80GB", "g2": "A100-80GB"})
    for k in range(3):
        b.add_workload(f"w{k}", "1g.10gb")
    inst = b.build()
    ff, lb = ibm_first_fit(inst), solve(inst, "lb")
    assert placed(inst, ff) == {"w0": ("g0", 0), "w1": ("g0", 1), "w2": ("g0", 2)}
    assert placed(inst, lb) == {"w0": ("g0", 0), "w1": ("g1", 0), "w2": ("g2", 0)}
    assert (ff.metrics["active_gpus"], lb.metrics["active_gpus"]) == (1, 3)
    # used slices over used GPUs: 3 of 8 memory, 3 of 7 compute; 3 of 24 and 3 of 21
    assert ff.metrics["memory_utilization"] == pytest.approx(3 / 8)
    assert lb.metrics["compute_utilization"] == pytest.approx(3 / 21)


def test_load_balancing_prefers_the_less_used_gpu_over_the_first() -> None:
    # g0 holds a running 2g, g1 a 1g: the new 1g goes to g1 at its first free index, 1
    b = InstanceBuilder("least")
    b.add_host("h1", {"g0": "A100-80GB", "g1": "A100-80GB"})
    b.add_workload("r0", "2g.20gb", placement=("g0", 4))
    b.add_workload("r1", "1g.10gb", placement=("g1", 0))
    b.add_workload("n", "1g.10gb")
    inst = b.build()
    assert new_only(inst, placed(inst, ibm_first_fit(inst))) == {"n": ("g0", 0)}
    assert new_only(inst, placed(inst, solve(inst, "lb"))) == {"n": ("g1", 1)}


def test_utilization_is_a_share_of_each_gpu_not_a_count() -> None:
    # Both GPUs hold 2 compute + 2 memory slices: 4 of 15 on the A100 but 4 of 8 on the A30.
    # Profile id 5 is 4g.40gb on the A100 (index 0 only) and 2g.12gb on the A30. By share the
    # A100 is the less used and takes it; a raw count would tie and go to 'a' (the A30) by id.
    b = InstanceBuilder("share")
    b.add_host("h1", {"a": "A30-24GB", "b": "A100-80GB"})
    b.add_workload("ra", "2g.12gb", placement=("a", 0))
    b.add_workload("rb", "2g.20gb", placement=("b", 4))
    b.add_workload("n", 5)
    inst = b.build()
    assert new_only(inst, placed(inst, solve(inst, "lb"))) == {"n": ("b", 0)}
    assert new_only(inst, placed(inst, ibm_first_fit(inst))) == {"n": ("a", 2)}


def test_first_free_index_is_not_the_drivers_choice() -> None:
    # one 1g.10gb on an empty A100: the IBM baselines start at index 0; mipopt's first-fit takes
    # the driver's default, 6, which strands slot 7
    b = InstanceBuilder("index")
    b.add_host("h1", {"g0": "A100-80GB"})
    b.add_workload("w", "1g.10gb")
    inst = b.build()
    for policy in POLICIES.values():
        sol = policy(inst)
        assert placed(inst, sol) == {"w": ("g0", 0)}
        assert sol.metrics["memory_waste"] == 0
    driver = solve(inst, "ff")
    assert driver.placed() == {"w": ("g0", 6)} and driver.metrics["memory_waste"] == 1


# --- order: ids for first-fit, arrival for load balancing


def test_id_key_orders_numbers_as_numbers() -> None:
    assert sorted(["g10", "g2", "h1-g0", "g1", "h01-g1"], key=id_key) == [
        "g1",
        "g2",
        "g10",
        "h1-g0",
        "h01-g1",
    ]
    assert id_key("h1-g10") == ("h", 1, "-g", 10, "")


def ordered() -> Instance:
    b = InstanceBuilder("ordered")
    b.add_host("h1", {"g10": "A100-80GB", "g2": "A100-80GB"})
    for wid in ("w10", "w2", "w1"):
        b.add_workload(wid, "1g.10gb")
    return b.build()


def test_first_fit_goes_by_id() -> None:
    inst = ordered()
    # workloads w1, w2, w10 onto g2 (before g10), indices 0, 1, 2
    assert placed(inst, ibm_first_fit(inst)) == {"w1": ("g2", 0), "w2": ("g2", 1), "w10": ("g2", 2)}


def test_load_balancing_goes_by_arrival() -> None:
    inst = ordered()
    # w10 first, to g2 (empty GPUs tie; g2's id comes first); w2 to the emptier g10; w1 to g2 again
    assert placed(inst, solve(inst, "lb")) == {"w10": ("g2", 0), "w2": ("g10", 0), "w1": ("g2", 1)}


# --- every rule is respected


def test_one_media_extension_per_gpu() -> None:
    b = InstanceBuilder("media")
    b.add_host("h1", {"g0": "A100-80GB", "g1": "A100-80GB"})
    b.add_workload("m1", "1g.10gb+me")
    b.add_workload("m2", "1g.10gb+me")  # g0 has room, but its media engines are taken
    b.add_workload("p", "1g.10gb")
    inst = b.build()
    assert placed(inst, ibm_first_fit(inst)) == {"m1": ("g0", 0), "m2": ("g1", 0), "p": ("g0", 1)}
    # load balancing: m2 would go to g1 anyway; p goes to g0 (tie with g1, broken by id)
    assert placed(inst, solve(inst, "lb")) == {"m1": ("g0", 0), "m2": ("g1", 0), "p": ("g0", 1)}


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_per_profile_maximum(policy: Policy) -> None:
    inst = capped_a100(3)
    sol = policy(inst)
    assert placed(inst, sol) == {"w0": ("c0", 0), "w1": ("c0", 1)}
    assert sol.rejected == ("w2",)


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_host_capacity_and_allowed_models(policy: Policy) -> None:
    b = InstanceBuilder("capacity")
    b.add_host("h1", {"h1-g0": "A100-80GB"}, cpu=8, ram_gb=64)
    b.add_host("h2", {"h2-g0": "A100-80GB", "h2-g1": "H100-80GB"})
    b.add_workload("w1", "1g.10gb", cpu=6)
    b.add_workload("w2", "1g.10gb", cpu=4)  # 10 > 8 cpu on h1
    b.add_workload("w3", "1g.10gb", ram_gb=80)  # more ram than h1 has
    b.add_workload("w4", "1g.10gb", gpu_models=["H100-80GB"])
    inst = b.build()
    hosts = {w: g for w, (g, _) in placed(inst, policy(inst)).items()}
    assert hosts["w1"] == "h1-g0"
    assert hosts["w2"] != "h1-g0" and hosts["w3"] != "h1-g0"
    assert hosts["w4"] == "h2-g1"


@pytest.mark.parametrize("policy", POLICIES.values(), ids=POLICIES.keys())
def test_running_workloads_stay(policy: Policy) -> None:
    # the 7g fits only if the running 1g moves; the baselines leave it pending
    b = InstanceBuilder("stay")
    b.add_host("h1", {"g0": "A100-80GB"})
    b.add_workload("small", "1g.10gb", placement=("g0", 3))
    b.add_workload("full", "7g.80gb")
    inst = b.build()
    sol = policy(inst)
    assert placed(inst, sol) == {"small": ("g0", 3)}
    assert sol.rejected == ("full",)
    assert sol.metrics["moved_memory_slots"] == 0 and sol.objectives is not None
    assert sol.objectives.migrations == 0


# --- against their definitions, written out from the catalog alone


def reference(inst: Instance, *, balanced: bool) -> dict[str, tuple[str, int]]:
    """Either baseline from the paper's sentences, with the factories' catalog-only GPU state."""
    states = {g.id: GpuState(g.model) for g in inst.gpus}
    compute: defaultdict[str, int] = defaultdict(int)
    cpu: defaultdict[str, float] = defaultdict(float)
    ram: defaultdict[str, float] = defaultdict(float)
    where: dict[str, tuple[str, int]] = {}

    def take(wid: str, gid: str, start: int) -> None:
        gpu, w = inst.gpu(gid), inst.workload(wid)
        profile = gpu.model.profile(w.profile)
        states[gid].take(profile, start)
        compute[gid] += profile.compute
        cpu[gpu.host] += w.cpu
        ram[gpu.host] += w.ram_gb
        where[wid] = (gid, start)

    def share(gid: str) -> float:
        model = inst.gpu(gid).model
        return (states[gid].mask.bit_count() + compute[gid]) / (model.slots + model.compute_slices)

    def natural(s: str) -> list[int | str]:
        return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", s)]

    for w in inst.running:
        assert w.placement is not None
        take(w.id, w.placement.gpu, w.placement.start)
    todo = list(inst.new) if balanced else sorted(inst.new, key=lambda w: natural(w.id))
    for w in todo:
        gids = sorted((g.id for g in inst.gpus), key=natural)
        if balanced:
            gids.sort(key=share)  # stable: ties keep the id order
        for gid in gids:
            host = inst.host(inst.gpu(gid).host)
            if host.cpu is not None and cpu[host.id] + w.cpu > host.cpu:
                continue
            if host.ram_gb is not None and ram[host.id] + w.ram_gb > host.ram_gb:
                continue
            p = inst.profile_on(w, inst.gpu(gid).model)
            starts = states[gid].free_starts(p) if p is not None else []
            if starts:
                take(w.id, gid, min(starts))
                break
    return where


@settings(max_examples=60, deadline=None)
@given(instances())
def test_both_match_their_definitions_and_verify(inst: Instance) -> None:
    for name, policy in POLICIES.items():
        sol = policy(inst)
        where = placed(inst, sol)
        assert where == reference(inst, balanced=name == "lb"), name
        assert set(sol.rejected) == {w.id for w in inst.workloads} - set(where)
        assert inst.current_placement().items() <= where.items()
        assert sol.metrics["sequential_migrations"] == sol.metrics["moved_memory_slots"] == 0


# --- determinism and the command line


def test_deterministic_on_an_ibm_instance() -> None:
    inst = ibm_instance(24, seed=5)
    for policy in POLICIES.values():
        first, again = policy(inst), policy(inst)
        assert first.placements == again.placements and first.rejected == again.rejected
        assert first.metrics == again.metrics
        placed(inst, first)


@pytest.mark.parametrize("method", POLICIES.keys())
def test_command_line(method: str, capsys: pytest.CaptureFixture[str]) -> None:
    code = main(["solve", str(FIG7), "--method", method, "--json"])
    out, err = capsys.readouterr()
    assert (code, err) == (0, "")
    sol = json.loads(out)
    assert sol["method"].startswith(method + " (")
    assert sol["rejected"] == ["n3g"]
    got = {p["workload"]: (p["gpu"], p["start"]) for p in sol["placements"]}
    assert got["n1g"] == ("g0", 1) and got["n2g"] == ("g0", 2)
    assert sol["metrics"]["availability"] == -3
