"""The fake NVML library under the real ``pynvml``: values read back, refusals, injection, subprocess."""

from __future__ import annotations

import ctypes
import json
import re
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pynvml
import pytest
from fakes.fake_nvml import (
    CI_PROFILE_INFO_V2,
    GI_PROFILE_INFO_V2,
    FakeDevice,
    FakeNvml,
    FakeNvmlError,
    installed,
    profile_constants,
    run_script_with_fake,
)

A100 = "A100-40GB"
P_1G, P_1G_ME, P_2G, P_3G, P_4G, P_7G = 19, 20, 14, 9, 5, 0  # A100-40GB -lgip profile ids


def _two_gpus() -> FakeNvml:
    """An A100-40GB with MIG on and a 3g.20gb at start 4 (GI 2), and an H100 with MIG off."""
    return FakeNvml(
        [
            FakeDevice(0, "GPU-aaaa", A100, instances=[(P_3G, 4, 2)]),
            FakeDevice(1, "GPU-bbbb", "H100-80GB", mig=False, pending_mig=True),
        ]
    )


@pytest.fixture
def fake() -> Iterator[FakeNvml]:
    """:func:`_two_gpus` installed under pynvml, between nvmlInit and nvmlShutdown."""
    fake = _two_gpus()
    with installed(fake):
        pynvml.nvmlInit()
        yield fake
        pynvml.nvmlShutdown()


def _address(handle: Any) -> int:
    """The pointer value of an NVML handle."""
    value = ctypes.cast(handle, ctypes.c_void_p).value
    assert value
    return value


def _create(device: Any, profile_id: int, start: int, size: int) -> Any:
    placement = pynvml.c_nvmlGpuInstancePlacement_t()
    placement.start, placement.size = start, size
    return pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(device, profile_id, ctypes.byref(placement))


def _gpu_instances(device: Any, profile_id: int) -> list[Any]:
    found = (pynvml.c_nvmlGpuInstance_t * 8)()
    count = ctypes.c_uint(0)
    assert pynvml.nvmlDeviceGetGpuInstances(device, profile_id, found, ctypes.byref(count)) == 0
    return [found[i] for i in range(count.value)]


def _compute_instances(gi: Any, ci_profile_id: int) -> list[Any]:
    found = (pynvml.c_nvmlComputeInstance_t * 8)()
    count = ctypes.c_uint(0)
    assert pynvml.nvmlGpuInstanceGetComputeInstances(gi, ci_profile_id, found, ctypes.byref(count)) == 0
    return [found[i] for i in range(count.value)]


def _default_ci_profile(gi: Any, compute: int) -> int:
    constant = getattr(pynvml, f"NVML_COMPUTE_INSTANCE_PROFILE_{compute}_SLICE")
    info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, constant, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
    )
    return int(info.id)


# --- the binding in use


def test_the_real_pynvml_resolves_the_fakes_functions(fake: FakeNvml) -> None:
    assert pynvml.nvmlLib is fake.library
    assert pynvml._nvmlGetFunctionPointer("nvmlDeviceGetCount_v2") is fake.library.nvmlDeviceGetCount_v2
    assert ctypes.cast(fake.library.nvmlDeviceGetCount_v2, ctypes.c_void_p).value  # a C function pointer
    assert pynvml.nvmlDeviceGetCount() == 2


def test_structure_layouts_match_pynvml() -> None:
    # the fake writes its own transcriptions of nvml.h; pynvml reads through its own
    assert GI_PROFILE_INFO_V2 == pynvml.nvmlGpuInstanceProfileInfo_v2 == 0x02000098
    assert CI_PROFILE_INFO_V2 == pynvml.nvmlComputeInstanceProfileInfo_v2 == 0x02000088
    assert ctypes.sizeof(pynvml.c_nvmlGpuInstanceInfo_t) == 24
    assert ctypes.sizeof(pynvml.c_nvmlComputeInstanceInfo_t) == 32


def test_installed_restores_pynvml() -> None:
    before = (pynvml.nvmlLib, dict(pynvml._nvmlGetFunctionPointer_cache), pynvml._nvmlLib_refcount)
    fake = _two_gpus()
    with installed(fake):
        pynvml.nvmlInit()
        assert pynvml._nvmlLib_refcount == 1
    after = (pynvml.nvmlLib, dict(pynvml._nvmlGetFunctionPointer_cache), pynvml._nvmlLib_refcount)
    assert after == before


def test_wrong_argument_count_fails_in_the_real_wrapper(fake: FakeNvml) -> None:
    gi = pynvml.nvmlDeviceGetGpuInstanceById(pynvml.nvmlDeviceGetHandleByIndex(0), 2)
    with pytest.raises(TypeError, match="computeInstancesRef"):
        pynvml.nvmlGpuInstanceGetComputeInstances(gi, 2)
    assert "nvmlGpuInstanceGetComputeInstances" not in fake.calls


def test_a_structure_passed_by_value_is_refused_by_ctypes(fake: FakeNvml) -> None:
    placement = pynvml.c_nvmlGpuInstancePlacement_t()
    placement.start, placement.size = 0, 4
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(ctypes.ArgumentError):
        pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(device, P_3G, placement)
    assert fake.gpu_instances(0) == [(P_3G, 4, 2, 1)]


def test_a_missing_function_is_function_not_found(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceGetPowerUsage(device)
    with pytest.raises(pynvml.NVMLError_FunctionNotFound):
        pynvml.nvmlDeviceSetMigMode(device, pynvml.NVML_DEVICE_MIG_DISABLE)


def test_calls_before_init_are_uninitialized() -> None:
    with installed(_two_gpus()) as fake:
        with pytest.raises(pynvml.NVMLError_Uninitialized):
            pynvml.nvmlDeviceGetCount()
        with pytest.raises(pynvml.NVMLError_Uninitialized):
            pynvml.nvmlShutdown()
        pynvml.nvmlInit()
        pynvml.nvmlShutdown()
        with pytest.raises(pynvml.NVMLError_Uninitialized):
            pynvml.nvmlDeviceGetHandleByIndex(0)
        pynvml.nvmlShutdown()  # more shutdowns than inits: no error, as nvml.h says
    assert fake.calls[:3] == ["nvmlDeviceGetCount_v2", "nvmlShutdown", "nvmlInitWithFlags"]


# --- system and devices


def test_system_and_device_queries(fake: FakeNvml) -> None:
    assert pynvml.nvmlSystemGetDriverVersion() == "550.54.15"
    assert pynvml.nvmlSystemGetNVMLVersion() == "12.550.54.15"
    fake.set_driver_version("570.86.15")
    assert pynvml.nvmlSystemGetDriverVersion() == "570.86.15"
    by_uuid = pynvml.nvmlDeviceGetHandleByUUID("GPU-bbbb")
    assert _address(by_uuid) == _address(pynvml.nvmlDeviceGetHandleByIndex(1))
    assert pynvml.nvmlDeviceGetIndex(by_uuid) == 1
    assert pynvml.nvmlDeviceGetUUID(by_uuid) == "GPU-bbbb"
    assert pynvml.nvmlDeviceGetName(by_uuid) == "NVIDIA H100 80GB HBM3"
    assert pynvml.nvmlDeviceGetMigMode(by_uuid) == [0, 1]
    assert pynvml.nvmlDeviceGetMigMode(pynvml.nvmlDeviceGetHandleByIndex(0)) == [1, 1]
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetHandleByUUID("GPU-cccc")
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetHandleByIndex(2)


def test_error_strings() -> None:
    with installed(_two_gpus()) as fake:
        assert pynvml.nvmlErrorString(pynvml.NVML_ERROR_IN_USE) == "In use by another client"
        assert pynvml.nvmlErrorString(pynvml.NVML_ERROR_INSUFFICIENT_RESOURCES) == "Insufficient Resources"
        assert pynvml.nvmlErrorString(pynvml.NVML_ERROR_NOT_FOUND) == "Not Found"
    assert fake.calls == ["nvmlErrorString"] * 3


# --- GPU-instance profiles


def test_profile_constants_follow_the_catalog() -> None:
    names = {c: p.name for c, p in profile_constants(A100).items()}
    assert names == {
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE: "1g.5gb",
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV1: "1g.5gb+me",
        pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2: "1g.10gb",
        pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE: "2g.10gb",
        pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE: "3g.20gb",
        pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE: "4g.20gb",
        pynvml.NVML_GPU_INSTANCE_PROFILE_7_SLICE: "7g.40gb",
    }
    rtx = {p.name: c for c, p in profile_constants("RTX-PRO-6000-Blackwell-96GB").items()}
    assert rtx["1g.24gb+me.all"] == pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_ALL_ME
    assert rtx["2g.48gb-me"] == pynvml.NVML_GPU_INSTANCE_PROFILE_2_SLICE_NO_ME
    assert rtx["4g.96gb+gfx"] == pynvml.NVML_GPU_INSTANCE_PROFILE_4_SLICE_GFX


def test_gpu_instance_profile_info_takes_the_constant_and_gives_the_lgip_id(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    info = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(device, pynvml.NVML_GPU_INSTANCE_PROFILE_1_SLICE_REV2)
    assert (info.id, info.sliceCount, info.instanceCount, info.memorySizeMB, info.name) == (
        15,
        1,
        4,
        10240,
        "MIG 1g.10gb",
    )
    v1 = pynvml.nvmlDeviceGetGpuInstanceProfileInfo(
        device, pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE, version=1
    )
    assert (v1.id, v1.sliceCount, v1.instanceCount) == (P_3G, 3, 2)
    by_id = pynvml.nvmlDeviceGetGpuInstanceProfileInfoById(device, P_7G)
    assert (by_id.id, by_id.sliceCount, by_id.name) == (P_7G, 7, "MIG 7g.40gb")
    with pytest.raises(pynvml.NVMLError_NotSupported):  # a constant this model has no profile for
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(device, pynvml.NVML_GPU_INSTANCE_PROFILE_6_SLICE)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):  # past the constants: the end of enumeration
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(device, pynvml.NVML_GPU_INSTANCE_PROFILE_COUNT)
    assert fake.calls[-5:] == [
        "nvmlDeviceGetGpuInstanceProfileInfoV",
        "nvmlDeviceGetGpuInstanceProfileInfo",
        "nvmlDeviceGetGpuInstanceProfileInfoByIdV",
        "nvmlDeviceGetGpuInstanceProfileInfoV",
        "nvmlDeviceGetGpuInstanceProfileInfoV",
    ]


def test_a_v2_call_needs_the_version_field(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    unversioned = ctypes.create_string_buffer(ctypes.sizeof(pynvml.c_nvmlGpuInstanceProfileInfo_v2_t))
    code = fake.library.nvmlDeviceGetGpuInstanceProfileInfoV(device, 2, unversioned)
    assert code == pynvml.NVML_ERROR_INVALID_ARGUMENT


def test_possible_placements_and_remaining_capacity(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    placements = (pynvml.c_nvmlGpuInstancePlacement_t * 8)()
    count = ctypes.c_uint(0)
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(device, P_2G, placements, ctypes.byref(count))
    assert [(placements[i].start, placements[i].size) for i in range(count.value)] == [(0, 2), (2, 2), (4, 2)]
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(device, P_7G, None, ctypes.byref(count))
    assert count.value == 1
    # the 3g.20gb at 4 leaves slots 0-3: two 2g.10gb, four 1g.5gb, one 3g.20gb, no 7g.40gb
    remaining = {
        p: pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(device, p) for p in (P_2G, P_1G, P_3G, P_7G)
    }
    assert remaining == {P_2G: 2, P_1G: 4, P_3G: 1, P_7G: 0}


# --- GPU instances


def test_create_with_placement_and_read_back(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    gi = _create(device, P_2G, 2, 2)
    info = pynvml.nvmlGpuInstanceGetInfo(gi)
    assert (info.profileId, info.placement.start, info.placement.size, info.id) == (P_2G, 2, 2, 3)
    assert _address(info.device) == _address(device)
    assert _address(pynvml.nvmlDeviceGetGpuInstanceById(device, 3)) == _address(gi)
    assert fake.gpu_instances(0) == [(P_2G, 2, 3, 0), (P_3G, 4, 2, 1)]
    assert fake.mutating_calls() == ["nvmlDeviceCreateGpuInstanceWithPlacement"]


def test_list_by_profile(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    _create(device, P_1G, 0, 1)
    _create(device, P_1G, 1, 1)
    listed = [pynvml.nvmlGpuInstanceGetInfo(gi) for gi in _gpu_instances(device, P_1G)]
    assert [(i.profileId, i.placement.start, i.id) for i in listed] == [(P_1G, 0, 3), (P_1G, 1, 4)]
    assert [pynvml.nvmlGpuInstanceGetInfo(gi).id for gi in _gpu_instances(device, P_3G)] == [2]
    assert _gpu_instances(device, P_7G) == []


def test_overlap_and_limits(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        _create(device, P_2G, 4, 2)  # slots 4-5 belong to the 3g.20gb
    _create(device, P_1G_ME, 0, 1)
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        _create(device, P_1G_ME, 1, 1)  # one media extension per GPU
    assert fake.gpu_instances(0) == [(P_1G_ME, 0, 3, 0), (P_3G, 4, 2, 1)]


def test_illegal_placement_is_invalid_argument(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        _create(device, P_3G, 2, 4)  # 3g.20gb starts at 0 or 4
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        _create(device, P_3G, 0, 2)  # the size is the profile's
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        _create(device, 99, 0, 1)  # no such profile id
    assert fake.gpu_instances(0) == [(P_3G, 4, 2, 1)]


def test_create_without_placement_takes_the_highest_free_start() -> None:
    # NVIDIA's MIG user guide: `nvidia-smi mig -cgi 19,14,5` places 1g at 6, 2g at 4, 4g at 0
    fake = FakeNvml([FakeDevice(0, "GPU-aaaa", A100)])
    with installed(fake):
        pynvml.nvmlInit()
        device = pynvml.nvmlDeviceGetHandleByIndex(0)
        starts = [
            pynvml.nvmlGpuInstanceGetInfo(pynvml.nvmlDeviceCreateGpuInstance(device, p)).placement.start
            for p in (P_1G, P_2G, P_4G)
        ]
        with pytest.raises(pynvml.NVMLError_InsufficientResources):
            pynvml.nvmlDeviceCreateGpuInstance(device, P_1G)
        pynvml.nvmlShutdown()
    assert starts == [6, 4, 0]


def test_ids_are_not_reused() -> None:
    fake = FakeNvml([FakeDevice(0, "GPU-aaaa", A100)])
    with installed(fake):
        pynvml.nvmlInit()
        device = pynvml.nvmlDeviceGetHandleByIndex(0)
        first = _create(device, P_7G, 0, 8)
        pynvml.nvmlGpuInstanceDestroy(first)
        second = _create(device, P_7G, 0, 8)
        assert pynvml.nvmlGpuInstanceGetInfo(second).id == 2
        with pytest.raises(pynvml.NVMLError_InvalidArgument):  # the destroyed instance's handle
            pynvml.nvmlGpuInstanceGetInfo(first)
        with pytest.raises(pynvml.NVMLError_NotFound):
            pynvml.nvmlDeviceGetGpuInstanceById(device, 1)
        pynvml.nvmlShutdown()


def test_mig_disabled_is_not_supported(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(1)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        _create(device, P_3G, 0, 4)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetGpuInstanceProfileInfo(device, pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        _gpu_instances(device, P_3G)
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetGpuInstanceById(device, 1)
    count = ctypes.c_uint(0)  # placements are listed whatever the mode (nvml.h)
    pynvml.nvmlDeviceGetGpuInstancePossiblePlacements(device, P_3G, None, ctypes.byref(count))
    assert count.value == 2
    fake.set_mig_mode(1, True)
    assert pynvml.nvmlGpuInstanceGetInfo(_create(device, P_3G, 0, 4)).placement.start == 0


# --- compute instances


def test_compute_instances_four_argument_list_and_destroy_order(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    gi = pynvml.nvmlDeviceGetGpuInstanceById(device, 2)
    full = _default_ci_profile(gi, 3)
    assert full == pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE
    (ci,) = _compute_instances(gi, full)
    info = pynvml.nvmlComputeInstanceGetInfo(ci)
    assert (info.id, info.profileId, info.placement.start, info.placement.size) == (0, full, 0, 3)
    assert _address(info.gpuInstance) == _address(gi) and _address(info.device) == _address(device)
    assert _compute_instances(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE) == []
    with pytest.raises(pynvml.NVMLError_InUse):  # a compute instance is on it
        pynvml.nvmlGpuInstanceDestroy(gi)
    pynvml.nvmlComputeInstanceDestroy(ci)
    pynvml.nvmlGpuInstanceDestroy(gi)
    assert fake.gpu_instances(0) == []
    assert fake.mutating_calls() == [
        "nvmlGpuInstanceDestroy",
        "nvmlComputeInstanceDestroy",
        "nvmlGpuInstanceDestroy",
    ]


def test_compute_instance_profiles_and_creation(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    gi = _create(device, P_4G, 0, 4)
    shared = pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
    info = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
        gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE, shared
    )
    assert (info.id, info.sliceCount, info.instanceCount, info.name) == (1, 2, 2, "MIG 2c.4g.20gb")
    for larger_or_missing in (
        pynvml.NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE,
        pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE,
    ):
        with pytest.raises(pynvml.NVMLError_NotSupported):
            pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(gi, larger_or_missing, shared)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
            gi, info.id, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_COUNT
        )
    first, second = (pynvml.nvmlGpuInstanceCreateComputeInstance(gi, info.id) for _ in range(2))
    assert [pynvml.nvmlComputeInstanceGetInfo(c).placement.start for c in (first, second)] == [0, 2]
    assert pynvml.nvmlGpuInstanceGetComputeInstanceRemainingCapacity(gi, info.id) == 0
    with pytest.raises(pynvml.NVMLError_InsufficientResources):
        pynvml.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE)
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 5)
    assert _address(pynvml.nvmlGpuInstanceGetComputeInstanceById(gi, 1)) == _address(second)
    assert fake.compute_instances(0, 3) == [(1, 0, 0), (1, 2, 1)]


# --- MIG devices


def _mig_uuid_of(device: Any, gi_id: int) -> str | None:
    """The emitted script's loop: the UUID of the MIG device of GPU instance ``gi_id``, or None."""
    for index in range(pynvml.nvmlDeviceGetMaxMigDeviceCount(device)):
        try:
            mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, index)
        except pynvml.NVMLError:
            continue
        if pynvml.nvmlDeviceGetGpuInstanceId(mig) == gi_id:
            return pynvml.nvmlDeviceGetUUID(mig)
    return None


def test_mig_uuid_is_deterministic() -> None:
    fake, again = _two_gpus(), _two_gpus()
    uuid = fake.mig_uuid(0, 2)
    assert re.fullmatch(r"MIG-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", uuid)
    assert uuid == again.mig_uuid(0, 2, 0) == FakeNvml.from_json(fake.to_json()).mig_uuid(0, 2)
    others = {fake.mig_uuid(0, 2, 1), fake.mig_uuid(0, 3), fake.mig_uuid(1, 2)}
    assert uuid not in others and len(others) == 3
    with pytest.raises(KeyError):
        fake.mig_uuid(2, 2)


def test_the_emitted_loop_finds_the_mig_device_of_a_gpu_instance(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    gi = _create(device, P_2G, 0, 2)  # GI 3, before GI 2 in placement order
    pynvml.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE)
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(device) == 7  # A100: 7 compute slices
    assert _mig_uuid_of(device, 2) == fake.mig_uuid(0, 2, 0)
    assert _mig_uuid_of(device, 3) == fake.mig_uuid(0, 3, 0)
    assert _mig_uuid_of(device, 4) is None
    # indices 0, 1 in (GI id, CI id) order; the rest up to the maximum have no MIG device
    first, second = (pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, i) for i in range(2))
    assert [pynvml.nvmlDeviceGetGpuInstanceId(m) for m in (first, second)] == [2, 3]
    assert [pynvml.nvmlDeviceGetComputeInstanceId(m) for m in (first, second)] == [0, 0]
    for index in range(2, 7):
        with pytest.raises(pynvml.NVMLError_NotFound):
            pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, index)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):  # past the maximum
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 7)
    assert pynvml.nvmlDeviceIsMigDeviceHandle(first).value == 1
    assert pynvml.nvmlDeviceIsMigDeviceHandle(device).value == 0
    parent = pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(second)
    assert _address(parent) == _address(device)
    assert _address(pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)) == _address(first)
    assert fake.mutating_calls() == [
        "nvmlDeviceCreateGpuInstanceWithPlacement",
        "nvmlGpuInstanceCreateComputeInstance",
    ]


def test_each_compute_instance_is_a_mig_device(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    gi = _create(device, P_4G, 0, 4)  # GI 3
    for _ in range(2):
        pynvml.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE)
    migs = [pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, i) for i in range(3)]
    ids = [(pynvml.nvmlDeviceGetGpuInstanceId(m), pynvml.nvmlDeviceGetComputeInstanceId(m)) for m in migs]
    assert ids == [(2, 0), (3, 0), (3, 1)]
    assert [pynvml.nvmlDeviceGetUUID(m) for m in migs] == [
        fake.mig_uuid(0, 2),
        fake.mig_uuid(0, 3, 0),
        fake.mig_uuid(0, 3, 1),
    ]


def test_a_destroyed_compute_instance_has_no_mig_device(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)
    assert pynvml.nvmlDeviceGetUUID(mig) == fake.mig_uuid(0, 2)
    gi = pynvml.nvmlDeviceGetGpuInstanceById(device, 2)
    (ci,) = _compute_instances(gi, _default_ci_profile(gi, 3))
    pynvml.nvmlComputeInstanceDestroy(ci)
    assert _mig_uuid_of(device, 2) is None
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):  # the old handle is invalid (nvml.h)
        pynvml.nvmlDeviceGetUUID(mig)
    with pytest.raises(pynvml.NVMLError_InvalidArgument):
        pynvml.nvmlDeviceGetGpuInstanceId(mig)
    # a new compute instance is a new MIG device, with a new handle and CI id
    pynvml.nvmlGpuInstanceCreateComputeInstance(gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE)
    new = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)
    assert _address(new) != _address(mig)
    assert _mig_uuid_of(device, 2) == fake.mig_uuid(0, 2, 1) != fake.mig_uuid(0, 2, 0)


def test_mig_handles_in_the_wrong_place_are_invalid_argument(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    mig = pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)
    gi = pynvml.nvmlDeviceGetGpuInstanceById(device, 2)
    (ci,) = _compute_instances(gi, _default_ci_profile(gi, 3))
    for call in (
        lambda: pynvml.nvmlDeviceGetGpuInstanceById(mig, 2),
        lambda: _gpu_instances(mig, P_3G),
        lambda: _create(mig, P_3G, 0, 4),
        lambda: pynvml.nvmlDeviceGetGpuInstanceRemainingCapacity(mig, P_3G),
        lambda: pynvml.nvmlDeviceGetGpuInstanceProfileInfo(mig, pynvml.NVML_GPU_INSTANCE_PROFILE_3_SLICE),
        lambda: pynvml.nvmlDeviceGetMaxMigDeviceCount(mig),
        lambda: pynvml.nvmlDeviceGetMigDeviceHandleByIndex(mig, 0),
        lambda: pynvml.nvmlDeviceGetMigMode(mig),
        # a GPU's handle where a MIG device's is needed
        lambda: pynvml.nvmlDeviceGetGpuInstanceId(device),
        lambda: pynvml.nvmlDeviceGetComputeInstanceId(device),
        lambda: pynvml.nvmlDeviceGetDeviceHandleFromMigDeviceHandle(device),
        # GPU- and compute-instance handles are not nvmlDevice_t
        lambda: pynvml.nvmlDeviceIsMigDeviceHandle(gi),
        lambda: pynvml.nvmlDeviceGetUUID(ci),
    ):
        with pytest.raises(pynvml.NVMLError_InvalidArgument):
            call()
    with pytest.raises(pynvml.NVMLError_InvalidArgument):  # and the reverse: not a GI handle
        pynvml.nvmlGpuInstanceGetInfo(mig)
    assert fake.gpu_instances(0) == [(P_3G, 4, 2, 1)]


def test_mig_devices_with_mig_mode_off(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(1)  # H100, MIG off (pending on)
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(device) == 0  # nvml.h: zero if MIG is not enabled
    with pytest.raises(pynvml.NVMLError_NotSupported):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)
    assert _mig_uuid_of(device, 1) is None
    fake.set_mig_mode(1, True)
    assert pynvml.nvmlDeviceGetMaxMigDeviceCount(device) == 7
    with pytest.raises(pynvml.NVMLError_NotFound):
        pynvml.nvmlDeviceGetMigDeviceHandleByIndex(device, 0)


def test_mig_devices_in_a_subprocess(tmp_path: Path) -> None:
    script = tmp_path / "find.py"
    script.write_text(
        textwrap.dedent(
            """\
            import sys

            import pynvml as nvml

            nvml.nvmlInit()
            handle = nvml.nvmlDeviceGetHandleByUUID(sys.argv[1])
            for index in range(nvml.nvmlDeviceGetMaxMigDeviceCount(handle)):
                try:
                    mig = nvml.nvmlDeviceGetMigDeviceHandleByIndex(handle, index)
                except nvml.NVMLError:
                    continue
                if nvml.nvmlDeviceGetGpuInstanceId(mig) == int(sys.argv[2]):
                    print(nvml.nvmlDeviceGetUUID(mig))
            nvml.nvmlShutdown()
            """
        )
    )
    fake = _two_gpus()
    proc, final = run_script_with_fake(script, ["GPU-aaaa", "2"], fake, cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout.splitlines() == [fake.mig_uuid(0, 2)]
    assert final.calls.count("nvmlDeviceGetMigDeviceHandleByIndex") == 7


# --- failure injection


def test_in_use_marks(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    gi = pynvml.nvmlDeviceGetGpuInstanceById(device, 2)
    (ci,) = _compute_instances(gi, _default_ci_profile(gi, 3))
    fake.mark_in_use(0, 2, ci_id=0)
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlComputeInstanceDestroy(ci)
    fake.mark_in_use(0, 2, ci_id=0, in_use=False)
    pynvml.nvmlComputeInstanceDestroy(ci)
    fake.mark_in_use(0, 2)  # a process on the GPU instance itself
    with pytest.raises(pynvml.NVMLError_InUse):
        pynvml.nvmlGpuInstanceDestroy(gi)
    assert fake.gpu_instances(0) == [(P_3G, 4, 2, 0)]


def test_refuse_injects_a_code_then_stops(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByIndex(0)
    fake.refuse("nvmlDeviceCreateGpuInstanceWithPlacement", pynvml.NVML_ERROR_NO_PERMISSION, times=2)
    for _ in range(2):
        with pytest.raises(pynvml.NVMLError_NoPermission):
            _create(device, P_3G, 0, 4)
    assert fake.gpu_instances(0) == [(P_3G, 4, 2, 1)]
    _create(device, P_3G, 0, 4)
    assert fake.gpu_instances(0) == [(P_3G, 0, 3, 0), (P_3G, 4, 2, 1)]
    with pytest.raises(ValueError, match="nvmlDeviceGetPowerUsage"):
        fake.refuse("nvmlDeviceGetPowerUsage", pynvml.NVML_ERROR_UNKNOWN)


def test_a_failing_callback_is_reported() -> None:
    fake = _two_gpus()
    with pytest.raises(FakeNvmlError, match="UnicodeDecodeError"), installed(fake):
        pynvml.nvmlInit()
        with pytest.raises(pynvml.NVMLError_Unknown):
            pynvml.nvmlDeviceGetHandleByUUID(b"GPU-\xff")
    assert len(fake.errors) == 1


# --- the call log and set-up


def test_the_call_log_shows_a_read_only_session(fake: FakeNvml) -> None:
    device = pynvml.nvmlDeviceGetHandleByUUID("GPU-aaaa")
    for gi in _gpu_instances(device, P_3G):
        pynvml.nvmlGpuInstanceGetInfo(gi)
    assert fake.calls == [
        "nvmlInitWithFlags",
        "nvmlDeviceGetHandleByUUID",
        "nvmlDeviceGetGpuInstances",
        "nvmlGpuInstanceGetInfo",
    ]
    assert fake.mutating_calls() == []


def test_pre_existing_instances_are_checked() -> None:
    with pytest.raises(ValueError, match="cannot be at start 2"):
        FakeNvml([FakeDevice(0, "GPU-aaaa", A100, instances=[(P_3G, 0, 1), (P_2G, 2, 2)])])
    with pytest.raises(ValueError, match="MIG mode off"):
        FakeNvml([FakeDevice(0, "GPU-aaaa", A100, mig=False, instances=[(P_3G, 0, 1)])])
    with pytest.raises(ValueError, match="numbered 0, 1"):
        FakeNvml([FakeDevice(1, "GPU-aaaa", A100)])


def test_json_round_trip() -> None:
    fake = _two_gpus()
    fake.mark_in_use(0, 2, ci_id=0)
    fake.refuse("nvmlGpuInstanceDestroy", pynvml.NVML_ERROR_UNKNOWN)
    with installed(fake):
        pynvml.nvmlInit()
        _create(pynvml.nvmlDeviceGetHandleByIndex(0), P_2G, 0, 2)
    text = fake.to_json()
    again = FakeNvml.from_json(text)
    assert again.to_json() == text
    assert again.gpu_instances(0) == [(P_2G, 0, 3, 0), (P_3G, 4, 2, 1)]
    assert json.loads(text)["devices"][0]["gpu_instances"][1]["compute_instances"][0]["in_use"] is True
    assert again.mig_mode(1) == (False, True)


# --- subprocess


def test_subprocess_round_trip(tmp_path: Path) -> None:
    script = tmp_path / "plan.py"
    script.write_text(
        textwrap.dedent(
            """\
            import ctypes
            import sys

            import pynvml

            pynvml.nvmlInit()
            device = pynvml.nvmlDeviceGetHandleByUUID(sys.argv[1])
            placement = pynvml.c_nvmlGpuInstancePlacement_t()
            placement.start, placement.size = 0, 4
            gi = pynvml.nvmlDeviceCreateGpuInstanceWithPlacement(device, 9, ctypes.byref(placement))
            ci_profile = pynvml.nvmlGpuInstanceGetComputeInstanceProfileInfo(
                gi, pynvml.NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE, pynvml.NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED
            )
            pynvml.nvmlGpuInstanceCreateComputeInstance(gi, ci_profile.id)
            print("created GI", pynvml.nvmlGpuInstanceGetInfo(gi).id, "on", pynvml.nvmlDeviceGetName(device))
            try:
                pynvml.nvmlGpuInstanceDestroy(pynvml.nvmlDeviceGetGpuInstanceById(device, 2))
            except pynvml.NVMLError as error:
                print("refused:", error)
            pynvml.nvmlShutdown()
            sys.exit(3)
            """
        )
    )
    proc, final = run_script_with_fake(script, ["GPU-aaaa"], _two_gpus(), cwd=tmp_path)
    assert (proc.returncode, proc.stderr) == (3, "")
    assert proc.stdout.splitlines() == [
        "created GI 3 on NVIDIA A100-SXM4-40GB",
        "refused: In use by another client",
    ]
    assert final.gpu_instances(0) == [(P_3G, 0, 3, 1), (P_3G, 4, 2, 1)]
    assert final.mutating_calls() == [
        "nvmlDeviceCreateGpuInstanceWithPlacement",
        "nvmlGpuInstanceCreateComputeInstance",
        "nvmlGpuInstanceDestroy",
    ]
    assert final.calls[0] == "nvmlInitWithFlags" and final.calls[-1] == "nvmlShutdown"
