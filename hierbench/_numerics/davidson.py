"""The Davidson (1970) tie model's outcome probabilities, written once for both halves that need them.

For an ability gap ``d = a - b`` (logit scale, any first-position advantage already in it) and the
tie parameter ``nu >= 0``::

    P(a wins) = e^{d/2} / Z,   P(tie) = nu / Z,   P(b wins) = e^{-d/2} / Z,
    Z = e^{d/2} + nu + e^{-d/2},

the softmax of ``(d/2, log nu, -d/2)``. ``nu = 0`` (``log nu = -inf``) is the logistic
Bradley-Terry model: ``P(a wins) = 1 / (1 + e^{-d})``, no ties. The Bayesian model's pointwise
log-likelihood and the posterior head-to-head probabilities both take it from here.
"""

from __future__ import annotations

import numpy as np

__all__ = ["davidson_log_probs"]


def davidson_log_probs(d: np.ndarray, log_nu: np.ndarray | float) -> np.ndarray:
    """``log P(a wins, tie, b wins)`` along a new last axis, from the ability gaps and ``log nu``.

    A log-softmax relative to the largest logit, ``top = max(|d|/2, log nu)`` (``-|d|/2`` never
    leads): ``log P = (logit - top) - log1p(e^(mid - top) + e^(-|d|/2 - top))``, ``mid`` the other
    of ``|d|/2`` and ``log nu``. The leading outcome's ``logit - top`` is 0 exactly and the rest
    enters through ``log1p``, so every log-probability is accurate to a few ulps of its own size, a
    near-certain outcome's (``log P`` near ``-1e-6`` at a gap of 37) too, where subtracting
    ``top + log Z`` from the logit loses the digits of ``top``; no finite gap overflows; swapping the
    agents swaps win and loss bit for bit; and with ``log_nu = -inf`` the tie's log-probability is
    ``-inf`` exactly (its probability 0). Two exponentials and one ``log1p`` per comparison.

    Parameters
    ----------
    d : array_like
        Ability gaps ``a - b`` (logit scale).
    log_nu : array_like
        Log of the Davidson tie parameter; ``-inf`` for the model without ties. Broadcast with ``d``.

    Returns
    -------
    ndarray
        Shape ``broadcast(d, log_nu).shape + (3,)``: win, tie, loss (for ``a``).

    Examples
    --------
    >>> np.round(np.exp(davidson_log_probs(np.array(0.0), np.array(0.0))), 4).tolist()  # nu = 1: a third each
    [0.3333, 0.3333, 0.3333]
    >>> np.round(np.exp(davidson_log_probs(np.array(1.0), -np.inf)), 4).tolist()  # no ties: 1 / (1 + e^-1)
    [0.7311, 0.0, 0.2689]
    """
    d, log_nu = np.broadcast_arrays(np.asarray(d, dtype=float), np.asarray(log_nu, dtype=float))
    # in place where it can be (a posterior's gaps are draws x agents^2); out= keeps 0-d inputs arrays
    half = np.multiply(np.abs(d), 0.5, out=np.empty(d.shape))
    top = np.maximum(half, log_nu, out=np.empty(d.shape))
    rest = np.minimum(half, log_nu, out=np.empty(d.shape))
    rest -= top
    np.exp(rest, out=rest)
    half += top
    np.negative(half, out=half)  # -|d|/2 - top
    rest += np.exp(half, out=half)
    del half
    np.log1p(rest, out=rest)
    out = np.empty((*d.shape, 3))
    for k, logit in enumerate((d / 2.0, log_nu, -d / 2.0)):
        np.subtract(logit, top, out=out[..., k])
        out[..., k] -= rest
    return out
