"""Building an instance from what the Kubernetes API says about a MIG cluster.

The input is the JSON of ``kubectl get nodes -o json`` and ``kubectl get pods -A -o json`` (a
``List``/``NodeList``/``PodList``, or one ``Node``/``Pod`` as ``kubectl get node NAME -o json``
prints it). What the objects carry, as NVIDIA's GPU feature discovery (GFD) and device plugin
write it (``NVIDIA/k8s-device-plugin``, ``internal/lm/mig-strategy.go`` and ``internal/rm/rm.go``;
the GPU Operator's MIG pages show both on real nodes):

* ``nvidia.com/gpu.product``: the GPU's product name with blanks as dashes
  (``NVIDIA-H100-80GB-HBM3``, older drivers ``A100-SXM4-40GB``). Under the MIG ``single``
  strategy GFD names the MIG device instead, ``<product>-MIG-<profile>``
  (``A100-SXM4-40GB-MIG-1g.5gb``), and ``nvidia.com/gpu.count`` counts MIG devices, not GPUs;
  under ``mixed`` the count is the GPUs'. ``-SHARED`` is appended when devices are time-sliced,
  and ``-MIG-INVALID`` when the single strategy's rules are broken.
* ``status.allocatable``: ``cpu``, ``memory`` and, under ``mixed``, one resource per profile,
  ``nvidia.com/mig-<profile>`` with ``+`` written ``.`` (``nvidia.com/mig-1g.10gb.me``); under
  ``single`` the MIG devices are ``nvidia.com/gpu``.
* ``nvidia.com/mig.config``: the mig-manager configuration asked for (``all-1g.10gb``,
  ``all-balanced``, ``all-disabled``).

The objects never say which GPU of a node a device plugin gave a pod, nor where on that GPU
the MIG device starts: the GPUs of a node with MIG devices are of unknown layout (nothing is
placed there until the node's ``nvidia-smi mig -lgi`` is merged), and running pods with MIG
devices are reported as :class:`UnknownPlacement`, never placed by guess. Their cpu and memory
requests are taken off their node's capacity, as the scheduler counts them.

Units: ``cpu`` in cores (``63500m`` is 63.5); ``ram_gb`` in GiB (2**30 bytes), so that a
node's ``512Gi`` reads 512.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Context, Decimal, localcontext
from pathlib import Path
from typing import Any

from mipopt._fields import MAX_QUANTITY as MAX_INSTANCE_QUANTITY
from mipopt.catalog import GpuModel, builtin_models, get_model
from mipopt.errors import InstanceError
from mipopt.instance import Instance, InstanceBuilder
from mipopt.interop._names import SHOWN_CHARS, checked_name, file_name, shown
from mipopt.io import parse_json
from mipopt.limits import MAX_GPUS, MAX_WORKLOADS, beyond
from mipopt.workloads.alibaba import POD_PHASES  # Kubernetes' pod phases, one home

_GPU = "nvidia.com/gpu"
_MIG = "nvidia.com/mig-"
_PRODUCT = "nvidia.com/gpu.product"
_COUNT = "nvidia.com/gpu.count"
_CONFIG = "nvidia.com/mig.config"
_CONFIG_STATE = "nvidia.com/mig.config.state"

#: Why a running pod's MIG device is not placed.
UNKNOWN_REASON = (
    "Kubernetes objects do not say which GPU of the node the device plugin chose, "
    "nor where on it the MIG device starts"
)

_DIGITS = re.compile(r"^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)(.*)$")
_BINARY = {"Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60}
_DECIMAL = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_EXPONENT = re.compile(r"^[eE]([+-]?)0*([0-9]+)$")

#: The largest quantity read (cpu, memory in bytes, a device count): Kubernetes' own, an int64.
MAX_QUANTITY = 2**63 - 1

#: A profile as a resource name writes it, after ``nvidia.com/mig-``: ``1g.10gb``,
#: ``1g.10gb.me`` (``+me``), ``1g.24gb.me.all`` (``+me.all``), ``1g.24gb-me``.
_RESOURCE_PROFILE = re.compile(r"^([0-9]+g\.[0-9]+gb)(?:\.([a-z]+(?:\.[a-z]+)*)|(-me))?$")
#: A profile as GFD's product label writes it, after ``-MIG-``: ``+`` is dropped (``1g.10gbme``).
_LABEL_PROFILE = re.compile(r"^([0-9]+g\.[0-9]+gb)(me\.all|me|gfx|-me)?$")
_MIG_PRODUCT = re.compile(r"^(.+)-MIG-(.+)$")


@dataclass(frozen=True, slots=True)
class UnknownPlacement:
    """A running pod's MIG devices, whose GPU and start the Kubernetes objects do not tell.

    Parameters
    ----------
    pod
        ``namespace/name``.
    node
        The node it runs on (``spec.nodeName``).
    profile
        The MIG profile, as the catalog names it (``1g.10gb+me``).
    count
        How many devices of that profile the pod holds.
    reason
        One line: why the placement is not known.
    """

    pod: str
    node: str
    profile: str
    count: int
    reason: str


@dataclass(frozen=True, slots=True)
class KubernetesImport:
    """What :func:`instance_from_kubernetes` read: the instance, what it could not place, notes.

    Parameters
    ----------
    instance
        Hosts and GPUs of the MIG nodes, new workloads from the pending pods.
    unknown
        MIG devices held by running pods, whose GPU and start cannot be known.
    notes
        One line each: nodes and pods left out and why, numbers read loosely.
    """

    instance: Instance
    unknown: tuple[UnknownPlacement, ...]
    notes: tuple[str, ...]


def parse_quantity(value: Any, where: str) -> Decimal:
    """A Kubernetes resource quantity as a number: ``"63500m"`` -> 63.5, ``"1Ki"`` -> 1024.

    The grammar is Kubernetes' (``k8s.io/apimachinery/pkg/api/resource``): a non-negative
    decimal number, then a binary suffix (``Ki`` .. ``Ei``), a decimal one (``n u m k M G T P
    E``) or an exponent (``e3``, ``E-2``). A JSON number stands for itself.

    Parameters
    ----------
    value
        The quantity (a string, or a number as YAML-made JSON may hold).
    where
        The error path, ``FILE: JSON.PATH``.

    Returns
    -------
    Decimal
        At most :data:`MAX_QUANTITY`.

    Raises
    ------
    InstanceError
        Anything else, or a quantity beyond :data:`MAX_QUANTITY` (``1e400``), refused before
        it is computed.

    Examples
    --------
    >>> parse_quantity("63500m", "n.json: cpu"), parse_quantity("2Gi", "n.json: memory")
    (Decimal('63.500'), Decimal('2147483648'))
    >>> parse_quantity("1.5e3", "n.json: x")
    Decimal('1.5E+3')
    >>> parse_quantity("1e400", "n.json: cpu")
    Traceback (most recent call last):
    ...
    mipopt.errors.InstanceError: n.json: cpu: '1e400' is more than 2**63 - 1, the largest quantity Kubernetes holds (docs/limits.md)
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise InstanceError(where, f"expected a Kubernetes quantity, got {shown(value)}")
    if isinstance(value, int | float):
        if value < 0 or (isinstance(value, float) and not math.isfinite(value)):
            raise InstanceError(where, f"expected a non-negative quantity, got {shown(value)}")
        number, exponent, factor = Decimal(value if isinstance(value, int) else str(value)), 0, 1
    else:
        m = _DIGITS.match(value.strip().removeprefix("+"))
        suffix = m[2] if m else None
        if suffix in _BINARY:
            exponent, factor = 0, _BINARY[suffix]
        elif suffix in _DECIMAL:
            exponent, factor = _DECIMAL[suffix], 1
        elif suffix is not None and (e := _EXPONENT.match(suffix)):
            # an exponent of more digits is beyond any bound (and int() refuses 4,300 digits)
            exponent, factor = (int(e[2]) if len(e[2]) <= 7 else 10**7) * (-1 if e[1] == "-" else 1), 1
        else:
            raise InstanceError(
                where,
                f"expected a Kubernetes quantity such as '64', '500m', '512Gi' or '1G', got {shown(value)}",
            )
        number = Decimal(m[1])  # type: ignore[index]
    # told too large by its digits before it is computed (1e1000000 would overflow a Decimal),
    # then computed exactly enough to compare
    if not (number and number.adjusted() + exponent > _MAX_DIGITS):
        with localcontext(_EXACT):
            quantity = number.scaleb(exponent) * factor
        if quantity <= MAX_QUANTITY:
            return +quantity  # rounded to the default context, as before
    raise InstanceError(
        where,
        f"{shown(value)} is more than 2**63 - 1, the largest quantity Kubernetes holds (docs/limits.md)",
    )


#: Enough digits to hold any quantity up to :data:`MAX_QUANTITY` times 10**20 exactly.
_MAX_DIGITS = 40
_EXACT = Context(prec=2 * _MAX_DIGITS, Emax=10**7, Emin=-(10**7))


def profile_of_resource(resource: str, where: str) -> str:
    """The MIG profile of an ``nvidia.com/mig-<profile>`` resource: ``.`` after ``gb`` is ``+``.

    The device plugin names a profile's resource ``"mig-" + profile`` with ``+`` replaced by
    ``.`` (``NVIDIA/k8s-device-plugin``, ``internal/rm/rm.go``).

    Raises
    ------
    InstanceError
        A resource name that is not a MIG GPU-instance profile.

    Examples
    --------
    >>> profile_of_resource("nvidia.com/mig-1g.10gb.me", "p.json: x")
    '1g.10gb+me'
    >>> profile_of_resource("nvidia.com/mig-1g.24gb.me.all", "p.json: x")
    '1g.24gb+me.all'
    """
    m = _RESOURCE_PROFILE.match(resource.removeprefix(_MIG))
    if not resource.startswith(_MIG) or not m:
        raise InstanceError(
            where, f"expected a MIG profile resource such as 'nvidia.com/mig-1g.5gb', got {shown(resource)}"
        )
    return m[1] + (f"+{m[2]}" if m[2] else "") + (m[3] or "")


def _label_profile(text: str, where: str) -> str:
    m = _LABEL_PROFILE.match(text)
    if not m:
        raise InstanceError(
            where, f"expected a MIG profile after '-MIG-' such as '1g.5gb', got {shown(text)}"
        )
    suffix = m[2] or ""
    return m[1] + (suffix if suffix in ("", "-me") else f"+{suffix}")


# -- reading the files -----------------------------------------------------------------------


def _load(path: Path, kind: str) -> tuple[str, list[tuple[str, dict[str, Any]]]]:
    """The file's name and its objects of ``kind`` with their JSON paths (``items[3]`` or ``""``)."""
    file = file_name(path)
    try:
        raw = path.read_bytes()
    except OSError as err:
        raise InstanceError(file, f"cannot be read: {err.strerror}") from None
    data = parse_json(raw, file)  # the reader of every JSON input: depth, duplicate keys, numbers
    lists = ("List", f"{kind}List")
    if not isinstance(data, dict):
        got = "an array" if isinstance(data, list) else repr(data)
        raise InstanceError(file, f"expected a JSON object (kubectl get ... -o json), got {got}")
    if data.get("kind") not in (*lists, kind):
        raise InstanceError(
            f"{file}: kind", f"expected {kind}, {kind}List or List, got {shown(data.get('kind'))}"
        )
    if data["kind"] == kind:
        return file, [("", data)]
    items = data.get("items")
    if not isinstance(items, list):
        raise InstanceError(f"{file}: items", f"expected a list of {kind} objects, got {shown(items)}")
    found = []
    for i, item in enumerate(items):
        if not isinstance(item, dict):
            raise InstanceError(f"{file}: items[{i}]", f"expected a {kind} object, got {shown(item)}")
        if item.get("kind", kind) != kind:
            raise InstanceError(f"{file}: items[{i}].kind", f"expected {kind}, got {shown(item['kind'])}")
        found.append((f"items[{i}]", item))
    return file, found


def _join(base: str, *keys: str) -> str:
    """A JSON path; a key that is not one short printable line is shown quoted (:func:`shown`)."""
    return ".".join(k if k.isprintable() and len(k) <= SHOWN_CHARS else shown(k) for k in (base, *keys) if k)


def _get(obj: dict[str, Any], file: str, base: str, *keys: str, kind: type = dict, need: bool = True) -> Any:
    """``obj[keys[0]][keys[1]]...``, checked to be ``kind``; ``None`` when absent and not ``need``."""
    value: Any = obj
    for n, key in enumerate(keys):
        value = value.get(key) if isinstance(value, dict) else None
        if value is None:
            if need:
                raise InstanceError(f"{file}: {_join(base, *keys[: n + 1])}", "missing")
            return None
        expected = kind if n == len(keys) - 1 else dict
        if not isinstance(value, expected):
            what = "an object" if expected is dict else "a list" if expected is list else "a string"
            raise InstanceError(
                f"{file}: {_join(base, *keys[: n + 1])}", f"expected {what}, got {shown(value)}"
            )
    return value


def _count(value: Any, where: str) -> int:
    """A number of devices: a whole quantity, at most :data:`~mipopt.limits.MAX_WORKLOADS` (each
    MIG device a pending pod asks for becomes a workload)."""
    number = parse_quantity(value, where)
    if number != number.to_integral_value():
        raise InstanceError(where, f"expected a whole number of devices, got {shown(value)}")
    if number > MAX_WORKLOADS:
        raise InstanceError(where, f"{shown(value)} is {beyond(int(number), 'devices', MAX_WORKLOADS)}")
    return int(number)


def _held(quantity: Decimal, what: str, where: str) -> Decimal:
    """``quantity`` of cpu (cores) or memory (bytes), when an instance can hold it: at most
    :data:`mipopt._fields.MAX_QUANTITY` cores or GiB."""
    amount = quantity if what == "cpu" else quantity / 2**30
    if amount > MAX_INSTANCE_QUANTITY:
        unit = "cores" if what == "cpu" else "GiB"
        raise InstanceError(
            where,
            f"{what} {float(amount):g} {unit} is more than the {MAX_INSTANCE_QUANTITY:g} {unit} an instance holds "
            "(docs/limits.md)",
        )
    return quantity


def _model(product: str, where: str) -> GpuModel:
    checked_name(product, "a GPU product", where)
    try:
        return get_model(product)
    except KeyError as err:
        long = len(product) > SHOWN_CHARS
        raise InstanceError(
            where, f"unknown GPU model {shown(product)}" if long else str(err.args[0])
        ) from None


# -- nodes -----------------------------------------------------------------------------------


@dataclass
class _Node:
    """A MIG node as the Node object tells it.

    ``devices`` counts its MIG devices by profile (the allocatable resources, else GFD's
    ``nvidia.com/mig-<profile>.count`` labels, or the single strategy's count); ``held`` counts
    those the bound pods hold. ``layout_known`` is True only where the labels prove the GPUs
    empty: mig-manager applied ``all-enabled`` and no device is advertised.
    """

    name: str
    model: GpuModel
    gpus: int
    cpu: Decimal | None
    memory: Decimal | None  # bytes
    single_profile: str | None  # the profile of nvidia.com/gpu under the single strategy
    devices: dict[str, int]
    layout_known: bool
    config: str  # the nvidia.com/mig.config label and its state, in words
    used_cpu: Decimal = Decimal(0)
    used_memory: Decimal = Decimal(0)
    held: int = 0

    def layout_note(self) -> str:
        """What the import does not know of the node's GPUs, and the command that tells it."""
        if self.devices:
            listed = ", ".join(f"{n} {p}" for p, n in sorted(self.devices.items()))
            idle = max(sum(self.devices.values()) - self.held, 0)
            what = f"MIG devices {listed} ({self.held} held by running pods, {idle} idle)"
        else:
            what = f"{self.config} but no MIG device is advertised"
        return (
            f"node {self.name}: {self.gpus} GPU(s) of unknown layout: {what}; which GPU and start each "
            "instance has is not in the Node object, so nothing is placed there until the node's "
            f"nvidia-smi mig -lgi is merged: mipopt import nvidia-smi --host {self.name} lgi.txt "
            f"--gpu-model {self.model.name} --merge k8s.json --out cluster.json"
        )


def _read_node(file: str, base: str, obj: dict[str, Any], notes: list[str]) -> _Node | None:
    name = _get(obj, file, base, "metadata", "name", kind=str)
    checked_name(name, "a node name", f"{file}: {_join(base, 'metadata', 'name')}")
    labels: dict[str, Any] = _get(obj, file, base, "metadata", "labels", need=False) or {}
    allocatable: dict[str, Any] = _get(obj, file, base, "status", "allocatable")
    label_path = _join(base, "metadata", "labels")
    product = labels.get(_PRODUCT)
    if product is None:
        notes.append(f"node {name}: no {_PRODUCT} label, not a GPU node; skipped")
        return None
    where = f"{file}: {label_path}.{_PRODUCT}"
    if not isinstance(product, str):
        raise InstanceError(where, f"expected a string, got {shown(product)}")
    product = product.removesuffix("-SHARED")
    if product.endswith("-MIG-INVALID"):
        notes.append(
            f"node {name}: {_PRODUCT} is {shown(product)}, GFD found MIG devices the single strategy "
            "cannot advertise; skipped"
        )
        return None
    single = _MIG_PRODUCT.match(product)
    mig = {
        key: (value, f"{file}: {_join(base, 'status', 'allocatable', key)}")
        for key, value in allocatable.items()
        if key.startswith(_MIG)
    }
    devices = {key: _count(value, at) for key, (value, at) in mig.items()}
    # GFD's per-profile labels: their profile names are as GFD prints them (the docs show
    # mig-3g.21gb beside the resource mig-3g.20gb), so they count devices but name no profile.
    counted = {
        key.removeprefix(_MIG).removesuffix(".count"): _count(value, f"{file}: {_join(label_path, key)}")
        for key, value in labels.items()
        if key.startswith(_MIG) and key.endswith(".count")
    }
    config = labels.get(_CONFIG)
    if (
        not single
        and not any(devices.values())
        and not any(counted.values())
        and config in (None, "all-disabled")
    ):
        why = "mig.config is all-disabled" if config else f"no {_MIG}* resources and no {_CONFIG} label"
        notes.append(f"node {name}: MIG is not enabled ({why}); skipped")
        return None
    model = _model(single[1] if single else product, where)
    count_where = f"{file}: {label_path}.{_COUNT}"
    if _COUNT not in labels:
        raise InstanceError(count_where, "missing (GPU feature discovery writes it on GPU nodes)")
    count = labels[_COUNT]
    if not isinstance(count, str) or not (count.isascii() and count.isdigit()):  # "²".isdigit()
        raise InstanceError(count_where, f"expected a whole number, got {shown(count)}")
    if len(count) > 18:  # more GPUs or devices than any limit, and more digits than int() takes
        raise InstanceError(
            count_where, f"{shown(count)} is more than the limit of {MAX_GPUS:,} GPUs (docs/limits.md)"
        )
    for key, number in devices.items():
        profile = profile_of_resource(key, mig[key][1])
        if number and model.find(profile) is None:
            raise InstanceError(mig[key][1], f"{profile!r} is not a profile of {model.name}")
    by_profile = {profile_of_resource(k, ""): n for k, n in devices.items() if n} or {
        p: n for p, n in counted.items() if n
    }
    gpus, single_profile = int(count), None
    if single:
        single_profile = _label_profile(single[2], where)
        if model.find(single_profile) is None:
            raise InstanceError(where, f"{single_profile!r} is not a profile of {model.name}")
        per_gpu = model.profile(single_profile).max_instances
        gpus = -(-int(count) // per_gpu)
        by_profile = {single_profile: int(count)} if int(count) else {}
        if config != f"all-{single_profile}" or int(count) % per_gpu:
            notes.append(
                f"node {name}: under the MIG single strategy {_COUNT} counts MIG devices ({count} "
                f"{single_profile}); {gpus} GPU(s) is the fewest that hold them"
            )
    if gpus > MAX_GPUS:
        held = f"{int(count):,} {single_profile} devices on " if single else ""
        raise InstanceError(count_where, f"{held}{beyond(gpus, 'GPUs', MAX_GPUS)}")
    state = labels.get(_CONFIG_STATE)
    empty = not by_profile and config == "all-enabled" and state == "success"
    config_words = f"{_CONFIG} is {shown(config)}" + ("" if state is None else f" ({shown(state)})")
    whole = allocatable.get(_GPU)
    whole_count = (
        0 if whole is None else _count(whole, f"{file}: {_join(base, 'status', 'allocatable', _GPU)}")
    )
    if not single and whole_count:
        notes.append(f"node {name}: {whole_count} GPU(s) advertised whole as {_GPU} (MIG disabled on them)")
    cpu = ram = None
    if "cpu" in allocatable:
        where = f"{file}: {_join(base, 'status', 'allocatable', 'cpu')}"
        cpu = _held(parse_quantity(allocatable["cpu"], where), "cpu", where)
    else:
        notes.append(f"node {name}: no allocatable cpu; its cpu is left unlimited")
    if "memory" in allocatable:
        where = f"{file}: {_join(base, 'status', 'allocatable', 'memory')}"
        ram = _held(parse_quantity(allocatable["memory"], where), "memory", where)
    else:
        notes.append(f"node {name}: no allocatable memory; its ram is left unlimited")
    return _Node(name, model, gpus, cpu, ram, single_profile, by_profile, empty, config_words)


# -- pods ------------------------------------------------------------------------------------


@dataclass
class _Pod:
    """What a Pod object asks for: cpu and memory as the scheduler counts them, MIG devices."""

    id: str
    phase: str
    node: str | None
    cpu: Decimal
    memory: Decimal
    mig: dict[str, tuple[int, str]] = field(default_factory=dict)  # profile -> count, where
    whole: tuple[int, str] | None = None  # nvidia.com/gpu count, where
    selector_product: tuple[str, str] | None = None  # nodeSelector nvidia.com/gpu.product, where


def _containers(obj: dict[str, Any], file: str, base: str, key: str) -> Iterator[tuple[str, dict[str, Any]]]:
    containers = _get(obj, file, base, "spec", key, kind=list, need=key == "containers")
    for j, container in enumerate(containers or []):
        at = _join(base, "spec", f"{key}[{j}]")
        if not isinstance(container, dict):
            raise InstanceError(f"{file}: {at}", f"expected a container object, got {shown(container)}")
        yield at, container


def _resources(container: dict[str, Any], file: str, at: str) -> dict[str, tuple[Any, str]]:
    """A container's resources: requests, and limits where no request is given (as Kubernetes defaults)."""
    found: dict[str, tuple[Any, str]] = {}
    for part in ("limits", "requests"):  # requests win
        values = _get(container, file, at, "resources", part, need=False) or {}
        for key, value in values.items():
            found[key] = (value, f"{file}: {_join(at, 'resources', part, key)}")
    return found


def _read_pod(file: str, base: str, obj: dict[str, Any]) -> _Pod:
    name = _get(obj, file, base, "metadata", "name", kind=str)
    namespace = _get(obj, file, base, "metadata", "namespace", kind=str)
    checked_name(namespace, "a namespace", f"{file}: {_join(base, 'metadata', 'namespace')}")
    checked_name(name, "a pod name", f"{file}: {_join(base, 'metadata', 'name')}")
    phase = _get(obj, file, base, "status", "phase", kind=str)
    if phase not in POD_PHASES:
        raise InstanceError(
            f"{file}: {_join(base, 'status', 'phase')}",
            f"expected one of {', '.join(POD_PHASES)}, got {shown(phase)}",
        )
    node = _get(obj, file, base, "spec", "nodeName", kind=str, need=False)
    if node:
        checked_name(node, "a node name", f"{file}: {_join(base, 'spec', 'nodeName')}")
    pod = _Pod(f"{namespace}/{name}", phase, node or None, Decimal(0), Decimal(0))
    for at, container in _containers(obj, file, base, "containers"):
        resources = _resources(container, file, at)
        for key, (value, where) in resources.items():
            if key == "cpu":
                pod.cpu += parse_quantity(value, where)
            elif key == "memory":
                pod.memory += parse_quantity(value, where)
            elif key.startswith(_MIG):
                profile = profile_of_resource(key, where)
                number = _count(value, where) + pod.mig.get(profile, (0, ""))[0]
                if number:
                    pod.mig[profile] = (number, pod.mig.get(profile, (0, where))[1])
            elif key == _GPU:
                number = _count(value, where) + (pod.whole[0] if pod.whole else 0)
                pod.whole = (number, pod.whole[1] if pod.whole else where) if number else None
    # An init container runs alone before the others: the pod needs the larger of the two.
    for at, container in _containers(obj, file, base, "initContainers"):
        resources = _resources(container, file, at)
        if "cpu" in resources:
            pod.cpu = max(pod.cpu, parse_quantity(*resources["cpu"]))
        if "memory" in resources:
            pod.memory = max(pod.memory, parse_quantity(*resources["memory"]))
    overhead = _get(obj, file, base, "spec", "overhead", need=False) or {}
    for key, attr in (("cpu", "cpu"), ("memory", "memory")):
        if key in overhead:
            where = f"{file}: {_join(base, 'spec', 'overhead', key)}"
            setattr(pod, attr, getattr(pod, attr) + parse_quantity(overhead[key], where))
    _held(pod.cpu, "cpu", f"{file}: {_join(base, 'spec')}")
    _held(pod.memory, "memory", f"{file}: {_join(base, 'spec')}")
    selector = _get(obj, file, base, "spec", "nodeSelector", need=False) or {}
    if isinstance(selector.get(_PRODUCT), str):
        pod.selector_product = (
            selector[_PRODUCT],
            f"{file}: {_join(base, 'spec', 'nodeSelector', _PRODUCT)}",
        )
    return pod


def _models_with(profile: str) -> tuple[str, ...]:
    return tuple(m.name for m in builtin_models().values() if m.find(profile) is not None)


def instance_from_kubernetes(
    nodes: str | Path, pods: str | Path | None = None, *, name: str = "kubernetes"
) -> KubernetesImport:
    """An instance from ``kubectl get nodes -o json`` and ``kubectl get pods -A -o json``.

    * A node with an ``nvidia.com/gpu.product`` label that shows MIG (``nvidia.com/mig-*``
      resources or ``nvidia.com/mig-<profile>.count`` labels, a ``-MIG-<profile>`` product, or an
      ``nvidia.com/mig.config`` other than ``all-disabled``) becomes host ``{node}`` with GPUs
      ``{node}-gpu0`` .. of the product's catalog model: ``nvidia.com/gpu.count`` of them under
      the mixed strategy; under the single strategy, where that label counts MIG devices, the
      fewest GPUs that hold them (exact when ``nvidia.com/mig.config`` is ``all-<profile>``).
      Its cpu and ram are ``status.allocatable`` less the requests of the pods bound to it that
      have not ended. Other nodes are skipped with a note.
    * The GPUs of a MIG node are of unknown layout (:attr:`mipopt.instance.Gpu.layout_known`),
      so that no method places anything there, unless the labels prove them empty
      (``nvidia.com/mig.config`` ``all-enabled`` applied with ``mig.config.state`` ``success``, and
      no device advertised): no object says which GPU and start a MIG device has. A note per
      such node says how many devices of which profiles it has, how many the pods hold (the
      others are idle), and the command that merges the node's ``nvidia-smi mig -lgi``.
    * A pod in phase ``Pending`` without ``spec.nodeName`` becomes one new workload per MIG
      device it asks for: ``{namespace}/{name}``, or ``{namespace}/{name}#k`` (k from 1) when it
      asks for several; the first carries the pod's cpu and memory requests (the larger of the
      containers' sum and any init container, plus ``spec.overhead``). Its profile is the
      ``nvidia.com/mig-<profile>`` resource, or, for ``nvidia.com/gpu``, the profile of the
      ``-MIG-`` product its ``nodeSelector`` names. A workload whose profile no GPU of the
      cluster has is kept, limited to the catalog models that have it, for the solver to reject.
    * A pod bound to a node and not ended holds its MIG devices there: reported in
      :attr:`KubernetesImport.unknown`, since no object says on which GPU or at which start.
    * ``Succeeded`` and ``Failed`` pods are ignored; other pods are left out with a note.
    * Names must be names (:func:`mipopt._fields.name_problem`): node names, namespaces, pod
      names and the ``nvidia.com/gpu.product`` values read are one printable line each, not
      starting with ``-``.

    The instance's notes are :attr:`KubernetesImport.notes` and a line per running pod's devices.

    Parameters
    ----------
    nodes
        The Node objects' JSON file.
    pods
        The Pod objects' JSON file, or ``None`` for none (no workloads; full capacities).
    name
        The instance's name.

    Returns
    -------
    KubernetesImport

    Raises
    ------
    InstanceError
        With path ``FILE``, ``FILE:LINE`` or ``FILE: JSON.PATH``: an unreadable file, text that is
        not JSON, an object that is not a Node/Pod (list), missing or malformed fields, a product
        the catalog does not know, a bad quantity, a resource that is not a MIG profile, a profile
        the node's or the nodeSelector's model does not have, duplicate nodes or pods.

    Examples
    --------
    >>> import json, tempfile, pathlib
    >>> node = {"kind": "Node", "metadata": {"name": "n1", "labels": {  # hand-made
    ...     "nvidia.com/gpu.product": "NVIDIA-A100-SXM4-40GB", "nvidia.com/gpu.count": "2"}},
    ...     "status": {"allocatable": {"cpu": "63500m", "memory": "512Gi", "nvidia.com/mig-3g.20gb": "2"}}}
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "nodes.json"
    >>> _ = path.write_text(json.dumps(node))
    >>> result = instance_from_kubernetes(path)
    >>> [(g.id, g.model.name) for g in result.instance.gpus]
    [('n1-gpu0', 'A100-40GB'), ('n1-gpu1', 'A100-40GB')]
    >>> result.instance.hosts[0].cpu, result.instance.hosts[0].ram_gb
    (63.5, 512.0)
    >>> result.instance.unknown_layout  # 2 x 3g.20gb somewhere on them
    ('n1-gpu0', 'n1-gpu1')
    """
    notes: list[str] = []
    nodes_file, node_objects = _load(Path(nodes), "Node")
    known: dict[str, str] = {}
    mig_nodes: dict[str, _Node] = {}
    gpus = 0  # of the MIG nodes read
    for base, obj in node_objects:
        node = _read_node(nodes_file, base, obj, notes)
        node_name = _get(obj, nodes_file, base, "metadata", "name", kind=str)
        if node_name in known:
            raise InstanceError(
                f"{nodes_file}: {_join(base, 'metadata', 'name')}",
                f"node {node_name!r} is listed twice (also {known[node_name] or 'the object'})",
            )
        known[node_name] = base
        if node is not None:
            mig_nodes[node.name] = node
            gpus += node.gpus
            if gpus > MAX_GPUS:
                where = f"{nodes_file}: {_join(base, 'metadata', 'labels')}.{_COUNT}"
                raise InstanceError(where, f"the nodes so far have {beyond(gpus, 'GPUs', MAX_GPUS)}")
    node_notes = len(notes)  # the nodes' layout notes go here, once the pods have been counted
    cluster_models = {n.model.name: n.model for n in mig_nodes.values()}
    unknown: list[UnknownPlacement] = []
    new: list[tuple[str, str, float, float, tuple[str, ...] | None]] = []
    if pods is not None:
        pods_file, pod_objects = _load(Path(pods), "Pod")
        seen: dict[str, str] = {}
        for base, obj in pod_objects:
            pod = _read_pod(pods_file, base, obj)
            if pod.id in seen:
                raise InstanceError(
                    f"{pods_file}: {_join(base, 'metadata', 'name')}",
                    f"pod {pod.id!r} is listed twice (also {seen[pod.id] or 'the object'})",
                )
            seen[pod.id] = base
            if pod.phase in ("Succeeded", "Failed"):
                continue
            if pod.node is not None:
                _bound(pod, mig_nodes, known, unknown, notes)
            elif pod.phase == "Pending":
                new.extend(_pending(pod, cluster_models, notes, MAX_WORKLOADS - len(new)))
            else:
                notes.append(f"pod {pod.id}: phase {pod.phase} without a node; left out")
    builder = InstanceBuilder(name)
    for node in mig_nodes.values():
        free: dict[str, float | None] = {}
        for what, total, used in (
            ("cpu", node.cpu, node.used_cpu),
            ("memory", node.memory, node.used_memory),
        ):
            if total is not None and used > total:
                notes.append(f"node {node.name}: its pods request more {what} than is allocatable; 0 left")
            free[what] = None if total is None else float(max(total - used, Decimal(0)))
        ram = free["memory"]
        gpu_ids = [f"{node.name}-gpu{i}" for i in range(node.gpus)]
        builder.add_host(
            node.name,
            dict.fromkeys(gpu_ids, node.model),
            cpu=free["cpu"],
            ram_gb=None if ram is None else ram / 2**30,
            unknown_layout=() if node.layout_known else gpu_ids,
        )
    for workload_id, profile, cpu_, ram_, models in new:
        builder.add_workload(workload_id, profile, cpu=cpu_, ram_gb=ram_, gpu_models=models)
    notes[node_notes:node_notes] = [n.layout_note() for n in mig_nodes.values() if not n.layout_known]
    builder.notes.extend(notes)
    builder.notes.extend(
        f"pod {u.pod}: holds {u.count} {u.profile} on node {u.node}; which GPU and start is not known"
        for u in unknown
    )
    return KubernetesImport(builder.build(), tuple(unknown), tuple(notes))


def _bound(
    pod: _Pod,
    nodes: Mapping[str, _Node],
    known: Mapping[str, str],
    unknown: list[UnknownPlacement],
    notes: list[str],
) -> None:
    """A pod bound to a node: its requests come off the node; its MIG devices are not placed."""
    assert pod.node is not None
    node = nodes.get(pod.node)
    if node is None:
        if pod.mig or pod.whole:
            where = "is not a MIG node" if pod.node in known else "is not in the nodes file"
            notes.append(f"pod {pod.id}: runs on node {pod.node}, which {where}; left out")
        return
    node.used_cpu += pod.cpu
    node.used_memory += pod.memory
    for profile, (count, where) in sorted(pod.mig.items()):
        if node.model.find(profile) is None:
            raise InstanceError(
                where, f"{profile!r} is not a profile of {node.model.name}, the GPUs of node {node.name}"
            )
        unknown.append(UnknownPlacement(pod.id, node.name, profile, count, UNKNOWN_REASON))
        node.held += count
    if pod.whole:
        if node.single_profile is not None:
            unknown.append(
                UnknownPlacement(pod.id, node.name, node.single_profile, pod.whole[0], UNKNOWN_REASON)
            )
            node.held += pod.whole[0]
        else:
            notes.append(
                f"pod {pod.id}: holds {pod.whole[0]} whole GPU(s) ({_GPU}) of node {node.name}; which is not known"
            )


def _pending(
    pod: _Pod, cluster_models: Mapping[str, GpuModel], notes: list[str], room: int
) -> list[tuple[str, str, float, float, tuple[str, ...] | None]]:
    """The new workloads of a pod waiting for a node: one per MIG device, refused beyond ``room``
    (what :data:`~mipopt.limits.MAX_WORKLOADS` leaves) before any is made."""
    selected: GpuModel | None = None
    selected_profile: str | None = None
    if pod.selector_product is not None:
        product, where = pod.selector_product
        single = _MIG_PRODUCT.match(product.removesuffix("-SHARED"))
        selected = _model(single[1] if single else product.removesuffix("-SHARED"), where)
        selected_profile = _label_profile(single[2], where) if single else None
    asked = [(count, where) for count, where in pod.mig.values()]
    asked += [pod.whole] if pod.whole and selected_profile is not None else []
    if sum(count for count, _ in asked) > room:
        total = MAX_WORKLOADS - room + sum(count for count, _ in asked)
        raise InstanceError(
            asked[0][1],
            f"pod {pod.id} brings the new workloads to {beyond(total, 'MIG devices', MAX_WORKLOADS)}",
        )
    devices: list[tuple[str, str]] = []
    for profile, (count, where) in sorted(pod.mig.items()):
        devices.extend([(profile, where)] * count)
    if pod.whole:
        count, where = pod.whole
        if selected_profile is None:
            notes.append(
                f"pod {pod.id}: asks for {count} {_GPU} without a nodeSelector on a -MIG- product, "
                "so its MIG profile is not known; left out"
            )
        else:
            devices.extend([(selected_profile, where)] * count)
    if not devices:
        if not pod.whole:
            notes.append(f"pod {pod.id}: asks for no MIG device; left out")
        return []
    if len(devices) > 1:
        notes.append(
            f"pod {pod.id}: {len(devices)} MIG devices become {len(devices)} workloads, which mipopt "
            f"may place on different nodes; the pod's cpu and memory are on {pod.id}#1"
        )
    models_of: dict[str, tuple[str, ...] | None] = {}
    for profile, where in devices:
        if profile in models_of:
            continue
        if not _models_with(profile):
            raise InstanceError(where, f"{profile!r} is not a MIG profile of any GPU model in the catalog")
        if selected is not None:
            if selected.find(profile) is None:
                raise InstanceError(
                    where,
                    f"{profile!r} is not a profile of {selected.name}, the model its nodeSelector asks for",
                )
            models_of[profile] = (selected.name,)
        elif cluster_models and not any(m.find(profile) for m in cluster_models.values()):
            models_of[profile] = _models_with(profile)
            notes.append(
                f"pod {pod.id}: no GPU of the cluster has profile {profile}; kept for the models that do "
                f"({', '.join(_models_with(profile))})"
            )
        else:
            models_of[profile] = None
    workloads = []
    for k, (profile, _) in enumerate(devices, 1):
        models = models_of[profile]
        workload_id = pod.id if len(devices) == 1 else f"{pod.id}#{k}"
        first = k == 1
        workloads.append(
            (
                workload_id,
                profile,
                float(pod.cpu) if first else 0.0,
                float(pod.memory / 2**30) if first else 0.0,
                models,
            )
        )
    return workloads
