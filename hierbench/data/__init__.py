"""Evaluation data: readers into the canonical eval dataset, reductions, validation.

See :mod:`hierbench.data._schema` for the dataset contract.
"""

from ._records import from_records, read_table, to_records
from ._schema import (
    SCHEMA_VERSION,
    EvalDataError,
    InconsistentAttributeWarning,
    check_eval_dataset,
    to_counts,
)
from ._shared import load_metr, load_swebench_bash_only, load_tau_bench_airline, shared_data_dir

__all__ = [
    "SCHEMA_VERSION",
    "EvalDataError",
    "InconsistentAttributeWarning",
    "check_eval_dataset",
    "from_records",
    "load_metr",
    "load_swebench_bash_only",
    "load_tau_bench_airline",
    "read_table",
    "shared_data_dir",
    "to_counts",
    "to_records",
]
