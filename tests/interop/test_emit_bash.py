"""The emitted bash plan, run for real against a fake ``nvidia-smi`` and ``ssh`` (``fakes/fake_nvidia_smi.py``).

Each test runs ``bash plan.sh`` and asserts what the fake GPUs hold afterwards, which calls changed
them, and the lines the script printed: the plan's final state under ``--apply``; nothing at all in
a dry run; a resume after a destroy refused as in use; no change when a create target is taken;
the hook's environment; idle instances reused or destroyed.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from emit_cases import cross_host, handmade, plan, swap_target, with_idle
from fakes.fake_nvidia_smi import changes, fake_cluster, layouts, mig_uuid, read_state, write_state

import mipopt
from mipopt.interop.emit import nvidia_smi_script, plan_operations


def _by_gpu(inst: mipopt.Instance, final: dict[str, tuple[str, int]]) -> dict[str, list[tuple[int, int]]]:
    out: dict[str, list[tuple[int, int]]] = {g.id: [] for g in inst.gpus}
    for wid, (gpu, start) in final.items():
        out[gpu].append((inst.gpu(gpu).model.profile(inst.workload(wid).profile).id, start))
    for idle in inst.idle:
        out[idle.gpu].append((inst.gpu(idle.gpu).model.profile(idle.profile).id, idle.start))
    return {g: sorted(set(v)) for g, v in out.items()}


def _run(tmp_path: Path, script: str, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "plan.sh"
    path.write_text(script)
    return subprocess.run(["bash", str(path), *args], capture_output=True, text=True, env=env, timeout=120)


def test_apply_reaches_the_final_state_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    inst = handmade()
    p = plan(inst, swap_target())
    assert p.rounds[0].moves[0].park
    env = fake_cluster(tmp_path, inst)
    done = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply")
    assert done.returncode == 0, done.stderr
    assert layouts(env, inst) == _by_gpu(inst, dict(p.final))
    n1 = [e["argv"] for e in read_state(env, "n1")["log"] if e["mutating"]]
    # the imported id of a is destroyed by id; the park's target looked up at run time
    assert ["mig", "-i", "GPU-aaaa", "-gi", "2", "-dci"] in n1 and [
        "mig",
        "-i",
        "GPU-aaaa",
        "-gi",
        "2",
        "-dgi",
    ] in n1
    assert done.stdout.splitlines()[-4:] == [
        "done: the plan is applied; state reached:",
        "  n1 GPU GPU-bbbb: [5:0 19:5]",
        "  n1 GPU GPU-aaaa: [9:0 9:4]",
        "  n2 GPU 0: [9:4]",
    ]
    before = len(changes(env, inst))
    again = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply")
    assert again.returncode == 0, again.stderr
    assert len(changes(env, inst)) == before
    assert again.stdout.count("done already (journal)") == len(plan_operations(inst, p))


def test_a_dry_run_prints_every_check_and_command_and_touches_nothing(tmp_path: Path) -> None:
    inst = handmade()
    p = plan(inst, swap_target())
    env = fake_cluster(tmp_path, inst)
    done = _run(tmp_path, nvidia_smi_script(inst, p), env)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[-1] == "dry run: nothing changed"
    assert "done" not in " ".join(lines[:-1]).replace("if done", "")
    assert "  check n1 GPU GPU-bbbb has [19:6] (or [9:0 19:6] if done)" in lines
    assert "  [n1] nvidia-smi mig -i GPU-bbbb -cgi 9:0 -C" in lines
    assert all(not read_state(env, h.id)["log"] for h in inst.hosts)  # not even a read
    assert not (tmp_path / "plan.sh.journal").exists()


def test_a_destroy_refused_as_in_use_stops_and_the_same_command_resumes(tmp_path: Path) -> None:
    inst = handmade()
    p = plan(inst, swap_target())
    env = fake_cluster(tmp_path, inst)
    state = read_state(env, "n1")
    state["gpus"][1]["busy"] = ["13"]  # c's instance has a process on it
    write_state(env, "n1", state)
    script = nvidia_smi_script(inst, p)
    stopped = _run(tmp_path, script, env, "--apply")
    assert stopped.returncode == 1
    assert stopped.stderr.strip() == (
        "mipopt plan: round 1: the driver refused to destroy the compute instances of GI 13 on n1 GPU "
        "GPU-bbbb: Unable to destroy compute instances on GPU instance ID 13 from GPU 1: In use by "
        "another client (when its workload has moved off, run this again: it resumes here)"
    )
    state = read_state(env, "n1")
    state["gpus"][1]["busy"] = []  # the workload has switched over
    write_state(env, "n1", state)
    resumed = _run(tmp_path, script, env, "--apply")
    assert resumed.returncode == 0, resumed.stderr
    assert layouts(env, inst) == _by_gpu(inst, dict(p.final))
    creates = [c for c in changes(env, inst) if "-cgi" in c]
    assert len(creates) == sum(o.op == "create" for o in plan_operations(inst, p))  # none twice


def test_a_taken_create_target_stops_the_script_before_any_change(tmp_path: Path) -> None:
    inst = handmade()
    p = plan(inst, swap_target())
    env = fake_cluster(tmp_path, inst)
    state = read_state(env, "n1")
    state["gpus"][1]["gis"]["3"] = [19, 0]  # someone made a 1g.5gb where the park goes
    state["gpus"][1]["cis"]["3"] = True
    write_state(env, "n1", state)
    done = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply")
    assert done.returncode == 1
    assert done.stderr.strip().startswith(
        "mipopt plan: round 1: n1 GPU GPU-bbbb has [19:0 19:6]; before 'create 3g.20gb at start 0 on n1 GPU "
        "GPU-bbbb (a: park (temporary, breaks a cycle of waits) from n1-gpu0:0)' the plan expects [19:6]"
    )
    assert changes(env, inst) == []


def test_an_old_driver_or_mig_off_stops_before_any_change(tmp_path: Path) -> None:
    inst = handmade()
    p = plan(inst, swap_target())
    env = fake_cluster(tmp_path, inst, driver="460.91.03")
    done = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "mipopt plan: n1 GPU GPU-bbbb: driver 460.91.03; placing GPU instances needs R470 or newer"
    )
    assert changes(env, inst) == []


def test_the_hook_runs_between_create_and_destroy_with_the_move_in_its_environment(tmp_path: Path) -> None:
    inst, target = cross_host()
    p = plan(inst, target)
    env = fake_cluster(tmp_path, inst)
    hook = f"env | grep ^MIPOPT_ | sort > {tmp_path}/hook.env"
    done = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply", "--on-move", hook)
    assert done.returncode == 0, done.stderr
    seen = dict(line.split("=", 1) for line in (tmp_path / "hook.env").read_text().splitlines())
    seen = {k: v for k, v in seen.items() if k not in ("MIPOPT_SSH", "MIPOPT_LOCAL_HOST")}  # the fake's
    gpu = read_state(env, "n2")["gpus"][0]
    assert seen == {
        "MIPOPT_WORKLOAD": "llm",
        "MIPOPT_FROM_HOST": "n1",
        "MIPOPT_FROM_GPU": "GPU-1111",
        "MIPOPT_FROM_START": "0",
        "MIPOPT_FROM_GI": "1",
        "MIPOPT_TO_HOST": "n2",
        "MIPOPT_TO_GPU": "GPU-2222",
        "MIPOPT_TO_START": "4",
        "MIPOPT_TO_GI": "1",
        "MIPOPT_TO_MIG_UUID": mig_uuid("n2", gpu, "1"),
    }
    assert layouts(env, inst) == {"n1-g0": [(0, 0)], "n2-g0": [(9, 4)]}


def test_a_failing_hook_keeps_the_source(tmp_path: Path) -> None:
    inst, target = cross_host()
    p = plan(inst, target)
    env = fake_cluster(tmp_path, inst)
    done = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply", "--on-move", "exit 3")
    assert done.returncode == 1
    assert done.stderr.strip() == (
        "mipopt plan: round 1: --on-move failed for llm; its source is kept (run again to resume)"
    )
    assert layouts(env, inst) == {"n1-g0": [(9, 0)], "n2-g0": [(9, 4)]}  # both: the handover waits


def test_pause_needs_a_terminal(tmp_path: Path) -> None:
    inst, target = cross_host()
    env = fake_cluster(tmp_path, inst)
    done = _run(tmp_path, nvidia_smi_script(inst, plan(inst, target)), env, "--apply", "--pause")
    assert done.returncode == 1
    assert done.stderr.strip() == "mipopt plan: --pause asks on a terminal, and standard input is not one"
    assert layouts(env, inst)["n1-g0"] == [(9, 0)]


def test_idle_instances_are_reused_or_destroyed_without_a_workload_stopping(tmp_path: Path) -> None:
    inst, target = with_idle()
    sol = mipopt.solve(inst, "ff")
    assert sol.placed() == target  # ff put r3 on the idle 3g.20gb (mipopt.state.idle.reuse_idle)
    p = plan(inst, target)
    env = fake_cluster(tmp_path, inst)
    done = _run(tmp_path, nvidia_smi_script(inst, p), env, "--apply")
    assert done.returncode == 0, done.stderr
    assert layouts(env, inst) == {"n1-g0": [(9, 0), (9, 4)], "n1-g1": [(14, 4)]}
    assert changes(env, inst) == [
        ["mig", "-i", "0", "-gi", "7", "-dci"],
        ["mig", "-i", "0", "-gi", "7", "-dgi"],
        ["mig", "-i", "0", "-cgi", "9:0", "-C"],
    ]
    assert "  reuse 3g.20gb at start 4 on n1 GPU 0 (r3: new request; reuses idle GPU instance)" in done.stdout


@pytest.mark.parametrize("bad", ["--apply --bogus", "--on-move"])
def test_bad_arguments_are_refused_in_one_line(tmp_path: Path, bad: str) -> None:
    inst, target = cross_host()
    env = fake_cluster(tmp_path, inst)
    done = _run(tmp_path, nvidia_smi_script(inst, plan(inst, target)), env, *bad.split())
    assert done.returncode == 2
    assert done.stderr.strip() in (
        "mipopt plan: unknown argument --bogus (see --help)",
        "mipopt plan: --on-move needs a command",
    )
    assert changes(env, inst) == []
