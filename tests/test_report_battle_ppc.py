"""The posterior predictive check of a Bradley-Terry fit against its battles (audit P, F3).

The report of a Bradley-Terry fit made no check of the model against its battles; on LLMFAO the
audit's pair-level deviance was G^2 = 3,392 against a parametric bootstrap's 2,062 (SD 65). The
check computes, per posterior draw, a pair-level deviance and an agent x prompt discrepancy for
the observed and for replicated battles, and P(D(rep) >= D(obs)).

Expected values come from elsewhere: the deviance from ``scipy.stats.power_divergence`` at
Davidson probabilities written out by hand (e^(d/2) / Z, nu / Z, e^(-d/2) / Z), the prompt
discrepancy from a pandas loop over the battles, and the p-values' calibration from battles
simulated with seeds fixed. The posteriors are made by hand (no sampler): every draw at the
true parameters, which makes the p-value a Monte Carlo test with known parameters, uniform
when the battles are independent (so its behaviour over seeded data sets has a binomial law).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.stats import power_divergence

from hierbench.report._battle_ppc import battle_ppc
from hierbench.report._battle_ppc import pair_deviance


def _davidson(d: np.ndarray, nu: float) -> np.ndarray:
    """P(first wins), P(tie), P(second wins) at gaps ``d``: Davidson (1970), written out."""
    z = np.exp(d / 2) + nu + np.exp(-d / 2)
    return np.stack([np.exp(d / 2) / z, np.full_like(d, nu) / z, np.exp(-d / 2) / z], -1)


def _simulate(seed: int, skill: np.ndarray, nu: float = 1.0, *, n_prompts: int = 10, per: int = 3,
              shift: float = 0.0, pair_shift: float = 0.0) -> pd.DataFrame:  # fmt: skip
    """Battles of every pair on every prompt (``per`` each, sides at random): Davidson BT, each prompt
    moving each agent's ability by a normal of sd ``shift``, each pair's gap moved by a normal of sd
    ``pair_shift`` (both 0: independent battles, the model's law).
    """
    g = np.random.default_rng(seed)
    k = skill.size
    off = np.triu(g.normal(0.0, pair_shift, (k, k)), 1) if pair_shift else np.zeros((k, k))
    off = off - off.T  # the pair (j, i) moved the other way
    rows = []
    for t in range(n_prompts):
        s = skill + g.normal(0.0, shift, k) if shift else skill
        for i in range(k):
            for j in range(i + 1, k):
                for _ in range(per):
                    a, b = (i, j) if g.random() < 0.5 else (j, i)
                    r = g.choice(3, p=_davidson(np.array(s[a] - s[b] + off[a, b]), nu))
                    rows.append((f"m{a}", f"m{b}", ("left", "tie", "right")[r], f"p{t}"))
    return pd.DataFrame(rows, columns=["left", "right", "winner", "prompt"])


def _fit(battles: xr.Dataset, ability: np.ndarray, nu: np.ndarray, *, home: np.ndarray | None = None,
         pp_seed: int | None = None) -> xr.DataTree:  # fmt: skip
    """A Bradley-Terry fit's record of ``battles`` with the posterior given (chain x draw [x agent]).

    ``pp_seed``: add a posterior_predictive ``outcome`` per battle laid out as the fit's hook lays it
    out (pair by pair, each pair's results sorted: a wins, ties, b wins), drawn with that seed.
    """
    from hierbench.data import to_pair_counts

    c = to_pair_counts(battles)
    agents = [str(a) for a in c["agent"].values]
    at = {a: i for i, a in enumerate(agents)}
    ia = np.array([at[str(a)] for a in c["agent_a"].values])
    ib = np.array([at[str(b)] for b in c["agent_b"].values])
    counts = np.stack([c[k].values for k in ("n_win_a", "n_tie", "n_win_b")], axis=1)
    const = xr.Dataset({"agent_a_idx": ("pair", ia), "agent_b_idx": ("pair", ib), "n_comparisons": ("pair", counts.sum(1)),
                        "outcome_obs": (("pair", "result"), counts)}, coords={"result": ["win_a", "tie", "win_b"]})  # fmt: skip
    post = {"ability": (("chain", "draw", "agent"), ability), "nu": (("chain", "draw"), nu)}
    if home is not None:
        post["home"] = (("chain", "draw"), home)
    tree = {"posterior": xr.Dataset(post, coords={"agent": agents}), "constant_data": const}
    if pp_seed is not None:
        g = np.random.default_rng(pp_seed)
        d = ability[..., ia] - ability[..., ib] + (0.0 if home is None else home[..., None])
        z = np.exp(d / 2) + nu[..., None] + np.exp(-d / 2)
        p = np.stack([np.exp(d / 2) / z, np.broadcast_to(nu[..., None], d.shape) / z, np.exp(-d / 2) / z], -1)
        rep = g.multinomial(counts.sum(1), p)  # chain x draw x pair x result
        y = np.stack([np.repeat(np.tile([0, 1, 2], ia.size), r.ravel()) for r in rep.reshape(-1, ia.size * 3)])
        pair = np.repeat(np.arange(ia.size), counts.sum(1))
        tree["posterior_predictive"] = xr.Dataset(
            {"outcome": (("chain", "draw", "battle"), y.reshape(*ability.shape[:2], -1))}, coords={"pair": ("battle", pair)})
    fit = xr.DataTree.from_dict(tree)
    fit.attrs = {"hierbench_model": "bradley_terry",
                 "hierbench_spec": json.dumps({"model": "bradley_terry", "options": {"ties": "davidson"}})}  # fmt: skip
    return fit


def _at_truth(battles: xr.Dataset, skill: np.ndarray, nu: float, draws: int = 200, **kw) -> xr.DataTree:
    """A fit whose every draw is the truth (abilities centred, as the model's are zero-sum)."""
    order = [int(str(a)[1:]) for a in battles["agent"].values]
    ab = np.broadcast_to(skill[order] - skill.mean(), (1, draws, skill.size)).copy()
    return _fit(battles, ab, np.full((1, draws), nu), **kw)


def _read(df: pd.DataFrame) -> xr.Dataset:
    from hierbench.data import read_battles

    return read_battles(df, task="prompt", judge="judge" if "judge" in df else None)


def _judged(df: pd.DataFrame, seed: int, n: int = 4) -> pd.DataFrame:
    """``df`` with a judge for each battle drawn at random, apart from its outcome (judges the model allows)."""
    return df.assign(judge=[f"j{k}" for k in np.random.default_rng([seed, 9]).integers(0, n, len(df))])


SKILL = np.array([1.0, 0.5, 0.0, -0.3, -1.2])


def test_the_deviance_is_the_g_test_at_the_given_probabilities():
    g = np.random.default_rng(0)
    counts = g.integers(0, 6, size=(4, 7, 3))  # draws x pairs x results, zeros included
    counts[..., 0] += counts.sum(-1) == 0  # a pair of the fit met at least once
    probs = _davidson(g.normal(0, 1, (4, 7)), 0.8)
    want = [sum(power_divergence(counts[s, j], counts[s, j].sum() * probs[s, j], lambda_="log-likelihood")[0]
                for j in range(7)) for s in range(4)]  # fmt: skip
    assert np.allclose(pair_deviance(counts, probs), want, rtol=1e-12)


@pytest.fixture(scope="module")
def small():
    """A small log (5 agents, 10 prompts, 300 battles) and a fit of 3 distinct posterior draws (with pp)."""
    battles = _read(_judged(_simulate(7, SKILL, shift=0.5), 7))
    g = np.random.default_rng(1)
    order = [int(str(a)[1:]) for a in battles["agent"].values]
    ab = SKILL[order] + g.normal(0, 0.3, (1, 3, 5))
    ab -= ab.mean(-1, keepdims=True)
    return battles, _fit(battles, ab, g.lognormal(0, 0.3, (1, 3)), pp_seed=2)


def _by_hand(battles: xr.Dataset, fit: xr.DataTree, s: int, group: str = "task") -> tuple[float, float]:
    """Draw ``s``'s pair-level G^2 (unordered pairs) and agent x ``group`` (prompt) discrepancy, by pandas."""
    post = fit["posterior"]
    ab = pd.Series(post["ability"].values[0, s], index=[str(a) for a in post["agent"].values])
    nu = float(post["nu"].values[0, s])
    df = pd.DataFrame({"a": battles["agent_a"].values.astype(str), "b": battles["agent_b"].values.astype(str),
                       "y": battles["outcome"].values, "t": battles[group].values.astype(str)})  # fmt: skip
    flip = df["a"] > df["b"]  # each unordered pair read with its names in sorted order
    lo, hi = df["a"].where(~flip, df["b"]), df["b"].where(~flip, df["a"])
    y = df["y"].where(~flip, 1 - df["y"])
    tab = pd.crosstab([lo, hi], y).reindex(columns=[1.0, 0.5, 0.0], fill_value=0)
    pr = _davidson(np.array([ab[u] - ab[v] for u, v in tab.index]), nu)
    o = tab.to_numpy()
    g2 = sum(power_divergence(o[k], o[k].sum() * pr[k], lambda_="log-likelihood")[0] for k in range(len(o)))
    p = _davidson((ab[df["a"]].to_numpy() - ab[df["b"]].to_numpy()), nu)
    e, v = p[:, 0] + p[:, 1] / 2, p[:, 0] + p[:, 1] / 4 - (p[:, 0] + p[:, 1] / 2) ** 2
    long = pd.concat([pd.DataFrame({"agent": df["a"], "t": df["t"], "s": df["y"], "e": e, "v": v}),
                      pd.DataFrame({"agent": df["b"], "t": df["t"], "s": 1 - df["y"], "e": 1 - e, "v": v})])  # fmt: skip
    cell = long.groupby(["agent", "t"])[["s", "e", "v"]].sum()
    return g2, float(((cell["s"] - cell["e"]) ** 2 / cell["v"]).sum())


def test_the_observed_discrepancies_match_a_count_of_the_log_by_hand(small):
    battles, fit = small
    res = battle_ppc(fit, battles, seed=0)
    assert res["n_draws"] == 3 and res["pairs"]["n_units"] == 10 and not res["pairs"]["ordered"]
    for s in range(3):
        g2, x2 = _by_hand(battles, fit, s)
        assert res["pairs"]["obs"][s] == pytest.approx(g2, rel=1e-10)
        assert res["prompts"]["obs"][s] == pytest.approx(x2, rel=1e-10)
        assert res["judges"]["obs"][s] == pytest.approx(_by_hand(battles, fit, s, "judge")[1], rel=1e-10)
    assert (res["judges"]["n_groups"], res["judges"]["n_cells"]) == (4, 20)  # 5 agents, each judged by all 4


def test_the_replicated_deviance_is_the_fits_posterior_predictive_counted_by_pair(small):
    battles, fit = small
    res = battle_ppc(fit, battles, seed=0)
    assert res["source"] == "the fit's posterior_predictive draws"
    cd, post = fit["constant_data"], fit["posterior"]
    ia, ib = cd["agent_a_idx"].values, cd["agent_b_idx"].values
    y = fit["posterior_predictive"]["outcome"].values[0]
    pair = fit["posterior_predictive"]["pair"].values
    for s in range(3):
        counts = np.zeros((ia.size, 3))
        np.add.at(counts, (pair, y[s]), 1)
        key = pd.Series([tuple(sorted(ab)) for ab in zip(ia, ib, strict=True)])
        oriented = np.where((ia > ib)[:, None], counts[:, ::-1], counts)  # as (lower index, higher index)
        merged = pd.DataFrame(oriented).groupby(key.values).sum()
        d = np.array([post["ability"].values[0, s, u] - post["ability"].values[0, s, v] for u, v in merged.index])
        pr = _davidson(d, float(post["nu"].values[0, s]))
        o = merged.to_numpy()
        want = sum(power_divergence(o[k], o[k].sum() * pr[k], lambda_="log-likelihood")[0] for k in range(len(o)))
        assert res["pairs"]["rep"][s] == pytest.approx(want, rel=1e-10)


def test_independent_battles_give_p_values_that_are_not_extreme():
    """Every draw at the truth: P(D(rep) >= D(obs)) is a Monte Carlo test of known parameters, so over
    data sets simulated from the model it is about uniform (200 draws: Monte Carlo SD <= 0.035 per p).
    Over 20 seeded data sets (even seeds replicated from a posterior_predictive group, odd ones drawn
    here), the count of p below 0.05 is Binomial(20, 0.05): 4 or more has probability 0.016; the mean
    p has SD 0.065 (uniform), so [0.3, 0.7] is about 3 SD each way. Measured: 0 and 1 below 0.05,
    means 0.54 and 0.42.
    """
    ps = []
    for seed in range(20):
        b = _read(_judged(_simulate(seed, SKILL), seed))
        res = battle_ppc(_at_truth(b, SKILL, 1.0, pp_seed=seed if seed % 2 == 0 else None), b, seed=seed)
        ps.append((res["pairs"]["p"], res["prompts"]["p"], res["judges"]["p"]))
    ps = np.array(ps)
    assert ((ps < 0.05).sum(0) <= 3).all()
    assert ((ps.mean(0) > 0.3) & (ps.mean(0) < 0.7)).all()


def test_battles_that_vary_by_prompt_or_by_pair_give_p_near_zero():
    """Each prompt moves each agent's ability by a normal of sd 1: the agent x prompt discrepancy
    (observed 128 against a replicated 51 +- 11 at these sizes, 7 SD) exceeds every one of 200
    replicates; the pair-level deviance is not built for it (a pair's battles spread over prompts;
    there p = 0.16), so a pair whose gap is moved by a normal of sd 1 (intransitive) is its case:
    observed 57 against 20 +- 6.
    """
    b = _read(_simulate(100, SKILL, shift=1.0))
    assert battle_ppc(_at_truth(b, SKILL, 1.0, pp_seed=1), b, seed=0)["prompts"]["p"] == 0.0
    b = _read(_simulate(101, SKILL, pair_shift=1.0))
    assert battle_ppc(_at_truth(b, SKILL, 1.0), b, seed=0)["pairs"]["p"] < 0.01


def test_a_judge_who_favours_an_agent_gives_p_near_zero_for_judges_only():
    """Two judges of the same prompts; j0's battles drawn with m0 2.5 logits stronger (self-preference).

    The fit's abilities are the truth with m0 halfway. Every prompt has battles of both judges alike,
    so the prompt check sees no extra spread (observed 48 against a replicated 49 +- 11); the agent
    x judge discrepancy sees m0's record split by judge: 52 against 9.7 +- 5.4, beyond every one of
    200 replicates.
    """
    fair = _simulate(30, SKILL).assign(judge="j1")
    keen = _simulate(31, SKILL + np.r_[2.5, 0, 0, 0, 0]).assign(judge="j0")
    b = _read(pd.concat([fair, keen], ignore_index=True))
    res = battle_ppc(_at_truth(b, SKILL + np.r_[1.25, 0, 0, 0, 0], 1.0), b, seed=0)
    assert res["judges"]["p"] == 0.0 and res["prompts"]["p"] > 0.05
    import matplotlib.pyplot as plt

    sec, figs = _section(_at_truth(b, SKILL + np.r_[1.25, 0, 0, 0, 0], 1.0), b)
    assert "over the 10 agent × judge cells with battles (2 judges)" in sec["text"]
    assert "(p below 0.05 for judges)" in sec["text"] and "resampled by neither fit" in sec["text"]
    assert [ax.get_xlabel() for ax in figs["ppc_battles"].axes][-1] == "agent × judge discrepancy, observed battles"
    from figure_overlap import overlaps

    assert overlaps(figs["ppc_battles"]) == []  # three panels
    plt.close(figs["ppc_battles"])


def test_replicates_from_the_posterior_predictive_and_drawn_here_have_one_law():
    """The fit's predictive results come sorted within each pair and are dealt to its battles at random;
    drawn here, they are independent per battle. At the same (true) draws both are the model's law: the
    mean replicated discrepancies over 200 draws agree within 4 Monte Carlo SE. Dealt in order instead
    (each pair's wins to its first prompts), the prompt discrepancy's mean was 78 against 50 (limit 4.3).
    """
    b = _read(_simulate(3, SKILL))
    a = battle_ppc(_at_truth(b, SKILL, 1.0, pp_seed=5), b, seed=1)
    c = battle_ppc(_at_truth(b, SKILL, 1.0), b, seed=1)
    assert a["source"] != c["source"] and "rng=1" in c["source"]
    for key in ("pairs", "prompts"):
        x, y = a[key]["rep"], c[key]["rep"]
        assert abs(x.mean() - y.mean()) < 4 * np.hypot(x.std() / np.sqrt(x.size), y.std() / np.sqrt(y.size))


def _section(fit, battles) -> tuple[dict, dict]:
    """The report's posterior predictive checks section of ``fit`` (and its figures, unrendered)."""
    from report_section import section_alone

    from hierbench.report._report import Report

    class Kept(Report):
        def figure(self, name, fig, caption=""):
            self.kept[name] = fig
            self.blocks[-1]["figures"].append((name, caption))

    rep = Kept("t")
    rep.kept = {}
    return section_alone("ppc", fit=fit, battles=battles, report=rep), rep.kept


def test_the_section_says_what_it_checks_and_what_to_do_when_it_fails():
    import matplotlib.pyplot as plt
    from figure_overlap import overlaps

    b = _read(_simulate(100, SKILL, shift=1.0))
    sec, figs = _section(_at_truth(b, SKILL, 1.0, pp_seed=1), b)
    text = sec["text"]
    assert "For each of 200 posterior draws, a discrepancy is computed at that draw's abilities and tie parameter" in text
    assert "The posterior predictive p-value is P(D(replicated) >= D(observed))" in text and "one-sided" in text
    assert "(the fit's posterior_predictive draws)" in text
    assert "of the win / tie / loss counts of the 10 pairs of agents that met (unordered" in text
    assert "over the 50 agent × prompt cells with battles (10 prompts)" in text
    res = battle_ppc(_at_truth(b, SKILL, 1.0, pp_seed=1), b, seed=0)
    lo, hi = np.quantile(res["prompts"]["obs"], [0.025, 0.975])
    assert f"Observed median {np.median(res['prompts']['obs']):.0f} (95% of draws {lo:.0f} to {hi:.0f})" in text
    assert "in no draw of 200 did the replicated reach the observed (p below 1/200 = 0.005)" in text
    assert f"p = {res['pairs']['p']:.3f} over 200 draws" in text
    assert "**The model does not fit its battles** (p below 0.05 for prompts)" in text
    assert "assume independent battles" in text and "`hierbench.freq.fit_bradley_terry_ml` resamples the prompts" in text
    fig = figs["ppc_battles"]
    assert [ax.get_xlabel() for ax in fig.axes] == ["pair-level deviance G², observed battles",
                                                    "agent × prompt discrepancy, observed battles"]  # fmt: skip
    assert overlaps(fig) == []
    plt.close(fig)


def test_without_the_log_a_passing_fit_says_so_and_a_first_position_fit_checks_ordered_pairs():
    import matplotlib.pyplot as plt

    b = _read(_simulate(4, SKILL))
    fit = _at_truth(b, SKILL, 1.0, draws=1200)
    fit["posterior"] = fit["posterior"].to_dataset().assign(home=(("chain", "draw"), np.zeros((1, 1200))))
    sec, figs = _section(fit, None)
    plt.close(figs["ppc_battles"])
    text = sec["text"]
    res = battle_ppc(fit, None, seed=0)
    assert res["pairs"]["p"] >= 0.05 and res["n_draws"] == 1000  # at most 1,000 draws are kept
    assert "For each of 1,000 posterior draws (evenly thinned from the fit's 1,200)" in text
    assert "abilities, first-position advantage and tie parameter" in text
    assert "ordered pairs of agents that met (first position first" in text
    assert "drawn here from the posterior with the report's seed, rng=0" in text
    assert "No prompt-level check: no battle log is given beside the fit." in text
    assert "No misfit of these kinds shows" in text and "does not fit" not in text
