"""Instances and targets the emitter tests share, each small enough to check by hand."""

from __future__ import annotations

import mipopt
from mipopt.instance import InstanceBuilder


def handmade() -> mipopt.Instance:
    """Two hosts, GPUs with device indices and UUIDs, running instances with GI ids."""
    b = InstanceBuilder("handmade")
    b.add_host(
        "n1",
        {"n1-gpu0": "A100-40GB", "n1-gpu1": "A100-40GB"},
        device_indices={"n1-gpu0": 0, "n1-gpu1": 1},
        uuids={"n1-gpu0": "GPU-aaaa", "n1-gpu1": "GPU-bbbb"},
    )
    b.add_host("n2", {"n2-gpu0": "H100-80GB"}, device_indices={"n2-gpu0": 0})
    b.add_workload("a", "3g.20gb", placement=("n1-gpu0", 0), gpu_instance_id=2)
    b.add_workload("b", "3g.20gb", placement=("n1-gpu0", 4), gpu_instance_id=1)
    b.add_workload("c", "1g.5gb", placement=("n1-gpu1", 6), gpu_instance_id=13)
    b.add_workload("d", "4g.20gb")
    b.add_workload("e", "3g.40gb", gpu_models=["H100-80GB"])
    return b.build()


def swap_target() -> dict[str, tuple[str, int]]:
    """a and b trade places (a cycle: one is parked on n1-gpu1), c moves on its GPU, d and e are new."""
    return {
        "a": ("n1-gpu0", 4),
        "b": ("n1-gpu0", 0),
        "c": ("n1-gpu1", 5),
        "d": ("n1-gpu1", 0),
        "e": ("n2-gpu0", 4),
    }


def cross_host() -> tuple[mipopt.Instance, dict[str, tuple[str, int]]]:
    """A 3g.40gb moves from n1 to n2 to make room for a 7g.80gb on n1."""
    b = InstanceBuilder("cross")
    b.add_host("n1", {"n1-g0": "H100-80GB"}, device_indices={"n1-g0": 0}, uuids={"n1-g0": "GPU-1111"})
    b.add_host("n2", {"n2-g0": "H100-80GB"}, device_indices={"n2-g0": 0}, uuids={"n2-g0": "GPU-2222"})
    b.add_workload("llm", "3g.40gb", placement=("n1-g0", 0), gpu_instance_id=1)
    b.add_workload("big", "7g.80gb")
    return b.build(), {"llm": ("n2-g0", 4), "big": ("n1-g0", 0)}


def with_idle() -> tuple[mipopt.Instance, dict[str, tuple[str, int]]]:
    """n1-g0 holds an idle 3g.20gb at 4 (reused by r3) and an idle 1g.5gb at 0 in the way of a 3g at 0."""
    b = InstanceBuilder("idle")
    b.add_host("n1", {"n1-g0": "A100-40GB", "n1-g1": "A100-40GB"}, device_indices={"n1-g0": 0, "n1-g1": 1})
    b.add_idle("n1-g0", "3g.20gb", 4, gpu_instance_id=1)
    b.add_idle("n1-g0", "1g.5gb", 0, gpu_instance_id=7)
    b.add_idle("n1-g1", "2g.10gb", 4, gpu_instance_id=5)
    b.add_workload("r3", "3g.20gb")
    b.add_workload("s3", "3g.20gb")
    return b.build(), {"r3": ("n1-g0", 4), "s3": ("n1-g0", 0)}


def plan(instance: mipopt.Instance, target: dict[str, tuple[str, int]]) -> mipopt.migrate.Plan:
    return mipopt.plan_migration(instance, target)
