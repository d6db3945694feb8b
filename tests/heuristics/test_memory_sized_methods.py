"""Every heuristic places memory-sized requests, at the smallest profile that fits unless it
chooses a larger one and says so (issue 25, section 1)."""

from __future__ import annotations

import pytest
from factories import INSTANCES
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_adapter import limited_a100

import mipopt
from mipopt.catalog import get_model
from mipopt.cli import main
from mipopt.instance import InstanceBuilder
from mipopt.registry import methods
from mipopt.verifier import verify

EXAMPLE = INSTANCES / "memory_sized.json"
HEURISTICS = [m.name for m in methods() if m.kind == "heuristic"] + ["adapter(ff)", "adapter(mfi)"]


@pytest.mark.parametrize("method", HEURISTICS)
def test_every_heuristic_places_memory_sized_requests_at_the_smallest_fitting_profile(method: str) -> None:
    inst = mipopt.load_instance(EXAMPLE)
    sol = mipopt.solve(inst, method)
    report = verify(inst, sol)
    assert report.valid, report.violations
    for a in sol.placements:
        w = inst.workload(a.workload)
        default = inst.profile_on(w, inst.gpu(a.gpu).model)
        # a memory-sized workload's placement names its profile; a named one's carries none
        assert a.profile == (default.name if w.memory_sized else None), (a, default)
    # the running 35 GB workload keeps its 4g.40gb where it runs (or takes the A100's smallest, 7g.40gb)
    where = {a.workload: a for a in sol.placements}
    assert (where["train-35gb"].gpu, where["train-35gb"].profile) in {
        ("h1-g0", "4g.40gb"),
        ("h2-g0", "7g.40gb"),
    }
    # nothing but a 7g.80gb holds 60 GB, and the H100 runs train-35gb unless a method moves it
    if "big-60gb" in where:
        assert (where["big-60gb"].gpu, where["big-60gb"].profile) == ("h1-g0", "7g.80gb")


def test_the_first_fit_answer_by_hand() -> None:
    inst = mipopt.load_instance(EXAMPLE)
    sol = mipopt.solve(inst, "ff")
    assert [(a.workload, a.gpu, a.start, a.profile) for a in sol.placements] == [
        ("train-35gb", "h1-g0", 0, "4g.40gb"),
        ("chat-12gb", "h1-g0", 6, "1g.20gb"),
        ("embed-8gb", "h1-g0", 4, "1g.10gb"),
        ("batch-20gb", "h2-g0", 4, "3g.20gb"),
        ("named-1g", "h1-g0", 5, None),
    ]
    assert sol.rejected == ("big-60gb",)


def test_mig_adapter_reports_the_larger_profile_it_lends_a_memory_sized_request() -> None:
    """Two 1g.10gb at most on this A100 (no 1g.20gb): a third 10 GB request borrows 2g.20gb, and
    for a memory-sized request that is a profile that fits, so the batch answer keeps it."""
    model = limited_a100()
    b = InstanceBuilder("borrow", custom_models=[model])
    b.add_host("h0", gpus={"g0": model})
    b.add_workload("a", "1g.10gb", placement=("g0", 0))
    b.add_workload("b", "1g.10gb", placement=("g0", 1))
    b.add_workload("c", memory_gb=10)
    b.add_workload("d", "1g.10gb")
    inst = b.build()
    sol = mipopt.solve(inst, "adapter(mfi)")
    assert verify(inst, sol).valid
    chosen = {a.workload: a.profile for a in sol.placements}
    assert chosen["c"] == "2g.20gb" and inst.profile_on(inst.workload("c"), model).name == "1g.10gb"
    assert "d" in sol.rejected  # a request that names 1g.10gb cannot keep a borrowed 2g.20gb
    assert "larger than the smallest that fits, 1g.10gb" in sol.summary()


def test_solve_prints_the_chosen_profile_and_what_was_asked(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["solve", str(EXAMPLE), "--method", "ff"]) == 0
    out = capsys.readouterr().out
    rows: dict[str, str] = {}
    for line in out.splitlines():
        if line.split()[:1]:
            rows.setdefault(line.split()[0], line)  # the table's row, not the rejection's
    assert rows["chat-12gb"].split()[:4] == ["chat-12gb", "1g.20gb", "h1-g0", "6"]
    assert rows["chat-12gb"].endswith("new (sized >=12gb)")
    assert rows["batch-20gb"].split()[1] == "3g.20gb" and "(sized >=20gb,2g)" in rows["batch-20gb"]
    assert rows["train-35gb"].endswith("(sized >=35gb; larger than the smallest that fits, 3g.40gb)")
    assert rows["big-60gb"].split()[:2] == ["big-60gb", ">=60gb"]
    assert rows["named-1g"].split()[1] == "1g.10gb" and "sized" not in rows["named-1g"]


def test_an_idle_instance_of_the_chosen_profile_is_reused_and_the_profile_kept() -> None:
    """mipopt.solve moves a new workload onto an idle instance of its profile on the GPU chosen:
    for a memory-sized one, of the profile chosen (here the smallest that fits, 1g.20gb)."""
    b = InstanceBuilder("idle-mem")
    b.add_host("h", gpus={"g": "H100-80GB"})
    b.add_idle("g", "1g.20gb", 2, gpu_instance_id=3)  # ff alone would take 6
    b.add_idle("g", "1g.10gb", 0, gpu_instance_id=4)
    b.add_workload("chat", memory_gb=12)
    inst = b.build()
    sol = mipopt.solve(inst, "ff")
    assert [(a.workload, a.gpu, a.start, a.profile) for a in sol.placements] == [("chat", "g", 2, "1g.20gb")]
    assert verify(inst, sol).valid


@st.composite
def memory_sized_instances(draw: st.DrawFn) -> mipopt.Instance:
    """A few H100-80GB and A100-40GB GPUs; running workloads that ff placed at named profiles,
    then asked again by memory (at most the profile's, so it may be larger than the smallest that
    fits), running at that profile; new memory-sized requests and a named one."""
    models = draw(st.lists(st.sampled_from(["H100-80GB", "A100-40GB"]), min_size=1, max_size=3))
    b = InstanceBuilder("drawn")
    for i, name in enumerate(models):
        b.add_host(f"h{i}", gpus={f"h{i}-g0": name})
    catalog = {m: get_model(m) for m in models}
    names = sorted({p.name for m in catalog.values() for p in m.profiles if p.base and p.compute < 7})
    for j, profile in enumerate(draw(st.lists(st.sampled_from(names), max_size=5))):
        b.add_workload(f"r{j}", profile)
    seed = b.build()
    placed = mipopt.solve(seed, "ff")
    running = []
    for a in placed.placements:
        profile = seed.gpu(a.gpu).model.profile(seed.workload(a.workload).profile)  # type: ignore[arg-type]
        memory = draw(st.sampled_from([profile.memory_gb, profile.memory_gb / 2, 1.0]))
        running.append((a.workload, memory, (a.gpu, a.start), profile.name))
    c = InstanceBuilder("drawn")
    for i, name in enumerate(models):
        c.add_host(f"h{i}", gpus={f"h{i}-g0": name})
    for wid, memory, where, profile in running:
        c.add_workload(wid, memory_gb=memory, placement=where, running_profile=profile)
    for j, memory in enumerate(
        draw(st.lists(st.sampled_from([5, 8, 10, 12, 20, 30, 40]), min_size=1, max_size=6))
    ):
        c.add_workload(f"n{j}", memory_gb=memory, min_compute=draw(st.sampled_from([None, None, 2])))
    c.add_workload("named", "1g.10gb")
    return c.build()


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(inst=memory_sized_instances())
def test_every_heuristic_verifies_on_drawn_memory_sized_instances(inst: mipopt.Instance) -> None:
    for method in FAST:
        sol = mipopt.solve(inst, method)
        report = verify(inst, sol)
        assert report.valid, (method, report.violations)
        for a in sol.placements:
            w = inst.workload(a.workload)
            default = inst.profile_on(w, inst.gpu(a.gpu).model)
            assert a.profile == (default.name if w.memory_sized else None), (method, a)


#: Every heuristic but reopt, which solves an exact model per rejection (it runs on the example above).
FAST = [m for m in HEURISTICS if not m.startswith("reopt")]
