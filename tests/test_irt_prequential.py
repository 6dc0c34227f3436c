"""irt_score's prequential person-fit test (misfit_z, misfit_p and its ModelMisfitWarning).

Independent checks: (a) a seeded simulation from the bank's own model, the share of p < 0.05
within 3 binomial sds of 0.05; (b) a Guttman-reversed record, far from the model; (c) z by
exact enumeration of the grid posterior written here with numpy / math.comb (scipy's
betabinom for the beta-binomial cells), and by scipy quadrature over the continuous N(0, 1)
prior, which does not know the grid.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pytest
import xarray as xr
from scipy import integrate
from scipy import stats
from scipy.special import expit

from hierbench.design import ModelMisfitWarning
from hierbench.freq import IRTBank
from hierbench.freq import irt_score


def _bank(S=20, T=30, seed=0, run_icc=None):
    g = np.random.default_rng(seed)
    a = np.exp(g.normal(0.3, 0.15, (S, T)))
    d = np.linspace(-3, 3, T)[None, :] + g.normal(0, 0.1, (S, T))
    attrs = {} if run_icc is None else {"run_icc": run_icc}
    return IRTBank(xr.DataArray(a, dims=("sample", "task")), xr.DataArray(d, dims=("sample", "task")),
                   attrs=attrs)


def _resp(bank, y, n=None, idx=None):
    idx = np.arange(bank.n_tasks) if idx is None else np.asarray(idx)
    n = np.ones(len(idx), int) if n is None else np.asarray(n)
    return xr.Dataset({"n_runs": ("task", n), "n_success": ("task", np.asarray(y, float))},
                      coords={"task": bank.tasks[idx]})


@pytest.mark.slow  # over 1.5 s: the full suite, not the fast lane
def test_p_uniform_under_the_model():
    """300 agents from the bank's own 2PL, 15 of 30 tasks each: p < 0.05 within 3 binomial sds of 0.05.

    Ability ~ N(0, 1) and item parameters one of the bank's draws: the model the test's
    predictive is exact for. Monte Carlo tolerance 3 * sqrt(.05 * .95 / 300) = 0.038 (and
    3 * sqrt(.25 / 300) = 0.087 around 0.5 for p < 0.5). Uncorrected, Phi(z) gave 0.09 here.
    """
    bank = _bank()
    a, d = bank.discrimination.values, bank.intercept.values
    g = np.random.default_rng(1)
    ps = []
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ModelMisfitWarning)
        for _ in range(300):
            s, th = g.integers(bank.n_samples), g.normal()
            idx = np.sort(g.choice(bank.n_tasks, 15, replace=False))
            y = g.random(15) < expit(a[s, idx] * th + d[s, idx])
            ps.append(irt_score(bank, _resp(bank, y, idx=idx), n_grid=11, rng=0).misfit_p)
    ps = np.array(ps)
    assert abs((ps < 0.05).mean() - 0.05) < 3 * math.sqrt(0.05 * 0.95 / 300)
    assert abs((ps < 0.5).mean() - 0.5) < 3 * math.sqrt(0.25 / 300)


def test_reversed_record_is_flagged_and_warned():
    """An agent that solves the 15 hardest tasks and fails the 15 easiest: p < 0.01, warned; not with misfit_level=None."""
    bank = _bank()
    y = np.r_[np.ones(15), np.zeros(15)]  # intercepts rise with the task index: the first 15 are the hard ones
    with pytest.warns(ModelMisfitWarning, match="model-based.*assisted_mean"):
        r = irt_score(bank, _resp(bank, y), target="expected", rng=0)
    assert r.misfit_p < 0.01 and r.misfit_z < -2.3
    assert "prequential misfit z" in repr(r)
    assert r.to_frame()["misfit_p"].iloc[0] == r.misfit_p
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelMisfitWarning)
        irt_score(bank, _resp(bank, y), target="expected", misfit_level=None, rng=0)
    # the Guttman-ordered record (easy solved, hard failed) is not flagged
    ok = irt_score(bank, _resp(bank, y[::-1]), target="expected", rng=0)
    assert ok.misfit_p > 0.05


def _pmf(p, n, icc):
    if icc > 0 and n > 1:
        c = 1 / icc - 1
        return stats.betabinom.pmf(np.arange(n + 1), n, p * c, (1 - p) * c)
    return np.array([math.comb(n, k) * p**k * (1 - p) ** (n - k) for k in range(n + 1)])


def _z_direct(a, d, n, y, icc, prior_nodes):
    """The prequential z and Edgeworth p by enumeration over (draw, node) with node weights ``prior_nodes``."""
    nodes, pw = prior_nodes
    num = den = k3 = 0.0
    post = [np.array(pw, float) for _ in range(a.shape[0])]
    for t in range(a.shape[1]):
        tot = sum(w.sum() for w in post)
        f = np.zeros(n[t] + 1)
        for s in range(a.shape[0]):
            for j, th in enumerate(nodes):
                f += post[s][j] / tot * _pmf(expit(a[s, t] * th + d[s, t]), n[t], icc)
        lf = np.log(f)
        el = (f * lf).sum()
        num += lf[y[t]] - el
        den += (f * lf**2).sum() - el**2
        k3 += (f * (lf - el) ** 3).sum()
        for s in range(a.shape[0]):
            post[s] = post[s] * np.array([_pmf(expit(a[s, t] * th + d[s, t]), n[t], icc)[y[t]] for th in nodes])
    z, g = num / math.sqrt(den), k3 / den**1.5
    return z, stats.norm.cdf(z) - g / 6 * (z * z - 1) * stats.norm.pdf(z)  # one-term Edgeworth


@pytest.mark.parametrize("icc", [0.0, 0.3])
def test_z_by_enumeration(icc):
    """3 tasks, 2 draws, cells of 1, 3 and 2 runs: z and p equal the enumeration to 1e-10.

    The grid is [-6, 6] in steps of 0.05 with the N(0, 1) density at the nodes; with
    run_icc 0.3 the cells of several runs are scipy's beta-binomial.
    """
    a = np.array([[1.0, 1.5, 0.7], [1.2, 1.3, 0.9]])
    d = np.array([[0.5, -1.0, 2.0], [0.3, -0.8, 1.5]])
    n, y = np.array([1, 3, 2]), np.array([0, 3, 1])
    bank = IRTBank(xr.DataArray(a, dims=("sample", "task")), xr.DataArray(d, dims=("sample", "task")),
                   attrs={"run_icc": icc} if icc else {})
    r = irt_score(bank, _resp(bank, y, n), rng=0)
    nodes = np.arange(-120, 121) * 0.05
    z, p = _z_direct(a, d, n, y, icc, (nodes, np.exp(-nodes**2 / 2)))
    assert r.misfit_z == pytest.approx(z, abs=1e-10)
    assert r.misfit_p == pytest.approx(p, abs=1e-10)


def _quad_ability(bank, y, idx):
    """Posterior mean ability under the draws' mean item parameters and the N(0, 1) prior (scipy quad)."""
    a, d = bank.discrimination.values.mean(0)[idx], bank.intercept.values.mean(0)[idx]

    def post(th):
        p = expit(a * th + d)
        return np.prod(np.where(y == 1, p, 1 - p)) * stats.norm.pdf(th)

    z = integrate.quad(post, -8, 8)[0]
    return integrate.quad(lambda th: th * post(th), -8, 8)[0] / z


def test_ability_beyond_the_calibration_range_is_flagged_and_warned():
    """Range [-0.5, 0.5]: the 6 easier of 12 middle tasks solved (ability ~0.01 by quadrature) is not flagged;
    the 12 hardest all solved (~2.75) is, with a warning naming the range; a census of the realised score is not.
    """
    bank = _bank()
    bank.attrs["ability_range"] = [-0.5, 0.5]
    mid, hard = np.arange(9, 21), np.arange(0, 12)  # intercepts rise with the index: the first 12 are hard
    guttman = np.r_[np.zeros(6), np.ones(6)]  # the 6 easier of the middle tasks solved
    inside, beyond = _quad_ability(bank, guttman, mid), _quad_ability(bank, np.ones(12), hard)
    assert -0.5 < inside < 0.5 < beyond  # the independent check of what each record's ability is
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelMisfitWarning)
        ok = irt_score(bank, _resp(bank, guttman, idx=mid), target="expected", rng=0)
    assert ok.flags == () and "not to be trusted" not in repr(ok)
    with pytest.warns(ModelMisfitWarning, match=r"beyond the calibration agents' \(-0\.50 to 0\.50\)"):
        out = irt_score(bank, _resp(bank, np.ones(12), idx=hard), target="expected", rng=0)
    assert len(out.flags) == 1 and "extrapolated" in out.flags[0] and "not to be trusted: the agent's" in repr(out)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ModelMisfitWarning)
        census = irt_score(bank, _resp(bank, np.ones(30)), rng=0)
        silent = irt_score(bank, _resp(bank, np.ones(12), idx=hard), misfit_level=None, rng=0)
    assert census.flags == () and silent.flags == () and float(census.estimate) == 1.0


def test_z_matches_quadrature_one_draw():
    """One draw, 3 tasks: z from scipy quad over the continuous N(0, 1) prior agrees to 1e-6 (the grid is fine enough)."""
    a, d = np.array([1.4, 0.8, 2.0]), np.array([1.0, -0.5, 0.2])
    y = np.array([0, 1, 1])
    bank = IRTBank(xr.DataArray(a[None], dims=("sample", "task")), xr.DataArray(d[None], dims=("sample", "task")))
    r = irt_score(bank, _resp(bank, y), rng=0)

    def lik(th, t):  # likelihood of the outcomes of tasks before t
        p = expit(a[:t] * th + d[:t])
        return np.prod(np.where(y[:t] == 1, p, 1 - p)) * stats.norm.pdf(th)

    num = den = 0.0
    for t in range(3):
        z0 = integrate.quad(lik, -np.inf, np.inf, args=(t,))[0]
        q = integrate.quad(lambda th, t=t: lik(th, t) * expit(a[t] * th + d[t]), -np.inf, np.inf)[0] / z0
        f = np.array([1 - q, q])
        lf = np.log(f)
        num += lf[y[t]] - f @ lf
        den += f @ lf**2 - (f @ lf) ** 2
    assert r.misfit_z == pytest.approx(num / math.sqrt(den), abs=1e-6)
