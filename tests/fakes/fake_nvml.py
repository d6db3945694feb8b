"""A fake of NVIDIA's NVML C library (``libnvidia-ml.so.1``) for the real ``pynvml`` to run on.

Only the C library is replaced. ``pynvml`` (nvidia-ml-py) keeps the library it loaded in the
global ``pynvml.nvmlLib`` (``_LoadNvmlLibrary`` skips loading when it is set) and reaches every C
function through ``_nvmlGetFunctionPointer(name)``, which does ``getattr(nvmlLib, name)``, caches
the result in ``_nvmlGetFunctionPointer_cache`` and turns an ``AttributeError`` into
``NVMLError_FunctionNotFound``. :func:`installed` puts :attr:`FakeNvml.library` there: an object
whose attributes are real ctypes function pointers (``CFUNCTYPE(c_int, <C argument types>)``)
with the C signatures of ``nvml.h``, wrapping Python callbacks. The unchanged ``pynvml`` wrappers
build their ctypes arguments, the callbacks fill the structures and integers behind the pointers
they are given and return NVML return codes, and ``pynvml`` checks those with
``_nvmlCheckReturn`` as it does on a GPU node. A function the fake does not provide is missing
from the library object, so ``pynvml`` raises ``NVMLError_FunctionNotFound`` as it does for a
symbol an old driver lacks.

Pointer arguments are declared ``c_void_p``, as a C library cannot check them: a ``byref``, a
ctypes array or pointer, or a handle is accepted, a structure passed by value is refused by
ctypes (``ArgumentError``) where the real library would read garbage. The output structures are
this module's own transcriptions of ``nvml.h``, not ``pynvml``'s, so the test of the fake also
checks that the two layouts agree. Handles (``nvmlDevice_t`` of a GPU or of a MIG device,
``nvmlGpuInstance_t``, ``nvmlComputeInstance_t``) are distinct non-null values never reused; a
handle of a destroyed instance, or of the wrong kind, gets ``NVML_ERROR_INVALID_ARGUMENT``.

Sources checked
---------------
* The installed ``pynvml.py`` (nvidia-ml-py 13.615.71): which C names the wrappers resolve
  (``nvmlInit`` calls ``nvmlInitWithFlags``; ``nvmlDeviceGetCount_v2``,
  ``nvmlDeviceGetHandleByIndex_v2``, ``nvmlDeviceGetGpuInstancePossiblePlacements_v2``,
  ``nvmlComputeInstanceGetInfo_v2``; ``nvmlDeviceGetGpuInstanceProfileInfo`` and
  ``nvmlGpuInstanceGetComputeInstanceProfileInfo`` call the ``...V`` functions with a v2
  structure whose ``version`` field the structure's ``__init__`` sets) and how they pass arguments.
* ``nvml.h`` of NVML API 13 (``gen/nvml/nvml.h`` in github.com/NVIDIA/go-nvml): signatures,
  structure layouts, profile constants and the return codes each function documents; for MIG
  devices, that a MIG device handle is an ``nvmlDevice_t`` mapping to one compute instance, that
  ``nvmlDeviceGetMaxMigDeviceCount`` "Returns zero if MIG is not supported or enabled", and that
  a MIG device handle is invalid once its compute instance is destroyed.
* go-nvml issue #60 (an NVIDIA maintainer, quoting ``nvml.h``): ``nvmlDeviceGetMaxMigDeviceCount``
  is the number of *possible* MIG devices (0 with MIG off); the existing ones are found by trying
  every index below it with ``nvmlDeviceGetMigDeviceHandleByIndex``, the indices that succeed
  being MIG devices. Issue #57: a MIG device's UUID is ``MIG-<uuid>``; a MIG device is named by
  (GPU, GI id, CI id), as in the legacy ``MIG-GPU-<uuid>/<gi>/<ci>``.
* go-nvml's A100 mock (``pkg/nvml/mock/gpus/a100.go``): the compute-instance profiles each size of
  GPU instance offers (:data:`CI_PROFILES_OFFERED`) and their instance counts.
* NVIDIA's MIG user guide and recorded ``nvidia-smi`` outputs: ``-C`` creates the default compute
  instance with compute-instance profile ids 0, 1, 2 for 1g, 2g, 3g GPU instances (so a
  compute-instance profile id equals its ``NVML_COMPUTE_INSTANCE_PROFILE_*`` constant); the
  driver's own placement for ``-cgi 19,14,5`` is 1g at 6, 2g at 4, 4g at 0 (the fake's
  ``nvmlDeviceCreateGpuInstance`` picks the highest free legal start); ``nvidia-smi`` prints
  ``In use by another client`` and ``Insufficient Resources`` for ``NVML_ERROR_IN_USE`` and
  ``NVML_ERROR_INSUFFICIENT_RESOURCES``, and the fake's ``nvmlErrorString`` gives the same.

Behaviour and assumptions
-------------------------
* Devices come from the project's catalog (:func:`mipopt.catalog.get_model`). A catalog
  ``Profile.id`` is the id ``nvidia-smi mig -lgip`` prints, which is NVML's
  ``nvmlGpuInstanceProfileInfo_t.id``: the id the create, list and capacity functions take.
  ``nvmlDeviceGetGpuInstanceProfileInfo[V]`` takes a *profile constant* instead; the constant of a
  catalog profile follows from its compute slices and name suffix (:func:`profile_constants`):
  ``Ng`` -> ``N_SLICE``, ``+me`` -> ``N_SLICE_REV1``, the 1-slice base profile with the larger
  memory (A100's ``1g.10gb``) -> ``1_SLICE_REV2``, ``+gfx`` -> ``N_SLICE_GFX``, ``-me`` ->
  ``N_SLICE_NO_ME``, ``+me.all`` -> ``N_SLICE_ALL_ME``. go-nvml's mock agrees on which constant
  is which profile (its A100 ``1_SLICE_REV2`` has 4 instances at ``{0,2,4,6}:2``) but reports
  ``id`` equal to the constant; a real driver, and this fake, report the ``-lgip`` id.
* A compute-instance profile id equals its constant (above); the profiles a GPU instance offers
  depend on its compute slices (:data:`CI_PROFILES_OFFERED`), a profile it does not offer (larger
  than the GPU instance, say) is ``NVML_ERROR_NOT_SUPPORTED``. A compute instance of ``s``
  slices is placed at the lowest free multiple of ``s``; a GPU instance holds ``c // s`` of them.
* MIG mode off: the GPU-instance functions return ``NVML_ERROR_NOT_SUPPORTED`` ("If device
  doesn't have MIG mode enabled" in ``nvml.h``), except ``..PossiblePlacements_v2``, which
  ``nvml.h`` says works "regardless of whether MIG is enabled or not".
* Creating a GPU instance: a placement whose start is not legal for the profile, or whose size is
  not the profile's, is ``NVML_ERROR_INVALID_ARGUMENT``; overlap, the profile's instance limit,
  the compute slices, or the media engines exhausted is ``NVML_ERROR_INSUFFICIENT_RESOURCES``.
  Media engines: one ``+me`` (or ``+me.all``) instance per GPU, the catalog's rule; and, reading
  ``nvml.h`` on ``..._ALL_ME``, an ``+me.all`` instance shares the GPU only with ``-me`` ones.
* GPU instance ids: a per-device counter starting above every pre-existing id, never reusing a
  freed id. A real driver derives the id from the placement (the guide's ``-cgi 19,14,5`` gives
  GI 13, 5, 1) and so reuses ids; tests must not depend on the ids of new instances. Compute
  instance ids: a per-GPU-instance counter from 0, likewise never reused.
* Destroying a GPU instance that has compute instances, or a GPU or compute instance marked in
  use by a process (:meth:`FakeNvml.mark_in_use`), is ``NVML_ERROR_IN_USE``.
* Lists (``nvmlDeviceGetGpuInstances``, ``nvmlGpuInstanceGetComputeInstances``): ``count`` is
  output only, as ``nvml.h`` documents; the array's size cannot be checked through a pointer, so
  callers must size it by the profile's ``instanceCount`` as on a GPU. GPU instances come in
  placement order, compute instances in id order.
* Profile info: ``id``, ``sliceCount``, ``instanceCount``, ``memorySizeMB`` (nominal, the
  catalog's GB times 1024) and ``name`` (``MIG 3g.20gb``, ``MIG 1c.3g.20gb``); SM and engine
  counts are 0. A ``...V`` call whose structure ``version`` is not v2 is
  ``NVML_ERROR_INVALID_ARGUMENT`` (``nvml.h``: "info->version ... invalid").
* MIG devices: one per compute instance, derived from the compute instances (the JSON state has
  none of its own). ``nvmlDeviceGetMaxMigDeviceCount`` is the model's compute slices (7 on an
  A100 or H100), 0 with MIG mode off as ``nvml.h`` says. ``nvmlDeviceGetMigDeviceHandleByIndex``
  numbers the existing MIG devices 0, 1, ... densely in order of (GI id, CI id), an assumption:
  ``nvml.h`` does not say how indices are assigned, so callers and tests should find a MIG
  device by its GI and CI ids, trying every index, not at a fixed index. An index at or past the
  maximum is ``NVML_ERROR_INVALID_ARGUMENT``, one below it with no MIG device
  ``NVML_ERROR_NOT_FOUND``, MIG mode off ``NVML_ERROR_NOT_SUPPORTED``. A MIG device's UUID is
  ``MIG-`` and a name-based (version 5) UUID of ``MIG-<GPU uuid>/<GI id>/<CI id>``
  (:meth:`FakeNvml.mig_uuid`), the fake's own choice: ``nvml.h`` does not say how a driver makes
  it. Each compute instance has its MIG device handle from creation; destroying the compute
  instance invalidates it. A MIG device handle works with ``nvmlDeviceGetUUID``,
  ``nvmlDeviceIsMigDeviceHandle`` (1; 0 for a GPU), ``nvmlDeviceGetGpuInstanceId``,
  ``nvmlDeviceGetComputeInstanceId`` and ``nvmlDeviceGetDeviceHandleFromMigDeviceHandle``; the
  last three are ``NVML_ERROR_INVALID_ARGUMENT`` on a GPU's handle (an assumption: ``nvml.h``
  asks for a "Target MIG device handle" and documents that code for an invalid one). Every other
  function that takes an ``nvmlDevice_t`` (the GPU-instance functions, ``nvmlDeviceGetName``,
  ``..GetIndex``, ``..GetMigMode``, ``..GetMaxMigDeviceCount``,
  ``..GetMigDeviceHandleByIndex``) needs a GPU's handle and returns
  ``NVML_ERROR_INVALID_ARGUMENT`` for a MIG device's.
* Every function but ``nvmlInit_v2``, ``nvmlInitWithFlags``, ``nvmlSystemGetNVMLVersion`` and
  ``nvmlErrorString`` returns ``NVML_ERROR_UNINITIALIZED`` outside ``nvmlInit``/``nvmlShutdown``;
  ``nvmlShutdown`` is ``NVML_ERROR_UNINITIALIZED`` before any init, and succeeds after as many
  shutdowns as inits, as ``nvml.h`` says for backward compatibility.
* An exception inside a callback cannot cross the C boundary: it is recorded in
  :attr:`FakeNvml.errors`, the call returns ``NVML_ERROR_UNKNOWN``, and :func:`installed` and
  :func:`run_script_with_fake` raise :class:`FakeNvmlError` at the end.

Usage
-----
Set-up and failure injection: :class:`FakeDevice` (pre-existing GPU instances, MIG mode),
:meth:`FakeNvml.refuse` (the next calls of a C function return a given code),
:meth:`FakeNvml.mark_in_use`, :meth:`FakeNvml.set_driver_version`, :meth:`FakeNvml.set_mig_mode`.
Inspection: :meth:`FakeNvml.gpu_instances`, :meth:`FakeNvml.compute_instances`,
:meth:`FakeNvml.mig_mode`, :meth:`FakeNvml.mig_uuid`, the call log :attr:`FakeNvml.calls` and
:meth:`FakeNvml.mutating_calls` (empty after a dry run).

In process::

    fake = FakeNvml([FakeDevice(0, "GPU-aaaa", "A100-40GB", instances=[(9, 0, 2)])])
    with installed(fake):
        pynvml.nvmlInit()
        ...
    assert fake.gpu_instances(0) == [(9, 0, 2, 1)]

In a subprocess, with the state in a JSON file (:meth:`FakeNvml.to_json`)::

    python tests/fakes/fake_nvml.py STATE.json SCRIPT.py [ARGS...]
    python -m tests.fakes.fake_nvml STATE.json SCRIPT.py [ARGS...]   # from the repository root

runs ``SCRIPT.py`` as ``__main__`` with the fake installed and writes the final state, call log
included, back to ``STATE.json``; :func:`run_script_with_fake` does all of it from a test.
"""

from __future__ import annotations

import ctypes
import itertools
import json
import re
import runpy
import subprocess
import sys
import tempfile
import traceback
import uuid
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from typing import Any

import pynvml

from mipopt.catalog import GpuModel, Profile, get_model, products

__all__ = [
    "CI_PROFILES_OFFERED",
    "CI_PROFILE_INFO_V2",
    "GI_PROFILE_INFO_V2",
    "MUTATING_FUNCTIONS",
    "FakeDevice",
    "FakeNvml",
    "FakeNvmlError",
    "bootstrap",
    "installed",
    "main",
    "profile_constants",
    "run_script_with_fake",
]

_OK = pynvml.NVML_SUCCESS
_UNINITIALIZED = pynvml.NVML_ERROR_UNINITIALIZED
_INVALID = pynvml.NVML_ERROR_INVALID_ARGUMENT
_NOT_SUPPORTED = pynvml.NVML_ERROR_NOT_SUPPORTED
_NOT_FOUND = pynvml.NVML_ERROR_NOT_FOUND
_INSUFFICIENT_SIZE = pynvml.NVML_ERROR_INSUFFICIENT_SIZE
_IN_USE = pynvml.NVML_ERROR_IN_USE
_NO_RESOURCES = pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES
_UNKNOWN = pynvml.NVML_ERROR_UNKNOWN

#: The C functions that change the GPU: a dry run calls none of them.
MUTATING_FUNCTIONS = frozenset(
    {
        "nvmlDeviceCreateGpuInstance",
        "nvmlDeviceCreateGpuInstanceWithPlacement",
        "nvmlGpuInstanceDestroy",
        "nvmlGpuInstanceCreateComputeInstance",
        "nvmlComputeInstanceDestroy",
    }
)

_STATE_FORMAT = "mipopt-fake-nvml"
_HANDLE_START = 0x4E564D4C0000  # "NVML"; handles only need to be distinct and non-null
_HANDLE_STEP = 0x100
_NAME_BUFFER = pynvml.NVML_DEVICE_NAME_V2_BUFFER_SIZE  # char name[] of the v2 profile infos
_MIG_UUID_NAMESPACE = uuid.uuid5(uuid.NAMESPACE_DNS, "fake-nvml.mipopt")  # for MIG device UUIDs

# nvmlErrorString's text for the codes the fake returns. pynvml only asks for codes missing
# from its own table (NVMLError._errcode_to_string), such as IN_USE and INSUFFICIENT_RESOURCES;
# those two are what nvidia-smi prints for them.
_ERROR_STRINGS = {
    **pynvml.NVMLError._errcode_to_string,
    _OK: "Success",
    _IN_USE: "In use by another client",
    _NO_RESOURCES: "Insufficient Resources",
}


class FakeNvmlError(AssertionError):
    """The fake failed inside a C callback (a bug in the fake or a call it cannot handle)."""


# --- nvml.h structures (transcribed from nvml.h, independent of pynvml's definitions)


class _Placement(ctypes.Structure):  # nvmlGpuInstancePlacement_t, nvmlComputeInstancePlacement_t
    _fields_ = [("start", ctypes.c_uint), ("size", ctypes.c_uint)]


_GI_PROFILE_FIELDS = [
    ("id", ctypes.c_uint),
    ("isP2pSupported", ctypes.c_uint),
    ("sliceCount", ctypes.c_uint),
    ("instanceCount", ctypes.c_uint),
    ("multiprocessorCount", ctypes.c_uint),
    ("copyEngineCount", ctypes.c_uint),
    ("decoderCount", ctypes.c_uint),
    ("encoderCount", ctypes.c_uint),
    ("jpegCount", ctypes.c_uint),
    ("ofaCount", ctypes.c_uint),
    ("memorySizeMB", ctypes.c_ulonglong),
]


class _GpuInstanceProfileInfo(ctypes.Structure):  # nvmlGpuInstanceProfileInfo_t
    _fields_ = _GI_PROFILE_FIELDS


class _GpuInstanceProfileInfoV2(ctypes.Structure):  # nvmlGpuInstanceProfileInfo_v2_t
    _fields_ = [("version", ctypes.c_uint), *_GI_PROFILE_FIELDS, ("name", ctypes.c_char * _NAME_BUFFER)]


class _GpuInstanceInfo(ctypes.Structure):  # nvmlGpuInstanceInfo_t
    _fields_ = [
        ("device", ctypes.c_void_p),
        ("id", ctypes.c_uint),
        ("profileId", ctypes.c_uint),
        ("placement", _Placement),
    ]


_CI_PROFILE_FIELDS = [
    ("id", ctypes.c_uint),
    ("sliceCount", ctypes.c_uint),
    ("instanceCount", ctypes.c_uint),
    ("multiprocessorCount", ctypes.c_uint),
    ("sharedCopyEngineCount", ctypes.c_uint),
    ("sharedDecoderCount", ctypes.c_uint),
    ("sharedEncoderCount", ctypes.c_uint),
    ("sharedJpegCount", ctypes.c_uint),
    ("sharedOfaCount", ctypes.c_uint),
]


class _ComputeInstanceProfileInfo(ctypes.Structure):  # nvmlComputeInstanceProfileInfo_t
    _fields_ = _CI_PROFILE_FIELDS


class _ComputeInstanceProfileInfoV2(ctypes.Structure):  # nvmlComputeInstanceProfileInfo_v2_t
    _fields_ = [("version", ctypes.c_uint), *_CI_PROFILE_FIELDS, ("name", ctypes.c_char * _NAME_BUFFER)]


class _ComputeInstanceInfo(ctypes.Structure):  # nvmlComputeInstanceInfo_t
    _fields_ = [
        ("device", ctypes.c_void_p),
        ("gpuInstance", ctypes.c_void_p),
        ("id", ctypes.c_uint),
        ("profileId", ctypes.c_uint),
        ("placement", _Placement),
    ]


def _struct_version(struct: type[ctypes.Structure], version: int) -> int:
    """NVML_STRUCT_VERSION(name, ver) of nvml.h: the size with the version in the top byte."""
    return ctypes.sizeof(struct) | (version << 24)


#: ``nvmlGpuInstanceProfileInfo_v2`` and ``nvmlComputeInstanceProfileInfo_v2``: the ``version`` the
#: ``...V`` functions require.
GI_PROFILE_INFO_V2 = _struct_version(_GpuInstanceProfileInfoV2, 2)
CI_PROFILE_INFO_V2 = _struct_version(_ComputeInstanceProfileInfoV2, 2)


# --- profile constants and the catalog

# (compute slices, variant) -> NVML_GPU_INSTANCE_PROFILE_*; the variant is the catalog name's
# suffix, or "rev2" for the 1-slice base profile with twice the memory.
_GI_CONSTANTS = {
    (1, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE,
    (2, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE,
    (3, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE,
    (4, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE,
    (7, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE,
    (8, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_8_SLICE,
    (6, ""): pynvml.NVML_GPU_INSTANCE_PROFILE_6_SLICE,
    (1, "+me"): pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1,
    (2, "+me"): pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_REV1,
    (1, "rev2"): pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2,
    (1, "+gfx"): pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_GFX,
    (2, "+gfx"): pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_GFX,
    (4, "+gfx"): pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX,
    (1, "-me"): pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_NO_ME,
    (2, "-me"): pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME,
    (1, "+me.all"): pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME,
    (2, "+me.all"): pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_ALL_ME,
    (3, "+gfx"): pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE_GFX,
}
_PROFILE_NAME = re.compile(r"^\d+g\.\d+gb(.*)$")

# Compute slices of each NVML_COMPUTE_INSTANCE_PROFILE_* (nvml.h).
_CI_SLICES = {
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE: 1,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE: 2,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE: 3,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE: 4,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE: 7,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_8_SLICE: 8,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_6_SLICE: 6,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1: 1,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE_NVL: 7,
}

_CI_1, _CI_1R = (
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE,
    pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE_REV1,
)
_CI_2, _CI_3 = pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE
_CI_4, _CI_7 = pynvml.NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE

#: Compute-instance profiles (id = constant) a GPU instance offers, by its compute slices: go-nvml's
#: A100 mock, as ``nvidia-smi mig -lcip`` lists them (a 4-slice instance has no 3c, a 7-slice none
#: of 5c or 6c). The full-size one, the first of its width, is the default compute instance.
CI_PROFILES_OFFERED: dict[int, tuple[int, ...]] = {
    1: (_CI_1, _CI_1R),
    2: (_CI_1, _CI_1R, _CI_2),
    3: (_CI_1, _CI_1R, _CI_2, _CI_3),
    4: (_CI_1, _CI_1R, _CI_2, _CI_4),
    7: (_CI_1, _CI_1R, _CI_2, _CI_3, _CI_4, _CI_7),
}


def _variant(profile: Profile) -> str:
    """The suffix of a catalog profile name: ``""``, ``+me``, ``+gfx``, ``-me`` or ``+me.all``."""
    m = _PROFILE_NAME.match(profile.name)
    if m is None:
        raise ValueError(f"profile name {profile.name!r} is not <c>g.<m>gb[suffix]")
    return m[1]


@cache
def profile_constants(model_name: str) -> dict[int, Profile]:
    """A catalog model's profiles by the ``NVML_GPU_INSTANCE_PROFILE_*`` constant that selects each.

    >>> {c: p.name for c, p in sorted(profile_constants("A100-40GB").items())}
    {0: '1g.5gb', 1: '2g.10gb', 2: '3g.20gb', 3: '4g.20gb', 4: '7g.40gb', 7: '1g.5gb+me', 9: '1g.10gb'}
    """
    model = get_model(model_name)
    base_1g = min(p.memory_slots for p in model.profiles if p.compute == 1 and _variant(p) == "")
    out: dict[int, Profile] = {}
    for p in model.profiles:
        variant = _variant(p)
        if variant == "" and p.compute == 1 and p.memory_slots > base_1g:
            variant = "rev2"
        constant = _GI_CONSTANTS.get((p.compute, variant))
        if constant is None or constant in out:
            raise ValueError(f"{model.name}: no NVML profile constant of its own for {p.name}")
        out[constant] = p
    return out


def _ci_name(slices: int, gi_profile: Profile) -> str:
    return f"MIG {gi_profile.name}" if slices == gi_profile.compute else f"MIG {slices}c.{gi_profile.name}"


def _media_conflict(placed: Sequence[Profile], profile: Profile) -> bool:
    """One media-extension instance per GPU; an ``+me.all`` one leaves room for ``-me`` ones only."""
    if profile.media_extension and any(p.media_extension for p in placed):
        return True
    variants = [_variant(p) for p in placed]
    if _variant(profile) == "+me.all":
        return any(v != "-me" for v in variants)
    return "+me.all" in variants and _variant(profile) != "-me"


def _admit_gpu_instance(
    model: GpuModel, placed: Sequence[tuple[Profile, int]], profile: Profile, start: int
) -> int:
    """The return code of creating ``profile`` at ``start`` next to ``placed`` (profile, start)."""
    if start not in profile.starts:
        return _INVALID
    occupied = 0
    for p, s in placed:
        occupied |= p.slot_mask(s)
    if occupied & profile.slot_mask(start):
        return _NO_RESOURCES
    if sum(p.id == profile.id for p, _ in placed) >= profile.max_instances:
        return _NO_RESOURCES
    if sum(p.compute for p, _ in placed) + profile.compute > model.compute_slices:
        return _NO_RESOURCES
    if _media_conflict([p for p, _ in placed], profile):
        return _NO_RESOURCES
    return _OK


def _free_gpu_instance_start(
    model: GpuModel, placed: Sequence[tuple[Profile, int]], profile: Profile
) -> int | None:
    """Where the driver puts ``profile`` when no placement is given: the highest legal free start."""
    for start in sorted(profile.starts, reverse=True):
        if _admit_gpu_instance(model, placed, profile, start) == _OK:
            return start
    return None


# --- state


@dataclass(frozen=True)
class FakeDevice:
    """A GPU as the fake starts with it.

    ``instances`` are pre-existing GPU instances ``(profile_id, start, gi_id)``, with ``-lgip``
    profile ids; each gets one default compute instance (all its slices, id 0). ``pending_mig``
    defaults to ``mig``; ``name`` to the catalog's first product name of the model.
    """

    index: int
    uuid: str
    model: str
    mig: bool = True
    instances: Sequence[tuple[int, int, int]] = ()
    pending_mig: bool | None = None
    name: str | None = None


@dataclass(eq=False)
class _ComputeInstance:
    gpu_instance: _GpuInstance
    id: int
    profile_id: int
    start: int
    handle: int
    mig_handle: int  # the nvmlDevice_t of its MIG device
    in_use: bool = False

    @property
    def slices(self) -> range:
        return range(self.start, self.start + _CI_SLICES[self.profile_id])


@dataclass(eq=False)
class _GpuInstance:
    device: _Device
    id: int
    profile: Profile
    start: int
    handle: int
    in_use: bool = False
    compute_instances: list[_ComputeInstance] = field(default_factory=list)
    next_ci_id: int = 0

    @property
    def offered(self) -> tuple[int, ...]:
        return CI_PROFILES_OFFERED.get(self.profile.compute, ())

    def admit(self, ci_profile: int, start: int) -> int:
        """The return code of a compute instance of ``ci_profile`` at ``start`` in this instance."""
        slices = _CI_SLICES[ci_profile]
        if start % slices or start + slices > self.profile.compute:
            return _INVALID
        if (
            sum(ci.profile_id == ci_profile for ci in self.compute_instances)
            >= self.profile.compute // slices
        ):
            return _NO_RESOURCES
        used = {s for ci in self.compute_instances for s in ci.slices}
        if used & set(range(start, start + slices)):
            return _NO_RESOURCES
        return _OK

    def free_start(self, ci_profile: int) -> int | None:
        """The lowest free start of a compute instance of ``ci_profile``, or None."""
        slices = _CI_SLICES[ci_profile]
        starts = range(0, self.profile.compute - slices + 1, slices)
        return next((s for s in starts if self.admit(ci_profile, s) == _OK), None)


@dataclass(eq=False)
class _MigDevice:
    """What a MIG device handle refers to: the MIG device of a compute instance."""

    compute_instance: _ComputeInstance

    @property
    def parent(self) -> _Device:
        return self.compute_instance.gpu_instance.device


@dataclass(eq=False)
class _Device:
    index: int
    uuid: str
    model: GpuModel
    name: str
    mig_current: bool
    mig_pending: bool
    handle: int
    gpu_instances: list[_GpuInstance] = field(default_factory=list)
    next_gi_id: int = 1

    @property
    def placed(self) -> list[tuple[Profile, int]]:
        return [(gi.profile, gi.start) for gi in self.gpu_instances]

    def profile(self, profile_id: int) -> Profile | None:
        return next((p for p in self.model.profiles if p.id == profile_id), None)

    @property
    def max_mig_devices(self) -> int:
        """``nvmlDeviceGetMaxMigDeviceCount``: one MIG device per compute slice at most; 0 MIG off."""
        return self.model.compute_slices if self.mig_current else 0

    @property
    def mig_devices(self) -> list[_ComputeInstance]:
        """The compute instances, whose MIG devices have indices 0, 1, ... in this order."""
        cis = [ci for gi in self.gpu_instances for ci in gi.compute_instances]
        return sorted(cis, key=lambda ci: (ci.gpu_instance.id, ci.id))


@dataclass
class _Refusal:
    function: str
    code: int
    times: int


# --- the fake

_Handler = Callable[..., int]
_C_FUNCTIONS: dict[str, tuple[str, tuple[Any, ...], bool]] = {}  # name -> (method, argtypes, needs init)


def _c_function(name: str, *argtypes: Any, needs_init: bool = True) -> Callable[[_Handler], _Handler]:
    """Register a method as the C function ``name`` of ``nvml.h`` with these ctypes arguments."""

    def register(method: _Handler) -> _Handler:
        _C_FUNCTIONS[name] = (method.__name__, argtypes, needs_init)
        return method

    return register


_P = ctypes.c_void_p  # any pointer argument: handles, out-parameters, structures, arrays
_U = ctypes.c_uint


class _Library:
    """What ``pynvml.nvmlLib`` becomes: the fake's C functions as attributes, nothing else."""

    def __init__(self, functions: dict[str, Any]) -> None:
        self.__dict__["_functions"] = functions

    def __getattr__(self, name: str) -> Any:
        try:
            return self.__dict__["_functions"][name]
        except KeyError:
            raise AttributeError(f"fake libnvidia-ml.so.1 has no symbol {name}") from None


class FakeNvml:
    """The state of a node's GPUs as NVML shows it, and the C library that reads and changes it.

    Parameters
    ----------
    devices
        The GPUs, NVML indices 0, 1, ... in order.
    driver_version
        What ``nvmlSystemGetDriverVersion`` returns.
    nvml_version
        What ``nvmlSystemGetNVMLVersion`` returns; ``12.<driver_version>`` by default.

    Attributes
    ----------
    calls
        Names of the C functions called, in order (refused and failed calls included).
    errors
        Tracebacks of exceptions raised inside callbacks; see :meth:`check`.
    """

    def __init__(
        self,
        devices: Sequence[FakeDevice] = (),
        *,
        driver_version: str = "550.54.15",
        nvml_version: str | None = None,
    ) -> None:
        self.calls: list[str] = []
        self.errors: list[str] = []
        self._refusals: list[_Refusal] = []
        self._handles = itertools.count(_HANDLE_START, _HANDLE_STEP)
        self._objects: dict[int, _Device | _GpuInstance | _ComputeInstance | _MigDevice] = {}
        self._devices: list[_Device] = []
        self._init_count = 0
        self._ever_initialized = False
        self._driver_version = ""
        self._nvml_version = ""
        self.set_driver_version(driver_version, nvml_version)
        for d in devices:
            self._load_device(_device_state(d))
        self._error_strings: dict[int, ctypes.Array[ctypes.c_char]] = {}
        functions = {name: self._bind(name, *spec) for name, spec in _C_FUNCTIONS.items()}
        functions["nvmlErrorString"] = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_int)(self._error_string)
        self._library = _Library(functions)

    # -- the library

    @property
    def library(self) -> Any:
        """The object to put in ``pynvml.nvmlLib`` (:func:`installed` does)."""
        return self._library

    def _bind(self, name: str, method: str, argtypes: tuple[Any, ...], needs_init: bool) -> Any:
        handler: _Handler = getattr(self, method)

        def call(*args: Any) -> int:
            self.calls.append(name)
            try:
                for refusal in self._refusals:
                    if refusal.function == name:
                        refusal.times -= 1
                        if not refusal.times:
                            self._refusals.remove(refusal)
                        return refusal.code
                if needs_init and not self._init_count:
                    return _UNINITIALIZED
                return handler(*args)
            except Exception:
                self.errors.append(f"{name}{args}:\n{traceback.format_exc()}")
                return _UNKNOWN

        return ctypes.CFUNCTYPE(ctypes.c_int, *argtypes)(call)

    def _error_string(self, code: int) -> int:
        # const char *nvmlErrorString(nvmlReturn_t): a static string; pynvml sets restype c_char_p
        self.calls.append("nvmlErrorString")
        if code not in self._error_strings:
            text = _ERROR_STRINGS.get(code, "Unknown Error")
            self._error_strings[code] = ctypes.create_string_buffer(text.encode())
        return ctypes.addressof(self._error_strings[code])

    # -- test API: failure injection and set-up

    def refuse(self, function: str, code: int, times: int = 1) -> None:
        """Make the next ``times`` calls of C function ``function`` return ``code`` and do nothing."""
        if function not in _C_FUNCTIONS:
            raise ValueError(f"the fake has no status-returning C function {function!r}")
        if times < 1:
            raise ValueError(f"times must be at least 1, got {times}")
        self._refusals.append(_Refusal(function, code, times))

    def mark_in_use(
        self, device_index: int, gi_id: int, ci_id: int | None = None, in_use: bool = True
    ) -> None:
        """Mark a GPU instance (or one of its compute instances) as used by a process: its destroy
        returns ``NVML_ERROR_IN_USE``."""
        gi = self._gpu_instance(device_index, gi_id)
        if ci_id is None:
            gi.in_use = in_use
            return
        ci = next((c for c in gi.compute_instances if c.id == ci_id), None)
        if ci is None:
            raise KeyError(f"device {device_index} GI {gi_id} has no compute instance {ci_id}")
        ci.in_use = in_use

    def set_driver_version(self, version: str, nvml_version: str | None = None) -> None:
        """Set what ``nvmlSystemGetDriverVersion`` (and ``...GetNVMLVersion``) return."""
        self._driver_version = version
        self._nvml_version = nvml_version or f"12.{version}"

    def set_mig_mode(self, device_index: int, current: bool, pending: bool | None = None) -> None:
        """Set a device's MIG mode; turning it off needs the device free of GPU instances."""
        device = self._device(device_index)
        if not current and device.gpu_instances:
            raise ValueError(f"device {device_index} has GPU instances: MIG mode cannot be off")
        device.mig_current = current
        device.mig_pending = current if pending is None else pending

    # -- test API: inspection

    def gpu_instances(self, device_index: int) -> list[tuple[int, int, int, int]]:
        """``(profile_id, start, gi_id, compute_instance_count)`` of each GPU instance, by start."""
        return [
            (gi.profile.id, gi.start, gi.id, len(gi.compute_instances))
            for gi in self._device(device_index).gpu_instances
        ]

    def compute_instances(self, device_index: int, gi_id: int) -> list[tuple[int, int, int]]:
        """``(ci_profile_id, start, ci_id)`` of each compute instance of a GPU instance, by start."""
        return sorted(
            (
                (ci.profile_id, ci.start, ci.id)
                for ci in self._gpu_instance(device_index, gi_id).compute_instances
            ),
            key=lambda ci: ci[1],
        )

    def mig_mode(self, device_index: int) -> tuple[bool, bool]:
        """``(current, pending)`` MIG mode of a device."""
        device = self._device(device_index)
        return device.mig_current, device.mig_pending

    def mig_uuid(self, device_index: int, gi_id: int, ci_id: int = 0) -> str:
        """The UUID ``nvmlDeviceGetUUID`` gives the MIG device of compute instance ``ci_id`` of GPU
        instance ``gi_id`` (whether or not it exists now): ``MIG-`` and a UUID that follows from the
        device's UUID and the two ids."""
        return _mig_uuid(self._device(device_index).uuid, gi_id, ci_id)

    def mutating_calls(self) -> list[str]:
        """The calls (in :attr:`calls`) of functions that change the GPU (:data:`MUTATING_FUNCTIONS`)."""
        return [name for name in self.calls if name in MUTATING_FUNCTIONS]

    def check(self) -> None:
        """Raise :class:`FakeNvmlError` if a callback failed (its call returned NVML_ERROR_UNKNOWN)."""
        if self.errors:
            raise FakeNvmlError(f"{len(self.errors)} fake NVML call(s) failed; the first:\n{self.errors[0]}")

    # -- JSON state

    def to_json(self) -> str:
        """The whole state as JSON: devices and instances, refusals, the call log, errors.

        Handles and the init count are not kept: a process that loads the state starts with
        NVML uninitialized and new handles, as a new process on a GPU node does.
        """
        state = {
            "format": _STATE_FORMAT,
            "version": 1,
            "driver_version": self._driver_version,
            "nvml_version": self._nvml_version,
            "devices": [_dump_device(d) for d in self._devices],
            "refusals": [{"function": r.function, "code": r.code, "times": r.times} for r in self._refusals],
            "calls": self.calls,
            "errors": self.errors,
        }
        return json.dumps(state, indent=1)

    @classmethod
    def from_json(cls, text: str) -> FakeNvml:
        """The fake :meth:`to_json` wrote."""
        state = json.loads(text)
        if state.get("format") != _STATE_FORMAT or state.get("version") != 1:
            raise ValueError(f"not a {_STATE_FORMAT} version 1 state")
        fake = cls(driver_version=state["driver_version"], nvml_version=state["nvml_version"])
        for d in state["devices"]:
            fake._load_device(d)
        for r in state["refusals"]:
            fake.refuse(r["function"], r["code"], r["times"])
        fake.calls = list(state["calls"])
        fake.errors = list(state["errors"])
        return fake

    def _load_device(self, d: dict[str, Any]) -> None:
        if d["index"] != len(self._devices):
            raise ValueError(f"device index {d['index']}: devices must be numbered 0, 1, ... in order")
        if any(other.uuid == d["uuid"] for other in self._devices):
            raise ValueError(f"device {d['index']}: duplicate UUID {d['uuid']!r}")
        model = get_model(d["model"])
        device = _Device(
            d["index"],
            d["uuid"],
            model,
            d["name"] or _product_name(model),
            d["mig_current"],
            d["mig_pending"],
            self._new_handle(),
        )
        self._objects[device.handle] = device
        self._devices.append(device)
        if d["gpu_instances"] and not device.mig_current:
            raise ValueError(f"device {device.index}: GPU instances with MIG mode off")
        for g in d["gpu_instances"]:
            profile = device.profile(g["profile_id"])
            where = f"device {device.index} GI {g['id']}"
            if profile is None:
                raise ValueError(f"{where}: {model.name} has no profile id {g['profile_id']}")
            if any(gi.id == g["id"] for gi in device.gpu_instances):
                raise ValueError(f"{where}: duplicate GPU instance id")
            if _admit_gpu_instance(model, device.placed, profile, g["start"]) != _OK:
                raise ValueError(f"{where}: {profile.name} cannot be at start {g['start']} here")
            gi = self._add_gpu_instance(device, profile, g["start"], g["id"])
            gi.in_use = g["in_use"]
            gi.next_ci_id = g["next_ci_id"]
            for c in g["compute_instances"]:
                if c["profile_id"] not in gi.offered or gi.admit(c["profile_id"], c["start"]) != _OK:
                    raise ValueError(
                        f"{where}: no compute instance of profile {c['profile_id']} at {c['start']}"
                    )
                self._add_compute_instance(gi, c["profile_id"], c["start"], c["id"]).in_use = c["in_use"]
        device.next_gi_id = max(device.next_gi_id, d["next_gi_id"])

    # -- objects and handles

    def _new_handle(self) -> int:
        return next(self._handles)

    def _device(self, index: int) -> _Device:
        if not 0 <= index < len(self._devices):
            raise KeyError(f"no device {index}")
        return self._devices[index]

    def _gpu_instance(self, device_index: int, gi_id: int) -> _GpuInstance:
        gi = next((g for g in self._device(device_index).gpu_instances if g.id == gi_id), None)
        if gi is None:
            raise KeyError(f"device {device_index} has no GPU instance {gi_id}")
        return gi

    def _add_gpu_instance(self, device: _Device, profile: Profile, start: int, gi_id: int) -> _GpuInstance:
        gi = _GpuInstance(device, gi_id, profile, start, self._new_handle())
        device.gpu_instances.append(gi)
        device.gpu_instances.sort(key=lambda g: g.start)
        device.next_gi_id = max(device.next_gi_id, gi_id + 1)
        self._objects[gi.handle] = gi
        return gi

    def _add_compute_instance(
        self, gi: _GpuInstance, profile_id: int, start: int, ci_id: int
    ) -> _ComputeInstance:
        ci = _ComputeInstance(gi, ci_id, profile_id, start, self._new_handle(), self._new_handle())
        gi.compute_instances.append(ci)
        gi.compute_instances.sort(key=lambda c: c.id)
        gi.next_ci_id = max(gi.next_ci_id, ci_id + 1)
        self._objects[ci.handle] = ci
        self._objects[ci.mig_handle] = _MigDevice(ci)
        return ci

    def _lookup_device(self, handle: int | None) -> _Device | None:
        found = self._objects.get(handle or 0)
        return found if isinstance(found, _Device) else None

    def _lookup_gpu_instance(self, handle: int | None) -> _GpuInstance | None:
        found = self._objects.get(handle or 0)
        return found if isinstance(found, _GpuInstance) else None

    def _lookup_compute_instance(self, handle: int | None) -> _ComputeInstance | None:
        found = self._objects.get(handle or 0)
        return found if isinstance(found, _ComputeInstance) else None

    def _lookup_mig_device(self, handle: int | None) -> _MigDevice | None:
        found = self._objects.get(handle or 0)
        return found if isinstance(found, _MigDevice) else None

    # -- C functions: library and system

    @_c_function("nvmlInit_v2", needs_init=False)
    def _init_v2(self) -> int:
        return self._init_with_flags(0)

    @_c_function("nvmlInitWithFlags", _U, needs_init=False)
    def _init_with_flags(self, flags: int) -> int:
        self._init_count += 1
        self._ever_initialized = True
        return _OK

    @_c_function("nvmlShutdown", needs_init=False)
    def _shutdown(self) -> int:
        if not self._ever_initialized:
            return _UNINITIALIZED
        self._init_count = max(0, self._init_count - 1)
        return _OK

    @_c_function("nvmlSystemGetDriverVersion", _P, _U)
    def _system_get_driver_version(self, version: int | None, length: int) -> int:
        return _put_string(version, length, self._driver_version)

    @_c_function("nvmlSystemGetNVMLVersion", _P, _U, needs_init=False)
    def _system_get_nvml_version(self, version: int | None, length: int) -> int:
        return _put_string(version, length, self._nvml_version)

    # -- C functions: devices

    @_c_function("nvmlDeviceGetCount_v2", _P)
    def _device_get_count(self, count: int | None) -> int:
        return _put(count, ctypes.c_uint, len(self._devices))

    @_c_function("nvmlDeviceGetHandleByIndex_v2", _U, _P)
    def _device_get_handle_by_index(self, index: int, device: int | None) -> int:
        if index >= len(self._devices):
            return _INVALID
        return _put(device, ctypes.c_void_p, self._devices[index].handle)

    @_c_function("nvmlDeviceGetHandleByUUID", ctypes.c_char_p, _P)
    def _device_get_handle_by_uuid(self, uuid: bytes | None, device: int | None) -> int:
        if uuid is None:
            return _INVALID
        found = next((d for d in self._devices if d.uuid == uuid.decode()), None)
        if found is None:
            return _NOT_FOUND
        return _put(device, ctypes.c_void_p, found.handle)

    @_c_function("nvmlDeviceGetUUID", _P, _P, _U)
    def _device_get_uuid(self, device: int | None, uuid: int | None, length: int) -> int:
        found = self._lookup_device(device)
        if found is not None:
            return _put_string(uuid, length, found.uuid)
        mig = self._lookup_mig_device(device)
        if mig is None:
            return _INVALID
        ci = mig.compute_instance
        return _put_string(uuid, length, _mig_uuid(mig.parent.uuid, ci.gpu_instance.id, ci.id))

    @_c_function("nvmlDeviceGetName", _P, _P, _U)
    def _device_get_name(self, device: int | None, name: int | None, length: int) -> int:
        found = self._lookup_device(device)
        return _INVALID if found is None else _put_string(name, length, found.name)

    @_c_function("nvmlDeviceGetIndex", _P, _P)
    def _device_get_index(self, device: int | None, index: int | None) -> int:
        found = self._lookup_device(device)
        return _INVALID if found is None else _put(index, ctypes.c_uint, found.index)

    @_c_function("nvmlDeviceGetMigMode", _P, _P, _P)
    def _device_get_mig_mode(self, device: int | None, current: int | None, pending: int | None) -> int:
        found = self._lookup_device(device)
        if found is None or current is None or pending is None:
            return _INVALID
        _put(current, ctypes.c_uint, int(found.mig_current))
        return _put(pending, ctypes.c_uint, int(found.mig_pending))

    # -- C functions: MIG devices

    @_c_function("nvmlDeviceGetMaxMigDeviceCount", _P, _P)
    def _device_get_max_mig_device_count(self, device: int | None, count: int | None) -> int:
        found = self._lookup_device(device)
        return _INVALID if found is None else _put(count, ctypes.c_uint, found.max_mig_devices)

    @_c_function("nvmlDeviceGetMigDeviceHandleByIndex", _P, _U, _P)
    def _device_get_mig_device_handle_by_index(
        self, device: int | None, index: int, mig_device: int | None
    ) -> int:
        found = self._lookup_device(device)
        if found is None or mig_device is None:
            return _INVALID
        if not found.mig_current:
            return _NOT_SUPPORTED
        if index >= found.max_mig_devices:
            return _INVALID
        existing = found.mig_devices
        if index >= len(existing):
            return _NOT_FOUND
        return _put(mig_device, ctypes.c_void_p, existing[index].mig_handle)

    @_c_function("nvmlDeviceIsMigDeviceHandle", _P, _P)
    def _device_is_mig_device_handle(self, device: int | None, is_mig_device: int | None) -> int:
        if self._lookup_device(device) is not None:
            return _put(is_mig_device, ctypes.c_uint, 0)
        if self._lookup_mig_device(device) is not None:
            return _put(is_mig_device, ctypes.c_uint, 1)
        return _INVALID

    @_c_function("nvmlDeviceGetGpuInstanceId", _P, _P)
    def _device_get_gpu_instance_id(self, device: int | None, gi_id: int | None) -> int:
        mig = self._lookup_mig_device(device)
        return _INVALID if mig is None else _put(gi_id, ctypes.c_uint, mig.compute_instance.gpu_instance.id)

    @_c_function("nvmlDeviceGetComputeInstanceId", _P, _P)
    def _device_get_compute_instance_id(self, device: int | None, ci_id: int | None) -> int:
        mig = self._lookup_mig_device(device)
        return _INVALID if mig is None else _put(ci_id, ctypes.c_uint, mig.compute_instance.id)

    @_c_function("nvmlDeviceGetDeviceHandleFromMigDeviceHandle", _P, _P)
    def _device_get_device_handle_from_mig_device_handle(
        self, mig_device: int | None, device: int | None
    ) -> int:
        mig = self._lookup_mig_device(mig_device)
        return _INVALID if mig is None else _put(device, ctypes.c_void_p, mig.parent.handle)

    # -- C functions: GPU-instance profiles

    def _gi_profile_info(self, device: int | None, profile: int, by_id: bool) -> Profile | int:
        """The profile a profile-info call asks about, or the code to return."""
        found = self._lookup_device(device)
        if found is None:
            return _INVALID
        if not found.mig_current:
            return _NOT_SUPPORTED
        if by_id:
            chosen = found.profile(profile)
            return _INVALID if chosen is None else chosen
        if profile >= pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT:
            return _INVALID
        return profile_constants(found.model.name).get(profile, _NOT_SUPPORTED)

    @_c_function("nvmlDeviceGetGpuInstanceProfileInfo", _P, _U, _P)
    def _device_get_gi_profile_info(self, device: int | None, profile: int, info: int | None) -> int:
        if info is None:
            return _INVALID
        chosen = self._gi_profile_info(device, profile, by_id=False)
        if isinstance(chosen, int):
            return chosen
        _fill_gi_profile(_GpuInstanceProfileInfo.from_address(info), chosen)
        return _OK

    @_c_function("nvmlDeviceGetGpuInstanceProfileInfoV", _P, _U, _P)
    def _device_get_gi_profile_info_v(self, device: int | None, profile: int, info: int | None) -> int:
        return self._gi_profile_info_v(device, profile, info, by_id=False)

    @_c_function("nvmlDeviceGetGpuInstanceProfileInfoByIdV", _P, _U, _P)
    def _device_get_gi_profile_info_by_id_v(
        self, device: int | None, profile_id: int, info: int | None
    ) -> int:
        return self._gi_profile_info_v(device, profile_id, info, by_id=True)

    def _gi_profile_info_v(self, device: int | None, profile: int, info: int | None, by_id: bool) -> int:
        if info is None:
            return _INVALID
        chosen = self._gi_profile_info(device, profile, by_id)
        if isinstance(chosen, int):
            return chosen
        out = _GpuInstanceProfileInfoV2.from_address(info)
        if out.version != GI_PROFILE_INFO_V2:
            return _INVALID
        _fill_gi_profile(out, chosen)
        out.name = f"MIG {chosen.name}".encode()
        return _OK

    @_c_function("nvmlDeviceGetGpuInstancePossiblePlacements_v2", _P, _U, _P, _P)
    def _device_get_gi_possible_placements(
        self, device: int | None, profile_id: int, placements: int | None, count: int | None
    ) -> int:
        found = self._lookup_device(device)
        if found is None or count is None:
            return _INVALID
        profile = found.profile(profile_id)
        if profile is None:
            return _NOT_SUPPORTED
        if placements is not None:
            out = (_Placement * len(profile.placements)).from_address(placements)
            for i, (start, size) in enumerate(profile.placements):
                out[i].start, out[i].size = start, size
        return _put(count, ctypes.c_uint, len(profile.placements))

    @_c_function("nvmlDeviceGetGpuInstanceRemainingCapacity", _P, _U, _P)
    def _device_get_gi_remaining_capacity(
        self, device: int | None, profile_id: int, count: int | None
    ) -> int:
        found = self._lookup_device(device)
        if found is None or count is None:
            return _INVALID
        profile = found.profile(profile_id)
        if not found.mig_current or profile is None:
            return _NOT_SUPPORTED
        placed = found.placed
        while (start := _free_gpu_instance_start(found.model, placed, profile)) is not None:
            placed.append((profile, start))
        return _put(count, ctypes.c_uint, len(placed) - len(found.gpu_instances))

    # -- C functions: GPU instances

    def _create_gpu_instance(
        self, device: int | None, profile_id: int, placement: tuple[int, int] | None, out: int | None
    ) -> int:
        found = self._lookup_device(device)
        if found is None or out is None:
            return _INVALID
        if not found.mig_current:
            return _NOT_SUPPORTED
        profile = found.profile(profile_id)
        if profile is None:
            return _INVALID
        if placement is None:
            start = _free_gpu_instance_start(found.model, found.placed, profile)
            if start is None:
                return _NO_RESOURCES
        else:
            start, size = placement
            if size != profile.memory_slots:
                return _INVALID
            code = _admit_gpu_instance(found.model, found.placed, profile, start)
            if code != _OK:
                return code
        gi = self._add_gpu_instance(found, profile, start, found.next_gi_id)
        return _put(out, ctypes.c_void_p, gi.handle)

    @_c_function("nvmlDeviceCreateGpuInstance", _P, _U, _P)
    def _device_create_gi(self, device: int | None, profile_id: int, gpu_instance: int | None) -> int:
        return self._create_gpu_instance(device, profile_id, None, gpu_instance)

    @_c_function("nvmlDeviceCreateGpuInstanceWithPlacement", _P, _U, _P, _P)
    def _device_create_gi_with_placement(
        self, device: int | None, profile_id: int, placement: int | None, gpu_instance: int | None
    ) -> int:
        if placement is None:
            return _INVALID
        requested = _Placement.from_address(placement)
        return self._create_gpu_instance(device, profile_id, (requested.start, requested.size), gpu_instance)

    @_c_function("nvmlGpuInstanceDestroy", _P)
    def _gi_destroy(self, gpu_instance: int | None) -> int:
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None:
            return _INVALID
        if gi.in_use or gi.compute_instances:
            return _IN_USE
        gi.device.gpu_instances.remove(gi)
        del self._objects[gi.handle]
        return _OK

    @_c_function("nvmlDeviceGetGpuInstances", _P, _U, _P, _P)
    def _device_get_gis(
        self, device: int | None, profile_id: int, gpu_instances: int | None, count: int | None
    ) -> int:
        found = self._lookup_device(device)
        if found is None or gpu_instances is None or count is None:
            return _INVALID
        if not found.mig_current:
            return _NOT_SUPPORTED
        if found.profile(profile_id) is None:
            return _INVALID
        return _put_handles(
            gpu_instances, count, [gi.handle for gi in found.gpu_instances if gi.profile.id == profile_id]
        )

    @_c_function("nvmlDeviceGetGpuInstanceById", _P, _U, _P)
    def _device_get_gi_by_id(self, device: int | None, gi_id: int, gpu_instance: int | None) -> int:
        found = self._lookup_device(device)
        if found is None or gpu_instance is None:
            return _INVALID
        if not found.mig_current:
            return _NOT_SUPPORTED
        gi = next((g for g in found.gpu_instances if g.id == gi_id), None)
        return _NOT_FOUND if gi is None else _put(gpu_instance, ctypes.c_void_p, gi.handle)

    @_c_function("nvmlGpuInstanceGetInfo", _P, _P)
    def _gi_get_info(self, gpu_instance: int | None, info: int | None) -> int:
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None or info is None:
            return _INVALID
        out = _GpuInstanceInfo.from_address(info)
        out.device, out.id, out.profileId = gi.device.handle, gi.id, gi.profile.id
        out.placement.start, out.placement.size = gi.start, gi.profile.memory_slots
        return _OK

    # -- C functions: compute instances

    def _ci_profile_info(
        self, gpu_instance: int | None, profile: int, eng_profile: int
    ) -> tuple[_GpuInstance, int] | int:
        """The GPU instance and compute-instance profile a profile-info call asks about, or a code."""
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None or profile >= pynvml.NVML_COMPUTE_INSTANCE_PROFILE_COUNT:
            return _INVALID
        if eng_profile >= pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT:
            return _INVALID
        return (gi, profile) if profile in gi.offered else _NOT_SUPPORTED

    @_c_function("nvmlGpuInstanceGetComputeInstanceProfileInfo", _P, _U, _U, _P)
    def _gi_get_ci_profile_info(
        self, gpu_instance: int | None, profile: int, eng_profile: int, info: int | None
    ) -> int:
        if info is None:
            return _INVALID
        chosen = self._ci_profile_info(gpu_instance, profile, eng_profile)
        if isinstance(chosen, int):
            return chosen
        _fill_ci_profile(_ComputeInstanceProfileInfo.from_address(info), *chosen)
        return _OK

    @_c_function("nvmlGpuInstanceGetComputeInstanceProfileInfoV", _P, _U, _U, _P)
    def _gi_get_ci_profile_info_v(
        self, gpu_instance: int | None, profile: int, eng_profile: int, info: int | None
    ) -> int:
        if info is None:
            return _INVALID
        chosen = self._ci_profile_info(gpu_instance, profile, eng_profile)
        if isinstance(chosen, int):
            return chosen
        out = _ComputeInstanceProfileInfoV2.from_address(info)
        if out.version != CI_PROFILE_INFO_V2:
            return _INVALID
        gi, ci_profile = chosen
        _fill_ci_profile(out, gi, ci_profile)
        out.name = _ci_name(_CI_SLICES[ci_profile], gi.profile).encode()
        return _OK

    @_c_function("nvmlGpuInstanceGetComputeInstanceRemainingCapacity", _P, _U, _P)
    def _gi_get_ci_remaining_capacity(
        self, gpu_instance: int | None, profile_id: int, count: int | None
    ) -> int:
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None or count is None:
            return _INVALID
        if profile_id not in gi.offered:
            return _NOT_SUPPORTED
        slices = _CI_SLICES[profile_id]
        starts = range(0, gi.profile.compute - slices + 1, slices)
        used = {s for ci in gi.compute_instances for s in ci.slices}
        free = sum(not used & set(range(s, s + slices)) for s in starts)
        existing = sum(ci.profile_id == profile_id for ci in gi.compute_instances)
        return _put(count, ctypes.c_uint, min(free, gi.profile.compute // slices - existing))

    @_c_function("nvmlGpuInstanceCreateComputeInstance", _P, _U, _P)
    def _gi_create_ci(self, gpu_instance: int | None, profile_id: int, compute_instance: int | None) -> int:
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None or compute_instance is None:
            return _INVALID
        if profile_id not in gi.offered:
            return _NOT_SUPPORTED
        start = gi.free_start(profile_id)
        if start is None:
            return _NO_RESOURCES
        ci = self._add_compute_instance(gi, profile_id, start, gi.next_ci_id)
        return _put(compute_instance, ctypes.c_void_p, ci.handle)

    @_c_function("nvmlComputeInstanceDestroy", _P)
    def _ci_destroy(self, compute_instance: int | None) -> int:
        ci = self._lookup_compute_instance(compute_instance)
        if ci is None:
            return _INVALID
        if ci.in_use:
            return _IN_USE
        ci.gpu_instance.compute_instances.remove(ci)
        del self._objects[ci.handle], self._objects[ci.mig_handle]  # its MIG device goes with it
        return _OK

    @_c_function("nvmlGpuInstanceGetComputeInstances", _P, _U, _P, _P)
    def _gi_get_cis(
        self, gpu_instance: int | None, profile_id: int, compute_instances: int | None, count: int | None
    ) -> int:
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None or compute_instances is None or count is None:
            return _INVALID
        if profile_id not in gi.offered:
            return _NOT_SUPPORTED
        return _put_handles(
            compute_instances,
            count,
            [ci.handle for ci in gi.compute_instances if ci.profile_id == profile_id],
        )

    @_c_function("nvmlGpuInstanceGetComputeInstanceById", _P, _U, _P)
    def _gi_get_ci_by_id(self, gpu_instance: int | None, ci_id: int, compute_instance: int | None) -> int:
        gi = self._lookup_gpu_instance(gpu_instance)
        if gi is None or compute_instance is None:
            return _INVALID
        ci = next((c for c in gi.compute_instances if c.id == ci_id), None)
        return _NOT_FOUND if ci is None else _put(compute_instance, ctypes.c_void_p, ci.handle)

    @_c_function("nvmlComputeInstanceGetInfo_v2", _P, _P)
    def _ci_get_info(self, compute_instance: int | None, info: int | None) -> int:
        ci = self._lookup_compute_instance(compute_instance)
        if ci is None or info is None:
            return _INVALID
        out = _ComputeInstanceInfo.from_address(info)
        out.device, out.gpuInstance = ci.gpu_instance.device.handle, ci.gpu_instance.handle
        out.id, out.profileId = ci.id, ci.profile_id
        out.placement.start, out.placement.size = ci.start, _CI_SLICES[ci.profile_id]
        return _OK


# --- helpers of the C functions


def _put(address: int | None, ctype: Any, value: int) -> int:
    """Store ``value`` through an out-pointer; NVML_ERROR_INVALID_ARGUMENT if it is NULL."""
    if address is None:
        return _INVALID
    ctype.from_address(address).value = value
    return _OK


def _put_string(address: int | None, length: int, text: str) -> int:
    """Copy ``text`` and its NUL into a caller's ``char[length]``, as the NVML string getters do."""
    if address is None:
        return _INVALID
    data = text.encode() + b"\0"
    if len(data) > length:
        return _INSUFFICIENT_SIZE
    ctypes.memmove(address, data, len(data))
    return _OK


def _mig_uuid(device_uuid: str, gi_id: int, ci_id: int) -> str:
    """``MIG-`` and a version-5 UUID of the legacy MIG device name ``MIG-<GPU uuid>/<gi>/<ci>``."""
    return f"MIG-{uuid.uuid5(_MIG_UUID_NAMESPACE, f'MIG-{device_uuid}/{gi_id}/{ci_id}')}"


def _put_handles(array: int, count: int, handles: list[int]) -> int:
    out = (ctypes.c_void_p * len(handles)).from_address(array)
    for i, handle in enumerate(handles):
        out[i] = handle
    return _put(count, ctypes.c_uint, len(handles))


def _fill_gi_profile(out: _GpuInstanceProfileInfo | _GpuInstanceProfileInfoV2, profile: Profile) -> None:
    out.id = profile.id
    out.sliceCount = profile.compute
    out.instanceCount = profile.max_instances
    out.memorySizeMB = round(profile.memory_gb * 1024)


def _fill_ci_profile(
    out: _ComputeInstanceProfileInfo | _ComputeInstanceProfileInfoV2, gi: _GpuInstance, ci_profile: int
) -> None:
    out.id = ci_profile
    out.sliceCount = _CI_SLICES[ci_profile]
    out.instanceCount = gi.profile.compute // _CI_SLICES[ci_profile]


def _product_name(model: GpuModel) -> str:
    return next((p.names[0] for p in products() if p.model == model.name), f"NVIDIA {model.name}")


def _device_state(d: FakeDevice) -> dict[str, Any]:
    """A :class:`FakeDevice` in the JSON form of a device, each GPU instance with its default CI."""
    model = get_model(d.model)
    gpu_instances = []
    for profile_id, start, gi_id in d.instances:
        profile = model.find(profile_id)
        if profile is None:
            raise ValueError(f"device {d.index}: {model.name} has no profile id {profile_id}")
        full = next(c for c in CI_PROFILES_OFFERED[profile.compute] if _CI_SLICES[c] == profile.compute)
        ci = {"id": 0, "profile_id": full, "start": 0, "in_use": False}
        gpu_instances.append(
            {
                "id": gi_id,
                "profile_id": profile_id,
                "start": start,
                "in_use": False,
                "next_ci_id": 1,
                "compute_instances": [ci],
            }
        )
    return {
        "index": d.index,
        "uuid": d.uuid,
        "model": model.name,
        "name": d.name,
        "mig_current": d.mig,
        "mig_pending": d.mig if d.pending_mig is None else d.pending_mig,
        "next_gi_id": max((gi_id + 1 for _, _, gi_id in d.instances), default=1),
        "gpu_instances": gpu_instances,
    }


def _dump_device(device: _Device) -> dict[str, Any]:
    return {
        "index": device.index,
        "uuid": device.uuid,
        "model": device.model.name,
        "name": device.name,
        "mig_current": device.mig_current,
        "mig_pending": device.mig_pending,
        "next_gi_id": device.next_gi_id,
        "gpu_instances": [
            {
                "id": gi.id,
                "profile_id": gi.profile.id,
                "start": gi.start,
                "in_use": gi.in_use,
                "next_ci_id": gi.next_ci_id,
                "compute_instances": [
                    {"id": ci.id, "profile_id": ci.profile_id, "start": ci.start, "in_use": ci.in_use}
                    for ci in gi.compute_instances
                ],
            }
            for gi in device.gpu_instances
        ],
    }


# --- installing into pynvml, in process and in a subprocess


@contextmanager
def installed(fake: FakeNvml, *, check: bool = True) -> Iterator[FakeNvml]:
    """Run the real ``pynvml`` on ``fake`` inside the ``with`` block.

    Sets ``pynvml.nvmlLib`` to :attr:`FakeNvml.library`, empties pynvml's function-pointer
    cache and zeroes its init refcount (``_nvmlLib_refcount``); restores all three afterwards.
    With ``check``, raises :class:`FakeNvmlError` at the end if a callback failed.
    """
    saved_lib, saved_cache, saved_refcount = (
        pynvml.nvmlLib,
        dict(pynvml._nvmlGetFunctionPointer_cache),
        pynvml._nvmlLib_refcount,
    )
    pynvml.nvmlLib = fake.library
    pynvml._nvmlGetFunctionPointer_cache.clear()
    pynvml._nvmlLib_refcount = 0
    try:
        yield fake
    finally:
        pynvml.nvmlLib = saved_lib
        pynvml._nvmlGetFunctionPointer_cache.clear()
        pynvml._nvmlGetFunctionPointer_cache.update(saved_cache)
        pynvml._nvmlLib_refcount = saved_refcount
    if check:
        fake.check()


def bootstrap(state: Path, script: Path, args: Sequence[str]) -> int:
    """Run ``script`` as ``__main__`` with ``args`` on the fake stored in ``state``; write it back.

    The final state (call log and callback errors included) is written even when the script
    fails. Returns the script's exit status; an exception from the script propagates.
    """
    fake = FakeNvml.from_json(state.read_text())
    saved_argv, saved_path0 = sys.argv, sys.path[0]
    sys.argv = [str(script), *args]
    sys.path[0] = str(script.resolve().parent)  # as `python SCRIPT` sets it
    status = 0
    try:
        with installed(fake, check=False):
            try:
                runpy.run_path(str(script), run_name="__main__")
            except SystemExit as exit_:
                status = _exit_status(exit_.code)
    finally:
        sys.argv, sys.path[0] = saved_argv, saved_path0
        state.write_text(fake.to_json())
    return status


def _exit_status(code: object) -> int:
    """The process exit status of ``sys.exit(code)``."""
    if code is None:
        return 0
    if isinstance(code, int):
        return code
    print(code, file=sys.stderr)
    return 1


def run_script_with_fake(
    script: str | Path,
    argv: Sequence[str],
    fake: FakeNvml,
    *,
    cwd: str | Path | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 120,
) -> tuple[subprocess.CompletedProcess[str], FakeNvml]:
    """Run ``python SCRIPT ARGV...`` in a subprocess on a copy of ``fake``.

    Returns the finished process (text output captured) and the fake's final state. Raises
    :class:`FakeNvmlError` if a callback failed in the subprocess.
    """
    with tempfile.TemporaryDirectory(prefix="fake-nvml-") as tmp:
        state = Path(tmp) / "state.json"
        state.write_text(fake.to_json())
        command = [sys.executable, str(Path(__file__).resolve()), str(state), str(script), *argv]
        proc = subprocess.run(
            command, capture_output=True, text=True, cwd=cwd, env=env, timeout=timeout, check=False
        )
        final = FakeNvml.from_json(state.read_text())
    final.check()
    return proc, final


def main(argv: Sequence[str] | None = None) -> int:
    """``python fake_nvml.py STATE.json SCRIPT.py [ARGS...]``: :func:`bootstrap` from the command line."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) < 2:
        print("usage: fake_nvml.py STATE.json SCRIPT.py [ARGS...]", file=sys.stderr)
        return 2
    return bootstrap(Path(args[0]), Path(args[1]), args[2:])


if __name__ == "__main__":
    sys.exit(main())
