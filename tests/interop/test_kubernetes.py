"""The Kubernetes importer on Node and Pod objects recorded in NVIDIA's docs, and on broken ones.

The real objects are in ``tests/fixtures/kubernetes/`` as found (see its ``SOURCES.md``): node
labels, ``kubectl describe node`` allocatable lines and Pod manifests, never whole
``kubectl get -o json`` outputs. The helpers below put them into Node and Pod objects and say
what they add by hand. Files named ``handmade_*`` (and every object written by the error tests)
are made by hand; every value asserted was worked out by hand from the text.
"""

from __future__ import annotations

import copy
import json
import re
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from mipopt.errors import InstanceError
from mipopt.interop.kubernetes import (
    UNKNOWN_REASON,
    KubernetesImport,
    UnknownPlacement,
    instance_from_kubernetes,
    parse_quantity,
    profile_of_resource,
)

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "kubernetes"
GIB = 2**30


# -- turning the recorded excerpts into objects ----------------------------------------------


def labels_json(name: str) -> dict[str, str]:
    """A ``jq .metadata.labels`` output as recorded."""
    labels: dict[str, str] = json.loads((FIXTURES / name).read_text())
    return labels


def labels_txt(name: str) -> dict[str, str]:
    """``oc get node --show-labels | tr ',' '\\n'`` lines, ``KEY=VALUE``; the doc's ``[...]`` is skipped."""
    lines = [line.strip() for line in (FIXTURES / name).read_text().splitlines()]
    return dict(line.split("=", 1) for line in lines if line and line != "[...]")


def describe_allocatable(name: str) -> dict[str, str]:
    """The ``Allocatable:`` block of a ``kubectl describe node`` excerpt (``...`` lines skipped)."""
    block = (FIXTURES / name).read_text().split("Allocatable:", 1)[1]
    pairs = (line.strip().split(":", 1) for line in block.splitlines() if ":" in line)
    return {key: value.strip() for key, value in pairs}


def node_object(name: str, labels: dict[str, str], allocatable: dict[str, str]) -> dict[str, Any]:
    """A Node around real labels and allocatable resources.

    Added by hand: ``kind``, ``metadata.name`` (the documents' commands print no name) and the
    nesting; nothing else, so cpu and memory stay absent when the excerpt has none.
    """
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": labels},
        "status": {"allocatable": allocatable},
    }


def pod_object(manifest: str, namespace: str, phase: str, node: str | None = None) -> dict[str, Any]:
    """A Pod around a manifest from the docs.

    Added by hand: ``metadata.namespace``, ``status.phase`` and, for a bound pod,
    ``spec.nodeName``, which the API server and scheduler would have set.
    """
    pod: dict[str, Any] = yaml.safe_load((FIXTURES / manifest).read_text())
    pod["metadata"]["namespace"] = namespace
    pod["status"] = {"phase": phase}
    if node is not None:
        pod["spec"]["nodeName"] = node
    return pod


def write(tmp_path: Path, name: str, obj: Any) -> Path:
    path = tmp_path / name
    path.write_text(obj if isinstance(obj, str) else json.dumps(obj, indent=1))
    return path


def node_list(tmp_path: Path, *nodes: dict[str, Any]) -> Path:
    return write(tmp_path, "nodes.json", {"apiVersion": "v1", "kind": "List", "items": list(nodes)})


def pod_list(tmp_path: Path, *pods: dict[str, Any]) -> Path:
    return write(tmp_path, "pods.json", {"apiVersion": "v1", "kind": "List", "items": list(pods)})


def gpus(result: KubernetesImport) -> list[tuple[str, str, str]]:
    return [(g.id, g.host, g.model.name) for g in result.instance.gpus]


def workloads(result: KubernetesImport) -> list[tuple[str, str | int, float, float, tuple[str, ...] | None]]:
    return [(w.id, w.profile, w.cpu, w.ram_gb, w.gpu_models) for w in result.instance.workloads]


# -- the recorded nodes ----------------------------------------------------------------------

H100_MIXED = "gpu-operator-docs_H100-mixed-all-balanced_labels.json"
H100_DISABLED = "gpu-operator-docs_H100-single-all-disabled_labels.json"


def h100_mixed() -> dict[str, Any]:
    """The GPU Operator docs' H100 node under mixed/all-balanced.

    Its labels are the whole recorded ``.metadata.labels``; the name is its own
    ``kubernetes.io/hostname``. The docs print no allocatable for it: it is left empty, and
    the MIG devices are known from the ``nvidia.com/mig-<profile>.count`` labels.
    """
    labels = labels_json(H100_MIXED)
    return node_object(labels["kubernetes.io/hostname"], labels, {})


def layout_note(node: str, gpus: int, what: str, model: str) -> str:
    """The note on a node whose GPUs hold MIG devices at places no object tells."""
    return (
        f"node {node}: {gpus} GPU(s) of unknown layout: {what}; which GPU and start each instance has "
        "is not in the Node object, so nothing is placed there until the node's nvidia-smi mig -lgi is "
        f"merged: mipopt import nvidia-smi --host {node} lgi.txt --gpu-model {model} --merge k8s.json "
        "--out cluster.json"
    )


def test_h100_mixed_all_balanced_is_one_h100_of_unknown_layout(tmp_path: Path) -> None:
    result = instance_from_kubernetes(node_list(tmp_path, h100_mixed()))
    assert [(h.id, h.gpus, h.cpu, h.ram_gb) for h in result.instance.hosts] == [
        ("s4124-0073", ("s4124-0073-gpu0",), None, None)
    ]
    assert gpus(result) == [("s4124-0073-gpu0", "s4124-0073", "H100-80GB")]
    assert result.instance.unknown_layout == ("s4124-0073-gpu0",)
    assert result.instance.workloads == () and result.unknown == ()
    assert result.notes == (
        "node s4124-0073: no allocatable cpu; its cpu is left unlimited",
        "node s4124-0073: no allocatable memory; its ram is left unlimited",
        "node s4124-0073: 1 GPU(s) of unknown layout: MIG devices 2 1g.10gb, 1 2g.20gb, 1 3g.40gb (0 held "
        "by running pods, 4 idle); which GPU and start each instance has is not in the Node object, so "
        "nothing is placed there until the node's nvidia-smi mig -lgi is merged: mipopt import nvidia-smi "
        "--host s4124-0073 lgi.txt --gpu-model H100-80GB --merge k8s.json --out cluster.json",
    )
    assert result.instance.notes == result.notes


def test_h100_with_mig_disabled_is_skipped(tmp_path: Path) -> None:
    labels = labels_json(H100_DISABLED)
    node = node_object(labels["kubernetes.io/hostname"], labels, {})
    result = instance_from_kubernetes(node_list(tmp_path, node))
    assert result.instance.hosts == () and result.instance.gpus == ()
    assert result.notes == ("node s4124-0073: MIG is not enabled (mig.config is all-disabled); skipped",)


def test_a100_single_strategy_counts_mig_devices_not_gpus(tmp_path: Path) -> None:
    """gpu.count is 7 (MIG devices) and the product A100-SXM4-40GB-MIG-1g.5gb: one A100-40GB."""
    node = node_object(
        "a100-single",
        labels_json("k8s-docs_A100-single-1g.5gb_labels.json"),
        describe_allocatable("k8s-docs_A100-single-1g.5gb_describe-node.txt"),
    )
    assert node["status"]["allocatable"] == {"nvidia.com/gpu": "7"}
    result = instance_from_kubernetes(node_list(tmp_path, node))
    assert gpus(result) == [("a100-single-gpu0", "a100-single", "A100-40GB")]
    assert result.instance.unknown_layout == ("a100-single-gpu0",)
    assert result.notes == (
        "node a100-single: under the MIG single strategy nvidia.com/gpu.count counts MIG devices "
        "(7 1g.5gb); 1 GPU(s) is the fewest that hold them",
        "node a100-single: no allocatable cpu; its cpu is left unlimited",
        "node a100-single: no allocatable memory; its ram is left unlimited",
        layout_note("a100-single", 1, "MIG devices 7 1g.5gb (0 held by running pods, 7 idle)", "A100-40GB"),
    )


def test_a100_mixed_reads_profiles_from_the_resources_not_the_labels(tmp_path: Path) -> None:
    """The docs' labels say mig-3g.21gb where the resources say mig-3g.20gb; resources are read."""
    labels = labels_json("k8s-docs_A100-mixed_labels.json")
    assert "nvidia.com/mig-3g.21gb.count" in labels
    node = node_object("a100-mixed", labels, describe_allocatable("k8s-docs_A100-mixed_describe-node.txt"))
    result = instance_from_kubernetes(node_list(tmp_path, node))
    assert gpus(result) == [("a100-mixed-gpu0", "a100-mixed", "A100-40GB")]
    assert result.notes[2] == layout_note(
        "a100-mixed",
        1,
        "MIG devices 1 1g.5gb, 1 2g.10gb, 1 3g.20gb (0 held by running pods, 3 idle)",
        "A100-40GB",
    )


def test_a100_with_the_none_strategy_is_skipped(tmp_path: Path) -> None:
    node = node_object(
        "a100-none",
        labels_json("k8s-docs_A100-none-strategy_labels.json"),
        describe_allocatable("k8s-docs_A100-none-strategy_describe-node.txt"),
    )
    result = instance_from_kubernetes(node_list(tmp_path, node))
    assert result.instance.hosts == ()
    assert result.notes == (
        "node a100-none: MIG is not enabled (no nvidia.com/mig-* resources and no nvidia.com/mig.config "
        "label); skipped",
    )


def ocp_a100() -> dict[str, Any]:
    """The OpenShift docs' A100 under mixed/all-2g.10gb, with its ``jsonpath`` allocatable line."""
    line = (FIXTURES / "ocp-docs_A100-mixed-all-2g.10gb_allocatable.txt").read_text().strip()
    allocatable = json.loads("{" + line.rstrip(",") + "}")
    return node_object("myworker", labels_txt("ocp-docs_A100-mixed-all-2g.10gb_labels.txt"), allocatable)


def test_openshift_a100_with_the_docs_mixed_pod_pending_and_running(tmp_path: Path) -> None:
    pending = pod_object("ocp-docs_cuda-vectoradd-mixed_pod.yaml", "default", "Pending")
    running = pod_object("ocp-docs_cuda-vectoradd-mixed_pod.yaml", "other", "Running", node="myworker")
    result = instance_from_kubernetes(node_list(tmp_path, ocp_a100()), pod_list(tmp_path, pending, running))
    assert gpus(result) == [("myworker-gpu0", "myworker", "A100-40GB")]
    assert workloads(result) == [("default/cuda-vectoradd", "2g.10gb", 0.0, 0.0, None)]
    assert result.unknown == (
        UnknownPlacement("other/cuda-vectoradd", "myworker", "2g.10gb", 1, UNKNOWN_REASON),
    )
    assert result.instance.unknown_layout == ("myworker-gpu0",)
    assert result.notes[2] == layout_note(
        "myworker", 1, "MIG devices 3 2g.10gb (1 held by running pods, 2 idle)", "A100-40GB"
    )
    assert result.instance.notes == (
        *result.notes,
        "pod other/cuda-vectoradd: holds 1 2g.10gb on node myworker; which GPU and start is not known",
    )


def test_the_docs_single_strategy_pod_takes_its_profile_from_the_node_selector(tmp_path: Path) -> None:
    """nvidia.com/gpu: 1 with nodeSelector A100-SXM4-40GB-MIG-1g.5gb: a 1g.5gb on an A100-40GB."""
    single = node_object(
        "a100-single",
        labels_json("k8s-docs_A100-single-1g.5gb_labels.json"),
        describe_allocatable("k8s-docs_A100-single-1g.5gb_describe-node.txt"),
    )
    pending = pod_object("ocp-docs_cuda-vectoradd-single_pod.yaml", "default", "Pending")
    running = pod_object("ocp-docs_cuda-vectoradd-single_pod.yaml", "other", "Running", node="a100-single")
    result = instance_from_kubernetes(
        node_list(tmp_path, single, ocp_a100()), pod_list(tmp_path, pending, running)
    )
    assert workloads(result) == [("default/cuda-vectoradd", "1g.5gb", 0.0, 0.0, ("A100-40GB",))]
    assert result.unknown == (
        UnknownPlacement("other/cuda-vectoradd", "a100-single", "1g.5gb", 1, UNKNOWN_REASON),
    )


# -- a hand-made cluster: every kind of pod ---------------------------------------------------


def test_handmade_cluster() -> None:
    result = instance_from_kubernetes(FIXTURES / "handmade_nodes.json", FIXTURES / "handmade_pods.json")
    (host,) = result.instance.hosts
    # allocatable 63500m and 527952444Ki, less ml/serve (8, 16Gi) and ml/bound (1 + 250m overhead,
    # 512Mi + 120Mi overhead); ml/done has ended and web/nginx is on another node
    assert (host.id, host.gpus) == ("gpu-a", ("gpu-a-gpu0", "gpu-a-gpu1"))
    assert host.cpu == 54.25
    assert host.ram_gb == pytest.approx(527952444 / 2**20 - 16 - 0.5 - 120 / 1024)
    assert gpus(result) == [("gpu-a-gpu0", "gpu-a", "A100-40GB"), ("gpu-a-gpu1", "gpu-a", "A100-40GB")]
    assert workloads(result) == [
        ("ml/train", "1g.5gb", 4.0, 9.0, None),  # max(2 + 0.5, init 4) cpu; 8Gi + 1Gi
        ("ml/multi#1", "1g.5gb", 3.0, 4.0, None),
        ("ml/multi#2", "1g.5gb", 0.0, 0.0, None),
        ("ml/multi#3", "3g.20gb", 0.0, 0.0, None),
        ("ml/big", "7g.80gb", 1.0, 0.0, ("A100-80GB", "H100-80GB")),
    ]
    assert result.unknown == (
        UnknownPlacement("ml/serve", "gpu-a", "2g.10gb", 1, UNKNOWN_REASON),
        UnknownPlacement("ml/bound", "gpu-a", "1g.5gb", 2, UNKNOWN_REASON),
    )
    assert result.notes == (
        "node cpu-only: no nvidia.com/gpu.product label, not a GPU node; skipped",
        layout_note(
            "gpu-a",
            2,
            "MIG devices 4 1g.5gb, 2 2g.10gb, 2 3g.20gb (3 held by running pods, 5 idle)",
            "A100-40GB",
        ),
        "pod ml/multi: 3 MIG devices become 3 workloads, which mipopt may place on different nodes; "
        "the pod's cpu and memory are on ml/multi#1",
        "pod ml/big: no GPU of the cluster has profile 7g.80gb; kept for the models that do "
        "(A100-80GB, H100-80GB)",
        "pod ml/cpu-job: asks for no MIG device; left out",
        "pod ml/whole: asks for 1 nvidia.com/gpu without a nodeSelector on a -MIG- product, so its MIG "
        "profile is not known; left out",
        "pod ml/elsewhere: runs on node gone, which is not in the nodes file; left out",
    )


def test_nodes_alone_give_full_capacities() -> None:
    result = instance_from_kubernetes(FIXTURES / "handmade_nodes.json", name="c1")
    assert result.instance.name == "c1"
    assert [(h.id, h.cpu, h.ram_gb) for h in result.instance.hosts] == [("gpu-a", 63.5, 527952444 / 2**20)]
    assert result.instance.workloads == () and result.unknown == ()


# -- every other path, on small hand-made objects --------------------------------------------

A100 = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "1"}


def handmade_node(
    name: str = "n1", labels: dict[str, str] | None = None, allocatable: dict[str, str] | None = None
) -> dict[str, Any]:
    alloc = {"cpu": "8", "memory": "32Gi", **(allocatable or {})}
    return {
        "kind": "Node",
        "metadata": {"name": name, "labels": A100 if labels is None else labels},
        "status": {"allocatable": alloc},
    }


def handmade_pod(
    name: str, phase: str, node: str | None = None, limits: dict[str, str] | None = None
) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "c", "resources": {"limits": limits or {}}}]}
    if node is not None:
        spec["nodeName"] = node
    return {
        "kind": "Pod",
        "metadata": {"name": name, "namespace": "d"},
        "spec": spec,
        "status": {"phase": phase},
    }


def test_a_single_node_object_and_a_single_pod_object(tmp_path: Path) -> None:
    """``kubectl get node NAME -o json`` and ``kubectl get pod NAME -o json`` print one object."""
    nodes = write(tmp_path, "handmade_node.json", handmade_node(allocatable={"nvidia.com/mig-1g.5gb": "7"}))
    pods = write(
        tmp_path, "handmade_pod.json", handmade_pod("p", "Pending", limits={"nvidia.com/mig-1g.5gb": "1"})
    )
    result = instance_from_kubernetes(nodes, pods)
    assert gpus(result) == [("n1-gpu0", "n1", "A100-40GB")]
    assert [(h.cpu, h.ram_gb) for h in result.instance.hosts] == [(8.0, 32.0)]
    assert workloads(result) == [("d/p", "1g.5gb", 0.0, 0.0, None)]


def test_media_extension_profiles_and_shared_products(tmp_path: Path) -> None:
    """``+me`` is ``.me`` in resource names and is dropped in product labels; ``-SHARED`` is ignored."""
    single = {
        "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-1g.5gbme-SHARED",
        "nvidia.com/gpu.count": "1",
    }
    nodes = node_list(
        tmp_path,
        handmade_node("mixed", allocatable={"nvidia.com/mig-1g.5gb.me": "1"}),
        handmade_node("single", single, allocatable={"nvidia.com/gpu": "1"}),
    )
    pods = pod_list(
        tmp_path,
        handmade_pod("me", "Pending", limits={"nvidia.com/mig-1g.5gb.me": "1"}),
        handmade_pod("on-single", "Running", "single", limits={"nvidia.com/gpu": "1"}),
    )
    result = instance_from_kubernetes(nodes, pods)
    assert gpus(result) == [("mixed-gpu0", "mixed", "A100-40GB"), ("single-gpu0", "single", "A100-40GB")]
    assert workloads(result) == [("d/me", "1g.5gb+me", 0.0, 0.0, None)]
    assert result.unknown == (UnknownPlacement("d/on-single", "single", "1g.5gb+me", 1, UNKNOWN_REASON),)
    assert "node single: under the MIG single strategy" in result.notes[0]
    assert result.instance.unknown_layout == ("mixed-gpu0", "single-gpu0")


def test_single_strategy_with_its_mig_config_is_exact(tmp_path: Path) -> None:
    """14 devices of all-1g.5gb on A100-40GB (7 per GPU): two GPUs and no note; 9 would need a note."""
    labels = {
        "nvidia.com/gpu.product": "A100-SXM4-40GB-MIG-1g.5gb",
        "nvidia.com/gpu.count": "14",
        "nvidia.com/mig.config": "all-1g.5gb",
    }
    result = instance_from_kubernetes(
        node_list(tmp_path, handmade_node("s", labels, allocatable={"nvidia.com/gpu": "14"}))
    )
    assert gpus(result) == [("s-gpu0", "s", "A100-40GB"), ("s-gpu1", "s", "A100-40GB")]
    assert result.notes == (
        layout_note("s", 2, "MIG devices 14 1g.5gb (0 held by running pods, 14 idle)", "A100-40GB"),
    )
    labels["nvidia.com/gpu.count"] = "9"
    result = instance_from_kubernetes(
        node_list(tmp_path, handmade_node("s", labels, allocatable={"nvidia.com/gpu": "9"}))
    )
    assert len(result.instance.gpus) == 2
    assert result.notes[0] == (
        "node s: under the MIG single strategy nvidia.com/gpu.count counts MIG devices (9 1g.5gb); "
        "2 GPU(s) is the fewest that hold them"
    )


def test_mig_enabled_without_devices_and_invalid_single_strategy(tmp_path: Path) -> None:
    """Only all-enabled applied with success and no device proves empty GPUs; pending proves nothing."""
    enabled = {**A100, "nvidia.com/mig.config": "all-enabled", "nvidia.com/mig.config.state": "success"}
    pending = {**A100, "nvidia.com/mig.config": "all-1g.5gb", "nvidia.com/mig.config.state": "pending"}
    invalid = {"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB-MIG-INVALID", "nvidia.com/gpu.count": "0"}
    result = instance_from_kubernetes(
        node_list(
            tmp_path,
            handmade_node("empty", enabled),
            handmade_node("pending", pending),
            handmade_node("bad", invalid),
        )
    )
    assert gpus(result) == [("empty-gpu0", "empty", "A100-40GB"), ("pending-gpu0", "pending", "A100-40GB")]
    assert result.instance.unknown_layout == ("pending-gpu0",)
    assert result.notes == (
        "node bad: nvidia.com/gpu.product is 'NVIDIA-A100-SXM4-40GB-MIG-INVALID', GFD found MIG devices "
        "the single strategy cannot advertise; skipped",
        layout_note(
            "pending",
            1,
            "nvidia.com/mig.config is 'all-1g.5gb' ('pending') but no MIG device is advertised",
            "A100-40GB",
        ),
    )


def test_whole_gpus_on_a_mixed_node_and_pods_on_skipped_nodes(tmp_path: Path) -> None:
    nodes = node_list(
        tmp_path,
        handmade_node(
            "gpu",
            {**A100, "nvidia.com/gpu.count": "2"},
            allocatable={"nvidia.com/gpu": "1", "nvidia.com/mig-7g.40gb": "1"},
        ),
        handmade_node("cpu", {}),
    )
    pods = pod_list(
        tmp_path,
        handmade_pod("whole", "Running", "gpu", limits={"nvidia.com/gpu": "1"}),
        handmade_pod("mig-on-cpu", "Running", "cpu", limits={"nvidia.com/mig-1g.5gb": "1"}),
        handmade_pod("odd", "Unknown", limits={"nvidia.com/mig-1g.5gb": "1"}),
        handmade_pod("gone", "Failed", "gpu", limits={"nvidia.com/mig-1g.5gb": "1"}),
    )
    result = instance_from_kubernetes(nodes, pods)
    assert result.unknown == () and result.instance.workloads == ()
    assert result.notes == (
        "node gpu: 1 GPU(s) advertised whole as nvidia.com/gpu (MIG disabled on them)",
        "node cpu: no nvidia.com/gpu.product label, not a GPU node; skipped",
        layout_note("gpu", 2, "MIG devices 1 7g.40gb (0 held by running pods, 1 idle)", "A100-40GB"),
        "pod d/whole: holds 1 whole GPU(s) (nvidia.com/gpu) of node gpu; which is not known",
        "pod d/mig-on-cpu: runs on node cpu, which is not a MIG node; left out",
        "pod d/odd: phase Unknown without a node; left out",
    )


def test_pods_asking_for_more_than_a_node_has_leave_zero(tmp_path: Path) -> None:
    pod = handmade_pod("hog", "Running", "n1", limits={"nvidia.com/mig-1g.5gb": "1"})
    pod["spec"]["containers"][0]["resources"]["requests"] = {"cpu": "9", "memory": "33Gi"}
    result = instance_from_kubernetes(
        node_list(tmp_path, handmade_node(allocatable={"nvidia.com/mig-1g.5gb": "7"})),
        pod_list(tmp_path, pod),
    )
    assert [(h.cpu, h.ram_gb) for h in result.instance.hosts] == [(0.0, 0.0)]
    assert result.notes[-2:] == (
        "node n1: its pods request more cpu than is allocatable; 0 left",
        "node n1: its pods request more memory than is allocatable; 0 left",
    )


# -- broken input: one line naming the file and what was expected -----------------------------

GOOD = handmade_node(allocatable={"nvidia.com/mig-1g.5gb": "7"})


def edited(obj: dict[str, Any], path: str, value: Any) -> dict[str, Any]:
    """A copy of ``obj`` with the value at ``a/b/c`` replaced (``None``: removed); ``~`` in a key is ``/``."""
    out = copy.deepcopy(obj)
    *keys, last = (key.replace("~", "/") for key in path.split("/"))
    target = out
    for key in keys:
        target = target[key]
    if value is None:
        del target[last]
    else:
        target[last] = value
    return out


def pods_of(*containers: dict[str, Any], **spec: Any) -> dict[str, Any]:
    pod = {"metadata": {"name": "p", "namespace": "d"}, "spec": {"containers": list(containers), **spec}}
    return {"kind": "PodList", "items": [{**pod, "status": {"phase": "Pending"}}]}


def mig(profile: str, count: str = "1") -> dict[str, Any]:
    return {"name": "c", "resources": {"limits": {f"nvidia.com/mig-{profile}": count}}}


def node_items(*nodes: dict[str, Any]) -> dict[str, Any]:
    return {"kind": "List", "items": list(nodes)}


LABELS = "metadata/labels"
ALLOC = "status/allocatable"
QUANTITY = "expected a Kubernetes quantity such as '64', '500m', '512Gi' or '1G', got"
NODE_ERRORS: dict[str, tuple[Any, str]] = {
    "not_json": (
        '{"kind": "NodeList",\n "items": [\n  {,]}',
        "FILE: line 3 column 4: not valid JSON: Expecting property name enclosed in double quotes",
    ),
    "array": ([], "FILE: expected a JSON object (kubectl get ... -o json), got an array"),
    "kind": ({"kind": "PodList", "items": []}, "FILE: kind: expected Node, NodeList or List, got 'PodList'"),
    "no_items": ({"kind": "List"}, "FILE: items: expected a list of Node objects, got None"),
    "item_kind": (node_items({"kind": "Pod"}), "FILE: items[0].kind: expected Node, got 'Pod'"),
    "item_not_object": ({"kind": "NodeList", "items": [3]}, "FILE: items[0]: expected a Node object, got 3"),
    "no_name": (node_items(edited(GOOD, "metadata/name", None)), "FILE: items[0].metadata.name: missing"),
    "no_status": (edited(GOOD, "status", None), "FILE: status: missing"),
    "labels_list": (edited(GOOD, LABELS, []), "FILE: metadata.labels: expected an object, got []"),
    "product_number": (
        edited(GOOD, f"{LABELS}/nvidia.com~gpu.product", 1),
        "FILE: metadata.labels.nvidia.com/gpu.product: expected a string, got 1",
    ),
    "unknown_product": (
        node_items(edited(GOOD, f"{LABELS}/nvidia.com~gpu.product", "Tesla-T4")),
        "FILE: items[0].metadata.labels.nvidia.com/gpu.product: unknown GPU model 'Tesla-T4' (known: "
        "A30-24GB, A100-40GB, A100-80GB, H100-80GB, H100-94GB, H100-96GB, H200-141GB, GH200-144GB, "
        "B200-180GB, GB200-186GB, RTX-PRO-6000-Blackwell-96GB)",
    ),
    "no_count": (
        node_items(edited(GOOD, f"{LABELS}/nvidia.com~gpu.count", None)),
        "FILE: items[0].metadata.labels.nvidia.com/gpu.count: missing (GPU feature discovery writes it on GPU nodes)",
    ),
    "bad_count": (
        node_items(edited(GOOD, f"{LABELS}/nvidia.com~gpu.count", "two")),
        "FILE: items[0].metadata.labels.nvidia.com/gpu.count: expected a whole number, got 'two'",
    ),
    "bad_cpu": (
        node_items(edited(GOOD, f"{ALLOC}/cpu", "8 cores")),
        f"FILE: items[0].status.allocatable.cpu: {QUANTITY} '8 cores'",
    ),
    "bad_memory": (
        node_items(edited(GOOD, f"{ALLOC}/memory", "32GiB")),
        f"FILE: items[0].status.allocatable.memory: {QUANTITY} '32GiB'",
    ),
    "bad_resource": (
        node_items(edited(GOOD, f"{ALLOC}/nvidia.com~mig-small", "7")),
        "FILE: items[0].status.allocatable.nvidia.com/mig-small: expected a MIG profile resource such as "
        "'nvidia.com/mig-1g.5gb', got 'nvidia.com/mig-small'",
    ),
    "profile_of_another_model": (
        node_items(edited(GOOD, f"{ALLOC}/nvidia.com~mig-1g.12gb", "4")),
        "FILE: items[0].status.allocatable.nvidia.com/mig-1g.12gb: '1g.12gb' is not a profile of A100-40GB",
    ),
    "half_a_device": (
        node_items(edited(GOOD, f"{ALLOC}/nvidia.com~mig-1g.5gb", "500m")),
        "FILE: items[0].status.allocatable.nvidia.com/mig-1g.5gb: expected a whole number of devices, got '500m'",
    ),
    "single_not_a_profile": (
        edited(GOOD, f"{LABELS}/nvidia.com~gpu.product", "A100-SXM4-40GB-MIG-half"),
        "FILE: metadata.labels.nvidia.com/gpu.product: expected a MIG profile after '-MIG-' such as "
        "'1g.5gb', got 'half'",
    ),
    "single_profile_of_another_model": (
        edited(GOOD, f"{LABELS}/nvidia.com~gpu.product", "A100-SXM4-40GB-MIG-1g.12gb"),
        "FILE: metadata.labels.nvidia.com/gpu.product: '1g.12gb' is not a profile of A100-40GB",
    ),
    "node_twice": (
        node_items(GOOD, GOOD),
        "FILE: items[1].metadata.name: node 'n1' is listed twice (also items[0])",
    ),
}


@pytest.mark.parametrize("case", sorted(NODE_ERRORS))
def test_broken_nodes(tmp_path: Path, case: str) -> None:
    text, message = NODE_ERRORS[case]
    path = write(tmp_path, f"handmade_{case}.json", text)
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(path)
    assert str(err.value) == message.replace("FILE", str(path))


POD_ERRORS: dict[str, tuple[Any, str]] = {
    "kind": ({"kind": "NodeList", "items": []}, "FILE: kind: expected Pod, PodList or List, got 'NodeList'"),
    "no_namespace": (
        {
            "kind": "Pod",
            "metadata": {"name": "p"},
            "spec": {"containers": []},
            "status": {"phase": "Pending"},
        },
        "FILE: metadata.namespace: missing",
    ),
    "no_phase": (
        edited(pods_of(), "items", [pods_of()["items"][0] | {"status": {}}]),
        "FILE: items[0].status.phase: missing",
    ),
    "bad_phase": (
        edited(pods_of(), "items", [pods_of()["items"][0] | {"status": {"phase": "Waiting"}}]),
        "FILE: items[0].status.phase: expected one of Pending, Running, Succeeded, Failed, Unknown, got 'Waiting'",
    ),
    "no_containers": (
        pods_of() | {"items": [{**pods_of()["items"][0], "spec": {}}]},
        "FILE: items[0].spec.containers: missing",
    ),
    "container_string": (
        {"kind": "PodList", "items": [{**pods_of()["items"][0], "spec": {"containers": ["c"]}}]},
        "FILE: items[0].spec.containers[0]: expected a container object, got 'c'",
    ),
    "negative_cpu": (
        pods_of({"name": "c", "resources": {"requests": {"cpu": "-1"}}}),
        f"FILE: items[0].spec.containers[0].resources.requests.cpu: {QUANTITY} '-1'",
    ),
    "bad_init_memory": (
        pods_of(mig("1g.5gb"), initContainers=[{"name": "i", "resources": {"requests": {"memory": "lots"}}}]),
        f"FILE: items[0].spec.initContainers[0].resources.requests.memory: {QUANTITY} 'lots'",
    ),
    "bad_overhead": (
        pods_of(mig("1g.5gb"), overhead={"cpu": "x"}),
        f"FILE: items[0].spec.overhead.cpu: {QUANTITY} 'x'",
    ),
    "not_a_profile": (
        pods_of(mig("1g")),
        "FILE: items[0].spec.containers[0].resources.limits.nvidia.com/mig-1g: expected a MIG profile resource "
        "such as 'nvidia.com/mig-1g.5gb', got 'nvidia.com/mig-1g'",
    ),
    "no_such_profile": (
        pods_of(mig("9g.99gb")),
        "FILE: items[0].spec.containers[0].resources.limits.nvidia.com/mig-9g.99gb: '9g.99gb' is not a MIG "
        "profile of any GPU model in the catalog",
    ),
    "half_a_device": (
        pods_of(mig("1g.5gb", "0.5")),
        "FILE: items[0].spec.containers[0].resources.limits.nvidia.com/mig-1g.5gb: expected a whole number of "
        "devices, got '0.5'",
    ),
    "selector_model_lacks_profile": (
        pods_of(mig("1g.12gb"), nodeSelector={"nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB"}),
        "FILE: items[0].spec.containers[0].resources.limits.nvidia.com/mig-1g.12gb: '1g.12gb' is not a profile "
        "of A100-40GB, the model its nodeSelector asks for",
    ),
    "selector_unknown_product": (
        pods_of(mig("1g.12gb"), nodeSelector={"nvidia.com/gpu.product": "Tesla-T4"}),
        "FILE: items[0].spec.nodeSelector.nvidia.com/gpu.product: unknown GPU model 'Tesla-T4' (known: "
        "A30-24GB, A100-40GB, A100-80GB, H100-80GB, H100-94GB, H100-96GB, H200-141GB, GH200-144GB, "
        "B200-180GB, GB200-186GB, RTX-PRO-6000-Blackwell-96GB)",
    ),
    "running_profile_of_another_model": (
        pods_of(mig("1g.12gb"), nodeName="n1")
        | {"items": [{**pods_of(mig("1g.12gb"), nodeName="n1")["items"][0], "status": {"phase": "Running"}}]},
        "FILE: items[0].spec.containers[0].resources.limits.nvidia.com/mig-1g.12gb: '1g.12gb' is not a profile "
        "of A100-40GB, the GPUs of node n1",
    ),
    "pod_twice": (
        {"kind": "PodList", "items": pods_of()["items"] * 2},
        "FILE: items[1].metadata.name: pod 'd/p' is listed twice (also items[0])",
    ),
}


@pytest.mark.parametrize("case", sorted(POD_ERRORS))
def test_broken_pods(tmp_path: Path, case: str) -> None:
    obj, message = POD_ERRORS[case]
    nodes = write(tmp_path, "handmade_nodes.json", GOOD)
    pods = write(tmp_path, f"handmade_{case}.json", obj)
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(nodes, pods)
    assert str(err.value) == message.replace("FILE", str(pods))


def test_unreadable_and_undecodable_files(tmp_path: Path) -> None:
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(tmp_path / "missing.json")
    assert str(err.value) == f"{tmp_path / 'missing.json'}: cannot be read: No such file or directory"
    binary = tmp_path / "handmade_binary.json"
    binary.write_bytes(b'{"kind":\n "\xe9"}')  # Latin-1
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(binary)
    assert str(err.value) == f"{binary}: line 2 column 3: byte 0xe9 is not UTF-8 text"
    binary.write_bytes(b"\xff\xfe{")
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(binary)
    assert str(err.value) == f"{binary}: UTF-16 text (as Windows PowerShell writes with >): save it as UTF-8"


# -- quantities and resource names -----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("64", Decimal(64)),
        ("63500m", Decimal("63.5")),
        ("191450m", Decimal("191.45")),  # a real allocatable cpu (bottlerocket-os/bottlerocket#4418)
        ("527952444Ki", Decimal(527952444 * 1024)),
        ("2095606484Ki", Decimal(2095606484 * 1024)),  # its real allocatable memory
        ("512Gi", Decimal(512 * GIB)),
        ("1G", Decimal(10**9)),
        ("1.5Ti", Decimal(3 * 2**39)),
        ("100M", Decimal(10**8)),
        ("12e3", Decimal(12000)),
        ("5E-1", Decimal("0.5")),
        ("250u", Decimal("0.00025")),
        ("+1k", Decimal(1000)),
        (".5", Decimal("0.5")),
        (3, Decimal(3)),
        (0.25, Decimal("0.25")),
    ],
)
def test_quantities(text: str | int | float, value: Decimal) -> None:
    assert parse_quantity(text, "f: x") == value


@pytest.mark.parametrize(
    "text", ["", "Ki", "1KiB", "1 Gi", "-1", "1e", "1.2.3", "0x10", "1ki", True, None, [1], -2, float("inf")]
)
def test_bad_quantities(text: Any) -> None:
    with pytest.raises(InstanceError, match=r"^f: x: expected a "):
        parse_quantity(text, "f: x")


@given(
    st.integers(min_value=0, max_value=10**12),
    st.sampled_from(
        [("", 1), ("k", 10**3), ("M", 10**6), ("G", 10**9), ("Ki", 2**10), ("Mi", 2**20), ("Gi", 2**30)]
    ),
)
def test_quantities_scale_whole_numbers(number: int, suffix: tuple[str, int]) -> None:
    if number * suffix[1] <= 2**63 - 1:
        assert parse_quantity(f"{number}{suffix[0]}", "f: x") == number * suffix[1]
    else:  # beyond Kubernetes' int64: refused, not computed
        with pytest.raises(InstanceError, match=r"is more than 2\*\*63 - 1"):
            parse_quantity(f"{number}{suffix[0]}", "f: x")


@given(st.integers(min_value=0, max_value=10**9))
def test_millis_are_thousandths(number: int) -> None:
    assert parse_quantity(f"{number}m", "f: x") * 1000 == number


@pytest.mark.parametrize(
    ("resource", "profile"),
    [
        ("nvidia.com/mig-1g.5gb", "1g.5gb"),
        ("nvidia.com/mig-3g.40gb", "3g.40gb"),
        ("nvidia.com/mig-1g.10gb.me", "1g.10gb+me"),
        ("nvidia.com/mig-1g.24gb.me.all", "1g.24gb+me.all"),
        ("nvidia.com/mig-1g.24gb-me", "1g.24gb-me"),
        ("nvidia.com/mig-4g.96gb.gfx", "4g.96gb+gfx"),
    ],
)
def test_resource_names(resource: str, profile: str) -> None:
    assert profile_of_resource(resource, "f: x") == profile


def test_every_catalog_profile_survives_the_device_plugins_renaming() -> None:
    """The device plugin writes ``+`` as ``.`` (internal/rm/rm.go); reading it back gives the name."""
    from mipopt.catalog import builtin_models

    names = {p.name for m in builtin_models().values() for p in m.profiles}
    for name in names:
        assert profile_of_resource("nvidia.com/mig-" + name.replace("+", "."), "f: x") == name


def test_the_fixtures_are_the_ones_described() -> None:
    """Every fixture file has a row in SOURCES.md, and every row a file."""
    listed = set(re.findall(r"^\| `([^`]+)` \|", (FIXTURES / "SOURCES.md").read_text(), re.M))
    assert listed == {p.name for p in FIXTURES.iterdir() if p.name != "SOURCES.md"}


# -- names a shell, a terminal or a YAML reader would misread ---------------------------------

#: A payload, and how the refusal shows it (escaped, never raw).
PAYLOADS = {
    "newline": (
        "x\ntouch pwned",
        "must be one line of printable characters: 'x\\ntouch pwned' has '\\n' at 1",
    ),
    "option": ("-oProxyCommand=sh", "must not start with '-': '-oProxyCommand=sh'"),
    "ansi": ("\x1b[2Jgpu", "must be one line of printable characters: '\\x1b[2Jgpu' has '\\x1b' at 0"),
    "bidi": ("gpu\u202e1", "must be one line of printable characters: 'gpu\\u202e1' has '\\u202e' at 3"),
}


def ocp_pods(**changes: str) -> list[dict[str, Any]]:
    """The OpenShift docs' mixed-strategy pod, pending and running on myworker, with ``changes``
    (``name``, ``namespace``, ``node``) made to the running one."""
    pending = pod_object("ocp-docs_cuda-vectoradd-mixed_pod.yaml", "default", "Pending")
    running = pod_object(
        "ocp-docs_cuda-vectoradd-mixed_pod.yaml", changes.get("namespace", "other"), "Running",
        node=changes.get("node", "myworker"),
    )  # fmt: skip
    running["metadata"]["name"] = changes.get("name", running["metadata"]["name"])
    return [pending, running]


@pytest.mark.parametrize("payload", sorted(PAYLOADS))
def test_names_from_recorded_objects_carrying_payloads_are_refused(tmp_path: Path, payload: str) -> None:
    value, rule = PAYLOADS[payload]
    node = h100_mixed()
    node["metadata"]["name"] = value
    nodes = node_list(tmp_path, node)
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(nodes)
    assert str(err.value) == f"{nodes}: items[0].metadata.name: a node name {rule}"
    nodes = node_list(tmp_path, ocp_a100())
    for field, path, what in (
        ("name", "metadata.name", "a pod name"),
        ("namespace", "metadata.namespace", "a namespace"),
        ("node", "spec.nodeName", "a node name"),
    ):
        pods = pod_list(tmp_path, *ocp_pods(**{field: value}))
        with pytest.raises(InstanceError) as err:
            instance_from_kubernetes(nodes, pods)
        assert str(err.value) == f"{pods}: items[1].{path}: {what} {rule}"
    node = edited(ocp_a100(), "metadata/labels/nvidia.com~gpu.product", value)
    nodes = node_list(tmp_path, node)
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(nodes)
    assert str(err.value) == f"{nodes}: items[0].metadata.labels.nvidia.com/gpu.product: a GPU product {rule}"


def test_keys_and_huge_values_are_shown_escaped_and_cut(tmp_path: Path) -> None:
    """A resource name with an escape sequence is quoted in the path; a huge product is cut."""
    node = ocp_a100()
    node["status"]["allocatable"]["nvidia.com/mig-2g.10gb\x1b[2J"] = "1"
    nodes = node_list(tmp_path, node)
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(nodes)
    assert str(err.value) == (
        f"{nodes}: items[0].status.allocatable.'nvidia.com/mig-2g.10gb\\x1b[2J': expected a MIG profile "
        "resource such as 'nvidia.com/mig-1g.5gb', got 'nvidia.com/mig-2g.10gb\\x1b[2J'"
    )
    nodes = node_list(tmp_path, edited(ocp_a100(), "metadata/labels/nvidia.com~gpu.product", "A100" * 5000))
    with pytest.raises(InstanceError) as err:
        instance_from_kubernetes(nodes)
    assert str(err.value) == (
        f"{nodes}: items[0].metadata.labels.nvidia.com/gpu.product: unknown GPU model "
        f"{repr('A100' * 5000)[:115]}... (20002 chars)"
    )
