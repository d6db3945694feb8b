"""Shared fixtures: the committed instances by name, loaded once per test session.

Helpers that tests import directly (instance factories, ``ROOT``, ``INSTANCES``) live in
``factories.py``; the benchmark scripts' helpers in ``bench_scripts.py``. Tests mirror the
package tree (``tests/exact/`` tests ``mipopt/exact/``, ...); the top level holds what spans
packages: the public API and registry, the layers, the README, the docs and the notebooks.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache

import pytest
from factories import INSTANCES

import mipopt


@cache
def _load(name: str) -> mipopt.Instance:
    return mipopt.load_instance(INSTANCES / f"{name}.json")


@pytest.fixture
def committed() -> Callable[[str], mipopt.Instance]:
    """A committed instance by file stem: ``committed("grmu_fig2b")`` (instances are frozen)."""
    return _load


@pytest.fixture
def quickstart() -> mipopt.Instance:
    """``instances/quickstart.json``: 2 hosts, 3 GPUs, 3 running and 5 new workloads."""
    return _load("quickstart")


@pytest.fixture
def fig2b() -> mipopt.Instance:
    """``instances/grmu_fig2b.json``: GRMU's Fig. 2b, where first fit rejects what the optimum places."""
    return _load("grmu_fig2b")


@pytest.fixture
def fbk_fig3() -> mipopt.Instance:
    """``instances/fbk_fig3.json``: one host, 3 GPUs, 8 workloads (the MFI paper's Fig. 3)."""
    return _load("fbk_fig3")
