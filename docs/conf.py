"""Sphinx configuration of the receptive documentation.

Build: ``python -m pip install -e ".[docs]" && python -m sphinx -W -b html docs docs/_build/html``.
The tables, the notebook copies and the API pages are generated into ``docs/generated/`` at build time by
``docs/_ext/receptive_docs.py``; the notebooks are rendered from their stored outputs, never executed.
"""

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
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_nb",
    "sphinx_remove_toctrees",
    "receptive_docs",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = ["_build", "generated/tables", "**/.ipynb_checkpoints"]
templates_path = ["_templates"]

# API reference: one page per public module, one per public class and function (docs/generated/api)
autosummary_generate = True
autosummary_imported_members = False
autodoc_default_options = {"member-order": "bysource"}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
# numpydoc renders a References section as citations; module docstrings list references their text does not cite
suppress_warnings = ["ref.citation"]

# notebooks: rendered from their stored outputs
nb_execution_mode = "off"
nb_merge_streams = True
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence"]
myst_heading_anchors = 3

# the sidebar lists the three package pages of the API, not their ~500 module and object pages (those are linked
# from the package and module pages): each page renders the sidebar's whole toctree, so listing them all would cost
# most of the build (pydata-sphinx-theme's "Build performance and size")
remove_from_toctrees = ["generated/api/*.*.rst"]

html_theme = "pydata_sphinx_theme"
html_title = "receptive"
html_static_path = []
# collapse_navigation: the sidebar lists the current section only; expanding the whole tree (hundreds of API
# pages) on every page would take most of the build
html_theme_options = {
    "collapse_navigation": True,
    "navigation_depth": 2,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
