"""Plans emitted as nvidia-smi commands, an NVML script and a mig-parted config, replayed.

The bash script runs for real, against a fake ``nvidia-smi`` (a small Python program in
``tmp_path``) that keeps each host's GPU instances in a JSON file, gives ids as the driver does,
refuses overlaps and illegal starts, and prints ``-lgi`` in nvidia-smi's layout; the NVML script
runs against a fake ``pynvml`` module. Both must end in the plan's final state. The operations are
also read back from the script into a plan that :func:`mipopt.verifier.verify_plan` checks.
The cluster is imported from the recorded outputs of ``../shared/interop`` where they exist.
"""

from __future__ import annotations

import ctypes
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

import mipopt
from mipopt.instance import InstanceBuilder
from mipopt.interop import instance_from_nvidia_smi, merge_import
from mipopt.interop.emit import (
    addressed_plan,
    emit,
    mig_parted_config,
    nvidia_smi_script,
    nvml_script,
    plan_operations,
)
from mipopt.migrate.plan import plan_from_dict
from mipopt.verifier import verify_plan

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "interop"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="the recorded outputs are not in ../shared/interop"
)


def _handmade() -> mipopt.Instance:
    """Hand-made: two hosts, GPUs with device indices and UUIDs, running instances with GI ids."""
    b = InstanceBuilder("handmade")
    b.add_host(
        "n1",
        {"n1-gpu0": "A100-40GB", "n1-gpu1": "A100-40GB"},
        device_indices={"n1-gpu0": 0, "n1-gpu1": 1},
        uuids={"n1-gpu0": "GPU-aaaa", "n1-gpu1": "GPU-bbbb"},
    )
    b.add_host("n2", {"n2-gpu0": "H100-80GB"}, device_indices={"n2-gpu0": 0})
    b.add_workload("a", "3g.20gb", placement=("n1-gpu0", 0), gpu_instance_id=2)
    b.add_workload("b", "3g.20gb", placement=("n1-gpu0", 4), gpu_instance_id=1)
    b.add_workload("c", "1g.5gb", placement=("n1-gpu1", 6), gpu_instance_id=13)
    b.add_workload("d", "4g.20gb")
    b.add_workload("e", "3g.40gb", gpu_models=["H100-80GB"])
    return b.build()


def _swap_target(inst: mipopt.Instance) -> dict[str, tuple[str, int]]:
    # a and b trade places (a cycle: one is parked on n1-gpu1), c moves host-local, d and e are new
    return {
        "a": ("n1-gpu0", 4),
        "b": ("n1-gpu0", 0),
        "c": ("n1-gpu1", 5),
        "d": ("n1-gpu1", 0),
        "e": ("n2-gpu0", 4),
    }


def _final_by_gpu(
    inst: mipopt.Instance, final: dict[str, tuple[str, int]]
) -> dict[str, list[tuple[int, int]]]:
    """GPU id -> sorted (profile id, start) of the instances there."""
    out: dict[str, list[tuple[int, int]]] = {g.id: [] for g in inst.gpus}
    for wid, (gpu, start) in final.items():
        out[gpu].append((inst.gpu(gpu).model.profile(inst.workload(wid).profile).id, start))
    return {g: sorted(v) for g, v in out.items()}


# --- a fake nvidia-smi

FAKE_NVIDIA_SMI = r"""
import json, os, sys
sys.path[:0] = [__ROOT__]
from mipopt.catalog import get_model

host = os.environ["NVSMI_HOST"]
path = os.path.join(os.environ["NVSMI_STATE"], host + ".json")
state = json.load(open(path))
args = sys.argv[1:]
assert args[0] == "mig", args
opts = dict(zip(args[1::2], args[2::2])) if "-C" not in args else dict(zip(args[1:-1:2], args[2:-1:2]))
gpu = state["gpus"][state["alias"][opts["-i"]]]
model = get_model(gpu["model"])
state["log"].append(" ".join(args))

def fail(msg):
    print(msg, file=sys.stderr)
    sys.exit(1)

if "-cgi" in opts:
    pid, start = map(int, opts["-cgi"].split(":"))
    prof = model.profile(pid)
    if start not in prof.starts:
        fail(f"Unable to create a GPU instance on GPU {opts['-i']} using profile {pid}: Invalid placement")
    used = {s for p, st in gpu["gis"].values() for s in range(st, st + model.profile(p).memory_slots)}
    if used & set(range(start, start + prof.memory_slots)):
        fail(f"Unable to create a GPU instance on GPU {opts['-i']} using profile {pid}: Insufficient Resources")
    gid = state["next_gi"]; state["next_gi"] += 1
    gpu["gis"][str(gid)] = [pid, start]
    gpu["cis"][str(gid)] = "-C" in args
    print(f"Successfully created GPU instance ID {gid:2d} on GPU {opts['-i']} using profile MIG {prof.name} (ID {pid:2d})")
elif "-lgi" in args:
    print("+-------------------------------------------------------+")
    print("| GPU instances:                                        |")
    print("| GPU   Name             Profile  Instance   Placement  |")
    print("|                          ID       ID       Start:Size |")
    print("|=======================================================|")
    for gid, (pid, st) in sorted(gpu["gis"].items(), key=lambda kv: int(kv[0])):
        name = "MIG " + model.profile(pid).name
        size = model.profile(pid).memory_slots
        print(f"|   {gpu['index']}  {name:<16} {pid:>5}  {int(gid):>8}  {st:>9}:{size:<5}|")
        print("+-------------------------------------------------------+")
elif "-dci" in args:
    if not gpu["cis"].pop(opts["-gi"], False):
        fail("No compute instances found")
elif "-dgi" in args:
    if opts["-gi"] not in gpu["gis"]:
        fail(f"Unable to destroy GPU instance ID {opts['-gi']}: Not Found")
    if gpu["cis"].get(opts["-gi"]):
        fail(f"Unable to destroy GPU instance ID {opts['-gi']}: In use by another client")
    del gpu["gis"][opts["-gi"]]
else:
    fail("unexpected: " + " ".join(args))
json.dump(state, open(path, "w"))
"""


def _fake_cluster(tmp_path: Path, inst: mipopt.Instance) -> dict[str, str]:
    """A bin/ with fake nvidia-smi and ssh, one state file per host; returns the environment."""
    bin_dir, state_dir = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state_dir.mkdir()
    root = repr(str(Path(mipopt.__file__).resolve().parents[1]))
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!{sys.executable}\n" + FAKE_NVIDIA_SMI.replace("__ROOT__", root))
    ssh = bin_dir / "fake-ssh"
    ssh.write_text('#!/bin/sh\nhost="$1"; shift\nNVSMI_HOST="$host" exec sh -c "$*"\n')
    for f in (smi, ssh):
        f.chmod(0o755)
    for h in inst.hosts:
        gpus, alias = [], {}
        for pos, gid in enumerate(h.gpus):
            g = inst.gpu(gid)
            index = pos if g.device_index is None else g.device_index
            alias[str(index)] = len(gpus)
            if g.uuid:
                alias[g.uuid] = len(gpus)
            gis = {
                str(w.placement.gpu_instance_id if w.placement.gpu_instance_id is not None else 100 + k): [
                    g.model.profile(w.profile).id,
                    w.placement.start,
                ]
                for k, w in enumerate(inst.workloads)
                if w.placement is not None and w.placement.gpu == gid
            }
            gpus.append(
                {
                    "id": gid,
                    "index": index,
                    "model": g.model.name,
                    "gis": gis,
                    "cis": dict.fromkeys(gis, True),
                }
            )
        state = {"gpus": gpus, "alias": alias, "next_gi": 20, "log": []}
        (state_dir / f"{h.id}.json").write_text(json.dumps(state))
    env = dict(os.environ)
    env.update(
        PATH=f"{bin_dir}:{env['PATH']}",
        NVSMI_STATE=str(state_dir),
        NVSMI_HOST=inst.hosts[0].id,
        MIPOPT_SSH=str(ssh),
        MIPOPT_LOCAL_HOST=inst.hosts[0].id,
    )
    return env


def _fake_final(tmp_path: Path, inst: mipopt.Instance) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {}
    for h in inst.hosts:
        state = json.loads((tmp_path / "state" / f"{h.id}.json").read_text())
        for gpu in state["gpus"]:
            assert all(gpu["cis"].get(k) for k in gpu["gis"]), (
                f"{gpu['id']}: a GPU instance without its compute instance"
            )
            out[gpu["id"]] = sorted((pid, start) for pid, start in gpu["gis"].values())
    return out


def _run_script(
    tmp_path: Path, script: str, env: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "plan.sh"
    path.write_text(script)
    return subprocess.run(["bash", str(path), *args], capture_output=True, text=True, env=env, timeout=60)


def test_the_bash_script_carries_out_a_plan_with_a_park_on_a_fake_cluster(tmp_path: Path) -> None:
    inst = _handmade()
    target = _swap_target(inst)
    plan = mipopt.plan_migration(inst, target)
    assert plan.metrics["extra_moves"] == 1 and plan.rounds[0].moves[0].park
    script = nvidia_smi_script(inst, plan)
    env = _fake_cluster(tmp_path, inst)
    done = _run_script(tmp_path, script, env, "--apply")
    assert done.returncode == 0, done.stderr
    assert _fake_final(tmp_path, inst) == _final_by_gpu(inst, dict(plan.final))
    # the imported ids were used as they were, the created ones looked up in -lgi
    log = json.loads((tmp_path / "state" / "n1.json").read_text())["log"]
    assert "mig -i GPU-aaaa -gi 2 -dci" in log and "mig -i GPU-aaaa -gi 2 -dgi" in log
    assert any(line.startswith("mig -i GPU-bbbb -cgi 9:") for line in log)


def test_a_dry_run_only_prints(tmp_path: Path) -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    env = _fake_cluster(tmp_path, inst)
    done = _run_script(tmp_path, nvidia_smi_script(inst, plan), env)
    assert done.returncode == 0, done.stderr
    printed = [line for line in done.stdout.splitlines() if line.startswith("[")]
    assert printed[0] == "[n1] nvidia-smi mig -i GPU-bbbb -cgi 9:0 -C"
    assert _fake_final(tmp_path, inst) == _final_by_gpu(inst, inst.current_placement())


def test_the_script_stops_when_the_state_changed(tmp_path: Path) -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    env = _fake_cluster(tmp_path, inst)
    state_file = tmp_path / "state" / "n1.json"
    state = json.loads(state_file.read_text())
    state["gpus"][0]["gis"]["7"] = state["gpus"][0]["gis"].pop("2")  # a's instance has another id now
    state_file.write_text(json.dumps(state))
    done = _run_script(tmp_path, nvidia_smi_script(inst, plan), env, "--apply")
    assert done.returncode == 1
    assert (
        done.stderr.strip()
        == "n1 GPU GPU-aaaa: the instance of profile 9 at start 0 is GI 7, not 2: the state changed"
    )
    assert json.loads(state_file.read_text())["log"] == ["mig -i GPU-aaaa -lgi"]  # nothing changed


def _plan_from_script(script: str) -> dict[str, Any]:
    """The plan's JSON rebuilt from the script's command lines and their comments alone."""
    rounds: dict[int, dict[str, list[dict[str, Any]]]] = {}
    gpu_of: dict[tuple[str, str], str] = {}
    number, phase = 0, ""
    for line in script.splitlines():
        if m := re.match(r"^# round (\d+), (\w+)$", line):
            number, phase = int(m.group(1)), m.group(2)
            rounds.setdefault(number, {"drains": [], "moves": [], "creates": []})
            continue
        create = re.match(r"^on (\S+) nvidia-smi mig -i (\S+) -cgi \d+:(\d+) -C  # create (\S+): (.*)$", line)
        destroy = re.match(r"^destroy (\S+) (\S+) .*  # destroy (\S+): (.*)$", line)
        if create:
            host, gpu, start, workload, why = create.groups()
            op = "create"
        elif destroy:
            host, gpu, workload, why = destroy.groups()
            op, start = "destroy", "-1"
        else:
            continue
        gpu_id = gpu_of.setdefault((host, gpu), f"{host}:{gpu}")
        r = rounds[number]
        if op == "create":
            spot = {"gpu": gpu_id, "start": int(start)}
            if why.startswith(("park", "intra-GPU", "inter-GPU", "inter-host")):
                src = re.search(r"from (\S+):(\d+)$", why)
                assert src is not None
                r["moves"].append(
                    {"workload": workload, "to": spot, "park": why.startswith("park"), "src": src.groups()}
                )
            elif why.startswith("restore"):
                r["creates"].append({"workload": workload, "to": spot, "restore": why})
            else:
                r["creates"].append({"workload": workload, "to": spot})
        elif phase == "drain":
            r["drains"].append({"workload": workload, "gpu": gpu_id})
    return {"rounds": [rounds[k] for k in sorted(rounds)], "gpus": gpu_of}


def test_the_script_reads_back_as_a_plan_that_verifies() -> None:
    inst = _handmade()
    target = _swap_target(inst)
    plan = mipopt.plan_migration(inst, target)
    back = _plan_from_script(nvidia_smi_script(inst, plan))
    # map the script's host:GPU addresses back to GPU ids, then rebuild the plan's JSON
    address = {}
    for h in inst.hosts:
        for pos, gid in enumerate(h.gpus):
            g = inst.gpu(gid)
            address[f"{h.id}:{g.uuid or (pos if g.device_index is None else g.device_index)}"] = gid
    rebuilt: dict[str, Any] = {
        "format": "mipopt-plan",
        "version": 1,
        "instance": inst.name,
        "semantics": "create-first",
        "rounds": [],
    }
    where = {w.id: (w.placement.gpu, w.placement.start) for w in inst.workloads if w.placement is not None}
    for r in back["rounds"]:
        moves = []
        for mv in r["moves"]:
            to = {"gpu": address[mv["to"]["gpu"]], "start": mv["to"]["start"]}
            source = where[mv["workload"]][0]
            kind = (
                "intra_gpu" if source == to["gpu"]
                else "inter_gpu" if inst.gpu(source).host == inst.gpu(to["gpu"]).host
                else "inter_host"
            )  # fmt: skip
            moves.append(
                {
                    "workload": mv["workload"],
                    "from": {"gpu": source, "start": where[mv["workload"]][1]},
                    "to": to,
                    "kind": kind,
                    "park": mv["park"],
                }
            )
            assert mv["src"] == (where[mv["workload"]][0], str(where[mv["workload"]][1]))
        creates = [
            {"workload": c["workload"], "to": {"gpu": address[c["to"]["gpu"]], "start": c["to"]["start"]}}
            for c in r["creates"]
        ]
        for item in (*moves, *creates):
            where[item["workload"]] = (item["to"]["gpu"], item["to"]["start"])
        rebuilt["rounds"].append({"drains": [], "moves": moves, "creates": creates})
    rebuilt["final"] = [{"workload": w, "gpu": g, "start": st} for w, (g, st) in where.items()]
    report = verify_plan(inst, rebuilt, target)
    assert report.valid, report.violations
    assert sum(len(r["moves"]) for r in rebuilt["rounds"]) == 4  # a parked then home, b, c


@needs_shared
def test_an_imported_cluster_plans_and_replays(tmp_path: Path) -> None:
    # node1: the all-1g.5gb A100-40GB (-L__5 and -lgi__6, R450 GI ids 7..13); node2: the H100 PCIe
    # (scaleway: 3g.40gb @4 and 1g.10gb @0..2, GI ids from -lgi__1) with its -lgip and -lgipp
    imported = instance_from_nvidia_smi(
        {
            "node1": [SHARED / "A100-40GB__L__5.txt", SHARED / "A100-40GB__lgi__6.txt"],
            "node2": [
                SHARED / f"H100-80GB__{k}__{n}.txt"
                for k, n in (("L", 2), ("lgi", 1), ("lgip", 1), ("lgipp", 1))
            ],
        },
        cpu=64,
        ram_gb=512,
    )
    b = InstanceBuilder("requests")
    b.add_host("node2", {})
    b.add_workload("llm", "3g.40gb", gpu_models=["H100-80GB"])
    b.add_workload("infer", "1g.10gb", gpu_models=["H100-80GB"])
    requests = b.build()
    merged, notes = merge_import(
        mipopt.Instance(
            imported.name,
            imported.hosts,
            imported.gpus,
            imported.workloads + requests.workloads,
            imported.custom_models,
        ),
        imported,
    )
    assert notes == ()
    sol = mipopt.solve(merged, "exact", time_limit_s=60)
    assert mipopt.verify(merged, sol).valid
    plan = mipopt.plan_migration(merged, sol)
    assert verify_plan(merged, addressed_plan(merged, plan), dict(plan.final)).valid
    env = _fake_cluster(tmp_path, merged)
    done = _run_script(tmp_path, nvidia_smi_script(merged, plan), env, "--apply")
    assert done.returncode == 0, done.stderr
    assert _fake_final(tmp_path, merged) == _final_by_gpu(merged, dict(plan.final))


def test_awk_of_gi_at_reads_a_recorded_lgi(tmp_path: Path) -> None:
    # the script's lookup against what a real H100 PCIe printed (scaleway): 3g.40gb (id 9) at 4 is GI 2
    text = (SHARED / "H100-80GB__lgi__1.txt").read_text() if SHARED.is_dir() else None
    if text is None:
        pytest.skip("the recorded outputs are not in ../shared/interop")
    awk = re.search(
        r"awk -v p=\"\$3\" -v s=\"\$4\" \\\n\s+'(.*?)'",
        nvidia_smi_script(_handmade(), mipopt.plan_migration(_handmade(), _swap_target(_handmade()))),
    )
    assert awk is not None
    rows = {
        w.placement.start: w.placement.gpu_instance_id
        for w in instance_from_nvidia_smi(
            {"n": [SHARED / "H100-80GB__lgi__1.txt"]}, gpu_model="H100-80GB"
        ).workloads
        if w.placement
    }
    for start, gi in rows.items():
        pid = 9 if start == 4 else 19
        out = subprocess.run(
            ["awk", "-v", f"p={pid}", "-v", f"s={start}", awk.group(1)],
            input=text,
            capture_output=True,
            text=True,
        )
        assert out.stdout.strip() == str(gi)


# --- NVML


class FakeNvml:
    """The pynvml calls the script makes, over per-device GPU instances; refuses what NVML refuses."""

    NVML_COMPUTE_INSTANCE_ENGINE_PROFILE_SHARED = 0
    NVML_COMPUTE_INSTANCE_PROFILE_1_SLICE = 0
    NVML_COMPUTE_INSTANCE_PROFILE_2_SLICE = 1
    NVML_COMPUTE_INSTANCE_PROFILE_3_SLICE = 2
    NVML_COMPUTE_INSTANCE_PROFILE_4_SLICE = 3
    NVML_COMPUTE_INSTANCE_PROFILE_7_SLICE = 4
    NVML_COMPUTE_INSTANCE_PROFILE_COUNT = 9
    c_nvmlGpuInstance_t = ctypes.c_void_p

    class NVMLError(Exception):
        pass

    class c_nvmlGpuInstancePlacement_t(ctypes.Structure):
        _fields_ = [("start", ctypes.c_uint), ("size", ctypes.c_uint)]

    def __init__(self, inst: mipopt.Instance, host: str) -> None:
        self.models = {}
        self.gis: dict[int, dict[int, list[int]]] = {}  # device -> GI id -> [profile id, start, slices, ci]
        self.by_uuid = {}
        self.handles: dict[int, tuple[int, int]] = {}  # handle value -> (device, GI id)
        h = inst.host(host)
        for pos, gid in enumerate(h.gpus):
            g = inst.gpu(gid)
            dev = pos if g.device_index is None else g.device_index
            self.models[dev] = g.model
            if g.uuid:
                self.by_uuid[g.uuid] = dev
            self.gis[dev] = {
                w.placement.gpu_instance_id if w.placement.gpu_instance_id is not None else 100 + k: [
                    g.model.profile(w.profile).id,
                    w.placement.start,
                    g.model.profile(w.profile).compute,
                    1,
                ]
                for k, w in enumerate(inst.workloads)
                if w.placement is not None and w.placement.gpu == gid
            }
        self.calls: list[str] = []
        self.inited = False

    def nvmlInit(self) -> None:
        self.inited = True

    def nvmlShutdown(self) -> None:
        self.inited = False

    def nvmlDeviceGetHandleByIndex(self, i: int) -> int:
        return i

    def nvmlDeviceGetHandleByUUID(self, uuid: str) -> int:
        return self.by_uuid[uuid]

    def _handle(self, dev: int, gi: int) -> ctypes.c_void_p:
        value = 1000 * (dev + 1) + gi
        self.handles[value] = (dev, gi)
        return ctypes.c_void_p(value)

    def _gi(self, handle: Any) -> tuple[int, int]:
        return self.handles[handle.value if isinstance(handle, ctypes.c_void_p) else handle]

    def nvmlDeviceGetGpuInstanceById(self, dev: int, gi: int) -> ctypes.c_void_p:
        if gi not in self.gis[dev]:
            raise self.NVMLError("Not Found")
        return self._handle(dev, gi)

    def nvmlGpuInstanceGetInfo(self, handle: Any) -> Any:
        dev, gi = self._gi(handle)
        pid, start, _, _ = self.gis[dev][gi]
        placement = type("P", (), {"start": start, "size": self.models[dev].profile(pid).memory_slots})
        return type("Info", (), {"id": gi, "profileId": pid, "placement": placement})

    def nvmlDeviceGetGpuInstances(self, dev: int, pid: int, found: Any, count: Any) -> None:
        mine = [gi for gi, v in self.gis[dev].items() if v[0] == pid]
        for i, gi in enumerate(mine):
            found[i] = self._handle(dev, gi).value
        count._obj.value = len(mine)

    def nvmlDeviceCreateGpuInstanceWithPlacement(
        self, dev: int, pid: int, placement_ref: Any
    ) -> ctypes.c_void_p:
        placement = placement_ref._obj
        model = self.models[dev]
        prof = model.profile(pid)
        if placement.start not in prof.starts or placement.size != prof.memory_slots:
            raise self.NVMLError("Invalid Argument")
        used = {
            s for p, st, _, _ in self.gis[dev].values() for s in range(st, st + model.profile(p).memory_slots)
        }
        if used & set(range(placement.start, placement.start + prof.memory_slots)):
            raise self.NVMLError("Insufficient Resources")
        gi = max([19, *self.gis[dev]]) + 1
        self.gis[dev][gi] = [pid, placement.start, prof.compute, 0]
        self.calls.append(f"create {dev} {pid}:{placement.start}")
        return self._handle(dev, gi)

    def nvmlGpuInstanceGetComputeInstanceProfileInfo(self, handle: Any, ci_profile: int, engine: int) -> Any:
        dev, gi = self._gi(handle)
        slices = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7}.get(ci_profile)
        if slices is None or slices > self.gis[dev][gi][2]:
            raise self.NVMLError("Not Supported")
        return type("CiInfo", (), {"id": ci_profile, "sliceCount": slices})

    def nvmlGpuInstanceCreateComputeInstance(self, handle: Any, ci_id: int) -> None:
        dev, gi = self._gi(handle)
        assert {0: 1, 1: 2, 2: 3, 3: 4, 4: 7}[ci_id] == self.gis[dev][gi][2], (
            "not the default compute instance"
        )
        self.gis[dev][gi][3] += 1

    def nvmlGpuInstanceGetComputeInstances(self, handle: Any, ci_id: int) -> list[tuple[int, int]]:
        dev, gi = self._gi(handle)
        full = {0: 1, 1: 2, 2: 3, 3: 4, 4: 7}[ci_id] == self.gis[dev][gi][2]
        return [(dev, gi)] * self.gis[dev][gi][3] if full else []

    def nvmlComputeInstanceDestroy(self, ci: tuple[int, int]) -> None:
        self.gis[ci[0]][ci[1]][3] -= 1

    def nvmlGpuInstanceDestroy(self, handle: Any) -> None:
        dev, gi = self._gi(handle)
        if self.gis[dev][gi][3]:
            raise self.NVMLError("In Use")
        del self.gis[dev][gi]
        self.calls.append(f"destroy {dev} {gi}")

    def final(self, inst: mipopt.Instance, host: str) -> dict[str, list[tuple[int, int]]]:
        h = inst.host(host)
        out = {}
        for pos, gid in enumerate(h.gpus):
            g = inst.gpu(gid)
            dev = pos if g.device_index is None else g.device_index
            assert all(v[3] == 1 for v in self.gis[dev].values())
            out[gid] = sorted((v[0], v[1]) for v in self.gis[dev].values())
        return out


def _script_main(text: str) -> Any:
    namespace: dict[str, Any] = {"__name__": "emitted"}
    exec(compile(text, "plan.py", "exec"), namespace)
    return namespace["main"]


def test_the_nvml_script_carries_out_the_plan_phase_by_phase(capsys: pytest.CaptureFixture[str]) -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    main = _script_main(nvml_script(inst, plan))
    fakes = {h.id: FakeNvml(inst, h.id) for h in inst.hosts}
    for number in range(1, len(plan.rounds) + 1):
        for phase in ("drain", "create", "destroy"):
            for host, fake in fakes.items():
                assert main(["--host", host, "--round", str(number), "--phase", phase, "--apply"], fake) == 0
    final = {gid: v for host, fake in fakes.items() for gid, v in fake.final(inst, host).items()}
    assert final == _final_by_gpu(inst, dict(plan.final))
    assert fakes["n1"].calls[0] == "create 1 9:0"  # a parked on GPU 1 first


def test_the_nvml_script_dry_run_prints_and_touches_nothing(capsys: pytest.CaptureFixture[str]) -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    main = _script_main(nvml_script(inst, plan))
    fake = FakeNvml(inst, "n2")
    assert main(["--host", "n2"], fake) == 0
    assert capsys.readouterr().out.splitlines() == [
        "round 4 create: create 3g.40gb (id 9) at start 4 on n2 GPU 0  # e: new request",
        "dry run: 1 operations; --apply to act",
    ]
    assert fake.calls == [] and not fake.inited


def test_the_nvml_script_stops_when_an_imported_id_is_elsewhere(capsys: pytest.CaptureFixture[str]) -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    main = _script_main(nvml_script(inst, plan))
    fake = FakeNvml(inst, "n1")
    fake.gis[0][2][1] = 4  # GI 2 is not at start 0 any more
    fake.gis[0][1][1] = 0
    with pytest.raises(SystemExit) as stop:
        main(["--host", "n1", "--apply"], fake)
    assert str(stop.value) == "n1 GPU 0: GI 2 is not profile 9 at start 0: the state changed"
    assert fake.calls == []


# --- mig-parted and json


def test_mig_parted_config_counts_profiles_per_gpu_group() -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    text = mig_parted_config(inst, dict(plan.final))
    assert text.startswith("# WARNING: mig-parted creates GPU instances without a placement")
    config = yaml.safe_load(text)
    assert config["version"] == "v1"
    assert config["mig-configs"] == {
        "mipopt-n1": [
            {
                "devices": [0],
                "device-filter": ["0x20B010DE", "0x20F110DE"],
                "mig-enabled": True,
                "mig-devices": {"3g.20gb": 2},
            },
            {
                "devices": [1],
                "device-filter": ["0x20B010DE", "0x20F110DE"],
                "mig-enabled": True,
                "mig-devices": {"1g.5gb": 1, "4g.20gb": 1},
            },
        ],
        "mipopt-n2": [
            {
                "devices": [0],
                "device-filter": ["0x233010DE", "0x233110DE"],
                "mig-enabled": True,
                "mig-devices": {"3g.40gb": 1},
            },
        ],
    }


def test_json_form_addresses_every_spot_and_reads_back() -> None:
    inst = _handmade()
    target = _swap_target(inst)
    plan = mipopt.plan_migration(inst, target)
    data = json.loads(emit(inst, plan, "json"))
    assert plan_from_dict(data).rounds == plan.rounds
    assert verify_plan(inst, data, target).valid
    first = data["rounds"][0]["moves"][0]
    assert first["from"] == {
        "gpu": "n1-gpu0",
        "start": 0,
        "host": "n1",
        "gpu_index": 0,
        "gpu_uuid": "GPU-aaaa",
        "gpu_instance_id": 2,
    }
    assert first["to"] == {"gpu": "n1-gpu1", "start": 0, "host": "n1", "gpu_index": 1, "gpu_uuid": "GPU-bbbb"}
    assert [o["op"] for o in data["operations"]] == [o.op for o in plan_operations(inst, plan)]


def test_an_unknown_form_is_refused() -> None:
    inst = _handmade()
    plan = mipopt.plan_migration(inst, _swap_target(inst))
    with pytest.raises(
        mipopt.InstanceError,
        match=r"^form: must be one of nvidia-smi, nvml-python, mig-parted, json, got 'yaml'$",
    ):
        emit(inst, plan, "yaml")
