"""bench_adapter: the MIG-Adapter article's claims computed from the catalog, and a small replay run."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.bench_scripts import README, RESULTS, digest, load, read_csv, run

COLUMNS = [
    "commit", "date", "machine", "python", "kind", "item", "policy", "runs", "paper", "mipopt",
    "acceptance_rate", "accepted", "borrows", "returns", "borrowed_slots_total", "runtime_s", "explanation",
]  # fmt: skip


def test_the_articles_counts() -> None:
    bench = load("bench_adapter")
    # copies per GPU and the compute and memory slices left over (single strategy, A100-40GB)
    assert bench.single_strategy() == {
        "1g.5gb": (7, 0, 1),
        "2g.10gb": (3, 1, 2),
        "3g.20gb": (2, 1, 0),
        "4g.20gb": (1, 3, 4),
        "7g.40gb": (1, 0, 0),
    }
    groups = bench.same_multiset_layouts()
    assert sum(groups.values()) == 19 and groups["5x1g.5gb+1x2g.10gb"] == 3
    assert bench.chain_of(["A100-40GB"], "1g.5gb") == ["1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb"]
    mixed = bench.chain_of(["A100-40GB", "H100-80GB"], "1g.5gb")
    assert [p for p in mixed if p != "1g.20gb"] == [
        "1g.10gb", "2g.10gb", "2g.20gb", "3g.20gb", "3g.40gb", "4g.20gb", "4g.40gb",
    ]  # fmt: skip


@pytest.mark.integration
def test_adapter_benchmark_small(tmp_path: Path) -> None:
    committed = [RESULTS / "adapter.csv", README]
    before = [digest(p) for p in committed]
    run("bench_adapter", "--quick", "--out-dir", str(tmp_path))
    rows = read_csv(tmp_path / "adapter.csv", COLUMNS)
    claims = {r["item"]: r for r in rows if r["kind"] == "claim"}
    assert claims["single strategy: 1x4g.20gb wastes"]["mipopt"] == "3 compute, 4 memory"
    assert claims["mixed strategy: supported configurations"]["mipopt"].startswith("19 (drivers R510+); 18")
    replays = {(r["item"].split()[0], r["policy"]): r for r in rows if r["kind"] == "replay"}
    assert set(replays) == {
        ("fbk", "mfi"),
        ("fbk", "adapter(mfi)"),
        ("mixed", "mfi"),
        ("mixed", "adapter(mfi)"),
    }
    # one GPU model with every profile: nothing to borrow; two models: the adapter borrows and gains
    assert replays["fbk", "adapter(mfi)"]["borrows"] == "0.00"
    assert replays["fbk", "adapter(mfi)"]["acceptance_rate"] == replays["fbk", "mfi"]["acceptance_rate"]
    assert float(replays["mixed", "adapter(mfi)"]["borrows"]) > 0
    assert float(replays["mixed", "adapter(mfi)"]["acceptance_rate"]) > float(
        replays["mixed", "mfi"]["acceptance_rate"]
    )
    assert "| #15-#18 give the same partitions |" in (tmp_path / "README.md").read_text()
    assert [digest(p) for p in committed] == before


def test_the_mixed_replay_keeps_every_state_valid() -> None:
    import dataclasses

    from mipopt.heuristics.policies import make_policy
    from mipopt.simulation import simulate

    trace = load("bench_adapter").mixed_trace(0)
    head = dataclasses.replace(trace, requests=trace.requests[:200])
    policy = make_policy("adapter(mfi)")
    result = simulate(head, policy, seed=0, debug=True)  # the verifier after every event
    assert policy.borrows > 0 and result.summary["arrived"] == 200
