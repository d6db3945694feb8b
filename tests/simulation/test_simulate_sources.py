"""Every policy on every workload source of ``mipopt simulate``, the verifier after every event.

The sources are the ones a user names with ``--workload``: ``fbk``, ``poisson`` and
``alibaba`` (here on synthetic files with the real trace's columns). Small sizes, loaded
enough that policies reject and GRMU defragments, so the rules are exercised where they bind.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from mipopt.errors import InstanceError
from mipopt.heuristics.policies import make_policy, policy_names
from mipopt.simulation import simulate
from mipopt.simulation.runs import make_trace
from tests.factories import write_alibaba_csvs

POLICIES = [name for name in policy_names() if name != "adapter"] + [
    "adapter(mfi)",
    "adapter(ff)",
    "grmu:consolidation=2",
    "bf-bi:by-amount=true",
]


@pytest.fixture(scope="module")
def alibaba_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Two nodes (3 and 2 GPUs) and 60 pods of random GPU shares, created within 40 minutes."""
    rng = np.random.default_rng(7)
    pods = []
    for i in range(60):
        t0 = 1000 + 40 * i
        share = int(rng.choice([0, 50, 200, 300, 460, 1000]))
        pods.append((f"p{i:02d}", 1 if share else 0, share, t0, t0 + int(rng.integers(600, 4000))))
    return write_alibaba_csvs(tmp_path_factory.mktemp("alibaba"), [("n0", 3), ("n1", 2)], pods)


def _specs(alibaba: Path) -> dict[str, str]:
    return {
        "fbk": "fbk:gpus=4,distribution=bimodal,slots=50",
        "poisson": "poisson:gpus=4,gpus_per_host=2,load=1.5,mean_lifetime=2,horizon=8,mix=skew-big",
        "alibaba": f"alibaba:path={alibaba},compress=4",
    }


@pytest.mark.parametrize("source", ["fbk", "poisson", "alibaba"])
@pytest.mark.parametrize("policy", POLICIES)
def test_policy_on_source_keeps_every_state_valid(policy: str, source: str, alibaba_dir: Path) -> None:
    trace = make_trace(_specs(alibaba_dir)[source], seed=2)
    result = simulate(trace, make_policy(policy), seed=2, debug=True)  # raises on a broken state
    summary = result.summary
    assert summary["arrived"] == len(trace.requests) > 20
    assert 0 < summary["accepted"] <= summary["arrived"]
    assert len(result.placed) <= summary["accepted"]  # what is still placed was accepted once


def test_sources_are_loaded_enough_to_reject() -> None:
    # Otherwise the test above would not reach the rules that bind only on a full cluster.
    trace = make_trace(
        "poisson:gpus=4,gpus_per_host=2,load=1.5,mean_lifetime=2,horizon=8,mix=skew-big", seed=2
    )
    assert simulate(trace, make_policy("ff"), seed=2).summary["acceptance_rate"] < 0.9


def test_poisson_spec_options() -> None:
    trace = make_trace(
        "poisson:gpus=10,gpus_per_host=4,model=A100-40GB,mix=1g.5gb:3;7g.40gb:1,load=0.5", seed=1
    )
    assert [len(h.gpus) for h in trace.cluster.hosts] == [4, 4, 2]
    assert {r.profile for r in trace.requests} == {"1g.5gb", "7g.40gb"}
    assert trace.meta["mix"] == {"1g.5gb": 0.75, "7g.40gb": 0.25}
    with pytest.raises(InstanceError, match=r"^workload: workload poisson takes its seed from the run"):
        make_trace("poisson:gpus=10,seed=1", seed=1)  # it was overruled by the run's seed
    with pytest.raises(InstanceError, match=r"mix: 'wide' is not a profile of the cluster's GPU models"):
        make_trace("poisson:mix=wide", seed=1)
    with pytest.raises(InstanceError, match=r"mix: weight 'x' of '1g.10gb' is not a number"):
        make_trace("poisson:mix=1g.10gb:x", seed=1)
    with pytest.raises(InstanceError, match=r"gpus must be an integer of at least 1, got 0"):
        make_trace("poisson:gpus=0", seed=1)


def test_the_registry_table_names_each_policy_by_its_own_name() -> None:
    """The explicit table (mipopt.heuristics.policies.POLICIES) and the classes agree on every name."""
    from mipopt.heuristics.policies import POLICIES

    assert sorted(POLICIES) == policy_names()
    for name, factory in POLICIES.items():
        made = factory(make_policy("ff")) if name == "adapter" else factory()
        assert made.name == ("adapter(ff)" if name == "adapter" else name)
