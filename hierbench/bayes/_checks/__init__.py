"""Convergence checks of a fit: R-hat, ESS, divergences, E-BFMI, rank uniformity, and the advice when one fails; PSIS-LOO's units and its Pareto k check."""

from ._loo import TASK_NODES as TASK_NODES
from ._loo import UnreliableLOOWarning as UnreliableLOOWarning
from ._loo import missing_group_advice as missing_group_advice
from ._loo import task_log_likelihood as task_log_likelihood
