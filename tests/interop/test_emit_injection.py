"""No name from an instance is ever code in what mipopt emits.

Every host, GPU, UUID, workload and the instance's name carry payloads (``$(...)``, backticks,
``;``, quotes, ``\"\"\"``, ``\\N{``, ``%s``, YAML anchors and keys). Each form is generated and run in
a sandbox (the fake ``nvidia-smi`` and ``ssh`` on PATH, the test directory as working directory):
a payload that ran would leave a file ``PWNED-*`` there. The names a shell, a terminal or YAML
reader would misread (newlines, control characters, bidi overrides, a leading ``-``) cannot reach
an emitter at all: the instance refuses them, with the JSON path.
"""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from factories import ROOT
from fakes.fake_nvidia_smi import fake_cluster, layouts

import mipopt
from mipopt.instance import InstanceBuilder
from mipopt.interop.emit import emit, mig_parted_config, nvidia_smi_script, nvml_script

H1 = "n1$(touch PWNED-h1)"
H2 = "n2`touch PWNED-h2`;touch PWNED-h3 #"
G1 = "g'0\"; touch PWNED-g1; #"
G2 = "g1 &anchor *anchor key: value"
G3 = "g2 {x} %s %n \\N{LATIN SMALL LETTER A}"
U1 = "GPU-$(touch PWNED-u1)"
NAME = 'q"""+__import__(\'os\').system(\'touch PWNED-name\')+""" $(touch PWNED-name2) key: v'
W_RUN = "run'\"; touch PWNED-w1; #"
W_PARK = 'park"""; import os; os.system(\'touch PWNED-w2\'); """'
W_NEW = "new `touch PWNED-w3` & *anchor {0} \\N{x} - item: 1"


def _poisoned() -> tuple[mipopt.Instance, dict[str, tuple[str, int]]]:
    b = InstanceBuilder(NAME)
    b.add_host(H1, {G1: "A100-40GB", G2: "A100-40GB"}, device_indices={G1: 0, G2: 1}, uuids={G1: U1})
    b.add_host(H2, {G3: "A100-40GB"}, device_indices={G3: 0})
    b.add_workload(W_RUN, "3g.20gb", placement=(G1, 0), gpu_instance_id=2)
    b.add_workload(W_PARK, "3g.20gb", placement=(G1, 4), gpu_instance_id=1)
    b.add_workload(W_NEW, "4g.20gb")
    # W_RUN and W_PARK trade places (one parks), W_NEW lands on the other host
    return b.build(), {W_RUN: (G1, 4), W_PARK: (G1, 0), W_NEW: (G3, 0)}


def _pwned(where: Path) -> list[str]:
    return sorted(p.name for p in where.rglob("PWNED-*"))


def test_the_bash_script_runs_no_payload_in_a_dry_run_or_under_apply(tmp_path: Path) -> None:
    inst, target = _poisoned()
    plan = mipopt.plan_migration(inst, target)
    env = fake_cluster(tmp_path, inst)
    env["MIPOPT_LOCAL_HOST"] = H1
    script = tmp_path / "plan.sh"
    script.write_text(nvidia_smi_script(inst, plan))
    assert subprocess.run(["bash", "-n", str(script)], capture_output=True).returncode == 0
    for args in ([], ["--apply", "--on-move", "true"]):
        done = subprocess.run(
            ["bash", str(script), *args], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120
        )
        assert done.returncode == 0, done.stderr
    assert _pwned(tmp_path) == []
    assert layouts(env, inst) == {G1: [(9, 0), (9, 4)], G2: [], G3: [(5, 0)]}
    assert json.dumps(NAME) in done.stdout  # the title shows the name as data


def test_the_nvml_script_parses_and_its_dry_run_runs_no_payload(tmp_path: Path) -> None:
    inst, target = _poisoned()
    text = nvml_script(inst, mipopt.plan_migration(inst, target))
    tree = ast.parse(text)
    # the plan is one string constant given to json.loads: no name is anywhere else in the code
    names = {NAME, H1, H2, G1, G2, G3, U1, W_RUN, W_PARK, W_NEW}
    strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    assert not any(name in s for s in strings if not s.startswith("{") for name in names)
    path = tmp_path / "plan.py"
    path.write_text(text)
    for host in (H1, H2):
        done = subprocess.run(
            [sys.executable, str(path), "--host", host],
            capture_output=True,
            text=True,
            cwd=tmp_path,
            timeout=60,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.splitlines()[-1] == "dry run: nothing changed"
    assert _pwned(tmp_path) == []


def test_the_mig_parted_config_reads_back_as_exactly_the_configs() -> None:
    inst, target = _poisoned()
    text = mig_parted_config(inst, target)
    config = yaml.safe_load(text)
    assert list(config) == ["version", "mig-configs"]
    assert list(config["mig-configs"]) == [f"mipopt-{H1}", f"mipopt-{H2}"]
    assert all(line.startswith("#") for line in text.splitlines()[:5] if "PWNED" in line)


def test_the_json_form_keeps_every_name_as_it_is() -> None:
    inst, target = _poisoned()
    data = json.loads(emit(inst, mipopt.plan_migration(inst, target), "json"))
    assert {o["workload"] for o in data["operations"]} == {W_RUN, W_PARK, W_NEW}
    assert {o["host"] for o in data["operations"]} == {H1, H2}


@pytest.mark.parametrize(
    ("field", "value", "path", "shown"),
    [
        ("workload", "x\ntouch pwned\n#", "workloads[0].id", "'x\\ntouch pwned\\n#' has '\\n' at 1"),
        ("host", "node\x1b[2J", "hosts[0].id", "'node\\x1b[2J' has '\\x1b' at 4"),
        ("host", "-oProxyCommand=sh", "hosts[0].id", None),
        ("gpu", "g\u202e0", "hosts[0].gpus[0].id", "'g\\u202e0' has '\\u202e' at 1"),
        ("name", "a\x00b", "name", "'a\\x00b' has '\\x00' at 1"),
    ],
)
def test_names_a_shell_terminal_or_yaml_would_misread_never_reach_an_emitter(
    field: str, value: str, path: str, shown: str | None
) -> None:
    names = {"workload": "w", "host": "h", "gpu": "g", "name": "n"} | {field: value}
    b = InstanceBuilder(names["name"])
    b.add_host(names["host"], {names["gpu"]: "A100-40GB"})
    b.add_workload(names["workload"], "1g.5gb")
    with pytest.raises(mipopt.InstanceError) as err:
        b.build()
    assert err.value.path == path
    if shown is None:
        assert err.value.rule == f"must not start with '-': {value!r}"
    else:
        assert err.value.rule == f"must be one line of printable characters: {shown}"


def test_the_reported_injection_is_refused_in_one_line(tmp_path: Path) -> None:
    # the reproduction: a workload id with newlines, through solve and plan --emit
    data = json.loads((ROOT / "instances" / "quickstart.json").read_text())
    data["workloads"][3]["id"] = "x\ntouch pwned\n#"
    (tmp_path / "i.json").write_text(json.dumps(data))
    done = subprocess.run(
        [sys.executable, "-m", "mipopt.cli", "solve", "i.json", "--method", "ff", "--out", "s.json"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
    )
    assert done.returncode == 2
    assert done.stderr.strip() == (
        "mipopt: error: i.json: workloads[3].id: must be one line of printable characters: "
        "'x\\ntouch pwned\\n#' has '\\n' at 1"
    )
    assert not (tmp_path / "s.json").exists() and not (tmp_path / "pwned").exists()
