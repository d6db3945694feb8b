"""Every notebook under ``notebooks/`` runs top to bottom and checks its own results.

The notebooks teach with ``assert`` cells (STYLE.md: they end with assertions on their
own results), so a notebook that runs without raising has passed its own checks. New
notebooks are picked up by the glob; nothing here needs editing when one is added. Executing
them is marked ``integration`` (a few minutes); it stays in the default run and in CI.
"""

from __future__ import annotations

from pathlib import Path

import nbformat
import pytest
from nbclient import NotebookClient

NOTEBOOK_DIR = Path(__file__).resolve().parents[1] / "notebooks"
NOTEBOOKS = sorted(NOTEBOOK_DIR.glob("*.ipynb"))
CELL_TIMEOUT_S = 300


def _code_cells(nb: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [c for c in nb.cells if c.cell_type == "code"]


def test_notebooks_are_found() -> None:
    # Guards the glob: a moved folder would otherwise turn every test below into zero tests.
    assert "01_mig_geometry.ipynb" in {p.name for p in NOTEBOOKS}


@pytest.mark.integration
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs(path: Path) -> None:
    """Execute every cell with the ``python3`` kernel, working directory ``notebooks/``."""
    nb = nbformat.read(path, as_version=4)
    needs = nb.metadata.get("mipopt", {}).get("needs")  # data kept outside the repository
    if needs and not (NOTEBOOK_DIR / needs).is_dir():
        pytest.skip(f"{path.name} reads {needs}, which is not here")
    client = NotebookClient(
        nb,
        timeout=CELL_TIMEOUT_S,
        kernel_name="python3",
        resources={"metadata": {"path": str(NOTEBOOK_DIR)}},
    )
    client.execute()  # raises CellExecutionError, naming the cell, when any cell raises
    errors = [o for c in _code_cells(nb) for o in c.outputs if o.output_type == "error"]
    assert errors == []


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_committed_clean(path: Path) -> None:
    """Committed without outputs (small diffs) and ending in a cell of assertions."""
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    cells = _code_cells(nb)
    dirty = [i for i, c in enumerate(nb.cells) if c.cell_type == "code" and (c.outputs or c.execution_count)]
    assert dirty == [], f"{path.name}: cells {dirty} carry outputs; strip them before committing"
    assert cells and "assert " in cells[-1].source, f"{path.name}: the last code cell must assert results"
