"""The ground floor: rules every part of hierbench shares, each with one owner.

This package plays the role arviz-base plays for ArviZ. It depends on numpy
and xarray only (and pandas through xarray, for ``to_frame``), and every
other module imports its shared rules from here (``from hierbench._base import ...``;
the modules below are its rooms, each importing only the rooms on the floors under it):

- :mod:`._warnings` (ground): the base warning and error classes :class:`HierbenchWarning`
  and :class:`HierbenchError` with the few meanings under them, and :func:`warn_user`,
  which names the user's line (the first frame outside :data:`OUTSIDE_PACKAGE`);
- :mod:`._checks` (ground): randomness, :func:`as_rng`, the one ``rng`` keyword; argument
  checks, :func:`check_prob`, :func:`check_int`, :func:`check_number`,
  :func:`check_choice`, :func:`check_dim`;
- :mod:`._progress` (ground): :class:`Progress` and :func:`watched`, the one rule for
  progress output;
- :mod:`._intervals`: :func:`make_interval` with the fixed ``ci_kind`` vocabulary
  :data:`CI_KINDS` (detail in the ``ci_detail`` attr), :func:`check_interval`,
  :func:`interval_label`; the one default level :data:`DEFAULT_PROB`;
- :mod:`._data`: data rules, :func:`counts` (the one eval-dataset -> per-cell counts
  routine, which refuses partial credit where binary counts are needed) and
  :func:`cluster_codes` (the one task -> cluster code routine) and
  :func:`cluster_label` (the one name clusters are called by in messages and text);
- :mod:`._identification`: what an (agent, task) design can identify
  (:func:`unidentified_components`, :func:`refuse_agents_without_runs`);
- :mod:`._deprecations`: :func:`renamed_kwargs` (an old keyword) and
  :func:`moved_names` (an old importable name), each warning for one release;
- :mod:`._results` (on :mod:`._intervals`): :class:`Result`, the base of every result
  object (``estimate``, ``ci``, a short repr, ``to_frame()``, ``to_dataset()``).
"""

from ._checks import as_rng
from ._checks import check_choice
from ._checks import check_dim
from ._checks import check_int
from ._checks import check_number
from ._checks import check_prob
from ._data import COUNTS_HASH
from ._data import DATA_HASH
from ._data import K_TASKS_DIFFER as K_TASKS_DIFFER
from ._data import SOURCE_COLUMN
from ._data import cluster_codes
from ._data import cluster_label
from ._data import counted as counted
from ._data import counts
from ._data import counts_fingerprint
from ._data import data_hash
from ._data import is_binary
from ._data import missing_labels as missing_labels  # one rule: a missing cluster or tag label
from ._data import partial_credit
from ._data import partial_credit_error
from ._deprecations import moved_names
from ._deprecations import renamed_kwargs
from ._identification import AGENT_TASK_IN_TASK as AGENT_TASK_IN_TASK
from ._identification import NO_AGENT_SPREAD as NO_AGENT_SPREAD
from ._identification import ONE_RUN as ONE_RUN
from ._identification import TASK_IN_RUNS as TASK_IN_RUNS
from ._identification import ability_meaning as ability_meaning
from ._identification import agents_with_runs as agents_with_runs
from ._identification import most_agents_per_task as most_agents_per_task
from ._identification import refuse_agents_without_runs as refuse_agents_without_runs
from ._identification import shared_tasks_per_pair as shared_tasks_per_pair
from ._identification import task_groups as task_groups
from ._identification import unidentified_by_design as unidentified_by_design
from ._identification import unidentified_components as unidentified_components
from ._intervals import CI_BOUNDS as CI_BOUNDS
from ._intervals import CI_KINDS
from ._intervals import DEFAULT_PROB
from ._intervals import FEW_CARRY_ADVICE as FEW_CARRY_ADVICE
from ._intervals import ZERO_WIDTH_ADVICE as ZERO_WIDTH_ADVICE
from ._intervals import check_interval
from ._intervals import entry_names as entry_names
from ._intervals import flag_advice as flag_advice
from ._intervals import flat_cause as flat_cause
from ._intervals import interval_label
from ._intervals import make_interval
from ._progress import Progress
from ._progress import watched
from ._results import FRACTIONAL_LINEAR as FRACTIONAL_LINEAR  # for metrics and compare
from ._results import NOT_FULLY_CHECKED as NOT_FULLY_CHECKED  # a fit's verdict
from ._results import DrawsResult
from ._results import ResampledResult
from ._results import Result
from ._results import _shown_cells as _shown_cells
from ._results import field_alias
from ._results import fit_checks as fit_checks
from ._results import fit_record as fit_record
from ._results import fit_verdict as fit_verdict  # the console, describe() and the report
from ._results import input_label as input_label  # a paired result's two agents
from ._results import json_ready as json_ready  # a result's and a bank's attrs
from ._results import settle_trend
from ._results import stale_counts as stale_counts  # the console and the report
from ._results import wrap_repr as wrap_repr
from ._warnings import OUTSIDE_PACKAGE as OUTSIDE_PACKAGE
from ._warnings import BoundaryWarning as BoundaryWarning
from ._warnings import ExtrapolatedHorizonWarning as ExtrapolatedHorizonWarning
from ._warnings import HierbenchError
from ._warnings import HierbenchWarning
from ._warnings import NotConvergedWarning as NotConvergedWarning
from ._warnings import PartialCreditError
from ._warnings import SmallSampleWarning as SmallSampleWarning
from ._warnings import UndefinedMetricWarning as UndefinedMetricWarning
from ._warnings import UndefinedWarning as UndefinedWarning
from ._warnings import UnidentifiedTermWarning as UnidentifiedTermWarning
from ._warnings import UnidentifiedWarning as UnidentifiedWarning
from ._warnings import ZeroWidthIntervalWarning
from ._warnings import warn_user

__all__ = [
    "CI_KINDS",
    "COUNTS_HASH",
    "DATA_HASH",
    "DEFAULT_PROB",
    "SOURCE_COLUMN",
    "DrawsResult",
    "HierbenchError",
    "HierbenchWarning",
    "PartialCreditError",
    "Progress",
    "ResampledResult",
    "Result",
    "ZeroWidthIntervalWarning",
    "as_rng",
    "check_choice",
    "check_dim",
    "check_int",
    "check_interval",
    "check_number",
    "check_prob",
    "cluster_codes",
    "cluster_label",
    "counts",
    "counts_fingerprint",
    "data_hash",
    "field_alias",
    "interval_label",
    "is_binary",
    "make_interval",
    "moved_names",
    "partial_credit",
    "partial_credit_error",
    "renamed_kwargs",
    "settle_trend",
    "warn_user",
    "watched",
]
