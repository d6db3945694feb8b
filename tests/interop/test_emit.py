"""Plans emitted as operations, a mig-parted config and JSON; the scripts read back as plans.

The bash script's plan lines (``add_op``, every value quoted) are read back into a plan that
:func:`mipopt.verifier.verify_plan` checks; an imported cluster's plan runs against the fake
``nvidia-smi`` (``fakes/fake_nvidia_smi.py``; the script's own tests are in ``test_emit_bash.py``,
the NVML script's in ``test_emit_nvml.py``, names carrying code in ``test_emit_injection.py``).
The cluster is imported from the recorded outputs of ``../shared/interop`` where they exist.
"""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml
from emit_cases import handmade, swap_target
from fakes.fake_nvidia_smi import fake_cluster, layouts

import mipopt
from mipopt.instance import InstanceBuilder
from mipopt.interop import instance_from_nvidia_smi, merge_import
from mipopt.interop.emit import (
    PHASES,
    addressed_plan,
    emit,
    mig_parted_config,
    nvidia_smi_script,
    plan_operations,
)
from mipopt.migrate.plan import plan_from_dict
from mipopt.verifier import verify_plan

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "interop"
needs_shared = pytest.mark.skipif(
    not SHARED.is_dir(), reason="the recorded outputs are not in ../shared/interop"
)
FIELDS = ("round", "phase", "op", "reason", "workload", "host", "gpu", "profile_id", "start", "gi")


def _add_ops(script: str) -> list[dict[str, str]]:
    """The script's operations, read from its ``add_op`` lines as bash would split them."""
    return [
        dict(zip(FIELDS, shlex.split(line)[1:], strict=False))
        for line in script.splitlines()
        if line.startswith("add_op ")
    ]


def test_the_script_reads_back_as_a_plan_that_verifies() -> None:
    inst = handmade()
    target = swap_target()
    plan = mipopt.plan_migration(inst, target)
    ops = _add_ops(nvidia_smi_script(inst, plan))
    assert [o["phase"] for o in ops] == [o.phase for o in plan_operations(inst, plan)]
    address = {}
    for h in inst.hosts:
        for pos, gid in enumerate(h.gpus):
            g = inst.gpu(gid)
            address[h.id, g.uuid or str(pos if g.device_index is None else g.device_index)] = gid
    where = inst.current_placement()
    rebuilt: dict[str, Any] = {"format": "mipopt-plan", "version": 1, "instance": inst.name}
    rebuilt |= {"semantics": "create-first", "rounds": []}
    for number in sorted({int(o["round"]) for o in ops}):
        moves, creates = [], []
        for o in ops:
            if int(o["round"]) != number or o["op"] != "create":
                continue
            to = {"gpu": address[o["host"], o["gpu"]], "start": int(o["start"])}
            if o["reason"] in ("move", "park"):
                source = where[o["workload"]]
                kind = (
                    "intra_gpu" if source[0] == to["gpu"]
                    else "inter_gpu" if inst.gpu(source[0]).host == inst.gpu(to["gpu"]).host
                    else "inter_host"
                )  # fmt: skip
                moves.append(
                    {"workload": o["workload"], "from": {"gpu": source[0], "start": source[1]}, "to": to,
                     "kind": kind, "park": o["reason"] == "park"}
                )  # fmt: skip
            else:
                creates.append({"workload": o["workload"], "to": to})
        for item in (*moves, *creates):
            where[item["workload"]] = (item["to"]["gpu"], item["to"]["start"])
        rebuilt["rounds"].append({"drains": [], "moves": moves, "creates": creates})
    rebuilt["final"] = [{"workload": w, "gpu": g, "start": st} for w, (g, st) in where.items()]
    report = verify_plan(inst, rebuilt, target)
    assert report.valid, report.violations
    assert sum(len(r["moves"]) for r in rebuilt["rounds"]) == 4  # a parked then home, b, c


def test_operations_carry_each_gpu_before_and_after() -> None:
    inst = handmade()
    ops = plan_operations(inst, mipopt.plan_migration(inst, swap_target()))
    assert PHASES == ("drain", "create", "destroy")
    first = ops[0]
    assert (first.op, first.reason, first.workload, first.gpu, first.start) == (
        "create",
        "park",
        "a",
        "n1-gpu1",
        0,
    )
    assert (first.before, first.after) == (("19:6",), ("9:0", "19:6"))
    assert first.peer == {"host": "n1", "gpu": "n1-gpu0", "gpu_index": 0, "gpu_uuid": "GPU-aaaa", "start": 0}
    # an operation's after is the next operation's before on the same GPU
    last: dict[str, tuple[str, ...]] = {}
    for o in ops:
        if o.gpu in last:
            assert o.before == last[o.gpu]
        last[o.gpu] = o.after


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
    base = mipopt.Instance(
        imported.name,
        imported.hosts,
        imported.gpus,
        imported.workloads + requests.workloads,
        imported.custom_models,
    )
    merged, notes = merge_import(base, imported)
    assert notes == ()
    sol = mipopt.solve(merged, "exact", time_limit_s=60)
    assert mipopt.verify(merged, sol).valid
    plan = mipopt.plan_migration(merged, sol)
    assert verify_plan(merged, addressed_plan(merged, plan), dict(plan.final)).valid
    env = fake_cluster(tmp_path, merged)
    script = tmp_path / "plan.sh"
    script.write_text(nvidia_smi_script(merged, plan))
    done = subprocess.run(
        ["bash", str(script), "--apply"], capture_output=True, text=True, env=env, timeout=120
    )
    assert done.returncode == 0, done.stderr
    expected: dict[str, list[tuple[int, int]]] = {g.id: [] for g in merged.gpus}
    for wid, (gpu, start) in plan.final.items():
        expected[gpu].append((merged.gpu(gpu).model.profile(merged.workload(wid).profile).id, start))
    assert layouts(env, merged) == {g: sorted(v) for g, v in expected.items()}


@needs_shared
def test_the_scripts_lgi_reader_reads_a_recorded_lgi(tmp_path: Path) -> None:
    # the script's awk against what a real H100 PCIe printed (scaleway): 3g.40gb (id 9) at 4 is GI 2
    template = (Path(mipopt.__file__).parent / "interop" / "templates" / "plan.sh").read_text()
    awk = re.search(r"^  awk '(.*)' <<<\"\$out\"$", template, re.M)
    assert awk is not None
    out = subprocess.run(
        ["awk", awk.group(1)],
        input=(SHARED / "H100-80GB__lgi__1.txt").read_text(),
        capture_output=True,
        text=True,
    )
    rows = sorted(tuple(map(int, line.split())) for line in out.stdout.splitlines())
    imported = instance_from_nvidia_smi({"n": [SHARED / "H100-80GB__lgi__1.txt"]}, gpu_model="H100-80GB")
    assert rows == sorted(
        (
            imported.gpu(w.placement.gpu).model.profile(w.profile).id,
            w.placement.start,
            w.placement.gpu_instance_id,
        )
        for w in imported.running
    )
    assert (9, 4, 2) in rows


# --- mig-parted and json


def test_mig_parted_config_counts_profiles_per_gpu_group() -> None:
    inst = handmade()
    plan = mipopt.plan_migration(inst, swap_target())
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
    inst = handmade()
    target = swap_target()
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
    inst = handmade()
    plan = mipopt.plan_migration(inst, swap_target())
    with pytest.raises(
        mipopt.InstanceError,
        match=r"^form: must be one of nvidia-smi, nvml-python, mig-parted, json, got 'yaml'$",
    ):
        emit(inst, plan, "yaml")


def test_idle_instances_are_reused_destroyed_when_in_the_way_and_otherwise_kept() -> None:
    b = InstanceBuilder("idle")
    b.add_host("n1", {"g0": "A100-40GB"}, device_indices={"g0": 0})
    for start, gi in ((0, 7), (1, 8), (2, 9)):
        b.add_idle("g0", "1g.5gb", start, gpu_instance_id=gi)
    b.add_workload("one", "1g.5gb")
    b.add_workload("two", "2g.10gb")
    inst = b.build()
    assert mipopt.solve(inst, "ff").placed() == {"one": ("g0", 0), "two": ("g0", 4)}  # ff goes around them
    ops = plan_operations(inst, mipopt.plan_migration(inst, {"one": ("g0", 0), "two": ("g0", 2)}))
    assert [(o.op, o.reason, o.workload, o.start, o.gpu_instance_id) for o in ops] == [
        ("destroy", "idle", "", 2, 9),  # in the way of the 2g.10gb
        ("reuse", "new", "one", 0, 7),
        ("create", "new", "two", 2, None),
    ]  # the 1g.5gb at 1 stays, idle
    assert ops[-1].after == ("19:0", "19:1", "14:2")
