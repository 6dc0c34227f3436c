"""The ArviZ calls a reader makes run on a formula fit (``build_mixed``) of each family, and give the draws' values.

Before: ``azs.summary`` failed on every formula fit (the scalar ``sd[1|judge]`` and the element
``'1|judge'`` of ``sd`` had one label), and a graded fit's outcome, grade counts ``y(row, grade)``
beside a log-likelihood per row, broke ``loo_pit``, ``plot_ppc_pit``, ``plot_ppc_rootogram``,
``plot_ppc_interval``, ``plot_ppc_pava`` and ``plot_loo_pit``. Independent references: numpy's
mean of the draws (summary), the counts the model was given (the graded runs), the likelihood's
own log-probabilities by scipy (a run's log-likelihood), and the PIT's definition computed from
the same importance weights by numpy (``loo_pit``).

The same for a Bradley-Terry fit with Davidson ties (its ``outcome_counts(pair, result)`` broke the
same calls): the battles are the input's battles, and their log-likelihoods sum per pair to scipy's
multinomial log-pmf at numpy's Davidson probabilities.
"""

from __future__ import annotations

import warnings

import matplotlib as mpl
import numpy as np
import pandas as pd
import pytest
import xarray as xr
from scipy.special import expit

bayes = pytest.importorskip("hierbench.bayes")
azs = pytest.importorskip("arviz_stats")
azp = pytest.importorskip("arviz_plots")

mpl.use("Agg")

#: 150 draws of 2 chains: the layout is checked, not the estimates (the sds' ESS may fall short)
pytestmark = pytest.mark.filterwarnings("ignore::hierbench.bayes.ConvergenceWarning")
_SMALL = {"draws": 150, "tune": 150, "chains": 2, "progress": False, "log_likelihood": True}
FAMILIES = ("ordinal wine", "ordinal cells", "fractional", "binomial")


def _board(fractional: bool) -> xr.Dataset:
    """6 agents (2 scaffolds x 3 models) x 20 tasks x 3 runs, a tier per task, grades 1-4 (benchmarks/sbc.py)."""
    rng = np.random.default_rng(0)
    sc, mo = np.repeat(["s1", "s2"], 3), np.tile(["m1", "m2", "m3"], 2)
    u = rng.random((6, 20, 3))
    score = np.where(u < 0.3, 0.0, np.where(u > 0.8, 1.0, u)) if fractional else (u < 0.5) * 1.0
    return xr.Dataset(
        {"score": (("agent", "task", "run"), score),
         "grade": (("agent", "task", "run"), rng.integers(1, 5, (6, 20, 3)).astype(float))},
        coords={"agent": [f"{a}/{b}" for a, b in zip(sc, mo, strict=True)], "task": [f"t{i}" for i in range(20)],
                "scaffold": ("agent", sc), "tier": ("task", ["easy", "hard"] * 10)},
    )  # fmt: skip


def _wine(shared_data) -> xr.Dataset:
    from hierbench.data import from_records

    df = pd.read_csv(shared_data / "ordinal" / "wine.csv")
    df["grade"], df["treatment"] = (df["rating"] - 1) / 4.0, df["temp"] + "/" + df["contact"]
    return from_records(df, agent="treatment", task="bottle", score="grade", extra={"rating": "rating", "judge": "judge"},
                        agent_coords=["temp", "contact"])  # fmt: skip


def _model(family: str, shared_data):
    if family == "ordinal wine":
        return bayes.build_mixed(_wine(shared_data), "rating ~ temp + contact + (1|judge)", family="ordinal")
    if family == "ordinal cells":  # 3 runs a cell: the likelihood counts each cell's grades
        return bayes.build_mixed(_board(False), "grade ~ tier + (1|agent) + (1|task)", family="ordinal")
    if family == "fractional":
        return bayes.build_mixed(_board(True), "score ~ 0 + agent + (1|task) + (1|agent:task)", family="fractional")
    return bayes.build_mixed(_board(False), "score ~ scaffold + tier + (1|task) + (1|agent:task)", family="binomial")


@pytest.fixture(scope="module", params=FAMILIES)
def fitted(request, shared_data):
    model = _model(request.param, shared_data)
    return request.param, model, bayes.fit(model, rng=3, **_SMALL)


def _plots(dt: xr.DataTree, family: str) -> list[str]:
    """Run the plots a reader calls on ``dt``; return the names that ran."""
    import matplotlib.pyplot as plt

    names = ["plot_forest", "plot_trace_dist", "plot_ppc_dist", "plot_ppc_pit", "plot_loo_pit",
             "plot_ppc_interval", "plot_ppc_pava", "plot_ppc_rootogram"]  # fmt: skip
    ran = []
    for name in names:
        before = set(plt.get_fignums())
        kw = {"var_names": ["sd", "beta"]} if name in ("plot_forest", "plot_trace_dist") else {}
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # ArviZ's "looks discrete" notes
            if name == "plot_ppc_rootogram" and family == "fractional":
                # ArviZ's own refusal: a rootogram counts discrete outcomes, scores in [0, 1] are not
                with pytest.raises(ValueError, match="continuous"):
                    getattr(azp, name)(dt, backend="matplotlib")
            else:
                getattr(azp, name)(dt, backend="matplotlib", **kw)
                ran.append(name)
        for num in set(plt.get_fignums()) - before:
            plt.close(num)
    return ran


@pytest.mark.slow  # one small fit per family (4 to 12 s each with its compile)
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_arviz_calls_run_and_give_the_draws_values(fitted):
    family, _, dt = fitted
    post = dt["posterior"].to_dataset()
    # summary: one row per label, and the rows of `sd` and of each term's own sd(<term>) are numpy's means
    table = azs.summary(dt, kind="stats")
    assert table.index.is_unique
    for term in post["component"].values.tolist():
        draws = post["sd"].sel(component=term).values
        assert table.loc[f"sd[{term}]", "mean"] == pytest.approx(float(np.mean(draws)), rel=0, abs=1e-12)
        np.testing.assert_array_equal(post[f"sd({term})"].values, draws)  # one parameter, stored twice
    ess, rhat = azs.ess(dt), azs.rhat(dt)
    assert set(ess.data_vars) == set(rhat.data_vars) == set(post.data_vars)
    # the outcome: one value per observation, alike in every group ArviZ pairs
    obs, pp, ll = (dt[g]["y"] for g in ("observed_data", "posterior_predictive", "log_likelihood"))
    assert obs.dims == pp.dims[2:] == ll.dims[2:] == ("obs",) or obs.dims == ("cell",) == pp.dims[2:] == ll.dims[2:]
    assert obs.shape == pp.shape[2:] == ll.shape[2:]
    assert obs.dtype == pp.dtype
    loo = azs.loo(dt, pointwise=True)
    assert loo.n_data_points == obs.size and np.isfinite(loo.elpd)
    ran = _plots(dt, family)
    assert len(ran) == (7 if family == "fractional" else 8)


@pytest.mark.slow  # the fits of the test above (module fixture)
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_loo_pit_is_the_weighted_share_of_predictions_below_each_observation(fitted):
    """PIT_i lies between P_w(y_rep < y_i) and P_w(y_rep <= y_i), weighted by leaving observation i out.

    The importance weights ``w`` are given to ArviZ and used by numpy alike (the two bounds are
    equal for a continuous outcome).
    """
    family, _, dt = fitted
    ll = dt["log_likelihood"]["y"]
    raw = -ll - xr.apply_ufunc(np.logaddexp.reduce, -ll, input_core_dims=[["chain", "draw"]], kwargs={"axis": (-2, -1)})
    k = xr.zeros_like(ll.isel(chain=0, draw=0))
    pit = azs.loo_pit(dt, log_weights=xr.Dataset({"y": raw}), pareto_k=xr.Dataset({"y": k}), random_state=0)["y"]
    assert pit.dims == dt["observed_data"]["y"].dims
    w = np.exp(raw.transpose(..., "chain", "draw").values.reshape(ll.shape[2], -1))
    rep = dt["posterior_predictive"]["y"].transpose(..., "chain", "draw").values.reshape(ll.shape[2], -1)
    y = dt["observed_data"]["y"].values[:, None]
    below, at_most = (w * (rep < y)).sum(1), (w * (rep <= y)).sum(1)
    assert (pit.values >= below - 1e-9).all() and (pit.values <= at_most + 1e-9).all()
    assert ((pit.values >= 0) & (pit.values <= 1)).all()
    if family != "fractional":  # discrete: ArviZ draws inside the interval; not pinned to one end
        assert (at_most - below > 1e-3).any()


@pytest.mark.slow  # one small graded fit
def test_graded_runs_are_the_counts_the_model_was_given_and_their_log_likelihood_the_models(fitted):
    family, model, dt = fitted
    if not family.startswith("ordinal"):
        pytest.skip("graded fits only")
    design = model.hierbench["design"]
    counts = np.asarray(design.grade_counts).astype(np.int64)
    cats = np.asarray(design.categories, dtype=float)
    runs = dt["observed_data"]["y"].values
    row = np.repeat(np.arange(counts.shape[0]), counts.sum(1))  # a row's runs, in row order
    assert runs.size == counts.sum() and np.isin(runs, cats).all()
    back = np.zeros_like(counts)
    np.add.at(back, (row, np.searchsorted(cats, runs)), 1)
    np.testing.assert_array_equal(back, counts)
    # one draw's log-likelihood of each run: log P(grade) of the cumulative logit at the draw's eta
    post = dt["posterior"].to_dataset().isel(chain=1, draw=17)
    eta = design.X @ post["beta"].values if design.X.shape[1] else np.zeros(len(design.y))
    for t in design.random:
        eta = eta + post[f"re[{t.name}]"].values[t.codes]
    cdf = np.concatenate([np.zeros((eta.size, 1)), expit(post["thresholds"].values[None, :] - eta[:, None]),
                          np.ones((eta.size, 1))], axis=1)  # fmt: skip
    want = np.log(np.diff(cdf, axis=1))[row, np.searchsorted(cats, runs)]
    np.testing.assert_allclose(dt["log_likelihood"]["y"].isel(chain=1, draw=17).values, want, rtol=1e-9, atol=1e-12)


# ---------------------------------------------------------------- a grouping column named as an ArviZ dim
# Before: ``(1|model)`` (the agent column of most eval logs, and an Inspect log's agent coord) gave
# ``re[1|model]`` a dim named ``model``, the dim ArviZ's plots combine several fits along:
# ``azp.plot_forest(fit)`` raised "x and y must have same first dimension", and ``plot_dist``,
# ``plot_ridge``, ``plot_ess``, ``plot_mcse`` drew the levels as separate fits. A grouping named
# ``column``, ``chain``, ``draw`` or as one of the model's own dims (``coef``, ``component``, ...)
# failed in ArviZ, PyMC or nutpie.


@pytest.mark.slow  # two small fits (one compile each)
def test_a_grouping_named_model_plots_with_arviz_under_the_users_labels_and_the_same_draws():
    import json

    import matplotlib.pyplot as plt

    from hierbench import HierbenchWarning

    ds = _board(False).assign_coords(model=("agent", ["gpt-4o", "claude", "llama"] * 2))
    with pytest.warns(HierbenchWarning, match=r"column 'model': in the fit its levels lie along the dim "
                      r"'model \(grouping\)', not 'model', because 'model' is the dim ArviZ's plots combine"):  # fmt: skip
        model = bayes.build_mixed(ds, "score ~ scaffold + (1|model) + (1|task)")
    # the posterior alone is read (the plots below draw its variables): no predictive, no log-likelihood
    # (asking for either leaves the posterior's draws as they are)
    posterior_only = {**_SMALL, "log_likelihood": False, "posterior_predictive": False}
    fit = bayes.fit(model, rng=3, **posterior_only)
    # the same data with the column renamed by hand: no taken name, plain dims
    plain = bayes.fit(bayes.build_mixed(ds.rename(model="base_model"), "score ~ scaffold + (1|base_model) + (1|task)"),
                      rng=3, **posterior_only)  # fmt: skip
    re = fit.posterior["re[1|model]"]
    assert re.dims == ("chain", "draw", "model (grouping)")
    assert re["model (grouping)"].values.tolist() == ["claude", "gpt-4o", "llama"]  # the labels, sorted (model_design)
    assert re.attrs["grouping"] == "model" and re.attrs["grouping_dim"] == "model (grouping)"
    decision = json.loads(fit.attrs["hierbench_structure"])["decisions"]["grouping_dims"]
    assert decision["choice"] == {"model": "model (grouping)"} and "ArviZ" in decision["reason"]
    # every draw bit for bit the renamed fit's: only the dim's and the variables' names differ
    post, ref = fit.posterior.to_dataset(), plain.posterior.to_dataset()
    assert len(post.data_vars) == len(ref.data_vars)
    for name in ref.data_vars:
        np.testing.assert_array_equal(post[name.replace("base_model", "model")].values, ref[name].values)
    plt.close("all")
    azp.plot_forest(fit, backend="matplotlib")  # every variable, as a reader calls it
    azp.plot_forest(fit, var_names=["re[1|model]"], backend="matplotlib")
    texts = {t.get_text() for t in plt.gcf().findobj(mpl.text.Text)}
    assert {"gpt-4o", "claude", "llama"} <= texts  # one row per model, labelled as the column holds them
    for name in ("plot_dist", "plot_ess"):  # before: the levels drawn as three fits, coloured by "model"
        pc = getattr(azp, name)(fit, var_names=["re[1|model]"], backend="matplotlib")
        assert all("model" not in aes.to_dataset().dims for aes in pc.aes.children.values())
    plt.close("all")


@pytest.mark.parametrize("column", ["column", "chain", "draw", "coef", "component", "obs"])
def test_a_grouping_named_as_a_taken_dim_keeps_its_labels_on_a_dim_of_its_own(column):
    from hierbench import HierbenchWarning

    ds = _board(False).assign_coords({column: ("agent", ["m1", "m2", "m3"] * 2)})
    with pytest.warns(HierbenchWarning, match=rf"column '{column}': in the fit its levels lie along the dim '{column} "):
        model = bayes.build_mixed(ds, f"score ~ scaffold + (1|{column}) + (1|task)")
    assert list(model.coords[f"{column} (grouping)"]) == ["m1", "m2", "m3"]
    assert model.named_vars_to_dims[f"re[1|{column}]"] == (f"{column} (grouping)",)
    # the model's own dims keep their own labels
    assert list(model.coords["coef"]) == ["Intercept", "scaffold[s2]"]
    assert list(model.coords["component"]) == [f"1|{column}", "1|task"]
    assert model.hierbench["structure"]["decisions"]["grouping_dims"]["choice"] == {column: f"{column} (grouping)"}


# ---------------------------------------------------------------- Bradley-Terry (Davidson ties)
# The likelihood counts each ordered pair's results (a multinomial per pair); before, its
# ``outcome_counts(pair, result)`` broke ``plot_ppc_pit``, ``plot_ppc_rootogram``, ``loo_pit`` and
# ``plot_loo_pit``. A fit lays it out one battle at a time, ``outcome(battle)`` coded 0 / 1 / 2.


def _battles(ties: bool) -> pd.DataFrame:
    """300 battles of 5 agents, each result equally likely (``tie`` only with ``ties``)."""
    g = np.random.default_rng(0)
    a = g.integers(0, 5, 300)
    b = (a + g.integers(1, 5, 300)) % 5
    names = np.array([f"m{i}" for i in range(5)])
    return pd.DataFrame({"left": names[a], "right": names[b],
                         "winner": g.choice(["left", "tie", "right"] if ties else ["left", "right"], 300)})  # fmt: skip


@pytest.fixture(scope="module")
def bt_fitted():
    from hierbench.data import read_battles

    df = _battles(True)
    model = bayes.build_bradley_terry(read_battles(df))
    return df, model, bayes.fit(model, rng=3, **_SMALL)


@pytest.mark.slow  # one small Bradley-Terry fit (2.5 s on a warm compile cache, more when cold)
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_bradley_terry_outcome_is_one_value_per_battle_and_the_arviz_calls_run(bt_fitted):
    df, _, dt = bt_fitted
    obs, pp, ll = (dt[g]["outcome"] for g in ("observed_data", "posterior_predictive", "log_likelihood"))
    assert obs.dims == pp.dims[2:] == ll.dims[2:] == ("battle",) and obs.size == len(df)
    assert obs.dtype == pp.dtype == np.int64 and "0 = a wins, 1 = tie, 2 = b wins" in obs.attrs["coding"]
    for da in (obs, pp, ll):
        np.testing.assert_array_equal(da["pair"].values, obs["pair"].values)
    # battles pair by pair, in result order within a pair; the observed ones are the input's battles
    key = np.stack([obs["pair"].values, obs.values], 1)
    assert (np.diff(key[:, 0]) >= 0).all() and all((np.diff(obs.values[key[:, 0] == p]) >= 0).all()
                                                   for p in np.unique(key[:, 0]))  # fmt: skip
    agents = dt["posterior"]["agent"].values
    const = dt["constant_data"]
    a = agents[const["agent_a_idx"].values[obs["pair"].values]]
    b = agents[const["agent_b_idx"].values[obs["pair"].values]]
    code = {"left": 0, "tie": 1, "right": 2}
    got = pd.Series(list(zip(a, b, obs.values.tolist(), strict=True))).value_counts().sort_index()
    want = pd.Series(list(zip(df.left, df.right, df.winner.map(code), strict=True))).value_counts().sort_index()
    pd.testing.assert_series_equal(got, want)
    loo = azs.loo(dt, pointwise=True)
    assert loo.n_data_points == len(df) and np.isfinite(loo.elpd)
    assert azs.loo_pit(dt)["outcome"].dims == ("battle",)
    import matplotlib.pyplot as plt

    for name in ("plot_ppc_dist", "plot_ppc_pit", "plot_ppc_rootogram", "plot_loo_pit"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)  # ArviZ's "looks discrete" notes
            getattr(azp, name)(dt, backend="matplotlib")
        plt.close("all")


@pytest.mark.slow  # the fit of the test above (module fixture)
def test_bradley_terry_loo_pit_is_the_weighted_share_of_predictions_below_each_battle(bt_fitted):
    """As for the formula fits: PIT_i within [P_w(y_rep < y_i), P_w(y_rep <= y_i)], the same weights in numpy."""
    _, _, dt = bt_fitted
    ll = dt["log_likelihood"]["outcome"]
    raw = -ll - xr.apply_ufunc(np.logaddexp.reduce, -ll, input_core_dims=[["chain", "draw"]], kwargs={"axis": (-2, -1)})
    k = xr.zeros_like(ll.isel(chain=0, draw=0))
    pit = azs.loo_pit(dt, log_weights=xr.Dataset({"outcome": raw}), pareto_k=xr.Dataset({"outcome": k}),
                      random_state=0)["outcome"]  # fmt: skip
    w = np.exp(raw.transpose(..., "chain", "draw").values.reshape(ll.shape[2], -1))
    rep = dt["posterior_predictive"]["outcome"].transpose(..., "chain", "draw").values.reshape(ll.shape[2], -1)
    y = dt["observed_data"]["outcome"].values[:, None]
    below, at_most = (w * (rep < y)).sum(1), (w * (rep <= y)).sum(1)
    assert (pit.values >= below - 1e-9).all() and (pit.values <= at_most + 1e-9).all()
    assert (at_most - below > 1e-3).any()


@pytest.mark.slow  # the fit of the test above (module fixture)
def test_bradley_terry_battles_log_likelihood_sums_to_each_pairs_multinomial(bt_fitted):
    """Per pair, the battles' log-likelihoods plus the log multinomial coefficient are scipy's multinomial logpmf.

    The Davidson probabilities from the draw's abilities and nu (numpy), the counts from the input battles.
    """
    from scipy.special import gammaln
    from scipy.stats import multinomial

    from hierbench.bayes import add_log_likelihood

    df, model, dt = bt_fitted
    post = dt["posterior"].to_dataset()
    const = dt["constant_data"]
    ia, ib = const["agent_a_idx"].values, const["agent_b_idx"].values
    agents = post["agent"].values
    code = {"left": 0, "tie": 1, "right": 2}
    counts = np.zeros((ia.size, 3), dtype=np.int64)
    where = {(agents[i], agents[j]): p for p, (i, j) in enumerate(zip(ia, ib, strict=True))}
    for left, right, winner in df.itertuples(index=False):
        counts[where[left, right], code[winner]] += 1
    ll = dt["log_likelihood"]["outcome"]
    for c, s in [(0, 0), (1, 17), (1, 149)]:
        ab, nu = post["ability"].values[c, s], float(post["nu"].values[c, s])
        dd = ab[ia] - ab[ib]
        p = np.stack([np.exp(dd / 2), np.full(dd.shape, nu), np.exp(-dd / 2)], 1)
        p /= p.sum(1, keepdims=True)
        want = multinomial.logpmf(counts, counts.sum(1), p)
        coef = gammaln(counts.sum(1) + 1.0) - gammaln(counts + 1.0).sum(1)  # log n! / (w! t! l!)
        got = np.bincount(ll["pair"].values, ll.isel(chain=c, draw=s).values, minlength=ia.size) + coef
        np.testing.assert_allclose(got, want, rtol=0, atol=1e-12)
    # computed again on the laid-out fit (add_log_likelihood): the same values
    again = add_log_likelihood(dt.copy(), model)["log_likelihood"]["outcome"]
    xr.testing.assert_identical(again, ll)


@pytest.mark.slow  # one small fit without ties (1.5 s warm, more when cold)
@pytest.mark.filterwarnings("ignore:Estimated shape parameter of Pareto:UserWarning")
def test_bradley_terry_without_ties_keeps_one_binomial_count_per_pair_which_arviz_reads():
    from hierbench.data import read_battles

    dt = bayes.fit(bayes.build_bradley_terry(read_battles(_battles(False)), ties=None), rng=3, **_SMALL)
    for g in ("observed_data", "posterior_predictive", "log_likelihood"):
        assert list(dt[g].data_vars) == ["n_win_a"] and dt[g]["n_win_a"].dims[-1] == "pair"
    assert azs.loo_pit(dt)["n_win_a"].dims == ("pair",)
    import matplotlib.pyplot as plt

    for name in ("plot_ppc_pit", "plot_ppc_rootogram", "plot_loo_pit"):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            getattr(azp, name)(dt, backend="matplotlib")
        plt.close("all")
