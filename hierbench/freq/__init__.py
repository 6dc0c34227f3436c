"""Frequentist estimators: the validating counterparts of the Bayesian models.

One private wing per job, each owning its ``__all__``:

- ``_rates``: success rates and their intervals, pass@k / pass^k, beta-binomial,
  confidence sequences, the scorecard;
- ``_resampling``: the task-level (cluster) bootstrap, paired tests, rankings;
- ``_variance``: G-theory variance components, the design language, REML,
  profile intervals, power and allocation;
- ``_glmm``: the crossed agent x task GLMM by maximum likelihood, models given by a
  formula (binomial, fractional, ordinal) and their reader's-scale answers;
- ``_horizon``: METR's time horizon and the doubling time of horizons;
- ``_irt``: item calibration and scoring without a sampler, person fit;
- ``_pairwise``: Bradley-Terry by maximum likelihood, Elo, win rates;
- ``_judges``: classification metrics, agreement, rubric scores;
- ``_profiles``: reliability over runs, quantiles, Pareto frontiers.

The numpy kernels the wings share (pass@k per cell, bootstrap weights, BCa)
live in ``_kernels``; input helpers in ``_inputs``.
"""

from .._base import moved_names as _moved_names

# each wing owns its public names (its __all__); this namespace is their union
from . import _glmm
from . import _horizon
from . import _irt
from . import _judges
from . import _pairwise
from . import _profiles
from . import _rates
from . import _resampling
from . import _variance
from ._glmm import *  # noqa: F403
from ._horizon import *  # noqa: F403
from ._irt import *  # noqa: F403
from ._irt._bank import (
        SLOPES_COLLAPSED_WORDS as SLOPES_COLLAPSED_WORDS,  # for hierbench.design; not in __all__
)
from ._irt._ml import cell_loglik as cell_loglik  # for hierbench.design; not in __all__
from ._irt._prequential import ModelMisfitWarning as ModelMisfitWarning  # design's public class
from ._irt._prequential import beyond_calibration as beyond_calibration  # for hierbench.design
from ._irt._prequential import log_score_moments as log_score_moments  # for hierbench.design
from ._irt._prequential import log_score_terms as log_score_terms  # for hierbench.design
from ._irt._prequential import prequential_z as prequential_z  # for hierbench.design
from ._judges import *  # noqa: F403
from ._kernels import FEW_UNITS as FEW_UNITS  # for hierbench.report and demo; not in __all__
from ._kernels import task_weights as task_weights
from ._pairwise import *  # noqa: F403
from ._pairwise._undefined import (
        _bounds_with_undefined as _bounds_with_undefined,  # for hierbench.report
)
from ._profiles import *  # noqa: F403
from ._rates import *  # noqa: F403
from ._rates._logit_t import EVEN_CLUSTERS_FLAG as EVEN_CLUSTERS_FLAG  # for hierbench.demo
from ._rates._logit_t import EVEN_CLUSTERS_SHARE as EVEN_CLUSTERS_SHARE  # for hierbench.demo
from ._resampling import *  # noqa: F403
from ._resampling._paired import ci_p_disagree as ci_p_disagree  # for hierbench.report
from ._resampling._paired import disagree_label as disagree_label  # for hierbench.report
from ._resampling._paired import disagree_way as disagree_way  # for hierbench.report
from ._resampling._pairwise_result import floor_note as floor_note  # for hierbench.report
from ._resampling._pairwise_result import recorded_note as recorded_note  # for hierbench.report
from ._variance import *  # noqa: F403
from ._variance import observed_cluster_ratio as observed_cluster_ratio  # for hierbench.demo
from ._variance import pair_variances as pair_variances  # for hierbench.demo; not in __all__
from ._variance import pool_interactions as pool_interactions  # for hierbench.demo; not in __all__

_BAYES = "it summarises a Bayesian fit"
_ML = "maximum-likelihood fits are named fit_<model>_ml"
#: fit_irt_ml keeps the suffix but is not maximum likelihood: said where the old name is met
_IRT = ("fits without a sampler are named fit_<model>_ml; this one is penalised (MAP, empirical-Bayes priors), "
        "not maximum likelihood")
#: names that moved or were renamed: importing them from here still works, with a
#: DeprecationWarning, for one release
_MOVED = {
    "bayes_d_study": ("hierbench.metrics", "bayes_d_study", _BAYES),
    "bayes_variance_components": ("hierbench.metrics", "bayes_variance_components", _BAYES),
    "beta_binomial_mle": ("hierbench.freq", "fit_beta_binomial_ml", _ML),
    "bradley_terry_ml": ("hierbench.freq", "fit_bradley_terry_ml", _ML),
    "calibrate_irt": ("hierbench.freq", "fit_irt_ml", _IRT),
}
__getattr__ = _moved_names(__name__, _MOVED)


# the union of the wings' lists (``+=``: a form type checkers follow through star imports)
__all__ = ["task_weights"]
__all__ += _glmm.__all__
__all__ += _horizon.__all__
__all__ += _irt.__all__
__all__ += _judges.__all__
__all__ += _pairwise.__all__
__all__ += _profiles.__all__
__all__ += _rates.__all__
__all__ += _resampling.__all__
__all__ += _variance.__all__
__all__ += list(_MOVED)
