"""Helpers for the tests of the benchmark scripts in ``benchmarks/``."""

from __future__ import annotations

import hashlib
import importlib.util
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
BENCH_DIR = ROOT / "benchmarks"


def digest(path: Path) -> str | None:
    """SHA-256 of a file, or None if it does not exist: committed results must not change in tests."""
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.exists() else None


def load(name: str) -> ModuleType:
    """Import ``benchmarks/<name>.py`` as a module (it imports ``common`` from its folder)."""
    sys.path.insert(0, str(BENCH_DIR))
    try:
        spec = importlib.util.spec_from_file_location(name, BENCH_DIR / f"{name}.py")
        assert spec and spec.loader
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # its dataclasses look their module up there
        spec.loader.exec_module(module)
        return module
    finally:
        sys.path.remove(str(BENCH_DIR))
