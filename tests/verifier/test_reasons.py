"""Why a workload is rejected (mipopt.verifier.reasons): each code on a tiny instance whose
answer is checked by hand, with heuristics and exact solves, the JSON round trip, and a
property over every committed instance and method."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from factories import ROOT
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from mipopt import registry
from mipopt.catalog import get_model
from mipopt.errors import InstanceError
from mipopt.instance import (
    Instance,
    InstanceBuilder,
    Solution,
    StageResult,
    Status,
    Termination,
    solution_from_dict,
    solution_to_dict,
)
from mipopt.instance.types import REJECTION_CODES, Rejection
from mipopt.io import load_instance
from mipopt.verifier import (
    explain,
    no_solution,
    rejection_reasons,
    solution_for,
    spot_left,
    unplaceable,
    verify,
)

INSTANCES = sorted(p for p in (ROOT / "instances").glob("*.json") if not p.name.endswith(".target.json"))


def build(hosts: list[tuple[str, dict[str, str], dict[str, float]]], workloads: list[tuple]) -> Instance:
    """Hosts as (id, {gpu: model}, capacities); workloads as (id, profile, options)."""
    b = InstanceBuilder("t")
    for hid, gpus, caps in hosts:
        b.add_host(hid, gpus, **caps)
    for wid, profile, options in workloads:
        b.add_workload(wid, profile, **options)
    return b.build()


def reasons(inst: Instance, sol: Solution, **kw: Any) -> list[tuple[str, str, str]]:
    return [(r.workload, r.code, r.message) for r in rejection_reasons(inst, sol, **kw)]


def hand(inst: Instance, placed: dict[str, tuple[str, int]], **kw: object) -> Solution:
    """A solution placing ``placed``; a heuristic's unless given stages."""
    options: dict[str, object] = {"method": "hand", "termination": Termination.COMPLETED}
    options.update(status=Status.FEASIBLE)
    options.update(kw)
    stages = options.pop("stages", ())
    sol = solution_for(inst, placed, **options)  # type: ignore[arg-type]
    return replace(sol, stages=stages)  # type: ignore[arg-type]


# --- the instance alone: no-profile, gpu-models, host-capacity


def test_no_profile_by_name_and_by_lgip_id() -> None:
    inst = build(
        [("h1", {"g0": "A30-24GB"}, {})],
        [
            ("named", "7g.80gb", {"gpu_models": ["H100-80GB"]}),
            # -lgip id 19 is 1g.5gb on an A100-40GB, 1g.10gb on an H100-80GB, nothing on an A30-24GB
            ("by-id", 19, {"gpu_models": ["A100-40GB"]}),
            ("ok", 14, {}),  # 1g.6gb on the A30-24GB
        ],
    )
    want = [
        ("named", "no-profile", "no GPU model here has profile '7g.80gb' (models here: A30-24GB)"),
        ("by-id", "no-profile", "no GPU model here has profile 19 (models here: A30-24GB)"),
    ]
    assert [(r.workload, r.code, r.message) for r in unplaceable(inst)] == want
    assert reasons(
        inst, solution_for(inst, {}, method="ff", termination=Termination.COMPLETED, status=Status.FEASIBLE)
    ) == [
        *want,
        ("ok", "not-chosen", "fits in the space left (g0:0), but the heuristic ff left it out"),
    ]


def test_no_profile_in_a_cluster_without_gpus() -> None:
    inst = build([("h1", {}, {})], [("w", "1g.5gb", {})])
    assert [(r.code, r.message) for r in unplaceable(inst)] == [("no-profile", "the cluster has no GPUs")]


def test_gpu_models_excludes_every_gpu_with_the_profile() -> None:
    inst = build(
        [("h1", {"a": "A100-40GB", "b": "A30-24GB"}, {})],
        [("w", "1g.5gb", {"gpu_models": ["H100-80GB"]})],  # 1g.5gb: on the A100 only, which is excluded
    )
    assert [(r.workload, r.code, r.message) for r in unplaceable(inst)] == [
        ("w", "gpu-models", "gpu_models allows only H100-80GB; the GPUs with profile '1g.5gb' are A100-40GB")
    ]


def test_gpu_models_resolves_an_lgip_id_per_model() -> None:
    # id 9 is 3g.20gb on the A100-40GB and 3g.40gb on the H100-80GB: both have it, only H100 allowed
    inst = build(
        [("h1", {"a": "A100-40GB"}, {}), ("h2", {"h": "H100-80GB"}, {"cpu": 4})],
        [("w", 9, {"gpu_models": ["H100-80GB"], "cpu": 8})],
    )
    assert [(r.code, r.message) for r in unplaceable(inst)] == [
        ("host-capacity", "needs cpu 8, the most any host with an eligible GPU has is 4 (h2)")
    ]


@pytest.mark.parametrize(
    ("caps", "need", "message"),
    [
        (
            [{"cpu": 8, "ram_gb": 64}, {"cpu": 16, "ram_gb": 32}],
            {"cpu": 32, "ram_gb": 16},
            "needs cpu 32, the most any host with an eligible GPU has is 16 (h2)",
        ),
        (
            [{"cpu": 8, "ram_gb": 64}, {"ram_gb": 64}],
            {"cpu": 4, "ram_gb": 128},
            "needs ram 128 GB, the most any host with an eligible GPU has is 64 GB (h1, h2)",
        ),
        (
            [{"cpu": 8, "ram_gb": 64}, {"cpu": 16, "ram_gb": 32}],
            {"cpu": 32, "ram_gb": 128},
            "needs cpu 32 and ram 128 GB, the most any host with an eligible GPU has is cpu 16 (h2) "
            "and ram 64 GB (h1)",
        ),
        (
            [{"cpu": 8, "ram_gb": 64}, {"cpu": 16, "ram_gb": 32}],
            {"cpu": 12, "ram_gb": 48},
            "needs cpu 12 and ram 48 GB on one host; no host with an eligible GPU has both "
            "(h1: cpu 8, ram 64 GB; h2: cpu 16, ram 32 GB)",
        ),
    ],
    ids=["cpu", "ram", "both", "not-together"],
)
def test_host_capacity_says_which_and_the_most_there_is(caps: list, need: dict, message: str) -> None:
    inst = build(
        [("h1", {"g1": "A100-40GB"}, caps[0]), ("h2", {"g2": "A100-40GB"}, caps[1]), ("h3", {}, {"cpu": 99})],
        [("w", "1g.5gb", need)],
    )
    assert [(r.workload, r.code, r.message) for r in unplaceable(inst)] == [("w", "host-capacity", message)]


def test_host_capacity_counts_only_hosts_with_an_eligible_gpu() -> None:
    inst = build(
        [("big", {"a": "A100-40GB"}, {"cpu": 64}), ("small", {"h": "H100-80GB"}, {"cpu": 8})],
        [("w", "3g.40gb", {"cpu": 16})],  # the H100's profile: the big host's A100 does not have it
    )
    assert [r.message for r in unplaceable(inst)] == [
        "needs cpu 16, the most any host with an eligible GPU has is 8 (small)"
    ]


def test_the_first_reason_that_holds_wins() -> None:
    # excluded by gpu_models and too big for every host: gpu-models comes first
    inst = build(
        [("h1", {"g": "A100-40GB"}, {"cpu": 1})], [("w", "1g.5gb", {"gpu_models": ["A30-24GB"], "cpu": 8})]
    )
    assert [r.code for r in unplaceable(inst)] == ["gpu-models"]


# --- not-chosen, with real solves


def two_for_one() -> Instance:
    """One A100-40GB, two 4g.20gb requests (4g.20gb starts at 0 only): one must go."""
    return build(
        [("h1", {"g0": "A100-40GB"}, {})],
        [("light", "4g.20gb", {"weight": 1.0}), ("heavy", "4g.20gb", {"weight": 2.0})],
    )


def test_a_heuristic_placed_others_first() -> None:
    inst = two_for_one()
    sol = registry.solve(inst, "ff")
    want = [
        (
            "heavy",
            "not-chosen",
            "no room left in this answer: on g0 start 0 is held by new 'light' (4g.20gb at 0); g0:0 would "
            "take it beside the running workloads as they run, but the heuristic ff (batch) placed 'light' "
            "(weight 1) there first",
        )
    ]
    assert reasons(inst, sol, exact=False, moves=False) == want
    assert [(r.workload, r.code, r.message) for r in sol.rejections] == want  # what mipopt.solve says


def test_the_acceptance_objective_preferred_others() -> None:
    inst = two_for_one()
    sol = registry.solve(inst, "exact")
    assert sol.status is Status.OPTIMAL
    assert reasons(inst, sol) == [
        (
            "light",
            "not-chosen",
            "no room left in this answer: on g0 start 0 is held by new 'heavy' (4g.20gb at 0); g0:0 would "
            "take it beside the running workloads as they run, but there the acceptance objective preferred "
            "'heavy' (weight 2) to it (weight 1) (proven optimal)",
        )
    ]


def test_equal_weights_name_the_whole_objective() -> None:
    # acceptance is the same whichever goes: the objective as a whole chose, not its acceptance stage
    inst = build([("h1", {"g0": "A100-40GB"}, {})], [("a", "4g.20gb", {}), ("b", "4g.20gb", {})])
    sol = registry.solve(inst, "exact")
    assert sol.status is Status.OPTIMAL and sol.rejected == ("b",)
    objective = "lex:" + ",".join(st.objective for st in sol.stages)
    assert objective.startswith("lex:acceptance,hardware")
    assert reasons(inst, sol) == [
        (
            "b",
            "not-chosen",
            "no room left in this answer: on g0 start 0 is held by new 'a' (4g.20gb at 0); g0:0 would take "
            f"it beside the running workloads as they run, but there the objective {objective} preferred 'a' "
            "(weight 1) to it (weight 1) (proven optimal)",
        )
    ]


def test_the_hardware_objective_preferred_leaving_it_out() -> None:
    # g0 is full; w weighs nothing, so placing it only costs g1 (hardware +1, the host is active)
    inst = build(
        [("h1", {"g0": "A100-40GB", "g1": "A100-40GB"}, {})],
        [("run", "7g.40gb", {"placement": ("g0", 0)}), ("w", "1g.5gb", {"weight": 0.0})],
    )
    sol = registry.solve(inst, "exact")
    assert sol.status is Status.OPTIMAL and sol.rejected == ("w",)
    assert reasons(inst, sol) == [
        (
            "w",
            "not-chosen",
            "fits in the space left (g1:0), but it would add 1 to hardware (an idle GPU or host): "
            "the hardware objective preferred leaving it out (proven optimal)",
        )
    ]
    assert spot_left(inst, sol, "w") == ("g1", 0)


def test_others_took_the_cpu_of_its_host() -> None:
    # g0:1 takes c beside 'run'; in the answer its slots are free but 'a' took the host's cpu, which
    # the reason names (not "no room on g0", which would blame the GPU)
    inst = build(
        [("h1", {"g0": "A100-40GB"}, {"cpu": 8})],
        [
            ("run", "1g.5gb", {"placement": ("g0", 0)}),
            ("a", "1g.5gb", {"cpu": 8, "weight": 3.0}),
            ("c", "1g.5gb", {"cpu": 4}),
        ],
    )
    sol = hand(inst, {"run": ("g0", 0), "a": ("g0", 6)})
    assert reasons(inst, sol) == [
        (
            "c",
            "not-chosen",
            "no room left in this answer: on g0 its host h1 has cpu 0 of 8 left (the rest held by running "
            "'run' and new 'a'), it needs 4; g0:1 would take it beside the running workloads as they run, but "
            "the heuristic hand placed 'a' (weight 3) there first",
        )
    ]


def test_not_chosen_says_what_holds_it_off_each_gpu_most_common_first() -> None:
    """Where hosts bind (the dense class), the answer's GPUs have free starts and their hosts no
    cpu: the reason says so, counting causes most common first, its example from that cause,
    not the first GPU's (g0, whose starts 'a' holds)."""
    inst = build(
        [
            ("h1", {"g0": "A100-40GB"}, {"cpu": 8}),
            ("h2", {f"g{i}": "A100-40GB" for i in range(1, 5)}, {"cpu": 4}),
        ],
        [
            ("a", "7g.40gb", {"cpu": 8, "weight": 2.0}),
            ("b", "1g.5gb", {"cpu": 4, "weight": 2.0}),
            ("c", "1g.5gb", {"cpu": 4}),
        ],
    )
    sol = registry.solve(inst, "exact")
    assert sol.status is Status.OPTIMAL and sol.rejected == ("c",)
    assert verify(inst, sol).valid
    assert reasons(inst, sol) == [
        (
            "c",
            "not-chosen",
            "no room left in this answer: on its 5 eligible GPUs: 4 whose host has too little cpu left (g1, "
            "g2, g3 and 1 more), 1 with every start held by new workloads (g0); e.g. on g1 its host h2 has cpu "
            "0 of 4 left (the rest held by new 'b'), it needs 4; g0:0 would take it beside the running "
            "workloads as they run, but there the acceptance objective preferred 'a' (weight 2) to it (weight "
            "1) (proven optimal)",
        )
    ]
    # with the call's time spent, the GPUs only: what holds each reads every one of them
    ((_, code, message),) = reasons(inst, sol, time_limit_s=0)
    assert code == "not-chosen"
    assert message.startswith(
        "no room left in this answer: on its eligible GPUs (g0, g1, g2 and 2 more); g0:0 "
    )


def test_no_placement_found() -> None:
    inst = two_for_one()
    sol = no_solution(inst, method="exact", termination=Termination.TIME_LIMIT, runtime_s=1.0, message="")
    assert [m for _, _, m in reasons(inst, sol)] == [
        "exact found no placement (termination time_limit); g0:0 would take it beside the running "
        "workloads as they run"
    ] * 2


def test_an_unproven_acceptance_stage_stopped_short() -> None:
    inst = two_for_one()
    stage = StageResult("acceptance", 0.0, 3.0, 1.0, False, Termination.TIME_LIMIT, 1.0, "aggregate")
    sol = hand(inst, {}, termination=Termination.TIME_LIMIT, stages=(stage,))
    assert reasons(inst, sol)[0] == (
        "light",
        "not-chosen",
        "fits in the space left (g0:0) and would raise acceptance by 1: the acceptance stage stopped "
        "before placing it (termination time_limit, gap 100.00%)",
    )


def test_a_weighted_objective_and_equal_optima() -> None:
    inst = build([("h1", {"g0": "A100-40GB"}, {"weight": 2.0})], [("w", "1g.5gb", {"weight": 0.0})])
    weighted = StageResult("weighted", 0.0, 0.0, 0.0, True, Termination.OPTIMAL, 0.1, "detailed")
    sol = hand(inst, {}, termination=Termination.OPTIMAL, status=Status.OPTIMAL, stages=(weighted,))
    assert reasons(inst, sol)[0][2] == (
        "fits in the space left (g0:0), adding acceptance 0 and hardware 4: the weighted objective "
        "preferred leaving it out (proven optimal)"
    )
    # only migrations decided: placing a new workload of weight 0 changes nothing it counts
    sol = replace(sol, stages=(replace(weighted, objective="migrations"),))
    assert reasons(inst, sol)[0][2] == (
        "fits in the space left (g0:0); placing it changes none of migrations: one of equal optima "
        "(proven optimal)"
    )
    # an exact method without stages (wpm) is named by its method
    assert reasons(inst, replace(sol, stages=()), exact=True)[0][2] == (
        "fits in the space left (g0:0), but the objective of hand preferred leaving it out (proven optimal)"
    )


def test_exact_is_read_off_the_stages_unless_given() -> None:
    inst = two_for_one()
    sol = registry.solve(inst, "exact")
    assert rejection_reasons(inst, sol) == rejection_reasons(inst, sol, exact=True)
    heuristic = rejection_reasons(inst, sol, exact=False)
    assert heuristic[0].message.endswith(f"the heuristic {sol.method} placed 'heavy' (weight 2) there first")


def test_nothing_rejected_nothing_said() -> None:
    inst = build([("h1", {"g0": "A100-40GB"}, {})], [("w", "1g.5gb", {})])
    sol = registry.solve(inst, "ff")
    assert (sol.rejected, rejection_reasons(inst, sol), explain(inst, sol).rejections) == ((), (), ())


# --- the solution carries them: summary and JSON


def test_explained_solution_round_trips_and_matches_the_schema() -> None:
    inst = load_instance(ROOT / "instances" / "host_capacity.json")
    sol = explain(inst, registry.solve(inst, "ff"))
    assert [r.code for r in sol.rejections] == ["host-capacity"]
    data = json.loads(sol.to_json())
    assert data["rejections"] == [
        {
            "workload": "needs-ram",
            "reason": "host-capacity",
            "message": "needs ram 300 GB, the most any host with an eligible GPU has is 256 GB (h2)",
        }
    ]
    assert solution_from_dict(data) == sol
    schema = json.loads((ROOT / "mipopt" / "schemas" / "solution.schema.json").read_text())
    jsonschema.validate(data, schema)
    assert verify(inst, solution_from_dict(data)).valid
    # mipopt.solve explains what it returns; a solution nobody explained writes no rejections
    assert registry.solve(inst, "ff").rejections == sol.rejections
    assert "rejections" not in solution_to_dict(replace(sol, rejections=()))


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        ({"workload": "w", "reason": "tired", "message": "m"}, "rejections[0].reason: must be one of "),
        ({"workload": "w", "reason": "not-chosen"}, "rejections[0].message: missing required field"),
    ],
)
def test_the_parser_checks_the_shape_of_rejections(entry: dict, message: str) -> None:
    data = {"format": "mipopt-solution", "version": 1, "placements": [], "rejections": [entry]}
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        solution_from_dict(data)


def test_summary_ends_with_the_reasons() -> None:
    inst = two_for_one()
    text = explain(inst, registry.solve(inst, "ff")).summary(inst)
    assert text.splitlines()[-2:] == [
        "rejected 1 workload, why:",
        "  heavy          not-chosen     no room left in this answer: on g0 start 0 is held by new 'light' "
        "(4g.20gb at 0); g0:0 would take it beside the running workloads as they run, but the heuristic ff "
        "(batch) placed 'light' (weight 1) there first",
    ]
    unexplained = replace(registry.solve(inst, "ff"), rejections=())
    assert "why" not in unexplained.summary(inst)  # not explained: nothing said


def test_summary_groups_many_rejections_by_reason() -> None:
    b = InstanceBuilder("many")
    b.add_host("h1", {"g0": "A100-40GB"}, cpu=4)
    for i in range(8):
        b.add_workload(f"big{i}", "1g.5gb", cpu=8)
    for i in range(12):
        b.add_workload(f"w{i:02}", "4g.20gb")
    inst = b.build()
    lines = explain(inst, registry.solve(inst, "ff")).summary(inst).splitlines()
    start = lines.index("rejected 19 workloads, why (by reason, the first ids):")
    assert lines[start + 1 :] == [
        "  host-capacity     8  big0, big1, big2, big3, big4 and 3 more",
        "                       e.g. big0: needs cpu 8, the most any host with an eligible GPU has is 4 (h1)",
        "  not-chosen       11  w01, w02, w03, w04, w05 and 6 more",
        "                       e.g. w01: no room left in this answer: on g0 start 0 is held by new 'w00' "
        "(4g.20gb at 0); g0:0 would take it beside the running workloads as they run, but the heuristic ff "
        "(batch) placed 'w00' (weight 1) there first",
    ]


# --- consistency over every committed instance and method


@pytest.mark.parametrize("path", INSTANCES, ids=lambda p: p.stem)
def test_reasons_are_consistent_for_every_method(path: Path) -> None:
    inst = load_instance(path)
    never = {r.workload: r for r in unplaceable(inst)}
    for spec in registry.methods():
        sol = spec.solve(inst)
        got = rejection_reasons(inst, sol, exact=spec.kind == "exact", moves=spec.moves)
        placed = sol.placed()
        assert [r.workload for r in got] == [w.id for w in inst.workloads if w.id not in placed], spec.name
        for r in got:
            assert r.code in REJECTION_CODES and r.message, (spec.name, r)
            # the first three codes are the instance's: the same whatever the method
            assert (r.code in REJECTION_CODES[:3]) == (r.workload in never), (spec.name, r)
            if r.workload in never:
                assert r == never[r.workload], spec.name
            # these instances are small: every search is decided
            assert r.code != "undecided", (spec.name, r)
        proven = [st.objective for st in sol.stages[:1] if st.proven]
        if sol.status is Status.OPTIMAL and proven == ["acceptance"]:
            # a proven optimum never leaves out a workload of positive weight that fits the space left
            for r in got:
                w = inst.workload(r.workload)
                assert w.weight == 0 or spot_left(inst, sol, w.id) is None, (spec.name, r)
                assert "fits in the space left" not in r.message or w.weight == 0, (spec.name, r)


def test_rejection_is_a_frozen_value() -> None:
    r = Rejection("w", "not-chosen", "m")
    assert r.to_dict() == {"workload": "w", "reason": "not-chosen", "message": "m"}
    with pytest.raises(AttributeError):
        r.code = "no-profile"  # type: ignore[misc]


# --- the instance's reasons from an index of hosts by GPU model (issue 24)

_MODELS = ("A30-24GB", "A100-40GB", "H100-80GB")
_PROFILES = ("1g.5gb", "1g.6gb", "1g.10gb", "3g.20gb", "4g.24gb", 9, 19)
_CAPS = (None, 4.0, 8.0, 16.0)


def _scanned(inst: Instance) -> list[tuple[str, str, str]]:
    """The instance's reasons as they were found before the index: every GPU scanned for each
    workload's eligible hosts (the reference the index must agree with)."""
    from mipopt.verifier.reasons import _capacity_text, _HostCaps, room_for

    out = []
    for w in inst.new:
        having = [m for m in inst.models.values() if m.find(w.profile) is not None]
        eligible = {m.name for m in having if inst.profile_on(w, m) is not None}
        if not having or not eligible:
            code = "no-profile" if not having else "gpu-models"
            out.append((w.id, code, ""))  # the messages of these two are tested by hand above
            continue
        with_gpu = {g.host for g in inst.gpus if g.model.name in eligible}
        hosts = [_HostCaps(h.id, h.cpu, h.ram_gb) for h in inst.hosts if h.id in with_gpu]
        if not any(room_for(h.cpu, w.cpu) and room_for(h.ram_gb, w.ram_gb) for h in hosts):
            out.append((w.id, "host-capacity", _capacity_text(w, hosts)))
    return out


def _refused(profile: str | int, allowed: list[str] | None, in_use: set[str]) -> bool:
    """Whether the instance would refuse this request on input: a profile an allowed model in use
    lacks, or one no model of the cluster has (drawn requests so refused would reject most draws)."""
    has = {m: get_model(m).find(profile) is not None for m in _MODELS}
    if allowed is not None:
        return any(not has[m] for m in allowed if m in in_use)
    return not any(has[m] for m in (in_use or _MODELS))


@st.composite
def _mixed_clusters(draw: st.DrawFn) -> Instance:
    """Hosts of mixed models and capacities (some without GPUs); requests alike and not, some
    asking for models the cluster lacks."""
    b = InstanceBuilder("mixed")
    in_use: set[str] = set()
    for h in range(draw(st.integers(1, 5))):
        models = draw(st.lists(st.sampled_from(_MODELS), min_size=h > 0, max_size=3))  # h0 may have none
        in_use.update(models)
        caps = {k: c for k in ("cpu", "ram_gb") if (c := draw(st.sampled_from(_CAPS))) is not None}
        b.add_host(f"h{h}", {f"h{h}-g{i}": m for i, m in enumerate(models)}, **caps)
    for k in range(draw(st.integers(1, 12))):
        profile = draw(st.sampled_from(_PROFILES))
        allowed = draw(st.none() | st.lists(st.sampled_from(_MODELS), min_size=1, max_size=2, unique=True))
        need = {
            "cpu": draw(st.sampled_from((0.0, 6.0, 12.0))),
            "ram_gb": draw(st.sampled_from((0.0, 6.0, 12.0))),
        }
        if _refused(profile, allowed, in_use):
            continue
        b.add_workload(f"w{k}", profile, gpu_models=allowed, **need)
    try:
        return b.build()
    except InstanceError:  # a profile no model of the cluster (or of gpu_models) has: refused on input
        assume(False)
        raise


@settings(max_examples=60, deadline=None)
@given(_mixed_clusters())
def test_the_index_of_hosts_by_model_gives_the_reasons_a_scan_of_every_gpu_gives(inst: Instance) -> None:
    got = [(r.workload, r.code, r.message if r.code == "host-capacity" else "") for r in unplaceable(inst)]
    assert got == _scanned(inst)


def test_alike_requests_share_one_answer_under_their_own_ids() -> None:
    inst = build(
        [("h1", {"a": "A100-40GB"}, {"cpu": 4}), ("h2", {"h": "H100-80GB"}, {"cpu": 16})],
        [
            ("x", "1g.5gb", {"cpu": 8}),  # only the A100's host has the profile: short of cpu
            ("y", "1g.5gb", {"cpu": 8}),
            ("z", "1g.10gb", {"cpu": 8}),  # on both models: the H100's host has the cpu
            ("v", "1g.5gb", {"cpu": 2}),
        ],
    )
    message = "needs cpu 8, the most any host with an eligible GPU has is 4 (h1)"
    assert [(r.workload, r.code, r.message) for r in unplaceable(inst)] == [
        ("x", "host-capacity", message),
        ("y", "host-capacity", message),
    ]
