"""Pairwise ML: Bradley-Terry (seed 003, evalica/LLMFAO, choix, BradleyTerry2), Elo, win rates, position bias."""

from __future__ import annotations

import warnings

import numpy as np
import pandas as pd
import pytest
from scipy.optimize import minimize

from hierbench import UndefinedWarning
from hierbench.data import from_pair_counts
from hierbench.data import read_battles
from hierbench.freq import NoFiniteMLEWarning
from hierbench.freq import fit_bradley_terry_ml
from hierbench.freq import online_elo
from hierbench.freq import position_consistency
from hierbench.freq import win_rate

choix = pytest.importorskip("choix")  # in the `test` extra; the skip only guards odd installs


def _seed_battles():
    # seed 003, "Elo and Bradley-Terry": A beats B 64%, B beats C 64%, A beats C 76%
    rows = (
        [("A", "B")] * 64
        + [("B", "A")] * 36
        + [("B", "C")] * 64
        + [("C", "B")] * 36
        + [("A", "C")] * 76
        + [("C", "A")] * 24
    )
    df = pd.DataFrame(rows, columns=["left", "right"]).assign(winner="left")
    return read_battles(df, position=False)


@pytest.fixture(scope="module")
def llmfao(shared_data):
    df = pd.read_csv(shared_data / "evalica" / "llmfao_pairwise.csv")
    return df, read_battles(df, task="prompt")


def test_seed_worked_example_1100_1000_900():
    r = fit_bradley_terry_ml(_seed_battles(), ties="none", n_resamples=200, rng=0)
    # the seed prints {'A': 1100, 'B': 1000, 'C': 900} (rounded, anchored at 1000 = geometric mean)
    assert r.estimate.round().astype(int).to_series().to_dict() == {"A": 1100, "B": 1000, "C": 900}
    # the MLE gap A - B: logit(0.64) is not exactly the MLE here, but within 0.1 Elo of it
    assert (
        abs(float(r.estimate.sel(agent="A") - r.estimate.sel(agent="B")) - 400 * np.log10(64 / 36))
        < 0.2
    )
    assert r.ci.attrs["ci_kind"] == "percentile" and r.ci.attrs["ci_prob"] == 0.95
    assert r.rank.values.tolist() == [1, 2, 3]


def test_llmfao_matches_evalica_golden_scores_and_choix(shared_data, llmfao):
    df, pw = llmfao
    gold = pd.read_csv(shared_data / "evalica" / "llmfao_golden_scores.csv")
    gold = gold[gold.algorithm == "bradley_terry"].set_index("item")["score"]
    for method in ("newton", "mm"):
        r = fit_bradley_terry_ml(pw, ties="half", scale="logit", interval="wald", method=method)
        s = np.exp(r.ability.to_series())
        s = s / s.sum()  # evalica's published scores are normalised to sum 1
        np.testing.assert_allclose(
            s.to_numpy(), gold.reindex(s.index).to_numpy(), rtol=0, atol=1e-6
        )
        assert np.abs(s - gold.reindex(s.index)).max() < 1e-9  # measured 1e-13 (newton), 1e-11 (mm)
    # choix: a tie is half a win each way; doubling every battle keeps the MLE, so a tie
    # becomes one win each way and a decisive battle two wins
    names = list(r.ability.agent.values)
    idx = {n: i for i, n in enumerate(names)}
    data = []
    for left, right, w in zip(df.left, df.right, df.winner, strict=True):
        i, j = idx[left], idx[right]
        data += [(i, j)] * 2 if w == "left" else [(j, i)] * 2 if w == "right" else [(i, j), (j, i)]
    theta = choix.ilsr_pairwise(len(names), data, alpha=0.0, max_iter=10_000, tol=1e-12)
    theta = theta - theta.mean()
    np.testing.assert_allclose(r.ability.values, theta, atol=1e-6)


def test_citations_reproduce_bradleyterry2(shared_data, citations_counts, bt2_reference):
    c = citations_counts
    ref = bt2_reference("citations", "BTm ML, ref=Biometrika")
    r = fit_bradley_terry_ml(c, ties="none", scale="logit", reference="Biometrika", interval="wald")
    for journal in ("Comm Statist", "JASA", "JRSS-B"):
        assert abs(float(r.estimate.sel(agent=journal)) - ref.loc[journal, "estimate"]) < 5e-5
    # residual deviance against the saturated binomial model (published 4.293)
    raw = pd.read_csv(shared_data / "bradley_terry" / "citations_binomial_pairs.csv")
    w1, w2 = raw.win1.to_numpy(float), raw.win2.to_numpy(float)
    sat = np.sum(w1 * np.log(w1 / (w1 + w2)) + w2 * np.log(w2 / (w1 + w2)))
    dev = bt2_reference("citations", "BTm ML").loc["residual_deviance", "estimate"]
    assert abs(2 * (sat - r.loglik) - dev) < 5e-4
    ref2 = bt2_reference("citations", "BTm ML, ref=JASA")
    r2 = fit_bradley_terry_ml(c, ties="none", scale="logit", reference="JASA", interval="wald")
    assert abs(float(r2.estimate.sel(agent="JRSS-B")) - ref2.loc["JRSS-B", "estimate"]) < 5e-5


@pytest.mark.parametrize("method", ["newton", "mm"])
def test_baseball_home_advantage_reproduces_bradleyterry2(
    shared_data, baseball_counts, bt2_reference, method
):
    bb = baseball_counts
    for home, prefix in (
        (False, "model1: BT no home effect"),
        (True, "model2: BT + home advantage"),
    ):
        ref = bt2_reference("baseball", prefix)
        r = fit_bradley_terry_ml(
            bb,
            ties="none",
            home=home,
            scale="logit",
            reference="Baltimore",
            interval="wald",
            method=method,
        )
        for team in ref.index.drop("at.home", errors="ignore"):
            assert abs(float(r.estimate.sel(agent=team)) - ref.loc[team, "estimate"]) < 5e-5, team
            assert (
                abs(float(r.standard_error.sel(agent=team)) - ref.loc[team, "std_error"]) < 5e-5
            ), team
        if home:
            assert abs(float(r.home) - ref.loc["at.home", "estimate"]) < 5e-5
            assert abs(float(r.home_se) - ref.loc["at.home", "std_error"]) < 5e-5
    raw = pd.read_csv(shared_data / "bradley_terry" / "baseball_agresti1987.csv")
    h, a = raw["home.wins"].to_numpy(float), raw["away.wins"].to_numpy(float)
    with np.errstate(divide="ignore", invalid="ignore"):
        sat = np.nansum(h * np.log(h / (h + a))) + np.nansum(a * np.log(a / (h + a)))
    dev = bt2_reference("baseball", "model2").loc["residual_deviance (35 df)", "estimate"]
    assert abs(2 * (sat - r.loglik) - dev) < 5e-4


def test_davidson_with_home_matches_an_independent_optimiser():
    rng = np.random.default_rng(3)
    agents = list("ABCDE")
    ability, nu, home = np.array([0.8, 0.3, 0.0, -0.4, -0.7]), 0.6, 0.25
    rows = []
    for _ in range(600):
        i, j = rng.choice(5, 2, replace=False)
        d = ability[i] - ability[j] + home
        p = np.array([np.exp(d / 2), nu, np.exp(-d / 2)])
        rows.append((agents[i], agents[j], ["left", "tie", "right"][rng.choice(3, p=p / p.sum())]))
    df = pd.DataFrame(rows, columns=["left", "right", "winner"])
    r = fit_bradley_terry_ml(
        read_battles(df), ties="davidson", home=True, scale="logit", reference="A", interval="wald"
    )
    # independent: direct minimisation of the Davidson negative log-likelihood, one term per battle
    ia = df.left.map({a: k for k, a in enumerate(agents)}).to_numpy()
    ib = df.right.map({a: k for k, a in enumerate(agents)}).to_numpy()
    y = df.winner.map({"left": 0, "tie": 1, "right": 2}).to_numpy()

    def nll(x):
        th = np.r_[0.0, x[:4]]
        d = th[ia] - th[ib] + x[4]
        logits = np.stack([d / 2, np.full_like(d, x[5]), -d / 2], 1)
        lse = np.logaddexp.reduce(logits, axis=1)
        return -(logits[np.arange(y.size), y] - lse).sum()

    opt = minimize(nll, np.zeros(6), method="BFGS", options={"gtol": 1e-9})
    np.testing.assert_allclose(r.estimate.values[1:], opt.x[:4], atol=1e-4)
    assert abs(float(r.home) - opt.x[4]) < 1e-4
    assert abs(np.log(float(r.nu)) - opt.x[5]) < 1e-4
    assert abs(-r.loglik - opt.fun) < 1e-6


def test_bootstrap_intervals_battles_and_prompts(llmfao):
    _, pw = llmfao
    r = fit_bradley_terry_ml(pw, n_resamples=200, rng=1, resample="battles")
    rt = fit_bradley_terry_ml(pw, n_resamples=200, rng=1, resample="task")
    width = (r.ci.sel(ci_bound="upper") - r.ci.sel(ci_bound="lower")).mean()
    width_t = (rt.ci.sel(ci_bound="upper") - rt.ci.sel(ci_bound="lower")).mean()
    assert width > 0 and width_t > 0
    # the bootstrap SD over battles agrees with the Wald SE (measured within 5%)
    sd = r.distribution.std("resample")
    assert float(np.abs(sd / r.standard_error - 1).median()) < 0.15
    # rank intervals contain the observed rank
    lo, hi = r.rank_ci.sel(ci_bound="lower"), r.rank_ci.sel(ci_bound="upper")
    assert bool(((lo <= r.rank) & (r.rank <= hi)).all())
    assert r.nu is not None and float(r.nu) > 0 and r.nu_ci.attrs["ci_kind"] == "percentile"
    assert rt.attrs["resample"] == "task"
    assert "task" in rt.ci.attrs["ci_detail"]


def test_bt_is_order_free_and_online_elo_is_not():
    pw = _seed_battles()
    perm = np.random.default_rng(0).permutation(pw.sizes["comparison"])
    shuffled = pw.isel(comparison=perm)
    a = fit_bradley_terry_ml(pw, ties="none", interval="wald")
    b = fit_bradley_terry_ml(shuffled, ties="none", interval="wald")
    np.testing.assert_allclose(a.estimate, b.estimate, atol=1e-9)
    e1 = online_elo(pw, k=32, n_orders=50, rng=0)
    e2 = online_elo(shuffled, k=32, n_orders=0)
    assert float(np.abs(e1.estimate - e2.estimate).max()) > 5  # same battles, other order
    assert float(e1.order_spread.min()) > 0
    # battles grouped by pair (A-B first, then B-C, then A-C): the data order puts C far off
    assert float(e1.estimate.sum()) == pytest.approx(3000.0)  # Elo is zero-sum


def test_elo_hand_computed():
    df = pd.DataFrame({"left": ["A", "B"], "right": ["B", "A"], "winner": ["left", "left"]})
    r = online_elo(read_battles(df), k=32, n_orders=0)
    e_b = 1 / (1 + 10 ** ((1016 - 984) / 400))  # second battle: B (984) beats A (1016)
    assert float(r.estimate.sel(agent="B")) == pytest.approx(984 + 32 * (1 - e_b))


def test_win_rate_matches_evalica_average_and_counts(shared_data, llmfao):
    df, pw = llmfao
    with pytest.warns(UndefinedWarning, match=r"503 judged on one task"):  # pandas: 503 pairs on one prompt
        w = win_rate(pw, n_resamples=100, rng=0)
    gold = pd.read_csv(shared_data / "evalica" / "llmfao_golden_scores.csv")
    gold = gold[gold.algorithm == "average_win_rate"].set_index("item")["score"]
    avg = w.average.to_series()
    np.testing.assert_allclose(avg.to_numpy(), gold.reindex(avg.index).to_numpy(), atol=1e-12)
    # one pair by hand
    a, b = df.left.iloc[0], df.right.iloc[0]
    sub = df[((df.left == a) & (df.right == b)) | ((df.left == b) & (df.right == a))]
    pts = ((sub.left == a) & (sub.winner == "left")).sum() + (
        (sub.right == a) & (sub.winner == "right")
    ).sum()
    pts += 0.5 * (sub.winner == "tie").sum()
    assert float(w.estimate.sel(agent=a, opponent=b)) == pytest.approx(pts / len(sub))
    assert int(w.n_comparisons.sel(agent=a, opponent=b)) == len(sub)


def test_position_consistency_both_orders():
    df = pd.DataFrame(
        {
            "left": ["A", "B", "A", "B", "A", "B", "C"],
            "right": ["B", "A", "B", "A", "B", "A", "A"],
            # q1: A wins both orders (consistent); q2: left wins both times (position bias);
            # q3: tie and tie (consistent); q4: an unmatched judgement
            "winner": ["left", "right", "left", "left", "tie", "tie", "left"],
            "q": ["1", "1", "2", "2", "3", "3", "4"],
        }
    )
    r = position_consistency(read_battles(df, task="q"))
    assert (r.n_matched, r.n_inconsistent, r.n_unmatched) == (3, 1, 1)
    assert float(r.estimate) == pytest.approx(1 / 3)
    assert float(r.first_position_share) == 1.0
    assert r.ci.attrs["ci_kind"] == "wilson"
    assert sorted(r.pairs.outcome.values.tolist()) == [0.5, 0.5, 1.0, 1.0]
    d = position_consistency(read_battles(df, task="q"), inconsistent="drop", unmatched="drop")
    assert d.pairs.sizes["comparison"] == 2
    with pytest.raises(ValueError, match="must hold `task` and `position`"):
        position_consistency(read_battles(df))


def test_no_finite_mle_is_nan_with_a_named_warning():
    df = pd.DataFrame(
        {"left": ["A", "A", "B"], "right": ["B", "C", "C"], "winner": ["left", "left", "tie"]}
    )
    with pytest.warns(NoFiniteMLEWarning, match="no finite maximum"):
        r = fit_bradley_terry_ml(read_battles(df), n_resamples=20, rng=0)
    assert np.isnan(r.estimate).all()


def test_bad_input_messages():
    pw = read_battles(
        pd.DataFrame({"left": ["A", "B"], "right": ["B", "A"], "winner": ["left", "tie"]})
    )
    with pytest.raises(ValueError, match=r"ties='none'.*1 ties"):
        fit_bradley_terry_ml(pw, ties="none")
    with pytest.raises(ValueError, match="`ties` must be one of"):
        fit_bradley_terry_ml(pw, ties="rao-kupper")
    with pytest.raises(ValueError, match="Davidson ties need method='newton'"):
        fit_bradley_terry_ml(pw, method="mm")
    nopos = read_battles(
        pd.DataFrame({"left": ["A", "B"], "right": ["B", "A"], "winner": ["left", "right"]}),
        position=False,
    )
    with pytest.raises(
        ValueError, match="home=True` needs to know which agent held the first position"
    ):
        fit_bradley_terry_ml(nopos, home=True)
    with pytest.raises(ValueError, match="`reference` must be one of the agents"):
        fit_bradley_terry_ml(pw, reference="Z")
    c = from_pair_counts(
        pd.DataFrame({"a": ["A"], "b": ["B"], "wa": [3], "wb": [2]}),
        agent_a="a",
        agent_b="b",
        wins_a="wa",
        wins_b="wb",
    )
    with pytest.raises(ValueError, match="resample='task'"):
        fit_bradley_terry_ml(c, ties="none", resample="task")
    with pytest.raises(ValueError, match="Elo needs the battle order"):
        online_elo(c)


@pytest.mark.slow
def test_side_by_side_with_the_pymc_fit():
    from hierbench.bayes import build_bradley_terry
    from hierbench.bayes import fit
    from hierbench.compare import side_by_side
    from hierbench.metrics import posterior_interval

    pw = _seed_battles()
    ml = fit_bradley_terry_ml(pw, ties="none", scale="logit", n_resamples=300, rng=0)
    model = build_bradley_terry(
        pw, ties=None, hierarchical=False, priors={"ability": {"sigma": 100.0}}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        dt = fit(
            model,
            draws=300,
            tune=300,
            chains=2,
            rng=4,
            posterior_predictive=False,
            log_likelihood=False,
        )
    draws = dt["posterior"]["ability"]
    bayes = {
        "estimate": draws.mean(("chain", "draw")),
        "ci": posterior_interval(draws, prob=0.95, kind="eti"),
    }
    import xarray as xr

    table = side_by_side({"ml": ml, "bayes": xr.Dataset(bayes)})
    assert list(table.estimator.values) == ["ml", "bayes"]
    # flat prior: posterior mean within 0.05 logits of the MLE; widths within 25%
    diff = table.estimate.sel(estimator="ml") - table.estimate.sel(estimator="bayes")
    assert float(np.abs(diff).max()) < 0.05
    ratio = table.width.sel(estimator="ml") / table.width.sel(estimator="bayes")
    assert float(np.abs(ratio - 1).max()) < 0.25


@pytest.mark.parametrize(
    ("ties", "home"), [("half", False), ("davidson", False), ("davidson", True)]
)
def test_batched_bootstrap_refits_match_one_at_a_time(ties, home):
    """The bootstrap's batched Newton refits equal the scalar Newton (checked above against
    BradleyTerry2, evalica and scipy) run on each resampled table, from the same start.
    """
    from hierbench.freq._pairwise._newton import _newton
    from hierbench.freq._pairwise._newton import _newton_batch

    rng = np.random.default_rng(11)
    m, K = 6, 20
    ia = rng.integers(0, m, K)
    ib = (ia + rng.integers(1, m, K)) % m
    base = rng.integers(1, 15, size=(K, 3)).astype(float)
    tables = np.stack([rng.poisson(base).astype(float) for _ in range(12)])
    tables[3, :, :] = base  # and one table equal to the start's data
    start = (np.linspace(-0.5, 0.5, m), 0.1, np.log(0.8))
    th, h, lam = _newton_batch(ia, ib, tables, m, 2, ties, home, start, 1e-10, 100)
    for i, cnt in enumerate(tables):
        f = _newton(
            ia, ib, cnt, m, 2, ties, home, start[0] - start[0][2], start[1], start[2], 1e-10, 100
        )
        np.testing.assert_allclose(th[i], f.theta, atol=1e-9)
        if home:
            assert h[i] == pytest.approx(f.home, abs=1e-9)
        if ties == "davidson":
            assert lam[i] == pytest.approx(f.log_nu, abs=1e-9)


def _log_multinomial_coefficient(counts: np.ndarray) -> np.ndarray:
    from scipy.special import gammaln

    return gammaln(counts.sum(-1) + 1) - gammaln(counts + 1).sum(-1)


@pytest.mark.parametrize("ties", ["davidson", "none", "half"])
def test_loglik_is_scipys_multinomial_logpmf_summed_over_pairs(ties):
    """The Newton fit's log-likelihood (one fit's and the bootstrap batch's), at given parameters,
    is scipy's multinomial (binomial for ties='half') log-pmf summed over the pairs, less the
    coefficients, with Davidson's probabilities written out here from their definition.
    """
    from scipy.special import expit
    from scipy.stats import binom
    from scipy.stats import multinomial

    from hierbench.freq._pairwise._newton import _loglik_parts

    rng = np.random.default_rng(5)
    B, K = 3, 15
    d = rng.normal(0.0, 2.0, size=(B, K))
    lam = np.log([0.3, 1.0, 2.5])
    counts = rng.integers(0, 9, size=(B, K, 3)).astype(float)
    if ties == "none":
        counts[..., 1] = 0.0
    want = np.empty(B)
    for i in range(B):
        if ties == "davidson":
            p = np.stack([np.exp(d[i] / 2), np.full(K, np.exp(lam[i])), np.exp(-d[i] / 2)], 1)
            p /= p.sum(1, keepdims=True)
        else:
            p = np.stack([expit(d[i]), np.zeros(K), expit(-d[i])], 1)
        if ties == "half":  # a tie is half a win each way: a binomial in half-battles
            k2, n2 = 2 * counts[i, :, 0] + counts[i, :, 1], 2 * counts[i].sum(1)
            ll2 = binom.logpmf(k2, n2, p[:, 0]) - _log_multinomial_coefficient(
                np.stack([k2, n2 - k2], 1)
            )
            want[i] = ll2.sum() / 2
        else:
            want[i] = np.sum(
                multinomial.logpmf(counts[i], counts[i].sum(1), p)
                - _log_multinomial_coefficient(counts[i])
            )
        one = _loglik_parts(d[i], lam[i], counts[i], ties)[0]
        assert one == pytest.approx(want[i], rel=1e-12)
    np.testing.assert_allclose(_loglik_parts(d, lam, counts, ties)[0], want, rtol=1e-12)


def test_reported_loglik_is_the_multinomial_logpmf_at_the_fit():
    """``loglik`` of a Davidson fit with home advantage: scipy's multinomial log-pmf per ordered
    pair at the reported abilities, home and nu, less the coefficients (pairs counted by pandas).
    """
    from scipy.stats import multinomial

    rng = np.random.default_rng(8)
    agents = list("ABCD")
    verdicts = rng.choice(["left", "tie", "right"], size=300, p=[0.45, 0.2, 0.35])
    rows = [(*rng.choice(agents, 2, replace=False), v) for v in verdicts]
    df = pd.DataFrame(rows, columns=["left", "right", "winner"])
    r = fit_bradley_terry_ml(
        read_battles(df), ties="davidson", home=True, scale="logit", reference="A", interval="wald"
    )
    counts = (
        df.groupby(["left", "right"])["winner"].value_counts().unstack(fill_value=0)
    )[["left", "tie", "right"]]
    ability = r.estimate.to_series()
    d = (
        ability.loc[counts.index.get_level_values(0)].to_numpy()
        - ability.loc[counts.index.get_level_values(1)].to_numpy()
        + float(r.home)
    )
    p = np.stack([np.exp(d / 2), np.full(d.size, float(r.nu)), np.exp(-d / 2)], 1)
    p /= p.sum(1, keepdims=True)
    c = counts.to_numpy(float)
    want = np.sum(multinomial.logpmf(c, c.sum(1), p) - _log_multinomial_coefficient(c))
    assert r.loglik == pytest.approx(want, rel=1e-12)
