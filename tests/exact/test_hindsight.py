"""The hindsight optimum: hand-made traces with known optima, a brute force over tiny random traces
(feasibility judged by the independent verifier alone), every epoch of every answer verified, bad
input, seeds."""

from __future__ import annotations

import itertools
import math
import random

import pytest

from mipopt.errors import InstanceError
from mipopt.exact.hindsight import HindsightResult, epochs_of, hindsight_optimum
from mipopt.instance import Instance, InstanceBuilder, Status, Termination
from mipopt.instance.trace import Request, Trace
from mipopt.verifier import check_state, solution_for, verify
from mipopt.workloads import fbk_trace, poisson_trace


def cluster(
    *models: str, cpu: float | None = None, running: tuple[tuple[str, str, str, int], ...] = ()
) -> Instance:
    b = InstanceBuilder("c")
    b.add_host("h", gpus={f"g{i}": m for i, m in enumerate(models)}, cpu=cpu)
    for wid, profile, gpu, start in running:
        b.add_workload(wid, profile, placement=(gpu, start))
    return b.build()


def trace(inst: Instance, *reqs: tuple[str, str, float, float]) -> Trace:
    return Trace("t", inst, tuple(Request(i, p, a, d) for i, p, a, d in reqs))


def verify_epochs(tr: Trace, result: HindsightResult) -> None:
    """Every epoch's state passes the verifier; every accepted request is alive in some epoch;
    with migrations forbidden every request keeps its GPU and start."""
    inst = tr.instance()
    seen: set[str] = set()
    for epoch in result.epochs:
        alive = {r.id for r in tr.requests if r.arrival <= epoch.time < r.departure}
        assert set(epoch.alive) == alive & set(result.accepted)
        assert set(epoch.placement) == set(epoch.alive) | set(inst.current_placement())
        sol = solution_for(
            inst,
            dict(epoch.placement),
            method="hindsight",
            termination=Termination.COMPLETED,
            status=Status.FEASIBLE,
        )
        report = verify(inst, sol)
        assert report.valid, (epoch.time, report.violations)
        for wid, where in inst.current_placement().items():
            assert epoch.placement[wid] == where
        if result.placement is not None:
            for wid in epoch.alive:
                assert epoch.placement[wid] == result.placement[wid]
        seen |= set(epoch.alive)
    assert seen == set(result.accepted)
    weights = {r.id: r.weight for r in tr.requests}
    assert result.value == pytest.approx(sum(weights[w] for w in result.accepted))


@pytest.mark.parametrize("migrations", ["free", "forbidden"])
@pytest.mark.parametrize("solver", ["highs", "cpsat"])
def test_two_overlapping_4g_on_one_gpu(migrations: str, solver: str) -> None:
    tr = trace(cluster("A100-80GB"), ("a", "4g.40gb", 0, 5), ("b", "4g.40gb", 1, 3))
    result = hindsight_optimum(tr, migrations=migrations, solver=solver)  # type: ignore[arg-type]
    assert result.status is Status.OPTIMAL and result.value == 1 and result.bound == 1 and result.gap == 0
    verify_epochs(tr, result)
    # one after the other (b arrives as a leaves: departures first): both
    tr = trace(cluster("A100-80GB"), ("a", "4g.40gb", 0, 5), ("b", "4g.40gb", 5, 9))
    result = hindsight_optimum(tr, migrations=migrations, solver=solver)  # type: ignore[arg-type]
    assert result.value == 2 and len(result.epochs) == 2
    verify_epochs(tr, result)


def test_weights_choose_the_heavier() -> None:
    inst = cluster("A100-80GB")
    tr = Trace("w", inst, (Request("a", "4g.40gb", 0, 5, weight=1), Request("b", "7g.80gb", 1, 3, weight=3)))
    for migrations in ("free", "forbidden"):
        result = hindsight_optimum(tr, migrations=migrations)  # type: ignore[arg-type]
        assert result.value == 3 and result.accepted == ("b",)
        verify_epochs(tr, result)


def test_a_rearrangement_is_worth_one_request() -> None:
    """a (2g) lives throughout; beside b (4g.40gb, start 0 only) it must sit at 4; beside c (3g)
    and d (2g) at 0 or 2 (c then takes 4-7). Free moves a; forbidden loses one request."""
    tr = trace(
        cluster("A100-80GB"),
        ("a", "2g.20gb", 0, 10),
        ("b", "4g.40gb", 0, 2),
        ("c", "3g.40gb", 3, 10),
        ("d", "2g.20gb", 3, 10),
    )
    for solver in ("highs", "cpsat"):
        free = hindsight_optimum(tr, migrations="free", solver=solver)
        forbidden = hindsight_optimum(tr, migrations="forbidden", solver=solver)
        assert (free.value, forbidden.value) == (4, 3)
        assert free.proven and forbidden.proven
        assert free.epochs[0].placement["a"] == ("g0", 4) and free.epochs[1].placement["a"][1] in (0, 2)
        assert forbidden.placement is not None and free.placement is None
        verify_epochs(tr, free)
        verify_epochs(tr, forbidden)
    # the free optimum bounds the forbidden one; without it the forbidden model proves 3 alone
    assert forbidden.stats["free_bound"] == 4
    alone = hindsight_optimum(tr, migrations="forbidden", free_bound=False)
    assert alone.value == 3 and alone.proven and "free_bound" not in alone.stats


def test_running_workloads_stay_and_mixed_models() -> None:
    inst = cluster("A100-80GB", "H100-80GB", running=(("run", "3g.40gb", "g0", 4),))
    tr = trace(
        inst,
        ("a", "4g.40gb", 0, 6),
        ("b", "4g.40gb", 1, 6),
        ("c", "4g.40gb", 2, 6),
        ("d", "1g.10gb", 2, 4),
    )
    for migrations in ("free", "forbidden"):
        result = hindsight_optimum(tr, migrations=migrations)  # type: ignore[arg-type]
        # g0 holds one 4g.40gb beside run, the H100 one: two of the three, and d on the H100 (1g + 4g)
        assert result.value == 3 and "d" in result.accepted
        verify_epochs(tr, result)


def test_epochs_are_the_maximal_cliques() -> None:
    reqs = [Request("a", "1g.10gb", 0, 4), Request("b", "1g.10gb", 1, 2), Request("c", "1g.10gb", 2, 5),
            Request("d", "1g.10gb", 3, math.inf), Request("e", "1g.10gb", 6, 7)]  # fmt: skip
    assert epochs_of(reqs) == [(1, [0, 1]), (3, [0, 2, 3]), (6, [3, 4])]


def _packable(inst: Instance, ids: list[str], profiles: dict[str, str]) -> bool:
    """Some starts on some GPUs hold all of ``ids`` at once, by the verifier's rules alone."""
    options = {
        w: [(g.id, s) for g in inst.gpus if (p := g.model.find(profiles[w])) for s in p.starts] for w in ids
    }

    def walk(k: int, held: list[tuple[str, str, str, int]]) -> bool:
        if k == len(ids):
            return True
        for g, s in options[ids[k]]:
            trial = [*held, (ids[k], ids[k], g, s)]
            if check_state(inst, trial).valid and walk(k + 1, trial):
                return True
        return False

    return walk(0, [(w, w, g, s) for w, (g, s) in inst.current_placement().items()])


def brute_free(tr: Trace) -> float:
    inst, reqs = tr.instance(), tr.requests
    profiles = {r.id: r.profile for r in reqs}
    cliques = [[reqs[i].id for i in alive] for _, alive in epochs_of(reqs)]
    best = 0.0
    for chosen in itertools.product((0, 1), repeat=len(reqs)):
        acc = {r.id for r, c in zip(reqs, chosen, strict=True) if c}
        value = sum(r.weight for r in reqs if r.id in acc)
        if value > best and all(_packable(inst, [w for w in c if w in acc], profiles) for c in cliques):
            best = value
    return best


def brute_forbidden(tr: Trace) -> float:
    inst, reqs = tr.instance(), tr.requests
    running = [(w, w, g, s) for w, (g, s) in inst.current_placement().items()]
    cliques = [set(alive) for _, alive in epochs_of(reqs)]
    choices = [
        [None, *((g.id, s) for g in inst.gpus if (p := g.model.find(r.profile)) for s in p.starts)]
        for r in reqs
    ]
    best = [0.0]

    def walk(k: int, where: list[tuple[str, int] | None], value: float) -> None:
        if k == len(reqs):
            best[0] = max(best[0], value)
            return
        for c in choices[k]:
            trial = [*where, c]
            if c is not None and not all(
                check_state(
                    inst, running + [(reqs[i].id, reqs[i].id, *trial[i]) for i in q if i <= k and trial[i]]
                ).valid
                for q in cliques
                if k in q
            ):
                continue
            walk(k + 1, trial, value + (reqs[k].weight if c else 0.0))

    walk(0, [], 0.0)
    return best[0]


@pytest.mark.parametrize("seed", range(6))
def test_equal_to_a_brute_force_on_tiny_random_traces(seed: int) -> None:
    rng = random.Random(seed)
    profiles = ["1g.10gb", "2g.20gb", "3g.40gb", "4g.40gb", "1g.20gb", "7g.80gb"]
    inst = cluster(*(["A100-80GB"] if seed % 2 else ["A100-80GB", "A100-40GB"]))
    reqs = []
    for i in range(5):
        a = rng.randint(0, 4)
        reqs.append((a, f"r{i}", rng.choice(profiles if seed % 2 else profiles[:4]), a + rng.randint(1, 4)))
    reqs.sort()
    tr = Trace("rand", inst, tuple(Request(w, p, a, d, weight=rng.choice([1.0, 2.0])) for a, w, p, d in reqs))
    free = hindsight_optimum(tr, migrations="free")
    forbidden = hindsight_optimum(tr, migrations="forbidden")
    assert free.proven and forbidden.proven
    assert free.value == brute_free(tr)
    assert forbidden.value == brute_forbidden(tr)
    assert forbidden.value <= free.value  # type: ignore[operator]
    verify_epochs(tr, free)
    verify_epochs(tr, forbidden)


def test_an_fbk_stream_is_proven_and_every_epoch_verified() -> None:
    tr = fbk_trace(gpus=4, seed=3, lifetimes="saturate", demand=250)
    free = hindsight_optimum(tr, migrations="free")
    forbidden = hindsight_optimum(tr, migrations="forbidden", time_limit_s=120)
    assert free.proven and forbidden.proven
    assert forbidden.value <= free.value <= len(tr.requests)  # type: ignore[operator]
    assert free.stats["epochs"] == len(free.epochs) > 5
    verify_epochs(tr, free)
    verify_epochs(tr, forbidden)


def test_same_seed_same_result() -> None:
    inst = cluster("A100-80GB", "A100-80GB")
    tr = poisson_trace(
        inst, load=1.5, mix={"1g.10gb": 2, "3g.40gb": 1, "2g.20gb": 1}, mean_lifetime=3, horizon=12, seed=5
    )
    runs = [hindsight_optimum(tr, migrations="free", seed=7) for _ in range(2)]
    assert runs[0].accepted == runs[1].accepted and runs[0].epochs == runs[1].epochs
    assert runs[0].value < len(tr.requests)  # the load is above what fits
    verify_epochs(tr, runs[0])


def test_a_time_limit_reports_the_bound() -> None:
    tr = fbk_trace(gpus=16, seed=2, lifetimes="saturate", demand=300)
    # 2 s: the model's build and decoding alone are estimated at about 1.4 s (refused below that)
    result = hindsight_optimum(tr, migrations="forbidden", time_limit_s=2.0)
    if not result.proven:  # on a fast machine it may finish: then it is proven
        assert result.status is Status.FEASIBLE and result.bound is not None
        assert result.value is None or (result.bound >= result.value and result.gap is not None)
    if result.value is not None:
        verify_epochs(tr, result)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"migrations": "some"}, "migrations: must be 'free' or 'forbidden', got 'some'"),
        ({"solver": "gurobi"}, "solver: must be 'highs' or 'cpsat', got 'gurobi'"),
        ({"time_limit_s": 0}, "time_limit_s: must be positive, got 0"),
        ({"threads": 0}, "threads: must be at least 1, got 0"),
    ],
)
def test_bad_arguments(kwargs: dict[str, object], message: str) -> None:
    tr = trace(cluster("A100-80GB"), ("a", "4g.40gb", 0, 5))
    with pytest.raises(InstanceError) as err:
        hindsight_optimum(tr, **kwargs)  # type: ignore[arg-type]
    assert str(err.value) == message


def test_host_cpu_is_refused_where_it_binds() -> None:
    inst = cluster("A100-80GB", cpu=8)
    tr = Trace("cpu", inst, (Request("a", "1g.10gb", 0, 1), Request("b", "1g.10gb", 0, 2, cpu=4)))
    with pytest.raises(InstanceError, match=r"^requests\[1\]\.cpu: 4 on hosts that limit cpu"):
        hindsight_optimum(tr)
    # without host limits the requests' cpu is irrelevant
    free = Trace("cpu", cluster("A100-80GB"), tr.requests)
    assert hindsight_optimum(free).value == 2


@pytest.mark.parametrize("seed", range(3))
def test_greedy_starts_hold_every_epoch(seed: int) -> None:
    """The warm starts (first fit over time, interval greedy in several orders) break no rule at
    any epoch, and keep each request's GPU and start."""
    from mipopt.exact.hindsight import _best_greedy, _Cluster, _interval_greedy, _relabel

    tr = fbk_trace(gpus=6, seed=seed, lifetimes="saturate", demand=300)
    cl = _Cluster.of(tr)
    inst = tr.instance()
    n = len(tr.requests)
    candidates = [_best_greedy(tr, cl), _interval_greedy(tr, cl, list(reversed(range(n))))]
    candidates.append(_relabel(tr, cl, candidates[1]))
    for placed in candidates:
        assert len(placed) > n // 2
        for _, alive in epochs_of(tr.requests):
            state = {
                tr.requests[i].id: placed[tr.requests[i].id] for i in alive if tr.requests[i].id in placed
            }
            sol = solution_for(
                inst, state, method="greedy", termination=Termination.COMPLETED, status=Status.FEASIBLE
            )
            assert verify(inst, sol).valid
