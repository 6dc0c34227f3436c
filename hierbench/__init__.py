"""hierbench: honest statistics for AI and agent evaluations.

The frequentist half (:mod:`hierbench.data`, :mod:`hierbench.freq`,
:mod:`hierbench.design`, :mod:`hierbench.metrics`) is light: importing
``hierbench`` never imports PyMC or matplotlib. The Bayesian models live in
:mod:`hierbench.bayes` and plotting in :mod:`hierbench.report`; import them
explicitly.

The subpackages are imported on first use (``hierbench.freq`` works as
always), so ``import hierbench`` and ``hierbench --help`` stay fast. That holds
for the heavy ones too: ``hb.bayes`` and ``hb.report`` import PyMC and
matplotlib when first touched, not before (they stay out of ``__all__``, so
``from hierbench import *`` does not load them).
"""

import importlib

_SUBMODULES = ("compare", "data", "design", "freq", "io", "metrics", "testing")
# imported on first use like the others, but left out of __all__: they load PyMC / matplotlib
_HEAVY_SUBMODULES = ("bayes", "report")
_FROM_BASE = (
    "DEFAULT_PROB",
    "BoundaryWarning",
    "HierbenchError",
    "HierbenchWarning",
    "NotConvergedWarning",
    "PartialCreditError",
    "SmallSampleWarning",
    "UndefinedWarning",
    # raised by bayes (an unidentified default), freq's GLMMs and metrics: one place to catch it from
    "UnidentifiedWarning",
)
# independent seeded work on any concurrent.futures executor (the library's own studies use it)
_FROM_PARALLEL = ("map_seeded", "spawn_generators")
__all__ = [*_FROM_BASE, "__version__", *_SUBMODULES, *_FROM_PARALLEL]


def __getattr__(name: str):
    if name == "__version__":  # importlib.metadata is slow to import: only when asked
        from importlib.metadata import PackageNotFoundError
        from importlib.metadata import version

        try:
            return version("hierbench")
        except PackageNotFoundError:  # pragma: no cover - running from a source tree
            return "0.0.0+unknown"
    if name in _SUBMODULES or name in _HEAVY_SUBMODULES:
        return importlib.import_module(f".{name}", __name__)
    if name in _FROM_BASE:
        return getattr(importlib.import_module("._base", __name__), name)
    if name in _FROM_PARALLEL:
        return getattr(importlib.import_module("._parallel", __name__), name)
    raise AttributeError(f"module 'hierbench' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | set(_HEAVY_SUBMODULES))
