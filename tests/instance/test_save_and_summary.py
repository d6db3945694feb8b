"""Instances and solutions as users call them: a solution summarizes itself, both save themselves
(atomically, never over the file the instance was read from), and to_json is what save writes."""

from __future__ import annotations

import dataclasses
import json
import pickle
import shutil
from pathlib import Path

import pytest
from factories import INSTANCES

import mipopt
from mipopt.errors import InstanceError, ParameterTypeError
from mipopt.instance import InstanceBuilder, Status, Termination
from mipopt.verifier import no_solution, solution_for

# --- a solution knows the instance it answers


@pytest.mark.parametrize("method", ["ff", "exact", "ibm-initial"])
def test_a_solved_solution_summarizes_itself(quickstart: mipopt.Instance, method: str) -> None:
    sol = mipopt.solve(quickstart, method)
    assert sol._instance is quickstart
    text = sol.summary()
    assert text == sol.summary(quickstart)
    assert text.splitlines()[0] == "instance 'quickstart': 2 hosts, 3 GPUs, 8 workloads"


def test_every_way_a_method_packages_a_solution_remembers_the_instance(fig2b: mipopt.Instance) -> None:
    made = solution_for(
        fig2b,
        fig2b.current_placement(),
        method="m",
        termination=Termination.COMPLETED,
        status=Status.FEASIBLE,
    )
    none = no_solution(fig2b, method="m", termination=Termination.TIME_LIMIT, runtime_s=1.0, message="")
    assert made._instance is fig2b and none._instance is fig2b
    # kept through replace, but neither compared, printed nor written
    assert dataclasses.replace(made, message="changed")._instance is fig2b
    assert made == dataclasses.replace(made, _instance=None)
    assert "_instance" not in repr(made) and "_instance" not in made.to_json()
    assert pickle.loads(pickle.dumps(made))._instance == fig2b  # executors carry it across processes


def test_a_solution_read_from_a_file_says_what_its_summary_lacks(
    quickstart: mipopt.Instance, tmp_path: Path
) -> None:
    solved = mipopt.solve(quickstart, "ff")
    solved.save(tmp_path / "sol.json")
    sol = mipopt.load_solution(tmp_path / "sol.json")
    with pytest.raises(ParameterTypeError) as info:
        sol.summary()
    assert str(info.value) == (
        "instance: this solution does not know the instance it answers (it was read from a file or built "
        "by hand): pass it, summary(mipopt.load_instance(PATH))"
    )
    assert isinstance(info.value, TypeError)
    assert sol.summary(quickstart) == solved.summary()  # given its instance, the same text


# --- saving


@pytest.fixture
def copied(tmp_path: Path) -> Path:
    """A copy of ``instances/quickstart.json`` in a temporary folder, safe to write over."""
    return Path(shutil.copy(INSTANCES / "quickstart.json", tmp_path / "quickstart.json"))


def test_an_instance_saves_what_to_json_says_and_reads_back_equal(
    quickstart: mipopt.Instance, tmp_path: Path
) -> None:
    out = tmp_path / "out.json"
    quickstart.save(out)
    assert out.read_text() == quickstart.to_json()
    assert json.loads(quickstart.to_json())["format"] == "mipopt-instance"
    assert mipopt.load_instance(out) == quickstart
    assert sorted(p.name for p in tmp_path.iterdir()) == ["out.json"]  # no temporary file left


def test_save_never_writes_over_the_file_the_instance_was_read_from(copied: Path) -> None:
    before = copied.read_text()
    inst = mipopt.load_instance(copied)
    changed = dataclasses.replace(inst, description="changed")  # remembers the file through replace
    for target, path in [
        (inst, copied),
        (changed, copied),
        (inst, copied.parent / "sub" / ".." / copied.name),  # however the path is spelt
        (mipopt.solve(inst, "ff"), copied),  # a solution of it, too
    ]:
        with pytest.raises(InstanceError) as info:
            target.save(path)
        assert (
            str(info.value)
            == f"path: {path} is the file the instance was read from; write it to another file"
        )
    assert copied.read_text() == before
    sol = mipopt.solve(inst, "ff")
    sol.save(copied.with_name("sol.json"))
    assert mipopt.load_solution(copied.with_name("sol.json")) == sol


def test_an_instance_from_no_file_saves_anywhere(tmp_path: Path) -> None:
    b = InstanceBuilder("built")
    b.add_host("h", {"g": "A100-40GB"})
    b.add_workload("w", "1g.5gb")
    inst = b.build()
    inst.save(tmp_path / "built.json")
    inst.save(tmp_path / "built.json")  # over its own output: that is no input
    assert mipopt.load_instance(tmp_path / "built.json") == inst
