"""The documentation builds with warnings as errors, and its tables show the numbers of the committed result files."""

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")
pytest.importorskip("numpydoc")
pytest.importorskip("pydata_sphinx_theme")
pytest.importorskip("sphinx_remove_toctrees")

pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("docs")]  # one worker builds the site once (--dist loadgroup)

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"


@pytest.fixture(scope="module")
def html(tmp_path_factory):
    """Build the site once, as the README says (``-W``), into a temporary folder; return that folder."""
    out = tmp_path_factory.mktemp("docs")
    command = [sys.executable, "-m", "sphinx", "-W", "-b", "html", "-d", str(out / "doctrees"), "docs"]
    command.append(str(out / "html"))
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, capture_output=True, text=True, timeout=1800)
    seconds = time.perf_counter() - start
    log = f"{done.stdout[-4000:]}\n{done.stderr[-8000:]}"
    assert done.returncode == 0, f"sphinx -W failed after {seconds:.0f} s:\n{log}"
    return out / "html"


def table_rows(name: str) -> list[list[str]]:
    """The body rows of the generated Markdown table ``docs/generated/tables/NAME.md``, as lists of cells."""
    lines = (DOCS / "generated" / "tables" / f"{name}.md").read_text().splitlines()
    rows = [line.strip("|").split(" | ") for line in lines if line.startswith("| ")]
    return [[cell.strip() for cell in row] for row in rows[1:]]


def test_layouts_table_matches_its_file(html):
    data = json.loads((ROOT / "analysis/layouts/results/layouts.json").read_text())
    rows = {row[0]: row for row in table_rows("layouts")}
    assert set(rows) == {entry["layout"]["name"] for entry in data["layouts"]}
    for entry in data["layouts"]:
        layout = entry["layout"]
        row = rows[layout["name"]]
        lstar = layout["full_coverage_layer"]
        assert row[3] == (str(lstar) if lstar is not None else f"> {layout['depth']}")
        assert row[4] == f"{layout['last_token_span']:,}"
    page = (html / "findings" / "layouts.html").read_text()
    mistral = next(e["layout"] for e in data["layouts"] if e["layout"]["name"].startswith("mistral"))
    assert f"{mistral['last_token_span']:,}" in page


def test_coverage_table_matches_its_file(html):
    data = json.loads((ROOT / "analysis/receptive_fields/results/coverage_n32768_w64.json").read_text())
    rows = {(row[0], row[1]): row for row in table_rows("coverage_headline")}
    for name in ("sa", "sa+swa"):
        assert rows[(name.upper(), "bidirectional")][2] == str(data["patterns"][name]["full_coverage_layer"])
    swa = str(data["theory"]["swa_full_coverage_layer"])
    assert rows[("SWA", "bidirectional")][3].startswith(swa)
    assert f"{swa} (closed form)" in (html / "findings" / "coverage.html").read_text()


def test_every_table_names_its_command(html):
    for path in sorted((DOCS / "generated" / "tables").glob("*.md")):
        text = path.read_text()
        assert "*written by*" in text, path.name
        assert "(command not recorded)" not in text, path.name


def test_notebooks_and_api_are_rendered(html):
    notebooks = sorted(p.stem for p in ROOT.glob("analysis/*/[0-9][0-9]_*.ipynb"))
    assert notebooks
    for name in notebooks:
        assert (html / "generated" / "notebooks" / f"{name}.html").is_file(), name
    api = (html / "generated" / "api" / "receptive.coverage.html").read_text()
    assert "receptive.coverage" in api
