"""The README's Quick start is exactly the two commands the project promises, and CI runs the second."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from factories import ROOT


def quick_start_commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Quick start\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no Quick start section"
    blocks = re.findall(r"^```\n(.*?)^```", section.group(1), re.S | re.M)
    return [line for block in blocks for line in block.splitlines() if line.strip()]


def test_quick_start_has_exactly_the_two_commands() -> None:
    assert quick_start_commands() == [
        'python -m pip install -e ".[dev]" && mipopt solve instances/quickstart.json',
        'python -m pip install -e ".[dev]" && python -m pytest',
    ]


def test_readme_opens_with_quick_start() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "README.md").read_text(), re.M)
    assert headings[0] == "Quick start"


def test_ci_runs_the_second_command_as_written() -> None:
    script = (ROOT / ".ci" / "run").read_text()
    # .ci/run reads the command out of README.md rather than keeping a copy that could drift;
    # run its extraction line and compare with the README's second command.
    extract = next(line for line in script.splitlines() if line.startswith("cmd=$("))
    out = subprocess.run(
        ["bash", "-c", f'{extract}\nprintf "%s" "$cmd"'], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert out.stdout == quick_start_commands()[1]
    assert 'bash -c "$cmd"' in script
    assert re.search(r"^\s*5\) .*exit 1", script, re.M)  # pytest's "no tests collected" fails CI


def test_python_section_runs_as_a_doctest(monkeypatch: pytest.MonkeyPatch) -> None:
    import doctest

    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Python\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no Python section"
    (block,) = re.findall(r"^```python\n(.*?)^```", section.group(1), re.S | re.M)
    test = doctest.DocTestParser().get_doctest(block, {}, "README.md#python", "README.md", 0)
    assert len(test.examples) >= 8
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS)
    monkeypatch.chdir(ROOT)  # the example names instances/ relative to the checkout
    runner.run(test)
    assert runner.summarize(verbose=False).failed == 0


def test_python_section_comes_right_after_the_quick_start() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "README.md").read_text(), re.M)
    assert headings[:2] == ["Quick start", "Python"]


def _simulate_section() -> str:
    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## Online policies over time\n(.*?)^## ", text, re.S | re.M)
    assert section, "README.md has no section on simulate"
    return section.group(1)


def test_simulate_examples_run_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    from mipopt.cli import main

    blocks = re.findall(r"^```\n(.*?)^```", _simulate_section(), re.S | re.M)
    commands = [b.strip() for b in blocks if b.startswith("mipopt simulate")]
    assert len(commands) == 4
    monkeypatch.chdir(ROOT)
    ran = 0
    for command in commands:
        argv = shlex.split(command)[1:]
        shared = re.search(r"path=\.\./shared/([^,\s]+)", command)  # the Alibaba trace, MIGBench's
        if shared and not (ROOT.parent / "shared" / shared.group(1)).exists():
            continue
        if "--out" in argv:
            argv[argv.index("--out") + 1] = str(tmp_path / "out")
        assert main(argv) == 0, command
        ran += 1
    assert ran >= 2
    # the printed table of the first example is what the command prints: policy, runs, accepted, rate
    capsys.readouterr()
    assert main(shlex.split(commands[0])[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    shown = next(b for b in blocks if b.startswith("workload fbk")).splitlines()
    assert shown[0] == printed[0]
    rows = {line.split()[0]: line.split()[1:4] for line in printed[3:]}
    for line in shown[2:]:
        assert line.split()[1:4] == rows[line.split()[0]], line


def test_hindsight_example_prints_what_the_readme_shows(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import shlex

    from mipopt.cli import main

    text = (ROOT / "README.md").read_text()
    section = re.search(r"^## How far from the best possible.*?\n(.*?)^## ", text, re.S | re.M)
    assert section
    command, shown = re.findall(r"^```\n(.*?)^```", section.group(1), re.S | re.M)[:2]
    monkeypatch.chdir(ROOT)
    assert main(shlex.split(command.strip())[1:]) == 0
    printed = capsys.readouterr().out.splitlines()
    # the same lines but for the solve times
    strip = lambda lines: [re.sub(r", [0-9.]+ s$", "", line) for line in lines if line.strip()]  # noqa: E731
    assert strip(printed) == strip(shown.splitlines())
