"""Sphinx configuration of the receptive documentation.

Build: ``python -m pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html``.
The tables and the notebook copies are generated into ``docs/generated/`` at build time by
``docs/_ext/receptive_docs.py``, and autosummary writes one page per public name of the API reference
(``docs/api/``) there; the notebooks are rendered from their stored outputs, never executed. The build is offline:
the inventories of the other projects' documentation are the files of ``docs/_intersphinx/``.
"""

import os
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE / "_ext"))
sys.path.insert(0, str(HERE.parent))

import receptive  # noqa: E402

project = "receptive"
author = "the receptive authors"
copyright = "2026, the receptive authors"
release = receptive.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
    "receptive_docs",
    "frontier_tables",
    "command_tables",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "generated/tables", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

# every cross-reference must resolve (with -W, an unresolved one fails the build)
nitpicky = True

# API reference: the topic pages of docs/api/ list the public names; autosummary writes one page per name
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
autodoc_preserve_defaults = True  # max_memory="3GiB" as written, not its value in bytes
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# numpydoc renders a References section as citations; module docstrings list references their text does not cite
suppress_warnings = ["ref.citation"]

# the other projects' inventories, committed so that the build never reaches the network
# (docs/_intersphinx/local_inventories.py says where each comes from)
_INVENTORIES = HERE / "_intersphinx"
intersphinx_mapping = {
    "python": ("https://docs.python.org/3", str(_INVENTORIES / "python.inv")),
    "numpy": ("https://numpy.org/doc/stable", str(_INVENTORIES / "numpy.inv")),
    "scipy": ("https://docs.scipy.org/doc/scipy", str(_INVENTORIES / "scipy.inv")),
    "networkx": ("https://networkx.org/documentation/stable", str(_INVENTORIES / "networkx.inv")),
    "torch": ("https://docs.pytorch.org/docs/stable", str(_INVENTORIES / "torch.inv")),
    "transformers": ("https://huggingface.co/docs/transformers/main/en", str(_INVENTORIES / "transformers.inv")),
}
intersphinx_timeout = 1

# MathJax from its CDN; RECEPTIVE_DOCS_MATHJAX points an offline build at a local copy (docs/screenshots.py serves
# one at /_mathjax/)
if os.environ.get("RECEPTIVE_DOCS_MATHJAX"):
    mathjax_path = os.environ["RECEPTIVE_DOCS_MATHJAX"]

# notebooks: rendered from their stored outputs
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

html_theme = "pydata_sphinx_theme"
html_title = "receptive"
html_static_path = ["_static"]
html_css_files = ["receptive.css"]
# collapse_navigation: the sidebar lists the current section only
html_theme_options = {
    "collapse_navigation": True,
    "navigation_depth": 2,
    "show_toc_level": 2,
    "header_links_before_dropdown": 6,
    # the findings pages show wide tables and figures of several panels: their page contents go to the left sidebar
    "secondary_sidebar_items": {
        "findings/*": [],
        **{page: ["page-toc"] for page in ("index", "theory", "benchmarks", "notebooks", "guide/*", "api/*")},
        "generated/*/*": ["page-toc"],
    },
}
# pages without a section to navigate get no left sidebar (it would only say "Section Navigation")
html_sidebars = {
    "index": [],
    "theory": [],
    "benchmarks": [],
    "notebooks": [],
    "findings/*": ["sidebar-nav-bs", "page-toc"],
}
