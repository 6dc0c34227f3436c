"""Reports: one self-contained HTML file (or Markdown) from a fit and/or an eval dataset.

:func:`build` writes the whole report in one call; :class:`Report` is the
builder underneath (sections of prose, tables and figures). The only part of
hierbench that imports plotting libraries (arviz-plots with its matplotlib
backend); import it explicitly.
"""

from ._build import SECTIONS, ReportSectionWarning, build
from ._build import _pair_table as _pair_table  # for hierbench.cli
from ._dstudy import plot_d_study
from ._figures import heatmap, interval_forest, passk_curves, ppc_plot, variance_plot
from ._report import Report, as_table, markdown_table

__all__ = [
    "SECTIONS",
    "Report",
    "ReportSectionWarning",
    "as_table",
    "build",
    "heatmap",
    "interval_forest",
    "markdown_table",
    "passk_curves",
    "plot_d_study",
    "ppc_plot",
    "variance_plot",
]
