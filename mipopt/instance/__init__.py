"""Instances, solutions and traces: frozen types, their JSON forms and a builder."""

from mipopt.instance.budget import Budget
from mipopt.instance.builder import InstanceBuilder
from mipopt.instance.parse import (
    instance_from_dict,
    instance_to_dict,
    solution_from_dict,
    solution_to_dict,
)
from mipopt.instance.trace import Request, Trace
from mipopt.instance.types import (
    Assignment,
    Gpu,
    Host,
    IdleInstance,
    Instance,
    Objectives,
    Placement,
    Solution,
    StageResult,
    Status,
    Termination,
    Workload,
)

__all__ = [
    "Assignment",
    "Budget",
    "Gpu",
    "Host",
    "IdleInstance",
    "Instance",
    "InstanceBuilder",
    "Objectives",
    "Placement",
    "Request",
    "Solution",
    "StageResult",
    "Status",
    "Termination",
    "Trace",
    "Workload",
    "instance_from_dict",
    "instance_to_dict",
    "solution_from_dict",
    "solution_to_dict",
]
