"""Reading real MIG node state: what nvidia-smi prints, parsed into plain records.

The parsers (:mod:`mipopt.interop.nvidia_smi`) return what the text says; the importers build
instances from those records (:mod:`mipopt.interop.build`) and from Kubernetes objects
(:mod:`mipopt.interop.kubernetes`); :mod:`mipopt.interop.emit` writes a plan back as what an
operator runs (nvidia-smi commands, an NVML script, a mig-parted config).
"""

from __future__ import annotations

from mipopt.interop.build import instance_from_nvidia_smi, merge_import
from mipopt.interop.kubernetes import KubernetesImport, UnknownPlacement, instance_from_kubernetes
from mipopt.interop.nvidia_smi import (
    PARSERS,
    ComputeInstanceRow,
    GpuInstanceProfileRow,
    GpuInstanceRow,
    ListedGpu,
    ListedMigDevice,
    NvidiaSmiError,
    ProfilePlacements,
    QueryGpu,
    QueryMigDevice,
    QueryReport,
    SummaryGpu,
    SummaryMigDevice,
    SummaryProcess,
    SummaryReport,
    detect,
    gpu_instance_profile_name,
    parse_lci,
    parse_lgi,
    parse_lgip,
    parse_lgipp,
    parse_list,
    parse_query,
    parse_query_xml,
    parse_summary,
)

__all__ = [
    "PARSERS",
    "ComputeInstanceRow",
    "GpuInstanceProfileRow",
    "GpuInstanceRow",
    "KubernetesImport",
    "ListedGpu",
    "ListedMigDevice",
    "NvidiaSmiError",
    "ProfilePlacements",
    "QueryGpu",
    "QueryMigDevice",
    "QueryReport",
    "SummaryGpu",
    "SummaryMigDevice",
    "SummaryProcess",
    "SummaryReport",
    "UnknownPlacement",
    "detect",
    "gpu_instance_profile_name",
    "instance_from_kubernetes",
    "instance_from_nvidia_smi",
    "merge_import",
    "parse_lci",
    "parse_lgi",
    "parse_lgip",
    "parse_lgipp",
    "parse_list",
    "parse_query",
    "parse_query_xml",
    "parse_summary",
]
