"""Agreement between raters: Cohen's kappa for two (weighted for ordered categories), Fleiss' kappa for several.

Before a judge stands in for humans, or one judge for another, their labels
should agree beyond chance. Labels are categories: a missing label is
refused, numbers are never mixed with text (1 and '1' are not merged), and
numbers are keyed by value and ordered by it (2 and 2.0 are one label; 10
comes after 9); weighted kappa measures how far apart two numbers are by
their values (3 and 5 are two steps apart on a 1-5 rubric where nobody gave
a 4). Text has no order, so weighted kappa on text needs the categories in
order, and measures distance by position in that order. Kappa needs at least
three items (clusters). Number labels that look like continuous scores (not
all whole numbers, more distinct values than half the items) are warned
about: kappa takes each value as a category.
Each kappa is a smooth function of per-item totals, so it is bootstrapped
like the classification metrics, whole clusters at a time, with a
studentized interval clipped to [-1, 1] by default.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING
from typing import Any
from typing import ClassVar

import numpy as np
import xarray as xr

from ..._base import DEFAULT_PROB
from ..._base import HierbenchError
from ..._base import ResampledResult
from ..._base import UndefinedMetricWarning
from ..._base import as_rng
from ..._base import make_interval
from ..._base import renamed_kwargs
from ..._base import warn_user
from ._resample import _bootstrap
from ._resample import _check_units
from ._resample import _clusters
from ._resample import _common
from ._resample import _detail
from ._resample import _few_clusters
from ._resample import _pair
from ._resample import _warn_nan
from ._resample import _warn_undefined_resamples

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["AgreementResult", "cohen_kappa", "fleiss_kappa"]

#: ``category_order`` of number labels without ``categories``: weighted kappa measures their distance by value
NUMERIC_ORDER = "numeric order of the labels"

#: most per-item confusion cells (items x categories^2) Cohen's kappa holds: 2^27 floats, 1 GiB
MAX_TABLE_ELEMENTS = 2**27


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
        Cohen: 1 - the observed and the chance (weighted) disagreement; Fleiss:
        the mean agreement per item and the chance agreement.
    categories : list
        The categories in the order used; ``estimate.attrs["category_order"]``
        says how that order was taken (numeric for number labels, as given in
        ``categories``, or text sorted when the order is not used).
    n_items : int
        Items rated.
    n_undefined : int
        Resamples where kappa was 0/0 (all drawn items in one category), left
        out of the interval, with an :class:`UndefinedMetricWarning`.
    distribution : DataArray (resample)
    """

    estimate: xr.DataArray
    ci: xr.DataArray
    observed_agreement: float
    expected_agreement: float
    categories: list
    n_items: int = 0
    n_undefined: int = 0
    _title_fields: ClassVar[tuple[str, ...]] = ("statistic",)

    @property
    def statistic(self) -> str:
        """What the estimate is: ``"Cohen's kappa, quadratic weights, 200 items"`` and the like."""
        weights = self.estimate.attrs.get("weights")
        if self.estimate.name == "cohen_kappa":
            what = "Cohen's kappa, " + ("unweighted" if weights in (None, "None") else f"{weights} weights")
        else:
            what = "Fleiss' kappa"
        return f"{what}, {self.n_items} items"

    def to_frame(self) -> pd.DataFrame:
        """One row: the kappa (``statistic``), its interval, the observed and expected agreement."""
        df = super().to_frame()
        df.insert(0, "statistic", self.statistic)
        df["observed_agreement"] = self.observed_agreement
        df["expected_agreement"] = self.expected_agreement
        return df


def _labels(
    values: np.ndarray, categories, name: str, *, ordered: bool = False
) -> tuple[np.ndarray, list, str]:
    """Category codes of ``values``, the categories in order, and how that order was taken.

    Number labels are keyed by value (2 and 2.0 are one category) and ordered
    numerically (10 after 9, not after 1). Text has no order of its own: sorted
    as text when the order does not matter, refused when it does (``ordered``,
    weighted kappa) unless ``categories`` gives it.
    """
    vals = np.asarray(values, dtype=object)
    missing = np.array([_missing(v) for v in vals.ravel()], dtype=bool).reshape(vals.shape)
    if missing.any():
        raise ValueError(
            f"`{name}` must have a label for every item (and rater); {int(missing.sum())} are missing"
        )
    flat = vals.ravel().tolist()
    if flat and all(_label_kind(v) == "number" for v in flat):
        if categories is None:
            _warn_scores(np.array([float(v) for v in flat]), vals.shape[0], name)
        return _number_labels(vals, categories, name)
    strs = vals.astype(str)
    seen = set(strs.ravel().tolist())
    if categories is None:
        booleans = flat and all(_label_kind(v) == "boolean" for v in flat)
        if ordered and not booleans:
            raise HierbenchError(
                f"`{name}` holds text labels {sorted(seen)[:5]}, which have no order, and weighted "
                "kappa measures how far apart two labels are in that order: give the categories "
                "in order with `categories=[...]` (or the labels as numbers)"
            )
        cats = sorted(seen)
        how = "False < True" if booleans else "labels sorted as text (unweighted: the order is not used)"
        return np.vectorize({c: i for i, c in enumerate(cats)}.__getitem__, otypes=[np.int64])(strs), cats, how
    cats = [str(c) for c in categories]
    if len(set(cats)) != len(cats):
        raise ValueError(f"`categories` must not repeat a label; got {list(categories)}")
    unknown = sorted(seen - set(cats))
    if unknown:
        raise ValueError(f"`{name}` holds labels not in `categories` {cats}: {unknown[:5]}")
    index = {c: i for i, c in enumerate(cats)}
    return np.vectorize(index.__getitem__, otypes=[np.int64])(strs), cats, "as given in `categories`"


def _number_labels(vals: np.ndarray, categories, name: str) -> tuple[np.ndarray, list, str]:
    """``_labels`` for number labels: keyed by value, in numeric order unless ``categories`` gives one."""
    keys = np.array([float(v) for v in vals.ravel().tolist()]).reshape(vals.shape)
    if categories is None:
        order = np.unique(keys)
        cats = [int(c) if float(c).is_integer() else float(c) for c in order]
        how = NUMERIC_ORDER
    else:
        cats = list(categories)
        if not all(_label_kind(c) == "number" for c in cats):
            raise ValueError(
                f"`{name}` holds numbers, so `categories` must be numbers too; got {cats}"
            )
        order = np.array([float(c) for c in cats])
        if np.unique(order).size != order.size:
            raise ValueError(f"`categories` must not repeat a label; got {cats}")
        unknown = np.setdiff1d(keys.ravel(), order)
        if unknown.size:
            raise ValueError(
                f"`{name}` holds labels not in `categories` {cats}: {unknown[:5].tolist()}"
            )
        how = "as given in `categories`"
    pos = np.argsort(order)
    codes = pos[np.searchsorted(order[pos], keys)]
    return codes.astype(np.int64), cats, how


def _warn_scores(keys: np.ndarray, n_items: int, name: str) -> None:
    """Warn when number labels look like continuous scores rather than categories.

    The rule: some labels are not whole numbers and there are more distinct
    values than half the ``n_items`` items (fewer than two items per category
    on average). Kappa then takes every distinct value as its own category
    (0.5 and 0.51 disagree as fully as 0 and 1).
    """
    vals = np.unique(keys)
    fractional = vals[vals != np.round(vals)]
    if fractional.size == 0 or 2 * vals.size <= n_items:
        return
    warn_user(
        f"`{name}` looks like continuous scores, not categories: {vals.size} distinct values on "
        f"{n_items} items (fewer than 2 items per category), not all whole numbers (e.g. "
        f"{fractional[:3].tolist()}). Kappa takes every distinct value as its own category, so near "
        "values count as full disagreements; bin the scores into categories first (and give them "
        "in `categories`), or measure agreement of scores with a correlation",
        UndefinedMetricWarning,
    )


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
        Unweighted kappa, or weighted kappa for ordered categories: the
        disagreement of labels a and b is ``|d(a, b)| / D`` (linear) or its
        square (quadratic). For number labels (``categories`` not given) ``d``
        is the difference of their values and ``D`` the range of the values
        seen, so gaps count: on a 1-5 rubric with no 4 given, 3 and 5 are two
        steps apart, not one. Otherwise (text, booleans, or ``categories``
        given) ``d`` is the difference of their positions in the order and
        ``D = C - 1``. ``estimate.attrs["distance"]`` says which.
    categories : list, optional
        All categories, in order. Default: the labels seen; numbers in numeric
        order (2 and 2.0 are one label). Text has no order, so weighted kappa
        on text labels needs ``categories``. ``estimate.attrs["category_order"]``
        says which order was used. Given, weighted kappa takes the distance of
        two labels by their positions in it, whatever their values.
    cluster, prob, n_resamples, method, item_dim, rng
        As in :func:`classification_metrics` (the studentized interval is
        clipped to [-1, 1]). The studentized standard error needs memory
        linear in the items, whatever the number of categories C, but time
        of order C^2 times the distinct (rater_a, rater_b) pairs per
        resample (about 30 s at 50 categories and 200 items), refused
        beyond ``MAX_STUDENTIZED_WORK`` evaluations in all (about a minute);
        ``method="percentile"`` costs C^2 per resample. More than 2^27
        confusion cells (items x C^2) are refused whatever the method.

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
    both, cats, how = _labels(
        np.stack([va.values, vb.values], 1), categories, "rater_a/rater_b", ordered=weights is not None
    )
    k = len(cats)
    codes, unit = _clusters(va, cluster, item_dim)
    _check_units(codes, both.shape[0], unit, "Cohen's kappa")
    _warn_one_category(both, cats)
    dis, distance = _disagreement(weights, cats, by_value=categories is None and how == NUMERIC_ORDER)
    n = both.shape[0]
    if n * k * k > MAX_TABLE_ELEMENTS:
        raise HierbenchError(
            f"Cohen's kappa on {k} categories and {n} items would hold {n} x {k}^2 = {n * k * k:.3g} "
            f"confusion cells, over the limit of {MAX_TABLE_ELEMENTS:.3g} (1 GiB): so many "
            "categories are rarely categories; bin the labels into fewer (give them in `categories`)"
        )
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
        attrs={"weights": str(weights), "category_order": how, "distance": distance},
    )


def _disagreement(weights: str | None, cats: list, *, by_value: bool) -> tuple[np.ndarray, str]:
    """Cohen's kappa's disagreement of every pair of the categories ``cats``, and what it measures.

    Unweighted: 1 off the diagonal. Linear: ``|x_a - x_b| / (max - min)``, quadratic its square,
    with ``x`` the labels' values (``by_value``: number labels, no ``categories`` given) or
    their positions ``0..C-1`` in the order.
    """
    x = np.array(cats, dtype=float) if by_value else np.arange(len(cats), dtype=float)
    d = np.abs(x[:, None] - x[None, :])
    if weights is None:
        return (d != 0).astype(float), "none (unweighted: every disagreement counts 1)"
    span = float(x.max() - x.min()) or 1.0
    by = ("by value: |a - b| / (max - min) of the labels' values" if by_value
          else "by position in the category order: |i - j| / (C - 1)")
    return (d / span if weights == "linear" else (d / span) ** 2), by + ("" if weights == "linear" else ", squared")


def _warn_one_category(both: np.ndarray, cats: list) -> None:
    """Warn when one rater gives every item the same category (and the other does not).

    Then the chance agreement equals the observed agreement whatever the other rater
    says, so kappa is 0 by construction (weighted or not): it says nothing about how
    well the raters agree. Both raters constant is a 0/0 named elsewhere.
    """
    constant = [np.unique(both[:, r]).size == 1 for r in (0, 1)]
    if constant[0] == constant[1]:
        return
    r = 0 if constant[0] else 1
    p_o = float(np.mean(both[:, 0] == both[:, 1]))
    warn_user(
        f"{('rater_a', 'rater_b')[r]} gives every item the same category "
        f"({cats[int(both[0, r])]!r}): kappa is 0 by construction there (its chance agreement "
        f"equals the observed agreement, {p_o:.3g} of items, whatever the other rater says), "
        "so it does not measure agreement; report the observed agreement instead",
        UndefinedMetricWarning,
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
        As in :func:`classification_metrics` (resampling items or clusters).
        Fleiss' kappa is never below ``-1/(r - 1)`` with ``r`` raters per item
        (-0.125 with 9; reached where each item's ratings all differ), so the
        interval's lower end is clipped there (and its upper at 1), which
        ``ci_detail`` says.
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
    if da.size == 0:
        raise HierbenchError("`ratings` is empty: it needs at least one item")
    codes_lab, cats, how = _labels(da.values, categories, "ratings")
    n, r = codes_lab.shape
    if r < 2:
        raise ValueError(f"`ratings` needs at least 2 raters per item; got {r}")
    k = len(cats)
    table = np.zeros((n, k))
    for c in range(k):
        table[:, c] = (codes_lab == c).sum(1)
    p_item = ((table**2).sum(1) - r) / (r * (r - 1))
    codes, unit = _clusters(da.isel({rater_dim: 0}, drop=True), cluster, item_dim)
    _check_units(codes, n, unit, "Fleiss' kappa")

    rows = np.column_stack([p_item, table, np.ones(n)])  # per item: P_i, counts per category, 1

    def kappa(S):  # totals (b, k + 2)
        tot = S[:, -1]
        with np.errstate(invalid="ignore", divide="ignore"):
            pbar = S[:, 0] / tot
            pj = S[:, 1:-1] / (tot[:, None] * r)
            pe = (pj**2).sum(1)
            return (pbar - pe) / (1 - pe), pbar, pe

    floor = -1.0 / (r - 1)
    return _agreement(
        "fleiss_kappa", kappa, rows, codes, unit, rng, method, prob, n_resamples, cats,
        "all ratings in one category: Fleiss' kappa",
        attrs={"category_order": how}, floor=(floor, f"-1/(r - 1) = {floor:.4g}: with r = {r} raters per item "
                                               "Fleiss' kappa is never below it (reached where each item's ratings all differ)"),
    )


def _agreement(
    name, kappa, rows, codes, unit, rng, method, prob, n_resamples, cats, undefined, attrs=None, floor=None
):
    """Kappa on the items' rows with its bootstrap interval (studentized: clipped to [-1, 1]).

    A NaN kappa is named in an :class:`UndefinedMetricWarning` saying why (``undefined``).
    ``floor``: ``(value, why)``, the least the statistic can be (Fleiss' ``-1/(r - 1)``): the
    interval's lower end is clipped there (every method), and ``ci_detail`` says so.
    """
    est, po, pe = (x[0] for x in kappa(rows.sum(0)[None]))
    _warn_nan(est, undefined)
    few = _few_clusters(codes, prob, rows.shape[0])
    _, dist, lo, hi = _bootstrap(
        lambda S: kappa(S)[0][:, None],
        rows,
        codes,
        n_resamples,
        as_rng(rng),
        method,
        prob,
        (-1.0 if floor is None else floor[0], 1.0),
    )
    if floor is not None:
        lo = np.where(np.isfinite(lo), np.maximum(lo, floor[0]), lo)
    n_undef = _warn_undefined_resamples(
        dist[:, 0], est, n_resamples, "kappa",
        "a resample whose items all carry one category and the raters agree on it has none, 0/0",
    )
    kind, detail = _detail(method, unit, n_resamples)
    if n_undef:
        detail += f"; {n_undef} resamples with kappa undefined (0/0) left out"
    if floor is not None:
        detail += f"; lower end clipped at {floor[1]}"
    return AgreementResult(
        estimate=xr.DataArray(est, name=name, attrs=attrs or {}),
        ci=make_interval(lo[0], hi[0], prob=prob, kind=kind, detail=detail).assign_attrs(few),
        observed_agreement=float(po),
        expected_agreement=float(pe),
        categories=cats,
        n_items=int(rows.shape[0]),
        n_undefined=n_undef,
        distribution=xr.DataArray(dist[:, 0], dims="resample"),
    )
