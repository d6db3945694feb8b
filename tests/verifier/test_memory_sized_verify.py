"""The verifier on memory-sized workloads: the chosen profile is checked and measured."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from mipopt.instance import Assignment, InstanceBuilder, Solution, Status, Termination, instance_from_dict
from mipopt.verifier import evaluate, rejection_reasons, verify


def instance(**w1: Any) -> Any:
    """An H100-80GB ``h`` and an A100-40GB ``a``; ``w0`` names 1g.10gb, ``w1`` asks for 12 GB."""
    return instance_from_dict(
        {
            "format": "mipopt-instance",
            "version": 1,
            "name": "mem",
            "hosts": [
                {"id": "h1", "gpus": [{"id": "h", "model": "H100-80GB"}]},
                {"id": "h2", "gpus": [{"id": "a", "model": "A100-40GB"}]},
            ],
            "workloads": [{"id": "w0", "profile": "1g.10gb"}, {"id": "w1", "memory_gb": 12, **w1}],
        }
    )


def solution(*placements: Assignment) -> Solution:
    return Solution("mem", "hand", Termination.COMPLETED, Status.FEASIBLE, placements, ())


H100_FITTING = ">=12gb: 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb"


@pytest.mark.parametrize(
    ("placements", "violations"),
    [
        # too little memory: 1g.10gb is an H100 profile, of 10 GB
        (
            [Assignment("w1", "h", 4, "1g.10gb")],
            [f"placements[0].profile: '1g.10gb' does not fit workload 'w1' on H100-80GB ({H100_FITTING})"],
        ),
        # a profile of the other model
        (
            [Assignment("w1", "h", 0, "3g.20gb")],
            [f"placements[0].profile: '3g.20gb' is not a profile of H100-80GB ({H100_FITTING})"],
        ),
        # the start is judged by the chosen profile: 2 is legal for 1g.20gb, not for 3g.40gb
        (
            [Assignment("w1", "h", 2, "3g.40gb")],
            ["placements[0].start: 2 is not a legal start of 3g.40gb on H100-80GB (0, 4)"],
        ),
        # its slots are the chosen profile's: 3g.40gb at 0 holds slots 0-3, so w0 at 2 overlaps
        (
            [Assignment("w1", "h", 0, "3g.40gb"), Assignment("w0", "h", 2)],
            ["GPU 'h': 'w0' overlaps 'w1'"],
        ),
        # min_compute of another workload is not asked; a named profile must be its own
        (
            [Assignment("w0", "h", 0, "1g.20gb")],
            ["placements[0].profile: '1g.20gb' does not fit workload 'w0' on H100-80GB (1g.10gb: 1g.10gb)"],
        ),
    ],
)
def test_a_wrong_chosen_profile_is_refused(placements: list[Assignment], violations: list[str]) -> None:
    report = verify(instance(), solution(*placements))
    assert not report.valid
    assert list(report.violations) == violations


def test_the_default_and_a_chosen_profile_pass_and_are_measured() -> None:
    inst = instance()
    # no profile given: the smallest that fits, 1g.20gb (2 slots, 1 compute slice); at 0 beside w0 at 2
    default = verify(inst, solution(Assignment("w1", "h", 0), Assignment("w0", "h", 2)))
    assert default.valid, default.violations
    assert (default.metrics["used_memory_slots"], default.metrics["used_compute_slices"]) == (3, 2)
    # a larger one chosen: 4g.40gb holds 4 slots and 4 compute slices
    larger = verify(inst, solution(Assignment("w1", "h", 0, "4g.40gb"), Assignment("w0", "h", 4)))
    assert larger.valid, larger.violations
    assert (larger.metrics["used_memory_slots"], larger.metrics["used_compute_slices"]) == (5, 5)
    # the A100's smallest of 12 GB is 3g.20gb: 4 slots, 3 compute slices, no waste at 4
    a100 = verify(inst, solution(Assignment("w1", "a", 4)))
    assert a100.valid and a100.metrics["used_memory_slots"] == 4 and a100.metrics["used_compute_slices"] == 3
    _, metrics = evaluate(inst, {"w1": ("h", 0)}, {"w1": "7g.80gb"})
    assert (metrics["used_memory_slots"], metrics["compute_utilization"]) == (8, 1.0)


def test_min_compute_decides_the_fitting_profiles() -> None:
    inst = instance(min_compute=3)
    assert verify(inst, solution(Assignment("w1", "h", 4, "3g.40gb"))).valid
    report = verify(inst, solution(Assignment("w1", "h", 4, "2g.20gb")))
    assert report.violations == (
        "placements[0].profile: '2g.20gb' does not fit workload 'w1' on H100-80GB "
        "(>=12gb,3g: 3g.40gb, 4g.40gb, 7g.80gb)",
    )


def test_rejection_reasons_see_the_space_the_chosen_profile_leaves() -> None:
    """y (4g.40gb at 0) and w1 at 3g.40gb at 4 use all 7 compute slices and 8 slots: x finds no
    room in this answer (at w1's smallest profile, 1g.20gb, x would fit at 6)."""
    b = InstanceBuilder("mem")
    b.add_host("h1", gpus={"h": "H100-80GB"})
    b.add_workload("y", "4g.40gb")
    b.add_workload("w1", memory_gb=12)
    b.add_workload("x", "1g.20gb")
    inst = b.build()
    sol = Solution(
        "mem",
        "hand",
        Termination.COMPLETED,
        Status.FEASIBLE,
        (Assignment("y", "h", 0), Assignment("w1", "h", 4, "3g.40gb")),
        ("x",),
    )
    (why,) = rejection_reasons(inst, sol)
    assert why.message.startswith(
        "no room left in this answer: on h starts 0 and 2 are held by new 'y' (4g.40gb at 0), starts 4 and 6 "
        "by new 'w1' (3g.40gb at 4);"
    )
    assert verify(inst, replace(sol, rejections=(why,))).valid


@pytest.mark.parametrize(
    ("placement", "violation"),
    [
        # where it runs, resized: destroyed and created again at another size, no restart counted
        (
            Assignment("w1", "h", 0, "1g.20gb"),
            "placements[0].profile: running 'w1' runs at 2g.20gb: on H100-80GB it keeps that profile, not 1g.20gb",
        ),
        # to the A100, at more than the smallest that fits (3g.20gb)
        (
            Assignment("w1", "a", 0, "4g.20gb"),
            "placements[0].profile: running 'w1' moves to A100-40GB at the smallest profile that fits, "
            "3g.20gb, not 4g.20gb",
        ),
    ],
)
def test_a_running_memory_sized_workload_keeps_its_profile(placement: Assignment, violation: str) -> None:
    """As the models, the planner and the emitters have it (``Instance.profile_on``): before, the
    verifier passed both answers, the first with 0 restarts."""
    inst = instance(placement={"gpu": "h", "start": 0, "profile": "2g.20gb"})
    assert verify(inst, solution(placement)).violations == (violation,)
    for fine in (
        Assignment("w1", "h", 0, "2g.20gb"),
        Assignment("w1", "h", 4),
        Assignment("w1", "a", 0, "3g.20gb"),
    ):
        assert verify(inst, solution(fine)).valid, fine


def test_a_running_workload_without_a_recorded_profile_keeps_the_smallest() -> None:
    """No ``placement.profile``: it runs at the smallest that fits (1g.20gb), which it keeps."""
    inst = instance(placement={"gpu": "h", "start": 0})
    assert verify(inst, solution(Assignment("w1", "h", 0, "2g.20gb"))).violations == (
        "placements[0].profile: running 'w1' runs at 1g.20gb: on H100-80GB it keeps that profile, not 2g.20gb",
    )
