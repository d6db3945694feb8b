"""Helpers for the tests of the benchmark scripts in ``benchmarks/`` (the ``benchmarks`` package)."""

from __future__ import annotations

import csv
import hashlib
import importlib
import subprocess
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "results"
README = ROOT / "benchmarks" / "README.md"


def digest(path: Path) -> str | None:
    """SHA-256 of a file, or None if it does not exist: committed results must not change in tests."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def load(name: str) -> ModuleType:
    """The benchmark module ``benchmarks.<name>``."""
    return importlib.import_module(f"benchmarks.{name}")


def run(name: str, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    """``python -m benchmarks.<name> ARGS`` from the repository's root, its output captured."""
    return subprocess.run(
        [sys.executable, "-m", f"benchmarks.{name}", *args],
        cwd=ROOT,
        check=check,
        capture_output=True,
        text=True,
    )


def read_csv(path: Path, columns: list[str]) -> list[dict[str, str]]:
    """The rows of a benchmark's CSV file, after checking its header is ``columns``."""
    with path.open(newline="") as fh:
        reader = csv.DictReader(fh)
        assert reader.fieldnames == columns
        return list(reader)
