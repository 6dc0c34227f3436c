"""Evaluation data: readers into the canonical eval dataset, reductions, validation.

The dataset contract is :func:`check_eval_dataset`'s. Every reader
(:func:`from_records`, :func:`read_inspect_log`, :func:`read_battles`,
:func:`counts_from_parquet`, :func:`counts_from_dask`) follows the rules below;
nothing is merged, coerced or dropped silently.

Labels (agent, task, run, tag, cluster)
    Strings exactly as written: ``"001"`` and ``"1"`` are two tasks, ``" a"``
    keeps its space; a number a file or DataFrame holds as a number gives its
    decimal text. A column mixing a number and a text that read the same
    (JSON ``7`` and ``"7"``) is refused, and so is one holding an int and an
    equal float (``1`` and ``1.0``, which would be two labels; also across the
    files of a Parquet folder or the partitions of a Dask frame), and a value
    that is no text, number or bool (a list, a dict, bytes, a date). An empty
    agent, task or run is refused; a task without a tag or cluster keeps a
    missing label (never a label called ``"nan"``; see :func:`check_eval_dataset`).
    Labels that differ only by spaces (around them or a run of them), Unicode
    normalisation, case or invisible (format) characters are kept apart, with
    a :class:`SimilarLabelsWarning` naming them. Read as one agent's log
    (``agent=None``), records that a column splits into the same groups in every
    cell (a model column) are refused.
Error flags (``error``, ``annotations``)
    Booleans, 0/1, or the words true/t/yes/y/1/error (an error) and
    false/f/no/n/0/ok (no error), case-insensitive and stripped; missing
    values (empty, none, null, nan, na) mean no error. Other values are
    refused with the distinct values listed, unless ``error_values`` maps them
    (``{"timeout": True, "success": False}``) or is ``"nonempty"`` (every
    non-empty value outside the no-error words is an error).
Numbers (scores, ``extra`` columns, coords)
    Real numbers, booleans (0/1) or text that parses as a number; the usual
    missing-value spellings are NaN; complex numbers, dates and durations
    are refused. Scores lie in [0, 1], or are ordinal grades of a declared
    scale (``score_levels``; any other value refused), kept as their place on
    it; grades written as words (``score_levels=["no", "perhaps", "yes"]``) are
    matched exactly as written (never case-folded or stripped) and kept as
    their place in that order, ``k / (L - 1)`` (a list of texts that all parse
    as numbers is a numeric scale; one mixing numbers and words is refused); a missing score must be flagged as an error; their kind (binary, continuous or mixed: :func:`score_kind`) is
    recorded in ``attrs["score_kind"]``. The measures :data:`MEASURES`
    (cost, latency, tokens, steps) are finite and never negative.
Runs
    Without a run column, runs are numbered 0, 1, ... per (agent, task) cell
    in file order. With one (``run_index="auto"``), integer labels written
    canonically (or an integer column) are the ``run`` coordinate, so run r is
    the same occasion (epoch, seed) in every cell; other labels are numbered per
    cell and kept as the per-run variable ``run_id``. Integer labels that look
    like global run ids (more than twice as many distinct labels as the most
    runs any cell has) are refused, with the size and fill of the cube they
    would make; ``run_index="label"`` keeps them, ``"within_cell"`` numbers
    every cell. A repeated (agent, task, run) is always refused.
Repeated records
    Records that repeat another in every column, without a run column, are
    refused (``duplicates="refuse"``) when they look like copies of one log:
    every distinct record appears a multiple of k >= 2 times (a log
    concatenated k times); no cell holds two different records while some
    hold one (a log of one run per cell); or a column such as a run id or a
    timestamp tells the distinct records apart yet some repeat. Other repeats
    are kept as runs with a :class:`RepeatedRecordsWarning`, and counted in
    ``attrs["n_repeated_records"]``. ``duplicates="drop"`` keeps the first of
    each set (the others counted in ``attrs["not_kept"]``); ``"keep"`` keeps
    them all as runs (counted, no warning).
"""

from .._base import moved_names as _moved_names
from ._duplicates import RepeatedRecordsWarning
from ._formula import DEFAULT_FORMULA
from ._formula import ConfoundedTermWarning
from ._formula import FormulaError
from ._formula import ModelDesign
from ._formula import RandomTerm
from ._formula import (
    Separation as Separation,  # for freq._glmm (separating_direction's result); not in __all__
)
from ._formula import (
    _one_sided as _one_sided,  # for hierbench.report (levels at an end); not in __all__
)
from ._formula import (
    check_grade_scale as check_grade_scale,  # for the CLI's validate: the ordinal fit's rule; not in __all__
)
from ._formula import model_design
from ._formula import separating_direction as separating_direction  # for freq._glmm; not in __all__
from ._formula import (
    separation as separation,  # for bayes._structure and freq._glmm; not in __all__
)
from ._inspect import VALUE_MAP_HINT as VALUE_MAP_HINT  # the CLI's rewording of it; not in __all__
from ._inspect import InspectLogWarning
from ._inspect import read_inspect_log
from ._large import counts_from_dask
from ._large import counts_from_parquet
from ._pairwise import PAIR_COUNTS_SCHEMA as PAIR_COUNTS_SCHEMA  # for freq and bayes
from ._pairwise import _pairwise_dataset as _pairwise_dataset  # for freq
from ._pairwise import check_pairwise
from ._pairwise import from_pair_counts
from ._pairwise import oriented_cells as oriented_cells  # for freq
from ._pairwise import read_battles
from ._pairwise import to_pair_counts
from ._pairwise import to_pairwise
from ._records import from_records
from ._records import read_table
from ._records import to_records
from ._schema import MEASURES
from ._schema import SCHEMA_VERSION
from ._schema import ErroredRunsWarning
from ._schema import EvalDataError
from ._schema import InconsistentAttributeWarning
from ._schema import UnreadColumnWarning
from ._schema import _not_kept_attr as _not_kept_attr  # for hierbench.testing
from ._schema import check_eval_dataset
from ._schema import score_kind
from ._schema import task_minutes as task_minutes  # for the time-horizon methods; not in __all__
from ._schema import to_counts
from ._shared import load_metr
from ._shared import load_swebench_bash_only
from ._shared import load_tau_bench_airline
from ._shared import shared_data_dir
from ._summary import NoScoredRunsWarning
from ._summary import read_report
from ._summary import summarize
from ._values import SimilarLabelsWarning
from ._values import _labels_from_text as _labels_from_text  # for hierbench.io (missing labels)
from ._values import _labels_to_text as _labels_to_text  # for hierbench.io (missing labels)
from ._values import grade_key as grade_key  # for the report and ModelDesign; not in __all__
from ._values import grade_names as grade_names  # for the report and the demo; not in __all__
from ._values import grade_reading as grade_reading  # for hierbench._console; not in __all__
from ._values import grade_rule as grade_rule  # for hierbench._console; not in __all__
from ._values import labels_attr as labels_attr  # for the report and the demo; not in __all__
from ._values import levels_attr as levels_attr  # for the report and the demo; not in __all__

#: names that were renamed: importing them from here still works, with a
#: DeprecationWarning, for one release
_MOVED = {"describe": ("hierbench.data", "read_report", "it is the reader's report; bayes.describe describes a model")}
__getattr__ = _moved_names(__name__, _MOVED)

__all__ = [
    "DEFAULT_FORMULA",
    "MEASURES",
    "SCHEMA_VERSION",
    "ConfoundedTermWarning",
    "ErroredRunsWarning",
    "EvalDataError",
    "FormulaError",
    "InconsistentAttributeWarning",
    "InspectLogWarning",
    "ModelDesign",
    "NoScoredRunsWarning",
    "RandomTerm",
    "RepeatedRecordsWarning",
    "SimilarLabelsWarning",
    "UnreadColumnWarning",
    "check_eval_dataset",
    "check_pairwise",
    "counts_from_dask",
    "counts_from_parquet",
    "describe",
    "from_pair_counts",
    "from_records",
    "load_metr",
    "load_swebench_bash_only",
    "load_tau_bench_airline",
    "model_design",
    "read_battles",
    "read_inspect_log",
    "read_report",
    "read_table",
    "score_kind",
    "shared_data_dir",
    "summarize",
    "to_counts",
    "to_pair_counts",
    "to_pairwise",
    "to_records",
]
