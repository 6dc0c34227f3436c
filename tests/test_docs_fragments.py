"""The shared parameter descriptions (``hierbench._docs``) land whole in the docstrings that name them."""

from __future__ import annotations

import importlib
import json
import pathlib
import re
import warnings

import pytest

from hierbench._base import field_alias
from hierbench._docs import SHARED
from hierbench._docs import fill_doc

SNAPSHOT = json.loads((pathlib.Path(__file__).parent / "public_api.json").read_text())


def test_an_entry_is_indented_as_its_marker_line():
    class Study:
        def run(self, rng=None):
            """Run.

            Parameters
            ----------
            %(rng)s
            """

    doc = fill_doc(Study.run).__doc__
    header, *description = SHARED["rng"].splitlines()
    lines = doc.splitlines()
    at = lines.index(" " * 12 + header)
    assert lines[at + 1 : at + 1 + len(description)] == [" " * 12 + d for d in description]


def test_an_unknown_entry_is_refused_by_name():
    def f():
        """Parameters
        ----------
        %(seed)s
        """

    with pytest.raises(KeyError, match=r"%\(seed\)s"):
        fill_doc(f)


def test_no_public_docstring_keeps_a_marker_and_numpydoc_reads_the_entries():
    docscrape = pytest.importorskip("numpydoc.docscrape")
    left = []
    for module, names in SNAPSHOT.items():
        mod = importlib.import_module(module)
        for name in names:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", DeprecationWarning)
                obj = getattr(mod, name, None)
            doc = getattr(obj, "__doc__", None) or ""
            if callable(obj) and re.search(r"^\s*%\(\w+\)s\s*$", doc, re.MULTILINE):
                left.append(f"{module}.{name}")
    assert not left
    from hierbench.freq import bootstrap_ci
    from hierbench.freq import pass_at_k

    params = {p.name: p for p in docscrape.FunctionDoc(bootstrap_ci)["Parameters"]}
    assert " ".join(params["rng"].desc) == " ".join(SHARED["rng"].splitlines()[1:]).replace("    ", "")
    names = [p.name for p in docscrape.FunctionDoc(pass_at_k)["Parameters"]]
    assert names == ["data", "k", "run_dim", "task_dim", "plugin", "small_n", "prob", "cluster"]


def test_field_alias_reads_the_field_and_documents_itself():
    class Result:
        rank_ci = (1, 3)
        ci = field_alias("rank_ci", "The rank's interval.")

    assert Result().ci == (1, 3)
    assert Result.ci.__doc__ == "The rank's interval."
    with pytest.raises(AttributeError):
        Result().ci = (0, 1)
