"""The report's figures: matplotlib for the comparison plots, arviz-plots for the MCMC diagnostics.

Every axis states what it measures, its unit or scale, and the interval level.
Each function returns a matplotlib Figure (or an arviz-plots PlotCollection).
"""

from __future__ import annotations

import textwrap
from collections.abc import Mapping
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: above this many rows or columns a heatmap carries no names on that axis (they could not be read)
LABELS_MAX = 60

__all__ = [
    "energy_plot",
    "heatmap",
    "interval_forest",
    "passk_curves",
    "ppc_plot",
    "ppc_rootogram",
    "rank_p_text",
    "rank_plot",
    "rank_tests",
    "rank_thinning",
    "trace_plot",
    "variance_plot",
]

_SAMPLE_DIMS = ["chain", "draw"]


def _plt():
    # the user's backend is left alone (the CLI sets MPLBACKEND=Agg); report figures are
    # rendered to PNG and closed, so they never pop up
    import matplotlib.pyplot as plt

    return plt


def interval_forest(
    intervals: Mapping[str, pd.DataFrame],
    *,
    truth: pd.Series | None = None,
    xlabel: str,
    title: str,
) -> Figure:
    """Intervals of several estimators per item on one axis, with truth marks when known.

    Parameters
    ----------
    intervals : mapping of estimator name -> DataFrame
        Each indexed by item (agent) with columns ``estimate``, ``lower``, ``upper``.
    truth : Series, optional
        True value per item, drawn as a black cross.
    xlabel, title : str
    """
    plt = _plt()
    items = list(dict.fromkeys(i for df in intervals.values() for i in map(str, df.index)))
    n_est = len(intervals)
    fig, ax = plt.subplots(figsize=(10, 1.6 + 0.3 * len(items) * max(n_est, 1)))
    colors = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    offsets = np.linspace(-0.25, 0.25, n_est) if n_est > 1 else np.zeros(1)
    y = np.arange(len(items))[::-1]
    pos = dict(zip(items, y, strict=True))
    for (name, df), off, c in zip(intervals.items(), offsets, colors, strict=False):
        idx = [str(i) for i in df.index]
        yy = np.array([pos[i] for i in idx]) + off
        ax.hlines(
            yy,
            df["lower"].to_numpy(float),
            df["upper"].to_numpy(float),
            color=c,
            lw=2.2,
            label=name,
        )
        if "estimate" in df:
            ax.plot(df["estimate"].to_numpy(float), yy, "o", color=c, ms=5)
    if truth is not None:
        t = truth.copy()
        t.index = t.index.astype(str)
        t = t.reindex(items)
        ax.plot(t.to_numpy(float), y, "x", color="black", ms=8, mew=2, label="truth")
    ax.set_yticks(y, items)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("agent")
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    # beside the axes: inside, it hides rows; below a tall axis it leaves a gap
    ax.legend(loc="upper left", bbox_to_anchor=(1.02, 1.0), fontsize="small", frameon=False)
    fig.tight_layout()
    return fig


def passk_curves(
    bands: pd.DataFrame | None,
    points: pd.DataFrame | None,
    *,
    prob: float,
    title: str,
) -> Figure:
    """pass^k against k per agent: the posterior band and the unbiased estimates as points.

    Parameters
    ----------
    bands : DataFrame, optional
        Index (agent, k); columns ``estimate``, ``lower``, ``upper``.
    points : DataFrame, optional
        Index (agent, k); column ``estimate`` (the unbiased estimator), and ``lower`` /
        ``upper``: drawn as bars (the agents side by side at each k) when there are no bands.
    """
    plt = _plt()
    src = bands if bands is not None else points
    agents = list(dict.fromkeys(map(str, src.index.get_level_values("agent"))))
    ncol = 1 if len(agents) <= 14 else 2
    fig, ax = plt.subplots(figsize=(8 + 2.6 * ncol, max(4.8, 0.22 * len(agents) / ncol + 1.5)))
    styles = _agent_styles(len(agents))
    have_points = set() if points is None else set(map(str, points.index.get_level_values("agent")))
    bars = points is not None and {"lower", "upper"} <= set(points.columns)
    for a, (c, ls, mk) in zip(agents, styles, strict=True):
        if bands is not None:
            b = bands.xs(a, level="agent")
            k = b.index.to_numpy(float)
            ax.fill_between(k, b["lower"], b["upper"], color=c, alpha=0.18)
            ax.plot(k, b["estimate"], ls=ls, color=c, label=a)
        if a in have_points:
            p = points.xs(a, level="agent")
            if bands is None and bars:  # each agent a little aside, so the bars at one k do not overlap
                x = p.index.to_numpy(float) + 0.3 * (agents.index(a) - (len(agents) - 1) / 2) / max(len(agents), 1)
                err = np.vstack([p["estimate"] - p["lower"], p["upper"] - p["estimate"]]).clip(0)
                ax.errorbar(x, p["estimate"], yerr=err, fmt=mk, color=c, ms=4, capsize=2, label=a)
                continue
            ax.plot(p.index.to_numpy(float), p["estimate"], mk, color=c, ms=4,
                    label=None if bands is not None else a)  # fmt: skip
    ks = sorted({int(k) for k in src.index.get_level_values("k")})
    ax.set_xticks(ks)
    ax.set_xlabel("k (attempts that must all succeed)")
    ax.set_ylabel("pass^k (probability, 0-1)")
    sub = f"lines: posterior mean, bands: {prob:.0%} equal-tailed interval; " if bands is not None else ""
    bar = f", bars: its {prob:.0%} interval" if bands is None and bars else ""
    ax.set_title(f"{title}\n{sub}points: unbiased estimator{bar}", fontsize="medium")
    ax.set_ylim(0, 1)
    ax.grid(alpha=0.3)
    # outside the axes: a legend over the curves hides them
    ax.legend(fontsize="small", ncol=ncol, loc="upper left", bbox_to_anchor=(1.02, 1.0),
              frameon=False, title="agent")  # fmt: skip
    fig.tight_layout()
    return fig


#: line styles and point markers of the second, third, ... ten agents (the first ten: solid, circles)
_STYLES = (("-", "o"), ("--", "s"), (":", "^"), ("-.", "D"))


def _agent_styles(n: int) -> list[tuple[tuple, str, str]]:
    """A colour, a line style and a marker per agent, no two agents alike.

    The first ten take tab10's ten distinct hues, solid, with circles; the next
    ten the same hues, lighter (tab20's paired shades), dashed, with squares;
    beyond twenty the hues repeat with further styles. tab20 alone gives
    neighbours in the list two shades of one hue (a blue and a light blue):
    with eleven agents two legend entries were told apart by shade only.
    """
    import matplotlib as mpl

    tab10 = mpl.colormaps["tab10"].colors
    light = mpl.colormaps["tab20"].colors[1::2]
    out = []
    for i in range(n):
        group, hue = divmod(i, 10)
        ls, mk = _STYLES[group % len(_STYLES)]
        out.append(((light if group % 2 else tab10)[hue], ls, mk))
    return out


def heatmap(
    matrix: pd.DataFrame,
    *,
    title: str,
    xlabel: str,
    ylabel: str,
    cbar_label: str,
    vmin: float = 0.0,
    vmax: float = 1.0,
    annotate: bool = True,
    max_labels: int = LABELS_MAX,
    hatched: np.ndarray | None = None,
) -> Figure:
    """A labelled heatmap of a probability matrix (NaN cells left blank), ``hatched`` cells marked.

    ``hatched``: booleans of ``matrix``'s shape; those cells are drawn with diagonal hatching
    over their colour (the caller's caption says what they mark: pairs of agents that never met).

    The figure is sized from its cells, not the cells from the figure: each cell keeps
    at least ``_cell_inches`` on a side, and the names, the title (over the whole
    figure, wrapped to its width) and the colour bar get the room they take, measured
    once drawn (``_fit_to_cells``). Sized the other way round, two agents with
    SWE-bench's names ("Claude 4.5 Opus medium (20251101)") left a strip 10 pixels high
    whose names printed over each other, under a title that ran into the colour bar.

    With more than ``max_labels`` rows or columns the axes carry no names (316
    names on an axis are a black bar) and the figure keeps a page's size instead of
    growing with the cells; the caller's caption says so.
    """
    plt = _plt()
    n_r, n_c = matrix.shape
    named = max(n_r, n_c) <= max_labels
    written = annotate and n_r * n_c <= 400
    fig, ax = plt.subplots(figsize=(10.0, 8.5), layout="constrained")
    vals = matrix.to_numpy(float)
    im = ax.imshow(np.ma.masked_invalid(vals), vmin=vmin, vmax=vmax, cmap="viridis", aspect="auto")
    if named:
        ax.set_xticks(range(n_c), [str(c) for c in matrix.columns], rotation=45, ha="right", rotation_mode="anchor")
        ax.set_yticks(range(n_r), [str(i) for i in matrix.index])
    else:
        ax.set_xticks([])
        ax.set_yticks([])
        xlabel, ylabel = f"{xlabel} ({n_c}, unnamed)", f"{ylabel} ({n_r}, unnamed)"
    if written:
        for i, j in zip(*np.nonzero(np.isfinite(vals)), strict=True):
            v = vals[i, j]
            ax.text(j, i, f"{v:.2f}", ha="center", va="center", fontsize=7,
                    color="white" if v < 0.6 * vmax else "black")  # fmt: skip
    if hatched is not None:
        _hatch(ax, np.asarray(hatched, dtype=bool))
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    cbar = fig.colorbar(im, ax=ax, label=cbar_label)
    if named:
        _fit_to_cells(fig, ax, cbar, (n_r, n_c), _cell_inches(max(n_r, n_c), written), title)
    else:
        fig.suptitle(_wrapped(title, 10.0))
    return fig


def _hatch(ax, mask: np.ndarray) -> None:
    """Diagonal grey hatching over the cells of ``mask`` (one patch collection, under the cells' numbers)."""
    from matplotlib.collections import PatchCollection
    from matplotlib.patches import Rectangle

    cells = [Rectangle((j - 0.5, i - 0.5), 1.0, 1.0) for i, j in zip(*np.nonzero(mask), strict=True)]
    if cells:
        ax.add_collection(PatchCollection(cells, facecolor="none", edgecolor="0.55", hatch="//", linewidth=0.0,
                                          zorder=1.5))  # fmt: skip


def _cell_inches(n: int, written: bool) -> float:
    """The side of a heatmap cell (inches): room for its two-decimal number, else for a tick label's line.

    0.55 inch where the cells carry their numbers; without them, shrinking with the number of
    rows and columns ``n`` to fit a page, down to 0.22 inch, a 10-point name's line and a half.
    """
    return 0.55 if written else float(np.clip(12.0 / max(n, 1), 0.22, 0.55))


def _wrapped(title: str, width_in: float) -> str:
    """``title`` wrapped to ``width_in`` inches of the figure's title font (about 10 characters an inch)."""
    return textwrap.fill(title, width=max(20, int(10 * width_in)))


def _fit_to_cells(fig, ax, cbar, shape: tuple[int, int], cell: float, title: str) -> None:
    """Resize ``fig`` until its matrix has ``cell``-inch cells, whatever room the names and title take.

    Constrained layout gives the names, labels, colour bar and title their measured room and the
    matrix the rest; the figure grows (or shrinks) by what the matrix lacks (or has in excess), and
    the title is rewrapped to the new width. The matrix is at least as tall as the colour bar's
    label (else the label runs past the bar into the title), its cells as wide as they are
    tall where that takes at most 1.1 inch. Each step is sized by ``_next_size``, so the second
    drawing is usually the last (the step by the shortfall alone took three or four).
    """
    n_r, n_c = shape
    label_h = cbar.ax.yaxis.label.get_window_extent().height / fig.dpi + 0.3  # any backend's renderer
    tall = max(cell, label_h / n_r)  # the cells as near square as the bar's label lets them be
    want = np.array([n_c * max(cell, min(tall, 1.1)), n_r * tall])
    head = fig.suptitle(_wrapped(title, fig.get_figwidth()))
    for _ in range(4):
        fig.draw_without_rendering()
        have = ax.get_position().size * fig.get_size_inches()
        if np.all(np.abs(have - want) < 0.02):
            break
        _next_size(fig, head, want, have, title)


#: how the room constrained layout leaves a heatmap's matrix follows the figure's size: a figure
#: wider by 1 inch widens the matrix by 0.95 (the colour bar's pad is 5% of the width), a matrix
#: taller by 1 inch narrows it by 1/20 (the bar, 20 times as tall as wide, is as tall as the matrix)
_WIDE_PER_WIDTH, _NARROW_PER_HEIGHT = 0.95, 0.05


def _next_size(fig, head, want: np.ndarray, have: np.ndarray, title: str) -> None:
    """Set the figure size that gives the matrix ``want`` inches (it has ``have``), the title ``head`` rewrapped to it.

    The height grows by what the matrix lacks, and by what the title, rewrapped to the new width,
    takes more; the width by what the matrix lacks over ``_WIDE_PER_WIDTH``, with the colour bar
    that widens as the matrix grows taller (``_NARROW_PER_HEIGHT``). On figures 6 to 16 inches wide
    (4 short names, and 3 of SWE-bench's long ones) that rule put the matrix within 0.004 inch.
    """
    lack = want - have
    size = fig.get_size_inches()
    width = size[0] + (lack[0] + _NARROW_PER_HEIGHT * lack[1]) / _WIDE_PER_WIDTH
    fig.set_size_inches(max(width, 1.0), size[1])
    before = head.get_window_extent().height
    fig.suptitle(_wrapped(title, fig.get_figwidth()))  # ``head`` again, rewrapped
    grown = (head.get_window_extent().height - before) / fig.dpi
    fig.set_size_inches(fig.get_figwidth(), max(size[1] + lack[1] + grown, 1.0))


def variance_plot(
    table: pd.DataFrame,
    *,
    title: str,
    xlabel: str,
    beside: pd.DataFrame | None = None,
    labels: tuple[str, str] = ("", ""),
) -> Figure:
    """Horizontal bars of variance components, with interval whiskers where given.

    ``beside``: a second method's ``estimate`` (and ``lower`` / ``upper``) on the same rows, drawn as
    points with their whiskers over the bars; ``labels`` name the bars and the points in a legend.
    """
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7, 0.6 + 0.45 * len(table) + 0.8))
    y = np.arange(len(table))[::-1]
    est = table["estimate"].to_numpy(float)
    ax.barh(y, est, color="#4c72b0", alpha=0.8, label=labels[0] or None)
    if beside is not None:
        _points_beside(ax, beside.reindex(table.index), y, labels[1])
    if {"lower", "upper"} <= set(table.columns):
        lo = table["lower"].to_numpy(float)
        hi = table["upper"].to_numpy(float)
        ok = np.isfinite(lo) & np.isfinite(hi)
        ax.errorbar(
            est[ok],
            y[ok],
            xerr=[est[ok] - lo[ok], hi[ok] - est[ok]],
            fmt="none",
            ecolor="black",
            capsize=3,
        )
    ax.set_yticks(y, [str(i) for i in table.index])
    ax.set_xlabel(xlabel)
    ax.set_title(title)
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig


def _points_beside(ax, other: pd.DataFrame, y: np.ndarray, label: str) -> None:
    """A second method's estimates as points on the bars' rows, whiskers where its interval is finite."""
    est = pd.to_numeric(other["estimate"], errors="coerce").to_numpy(float)
    ok = np.isfinite(est)
    ax.plot(est[ok], y[ok], "D", color="#dd8452", label=label or None, zorder=3)
    if {"lower", "upper"} <= set(other.columns):
        lo, hi = (pd.to_numeric(other[c], errors="coerce").to_numpy(float) for c in ("lower", "upper"))
        w = ok & np.isfinite(lo) & np.isfinite(hi)
        ax.errorbar(est[w], y[w] - 0.2, xerr=[est[w] - lo[w], hi[w] - est[w]], fmt="none", ecolor="#dd8452", capsize=3)
    if label:  # below the axis label: inside the axes it hid the longest bar's end
        ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.28), ncol=2, fontsize=8, frameon=False)


def ppc_plot(check: xr.Dataset, *, title: str) -> Figure:
    """Observed vs posterior-predictive number of cells per success count, one panel per agent.

    ``check`` is :func:`hierbench.bayes.predictive_check`'s Dataset; cells are
    grouped by their number of runs and the most common number is shown.
    """
    plt = _plt()
    agents = [str(a) for a in check["agent"].values]
    ncol = min(3, len(agents))
    nrow = int(np.ceil(len(agents) / ncol))
    fig, axes = plt.subplots(
        nrow, ncol, figsize=(3.6 * ncol, 2.8 * nrow), squeeze=False, sharey=False
    )
    tot = check["observed"].sum(("agent", "successes"))
    n_main = int(check["n_runs"].values[int(np.argmax(tot.values))])
    band = float(check.attrs.get("band_prob", 0.9))
    sub = check.sel(n_runs=n_main).isel(successes=slice(0, n_main + 1))
    s = sub["successes"].values
    for ax, a in zip(axes.ravel(), agents, strict=False):
        d = sub.sel(agent=a)
        ax.bar(s, d["observed"].values, color="#bbbbbb", label="observed")
        # the band as a line: a skewed count can have its mean outside its quantile band
        ax.vlines(
            s,
            d["predicted_lower"].values,
            d["predicted_upper"].values,
            color="#c44e52",
            lw=2,
            label=f"predicted {band:.0%} band",
        )
        ax.plot(s, d["predicted_mean"].values, "o", color="#c44e52", ms=4, label="predicted mean")
        ax.set_title(a, fontsize="small")
        ax.set_xlabel(f"successes out of {n_main} runs")
        ax.set_ylabel("tasks (count)")
    for ax in axes.ravel()[len(agents) :]:
        ax.set_visible(False)
    axes.ravel()[0].legend(fontsize="x-small")
    fig.suptitle(title)
    fig.tight_layout()
    return fig


#: an agent needs this many cells at the plotted number of runs for a rootogram panel
PPC_MIN_CELLS = 5


def ppc_rootogram(
    fit: xr.DataTree, *, prob: float = 0.95, var_name: str | None = None, order: Sequence[str] | None = None
):
    """arviz-plots rootogram of the per-cell success counts, one panel per agent.

    Cells are taken at their most common number of runs ``n`` (counts out of
    different ``n`` do not share an axis); an agent with fewer than
    :data:`PPC_MIN_CELLS` such cells gets no panel. Each count's predictive
    mean is a marker and its ``prob`` equal-tailed interval a bar (given to
    arviz-plots, whose own default is its rcParam ``stats.ci_prob``).
    ``order``: the agents in the caller's order (the report's, ``_order.agent_order``), which the
    panels and the agents left out follow; agents it does not hold go last, in the fit's order
    (None: the fit's order, as before). Returns the PlotCollection (None when every agent is left
    out), ``n`` and the agents left out.
    """
    obs = fit["observed_data"].to_dataset()
    var_name = var_name or next(iter(obs.data_vars))
    pp = fit["posterior_predictive"].to_dataset()[var_name].transpose("chain", "draw", "cell")
    n = np.asarray(fit["constant_data"].to_dataset()["cell_n_runs"].values).astype(int)
    agents = np.asarray(obs[var_name]["cell_agent"].values).astype(str)
    n_main = int(np.bincount(n).argmax())
    o, p, left_out = {}, {}, []
    seen = [str(a) for a in dict.fromkeys(agents)]
    at = {str(a): i for i, a in enumerate(order or [])}
    for a in sorted(seen, key=lambda x: at.get(x, len(at))):  # stable: agents the order lacks keep the fit's order
        sel = np.flatnonzero((agents == a) & (n == n_main))
        if sel.size < PPC_MIN_CELLS:
            left_out.append(a)
            continue
        o[a], p[a] = obs[var_name].values[sel], pp.values[:, :, sel]
    if not o:  # no agent has a panel: nothing to draw (arviz-plots refuses an empty tree)
        return None, n_main, left_out
    # every count 0..n on the axis (one with no task at n read as a missing bar: METR's 7 of 8)
    ticks = list(range(n_main + 1)) if n_main <= 10 else None  # more would crowd a 3.4-inch panel
    pc = _rootogram(o, p, prob, f"successes out of {n_main} runs", "tasks (sqrt scale)", xticks=ticks)
    return pc, n_main, left_out


def _rootogram(obs: Mapping[str, np.ndarray], pred: Mapping[str, np.ndarray], prob: float, xlabel: str, ylabel: str,
               xticks: Sequence[float] | None = None, xticklabels: Sequence[str] | None = None):  # fmt: skip
    """arviz-plots rootogram, one panel per name: ``obs[name]`` (units,) against ``pred[name]`` (chain, draw, units).

    Each value's predictive mean is a marker and its ``prob`` equal-tailed interval a bar;
    ``xticks``: the values the x axis marks (a grade scale: no tick between two grades);
    ``xticklabels``: their names (grades written as words).
    """
    import warnings

    import arviz_plots as azp

    o, p = {}, {}
    for i, (name, values) in enumerate(obs.items()):
        key = name.replace("/", "\u2215")  # DataTree variable names cannot hold '/'
        o[key] = xr.DataArray(np.asarray(values), dims=f"unit_{i}")
        p[key] = xr.DataArray(np.asarray(pred[name]), dims=("chain", "draw", f"unit_{i}"))
    tree = xr.DataTree.from_dict({"observed_data": xr.Dataset(o), "posterior_predictive": xr.Dataset(p)})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # "looks binary": n = 1 is binary
        pc = azp.plot_ppc_rootogram(
            tree, backend="matplotlib", sample_dims=_SAMPLE_DIMS, ci_prob=prob, point_estimate="mean"
        )
    fig = pc.viz["figure"]
    fig = fig.item() if hasattr(fig, "item") else fig
    ncol = min(4, len(o)) or 1
    fig.set_size_inches(3.4 * ncol, 2.9 * int(np.ceil(len(o) / ncol)) + 0.4)
    for ax in fig.axes:
        if ax.get_visible() and ax.has_data():
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            if xticks is not None:
                ax.set_xticks(list(xticks), labels=None if xticklabels is None else list(xticklabels))
            # long agent names wrap instead of running into the next panel's title
            ax.set_title("\n".join(textwrap.wrap(ax.get_title(), 30)), fontsize="small")
    fig.set_layout_engine("constrained")
    return pc


def _flat_selection(posterior: xr.Dataset, worst: Sequence[tuple[str, dict]]) -> xr.DataTree:
    """A small posterior of the named scalar slices, each a variable with a readable name."""
    out = {}
    for var, sel in worst:
        da = posterior[var].sel(sel) if sel else posterior[var]
        label = var + ("[" + ", ".join(str(v) for v in sel.values()) + "]" if sel else "")
        label = label.replace("/", "\u2215")  # DataTree variable names cannot hold '/'
        if len(label) > 34:  # long task ids: keep both ends readable on the axis
            label = label[:16] + "\u2026" + label[-16:]
        out[label] = da.drop_vars([c for c in da.coords if c not in ("chain", "draw")])
    return xr.DataTree.from_dict({"posterior": xr.Dataset(out)})


#: arviz-plots' rank plot marks a panel whose multi-chain uniformity p-value is below
#: 1 - RANK_ENVELOPE; the report states the same level and tests the same way.
RANK_ENVELOPE = 0.99
#: fewest chains the multi-chain uniformity test is run on. With 2 chains arviz-stats' test
#: is degenerate: in a simulation of 30 pairs of 500 iid normal draws its p was 1.0 in every
#: pair, and 1.0 in half of the pairs one of which was shifted by 0.3 SD; with 3 chains the
#: p of agreeing chains spread over (0, 1] (median 0.67) and every 0.3-SD shift had p < 0.01.
RANK_TEST_MIN_CHAINS = 3


def rank_thinning(posterior: xr.Dataset, worst: Sequence[tuple[str, dict]]) -> int:
    """The step that thins the named slices' draws to about their effective sample size.

    ``draws per chain / within-chain bulk ESS``, rounded, the ESS the chains' mean for the
    slice with the least, at least 1: each chain's own ESS, which measures its autocorrelation alone (the pooled ESS
    falls when chains disagree, and thinning by it would take the test's power where it is
    needed: one chain shifted by 0.5 sd in 4 x 400 iid draws, p 0.03 against 3e-12). The
    multi-chain rank test (:func:`rank_tests`) takes the draws as independent: on
    autocorrelated chains that agree it flags far more often than its level (100 fits of
    4 AR(1) chains of 800 draws: at lag-1 correlation 0.6, p < 0.01 in 30% and p < 1e-4 in
    8%; at 0.8, 81% and 55%). Thinned this way, p < 0.01 in 1-3% at correlations 0 to 0.8
    (none below the report's Bonferroni limits), and a chain shifted by 0.5 sd is still
    flagged at 0.01 in 99% at correlation 0.6 (69% at 0.8).
    """
    import arviz_stats as azs

    sel = _flat_selection(posterior, worst)["posterior"].to_dataset()
    per_chain = [azs.ess(sel.isel(chain=[c]), sample_dims=_SAMPLE_DIMS) for c in range(sel.sizes.get("chain", 1))]
    low = min((float(np.mean([e[v] for e in per_chain])) for v in sel.data_vars), default=np.nan)
    n = sel.sizes.get("draw", 1)
    return max(1, round(n / low)) if np.isfinite(low) and low > 0 else 1


def _thinned_selection(posterior: xr.Dataset, worst: Sequence[tuple[str, dict]], step: int | None = None) -> xr.DataTree:
    """:func:`_flat_selection` of every ``step``-th draw (default ``rank_thinning``'s): what the rank plot and test read."""
    step = rank_thinning(posterior, worst) if step is None else step
    flat = _flat_selection(posterior, worst)["posterior"].to_dataset()
    return xr.DataTree.from_dict({"posterior": flat.isel(draw=slice(None, None, step))})


def rank_p_text(p: float) -> str:
    """A rank-uniformity p-value as the report prints it: two significant figures (``0.0025``, ``5.1e-05``).

    The one format of the panels of :func:`rank_plot` and of the convergence
    section's text about them (two decimals printed ``p=0.00`` beside the text's
    ``p = 0.0025``).
    """
    return f"{p:.2g}" if np.isfinite(p) else "not computed"


def rank_plot(
    posterior: xr.Dataset,
    worst: Sequence[tuple[str, dict]],
    p_values: dict[str, float] | None = None,
    *,
    step: int | None = None,
):
    """arviz-plots rank (fractional-rank ECDF) plot of the named parameter slices.

    Each panel prints its multi-chain uniformity p-value (:func:`rank_tests`;
    ``p_values``, when the caller has them already) by :func:`rank_p_text`, as
    the report's text does (``p = 0.0025``, where arviz-plots' own label reads
    ``p=0.00``), or that it was not tested (fewer than ``RANK_TEST_MIN_CHAINS`` chains).
    ``step``: :func:`rank_thinning`'s, when the caller has it already.
    """
    import arviz_plots as azp

    pc = azp.plot_rank(
        _thinned_selection(posterior, worst, step),
        backend="matplotlib",
        sample_dims=_SAMPLE_DIMS,
        envelope_prob=RANK_ENVELOPE,
    )
    try:
        for name, p in (rank_tests(posterior, worst, step=step) if p_values is None else p_values).items():
            ax = pc.viz["plot"][name].item()
            for t in ax.texts:
                if t.get_text().startswith("p="):
                    t.set_text(f"p = {rank_p_text(p)} (\u03b1 = {1 - RANK_ENVELOPE:g}) " if np.isfinite(p)
                               else f"not tested: {posterior.sizes['chain']} chains ")
    except (KeyError, AttributeError, ValueError) as err:  # pragma: no cover - another arviz-plots layout
        _layout_kept("rank_plot", err, "its p-values are printed to two decimals")
    return pc


def rank_tests(posterior: xr.Dataset, worst: Sequence[tuple[str, dict]], *, step: int | None = None) -> dict[str, float]:
    """The p-value :func:`rank_plot` prints on each panel (arviz-stats' multi-chain uniformity test).

    NaN for every panel where the fit has fewer than ``RANK_TEST_MIN_CHAINS`` chains: the test
    is not run there (with 2 chains its p is 1 whether or not the chains agree). The draws are
    thinned to about their effective sample size first (:func:`rank_thinning`; ``step``: its
    value, when the caller has it already).
    """
    import arviz_stats as azs  # noqa: F401  - registers the .azstats accessor

    sel = _thinned_selection(posterior, worst, step)["posterior"].to_dataset()
    if posterior.sizes.get("chain", 1) < RANK_TEST_MIN_CHAINS:
        return {str(k): float("nan") for k in sel.data_vars}
    ranks = sel.azstats.compute_ranks(dim=_SAMPLE_DIMS, relative=True)
    p_values = ranks.azstats.mchain_uniformity_test(dim=_SAMPLE_DIMS)[0]
    return {str(k): float(v) for k, v in p_values.data_vars.items()}


def trace_plot(posterior: xr.Dataset, worst: Sequence[tuple[str, dict]]):
    """arviz-plots trace and marginal density of the named parameter slices."""
    import arviz_plots as azp

    n = max(len(worst), 1)
    pc = azp.plot_trace_dist(
        _flat_selection(posterior, worst), backend="matplotlib", sample_dims=_SAMPLE_DIMS
    )
    try:  # room for the axis labels of long parameter names
        fig = pc.viz["figure"]
        fig = fig.item() if hasattr(fig, "item") else fig
        fig.set_size_inches(11, 2.4 * n + 0.6)
        fig.set_layout_engine("constrained")
        # the trace panel's vertical label repeated the row's name (on its density panel's
        # x axis); a long name ran past the panel's height into the next row's label
        for ax in fig.axes:
            spec = ax.get_subplotspec()
            if spec is not None and spec.colspan.start == 1:
                ax.set_ylabel("value")
    except (KeyError, AttributeError, ValueError) as err:  # pragma: no cover - another arviz-plots layout
        _layout_kept("trace_plot", err, "the long names may overlap")
    return pc


def energy_plot(fit: xr.DataTree):
    """arviz-plots energy plot (marginal energy vs energy transition, with E-BFMI).

    Labelled for a reader: the E-BFMI panel's rows are the chains (whole
    numbers, not a continuous axis from -0.5 to 3.5) and both horizontal axes
    say what they measure.
    """
    import arviz_plots as azp

    pc = azp.plot_energy(fit, backend="matplotlib", sample_dims=_SAMPLE_DIMS)
    try:
        chains = fit["sample_stats"].sizes["chain"]
        for ax in pc.viz["figure"].item().axes:
            if ax.get_title() == "BFMI":
                ax.set_yticks(range(chains))
                ax.set_xlabel("E-BFMI (dashed line: 0.3)")
            else:
                ax.set_xlabel("energy (centred)")
    except (KeyError, AttributeError, ValueError) as err:  # pragma: no cover - another arviz-plots layout
        _layout_kept("energy_plot", err, "the E-BFMI rows are the chains")
    return pc


def _layout_kept(name: str, err: Exception, hint: str) -> None:
    """Say that a figure is drawn with arviz-plots' own axes, where our relabelling met a layout it does not know."""
    from .._base import warn_user

    warn_user(
        f"{name}: the plot is drawn, but its axes keep arviz-plots' own labels and size "
        f"({type(err).__name__}: {err}); {hint}",
        UserWarning,
    )
