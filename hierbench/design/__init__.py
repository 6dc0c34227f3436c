"""Budgeted, subset and adaptive evaluation: which runs or tasks to buy, and honest estimates from them.

Budgeted repeated evaluation: a fixed cohort of ``M`` tasks x ``L`` planned
runs has a mean ``theta``; a budget of ``B`` labels buys some of its slots.
:func:`plan_uniform` (design U) and :func:`plan_joint` (design J,
task-covering with an audit subset) return the slots to run;
:func:`budget_interval` turns the bought labels into an unbiased estimate
and an interval that covers ``theta`` with probability at least ``prob``
for every fixed cohort. :func:`cohort_posterior` is the Bayesian
beta-binomial counterpart; :func:`replay` compares them on complete banks.

Subset and adaptive evaluation of new agents on a calibrated IRT bank:
:func:`anchors` and :func:`adaptive` choose tasks and score them with the
bank (model-based intervals, :func:`calibrate_misfit` for the misfit they
miss). The model-assisted, design-unbiased route keeps its guarantee
whatever the bank's quality: :func:`plan_subset` (simple random, stratified,
PPS, Poisson) or :func:`assisted_adaptive` (draws tilted toward the bank's
uncertainty, never zero, recorded) with :func:`assisted_mean`, the working
model chosen by :func:`choose_working_model`; each agent's misfit to the
bank is tested and flagged. :func:`loo_study` compares every selection
leave-one-agent-out on complete logs (:func:`loo_summary`: with Monte Carlo
errors); :func:`simulate_irt_log` makes logs with one skill or several.

This subpackage imports numpy, scipy and xarray only.
"""

from ._adaptive import AdaptiveResult
from ._adaptive import ModelMisfitWarning
from ._adaptive import adaptive
from ._anchors import AnchorSet
from ._anchors import anchors
from ._assisted import AssistedResult
from ._bayes import CohortPosteriorResult
from ._bayes import cohort_posterior
from ._estimate import assisted_adaptive
from ._estimate import assisted_mean
from ._loo import loo_study
from ._loo import loo_summary
from ._misfit import MisfitCalibration
from ._misfit import calibrate_misfit
from ._plan import BudgetIntervalResult
from ._plan import BudgetPlan
from ._plan import BudgetWarning
from ._plan import budget_interval
from ._plan import plan_joint
from ._plan import plan_uniform
from ._replay import bank_from_eval
from ._replay import replay
from ._replay import simulate_stratified_bank
from ._simulate import simulate_irt_log
from ._subset import SubsetPlan
from ._subset import plan_subset
from ._working import WorkingModel
from ._working import choose_working_model

__all__ = [
    "AdaptiveResult",
    "AnchorSet",
    "AssistedResult",
    "BudgetIntervalResult",
    "BudgetPlan",
    "BudgetWarning",
    "CohortPosteriorResult",
    "MisfitCalibration",
    "ModelMisfitWarning",
    "SubsetPlan",
    "WorkingModel",
    "adaptive",
    "anchors",
    "assisted_adaptive",
    "assisted_mean",
    "bank_from_eval",
    "budget_interval",
    "calibrate_misfit",
    "choose_working_model",
    "cohort_posterior",
    "loo_study",
    "loo_summary",
    "plan_joint",
    "plan_subset",
    "plan_uniform",
    "replay",
    "simulate_irt_log",
    "simulate_stratified_bank",
]
