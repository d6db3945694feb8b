"""Kubernetes quantities and counts beyond what an import can hold: refused in one line naming the
object's JSON path and the limit, before anything of that size is made; and a fuzz test of the
quantity parser (a number at most 2**63 - 1, or one line of error, never another exception)."""

from __future__ import annotations

import copy
import json
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mipopt.cli import main
from mipopt.errors import InstanceError
from mipopt.interop.kubernetes import MAX_QUANTITY, instance_from_kubernetes, parse_quantity

Capsys = pytest.CaptureFixture[str]

NODE: dict[str, Any] = {
    "kind": "Node",
    "metadata": {
        "name": "n1",
        "labels": {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "2"},
    },
    "status": {"allocatable": {"cpu": "64", "memory": "512Gi", "nvidia.com/mig-3g.20gb": "2"}},
}
SINGLE = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gb", "nvidia.com/mig.config": "all-1g.5gb"}


def pod(requests: dict[str, str], name: str = "p") -> dict[str, Any]:
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "d"},
        "status": {"phase": "Pending"},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
    }


def node(**changes: Any) -> dict[str, Any]:
    """:data:`NODE` with ``labels`` and ``allocatable`` entries changed."""
    out = copy.deepcopy(NODE)
    out["metadata"]["labels"].update(changes.get("labels", {}))
    out["status"]["allocatable"].update(changes.get("allocatable", {}))
    return out


def refusal(tmp: Path, nodes: Any, pods: Any = None) -> str:
    (tmp / "nodes.json").write_text(json.dumps(nodes))
    if pods is not None:
        (tmp / "pods.json").write_text(json.dumps(pods))
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(tmp / "nodes.json", tmp / "pods.json" if pods is not None else None)
    return str(err.value).replace(f"{tmp}/", "")


ALLOCATABLE = "nodes.json: status.allocatable"
COUNT = "nodes.json: metadata.labels.nvidia.com/gpu.count"
REQUEST = "pods.json: spec.containers[0].resources.requests"
KUBERNETES_MAX = "is more than 2**63 - 1, the largest quantity Kubernetes holds (docs/limits.md)"


@pytest.mark.parametrize(
    ("nodes", "pods", "message"),
    [
        (node(allocatable={"cpu": "1e400"}), None, f"{ALLOCATABLE}.cpu: '1e400' {KUBERNETES_MAX}"),
        (node(allocatable={"cpu": "1e1000000"}), None, f"{ALLOCATABLE}.cpu: '1e1000000' {KUBERNETES_MAX}"),
        (node(allocatable={"memory": "8Ei"}), None, f"{ALLOCATABLE}.memory: '8Ei' {KUBERNETES_MAX}"),
        (
            node(allocatable={"cpu": "1e15"}),
            None,
            f"{ALLOCATABLE}.cpu: cpu 1e+15 cores is more than the 1e+09 cores an instance holds (docs/limits.md)",
        ),
        (node(labels={"nvidia.com/gpu.count": "²"}), None, f"{COUNT}: expected a whole number, got '²'"),
        (
            node(labels={"nvidia.com/gpu.count": "100000000"}),
            None,
            f"{COUNT}: 100,000,000 GPUs, more than the limit of 100,000 (docs/limits.md)",
        ),
        (
            node(labels={"nvidia.com/gpu.count": "9" * 5000}),
            None,
            f"{COUNT}: '{'9' * 114}... (5002 chars) is more than the limit of 100,000 GPUs (docs/limits.md)",
        ),
        (
            node(labels={**SINGLE, "nvidia.com/gpu.count": "7000007"}),
            None,
            f"{COUNT}: 7,000,007 1g.5gb devices on 1,000,001 GPUs, more than the limit of 100,000 (docs/limits.md)",
        ),
        (
            node(allocatable={"nvidia.com/mig-3g.20gb": "1e9"}),
            None,
            f"{ALLOCATABLE}.nvidia.com/mig-3g.20gb: '1e9' is 1,000,000,000 devices, more than the limit of "
            "200,000 (docs/limits.md)",
        ),
        (
            NODE,
            pod({"nvidia.com/mig-1g.5gb": "1e9"}),
            f"{REQUEST}.nvidia.com/mig-1g.5gb: '1e9' is 1,000,000,000 devices, more than the limit of 200,000 "
            "(docs/limits.md)",
        ),
        (
            NODE,
            {"kind": "List", "items": [pod({"nvidia.com/mig-1g.5gb": "150000"}, f"p{k}") for k in range(2)]},
            "pods.json: items[1].spec.containers[0].resources.requests.nvidia.com/mig-1g.5gb: pod d/p1 brings "
            "the new workloads to 300,000 MIG devices, more than the limit of 200,000 (docs/limits.md)",
        ),
        (
            NODE,
            pod({"cpu": "5e12", "nvidia.com/mig-1g.5gb": "1"}),
            "pods.json: spec: cpu 5e+12 cores is more than the 1e+09 cores an instance holds (docs/limits.md)",
        ),
    ],
    ids=[
        "cpu-1e400",
        "cpu-1e1000000",
        "memory-8Ei",
        "cpu-beyond-an-instance",
        "count-superscript",
        "count-1e8",
        "count-5000-digits",
        "single-strategy-count",
        "allocatable-1e9-devices",
        "pod-1e9-devices",
        "pods-together-beyond",
        "pod-cpu-beyond-an-instance",
    ],
)
def test_refused_naming_the_path_and_the_limit(tmp_path: Path, nodes: Any, pods: Any, message: str) -> None:
    assert refusal(tmp_path, nodes, pods) == message


def test_the_nodes_together_hold_at_most_the_gpu_limit(tmp_path: Path) -> None:
    nodes = {"kind": "List", "items": []}
    for k in range(3):
        item = node(labels={"nvidia.com/gpu.count": "40000"})
        item["metadata"]["name"] = f"n{k}"
        nodes["items"].append(item)
    assert refusal(tmp_path, nodes) == (
        "nodes.json: items[2].metadata.labels.nvidia.com/gpu.count: the nodes so far have 120,000 GPUs, more "
        "than the limit of 100,000 (docs/limits.md)"
    )


def test_the_command_exits_2_in_one_line(tmp_path: Path, capsys: Capsys) -> None:
    (tmp_path / "nodes.json").write_text(json.dumps(NODE))
    (tmp_path / "pods.json").write_text(json.dumps(pod({"nvidia.com/mig-1g.5gb": "1e9"})))
    assert (
        main(
            [
                "import",
                "kubernetes",
                "--nodes",
                str(tmp_path / "nodes.json"),
                "--pods",
                str(tmp_path / "pods.json"),
            ]
        )
        == 2
    )
    out, err = capsys.readouterr()
    assert out == "" and err.count("\n") == 1
    assert err.startswith(
        f"mipopt: error: {tmp_path}/pods.json: {REQUEST[11:]}.nvidia.com/mig-1g.5gb: '1e9' is"
    )


# --- fuzz: quantities as Kubernetes writes them, and as an attacker might

DIGITS = st.text("0123456789", min_size=1, max_size=30)
SUFFIXES = st.sampled_from(
    ["", "m", "k", "M", "G", "T", "P", "E", "n", "u", "Ki", "Mi", "Gi", "Ti", "Pi", "Ei"]
)
EXPONENTS = st.builds(
    lambda e, sign, digits: f"{e}{sign}{digits}",
    st.sampled_from("eE"),
    st.sampled_from(["", "+", "-"]),
    st.one_of(DIGITS, st.sampled_from(["9" * 5000, "1000000", "0" * 50 + "1"])),
)
QUANTITIES = st.one_of(
    st.builds(lambda a, b, s: f"{a}.{b}{s}", DIGITS, DIGITS, st.one_of(SUFFIXES, EXPONENTS)),
    st.builds(lambda a, s: f"{a}{s}", DIGITS, st.one_of(SUFFIXES, EXPONENTS)),
    st.text(max_size=30),
    st.text("0123456789.eE+-KMGTPEiumnk ²", max_size=30),
    st.integers(min_value=-(10**30), max_value=10**30),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([None, True, [], {}, "1e400", "1e1000000", "1e-1000000", "²", "٣"]),
)


@settings(max_examples=400, deadline=None)
@given(QUANTITIES)
def test_a_quantity_is_a_bounded_number_or_one_line_of_error(value: object) -> None:
    try:
        number = parse_quantity(value, "f: x")
    except InstanceError as err:
        assert "\n" not in str(err) and len(str(err)) < 400
        return
    assert isinstance(number, Decimal) and number.is_finite() and 0 <= number <= MAX_QUANTITY
