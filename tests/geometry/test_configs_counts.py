"""GRMU section 5.1's per-profile counts: 138 configurations, 205,575 two-GPU pairs."""

from __future__ import annotations

import json
from functools import cache

import numpy as np
import pytest

from mipopt.catalog import get_model
from mipopt.cli import main
from mipopt.geometry.configs import (
    CC_RULES,
    Configuration,
    better_alternative,
    enumerate_configurations,
    pair_profile_alternatives,
    profile_alternatives,
    profile_vectors,
)


@cache
def a100() -> list[Configuration]:
    configs, _ = enumerate_configurations(get_model("A100-40GB"))
    return sorted(configs, key=sorted)


def naive(groups: list[int], cc: list[int], cap: list[list[int]], rule: str) -> list[bool]:
    """The definition read literally: a loop over every pair of items."""
    compare = {
        "<=": lambda a, b: a <= b,
        "==": lambda a, b: a == b,
        "<": lambda a, b: a < b,
        "any": lambda a, b: True,
    }[rule]
    out = []
    for i in range(len(groups)):
        out.append(
            any(
                groups[j] == groups[i]
                and compare(cc[j], cc[i])
                and any(x > y for x, y in zip(cap[j], cap[i], strict=True))
                for j in range(len(groups))
            )
        )
    return out


@pytest.mark.parametrize("rule", CC_RULES)
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_vectorized_rule_equals_the_literal_loop(rule: str, seed: int) -> None:
    rng = np.random.default_rng(seed)
    n = 200
    groups = rng.integers(0, 12, n)
    cc = rng.integers(0, 6, n)
    cap = rng.integers(0, 4, (n, 3))
    got = better_alternative(groups, cc, cap, rule)  # type: ignore[arg-type]
    want = naive(groups.tolist(), cc.tolist(), cap.tolist(), rule)
    assert got.tolist() == want
    assert 0 < sum(want) < n


def test_a100_single_gpu_138() -> None:
    m = get_model("A100-40GB")
    configs = a100()
    assert len(configs) == 723
    assert len(profile_alternatives(m, configs)) == 138
    # The other readings of "the same or lower CC" (docs/geometry.md section 8).
    assert len(profile_alternatives(m, configs, cc_rule="==")) == 119
    assert len(profile_alternatives(m, configs, cc_rule="<")) == 19
    assert len(profile_alternatives(m, configs, cc_rule="any")) == 482


def test_table3_example_is_among_the_138() -> None:
    """Paper Table 3: CC 11 both, the alternative fits one more 1g.10gb, one fewer 4g.20gb."""
    m = get_model("A100-40GB")
    configs = a100()
    counts, cc, cap = profile_vectors(m, configs)
    assert (cap.sum(axis=1) == cc).all()
    flagged = profile_alternatives(m, configs)
    originals = np.flatnonzero((cap == (5, 2, 2, 1, 1, 0)).all(axis=1))
    alternatives = np.flatnonzero((cap == (5, 3, 2, 1, 0, 0)).all(axis=1))
    pairs = [(a, b) for a in originals for b in alternatives if (counts[a] == counts[b]).all()]
    assert pairs, "no pair with Table 3's capacities"
    for a, b in pairs:
        assert cc[a] == cc[b] == 11
        assert configs[a] in flagged


def test_a100_two_gpus_205575() -> None:
    m = get_model("A100-40GB")
    configs = a100()
    assert pair_profile_alternatives(m, configs) == (261_726, 205_575)
    assert pair_profile_alternatives(m, configs, cc_rule="==") == (261_726, 192_541)
    assert pair_profile_alternatives(m, configs, redistribute=False) == (261_726, 167_858)


def test_pairs_on_a_small_model_match_the_literal_loop() -> None:
    """A30: 26 configurations, 351 pairs; the vectorized pair count equals a loop over pairs."""
    m = get_model("A30-24GB")
    configs, _ = enumerate_configurations(m)
    configs_l = sorted(configs, key=sorted)
    counts, cc, cap = profile_vectors(m, configs_l)
    idx = [(i, j) for i in range(len(configs_l)) for j in range(i, len(configs_l))]
    keys = [tuple(counts[i] + counts[j]) for i, j in idx]
    group_of = {k: g for g, k in enumerate(sorted(set(keys)))}
    flags = naive(
        [group_of[k] for k in keys],
        [int(cc[i] + cc[j]) for i, j in idx],
        [list(cap[i] + cap[j]) for i, j in idx],
        "any",
    )
    assert pair_profile_alternatives(m, configs_l, cc_rule="any") == (351, sum(flags))


def test_cli_prints_the_counts(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["configs", "--gpu", "A100-40GB", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert (out["profile_alternatives"], out["gpu_pairs"], out["pair_profile_alternatives"]) == (
        138,
        261_726,
        205_575,
    )
    assert main(["configs", "--gpu", "A100-40GB"]) == 0
    text = capsys.readouterr().out
    assert "138" in text and "205575" in text and "261726" in text
