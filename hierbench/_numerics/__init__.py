"""Shared numerics, numpy (and numba) only: the ground floor's second room.

- :mod:`.agq`: adaptive Gauss-Hermite quadrature of a cell's agent x task
  effect (node placement, the population rule), used by the Bayesian
  likelihood, the posterior summaries and the maximum-likelihood fit;
- :mod:`.agq_numba`: the compiled kernels of the same maths, imported on
  first use (``from hierbench._numerics import node_masses`` loads numba
  then, not at ``import hierbench``);
- :mod:`.davidson`: the Davidson (1970) win / tie / loss log-probabilities of a pairwise
  comparison, used by the Bayesian Bradley-Terry likelihood and the posterior head-to-head table;
- :mod:`.draws`: binomial draws, one-trial cells drawn as uniforms (a posterior
  predictive of one run per cell is 4x faster);
- :mod:`.intervals`: the Wilson bounds, the cluster-robust standard error and the
  distribution-free bounds for a mean of [0, 1] values;
- :mod:`.quantiles`: quantiles of samples holding limits (0, +-inf), the one routine of the
  pairwise wing's undefined resamples and of the horizons;
- :mod:`.trend`: release dates and the frontier of METR's doubling time (pandas reads the dates),
  the limit rule of a horizon without a negative slope, and METR's per-replicate doubling-time rule.

Nothing here imports xarray, PyMC or another hierbench subpackage.
"""

from . import agq
from .agq import *  # noqa: F403
from .agq import NEWTON_STEPS_TRACED as NEWTON_STEPS_TRACED
from .davidson import davidson_log_probs
from .draws import binomial_draws
from .intervals import bounded_mean_bounds
from .intervals import cluster_robust_se
from .intervals import few_carry_side
from .intervals import wilson_bounds
from .quantiles import limit_quantiles
from .quantiles import quantile_ext
from .trend import MIN_TREND_HORIZON
from .trend import BootstrapTrend
from .trend import TrendPoints
from .trend import beyond_lengths
from .trend import bootstrap_doubling_times
from .trend import extrapolated_cells
from .trend import extrapolated_note
from .trend import frontier
from .trend import horizon_or_limit
from .trend import limit_flags
from .trend import missing_dates
from .trend import ols_slopes
from .trend import outside_interval_note
from .trend import outside_lengths
from .trend import release_days
from .trend import trend_agents
from .trend import trend_inputs
from .trend import trend_points

#: names served from the compiled kernels (:mod:`.agq_numba`), loaded lazily
_COMPILED = frozenset(
    {
        "KERNEL_FLAGS",
        "centre",
        "exp_nonpos",
        "log_one_two",
        "log_pos",
        "njit_kernel",
        "node_masses",
        "node_stage",
        "node_term",
        "task_means",
    }
)


def __getattr__(name: str):
    if name in _COMPILED:
        from . import agq_numba

        return getattr(agq_numba, name)
    raise AttributeError(f"module 'hierbench._numerics' has no attribute {name!r}")


__all__ = ["NEWTON_STEPS_TRACED", "binomial_draws", "bounded_mean_bounds", "cluster_robust_se", "davidson_log_probs",
           "few_carry_side", "wilson_bounds"]
__all__ += agq.__all__
__all__ += ["limit_quantiles", "quantile_ext"]
__all__ += [
    "MIN_TREND_HORIZON", "BootstrapTrend", "TrendPoints", "beyond_lengths", "bootstrap_doubling_times",
    "extrapolated_cells", "extrapolated_note", "frontier", "horizon_or_limit", "limit_flags", "missing_dates", "ols_slopes", "outside_interval_note",
    "outside_lengths", "release_days", "trend_agents", "trend_inputs", "trend_points",
]
