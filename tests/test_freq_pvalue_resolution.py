"""What a p-value's floor leaves an adjustment unable to call, said on every path (audit K F3-F5, F7, F9).

The project once reported that none of 25 agents differ, a 64-point gap included, because
1,999 permutations cannot reach a Holm threshold over 300 pairs. Each expected value here is
independent of the code under test: the floor arithmetic (``1 / (B + 1)``, ``2 / (B + 1)``,
``2^(1 - G)``), Holm's and BH's thresholds, and statsmodels' ``multipletests``.
"""

from __future__ import annotations

import math
import re
import warnings

import numpy as np
import pytest
import xarray as xr
from statsmodels.stats import multitest as smm

from hierbench import HierbenchWarning
from hierbench.freq import PValueResolutionWarning
from hierbench.freq import compare_agents
from hierbench.freq import paired_test


def _continuous(n_agents=4, n_tasks=20, seed=0, same_but=None):
    """Scores in (0, 1) off any lattice (Monte Carlo sign flips); ``same_but``: a1 equals a0 but on that many tasks."""
    rng = np.random.default_rng(seed)
    y = rng.uniform(0.05, 0.95, (n_agents, n_tasks)) + np.linspace(0, 0.3, n_agents)[:, None]
    y = np.clip(y, 0, 1)
    if same_but is not None:
        y[1] = y[0]
        y[1, :same_but] = np.clip(y[0, :same_but] + rng.uniform(0.05, 0.2, same_but), 0, 1)
    coords = {"agent": [f"a{i}" for i in range(n_agents)], "task": [f"t{j}" for j in range(n_tasks)]}
    return xr.Dataset({"score": (("agent", "task", "run"), y[..., None])}, coords=coords)


def _clustered(n_agents=4, n_clusters=6, per=3, seed=1):
    """Binary scores on ``n_clusters`` clusters of ``per`` tasks, agents far apart."""
    rng = np.random.default_rng(seed)
    p = np.linspace(0.1, 0.9, n_agents)[:, None]
    y = (rng.uniform(size=(n_agents, n_clusters * per)) < p).astype(float)
    T = n_clusters * per
    coords = {"agent": [f"a{i}" for i in range(n_agents)], "task": [f"t{j}" for j in range(T)],
              "cluster": ("task", np.repeat([f"c{g}" for g in range(n_clusters)], per))}
    return xr.Dataset({"score": (("agent", "task", "run"), y[..., None])}, coords=coords)


def _messages(rec, category=PValueResolutionWarning):
    return [str(w.message) for w in rec if issubclass(w.category, category)]


def test_holm_warns_when_some_monte_carlo_pairs_cannot_reach_its_first_threshold():
    """F3: one exact pair (5 differing tasks) beside five blocked Monte Carlo pairs: every pair is named.

    The exact pair's floor is 2^(1 - K) over the K = 5 tasks where it differs (sign flips of equal
    scores change nothing), 0.0625; the Monte Carlo pairs' is 1 / (B + 1).
    """
    ds = _continuous(same_but=5)
    prob, B = 0.93, 49  # alpha 0.07, m 6: first threshold 0.01167, floor 1 / 50 = 0.02
    alpha, m, floor = 1 - prob, 6, 1 / (B + 1)
    y = ds["score"].values[..., 0]
    exact_floor = 2.0 ** (1 - int((y[0] != y[1]).sum()))
    assert exact_floor == 0.0625
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = compare_agents(ds, test="permutation", adjust="holm", prob=prob, n_permutations=B,
                             n_resamples=19, rng=0)
    (text,) = _messages(rec)
    assert f"no permutation p-value here can go below {floor:.3g}" in text
    assert f"{m} pairs put Holm's first threshold at {alpha / m:.3g}: no pair can be called different" in text
    need = math.ceil(m / alpha) - 1  # 1 / (B + 1) < alpha / m, m / alpha = 85.7 not an integer
    assert f"raise `n_permutations` to at least {need}" in text
    df = res.to_frame()
    np.testing.assert_allclose(df["p_holm"], smm.multipletests(df["p_value"], method="holm")[1])
    assert df.attrs["p_holm_note"] == text
    assert (df["p_value_floor"] == floor).sum() == 5 and df.loc["a0 - a1", "p_value_floor"] == exact_floor
    # at the count the warning names, only the exact pair is left: Holm reaches rank i only if
    # (m - i + 1) p < alpha, so at its floor after at least i - 1 = 5 other pairs
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        compare_agents(ds, test="permutation", adjust="holm", prob=prob, n_permutations=need, n_resamples=19, rng=0)
    (text,) = _messages(rec)
    first = next(i for i in range(1, m + 1) if (m - i + 1) * exact_floor < alpha)
    assert f"1 of {m} pairs have exact permutation p-values that cannot go below {exact_floor:.3g}" in text
    assert f"only after at least {first - 1} other pairs" in text and first - 1 == 5


def test_bh_says_conservative_below_alpha_and_none_only_at_alpha():
    """F4: BH's largest threshold is alpha; a floor between alpha / m and alpha blocks nothing outright."""
    ds = _continuous(n_tasks=40, seed=3)
    alpha, m = 0.05, 6
    for B, blocks_all in ((99, False), (19, True)):
        floor = 2 / (B + 1)  # the two-sided bootstrap p-value's floor
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            res = compare_agents(ds, cluster=None, test="bootstrap", adjust="bh", n_resamples=B, rng=0)
        (text,) = _messages(rec)
        df = res.to_frame()
        called = smm.multipletests(df["p_value"], alpha=alpha, method="fdr_bh")[0]
        assert int(np.triu(res.significant().values, 1).sum()) == int(called.sum())
        assert ("no pair can be called different" in text) == blocks_all
        if blocks_all:
            assert floor >= alpha and not called.any()
            assert f"{alpha:g} is Benjamini-Hochberg's largest threshold" in text
        else:
            assert alpha / m <= floor < alpha and called.sum() > 0
            k = next(k for k in range(1, m + 1) if m * floor / k < alpha)  # BH's smallest call set
            assert f"only when it calls at least {k} pairs different" in text and "conservative" in text
            # 2 / (B + 1) < alpha / m needs B + 1 > 2 m / alpha = 240 (equal is not below)
            assert f"raise `n_resamples` to at least {math.floor(2 * m / alpha)}" in text


def test_a_default_max_t_result_asked_for_holm_says_what_compare_agents_says():
    """F5: six clusters, 6 pairs: the exact sign-flip floor 2^(1 - 6) = 0.03125 is above 0.05 / 6."""
    ds = _clustered()
    floor, m, alpha = 2.0 ** (1 - 6), 6, 0.05
    assert alpha / m < floor < alpha
    with warnings.catch_warnings(record=True) as rec:
        warnings.simplefilter("always")
        res = compare_agents(ds, n_resamples=19, rng=0)
        repr(res), res.significant(), res.matrix()  # the result's own verdict: said already, not again
    assert res.attrs["test"] == "permutation" and res.attrs["adjust"] == "maxt"
    assert not _messages(rec)
    with pytest.warns(PValueResolutionWarning) as rec:
        holm = res.significant(adjust="holm")
    (text,) = _messages(rec)
    assert f"can go below {floor:.3g}, and {m} pairs put Holm's first threshold at {alpha / m:.3g}" in text
    assert "no pair can be called different" in text
    with pytest.warns(PValueResolutionWarning) as rec2:
        marks = res.matrix(adjust="holm")
    assert _messages(rec2) == [text]
    df = res.to_frame()
    assert not smm.multipletests(df["p_value"], method="holm")[0].any() and not holm.values.any()
    assert not marks.apply(lambda c: c.str.endswith("*")).values.any()
    assert df.attrs["p_holm_note"] == text
    # each pair's floor is 2^(1 - K) over its K clusters whose summed difference is not 0 (flipping the
    # others changes nothing): 4, 6, 6, 3, 6, 5 here, so the smallest is the 6-cluster floor above
    y, cl = ds["score"].values[..., 0], ds["cluster"].values
    k = [int((np.array([(y[i] - y[j])[cl == c].sum() for c in np.unique(cl)]) != 0).sum())
         for i, j in zip(*np.triu_indices(4, 1), strict=True)]
    np.testing.assert_array_equal(df["p_value_floor"], 2.0 ** (1 - np.array(k)))
    assert df["p_value_floor"].min() == floor
    # the same rule, the same words, as compare_agents with that adjustment and test
    with pytest.warns(PValueResolutionWarning) as rec3:
        compare_agents(ds, test="permutation", adjust="holm", n_resamples=19, rng=0)
    assert text.startswith(_messages(rec3)[0])
    # BH: the floor is below alpha, so it is conservative, not blocked: 6 x 2^-5 / k < 0.05 from k = 4
    with pytest.warns(PValueResolutionWarning, match="only when it calls at least 4 pairs different"):
        bh = res.significant(adjust="bh")
    assert int(np.triu(bh.values, 1).sum()) == int(smm.multipletests(df["p_value"], method="fdr_bh")[0].sum())


def test_paired_test_warns_when_its_sign_flips_cannot_reach_the_level_and_names_the_p_value_to_read():
    """F7: 4 clusters floor the sign-flip p at 2^(1 - 4) = 0.125; 8 clusters at 2^-7, below 0.05."""
    for G, blocked in ((4, True), (8, False)):
        ds = _clustered(n_agents=2, n_clusters=G, per=10, seed=2)
        ds["score"][0] = 1.0  # a0 passes everything, a1 about half of each cluster: every cluster differs
        ds["score"][1] = np.random.default_rng(G).binomial(1, 0.5, ds["score"][1].shape)
        assert (ds.score[1].groupby("cluster").mean(...) < 1).all()
        a, b = ds.score.sel(agent="a0"), ds.score.sel(agent="a1")
        with warnings.catch_warnings(record=True) as rec:
            warnings.simplefilter("always")
            res = paired_test(a, b, n_resamples=19, rng=0)
            cmp = compare_agents(ds, n_resamples=19, rng=0)
        texts = _messages(rec)
        assert res.test == cmp.attrs["test"]
        if blocked:
            (text,) = texts
            assert f"cannot go below {2.0 ** (1 - G):.3g}, and the level is 0.05" in text
            assert "p_t" in text and res.test == "t"
            assert float(res.p_value) == float(res.p_t)
            assert float(res.p_permutation) >= 2.0 ** (1 - G)
        else:
            assert not texts and res.test == "permutation"
            assert float(res.p_value) == float(res.p_permutation)
        line = repr(res).splitlines()[-1]
        assert re.search(rf"p_value {float(res.p_value):.3g} \(p_{res.test}, as compare_agents would choose", line)


def test_mcnemar_with_clusters_says_its_verdict_is_over_tasks():
    """F9: attrs said unit 'clusters' while McNemar's verdict treats the tasks as independent."""
    ds = _clustered(n_agents=3, n_clusters=5, per=4)
    with pytest.warns(HierbenchWarning, match=r"test='mcnemar' treats the tasks as independent.*ignores the 5 clusters"):
        res = compare_agents(ds, test="mcnemar", adjust="holm", n_resamples=19, rng=0)
    assert res.attrs["unit"] == "clusters" and res.attrs["test_unit"] == "tasks"
    assert "note: test='mcnemar'" in repr(res)
    df = compare_agents(ds, n_resamples=19, rng=0).to_frame()
    assert "the 5 clusters are ignored" in df.attrs["p_mcnemar_note"]
