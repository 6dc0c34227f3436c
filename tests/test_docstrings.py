"""Every docstring example in hierbench runs, as written (the examples are documentation users copy).

One test per module, so a failure names the module. A module that needs an
optional dependency (PyMC, matplotlib, ...) is skipped only when that
dependency is not installed.
"""

from __future__ import annotations

import doctest
import importlib
import importlib.util
import pkgutil
import warnings

import numpy as np
import pytest

import hierbench

#: optional dependency -> module-name prefixes that need it
_OPTIONAL = {
    "pymc": ("hierbench.bayes",),
    "matplotlib": ("hierbench.report",),
}


#: modules whose examples fit a model (tens of seconds): marked slow, still run in CI
# examples that take over ~2 s (a fit, a design study, a report): the slow lane runs them
_SLOW = {
    "hierbench.bayes._sampler._fit", "hierbench.compare._compare", "hierbench.design._loo",
    "hierbench.design._working", "hierbench.freq._glmm._effects", "hierbench.report._build",
}


def _has_examples(name: str) -> bool:
    spec = importlib.util.find_spec(name)
    origin = getattr(spec, "origin", None)
    return bool(origin) and ">>> " in open(origin, encoding="utf-8").read()


def _modules() -> list:
    names = ["hierbench"]
    for info in pkgutil.walk_packages(hierbench.__path__, prefix="hierbench."):
        names.append(info.name)
    # a module without examples has nothing to run: it is not collected (rather than skipped)
    names = [n for n in names if _has_examples(n)]
    return [
        pytest.param(n, marks=pytest.mark.slow) if n in _SLOW else n for n in sorted(names)
    ]


def _missing_dependency(name: str) -> str | None:
    for dep, prefixes in _OPTIONAL.items():
        if name.startswith(prefixes) and importlib.util.find_spec(dep) is None:
            return dep
    return None


@pytest.mark.parametrize("module_name", _modules())
def test_docstring_examples_run(module_name, monkeypatch, shared_data):
    dep = _missing_dependency(module_name)
    if dep is not None:
        pytest.skip(f"{module_name} needs {dep}, which is not installed")
    module = importlib.import_module(module_name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    # only the examples written in this module (not those of names it re-exports)
    tests = [t for t in finder.find(module, module_name) if t.examples]
    if not tests:
        pytest.skip(f"{module_name} has no docstring examples")
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    failures = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # examples may warn (that is shown in their own tests)
        with np.printoptions(legacy="1.25"):
            for t in tests:
                out: list[str] = []
                res = runner.run(t, out=out.append, clear_globs=True)
                if res.failed:
                    failures.append(f"{t.name}:\n" + "".join(out))
    assert not failures, "\n".join(failures)
