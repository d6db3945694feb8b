"""Property tests of the migration planner on random current/target pairs, checked by the replay.

Targets are drawn here from the catalog's placement lists (tests.factories' GpuState),
independently of the planner: running workloads of one model and profile trade places
(swaps and rings: cycles of waits), some move to free legal starts, new workloads land
on free starts or are rejected.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict

from factories import MODELS, GpuState, instances
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mipopt.catalog import get_model
from mipopt.instance import Instance, InstanceBuilder, Status, Termination, Workload
from mipopt.migrate import plan_from_dict, plan_migration
from mipopt.verifier import solution_for, verify, verify_plan

Spot = tuple[str, int]
PROPERTY = settings(
    max_examples=200, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)


class _Target:
    """A target being drawn: per-GPU occupancy and per-host cpu and ram, every rule kept."""

    def __init__(self, instance: Instance) -> None:
        self.instance = instance
        self.gpus = {g.id: GpuState(g.model) for g in instance.gpus}
        self.cpu: Counter[str] = Counter()
        self.ram: Counter[str] = Counter()
        self.placed: dict[str, Spot] = {}

    def fits(self, w: Workload, gpu_id: str, start: int) -> bool:
        gpu = self.instance.gpu(gpu_id)
        profile = self.instance.profile_on(w, gpu.model)
        if profile is None or start not in self.gpus[gpu_id].free_starts(profile):
            return False
        host = self.instance.host(gpu.host)
        return (host.cpu is None or self.cpu[host.id] + w.cpu <= host.cpu + 1e-9) and (
            host.ram_gb is None or self.ram[host.id] + w.ram_gb <= host.ram_gb + 1e-9
        )

    def spots(self, w: Workload, avoid: frozenset[str]) -> list[Spot]:
        out = []
        for g in self.instance.gpus:
            profile = self.instance.profile_on(w, g.model)
            if g.id not in avoid and profile is not None:
                out += [(g.id, s) for s in profile.starts if self.fits(w, g.id, s)]
        return out

    def take(self, w: Workload, spot: Spot) -> None:
        gpu = self.instance.gpu(spot[0])
        profile = self.instance.profile_on(w, gpu.model)
        assert profile is not None
        self.gpus[spot[0]].take(profile, spot[1])
        self.cpu[gpu.host] += w.cpu
        self.ram[gpu.host] += w.ram_gb
        self.placed[w.id] = spot

    def drop(self, w: Workload) -> None:
        gpu_id, start = self.placed.pop(w.id)
        gpu = self.instance.gpu(gpu_id)
        profile = self.instance.profile_on(w, gpu.model)
        assert profile is not None
        state = self.gpus[gpu_id]
        state.mask &= ~profile.slot_mask(start)
        state.counts[profile.name] -= 1
        state.media &= not profile.media_extension
        self.cpu[gpu.host] -= w.cpu
        self.ram[gpu.host] -= w.ram_gb


@st.composite
def targets(draw: st.DrawFn, instance: Instance, avoid: frozenset[str] = frozenset()) -> dict[str, Spot]:
    """A valid target for ``instance`` that leaves the GPUs in ``avoid`` empty."""
    current = instance.current_placement()
    free = [w for w in instance.running if not w.pinned]
    # 1. workloads of one model and profile trade places: swaps and rings
    groups: defaultdict[tuple[str, str], list[Workload]] = defaultdict(list)
    for w in free:
        model = instance.gpu(current[w.id][0]).model
        profile = instance.profile_on(w, model)
        assert profile is not None
        groups[model.name, profile.name].append(w)
    spots = dict(current)
    for _, group in sorted(groups.items()):
        if len(group) > 1:
            order = draw(st.permutations(group))
            trial = dict(spots) | {w.id: current[v.id] for w, v in zip(group, order, strict=True)}
            if _hosts_hold(instance, trial):
                spots = trial
    t = _Target(instance)
    for w in instance.running:
        t.take(w, spots[w.id])
    # 2. some move to a free legal start (their own spot is always among the choices)
    for w in draw(st.lists(st.sampled_from(free), min_size=1, unique_by=lambda w: w.id)) if free else []:
        t.drop(w)
        choices = t.spots(w, avoid) or [spots[w.id]]
        t.take(w, draw(st.sampled_from(choices)))
    # 3. new workloads: a free legal start or rejected
    for w in instance.new:
        choices = t.spots(w, avoid)
        if choices and draw(st.integers(0, 3)):
            t.take(w, draw(st.sampled_from(choices)))
    return t.placed


def _hosts_hold(instance: Instance, placed: dict[str, Spot]) -> bool:
    cpu: Counter[str] = Counter()
    ram: Counter[str] = Counter()
    for wid, (gpu_id, _) in placed.items():
        host = instance.gpu(gpu_id).host
        cpu[host] += instance.workload(wid).cpu
        ram[host] += instance.workload(wid).ram_gb
    return all(
        (h.cpu is None or cpu[h.id] <= h.cpu + 1e-9) and (h.ram_gb is None or ram[h.id] <= h.ram_gb + 1e-9)
        for h in instance.hosts
    )


def with_spares(instance: Instance) -> tuple[Instance, frozenset[str]]:
    """``instance`` without host limits, plus a host with one empty GPU of each model present."""
    b = InstanceBuilder(instance.name, custom_models=list(instance.custom_models))
    for h in instance.hosts:
        b.add_host(h.id, {g: instance.gpu(g).model for g in h.gpus}, weight=h.weight)
    spares = {f"spare-{i}": model for i, model in enumerate(instance.models.values())}
    b.add_host("spare", dict(spares))
    for w in instance.workloads:
        b.add_workload(
            w.id,
            w.profile,
            placement=None if w.placement is None else (w.placement.gpu, w.placement.start),
            pinned=w.pinned,
            cpu=w.cpu,
            ram_gb=w.ram_gb,
            weight=w.weight,
            migration_weight=w.migration_weight,
            gpu_models=w.gpu_models,
        )
    return b.build(), frozenset(spares)


def checked(instance: Instance, target: dict[str, Spot], semantics: str = "create-first") -> dict:
    """Plan, check the target was valid, round-trip the JSON, replay; the replay's report."""
    solution = solution_for(
        instance, target, method="drawn", termination=Termination.COMPLETED, status=Status.FEASIBLE
    )
    assert verify(instance, solution).valid  # the strategy's own check
    plan = plan_migration(instance, target, semantics=semantics, method="graph")  # type: ignore[arg-type]
    data = json.loads(json.dumps(plan.to_dict()))
    assert plan_from_dict(data) == plan
    report = verify_plan(instance, data, target)
    assert report.valid, report.violations
    assert report.final == target
    assert {k: plan.metrics[k] for k in report.metrics} == report.metrics
    assert report.disrupted == tuple(dict.fromkeys(plan.disrupted))
    return {"plan": plan, "report": report}


#: Few models, so that workloads of one model and profile meet (and trade places) often.
FEW = tuple(get_model(m) for m in ("A100-40GB", "A30-24GB", "H100-80GB"))


@st.composite
def pairs(draw: st.DrawFn) -> tuple[Instance, dict[str, Spot]]:
    models = draw(st.sampled_from([MODELS, FEW]))
    instance = draw(instances(max_hosts=2, max_gpus=3, max_running_per_gpu=4, max_new=4, models=models))
    return instance, draw(targets(instance))


@st.composite
def spare_pairs(draw: st.DrawFn) -> tuple[Instance, dict[str, Spot]]:
    models = draw(st.sampled_from([MODELS, FEW]))
    drawn = draw(instances(max_hosts=2, max_gpus=3, max_running_per_gpu=4, max_new=4, models=models))
    instance, spares = with_spares(drawn)
    return instance, draw(targets(instance, spares))


@st.composite
def dense_pairs(draw: st.DrawFn) -> tuple[Instance, dict[str, Spot]]:
    """GPUs of one model packed full, workloads of each profile permuted among themselves, one spare GPU.

    The only free space is the spare, so the cycles (often several) must take turns parking on it.
    """
    model = draw(st.sampled_from(FEW))
    b = InstanceBuilder("dense")
    n = draw(st.integers(2, 6))
    b.add_host("h0", {f"g{i}": model for i in range(n)})
    b.add_host("h1", {"spare": model})
    current: dict[str, Spot] = {}
    profiles: dict[str, str] = {}
    for i in range(n):
        state = GpuState(model)
        for _ in range(8):
            profile = draw(st.sampled_from(model.profiles))
            starts = state.free_starts(profile)
            if starts:
                start = draw(st.sampled_from(starts))
                state.take(profile, start)
                wid = f"w{len(current)}"
                current[wid], profiles[wid] = (f"g{i}", start), profile.name
                b.add_workload(wid, profile.name, placement=(f"g{i}", start))
    instance = b.build()
    target = dict(current)
    for name in sorted(set(profiles.values())):
        group = [w for w in current if profiles[w] == name]
        order = draw(st.permutations(group))
        target |= {w: current[v] for w, v in zip(group, order, strict=True)}
    return instance, target


@PROPERTY
@given(pairs())
def test_every_plan_replays_to_its_target(pair: tuple[Instance, dict[str, Spot]]) -> None:
    instance, target = pair
    out = checked(instance, target)
    plan = out["plan"]
    # pinned workloads never appear in a round
    pinned = {w.id for w in instance.workloads if w.pinned}
    touched = {x.workload for r in plan.rounds for x in (*r.drains, *r.moves, *r.creates)}
    assert not pinned & touched
    # workloads already at their target are left alone; rejected new ones are never created
    current = instance.current_placement()
    assert all(current.get(w) == s for w, s in target.items() if w not in touched)
    assert not {w.id for w in instance.new if w.id not in target} & touched


@PROPERTY
@given(spare_pairs())
def test_no_disruption_when_free_space_breaks_every_cycle(pair: tuple[Instance, dict[str, Spot]]) -> None:
    """An empty GPU of each model and no host limits: every cycle can be parked, none drained."""
    instance, target = pair
    out = checked(instance, target)
    assert out["plan"].disrupted == ()
    assert out["report"].drains == 0


@PROPERTY
@given(dense_pairs())
def test_cycles_take_turns_on_one_spare_gpu(pair: tuple[Instance, dict[str, Spot]]) -> None:
    """A full cluster, every profile's workloads permuted, one empty GPU: parks, no drain."""
    instance, target = pair
    out = checked(instance, target)
    assert out["plan"].disrupted == ()


@settings(max_examples=40, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(pairs())
def test_destroy_first_is_one_round_of_drains(pair: tuple[Instance, dict[str, Spot]]) -> None:
    instance, target = pair
    out = checked(instance, target, semantics="destroy-first")
    report = out["report"]
    current = instance.current_placement()
    movers = [w for w, s in current.items() if target[w] != s]
    assert report.rounds == (1 if movers or len(target) > len(current) else 0)
    assert report.drains == len(movers) and set(report.disrupted) == set(movers)
    assert report.parks == 0
