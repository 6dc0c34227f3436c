"""Bayesian models of evaluations (PyMC builders, fitting, diagnostics).

Import explicitly (``import hierbench.bayes``): this subpackage imports PyMC.
"""

from ._checks._diagnostics import DEFAULT_THRESHOLDS
from ._checks._diagnostics import ConvergenceWarning
from ._checks._diagnostics import compute_diagnostics
from ._checks._diagnostics import loo_compare
from ._checks._diagnostics import predictive_check
from ._checks._loo import UnreliableLOOWarning
from ._checks._task_spread import task_spread_check
from ._models._beta_binomial import BETA_BINOMIAL_PRIORS
from ._models._beta_binomial import build_beta_binomial
from ._models._beta_binomial import task_posteriors
from ._models._bradley_terry import BT_DEFAULT_PRIORS
from ._models._bradley_terry import ELO_PER_LOGIT
from ._models._bradley_terry import DisconnectedComparisonWarning
from ._models._bradley_terry import build_bradley_terry
from ._models._bradley_terry import pair_counts_hash as pair_counts_hash  # for the report
from ._models._crossed import CROSSED_PRIORS
from ._models._crossed import build_crossed
from ._models._crossed import gauss_hermite
from ._models._formula_model import MIXED_PRIORS
from ._models._formula_model import build_mixed
from ._models._horizon import build_horizon
from ._models._horizon import with_log2_minutes as with_log2_minutes  # for the report
from ._models._irt import IRT_PRIORS
from ._models._irt import build_irt_1pl
from ._models._irt import build_irt_2pl
from ._registry import HOOK_KINDS
from ._registry import ModelEntry
from ._registry import PriorError
from ._registry import data_hash
from ._registry import get_model
from ._registry import list_models
from ._registry import model_hook
from ._registry import read_spec
from ._registry import register_hook
from ._registry import spec_to_toml
from ._sampler._approx import ApproximationWarning
from ._sampler._approx import approximation_error
from ._sampler._approx import fit_approx
from ._sampler._compiled import clear_compiled
from ._sampler._fit import FIT_DEFAULTS
from ._sampler._fit import SAMPLERS
from ._sampler._fit import add_log_likelihood
from ._sampler._fit import fit
from ._sampler._fit import fit_replicates
from ._sampler._remedy import DEMO_FAST as DEMO_FAST  # for hierbench.demo (its smoke run's mark)
from ._sampler._remedy import MADE_BY as MADE_BY  # for hierbench.demo
from ._sampler._remedy import convergence_remedy as convergence_remedy
from ._structure import UnidentifiedTermWarning
from ._structure import describe

__all__ = [
    "BETA_BINOMIAL_PRIORS",
    "BT_DEFAULT_PRIORS",
    "CROSSED_PRIORS",
    "DEFAULT_THRESHOLDS",
    "ELO_PER_LOGIT",
    "FIT_DEFAULTS",
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
    "UnreliableLOOWarning",
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
    "task_spread_check",
]
