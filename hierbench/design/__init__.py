"""Budgeted repeated evaluation: which runs to buy under a hard budget, and honest intervals.

A fixed cohort of ``M`` tasks x ``L`` planned runs has a mean ``theta``; a
budget of ``B`` labels buys some of its slots. :func:`plan_uniform` (design
U) and :func:`plan_joint` (design J, task-covering with an audit subset)
return the slots to run; :func:`budget_interval` turns the bought labels
into an unbiased estimate and an interval that covers ``theta`` with
probability at least ``prob`` for every fixed cohort (the only randomness is
the design's). :func:`cohort_posterior` is the Bayesian beta-binomial
counterpart; :func:`replay` compares them on complete banks.

This subpackage imports numpy, scipy and xarray only.
"""

from ._adaptive import AdaptiveResult, adaptive
from ._anchors import AnchorSet, anchors
from ._assisted import AssistedResult
from ._bayes import CohortPosteriorResult, cohort_posterior
from ._estimate import assisted_adaptive, assisted_mean
from ._loo import loo_study, loo_summary
from ._misfit import MisfitCalibration, calibrate_misfit
from ._plan import (
    BudgetIntervalResult,
    BudgetPlan,
    BudgetWarning,
    budget_interval,
    plan_joint,
    plan_uniform,
)
from ._replay import bank_from_eval, replay, simulate_stratified_bank
from ._simulate import simulate_irt_log
from ._subset import SubsetPlan, plan_subset
from ._working import WorkingModel, choose_working_model

__all__ = [
    "AdaptiveResult",
    "AnchorSet",
    "AssistedResult",
    "BudgetIntervalResult",
    "BudgetPlan",
    "BudgetWarning",
    "CohortPosteriorResult",
    "MisfitCalibration",
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
