"""Sphinx configuration for hierbench's documentation site.

Built with warnings as errors (``sphinx-build -W``; ``tests/test_docs.py`` runs it):
a broken cross-reference or a malformed docstring fails the build. Nothing is
fetched from the network: the notebooks are rendered from their committed outputs,
and references to other projects' objects are not resolved (see ``nitpick_ignore_regex``).
"""

from __future__ import annotations

import importlib
import pathlib
import shutil
import types
import warnings

ROOT = pathlib.Path(__file__).resolve().parent.parent

project = "hierbench"
author = "the hierbench developers"
copyright = "2026, the hierbench developers"

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "numpydoc",
    "myst_nb",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
exclude_patterns = ["_build", "**.ipynb_checkpoints"]
html_theme = "pydata_sphinx_theme"
html_title = "hierbench"
html_theme_options = {"navigation_with_keys": False, "show_toc_level": 2}
# the ~330 one-name API pages have no left sidebar: it listed every name of the subpackage on
# each of them (a third of the site's build time and 15 of its 43 MB) and cut their long titles
# off; the breadcrumbs lead back to the subpackage's page, which lists the names
html_sidebars = {"api/generated/*": []}

# --- API reference: one page per public name, generated from each subpackage's __all__
autosummary_generate = True
templates_path = ["_templates"]
autodoc_typehints = "none"  # the numpydoc Parameters sections carry the types
autodoc_default_options = {"members": False}
numpydoc_show_class_members = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set[str] = set()

# --- notebooks: rendered from their committed outputs, never executed here
nb_execution_mode = "off"
myst_enable_extensions = ["dollarmath", "colon_fence"]
suppress_warnings = ["myst.header"]  # notebooks open with a level-2 heading under the title

# --- cross-references: ours must resolve; other projects' objects cannot (no network)
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(numpy|np|xarray|xr|pandas|pd|scipy|pymc|pm|pytensor|arviz\w*|az|matplotlib|plt|"
     r"collections|typing|concurrent|pathlib|os|dask|duckdb|numba|nutpie|datetime)(\..*)?"),
    (r"py:.*", r"(int|float|str|bool|None|object|list|dict|tuple|callable|Callable|Any|Sequence|"
     r"Mapping|Iterable|Hashable|Literal|optional|array-like|array_like|Generator|Path|PathLike)"),
]

#: the public subpackages, in the order the reference lists them
PUBLIC = ["", "data", "freq", "bayes", "metrics", "design", "compare", "report", "io", "testing"]


def _api_pages() -> None:
    """Write docs/api/<module>.rst listing every name in the module's ``__all__``.

    Run when this file is read, before autosummary looks for the pages it must fill.
    A name that is the same object as one already listed (a warning class two
    subpackages export, a name kept for a release after it moved) gets a short
    alias entry pointing to its home instead of a second page.
    """
    out = ROOT / "docs" / "api"
    shutil.rmtree(out / "generated", ignore_errors=True)  # a renamed name's old page must not linger
    out.mkdir(exist_ok=True)
    home: dict[int, str] = {}
    toc = []
    for name in PUBLIC:
        title = f"hierbench.{name}".rstrip(".")
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            mod = importlib.import_module(title)
            objs = {n: getattr(mod, n) for n in mod.__all__ if not n.startswith("_")}
        moved = getattr(mod, "_MOVED", {})
        pages, aliases = [], []
        for n in sorted(objs):
            if isinstance(objs[n], types.ModuleType):
                continue
            if n in moved:  # _base.moved_names: old name -> (module, new name, why)
                aliases.append((n, f"{moved[n][0]}.{moved[n][1]}", "deprecated: moved to"))
            elif id(objs[n]) in home and not isinstance(objs[n], (int, float, str, tuple)):
                aliases.append((n, home[id(objs[n])], "the same object as"))
            else:
                pages.append(n)
                home.setdefault(id(objs[n]), f"{title}.{n}")
        lines = [title, "=" * len(title), "", f".. automodule:: {title}", "   :no-members:", "",
                 f".. currentmodule:: {title}", "",
                 ".. autosummary::", "   :toctree: generated", "   :nosignatures:", ""]
        lines += [f"   {n}" for n in pages]
        if aliases:
            lines += ["", "Aliases", "-------", ""]
            for n, target, how in aliases:
                lines += [f".. py:data:: {n}", "", f"   {how.capitalize()} :obj:`{target}`.", ""]
        page = name or "hierbench"
        (out / f"{page}.rst").write_text("\n".join(lines) + "\n")
        toc.append(f"   {page}")
    top = ["API reference", "=============", "",
           "Every public name of every subpackage (its ``__all__``), one page each.", "",
           ".. toctree::", "   :maxdepth: 1", "", *toc]
    (out / "index.rst").write_text("\n".join(top) + "\n")


def _copy_sources(app) -> None:
    """Bring the notebooks, the model cards and the benchmark notes in, as they are committed."""
    src = pathlib.Path(app.srcdir)
    for sub, pattern, dest in (("notebooks", "*.ipynb", "gallery"), ("models", "*/card.md", "models")):
        target = src / dest
        target.mkdir(exist_ok=True)
        for f in sorted((ROOT / sub).glob(pattern)):
            name = f.name if f.suffix == ".ipynb" else f"{f.parent.name}.md"
            shutil.copyfile(f, target / name)
    bench = ROOT / "benchmarks" / "README.md"
    if bench.exists():
        shutil.copyfile(bench, src / "benchmarks.md")


_api_pages()


def setup(app):
    """Copy the generated sources in when the builder starts."""
    app.connect("builder-inited", _copy_sources)
