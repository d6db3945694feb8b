"""WPM's indexing step (IBM WPM paper, Assumption 1): exact search, repair set, Assumption 1 by enumeration.

The brute-force oracles here read only the catalog's placement lists; they share
no code with the geometry tables or the search they check.
"""

from __future__ import annotations

import itertools
from collections import Counter
from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.catalog import GpuModel, builtin_models, get_model
from mipopt.exact.preprocess import (
    IndexResult,
    assumption1_counterexamples,
    fixed_states,
    index_gpu,
    index_solution,
    profile_multisets,
)
from mipopt.instance import Instance, InstanceBuilder, Status, Termination
from mipopt.verifier import solution_for, verify

A100_40 = get_model("A100-40GB")
A100_80 = get_model("A100-80GB")
H100_80 = get_model("H100-80GB")
PAPER_MODELS = (A100_40, A100_80, H100_80)


def pi(model: GpuModel, name: str) -> int:
    index = model.index(name)
    assert index is not None
    return index


def fixed_of(model: GpuModel, placements: Sequence[tuple[str, int]]) -> dict[str, tuple[int, int]]:
    """``(profile name, start)`` list -> the ``fixed`` mapping of index_gpu, ids ``f<start>``."""
    return {f"f{s}": (pi(model, name), s) for name, s in placements}


FIG7 = fixed_of(A100_80, [("1g.10gb", 0), ("1g.10gb", 5), ("1g.10gb", 6)])


# --- independent oracles


def rules_ok(model: GpuModel, chosen: Sequence[tuple[int, int]]) -> bool:
    """Every per-GPU rule on a list of (profile index, start), from slot sets and catalog placements."""
    taken: set[int] = set()
    for p, s in chosen:
        profile = model.profiles[p]
        if (s, profile.memory_slots) not in profile.placements:
            return False
        slots = set(range(s, s + profile.memory_slots))
        if taken & slots:
            return False
        taken |= slots
    counts = Counter(p for p, _ in chosen)
    if any(n > model.profiles[p].max_instances for p, n in counts.items()):
        return False
    if sum(model.profiles[p].media_extension for p, _ in chosen) > 1:
        return False
    return sum(model.profiles[p].compute for p, _ in chosen) <= model.compute_slices


def brute_indexable(model: GpuModel, fixed: Mapping[str, tuple[int, int]], profiles: Sequence[int]) -> bool:
    base = list(fixed.values())
    options = [model.profiles[p].starts for p in profiles]
    return any(
        rules_ok(model, base + list(zip(profiles, starts, strict=True)))
        for starts in itertools.product(*options)
    )


def brute_min_drop(model: GpuModel, fixed: Mapping[str, tuple[int, int]], profiles: Sequence[int]) -> int:
    n = len(profiles)
    for k in range(n + 1):
        if any(brute_indexable(model, fixed, keep) for keep in itertools.combinations(profiles, n - k)):
            return k
    raise AssertionError("the empty set is indexable")


def achievable(model: GpuModel, fixed: Mapping[str, tuple[int, int]]) -> set[tuple[str, ...]]:
    """Every multiset of instances that some legal configuration around ``fixed`` holds (slot-by-slot DFS)."""
    base = list(fixed.values())
    occupied = {t for p, s in base for t in range(s, s + model.profiles[p].memory_slots)}
    out: set[tuple[str, ...]] = set()

    def walk(slot: int, chosen: list[tuple[int, int]]) -> None:
        if slot >= model.slots:
            out.add(tuple(sorted(model.profiles[p].name for p, _ in chosen)))
            return
        walk(slot + 1, chosen)
        for p, profile in enumerate(model.profiles):
            free = not occupied & set(range(slot, slot + profile.memory_slots))
            if slot in profile.starts and free and rules_ok(model, [*base, *chosen, (p, slot)]):
                walk(slot + profile.memory_slots, [*chosen, (p, slot)])

    walk(0, [])
    return out


def paper_multisets(model: GpuModel) -> list[tuple[str, ...]]:
    """The paper's enumeration: compute <= 7g, memory <= the GPU's GB, at most one ``+me``; nothing else."""
    profiles = model.profiles
    out: list[tuple[str, ...]] = []

    def walk(j: int, chosen: list[int], compute: int, gb: float, media: int) -> None:
        if chosen:
            out.append(tuple(sorted(profiles[i].name for i in chosen)))
        for i in range(j, len(profiles)):
            p = profiles[i]
            fits = compute + p.compute <= model.compute_slices and gb + p.memory_gb <= model.memory_gb
            if fits and media + p.media_extension <= 1:
                walk(i, [*chosen, i], compute + p.compute, gb + p.memory_gb, media + p.media_extension)

    walk(0, [], 0, 0.0, 0)
    return out


def assert_legal(model: GpuModel, fixed: Mapping[str, tuple[int, int]], items, result: IndexResult) -> None:
    profile_of = dict(items)
    chosen = list(fixed.values()) + [(profile_of[w], s) for w, s in result.starts.items()]
    assert rules_ok(model, chosen)
    assert set(result.starts) | set(result.dropped) == set(profile_of)
    assert not set(result.starts) & set(result.dropped)


# --- one GPU: preference order, backtracking


def test_empty_gpu_follows_table_1_largest_first() -> None:
    m = A100_80
    items = [("x", pi(m, "1g.10gb")), ("y", pi(m, "3g.40gb")), ("z", pi(m, "1g.20gb"))]
    r = index_gpu(m, None, items)
    # 3g takes 4 (Table 1: [4, 0]); 1g.20gb: 6 and 4 taken, 0 next; 1g.10gb: 6, 4, 5, 0, 1 taken, 2 next
    assert r.ok and dict(r.starts) == {"x": 2, "y": 4, "z": 0}
    assert list(r.starts) == ["x", "y", "z"]  # the order items were given
    ones = index_gpu(m, None, [(f"w{k}", pi(m, "1g.10gb")) for k in range(7)])
    assert list(ones.starts.values()) == [6, 4, 5, 0, 1, 2, 3]  # Table 1's order for 1g.10gb
    assert index_gpu(m, {}, [("a", pi(m, "2g.20gb"))]).starts == {"a": 4}


def test_slots_to_avoid_are_tried_last() -> None:
    m = A100_80
    one, three = pi(m, "1g.10gb"), pi(m, "3g.40gb")
    # slots 4-7 are being vacated: a 1g.10gb goes to 0 (first of Table 1's order outside them)
    assert index_gpu(m, None, [("a", one)], avoid=0b11110000).starts == {"a": 0}
    # a 3g.40gb leaves its preferred 4 for 0; with every slot to avoid it still indexes, at 4
    assert index_gpu(m, None, [("a", three)], avoid=0b11110000).starts == {"a": 0}
    assert index_gpu(m, None, [("a", three)], avoid=0b11111111).starts == {"a": 4}
    # a preferred start (where the workload runs now) still comes first
    assert index_gpu(m, None, [("a", one)], prefer={"a": 5}, avoid=0b11110000).starts == {"a": 5}


def test_backtracking_when_the_preferred_start_is_a_dead_end() -> None:
    m = A100_80
    items = [("a", pi(m, "3g.40gb")), ("b", pi(m, "2g.20gb")), ("c", pi(m, "2g.20gb"))]
    # with 3g at its preferred 0 both 2g cannot fit (2g starts 0, 2, 4): the search goes back to 3g@4
    r = index_gpu(m, None, items, prefer={"a": 0})
    assert r.ok and dict(r.starts) == {"a": 4, "b": 0, "c": 2}
    kept = index_gpu(m, None, items[:2], prefer={"a": 0})
    assert dict(kept.starts) == {"a": 0, "b": 4}  # the preferred start is kept when it works
    assert index_gpu(m, None, [("a", pi(m, "3g.40gb"))], prefer={"a": 3}).starts == {
        "a": 4
    }  # illegal: ignored


@pytest.mark.parametrize("model", PAPER_MODELS, ids=lambda m: m.name)
def test_no_preferred_start_makes_an_indexable_content_fail(model: GpuModel) -> None:
    # every content within an empty GPU's totals is indexable (Assumption 1, below), so the search
    # must find an indexing whatever start its largest item is pushed to try first
    tried = 0
    for ms in profile_multisets(model):
        items = [(f"w{k}", p) for k, p in enumerate(ms)]
        for s in model.profiles[ms[0]].starts:
            r = index_gpu(model, None, items, prefer={"w0": s})
            assert r.ok, (ms, s)
            assert_legal(model, {}, items, r)
            tried += 1
    assert tried == 404


# --- Fig. 7: A100-80GB with 1g.10gb fixed at 0, 5 and 6


def test_figure_7_options_index_as_the_paper_says() -> None:
    m, one, two, small = A100_80, pi(A100_80, "1g.10gb"), pi(A100_80, "2g.20gb"), pi(A100_80, "1g.20gb")
    option1 = index_gpu(m, FIG7, [("a", one), ("b", two), ("c", one)])
    assert option1.ok and dict(option1.starts) == {"a": 4, "b": 2, "c": 1}  # the paper's (1)
    option2 = index_gpu(m, FIG7, [("a", small), ("b", one), ("c", one)])
    assert option2.ok and dict(option2.starts) == {"a": 2, "b": 4, "c": 1}
    option3 = index_gpu(m, FIG7, [(f"w{k}", one) for k in range(4)])
    assert option3.ok and list(option3.starts.values()) == [4, 1, 2, 3]


def test_figure_7_what_cannot_be_indexed() -> None:
    m = A100_80
    for name in ("3g.40gb", "4g.40gb"):
        r = index_gpu(m, FIG7, [("w", pi(m, name))])
        assert not r.ok and r.fits_totals and r.assumption1_broken
        assert r.dropped == ("w",) and r.conflict == ("w",) and r.starts == {}
        (u,) = r.unindexed
        assert u.reason == "no_start" and u.assumption1
        assert "free slots [1, 2, 3, 4, 7]" in u.detail
    # two 2g fit the 4 compute slices and 40 GB left, but 2g has only start 2 here
    r = index_gpu(m, FIG7, [("b1", pi(m, "2g.20gb")), ("b2", pi(m, "2g.20gb"))])
    assert r.assumption1_broken and dict(r.starts) == {"b1": 2} and r.dropped == ("b2",)
    assert r.unindexed[0].reason == "alignment" and r.conflict == ("b1", "b2")


FIG7_COUNTEREXAMPLES = {
    ("4g.40gb",),
    ("3g.40gb",),
    ("1g.10gb", "3g.40gb"),
    ("1g.10gb+me", "3g.40gb"),
    ("2g.20gb", "2g.20gb"),
    ("1g.20gb", "2g.20gb"),
    ("1g.10gb", "1g.20gb", "2g.20gb"),
    ("1g.10gb+me", "1g.20gb", "2g.20gb"),
    ("1g.20gb", "1g.20gb"),
    ("1g.10gb", "1g.20gb", "1g.20gb"),
    ("1g.10gb+me", "1g.20gb", "1g.20gb"),
    ("1g.10gb", "1g.10gb", "1g.10gb", "1g.20gb"),
    ("1g.10gb", "1g.10gb", "1g.10gb+me", "1g.20gb"),
}


def test_figure_7_assumption_1_fails_exactly_on_these_multisets() -> None:
    m = A100_80
    # left: 4 compute slices, 50 GB (5 memory slots: 1-4 and 7, which only profiles at 6 could use)
    multisets = profile_multisets(m, FIG7)
    assert len(multisets) == 31 == len(profile_multisets(m, FIG7, memory="slots"))
    found = assumption1_counterexamples(m, FIG7)
    assert {tuple(sorted(c)) for c in found} == FIG7_COUNTEREXAMPLES and len(found) == 13
    assert assumption1_counterexamples(m, FIG7, memory="slots") == found
    # brute force: a multiset fits iff some legal configuration around the fixed three holds it
    reach = achievable(m, FIG7)
    for ms in multisets:
        names = tuple(sorted(m.profiles[p].name for p in ms))
        assert (names in reach) == (names not in FIG7_COUNTEREXAMPLES)
    # what fits: the paper's three options (1g.10gb+me may stand for one 1g.10gb), and their parts
    fits = [Counter(names) for names in reach if names and "1g.10gb+me" not in names]
    maximal = {tuple(sorted(c.elements())) for c in fits if not any(c < d for d in fits)}
    assert maximal == {
        ("1g.10gb", "1g.10gb", "2g.20gb"),
        ("1g.10gb", "1g.10gb", "1g.20gb"),
        ("1g.10gb", "1g.10gb", "1g.10gb", "1g.10gb"),
    }


# --- Assumption 1 on empty GPUs


@pytest.mark.parametrize("model", PAPER_MODELS, ids=lambda m: m.name)
def test_assumption_1_holds_on_empty_gpus(model: GpuModel) -> None:
    # 127 multisets with the +me profile (at most one), 77 without; GB and memory slots agree
    assert len(profile_multisets(model)) == 127 == len(profile_multisets(model, memory="slots"))
    assert len(profile_multisets(model, media=False)) == 77
    assert assumption1_counterexamples(model) == []
    assert assumption1_counterexamples(model, media=False) == []
    assert assumption1_counterexamples(model, memory="slots") == []
    # the paper's limits alone (no max_instances) give the same 127: the totals imply the maxima
    paper = paper_multisets(model)
    assert sorted(paper) == sorted(
        tuple(sorted(model.profiles[p].name for p in ms)) for ms in profile_multisets(model)
    )
    # brute force: every one of them is held by some legal configuration of the empty GPU
    reach = achievable(model, {})
    assert all(ms in reach for ms in paper)


@pytest.mark.parametrize("model", list(builtin_models().values()), ids=lambda m: m.name)
def test_assumption_1_holds_on_every_builtin_model(model: GpuModel) -> None:
    assert assumption1_counterexamples(model) == [] == assumption1_counterexamples(model, memory="slots")


def test_a_second_me_is_not_a_counterexample_but_a_rule() -> None:
    m = A100_80
    me = pi(m, "1g.10gb+me")
    r = index_gpu(m, None, [("a", me), ("b", me)])
    assert not r.fits_totals and not r.assumption1_broken
    assert r.dropped == ("b",) and r.unindexed[0].reason == "media"


# --- failure reporting and the repair set


def test_reasons_and_the_drop_rule() -> None:
    m = A100_80
    four = fixed_of(m, [("4g.40gb", 0)])
    r = index_gpu(m, four, [("big", pi(m, "3g.40gb")), ("small", pi(m, "1g.10gb"))])
    # one must go (4 + 3 + 1 > 7 compute): the rule drops the least compute
    assert dict(r.starts) == {"big": 4} and r.dropped == ("small",)
    assert r.unindexed[0].reason == "compute" and "8 compute slices needed (4 fixed)" in r.unindexed[0].detail
    assert not r.assumption1_broken and r.conflict == ("big", "small")
    five = index_gpu(m, None, [(f"w{k}", pi(m, "1g.20gb")) for k in range(5)])
    assert five.dropped == ("w4",) and five.unindexed[0].reason == "max_instances"
    # less compute dropped wins over the given order
    small = index_gpu(m, FIG7, [("y", pi(m, "1g.20gb")), ("x", pi(m, "2g.20gb"))])
    assert small.dropped == ("y",) and dict(small.starts) == {"x": 2}
    # equal sizes (1g.10gb and its +me variant): the item latest in the given order goes
    one, me = pi(m, "1g.10gb"), pi(m, "1g.10gb+me")
    tie = index_gpu(m, FIG7, [("me", me), *[(f"w{k}", one) for k in range(4)]])
    assert tie.dropped == ("w3",) and tie.starts["me"] == 3
    tie = index_gpu(m, FIG7, [*[(f"w{k}", one) for k in range(4)], ("me", me)])
    assert tie.dropped == ("me",) and list(tie.starts.values()) == [4, 1, 2, 3]


def test_bad_input() -> None:
    m = A100_80
    with pytest.raises(ValueError, match="profile index 9 is not a profile of A100-80GB"):
        index_gpu(m, None, [("a", 9)])
    with pytest.raises(ValueError, match="'f0' appears twice"):
        index_gpu(m, FIG7, [("f0", 0)])
    with pytest.raises(ValueError, match="overlaps another fixed instance"):
        index_gpu(m, {"a": (pi(m, "2g.20gb"), 0), "b": (pi(m, "1g.10gb"), 1)}, [])
    with pytest.raises(ValueError, match=r"3 is not a legal start of 3g\.40gb"):
        index_gpu(m, {"a": (pi(m, "3g.40gb"), 3)}, [])


def test_deterministic() -> None:
    m = H100_80
    fixed = fixed_of(m, [("1g.10gb", 2)])
    items = [(f"w{k}", p) for k, p in enumerate([3, 2, 3, 0, 4, 0, 1, 2, 3])]
    first = index_gpu(m, fixed, items)
    assert all(index_gpu(m, fixed, items).to_dict() == first.to_dict() for _ in range(3))
    # 5 items of 9 fit (6 compute slices left); of the 5-item sets the one using all 7 slices is kept
    assert first.to_dict() == {
        "ok": False,
        "starts": {"w0": 4, "w1": 6, "w3": 0, "w5": 1, "w6": 3},
        "unindexed": [
            {"workload": "w2", "profile": "2g.20gb", "reason": "compute", "detail": "9 compute slices needed (1 fixed), 7 on H100-80GB"},
            {"workload": "w4", "profile": "3g.40gb", "reason": "compute", "detail": "10 compute slices needed (1 fixed), 7 on H100-80GB"},
            {"workload": "w7", "profile": "1g.20gb", "reason": "compute", "detail": "8 compute slices needed (1 fixed), 7 on H100-80GB"},
            {"workload": "w8", "profile": "2g.20gb", "reason": "compute", "detail": "9 compute slices needed (1 fixed), 7 on H100-80GB"},
        ],
        "conflict": ["w0", "w1", "w4"],  # 9 memory slots with the fixed 1g; any two of them fit
        "fits_totals": False,
    }  # fmt: skip


# --- brute-force agreement on random small cases


MODELS = (get_model("A30-24GB"), A100_40, A100_80, H100_80, get_model("RTX-PRO-6000-Blackwell-96GB"))


@st.composite
def cases(
    draw: st.DrawFn,
) -> tuple[GpuModel, dict[str, tuple[int, int]], list[tuple[str, int]], dict[str, int]]:
    model = draw(st.sampled_from(MODELS))
    n = len(model.profiles)
    fixed: dict[str, tuple[int, int]] = {}
    for k in range(draw(st.integers(0, 3))):
        p = draw(st.integers(0, n - 1))
        open_starts = [s for s in model.profiles[p].starts if rules_ok(model, [*fixed.values(), (p, s)])]
        if open_starts:
            fixed[f"f{k}"] = (p, draw(st.sampled_from(open_starts)))
    profiles = draw(st.lists(st.integers(0, n - 1), max_size=5))
    items = [(f"w{k}", p) for k, p in enumerate(profiles)]
    prefer = {w: draw(st.sampled_from(model.profiles[p].starts)) for w, p in items if draw(st.booleans())}
    return model, fixed, items, prefer


@settings(max_examples=60, deadline=None)
@given(cases())
def test_agrees_with_brute_force(case) -> None:
    model, fixed, items, prefer = case
    profiles = [p for _, p in items]
    r = index_gpu(model, fixed, items, prefer=prefer)
    assert r.ok == brute_indexable(model, fixed, profiles)
    assert len(r.dropped) == brute_min_drop(model, fixed, profiles)
    assert_legal(model, fixed, items, r)
    if not r.ok:
        profile_of = dict(items)
        conflict = [profile_of[w] for w in r.conflict]
        assert not brute_indexable(model, fixed, conflict)
        assert all(
            brute_indexable(model, fixed, conflict[:k] + conflict[k + 1 :]) for k in range(len(conflict))
        )
        assert r.assumption1_broken == (r.fits_totals and not brute_indexable(model, fixed, profiles))


# --- a whole solution


def two_gpus() -> Instance:
    """g1: Fig. 7 (1g.10gb pinned at 0, 5, 6); g2: empty but for a movable 2g at 0. All A100-80GB."""
    b = InstanceBuilder(name="index-two-gpus")
    b.add_host("h", {"g1": "A100-80GB", "g2": "A100-80GB"})
    for s in (0, 5, 6):
        b.add_workload(f"r{s}", "1g.10gb", placement=("g1", s), pinned=True)
    b.add_workload("m", "2g.20gb", placement=("g2", 0))
    b.add_workload("n3g", "3g.40gb")
    b.add_workload("n1g", "1g.10gb")
    b.add_workload("n2g", "2g.20gb")
    return b.build()


def test_index_solution_reports_and_verifies() -> None:
    inst = two_gpus()
    contents = {"g1": ["n3g", "n1g"], "g2": ["n2g", "m"]}
    placed, report = index_solution(inst, contents)
    assert placed == {
        "r0": ("g1", 0), "r5": ("g1", 5), "r6": ("g1", 6), "n1g": ("g1", 4),
        "m": ("g2", 0), "n2g": ("g2", 4),
    }  # fmt: skip
    assert not report.ok and report.dropped == ("n3g",)
    (g1,) = report.failed
    assert g1.gpu == "g1" and g1.fixed == ("r0", "r5", "r6") and g1.assumption1_broken
    assert g1.result.unindexed[0].reason == "no_start"
    (message,) = report.messages()
    assert message.startswith("GPU 'g1' (A100-80GB): cannot index 'n3g', 'n1g' around fixed 'r0', 'r5', 'r6'")
    assert "Assumption 1 fails" in message and "'n3g' (3g.40gb): no_start" in message
    # the running 'm' went first in g2's priority and kept its start 0 (2g alone would take 4)
    g2 = report.gpus[1]
    assert g2.items == ("m", "n2g") and g2.ok
    solution = solution_for(
        inst, placed, method="index", termination=Termination.OPTIMAL, status=Status.FEASIBLE
    )
    assert verify(inst, solution).valid and solution.rejected == ("n3g",)
    moved, _ = index_solution(inst, contents, keep_starts=False)
    assert moved["m"] == ("g2", 4) and moved["n2g"] == ("g2", 0)


def test_index_solution_with_all_running_fixed_and_bad_contents() -> None:
    inst = two_gpus()
    running = [w.id for w in inst.running]
    placed, report = index_solution(inst, {"g2": ["n3g"]}, fixed=running)
    assert report.ok and placed["n3g"] == ("g2", 4) and placed["m"] == ("g2", 0)
    assert [g.fixed for g in report.gpus] == [("r0", "r5", "r6"), ("m",)]
    # 'm' is running, not fixed, and in no content: reported, not silently dropped
    _, report = index_solution(inst, {"g2": ["n2g"]})
    assert report.unassigned == ("m",) and not report.ok
    with pytest.raises(ValueError, match="'r0' is fixed on 'g1'"):
        index_solution(inst, {"g2": ["r0"]})
    with pytest.raises(ValueError, match="'n1g' is on both 'g1' and 'g2'"):
        index_solution(inst, {"g1": ["n1g"], "g2": ["n1g"]})
    with pytest.raises(ValueError, match="'gx' is not a GPU"):
        index_solution(inst, {"gx": []})
    (state, _) = fixed_states(inst)
    assert index_gpu(A100_80, state, [("n3g", pi(A100_80, "3g.40gb"))]).unindexed[0].reason == "no_start"
