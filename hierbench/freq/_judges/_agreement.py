"""Agreement between raters: Cohen's kappa for two (weighted for ordered categories), Fleiss' kappa for several.

Before a judge stands in for humans, or one judge for another, their labels
should agree beyond chance. Labels are categories: a missing label is
refused, and numbers are never mixed with text (1 and '1' are not merged).
Each kappa is a smooth function of per-item totals, so it is bootstrapped
like the classification metrics, whole clusters at a time, with a
studentized interval clipped to [-1, 1] by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import ResampledResult
from ..._base import as_rng
from ..._base import make_interval
from ..._base import renamed_kwargs
from ._resample import _bootstrap
from ._resample import _clusters
from ._resample import _common
from ._resample import _detail
from ._resample import _pair
from ._resample import _warn_nan

__all__ = ["AgreementResult", "cohen_kappa", "fleiss_kappa"]


@dataclass(frozen=True, repr=False)
class AgreementResult(ResampledResult):
    """Result of :func:`cohen_kappa` and :func:`fleiss_kappa`.

    Attributes
    ----------
    estimate : DataArray (scalar)
        Kappa.
    ci : DataArray (ci_bound)
        Bootstrap interval over items (clusters): studentized by default
        (``ci_kind = "t"``), or percentile or BCa.
    observed_agreement, expected_agreement : float
    categories : list
    distribution : DataArray (resample)
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    observed_agreement: float
    expected_agreement: float
    categories: list


def _labels(values: np.ndarray, categories, name: str) -> tuple[np.ndarray, list]:
    vals = np.asarray(values, dtype=object)
    missing = np.array([_missing(v) for v in vals.ravel()], dtype=bool).reshape(vals.shape)
    if missing.any():
        raise ValueError(
            f"`{name}` must have a label for every item (and rater); {int(missing.sum())} are missing"
        )
    strs = vals.astype(str)
    if categories is None:
        cats = sorted(set(strs.ravel().tolist()))
    else:
        cats = [str(c) for c in categories]
        if len(set(cats)) != len(cats):
            raise ValueError(f"`categories` must not repeat a label; got {list(categories)}")
        unknown = sorted(set(strs.ravel().tolist()) - set(cats))
        if unknown:
            raise ValueError(f"`{name}` holds labels not in `categories` {cats}: {unknown[:5]}")
    index = {c: i for i, c in enumerate(cats)}
    return np.vectorize(index.__getitem__, otypes=[np.int64])(strs), cats


def _label_kind(v: Any) -> str:
    if isinstance(v, (bool, np.bool_)):
        return "boolean"
    if isinstance(v, (int, float, np.integer, np.floating)):
        return "number"
    return "text" if isinstance(v, (str, bytes)) else type(v).__name__


def _same_kind(arrays: list[np.ndarray], name: str) -> None:
    """Refuse labels of different kinds (numbers and text).

    As text, 1 and '1' would be merged, and nothing in the data says they mean the same.
    """
    kinds: set[str] = set()
    for a in arrays:
        k = {"b": "boolean", "i": "number", "u": "number", "f": "number", "U": "text", "S": "text"}
        if a.dtype.kind in k:
            kinds.add(k[a.dtype.kind])
        else:
            kinds |= {_label_kind(v) for v in a.ravel() if not _missing(v)}
    if len(kinds) > 1:
        raise ValueError(
            f"`{name}` mixes labels of kinds {sorted(kinds)} (e.g. 1 and '1'): give every "
            "label as the same kind"
        )


def _missing(v: Any) -> bool:
    return v is None or (isinstance(v, float) and np.isnan(v))


@renamed_kwargs(dim="item_dim")
def cohen_kappa(
    rater_a: Any,
    rater_b: Any,
    *,
    weights: str | None = None,
    categories: list | None = None,
    cluster: Any = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    method: str = "studentized",
    item_dim: str = "item",
    rng: None | int | np.random.Generator = None,
) -> AgreementResult:
    """Cohen's kappa between two raters (two judges, or a judge and humans), with a bootstrap interval.

    Parameters
    ----------
    rater_a, rater_b : array-like, one label per item
    weights : {None, "linear", "quadratic"}
        Unweighted kappa, or weighted kappa for ordered categories (the
        order of ``categories``).
    categories : list, optional
        All categories, in order (default: sorted labels seen).
    cluster, prob, n_resamples, method, item_dim, rng
        As in :func:`classification_metrics` (the studentized interval is
        clipped to [-1, 1]).

    Returns
    -------
    AgreementResult

    Examples
    --------
    >>> r = cohen_kappa(["y", "y", "n", "n", "y"], ["y", "n", "n", "n", "y"], n_resamples=500, rng=0)
    >>> round(float(r.estimate), 4)
    0.6154
    """
    prob, n_resamples = _common(prob, n_resamples, method)
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"`weights` must be None, 'linear' or 'quadratic'; got {weights!r}")
    va, vb = _pair(rater_a, rater_b, ("rater_a", "rater_b"), item_dim)
    _same_kind([np.asarray(va.values), np.asarray(vb.values)], "rater_a/rater_b")
    both, cats = _labels(np.stack([va.values, vb.values], 1), categories, "rater_a/rater_b")
    k = len(cats)
    codes, unit = _clusters(va, cluster, item_dim)
    i, j = np.meshgrid(np.arange(k), np.arange(k), indexing="ij")
    if weights is None:
        dis = (i != j).astype(float)
    elif weights == "linear":
        dis = np.abs(i - j) / max(k - 1, 1)
    else:
        dis = ((i - j) / max(k - 1, 1)) ** 2
    n = both.shape[0]
    onehot = np.zeros((n, k * k))
    onehot[np.arange(n), both[:, 0] * k + both[:, 1]] = 1.0

    def kappa(tab):  # (b, k*k)
        tab = tab.reshape(-1, k, k)
        tot = tab.sum((1, 2))
        with np.errstate(invalid="ignore", divide="ignore"):
            obs = (tab * dis).sum((1, 2)) / tot
            exp_ = (tab.sum(2)[:, :, None] * tab.sum(1)[:, None, :] * dis).sum((1, 2)) / tot**2
            return 1.0 - obs / exp_, 1.0 - obs, 1.0 - exp_

    return _agreement(
        "cohen_kappa",
        kappa,
        onehot,
        codes,
        unit,
        rng,
        method,
        prob,
        n_resamples,
        cats,
        "expected disagreement is 0 (one category only): kappa",
        attrs={"weights": str(weights)},
    )


@renamed_kwargs(dim="item_dim")
def fleiss_kappa(
    ratings: Any,
    *,
    categories: list | None = None,
    cluster: Any = None,
    prob: float = DEFAULT_PROB,
    n_resamples: int = 2000,
    method: str = "studentized",
    item_dim: str = "item",
    rater_dim: str = "rater",
    rng: None | int | np.random.Generator = None,
) -> AgreementResult:
    """Fleiss' kappa for several raters (judges) labelling the same items, with a bootstrap interval.

    Parameters
    ----------
    ratings : 2-D array-like or DataArray (item, rater)
        One label per item and rater; every item rated by the same number of raters.
    categories : list, optional
    cluster, prob, n_resamples, method, item_dim, rng
        As in :func:`classification_metrics` (resampling items or clusters;
        the studentized interval is clipped to [-1, 1]).
    rater_dim : str
        Name of the rater dim of a DataArray.

    Returns
    -------
    AgreementResult

    Examples
    --------
    >>> r = fleiss_kappa([["a", "a", "a"], ["a", "b", "b"], ["b", "b", "b"], ["a", "a", "b"]],
    ...                  n_resamples=500, rng=0)
    >>> round(float(r.estimate), 4)
    0.3333
    """
    prob, n_resamples = _common(prob, n_resamples, method)
    if isinstance(ratings, xr.DataArray):
        if set(ratings.dims) != {item_dim, rater_dim}:
            raise ValueError(
                f"`ratings` must have dims ({item_dim!r}, {rater_dim!r}); got {ratings.dims}"
            )
        da = ratings.transpose(item_dim, rater_dim)
    else:
        arr = np.asarray(ratings, dtype=object)
        if arr.ndim != 2:
            raise ValueError(f"`ratings` must be 2-D (item, rater); got shape {arr.shape}")
        da = xr.DataArray(arr, dims=(item_dim, rater_dim))
    _same_kind([np.asarray(da.values)], "ratings")
    codes_lab, cats = _labels(da.values, categories, "ratings")
    n, r = codes_lab.shape
    if n == 0 or not cats:
        raise HierbenchError("`ratings` is empty: it needs at least one item")
    if r < 2:
        raise ValueError(f"`ratings` needs at least 2 raters per item; got {r}")
    k = len(cats)
    table = np.zeros((n, k))
    for c in range(k):
        table[:, c] = (codes_lab == c).sum(1)
    p_item = ((table**2).sum(1) - r) / (r * (r - 1))
    codes, unit = _clusters(da.isel({rater_dim: 0}, drop=True), cluster, item_dim)

    rows = np.column_stack([p_item, table, np.ones(n)])  # per item: P_i, counts per category, 1

    def kappa(S):  # totals (b, k + 2)
        tot = S[:, -1]
        with np.errstate(invalid="ignore", divide="ignore"):
            pbar = S[:, 0] / tot
            pj = S[:, 1:-1] / (tot[:, None] * r)
            pe = (pj**2).sum(1)
            return (pbar - pe) / (1 - pe), pbar, pe

    return _agreement(
        "fleiss_kappa", kappa, rows, codes, unit, rng, method, prob, n_resamples, cats,
        "all ratings in one category: Fleiss' kappa",
    )


def _agreement(
    name, kappa, rows, codes, unit, rng, method, prob, n_resamples, cats, undefined, attrs=None
):
    """Kappa on the items' rows with its bootstrap interval (studentized: clipped to [-1, 1]).

    A NaN kappa is named in an :class:`UndefinedMetricWarning` saying why (``undefined``).
    """
    est, po, pe = (x[0] for x in kappa(rows.sum(0)[None]))
    _warn_nan(est, undefined)
    _, dist, lo, hi = _bootstrap(
        lambda S: kappa(S)[0][:, None],
        rows,
        codes,
        n_resamples,
        as_rng(rng),
        method,
        prob,
        (-1.0, 1.0),
    )
    kind, detail = _detail(method, unit, n_resamples)
    return AgreementResult(
        estimate=xr.DataArray(est, name=name, attrs=attrs or {}),
        ci=make_interval(lo[0], hi[0], prob=prob, kind=kind, detail=detail),
        observed_agreement=float(po),
        expected_agreement=float(pe),
        categories=cats,
        distribution=xr.DataArray(dist[:, 0], dims="resample"),
    )
