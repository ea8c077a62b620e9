"""Every notebook in analysis/ is stored executed (its outputs and figures visible on a repository page), without
an error in what is stored, and still runs top to bottom headlessly: the test re-executes it, and the notebooks'
own asserts check the key numbers they show."""

from pathlib import Path

import pytest

nbformat = pytest.importorskip("nbformat")
nbclient = pytest.importorskip("nbclient")

ANALYSIS = Path(__file__).resolve().parent.parent / "analysis"
NOTEBOOKS = sorted((p for p in ANALYSIS.rglob("*.ipynb") if ".ipynb_checkpoints" not in p.parts), key=lambda p: p.stem)


# the others need no torch
TORCH_NOTEBOOKS = {
    "04_cost",
    "05_training",
    "06_numerical_methods",
    "09_real_models",
    "10_paper_tasks",
    "11_attention_profile",
}


def test_there_are_notebooks_numbered_in_order():
    assert len(NOTEBOOKS) >= 4
    assert [p.stem[:2] for p in NOTEBOOKS] == [f"{i:02d}" for i in range(1, len(NOTEBOOKS) + 1)]


def code_cells(book):
    return [c for c in book.cells if c.cell_type == "code"]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_is_stored_executed(path):
    """Run in order, top to bottom, with outputs and no stored error."""
    code = code_cells(nbformat.read(path, as_version=4))
    assert "parameters" in code[0].source, "the first code cell holds the parameters to scale up"
    counts = [c.execution_count for c in code if c.source.strip()]
    assert None not in counts, f"{path.name}: store it executed (jupyter nbconvert --execute --inplace)"
    assert counts == sorted(counts) and len(set(counts)) == len(counts), f"{path.name}: cells run out of order"
    errors = [o for c in code for o in c.outputs if o.output_type == "error"]
    assert not errors, f"{path.name}: a stored output is an error: {errors[0].get('ename')}"
    assert any(c.outputs for c in code), f"{path.name}: no output stored"


@pytest.mark.notebook
@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_reruns(path):
    """Re-execute (a fresh kernel in the notebook's own folder); a failing cell or assert raises CellExecutionError."""
    if path.stem in TORCH_NOTEBOOKS:
        pytest.importorskip("torch")
    book = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        book, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(path.parent)}}
    )
    client.execute()
    errors = [o for c in code_cells(book) for o in c.outputs if o.output_type == "error"]
    assert not errors
