"""Evaluation data: readers into the canonical eval dataset, reductions, validation.

See :mod:`hierbench.data._schema` for the dataset contract.
"""

from ._formula import (
    DEFAULT_FORMULA,
    ConfoundedTermWarning,
    FormulaError,
    ModelDesign,
    RandomTerm,
    model_design,
)
from ._inspect import InspectLogWarning, read_inspect_log
from ._large import counts_from_dask, counts_from_parquet
from ._pairwise import PAIR_COUNTS_SCHEMA as PAIR_COUNTS_SCHEMA  # for freq and bayes
from ._pairwise import _pairwise_dataset as _pairwise_dataset  # for freq
from ._pairwise import (
    check_pairwise,
    from_pair_counts,
    read_battles,
    to_pair_counts,
    to_pairwise,
)
from ._records import from_records, read_table, to_records
from ._schema import (
    SCHEMA_VERSION,
    EvalDataError,
    InconsistentAttributeWarning,
    check_eval_dataset,
    to_counts,
)
from ._schema import _not_kept_attr as _not_kept_attr  # for hierbench.testing
from ._shared import load_metr, load_swebench_bash_only, load_tau_bench_airline, shared_data_dir
from ._summary import NoScoredRunsWarning, describe, summarize

__all__ = [
    "DEFAULT_FORMULA",
    "SCHEMA_VERSION",
    "ConfoundedTermWarning",
    "EvalDataError",
    "FormulaError",
    "InconsistentAttributeWarning",
    "InspectLogWarning",
    "ModelDesign",
    "NoScoredRunsWarning",
    "RandomTerm",
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
    "read_table",
    "shared_data_dir",
    "summarize",
    "to_counts",
    "to_pair_counts",
    "to_pairwise",
    "to_records",
]
