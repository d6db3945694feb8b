"""What a wheel carries: the package, its type hints (py.typed) and the example instances, which
setup.py's build step copies from instances/ (their one copy) into mipopt/examples/.

The build step runs here on a copy of the sources (``setup.py build_py``, offline); building
and installing a whole wheel (``python -m pip wheel . --no-deps``) needs the build isolation's
setuptools from the package index and is not repeated in the tests.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest
from factories import INSTANCES, ROOT

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``setup.py build_py`` of a copy of the sources: the build folder a wheel is packed from."""
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "setup.py", "MANIFEST.in", "README.md"):
        shutil.copy(ROOT / name, src / name)
    shutil.copytree(ROOT / "instances", src / "instances")
    shutil.copytree(ROOT / "mipopt", src / "mipopt", ignore=shutil.ignore_patterns("__pycache__"))
    lib = src / "lib"
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(lib)],
        cwd=src,
        check=True,
        capture_output=True,
    )
    return lib


def test_the_build_carries_the_examples_and_py_typed(built: Path) -> None:
    package = built / "mipopt"
    assert (package / "py.typed").is_file()
    copied = sorted(p.name for p in (package / "examples").glob("*.json"))
    assert copied == sorted(p.name for p in INSTANCES.glob("*.json"))
    assert all((package / "examples" / n).read_bytes() == (INSTANCES / n).read_bytes() for n in copied)


def test_the_built_package_finds_its_examples_and_solves_one(built: Path, tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(built)}
    where = subprocess.run(
        [
            sys.executable,
            "-c",
            "import mipopt.examples as e; print(e.__file__); print(e.folder()); print(e.path('quickstart'))",
        ],
        cwd=tmp_path,  # not the checkout: the built package alone
        env=env,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.splitlines()
    assert where[0] == str(built / "mipopt" / "examples" / "__init__.py")
    assert where[1] == str(built / "mipopt" / "examples")
    solve = subprocess.run(
        [sys.executable, "-m", "mipopt.cli", "solve", where[2], "--method", "ff"],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
    )
    assert solve.returncode == 0, solve.stderr
    assert solve.stdout.splitlines()[0] == "instance 'quickstart': 2 hosts, 3 GPUs, 8 workloads"


def test_the_metadata_says_what_users_look_for() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert "Typing :: Typed" in project["classifiers"]
    assert project["urls"]["Homepage"] == "https://mipopt.dev"
    package_data = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]
    assert "py.typed" in package_data["mipopt"]
    assert (ROOT / "mipopt" / "py.typed").is_file()
