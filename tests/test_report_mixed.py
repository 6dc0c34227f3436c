"""The report of a formula fit (hierbench.bayes.build_mixed): every number it shows is the metrics function's.

The fast tests hand the report's sections a posterior built by hand (random draws of known shape, no
sampler) and check each section's table against hierbench.metrics called directly on the same draws, and
that a section that does not apply says why. The metrics themselves are checked against scipy's
quadrature in test_metrics_mixed.py; the slow test runs the sampler once on a tiny design.
"""

from __future__ import annotations

import json
import warnings

import numpy as np
import pytest
import xarray as xr

from hierbench import metrics
from hierbench.data import model_design
from hierbench.report import build
from hierbench.report._context import _Context
from hierbench.report._passk import _sec_passk
from hierbench.report._report import Report
from hierbench.report._sec_abilities import _sec_abilities
from hierbench.report._sec_pairs import _sec_pairwise
from hierbench.report._sec_ranks import _sec_ranks
from hierbench.report._sec_side import _sec_side
from hierbench.testing import simulate_eval


def _fake_fit(design, rng, family: str, n_draws: int = 200) -> xr.DataTree:
    """A formula fit's posterior drawn at random (no sampler), with the attrs the report reads."""
    post = {
        "beta": (("chain", "draw", "coef"), rng.normal(0, 0.7, (2, n_draws, len(design.coef)))),
        "sd": (("chain", "draw", "component"), np.abs(rng.normal(1, 0.1, (2, n_draws, len(design.random))))),
    }
    coords = {"coef": list(design.coef), "component": [t.name for t in design.random]}
    for t in design.random:
        dim = ":".join(t.grouping)
        post[f"re[{t.name}]"] = (("chain", "draw", dim), rng.normal(0, 1, (2, n_draws, t.levels.size)))
        coords[dim] = t.levels.tolist()
    if family == "fractional":
        post["interior"] = (("chain", "draw", "task"), rng.exponential(2.0, (2, n_draws, coords["task"].__len__())))
    if family == "ordinal":
        th = np.sort(rng.normal(0, 1, (2, n_draws, design.categories.size - 1)), axis=-1)
        post["thresholds"] = (("chain", "draw", "threshold"), th)
    dt = xr.DataTree.from_dict({"posterior": xr.Dataset(post, coords=coords)})
    spec = {"model": "mixed", "options": {"formula": design.formula, "family": design.family, "levels": None}}
    dt.attrs = {"hierbench_model": "mixed", "hierbench_spec": json.dumps(spec)}
    return dt


def _section(func, ctx: _Context, sid: str) -> dict:
    """Run one section; its text, note and table (or the reason it was skipped)."""
    from hierbench.report._context import _Skip

    rep = Report("t")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            func(ctx, rep, sid)
    except _Skip as why:
        return {"skip": str(why)}
    sec = rep.blocks[0]
    return {"text": sec["text"], "table": sec["table"]}


def _ctx(fit, data) -> _Context:
    return _Context(fit=fit, data=data, prob=0.95, rng=0, n_resamples=199, truth=None, freq="auto",
                    subset=[], say=lambda *_: None)  # fmt: skip


def _board(rng) -> xr.Dataset:
    data, _ = simulate_eval(4, 12, 3, rng=rng)
    return data.assign_coords(scaffold=("agent", ["s1", "s1", "s2", "s2"]))


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_ranks_and_pairs_of_a_formula_fit_are_the_metrics_of_its_agent_means():
    """Ranks and P(i > j) by each agent's mean over its own tasks (metrics.mean_response, observed), not by
    a random term's levels: re[1|agent] alone leaves the scaffold's fixed effect out.
    """
    rng = np.random.default_rng(0)
    data = _board(rng)
    d = model_design("score ~ scaffold + (1|agent) + (1|task)", data, family="binomial")
    fit = _fake_fit(d, rng, "binomial")
    ctx = _ctx(fit, data)
    ctx.freq = None  # the Bayesian half alone (the bootstrap and the paired tests take seconds)
    assert ctx.var == "mean_own_tasks"
    draws = metrics.mean_response(fit, d, tasks="observed").draws.rename(group="agent") / 100
    want = metrics.rank_probabilities(draws).estimate.transpose("agent", "rank").to_pandas()
    sec = _section(_sec_ranks, ctx, "ranks")
    got = sec["table"]
    np.testing.assert_allclose(got.to_numpy(float), want.loc[got.index].to_numpy(float), atol=1e-12)
    # the ranks are the model's, and the section names the model-free ranks beside them
    assert "Model-based" in sec["text"] and "hierbench.freq.rank_uncertainty(data)" in sec["text"]
    by_re = metrics.rank_probabilities(fit, var="re[1|agent]").estimate.to_pandas()
    assert not np.allclose(by_re.loc[got.index].to_numpy(float), got.to_numpy(float))
    ab = _section(_sec_abilities, ctx, "abilities")
    est = ab["table"][next(c for c in ab["table"] if c.startswith("Bayes") and c.endswith("estimate"))]
    np.testing.assert_allclose(est.to_numpy(float), draws.mean(("chain", "draw")).sel(agent=est.index).values)
    ps = metrics.prob_superiority(draws).estimate
    pairs = _section(_sec_pairwise, ctx, "pairwise")
    assert "`mean_own_tasks`" in pairs["text"] and pairs["table"] is None
    fig_ps = metrics.prob_superiority(ctx.agent_draws()).estimate
    np.testing.assert_allclose(fig_ps.values, ps.values, atol=1e-12)


def test_pass_k_of_a_binary_formula_fit_is_mixed_pass_hat_k_on_a_new_task():
    rng = np.random.default_rng(1)
    data = _board(rng)
    d = model_design("score ~ 0 + agent + (1|task) + (1|agent:task)", data, family="binomial")
    fit = _fake_fit(d, rng, "binomial")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        sec = _section(_sec_passk, _ctx(fit, data), "pass-k")
    want = metrics.mixed_pass_hat_k(fit, d, k=[1, 2, 3]).estimate.to_series()
    got = sec["table"]["Bayes (a new task)"]
    assert len(got) == 12
    for (agent, k), v in got.items():
        assert abs(v - want[(agent, k)]) < 1e-12
    assert "new task from the population" in sec["text"] and "not paired" in sec["text"]


def test_sections_a_formula_fit_cannot_fill_say_why():
    rng = np.random.default_rng(2)
    data = _board(rng)
    data["score"] = data["score"] * 0.6 + 0.2 * (rng.random(data["score"].shape) < 0.5)
    frac = model_design("score ~ 0 + agent + (1|task)", data, family="fractional")
    sec = _section(_sec_passk, _ctx(_fake_fit(frac, rng, "fractional"), data), "pass-k")
    assert "no pass event" in sec["skip"]
    graded = data.assign(grade=(data["score"].dims, rng.integers(1, 4, data["score"].shape).astype(float)))
    ordl = model_design("grade ~ scaffold + (1|task)", graded, family="ordinal")
    ctx = _ctx(_fake_fit(ordl, rng, "ordinal"), graded)
    assert "graded_pass_hat_k" in _section(_sec_passk, ctx, "pass-k")["skip"]
    side = _section(_sec_side, ctx, "side-by-side")["skip"]
    assert "`grade`" in side and "not drawn on one axis" in side
    assert ctx.var == "mean_grade_own_tasks"
    ab = _section(_sec_abilities, ctx, "abilities")
    assert not any("bootstrap" in c for c in ab["table"].columns)  # grades are not the bootstrapped score
    assert "not drawn on one axis" in ab["text"]


@pytest.mark.slow  # a small formula-model fit and a report of the three sections read
def test_a_formula_fits_report_shows_its_metrics(tmp_path):
    """The report is ``build``'s own, its sections cut to the three read here (``sections=``): each
    is computed and written as in the whole report.
    """
    from hierbench.bayes import build_mixed
    from hierbench.bayes import fit
    from hierbench.report import score_order

    data = _board(5)
    model = build_mixed(data, "score ~ scaffold + (1|agent) + (1|task)")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        # 100 draws: the report's numbers are compared with the metrics of the same draws, whatever their number
        dt = fit(model, draws=100, tune=100, chains=2, rng=3, progress=False)
        # its pass^k, ranks and pairs are read: the frequentist results they do not show are left out
        out = build(dt, data, path=tmp_path / "mixed.md", progress=False, n_resamples=199,
                    freq={"bootstrap": None, "person_fit": None, "variance": None},
                    sections=["pass-k", "ranks", "pairwise"])
    md = out.read_text()
    sections = {part.split("\n", 1)[0]: part for part in md.split("\n## ")[1:]}
    for heading in ("Reliability: pass^k", "Rank probabilities", "Does A beat B? Pairwise probabilities and paired tests"):
        assert "**Note:**" not in sections[heading]
    pk = metrics.mixed_pass_hat_k(dt, model, k=[1, 2, 3]).estimate
    for v in pk.values.ravel():
        assert f"{v:.3f}" in md
    rp = metrics.rank_probabilities(metrics.mean_response(dt, model, tasks="observed").draws, agent_dim="group")
    for v in rp.estimate.values.ravel():
        assert f"{v:.3f}" in md
    assert "mean_own_tasks" in sections["Rank probabilities"]
    ps = metrics.prob_superiority(metrics.mean_response(dt, model, tasks="observed").draws, agent_dim="group")
    pairs = sections["Does A beat B? Pairwise probabilities and paired tests"]
    order = score_order(data)  # the table's rows: a the earlier agent in the report's order (audit X)
    at = [[str(g) for g in ps.estimate[d].values].index for d in ps.estimate.dims]
    m = ps.estimate.values[np.ix_([at[0](a) for a in order], [at[1](a) for a in order])]
    for v in m[np.triu_indices(4, 1)]:
        assert f"{v:.3f}" in pairs


def test_a_graded_fit_of_the_score_puts_the_bootstrap_on_its_grades(shared_data):
    """The wine judges' 1-5 ratings read with score_levels and fitted as grades: the abilities and
    side-by-side sections left the bootstrap out ("not drawn on one axis"), though the score is
    (grade - 1) / 4. The bootstrap now sits on the grades as 1 + 4 x score; its columns equal the
    bootstrap of the ratings themselves (mean_ci of the per-run `rating`, same resamples), which
    never passes through [0, 1].
    """
    import pandas as pd

    from hierbench.data import from_records
    from hierbench.freq import mean_ci

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    ds = from_records(df, agent="judge", task="bottle", score="rating", extra=["rating"], score_levels=[1, 2, 3, 4, 5])
    d = model_design("score ~ (1|agent)", ds)
    assert d.family == "ordinal" and d.categories.tolist() == [1, 2, 3, 4, 5]
    ctx = _ctx(_fake_fit(d, np.random.default_rng(8), "ordinal"), ds)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ab = _section(_sec_abilities, ctx, "abilities")
        side = _section(_sec_side, ctx, "side-by-side")
        want = mean_ci(ds, var="rating", method="bca", n_resamples=199, rng=0).to_frame()
    want.index = want.index.astype(str)
    cols = [c for c in ab["table"] if c.startswith("task bootstrap")]
    assert [c.rsplit(" ", 1)[1] for c in cols] == ["estimate", "lower", "upper"]
    got = ab["table"][cols].astype(float)
    np.testing.assert_allclose(got.to_numpy(), want.loc[got.index, ["estimate", "lower", "upper"]].to_numpy(), rtol=1e-12)
    assert "1 + 4 x score" in ab["text"] and "not drawn on one axis" not in ab["text"]
    assert "skip" not in side and "mean grade" in side["text"]
    np.testing.assert_allclose(side["table"]["bootstrap bca estimate"].astype(float).to_numpy(),
                               df.groupby(df["judge"].astype(str))["rating"].mean().loc[side["table"].index].to_numpy())  # fmt: skip
