"""Benchmark: the MIG-Adapter article's claims (paper ``002``), each computed from the catalog or replayed.

The article (MIG partitioning with the GPU Operator, and the MIG-Adapter operator) makes its
points on the A100-40GB: the single strategy's options and their waste, the 19 layouts of the
mixed strategy, the chains of compatible types, and that borrowing a larger free type for a
pending pod "improves cluster resource efficiency". Its numbers are counts and layouts, which
mipopt computes from the catalog and the geometry module (``claims``); the efficiency claim has
no number, so the benchmark measures it (``replays``): every policy with and without
``adapter(...)`` on the same traces, acceptance rates and the adapter's borrows and returns:

* ``fbk``: the MFI set-up (100 A100-80GB, default load), where every GPU has every profile;
* ``mixed``: a Poisson stream on 8 A100-40GB and 8 H100-80GB, hosts of 4, with profiles of both
  models (``1g.5gb`` and ``3g.20gb`` only on the A100, ``1g.10gb`` and ``3g.40gb`` on both or only the
  H100), offered load 1.2: the case the article's mixed chain is for.

Usage::

    python -m benchmarks.bench_adapter [--runs 20] [--out-dir DIR] [--readme FILE] [--render] [--quick]
"""

from __future__ import annotations

if not __package__:  # run as a file: python benchmarks/bench_adapter.py
    import _as_module  # noqa: F401

import argparse
import time
from collections import Counter
from typing import Any

from benchmarks import common
from mipopt.catalog import get_model
from mipopt.geometry.configs import enumerate_configurations, family_profiles, maximal_layouts
from mipopt.heuristics.adapter import Adapter, chain
from mipopt.heuristics.policies import make_policy
from mipopt.instance import InstanceBuilder, Workload
from mipopt.instance.trace import Trace
from mipopt.simulation import simulate
from mipopt.state.cluster import Cluster
from mipopt.workloads import fbk_trace, poisson_trace

POLICIES = ("mfi", "ff", "bf-bi", "grmu")
MIXED_MIX = {"1g.5gb": 3.0, "1g.10gb": 2.0, "2g.10gb": 2.0, "3g.20gb": 1.0, "3g.40gb": 1.0, "2g.20gb": 1.0}
COLUMNS = (
    "kind",  # claim | replay
    "item",  # claim id, or the workload of a replay
    "policy",
    "runs",
    "paper",
    "mipopt",
    "acceptance_rate",
    "accepted",
    "borrows",
    "returns",
    "borrowed_slots_total",
    "runtime_s",
    "explanation",
)


# --- claims: counts and layouts ------------------------------------------------------------


def single_strategy(model_name: str = "A100-40GB") -> dict[str, tuple[int, int, int]]:
    """Per family profile: how many copies fit one GPU, and the compute and memory slices left over."""
    model = get_model(model_name)
    out = {}
    for p in family_profiles(model):
        profile = model.profiles[p]
        configs, _ = enumerate_configurations(model, [p])
        copies = max(len(c) for c in configs)
        left = (model.compute_slices - copies * profile.compute, model.slots - copies * profile.memory_slots)
        out[profile.name] = (copies, *left)
    return out


def same_multiset_layouts(model_name: str = "A100-40GB") -> dict[str, int]:
    """The 19 layouts grouped by the partitions they give (``1x2g.10gb+5x1g.5gb``: how many layouts)."""
    model = get_model(model_name)
    groups: Counter[str] = Counter()
    for layout in maximal_layouts(model):
        counts = Counter(model.profiles[p].name for p, _ in layout)
        groups["+".join(f"{n}x{name}" for name, n in sorted(counts.items(), key=lambda kv: -kv[1]))] += 1
    return dict(groups)


def chain_of(models: list[str], profile: str) -> list[str]:
    """mipopt's chain (:func:`mipopt.heuristics.adapter.chain`) of a request on a cluster of these models."""
    b = InstanceBuilder("chain")
    b.add_host("h", {f"g{k}": m for k, m in enumerate(models)})
    b.add_workload("w", profile)
    cluster = Cluster(b.build())
    return chain(cluster, Workload("w", profile))


def claims() -> list[dict[str, Any]]:
    single = single_strategy()
    groups = same_multiset_layouts()
    a100 = get_model("A100-40GB")
    same = "5x1g.5gb+1x2g.10gb"
    rows = [
        ("single strategy: options on the A100-40GB", "4 (Fig. 2); 4g.20gb not supported", _single_text(single),
         "the same four plus 1x4g.20gb, which fits but which the GPU Operator's single strategy does not "
         "offer (the article's next point)"),
        ("single strategy: 1x4g.20gb wastes", "3 compute, 4 memory slices",
         "{1} compute, {2} memory".format(*single["4g.20gb"]), "matches"),
        ("single strategy: 3x2g.10gb wastes", "1 compute, 2 memory slices",
         "{1} compute, {2} memory".format(*single["2g.10gb"]), "matches"),
        ("mixed strategy: supported configurations", "19 (Fig. 3)",
         f"{len(maximal_layouts(a100))} (drivers R510+); {len(maximal_layouts(a100, pre_r510=True))} before R510",
         "matches with R510+ rules, which add 4g.20gb@0 3g.20gb@4 (docs/geometry.md, section 8)"),
        ("#15-#18 give the same partitions", "4 layouts: 1x2g.10gb+5x1g.5gb",
         f"{groups.get(same, 0)} layouts: {same}",
         "2g.10gb starts only at memory slots 0, 2, 4 (catalog, from NVIDIA's placements), so 3 layouts; "
         "a figure of 4 such layouts and 19 in all is 18 pre-R510 layouts plus a fourth 2g.10gb position "
         "the placements do not allow; the figure is not in the text to check"),
        ("chain, A100", "1g5gb -> 2g10gb -> 3g20gb -> 4g20gb",
         " -> ".join(["1g.5gb", *chain_of(["A100-40GB"], "1g.5gb")]),
         "mipopt derives the chain from the catalog; the A100-40GB's 1g.10gb (a later profile than the "
         "article's chain) sits between 1g.5gb and 2g.10gb"),
        ("chain, A100 and H100", "1g5gb -> 1g10gb -> 2g10gb -> 2g20gb -> 3g20gb -> 3g40gb -> 4g20gb -> 4g40gb",
         " -> ".join(["1g.5gb", *chain_of(["A100-40GB", "H100-80GB"], "1g.5gb")]),
         "the article's, with the H100's 1g.20gb (not in the article's chain) after 1g.10gb"),
    ]  # fmt: skip
    empty = dict.fromkeys(COLUMNS, "")
    return [
        empty | {"kind": "claim", "item": item, "paper": paper, "mipopt": value, "explanation": why}
        for item, paper, value, why in rows
    ]


def _single_text(single: dict[str, tuple[int, int, int]]) -> str:
    """``5: 7x1g.5gb, 3x2g.10gb, ...``; the whole-GPU and 4g options included."""
    return f"{len(single)}: " + ", ".join(f"{n}x{name}" for name, (n, _, _) in single.items())


# --- replays: the efficiency claim ------------------------------------------------------------


def mixed_trace(seed: int) -> Trace:
    b = InstanceBuilder("8xA100-40GB+8xH100-80GB")
    for h in range(4):
        model = "A100-40GB" if h < 2 else "H100-80GB"
        b.add_host(f"h{h}", {f"h{h}-g{k}": model for k in range(4)})
    return poisson_trace(
        b.build(),
        load=1.2,
        mix=MIXED_MIX,
        mean_lifetime=10.0,
        horizon=200.0,
        seed=seed,
        name=f"mixed-seed{seed}",
    )


def replays(runs: int, policies: tuple[str, ...]) -> list[dict[str, Any]]:
    workloads = {
        "fbk (100 A100-80GB, default load, uniform)": lambda s: fbk_trace(seed=s),
        "mixed (8 A100-40GB + 8 H100-80GB, Poisson, load 1.2)": mixed_trace,
    }
    rows = []
    empty = dict.fromkeys(COLUMNS, "")
    for label, make in workloads.items():
        traces = [make(s) for s in range(runs)]
        for inner in policies:
            for spec in (inner, f"adapter({inner})"):
                t0 = time.perf_counter()
                totals: Counter[str] = Counter()
                for seed, trace in enumerate(traces):
                    policy = make_policy(spec)
                    summary = simulate(trace, policy, seed=seed).summary
                    totals["arrived"] += summary["arrived"]
                    totals["accepted"] += summary["accepted"]
                    if isinstance(policy, Adapter):
                        totals["borrows"] += policy.borrows
                        totals["returns"] += policy.returns
                        totals["borrowed_slots_total"] += policy.borrowed_slots_total
                common.progress(f"{label[:5]} {spec}: {totals['accepted']} of {totals['arrived']}")
                rows.append(
                    empty
                    | {
                        "kind": "replay",
                        "item": label,
                        "policy": spec,
                        "runs": runs,
                        "acceptance_rate": f"{totals['accepted'] / totals['arrived']:.6f}",
                        "accepted": f"{totals['accepted'] / runs:.2f}",
                        "borrows": f"{totals['borrows'] / runs:.2f}" if spec.startswith("adapter") else "",
                        "returns": f"{totals['returns'] / runs:.2f}" if spec.startswith("adapter") else "",
                        "borrowed_slots_total": f"{totals['borrowed_slots_total'] / runs:.2f}"
                        if spec.startswith("adapter")
                        else "",
                        "runtime_s": f"{time.perf_counter() - t0:.2f}",
                    }
                )
    return rows


def measure(args: argparse.Namespace) -> list[dict[str, Any]]:
    return claims() + replays(args.runs, tuple(args.policies))


# --- README -----------------------------------------------------------------------------------


def readme_table(rows: list[dict[str, str]], source: str, args: object = None) -> str:
    latest = common.latest(rows, lambda r: (r["kind"], r["item"], r["policy"]))
    claim_rows = [g[0] for (kind, _, _), g in latest.items() if kind == "claim"]
    replay_rows = [g[0] for (kind, _, _), g in latest.items() if kind == "replay"]
    claim_columns: list[common.Column[dict[str, str]]] = [
        common.Column("Claim", lambda r: r["item"]),
        common.Column("Article", lambda r: r["paper"]),
        common.Column("mipopt", lambda r: r["mipopt"]),
        common.Column("Set-up and difference", lambda r: r["explanation"]),
    ]
    by = {(r["item"], r["policy"]): r for r in replay_rows}

    def gain(r: dict[str, str]) -> str:
        if not r["policy"].startswith("adapter("):
            return ""
        plain = by.get((r["item"], r["policy"][len("adapter(") : -1]))
        if plain is None:
            return ""
        return f"{100 * (float(r['acceptance_rate']) - float(plain['acceptance_rate'])):+.2f} points"

    replay_columns: list[common.Column[dict[str, str]]] = [
        common.Column("Workload", lambda r: r["item"]),
        common.Column("Policy", lambda r: f"`{r['policy']}`"),
        common.Column("Runs", lambda r: r["runs"], "r"),
        common.Column("Acceptance rate", lambda r: common.percent(r["acceptance_rate"], 2), "r"),
        common.Column("With the adapter", gain, "r"),
        common.Column("Borrows per run", lambda r: r["borrows"] or "-", "r"),
        common.Column("Returns per run", lambda r: r["returns"] or "-", "r"),
        common.Column("Commit", lambda r: r["commit"]),
    ]
    note = (
        f"_Generated by `benchmarks/bench_adapter.py` from {len(rows)} rows of `{source}`: the latest run. "
        "Claims are computed from the catalog and the geometry module; replays are the simulator's, "
        "every policy with and without `adapter(...)` on the same traces (acceptance rate over all runs' "
        "requests)._"
    )
    return (
        f"{note}\n\n{common.table(claim_columns, claim_rows)}\n\n{common.table(replay_columns, replay_rows)}"
    )


def arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--runs", type=int, default=20, help="traces per workload (default 20)")
    parser.add_argument("--policies", nargs="+", default=list(POLICIES), help="inner policies (default: all)")


def check(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    if args.runs < 1:
        parser.error("--runs must be at least 1")


def report(args: argparse.Namespace, rows: list[dict[str, Any]]) -> None:
    for row in rows:
        if row["kind"] == "replay":
            print(
                f"{row['item'][:5]:<6} {row['policy']:<16} {float(row['acceptance_rate']):.4f} {row['borrows']}"
            )


BENCH = common.Benchmark(
    doc=__doc__,
    outputs=[common.Output("adapter.csv", COLUMNS, {"adapter": readme_table})],
    arguments=arguments,
    measure=measure,
    check=check,
    report=report,
    quick=("--runs", "1", "--policies", "mfi"),
)
main = BENCH.main

if __name__ == "__main__":
    raise SystemExit(main())
