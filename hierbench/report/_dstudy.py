"""D-study plot: a G-theory projection (and optionally the Bayesian one) against planned sizes."""

from __future__ import annotations

from typing import Any

import numpy as np
import xarray as xr

from .._docs import fill_doc

__all__ = ["plot_d_study"]


@fill_doc
def plot_d_study(
    d: xr.Dataset,
    *,
    x: str | None = None,
    var: str = "var_paired_diff",
    hue: str | None = None,
    bayes: xr.Dataset | None = None,
    optimum: dict | None = None,
    ax: Any = None,
    sd: bool = True,
) -> Any:
    """Plot a D-study quantity against one planned size, one line per value of another.

    Parameters
    ----------
    d : xarray.Dataset
        From :meth:`hierbench.freq.VarianceComponentsResult.d_study` (or ``optimal_allocation``).
    x : str, optional
        The size dim on the x axis (default: the first dim of ``d[var]``).
    var : str
        ``var_paired_diff`` (plotted as its square root, the SD of a paired
        difference, when ``sd``), ``sigma2_Delta``, ``e_rho2`` or ``phi``.
    hue : str, optional
        A second size dim: one line per value. Other dims are held at their
        first value, said in the axes' left title (``held: n_run = 1``) where
        they have several (select another with ``d.sel(n_run=4)`` first).
    bayes : xarray.Dataset, optional
        From :func:`hierbench.metrics.bayes_d_study` on the same grid: its median
        dashed and its ``<var>_ci`` band, selected by label at the sizes ``d``'s
        lines are drawn at (held sizes included). A held size or a dim
        ``bayes`` lacks the labels of, or a dim of ``bayes`` that ``d`` does not
        fix, is an error.
    optimum : dict, optional
        ``optimal_allocation(...).attrs["optimum"]``: marked with a star.
    ax : matplotlib Axes, optional
        Draw on these axes; the legend sits outside them, on the right, so
        give their figure room (``layout="constrained"``, ``tight_layout()``
        or ``savefig(bbox_inches="tight")``). Without ``ax`` a new figure is
        made with constrained layout, and a plain ``savefig`` keeps the
        legend whole.
    sd : bool
        Plot the square root of a variance.

    Returns
    -------
    matplotlib.axes.Axes
        The axes drawn on (``ax``, or a new figure's): log-scaled planned size
        on x, ``var`` (or its square root) on y; the left title names the
        sizes held at the first of several (``held: n_run = 1``), the
        legend's title the spreads ``d`` assumed: of
        tasks over clusters (its attr ``spread_kind``) and of runs over agent
        x task cells (its attr ``run_spread``: as observed when held at the
        G-study's, even when asked for).

    Examples
    --------
    %(vc_example)s
    >>> ax = plot_d_study(vc.d_study({"task": [10, 20, 40], "run": [1, 3]}), hue="n_run")
    >>> ax.get_xlabel()
    'n_task'
    """
    import matplotlib.pyplot as plt

    if var not in d:
        raise ValueError(
            f"`var` must be a variable of `d`; got {var!r} (variables {list(d.data_vars)})"
        )
    da = d[var]
    x = x or da.dims[0]
    for name, v in (("x", x), ("hue", hue)):
        if v is not None and v not in da.dims:
            raise ValueError(f"`{name}` must be a dim of d[{var!r}] {da.dims}; got {v!r}")
    is_var = var.startswith("sigma2") or var.startswith("var_")
    tf = np.sqrt if (sd and is_var) else (lambda a: a)
    if ax is None:
        # constrained layout makes room for the legend outside the axes: a plain savefig keeps it whole
        _, ax = plt.subplots(figsize=(6, 4), layout="constrained")
    keep = {x} | ({hue} if hue else set())
    cut = [k for k in da.dims if k not in keep and da.sizes[k] > 1]  # a first value chosen among several
    da = da.isel({k: 0 for k in da.dims if k not in keep})
    held = _held_sizes(da, keep)
    if bayes is not None and var in bayes:
        bayes = _bayes_at(bayes, var, held, keep)
    _draw_lines(ax, da, x, hue, tf, bayes, var)
    if optimum:
        key = x[2:] if x.startswith("n_") else x
        if key in optimum:
            pt = d[var].sel({f"n_{k}": v for k, v in optimum.items() if f"n_{k}" in d[var].dims})
            ax.plot([optimum[key]], [tf(float(pt))], "*", ms=14, color="k", label="cost-optimal")
    ax.set_xlabel(x)
    ylab = {"var_paired_diff": "SD of a paired difference", "sigma2_Delta": "absolute error SD"}
    ax.set_ylabel(ylab.get(var, var) if (sd and is_var) else var)
    _log_ticks(ax, da[x].values)
    # beside the lines, not over them
    # the spreads the projection assumed (d_study's attrs), where the figure is read
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), frameon=False,
              title=_spread_title(d), title_fontsize=7)
    if cut:  # the size(s) taken at the first of several, where the figure is read (the centre title is the caller's)
        ax.set_title("held: " + ", ".join(f"{k} = {_fmt(held[k])}" for k in cut), loc="left", fontsize=8)
    return ax


def _log_ticks(ax, values) -> None:
    """A log x axis whose ticks are the planned sizes themselves, in plain numbers; no minor labels.

    On a short log axis the minor labels collide: "2x10^0 3x10^0 4x10^0".
    """
    from matplotlib.ticker import NullFormatter
    from matplotlib.ticker import NullLocator

    ax.set_xscale("log")
    xs = sorted({float(v) for v in values})
    ax.set_xticks(xs, [f"{v:g}" for v in xs])
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_minor_formatter(NullFormatter())


def _held_sizes(da: xr.DataArray, keep: set[str]) -> dict[str, Any]:
    """The planned sizes the plotted lines are at besides ``x`` and ``hue``: label by dim name.

    ``da`` has had its other dims taken at their first value, so they are scalar coords now,
    as are sizes the caller selected before (``d.sel(n_run=1)``); a size is a coord ``n_*``.
    """
    return {
        str(k): c.item() for k, c in da.coords.items()
        if c.ndim == 0 and str(k).startswith("n_") and k not in keep
    }  # fmt: skip


def _bayes_at(bayes: xr.Dataset, var: str, held: dict[str, Any], keep: set[str]) -> xr.Dataset:
    """``bayes`` at the held sizes, by label; refused where it lacks them or has a size ``d`` does not fix."""
    out = bayes
    for k in keep:
        if k not in out[var].dims:
            raise ValueError(
                f"`bayes[{var!r}]` has no dim {k!r}, along which the G-theory lines are drawn (its dims "
                f"{out[var].dims}): give `bayes` from bayes_d_study on the same grid as `d`"
            )
    for k, v in held.items():
        if k not in out.coords:  # a dim without labels cannot be matched by label
            raise ValueError(
                f"`bayes` has no size {k!r}, which the G-theory lines hold at {v!r}: give `bayes` "
                f"from bayes_d_study on the same grid as `d`"
            )
        labels = np.atleast_1d(out[k].values)
        if not np.isin(v, labels):
            raise ValueError(
                f"`bayes` has no {k} = {v!r}, where the G-theory lines are held (its {k}: "
                f"{labels.tolist()}): give `bayes` from bayes_d_study on the same grid as `d`"
            )
        if k in out[var].dims:
            out = out.sel({k: v})
    extra = [k for k in out[var].dims if k not in keep and k != "ci_bound"]
    if extra:
        raise ValueError(
            f"`bayes` varies along {extra}, which `d` does not fix (d's lines are over "
            f"{sorted(keep)}, held at {held or 'nothing'}): select them in `bayes` first"
        )
    return out


def _spread_title(d: xr.Dataset) -> str | None:
    """The legend's title: the spread of tasks over clusters and of runs over cells ``d`` assumed.

    From attrs ``spread_kind`` and ``run_spread_kind`` (runs held at the G-study's: observed,
    the harmonic mean per cell; asked for: even, the same number in every cell); None without either.
    """
    lines = []
    if d.attrs.get("spread_kind"):
        lines.append(f"tasks over clusters: {d.attrs['spread_kind']} spread")
    if d.attrs.get("run_spread_kind"):
        lines.append(f"runs per cell: {d.attrs['run_spread_kind']} spread")
    return "\n".join(lines) or None


def _fmt(v: Any) -> str:
    """A size for the title: ``1``, ``2.5``."""
    return f"{v:g}" if isinstance(v, int | float | np.number) else str(v)


def _draw_lines(ax, da, x, hue, tf, bayes, var) -> None:
    """One G-theory line per ``hue`` value, and the Bayesian median dashed with its band.

    ``bayes`` is already at the held sizes (``_bayes_at``); its lines are taken by label.
    """
    import matplotlib.pyplot as plt

    hues = list(da[hue].values) if hue else [None]
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for i, h in enumerate(hues):
        line = da.sel({hue: h}) if hue else da
        c = colors[i % len(colors)]
        label = f"{hue}={h}" if hue else "G-theory"
        ax.plot(line[x].values, tf(line.values), "-o", ms=3, color=c, label=label + " (G)")
        if bayes is None or var not in bayes:
            continue
        if hue and h not in bayes[hue].values:
            raise ValueError(
                f"`bayes` has no {hue} = {h!r}, a line of the G-theory plot (its {hue}: "
                f"{bayes[hue].values.tolist()}): give `bayes` from bayes_d_study on the same grid as `d`"
            )
        b = bayes[var].sel({hue: h}) if hue else bayes[var]
        ax.plot(b[x].values, tf(b.values), "--", color=c, label=label + " (Bayes)")
        if f"{var}_ci" in bayes:
            ci = bayes[f"{var}_ci"].sel({hue: h}) if hue else bayes[f"{var}_ci"]
            lo, hi = tf(ci.sel(ci_bound="lower").values), tf(ci.sel(ci_bound="upper").values)
            ax.fill_between(ci[x].values, lo, hi, color=c, alpha=0.15)
