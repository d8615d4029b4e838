"""Sphinx configuration of the boostlib documentation site.

Build (from the repository root, with boostlib installed: ``pip install -e ".[docs]"``)::

    sphinx-build -W --keep-going -n -b html -d docs/_build/doctrees docs docs/_build/html
    sphinx-build -W --keep-going -n -b doctest -d docs/_build/doctrees docs docs/_build/doctest

The first builds the site, running every ``plot`` directive (the figures are computed at
build time on the bundled HIGGS subset); the second runs every ``testcode``/``doctest``
example of the pages and of the docstrings and fails when an output differs.
"""
from __future__ import annotations

import os
import re
import shutil
from pathlib import Path
from typing import Any, List

# The site documents the built-in components only: plugins installed in the building
# environment must not change what the examples print.
os.environ["BOOSTLIB_DISABLE_PLUGIN_AUTOLOAD"] = "1"
os.environ.setdefault("MPLBACKEND", "Agg")
# The examples train on a few thousand rows, where one thread is as fast as two and immune to
# busy-waiting OpenMP threads on a loaded machine (results never depend on the thread count).
os.environ.setdefault("OMP_NUM_THREADS", "1")

import boostlib  # noqa: E402  (installed, with its compiled kernels)

HERE = Path(__file__).resolve().parent
# The API pages are generated from the code on every build (stale pages would outlive
# renamed objects).
shutil.rmtree(HERE / "generated", ignore_errors=True)

project = "boostlib"
author = "the boostlib developers"
copyright = "the boostlib developers"
release = boostlib.__version__
version = release

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.doctest",
    "sphinx.ext.mathjax",
    "numpydoc",
    "myst_parser",
    "matplotlib.sphinxext.plot_directive",
]

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
root_doc = "index"
# Markdown files in sub-folders are data of a page (e.g. the result tables of docs/agbm/),
# not pages of the site.
exclude_patterns = ["_build", "*/**.md", "**/.ipynb_checkpoints", "Thumbs.db", ".DS_Store"]
templates_path = ["_templates"]
html_theme = "alabaster"
html_title = f"boostlib {release}"
html_theme_options = {"description": "Gradient boosting with Cython kernels and pluggy plugins",
                      "sidebar_collapse": True, "page_width": "1180px",
                      "body_max_width": "none"}
html_static_path: List[str] = []
pygments_style = "sphinx"

# -- Markdown (MyST): the pages stay readable on a code host as they are ----------------------
myst_enable_extensions = ["dollarmath", "colon_fence"]
myst_heading_anchors = 3          # [text](#section-title) links, as on GitHub
# Pages written for the code host may skip heading levels (## then ####); that renders fine.
suppress_warnings = ["myst.header"]

# -- API reference -----------------------------------------------------------------------------
autosummary_generate = True
autodoc_typehints = "none"        # the numpydoc sections give the types
autodoc_default_options = {"member-order": "bysource"}
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False
# Docstrings that document a parameter the function does not have, or format one badly,
# fail the build.
numpydoc_validation_checks = {"PR02", "PR10"}

# -- executed examples -------------------------------------------------------------------------
doctest_global_setup = """
import numpy as np
np.set_printoptions(precision=4, suppress=True)
"""
doctest_default_flags = (__import__("doctest").ELLIPSIS
                         | __import__("doctest").NORMALIZE_WHITESPACE)

plot_include_source = True
plot_html_show_source_link = False
plot_html_show_formats = False
plot_formats = [("png", 96)]
plot_rcparams = {"figure.figsize": (7.0, 4.2), "figure.dpi": 96}
plot_apply_rcparams = True

# -- warnings as errors: what may stay unresolved -----------------------------------------------
nitpicky = True
nitpick_ignore_regex = [
    # third-party types named in docstrings (no intersphinx: the build is offline)
    ("py:class", r"(numpy|np|matplotlib|pluggy|pandas|sklearn|os)\..*"),
    ("py:class", r"ndarray|array-like|callable|optional|default .*|dict|list|str|int|float"),
]

# -- pages written by others, included when present --------------------------------------------
#: Toctree entries of docs/index.md and modules of docs/api.rst that may not exist yet.
OPTIONAL_PAGES = ("callbacks", "sglb", "agbm", "model_files", "cli")
OPTIONAL_MODULES = ("boostlib.builtin.sglb", "boostlib.builtin.agbm")


def _page_exists(name: str) -> bool:
    return any((HERE / f"{name}{suffix}").exists() for suffix in source_suffix)


def _module_exists(name: str) -> bool:
    return (HERE.parent / Path(*name.split("."))).with_suffix(".py").exists()


#: A Markdown link out of docs/ into the repository, e.g. ``[x](../plugins/boostlib-huber)``.
_REPO_LINK = re.compile(r"\[([^\]\n]+)\]\((\.\./[^)\s]+)\)")


def _adapt_source(app: Any, docname: str, source: List[str]) -> None:
    """Adapt the Markdown pages, written to be read on the code host too, to the site.

    Links from a page to files of the repository outside docs/ become plain text (the site
    has no such pages), and the toctree lines of optional pages and modules that do not
    exist are removed.
    """
    source[0] = _REPO_LINK.sub(r"\1", source[0])
    if docname == "index":
        missing = {p for p in OPTIONAL_PAGES if not _page_exists(p)}
    elif docname == "api":
        missing = {m for m in OPTIONAL_MODULES if not _module_exists(m)}
    else:
        return
    lines = source[0].splitlines()
    source[0] = "\n".join(line for line in lines if line.strip() not in missing) + "\n"


def _always_reread(app: Any, env: Any, added: Any, changed: Any, removed: Any) -> List[str]:
    # an optional page that appears or disappears changes the index and the API page
    return ["index", "api"]


def _skip_foreign_members(app: Any, what: str, name: str, obj: Any, skip: bool,
                          options: Any) -> Any:
    """Leave out members inherited from scikit-learn (documented there)."""
    target = getattr(obj, "fget", obj)
    module = getattr(target, "__module__", None) or ""
    if re.match(r"sklearn(\.|$)", module):
        return True
    return None


def _plot_directive() -> Any:
    """matplotlib's ``plot`` directive, numbering the figures of a page across MyST blocks.

    In a Markdown page every ``{eval-rst}`` block is parsed as a document of its own, so
    the directive's per-document counter would restart and each block overwrite the
    previous block's figure. The count is kept per page instead.
    """
    from matplotlib.sphinxext.plot_directive import PlotDirective

    class Plot(PlotDirective):
        def run(self) -> List[Any]:
            env = self.state.document.settings.env
            counts = env.temp_data.setdefault("boostlib_plot_counts", {})
            attributes = self.state_machine.document.attributes
            attributes["_plot_counter"] = counts.get(env.docname,
                                                     attributes.get("_plot_counter", 0))
            try:
                return super().run()
            finally:
                counts[env.docname] = attributes["_plot_counter"]

    return Plot


def setup(app: Any) -> None:
    app.add_directive("plot", _plot_directive(), override=True)
    app.connect("source-read", _adapt_source)
    app.connect("env-get-outdated", _always_reread)
    app.connect("autodoc-skip-member", _skip_foreign_members)
