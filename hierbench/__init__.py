"""hierbench: honest statistics for AI and agent evaluations.

The frequentist half (:mod:`hierbench.data`, :mod:`hierbench.freq`,
:mod:`hierbench.design`, :mod:`hierbench.metrics`) is light: importing
``hierbench`` never imports PyMC or matplotlib. The Bayesian models live in
:mod:`hierbench.bayes` and plotting in :mod:`hierbench.report`; import them
explicitly.
"""

from importlib.metadata import PackageNotFoundError, version

from . import compare, data, design, freq, metrics, testing
from ._base import DEFAULT_PROB, HierbenchError, HierbenchWarning

try:
    __version__ = version("hierbench")
except PackageNotFoundError:  # pragma: no cover - running from a source tree
    __version__ = "0.0.0+unknown"

__all__ = [
    "DEFAULT_PROB",
    "HierbenchError",
    "HierbenchWarning",
    "__version__",
    "compare",
    "data",
    "design",
    "freq",
    "metrics",
    "testing",
]
