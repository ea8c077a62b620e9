"""The documentation builds with warnings as errors, and its tables show the numbers of the committed result files."""

import importlib
import json
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytest.importorskip("sphinx")
pytest.importorskip("myst_nb")
pytest.importorskip("numpydoc")
pytest.importorskip("pydata_sphinx_theme")

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
    api = (html / "generated" / "api" / "receptive.coverage_by_layer.html").read_text()
    assert "receptive.coverage_by_layer" in api
    assert "max_memory=DEFAULT_MAX_MEMORY" in re.sub(r"<[^>]+>", "", api)  # the default as written, not in bytes


#: the packages whose ``__all__`` the API reference lists in full, each name where users import it from
PUBLIC_PACKAGES = (
    "receptive",
    "receptive.patterns",
    "receptive.coverage",
    "receptive.theory",
    "receptive.sweep",
    "receptive.bound",
    "graphs",
    "graphs.smallworld",
    "gpu.attention",
    "gpu.hf",
    "gpu.harness",
    "gpu.profile",
    "gpu.approx",
    "figures",
)


def test_api_reference_lists_every_public_name():
    sys.path.insert(0, str(DOCS / "_ext"))
    from receptive_docs import api_entries, resolve

    listed = api_entries(DOCS / "api")
    assert len(listed) == len(set(listed)), "a name is listed twice"
    documented = {id(resolve(name)) for name in listed}
    for package in PUBLIC_PACKAGES:
        module = importlib.import_module(package)
        for name in module.__all__:
            if name == "__version__":
                continue
            obj = getattr(module, name)
            assert f"{package}.{name}" in listed or id(obj) in documented, f"{package}.{name} is not in docs/api/"
    assert not [name for name in listed if name.split(".")[-1].startswith("_")]


def test_api_tables_show_summaries_without_citation_labels(html):
    for page in sorted((html / "api").glob("*.html")):
        text = re.sub(r"<[^>]+>", "", page.read_text())
        assert not re.search(r"\[R[0-9a-f]{6,}-\d+\]", text), page.name
        assert not re.search(r"\b(Sec|Eq)\.\n", text), page.name  # a summary cut after an abbreviation


def test_theory_is_mathematics(html):
    page = (html / "theory.html").read_text()
    assert page.count('class="math') > 50
    assert "{include}" not in (DOCS / "theory.md").read_text()  # the result tables live on the findings pages
