"""The one build step pyproject.toml cannot say: the example instances go into the package.

``instances/*.json`` at the repository root is the one copy of the examples (the README, the
docs, the notebooks and the tests read them there); building a wheel copies them into
``mipopt/examples/``, where :mod:`mipopt.examples` finds them in an installed package. An
editable install reads them where they are and copies nothing.
"""

from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

EXAMPLES = Path(__file__).resolve().parent / "instances"


class BuildPy(build_py):
    """``build_py`` that also copies ``instances/*.json`` into ``mipopt/examples/``."""

    def run(self) -> None:
        super().run()
        if getattr(self, "editable_mode", False):
            return
        target = Path(self.build_lib, "mipopt", "examples")
        target.mkdir(parents=True, exist_ok=True)
        for source in sorted(EXAMPLES.glob("*.json")):
            self.copy_file(str(source), str(target / source.name))


setup(cmdclass={"build_py": BuildPy})
