"""G-study data in long form: scores and facet codes from a DataFrame or a score array.

Private to the variance-components wing. Labels are kept as given (never parsed or
merged); scores that are not numbers are refused, naming the rows; a balanced design
is recognised and kept as a dense array (the closed-form ANOVA's fast path).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

from . import _reml
from ._design_lang import Design

__all__: list[str] = []


@dataclass
class Long:
    y: np.ndarray
    codes: dict[str, np.ndarray]
    labels: dict[str, np.ndarray]
    dense: np.ndarray | None = None  # balanced fast path: axes in design.facets order
    n_missing: int = 0  # rows of a table (cells of an array) left out for a missing score
    missing_what: str = "rows"


def factorize(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Codes of labels as given (distinct values stay distinct; nothing is parsed or merged)."""
    try:
        codes, uniq = pd.factorize(np.asarray(values), sort=True)
    except TypeError:  # labels of mixed types cannot be sorted: keep their order of appearance
        codes, uniq = pd.factorize(np.asarray(values, dtype=object), sort=False)
    return codes.astype(np.int64), np.asarray(uniq, dtype=object)


def codes_of_column(col: np.ndarray, name: str) -> tuple[np.ndarray, np.ndarray]:
    """Return the codes of one facet column; refuse missing labels.

    numpy's sort-based unique for integer/bool labels (the same sorted codes as
    :func:`factorize`, without pandas' per-call overhead), else :func:`factorize`.
    """
    if col.dtype.kind in "iub":  # cannot hold a missing value
        if col.size and col.dtype.kind != "b":
            lo, hi = int(col.min()), int(col.max())
            if hi - lo < 4 * col.size + 64:  # small range: a presence table, O(n), no sort
                present = np.zeros(hi - lo + 1, dtype=bool)
                shifted = col - lo
                present[shifted] = True
                rank = np.cumsum(present) - 1
                uniq = np.flatnonzero(present) + lo
                return rank[shifted].astype(np.int64), uniq.astype(col.dtype).astype(object)
        uniq, codes = np.unique(col, return_inverse=True)
        return codes.astype(np.int64, copy=False), uniq.astype(object)
    miss = pd.isna(col)
    if miss.any():
        raise ValueError(
            f"`data`: facet column {name!r} has {int(miss.sum())} missing labels (e.g. at "
            f"positions {np.flatnonzero(miss)[:5].tolist()}); label them or drop those rows"
        )
    return factorize(col)


def from_frame(df: pd.DataFrame, design: Design, var: str) -> Long:
    """Long data from a table with one column per facet and the score column ``var``.

    Rows with a missing score (NaN / None) are left out and counted in ``n_missing``;
    a score that is not a number (``'0,5'``, ``'n/a'``) is refused, naming its rows.
    """
    missing = [c for c in (*design.facets, var) if c not in df.columns]
    if missing:
        raise ValueError(
            f"`data`: a DataFrame must have a column for every facet of the design "
            f"{design.formula!r} and the score column `var`={var!r}; missing {missing} "
            f"(columns {list(df.columns)})"
        )
    y = _scores(df[var], var)
    keep = np.isfinite(y)
    if np.isinf(y).any():
        raise ValueError(f"`data`: column {var!r} must be finite or NaN; found infinite values")
    for f in design.facets:
        if isinstance(df[f].dtype, np.dtype) and df[f].dtype.kind in "iub":
            continue  # cannot hold a missing label
        miss = df[f].isna().to_numpy() & keep
        if miss.any():
            raise ValueError(
                f"`data`: facet column {f!r} has {int(miss.sum())} missing labels on scored rows "
                f"(e.g. rows {df.index[miss][:5].tolist()}); label them or drop those rows"
            )
    all_kept = bool(keep.all())
    codes, labels = {}, {}
    for f in design.facets:
        col = df[f].to_numpy()
        codes[f], labels[f] = codes_of_column(col if all_kept else col[keep], f)
    return Long(
        y=y if all_kept else y[keep],
        codes=codes,
        labels=labels,
        n_missing=int((~keep).sum()),
    )


def _scores(col: pd.Series, var: str) -> np.ndarray:
    """Return the score column as floats: numbers as they are, text parsed only where it is a number."""
    if isinstance(col.dtype, np.dtype) and col.dtype.kind in "iufb":  # numeric: no parsing
        return col.to_numpy(dtype=float)
    y = pd.to_numeric(col, errors="coerce").to_numpy(dtype=float)
    bad = np.isnan(y) & ~pd.isna(col).to_numpy(dtype=bool)
    if bad.any():
        rows = list(zip(col.index[bad][:5].tolist(), col[bad][:5].tolist(), strict=True))
        raise ValueError(
            f"`data`: column {var!r} must hold numbers (NaN for a missing score); "
            f"{int(bad.sum())} of {col.size} rows hold values that are not numbers, e.g. "
            f"(row, value) {rows}. Convert them (e.g. decimal commas: "
            f"df[{var!r}].str.replace(',', '.')) or drop those rows first"
        )
    return y


def coord_facet(da: xr.DataArray, name: str) -> str:
    if name in da.dims:
        return name
    if name in da.coords and da.coords[name].ndim == 1:
        return str(da.coords[name].dims[0])
    raise ValueError(
        f"`design`: facet {name!r} must be a dimension of the scores {tuple(da.dims)} or a 1-D "
        f"coord along one (coords {list(da.coords)})"
    )


def from_array(da: xr.DataArray, design: Design) -> Long:
    vals = np.asarray(da.values, dtype=float)
    if np.isinf(vals).any():
        raise ValueError("`data`: the scores must be finite or NaN; found infinite values")
    home = {f: coord_facet(da, f) for f in design.facets}
    dims_used = {h for h in home.values()}
    extra = [d for d in da.dims if d not in dims_used]
    if extra:
        raise ValueError(
            f"the scores must have only dimensions named in the design {design.formula!r}; "
            f"extra dimensions {extra} (select or average them first)"
        )
    dim_facets = [f for f in design.facets if f in da.dims]
    if len(dim_facets) == len(design.facets) and np.isfinite(vals).all():
        # fast path: every facet is a dim and nothing is missing: balanced and dense
        order = [da.dims.index(f) for f in design.facets]
        dense = vals.transpose(order) if order != sorted(order) else vals
        labels = {f: np.asarray(da[f].values) for f in design.facets if f in da.coords}
        return Long(y=dense.ravel(), codes={}, labels=labels, dense=dense)
    obs = np.isfinite(vals)
    idx = np.nonzero(obs)
    codes, labels = {}, {}
    pos = {d: idx[i] for i, d in enumerate(da.dims)}
    for f in design.facets:
        d = home[f]
        if f == d:
            lab = da[d].values if d in da.coords else np.arange(da.sizes[d])
            c, u = factorize(lab)
        else:
            raw = np.asarray(da.coords[f].values, dtype=object)
            miss = np.array(
                [v is None or (isinstance(v, float) and np.isnan(v)) or v == "" for v in raw]
            )
            if miss.any():
                raise ValueError(
                    f"`data`: coord {f!r} has {int(miss.sum())} missing labels (e.g. "
                    f"{d} {list(np.asarray(da[d].values)[miss][:3])}); label them or drop "
                    f"{f!r} from the design"
                )
            c, u = factorize(raw)
        # levels with no observed score (an agent that ran none of these tasks) are left out:
        # codes stay dense 0..L-1 over the observed levels
        used, dense_c = np.unique(c[pos[d]], return_inverse=True)
        codes[f] = dense_c.astype(np.int64)
        labels[f] = u[used]
    return Long(
        y=vals[obs], codes=codes, labels=labels, n_missing=int((~obs).sum()), missing_what="score cells"
    )


def balanced_dense(long: Long, design: Design) -> np.ndarray | None:
    """Return the dense array (axes in ``design.facets`` order) if the long data are balanced."""
    if long.dense is not None:
        return long.dense
    N = long.y.size
    ranks = {}
    sizes = []
    for f in design.facets:
        if not design.parents[f]:  # a crossed facet: its codes are already 0..n-1
            ranks[f] = long.codes[f]
            sizes.append(int(long.codes[f].max()) + 1)
            continue
        par = [g for g in design.facets if g in design.parents[f]]
        pc, _ = _reml.joint_codes([long.codes[g] for g in par])
        jc, nj = _reml.joint_codes([pc, long.codes[f]])
        first = np.zeros(nj, dtype=np.int64)
        first[jc[::-1]] = np.arange(N)[::-1]
        parent_of = pc[first]
        per = np.bincount(parent_of)
        per = per[per > 0]
        if per.min() != per.max():
            return None
        order = np.lexsort((long.codes[f][first], parent_of))
        rank = np.empty(nj, dtype=np.int64)
        sorted_par = parent_of[order]
        starts = np.r_[0, np.nonzero(np.diff(sorted_par))[0] + 1]
        grp = np.zeros(nj, dtype=np.int64)
        grp[starts[1:]] = 1
        grp = np.cumsum(grp)
        rank[order] = np.arange(nj) - starts[grp]
        ranks[f] = rank[jc]
        sizes.append(int(per[0]))
    if N != int(np.prod(sizes)):
        return None
    flat = np.ravel_multi_index(tuple(ranks[f] for f in design.facets), sizes)
    if np.bincount(flat, minlength=N).max() != 1:
        return None
    dense = np.empty(N)
    dense[flat] = long.y
    return dense.reshape(sizes)
