"""``hierbench demo``: the main job, section by section: data, fit, compare, plan, report.

Each section takes the :class:`DemoContext` (the evaluation and, for the
embedded default, its true parameters), returns the text it prints, and
leaves its results in ``ctx.extra`` for the report. On the embedded default
(simulated from known parameters) every interval is printed beside the truth
it is meant to cover; on a user's log (``hierbench demo --data LOG``) the
truth columns are left out.

PyMC is imported only by the Bayesian section, and plotting only by the
report section.
"""

from ._context import DemoContext
from ._context import population_truth
from ._run import ANALYSIS_SECTIONS
from ._run import DEMO_SECTIONS
from ._run import demo_sections
from ._run import run_demo
from ._run import write_report

__all__ = [
    "ANALYSIS_SECTIONS",
    "DEMO_SECTIONS",
    "DemoContext",
    "demo_sections",
    "population_truth",
    "run_demo",
    "write_report",
]
