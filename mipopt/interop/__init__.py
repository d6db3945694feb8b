"""Reading real MIG node state: what nvidia-smi prints, parsed into plain records.

The parsers (:mod:`mipopt.interop.nvidia_smi`) return what the text says; turning those records
into an instance is left to the importer built on them.
"""

from __future__ import annotations

from mipopt.interop.build import instance_from_nvidia_smi
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
    "detect",
    "gpu_instance_profile_name",
    "instance_from_nvidia_smi",
    "parse_lci",
    "parse_lgi",
    "parse_lgip",
    "parse_lgipp",
    "parse_list",
    "parse_query",
    "parse_query_xml",
    "parse_summary",
]
