"""The GPU catalog pinned against the shared MIG facts (``shared/mig/README.md`` section 2).

The expected tables below are transcribed by hand from the README, not generated from
``gpu_models.json``, so a wrong edit of either side shows up here.
"""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest

from mipopt.catalog import GpuModel, builtin_models, get_model, model_from_dict
from mipopt.cli import main
from mipopt.errors import InstanceError

SHARED_JSON = Path(__file__).parents[2].parent / "shared/mig/mig_profiles.json"

# --- the README tables, one row per profile: name, ID, C, M, N, memory_gb (from the name), -lgipp text

_EIGHT_SLOT_ROWS = """
{one} 19 1 1 7 {{0,1,2,3,4,5,6}}:1
{one}+me 20 1 1 1 {{0,1,2,3,4,5,6}}:1
{two} 15 1 2 4 {{0,2,4,6}}:2
{twog} 14 2 2 3 {{0,2,4}}:2
{three} 9 3 4 2 {{0,4}}:4
{four} 5 4 4 1 {{0}}:4
{seven} 0 7 8 1 {{0}}:8
"""


def _eight_slot(one: str, two: str, three: str, seven: str) -> str:
    """README sections 2.2-2.8 share one table; only the names change (``2g`` has the 2-slot 1g's memory)."""
    twog = "2g." + two.split(".")[1]
    four = "4g." + three.split(".")[1]
    return _EIGHT_SLOT_ROWS.format(one=one, two=two, twog=twog, three=three, four=four, seven=seven)


# model id -> (slots, compute_slices, memory_gb, placement status, rows)
EXPECTED: dict[str, tuple[int, int, float, str, str]] = {
    # 2.1, confirmed by a real A30 -lgipp (summer_lo_a30)
    "A30-24GB": (
        4,
        4,
        24,
        "confirmed",
        """
        1g.6gb 14 1 1 4 {0,1,2,3}:1
        1g.6gb+me 21 1 1 1 {0,1,2,3}:1
        2g.12gb 5 2 2 2 {0,2}:2
        2g.12gb+me 6 2 2 1 {0,2}:2
        4g.24gb 0 4 4 1 {0}:4
        """,
    ),
    # 2.2, the NVIDIA guide's -lgipp block
    "A100-40GB": (
        8,
        7,
        40,
        "confirmed",
        """
        1g.5gb 19 1 1 7 {0,1,2,3,4,5,6}:1
        1g.5gb+me 20 1 1 1 {0,1,2,3,4,5,6}:1
        1g.10gb 15 1 2 4 {0,2,4,6}:2
        2g.10gb 14 2 2 3 {0,2,4}:2
        3g.20gb 9 3 4 2 {0,4}:4
        4g.20gb 5 4 4 1 {0}:4
        7g.40gb 0 7 8 1 {0}:8
        """,
    ),
    # 2.3: IDs/counts confirmed, but section 8 lists A100-80GB among the models with no real -lgipp,
    # so its placements count as inferred.
    "A100-80GB": (8, 7, 80, "inferred", _eight_slot("1g.10gb", "1g.20gb", "3g.40gb", "7g.80gb")),
    # 2.4, real -lgipp (dataproc, h100_smi_doc)
    "H100-80GB": (8, 7, 80, "confirmed", _eight_slot("1g.10gb", "1g.20gb", "3g.40gb", "7g.80gb")),
    # 2.5, real -lgipp (colfax_h100nvl, azure_h100nvl_doc)
    "H100-94GB": (8, 7, 94, "confirmed", _eight_slot("1g.12gb", "1g.24gb", "3g.47gb", "7g.94gb")),
    # 2.6: 19/20 and all placements inferred
    "H100-96GB": (8, 7, 96, "inferred", _eight_slot("1g.12gb", "1g.24gb", "3g.48gb", "7g.96gb")),
    # 2.7: placements inferred
    "H200-141GB": (8, 7, 141, "inferred", _eight_slot("1g.18gb", "1g.35gb", "3g.71gb", "7g.141gb")),
    # 2.8
    "GH200-144GB": (8, 7, 144, "inferred", _eight_slot("1g.18gb", "1g.36gb", "3g.72gb", "7g.144gb")),
    "B200-180GB": (8, 7, 180, "inferred", _eight_slot("1g.23gb", "1g.45gb", "3g.90gb", "7g.180gb")),
    "GB200-186GB": (8, 7, 186, "inferred", _eight_slot("1g.23gb", "1g.47gb", "3g.93gb", "7g.186gb")),
    # 2.9, one real -lgipp (rtx_blog): a 12-unit grid, 4 compute slices
    "RTX-PRO-6000-Blackwell-96GB": (
        12,
        4,
        96,
        "confirmed",
        """
        1g.24gb 14 1 3 4 {0,3,6,9}:3
        1g.24gb+me 21 1 3 1 {0,3,6,9}:3
        1g.24gb+gfx 47 1 3 4 {0,3,6,9}:3
        1g.24gb+me.all 65 1 3 1 {0,3,6,9}:3
        1g.24gb-me 67 1 3 4 {0,3,6,9}:3
        2g.48gb 5 2 6 2 {0,6}:6
        2g.48gb+gfx 35 2 6 2 {0,6}:6
        2g.48gb+me.all 64 2 6 1 {0,6}:6
        2g.48gb-me 66 2 6 2 {0,6}:6
        4g.96gb 0 4 12 1 {0}:12
        4g.96gb+gfx 32 4 12 1 {0}:12
        """,
    ),
}

# README section 7.6: names other drivers or boards print for the same profile.
EXPECTED_ALIASES = {
    ("A100-80GB", "3g.40gb"): ("3g.39gb",),
    ("GB200-186GB", "1g.23gb"): ("1g.24gb",),
    ("GB200-186GB", "1g.23gb+me"): ("1g.24gb+me",),
    ("GB200-186GB", "3g.93gb"): ("3g.95gb",),
    ("GB200-186GB", "4g.93gb"): ("4g.95gb",),
    ("GB200-186GB", "7g.186gb"): ("7g.189gb",),
    ("H100-94GB", "1g.12gb"): ("1g.11gb",),
    ("H100-94GB", "2g.24gb"): ("2g.22gb",),
    ("H100-94GB", "3g.47gb"): ("3g.44gb",),
}

_LGIPP = re.compile(r"^\{([\d,]+)\}:(\d+)$")


def _rows(text: str) -> list[tuple[str, int, int, int, int, float, list[tuple[int, int]]]]:
    rows = []
    for line in text.strip().splitlines():
        name, pid, compute, slots, count, lgipp = line.split()
        match = _LGIPP.match(lgipp)
        assert match, lgipp
        size = int(match.group(2))
        placements = [(int(s), size) for s in match.group(1).split(",")]
        memory_gb = float(re.match(r"^\d+g\.(\d+)gb", name).group(1))  # type: ignore[union-attr]
        rows.append((name, int(pid), int(compute), int(slots), int(count), memory_gb, placements))
    return rows


def _lgipp_text(model: GpuModel, name: str) -> str:
    """A profile's placements printed the way ``nvidia-smi mig -lgipp`` prints them."""
    p = model.profile(name)
    return "{" + ",".join(str(s) for s in p.starts) + "}:" + str(p.memory_slots)


def test_catalog_has_exactly_the_eleven_models_in_order() -> None:
    assert list(builtin_models()) == list(EXPECTED)


@pytest.mark.parametrize("model_id", list(EXPECTED))
def test_model_table_matches_readme(model_id: str) -> None:
    slots, compute, memory_gb, status, text = EXPECTED[model_id]
    m = get_model(model_id)
    assert (m.name, m.slots, m.compute_slices, m.memory_gb) == (model_id, slots, compute, memory_gb)
    assert m.builtin
    expected = _rows(text)
    assert [p.name for p in m.profiles] == [r[0] for r in expected]
    for name, pid, pc, size, count, mem, placements in expected:
        p = m.profile(name)
        assert (p.id, p.compute, p.memory_slots, p.memory_gb, p.max_instances) == (
            pid,
            pc,
            size,
            mem,
            count,
        ), name
        assert list(p.placements) == placements, name
        assert p.placement_status == status, name
        assert p.aliases == EXPECTED_ALIASES.get((model_id, name), ()), name


def test_lgipp_text_round_trip_on_a100() -> None:
    m = get_model("A100-40GB")
    # the NVIDIA guide's block, verbatim apart from the GPU prefix
    assert [f"{p.id} {_lgipp_text(m, p.name)}" for p in m.profiles] == [
        "19 {0,1,2,3,4,5,6}:1",
        "20 {0,1,2,3,4,5,6}:1",
        "15 {0,2,4,6}:2",
        "14 {0,2,4}:2",
        "9 {0,4}:4",
        "5 {0}:4",
        "0 {0}:8",
    ]


# --- the shipped catalog against the shared machine-readable facts


@pytest.mark.skipif(not SHARED_JSON.exists(), reason=f"shared facts not present at {SHARED_JSON}")
def test_catalog_equals_shared_json_field_by_field() -> None:
    shared = json.loads(SHARED_JSON.read_text())["gpus"]
    models = builtin_models()
    assert list(models) == list(shared)
    for model_id, gpu in shared.items():
        m = models[model_id]
        assert (m.slots, m.compute_slices, m.memory_gb) == (
            gpu["slots"],
            gpu["compute_slices"],
            gpu["memory_gb"],
        )
        variants = gpu.get("variants", [gpu["pci_device_id"]] if "pci_device_id" in gpu else [])
        assert list(m.variants) == variants, model_id
        assert [p.name for p in m.profiles] == [p["name"] for p in gpu["profiles"]], model_id
        for p, src in zip(m.profiles, gpu["profiles"], strict=True):
            where = f"{model_id} {src['name']}"
            assert p.id == src["id"], where
            assert p.compute == src["compute"], where
            assert p.memory_slots == src["memory_slices"], where
            assert p.memory_gb == src["memory_gb"], where
            assert p.max_instances == src["max_instances"], where
            assert [list(x) for x in p.placements] == src["placements"], where
            # the source's status is prose; only statuses that begin with "confirmed" came from real -lgipp
            status = "confirmed" if src["status"].startswith("confirmed") else "inferred"
            assert p.placement_status == status, where


# --- lookup


def test_find_by_name_alias_and_id() -> None:
    m = get_model("A100-80GB")
    by_name = m.find("3g.40gb")
    assert by_name is not None and by_name.id == 9
    assert m.find("3g.39gb") is by_name  # driver 535/545 name
    assert m.find("3G.39GB") is by_name
    assert m.find(9) is by_name
    assert m.find("9") is by_name
    assert m.find("3G.40GB") is by_name
    assert m.index("3g.39gb") == 4
    assert m.find("5g.40gb") is None
    assert m.find(99) is None
    assert m.find("99") is None
    assert m.find("²") is None  # a digit to str.isdigit(), not to int()


def test_profile_raises_key_error_naming_the_model() -> None:
    with pytest.raises(KeyError) as err:
        get_model("A100-40GB").profile("3g.40gb")
    assert err.value.args[0] == "'3g.40gb' is not a profile of A100-40GB"


def test_same_name_means_different_profiles_on_different_models() -> None:
    p40 = get_model("A100-40GB").profile("1g.10gb")
    p80 = get_model("A100-80GB").profile("1g.10gb")
    assert (p40.id, p40.memory_slots, p40.starts) == (15, 2, (0, 2, 4, 6))
    assert (p80.id, p80.memory_slots, p80.starts) == (19, 1, (0, 1, 2, 3, 4, 5, 6))
    # ids are per GPU class: 14 is 2g on 8-slot parts, 1g on A30 and RTX PRO 6000
    assert get_model("A100-40GB").profile(14).name == "2g.10gb"
    assert get_model("A30-24GB").profile(14).name == "1g.6gb"
    assert get_model("RTX-PRO-6000-Blackwell-96GB").profile(14).name == "1g.24gb"


def test_get_model_is_case_insensitive_and_names_known_models() -> None:
    assert get_model("a100-40gb").name == "A100-40GB"
    assert get_model("rtx-pro-6000-blackwell-96gb").slots == 12
    with pytest.raises(KeyError) as err:
        get_model("A100-41GB")
    assert err.value.args[0].startswith("unknown GPU model 'A100-41GB' (known: A30-24GB, A100-40GB, ")


# --- classification


@pytest.mark.parametrize(
    ("model_id", "name", "base", "media"),
    [
        ("A100-40GB", "1g.5gb", True, False),
        ("A100-40GB", "1g.5gb+me", False, True),
        ("A100-40GB", "1g.10gb", True, False),
        ("A100-40GB", "7g.40gb", True, False),
        ("A30-24GB", "2g.12gb+me", False, True),
        ("RTX-PRO-6000-Blackwell-96GB", "1g.24gb", True, False),
        ("RTX-PRO-6000-Blackwell-96GB", "1g.24gb+me", False, True),
        ("RTX-PRO-6000-Blackwell-96GB", "1g.24gb+gfx", False, False),
        ("RTX-PRO-6000-Blackwell-96GB", "1g.24gb+me.all", False, True),
        ("RTX-PRO-6000-Blackwell-96GB", "1g.24gb-me", False, False),
        ("RTX-PRO-6000-Blackwell-96GB", "2g.48gb+me.all", False, True),
        ("RTX-PRO-6000-Blackwell-96GB", "2g.48gb-me", False, False),
        ("RTX-PRO-6000-Blackwell-96GB", "4g.96gb+gfx", False, False),
    ],
)
def test_base_and_media_extension(model_id: str, name: str, base: bool, media: bool) -> None:
    p = get_model(model_id).profile(name)
    assert (p.base, p.media_extension) == (base, media)


def test_base_profiles_per_model() -> None:
    bases = {m.name: [p.name for p in m.profiles if p.base] for m in builtin_models().values()}
    assert bases["A30-24GB"] == ["1g.6gb", "2g.12gb", "4g.24gb"]
    assert bases["A100-40GB"] == ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    assert bases["RTX-PRO-6000-Blackwell-96GB"] == ["1g.24gb", "2g.48gb", "4g.96gb"]
    assert all(len(b) == 6 for name, b in bases.items() if get_model(name).slots == 8)
    # every +me profile allows one instance: one media-engine set per GPU
    assert {p.max_instances for m in builtin_models().values() for p in m.profiles if p.media_extension} == {
        1
    }


# --- compute slices


def test_gpu_slices() -> None:
    assert get_model("A30-24GB").gpu_slices == ((0,), (1,), (2,), (3,))
    for name in ("A100-40GB", "H100-80GB", "GB200-186GB"):
        assert get_model(name).gpu_slices == ((0,), (1,), (2,), (3,), (4,), (5,), (6, 7))
    assert get_model("RTX-PRO-6000-Blackwell-96GB").gpu_slices == (
        (0, 1, 2),
        (3, 4, 5),
        (6, 7, 8),
        (9, 10, 11),
    )


def _max_compute(model: GpuModel) -> int:
    """Most compute any set of non-overlapping legal placements uses, by plain search."""
    options = sorted((s, p.memory_slots, p.compute) for p in model.profiles for s in p.starts)

    def best(mask: int, first: int) -> int:
        top = 0
        for k in range(first, len(options)):
            s, size, c = options[k]
            block = ((1 << size) - 1) << s
            if not mask & block:
                top = max(top, c + best(mask | block, k + 1))
        return top

    return best(0, 0)


@pytest.mark.parametrize("model_id", list(EXPECTED))
def test_builtin_models_meet_the_compute_bound_exactly(model_id: str) -> None:
    m = get_model(model_id)
    assert _max_compute(m) == m.compute_slices


# --- custom models

VALID = {
    "model": "Toy-4",
    "slots": 4,
    "compute_slices": 4,
    "memory_gb": 24,
    "profiles": [
        {
            "name": "1g.6gb",
            "id": 14,
            "compute": 1,
            "memory_slots": 1,
            "memory_gb": 6,
            "max_instances": 4,
            "placements": [[0, 1], [1, 1], [2, 1], [3, 1]],
        },
        {
            "name": "2g.12gb",
            "id": 5,
            "compute": 2,
            "memory_slots": 2,
            "memory_gb": 12,
            "max_instances": 2,
            "placements": [[0, 2], [2, 2]],
        },
    ],
}
P = "custom_gpu_models[0]"


def _set(key: str, value: Any) -> Any:
    return lambda d: d.__setitem__(key, value)


def _set_profile(i: int, key: str, value: Any) -> Any:
    return lambda d: d["profiles"][i].__setitem__(key, value)


BAD_MODELS = [
    ("wrong type", _set("slots", "4"), f"{P}.slots: must be an integer, got a string"),
    ("wrong type bool", _set("memory_gb", True), f"{P}.memory_gb: must be a number, got a boolean"),
    ("missing field", lambda d: d.pop("compute_slices"), f"{P}.compute_slices: missing required field"),
    (
        "unknown field",
        _set("colour", "red"),
        f"{P}.colour: unknown field (allowed: compute_slices, gpu_slices, memory_gb, model, profiles, "
        "slots, source_note, variants)",
    ),
    (
        "unknown profile field",
        _set_profile(0, "sm", 14),
        f"{P}.profiles[0].sm: unknown field (allowed: aliases, compute, id, max_instances, memory_gb, "
        "memory_slots, name, placement_status, placements, source_note)",
    ),
    (
        "placement past the last slot",
        _set_profile(1, "placements", [[0, 2], [2, 2], [3, 2]]),
        f"{P}.profiles[1].placements[2]: [3, 2] runs past slot 3",
    ),
    (
        "size differs from memory_slots",
        _set_profile(1, "placements", [[0, 2], [2, 1]]),
        f"{P}.profiles[1].placements[1]: size 1 differs from memory_slots 2",
    ),
    (
        "not a pair",
        _set_profile(0, "placements", [[0]]),
        f"{P}.profiles[0].placements[0]: must be [start, size], got [0]",
    ),
    (
        "duplicate placement",
        _set_profile(0, "placements", [[0, 1], [0, 1]]),
        f"{P}.profiles[0].placements[1]: duplicate placement [0, 1]",
    ),
    (
        "duplicate name, any case",
        _set_profile(1, "name", "1G.6GB"),
        f"{P}.profiles[1].name: '1g.6gb' already names profiles[0]",
    ),
    ("duplicate id", _set_profile(1, "id", 14), f"{P}.profiles[1].id: 14 already names profiles[0]"),
    ("slots > 16", _set("slots", 17), f"{P}.slots: must be <= 16, got 17"),
    (
        "profile compute > compute_slices",
        _set_profile(1, "compute", 5),
        f"{P}.profiles[1].compute: must be <= 4, got 5",
    ),
    (
        "compute bound exceeded",
        lambda d: d.update(compute_slices=3, gpu_slices=[[0], [1], [2, 3]]),
        f"{P}.profiles: non-overlapping placements can use 4 compute slices > compute_slices 3",
    ),
    (
        "gpu_slices count",
        _set("gpu_slices", [[0], [1], [2]]),
        f"{P}.gpu_slices: must list 4 compute slices, got 3",
    ),
    (
        "gpu_slices order",
        _set("gpu_slices", [[0], [2], [1], [3]]),
        f"{P}.gpu_slices: must split slots 0..3 into consecutive runs in order",
    ),
    (
        "gpu_slices slot out of range",
        _set("gpu_slices", [[0], [1], [2], [4]]),
        f"{P}.gpu_slices[3][0]: must be <= 3, got 4",
    ),
    (
        "gpu_slices needed but absent",
        lambda d: d.update(slots=6),
        f"{P}.gpu_slices: required: no default mapping of 6 memory slots onto 4 compute slices",
    ),
    ("empty profiles", _set("profiles", []), f"{P}.profiles: must not be empty"),
    ("profile not an object", _set("profiles", ["1g"]), f"{P}.profiles[0]: must be an object, got a string"),
    (
        "bad placement_status",
        _set_profile(0, "placement_status", "maybe"),
        f"{P}.profiles[0].placement_status: must be confirmed, inferred or custom, got 'maybe'",
    ),
    (
        "max_instances 0",
        _set_profile(1, "max_instances", 0),
        f"{P}.profiles[1].max_instances: must be >= 1, got 0",
    ),
]


@pytest.mark.parametrize(("label", "mutate", "message"), BAD_MODELS, ids=[b[0] for b in BAD_MODELS])
def test_custom_model_errors_name_the_path(label: str, mutate: Any, message: str) -> None:
    data = copy.deepcopy(VALID)
    mutate(data)
    with pytest.raises(InstanceError) as err:
        model_from_dict(data, P)
    assert str(err.value) == message
    assert "\n" not in str(err.value)
    assert err.value.path == message.split(": ")[0]


def test_custom_model_not_an_object() -> None:
    with pytest.raises(InstanceError, match=r"^custom_gpu_models\[0\]: must be an object, got a list$"):
        model_from_dict([], P)


def test_valid_custom_model_and_round_trip() -> None:
    m = model_from_dict(copy.deepcopy(VALID), P)
    assert not m.builtin
    assert m.gpu_slices == ((0,), (1,), (2,), (3,))  # derived: one slot per compute slice
    assert [p.placement_status for p in m.profiles] == ["custom", "custom"]
    data = m.to_dict()
    assert data == {
        "model": "Toy-4",
        "slots": 4,
        "compute_slices": 4,
        "memory_gb": 24.0,
        "gpu_slices": [[0], [1], [2], [3]],
        "profiles": [
            {
                "name": "1g.6gb",
                "id": 14,
                "compute": 1,
                "memory_slots": 1,
                "memory_gb": 6.0,
                "max_instances": 4,
                "placements": [[0, 1], [1, 1], [2, 1], [3, 1]],
                "placement_status": "custom",
                "aliases": [],
            },
            {
                "name": "2g.12gb",
                "id": 5,
                "compute": 2,
                "memory_slots": 2,
                "memory_gb": 12.0,
                "max_instances": 2,
                "placements": [[0, 2], [2, 2]],
                "placement_status": "custom",
                "aliases": [],
            },
        ],
    }
    assert model_from_dict(json.loads(json.dumps(data)), P) == m


@pytest.mark.parametrize("model_id", list(EXPECTED))
def test_builtin_model_round_trips_through_its_json(model_id: str) -> None:
    m = get_model(model_id)
    again = model_from_dict(json.loads(json.dumps(m.to_dict())), "x")
    assert (again.name, again.slots, again.compute_slices, again.memory_gb) == (
        m.name,
        m.slots,
        m.compute_slices,
        m.memory_gb,
    )
    assert again.profiles == m.profiles
    assert again.gpu_slices == m.gpu_slices


def test_info_json_is_the_model_dict(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["info", "A100-80GB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out == get_model("A100-80GB").to_dict()
    assert out["profiles"][4]["aliases"] == ["3g.39gb"]
