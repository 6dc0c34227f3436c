"""Reports: one self-contained HTML file (or Markdown) from a fit and/or an eval dataset.

:func:`build` writes the whole report in one call; :class:`Report` is the
builder underneath (sections of prose, tables and figures). The only part of
hierbench that imports plotting libraries (arviz-plots with its matplotlib
backend); import it explicitly. :func:`pair_frame` and :func:`pair_matrix`
are the pair comparisons the report, the CLI and the demo all print;
:func:`check_fit_data` refuses a fit and a log that are not the same
evaluation.
"""

from ._battles import battle_log_summary as battle_log_summary  # for the CLI; not in __all__
from ._build import SECTIONS
from ._build import ReportSectionWarning
from ._build import build
from ._build import build_all as build_all  # for the demo; not in __all__
from ._context import checked_person_fit as checked_person_fit  # for the CLI, demo; not in __all__
from ._dstudy import plot_d_study
from ._effects import effects_lines as effects_lines  # for the CLI; not in __all__
from ._figures import heatmap
from ._figures import interval_forest
from ._figures import passk_curves
from ._figures import ppc_plot
from ._figures import variance_plot
from ._flags import FEW_UNITS as FEW_UNITS  # for the demo; not in __all__
from ._flags import data_grades as data_grades  # for the demo; not in __all__
from ._flags import graded_flag as graded_flag  # for the demo; not in __all__
from ._flags import pass1_bounds as pass1_bounds  # for the demo; not in __all__
from ._flags import scored_words as scored_words  # for the demo; not in __all__
from ._match import FitDataMismatchError
from ._match import check_fit_data
from ._pair_rows import PAIR_ROWS as PAIR_ROWS  # for the CLI; not in __all__
from ._pair_rows import PAIRS_CSV as PAIRS_CSV  # for the demo; not in __all__
from ._pair_rows import differ_parts as differ_parts  # for the demo; not in __all__
from ._pair_rows import pair_agents as pair_agents  # for the demo; not in __all__
from ._pair_rows import pair_values as pair_values  # for the demo; not in __all__
from ._pair_rows import shown_pairs as shown_pairs  # for the demo; not in __all__
from ._pair_rows import truth_diffs as truth_diffs  # for the demo; not in __all__
from ._pairs import MATRIX_ABOVE
from ._pairs import SCORE_ORDER_WORDS as SCORE_ORDER_WORDS  # for the CLI; not in __all__
from ._pairs import agent_cluster_note as agent_cluster_note  # for the demo; not in __all__
from ._pairs import bayes_pair_note
from ._pairs import differ_column
from ._pairs import lacks_agent_cluster as lacks_agent_cluster  # for the demo; not in __all__
from ._pairs import marks_holm_note as marks_holm_note  # for the CLI; not in __all__
from ._pairs import marks_legend
from ._pairs import no_p_note as no_p_note  # for the CLI and the demo; not in __all__
from ._pairs import p_text as p_text  # for the demo; not in __all__
from ._pairs import pair_frame
from ._pairs import pair_matrix
from ._pairs import pair_sentence
from ._pairs import pair_text
from ._pairs import score_order as score_order  # for the CLI; not in __all__
from ._pairs import settings_text
from ._passk import letter_of as letter_of  # for the demo; not in __all__
from ._passk import note_letters as note_letters  # for the demo; not in __all__
from ._passk import shrinking_tasks_note as shrinking_tasks_note  # for the demo; not in __all__
from ._passk import unbiased_interval as unbiased_interval  # for the demo; not in __all__
from ._report import Report
from ._report import as_table
from ._report import markdown_table
from ._sec_data import coverage_flags as coverage_flags  # for the demo; not in __all__
from ._sec_data import marked_agents as marked_agents  # for the CLI; not in __all__
from ._sec_data import misfit_agents as misfit_agents  # for the demo; not in __all__
from ._sec_pairs import graded_units as graded_units  # for the CLI and the demo; not in __all__
from ._shift import cluster_weights as cluster_weights  # for the demo; not in __all__
from ._shift import shared_shift as shared_shift  # for the demo; not in __all__

__all__ = [
    "MATRIX_ABOVE",
    "SECTIONS",
    "FitDataMismatchError",
    "Report",
    "ReportSectionWarning",
    "as_table",
    "bayes_pair_note",
    "build",
    "check_fit_data",
    "differ_column",
    "heatmap",
    "interval_forest",
    "markdown_table",
    "marks_legend",
    "pair_frame",
    "pair_matrix",
    "pair_sentence",
    "pair_text",
    "passk_curves",
    "plot_d_study",
    "ppc_plot",
    "settings_text",
    "variance_plot",
]
