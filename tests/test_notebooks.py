"""Every notebook in analysis/ runs top to bottom headlessly, and is stored without outputs."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ANALYSIS = Path(__file__).resolve().parent.parent / "analysis"
NOTEBOOKS = sorted(ANALYSIS.glob("*.ipynb"))


TORCH_NOTEBOOKS = {"04_cost", "05_training", "06_numerical_methods"}


def test_there_are_notebooks_numbered_in_order():
    assert len(NOTEBOOKS) >= 4
    assert [p.stem[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_runs_and_is_stored_clean(path):
    book = nbformat.read(path, as_version=4)
    code = [c for c in book.cells if c.cell_type == "code"]
    assert all(not c.outputs and c.execution_count is None for c in code), "store notebooks without outputs"
    assert "parameters" in code[0].source, "the first code cell holds the parameters to scale up"
    if path.stem in TORCH_NOTEBOOKS:
        pytest.importorskip("torch")
    client = nbclient.NotebookClient(
        book, timeout=240, kernel_name="python3", resources={"metadata": {"path": str(ANALYSIS)}}
    )
    client.execute()
