"""``hb.io``, ``hb.report`` and ``hb.bayes`` resolve from a bare ``import hierbench as hb`` (audit I, 7).

The README and getting started write ``hb.io.save_fit``, ``hb.io.load_fit``,
``hb.io.load_dataset`` and ``hb.report.build``; they raised ``AttributeError``.
The heavy two must still load PyMC / matplotlib only when touched, and stay out of
``from hierbench import *``. What is imported is read from ``sys.modules`` of a
fresh interpreter, not from the package.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = "('pymc', 'pytensor', 'matplotlib', 'arviz_plots')"


def _run(code: str) -> str:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return out.stdout.strip()


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_hb_io_resolves_without_loading_pymc_or_matplotlib():
    code = (
        "import sys, hierbench as hb; from hierbench import *;"
        "f = (hb.io.save_fit, hb.io.load_fit, hb.io.load_dataset);"
        f"print([m for m in {HEAVY} if m in sys.modules], hb.io.__name__)"
    )
    assert _run(code) == "[] hierbench.io"


@pytest.mark.slow  # a fresh interpreter importing PyMC: about 4 s
def test_hb_report_and_hb_bayes_resolve_lazily():
    code = (
        "import sys, hierbench as hb;"
        "before = 'pymc' in sys.modules;"
        "f = (hb.report.build, hb.bayes.fit, hb.bayes.build_crossed);"
        "print(before, 'pymc' in sys.modules, hb.report.__name__, hb.bayes.__name__)"
    )
    assert _run(code) == "False True hierbench.report hierbench.bayes"
