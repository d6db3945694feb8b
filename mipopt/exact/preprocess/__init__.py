"""Preprocessing shared by the exact models: what can still go where, and what is interchangeable.

* :mod:`~mipopt.exact.preprocess.candidates`: per GPU and per movable workload, the
  placements legal around the workloads that cannot move;
* :mod:`~mipopt.exact.preprocess.partitions`: IBM's free partitions P_g of partially
  used GPUs (WPM paper, Alg. 1) and their merged form;
* :mod:`~mipopt.exact.preprocess.classes`: equivalence classes of new workloads, empty
  GPUs and empty hosts.

See ``models/preprocess.md``.
"""

from mipopt.exact.preprocess.candidates import (
    Candidate,
    Candidates,
    FixedState,
    GpuCandidates,
    candidates,
    fixed_ids,
    fixed_masks,
    fixed_states,
    open_placements,
)
from mipopt.exact.preprocess.classes import (
    GpuClass,
    HostClass,
    Shape,
    WorkloadClass,
    dominates,
    gpu_classes,
    held_profile,
    home_gpu,
    home_profile,
    host_classes,
    movable_shapes,
    placement_key,
    profile_options,
    profile_taken,
    running_classes,
    workload_classes,
)
from mipopt.exact.preprocess.indexing import (
    GpuIndex,
    IndexReport,
    IndexResult,
    Unindexed,
    assumption1_counterexamples,
    index_gpu,
    index_solution,
    profile_multisets,
)
from mipopt.exact.preprocess.partitions import (
    GpuPartitions,
    Partition,
    free_partitions,
    gpu_partitions,
    slot_order,
)

__all__ = [
    "Candidate",
    "Candidates",
    "FixedState",
    "GpuCandidates",
    "GpuClass",
    "GpuIndex",
    "GpuPartitions",
    "HostClass",
    "IndexReport",
    "IndexResult",
    "Partition",
    "Shape",
    "Unindexed",
    "WorkloadClass",
    "assumption1_counterexamples",
    "candidates",
    "dominates",
    "fixed_ids",
    "fixed_masks",
    "fixed_states",
    "free_partitions",
    "gpu_classes",
    "gpu_partitions",
    "held_profile",
    "home_gpu",
    "home_profile",
    "host_classes",
    "index_gpu",
    "index_solution",
    "movable_shapes",
    "open_placements",
    "placement_key",
    "profile_multisets",
    "profile_options",
    "profile_taken",
    "running_classes",
    "slot_order",
    "workload_classes",
]
