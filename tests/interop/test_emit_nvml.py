"""The emitted NVML script, run on the real ``nvidia-ml-py`` with only its C library faked.

``fakes/fake_nvml.py`` stands in for ``libnvidia-ml.so.1`` at the ctypes level: the real
``pynvml`` wrappers build their arguments, the fake fills the pointers and returns NVML's codes.
Each test runs ``python plan.py`` in a subprocess per host and asserts the fake's GPU instances
afterwards, its calls, and what the script printed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from emit_cases import cross_host, handmade, plan, swap_target
from fakes.fake_nvml import FakeDevice, FakeNvml, run_script_with_fake

import mipopt
from mipopt.interop.emit import nvml_script


def _node(inst: mipopt.Instance, host: str, driver: str = "550.54.15") -> FakeNvml:
    """The fake NVML of one host: its GPUs with the instance's running GPU instances."""
    devices = []
    for pos, gid in enumerate(inst.host(host).gpus):
        g = inst.gpu(gid)
        held = [
            (g.model.profile(w.profile).id, w.placement.start, w.placement.gpu_instance_id or 60 + k)
            for k, w in enumerate(inst.running)
            if w.placement is not None and w.placement.gpu == gid
        ]
        index = pos if g.device_index is None else g.device_index
        devices.append(
            FakeDevice(index=index, uuid=g.uuid or f"GPU-{host}-{index}", model=g.model.name, instances=held)
        )
    return FakeNvml(devices, driver_version=driver)


def _layout(fake: FakeNvml, index: int) -> list[tuple[int, int]]:
    assert all(ci == 1 for *_, ci in fake.gpu_instances(index)), "a GPU instance without its compute instance"
    return [(p, s) for p, s, _, _ in fake.gpu_instances(index)]


def _script(tmp_path: Path, inst: mipopt.Instance, target: dict[str, tuple[str, int]]) -> Path:
    path = tmp_path / "plan.py"
    path.write_text(nvml_script(inst, plan(inst, target)))
    return path


def _run(script: Path, fake: FakeNvml, *args: str) -> tuple[subprocess.CompletedProcess[str], FakeNvml]:
    return run_script_with_fake(script, list(args), fake, cwd=script.parent)


def test_apply_on_each_host_reaches_the_final_state_and_again_changes_nothing(tmp_path: Path) -> None:
    inst = handmade()
    script = _script(tmp_path, inst, swap_target())
    done, n1 = _run(script, _node(inst, "n1"), "--host", "n1", "--apply")
    assert done.returncode == 0, done.stderr
    assert (_layout(n1, 0), _layout(n1, 1)) == ([(9, 0), (9, 4)], [(5, 0), (19, 5)])
    assert done.stdout.splitlines()[-3:] == [
        "done: state reached:",
        "  n1 GPU GPU-bbbb: [5:0 19:5]",
        "  n1 GPU GPU-aaaa: [9:0 9:4]",
    ]
    done, n2 = _run(script, _node(inst, "n2"), "--host", "n2", "--apply")
    assert done.returncode == 0, done.stderr
    assert _layout(n2, 0) == [(9, 4)]
    again, n1_again = _run(script, n1, "--host", "n1", "--apply")
    assert again.returncode == 0, again.stderr
    assert n1_again.mutating_calls()[len(n1.mutating_calls()) :] == []


def test_a_dry_run_loads_no_nvml_and_says_nothing_changed(tmp_path: Path) -> None:
    inst = handmade()
    done, fake = _run(_script(tmp_path, inst, swap_target()), _node(inst, "n1"), "--host", "n1")
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[1] == "dry run: every check and operation, nothing run (--apply to act)"
    assert lines[-1] == "dry run: nothing changed"
    assert "  check n1 GPU GPU-bbbb has [19:6] (or [9:0 19:6] if done)" in lines
    assert fake.calls == []
    assert not (tmp_path / "plan.py.n1.journal").exists()


def test_a_destroy_refused_as_in_use_stops_and_the_same_command_resumes(tmp_path: Path) -> None:
    inst = handmade()
    script = _script(tmp_path, inst, swap_target())
    fake = _node(inst, "n1")
    fake.mark_in_use(1, 13)  # c's instance has a process on it
    stopped, fake = _run(script, fake, "--host", "n1", "--apply")
    assert stopped.returncode == 1
    assert stopped.stderr.strip().endswith(
        "In use by another client (when its workload has moved off, run this again: it resumes here)"
    )
    assert stopped.stderr.startswith(
        "mipopt plan: round 1: the driver refused 'round 1 destroy: destroy 1g.5gb"
    )
    fake.mark_in_use(1, 13, in_use=False)
    resumed, fake = _run(script, fake, "--host", "n1", "--apply")
    assert resumed.returncode == 0, resumed.stderr
    assert (_layout(fake, 0), _layout(fake, 1)) == ([(9, 0), (9, 4)], [(5, 0), (19, 5)])
    assert "done already (journal)" in resumed.stdout


def test_a_taken_target_or_an_old_driver_stops_before_any_change(tmp_path: Path) -> None:
    inst = handmade()
    script = _script(tmp_path, inst, swap_target())
    taken = _node(inst, "n1")
    busy = FakeNvml(
        [FakeDevice(0, "GPU-aaaa", "A100-40GB", instances=[(9, 0, 2), (9, 4, 1)]),
         FakeDevice(1, "GPU-bbbb", "A100-40GB", instances=[(19, 6, 13), (19, 0, 3)])]
    )  # fmt: skip
    done, busy = _run(script, busy, "--host", "n1", "--apply")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "mipopt plan: round 1: n1 GPU GPU-bbbb has [19:0 19:6]; before 'round 1 create"
    )
    assert busy.mutating_calls() == []
    done, taken = _run(script, _node(inst, "n1", driver="460.91.03"), "--host", "n1", "--apply")
    assert done.returncode == 1
    assert done.stderr.strip() == "mipopt plan: driver 460.91.03; placing GPU instances needs R470 or newer"
    assert taken.mutating_calls() == []
    done, odd = _run(script, _node(inst, "n1", driver="²70.1"), "--host", "n1", "--apply")  # "²".isdigit()
    assert done.returncode == 1
    assert done.stderr.strip() == "mipopt plan: driver ²70.1; placing GPU instances needs R470 or newer"
    assert odd.mutating_calls() == []


def test_a_move_between_hosts_destroys_its_source_only_after_the_other_hosts_create(tmp_path: Path) -> None:
    inst, target = cross_host()
    script = _script(tmp_path, inst, target)
    done, n1 = _run(script, _node(inst, "n1"), "--host", "n1", "--apply")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "mipopt plan: round 1: llm moves to n2; destroy its source here only once its target exists there: "
        "run `--round 1 --phase create --apply` on n2, then this with --remote-targets-ready"
    )
    assert n1.mutating_calls() == []
    done, n2 = _run(script, _node(inst, "n2"), "--host", "n2", "--round", "1", "--phase", "create", "--apply")
    assert done.returncode == 0, done.stderr
    assert _layout(n2, 0) == [(9, 4)]
    done, n1 = _run(script, n1, "--host", "n1", "--apply", "--remote-targets-ready")
    assert done.returncode == 0, done.stderr
    assert _layout(n1, 0) == [(0, 0)]


def test_the_hook_sees_the_move_and_a_failing_hook_keeps_the_source(tmp_path: Path) -> None:
    inst = handmade()
    script = _script(tmp_path, inst, swap_target())
    hook = f"echo $MIPOPT_WORKLOAD $MIPOPT_FROM_GPU $MIPOPT_FROM_START $MIPOPT_FROM_GI $MIPOPT_TO_GPU $MIPOPT_TO_START $MIPOPT_TO_GI $MIPOPT_TO_MIG_UUID >> {tmp_path}/hook.log"
    done, fake = _run(script, _node(inst, "n1"), "--host", "n1", "--apply", "--on-move", hook)
    assert done.returncode == 0, done.stderr
    moves = (tmp_path / "hook.log").read_text().splitlines()
    assert len(moves) == 4  # a parked, then home; b; c
    first = moves[0].split()
    assert first[:4] == ["a", "GPU-aaaa", "0", "2"] and first[4:6] == ["GPU-bbbb", "0"]
    assert first[6].isdigit() and int(first[6]) not in (1, 2, 13)  # the park's new GPU instance
    assert first[7] == fake.mig_uuid(1, int(first[6]))  # its MIG device, as NVML names it
    other = tmp_path / "cross"  # another plan, another journal
    other.mkdir()
    inst, target = cross_host()
    args = ("--host", "n1", "--apply", "--remote-targets-ready", "--on-move", "exit 3")
    stopped, fake = _run(_script(other, inst, target), _node(inst, "n1"), *args)
    assert stopped.returncode == 1
    assert (
        stopped.stderr.strip()
        == "mipopt plan: round 1: --on-move failed for llm; its source is kept (run again to resume)"
    )
    assert _layout(fake, 0) == [(9, 0)]


@pytest.mark.parametrize("host", ["n9"])
def test_a_host_outside_the_plan_is_told_so(tmp_path: Path, host: str) -> None:
    inst = handmade()
    done, fake = _run(_script(tmp_path, inst, swap_target()), _node(inst, "n1"), "--host", host, "--apply")
    assert done.returncode == 0
    assert done.stdout.splitlines()[-1] == "nothing to do on host 'n9' (hosts of the plan: 'n1', 'n2')"
    assert fake.calls == []
