"""Run ``python benchmarks/bench_X.py`` as ``python -m benchmarks.bench_X``.

A benchmark run as a file has ``benchmarks/`` on its path, not the repository, so its
``from benchmarks import common`` would fail. Importing this module (the scripts do, first
thing, when they have no package) loads the ``benchmarks`` package from this folder, runs
the script's module in it as ``__main__`` and exits with its status.
"""

from __future__ import annotations

import importlib.util
import runpy
import sys
from pathlib import Path

_here = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location(
    "benchmarks", _here / "__init__.py", submodule_search_locations=[str(_here)]
)
assert _spec is not None and _spec.loader is not None
_package = importlib.util.module_from_spec(_spec)
sys.modules["benchmarks"] = _package
_spec.loader.exec_module(_package)
runpy.run_module(f"benchmarks.{Path(sys.argv[0]).stem}", run_name="__main__", alter_sys=True)
raise SystemExit(0)
