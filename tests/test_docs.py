"""The API reference (docs/api) builds without a warning, and the public API's examples run.

Every name of ``mipopt.__all__`` carries a ``>>>`` example (issue 13), and the examples of the
modules that define them are run here as doctests, from the repository root since they read
``instances/*.json``; so are the examples of every other module of the package.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import mipopt

ROOT = Path(__file__).resolve().parent.parent
FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _public() -> dict[str, object]:
    """The objects of ``mipopt.__all__``; ``__version__`` is a string and has no docstring."""
    return {name: getattr(mipopt, name) for name in mipopt.__all__ if name != "__version__"}


def _home(obj: object) -> str:
    return obj.__name__ if isinstance(obj, types.ModuleType) else obj.__module__  # type: ignore[attr-defined]


#: mipopt itself and the module each public name lives in.
DOCTEST_MODULES = sorted({"mipopt", "mipopt.registry", *(_home(obj) for obj in _public().values())})


@pytest.mark.integration
def test_api_reference_builds_without_warnings(tmp_path: Path) -> None:
    out = tmp_path / "html"
    build = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", "-b", "html", "docs/api", str(out)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert build.returncode == 0, build.stderr
    index = (out / "index.html").read_text(encoding="utf-8")
    assert "mipopt.solve" in index
    assert "MethodSpec" in index
    unlisted = [name for name in _public() if f"mipopt.{name}<" not in index.replace("</span>", "")]
    assert not unlisted, f"public names missing from the index: {unlisted}"
    # Each public name links to where it lives, which has a page of its own.
    assert 'href="registry.html#mipopt.registry.solve"' in index
    assert 'href="instance.html#mipopt.instance.types.Solution"' in index


def test_every_public_name_has_an_example() -> None:
    lacking = [name for name, obj in _public().items() if ">>>" not in (obj.__doc__ or "")]
    assert not lacking, f"public names without a >>> example in their docstring: {lacking}"


@pytest.mark.parametrize("name", DOCTEST_MODULES)
def test_public_doctests(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    tests = _doctests(name, monkeypatch)
    assert any(t.examples for t in tests), f"{name} has no doctest"
    _run(tests)


#: Every other module of the package: its examples must run too, where it has any.
OTHER_MODULES = sorted(
    {m.name for m in pkgutil.walk_packages(mipopt.__path__, "mipopt.") if not m.name.endswith(".__main__")}
    - set(DOCTEST_MODULES)
)


@pytest.mark.parametrize("name", OTHER_MODULES)
def test_module_doctests(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    _run(_doctests(name, monkeypatch))


def _doctests(name: str, monkeypatch: pytest.MonkeyPatch) -> list[doctest.DocTest]:
    monkeypatch.chdir(ROOT)
    return doctest.DocTestFinder().find(importlib.import_module(name))


def _run(tests: list[doctest.DocTest]) -> None:
    report: list[str] = []
    runner = doctest.DocTestRunner(optionflags=FLAGS)
    for test in tests:
        runner.run(test, out=report.append)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, "".join(report)
