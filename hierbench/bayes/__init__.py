"""Bayesian models of evaluations (PyMC builders, fitting, diagnostics).

Import explicitly (``import hierbench.bayes``): this subpackage imports PyMC.
"""

from ._approx import ApproximationWarning, approximation_error, fit_approx
from ._beta_binomial import BETA_BINOMIAL_PRIORS, build_beta_binomial, task_posteriors
from ._bradley_terry import (
    BT_DEFAULT_PRIORS,
    ELO_PER_LOGIT,
    DisconnectedComparisonWarning,
    build_bradley_terry,
)
from ._compiled import clear_compiled
from ._crossed import CROSSED_PRIORS, build_crossed, gauss_hermite
from ._diagnostics import (
    DEFAULT_THRESHOLDS,
    ConvergenceWarning,
    compute_diagnostics,
    loo_compare,
    predictive_check,
)
from ._fit import SAMPLERS, add_log_likelihood, fit, fit_replicates
from ._formula_model import MIXED_PRIORS, build_mixed
from ._horizon import build_horizon
from ._irt import IRT_PRIORS, build_irt_1pl, build_irt_2pl
from ._registry import (
    HOOK_KINDS,
    ModelEntry,
    PriorError,
    data_hash,
    get_model,
    list_models,
    model_hook,
    read_spec,
    register_hook,
    spec_to_toml,
)
from ._structure import UnidentifiedTermWarning, describe

__all__ = [
    "BETA_BINOMIAL_PRIORS",
    "BT_DEFAULT_PRIORS",
    "CROSSED_PRIORS",
    "DEFAULT_THRESHOLDS",
    "ELO_PER_LOGIT",
    "HOOK_KINDS",
    "IRT_PRIORS",
    "MIXED_PRIORS",
    "SAMPLERS",
    "ApproximationWarning",
    "ConvergenceWarning",
    "DisconnectedComparisonWarning",
    "ModelEntry",
    "PriorError",
    "UnidentifiedTermWarning",
    "add_log_likelihood",
    "approximation_error",
    "build_beta_binomial",
    "build_bradley_terry",
    "build_crossed",
    "build_horizon",
    "build_irt_1pl",
    "build_irt_2pl",
    "build_mixed",
    "clear_compiled",
    "compute_diagnostics",
    "data_hash",
    "describe",
    "fit",
    "fit_approx",
    "fit_replicates",
    "gauss_hermite",
    "get_model",
    "list_models",
    "loo_compare",
    "model_hook",
    "predictive_check",
    "read_spec",
    "register_hook",
    "spec_to_toml",
    "task_posteriors",
]
