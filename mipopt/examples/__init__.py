"""The example instances, from any install: ``mipopt.examples.load("quickstart")``.

They are the repository's ``instances/*.json``, small instances with their expected results
(paper examples among them) that the README, the docs, the notebooks and the tests read as
``instances/NAME.json``. That folder is their one copy: a wheel carries them in this package
(``setup.py``'s build step copies them here), while a checkout or an editable install reads
them where they are.

Examples
--------
>>> from mipopt import examples
>>> examples.names()[:3]
['default_order', 'fbk_fig3', 'grmu_fig2b']
>>> examples.load("quickstart").name, examples.path("swap.target").name
('quickstart', 'swap.target.json')
"""

from __future__ import annotations

from pathlib import Path

from mipopt.errors import InstanceError
from mipopt.instance import Instance
from mipopt.instance.parse import document_kind
from mipopt.io import load_instance, read_json

__all__ = ["folder", "load", "names", "path"]

_HERE = Path(__file__).resolve().parent


def folder() -> Path:
    """The folder of the example files: this package's in a wheel, else the checkout's ``instances/``."""
    return _HERE if any(_HERE.glob("*.json")) else _HERE.parents[1] / "instances"


def names() -> list[str]:
    """The names of the example instances, sorted (:func:`path` also knows the solutions
    beside them, ``NAME.target``: the targets of the migration examples)."""
    return sorted(p.stem for p in folder().glob("*.json") if document_kind(read_json(p)) == "instance")


def path(name: str) -> Path:
    """The file of the example ``name`` (an instance of :func:`names`, or a ``NAME.target`` solution).

    Raises
    ------
    InstanceError
        Naming ``name`` when there is no such example; the message lists them.
    """
    found = folder() / f"{name}.json"
    if not found.is_file():
        known = ", ".join(sorted(p.stem for p in folder().glob("*.json")))
        raise InstanceError("name", f"no example {name!r} (known: {known})")
    return found


def load(name: str) -> Instance:
    """The example instance ``name``, read by :func:`mipopt.load_instance`.

    Raises
    ------
    InstanceError
        Naming ``name`` when there is no such example.
    """
    return load_instance(path(name))
