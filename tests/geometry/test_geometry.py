"""Single-GPU geometry: the tables against the definitions, the papers' worked examples,
and the driver's default placement against what real GPUs were seen to do.

States are bitmasks of occupied memory slots (bit ``s`` = slot ``s``).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.catalog import GpuModel, Profile, builtin_models, get_model
from mipopt.geometry import NO_START, reference, tables_for

MODELS = list(builtin_models())
EIGHT_SLOT = [name for name, m in builtin_models().items() if m.slots == 8]


def _mask(*slots: int) -> int:
    out = 0
    for s in slots:
        out |= 1 << s
    return out


def _block(p: Profile, start: int) -> int:
    return ((1 << p.memory_slots) - 1) << start


def _capacities(model: GpuModel, mask: int) -> dict[str, int]:
    t = tables_for(model)
    return {p.name: int(t.capacity[mask, i]) for i, p in enumerate(model.profiles) if p.base}


# --- tables == reference definitions, every state of every model


@pytest.mark.parametrize("model_id", MODELS)
def test_tables_equal_reference_on_every_state(model_id: str) -> None:
    m = get_model(model_id)
    t = tables_for(m)
    n = 1 << m.slots
    assert t.cc.shape == (n,) and t.legal.shape == (n, len(m.profiles))
    for mask in range(n):
        assert t.free_slots[mask] == m.slots - mask.bit_count()
        assert t.cc[mask] == reference.configuration_capability(m, mask)
        assert t.fbk[mask] == reference.fbk_fragmentation(m, mask)
        assert t.grmu[mask] == pytest.approx(reference.grmu_fragmentation(m, mask))
        f0 = reference.fbk_fragmentation(m, mask)
        for i, p in enumerate(m.profiles):
            starts = reference.legal_starts(m, mask, p)
            assert {s for s in range(m.slots) if t.legal[mask, i] >> s & 1} == set(starts)
            assert t.capacity[mask, i] == len(starts)
            default = reference.default_start(m, mask, p)
            assert t.default_start[mask, i] == (NO_START if default is None else default)
            # minimum fragmentation increment by brute force over the legal starts, ties to the lowest
            incs = sorted((reference.fbk_fragmentation(m, mask | _block(p, s)) - f0, s) for s in starts)
            if incs:
                assert (t.frag_increment[mask, i], t.min_frag_start[mask, i]) == incs[0]
            else:
                assert t.min_frag_start[mask, i] == NO_START
                assert t.frag_increment[mask, i] > 10**15


@pytest.mark.parametrize("model_id", MODELS)
def test_waste_tables_equal_reference(model_id: str) -> None:
    m = get_model(model_id)
    t = tables_for(m)
    for i, p in enumerate(m.profiles):
        for s in range(m.slots):
            legal = s in p.starts
            assert t.compute_waste[i, s] == (reference.compute_waste(m, p, s) if legal else 0)
            assert t.memory_waste[i, s] == (reference.memory_waste(m, p, s) if legal else 0)


# --- property tests against from-scratch brute force (no mipopt geometry code)

_BASE = re.compile(r"^\d+g\.\d+gb$")


def _fits(model: GpuModel, mask: int, profile: Profile, start: int) -> bool:
    return all(not mask >> slot & 1 for slot in range(start, start + profile.memory_slots))


def _brute_cc(model: GpuModel, mask: int) -> int:
    return sum(
        1
        for p in model.profiles
        if _BASE.match(p.name)
        for start, size in p.placements
        if start + size <= model.slots and _fits(model, mask, p, start)
    )


@st.composite
def model_and_mask(draw: st.DrawFn) -> tuple[GpuModel, int]:
    m = get_model(draw(st.sampled_from(MODELS)))
    return m, draw(st.integers(0, (1 << m.slots) - 1))


@settings(max_examples=300, deadline=None)
@given(model_and_mask())
def test_cc_equals_brute_force_count(case: tuple[GpuModel, int]) -> None:
    m, mask = case
    assert tables_for(m).cc[mask] == _brute_cc(m, mask)


@settings(max_examples=300, deadline=None)
@given(model_and_mask(), st.data())
def test_default_start_is_legal_free_and_maximizes_cc(
    case: tuple[GpuModel, int], data: st.DataObject
) -> None:
    m, mask = case
    i = data.draw(st.integers(0, len(m.profiles) - 1))
    p = m.profiles[i]
    start = int(tables_for(m).default_start[mask, i])
    free_starts = [s for s in p.starts if _fits(m, mask, p, s)]
    if not free_starts:
        assert start == NO_START
        return
    assert start in p.starts
    assert _fits(m, mask, p, start)  # never overlaps occupied slots
    assert not mask & _block(p, start)
    # GRMU Eq. 2: highest CC afterwards, lowest start on ties
    best = max(_brute_cc(m, mask | _block(p, s)) for s in free_starts)
    assert start == min(s for s in free_starts if _brute_cc(m, mask | _block(p, s)) == best)


@settings(max_examples=200, deadline=None)
@given(st.sampled_from(MODELS), st.data())
def test_vectorized_fits_equals_scalar_loop(model_id: str, data: st.DataObject) -> None:
    m = get_model(model_id)
    t = tables_for(m)
    n = data.draw(st.integers(1, 12))
    masks = data.draw(st.lists(st.integers(0, (1 << m.slots) - 1), min_size=n, max_size=n))
    counts = data.draw(
        st.lists(
            st.lists(st.integers(0, 8), min_size=len(m.profiles), max_size=len(m.profiles)),
            min_size=n,
            max_size=n,
        )
    )
    media = data.draw(st.lists(st.booleans(), min_size=n, max_size=n))
    i = data.draw(st.integers(0, len(m.profiles) - 1))
    p = m.profiles[i]
    got = t.fits(np.array(masks), i, counts=np.array(counts), media_used=np.array(media))
    got_plain = t.fits(np.array(masks), i)
    for g in range(n):
        room = any(_fits(m, masks[g], p, s) for s in p.starts)
        assert got_plain[g] == room
        assert got[g] == (room and counts[g][i] < p.max_instances and not ("+me" in p.name and media[g]))
    starts = t.starts_of(np.array(masks), i)
    for g in range(n):
        assert [s for s in range(m.slots) if starts[g, s]] == [
            s for s in p.starts if _fits(m, masks[g], p, s)
        ]


# --- GRMU paper examples (A100-40GB)


def test_grmu_fig2b_cc_and_capacity() -> None:
    m = get_model("A100-40GB")
    mask = 0b00001001  # slots 0 and 3 taken: free blocks {1,2,4,5,6,7}
    assert tables_for(m).cc[mask] == 9
    assert _capacities(m, mask) == {
        "1g.5gb": 5,  # 1,2,4,5,6
        "1g.10gb": 2,  # 4,6
        "2g.10gb": 1,  # 4
        "3g.20gb": 1,  # 4
        "4g.20gb": 0,  # 0 is taken, although 6 slots are free
        "7g.40gb": 0,
    }


def test_grmu_table3_per_profile_capacity() -> None:
    m = get_model("A100-40GB")
    t = tables_for(m)
    # Two 1g.5gb by default placement land at 6 then 4 (GRMU 5.1): the "original" column of Table 3.
    original = _mask(4, 6)
    assert _capacities(m, original) == {
        "1g.5gb": 5,  # 0,1,2,3,5
        "1g.10gb": 2,  # 0,2 (4 and 6 each hold a 1g.5gb)
        "2g.10gb": 2,  # 0,2
        "3g.20gb": 1,  # 0
        "4g.20gb": 1,  # 0
        "7g.40gb": 0,
    }
    # Same two instances at 0 and 1: the "alternative" column, more 1g.10gb, no 4g.20gb, same CC.
    alternative = _mask(0, 1)
    assert _capacities(m, alternative) == {
        "1g.5gb": 5,
        "1g.10gb": 3,
        "2g.10gb": 2,
        "3g.20gb": 1,
        "4g.20gb": 0,
        "7g.40gb": 0,
    }
    assert t.cc[original] == t.cc[alternative] == 11
    # GRMU 5.1: "ideally these GIs should occupy memory blocks 4 and 5"
    assert t.cc[_mask(4, 5)] == 12


def test_empty_gpu_cc() -> None:
    # every (base profile, start) pair: A100 7+4+3+2+1+1, A30 4+2+1, RTX PRO 4+2+1
    assert tables_for(get_model("A100-40GB")).cc[0] == 18
    assert tables_for(get_model("A30-24GB")).cc[0] == 7
    assert tables_for(get_model("RTX-PRO-6000-Blackwell-96GB")).cc[0] == 7
    for name in MODELS:
        m = get_model(name)
        assert tables_for(m).cc[m.full_mask] == 0


# --- the driver's default placement order


def _sequence(model_id: str, keys: list[int | str]) -> list[int]:
    """Starts that default placement gives to these profiles created one after another (-1: fails)."""
    m = get_model(model_id)
    t = tables_for(m)
    mask, starts = 0, []
    for key in keys:
        i = m.index(key)
        assert i is not None, key
        s = int(t.default_start[mask, i])
        starts.append(s)
        if s == NO_START:
            break
        mask |= m.profiles[i].slot_mask(s)
    return starts


@pytest.mark.parametrize("model_id", EIGHT_SLOT)
def test_default_order_on_empty_eight_slot_gpu(model_id: str) -> None:
    # h100_smi_doc (-cgi 19 x7) and the IBM WPM paper's preference lists
    assert _sequence(model_id, [19] * 8) == [6, 4, 5, 0, 1, 2, 3, NO_START]
    assert _sequence(model_id, [15] * 5) == [6, 4, 0, 2, NO_START]
    assert _sequence(model_id, [14] * 4) == [4, 0, 2, NO_START]
    assert _sequence(model_id, [9] * 3) == [4, 0, NO_START]
    assert _sequence(model_id, [5, 5]) == [0, NO_START]
    assert _sequence(model_id, [0, 0]) == [0, NO_START]


def test_default_order_rtx_pro_6000() -> None:
    # rtx_blog: -cgi 1g.24gb x4 goes 0,3,6,9; -cgi 2g.48gb,1g.24gb,1g.24gb gives 2g@0, 1g@6, 1g@9
    assert _sequence("RTX-PRO-6000-Blackwell-96GB", ["1g.24gb"] * 5) == [0, 3, 6, 9, NO_START]
    assert _sequence("RTX-PRO-6000-Blackwell-96GB", ["2g.48gb", "1g.24gb", "1g.24gb"]) == [0, 6, 9]


def test_default_order_a30() -> None:
    # computed: on A30 every start leaves the same CC for 1g, so ties go to the lowest start
    assert _sequence("A30-24GB", [14] * 5) == [0, 1, 2, 3, NO_START]
    assert _sequence("A30-24GB", [5, 5]) == [0, 2]


def test_nvidia_guide_examples_on_a100_40gb() -> None:
    # README section 5 item 2. `-cgi 19,19,14,9` fails on the 3g: 1g->6, 1g->4, 2g->0 leaves neither 0 nor 4.
    assert _sequence("A100-40GB", [19, 19, 14, 9]) == [6, 4, 0, NO_START]
    # Listing the 3g first works; the guide's -lgi shows 3g@4:4, 1g@0:1, 2g@2:2, 1g@1:1. -lgi is not in
    # creation order, but these are also the starts our rule gives in creation order 9,19,14,19.
    assert _sequence("A100-40GB", [9, 19, 14, 19]) == [4, 0, 2, 1]
    # `-cgi 14,19,19,19,19,19`: 2g@4, then the 1g's at 6, 0, 1, 2, 3
    assert _sequence("A100-40GB", [14, 19, 19, 19, 19, 19]) == [4, 6, 0, 1, 2, 3]


def test_dcgm_138_all_balanced_on_a100_80gb() -> None:
    # README section 5: 3g@4, 2g@0, 1g@2, 1g@3 on a real A100-80GB
    assert _sequence("A100-80GB", ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]) == [4, 0, 2, 3]


# --- FBK fragmentation score F(m), MFI paper Alg. 1


def test_fbk_fragmentation_empty_and_full() -> None:
    for name in MODELS:
        m = get_model(name)
        t = tables_for(m)
        assert t.fbk[0] == 0  # nothing blocked
        assert t.fbk[m.full_mask] == 0  # no profile fits the zero free slots, so none is counted


def test_fbk_fragmentation_mfi_fig3a_gpu2() -> None:
    m = get_model("A100-80GB")
    # Fig. 3a GPU 2, as far as the text describes it: a 1g.20gb at 0 and a 1g.10gb at 5, so 1g.20gb
    # "cannot be allocated on index 4 since the second memory slice is allocated to 1g.10gb", 1g.10gb
    # and 2g.20gb still fit, 3g.40gb and 4g.40gb do not.
    mask = _mask(0, 1, 5)
    # Alg. 1 as written counts every start that holds an occupied slot, weighted by the profile's slots:
    #   1g.10gb starts 0,1,5 -> 3*1 = 3;  1g.20gb starts 0,4 -> 2*2 = 4;  2g.20gb starts 0,4 -> 2*2 = 4;
    #   3g.40gb starts 0,4 -> 2*4 = 8;  4g.40gb start 0 -> 4;  7g.80gb needs 8 > 5 free -> skipped.
    assert tables_for(m).fbk[mask] == 3 + 4 + 4 + 8 + 4 == 23
    # The paper prints F = 2+2+8+4 = 16 for this GPU. No A100-80GB state has F = 16 under Alg. 1 as
    # written (4g blocked at 0 needs an occupied slot in 0..3, which also blocks 1g.20gb at 0 or 2, so
    # 1g.20gb alone would contribute 4). The 16 is what one gets counting only starts that are
    # partly occupied (some slots taken, some free): 1g.20gb@4, 2g@4, 3g@0, 3g@4, 4g@0.
    free = m.slots - mask.bit_count()
    partial = sum(
        p.memory_slots
        for p in m.profiles
        if p.base and p.memory_slots <= free
        for s in p.starts
        if 0 < (mask & _block(p, s)).bit_count() < p.memory_slots
    )
    assert partial == 2 + 2 + 8 + 4 == 16
    assert 16 not in set(tables_for(m).fbk.tolist())


def test_fbk_fragmentation_grmu_fig2b_state() -> None:
    # A100-40GB, slots 0 and 3 taken (6 free): 1g.5gb starts 0,3 -> 2; 1g.10gb 0,2 -> 4; 2g.10gb 0,2 -> 4;
    # 3g.20gb 0 -> 4; 4g.20gb 0 -> 4; 7g.40gb skipped (8 > 6)
    assert tables_for(get_model("A100-40GB")).fbk[0b00001001] == 2 + 4 + 4 + 4 + 4 == 18


# --- GRMU Fragmentation, Alg. 4


@pytest.mark.parametrize(
    ("mask", "expected"),
    [
        # empty: 1g.5gb takes 0..6, leaves {7}: 1/1; 1g.10gb takes all: 0; 2g.10gb leaves {6,7}: 2/2;
        # 3g.20gb takes all: 0; 4g.20gb leaves 4..7: 4/4; 7g.40gb takes all: 0  -> 3
        (0, 1.0 + 0 + 1.0 + 0 + 1.0 + 0),
        # Fig. 2(b), slots 0 and 3 taken: 1g.5gb leaves {7}: 1; 1g.10gb takes 4,6, leaves {1,2}: 2/2;
        # 2g.10gb takes 4, leaves {1,2,6,7}: 4/2; 3g.20gb takes 4, leaves {1,2}: 2/4;
        # 4g.20gb cannot start, leaves 6 slots: 6/4; 7g.40gb skipped  -> 6
        (0b00001001, 1.0 + 1.0 + 2.0 + 0.5 + 1.5),
        # one 1g.5gb at 6: 1g.5gb leaves {7}: 1; 1g.10gb takes 0,2,4, leaves {7}: 1/2; 2g.10gb the same: 1/2;
        # 3g.20gb takes 0, leaves {4,5,7}: 3/4; 4g.20gb the same: 3/4; 7g.40gb skipped  -> 3.5
        (_mask(6), 1.0 + 0.5 + 0.5 + 0.75 + 0.75),
        # full: no profile fits the zero free slots  -> 0
        (0xFF, 0.0),
    ],
)
def test_grmu_fragmentation_by_hand(mask: int, expected: float) -> None:
    assert tables_for(get_model("A100-40GB")).grmu[mask] == pytest.approx(expected)


# --- compute and memory waste (IBM WPM paper)


def _waste(model_id: str, name: str) -> dict[int, tuple[int, int]]:
    m = get_model(model_id)
    t = tables_for(m)
    i = m.index(name)
    assert i is not None
    return {s: (int(t.compute_waste[i, s]), int(t.memory_waste[i, s])) for s in m.profile(name).starts}


def test_waste_on_a100_80gb() -> None:
    # (compute slices wasted, memory slots wasted) per start
    assert _waste("A100-80GB", "3g.40gb") == {0: (1, 0), 4: (0, 0)}  # at 0 it spans compute slices 0..3
    assert _waste("A100-80GB", "1g.20gb") == {0: (1, 0), 2: (1, 0), 4: (1, 0), 6: (0, 0)}
    assert _waste("A100-80GB", "1g.10gb") == {s: (0, 1 if s == 6 else 0) for s in range(7)}  # 6 strands 7
    assert _waste("A100-80GB", "1g.10gb+me") == {s: (0, 1 if s == 6 else 0) for s in range(7)}
    assert _waste("A100-80GB", "2g.20gb") == {0: (0, 0), 2: (0, 0), 4: (0, 0)}
    assert _waste("A100-80GB", "4g.40gb") == {0: (0, 0)}
    assert _waste("A100-80GB", "7g.80gb") == {0: (0, 0)}
    m = get_model("A100-80GB")
    assert reference.compute_waste(m, m.profile("3g.40gb"), 0) == 1
    assert reference.memory_waste(m, m.profile("1g.10gb"), 6) == 1


def test_no_waste_where_slots_and_compute_align() -> None:
    for name in ("A30-24GB", "RTX-PRO-6000-Blackwell-96GB"):
        t = tables_for(get_model(name))
        assert not t.compute_waste.any()
        assert not t.memory_waste.any()
