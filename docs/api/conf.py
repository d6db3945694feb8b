"""Sphinx configuration of the mipopt API reference (built by tests/test_docs.py with -W).

Build it with ``python -m sphinx -b html docs/api docs/api/_build``.
"""

from __future__ import annotations

import importlib
import inspect
import types
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective
from sphinx.util.nodes import nested_parse_with_titles

project = "mipopt"
author = "mipopt contributors"
extensions = ["sphinx.ext.autodoc", "sphinx.ext.napoleon"]

# numpydoc sections only: Google-style parsing would read prose lines such as "Note:" as sections.
napoleon_google_docstring = False
napoleon_numpy_docstring = True
# Returns sections here name the values ("series, summary"), so no "Return type" line.
napoleon_use_rtype = False

autodoc_member_order = "bysource"
autodoc_preserve_defaults = True

exclude_patterns = ["_build"]
html_theme = "alabaster"

logger = logging.getLogger(__name__)


class PublicApi(SphinxDirective):
    """``.. public-api::``: every name of ``mipopt.__all__``, its summary line and a link to
    where it is documented (its home module), generated so that the list cannot drift."""

    def run(self) -> list[nodes.Node]:
        import mipopt

        lines: list[str] = []
        for name in mipopt.__all__:
            obj = getattr(mipopt, name)
            if isinstance(obj, str):  # __version__
                continue
            if isinstance(obj, types.ModuleType):
                home, target, role = obj.__name__, obj.__name__, "mod"
            else:
                home, target = obj.__module__, f"{obj.__module__}.{obj.__qualname__}"
                role = "exc" if isinstance(obj, type) and issubclass(obj, BaseException) else None
                role = role or ("class" if isinstance(obj, type) else "func")
            summary = (inspect.getdoc(obj) or "").split("\n\n")[0]
            # The summary's relative references (:class:`Status`) resolve in its home module.
            lines += [f".. currentmodule:: {home}", "", f":{role}:`mipopt.{name} <{target}>`"]
            lines += [f"   {line}" for line in summary.splitlines()]
            lines += [f"   (in :mod:`{home}`)", ""]
        lines += [".. currentmodule:: mipopt", ""]
        container = nodes.container()
        nested_parse_with_titles(self.state, StringList(lines, source="mipopt.__all__"), container)
        return container.children


#: Docstrings in files outside the reference's own change that docutils misreads, corrected as
#: they are read (object name -> (text, replacement)) until their owners fix the source; an
#: entry whose text is gone fails the build, so that it is removed.
DOCSTRING_FIXES: dict[str, tuple[str, str]] = {}  # (text, replacement) per object, while its source is fixed


def _fix_docstring(app: Sphinx, what: str, name: str, obj: object, options: Any, lines: list[str]) -> None:
    if name not in DOCSTRING_FIXES:
        return
    text, replacement = DOCSTRING_FIXES[name]
    joined = "\n".join(lines)
    if text not in joined:
        logger.warning("DOCSTRING_FIXES[%r]: %r no longer in the docstring; remove the entry", name, text)
        return
    lines[:] = joined.replace(text, replacement, 1).split("\n")


def _resolve_reexport(app: Sphinx, env: Any, node: Any, contnode: nodes.Element) -> nodes.Element | None:
    """A reference by a re-export path (``mipopt.solve``, ``mipopt.instance.Solution``, or
    ``alibaba_trace`` in :mod:`mipopt.workloads`) goes to where the object is documented: the
    module it lives in."""
    target = node.get("reftarget", "")
    if node.get("refdomain") != "py":
        return None
    if not target.startswith("mipopt.") and node.get("py:module"):
        target = f"{node['py:module']}.{target}"
    if not target.startswith("mipopt."):
        return None
    parts = target.split(".")
    obj: Any = None
    for i in range(len(parts), 0, -1):  # the longest importable prefix, then attributes
        try:
            obj = importlib.import_module(".".join(parts[:i]))
        except ImportError:
            continue
        for attr in parts[i:]:
            obj = getattr(obj, attr, None)
        break
    home = f"{getattr(obj, '__module__', '')}.{getattr(obj, '__qualname__', '')}"
    if home.startswith(".") or home.endswith(".") or home == target:
        return None
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, node["reftype"], home, node, contnode
    )


def setup(app: Sphinx) -> dict[str, Any]:
    app.connect("missing-reference", _resolve_reexport)
    app.add_directive("public-api", PublicApi)
    app.connect("autodoc-process-docstring", _fix_docstring, priority=100)  # before napoleon
    return {"parallel_read_safe": True}
