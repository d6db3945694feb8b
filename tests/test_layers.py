"""The layer order of the package holds: no module imports a layer above its own.

The import graph is read from the source with :mod:`ast`, so imports inside functions
(lazy ones, made to dodge a cycle) and under ``TYPE_CHECKING`` count like top-level ones.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest
from factories import ROOT

PACKAGE = ROOT / "mipopt"

#: Bottom up: each layer's top-level names under ``mipopt`` ("" is the package root, the public API).
LAYERS: tuple[tuple[str, ...], ...] = (
    ("errors", "_fields", "_signals", "limits", "specs"),
    ("catalog",),
    ("geometry",),
    ("instance", "io", "executors", "examples"),
    ("verifier",),
    ("state",),
    ("solvers",),
    ("exact",),
    ("migrate",),
    ("heuristics",),
    ("workloads", "interop"),
    ("simulation",),
    ("render",),
    ("compare", "registry"),
    ("",),
    ("cli",),
)
LAYER_OF = {name: i for i, names in enumerate(LAYERS) for name in names}

#: (importing file, imported module) pairs allowed for now, each with the issue that removes it.
KNOWN: dict[tuple[str, str], str] = {}


def _module_name(path: Path) -> str:
    parts = path.relative_to(ROOT).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _is_module(dotted: str) -> bool:
    """Whether ``mipopt.a.b`` names a module or package of the source tree."""
    path = ROOT.joinpath(*dotted.split("."))
    return path.with_suffix(".py").is_file() or (path / "__init__.py").is_file()


def imports(path: Path, source: str | None = None) -> list[str]:
    """Every ``mipopt`` module ``path`` (or ``source`` read as that file) imports, anywhere in it.

    ``from a import b`` counts as an import of ``a.b`` when ``b`` is a module.
    """
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found: list[str] = []
    for node in ast.walk(ast.parse(path.read_text() if source is None else source, str(path))):
        if isinstance(node, ast.Import):
            found += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: resolved against the importing package
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, *([base] if base else [])])
            for a in node.names:
                found.append(f"{base}.{a.name}" if _is_module(f"{base}.{a.name}") else base)
    return [m for m in found if m == "mipopt" or m.startswith("mipopt.")]


def layer(module: str) -> tuple[int, str]:
    """The layer of a ``mipopt`` module: (position bottom up, the layer's name)."""
    top = module.split(".")[1] if "." in module else ""
    assert top in LAYER_OF, f"{module}: not in any layer of LAYERS (add its package there)"
    i = LAYER_OF[top]
    return i, "+".join(LAYERS[i]) or "mipopt (api)"


def violations() -> list[str]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        name = path.relative_to(ROOT).as_posix()
        mine, mine_name = layer(_module_name(path))
        for target in imports(path):
            theirs, their_name = layer(target)
            if theirs > mine and (name, target) not in KNOWN:
                found.append(f"{name} imports {target} ({mine_name} may not import {their_name})")
    return found


def test_no_module_imports_a_higher_layer() -> None:
    found = violations()
    assert not found, "a lower layer imports a higher one:\n" + "\n".join(found)


def test_known_exceptions_are_still_needed() -> None:
    """An exception that no longer happens is taken off :data:`KNOWN`."""
    for name, target in KNOWN:
        assert target in imports(ROOT / name), f"{name} no longer imports {target}: remove it from KNOWN"


def test_every_package_has_a_layer() -> None:
    tops = {
        p.stem if p.is_file() else p.name
        for p in PACKAGE.iterdir()
        if p.suffix == ".py" or (p / "__init__.py").is_file()
    }
    assert tops - {"__init__"} <= set(LAYER_OF)


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("import mipopt.migrate.graph\n", ["mipopt.migrate.graph"]),
        ("def f():\n    from mipopt.migrate.graph import graph_rounds\n", ["mipopt.migrate.graph"]),
        ("from mipopt import workloads\n", ["mipopt.workloads"]),
        ("from mipopt import __version__\n", ["mipopt"]),
        ("from .cluster import Cluster\n", ["mipopt.state.cluster"]),
        ("import numpy\n", []),
    ],
)
def test_imports_are_read_from_the_source(source: str, expected: list[str]) -> None:
    """The reader sees top-level and function-local imports, and ``from mipopt import <module>``."""
    assert imports(PACKAGE / "state" / "probe.py", source) == expected


def test_a_violation_names_the_file_the_import_and_the_layers() -> None:
    (mine, mine_name), (theirs, their_name) = layer("mipopt.state.cluster"), layer("mipopt.migrate.graph")
    assert (mine_name, their_name) == ("state", "migrate") and mine < theirs
    assert layer("mipopt")[1] == "mipopt (api)" and layer("mipopt.cli")[0] == len(LAYERS) - 1
