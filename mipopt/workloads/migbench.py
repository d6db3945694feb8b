"""MIGBench's job traces (JSONL) as mipopt traces: ``mipopt simulate --workload migbench:path=FILE``.

MIGBench (repository FouoF/MIG-scheduler-benchmark, Go module github.com/dynamia-ai/migbench)
writes one job per line (its ``internal/workload`` ``Write``; ``model.Job`` the fields), in
one of two formats:

* ``resource-bound-v2``: ``jobID``, ``arrivalMS``, ``computeCoreMS`` (work: the runtime on a
  profile is ``ceil(computeCoreMS / compute percent)``), ``memoryMB``, and optionally
  ``minComputePercent``, ``deadlineMS`` (kept, not used: MIGBench's simulator does not use it
  either) and ``nodeSelector`` (only ``migbench.io/gpu-model``, the label MIGBench's nodes carry);
* ``profile-bound-v1``: ``jobID``, ``arrivalMS``, ``profile`` and ``durationMS``.

``format`` names the format; without it a line with ``profile`` is ``profile-bound-v1``.
Times are milliseconds. A job of ``memoryMB`` becomes a memory-sized request of
``memoryMB / 1024`` GB (MIGBench's ``memoryGB * 1024 >= memoryMB``); ``minComputePercent``
becomes the fewest compute slices whose percent reaches it
(:func:`~mipopt.instance.trace.compute_percent`).

The cluster and costs default to MIGBench's published runs: 2 nodes of 4 H100-80GB, the
profile subset {1g.10gb, 2g.20gb, 3g.40gb, 7g.80gb}, instances created in 250 ms and
deleted in 100 ms, metrics over the window [30,000 ms, last arrival]. The geometry is
NVIDIA's (mipopt's catalog), not MIGBench's 7 slots and memory pool: docs/migbench.md says
where that changes MIGBench's numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from mipopt import _fields as f
from mipopt.catalog import GpuModel, get_model
from mipopt.errors import InstanceError
from mipopt.instance.builder import InstanceBuilder
from mipopt.instance.trace import Request, Trace, compute_percent
from mipopt.io import parse_json
from mipopt.limits import MAX_GPUS, MAX_REQUESTS, beyond

__all__ = ["FORMATS", "PUBLISHED_PROFILES", "migbench_trace", "read_migbench"]

#: The formats a line may have.
FORMATS = ("resource-bound-v2", "profile-bound-v1")
#: The profile subset of MIGBench's published runs.
PUBLISHED_PROFILES = ("1g.10gb", "2g.20gb", "3g.40gb", "7g.80gb")
#: The label MIGBench's nodes carry (its only node selector a trace can meet).
MODEL_LABEL = "migbench.io/gpu-model"

_FIELDS = {
    "resource-bound-v2": (
        {"jobID", "arrivalMS", "computeCoreMS", "memoryMB"},
        {"format", "minComputePercent", "deadlineMS", "nodeSelector"},
    ),
    "profile-bound-v1": ({"jobID", "arrivalMS", "profile", "durationMS"}, {"format", "nodeSelector"}),
}


def read_migbench(path: str | Path) -> list[dict[str, Any]]:
    """The jobs of a MIGBench JSONL file, one dict per non-blank line, checked.

    Each line is parsed by :func:`mipopt.io.parse_json`'s rules; blank lines are skipped.

    Raises
    ------
    InstanceError
        One line naming the file, the line and the rule: an unreadable file, a line that is not
        a JSON object, an unknown format or field, a missing field, a value of the wrong type
        or range, a job id given twice, more than :data:`~mipopt.limits.MAX_REQUESTS` jobs.
    """
    shown = f.as_printed(str(path))
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise InstanceError("", f"cannot read {shown}: {err.strerror or err}") from None
    jobs: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for number, line in enumerate(data.split(b"\n"), start=1):
        if not line.strip():
            continue
        if len(jobs) >= MAX_REQUESTS:
            raise InstanceError(shown, beyond(len(jobs) + 1, "jobs", MAX_REQUESTS))
        where = f"{shown}: line {number}"
        job = _check(parse_json(line, where), where)
        if job["jobID"] in seen:
            raise InstanceError(
                f"{where}: jobID", f"{job['jobID']!r} is given twice (first on line {seen[job['jobID']]})"
            )
        seen[job["jobID"]] = number
        job["line"] = number
        jobs.append(job)
    return jobs


def _check(value: Any, where: str) -> dict[str, Any]:
    """One line's job, checked as MIGBench's simulator checks it (and stricter: no unknown fields)."""
    if not isinstance(value, dict):
        raise InstanceError(where, f"a job is a JSON object, got {type(value).__name__}")
    form = value.get("format", "profile-bound-v1" if "profile" in value else "resource-bound-v2")
    if form not in FORMATS:
        raise InstanceError(f"{where}: format", f"{form!r} is not one of {', '.join(FORMATS)}")
    required, optional = _FIELDS[form]
    for key in sorted(required):
        if key not in value:
            raise InstanceError(where, f"a {form} job needs {key!r}")
    for key in value:
        if key not in required | optional:
            known = ", ".join(sorted(required | optional))
            raise InstanceError(f"{where}: {key}", f"is not a field of a {form} job (fields: {known})")
    if not isinstance(value["jobID"], str) or not value["jobID"]:
        raise InstanceError(f"{where}: jobID", f"must be a non-empty string, got {value['jobID']!r}")
    minimum = {"arrivalMS": 0, "computeCoreMS": 1, "memoryMB": 1, "durationMS": 1, "deadlineMS": 0}
    minimum["minComputePercent"] = 1
    for key, low in minimum.items():
        if key in value:
            v = value[key]
            if isinstance(v, bool) or not isinstance(v, int) or v < low:
                raise InstanceError(f"{where}: {key}", f"must be an integer >= {low}, got {v!r}")
    if value.get("minComputePercent", 0) > 100:
        raise InstanceError(
            f"{where}: minComputePercent", f"must be at most 100, got {value['minComputePercent']}"
        )
    if "profile" in value and not isinstance(value["profile"], str):
        raise InstanceError(f"{where}: profile", f"must be a profile name, got {value['profile']!r}")
    selector = value.get("nodeSelector", {})
    if (
        not isinstance(selector, dict)
        or set(selector) - {MODEL_LABEL}
        or not all(isinstance(v, str) for v in selector.values())
    ):
        raise InstanceError(
            f"{where}: nodeSelector", f"may only name {MODEL_LABEL} (a GPU model), got {selector!r}"
        )
    return {**value, "format": form}


def migbench_trace(
    path: str | Path,
    nodes: int = 2,
    gpus_per_node: int = 4,
    model: str = "H100-80GB",
    profiles: str | Sequence[str] | None = "+".join(PUBLISHED_PROFILES),
    create_ms: float = 250.0,
    delete_ms: float = 100.0,
    measure_from_ms: float = 30_000.0,
    jobs: int | None = None,
) -> Trace:
    """A MIGBench trace file as a mipopt trace on MIGBench's cluster (defaults: its published runs).

    Parameters
    ----------
    path
        The JSONL file (:func:`read_migbench`).
    nodes, gpus_per_node, model
        The cluster: hosts ``mig-node-001`` ... with GPUs ``mig-node-001-gpu0`` ... of ``model``.
    profiles
        The profiles requests may get (names joined by ``+``, or a sequence); ``"all"`` or None:
        every profile of the catalog. A memory-sized job takes the smallest of them that fits
        and waits rather than take a larger one; a profile-bound job's profile must be one.
    create_ms, delete_ms
        Time from a decision to the job's start, and from its end to its instance's release.
    measure_from_ms
        Start of the window time-weighted metrics cover (it ends at the last arrival).
    jobs
        Keep the first this many jobs in arrival order (a cut of the trace); None: all.

    Raises
    ------
    InstanceError
        A bad file (naming its line) or option.

    Examples
    --------
    >>> trace = migbench_trace("../shared/migbench/full-control-plane-v3-trace.jsonl", jobs=60)
    >>> len(trace.requests), trace.requests[0].memory_gb, trace.requests[0].work, trace.create_delay
    (60, 10.0, 9588810.0, 250.0)
    """
    for label, count, limit in (("nodes", nodes, MAX_GPUS), ("gpus_per_node", gpus_per_node, MAX_GPUS)):
        if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= limit:
            raise InstanceError(label, f"must be an integer from 1 to {limit:,}, got {count!r}")
    if nodes * gpus_per_node > MAX_GPUS:
        raise InstanceError("nodes", beyond(nodes * gpus_per_node, "GPUs", MAX_GPUS))
    if jobs is not None and (isinstance(jobs, bool) or not isinstance(jobs, int) or jobs < 1):
        raise InstanceError("jobs", f"must be a positive integer, got {jobs!r}")
    gpu_model = get_model(model)
    subset = _subset(profiles)
    for name in subset or ():
        if gpu_model.find(name) is None:
            raise InstanceError("profiles", f"{name!r} is not a profile of {gpu_model.name}")
    b = InstanceBuilder("migbench")
    for n in range(1, nodes + 1):
        host = f"mig-node-{n:03d}"
        b.add_host(host, gpus={f"{host}-gpu{g}": gpu_model.name for g in range(gpus_per_node)})
    cluster = b.build()
    found = read_migbench(path)
    found.sort(key=lambda job: job["arrivalMS"])  # stable: ties keep the file's order, as MIGBench's
    if jobs is not None:
        found = found[:jobs]
    shown = f.as_printed(str(path))
    requests = tuple(_request(job, gpu_model, subset, shown) for job in found)
    name = Path(path).stem + ("" if jobs is None else f"[:{jobs}]")
    meta = {"path": str(path), "jobs": len(requests), "formats": sorted({job["format"] for job in found})}
    try:
        return Trace(
            name,
            cluster,
            requests,
            time_unit="ms",
            meta=meta,
            profiles=subset,
            create_delay=float(create_ms),
            delete_delay=float(delete_ms),
            measure_from=float(measure_from_ms),
        )
    except InstanceError as err:
        if err.path.startswith("requests["):  # name the job's line instead
            i = int(err.path[len("requests[") : err.path.index("]")])
            field = err.path[err.path.index("]") + 1 :].lstrip(".")
            raise InstanceError(
                f"{shown}: line {found[i]['line']}" + (f": {field}" if field else ""), err.rule
            ) from None
        raise


def _subset(profiles: str | Sequence[str] | None) -> tuple[str, ...] | None:
    if profiles is None or profiles == "all":
        return None
    names = tuple(profiles.split("+")) if isinstance(profiles, str) else tuple(profiles)
    if not names or not all(isinstance(n, str) and n for n in names):
        raise InstanceError("profiles", f"must name profiles joined by '+', got {profiles!r}")
    return names


def _request(job: dict[str, Any], model: GpuModel, subset: tuple[str, ...] | None, shown: str) -> Request:
    where = f"{shown}: line {job['line']}"
    selector = job.get("nodeSelector", {})
    gpu_models = (selector[MODEL_LABEL],) if MODEL_LABEL in selector else None
    arrival = float(job["arrivalMS"])
    if job["format"] == "profile-bound-v1":
        name = job["profile"]
        if subset is not None and name not in subset:
            raise InstanceError(
                f"{where}: profile", f"{name!r} is not in the profile subset ({'+'.join(subset)})"
            )
        return Request(job["jobID"], name, arrival, arrival + job["durationMS"], gpu_models=gpu_models)
    min_compute = None
    if "minComputePercent" in job:
        enough = [p.compute for p in model.profiles if compute_percent(p, model) >= job["minComputePercent"]]
        min_compute = min(enough)  # the full profile has 100 %
    return Request(
        job["jobID"],
        None,
        arrival,
        memory_gb=job["memoryMB"] / 1024,
        min_compute=min_compute,
        work=float(job["computeCoreMS"]),
        gpu_models=gpu_models,
    )
