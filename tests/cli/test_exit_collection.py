"""The command line leaves what a finished command holds to the kernel (issue 24): run as a
program, it freezes the collector's objects at the end instead of collecting them (1-3 s after a
16,000-GPU solve); called from Python (tests, notebooks), it leaves the collector alone."""

from __future__ import annotations

import gc
import subprocess
import sys

from factories import ROOT

from mipopt.cli import main

PROGRAM = """
import gc, sys
from mipopt.cli import main
sys.argv = ["mipopt", "validate", sys.argv[1]]
code = main()
print(code, gc.get_freeze_count() > 0)
"""


def test_run_as_the_program_it_freezes_rather_than_collects() -> None:
    done = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(ROOT / "instances" / "quickstart.json")],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.splitlines()[-1] == "0 True"


def test_called_with_arguments_it_leaves_the_collector_alone() -> None:
    before = gc.get_freeze_count()
    assert main(["validate", str(ROOT / "instances" / "quickstart.json")]) == 0
    assert gc.get_freeze_count() == before
