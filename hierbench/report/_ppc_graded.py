"""The predictive check of a graded (ordinal) fit: each agent's runs counted by grade, observed against predicted.

A graded formula fit lays its outcome out one run per observation, ``y(obs)``
(the grade of each run), in ``observed_data`` and ``posterior_predictive``; the
binomial models' check of success counts per (agent, task) cell has no such
cells to count. What a graded model predicts is the share of each grade, so the
check counts each agent's runs per grade, draw by draw.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import xarray as xr

from ..data import grade_key
from ._context import _TITLES
from ._context import _Context
from ._context import _Skip
from ._report import Report

#: at most this many agents get a panel of their own (above it: the most extreme ones)
PPC_GRADE_PANELS = 12
#: at most this many (agent, grade) rows in the folded table (above it: those in a 2.5% tail)
PPC_GRADE_ROWS = 300
#: the one-sided tail a count is flagged in (two of them: at most about 5% of counts by chance)
TAIL = 0.025


def is_graded(fit: xr.DataTree) -> bool:
    """A fit whose observed outcome is one grade per run, ``y(obs)``, on the scale its constant data names."""
    if "observed_data" not in fit.children or "constant_data" not in fit.children:
        return False
    y = fit["observed_data"].to_dataset().get("y")
    return y is not None and y.dims == ("obs",) and "grade" in fit["constant_data"].to_dataset().dims


def _scale(fit: xr.DataTree, names: list[str] | None = None) -> tuple[np.ndarray, np.ndarray, str, bool]:
    """The grades (as the fit's ``y`` holds them, in order), the scale's labels, what ``y`` holds, named or not.

    ``y`` holds the grade itself when the scale is integers, else its place 1..K
    (the layout's own rule, stated in ``y``'s ``grades`` attribute). ``names``: the words a
    score's grades were written as (:meth:`_Context.grade_labels`), the labels of a scale 0..K-1.
    A fit of such grades names its ``grade`` coord by them: its grades are their places 0..K-1.
    """
    labels = np.asarray(fit["constant_data"]["grade"].values).astype(str)
    try:
        cats = labels.astype(float)
    except ValueError:  # grades written as words (the coord names them): y holds their places
        cats = np.arange(labels.size, dtype=float)
    if names is not None and len(names) == cats.size and np.array_equal(cats, np.arange(cats.size)):
        labels = np.asarray(names, dtype=str)
    named = not np.array_equal(labels, np.asarray([f"{c:g}" for c in cats]))
    if np.array_equal(cats, np.round(cats)):
        return cats.astype(np.int64), labels, "the grade", named
    return np.arange(1, cats.size + 1), labels, "the grade's place on the scale (1 = lowest)", named


def _run_agents(ctx: _Context, n_obs: int) -> np.ndarray:
    """Each run's agent, in the fit's ``obs`` order (a design row's runs one after another, rows in order)."""
    cd = ctx.fit["constant_data"].to_dataset()
    if "grade_n" in cd:
        row = cd["grade_n"].dims[0]
        if f"{row}_agent" in cd.coords:
            agents = np.repeat(np.asarray(cd[f"{row}_agent"].values).astype(str), cd["grade_n"].values.astype(int))
            if agents.size == n_obs:
                return agents
    design = ctx.mixed_design()  # the rows rebuilt from the data (the fit's constant data does not name agents)
    if design is not None and design.grade_counts is not None:
        agents = np.repeat(np.asarray(design.agents).astype(str)[design.agent_index], design.grade_counts.sum(1))
        if agents.size == n_obs:
            return agents
    raise _Skip(
        f"the graded fit's {n_obs} runs (`y(obs)`) could not be placed with their agents: its constant data "
        "does not name each row's agent, and no matching design could be rebuilt from the data (give the "
        "run log it was fitted to, `--data`)"
    )


def grade_check(agents: np.ndarray, observed: np.ndarray, predicted: np.ndarray, grades: np.ndarray,
                prob: float) -> xr.Dataset:  # fmt: skip
    """Runs per (agent, grade): observed, and the predictive mean, ``prob`` equal-tailed interval and tails.

    ``observed`` (runs,) and ``predicted`` (chain, draw, runs) hold grades of ``grades``;
    ``p_high`` is P(predicted >= observed) and ``p_low`` P(predicted <= observed) over the draws.
    """
    names = list(dict.fromkeys(agents.tolist()))
    code = pd.Index(names).get_indexer(agents)
    A, K = len(names), grades.size
    o_idx = np.searchsorted(grades, observed)
    obs = np.bincount(code * K + o_idx, minlength=A * K).reshape(A, K)
    p_idx = np.searchsorted(grades, predicted.reshape(-1, predicted.shape[-1]))
    S = p_idx.shape[0]
    flat = (np.arange(S)[:, None] * (A * K) + code * K + p_idx).ravel()
    pred = np.bincount(flat, minlength=S * A * K).reshape(S, A, K)
    q = np.quantile(pred, [(1 - prob) / 2, (1 + prob) / 2], axis=0)
    dims = ("agent", "grade")
    return xr.Dataset(
        {
            "observed": (dims, obs),
            "predicted_mean": (dims, pred.mean(0)),
            "predicted_lower": (dims, q[0]),
            "predicted_upper": (dims, q[1]),
            "p_high": (dims, (pred >= obs).mean(0)),
            "p_low": (dims, (pred <= obs).mean(0)),
        },
        coords={"agent": names, "grade": grades},
        attrs={"prob": prob, "n_draws": S},
    )


def _frame(chk: xr.Dataset, labels: np.ndarray, prob: float) -> pd.DataFrame:
    """The check as rows: observed runs, predictive mean and interval, the two tail probabilities."""
    df = chk.to_dataframe()
    df.index = df.index.set_levels(labels, level="grade") if isinstance(df.index, pd.MultiIndex) else labels
    return df.rename(columns={
        "observed": "observed runs", "predicted_mean": "predicted mean",
        "predicted_lower": f"predicted {prob:.0%} lower", "predicted_upper": f"predicted {prob:.0%} upper",
        "p_high": "P(predicted >= observed)", "p_low": "P(predicted <= observed)",
    })  # fmt: skip


def _panels(chk: xr.Dataset) -> tuple[list[str], str]:
    """The agents that get a panel, and the sentence saying which (all, or the most extreme)."""
    names = [str(a) for a in chk["agent"].values]
    if len(names) <= PPC_GRADE_PANELS:
        return names, ""
    tail = np.minimum(chk["p_high"], chk["p_low"]).min("grade").to_series()
    tail.index = tail.index.astype(str)
    pick = tail.sort_values(kind="stable").index[:PPC_GRADE_PANELS].tolist()
    return pick, (
        f" With {len(names)} agents only {PPC_GRADE_PANELS} have a panel: the ones whose most extreme "
        "count lies furthest in a tail (smallest min(P(predicted >= observed), P(predicted <= observed))), "
        f"picked from {len(names)}, so some misfit among them is expected by chance."
    )


def sec_ppc_graded(ctx: _Context, rep: Report, sid: str) -> None:
    """The report's predictive check of a graded fit: grades per agent, observed vs predicted."""
    from ._figures import _rootogram

    y = ctx.fit["observed_data"]["y"]
    grades, labels, holds, named = _scale(ctx.fit, ctx.grade_labels())
    key = grade_key(grades, labels.tolist()) if named else ", ".join(labels)
    observed = np.asarray(y.values)
    pp = ctx.fit["posterior_predictive"].to_dataset()["y"].transpose("chain", "draw", "obs").values
    off = sorted(set(np.unique(observed).tolist()) - set(grades.tolist()))
    if off:
        raise _Skip(f"the graded fit's `y` holds values off its scale {grades.tolist()}: {off[:5]}")
    agents = _run_agents(ctx, observed.size)
    chk = grade_check(agents, observed, pp, grades, ctx.prob)
    flagged = (chk["p_high"] < TAIL) | (chk["p_low"] < TAIL)
    n_flag, n_all = int(flagged.sum()), int(flagged.size)
    # every run as one agent: the tails of a sum are not sums of the agents' tails
    pooled = grade_check(np.zeros(observed.size, dtype=str), observed, pp, grades, ctx.prob)
    table = _frame(pooled.isel(agent=0, drop=True), labels, ctx.prob)
    table.index.name = "grade"
    shown, which = _panels(chk)
    text = (
        f"A graded fit predicts a grade for every run (`y`, one run per observation), so its check counts "
        f"each agent's runs by grade: observed (black dots) against the posterior predictive distribution "
        f"of that count (its mean as a diamond and its {ctx.prob:.0%} equal-tailed interval as a bar), on a "
        "square-root scale (a rootogram, drawn by arviz-plots); the x axis is "
        f"{holds} ({key}). The binomial models' check of success counts per (agent, task) "
        f"cell does not apply: a run here has a grade, not a success. Over every (agent, grade), {n_flag} "
        f"of {n_all} observed counts ({n_flag / n_all:.1%}) fall in a {TAIL:.1%} tail of their predictive distribution "
        f"(P(predicted >= observed) or P(predicted <= observed) below {TAIL}); at most about 5% would by "
        "chance (the counts are discrete). A count of 0 is a dot on the x axis. An agent's count at one grade is only part of the test: the "
        "model fits each agent's level, so what the panels can show is a spread of grades the model's "
        "shared thresholds do not predict for that agent. The table sums every agent's runs: the "
        "thresholds are fitted to these totals, so they are a weak check." + which
    )
    rows = _frame(chk, labels, ctx.prob)
    rows.index.names = ["agent", "grade"]
    if len(rows) > PPC_GRADE_ROWS:
        keep = flagged.transpose("agent", "grade").values.ravel()
        rows, summary = rows[keep], f"The {n_flag} (agent, grade) counts in a {TAIL:.1%} tail (of {n_all})"
    else:
        summary = f"Every agent's runs per grade ({n_all} rows)"
    rep.section(_TITLES[sid], text, table=table, id=sid, more=(summary, rows.reset_index("grade")))
    # "agent 3", not "3": agents named by numbers would read as grades or counts
    pc = _rootogram({f"agent {a}": observed[agents == a] for a in shown},
                    {f"agent {a}": pp[:, :, agents == a] for a in shown}, ctx.prob,
                    "grade" if holds == "the grade" else "grade's place (1 = lowest)", "runs (sqrt scale)",
                    xticks=grades, xticklabels=labels if named else None)  # fmt: skip
    rep.figure("ppc", pc, f"Posterior predictive rootogram of each agent's runs per grade, {ctx.prob:.0%} intervals.")
