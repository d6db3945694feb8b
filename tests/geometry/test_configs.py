"""Configuration enumeration of one GPU (GRMU section 5.1) and NVIDIA's valid layouts."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mipopt.catalog import GpuModel, get_model
from mipopt.cli import main
from mipopt.geometry.configs import (
    config_stats,
    default_reachable,
    describe,
    enumerate_configurations,
    maximal_layouts,
    suboptimal,
)

SHARED_JSON = Path(__file__).parents[2].parent / "shared/mig/mig_profiles.json"

# shared/mig/README.md section 3 (computed there from the confirmed A100 -lgipp table)
A100_LAYOUTS = [
    "1g@0 1g@1 1g@2 1g@3 1g@4 1g@5 1g@6",
    "1g@0 1g@1 1g@2 1g@3 2g@4 1g@6",
    "1g@0 1g@1 1g@2 1g@3 3g@4",
    "1g@0 1g@1 2g@2 1g@4 1g@5 1g@6",
    "1g@0 1g@1 2g@2 2g@4 1g@6",
    "1g@0 1g@1 2g@2 3g@4",
    "2g@0 1g@2 1g@3 1g@4 1g@5 1g@6",
    "2g@0 1g@2 1g@3 2g@4 1g@6",
    "2g@0 1g@2 1g@3 3g@4",
    "2g@0 2g@2 1g@4 1g@5 1g@6",
    "2g@0 2g@2 2g@4 1g@6",
    "2g@0 2g@2 3g@4",
    "3g@0 1g@4 1g@5 1g@6",
    "3g@0 2g@4 1g@6",
    "3g@0 3g@4",
    "4g@0 1g@4 1g@5 1g@6",
    "4g@0 2g@4 1g@6",
    "4g@0 3g@4",  # R510 and later only
    "7g@0",
]
A30_LAYOUTS = ["1g@0 1g@1 1g@2 1g@3", "1g@0 1g@1 2g@2", "2g@0 1g@2 1g@3", "2g@0 2g@2", "4g@0"]


def _family_text(model: GpuModel, config: frozenset[tuple[int, int]]) -> str:
    """``describe`` output with profile names cut to their family: ``1g.5gb@0`` -> ``1g@0``."""
    return " ".join(item.split(".")[0] + "@" + item.split("@")[1] for item in describe(model, config).split())


def _layouts(model_id: str, *, pre_r510: bool = False) -> list[str]:
    m = get_model(model_id)
    return [_family_text(m, c) for c in maximal_layouts(m, pre_r510=pre_r510)]


def test_a100_40gb_config_stats() -> None:
    stats = config_stats(get_model("A100-40GB"))
    assert stats.profiles == ["1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"]
    # GRMU section 5.1: 723 configurations (the empty one included), 78 terminal, 482 suboptimal.
    assert (stats.configurations, stats.terminal, stats.suboptimal) == (723, 78, 482)
    assert stats.multisets == 78
    # The paper says default placement reaches 248 (172 suboptimal); sequential default placement from
    # empty with no departures reaches 179 here, 59 of them suboptimal (see docs on the difference).
    assert (stats.default_reachable, stats.default_reachable_suboptimal) == (179, 59)
    assert (stats.maximal_layouts, stats.maximal_layouts_pre_r510) == (19, 18)


def test_h100_80gb_has_the_a100_counts() -> None:
    a100 = config_stats(get_model("A100-40GB")).to_dict()
    h100 = config_stats(get_model("H100-80GB")).to_dict()
    for key in ("model", "profiles"):
        a100.pop(key), h100.pop(key)
    assert h100 == a100
    assert _layouts("H100-80GB") == A100_LAYOUTS


def test_a100_maximal_layouts_are_nvidia_19() -> None:
    assert _layouts("A100-40GB") == A100_LAYOUTS
    # before R510 a (4 memory, 4 compute) profile could not sit beside a (4 memory, 3 compute) one
    assert _layouts("A100-40GB", pre_r510=True) == [x for x in A100_LAYOUTS if x != "4g@0 3g@4"]


@pytest.mark.skipif(not SHARED_JSON.exists(), reason=f"shared facts not present at {SHARED_JSON}")
def test_a100_layouts_equal_shared_json() -> None:
    shared = json.loads(SHARED_JSON.read_text())["a100_valid_configurations"]["layouts"]
    assert _layouts("A100-40GB") == shared == A100_LAYOUTS


def test_a30_maximal_layouts() -> None:
    assert _layouts("A30-24GB") == A30_LAYOUTS
    stats = config_stats(get_model("A30-24GB"))
    assert (stats.maximal_layouts, stats.maximal_layouts_pre_r510) == (5, 5)


def test_enumeration_pieces_agree_with_stats() -> None:
    m = get_model("A100-40GB")
    configs, terminal = enumerate_configurations(m)
    assert frozenset() in configs
    assert terminal <= configs
    reach = default_reachable(m)
    assert reach <= configs
    # two 1g.5gb by default placement sit at 4 and 6, which GRMU 5.1 calls suboptimal (4 and 5 is better)
    one = m.index("1g.5gb")
    assert one is not None
    by_default = frozenset({(one, 6), (one, 4)})
    assert by_default in reach
    assert by_default in suboptimal(m, configs)
    assert frozenset({(one, 4), (one, 5)}) not in suboptimal(m, configs)
    assert frozenset({(one, 4), (one, 5)}) not in reach


def test_cli_configs_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["configs", "--gpu", "A100-40GB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["model"] == "A100-40GB"
    assert (out["configurations"], out["terminal"], out["suboptimal"], out["default_reachable"]) == (
        723,
        78,
        482,
        179,
    )


def test_cli_configs_unknown_model(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["configs", "--gpu", "Z100-1GB"]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.splitlines()
    assert len(lines) == 1
    assert lines[0].startswith("mipopt: error: unknown GPU model 'Z100-1GB' (known: A30-24GB, A100-40GB,")
