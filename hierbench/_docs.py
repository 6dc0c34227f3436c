"""Docstring text that several public functions share (mostly parameter entries), written once.

The idea of scipy's ``doccer`` and pandas' ``@doc``: a docstring names a shared
entry by a line ``%(name)s``, indented as a parameter of its Parameters
section, and :func:`fill_doc` puts the entry there at import, indented to match.
``help()``, Sphinx and numpydoc see the whole text; the entry has one owner.

An entry belongs here only when the same words describe the parameter in more
than one place; a parameter whose meaning is particular to one function keeps
its own words. An entry may run over several parameters or sections (the
pass@k twins share their Parameters, Returns and Raises), or be the set-up
lines of examples that start from the same fit.
"""

from __future__ import annotations

import re
from collections.abc import Callable

__all__ = ["SHARED", "fill_doc"]

#: name -> the numpydoc text (an entry: header line, then its description indented by 4)
SHARED: dict[str, str] = {
    "rng": """rng : None, int or numpy.random.Generator
    The randomness: a seed, a generator, or ``None`` for fresh entropy (the
    same seed gives the same result).""",
    "passk_rng": """rng : None, int or numpy.random.Generator
    Randomness of the ``realised=True`` draws: a seed, a generator, or
    ``None`` for fresh entropy, as every hierbench function takes it.
    The estimate does not use it; with ``None`` the interval's ends move
    between calls by Monte Carlo error; pass a seed to reproduce them.""",
    "prob": """prob : float
    Level of the interval(s): the probability mass inside, 0 < prob < 1.""",
    "n_resamples": """n_resamples : int
    Bootstrap resamples.""",
    "ordinal_threshold": """threshold : float or str, optional
    Ordinal fits: the share graded at least ``threshold`` (else the mean grade): a grade
    of the scale, its label (grades written as words: ``"yes"``) or the score the dataset
    holds for it (``0.5`` for the middle of three grades read with ``score_levels``).""",
    "power_components": """components, sigma2_interaction, sigma2_residual
    Variance components (see :func:`sd_paired_diff`).""",
    # an Examples opening: the fit that the D-study examples (VarianceComponentsResult's, plot_d_study's) use
    "vc_example": """>>> import numpy as np, xarray as xr
>>> from hierbench.freq import variance_components
>>> y = np.random.default_rng(0).normal(size=(4, 10, 3))  # agent x task x run
>>> vc = variance_components(xr.DataArray(y, dims=("agent", "task", "run")))""",
    "passk": """data : xarray.Dataset or xarray.DataArray
    An eval dataset (binary ``score`` with dims including ``run_dim``), its
    counts (:func:`hierbench.data.to_counts`: ``n_runs``, ``n_success``)
    or a binary score DataArray.
k : int or sequence of int
    Number of attempts. A sequence adds a dim ``k``.
run_dim : str
    The run dimension (ignored for counts).
task_dim : str
    The task dimension averaged over for ``mean``.
plugin : bool
    Return the biased plug-in estimate computed from ``p = c / n``
    instead of the unbiased one (for comparison).
small_n : {"nan", "clip"}
    Tasks with ``0 < n_runs < k``: ``"nan"`` (default) makes them NaN,
    excludes them from the mean, counts them in ``n_insufficient`` and
    emits :class:`InsufficientRunsWarning`; ``"clip"`` uses
    ``k_eff = min(k, n_runs)`` for them (the scorecard convention, which
    mixes estimands across tasks: such rows are not pass^k at the k shown;
    they are counted in ``n_clipped`` with the smallest ``k_eff_min`` and
    warned of).
prob : float
    Level of the interval ``ci``.
cluster : str, None or "auto"
    Task coord naming the cluster above the task (a task family, a
    repository): the interval then takes the clusters as the sampling unit
    (CR2 cluster-robust standard error, Bell-McCaffrey df; the bound over
    clusters where it replaces the t interval). ``"auto"`` (default) uses a
    ``cluster`` coord when present; ``None`` takes the tasks one by one. The
    estimate is the same either way.

Returns
-------
PassKResult

Raises
------
hierbench.PartialCreditError
    When a score is strictly between 0 and 1 (even if a cell's scores
    sum to a whole number): pass@k and pass^k are defined for binary
    outcomes only.""",
    "crossed_fit_example": """>>> from hierbench.testing import simulate_eval
>>> from hierbench.bayes import build_crossed, fit
>>> data, _ = simulate_eval(n_agents=2, n_tasks=8, n_runs=3, rng=0)
>>> idata = fit(build_crossed(data), draws=100, tune=100, chains=2, rng=0)  # doctest: +SKIP""",
}

_MARK = re.compile(r"^([ \t]*)%\((\w+)\)s[ \t]*$", re.MULTILINE)


def fill_doc[F: Callable](obj: F) -> F:
    """Put the shared entries named in ``obj``'s docstring (``%(name)s`` lines) in place.

    Parameters
    ----------
    obj : function or class
        Its ``__doc__`` is rewritten; a missing docstring (``python -OO``) is left alone.

    Returns
    -------
    function or class
        ``obj`` itself (a decorator).

    Raises
    ------
    KeyError
        A ``%(name)s`` line names no entry of :data:`SHARED`.

    Examples
    --------
    >>> @fill_doc
    ... def draw(rng=None):
    ...     '''Draw.
    ...
    ...     Parameters
    ...     ----------
    ...     %(rng)s
    ...     '''
    >>> print(draw.__doc__.splitlines()[4])
        rng : None, int or numpy.random.Generator
    """
    if obj.__doc__:
        obj.__doc__ = _MARK.sub(_entry, obj.__doc__)
    return obj


def _entry(match: re.Match) -> str:
    indent, name = match.group(1), match.group(2)
    if name not in SHARED:
        raise KeyError(f"docstring names %({name})s, which hierbench._docs.SHARED does not have; it has {sorted(SHARED)}")
    return "\n".join(indent + line if line else line for line in SHARED[name].splitlines())
