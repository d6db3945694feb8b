"""A fake ``nvidia-smi`` (and ``ssh``) for running emitted bash plans without a GPU.

Installed as ``bin/nvidia-smi`` by :func:`fake_cluster`, it keeps each host's GPUs in a JSON file
(``NVSMI_STATE``/<sha1 of the host>.json, the host from ``NVSMI_HOST``), and answers what the
emitted script runs, in the layouts of the recorded outputs in ``../shared/interop``:

* ``mig -i GPU -lgi``: the GPU-instance table (``No GPU instances found: Not Found`` and exit 6
  on a GPU without any, as the driver does);
* ``mig -i GPU -cgi PROFILE_ID:START -C``: refuses an illegal start (``Invalid placement``), an
  overlap, too many instances or compute slices (``Insufficient Resources``); a new GI gets the
  lowest free id from 1 (a driver derives ids from placements; tests do not depend on new ids);
* ``mig -i GPU -gi ID -dci`` / ``-dgi``: ``In use by another client`` for an instance marked busy
  (a process on it), or, for ``-dgi``, one that still has compute instances;
* ``-i GPU`` (plain; its MIG devices table), ``-L`` (GPUs and MIG devices with UUIDs) and
  ``--query-gpu=driver_version,mig.mode.current --format=csv,noheader -i GPU``.

A GPU is named by index or UUID. Every call is appended to the host's ``log``; calls that change
the state are marked, so a test can assert that a dry run changed nothing. The ``ssh`` fake takes
``-- HOST COMMAND`` and runs COMMAND with ``NVSMI_HOST=HOST``, refusing anything else.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from pathlib import Path
from typing import Any

MUTATING = ("-cgi", "-dci", "-dgi")


def state_file(state_dir: str | Path, host: str) -> Path:
    return Path(state_dir) / (hashlib.sha1(host.encode()).hexdigest() + ".json")


def _fail(message: str, code: int = 1) -> None:
    print(message, file=sys.stderr)
    sys.exit(code)


def _gpu(state: dict[str, Any], name: str) -> dict[str, Any]:
    for gpu in state["gpus"]:
        if name in (str(gpu["index"]), gpu.get("uuid")):
            return gpu
    _fail(f"No devices were found matching {name}", 6)
    raise AssertionError


def _profiles(model_name: str) -> Any:
    from mipopt.catalog import get_model

    return get_model(model_name)


def _lgi(gpu: dict[str, Any]) -> None:
    model = _profiles(gpu["model"])
    if not gpu["gis"]:
        _fail("No GPU instances found: Not Found", 6)
    rule = "+-------------------------------------------------------+"
    print(rule)
    print("| GPU instances:                                        |")
    print("| GPU   Name             Profile  Instance   Placement  |")
    print("|                          ID       ID       Start:Size |")
    print("|=======================================================|")
    for gid, (pid, start) in sorted(gpu["gis"].items(), key=lambda kv: int(kv[0])):
        profile = model.profile(pid)
        name = f"MIG {profile.name}"
        print(
            f"|   {gpu['index']}  {name:<16} {pid:>5}  {int(gid):>8}  {start:>9}:{profile.memory_slots:<5}|"
        )
        print(rule)


def _create(gpu: dict[str, Any], tuple_: str, with_ci: bool) -> None:
    model = _profiles(gpu["model"])
    pid, start = map(int, tuple_.split(":"))
    profile = model.profile(pid)
    head = f"Unable to create a GPU instance on GPU {gpu['index']} using profile {pid}"
    if start not in profile.starts:
        _fail(f"{head}: Invalid placement")
    held = [(model.profile(p), s) for p, s in gpu["gis"].values()]
    used = {slot for p, s in held for slot in range(s, s + p.memory_slots)}
    if (
        used & set(range(start, start + profile.memory_slots))
        or sum(p.compute for p, _ in held) + profile.compute > model.compute_slices
        or sum(p.name == profile.name for p, _ in held) >= profile.max_instances
    ):
        _fail(f"{head}: Insufficient Resources")
    gid = next(i for i in range(1, 100) if str(i) not in gpu["gis"])
    gpu["gis"][str(gid)] = [pid, start]
    gpu["cis"][str(gid)] = with_ci
    print(
        f"Successfully created GPU instance ID {gid:2d} on GPU {gpu['index']:2d} using profile MIG {profile.name} (ID {pid:2d})"
    )
    if with_ci:
        print(
            f"Successfully created compute instance ID  0 on GPU {gpu['index']:2d} GPU instance ID {gid:2d}"
        )


def _destroy(gpu: dict[str, Any], gid: str, what: str) -> None:
    if gid not in gpu["gis"]:
        _fail(f"Unable to destroy GPU instance ID {gid} from GPU {gpu['index']}: Not Found", 6)
    if gid in gpu["busy"]:
        _fail(
            f"Unable to destroy {what} on GPU instance ID {gid} from GPU {gpu['index']}: In use by another client"
        )
    if what == "compute instances":
        if not gpu["cis"].get(gid):
            _fail(f"No compute instances found on GPU instance ID {gid}: Not Found", 6)
        gpu["cis"][gid] = False
        print(
            f"Successfully destroyed compute instance ID  0 from GPU {gpu['index']:2d} GPU instance ID {int(gid):2d}"
        )
        return
    if gpu["cis"].get(gid):
        _fail(f"Unable to destroy GPU instance ID {gid} from GPU {gpu['index']}: In use by another client")
    del gpu["gis"][gid]
    gpu["cis"].pop(gid, None)
    print(f"Successfully destroyed GPU instance ID {int(gid):2d} from GPU {gpu['index']:2d}")


def _mig_devices(gpu: dict[str, Any]) -> list[tuple[int, str]]:
    """(MIG device index, GI id) of the GPU's instances with a compute instance, by GI id."""
    gis = sorted((int(g) for g, has in gpu["cis"].items() if has), key=int)
    return [(dev, str(g)) for dev, g in enumerate(gis)]


def _plain(gpu: dict[str, Any]) -> None:
    print("+-----------------------------------------------------------------------------+")
    print("| MIG devices:                                                                |")
    print("+------------------+----------------------+-----------+-----------------------+")
    print("| GPU  GI  CI  MIG |         Memory-Usage |        Vol|         Shared        |")
    print("|      ID  ID  Dev |           BAR1-Usage | SM     Unc| CE  ENC  DEC  OFA  JPG|")
    print("|==================+======================+===========+=======================|")
    devices = _mig_devices(gpu)
    if not devices:
        print("|  No MIG devices found                                                       |")
    for dev, gid in devices:
        print(
            f"|  {gpu['index']:>2} {int(gid):>3} {0:>3} {dev:>3}  |      0MiB /  9728MiB | 14      0 |  1   0    0    0    0 |"
        )
    print("+-----------------------------------------------------------------------------+")
    print("| Processes:                                                                  |")
    print("|  No running processes found                                                 |")


def mig_uuid(host: str, gpu: dict[str, Any], gid: str) -> str:
    digest = hashlib.sha1(f"{host}/{gpu['index']}/{gid}".encode()).hexdigest()
    return f"MIG-{digest[:8]}-{digest[8:12]}-{digest[12:16]}-{digest[16:20]}-{digest[20:32]}"


def _list(state: dict[str, Any], host: str) -> None:
    for gpu in state["gpus"]:
        print(f"GPU {gpu['index']}: NVIDIA {gpu['model']} (UUID: {gpu['uuid']})")
        for dev, gid in _mig_devices(gpu):
            name = _profiles(gpu["model"]).profile(gpu["gis"][gid][0]).name
            print(f"  MIG {name:<11} Device {dev:>2}: (UUID: {mig_uuid(host, gpu, gid)})")


def main(argv: list[str]) -> None:
    host = os.environ["NVSMI_HOST"]
    path = state_file(os.environ["NVSMI_STATE"], host)
    state = json.loads(path.read_text())
    mutating = any(a in MUTATING for a in argv)
    state["log"].append({"argv": argv, "mutating": mutating})
    path.write_text(json.dumps(state))  # the log even when the call fails
    opts = dict(zip(argv[::2], argv[1::2], strict=False))
    if argv[:1] == ["mig"]:
        rest = argv[1:]
        opts = {rest[k]: rest[k + 1] if k + 1 < len(rest) else "" for k in range(len(rest))}
        gpu = _gpu(state, opts["-i"])
        if "-lgi" in rest:
            _lgi(gpu)
        elif "-cgi" in rest:
            _create(gpu, opts["-cgi"], "-C" in rest)
        elif "-dci" in rest:
            _destroy(gpu, opts["-gi"], "compute instances")
        elif "-dgi" in rest:
            _destroy(gpu, opts["-gi"], "GPU instance")
        else:
            _fail("unexpected: " + " ".join(argv))
    elif argv == ["-L"]:
        _list(state, host)
    elif argv and argv[0].startswith("--query-gpu="):
        gpu = _gpu(state, argv[argv.index("-i") + 1])
        mode = "Enabled" if gpu.get("mig", True) else "Disabled"
        print(f"{state.get('driver', '550.54.15')}, {mode}")
    elif len(argv) == 2 and argv[0] == "-i":
        _plain(_gpu(state, argv[1]))
    else:
        _fail("unexpected: " + " ".join(argv))
    path.write_text(json.dumps(state))


SSH = """#!/bin/sh
# fake ssh: only `ssh -- HOST COMMAND`, as the emitted script calls it
[ "$1" = "--" ] || { echo "fake ssh: expected -- before the host, got $1" >&2; exit 255; }
host="$2"; shift 2
NVSMI_HOST="$host" exec sh -c "$*"
"""


def fake_cluster(tmp_path: Path, instance: Any, *, driver: str = "550.54.15") -> dict[str, str]:
    """A ``bin/`` with the fake ``nvidia-smi`` and ``ssh`` and one state file per host of
    ``instance`` (its running workloads' and idle instances' GPU instances, each with its
    compute instance); returns the environment to run the script in (local host: the first)."""
    bin_dir, state_dir = tmp_path / "bin", tmp_path / "state"
    bin_dir.mkdir()
    state_dir.mkdir()
    tests = str(Path(__file__).resolve().parents[1])
    smi = bin_dir / "nvidia-smi"
    smi.write_text(
        f"#!{sys.executable}\nimport sys\nsys.path[:0] = [{tests!r}]\n"
        "from fakes.fake_nvidia_smi import main\nmain(sys.argv[1:])\n"
    )
    ssh = bin_dir / "fake-ssh"
    ssh.write_text(SSH)
    for f in (smi, ssh):
        f.chmod(0o755)
    for h in instance.hosts:
        gpus = []
        for pos, gid in enumerate(h.gpus):
            g = instance.gpu(gid)
            held = [
                (w.placement.gpu_instance_id, g.model.profile(w.profile).id, w.placement.start)
                for w in instance.running
                if w.placement.gpu == gid
            ]
            held += [
                (i.gpu_instance_id, g.model.profile(i.profile).id, i.start)
                for i in instance.idle
                if i.gpu == gid
            ]
            ids = iter(i for i in range(50, 100))
            gis = {str(gi if gi is not None else next(ids)): [pid, start] for gi, pid, start in held}
            index = pos if g.device_index is None else g.device_index
            uuid = g.uuid or f"GPU-{hashlib.sha1(gid.encode()).hexdigest()[:8]}"
            gpus.append(
                {
                    "id": gid,
                    "index": index,
                    "uuid": uuid,
                    "model": g.model.name,
                    "gis": gis,
                    "cis": dict.fromkeys(gis, True),
                    "busy": [],
                }
            )
        state_file(state_dir, h.id).write_text(json.dumps({"gpus": gpus, "driver": driver, "log": []}))
    env = dict(os.environ)
    env.update(
        PATH=f"{bin_dir}:{env['PATH']}",
        NVSMI_STATE=str(state_dir),
        NVSMI_HOST=instance.hosts[0].id,
        MIPOPT_SSH=str(ssh),
        MIPOPT_LOCAL_HOST=instance.hosts[0].id,
    )
    return env


def read_state(env: dict[str, str], host: str) -> dict[str, Any]:
    return json.loads(state_file(env["NVSMI_STATE"], host).read_text())


def write_state(env: dict[str, str], host: str, state: dict[str, Any]) -> None:
    state_file(env["NVSMI_STATE"], host).write_text(json.dumps(state))


def layouts(env: dict[str, str], instance: Any) -> dict[str, list[tuple[int, int]]]:
    """GPU id -> sorted (profile id, start) of the fake's GPU instances; asserts each has its CI."""
    out: dict[str, list[tuple[int, int]]] = {}
    for h in instance.hosts:
        for gpu in read_state(env, h.id)["gpus"]:
            assert all(gpu["cis"].get(k) for k in gpu["gis"]), (
                f"{gpu['id']}: a GPU instance without its compute instance"
            )
            out[gpu["id"]] = sorted((p, s) for p, s in gpu["gis"].values())
    return out


def changes(env: dict[str, str], instance: Any) -> list[list[str]]:
    """Every state-changing call the fake received, on every host."""
    return [e["argv"] for h in instance.hosts for e in read_state(env, h.id)["log"] if e["mutating"]]


if __name__ == "__main__":
    main(sys.argv[1:])
